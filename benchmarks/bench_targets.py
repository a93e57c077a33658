"""Issue 6's target table in one run: ikdr against dense numpy (time, peak memory, ratio, agreement).

Data: the generated, standardised 10-class mixture (d = 784), Gaussian kernel,
median-heuristic sigma, q = 10. Every fit runs in its own subprocess so its
peak RSS is its own ("peak MB" = peak RSS above the process's RSS after
loading the data; target 2 is on the whole process's peak RSS).

1. supervised ISM at n = 10,000 against the dense numpy peer: runs
   ``bench_ism_vs_numpy.py`` (issue 6a's script) as a subprocess and reads
   its row (goal: >= 10x faster, <= 1/10 of the memory, sin(largest
   principal angle) < 1e-6, HSIC within 1e-8 relative);
2. supervised ISM at n = 70,000 (goal: < 300 s, peak RSS < 2 GB; the dense
   peer would need several n^2 doubles, 39 GB each, and is not run);
3. ``ISMClustering`` (10 clusters) at n = 10,000 (goal < 120 s) and ``KDAC``
   at n = 20,000 (goal < 300 s), with the dense numpy alternation of
   ``bench_clustering.py`` as the peer up to --peer-max-n;
4. the fused n^2 product (Gaussian Phi weights, factored Gamma) against the
   machine's dgemm rate through numpy in the same process (goal >= 0.5);
5. float32 against float64 ISM (``dtype`` on the estimator; goal >= 1.7x with
   HSIC within 1e-4 relative), when the estimators have a ``dtype`` parameter;
6. the log-log slope of time against n (goal ~2), by running
   ``bench_scaling.py`` as a subprocess.

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
import re
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
        if kind in ("ism", "ism-float32"):
            kw = {"dtype": np.float32} if kind == "ism-float32" else {}
            model = ikdr.ISM(n_components=10, **kw).fit(X, y)
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


def target1(args):
    """Supervised ISM vs the dense numpy peer, by bench_ism_vs_numpy.py."""
    size = f"{args.n_sup}x{args.d}"
    cmd = [sys.executable, str(HERE / "bench_ism_vs_numpy.py"), "--sizes", size]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout + proc.stderr, flush=True)
    if proc.returncode != 0:
        return [ROW.format(target=1, case=f"supervised ISM {size}", goal="", ikdr="failed",
                           peer="", ratio="", mem="", agree="", met="see log")]
    lines = proc.stdout.splitlines()
    head = next((ln for ln in lines if re.match(r"\s*n\s+d\s", ln)), None)
    row = next((ln for ln in lines if re.match(rf"\s*{args.n_sup}\s+{args.d}\s", ln)), None)
    # Columns of bench_ism_vs_numpy.py: n d iters numpy_s ikdr_s speedup nocert_s speedup
    # numpy_MB ikdr_MB mem_ratio sin obj_rel (parsed by position; printed above in full).
    tok = row.split() if row else []
    if head is None or len(tok) < 13:
        return [ROW.format(target=1, case=f"supervised ISM {size}", goal="", ikdr="see log above",
                           peer="", ratio="", mem="", agree="", met="?")]
    numpy_s, ikdr_s, nocert_s = float(tok[3]), float(tok[4]), float(tok[6])
    numpy_mb, ikdr_mb = float(tok[8]), float(tok[9])
    sin, rel = float(tok[11]), float(tok[12])
    speed = numpy_s / ikdr_s
    mem_ratio = numpy_mb / max(ikdr_mb, 0.1)
    ok = speed >= 10 and mem_ratio >= 10 and sin < 1e-6 and rel < 1e-8
    return [ROW.format(
        target=1, case=f"supervised ISM n={args.n_sup} d={args.d}",
        goal=">= 10x, <= 1/10 memory, sin < 1e-6, HSIC 1e-8",
        ikdr=f"{ikdr_s:.2f} s ({nocert_s:.2f} s without the Hessian certificate)",
        peer=f"{numpy_s:.2f} s", ratio=f"{speed:.1f}x ({numpy_s / nocert_s:.1f}x)",
        mem=f"{ikdr_mb:.0f} / {numpy_mb:.0f} ({mem_ratio:.0f}x less)",
        agree=f"sin {sin:.1e}, HSIC rel {rel:.1e}", met=yes(ok))]


def target2(args, tmp):
    n = args.n_large
    data = save_mixture(n, args.d, tmp)
    r = run_worker("ism", data, tmp)
    os.remove(data)
    ok = r["time"] < 300 and r["total_peak_mb"] < 2048
    dense_gb = 3 * n * n * 8 / 1e9
    return [ROW.format(target=2, case=f"supervised ISM n={n} d={args.d}",
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
        rows.append(ROW.format(target=3, case=f"{name} n={n} d={args.d}", goal=f"< {goal} s",
                               ikdr=f"{r['time']:.1f} s, {r['n_iter']} outer", peer=peer,
                               ratio=ratio, mem=mem, agree=agree, met=yes(r["time"] < goal)))
    return rows


def target4(args):
    """Fused product rate against dgemm, same threads, same process."""
    import ikdr
    from _peers import mixture
    from ikdr.kernels import Gaussian, _fused

    threads = ikdr.get_num_threads()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None

    def best_of(fn, repeat=3):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

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
    terms = kernel._terms(Z)
    t_fused = best_of(lambda: _fused(Z, terms, 1, gamma, rhs=X))
    rank = gamma.factor.shape[1] if getattr(gamma, "factor", None) is not None else 0
    # GEMM-equivalent flops of Y = (Gamma o K(Z)) X: the Gram tile (2 n^2 q), the Gamma tile
    # from its rank-r factor (2 n^2 r) and the product with the n x d right-hand side (2 n^2 d).
    flops = 2.0 * n * n * (q + rank + args.d)
    fused_rate = flops / t_fused / 1e9
    frac = fused_rate / gemm_rate
    return [ROW.format(target=4, case=f"fused Phi product n={n}, rhs {args.d} cols, q={q}, r={rank}",
                       goal=">= 0.5 of dgemm", ikdr=f"{fused_rate:.1f} GFLOP/s ({t_fused:.2f} s)",
                       peer=f"dgemm {gemm_rate:.1f} GFLOP/s ({m}^3, {threads} threads)",
                       ratio=f"{frac:.2f}", mem="", agree="", met=yes(frac >= 0.5))]


def target5(args, tmp):
    import ikdr

    if "dtype" not in ikdr.ISM().get_params():
        return [ROW.format(target=5, case="float32 ISM", goal=">= 1.7x, HSIC 1e-4",
                           ikdr="not available: ikdr.ISM has no dtype parameter", peer="",
                           ratio="", mem="", agree="", met="**no**")]
    data = save_mixture(args.n_sup, args.d, tmp)
    r64 = run_worker("ism", data, tmp)
    r32 = run_worker("ism-float32", data, tmp)
    os.remove(data)
    speed = r64["time"] / r32["time"]
    rel = abs(r32["hsic"] - r64["hsic"]) / abs(r64["hsic"])
    return [ROW.format(target=5, case=f"ISM float32 vs float64 n={args.n_sup} d={args.d}",
                       goal=">= 1.7x, HSIC 1e-4", ikdr=f"{r32['time']:.2f} s (float32)",
                       peer=f"{r64['time']:.2f} s (ikdr float64)", ratio=f"{speed:.2f}x",
                       mem=f"{r32['peak_mb']:.0f} / {r64['peak_mb']:.0f}",
                       agree=f"HSIC rel {rel:.1e}, sin {np.sin(ikdr.principal_angle(r32['W'], r64['W'])):.1e}",
                       met=yes(speed >= 1.7 and rel <= 1e-4))]


def target6(args):
    cmd = [sys.executable, str(HERE / "bench_scaling.py"), "--d", str(args.d),
           "--sizes", *map(str, args.scaling_sizes)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(proc.stdout + proc.stderr, flush=True)
    m = re.search(r"slope of time vs n \(([^)]*)\): ([-\d.]+)", proc.stdout)
    if proc.returncode != 0 or not m:
        return [ROW.format(target=6, case="time vs n", goal="slope 2", ikdr="failed (see log)",
                           peer="", ratio="", mem="", agree="", met="?")]
    slope = float(m.group(2))
    per = re.search(r"slope of time per fused product: ([-\d.]+)", proc.stdout)
    extra = f" ({float(per.group(1)):.2f} per fused product)" if per else ""
    return [ROW.format(target=6, case=f"supervised ISM time vs n = {m.group(1)}, d={args.d}",
                       goal="slope 2 (O(n^2))", ikdr=f"slope {slope:.2f}{extra}", peer="",
                       ratio="", mem="", agree="", met=yes(abs(slope - 2) <= 0.3))]


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

    from _peers import machine_summary

    print(machine_summary(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.targets:
            t0 = time.perf_counter()
            rows += {1: lambda: target1(args), 2: lambda: target2(args, tmp),
                     3: lambda: target3(args, tmp), 4: lambda: target4(args),
                     5: lambda: target5(args, tmp), 6: lambda: target6(args)}[t]()
            print(f"[target {t} measured in {time.perf_counter() - t0:.0f} s]", flush=True)
    print("\n" + HEADER + "\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
