"""One landmark (Nystrom) pass against the GEMM roofline of its flops.

A supervised problem (Gaussian kernel, class Gamma) of n x d float32 rows, m
landmarks, q = columns of W: the three passes the solver calls (objective,
dense Phi, Phi V with k = q columns) on the core's sweeps and, for
comparison, on the NumPy sweeps they replaced. Each pass's flops are
``ikdr.passes.landmark_sweeps.pass_flops``; the roofline is those flops at
the rate of one float32 GEMM of the pass's main shape (X^T C: d x n x m),
measured in the same run on the same thread count; "fraction" is roofline
time / pass time; "skinny fraction" the same against the rate of the thin GEMM
X [W V] (n x d x 2q), the bound of a pass whose flops are projections. Every
pass is timed as the best of ``--repeat`` runs.

    python benchmarks/bench_landmark_pass.py                    # n = 100,000, d = 784, m = 256, q = 10
    python benchmarks/bench_landmark_pass.py --n 20000 --threads 1 2
    python benchmarks/bench_landmark_pass.py --memmap           # X as a float32 memmap under /tmp
    python benchmarks/bench_landmark_pass.py --fits             # also the fit tables below
    python benchmarks/bench_landmark_pass.py --million          # also the 1,000,000 x 784 memmap fit

``--fits`` adds two tables: Nystrom against exact ISM on 20,000 x 256 float32
(10 Gaussian classes, q = 9, ``ikdr.ISM`` defaults: time, 5-NN accuracy on
5,000 held-out rows, sine of the largest principal angle), and where the
matrix-free Phi solver pays in a Nystrom fit (``approximate_ism`` with each
``phi_solver`` at 20,000 x d, m = 256, q = 9).

``--million``: supervised ``ikdr.ISM(n_components=10, approximation="nystrom",
dtype=np.float32)`` on a 1,000,000 x 784 float32 memmap (10 classes, written
under /tmp by ``bench_nystrom_ism.write_mixture_memmap`` and deleted after):
fit time, all passes included, and peak anonymous memory beyond X.

Writes benchmarks/results/landmark_pass.md (or --out).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ikdr  # noqa: E402
from ikdr import supervised_gamma  # noqa: E402
from ikdr.kernels import Gaussian  # noqa: E402
# internals: this script times one landmark pass apart from any fit, so it builds the
# landmark problem itself (resolve of an Approximation), calls its pass (_pass) and swaps
# its factors (_factors) for the NumPy ones, and states the pass's flops as the passes count them
from ikdr.passes.landmark_sweeps import pass_flops  # noqa: E402
from ikdr.passes import Approximation, resolve  # noqa: E402
from _peers import best_time, floors_missed, gemm_rate, results_head, timed  # noqa: E402


#: floors of the core's passes: the dense Phi pass against the GEMM roofline, the
#: objective and Phi V passes (projections and thin products) against the skinny one
DENSE_FLOOR = 0.8
THIN_FLOOR = 0.7


def skinny_rate(X, cols, threads, repeat):
    """float32 GFLOP/s of X [W V] (n x d x cols): the projections' roofline."""
    B = np.random.default_rng(2).standard_normal((X.shape[1], cols)).astype(np.float32)
    Xa = np.asarray(X)
    with threadpool_limits(threads, user_api="blas"):
        t = best_time(lambda: Xa @ B, repeat)
    return 2.0 * X.shape[0] * X.shape[1] * cols / t / 1e9


def problem(X, y, m, threads, sigma):
    index = np.sort(np.random.default_rng(0).choice(X.shape[0], m, replace=False))
    a = Approximation("nystrom", m, random_state=0, index=index)
    return resolve(X, a).problem(X, supervised_gamma(y)[0], Gaussian(sigma), threads)


def run(args):
    rng = np.random.default_rng(0)
    n, d, m, q, classes = args.n, args.d, args.m, args.q, args.classes
    centres = rng.standard_normal((classes, d)).astype(np.float32)
    y = rng.integers(0, classes, n)
    tmp = None
    if args.memmap:
        tmp = tempfile.NamedTemporaryFile(dir="/tmp", suffix=".f32")
        X = np.memmap(tmp.name, dtype=np.float32, mode="w+", shape=(n, d))
    else:
        X = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, 100_000):
        e = min(n, s + 100_000)
        X[s:e] = centres[y[s:e]] + rng.standard_normal((e - s, d)).astype(np.float32)
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    V = rng.standard_normal((d, q))
    sigma = float(np.sqrt(2.0 * q))
    rows = []
    for threads in args.threads:
        # GFLOP/s of the pass's main product, X^T C (d x n times n x m), in float32
        rate = gemm_rate(X.shape[1], X.shape[0], m, dtype=np.float32, repeat=args.repeat,
                         threads=threads, transposed=True) / 1e9
        thin = skinny_rate(X, 2 * q, threads, args.repeat)
        for impl in args.impl:
            p = problem(X, y, m, threads, sigma)
            if impl == "numpy":
                make = p._factors

                def numpy_factors(W, make=make):
                    fs = make(W)
                    for f in fs:
                        f.native = None
                    return fs
                p._factors = numpy_factors
            p._pass(W)  # landmarks, warm-up
            with threadpool_limits(threads, user_api="blas"):
                for name, kw, flops in (
                        ("objective", {}, pass_flops(n, d, q, m)),
                        ("dense Phi", dict(dense=True), pass_flops(n, d, q, m, dense=True,
                                                                  groups=classes)),
                        ("Phi V (k = q)", dict(V=V), pass_flops(n, d, q, m, k=q,
                                                                groups=classes))):
                    t = best_time(lambda: p._pass(W, **kw), args.repeat)
                    roof = flops / (rate * 1e9)
                    rows.append((threads, impl, name, t, flops, roof, roof / t,
                                 flops / (thin * 1e9) if "V" in name or name == "objective" else None))
    if tmp is not None:
        del X
        tmp.close()
    return rows, rate


def mixture(n, d, classes, rng, spread=0.3):
    y = rng.integers(0, classes, n)
    X = (spread * rng.standard_normal((classes, d))[y] + rng.standard_normal((n, d)))
    return X.astype(np.float32), y


def fit_tables(args):
    """The two tables of ``--fits`` (markdown lines)."""
    import warnings

    from sklearn.neighbors import KNeighborsClassifier

    from ikdr import principal_angle
    # internal: the landmark fit at a fixed m from a given start, which ISM does not expose
    from ikdr.reduction.approximate import LandmarkOptions, approximate_ism
    from ikdr.solver.options import ISMOptions

    rng = np.random.default_rng(0)
    X, y = mixture(25_000, 256, 10, rng)
    Xt, yt, X, y = X[20_000:], y[20_000:], X[:20_000], y[:20_000]
    lines = ["", "## Nystrom against exact: 20,000 x 256 float32, 10 Gaussian classes, q = 9", "",
             "| fit | time s | speed-up | 5-NN accuracy (5,000 held out) | sin to exact |",
             "|---|---|---|---|---|"]
    exact, te = timed(lambda: ikdr.ISM(n_components=9, random_state=0).fit(X, y))
    for label, kw in (("exact", None), ("Nystrom m = 256", dict(n_landmarks=256)),
                      ("Nystrom m = auto", dict(n_landmarks="auto"))):
        if kw is None:
            model, t = exact, te
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model, t = timed(lambda: ikdr.ISM(n_components=9, approximation="nystrom",
                                                  random_state=0, **kw).fit(X, y))
        acc = KNeighborsClassifier(5).fit(model.transform(X), y).score(model.transform(Xt), yt)
        sin = float(np.sin(principal_angle(exact.components_, model.components_)))
        lines.append(f"| {label} | {t:.2f} | {te / t:.1f}x | {acc:.4f} | {sin:.1e} |")
        print(lines[-1], flush=True)
    lines += ["", "## Where the matrix-free Phi solver pays (Nystrom, 20,000 x d float32, m = 256, q = 9)",
              "", "| d | phi_solver | time s | dense Phi passes | thin passes | sin to dense |",
              "|---|---|---|---|---|---|"]
    for d in args.fit_d:
        X, y = mixture(20_000, d, 10, np.random.default_rng(1))
        gamma = ikdr.supervised_gamma(y)[0]
        sigma = float(ikdr.median_sigma(X[:3000]))
        ref = None
        for mode in ("dense", "hybrid", "matrix_free", "auto"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                options = ISMOptions(n_components=9, criterion="eigenvalues",
                                     phi_solver=mode, random_state=0)
                (res, _), t = timed(lambda: approximate_ism(X, gamma, Gaussian(sigma), options,
                                                            LandmarkOptions(Approximation(
                                                                "nystrom", 256, random_state=0))))
            c = res.convergence
            sin = np.nan if ref is None else float(np.sin(principal_angle(ref, res.components)))
            ref = res.components if ref is None else ref
            lines.append(f"| {d} | {mode} | {t:.2f} | {c.dense_phi_evaluations} | "
                         f"{c.phi_evaluations - c.dense_phi_evaluations} | {sin:.1e} |")
            print(lines[-1], flush=True)
    return lines


def million_row(args):
    """The ``--million`` table (markdown lines)."""
    import os

    from bench_nystrom_ism import AnonPeak, write_mixture_memmap

    n, d, q = args.million_n, 784, 10
    with tempfile.TemporaryDirectory() as tmp:
        X, y = write_mixture_memmap(os.path.join(tmp, "x.dat"), n, d)
        with AnonPeak() as mem:
            model, t = timed(lambda: ikdr.ISM(n_components=q, approximation="nystrom",
                                              dtype=np.float32, random_state=0).fit(X, y))
        x_mb = X.nbytes / 2**20
        c = model.convergence_
        del X
    return ["", f"## Supervised ISM on a {n:,} x {d} float32 memmap (10 classes, q = {q})", "",
            "| time s (all passes) | target | m | peak memory beyond X | target | "
            "Phi passes (dense) |", "|---|---|---|---|---|---|",
            f"| {t:.1f} | <= 60 s | {model.n_landmarks_} | {mem.beyond:.0f} MB | "
            f"<= {x_mb / 4:.0f} MB (X/4) | {c.phi_evaluations} ({c.dense_phi_evaluations}) |",
            "", floors_missed(
                ([f"{t:.1f} s against <= 60 s"] if t > 60 else [])
                + ([f"{mem.beyond:.0f} MB beyond X against <= {x_mb / 4:.0f} MB"]
                   if mem.beyond > x_mb / 4 else []))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=784)
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--q", type=int, default=10)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memmap", action="store_true")
    ap.add_argument("--fits", action="store_true", help="also the fit tables (see the docstring)")
    ap.add_argument("--fit-d", type=int, nargs="+", default=[784, 2048, 4096])
    ap.add_argument("--million", action="store_true", help="also the memmap fit (see the docstring)")
    ap.add_argument("--million-n", type=int, default=1_000_000)
    ap.add_argument("--impl", nargs="+", default=["core", "numpy"], choices=["core", "numpy"],
                    help="the core's sweeps and/or the NumPy ones")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "landmark_pass.md"))
    args = ap.parse_args(argv)
    rows, rate = run(args)
    lines = [
        *results_head("One landmark pass against the GEMM roofline", "bench_landmark_pass.py",
                      argv)[:-1],
        f"- n x d = {args.n:,} x {args.d} float32"
        f"{' memmap' if args.memmap else ''}, m = {args.m}, q = {args.q}, {args.classes} classes",
        "- fraction: the pass's flops at the float32 GEMM rate of X^T C (d x n x m, same run, "
        "same threads) over the pass's time (1 = at the roofline); skinny: those flops at the "
        "rate of X [W V] (n x d x 2q), the roofline of a pass whose flops are projections", "",
        "| threads | sweeps | pass | time s | GFLOP | GEMM roofline s | fraction | skinny roofline s "
        "| skinny fraction |",
        "|---|---|---|---|---|---|---|---|---|"]
    missed = []
    for threads, impl, name, t, flops, roof, frac, thin in rows:
        lines.append(f"| {threads} | {impl} | {name} | {t:.3f} | {flops / 1e9:.1f} | {roof:.3f} | "
                     f"{frac:.2f} | {'-' if thin is None else f'{thin:.3f}'} | "
                     f"{'-' if thin is None else f'{thin / t:.2f}'} |")
        if impl != "core":
            continue
        if thin is None and frac < DENSE_FLOOR:
            missed.append(f"{name}, {threads} thread(s): {frac:.2f} of the GEMM roofline "
                          f"against {DENSE_FLOOR}")
        if thin is not None and thin / t < THIN_FLOOR:
            missed.append(f"{name}, {threads} thread(s): {thin / t:.2f} of its skinny roofline "
                          f"against {THIN_FLOOR}")
    lines += ["", f"Floors (the core's sweeps): the dense Phi pass at least {DENSE_FLOOR} of the "
              f"GEMM roofline, the objective and Phi V passes at least {THIN_FLOOR} of their "
              "skinny roofline. " + floors_missed(missed)]
    if args.fits:
        lines += fit_tables(args)
    if args.million:
        lines += million_row(args)
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
