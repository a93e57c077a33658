"""Landmark (Nystrom) and random-feature ISM."""
import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr import Gamma, ism, principal_angle, supervised_gamma
from ikdr.reduction.importances import feature_importances
from ikdr.kernels.bandwidth import separation, separation_sigma
from ikdr.passes.exact import ExactClustering
from ikdr.passes.factors import select_landmarks
from ikdr.passes.landmark_clustering import ClusteringLandmarks, nystrom_spectral_embedding
from ikdr.passes.landmarks import Approximation
from ikdr.passes.rows import check_rows
from ikdr.passes import resolve
from ikdr.reduction.approximate import LandmarkOptions, approximate_ism
from ikdr.solver.options import ISMOptions
from ikdr.passes.exact import ExactProblem
from ikdr.spectral import spectral_embedding
from ikdr.kernels import Gaussian, Linear, Multiquadric, Polynomial, Squared


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _all_landmarks(X, gamma, kernel, q):
    every_row = Approximation("nystrom", X.shape[0], index=np.arange(X.shape[0]))
    return resolve(X, every_row).problem(X, gamma, kernel, None)


KERNELS = [Gaussian(3.0), Multiquadric(1.0), Polynomial(3, 1.0),
           0.5 * Gaussian(2.0) + Squared() + Linear()]


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
@pytest.mark.parametrize("paradigm", ["classes", "signed"])
def test_factored_pass_equals_dense_formula(wine, kernel, paradigm, rng):
    """Every landmark a landmark: the factored objective, dense Phi, Phi V and
    Phi_0 equal the exact fused passes (supervised class form and a general
    signed factor, as KDAC's)."""
    X, y = wine
    gamma = supervised_gamma(y)[0] if paradigm == "classes" else \
        Gamma(rng.standard_normal((X.shape[0], 3)), [1.0, -0.5, 2.0])
    W = np.linalg.qr(rng.standard_normal((13, 3)))[0]
    V = rng.standard_normal((13, 2))
    exact = ExactProblem(X, gamma, kernel, None)
    approx = _all_landmarks(X, gamma, kernel, 3)
    assert approx.structure.classes == (paradigm == "classes")
    rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()  # noqa: E731
    assert rel(np.float64(approx.objective(W)), np.float64(exact.objective(W))) < 1e-6
    assert rel(approx.phi(W)[0], exact.phi(W)[0]) < 1e-6
    assert rel(approx.phi_product(W, V)[0], exact.phi_product(W, V)[0]) < 1e-6
    assert rel(approx.phi0(), exact.phi0()) < 1e-12


def test_class_structure_formula_matches_dense_gamma(rng):
    """The class-indicator identity Gamma_ij = [c_i = c_j] - a_i - a_j + s."""
    y = rng.integers(0, 4, 60)
    gamma, _ = supervised_gamma(y)
    p = np.bincount(y) / 60.0
    a = p[y]
    dense = (y[:, None] == y[None, :]) - a[:, None] - a[None, :] + p @ p
    np.testing.assert_allclose(gamma.toarray(), dense, atol=1e-12)


@pytest.mark.parametrize("kernel", ["gaussian", "polynomial"])
def test_every_point_a_landmark_equals_exact(wine, kernel):
    X, y = wine
    g, _ = supervised_gamma(y)
    exact = ism(X, g, kernel, 3, criterion="angle", tol=1e-9, certify=False)
    approx, info = approximate_ism(X, g, kernel,
                                   ISMOptions(n_components=3, criterion="angle", tol=1e-9),
                                   LandmarkOptions(Approximation("nystrom", X.shape[0])))
    assert info["n_landmarks"] == X.shape[0]
    np.testing.assert_array_equal(info["index"], np.arange(X.shape[0]))
    # m = n is the exact kernel: the exact passes, not the landmark form
    # (whose pseudo-inverse of the n x n kernel would only add rounding)
    assert np.sin(principal_angle(exact.components, approx.components)) < 1e-12
    assert approx.objective == pytest.approx(exact.objective, rel=1e-14)


def test_polish_equals_exact_in_fewer_passes(wine):
    X, y = wine
    g, _ = supervised_gamma(y)
    kw = dict(criterion="angle", tol=1e-8, certify=False)
    exact = ism(X, g, "gaussian", 3, **kw)
    polished, info = approximate_ism(X, g, "gaussian",
                                     ISMOptions(n_components=3, random_state=0, **kw),
                                     LandmarkOptions(Approximation("nystrom", 40, random_state=0),
                                                     polish=True))
    assert np.sin(principal_angle(exact.components, polished.components)) < 1e-6
    assert abs(polished.objective - exact.objective) <= 1e-8 * abs(exact.objective)
    assert polished.convergence.phi_evaluations < exact.convergence.phi_evaluations


@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_estimator_polish_reaches_the_exact_maximum(scale):
    """Breast cancer, where the plain steps cycle and the trust region finishes: the
    polish must stop by the exact rule given (not the landmark fits' looser gtol)
    and must not leave the landmark maximum's basin by an unguarded first step."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    common = dict(n_components=2, sigma=scale * ikdr.median_sigma(X, random_state=0),
                  criterion="gradient", gtol=1e-9, certify=False, random_state=0)
    cold = ikdr.ISM(**common).fit(X, y)
    polished = ikdr.ISM(approximation="nystrom", n_landmarks=300, polish=True, **common).fit(X, y)
    assert polished.convergence_.relative_gradient_norm <= 1e-9
    assert np.sin(principal_angle(cold.components_, polished.components_)) < 1e-6
    f_cold, f_pol = cold.convergence_.objective, polished.convergence_.objective
    assert abs(f_pol - f_cold) <= 1e-8 * abs(f_cold)
    # (Not compared: the exact evaluations either fit takes. Where the plain steps
    # cycle, the count to gtol = 1e-9 follows the last bits: the polish took 5 to
    # 12 and the cold fit 8 or 11 under other OpenBLAS kernels and SIMD levels.)


def test_coarse_approximation_warns_instead_of_answering_silently(wine):
    """Random features at a tenth of the median bandwidth cannot locate the maximum
    (another subspace, docs/nystrom.md); the fit says so. A good approximation
    stays silent."""
    X, y = wine
    sigma = ikdr.median_sigma(X)
    with pytest.warns(ConvergenceWarning, match="found no maximum"):
        ikdr.ISM(n_components=3, sigma=0.1 * sigma, approximation="rff", n_landmarks=300,
                 random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ikdr.ISM(n_components=3, sigma=sigma, approximation="nystrom", n_landmarks=100,
                 random_state=0).fit(X, y)


#: q = 3, the papers' eigenvalue rule
PAPERS_RULE = ISMOptions(n_components=3, criterion="eigenvalues", random_state=0)
#: Nystrom landmarks by the "auto" rule, seeded
SEEDED = LandmarkOptions(Approximation("nystrom", "auto", random_state=0))


def test_auto_meets_tolerance_or_warns(wine):
    X, y = wine
    g, _ = supervised_gamma(y)
    # Met: the returned subspace moved by less than the tolerance at the last doubling.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res, info = approximate_ism(X, g, Gaussian(5.0), PAPERS_RULE,
                                    replace(SEEDED, auto_max=178, weigh_cost=False))
    assert info["auto"][-1][1] < 1e-2 or info["n_landmarks"] == X.shape[0]
    # Flat spectrum (tiny sigma: K close to I, no low-rank structure) and a small
    # budget: the rule cannot meet its tolerance and must say so.
    rng = np.random.default_rng(0)
    Xf = rng.standard_normal((400, 6))
    gf, _ = supervised_gamma(rng.integers(0, 3, 400))
    with pytest.warns(ConvergenceWarning, match="budget of 128"):
        res, info = approximate_ism(Xf, gf, Gaussian(0.3), replace(PAPERS_RULE, n_components=2),
                                    replace(SEEDED, auto_max=128, auto_tol=1e-6,
                                            weigh_cost=False))
    assert info["n_landmarks"] == 128


def test_memmap_gives_in_memory_answer(wine, tmp_path):
    X, y = wine
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    ro = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="r", shape=X.shape)
    kw = dict(n_components=3, approximation="nystrom", n_landmarks=60, random_state=0)
    a = ikdr.ISM(**kw).fit(X, y)
    b = ikdr.ISM(**kw).fit(ro, y)
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-12)
    assert b.n_features_in_ == 13


def test_nan_in_memmap_named_before_work(tmp_path):
    X = np.random.default_rng(0).standard_normal((5000, 4)).astype(np.float32)
    X[4321, 2] = np.nan
    mm = np.memmap(tmp_path / "x.dat", dtype=np.float32, mode="w+", shape=X.shape)
    mm[:] = X
    with pytest.raises(ValueError, match="NaN or infinite values.*row 4321"):
        ikdr.ISM(approximation="nystrom").fit(mm, np.arange(5000) % 2)
    with pytest.raises(ValueError, match="row 4321"):
        check_rows(mm, block_rows=1000)


def test_validated_rows_skip_the_check_only_for_that_array_and_context(tmp_path):
    """An estimator's entry check is not repeated by the fits it makes on X, and
    nowhere else: another array, or the same one after the context, is read again."""
    from ikdr.passes import validated_rows

    mm = np.memmap(tmp_path / "x.dat", dtype=np.float32, mode="w+", shape=(3000, 4))
    mm[:] = 1.0
    mm[2500, 1] = np.inf
    with validated_rows(mm):
        assert check_rows(mm) is mm          # trusted: not read
        with pytest.raises(ValueError, match="row 500"):
            check_rows(mm[2000:])            # another array: read
    with pytest.raises(ValueError, match="row 2500"):
        check_rows(mm)                       # after the context: read again


def test_landmarks_from_a_pool_project_only_its_rows():
    """k-means++ landmarks on a large n read Z = XW on a uniform pool: the rows a
    lazy projection gives are those of the full projection, and so are the
    landmarks chosen."""
    from ikdr.passes.factors import select_landmarks
    from ikdr.passes.rows import LazyProjection, MemoryRows

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 6))
    W = np.linalg.qr(rng.standard_normal((6, 2)))[0]
    rows = MemoryRows(X)
    lazy = LazyProjection(rows, W)
    index = np.array([5, 17, 2999])
    np.testing.assert_allclose(lazy[index], (X @ W)[index], rtol=1e-14, atol=1e-14)
    assert lazy.shape == (3000, 2)
    np.testing.assert_allclose(np.asarray(lazy), X @ W, rtol=1e-13, atol=1e-13)
    # m = 20: n > 20 m, so k-means++ seeds on a pool
    a = select_landmarks(lazy, 20, method="kmeans++", random_state=0)
    b = select_landmarks(rows.project(W, np.float64), 20, method="kmeans++", random_state=0)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad, match", [
    (dict(n_landmarks=0), "zero or negative"),
    (dict(n_landmarks=-5), "zero or negative"),
    (dict(n_landmarks=500), "larger than the number of samples"),
    (dict(n_landmarks="many"), "auto"),
    (dict(kernel="linear"), "nothing to approximate"),
    (dict(kernel="squared"), "nothing to approximate"),
    (dict(kernel="relative_gaussian"), "per-point bandwidths"),
    (dict(approximation="rff", kernel="polynomial"), "Gaussian kernel only"),
    (dict(approximation="exact"), "approximation must be"),
])
def test_bad_input_named(wine, bad, match):
    X, y = wine
    params = dict(approximation="nystrom") | bad
    with pytest.raises(ValueError, match=match):
        ikdr.ISM(**params).fit(X, y)


def test_clustering_bad_input(wine):
    X, _ = wine
    with pytest.raises(ValueError, match="zero or negative"):
        ikdr.ISMClustering(n_clusters=3, approximation="nystrom", n_landmarks=0).fit(X)
    with pytest.raises(ValueError, match="supervised ISM only"):
        ikdr.ISMClustering(n_clusters=3, approximation="rff").fit(X)


def test_float32_pass_agrees(wine, rng):
    X, y = wine
    g, _ = supervised_gamma(y)
    W = np.linalg.qr(rng.standard_normal((13, 3)))[0]
    p64 = _all_landmarks(X, g, Gaussian(4.0), 3)
    index = np.arange(0, 178, 3)
    a = Approximation("nystrom", 60, dtype=np.float32, random_state=0, index=index)
    b = Approximation("nystrom", 60, random_state=0, index=index)
    p32 = resolve(X, a).problem(X.astype(np.float32), g, Gaussian(4.0), None)
    p64 = resolve(X, b).problem(X, g, Gaussian(4.0), None)
    phi32, phi64 = p32.phi(W)[0], p64.phi(W)[0]
    assert phi32.dtype == np.float64
    np.testing.assert_allclose(phi32, phi64, rtol=0, atol=1e-3 * np.abs(phi64).max())


@pytest.mark.parametrize("method", ["uniform", "kmeans++", "leverage"])
def test_landmark_methods(method, rng):
    Z = rng.standard_normal((300, 3))
    idx = select_landmarks(Z, 40, method=method, kernel=Gaussian(1.0), random_state=0)
    assert idx.shape == (40,) and np.unique(idx).shape == (40,)
    assert np.all(np.diff(idx) > 0) and idx.max() < 300


def test_kmeanspp_covers_clusters():
    Z, labels = make_blobs(600, centers=6, cluster_std=0.05, random_state=0)
    idx = select_landmarks(Z, 6, method="kmeans++", random_state=0)
    assert len(set(labels[idx])) >= 5


def test_nystrom_embedding_with_all_landmarks_equals_dense(wine):
    X, _ = wine
    k = Gaussian(4.0)
    U, vals, deg = spectral_embedding(X, k, 3, method="dense")
    Un, valsn, degn, _ = nystrom_spectral_embedding(X, k, 3, X.shape[0])
    np.testing.assert_allclose(degn, deg, rtol=1e-6)
    np.testing.assert_allclose(valsn, vals, rtol=1e-6, atol=1e-8)
    assert np.linalg.norm(U @ U.T - Un @ Un.T) < 1e-5


def test_landmark_quadratic_trace(wine, rng):
    X, _ = wine
    F = rng.standard_normal((X.shape[0], 2))
    lm = ClusteringLandmarks(X.shape[0], random_state=0)
    exact = ExactClustering().quadratic_trace(X[:, :4], Gaussian(2.0), F)
    approx = lm.quadratic_trace(X[:, :4], Gaussian(2.0), F)
    assert abs(approx - exact) < 1e-6 * abs(exact)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_clustering_estimators_with_landmarks(wine):
    X, y = wine
    exact = ikdr.ISMClustering(n_clusters=3, n_components=3, random_state=0, max_iter=5).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        approx = ikdr.ISMClustering(n_clusters=3, n_components=3, random_state=0, max_iter=5,
                                    approximation="nystrom", n_landmarks=100).fit(X)
    assert approx.n_landmarks_ == 100
    assert abs(ikdr.metrics.nmi(y, approx.labels_) - ikdr.metrics.nmi(y, exact.labels_)) < 0.05
    assert approx.feature_importances_.shape == (13,)


def test_rff_supervised(wine):
    X, y = wine
    exact = ikdr.ISM(n_components=3).fit(X, y)
    rff = ikdr.ISM(n_components=3, approximation="rff", n_landmarks=2000, random_state=0).fit(X, y)
    assert rff.n_landmarks_ == 2000
    assert np.sin(principal_angle(exact.components_, rff.components_)) < 0.1


def test_feature_importances(wine):
    X, y = wine
    model = ikdr.ISM(n_components=3).fit(X, y)
    imp = model.feature_importances_
    assert imp.shape == (13,) and np.all(imp >= 0)
    np.testing.assert_allclose(imp.sum(), 1.0)
    # the loadings' form that the clustering estimators report: |lambda|-weighted
    W, lam = model.components_, np.abs(model.eigenvalues_)
    np.testing.assert_allclose(feature_importances(W, model.eigenvalues_),
                               (W ** 2) @ lam / lam.sum())
    # one direction: the squared loadings of that direction
    e = np.zeros((4, 1))
    e[2] = 1.0
    np.testing.assert_allclose(feature_importances(e), [0, 0, 1, 0])


def test_separation_sigma(wine):
    X, y = wine
    s = separation_sigma(X, y)
    Y = np.eye(3)[y]
    best = separation(X, Y, s)
    for other in (0.5 * s, 2.0 * s, ikdr.median_sigma(X)):
        assert best >= separation(X, Y, other) - 1e-9
    # direct check of J on a tiny case by the dense formula
    Xs, Ys = X[::6][:30], Y[::6][:30]
    K = Gaussian(2.0).matrix(Xs)
    same = Ys @ Ys.T
    off = ~np.eye(30, dtype=bool)
    J = K[(same == 1) & off].mean() - K[same == 0].mean()
    assert abs(separation(Xs, Ys, 2.0) - J) < 1e-12
    # the rule is measured on the features the projection uses
    model = ikdr.ISM(n_components=3, sigma="separation", random_state=0).fit(X, y)
    assert abs(model.sigma_ - separation_sigma(X[:, model.support_], y)) < 1e-12
    with pytest.raises(ValueError, match="class labels"):
        ikdr.ISM(sigma="separation").fit(X, X[:, 0])


def test_auto_picks_exact_passes_where_they_are_cheaper(wine, capsys):
    """Wine (178 samples): an exact fit costs less than any landmark sequence, so
    "auto" runs the exact passes, says so, and returns the exact answer."""
    X, y = wine
    exact = ikdr.ISM(n_components=3, random_state=0, approximation=None).fit(X, y)
    auto = ikdr.ISM(n_components=3, approximation="nystrom", random_state=0,
                    verbose=1).fit(X, y)
    assert auto.approximation_ is None and auto.n_landmarks_ == X.shape[0]
    assert auto.approximation_reason_.startswith("exact passes")
    assert "[ISM] passes: exact passes" in capsys.readouterr().out
    np.testing.assert_allclose(auto.components_, exact.components_, atol=1e-10)
    assert exact.approximation_ is None and exact.approximation_reason_ == \
        "approximation=None: exact passes"
    given = ikdr.ISM(n_components=3, approximation="nystrom", n_landmarks=50,
                     random_state=0).fit(X, y)
    assert given.approximation_ == "nystrom" and "as given" in given.approximation_reason_


def test_default_approximation_is_exact_where_cheap_landmarks_where_not(wine):
    """approximation="auto" (the default): wine's exact fit is cheap, so the default
    fit is the exact one, bit for bit, and says why; at 12,000 rows an exact fit
    would cost more than EXACT_FIT_FLOPS and the default runs landmarks, near the
    exact answer; a linear kernel has nothing to approximate and stays exact."""
    from ikdr.kernels import make_kernel
    from ikdr.reduction.cost import EXACT_FIT_FLOPS, LandmarkBudget, auto_approximation

    X, y = wine
    default = ikdr.ISM(n_components=3, random_state=0).fit(X, y)
    exact = ikdr.ISM(n_components=3, random_state=0, approximation=None).fit(X, y)
    assert ikdr.ISM().approximation == "auto"
    np.testing.assert_array_equal(default.components_, exact.components_)
    assert default.approximation_ is None
    assert default.approximation_reason_.startswith("approximation='auto': exact passes")
    Xb, yb = make_blobs(12000, 10, centers=3, cluster_std=3.0, random_state=0)
    assert LandmarkBudget(12000, 10, 2, 3).exact_fit(12) > EXACT_FIT_FLOPS
    big = ikdr.ISM(random_state=0).fit(Xb, yb)
    assert big.approximation_ == "nystrom" and big.n_landmarks_ < 12000
    assert big.approximation_reason_.startswith("approximation='auto': landmarks")
    index = np.random.default_rng(0).choice(12000, 3000, replace=False)
    small = ikdr.ISM(random_state=0, approximation=None).fit(Xb[index], yb[index])
    assert big.support_.size == small.support_.size
    assert abs(big.hsic_ - small.hsic_) < 0.05 * small.hsic_
    assert auto_approximation(12000, 10, make_kernel("linear")).approximation is None
    assert auto_approximation(12000, 10, make_kernel("gaussian")).approximation == "nystrom"


def test_auto_picks_landmarks_where_they_pay():
    X, y = make_blobs(6000, 16, centers=4, random_state=0)
    model = ikdr.ISM(n_components=3, approximation="nystrom", random_state=0).fit(X, y)
    assert model.approximation_ == "nystrom" and model.n_landmarks_ < 6000
    assert model.approximation_reason_.startswith("nystrom:")


def test_landmark_budget_flop_counts():
    from ikdr.passes.landmarks import landmark_step_costs
    from ikdr.reduction.cost import LandmarkBudget
    assert not LandmarkBudget(300, 10, 2, 3).start(64)[0]
    assert LandmarkBudget(10 ** 6, 784, 5, 4).start(64)[0]
    budget = LandmarkBudget(5000, 784, 4, 4)
    # landmarks keep growing while a fit costs less than an exact one, not beyond
    assert budget.grow(128, 10)[0]
    grow, why = budget.grow(4096, 10)
    assert not grow and "would cost more than the exact fit" in why
    # a Phi V pass needs neither the degree term nor the d x d products
    dense, thin = landmark_step_costs(10_000, 784, 4, 128, 8, groups=4)
    assert thin < dense / 10


def test_auto_finishes_with_exact_passes_when_growth_stops(wine, monkeypatch):
    """Where the next doubling would cost more than an exact fit, the exact passes
    continue from the last landmark fit: the exact maximum, no warning."""
    from ikdr.reduction import cost
    X, y = wine
    g, _ = supervised_gamma(y)
    monkeypatch.setattr(cost.LandmarkBudget, "start", lambda self, m: (True, "landmarks"))
    monkeypatch.setattr(cost.LandmarkBudget, "grow", lambda self, m, passes: (False, "stop"))
    kw = dict(criterion="gradient", gtol=1e-9, certify=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res, info = approximate_ism(X, g, Gaussian(5.0),
                                    ISMOptions(n_components=3, random_state=0, **kw), SEEDED)
    exact = ism(X, g, Gaussian(5.0), 3, **kw)
    assert info["approximation"] is None and info["choice"] == "stop"
    assert info["n_landmarks"] == X.shape[0] and info["auto"] == [(64, info["auto"][0][1])]
    assert np.sin(principal_angle(exact.components, res.components)) < 1e-6
