"""The core's landmark sweeps: the numpy formulas, any thread count, memmaps, bad input."""
from dataclasses import replace

import numpy as np
import pytest

import ikdr
from ikdr import Gamma, supervised_gamma
from ikdr.kernels import Gaussian, Multiquadric, Polynomial
from ikdr._native import LandmarkGamma, SweepOptions, landmark_first_sweep, landmark_second_sweep
from ikdr.passes.landmark_sweeps import native_first_sweep, native_rhs, native_second_sweep
from ikdr.passes import resolve
from ikdr.passes.landmarks import Approximation, LandmarkProblem
from ikdr.passes.rows import check_rows

from . import _rounding

#: well-conditioned landmark kernels K_mm (a wide Gaussian at m = 40 has cond(S) near 1e8,
#: which alone moves the products by 1e-8 between two orders of summation)
KERNELS = [Gaussian(1.0), Multiquadric(1.0), Polynomial(3, 1.0)]


def _data(rng, n=700, d=17, classes=4):
    X = rng.standard_normal((n, d))
    y = rng.integers(0, classes, n)
    return X, y


def _gamma(paradigm, y, rng):
    if paradigm == "classes":
        return supervised_gamma(y)[0]
    return Gamma(rng.standard_normal((y.shape[0], 3)), [1.0, -0.5, 2.0])


def _problem(X, gamma, kernel, m=40, block_rows=128, index=None):
    a = Approximation("nystrom", m, random_state=0, block_rows=block_rows, index=index)
    return resolve(X, a).problem(X, gamma, kernel, None)


def _reference_first(X, st, W, V, factors):
    """The first sweep's sums by the formulas, on all rows at once (float64):
    P = C^T E, A = X_c^T C_c or X^T diag(g_j) C, Q = (C_c^T R_c, C^T diag(a) R) or
    C^T diag(g_j) R."""
    Z, R = X @ W, X @ V
    out = []
    for f in factors:
        C = np.asarray(f.rows(Z), dtype=np.float64)
        if st.classes:
            Y = np.eye(st.n_classes)[st.codes]
            E = np.hstack([Y, np.ones((len(X), 1)), st.a[:, None]])
            A = np.stack([X[st.codes == c].T @ C[st.codes == c] for c in range(st.n_classes)])
            Q = np.stack([C[st.codes == c].T @ R[st.codes == c] for c in range(st.n_classes)])
            Q = (Q, C.T @ (st.a[:, None] * R))
        else:
            E = st.G
            A = np.stack([X.T @ (g[:, None] * C) for g in st.G.T], axis=1)
            Q = np.stack([C.T @ (g[:, None] * R) for g in st.G.T], axis=1)
        out.append((C.T @ E, A, Q) if f.products else (C.T @ E, None, None))
    return out


def _reference_second(X, st, W, V, factors, lap):
    r"""With Gamma = G diag(s) G^T (docs/maths.md, section 5):
    :math:`(\Gamma\circ CSC^T)R = \sum_r s_r g_r\circ(CS(C^T(g_r\circ R)))`, the degrees
    the same with R = 1; deg = sum_f lap_f (Gamma o M_f) 1, Phi V = X^T (deg o R +
    sum_f coef_f (Gamma o M_f) R) and the degree term X^T diag(deg) X."""
    Z, R = X @ W, X @ V
    deg = np.zeros(len(X))
    O = np.zeros_like(R)
    for f, lw in zip(factors, lap):
        if not f.products:
            continue
        C = np.asarray(f.rows(Z), dtype=np.float64)
        coef = sum(c if kind == "inner" else -c for kind, c in f.uses if kind != "value")
        for g, s in zip(st.G.T, st.s):
            deg += lw * s * g * (C @ (f.core @ (C.T @ g)))
            O += coef * s * g[:, None] * (C @ (f.core @ (C.T @ (g[:, None] * R))))
    return X.T @ (deg[:, None] * X), X.T @ (O + deg[:, None] * R)


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def _flatten(parts):
    """Every array of a sweep's output, in order (None skipped)."""
    if parts is None:
        return []
    if isinstance(parts, np.ndarray):
        return [parts]
    return [a for p in parts for a in _flatten(p)]


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
@pytest.mark.parametrize("paradigm", ["classes", "signed"])
def test_sweeps_equal_the_formulas(kernel, paradigm, rng):
    """Both sweeps, every kernel the core makes, class and general Gamma: 1e-10 (float64)."""
    X, y = _data(rng)
    gamma = _gamma(paradigm, y, rng)
    p = _problem(X, gamma, kernel)
    W = np.linalg.qr(rng.standard_normal((X.shape[1], 3)))[0]
    V = rng.standard_normal((X.shape[1], 2))
    factors = p._factors(W)
    assert all(f.native is not None for f in factors)
    st = p.structure
    got = native_first_sweep(X, st, W, V, factors, True, SweepOptions(128, None, np.float64))
    ref = _reference_first(X, st, W, V, factors)
    for a, b in zip(_flatten(got), _flatten(ref)):
        assert a.shape == b.shape
        assert _rel(a, b) < 1e-10
    # without the dense products the core reads the rows in place (P and Q only)
    thin = native_first_sweep(X, st, W, V, factors, False, SweepOptions(128, None, np.float64))
    for (P, A, Q), (P_ref, _, Q_ref) in zip(thin, ref):
        assert A is None
        assert all(_rel(a, b) < 1e-10 for a, b in zip(_flatten((P, Q)), _flatten((P_ref, Q_ref))))
    lap = [sum(c for kind, c in f.uses if kind == "laplacian") for f in factors]
    rhs = native_rhs(st, factors, got, lap, V.shape[1], np.float64)
    phi, pv = native_second_sweep(X, st, W, V, factors, rhs, True,
                                  SweepOptions(128, None, np.float64))
    phi_ref, pv_ref = _reference_second(X, st, W, V, factors, lap)
    assert _rel(pv, pv_ref) < 1e-10
    if any(lap):
        assert _rel(phi, phi_ref) < 1e-10


@pytest.mark.parametrize("paradigm", ["classes", "signed"])
def test_sweeps_in_stages_equal_the_formulas(paradigm, rng):
    """Wide rows: a class's rows in a block (class products) and a sign's scaled
    rows (degree term) go to the BLAS in several cache-sized stages of 64 rows
    (d = 1,100 float64); the first block holds one class only, so the others
    have no rows there and still set their products. 1e-10 against the formulas."""
    X, y = _data(rng, n=700, d=1100, classes=3)
    y[:300] = 0
    gamma = _gamma(paradigm, y, rng)
    p = _problem(X, gamma, Gaussian(1.0))
    W = np.linalg.qr(rng.standard_normal((X.shape[1], 3)))[0]
    V = rng.standard_normal((X.shape[1], 2))
    factors, st = p._factors(W), p.structure
    got = native_first_sweep(X, st, W, V, factors, True, SweepOptions(300, None, np.float64))
    ref = _reference_first(X, st, W, V, factors)
    assert all(_rel(a, b) < 1e-10 for a, b in zip(_flatten(got), _flatten(ref)))
    lap = [sum(c for kind, c in f.uses if kind == "laplacian") for f in factors]
    assert any(lap)
    rhs = native_rhs(st, factors, got, lap, V.shape[1], np.float64)
    phi, pv = native_second_sweep(X, st, W, V, factors, rhs, True,
                                  SweepOptions(300, None, np.float64))
    phi_ref, pv_ref = _reference_second(X, st, W, V, factors, lap)
    assert _rel(phi, phi_ref) < 1e-10 and _rel(pv, pv_ref) < 1e-10


def _both_sweeps(X, p, W, V, dtype, threads=None, workspace=None):
    """Every array of a dense pass's two sweeps (with V), in order."""
    factors, st = p._factors(W), p.structure
    first = native_first_sweep(X, st, W, V, factors, True,
                               SweepOptions(200, threads, dtype, workspace))
    lap = [sum(c for kind, c in f.uses if kind == "laplacian") for f in factors]
    rhs = native_rhs(st, factors, first, lap, V.shape[1], dtype)
    second = native_second_sweep(X, st, W, V, factors, rhs, True,
                                 SweepOptions(200, threads, dtype, workspace))
    return _flatten(first) + _flatten(second)


def test_a_kept_workspace_gives_each_sweep_its_fresh_answer(rng):
    """One workspace through sweeps of other shapes, precisions and thread
    counts: every sweep bitwise the sweep on fresh memory. Shared by two calls
    at once, one of them runs on its own memory: the same sums, to rounding.
    Each core call holds the BLAS at one thread from whichever Python thread
    (before, a hold taken outside the main thread did nothing, and these sums
    differed by 1.6e-7 in float32 with OpenBLAS's Haswell kernels); the NumPy
    products between the sweeps (the right-hand sides, m-term products of
    positive kernel factors) may run on another BLAS thread count while the
    other call holds it, within gamma_m of their dtype, which the sweeps' sums
    pass on."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    from ikdr._native import sweep_workspace

    cases = []
    for n, d, m, paradigm in ((1500, 150, 70, "classes"), (900, 40, 30, "signed"),
                              (1200, 300, 50, "classes")):
        X, y = _data(rng, n=n, d=d)
        gamma = _gamma(paradigm, y, rng)
        W = np.linalg.qr(rng.standard_normal((d, 4)))[0]
        V = rng.standard_normal((d, 3))
        for dtype in (np.float32, np.float64):
            Xd = X.astype(dtype)
            p = _problem(Xd, gamma, Gaussian(4.0), m=m)
            cases.append((Xd, p, W, V, dtype, _both_sweeps(Xd, p, W, V, dtype)))
    workspace = sweep_workspace()
    for threads in (1, 2, 3):
        for X, p, W, V, dtype, fresh in cases:
            got = _both_sweeps(X, p, W, V, dtype, threads, workspace)
            assert all(np.array_equal(a, b) for a, b in zip(got, fresh))
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda c: (_both_sweeps(*c[:5], 2, workspace), c[5]), cases * 2))
    for (got, fresh), (X, p, *_rest) in zip(runs, cases * 2):
        tol = 2 * _rounding.gamma(p.approx.n_landmarks, X.dtype)
        assert all(_rel(a, b) <= tol for a, b in zip(got, fresh)), X.dtype
    X, p, W, V, dtype, fresh = cases[0]
    copy = pickle.loads(pickle.dumps(workspace))
    assert all(np.array_equal(a, b) for a, b in zip(_both_sweeps(X, p, W, V, dtype, 2, copy), fresh))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("paradigm", ["classes", "signed"])
def test_sweeps_bitwise_independent_of_threads(dtype, paradigm, rng):
    X, y = _data(rng, n=1500, d=150)
    X = X.astype(dtype)
    gamma = _gamma(paradigm, y, rng)
    p = _problem(X, gamma, Gaussian(4.0), m=70)
    W = np.linalg.qr(rng.standard_normal((X.shape[1], 4)))[0]
    V = rng.standard_normal((X.shape[1], 3))
    factors, st = p._factors(W), p.structure
    runs = []
    for threads in (1, 2, 3):
        first = native_first_sweep(X, st, W, V, factors, True, SweepOptions(200, threads, dtype))
        rhs = native_rhs(st, factors, first, [-1.0 / 16], V.shape[1], dtype)
        second = native_second_sweep(X, st, W, V, factors, rhs, True,
                                     SweepOptions(200, threads, dtype))
        runs.append(_flatten(first) + _flatten(second))
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(runs[0], other))


def test_float32_sweeps_agree_with_float64(rng):
    X, y = _data(rng, n=1000, d=40)
    gamma = supervised_gamma(y)[0]
    W = np.linalg.qr(rng.standard_normal((X.shape[1], 3)))[0]
    V = rng.standard_normal((X.shape[1], 2))
    index = np.arange(0, 1000, 25)
    p64 = _problem(X, gamma, Gaussian(3.0), index=index)
    p32 = _problem(X.astype(np.float32), gamma, Gaussian(3.0), index=index)
    phi64, phi32 = p64._pass(W, dense=True)[1], p32._pass(W, dense=True)[1]
    pv64, pv32 = p64._pass(W, V=V)[2], p32._pass(W, V=V)[2]
    assert phi32.dtype == np.float64
    assert _rel(phi32, phi64) < 1e-3
    assert _rel(pv32, pv64) < 1e-3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_memmap_pass_gives_the_in_memory_answer(dtype, rng, tmp_path):
    X, y = _data(rng, n=1200, d=30)
    X = X.astype(dtype)
    mm = np.memmap(tmp_path / "x.dat", dtype=dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    ro = np.memmap(tmp_path / "x.dat", dtype=dtype, mode="r", shape=X.shape)
    gamma = supervised_gamma(y)[0]
    W = np.linalg.qr(rng.standard_normal((X.shape[1], 3)))[0]
    V = rng.standard_normal((X.shape[1], 2))
    index = np.arange(0, 1200, 30)
    a, b = _problem(X, gamma, Gaussian(3.0), index=index), _problem(ro, gamma, Gaussian(3.0), index=index)
    for dense, VV in ((True, None), (False, V)):
        ra, rb = a._pass(W, V=VV, dense=dense), b._pass(W, V=VV, dense=dense)
        assert all(np.array_equal(x, z) for x, z in zip(ra, rb) if x is not None)


def test_nan_in_a_late_block_named_before_any_pass(tmp_path, monkeypatch):
    """A memmap with NaN in its last row block: a ValueError naming the row and the
    row block, before the first pass (W never changes)."""
    X = np.random.default_rng(1).standard_normal((9000, 6)).astype(np.float32)
    X[8765, 4] = np.nan
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float32, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    passes = []
    monkeypatch.setattr(LandmarkProblem, "_pass", lambda self, *a, **k: passes.append(1))
    with pytest.raises(ValueError, match=r"row 8765, row block 8000:9000"):
        check_rows(mm, block_rows=1000)
    with pytest.raises(ValueError, match=r"row 8765, row block"):
        ikdr.ISM(n_components=2, approximation="nystrom", n_landmarks=50).fit(mm, np.arange(9000) % 3)
    assert passes == []


def test_bad_sweep_input_named(rng):
    X, y = _data(rng, n=200, d=5)
    p = _problem(X, supervised_gamma(y)[0], Gaussian(2.0))
    W = np.linalg.qr(rng.standard_normal((5, 2)))[0]
    factors = [f.native for f in p._factors(W)]
    codes = np.asarray(y, dtype=np.int64).copy()
    codes[150] = 9
    bad = LandmarkGamma(codes=codes, proportions=np.full(4, 0.25))
    with pytest.raises(ValueError, match="class code 9 of row 150"):
        landmark_first_sweep(X, W, factors, bad, products=[True])
    good = LandmarkGamma(codes=np.asarray(y, dtype=np.int64), proportions=np.full(4, 0.25))
    with pytest.raises(ValueError, match="one row per column of X"):
        landmark_first_sweep(X, W[:3], factors, good, products=[True])
    with pytest.raises(ValueError, match="q columns"):
        landmark_first_sweep(X, np.ones((5, 3)), factors, good, products=[True])
    with pytest.raises(ValueError, match="right-hand side"):
        landmark_second_sweep(X, W, factors, good, [np.ones((2, 2))])


def test_matrix_free_where_the_landmark_costs_say_so():
    """phi_solver="auto" weighs the landmark passes' own flops: a dense step pays
    n d m + n d^2 + d^3, a block iteration n d (q + k): dense at small d,
    matrix-free at large d."""
    from ikdr.solver.steps import PassCosts, phi_mode

    y = np.arange(20_000) % 10
    modes = {}
    for d in (256, 4096):
        X = np.broadcast_to(np.zeros((1, d), np.float32), (20_000, d))
        p = resolve(X, Approximation("nystrom", 256)).problem(X, supervised_gamma(y)[0],
                                                              Gaussian(1.0), None)
        costs = PassCosts.of_problem(p, 9)
        assert costs.dense > costs.block > 0
        modes[d] = phi_mode("auto", p, 9, costs)
    assert modes == {256: "dense", 4096: "matrix_free"}


def test_matrix_free_fit_finds_the_dense_fit(rng):
    from ikdr import principal_angle
    from ikdr.reduction.approximate import LandmarkOptions, approximate_ism
    from ikdr.solver.options import ISMOptions

    y = rng.integers(0, 4, 3000)
    X = (rng.standard_normal((4, 60))[y] + rng.standard_normal((3000, 60))).astype(np.float32)
    gamma = supervised_gamma(y)[0]
    options = ISMOptions(n_components=3, criterion="eigenvalues", random_state=0)
    fits = {mode: approximate_ism(X, gamma, Gaussian(8.0), replace(options, phi_solver=mode),
                                  LandmarkOptions(Approximation("nystrom", 100,
                                                                random_state=0)))[0]
            for mode in ("dense", "matrix_free")}
    assert fits["matrix_free"].convergence.dense_phi_evaluations == 0
    assert np.sin(principal_angle(fits["dense"].components, fits["matrix_free"].components)) < 1e-4


@pytest.mark.parametrize("paradigm", ["classes", "signed"])
def test_float64_sweeps_read_float32_rows_in_place(paradigm, rng):
    """A float64 pass over float32 rows (a float32 memmap's exact passes) converts
    them block by block: the sums of the float64 copy, bit for bit."""
    X, y = _data(rng, n=900, d=12)
    X32 = X.astype(np.float32)
    gamma = _gamma(paradigm, y, rng)
    p = _problem(X32, gamma, Gaussian(2.0))
    W = np.linalg.qr(rng.standard_normal((12, 3)))[0]
    V = rng.standard_normal((12, 2))
    factors, st = p._factors(W), p.structure
    for src in (X32, X32.astype(np.float64)):
        first = native_first_sweep(src, st, W, V, factors, True,
                                   SweepOptions(128, None, np.float64))
        rhs = native_rhs(st, factors, first, [-0.25], 2, np.float64)
        second = native_second_sweep(src, st, W, V, factors, rhs, True,
                                     SweepOptions(128, None, np.float64))
        if src is X32:
            ref = _flatten(first) + _flatten(second)
        else:
            assert all(np.array_equal(a, b) for a, b in zip(ref, _flatten(first) + _flatten(second)))
