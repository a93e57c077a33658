"""ikdr on a Dask cluster against the in-memory fit.

For each d: supervised Gaussian ISM (``ikdr.ism`` on Gamma = H Y Y^T H, a fixed
number of plain steps, no certificate, so every mode does the same passes)
and the Nystrom KSVD (``KernelSVD(solver="nystrom")`` between X and a second
point set) on the ``_peers.mixture`` data, three ways:

* in memory, 1 thread (the serial reference of the parallel efficiency);
* in memory, W threads (the same cores as the cluster);
* row-chunked dask array on a ``LocalCluster(processes=True, n_workers=W,
  threads_per_worker=1)``.

Reports wall time, peak RSS of the client and of each worker (VmHWM reset
before each fit), the parallel efficiency ``T_1 / (W T_dask)`` and the
answers' agreement (subspace sine, relative objective), and from Dask's task
stream the measured seconds per block-pair task. From those rates it writes
the scaling model of docs/distributed.md: predicted time of one pass and of a
fit on N nodes for n = 10^6 and 10^7 and the communication volume per pass.

    nice python benchmarks/bench_dask.py                     # n = 100,000, d = 16 32 64
    python benchmarks/bench_dask.py --n 4000 --d 8 --chunk 1000 --landmarks 100   # a check

Writes benchmarks/results/dask.md (machine, date and command in the file).
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


def _pair_task_seconds(stream):
    """Compute seconds of every block-pair task in a Dask task stream."""
    out = []
    for rec in stream:
        if not str(rec.get("key", "")).startswith(("('_pair_task", "_pair_task")):
            continue
        out += [s["stop"] - s["start"] for s in rec.get("startstops", ()) if s["action"] == "compute"]
    return np.asarray(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, nargs="*", default=[16, 32, 64])
    parser.add_argument("--q", type=int, default=4)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=12_500, help="rows per block")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2, help="plain ISM steps per fit")
    parser.add_argument("--m", type=int, default=20_000, help="KSVD column points")
    parser.add_argument("--landmarks", type=int, default=1000)
    parser.add_argument("--rank", type=int, default=10)
    parser.add_argument("--cores-per-node", type=int, default=32)
    parser.add_argument("--skip-serial", action="store_true", help="no 1-thread reference")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "dask.md"))
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster, get_task_stream

    import ikdr
    from _peers import mixture, peak_rss_mb, reset_peak_rss, results_head

    warnings.simplefilter("ignore")
    W = args.workers
    cluster = LocalCluster(processes=True, n_workers=W, threads_per_worker=1,
                           dashboard_address=None, memory_limit=0)
    client = Client(cluster)
    client.run(ikdr.set_num_threads, 1)
    lines = [*results_head(f"ikdr on Dask: {W}-worker LocalCluster against the in-memory fit",
                           "bench_dask.py"),
             f"n = {args.n}, chunks of {args.chunk} rows ({-(-args.n // args.chunk)} blocks, "
             f"{(-(-args.n // args.chunk)) ** 2} pair tasks per pass), q = {args.q}, "
             f"{args.steps} plain ISM steps (no certificate); KSVD: m = {args.m}, "
             f"{args.landmarks} landmarks, rank {args.rank}", "",
             "| method | d | mode | time (s) | passes | client peak (MB) | worker peak (MB) | "
             "parallel efficiency | sine to in-memory | objective rel. diff | s per pair task |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rates = {}

    def run(fn, threads):
        ikdr.set_num_threads(threads)
        reset_peak_rss()
        client.run(reset_peak_rss)
        t = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t, peak_rss_mb()

    for d in args.d:
        X, y = mixture(args.n, d, n_classes=args.classes, seed=0)
        gamma, _ = ikdr.supervised_gamma(y)
        kernel = ikdr.kernels.Gaussian().fit(X, random_state=0)
        Xd = da.from_array(X, chunks=(args.chunk, d)).persist()

        def ism_fit(data):
            return ikdr.ism(data, gamma, kernel, args.q, max_iter=args.steps, tol=1e-12,
                            certify=False, warn=False, phi_solver="dense")

        results = {}
        modes = ([("in memory, 1 thread", 1)] if not args.skip_serial else []) + \
            [(f"in memory, {W} threads", W)]
        for mode, threads in modes:
            res, sec, peak = run(lambda: ism_fit(X), threads)
            results[mode] = (res, sec, peak, float("nan"))
        with get_task_stream(client) as ts:
            res, sec, peak = run(lambda: ism_fit(Xd), W)
        wpeak = max(client.run(peak_rss_mb).values())
        pair = _pair_task_seconds(ts.data)
        results["dask"] = (res, sec, peak, wpeak)
        t_pair = float(np.median(pair)) if pair.size else float("nan")
        blocks = -(-args.n // args.chunk)
        passes = res.convergence.phi_evaluations
        # per-task overhead: the wall time of a pass beyond its compute spread over W cores
        overhead = max(0.0, sec / passes - np.ceil(blocks ** 2 / W) * t_pair) / blocks ** 2
        rates[d] = (t_pair, overhead)
        ref = results[modes[0][0]][0]
        for mode, (r, sec, peak, wpeak) in results.items():
            sine = np.sin(ikdr.principal_angle(ref.components, r.components))
            rel = abs(r.objective - ref.objective) / abs(ref.objective)
            passes = r.convergence.phi_evaluations
            n_cores = W if mode == "dask" else dict(modes)[mode]
            eff = (results[modes[0][0]][1] / (n_cores * sec)) if not args.skip_serial else float("nan")
            lines.append(f"| ISM (Gaussian) | {d} | {mode} | {sec:.2f} | {passes} | {peak:.0f} | "
                         f"{'-' if np.isnan(wpeak) else f'{wpeak:.0f}'} | "
                         f"{eff:.2f} | {sine:.1e} | {rel:.1e} | "
                         f"{rates[d][0]:.3g} |" if mode == "dask" else
                         f"| ISM (Gaussian) | {d} | {mode} | {sec:.2f} | {passes} | {peak:.0f} | - | "
                         f"{eff:.2f} | {sine:.1e} | {rel:.1e} | - |")

        # Nystrom KSVD between X and a second point set
        Z, _ = mixture(args.m, d, n_classes=args.classes, seed=1)
        kw = dict(n_components=args.rank, kernel="rbf", solver="nystrom",
                  n_landmarks=args.landmarks, random_state=0)
        ks = {}
        for mode, threads in modes:
            ks[mode] = run(lambda: ikdr.KernelSVD(**kw).fit(X, Z), threads)
        ks["dask"] = run(lambda: ikdr.KernelSVD(**kw).fit(Xd, Z), W)
        kwpeak = max(client.run(peak_rss_mb).values())
        kref = ks[modes[0][0]][0]
        for mode, (model, sec, peak) in ks.items():
            a, b = kref.left_vectors_, model.left_vectors_
            sine = float(np.max(np.linalg.norm(b - a * np.einsum("ij,ij->j", a, b), axis=0)))
            rel = float(np.max(np.abs(model.singular_values_ - kref.singular_values_))
                        / kref.singular_values_[0])
            n_cores = W if mode == "dask" else dict(modes)[mode]
            eff = (ks[modes[0][0]][1] / (n_cores * sec)) if not args.skip_serial else float("nan")
            lines.append(f"| Nystrom KSVD (rbf) | {d} | {mode} | {sec:.2f} | - | {peak:.0f} | "
                         f"{f'{kwpeak:.0f}' if mode == 'dask' else '-'} | {eff:.2f} | "
                         f"{sine:.1e} | {rel:.1e} | - |")
        print("\n".join(lines[-6:]), flush=True)

    # ---- the scaling model (docs/distributed.md) from the measured pair rates
    c0 = args.chunk
    lines += ["", "## Scaling model from the measured pair-task rates", "",
              f"Measured: t_pair, seconds of one pair task with c0 = {c0} rows (1 core), and "
              "s_task, the scheduling overhead per task (wall time of a pass beyond its "
              "compute, divided by its tasks). A pass over n rows in blocks of c rows has "
              "B^2 = (n/c)^2 pair tasks; t_pair scales as (c/c0)^2. On N nodes of "
              f"{args.cores_per_node} cores: T_pass = ceil(B^2 / (N cores)) t_pair (c/c0)^2 "
              "+ B^2 s_task (one central scheduler). Traffic per pass, worst case (no block "
              "cached where it is needed): 2 B^2 c d 8 bytes of row blocks to the workers, "
              "B^2 d^2 8 bytes of partials between workers, d^2 8 bytes to the client. "
              f"A supervised fit is about {args.steps + 2} to 10 passes (plain steps; more with "
              "the certificate).", "",
              "| d | t_pair (s) | s_task (s) | n | c | N nodes | pair tasks | T_pass (s) | "
              "block traffic per pass (GB) | partials per pass (MB) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for d, (t_pair, s_task) in rates.items():
        for n in (10 ** 6, 10 ** 7):
            for c in (c0, max(c0, n // 100)):
                tasks = (-(-n // c)) ** 2
                for nodes in (1, 10, 100, 1000):
                    cores = nodes * args.cores_per_node
                    t_pass = np.ceil(tasks / cores) * t_pair * (c / c0) ** 2 + tasks * s_task
                    lines.append(f"| {d} | {t_pair:.3g} | {s_task:.2g} | {n:.0e} | {c} | {nodes} | "
                                 f"{tasks} | {t_pass:.3g} | {2 * tasks * c * d * 8 / 1e9:.3g} | "
                                 f"{tasks * d * d * 8 / 1e6:.3g} |")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
