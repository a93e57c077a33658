"""Per-call cost of the core's threads at small n: parallel efficiency of small passes.

Every parallel pass of the C++ core is one OpenMP parallel region
(``cpp/include/ikdr/parallel.hpp``); the runtime keeps its threads between
calls, so a call pays the region's fork and join, not a thread start-up (the
per-call threads of earlier versions did). At n = 1,000 (``--n``) this times,
through the public kernel API, the pass types of one ISM iteration as a fit
makes them (``objective``: Tr(Gamma K_XW); ``thin Phi``: Phi(W) V with ``--q``
columns, ``Kernel.phi_product(X, W, gamma, V)``; ``dense Phi``: the d x d
Phi(W), ``Kernel.phi_product(X, W, gamma)``, each with its products XW and
X^T(...) in the same core call), best of
``--repeat`` after a warm-up, with 1 thread and with ``--threads`` threads, and
the whole ``ikdr.ISM`` fit the same way. The 1-thread and T-thread calls
alternate (``_peers.best_times``), so a host whose speed drifts (a shared
virtual machine) moves both alike. Columns:

- ``1 thread s`` / ``T threads s``: seconds per call;
- ``speed-up``: ``t1 / tT`` (T on an idle T-core machine is the ideal);
- ``overhead bound us``: ``tT - t1 / T`` in microseconds, an upper bound on what
  starting and joining the threads costs per call (the rest is imbalance).

    PYTHONPATH=src python benchmarks/bench_call_overhead.py --n 1000 --threads 2 \\
        --out benchmarks/results/call_overhead.md
    PYTHONPATH=src python benchmarks/bench_call_overhead.py --n 200 --repeat 3   # quick check

Run it alone on a quiet machine: the numbers are meaningless under load.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--q", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args()

    import ikdr
    from _peers import best_times, emit, mixture, results_head
    from ikdr.kernels import Gaussian

    n, d, q, T = args.n, args.d, args.q, args.threads
    X, y = mixture(n, d)
    X = np.ascontiguousarray(X, dtype=np.float64)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(ikdr.median_sigma(X, random_state=0))
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((d, q)))[0]
    Z = np.ascontiguousarray(X @ W)
    V = np.linalg.qr(np.random.default_rng(1).standard_normal((d, q)))[0]

    def passes(t):
        return {
            "objective": lambda: kernel.product(Z, None, gamma, n_threads=t),
            f"thin Phi ({q} columns)": lambda: kernel.phi_product(X, W, gamma, V, n_threads=t),
            f"dense Phi ({d} x {d})": lambda: kernel.phi_product(X, W, gamma, n_threads=t),
        }

    def fit(t):
        def run():
            with ikdr.num_threads(t):
                ikdr.ISM(n_components=q, random_state=0).fit(X, y)
        return run

    rows = []
    names = list(passes(1))
    for name in names + ["ISM fit"]:
        calls = [fit(t) if name == "ISM fit" else passes(t)[name] for t in (1, T)]
        for call in calls:
            call()  # warm-up
        one, many = best_times(calls, args.repeat)
        rows.append(f"| {name} | {one:.6f} | {many:.6f} | {one / many:.2f} | "
                    f"{1e6 * (many - one / T):.0f} |")
        print(rows[-1], flush=True)
    text = "\n".join([
        *results_head(f"Per-call cost of the core's threads at n = {n}", "bench_call_overhead.py",
                      details=[f"n = {n}, d = {d}, q = {q}, best of {args.repeat}"]),
        f"| call | 1 thread s | {T} threads s | speed-up | overhead bound us |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ])
    emit(text, args.out)


if __name__ == "__main__":
    main()
