"""Thesis Fig. 3.4: eigen-solver time against d as uniform noise dimensions double.

Wu's dissertation (2020, section 3, Fig. 3.4) adds dimensions of uniform
noise to the Large Gaussian data set, doubling d each time, and plots the time
of ISM's eigen-solve against d on log/log axes: the coordinate-wise power
method (CPM; Lei, Zhong and Dhillon, NeurIPS 2016) grows about linearly (slope
1), NumPy's full eigendecomposition faster. This script does the same with
ikdr's solvers, on the d x d matrices ISM diagonalises:

- ``Phi_0``: the W-free start (no warm start: LAPACK's case in ``ikdr.ism``);
- ``Phi(W_1)``: Phi at the first iterate, warm-started from W_1 (every later
  ISM step is warm-started from the previous W).

For each d and matrix it times (best of ``--repeat``): ``eigh`` (NumPy's full
eigendecomposition, the thesis's baseline), ``lapack`` (dsyevr, the top q only:
``eigen_solver="lapack"``), ``chebyshev`` (the C++ Chebyshev-filtered block
iteration: ``"power"``) and ``cpm`` (the C++ CPM: ``"cpm"``), checks each
against LAPACK (sine of the largest principal angle), fits the log/log slope
of each solver's time over d, and names the fastest converged solver at each
d: what ``eigen_solver="auto"`` should choose there. The BLAS is held at one
thread while the solvers run, as ``ikdr.ism`` holds it.

    PYTHONPATH=src python benchmarks/bench_cpm.py --max-d 2048 --repeat 3 \\
        --out benchmarks/results/cpm_fig34.md --plot docs/_static/cpm_fig34.png
    PYTHONPATH=src python benchmarks/bench_cpm.py --max-d 64 --repeat 1   # quick check

Run it alone on a quiet machine (``uptime`` load well below 1): the numbers are
meaningless under load. The table records the load average at the start.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.linalg

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SOLVERS = ("eigh", "lapack", "chebyshev", "cpm")


def noisy_large_gaussian(n, d, seed=0):
    """Large Gaussian (4 dimensions, its 4 clusters as labels) plus d - 4
    dimensions of uniform noise, standardised."""
    import ikdr.datasets

    X, y_original, y_alternative = ikdr.datasets.make_gaussian_views("large", n, random_state=seed)
    y = 2 * y_original + y_alternative      # the four clusters: Gamma of rank 3
    rng = np.random.default_rng(seed + 1)
    noise = rng.uniform(-2.0, 2.0, (n, max(d - X.shape[1], 0)))
    X = np.hstack([X, noise])[:, :d]
    X = (X - X.mean(0)) / X.std(0)
    return np.ascontiguousarray(X), y


def solve(name, phi, q, V0):
    """(values, vectors, converged) of one solver."""
    # internal: the core's eigensolvers alone (ism(eigen_solver=...) would time a fit)
    from ikdr import _native

    d = phi.shape[0]
    if name == "eigh":
        w, U = np.linalg.eigh(phi)
        return w[::-1][:q], U[:, ::-1][:, :q], True
    if name == "lapack":
        w, U = scipy.linalg.eigh(phi, subset_by_index=[d - q, d - 1], driver="evr")
        return w[::-1], U[:, ::-1], True
    if name == "chebyshev":
        w, U, _, converged, _ = _native.top_eigenpairs(phi, q, V0, max_iter=300, tol=1e-12)
        return w, U, bool(converged)
    w, U, info = _native.cpm_eigenpairs(phi, q, V0, tol=1e-12)
    return w, U, bool(info["converged"])


def sine(U, V):
    return float(np.linalg.norm(V - U @ (U.T @ V), 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="samples (Phi is formed once per d)")
    parser.add_argument("--q", type=int, default=2)
    parser.add_argument("--min-d", type=int, default=4)
    parser.add_argument("--max-d", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="ikdr threads for the Phi passes")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    parser.add_argument("--plot", help="write the log/log figure (PNG) to this file")
    args = parser.parse_args()

    import ikdr
    from _peers import best_time, emit, results_head
    from ikdr.kernels import Gaussian

    dims = []
    d = args.min_d
    while d <= args.max_d:
        dims.append(d)
        d *= 2
    # the solvers run with the BLAS at one thread, as inside ikdr.ism
    from threadpoolctl import threadpool_limits
    blas_limit = threadpool_limits(1, user_api="blas")
    times = {m: {s: [] for s in SOLVERS} for m in ("Phi_0", "Phi(W_1)")}
    rows = []
    for d in dims:
        X, y = noisy_large_gaussian(args.n, d)
        gamma, _ = ikdr.supervised_gamma(y)
        kernel = Gaussian(ikdr.median_sigma(X, random_state=0))
        q = min(args.q, d)
        phi0 = np.ascontiguousarray(kernel.phi0(X, gamma), dtype=np.float64)
        W1 = np.ascontiguousarray(np.linalg.eigh(phi0)[1][:, ::-1][:, :q])
        phi1, _ = kernel.phi_product(X, W1, gamma, None, n_threads=args.threads)
        phi1 = np.ascontiguousarray(0.5 * (phi1 + phi1.T), dtype=np.float64)
        for label, phi, V0 in (("Phi_0", phi0, None), ("Phi(W_1)", phi1, W1)):
            ref = solve("lapack", phi, q, None)[1]
            best, best_t = None, np.inf
            cells = []
            for name in SOLVERS:
                result = solve(name, phi, q, V0)
                t = best_time(lambda: solve(name, phi, q, V0), args.repeat)
                times[label][name].append(t)
                ok = result[2]
                cells.append(f"{t * 1e3:.2f} ms{'' if ok else ' (no conv.)'}, sin {sine(ref, result[1]):.0e}")
                if ok and name != "eigh" and t < best_t:
                    best, best_t = name, t
            rows.append(f"| {d} | {label} | " + " | ".join(cells) + f" | {best} |")

    def slope(ts):
        ts = np.asarray(ts)
        keep = np.asarray(dims) >= 64      # the small-d times are call overhead
        if keep.sum() < 2:
            keep = np.ones_like(keep)
        return np.polyfit(np.log(np.asarray(dims)[keep]), np.log(ts[keep]), 1)[0]

    blas_limit.restore_original_limits()
    lines = [
        *results_head("Thesis Fig. 3.4 with ikdr's eigen-solvers: time against d", "bench_cpm.py",
                      details=[f"n = {args.n}, q = {args.q}, best of {args.repeat}; the BLAS at "
                               "one thread (as in ikdr.ism); the solvers are single-threaded"]),
        "| d | matrix | " + " | ".join(SOLVERS) + " | fastest converged (auto's choice) |",
        "|---|---|" + "---|" * len(SOLVERS) + "---|",
        *rows,
        "",
        "log/log slope of time against d (d >= 64; 1 = linear, 2 = quadratic, 3 = cubic):",
        "",
        "| matrix | " + " | ".join(SOLVERS) + " |",
        "|---|" + "---|" * len(SOLVERS),
        *[f"| {label} | " + " | ".join(f"{slope(times[label][s]):.2f}" for s in SOLVERS) + " |"
          for label in times],
        "",
    ]
    emit("\n".join(lines), args.out)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, label in zip(axes, times):
            for s in SOLVERS:
                ax.loglog(dims, times[label][s], "o-", label=s)
            ax.set_title(f"{label}{' (warm start)' if label != 'Phi_0' else ''}")
            ax.set_xlabel("d (Large Gaussian + uniform noise dimensions)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("seconds (best of %d)" % args.repeat)
        axes[0].legend()
        fig.suptitle(f"eigen-solve time against d, n = {args.n}, q = {args.q}")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print("figure:", args.plot)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.1f} s)")
