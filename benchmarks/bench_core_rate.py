"""The native passes against the machine's GEMM, in one run.

For n = 10,000 (``--n``), a Gaussian kernel, the factored supervised Gamma of
10 classes (rank 10) and Z = XW with q = 10 columns, times each pass type of
the ISM family through the public kernel API, for d in {32, 64, 784}
(``--d``), in float64 and float32 (``--dtype``), the two precisions' calls
interleaved:

- ``dense Phi``: ``kernel.gradient_product(Z, X, gamma)``, the n x n weights
  times the n x d right-hand side X (Phi(W) = X^T of it; that last n d^2
  product is the caller's and not timed here);
- ``Phi(W) d x d``: ``kernel.phi_product(X, W, gamma)``, the call an ISM step
  makes: XW, the pass and X^T(...) in one core call. Where d is at most 64
  the pass keeps R_I^T Psi_IJ R_J per block pair and never multiplies the
  transposed half (``cpp/include/ikdr/tile_kernels.hpp``);
- ``thin (10 rhs)``: the same with 10 right-hand-side columns (the matrix-free
  Phi(W) V steps, the certificate's Hessian products);
- ``objective``: ``kernel.product(Z, None, gamma)``, Tr(Gamma K_XW) alone;
- ``K R``: the spectral step's kernel product with 10 columns (no Gamma);
- ``SNE block``: KSVD's row-normalised Gaussian block (n/2 x n/2 points in 64
  dimensions, normalised in the same pass) against a numpy build of it and
  against the GEMM ``P @ Q.T`` of its inner products alone, which any build of
  the block needs (the block cannot be faster than that GEMM).

Printed per pass: seconds, nanoseconds per kernel entry per thread, numpy's
``(n x n) @ (n x d)`` GEMM time in the same run with the same threads, and
``gemm/pass`` (1.0: the pass costs what that GEMM alone costs; for the dense
pass it is the fraction of the GEMM rate the pass runs at), and for float32
``float64/float32``, the float64 pass's time over the float32 one's (floor:
1.6x at d <= 64). Below the table: how far float32's objective and Phi(W)
are from float64's on the same data (the documented tolerance for the
objective is 1e-4 relative).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_core_rate.py \
        --out benchmarks/results/core_rate.md
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

#: float32 passes at d <= 64: at least this many times as fast as float64
FLOAT32_FLOOR = 1.6


def numpy_sne(A, B, sigma):
    D = (A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2.0 * (A @ B.T)
    np.maximum(D, 0, out=D)
    D -= D.min(1, keepdims=True)
    D *= -1.0 / (2 * sigma * sigma)
    np.exp(D, out=D)
    D /= D.sum(1, keepdims=True)
    return D


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--d", type=int, nargs="*", default=[32, 64, 784])
    parser.add_argument("--q", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", nargs="*", default=["float64", "float32"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    import ikdr
    from _peers import best_time, best_times, emit, floors_missed, mixture, results_head
    from ikdr.kernels import Gaussian, sne_matrix

    n, q, t = args.n, args.q, args.threads
    entries = n * n / t  # kernel entries per thread in one pass
    dtypes = [np.dtype(name) for name in args.dtype]
    compare = np.dtype(np.float64) in dtypes and np.dtype(np.float32) in dtypes
    rows = {dtype: [] for dtype in dtypes}
    agreement = []
    missed = []
    header = ("| dtype | d | pass | seconds | ns/entry/thread | numpy GEMM (n x n @ n x d) s "
              "| gemm/pass | float64/float32 |\n|---|---|---|---|---|---|---|---|")
    for d in args.d:
        X64, y = mixture(n, d)
        gamma, _ = ikdr.supervised_gamma(y)
        kernel = Gaussian(ikdr.median_sigma(X64, random_state=0))
        W = np.linalg.qr(np.random.default_rng(0).standard_normal((d, q)))[0]
        passes, t_gemm = {}, {}
        for dtype in dtypes:
            X = np.ascontiguousarray(X64, dtype=dtype)
            Z = np.ascontiguousarray(X @ W.astype(dtype))
            R = np.ascontiguousarray(X[:, :q])
            A = np.random.default_rng(2).standard_normal((n, n)).astype(dtype)
            with threadpool_limits(limits=t, user_api="blas"):
                A @ X
                t_gemm[dtype] = best_time(lambda: A @ X, args.repeat)
            del A
            passes[dtype] = {
                "dense Phi": lambda X=X, Z=Z: kernel.gradient_product(Z, X, gamma, n_threads=t),
                "Phi(W) d x d": lambda X=X: kernel.phi_product(X, W, gamma, n_threads=t),
                "thin (10 rhs)": lambda Z=Z, R=R: kernel.gradient_product(Z, R, gamma, n_threads=t),
                "objective": lambda Z=Z: kernel.product(Z, None, gamma, n_threads=t),
                "K R": lambda Z=Z, R=R: kernel.product(Z, R, n_threads=t),
            }
        for name in passes[dtypes[0]]:
            fns = [passes[dtype][name] for dtype in dtypes]
            for fn in fns:
                fn()  # warm-up
            # the precisions' calls interleaved: a drifting host moves both alike
            secs = dict(zip(dtypes, best_times(fns, args.repeat)))
            for dtype, sec in secs.items():
                ratio = ""
                if compare and dtype == np.float32:
                    speedup = secs[np.dtype(np.float64)] / sec
                    ratio = f"{speedup:.2f}x"
                    if d <= 64 and speedup < FLOAT32_FLOOR:
                        missed.append(f"float32 {name} at d = {d}: {speedup:.2f}x float64 "
                                      f"against {FLOAT32_FLOOR}x")
                rows[dtype].append(f"| {dtype.name} | {d} | {name} | {sec:.3f} | "
                                   f"{sec / entries * 1e9:.2f} | {t_gemm[dtype]:.3f} | "
                                   f"{t_gemm[dtype] / sec:.2f} | {ratio} |")
                print(rows[dtype][-1], flush=True)
        if compare:
            # what float32 costs in accuracy: Tr(Gamma K_XW) and Phi(W) against float64
            X32 = np.ascontiguousarray(X64, dtype=np.float32)
            phi64, obj64 = kernel.phi_product(X64, W, gamma, n_threads=t)
            phi32, obj32 = kernel.phi_product(X32, W, gamma, n_threads=t)
            agreement.append(f"| {d} | {abs(obj32 - obj64) / abs(obj64):.1e} | "
                             f"{np.linalg.norm(phi32 - phi64) / np.linalg.norm(phi64):.1e} |")
    for dtype in dtypes:
        # KSVD's SNE block: n/2 x n/2 points in 64 dimensions
        m = n // 2
        P = np.random.default_rng(3).standard_normal((m, 64)).astype(dtype)
        Q = np.random.default_rng(4).standard_normal((m, 64)).astype(dtype)
        sigma = 8.0

        def ours():
            return sne_matrix(P, Q, sigma, n_threads=t)

        ours()
        sec = best_time(ours, args.repeat)
        with threadpool_limits(limits=t, user_api="blas"):
            numpy_sne(P, Q, sigma)
            t_np = best_time(lambda: numpy_sne(P, Q, sigma), args.repeat)
            # the block's floor: the GEMM of its inner products alone (the
            # squared distances need it), the same GEMM as numpy's build makes
            t_dots = best_time(lambda: P @ Q.T, args.repeat)
        err = float(np.abs(ours().astype(np.float64) - numpy_sne(P, Q, sigma)).max())
        rows[dtype].append(f"| {dtype.name} | 64 | SNE block {m} x {m} | {sec:.3f} | "
                           f"{sec / (m * m / t) * 1e9:.2f} | numpy build {t_np:.3f}; "
                           f"P Q^T alone {t_dots:.3f} | {t_np / sec:.1f}x numpy, "
                           f"{t_dots / sec:.2f} of the GEMM rate (max diff {err:.1e}) | |")
        print(rows[dtype][-1], flush=True)
    body = [header, *[row for dtype in dtypes for row in rows[dtype]]]
    if compare:
        body += ["", "float32 against float64 on the same data (the float32 passes' accuracy):", "",
                 "| d | Tr(Gamma K_XW), relative difference | Phi(W), relative difference "
                 "(Frobenius) |", "|---|---|---|", *agreement, "",
                 floors_missed(missed)]
    text = "\n".join([*results_head("Native passes against GEMM", "bench_core_rate.py", details=[
        f"n = {n}, q = {q}, {t} threads, Gaussian kernel, factored supervised Gamma "
        "(10 classes); float64 and float32 calls interleaved"]), *body]) + "\n"
    emit(text, args.out)


if __name__ == "__main__":
    main()
