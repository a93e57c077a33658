"""The ISM kernel family: Phi is half the gradient, constants kept."""
import warnings

import numpy as np
import pytest

import ikdr
from ikdr.gamma import Gamma
from ikdr.kernels import (ConicKernel, Gaussian, Linear, Multiquadric, Polynomial,
                          RelativeGaussian, Squared, make_kernel)

KERNELS = {
    "linear": Linear(),
    "polynomial": Polynomial(degree=3, c=1.0),
    "gaussian": Gaussian(sigma=1.7),
    "squared": Squared(),
    "multiquadric": Multiquadric(c=1.3),
    "relative_gaussian": RelativeGaussian(n_neighbors=5),
    "gaussian+polynomial": 0.5 * Gaussian(sigma=1.7) + 2 * Polynomial(degree=2, c=0.5),
    "conic of four": (Gaussian(sigma=2.0) + 0.3 * Multiquadric(c=0.8) + 0.1 * Squared()
                      + 0.2 * Linear()),
}


def objective_dense(kernel, X, W, G):
    """Tr(Gamma K_XW) with numpy only (independent of the C++ core)."""
    Z = X @ W
    dot = Z @ Z.T
    dist = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    K = np.zeros_like(dot)
    for w, k in kernel.members():
        if isinstance(k, Linear):
            K += w * dot
        elif isinstance(k, Polynomial):
            K += w * (dot + k.c) ** k.degree
        elif isinstance(k, RelativeGaussian):
            K += w * np.exp(-dist / (2 * np.outer(k.scales_, k.scales_)))
        elif isinstance(k, Gaussian):
            K += w * np.exp(-dist / (2 * k.sigma**2))
        elif isinstance(k, Squared):
            K += -w * dist
        elif isinstance(k, Multiquadric):
            K += -w * np.sqrt(dist + k.c**2)
    return np.sum((G @ G.T) * K)


def fd_gradient(f, W, h=1e-5):
    g = np.zeros_like(W)
    for idx in np.ndindex(*W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        # fourth-order central difference
        g[idx] = (-f(W + 2 * E) + 8 * f(W + E) - 8 * f(W - E) + f(W - 2 * E)) / (12 * h)
    return g


@pytest.mark.parametrize("name", list(KERNELS))
def test_phi_is_half_the_gradient(name, rng):
    n, d, q = 40, 5, 2
    X = rng.standard_normal((n, d))
    G = rng.standard_normal((n, 2))
    gamma = Gamma(G)
    kernel = KERNELS[name].fit(X)
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    grad = fd_gradient(lambda V: objective_dense(kernel, X, V, G), W)
    phi_w = kernel.phi(X, W, gamma) @ W
    assert np.linalg.norm(phi_w - 0.5 * grad) / np.linalg.norm(grad) < 1e-6


@pytest.mark.parametrize("name", list(KERNELS))
def test_phi0_is_phi_at_zero(name, rng):
    n, d = 35, 4
    X = rng.standard_normal((n, d))
    gamma = Gamma(rng.standard_normal((n, 3)), np.array([1.0, -2.0, 0.5]))
    kernel = KERNELS[name].fit(X)
    phi_at_zero = kernel.phi(X, np.zeros((d, 2)), gamma)
    np.testing.assert_allclose(kernel.phi0(X, gamma), phi_at_zero, rtol=1e-10,
                               atol=1e-10 * np.abs(phi_at_zero).max())


@pytest.mark.parametrize("name", list(KERNELS))
def test_objective_matches_dense(name, rng):
    n, d = 50, 4
    X = rng.standard_normal((n, d))
    G = rng.standard_normal((n, 2))
    kernel = KERNELS[name].fit(X)
    W = np.linalg.qr(rng.standard_normal((d, 2)))[0]
    ref = objective_dense(kernel, X, W, G)
    assert abs(kernel.objective(X, W, Gamma(G)) - ref) <= 1e-10 * max(1.0, abs(ref))
    # dense Gamma gives the same
    assert abs(kernel.objective(X, W, Gamma(dense=G @ G.T)) - ref) <= 1e-10 * max(1.0, abs(ref))



def test_objective_takes_integer_rows_and_names_a_bad_w(rng):
    """XW is formed in float64 for integer X (W is not rounded to X's integers),
    and a W of the wrong shape or with NaN, or points with NaN, raise a
    ValueError naming them, never an objective of 0."""
    X = rng.integers(0, 5, (40, 4))
    G = rng.standard_normal((40, 2))
    kernel = Gaussian(sigma=1.5).fit(X.astype(float))
    W = np.linalg.qr(rng.standard_normal((4, 2)))[0]
    ref = objective_dense(kernel, X.astype(float), W, G)
    assert kernel.objective(X, W, Gamma(G)) == pytest.approx(ref, rel=1e-12)
    with pytest.raises(ValueError, match="one row per column of X"):
        kernel.objective(X, W[:3], Gamma(G))
    with pytest.raises(ValueError, match="NaN or infinite"):
        kernel.objective(X, np.full((4, 2), np.nan), Gamma(G))
    # the passes on given points: a NaN point is named, not read as distance 0
    Z = X @ W
    Z[3, 1] = np.nan
    with pytest.raises(ValueError, match="points Z contain NaN"):
        kernel.product(Z, None, Gamma(G))
    with pytest.raises(ValueError, match="points Z contain NaN"):
        kernel.gradient_product(Z, Z, Gamma(G))

def test_conic_phi_is_weighted_sum(rng):
    X = rng.standard_normal((30, 4))
    gamma = Gamma(rng.standard_normal((30, 2)))
    W = np.linalg.qr(rng.standard_normal((4, 2)))[0]
    g, p = Gaussian(sigma=1.1), Polynomial(degree=2)
    combo = 0.5 * g + 2 * p
    np.testing.assert_allclose(combo.phi(X, W, gamma),
                               0.5 * g.phi(X, W, gamma) + 2 * p.phi(X, W, gamma), rtol=1e-12,
                               atol=1e-12)
    assert isinstance(combo, ConicKernel) and len(combo.members()) == 2


def test_kernel_matrix_and_similarity_forms(rng):
    A = rng.standard_normal((10, 3))
    dist = ((A[:, None] - A[None]) ** 2).sum(-1)
    np.testing.assert_allclose(Squared().matrix(A), -dist, atol=1e-12)
    np.testing.assert_allclose(Multiquadric(c=2.0).matrix(A), -np.sqrt(dist + 4), rtol=1e-12)
    np.testing.assert_allclose(Gaussian(sigma=1.5).matrix(A), np.exp(-dist / 4.5), rtol=1e-12)
    K32 = Gaussian(sigma=1.5).matrix(A.astype(np.float32))
    assert K32.dtype == np.float32
    np.testing.assert_allclose(K32, np.exp(-dist / 4.5), rtol=1e-4, atol=1e-6)


def test_bad_kernel_parameters():
    with pytest.raises(ValueError, match="non-negative"):
        -1.0 * Gaussian()
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(sigma=0.0)
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(sigma=-2)
    with pytest.raises(ValueError, match="degree"):
        Polynomial(degree=0)
    with pytest.raises(TypeError, match="degree"):
        Polynomial(degree=2.5)
    with pytest.raises(ValueError, match="c must be positive"):
        Multiquadric(c=0)
    with pytest.raises(ValueError, match="unknown kernel"):
        make_kernel("laplacian")
    with pytest.raises(TypeError):
        make_kernel(3)
    with pytest.raises(ValueError, match="fitted"):
        Gaussian().phi(np.eye(3), np.eye(3)[:, :1], Gamma(np.ones((3, 1))))


def test_median_sigma(rng):
    X = rng.standard_normal((50, 3))
    from scipy.spatial.distance import pdist

    assert ikdr.median_sigma(X) == pytest.approx(np.median(pdist(X)))
    big = rng.standard_normal((5000, 2))
    s1 = ikdr.median_sigma(big, random_state=0)
    assert s1 == ikdr.median_sigma(big, random_state=0)
    assert abs(s1 - np.median(pdist(big[:3000]))) / s1 < 0.05
    with pytest.raises(ValueError, match="identical"):
        ikdr.median_sigma(np.ones((4, 2)))


@pytest.mark.parametrize("n", [2, 3, 50, 51])
def test_median_sigma_is_numpys_median_of_the_distances(rng, n):
    """The median is taken over squared distances in place; it equals NumPy's median
    of the distances exactly, for odd and even pair counts, dense, sparse and across
    two sets, and over the positive ones when most pairs coincide."""
    import scipy.sparse as sp
    from scipy.spatial.distance import cdist, pdist

    X = rng.standard_normal((n, 3))
    Z = rng.standard_normal((n + 1, 3))
    assert ikdr.median_sigma(X) == float(np.median(pdist(X)))
    assert ikdr.median_sigma(X, Z) == pytest.approx(float(np.median(cdist(X, Z))), rel=1e-12)
    S = sp.random(n, 3, density=0.6, random_state=1, format="csr")
    assert ikdr.median_sigma(S) == pytest.approx(float(np.median(pdist(S.toarray()))), rel=1e-12)
    tied = np.zeros((n + 10, 2))
    tied[:2] = [[1.0, 0.0], [0.0, 2.0]]
    distances = pdist(tied)
    assert np.median(distances) == 0.0
    assert ikdr.median_sigma(tied) == float(np.median(distances[distances > 0]))


def test_vanishing_gaussian_warns(rng):
    X = rng.standard_normal((300, 4))
    with pytest.warns(RuntimeWarning, match="tiny against the data"):
        Gaussian(sigma=1e-3).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Gaussian(sigma=1.0).fit(X)
        # neighboring rows far apart, one close pair elsewhere: the kernel does
        # not vanish, which only the all-pairs check can tell
        far = np.arange(300.0)[:, None] * np.array([[1000.0, 0.0]])
        far[-1] = far[0] + 0.5
        Gaussian(sigma=1.0).fit(far)
    with pytest.warns(RuntimeWarning, match="tiny against the data"):
        Gaussian(sigma=1.0).fit(far[:-1])


def test_relative_gaussian_scales(rng):
    X = rng.standard_normal((40, 2))
    k = RelativeGaussian(n_neighbors=3).fit(X)
    from sklearn.neighbors import NearestNeighbors

    d, _ = NearestNeighbors(n_neighbors=4).fit(X).kneighbors(X)
    np.testing.assert_allclose(k.scales_, d[:, 3])


@pytest.mark.parametrize("gradient", [False, True])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_block_pairs_add_up_to_the_whole_pass(gradient, dtype, tol):
    # A distributed pass maps pair_product over row-block pairs and sums over the
    # column blocks: that sum must be the single-set pass.
    from ikdr.gamma import Gamma
    from ikdr.kernels import Gaussian, Polynomial

    rng = np.random.default_rng(5)
    n = 230
    Z = rng.standard_normal((n, 3)).astype(dtype)
    R = rng.standard_normal((n, 4)).astype(dtype)
    gamma = Gamma(rng.standard_normal((n, 2)), np.array([1.0, -0.5]))
    kernel = 0.7 * Gaussian(1.1) + Polynomial(2)
    whole = kernel.gradient_product(Z, R, gamma) if gradient else kernel.product(Z, R, gamma)
    whole_sums = kernel.product(Z, None, gamma)[1]
    edges = [0, 70, 71, 160, n]
    for a, b in zip(edges[:-1], edges[1:]):
        acc, sums = 0.0, 0.0
        for c, e in zip(edges[:-1], edges[1:]):
            part, part_sums = kernel.pair_product(Z[a:b], Z[c:e], R[c:e], gamma.rows(slice(a, b)),
                                                  gamma.rows(slice(c, e)), gradient=gradient,
                                                  R_rows=R[a:b])
            acc = acc + part.astype(np.float64)
            sums = sums + part_sums
        scale = np.abs(whole[0]).max()
        np.testing.assert_allclose(acc, whole[0][a:b], rtol=tol, atol=tol * scale)
        np.testing.assert_allclose(sums, whole_sums[a:b], rtol=tol, atol=tol * np.abs(whole_sums).max())


def test_multiquadratic_is_a_deprecated_name_of_the_multiquadric_kernel():
    import ikdr.kernels as kernels
    import ikdr.kernels.family as family
    from ikdr.kernels.syntax import parse_kernel

    for module in (kernels, family):
        with pytest.warns(FutureWarning, match="Multiquadratic is deprecated.*Multiquadric"):
            assert module.Multiquadratic is Multiquadric
    with pytest.warns(FutureWarning, match="'multiquadratic' is deprecated.*'multiquadric'"):
        assert make_kernel("multiquadratic") == Multiquadric()
    with pytest.warns(FutureWarning, match="'multiquadratic' is deprecated"):
        assert parse_kernel("multiquadratic:c=2") == Multiquadric(c=2)
    with pytest.raises(AttributeError, match="ikdr.kernels.family.*Multiquadriq"):
        family.Multiquadriq


def test_estimators_pickled_with_the_old_kernel_class_name_load_alike():
    """A pickle written before the rename names ikdr.kernels.family.Multiquadratic."""
    import pickle

    X, y = np.random.default_rng(0).standard_normal((60, 4)), np.repeat([0, 1, 2], 20)
    model = ikdr.ISM(n_components=2, kernel=Multiquadric(c=1.5)).fit(X, y)
    old = pickle.dumps(model, protocol=2).replace(b"\nMultiquadric\n", b"\nMultiquadratic\n")
    assert b"\nMultiquadratic\n" in old
    with pytest.warns(FutureWarning, match="Multiquadratic is deprecated"):
        loaded = pickle.loads(old)
    assert type(loaded.kernel_) is Multiquadric
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_gaussian_by_name_and_as_object_as_the_kernels_guide_says():
    """docs/guide/kernels.md: by name the estimator's sigma rule ("auto" by default),
    as an object its own (Gaussian() = the median distance of X); sigma="median" by
    name is the object's fit, and KernelSVD's "gaussian" is its "rbf"."""
    import warnings

    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from ikdr.kernels import Gaussian

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    by_name = ikdr.ISM(random_state=0).fit(X, y)
    as_object = ikdr.ISM(kernel=Gaussian(), random_state=0).fit(X, y)
    median = ikdr.ISM(sigma="median", random_state=0).fit(X, y)
    assert as_object.sigma_ == median.sigma_ == ikdr.median_sigma(X)
    assert by_name.sigma_ < as_object.sigma_          # the projected start's, narrower
    np.testing.assert_array_equal(as_object.components_, median.components_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # convergence of the alternation
        a = ikdr.ISMClustering(n_clusters=3, kernel=Gaussian(), random_state=0).fit(X)
        b = ikdr.ISMClustering(n_clusters=3, sigma="median", random_state=0).fit(X)
        c = ikdr.ISMClustering(n_clusters=3, random_state=0).fit(X)
    assert a.kernel_ == b.kernel_ == Gaussian(ikdr.median_sigma(X))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert c.kernel_ != a.kernel_                      # local scaling by default
