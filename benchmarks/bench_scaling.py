"""How ikdr's supervised ISM time grows with n (the ISM paper's Figure 1b).

Times ``ikdr.ISM(n_components=q)`` (Gaussian kernel, median-heuristic sigma)
on a generated, standardised 10-class mixture for each n, each fit in its own
subprocess (peak RSS above the loaded data is the fit's own), fits the
log-log slope of time against n (2 = the O(n^2) the design promises), and
writes a markdown table and a plot of log2(run time) against n like the
paper's Figure 1b under ``benchmarks/results/``.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_scaling.py
    ... --sizes 2500 5000 10000 --d 784       # pick sizes
    ... --quick                                # n = 1000, 2000, 4000 with d = 64

Besides the wall time the table lists the number of fused n^2 products
(objective, Phi, Hessian-vector) each fit made: the iteration count can
change with n, so the slope of time per product is also reported.
matplotlib is optional (the plot is skipped with a message without it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEFAULT_SIZES = [2500, 5000, 10000, 20000, 40000]
QUICK_SIZES = [1000, 2000, 4000]


def worker(data_path, q):
    """Fit once on the saved data; print time, peak RSS (MB) and solver counts as JSON."""
    import ikdr
    from _peers import peak_rss_mb, reset_peak_rss

    with np.load(data_path) as z:
        X, y = z["X"], z["y"]
    base = reset_peak_rss()
    t0 = time.perf_counter()
    model = ikdr.ISM(n_components=q, approximation=None).fit(X, y)
    elapsed = time.perf_counter() - t0
    conv = getattr(model, "convergence_", None)
    products = None
    if conv is not None and hasattr(conv, "phi_evaluations"):
        products = int(conv.phi_evaluations + conv.objective_evaluations)
    print(json.dumps({"time": elapsed, "peak_mb": peak_rss_mb() - base,
                      "n_iter": int(model.n_iter_), "products": products,
                      "hsic": float(model.hsic_)}))


def loglog_slope(n, t):
    """Least-squares slope of log t against log n."""
    return float(np.polyfit(np.log(np.asarray(n, float)), np.log(np.asarray(t, float)), 1)[0])


def plot(rows, slope, path, d, q):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: plot skipped (pip install matplotlib)")
        return None
    n = np.array([r["n"] for r in rows], float)
    t = np.array([r["time"] for r in rows], float)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(n, np.log2(t), "o-", label="ikdr ISM (measured)")
    # n^2 reference through the middle point
    mid = len(n) // 2
    ax.plot(n, np.log2(t[mid] * (n / n[mid]) ** 2), "--", color="grey", label="$\\propto n^2$")
    ax.set_xlabel("number of samples n")
    ax.set_ylabel("log2(run time / s)")
    ax.set_title(f"Supervised ISM, Gaussian, d = {d}, q = {q}\nlog-log slope {slope:.2f}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help=f"sample sizes (default {DEFAULT_SIZES})")
    parser.add_argument("--d", type=int, default=None, help="dimension (default 784)")
    parser.add_argument("--q", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help=f"n = {QUICK_SIZES}, d = 64 unless given")
    parser.add_argument("--out", default=str(HERE / "results"), help="directory for the table and plot")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return

    import ikdr
    from _peers import mixture

    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    d = args.d or (64 if args.quick else 784)
    if len(sizes) < 2:
        parser.error("need at least two sizes to fit a slope")
    from _peers import run_conditions

    conditions = run_conditions("bench_scaling.py", argv)
    print(conditions["machine"])
    print(f"supervised ISM, Gaussian (median sigma), q = {args.q}, 10-class mixture, d = {d}\n")
    header = "| n | d | time (s) | iterations | fused products | s / product | peak MB | HSIC |"
    print(header + "\n|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            X, y = mixture(n, d)
            data = os.path.join(tmp, f"data_{n}.npz")
            np.savez(data, X=X, y=y)
            del X, y
            out = subprocess.run([sys.executable, __file__, "--worker", data, str(args.q)],
                                 capture_output=True, text=True)
            os.remove(data)
            if out.returncode != 0:
                print(f"| {n} | {d} | failed: {out.stderr.strip().splitlines()[-1:]} |")
                continue
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            rec["n"] = n
            rows.append(rec)
            per = rec["time"] / rec["products"] if rec["products"] else float("nan")
            print(f"| {n} | {d} | {rec['time']:.2f} | {rec['n_iter']} | {rec['products']} | "
                  f"{per:.3g} | {rec['peak_mb']:.0f} | {rec['hsic']:.6g} |", flush=True)
    if len(rows) < 2:
        sys.exit("fewer than two sizes ran: no slope")
    n = [r["n"] for r in rows]
    slope = loglog_slope(n, [r["time"] for r in rows])
    lines = [f"\nlog-log slope of time vs n ({n[0]}..{n[-1]}): {slope:.2f}"]
    per_slope = None
    if all(r["products"] for r in rows):
        per_slope = loglog_slope(n, [r["time"] / r["products"] for r in rows])
        lines.append(f"log-log slope of time per fused product: {per_slope:.2f}")
    print("\n".join(lines))

    from _peers import write_results

    body = [f"Supervised ISM, Gaussian (median sigma), q = {args.q}, 10-class mixture, d = {d}; "
            "each n fitted in its own process.", "", header,
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        per = r["time"] / r["products"] if r["products"] else float("nan")
        body.append(f"| {r['n']} | {d} | {r['time']:.2f} | {r['n_iter']} | {r['products']} | "
                    f"{per:.3g} | {r['peak_mb']:.0f} | {r['hsic']:.6g} |")
    body += lines + ["", f"![time against n](scaling_d{d}.png)"]
    stem = os.path.join(args.out, f"scaling_d{d}")
    conditions["slope"], conditions["slope_per_product"] = slope, per_slope
    write_results(f"scaling_d{d}", f"Supervised ISM run time against n (d = {d}, q = {args.q})",
                  conditions, body, rows, out_dir=args.out)
    print(f"table: {stem}.md")
    png = plot(rows, slope, stem + ".png", d, args.q)
    if png:
        print(f"plot: {png}")
    return slope


if __name__ == "__main__":
    main()
