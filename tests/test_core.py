"""The C++ core against dense numpy formulas."""
import numpy as np
import pytest
import scipy.linalg

from ikdr import _native
from ikdr._native import GammaArrays, KernelTerm, TermKind

LIN, POLY, GAUSS, SQ, MQ = (TermKind.linear, TermKind.polynomial, TermKind.gaussian,
                            TermKind.squared, TermKind.multiquadric)


def fused(Z, terms, gradient, *, gamma_factor=None, gamma_scale=None, gamma_dense=None, rhs=None,
          n_threads=1):
    """The door's fused product with Gamma given by its arrays."""
    return _native.fused_product(Z, terms, gamma=GammaArrays(gamma_factor, gamma_scale, gamma_dense),
                                 gradient=bool(gradient), rhs=rhs, n_threads=n_threads)


def sqdist(A, B):
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def dense_value(kind, A, B, sigma=1.3, c=0.7, degree=3, s_a=None, s_b=None):
    dot, dist = A @ B.T, sqdist(A, B)
    if kind == LIN:
        return dot
    if kind == POLY:
        return (dot + c) ** degree
    if kind == GAUSS:
        e = 1 / (2 * sigma**2) if s_a is None else 1 / (2 * np.outer(s_a, s_b))
        return np.exp(-dist * e)
    if kind == SQ:
        return -dist
    return -np.sqrt(dist + c**2)


def dense_phi(kind, X, Z, gamma, sigma=1.3, c=0.7, degree=3, s=None):
    """Phi of docs/maths.md section 2, written out densely."""
    dot, dist = Z @ Z.T, sqdist(Z, Z)
    lap = lambda M: np.diag(M.sum(1)) - M  # noqa: E731
    if kind == LIN:
        return X.T @ gamma @ X
    if kind == POLY:
        return degree * X.T @ (gamma * (dot + c) ** (degree - 1)) @ X
    if kind == GAUSS:
        if s is None:
            return -(1 / sigma**2) * X.T @ lap(gamma * np.exp(-dist / (2 * sigma**2))) @ X
        S = 1 / np.outer(s, s)
        return -X.T @ lap(S * gamma * np.exp(-dist * S / 2)) @ X
    if kind == SQ:
        return -2 * X.T @ lap(gamma) @ X
    return -X.T @ lap(gamma / np.sqrt(dist + c**2)) @ X


def term(kind, weight=1.0, sigma=1.3, c=0.7, degree=3, s_a=None, s_b=None):
    return KernelTerm(kind, weight, sigma, c, degree, s_a, s_b)


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("kind", [LIN, POLY, GAUSS, SQ, MQ])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_kernel_matrix_matches_numpy(kind, dtype, tol, rng):
    A = rng.standard_normal((70, 4))
    B = rng.standard_normal((55, 4))
    K = _native.kernel_matrix(A.astype(dtype), B.astype(dtype), [term(kind)], n_threads=2)
    assert K.dtype == dtype and K.shape == (70, 55)
    assert rel_err(K.astype(np.float64), dense_value(kind, A, B)) < tol
    # self kernel
    K = _native.kernel_matrix(A.astype(dtype), A.astype(dtype), [term(kind)], n_threads=1)
    assert rel_err(K.astype(np.float64), dense_value(kind, A, A)) < tol


def test_relative_gaussian_kernel_matrix(rng):
    A, B = rng.standard_normal((30, 3)), rng.standard_normal((20, 3))
    s_a, s_b = rng.uniform(0.5, 2, 30), rng.uniform(0.5, 2, 20)
    K = _native.kernel_matrix(A, B, [term(GAUSS, s_a=s_a, s_b=s_b)], n_threads=2)
    np.testing.assert_allclose(K, dense_value(GAUSS, A, B, s_a=s_a, s_b=s_b), rtol=1e-12)


def test_gaussian_elementwise_relative_accuracy(rng):
    # Kernel values down to the subnormal range stay accurate element-wise.
    A = rng.standard_normal((200, 3)) * 8
    K = _native.kernel_matrix(A, A, [term(GAUSS, sigma=0.5)], n_threads=2)
    ref = np.exp(-sqdist(A, A) / (2 * 0.25))
    mask = ref > 1e-300
    assert np.max(np.abs(K[mask] - ref[mask]) / ref[mask]) < 1e-10
    assert np.all(K[~mask] < 1e-290)


def test_squared_distances_never_negative():
    # Nearly identical far-from-origin points: the Gram expansion cancels.
    base = np.full((1, 5), 1e4)
    A = np.vstack([base, base + 1e-9, base])
    K = _native.kernel_matrix(A, A, [term(SQ)], n_threads=1)
    assert np.all(-K >= 0)
    assert np.all(np.diag(K) == 0)


def test_conic_terms_add_up(rng):
    A = rng.standard_normal((40, 3))
    terms = [term(GAUSS, 0.5), term(POLY, 2.0), term(MQ, 1.5)]
    K = _native.kernel_matrix(A, A, terms, n_threads=2)
    ref = 0.5 * dense_value(GAUSS, A, A) + 2 * dense_value(POLY, A, A) + 1.5 * dense_value(MQ, A, A)
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("kind", [LIN, POLY, GAUSS, SQ, MQ])
@pytest.mark.parametrize("gamma_form", ["factored", "dense"])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_fused_phi_matches_dense_formula(kind, gamma_form, dtype, tol, rng):
    n, d, q, r = 90, 6, 2, 3
    X = rng.standard_normal((n, d))
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    G = rng.standard_normal((n, r))
    s = np.array([1.0, -0.5, 2.0])
    gamma = (G * s) @ G.T
    Z = X @ W
    kwargs = ({"gamma_factor": G.astype(dtype), "gamma_scale": s.astype(dtype)}
              if gamma_form == "factored" else {"gamma_dense": gamma.astype(dtype)})
    y, _ = fused(Z.astype(dtype), [term(kind)], 1, rhs=X.astype(dtype), n_threads=2, **kwargs)
    phi = X.T @ y.astype(np.float64)
    assert rel_err(phi, dense_phi(kind, X, Z, gamma)) < tol


def test_fused_relative_gaussian_phi(rng):
    n, d, q = 60, 5, 2
    X = rng.standard_normal((n, d))
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    G = rng.standard_normal((n, 2))
    s = rng.uniform(0.5, 2.0, n)
    y, _ = fused(X @ W, [term(GAUSS, s_a=s, s_b=s)], 1, gamma_factor=G,
                                      rhs=X, n_threads=2)
    assert rel_err(X.T @ y, dense_phi(GAUSS, X, X @ W, G @ G.T, s=s)) < 1e-10


@pytest.mark.parametrize("classes,rank", [(3, None), (16, None), (17, None), (40, None),
                                          (20, 4)])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-4)])
def test_class_structured_gamma(classes, rank, dtype, tol, rng):
    # A factor whose rows repeat (centered one-hot class indicators, the
    # supervised Gamma) is read from a table of its distinct rows (at most 16,
    # or at most rank + 1: 17 and 40 classes); 20 distinct rows of rank 4 take
    # the rank-r product per entry. The answer is the dense formula's, with
    # the points themselves (symmetric pass) and between two point sets.
    n, m, d = 150, 70, 4
    labels = np.arange(n) % classes
    rng.shuffle(labels)
    F = np.eye(classes)[labels] if rank is None else rng.standard_normal((classes, rank))[labels]
    G = F - F.mean(0)
    s = rng.uniform(0.5, 2.0, G.shape[1])
    X, Y = rng.standard_normal((n, d)), rng.standard_normal((m, d))
    Gc = G[:m][::-1].copy()
    gamma = (G * s) @ G.T
    for kind in (GAUSS, POLY):
        y, sums = fused(X.astype(dtype), [term(kind)], 1, gamma_factor=G.astype(dtype),
                        gamma_scale=s.astype(dtype), rhs=X.astype(dtype), n_threads=2)
        assert rel_err(X.T @ y.astype(np.float64), dense_phi(kind, X, X, gamma)) < tol
        M = gamma * dense_value(kind, X, X)
        assert rel_err(sums.astype(np.float64), M.sum(1)) < tol
        y, sums = _native.fused_product(X.astype(dtype), [term(kind)],
                                        gamma=GammaArrays(G.astype(dtype), s.astype(dtype)),
                                        columns=Y.astype(dtype), gamma_columns=Gc.astype(dtype),
                                        rhs=Y.astype(dtype), n_threads=2)
        M = ((G * s) @ Gc.T) * dense_value(kind, X, Y)
        assert rel_err(y.astype(np.float64), M @ Y) < tol
        assert rel_err(sums.astype(np.float64), M.sum(1)) < tol


def test_fused_value_mode_row_sums_and_product(rng):
    n = 120
    Z = rng.standard_normal((n, 3))
    G = rng.standard_normal((n, 2))
    R = rng.standard_normal((n, 4))
    y, sm = fused(Z, [term(GAUSS)], 0, gamma_factor=G, rhs=R, n_threads=2)
    M = (G @ G.T) * dense_value(GAUSS, Z, Z)
    np.testing.assert_allclose(y, M @ R, rtol=1e-11, atol=1e-11 * np.abs(M @ R).max())
    np.testing.assert_allclose(sm, M.sum(1), rtol=1e-11, atol=1e-11)
    # No Gamma: a plain kernel matvec (the spectral U-step uses it).
    y, sm = fused(Z, [term(GAUSS)], 0, rhs=R, n_threads=1)
    K = dense_value(GAUSS, Z, Z)
    np.testing.assert_allclose(y, K @ R, rtol=1e-11)
    np.testing.assert_allclose(sm, K.sum(1), rtol=1e-11)


@pytest.mark.parametrize("kind", [LIN, POLY, GAUSS, SQ, MQ])
def test_gradient_pass_also_gives_the_objective(kind, rng):
    # The gradient pass returns Tr(Gamma K) as well, for every member.
    n = 110
    Z, G, R = rng.standard_normal((n, 3)), rng.standard_normal((n, 2)), rng.standard_normal((n, 4))
    y, value_sums = fused(Z, [term(kind)], 1, gamma_factor=G, rhs=R, n_threads=2)
    M = (G @ G.T) * dense_value(kind, Z, Z)
    np.testing.assert_allclose(value_sums, M.sum(1), rtol=1e-10, atol=1e-10 * np.abs(M).max())


def test_fused_equals_unfused_explicit_psi(rng):
    n, d = 150, 7
    X = rng.standard_normal((n, d))
    Z = X[:, :2]
    G = rng.standard_normal((n, 2))
    psi = (G @ G.T) * dense_value(GAUSS, Z, Z)
    y, _ = fused(Z, [term(GAUSS)], 1, gamma_factor=G, rhs=X, n_threads=2)
    unfused = -(1 / 1.3**2) * X.T @ (np.diag(psi.sum(1)) - psi) @ X
    assert rel_err(X.T @ y, unfused) < 1e-12


def test_panels_do_not_change_the_answer(rng, monkeypatch):
    # Large n forces several row panels; the answer equals the one-panel case.
    n = 1500
    Z = rng.standard_normal((n, 2))
    R = rng.standard_normal((n, 3))
    G = rng.standard_normal((n, 2))
    y1, s1 = fused(Z, [term(GAUSS)], 1, gamma_factor=G, rhs=R, n_threads=1)
    y2, s2 = fused(Z, [term(GAUSS)], 1, gamma_factor=G, rhs=R, n_threads=2)
    psi = (G @ G.T) * (-dense_value(GAUSS, Z, Z) / (2 * 1.3**2))
    ref = -2 * psi @ R + (2 * psi.sum(1))[:, None] * R  # 2 X^T L(psi) X applied to R
    assert rel_err(y1, ref) < 1e-10
    assert rel_err(y1, y2) < 1e-12


def test_block_power_matches_lapack(rng):
    d, q = 300, 6
    A = rng.standard_normal((d, d))
    A = A + A.T
    vals, vecs = scipy.linalg.eigh(A)
    top = vals[::-1][:q]
    v, V, it, conv, res = _native.top_eigenpairs(A, q, None, max_iter=3000, tol=1e-11,
                                                   oversample=20)
    assert conv and res < 1e-11
    np.testing.assert_allclose(v, top, rtol=1e-9)
    np.testing.assert_allclose(np.abs(V.T @ vecs[:, ::-1][:, :q]), np.eye(q), atol=1e-8)


def test_block_power_warm_start(rng):
    # Spectrum shaped like an ISM Phi: a few dominant directions, indefinite rest.
    d, q = 400, 5
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    lam = np.concatenate([[50, 40, 30, 20, 10], rng.uniform(-30, 5, d - q)])
    A = (Q * lam) @ Q.T
    _, _, cold, conv, _ = _native.top_eigenpairs(A, q, None, max_iter=500, tol=1e-12)
    V0 = Q[:, :q] + 1e-3 * rng.standard_normal((d, q))
    v, V, warm, conv2, _ = _native.top_eigenpairs(A, q, V0, max_iter=500, tol=1e-12)
    assert conv and conv2 and warm < cold
    np.testing.assert_allclose(v, lam[:q], rtol=1e-10)
    np.testing.assert_allclose(np.abs(V.T @ Q[:, :q]), np.eye(q), atol=1e-9)


def test_block_power_reports_stall():
    # Tied eigenvalues across the cut: no unique top-q subspace, the
    # iteration cannot settle and must say so instead of guessing.
    A = np.diag([3.0, 2.0, 2.0, 1.0, 0.5])
    _, _, it, conv, _ = _native.top_eigenpairs(A, 2, None, max_iter=5, tol=1e-14, oversample=0)
    assert it <= 5
    from ikdr._utils.eig import top_eigenvectors

    vals, vecs, info = top_eigenvectors(A + 1e-3 * np.eye(5), 2, np.eye(5)[:, :2] + 0.1,
                                        method="power", max_iter=2)
    np.testing.assert_allclose(vals, [3.001, 2.001])
    assert info["method"] in ("power", "power->lapack")


def test_bad_arguments_raise_value_error(rng):
    A = rng.standard_normal((5, 2))
    with pytest.raises(ValueError, match="same number of columns"):
        _native.kernel_matrix(A, rng.standard_normal((5, 3)), [term(LIN)], n_threads=1)
    with pytest.raises(ValueError, match="degree"):
        _native.kernel_matrix(A, A, [term(POLY, degree=0)], n_threads=1)
    with pytest.raises(ValueError, match="n x n"):
        fused(A, [term(LIN)], 1, gamma_dense=np.eye(4))
    with pytest.raises(ValueError, match="square"):
        _native.top_eigenpairs(np.ones((3, 4)), 1)


def test_build_info():
    info = _native.build_info()
    assert info["simd"] in ("baseline", "avx2", "avx512")


def test_view_at_offset_zero_is_not_the_same_point_set(rng):
    # Regression: a one-row view sharing A's buffer start once counted as "A
    # itself", and the zeroed diagonal was written past the panel.
    A = rng.standard_normal((200, 2))
    K = _native.kernel_matrix(A, A[0:1], [term(GAUSS)], n_threads=2)
    np.testing.assert_allclose(K[:, 0], dense_value(GAUSS, A, A[:1])[:, 0], rtol=1e-12)


@pytest.mark.parametrize("case", ["thin", "wide_rhs", "wide_points", "dense_gamma", "value",
                                  "float32", "conic", "classes"])
def test_results_are_bitwise_independent_of_the_thread_count(case, rng):
    # Rows are computed by tasks of a fixed size, whatever thread runs them.
    n, dtype = 700, np.float32 if case == "float32" else np.float64
    k = 80 if case == "wide_points" else 3
    Z = rng.standard_normal((n, k)).astype(dtype)
    R = rng.standard_normal((n, 100 if case == "wide_rhs" else 5)).astype(dtype)
    G = rng.standard_normal((n, 2)).astype(dtype)
    if case == "classes":  # rows from a few distinct values: the class table
        G = np.eye(5, dtype=dtype)[np.arange(n) % 5]
    terms = [term(GAUSS, sigma=3.0)] if case != "conic" else [term(GAUSS, 0.5), term(POLY, 0.2),
                                                              term(MQ, 1.0)]
    kwargs = {"gamma_dense": (G @ G.T).astype(dtype)} if case == "dense_gamma" else {"gamma_factor": G}
    outs = [fused(Z, terms, case != "value", rhs=R, n_threads=t, **kwargs) for t in (1, 2, 3)]
    for y, sums in outs[1:]:
        assert np.array_equal(y, outs[0][0]) and np.array_equal(sums, outs[0][1])
    K = [_native.kernel_matrix(Z, Z, terms, n_threads=t) for t in (1, 3)]
    assert np.array_equal(K[0], K[1])


def test_sne_block_in_one_pass_matches_two(rng):
    # Without shift and scale the block is normalised over its own columns in one pass.
    A, B = rng.standard_normal((130, 7)), rng.standard_normal((90, 7))
    shift, sums = _native.sne_row_normalisers(A, B, 1.7, n_threads=2)
    two = _native.sne_matrix(A, B, 1.7, shift, sums, n_threads=2)
    one = _native.sne_matrix(A, B, 1.7, n_threads=3)
    np.testing.assert_allclose(one, two, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(one.sum(1), 1.0, rtol=1e-13)


def test_wide_and_thin_paths_agree(rng):
    # The same product through the register tiles (<= 64 columns) and the BLAS panels.
    n = 300
    Z, G = rng.standard_normal((n, 4)), rng.standard_normal((n, 3))
    R = rng.standard_normal((n, 130))
    wide, _ = fused(Z, [term(GAUSS)], 1, gamma_factor=G, rhs=R, n_threads=2)
    thin = np.hstack([fused(Z, [term(GAUSS)], 1, gamma_factor=G, rhs=np.ascontiguousarray(R[:, i:i + 50]),
                            n_threads=2)[0] for i in range(0, 130, 50)])
    np.testing.assert_allclose(wide, thin, rtol=1e-12, atol=1e-12 * np.abs(wide).max())


def test_rank_zero_gamma_is_the_zero_matrix(rng):
    Z = rng.standard_normal((150, 3))
    y, sums = fused(Z, [term(GAUSS)], 1, gamma_factor=np.zeros((150, 0)), rhs=Z, n_threads=2)
    assert np.all(y == 0) and np.all(sums == 0)


@pytest.mark.parametrize("is_centered", [True, False])
@pytest.mark.parametrize("form", ["factored", "dense"])
def test_laplacian_quadratic_matches_the_dense_formula(rng, is_centered, form):
    # X^T L(D_w Gamma D_w) X, L(M) = diag(M 1) - M; a centered Gamma's row sums are
    # rounding and its degree term is dropped, any other Gamma's is kept
    from ikdr.gamma import Gamma, centered
    n, d, r = 300, 7, 4
    F = rng.standard_normal((n, r))
    if is_centered:
        F = centered(F)
    gamma = Gamma(F, rng.uniform(0.5, 2.0, r))
    if form == "dense":
        gamma = Gamma(dense=gamma.toarray())
    X, w = rng.standard_normal((n, d)), rng.uniform(0.5, 1.5, n)
    for weights in (None, w):
        M = gamma.toarray() if weights is None else np.outer(w, w) * gamma.toarray()
        expected = X.T @ ((np.diag(M.sum(axis=1)) - M) @ X)
        got = gamma.laplacian_quadratic(X, weights)
        assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()
    # the rounding bound covers the computed row sums of a centered Gamma, and only those
    sums = np.abs(gamma.row_sums())
    assert (sums <= gamma.row_sums_rounding()).all() == is_centered


@pytest.mark.parametrize("bad, message", [
    (dict(kind=POLY, degree=0), "polynomial degree must be >= 1"),
    (dict(kind=GAUSS, weight=np.inf), "weight and c must be finite"),
    (dict(kind=MQ, c=np.nan), "weight and c must be finite"),
    (dict(kind=GAUSS, sigma=0.0), "sigma must be positive and finite"),
    (dict(kind=GAUSS, sigma=np.inf), "sigma must be positive and finite"),
    (dict(kind=GAUSS, s_a=np.ones(6)), "need both row_scales and col_scales"),
    (dict(kind=LIN, s_a=np.ones(6), s_b=np.ones(6)), "apply to the Gaussian term only"),
    (dict(kind=GAUSS, s_a=np.ones(5), s_b=np.ones(6)), "wrong length"),
    (dict(kind=GAUSS, s_a=np.ones(6), s_b=-np.ones(6)), "must be positive and finite"),
])
@pytest.mark.parametrize("entry", ["kernel_matrix", "fused_product"])
def test_the_core_checks_kernel_terms(bad, message, entry, rng):
    # the checks live in the core (check_terms, ism_products.hpp), not the bindings
    Z = rng.standard_normal((6, 2))
    bad = dict(bad)
    t = term(bad.pop("kind"), **bad)
    with pytest.raises(ValueError, match=message):
        if entry == "kernel_matrix":
            _native.kernel_matrix(Z, Z, [t], n_threads=1)
        else:
            fused(Z, [t], 1, rhs=Z, n_threads=2)


def test_blas_sizes_above_32_bits_raise_overflow_error():
    """The BLAS takes 32-bit sizes: each one the core passes on is checked, never wrapped."""
    from ikdr import _core

    big = 2 ** 31 - 1
    # row-major (m, n, k, lda, ldb, ldc) becomes the column-major call (n, m, k, ldb, lda, ldc)
    assert _core._gemm_sizes(3, 5, 7, 11, 13, 17) == [5, 3, 7, 13, 11, 17]
    assert _core._gemm_sizes(big, big, big, big, big, big) == [big] * 6
    for at in range(6):
        sizes = [3, 5, 7, 11, 13, 17]
        sizes[at] = 2 ** 31
        with pytest.raises(OverflowError, match=r"2147483648.*32-bit limit"):
            _core._gemm_sizes(*sizes)


def test_feature_bin_sums_match_numpy_and_every_thread_count(rng):
    # Bins as numpy's ((x - lo) / width).astype(intp) capped at bins - 1; each cell's
    # weights added in row order: the same bits as a per-row loop, for any threads.
    n, d, r, bins = 500, 19, 3, 16
    X = rng.standard_normal((n, d))
    X[:, 4] = np.round(X[:, 4])                 # ties on bin edges
    X[:7, 5] = X[:, 5].max()                    # values at the top edge
    weights = rng.standard_normal((n, r))
    lo, hi = X.min(axis=0), X.max(axis=0)
    width = (hi - lo) / bins
    index = np.minimum(((X - lo) / width).astype(np.intp), bins - 1)
    counts_ref = np.zeros((d, bins))
    sums_ref = np.zeros((d, bins, r))
    for i in range(n):
        for j in range(d):
            counts_ref[j, index[i, j]] += 1.0
            sums_ref[j, index[i, j]] += weights[i]
    outs = [_native.feature_bin_sums(X, lo, width, bins, weights, n_threads=t) for t in (1, 2, 3)]
    for counts, sums in outs:
        assert counts.shape == (d, bins) and sums.shape == (d, bins, r)
        assert np.array_equal(counts, counts_ref) and np.array_equal(sums, sums_ref)


@pytest.mark.parametrize("change, message", [
    (lambda a: {**a, "width": -a["width"]}, "width must be positive"),
    (lambda a: {**a, "lo": a["lo"][:-1]}, "one entry per column"),
    (lambda a: {**a, "weights": a["weights"][:-1]}, "one row per row"),
    (lambda a: {**a, "bins": 0}, "bins must be"),
])
def test_feature_bin_sums_refuse_bad_arguments(change, message, rng):
    X = rng.standard_normal((20, 3))
    args = {"X": X, "lo": X.min(axis=0), "width": np.full(3, 0.5), "bins": 8,
            "weights": np.ones((20, 2))}
    with pytest.raises(ValueError, match=message):
        _native.feature_bin_sums(**change(args))
