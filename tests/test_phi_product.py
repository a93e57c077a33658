"""Phi(W) V in one core call, and a factored Gamma's table made once per fit."""
import numpy as np
import pytest

import ikdr
from ikdr import _native
from ikdr.kernels import Gaussian, Polynomial, RelativeGaussian
from ikdr.kernels.base import ConicKernel


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    X = rng.standard_normal((300, 12)) + y[:, None] * 0.3
    gamma, _ = ikdr.supervised_gamma(y)
    W = np.linalg.qr(rng.standard_normal((12, 3)))[0]
    return X, gamma, W


KERNELS = [Gaussian(2.0), Polynomial(2, 1.0), ConicKernel([(0.5, Gaussian(2.0)), (1.0, Polynomial(1, 0.0))])]


@pytest.mark.parametrize("kernel", KERNELS, ids=["gaussian", "polynomial", "conic"])
@pytest.mark.parametrize("thin", [False, True], ids=["dense", "thin"])
def test_one_call_equals_the_composed_products(data, kernel, thin):
    """X^T G(XW) (XV) from the core equals the products taken one by one."""
    X, gamma, W = data
    kernel = kernel.fit(X)
    V = np.linalg.qr(np.random.default_rng(1).standard_normal((12, 5)))[0] if thin else None
    out, objective = kernel.phi_product(X, W, gamma, V)
    GR, reference_objective = kernel.gradient_product(X @ W, X if V is None else X @ V, gamma)
    reference = X.T @ GR
    if V is None:
        reference = 0.5 * (reference + reference.T)
    np.testing.assert_allclose(out, reference, rtol=1e-11, atol=1e-11 * np.abs(reference).max())
    assert objective == pytest.approx(reference_objective, rel=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [5, 6, 12], ids=["thin-pass", "half-of-d", "all-of-d"])
@pytest.mark.parametrize("dense_gamma", [False, True], ids=["factored", "dense-gamma"])
def test_phi_v_by_either_route_equals_the_formula(columns, dense_gamma, dtype):
    """Phi(W) V for V of fewer than d/2 columns (the thin pass) and of at least
    d/2 (the dense Phi by block pairs, then times V; a dense Gamma has no block
    pairs and takes the thin pass) equals the dense NumPy formula, with the same
    bits for any number of threads."""
    n, d, sigma = 400, 12, 2.0
    rng = np.random.default_rng(columns)
    y = rng.integers(0, 4, n)
    X = rng.standard_normal((n, d)) + 0.3 * y[:, None]
    gamma, _ = ikdr.supervised_gamma(y)
    G = (gamma.factor * (1.0 if gamma.scale is None else gamma.scale)) @ gamma.factor.T
    if dense_gamma:
        gamma = ikdr.gamma.Gamma(dense=G)
    W = np.linalg.qr(rng.standard_normal((d, 3)))[0]
    V = rng.standard_normal((d, columns))
    Z = X @ W
    K = np.exp(-((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / (2 * sigma ** 2))
    B = G * K / sigma ** 2
    reference = X.T @ (B - np.diag(B.sum(axis=1))) @ (X @ V)
    kernel = Gaussian(sigma).fit(X)
    outs = [kernel.phi_product(X.astype(dtype), W, gamma, V, n_threads=t) for t in (1, 2, 3)]
    assert all(np.array_equal(outs[0][0], other[0]) for other in outs[1:])
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(outs[0][0], reference, rtol=tol, atol=tol * np.abs(reference).max())
    assert outs[0][1] == pytest.approx(float((G * K).sum()), rel=tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, d", [(1000, 32), (777, 17), (300, 60)])
def test_dense_phi_by_block_pairs(n, d, dtype):
    """The dense Phi of a symmetric pass, formed block pair by block pair
    (R_I^T Psi_IJ R_J and its transpose, plus the Laplacian's diagonal), equals
    the dense NumPy formula, with the same bits for any number of threads
    (7 and 8 row blocks, the last one partial; 300 x 60 has blocks of 64 rows,
    no more than its columns, and takes the rows' path)."""
    rng = np.random.default_rng(n)
    y = rng.integers(0, 5, n)
    X = rng.standard_normal((n, d)) + 0.5 * y[:, None]
    gamma, _ = ikdr.supervised_gamma(y)
    W = np.linalg.qr(rng.standard_normal((d, 6)))[0]
    sigma = 2.5
    Z = X @ W
    K = np.exp(-((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / (2 * sigma ** 2))
    scale = 1.0 if gamma.scale is None else gamma.scale
    B = (gamma.factor * scale) @ gamma.factor.T * K / sigma ** 2
    reference = X.T @ (B - np.diag(B.sum(axis=1))) @ X
    kernel = Gaussian(sigma).fit(X)
    outs = [kernel.phi_product(X.astype(dtype), W, gamma, n_threads=t)[0] for t in (1, 2, 3)]
    assert all(np.array_equal(outs[0], other) for other in outs[1:])
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(outs[0], reference, rtol=tol, atol=tol * np.abs(reference).max())


def test_relative_gaussian_reads_the_projected_points(data):
    X, gamma, W = data
    kernel = RelativeGaussian(n_neighbors=7).fit(X)
    out, _ = kernel.phi_product(X, W, gamma)
    GR, _ = kernel.gradient_product(X @ W, X, gamma)
    np.testing.assert_allclose(out, 0.5 * (X.T @ GR + GR.T @ X), rtol=1e-10,
                               atol=1e-10 * np.abs(out).max())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_table_made_once_gives_the_same_bits(data, threads):
    """A pass with the Gamma's table (made once) and one that prepares its own
    Gamma agree bitwise, for any thread count."""
    X, gamma, W = data
    kernel = Gaussian(2.0)
    Z = np.ascontiguousarray(X @ W)
    terms = kernel._terms(Z)
    factor, scale, _ = gamma.arrays(np.float64)
    table = _native.gamma_table(factor, scale)
    assert table.n == X.shape[0] and table.classes == 4
    with_table = _native.fused_product(Z, terms, gamma=_native.GammaArrays(factor, scale, table=table),
                                       gradient=True, rhs=X, n_threads=threads)
    without = _native.fused_product(Z, terms, gamma=_native.GammaArrays(factor, scale),
                                    gradient=True, rhs=X, n_threads=1)
    assert np.array_equal(with_table.product, without.product)
    assert np.array_equal(with_table.value_sums, without.value_sums)


def test_table_of_another_gamma_is_refused(data):
    X, gamma, W = data
    Z = np.ascontiguousarray(X @ W)
    terms = Gaussian(2.0)._terms(Z)
    factor, scale, _ = gamma.arrays(np.float64)
    other = _native.gamma_table(factor[:100], scale)
    with pytest.raises(ValueError, match="another Gamma"):
        _native.fused_product(Z, terms, gamma=_native.GammaArrays(factor, scale, table=other),
                              gradient=True, rhs=X)
    with pytest.raises(ValueError, match="another Gamma"):      # another rank
        _native.phi_product(X, W, None, terms,
                            gamma=_native.GammaArrays(factor[:, :2], None,
                                                      table=_native.gamma_table(factor, scale)))


def test_the_table_is_made_once_per_gamma_and_dtype(data, monkeypatch):
    X, gamma, W = data
    gamma = ikdr.supervised_gamma(np.repeat(np.arange(4), 75))[0]
    made = []
    original = _native.gamma_table
    monkeypatch.setattr(_native, "gamma_table", lambda *a, **k: made.append(a) or original(*a, **k))
    kernel = Gaussian(2.0)
    for _ in range(3):
        kernel.phi_product(X, W, gamma)
        kernel.phi_product(X.astype(np.float32), W, gamma)
    assert len(made) == 2


def test_phi_product_checks_its_shapes(data):
    X, gamma, W = data
    terms = Gaussian(2.0)._terms(None)
    with pytest.raises(ValueError, match="W must have one row per column of X"):
        _native.phi_product(X, W[:5], None, terms)
    with pytest.raises(ValueError, match="V must have one row per column of X"):
        _native.phi_product(X, W, W[:5], terms)


def test_a_gamma_used_by_passes_still_pickles(data):
    """The table kept with a Gamma is the core's; a pickled Gamma carries its
    factors only and makes the table again where it is used."""
    import copy
    import pickle

    X, gamma, W = data
    gamma = ikdr.supervised_gamma(np.repeat(np.arange(4), 75))[0]
    before, _ = Gaussian(2.0).phi_product(X, W, gamma)
    again = pickle.loads(pickle.dumps(gamma))
    after, _ = Gaussian(2.0).phi_product(X, W, again)
    assert np.array_equal(before, after)
    assert copy.deepcopy(gamma).n == gamma.n
