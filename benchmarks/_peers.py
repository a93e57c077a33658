"""Helpers shared by the benchmark scripts and the studies (``studies/``).

The one timer (:func:`timed`, :func:`best_time`, :func:`best_times`) and the one GEMM
rate (:func:`gemm_rate`) every script measures with; peers measured in the same run as
ikdr: plain dense numpy implementations of the same formulas (form Psi, form
Phi = X^T L(Psi) X, eigh) and pymanopt's manifold solvers on ikdr's objective; the
Table 4 data sets; peak-RSS and machine reporting; the results writer."""
from __future__ import annotations

import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.linalg


def recall_at_k(importance, informative, seed=0):
    """Share of the informative features among the k top-ranked; exact ties are broken at
    random (seeded), never by index (the tasks put their informative features first)."""
    k = len(informative)
    importance = np.asarray(importance, float)
    tiebreak = np.random.default_rng(seed).random(importance.shape[0])
    order = np.lexsort((tiebreak, -importance))
    return len(set(order[:k].tolist()) & set(np.asarray(informative).tolist())) / k


def mixture(n, d, n_classes=10, seed=0):
    """A standardised n x d mixture of ``n_classes`` Gaussian classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centers = rng.standard_normal((n_classes, d)) * 1.5
    X = centers[y] + rng.standard_normal((n, d)) * 3.0
    X = (X - X.mean(0)) / X.std(0)
    return X, y


def numpy_supervised_ism(X, y, sigma, q, tol=0.01, max_iter=100):
    """Dense supervised Gaussian ISM exactly as the papers write it, kept lean.

    Same formulas as the papers' code, with no avoidable n x n temporaries:
    ``X^T L(M) X = X^T (deg o X) - X^T M X`` (no ``np.diag(M.sum(1)) - M``),
    Psi formed in place, H Y without H. Returns (W, iterations, objective).
    """
    Y = np.eye(int(y.max()) + 1)[y]
    HY = Y - Y.mean(axis=0)  # H Y without forming H; Gamma = (HY)(HY)^T costs O(n^2 c), not O(n^3)
    gamma = HY @ HY.T
    c = -1.0 / sigma**2

    def top(phi):
        vals, vecs = scipy.linalg.eigh(phi, subset_by_index=[phi.shape[0] - q, phi.shape[0] - 1])
        return vals[::-1], vecs[:, ::-1]

    def laplacian_quadratic(M):
        # X^T (diag(M 1) - M) X
        return X.T @ (M.sum(axis=1)[:, None] * X) - X.T @ (M @ X)

    def kernel(W):
        Z = X @ W
        sq = (Z * Z).sum(1)
        K = Z @ Z.T
        K *= -2.0
        K += sq[:, None]
        K += sq[None, :]
        np.maximum(K, 0.0, out=K)
        K *= -1.0 / (2 * sigma**2)
        return np.exp(K, out=K)

    lam, W = top(c * laplacian_quadratic(gamma))
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        psi = kernel(W)
        psi *= gamma
        new_lam, W = top(c * laplacian_quadratic(psi))
        del psi
        change = np.linalg.norm(new_lam - lam) / np.linalg.norm(new_lam)
        lam = new_lam
        if change < tol:
            break
    K = kernel(W)
    K *= gamma
    return W, n_iter, float(K.sum())


# --- process measurements shared by the benchmark scripts ------------------------------------

def _status_mb(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    raise KeyError(key)


def peak_rss_mb():
    """Peak resident set size of this process (MB): VmHWM on Linux, else ru_maxrss."""
    try:
        return _status_mb("VmHWM")
    except (OSError, KeyError):
        import resource
        scale = 1.0 if sys.platform == "darwin" else 1024.0   # bytes on macOS, KB on Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 / scale


def reset_peak_rss():
    """Current RSS in MB, after resetting the kernel's peak (VmHWM) to it (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return _status_mb("VmRSS")
    except OSError:  # not Linux: fall back to the lifetime peak
        return peak_rss_mb()


def machine_summary():
    """One line: CPU model, logical CPUs, ikdr threads and SIMD, BLAS, OPENBLAS_* overrides."""
    import ikdr

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    blas = "?"
    try:
        from threadpoolctl import threadpool_info
        blas = ", ".join(sorted({f"{i['internal_api']} {i.get('version', '')} ({i.get('architecture', '')})"
                                 for i in threadpool_info() if i.get("user_api") == "blas"}))
    except ImportError:
        pass
    overrides = {k: v for k, v in os.environ.items() if k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    wait = {k: v for k, v in os.environ.items() if k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    flags = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu_flags = next(line.split(":", 1)[1].split() for line in fh if line.startswith("flags"))
        flags = " (" + ", ".join(f for f in ("avx2", "avx512f", "amx_tile") if f in cpu_flags) + ")"
    except (OSError, StopIteration):
        pass
    return (f"{model}{flags}, {os.cpu_count()} logical CPUs; ikdr {ikdr.__version__}, "
            f"{ikdr.get_num_threads()} threads, SIMD {ikdr.build_info().get('simd', '?')}, "
            f"OpenMP idle wait {wait or 'ikdr default'}; "
            f"numpy {np.__version__}, BLAS {blas}; OPENBLAS overrides {overrides or 'none'}")


def timed(fn, *args, repeat=1, clock=time.perf_counter, quiet=False, **kwargs):
    """``(fn(*args, **kwargs), seconds)``: the result of the last call and the least time of
    ``repeat`` calls on ``clock`` (wall time; ``time.process_time`` for the CPU seconds of
    this process). ``quiet``: warnings silenced, so a fit that warns is timed as one that
    does not (the message would otherwise print inside the timing)."""
    best = np.inf
    for _ in range(repeat):
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore")
            t0 = clock()
            out = fn(*args, **kwargs)
            best = min(best, clock() - t0)
    return out, best


def best_time(fn, repeat):
    """Best wall time in seconds of ``repeat`` calls of ``fn``."""
    return timed(fn, repeat=repeat)[1]


def best_times(fns, repeat):
    """Best wall time in seconds of each of ``fns`` over ``repeat`` rounds, the
    calls of a round one after the other. Interleaved, the calls being compared
    meet the same machine: a host whose speed drifts over seconds (a shared
    virtual machine) shifts them all alike, not one run of calls against
    another."""
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], timed(fn)[1])
    return best


def gemm_rate(size=2048, inner=None, cols=None, dtype=np.float64, repeat=3, threads=None,
              calls=1, transposed=False):
    """Flop/s of numpy's BLAS on one ``size`` x ``inner`` by ``inner`` x ``cols`` GEMM (both
    default to ``size``), the best of ``repeat`` after one untimed call: the machine's dense
    rate measured in the same run as the timings it stands beside.

    ``threads``: the BLAS's threads for the measurement (None: its default). ``calls``:
    GEMMs per timed call, for a product small enough to stay in cache (the FMA peak of
    one core), whose single call is too short to time. ``transposed``: the product is
    ``A.T @ B`` with A stored ``inner`` x ``size``, the shape of a pass's ``X^T C``."""
    from threadpoolctl import threadpool_limits

    inner = size if inner is None else inner
    cols = size if cols is None else cols
    rng = np.random.default_rng(0)
    A = rng.standard_normal((inner, size) if transposed else (size, inner)).astype(dtype)
    A = A.T if transposed else A
    B = rng.standard_normal((inner, cols)).astype(dtype)
    C = np.empty((size, cols), dtype=dtype)

    def run():
        for _ in range(calls):
            np.matmul(A, B, out=C)

    with threadpool_limits(limits=threads, user_api="blas"):
        run()
        seconds = best_time(run, repeat)
    return 2.0 * size * inner * cols * calls / seconds


def emit(text, out=None):
    """Print a result table and, when ``out`` is given, write it to that file."""
    print(text)
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)


# --- Table 4 data sets and the pymanopt peers ------------------------------------------------

SHARED = Path(os.environ.get("IKDR_SHARED_DATA",
                             Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def load_datasets(names, qs=None):
    """[(name, X standardised, labels, list of q)] for wine, cancer, face, digits.

    wine and digits come from scikit-learn; cancer_683x9 and face_624x20 from
    ``../shared/data`` (or ``$IKDR_SHARED_DATA``) and are skipped, with a
    message, when absent. ``qs`` maps a name to its list of q (default: the
    ISM paper's q = number of classes for wine/cancer, several q for face).
    """
    from sklearn.datasets import load_digits, load_wine
    from sklearn.preprocessing import StandardScaler

    default_q = {"wine": [3], "cancer": [2], "face": [2, 3, 5, 8, 10, 15], "digits": [9]}
    default_q.update(qs or {})
    files = {"cancer": ("cancer_683x9.csv", "cancer_683x9_label.csv"),
             "face": ("face_624x20.csv", "face_624x20_identity_label.csv")}
    out = []
    for name in names:
        if name == "wine":
            X, y = load_wine(return_X_y=True)
            X = StandardScaler().fit_transform(X)
        elif name == "digits":
            X, y = load_digits(return_X_y=True)
            X = StandardScaler().fit_transform(X)
        elif name in files:
            data, labels = (SHARED / f for f in files[name])
            if not (data.exists() and labels.exists()):
                print(f"skipping {name}: {data} not found (set IKDR_SHARED_DATA)")
                continue
            X = np.loadtxt(data, delimiter=",")
            y = np.loadtxt(labels, delimiter=",")
            if name == "cancer":   # integer features 1-10; face is already standardised
                X = StandardScaler().fit_transform(X)
        else:
            raise ValueError(f"unknown data set {name!r}")
        out.append((name, X, y, list(default_q[name])))
    return out


def run_ikdr(X, gamma, kernel, q, **kw):
    """ikdr.ism(X, gamma, kernel, q, **kw): objective, solve time (without the certificate),
    iterations, fused products and the convergence record."""
    import ikdr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ikdr.ism(X, gamma, kernel, q, **kw)
    c = res.convergence
    # fused C++ products (objective, Phi, Hessian-vector) of the solve; the certificate's first
    # Phi (at the returned W) is not part of the solve
    products = c.phi_evaluations + c.objective_evaluations - 1
    return {"objective": res.objective, "time": c.solve_time, "iterations": res.n_iter,
            "converged": res.converged, "rel_grad": c.relative_gradient_norm,
            "products": products, "certificate": c}


def run_pymanopt(solver, X, gamma, kernel, q, W0, min_gradient_norm, max_time, targets=None,
                 random_state=0):
    """Maximise Tr(Gamma K_XW) with a pymanopt solver on ikdr's fused objective and gradient.

    ``solver`` is "stiefel-sd" (steepest descent), "stiefel-cg" (conjugate
    gradients) or "grassmann-tr" (trust regions, given the same Hessian-vector
    products ikdr uses). Gradient: the exact Euclidean ``2 Phi W``. Start: W0,
    or pymanopt's default random point (seeded by ``random_state``) when W0 is
    None. Stops at Riemannian gradient norm ``min_gradient_norm`` or after
    ``max_time`` seconds. ``targets`` maps names to objective values: the
    result's ``reached[name]`` is the time (s, from the start of the run) at
    which an evaluated point first had an objective >= that value, or None.
    """
    import pymanopt
    from pymanopt.manifolds import Grassmann, Stiefel
    from pymanopt.optimizers import ConjugateGradient, SteepestDescent, TrustRegions

    # the manifold solvers see f only through ikdr's public kernel products, counted here
    fd_step = 1e-7          # the forward-difference step of ikdr's own Hessian products
    passes = {"n": 0}

    def phi_product(W, V=None):
        passes["n"] += 1
        return kernel.phi_product(X, W, gamma, V)

    d = X.shape[1]
    manifold = Grassmann(d, q) if solver == "grassmann-tr" else Stiefel(d, q)
    cache = {}
    targets = dict(targets or {})
    reached = {name: None for name in targets}
    best = {"f": -np.inf}
    clock = {"t0": time.perf_counter()}

    def phi_at(W):
        key = W.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = phi_product(W)[0]
        return cache[key]

    @pymanopt.function.numpy(manifold)
    def cost(W):
        passes["n"] += 1
        f = kernel.objective(X, W, gamma)
        now = time.perf_counter() - clock["t0"]
        best["f"] = max(best["f"], f)
        for name, value in targets.items():
            if reached[name] is None and f >= value:
                reached[name] = now
        return -f

    @pymanopt.function.numpy(manifold)
    def euclidean_gradient(W):
        return -2.0 * phi_at(W) @ W

    @pymanopt.function.numpy(manifold)
    def euclidean_hessian(W, Z):
        # Euclidean Hessian of -f along Z: -(2 Phi Z + 2 DPhi[Z] W), with DPhi[Z] W by the same
        # forward difference ikdr's trust region uses (the Riemannian product without its
        # projection terms: pymanopt's Grassmann manifold adds its own).
        phi = phi_at(W)
        t = fd_step / max(np.linalg.norm(Z), 1e-300)
        dphi_w = (phi_product(W + t * Z, W)[0] - phi @ W) / t
        return -2.0 * (phi @ Z + dphi_w)

    kwargs = {"euclidean_gradient": euclidean_gradient}
    if solver == "grassmann-tr":
        kwargs["euclidean_hessian"] = euclidean_hessian
    prob = pymanopt.Problem(manifold, cost, **kwargs)
    common = dict(verbosity=0, max_time=max_time, max_iterations=10**9,
                  min_gradient_norm=min_gradient_norm, log_verbosity=0)
    opt = {"stiefel-sd": SteepestDescent, "stiefel-cg": ConjugateGradient,
           "grassmann-tr": TrustRegions}[solver](**common)
    if W0 is None:
        np.random.seed(random_state)   # pymanopt's random_point draws from numpy's global RNG
        W0 = manifold.random_point()
    clock["t0"] = t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = opt.run(prob, initial_point=np.array(W0, copy=True))
    elapsed = time.perf_counter() - t0
    W = res.point
    f = -float(res.cost)
    PW = kernel.phi(X, W, gamma) @ W
    g = np.linalg.norm(2.0 * (PW - W @ (W.T @ PW)))
    reason = str(res.stopping_criterion)
    products = passes["n"]
    return {"objective": f, "best_objective": max(best["f"], f), "time": elapsed,
            "iterations": int(res.iterations), "products": products,
            "converged": "min grad norm" in reason, "rel_grad": g / abs(f),
            "reason": reason, "reached": reached}


# --- results files: every table the docs quote is written by the script that measures it ------

RESULTS = Path(__file__).resolve().parent / "results"


def run_conditions(script, argv):
    """Machine, date, command and load of a measurement, as a dict (for the JSON files)."""
    import datetime

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        load = None
    argv = list(sys.argv[1:] if argv is None else argv)
    # a bare name is a script of this folder; a study passes its path from the root
    path = script if "/" in script else f"benchmarks/{script}"
    return {"command": " ".join(["python", path, *argv]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine_summary(), "load_average": load}


def head_lines(title, conditions, details=()):
    """The first lines of every results file: the title, then the machine, the date and the
    command, each on a line of its own, the load at the start, then ``details`` (sizes,
    repeats: one line each). The documentation's benchmark pages show them as they are."""
    load = conditions["load_average"]
    return [f"# {title}", "",
            f"- machine: {conditions['machine']}",
            f"- date: {conditions['date']}",
            f"- command: `{conditions['command']}`",
            f"- load average at the start: {', '.join(map(str, load)) if load else 'n/a'}",
            *[f"- {line}" for line in details], ""]


def results_head(title, script, argv=None, details=()):
    """:func:`head_lines` for a run of ``benchmarks/<script>`` (or of ``script``, a path from
    the repository root, such as ``studies/markers.py``) with ``argv`` (default: this
    process's arguments), measured now."""
    return head_lines(title, run_conditions(script, argv), details)


def floors_missed(missed):
    """A plain sentence for the floors a run did not reach (``missed``: one phrase each,
    such as "10,000 x 64: 6.04x against a floor of 8x"), or that it reached them all."""
    if not missed:
        return "Every floor in this table is met."
    return "Below its floor: " + "; ".join(missed) + ". Every other floor in this table is met."


def _plain(value, digits):
    """``value`` with numpy scalars and arrays as Python numbers and lists, and every float
    rounded to ``digits`` significant digits (a benchmark's timings and scores mean nothing
    beyond the fourth)."""
    if isinstance(value, dict):
        return {str(k): _plain(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, digits) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return float(f"{value:.{digits}g}") if np.isfinite(value) else value
    return value


def compact_json(obj, digits=4):
    """JSON text of ``obj`` for a results file: floats to ``digits`` significant digits, a
    dict or list of scalars (a record) on one line, nested ones indented one level per
    depth. A run of hundreds of records reads as one line per record, not one per value."""
    import json

    def dump(value, indent):
        flat = json.dumps(value, ensure_ascii=False)
        if not isinstance(value, (dict, list)) or not value or all(
                not isinstance(v, (dict, list)) for v in
                (value.values() if isinstance(value, dict) else value)):
            return flat
        pad = " " * (indent + 1)
        if isinstance(value, dict):
            items = [f"{pad}{json.dumps(k)}: {dump(v, indent + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
        return "[\n" + ",\n".join(pad + dump(v, indent + 1) for v in value) + "\n" + \
            " " * indent + "]"

    return dump(_plain(obj, digits), 0) + "\n"


def write_results(stem, title, conditions, body, records=None, out_dir=None, details=()):
    """Write ``results/<stem>.md`` (:func:`head_lines` with ``details``, then ``body``
    lines) and, with ``records``, ``results/<stem>.json`` (the conditions and the records),
    the file other scripts read, written by :func:`compact_json`. Returns the markdown path."""
    out_dir = Path(out_dir or RESULTS)
    out_dir.mkdir(parents=True, exist_ok=True)
    head = head_lines(title, conditions, details)
    md = out_dir / f"{stem}.md"
    md.write_text("\n".join(head + list(body)) + "\n", encoding="utf-8")
    if records is not None:
        (out_dir / f"{stem}.json").write_text(
            compact_json({**conditions, "title": title, "records": records}), encoding="utf-8")
    return md


# --- ClustPy's alternative-clustering methods (optional: pip install ".[peers]") -------------

def clustpy_alternative(method, X, n_clusters, random_state=0):
    """Label vectors of ClustPy's NR-Kmeans or Orth (one per found subspace), or None.

    ``n_clusters``: the cluster counts of the sought clusterings. None when
    ClustPy is not installed (it is an optional peer: ``pip install ".[peers]"`` in the checkout).
    """
    try:
        from clustpy.alternative import NrKmeans, OrthogonalClustering
    except ImportError:
        return None
    cls = {"NR-Kmeans": NrKmeans, "Orth": OrthogonalClustering}[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = cls(n_clusters=list(n_clusters), random_state=random_state).fit(X)
    labels = np.asarray(model.labels_)
    labels = labels.reshape(labels.shape[0], -1)
    return [labels[:, c] for c in range(labels.shape[1])]
