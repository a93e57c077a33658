"""Scale targets of the clustering paradigms, one fit per case:

* ISMClustering, 10 clusters, q = 10, on the generated 10-class mixture
  (``_peers.mixture``, standardised, d = 784; target: n = 10,000 under 2 min);
* KDAC on the Large Gaussian views (``ikdr.datasets.make_gaussian_views``,
  standardised, k = 2, q = 3, lambda = 1; target: n = 20,000 under 5 min).

Prints wall time, peak RSS of the fit (VmHWM reset before it), outer
iterations and NMI against the generating labels, for float64 and float32.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE nice python benchmarks/bench_scale.py
    ... --cases ismclustering --n 10000 --dtype float64 float32
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", default=["ismclustering", "kdac"],
                        choices=["ismclustering", "kdac"])
    parser.add_argument("--n", type=int, default=None, help="default 10,000 / 20,000")
    parser.add_argument("--d", type=int, default=784, help="dimension of the mixture")
    parser.add_argument("--dtype", nargs="*", default=["float64"])
    args = parser.parse_args()

    import ikdr
    from _peers import mixture
    from bench_ism_vs_numpy import peak_rss_mb, reset_peak_rss
    from ikdr.metrics import nmi

    print(f"ikdr {ikdr.__version__}, SIMD {ikdr.build_info()['simd']}, "
          f"threads {ikdr.get_num_threads()}, load average {os.getloadavg()}")
    for case in args.cases:
        if case == "ismclustering":
            n = args.n or 10000
            X, truth = mixture(n, args.d)
            fit_args = ()
        else:
            n = args.n or 20000
            X, yo, ya = ikdr.datasets.make_gaussian_views("large", n, random_state=0)
            X = (X - X.mean(0)) / X.std(0)
            truth, fit_args = ya, (yo,)
        for dtype in args.dtype:
            if case == "ismclustering":
                model = ikdr.ISMClustering(n_clusters=10, n_components=10, random_state=0,
                                           dtype=np.dtype(dtype).type)
            else:
                model = ikdr.KDAC(n_clusters=2, n_components=3, lam=1.0, random_state=0,
                                  dtype=np.dtype(dtype).type)
            base = reset_peak_rss()
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, *fit_args)
            elapsed = time.perf_counter() - t0
            print(f"{case:<14} n={n:>6} d={X.shape[1]:>4} {dtype:<8} {elapsed:8.1f} s  "
                  f"peak {peak_rss_mb() - base:7.0f} MB above {base:5.0f} MB  "
                  f"outer {model.n_iter_:>2}  NMI {nmi(truth, model.labels_):.3f}", flush=True)


if __name__ == "__main__":
    main()
