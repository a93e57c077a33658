"""Issue 6's target table in one run: ikdr against dense numpy (time, peak memory, ratio, agreement).

Data: the generated, standardised 10-class mixture (d = 784), Gaussian kernel,
median-heuristic sigma, q = 10. Every fit runs in its own subprocess so its
peak RSS is its own ("peak MB" = peak RSS above the process's RSS after
loading the data; target 2 is on the whole process's peak RSS).

1. supervised ISM at n = 10,000 against the dense numpy peer of ``_peers.py``
   (the same peer as ``bench_ism_vs_numpy.py``), the solver with and without
   the Hessian certificate, each in its own process (goal: >= 10x faster,
   <= 1/10 of the memory, sin(largest principal angle) < 1e-6, objective
   within 1e-8 relative);
2. supervised ISM at n = 70,000 (goal: < 300 s, peak RSS < 2 GB; the dense
   peer would need several n^2 doubles, 39 GB each, and is not run);
3. ``ISMClustering`` (10 clusters) at n = 10,000 (goal < 120 s) and ``KDAC``
   at n = 20,000 (goal < 300 s), with the lean dense numpy alternation of
   ``bench_clustering.py`` as the peer up to --peer-max-n;
4. the fused n^2 product (Gaussian Phi weights, factored Gamma) against the
   machine's dgemm rate through numpy in the same process (goal >= 0.5);
5. float32 against float64 ISM (``dtype`` on the estimator; goal >= 1.7x with
   HSIC within 1e-4 relative), when the estimators have a ``dtype`` parameter;
6. the log-log slope of time against n (goal ~2), by running
   ``bench_scaling.py`` as a subprocess and reading the JSON file it writes.

Writes ``benchmarks/results/targets.md`` (machine, date, command, the table)
and ``targets.json`` (the same records).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_targets.py
    ... --quick                      # small sizes, a few minutes
    ... --targets 1 4 5              # a subset
    ... --n-large 40000 --n-kdac 10000 --scaling-sizes 2500 5000 10000

Time targets are defined on this project's 2-core machine; elsewhere they are
indicative.
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


# -- workers (each in its own process) ---------------------------------------------------------

def worker(kind, data_path, out_path):
    import warnings

    import ikdr
    from _peers import peak_rss_mb, reset_peak_rss

    with np.load(data_path) as z:
        X, y = z["X"], z["y"]
    base = reset_peak_rss()
    t0 = time.perf_counter()
    extra = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind in ("solver", "solver-nocert", "numpy-ism"):
            # target 1: the ISM solver and the dense numpy peer on the same Gamma and sigma
            from _peers import numpy_supervised_ism

            sigma = ikdr.median_sigma(X)
            if kind == "numpy-ism":
                W, n_iter, objective = numpy_supervised_ism(X, y, sigma, 10)
            else:
                gamma, _ = ikdr.supervised_gamma(y)
                res = ikdr.ism(X, gamma, ikdr.kernels.Gaussian(sigma), 10,
                               certify=kind == "solver")
                W, n_iter, objective = res.components, res.n_iter, res.objective
            model = None
            extra = {"objective": float(objective), "n_iter": int(n_iter)}
        elif kind in ("ism", "ism-float32"):
            kw = {"dtype": np.float32} if kind == "ism-float32" else {}
            model = ikdr.ISM(n_components=10, approximation=None, **kw).fit(X, y)
            extra = {"hsic": float(model.hsic_), "n_iter": int(model.n_iter_)}
        elif kind == "ismclustering":
            model = ikdr.ISMClustering(n_clusters=10, n_components=10, random_state=0).fit(X)
            extra = {"sigma": float(model.sigma_), "n_iter": int(model.n_iter_)}
        elif kind == "kdac":
            model = ikdr.KDAC(n_clusters=10, n_components=10, random_state=0).fit(X, y)
            extra = {"sigma": float(model.sigma_), "n_iter": int(model.n_iter_)}
        elif kind in ("numpy-ismclustering", "numpy-kdac"):
            from bench_clustering import numpy_alternation

            with np.load(out_path.replace("numpy-", "")) as ref:   # ikdr's sigma
                sigma = float(ref["sigma"])
            Y = ikdr.gamma.one_hot(y)[0] if kind == "numpy-kdac" else None
            W, _, outer = numpy_alternation(X, sigma, 10, 10, Y=Y, lam=1.0)
            model = None
            extra = {"n_iter": int(outer)}
        else:
            raise ValueError(kind)
    elapsed = time.perf_counter() - t0
    W = model.components_ if model is not None else W
    rec = {"time": elapsed, "peak_mb": peak_rss_mb() - base, "total_peak_mb": peak_rss_mb(), **extra}
    np.savez(out_path, W=W, **{k: v for k, v in extra.items() if k == "sigma"})
    print(json.dumps(rec))


def run_worker(kind, data_path, tmp, timeout=None):
    out = os.path.join(tmp, f"{kind}.npz")
    proc = subprocess.run([sys.executable, __file__, "--worker", kind, data_path, out],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} failed: {proc.stderr.strip()[-800:]}")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(out) as z:
        rec["W"] = z["W"]
    return rec


def save_mixture(n, d, tmp):
    from _peers import mixture

    X, y = mixture(n, d)
    path = os.path.join(tmp, f"mixture_{n}_{d}.npz")
    np.savez(path, X=X, y=y)
    return path


# -- the targets -------------------------------------------------------------------------------

ROW = "| {target} | {case} | {goal} | {ikdr} | {peer} | {ratio} | {mem} | {agree} | {met} |"
HEADER = ("| target | case | goal | ikdr | dense numpy | ratio | peak memory ikdr / numpy (MB) | "
          "agreement | met |\n|---|---|---|---|---|---|---|---|---|")


def yes(ok):
    return "yes" if ok else "**no**"


def target1(args, tmp):
    """Supervised ISM (the solver, with and without the Hessian certificate) against the
    dense numpy peer of ``_peers.py``, each in its own process, same data, sigma and Gamma."""
    import ikdr

    n, d = args.n_sup, args.d
    data = save_mixture(n, d, tmp)
    r = run_worker("solver", data, tmp)
    nc = run_worker("solver-nocert", data, tmp)
    p = run_worker("numpy-ism", data, tmp)
    os.remove(data)
    speed, speed_nc = p["time"] / r["time"], p["time"] / nc["time"]
    mem_ratio = p["peak_mb"] / max(r["peak_mb"], 0.1)
    sin = float(np.sin(ikdr.principal_angle(p["W"], r["W"])))
    rel = abs(r["objective"] - p["objective"]) / abs(p["objective"])
    ok = speed >= 10 and mem_ratio >= 10 and sin < 1e-6 and rel < 1e-8
    return [dict(target=1, case=f"supervised ISM n={n} d={d}",
                 goal=">= 10x, <= 1/10 memory, sin < 1e-6, objective 1e-8",
                 ikdr=f"{r['time']:.2f} s ({nc['time']:.2f} s without the Hessian certificate)",
                 peer=f"{p['time']:.2f} s", ratio=f"{speed:.1f}x ({speed_nc:.1f}x)",
                 mem=f"{r['peak_mb']:.0f} / {p['peak_mb']:.0f} ({mem_ratio:.0f}x less)",
                 agree=f"sin {sin:.1e}, objective rel {rel:.1e}", met=yes(ok),
                 values={"ikdr_s": r["time"], "ikdr_nocert_s": nc["time"], "numpy_s": p["time"],
                         "ikdr_peak_mb": r["peak_mb"], "numpy_peak_mb": p["peak_mb"],
                         "sin_angle": sin, "objective_rel_diff": rel})]


def target2(args, tmp):
    n = args.n_large
    data = save_mixture(n, args.d, tmp)
    r = run_worker("ism", data, tmp)
    os.remove(data)
    ok = r["time"] < 300 and r["total_peak_mb"] < 2048
    dense_gb = 3 * n * n * 8 / 1e9
    return [dict(target=2, case=f"supervised ISM n={n} d={args.d}",
                       goal="< 300 s, peak RSS < 2 GB",
                       ikdr=f"{r['time']:.1f} s, {r['n_iter']} iterations",
                       peer=f"not run (>= {dense_gb:.1f} GB)", ratio="",
                       mem=f"{r['total_peak_mb']:.0f} total ({r['peak_mb']:.0f} above data)",
                       agree="", met=yes(ok))]


def target3(args, tmp):
    import ikdr

    rows = []
    for kind, n, goal in (("ismclustering", args.n_cluster, 120), ("kdac", args.n_kdac, 300)):
        data = save_mixture(n, args.d, tmp)
        r = run_worker(kind, data, tmp)
        peer, ratio, mem, agree = "not run (n > --peer-max-n)", "", f"{r['peak_mb']:.0f} / -", ""
        if n <= args.peer_max_n:
            p = run_worker("numpy-" + kind, data, tmp)
            peer = f"{p['time']:.1f} s"
            ratio = f"{p['time'] / r['time']:.1f}x"
            mem = f"{r['peak_mb']:.0f} / {p['peak_mb']:.0f} ({p['peak_mb'] / max(r['peak_mb'], 0.1):.0f}x less)"
            agree = f"sin {np.sin(ikdr.principal_angle(r['W'], p['W'])):.1e}"
        os.remove(data)
        name = "ISMClustering 10 clusters" if kind == "ismclustering" else "KDAC 10 clusters vs labels"
        rows.append(dict(target=3, case=f"{name} n={n} d={args.d}", goal=f"< {goal} s",
                               ikdr=f"{r['time']:.1f} s, {r['n_iter']} outer", peer=peer,
                               ratio=ratio, mem=mem, agree=agree, met=yes(r["time"] < goal)))
    return rows


def target4(args):
    """Fused product rate against dgemm, same threads, same process."""
    import ikdr
    from _peers import best_time, mixture
    from ikdr.kernels import Gaussian

    threads = ikdr.get_num_threads()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None

    def best_of(fn):
        return best_time(fn, 3)

    m = 2000
    A = np.random.default_rng(0).standard_normal((m, m))
    B = np.random.default_rng(1).standard_normal((m, m))
    if threadpool_limits is not None:
        with threadpool_limits(threads, user_api="blas"):
            t_gemm = best_of(lambda: A @ B)
    else:
        t_gemm = best_of(lambda: A @ B)
    gemm_rate = 2 * m**3 / t_gemm / 1e9

    n, q = args.n_fused, 10
    X, y = mixture(n, args.d)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian().fit(X)
    W = np.linalg.qr(np.random.default_rng(2).standard_normal((args.d, q)))[0]
    Z = np.ascontiguousarray(X @ W)
    kernel.product(Z, X, gamma)  # warm-up
    t_fused = best_of(lambda: kernel.product(Z, X, gamma))
    rank = gamma.factor.shape[1] if getattr(gamma, "factor", None) is not None else 0
    # GEMM-equivalent flops of Y = (Gamma o K(Z)) X: the Gram tile (2 n^2 q), the Gamma tile
    # from its rank-r factor (2 n^2 r) and the product with the n x d right-hand side (2 n^2 d).
    flops = 2.0 * n * n * (q + rank + args.d)
    fused_rate = flops / t_fused / 1e9
    frac = fused_rate / gemm_rate
    return [dict(target=4, case=f"fused Phi product n={n}, rhs {args.d} cols, q={q}, r={rank}",
                       goal=">= 0.5 of dgemm", ikdr=f"{fused_rate:.1f} GFLOP/s ({t_fused:.2f} s)",
                       peer=f"dgemm {gemm_rate:.1f} GFLOP/s ({m}^3, {threads} threads)",
                       ratio=f"{frac:.2f}", mem="", agree="", met=yes(frac >= 0.5))]


def target5(args, tmp):
    import ikdr

    if "dtype" not in ikdr.ISM().get_params():
        return [dict(target=5, case="float32 ISM", goal=">= 1.7x, HSIC 1e-4",
                           ikdr="not available: ikdr.ISM has no dtype parameter", peer="",
                           ratio="", mem="", agree="", met="**no**")]
    data = save_mixture(args.n_sup, args.d, tmp)
    r64 = run_worker("ism", data, tmp)
    r32 = run_worker("ism-float32", data, tmp)
    os.remove(data)
    speed = r64["time"] / r32["time"]
    rel = abs(r32["hsic"] - r64["hsic"]) / abs(r64["hsic"])
    return [dict(target=5, case=f"ISM float32 vs float64 n={args.n_sup} d={args.d}",
                       goal=">= 1.7x, HSIC 1e-4", ikdr=f"{r32['time']:.2f} s (float32)",
                       peer=f"{r64['time']:.2f} s (ikdr float64)", ratio=f"{speed:.2f}x",
                       mem=f"{r32['peak_mb']:.0f} / {r64['peak_mb']:.0f}",
                       agree=f"HSIC rel {rel:.1e}, sin {np.sin(ikdr.principal_angle(r32['W'], r64['W'])):.1e}",
                       met=yes(speed >= 1.7 and rel <= 1e-4))]


def target6(args, tmp):
    """Runs bench_scaling.py and reads the JSON file it writes (not its printed text)."""
    cmd = [sys.executable, str(HERE / "bench_scaling.py"), "--d", str(args.d),
           "--sizes", *map(str, args.scaling_sizes), "--out", tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout + proc.stderr, flush=True)
    path = Path(tmp) / f"scaling_d{args.d}.json"
    if proc.returncode != 0 or not path.exists():
        return [dict(target=6, case="time vs n", goal="slope 2", ikdr="failed (see log)",
                     met="?")]
    result = json.loads(path.read_text())
    slope, per = result["slope"], result.get("slope_per_product")
    sizes = [r["n"] for r in result["records"]]
    extra = f" ({per:.2f} per fused product)" if per is not None else ""
    return [dict(target=6, case=f"supervised ISM time vs n = {sizes[0]}..{sizes[-1]}, d={args.d}",
                 goal="slope 2 (O(n^2))", ikdr=f"slope {slope:.2f}{extra}",
                 met=yes(abs(slope - 2) <= 0.3),
                 values={"slope": slope, "slope_per_product": per, "sizes": sizes})]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", type=int, default=[1, 2, 3, 4, 5, 6],
                        choices=range(1, 7))
    parser.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    parser.add_argument("--d", type=int, default=784)
    parser.add_argument("--n-sup", type=int, default=None, help="targets 1 and 5 (10000)")
    parser.add_argument("--n-large", type=int, default=None, help="target 2 (70000)")
    parser.add_argument("--n-cluster", type=int, default=None, help="ISMClustering (10000)")
    parser.add_argument("--n-kdac", type=int, default=None, help="KDAC (20000)")
    parser.add_argument("--peer-max-n", type=int, default=None,
                        help="largest n for the dense clustering peer (default 3000)")
    parser.add_argument("--n-fused", type=int, default=None, help="target 4 (10000)")
    parser.add_argument("--scaling-sizes", nargs="+", type=int, default=None,
                        help="target 6 (2500 5000 10000 20000 40000)")
    parser.add_argument("--out", default=None, help="results directory (default benchmarks/results)")
    parser.add_argument("--name", default="targets", help="results file stem (default targets)")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return

    full = dict(n_sup=10000, n_large=70000, n_cluster=10000, n_kdac=20000, peer_max_n=3000,
                n_fused=10000, scaling_sizes=[2500, 5000, 10000, 20000, 40000])
    quick = dict(n_sup=2000, n_large=10000, n_cluster=1500, n_kdac=2000, peer_max_n=2000,
                 n_fused=3000, scaling_sizes=[1000, 2000, 4000])
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)

    from _peers import run_conditions, write_results

    conditions = run_conditions("bench_targets.py", argv)
    print(conditions["machine"], flush=True)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.targets:
            t0 = time.perf_counter()
            records += {1: lambda: target1(args, tmp), 2: lambda: target2(args, tmp),
                        3: lambda: target3(args, tmp), 4: lambda: target4(args),
                        5: lambda: target5(args, tmp), 6: lambda: target6(args, tmp)}[t]()
            print(f"[target {t} measured in {time.perf_counter() - t0:.0f} s]", flush=True)
    rows = [render(r) for r in records]
    print("\n" + HEADER + "\n" + "\n".join(rows))
    body = ["Every fit runs in its own process (peak MB: peak RSS above the loaded data). "
            "Data: the standardised 10-class mixture of `_peers.mixture`, Gaussian kernel, "
            "median sigma, q = 10. Time goals are defined on the project's 2-core machine.",
            "", HEADER, *rows]
    path = write_results(args.name, "Performance targets: ikdr against dense numpy", conditions,
                         body, records, out_dir=args.out)
    print(f"table: {path}")


FIELDS = ("target", "case", "goal", "ikdr", "peer", "ratio", "mem", "agree", "met")


def render(record):
    return ROW.format(**{key: record.get(key, "") for key in FIELDS})


if __name__ == "__main__":
    main()
