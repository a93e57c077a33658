"""KNetClustering alone on every data set of bench_clustering_quality.py (issue 15):
NMI, fit time, rounding, kept rounds and the rounding judge's scores, one line a set.

    PYTHONPATH=src python benchmarks/knet_quality_rows.py [name prefixes ...]
"""
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ikdr  # noqa: E402
from _clustering_data import all_sets  # noqa: E402
from ikdr.metrics import nmi  # noqa: E402

only = sys.argv[1:]
for name, X, y in all_sets(seeds=(0, 1, 2)):
    if only and not any(name.startswith(p) for p in only):
        continue
    k = int(np.unique(y).shape[0])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = ikdr.KNetClustering(k, random_state=0).fit(X)
    scores = " ".join(f"{a}={b:.3f}" for a, b in m.partition_hsic_.items())
    print(f"{name:16s} NMI {nmi(y, m.labels_):.3f} {time.perf_counter() - t0:6.2f} s  "
          f"{m.rounding_:8s} kept {m.n_iter_ - m.n_rejected_}/{m.n_iter_} "
          f"({m.stop_reason_})  {scores}", flush=True)
