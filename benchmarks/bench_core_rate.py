"""The fused n^2 kernel's flop rate against the machine's dgemm, in one run.

Times ``fused_product`` (gradient mode, Gaussian kernel, factored supervised
Gamma, the ISM shapes: Z = XW with q columns, a right-hand side of p columns)
and a square dgemm (SciPy's OpenBLAS) of about the same flop count, with the
same number of threads, and prints both rates and their ratio.

Flops counted per entry of the n x n panel: 2q (Gram row) + 2r (Gamma row,
r = rank of Gamma) + 3 (distance) + 30 (exp: range reduction and a degree-13
polynomial) + 4 (combine) + 2p (the GEMM with the right-hand side). Only
arithmetic the kernel must do is counted, so the ratio is a fair "fraction of
dgemm" for the GEMM-shaped part (p large) and a lower bound for p small.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE nice python benchmarks/bench_core_rate.py
    ... --n 10000 --threads 1 2 --p 0 20 784
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--d", type=int, default=784)
    parser.add_argument("--q", type=int, default=10)
    parser.add_argument("--p", type=int, nargs="*", default=[0, 20, 784])
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    import ikdr
    from _peers import mixture
    from ikdr.kernels import Gaussian, _fused

    dtype = np.dtype(args.dtype)
    X, y = mixture(args.n, args.d)
    X = X.astype(dtype)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(ikdr.median_sigma(X, random_state=0))
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((args.d, args.q)))[0]
    Z = np.ascontiguousarray(X @ W.astype(dtype))
    terms = kernel._terms(X)
    n, r = args.n, gamma.rank
    print(f"ikdr {ikdr.__version__}, SIMD {ikdr._core.build_info()['simd']}, n={n}, q={args.q}, "
          f"rank(Gamma)={r}, {dtype.name}, load average {os.getloadavg()}")
    print(f"{'threads':>7} {'p':>5} {'fused s':>8} {'fused GF/s':>10} {'gemm s':>8} "
          f"{'gemm GF/s':>9} {'fraction':>8} {'ns/entry':>8}")
    for threads in args.threads:
        for p in args.p:
            rhs = np.ascontiguousarray(X[:, :p]) if p else None
            flops = n * n * (2 * args.q + 2 * r + 3 + 30 + 4 + 2 * p)
            t_fused = best_time(lambda: _fused(Z, terms, 1, gamma, rhs=rhs, n_threads=threads),
                                args.repeat)
            s = max(64, int(round((flops / 2) ** (1 / 3))))
            A = np.random.default_rng(1).standard_normal((s, s)).astype(dtype)
            B = np.random.default_rng(2).standard_normal((s, s)).astype(dtype)
            with threadpool_limits(limits=threads, user_api="blas"):
                t_gemm = best_time(lambda: A @ B, args.repeat)
            rate_f = flops / t_fused / 1e9
            rate_g = 2 * s ** 3 / t_gemm / 1e9
            print(f"{threads:>7} {p:>5} {t_fused:>8.3f} {rate_f:>10.1f} {t_gemm:>8.3f} "
                  f"{rate_g:>9.1f} {rate_f / rate_g:>8.2f} {t_fused * threads / n / n * 1e9:>8.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
