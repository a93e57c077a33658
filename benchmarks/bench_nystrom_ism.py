"""Landmark (Nystrom) ISM against exact ISM: accuracy tables and scale rows.

Writes benchmarks/results/nystrom_ism.md (or --out). Sections (--sections):

* ``accuracy``: wine, breast cancer (scikit-learn), digits, face (../shared/data,
  identity labels) supervised, moon and spiral (../shared/data) clustering; sigma
  at the median and at 0.25 x median. Exact fit vs ``approximation="nystrom",
  n_landmarks="auto"``: sin of the largest principal angle, objective relative
  to exact, downstream accuracy (SVC, 3-fold CV on XW) or NMI, m chosen, times.
* ``crossover``: ``approximation="nystrom"`` with its defaults against the exact
  fit: 5,000 x 784 (a ring and an XOR on 4 features) and 20,000 x 256 (10
  Gaussian classes); which passes the cost model chose, times, accuracy.
* ``methods``: landmark selection at fixed m (uniform, k-means++, ridge
  leverage): mean sin angle to the exact subspace over 3 seeds; the estimators'
  default (``ikdr.passes.landmarks.DEFAULT_LANDMARK_METHOD``) is the winner here.
* ``rff``: Nystrom vs random Fourier features at equal m on digits.
* ``polish``: exact polish from the Nystrom fixed point vs a cold exact fit,
  both to the tight rule criterion="gradient", gtol=1e-9:
  exact passes, sin (in X's row space), objective difference, times; plus a
  10,000 x 784 mixture row (does a Nystrom start pay at large n?).
* ``separation``: sigma="separation" vs the median rule, 5-fold accuracy.
* ``memmap``: supervised fits on 1,000,000 x 784 float32 memmaps: 10 Gaussian
  classes, q = 10 (time against the roofline of every pass the fit makes, floor
  1.5x), and labels from a ring and an XOR on 4 features (time, floor 6 s, and
  whether the 4 features are found); peak anonymous memory beyond X.
* ``scale``: 70,000 x 784: Nystrom vs exact (time and accuracy on a held-out
  10,000); ISMClustering on 1,000,000 blobs and moons (NMI; exact at 20,000 for
  comparison).

    python benchmarks/bench_nystrom_ism.py                       # everything (lead, quiet machine)
    python benchmarks/bench_nystrom_ism.py --quick               # small sizes, to check it runs
    python benchmarks/bench_nystrom_ism.py --sections memmap --scale-n 1000000

The fits use the public API (ikdr.ISM, ikdr.ISMClustering, ikdr.ism); the
roofline of the memmap rows counts every landmark pass through an internal hook
(:class:`PassLog`), as the public API reports the last fit's passes only.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_blobs, make_moons
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ikdr  # noqa: E402
import _peers  # noqa: E402
from _peers import floors_missed, results_head  # noqa: E402

DATA = Path(os.environ.get("IKDR_SHARED_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def _csv(name):
    path = DATA / name
    return np.loadtxt(path, delimiter=",") if path.exists() else None


def supervised_sets(quick):
    X, y = load_wine(return_X_y=True)
    yield "wine", X, y, 3
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", X, y, 2
    if quick:
        return
    X, y = load_digits(return_X_y=True)
    yield "digits", X, y, 9
    X, y = _csv("face_624x20.csv"), _csv("face_624x20_identity_label.csv")
    if X is not None:
        yield "face (identity)", X, y.astype(int), 5


def clustering_sets(quick):
    X, y = _csv("moon_1000x2.csv"), _csv("moon_1000x2_label.csv")
    if X is not None:
        yield "moon", X, y.astype(int), 2
    if quick:
        return
    X, y = _csv("spiral.csv"), _csv("spiral_label.csv")
    if X is not None:
        yield "spiral", X, y.astype(int), 3


def sin_angle(A, B):
    return float(np.sin(ikdr.principal_angle(A, B)))


def row_space(X):
    """Orthonormal basis of X's row space (d x rank)."""
    _, s, Vt = np.linalg.svd(X, full_matrices=False)
    return Vt[s > 1e-10 * s[0]].T


def row_space_sin(V, A, B):
    """sin of the largest principal angle between the parts of span(A) and span(B)
    in X's row space (V = row_space(X)): W's components in the null space of X
    (constant features, e.g. digits' blank pixels) change neither XW nor the
    objective, so only the projection onto the row space is determined by the fit."""
    def basis(W):
        U, t, _ = np.linalg.svd(V @ (V.T @ W), full_matrices=False)
        return U[:, t > 1e-8]

    PA, PB = basis(A), basis(B)
    if PA.shape[1] != PB.shape[1]:
        return 1.0
    return sin_angle(PA, PB) if PA.shape[1] else 0.0


def svc_accuracy(Z, y):
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    return float(np.mean(cross_val_score(SVC(), Z, y, cv=cv)))


#: every fit here is timed with its warnings silenced, so their messages do not print
#: between the rows of the tables
timed = functools.partial(_peers.timed, quiet=True)


#: the Nystrom fit's objective (exact kernel, at its W) over the exact fit's, on the
#: supervised sets of the accuracy section at the median and 0.25 x median sigma
OBJECTIVE_FLOOR = 0.999


def section_accuracy(quick, out):
    out.append("## Accuracy: Nystrom (n_landmarks='auto') against the exact fit\n")
    out.append("Both fits with the same `random_state` (the same held-out halves choose "
               "the support). sin: largest principal angle between the subspaces, restricted "
               "to X's row space (see the polish section); objective: Nystrom / exact of "
               "Tr(Gamma K_XW) at the returned W (exact kernel); passes: what the cost model of "
               "`n_landmarks='auto'` ran (`approximation_`: exact passes where they cost less); "
               "accuracy: SVC, 3-fold CV on XW (supervised) or NMI (clustering).\n")
    out.append("| data | n x d | q | sigma | sin | objective | passes | exact acc/NMI | "
               "Nystrom acc/NMI | m chosen | exact s | Nystrom s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    missed = []
    for name, X, y, q in supervised_sets(quick):
        X = StandardScaler().fit_transform(X)
        med = ikdr.median_sigma(X, random_state=0)
        V = row_space(X)
        gamma, _ = ikdr.supervised_gamma(y)
        for label, sigma in (("median", med), ("0.25 median", 0.25 * med)):
            kw = dict(n_components=q, sigma=sigma, random_state=0)
            ex, te = timed(lambda: ikdr.ISM(**kw).fit(X, y))
            ny, tn = timed(lambda: ikdr.ISM(approximation="nystrom", **kw).fit(X, y))
            k = ikdr.kernels.Gaussian(sigma)
            fe = k.objective(X, ex.components_, gamma)
            fn = k.objective(X, ny.components_, gamma)
            sin = row_space_sin(V, ex.components_, ny.components_)
            if fn / fe < OBJECTIVE_FLOOR:
                missed.append(f"{name} at {label} sigma: {fn / fe:.4f} of the exact objective "
                              f"(sin {sin:.2f} to the exact subspace) against {OBJECTIVE_FLOOR}")
            out.append(f"| {name} | {X.shape[0]} x {X.shape[1]} | {q} | {label} ({sigma:.3g}) | "
                       f"{sin:.2e} | {fn / fe:.5f} | {ny.approximation_ or 'exact'} | "
                       f"{svc_accuracy(X @ ex.components_, y):.3f} | "
                       f"{svc_accuracy(X @ ny.components_, y):.3f} | {ny.n_landmarks_} | "
                       f"{te:.2f} | {tn:.2f} |")
            print(out[-1], flush=True)
    for name, X, y, k in clustering_sets(quick):
        X = StandardScaler().fit_transform(X)
        q = X.shape[1]
        med = ikdr.median_sigma(X, random_state=0)
        for label, sigma in (("median", med), ("0.25 median", 0.25 * med)):
            kw = dict(n_clusters=k, n_components=q, sigma=sigma, random_state=0)
            ex, te = timed(lambda: ikdr.ISMClustering(**kw).fit(X))
            ny, tn = timed(lambda: ikdr.ISMClustering(approximation="nystrom", **kw).fit(X))
            out.append(f"| {name} (clustering) | {X.shape[0]} x {X.shape[1]} | {q} | {label} "
                       f"({sigma:.3g}) | {sin_angle(ex.embedding_, ny.embedding_):.2e} (U) | - | "
                       f"{getattr(ny, 'approximation_', 'nystrom') or 'exact'} | "
                       f"{ikdr.metrics.nmi(y, ex.labels_):.3f} | {ikdr.metrics.nmi(y, ny.labels_):.3f} "
                       f"| {ny.n_landmarks_} | {te:.2f} | {tn:.2f} |")
            print(out[-1], flush=True)
    out += ["", f"Floor: the Nystrom fit reaches at least {OBJECTIVE_FLOOR} of the exact fit's "
            "objective on the supervised sets. " + floors_missed(missed), ""]


def section_methods(quick, out):
    # internals: the landmark selections by name, and the landmark fit at a fixed m and
    # method from a given start (ISM exposes neither)
    from ikdr.passes.landmarks import LANDMARK_METHODS, Approximation
    from ikdr.reduction.approximate import LandmarkOptions, approximate_ism
    from ikdr.solver.options import ISMOptions

    out.append("## Landmark selection at fixed m (mean sin angle to the exact maximum, 3 seeds)\n")
    out.append("Exact maximum: criterion='gradient', gtol=1e-9; the landmark fits' own maxima "
               "differ from it by the approximation's error over the objective's curvature, which "
               "on flat problems (breast cancer, Hessian condition about 4,000) is large.\n")
    ms = (25, 50) if quick else (50, 100, 200)
    out.append("| data | sigma | m | " + " | ".join(LANDMARK_METHODS) + " |")
    out.append("|---|---|---|" + "---|" * len(LANDMARK_METHODS))
    for name, X, y, q in supervised_sets(quick):
        X = StandardScaler().fit_transform(X)
        med = ikdr.median_sigma(X, random_state=0)
        V = row_space(X)
        gamma, _ = ikdr.supervised_gamma(y)
        for label, sigma in (("median", med), ("0.25 median", 0.25 * med)):
            k = ikdr.kernels.Gaussian(sigma)
            # the exact maximum to a tight rule: the defaults' eigenvalue rule stops
            # early on flat problems (breast cancer), which would blur the comparison
            exact, _ = timed(lambda: ikdr.ism(X, gamma, k, q, criterion="gradient", gtol=1e-9,
                                              certify=False))
            for m in ms:
                if m >= X.shape[0]:
                    continue
                cells = []
                for method in LANDMARK_METHODS:
                    vals = []
                    for seed in range(3):
                        (res, _), _ = timed(lambda: approximate_ism(
                            X, gamma, k, ISMOptions(n_components=q, criterion="eigenvalues",
                                                    random_state=seed),
                            LandmarkOptions(Approximation("nystrom", m, method=method,
                                                          random_state=seed))))
                        vals.append(row_space_sin(V, exact.components, res.components))
                    cells.append(f"{np.mean(vals):.2e}")
                out.append(f"| {name} | {label} | {m} | " + " | ".join(cells) + " |")
                print(out[-1], flush=True)
    out.append("")


def section_rff(quick, out):
    out.append("## Nystrom against random Fourier features (digits, supervised, q = 9)\n")
    out.append("sin: to the exact maximum (criterion='gradient', gtol=1e-9), in X's row space; "
               "the approximate fits run until W stops moving (criterion='angle', tol=1e-8), so the "
               "sine is the approximation's, not an early stop's. acc: SVC, 3-fold CV on XW.\n")
    X, y = (load_wine if quick else load_digits)(return_X_y=True)
    q = 3 if quick else 9
    X = StandardScaler().fit_transform(X)
    med = ikdr.median_sigma(X, random_state=0)
    V = row_space(X)
    out.append("| sigma | m | Nystrom sin | Nystrom acc | RFF sin | RFF acc | exact acc |")
    out.append("|---|---|---|---|---|---|---|")
    for label, sigma in (("median", med), ("0.25 median", 0.25 * med), ("0.1 median", 0.1 * med)):
        # the exact maximum to a tight rule (the papers' rule stops early at small sigma)
        ex, _ = timed(lambda: ikdr.ISM(n_components=q, sigma=sigma, criterion="gradient",
                                       gtol=1e-9).fit(X, y))
        acc = svc_accuracy(X @ ex.components_, y)
        for m in ((50, 100) if quick else (100, 300, 1000)):
            m = min(m, X.shape[0])
            tight = dict(n_components=q, sigma=sigma, n_landmarks=m, criterion="angle", tol=1e-8,
                         random_state=0)
            ny, _ = timed(lambda: ikdr.ISM(approximation="nystrom", **tight).fit(X, y))
            rf, _ = timed(lambda: ikdr.ISM(approximation="rff", **tight).fit(X, y))
            out.append(f"| {label} | {m} | {row_space_sin(V, ex.components_, ny.components_):.2e} | "
                       f"{svc_accuracy(X @ ny.components_, y):.3f} | "
                       f"{row_space_sin(V, ex.components_, rf.components_):.2e} | "
                       f"{svc_accuracy(X @ rf.components_, y):.3f} | {acc:.3f} |")
            print(out[-1], flush=True)
    out.append("")


def section_polish(quick, out):
    rule = dict(criterion="gradient", gtol=1e-9, certify=False)
    out.append("## Exact polish from the Nystrom fixed point\n")
    out.append(f"Both fits to the same tight exact rule ({rule}); the polish is "
               "`ISM(approximation='nystrom', n_landmarks=min(300, n), polish=True)`. sin: largest "
               "principal angle between the two W restricted to X's row space (directions in X's null "
               "space, e.g. digits' blank pixels, change neither XW nor the objective). Passes: exact "
               "Phi passes (the landmark fit's passes cost O(n d m) each and are not counted).\n")
    out.append("| data | n x d | sigma | m | cold exact passes | polish exact passes | sin(polish, cold) | "
               "objective (polish - cold)/|cold| | cold s | Nystrom + polish s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    sets = [(name, StandardScaler().fit_transform(X), y, q) for name, X, y, q in supervised_sets(quick)]
    if not quick:
        from _peers import mixture

        X, y = mixture(10_000, 784, 10, seed=2)
        sets.append(("mixture, 10 classes", X, y, 10))
    for name, X, y, q in sets:
        med = ikdr.median_sigma(X, random_state=0)
        V = row_space(X)
        for label, sigma in (("median", med), ("0.25 median", 0.25 * med))[:1 if X.shape[0] > 5000 else 2]:
            common = dict(n_components=q, sigma=sigma, random_state=0, **rule)
            cold, tc = timed(lambda: ikdr.ISM(**common).fit(X, y))
            pol, tp = timed(lambda: ikdr.ISM(approximation="nystrom", n_landmarks=min(300, X.shape[0]),
                                             polish=True, **common).fit(X, y))
            passes = lambda r: r.convergence_.phi_evaluations  # noqa: E731
            f_cold, f_pol = cold.convergence_.objective, pol.convergence_.objective
            out.append(f"| {name} | {X.shape[0]:,} x {X.shape[1]} | {label} | {pol.n_landmarks_} | "
                       f"{passes(cold)} | {passes(pol)} | "
                       f"{row_space_sin(V, cold.components_, pol.components_):.1e} | "
                       f"{(f_pol - f_cold) / abs(f_cold):+.1e} | {tc:.2f} | {tp:.2f} |")
            print(out[-1], flush=True)
    out.append("")


def section_separation(quick, out):
    out.append("## sigma='separation' (Appendix D.11) against the median rule (5-fold SVC accuracy)\n")
    out.append("| data | median sigma | acc | separation sigma | acc |")
    out.append("|---|---|---|---|---|")
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    for name, X, y, q in supervised_sets(quick):
        accs, sig = [], []
        for rule in ("median", "separation"):
            model = make_pipeline(StandardScaler(), ikdr.ISM(n_components=q, sigma=rule), SVC())
            acc, _ = timed(lambda: cross_val_score(model, X, y, cv=cv))
            accs.append(float(np.mean(acc)))
            fitted, _ = timed(lambda: ikdr.ISM(n_components=q, sigma=rule).fit(
                StandardScaler().fit_transform(X), y))
            sig.append(fitted.sigma_)
        out.append(f"| {name} | {sig[0]:.3g} | {accs[0]:.3f} | {sig[1]:.3g} | {accs[1]:.3f} |")
        print(out[-1], flush=True)
    out.append("")


# --------------------------------------------------------------------------
# scale rows
# --------------------------------------------------------------------------
class AnonPeak:
    """Peak anonymous resident memory (RssAnon, MB) while the block runs: pages
    of a memmap are file-backed and not counted, so this is memory beyond X."""

    def __init__(self, interval=0.05):
        self.interval = interval

    @staticmethod
    def now():
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    def __enter__(self):
        self.base = self.now()
        self.peak = self.base
        self._stop = threading.Event()

        def poll():
            while not self._stop.is_set():
                self.peak = max(self.peak, self.now())
                time.sleep(self.interval)
        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.now())

    @property
    def beyond(self):
        return self.peak - self.base


def write_mixture_memmap(path, n, d, n_classes=10, seed=0, chunk=50_000):
    """A standardised n x d float32 mixture (as benchmarks/_peers.mixture) written
    to a memmap chunk by chunk (two passes: moments, then standardised rows)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((n_classes, d)) * 1.5
    y = rng.integers(0, n_classes, n)
    X = np.memmap(path, dtype=np.float32, mode="w+", shape=(n, d))
    s1 = np.zeros(d)
    s2 = np.zeros(d)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = centers[y[start:stop]] + 3.0 * np.random.default_rng(seed + 1 + start).standard_normal(
            (stop - start, d))
        X[start:stop] = block
        s1 += block.sum(0)
        s2 += (block * block).sum(0)
    mean = s1 / n
    std = np.sqrt(np.maximum(s2 / n - mean * mean, 1e-12))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        X[start:stop] = (X[start:stop] - mean) / std
    X.flush()
    return np.memmap(path, dtype=np.float32, mode="r", shape=(n, d)), y


def pass_gemm_rate(dtype=np.float32):
    """GEMM rate (flop/s) of the pass's main product shape, X^T C (784 x 4096 times
    4096 x 512), in ``dtype``, measured now."""
    return _peers.gemm_rate(784, 4096, 512, dtype=dtype, repeat=5, transposed=True)


#: the columns the nonlinear task's labels depend on (of 784)
INFORMATIVE = (3, 101, 402, 707)


def write_nonlinear_memmap(path, n, d, seed=0, chunk=50_000):
    """An n x d float32 memmap of standard normal features whose 4 classes depend on
    4 of them only, nonlinearly (as the feature-discovery benchmark's ring + XOR):
    a ring (x_a^2 + x_b^2 above its median, 2 ln 2) and an XOR (the sign of
    x_c x_e); no class mean differs. Written chunk by chunk."""
    a, b, c, e = INFORMATIVE
    X = np.memmap(path, dtype=np.float32, mode="w+", shape=(n, d))
    y = np.empty(n, dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = np.random.default_rng([seed, start]).standard_normal((stop - start, d),
                                                                      dtype=np.float32)
        ring = block[:, a] ** 2 + block[:, b] ** 2 > 2.0 * np.log(2.0)
        y[start:stop] = 2 * ring + (block[:, c] * block[:, e] > 0)
        X[start:stop] = block
    X.flush()
    return np.memmap(path, dtype=np.float32, mode="r", shape=(n, d)), y


def informative_mass(model):
    """Share of feature_importances_ on the nonlinear task's informative columns."""
    return float(model.feature_importances_[list(INFORMATIVE)].sum())


def read_rate(X, block=65_536):
    """Bytes per second of one sweep over X's row blocks (a memmap in the page
    cache: what a pass reads), measured now."""
    t0 = time.perf_counter()
    total = 0.0
    for start in range(0, X.shape[0], block):
        total += float(np.asarray(X[start:start + block]).sum(dtype=np.float64))
    return X.nbytes / (time.perf_counter() - t0)


class PassLog:
    """Every landmark pass a fit makes, with its shape: the roofline of "the passes
    it makes" counts the "auto" rule's earlier fits and the certificate's float64
    passes too, which ``convergence_`` (the last fit's) does not. An internal hook
    (``LandmarkProblem._pass``): the public API reports the last fit only."""

    def __enter__(self):
        # internal: the landmark problem's pass, hooked to log every pass of every fit
        from ikdr.passes.landmarks import LandmarkProblem

        self.passes, self._cls = [], LandmarkProblem
        self._orig = original = LandmarkProblem._pass
        log = self.passes

        def logged(problem, W, V=None, dense=False):
            m = problem.approx.n_landmarks
            log.append(dict(n=problem.X.shape[0], d=problem.X.shape[1], q=np.shape(W)[1],
                            m=m if isinstance(m, int) else 1, k=0 if V is None else V.shape[1],
                            dense=bool(dense), dtype=np.dtype(problem.pass_dtype),
                            start=not np.any(W), groups=problem.structure.n_classes
                            if problem.structure.classes else problem.structure.G.shape[1],
                            classes=bool(problem.structure.classes)))
            return original(problem, W, V=V, dense=dense)
        LandmarkProblem._pass = logged
        return self

    def __exit__(self, *exc):
        self._cls._pass = self._orig

    def roofline(self, rates, read_seconds):
        """Seconds of every logged pass at the GEMM rate of its dtype (``rates``:
        dtype -> flop/s), by the passes' own flop count
        (:func:`ikdr.passes.landmark_sweeps.pass_flops`); the start's pass at W = 0
        (constant kernel, O(n d) flops) at one read of X (``read_seconds``)."""
        # internal: the passes' own flop count (the public API states no flops)
        from ikdr.passes.landmark_sweeps import pass_flops

        total = 0.0
        for p in self.passes:
            if p["start"]:
                total += read_seconds
                continue
            flops = pass_flops(p["n"], p["d"], p["q"], p["m"], k=p["k"], dense=p["dense"],
                               groups=p["groups"], classes=p["classes"])
            total += flops / rates[p["dtype"]]
        return total

    def summary(self):
        dense = sum(p["dense"] and not p["start"] for p in self.passes)
        thin = sum(not p["dense"] and not p["start"] for p in self.passes)
        return (f"{len(self.passes)}: {dense} dense, {thin} thin or objective, "
                f"{len(self.passes) - dense - thin} at W = 0; m = "
                f"{', '.join(str(m) for m in sorted({p['m'] for p in self.passes if not p['start']}))}")


def heldout_accuracy(model, Xtr, ytr, Xte, yte):
    """5-NN accuracy on XW of held-out rows, neighbours among the training rows."""
    clf = KNeighborsClassifier(5).fit(Xtr @ model.components_, ytr)
    return float(clf.score(Xte @ model.components_, yte))


def crossover_row(out, label, X, y, q, result, target):
    """One crossover row: the exact fit and approximation="nystrom" with its
    defaults on (X, y), each described by ``result(model)``."""
    ex, te = timed(lambda: ikdr.ISM(n_components=q, random_state=0).fit(X, y))
    ny, tn = timed(lambda: ikdr.ISM(n_components=q, approximation="nystrom",
                                    random_state=0).fit(X, y))
    out.append(f"| {label} | {X.shape[0]:,} x {X.shape[1]} | {te:.2f}, {result(ex)} | "
               f"{tn:.2f}, {result(ny)} | {ny.approximation_ or 'exact'}, m = "
               f"{ny.n_landmarks_} | x{te / tn:.1f} | {target} |")
    print(out[-1], flush=True)
    return ex, te, ny, tn


def section_crossover(quick, out):
    """Where Nystrom pays: the defaults of approximation="nystrom" (n_landmarks="auto"
    and its cost model) against the exact fit, same data, same run."""
    from _peers import mixture

    out.append("## Crossover: approximation='nystrom' with its defaults against exact\n")
    out.append("Defaults (`n_landmarks='auto'`: the cost model of `ikdr.reduction.cost` may choose "
               "the exact passes; `approximation_` says which ran). Accuracy: 5-NN on XW for "
               "held-out rows; mass: share of `feature_importances_` on the informative "
               "features.\n")
    out.append("| data | n x d | exact: time s, result | Nystrom defaults: time s, result | "
               "passes used | speed-up | target |")
    out.append("|---|---|---|---|---|---|---|")
    n_small = 1_000 if quick else 5_000
    # one-time costs of the process (imports on first use) are not the fits'
    rng = np.random.default_rng(0)
    for approximation in (None, "nystrom"):
        ikdr.ISM(n_components=2, approximation=approximation, n_landmarks=20).fit(
            rng.standard_normal((300, 8)), np.arange(300) % 3)
    with tempfile.TemporaryDirectory() as tmp:
        X, y = write_nonlinear_memmap(os.path.join(tmp, "x.dat"), n_small, 784)
        X = np.array(X)
    missed = []
    _, te, _, tn = crossover_row(out, "ring + XOR on 4 of 784 features, 4 classes", X, y, 4,
                                 lambda model: f"mass {informative_mass(model):.2f}",
                                 "never slower than exact")
    if tn > te:
        missed.append(f"ring + XOR: the Nystrom defaults take {tn:.2f} s, the exact fit {te:.2f} s")

    n_mix, d_mix = (4_000, 256) if quick else (20_000, 256)
    Xall, yall = mixture(n_mix + n_mix // 4, d_mix, 10, seed=2)
    Xtr, ytr, Xte, yte = Xall[:n_mix], yall[:n_mix], Xall[n_mix:], yall[n_mix:]
    ex, te, ny, tn = crossover_row(
        out, "Gaussian mixture, 10 classes", Xtr, ytr, 9,
        lambda model: f"acc {heldout_accuracy(model, Xtr, ytr, Xte, yte):.4f}",
        ">= 10x at the exact accuracy")
    acc_ex, acc_ny = (heldout_accuracy(m, Xtr, ytr, Xte, yte) for m in (ex, ny))
    if te / tn < 10 or acc_ny < acc_ex:
        missed.append(f"Gaussian mixture: x{te / tn:.1f} at accuracy {acc_ny:.4f} "
                      f"(exact {acc_ex:.4f}), against >= 10x at the exact accuracy")
    out += ["", floors_missed(missed), ""]


#: floors of the memmap rows (1,000,000 x 784 float32): the mixture fit within this
#: factor of the roofline of every pass it makes; the ring + XOR fit in this many seconds
MIXTURE_ROOFLINE_FACTOR = 1.5
NONLINEAR_SECONDS = 6.0


def section_memmap(quick, out, n_big):
    """The two memmap rows: supervised fits on n_big x 784 float32 memmaps."""
    out.append("## A million rows from a memmap\n")
    rates = {np.dtype(np.float32): pass_gemm_rate(), np.dtype(np.float64): pass_gemm_rate(np.float64)}
    out.append("Roofline: every landmark pass the fit makes (the \"auto\" rule's fits, the "
               "float64 passes that check the gradient), each at the GEMM rate of its precision "
               f"measured in this run (float32 {rates[np.dtype(np.float32)] / 1e9:.0f} GFLOP/s, "
               f"float64 {rates[np.dtype(np.float64)] / 1e9:.0f} GFLOP/s) with the passes' own "
               "flop count (`ikdr.passes.landmark_sweeps.pass_flops`); the start's pass at "
               "W = 0 at one read of X.\n")
    out.append("| row | n x d | result | time s | roofline s | time / roofline | target | "
               "passes | peak memory beyond X |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    d, missed = 784, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("mixture", "nonlinear"):
            if name == "mixture":
                X, y = write_mixture_memmap(os.path.join(tmp, "x.dat"), n_big, d)
                q = 10
            else:
                X, y = write_nonlinear_memmap(os.path.join(tmp, "nl.dat"), n_big, d)
                q = 4
            x_mb = X.nbytes / 2**20
            read = X.nbytes / read_rate(X)
            with AnonPeak() as mem, PassLog() as log:
                model, t = timed(lambda X=X, y=y, q=q: ikdr.ISM(
                    n_components=q, approximation="nystrom", dtype=np.float32,
                    random_state=0).fit(X, y))
            roof = log.roofline(rates, read)
            if name == "mixture":
                label = "supervised, 10 classes, q = 10"
                result = f"m = {model.n_landmarks_}, HSIC {model.hsic_:.4g}"
                target = f"<= {MIXTURE_ROOFLINE_FACTOR:g} x roofline"
                if t > MIXTURE_ROOFLINE_FACTOR * roof:
                    missed.append(f"the mixture at {n_big:,} x {d}: {t / roof:.2f} x its "
                                  f"roofline against <= {MIXTURE_ROOFLINE_FACTOR:g} x")
            else:
                label = f"supervised, 4 classes from a ring + XOR on 4 of {d} features, q = 4"
                found = set(INFORMATIVE) <= set(model.support_.tolist())
                result = (f"m = {model.n_landmarks_}, importance on the 4 features "
                          f"{informative_mass(model):.3f}, {model.support_.size} features kept"
                          f"{'' if found else ' (not all 4)'}")
                target = f"<= {NONLINEAR_SECONDS:g} s, the 4 features found"
                if t > NONLINEAR_SECONDS or not found:
                    missed.append(f"the ring + XOR at {n_big:,} x {d}: {t:.1f} s"
                                  f"{'' if found else ', not all 4 features'} against <= "
                                  f"{NONLINEAR_SECONDS:g} s")
            if mem.beyond > x_mb / 4:
                missed.append(f"{name} at {n_big:,} x {d}: {mem.beyond:.0f} MB beyond X against "
                              f"<= {x_mb / 4:.0f} MB")
            out.append(f"| {label} | {n_big:,} x {d} | {result} | {t:.1f} | {roof:.1f} | "
                       f"{t / roof:.2f} | {target} | {log.summary()} | {mem.beyond:.0f} MB "
                       f"(X: {x_mb:.0f} MB; target <= {x_mb / 4:.0f}) |")
            print(out[-1], flush=True)
            del X
    out += ["", floors_missed(missed), ""]


def section_scale(quick, out, n_mid, n_clu, n_clu_exact):
    out.append("## Scale\n")
    out.append("| row | n x d | result | time s | target | peak memory beyond X | passes | "
               "roofline s |")
    out.append("|---|---|---|---|---|---|---|---|")
    rates = {np.dtype(np.float32): pass_gemm_rate(), np.dtype(np.float64): pass_gemm_rate(np.float64)}
    d, q = 784, 10
    missed = []

    # n_mid x 784: Nystrom against exact, same run
    from _peers import mixture

    Xall, yall = mixture(n_mid, d, 10, seed=1)
    n_test = max(1000, n_mid // 7)
    Xtr, ytr, Xte, yte = Xall[:-n_test], yall[:-n_test], Xall[-n_test:], yall[-n_test:]

    def acc(model):
        return heldout_accuracy(model, Xtr, ytr, Xte, yte)

    with PassLog() as log:
        ny, tn = timed(lambda: ikdr.ISM(n_components=q, approximation="nystrom",
                                        dtype=np.float32, random_state=0).fit(
                                            Xtr.astype(np.float32), ytr))
    ex, te = timed(lambda: ikdr.ISM(n_components=q, dtype=np.float32, random_state=0).fit(Xtr, ytr))
    out.append(f"| supervised, exact vs Nystrom (float32) | {Xtr.shape[0]:,} x {d} | acc exact "
               f"{acc(ex):.4f}, Nystrom {acc(ny):.4f} (5-NN on XW, {n_test:,} held out); sin "
               f"{sin_angle(ex.components_, ny.components_):.2e}; m = {ny.n_landmarks_} | "
               f"{tn:.1f} (exact {te:.1f}, x{te / tn:.1f}) | >= 20x, acc within 0.005 | - | "
               f"{log.summary()} | {log.roofline(rates, 0.0):.1f} |")
    print(out[-1], flush=True)
    acc_ex, acc_ny = acc(ex), acc(ny)
    if te / tn < 20 or acc_ny < acc_ex - 0.005:
        missed.append(f"exact against Nystrom at {Xtr.shape[0]:,} x {d}: x{te / tn:.1f} at "
                      f"accuracy {acc_ny:.4f} (exact {acc_ex:.4f}), against >= 20x with the "
                      "accuracy within 0.005")

    for name, maker in (("blobs", lambda n: make_blobs(n, centers=4, n_features=2, random_state=0)),
                        ("moons", lambda n: make_moons(n, noise=0.05, random_state=0))):
        X, y = maker(n_clu)
        X = StandardScaler().fit_transform(X).astype(np.float32)
        k = 4 if name == "blobs" else 2
        kw = dict(n_clusters=k, n_components=2, random_state=0, dtype=np.float32)
        if name == "moons":
            kw["sigma"] = 0.3
        with AnonPeak() as mem:
            ny, tn = timed(lambda: ikdr.ISMClustering(approximation="nystrom", **kw).fit(X))
        Xs, ys = maker(min(n_clu, n_clu_exact))
        Xs = StandardScaler().fit_transform(Xs).astype(np.float32)
        ex_small, ts = timed(lambda: ikdr.ISMClustering(**kw).fit(Xs))
        ny_small, _ = timed(lambda: ikdr.ISMClustering(approximation="nystrom", **kw).fit(Xs))
        out.append(f"| ISMClustering {name} | {n_clu:,} x 2 | NMI {ikdr.metrics.nmi(y, ny.labels_):.3f}, "
                   f"m = {ny.n_landmarks_}; at {Xs.shape[0]:,}: exact NMI "
                   f"{ikdr.metrics.nmi(ys, ex_small.labels_):.3f} ({ts:.1f} s), Nystrom "
                   f"{ikdr.metrics.nmi(ys, ny_small.labels_):.3f} | {tn:.1f} | <= 600 s, NMI within 0.02 "
                   f"| {mem.beyond:.0f} MB | - | - |")
        print(out[-1], flush=True)
        gap = (ikdr.metrics.nmi(ys, ex_small.labels_) - ikdr.metrics.nmi(ys, ny_small.labels_))
        if tn > 600 or gap > 0.02:
            missed.append(f"ISMClustering {name}: {tn:.1f} s, NMI {gap:.3f} below the exact fit's, "
                          "against <= 600 s and within 0.02")
    out += ["", floors_missed(missed), ""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (check that it runs)")
    ap.add_argument("--sections",
                    default="accuracy,crossover,methods,rff,polish,separation,memmap,scale")
    ap.add_argument("--scale-n", type=int, default=1_000_000)
    ap.add_argument("--mid-n", type=int, default=70_000)
    ap.add_argument("--cluster-n", type=int, default=1_000_000)
    ap.add_argument("--cluster-exact-n", type=int, default=20_000,
                    help="size at which the exact clustering is compared")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "nystrom_ism.md"))
    args = ap.parse_args(argv)
    if args.quick:
        args.scale_n, args.mid_n, args.cluster_n, args.cluster_exact_n = 20_000, 3_000, 20_000, 2_000
    out = results_head("Nystrom ISM against exact ISM", "bench_nystrom_ism.py", argv)
    sections = args.sections.split(",")
    for name, fn in (("accuracy", section_accuracy), ("crossover", section_crossover),
                     ("methods", section_methods),
                     ("rff", section_rff), ("polish", section_polish),
                     ("separation", section_separation)):
        if name in sections:
            fn(args.quick, out)
    if "memmap" in sections:
        section_memmap(args.quick, out, args.scale_n)
    if "scale" in sections:
        section_scale(args.quick, out, args.mid_n, args.cluster_n, args.cluster_exact_n)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
