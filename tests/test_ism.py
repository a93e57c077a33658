"""Supervised ISM: accuracy against the papers, scikit-learn conventions, bad input."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import ikdr
from ikdr.kernels import Gaussian, Polynomial

from .conftest import shared_csv

WINE_KERNELS = ["linear", "polynomial", "gaussian", "squared", "multiquadric", "G+P"]


def _kernel(name):
    return Gaussian() + Polynomial() if name == "G+P" else name


def cv_accuracy(X, y, kernel, q):
    """The paper's protocol: stratified 10-fold, W and SVC fit on training folds only."""
    cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=0)
    model = make_pipeline(StandardScaler(), ikdr.ISM(n_components=q, kernel=kernel), SVC())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cross_val_score(model, X, y, cv=cv).mean()


@pytest.mark.parametrize("kernel", WINE_KERNELS)
def test_wine_accuracy(kernel):
    X, y = load_wine(return_X_y=True)
    acc = cv_accuracy(X, y, _kernel(kernel), q=3)
    assert acc >= 0.95, f"{kernel}: {acc:.4f} (paper 95.0-98.3%)"


@pytest.mark.parametrize("kernel", ["gaussian", "polynomial"])
def test_cancer_accuracy(kernel):
    X = shared_csv("cancer_683x9.csv")
    y = shared_csv("cancer_683x9_label.csv").ravel()
    acc = cv_accuracy(X, y, kernel, q=2)
    assert acc >= 0.96, f"{kernel}: {acc:.4f} (paper 97.3%)"


@parametrize_with_checks([ikdr.ISM(n_components=1), ikdr.ISM(kernel="polynomial")])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_fitted_attributes(wine):
    X, y = wine
    # the papers' configuration: every feature, the median of X's distances
    model = ikdr.ISM(n_components=3, sigma="median", support="all").fit(X, y)
    W = model.components_
    assert W.shape == (13, 3)
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-12)
    assert model.eigenvalues_.shape == (3,) and np.all(np.diff(model.eigenvalues_) <= 0)
    assert model.sigma_ == pytest.approx(ikdr.median_sigma(X))
    assert model.n_iter_ >= 1 and model.converged_
    assert len(model.history_) == model.n_iter_ + 1
    assert list(model.classes_) == [0, 1, 2]
    np.testing.assert_allclose(model.transform(X), X @ W)
    # hsic_ is HSIC(XW, y) with the fitted kernel and K_Y = Y Y^T
    Z = X @ W
    K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / (2 * model.sigma_**2))
    Y = np.eye(3)[y]
    H = np.eye(len(y)) - 1.0 / len(y)
    ref = np.trace(K @ H @ Y @ Y.T @ H) / (len(y) - 1) ** 2
    assert model.hsic_ == pytest.approx(ref, rel=1e-10)
    assert ikdr.hsic(Z, y, kernel_x=Gaussian(model.sigma_)) == pytest.approx(ref, rel=1e-10)


def test_fit_stores_what_select_and_fit_returns(wine, monkeypatch):
    """ISM.fit validates, calls reduction.fitting.select_and_fit once with the resolved
    target and a frozen FitSettings, and stores its SupportFit's named fields."""
    import dataclasses

    from ikdr.reduction import fitting, ism

    X, y = wine
    calls = []
    original = fitting.select_and_fit

    def recorded(*args, **kwargs):
        calls.append((args, kwargs, original(*args, **kwargs)))
        return calls[-1][2]
    monkeypatch.setattr(ism, "select_and_fit", recorded)
    model = ikdr.ISM(n_components=3, random_state=0, support="moments").fit(X, y)
    (args, _, fit), = calls
    settings = args[-1]
    assert isinstance(settings, fitting.FitSettings) and settings.n_components == 3
    assert settings.support == "moments" and settings.approximation is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.support = "all"
    assert isinstance(fit, fitting.SupportFit)
    np.testing.assert_array_equal(model.support_, fit.support)
    np.testing.assert_array_equal(model.components_[fit.support], fit.result.components)
    assert model.approximation_reason_ == fit.passes.reason
    np.testing.assert_array_equal(model.feature_importances_,
                                  fit.importances["feature_importances_"])


def test_eigenvalue_stopping_rule(wine):
    X, y = wine
    model = ikdr.ISM(n_components=3, tol=1e-3, criterion="eigenvalues").fit(X, y)
    last = model.history_[-1]
    assert last["eigenvalue_change"] < 1e-3
    assert all(h["eigenvalue_change"] >= 1e-3 for h in model.history_[1:-1])


def test_ism_function_angle_criterion(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    res = ikdr.ism(X, gamma, "gaussian", 3, criterion="angle", tol=1e-6)
    assert res.converged and res.history[-1]["angle"] < 1e-6
    # Fixed point: W spans the top eigenvectors of Phi(W).
    phi = res.kernel.phi(X, res.components, gamma)
    vals, vecs = np.linalg.eigh(phi)
    assert ikdr.principal_angle(vecs[:, -3:], res.components) < 1e-5


def test_linear_kernel_is_one_eigendecomposition(wine):
    X, y = wine
    model = ikdr.ISM(n_components=2, kernel="linear").fit(X, y)
    assert model.n_iter_ == 0
    gamma, _ = ikdr.supervised_gamma(y)
    vals, vecs = np.linalg.eigh(gamma.quadratic(X))
    assert ikdr.principal_angle(vecs[:, -2:], model.components_) < 1e-8


def test_n_components_by_eigengap(wine):
    X, y = wine
    model = ikdr.ISM().fit(X, y)
    assert 2 <= model.components_.shape[1] <= 13


def test_continuous_target():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.01 * rng.standard_normal(200)
    model = ikdr.ISM(n_components=1).fit(X, y)
    assert model.classes_ is None
    w = model.components_[:, 0]
    # The informative direction is (1, 1, 0, ...)/sqrt 2.
    assert abs(w[0] + w[1]) / np.sqrt(2) > 0.95


def test_float32_input_and_pipeline_grid_search(wine):
    X, y = wine
    # the same held-out halves for both (random_state=None would draw two splits)
    m32 = ikdr.ISM(n_components=2, random_state=0).fit(X.astype(np.float32), y)
    m64 = ikdr.ISM(n_components=2, random_state=0).fit(X, y)
    assert ikdr.principal_angle(m32.components_, m64.components_) < 1e-6
    grid = GridSearchCV(make_pipeline(ikdr.ISM(), SVC()),
                        {"ism__n_components": [2, 3], "ism__kernel": ["gaussian", "linear"]}, cv=3)
    grid.fit(X, y)
    # the baseline, on the same folds: two PCA directions, which ignore the labels
    # (0.95 on wine); a supervised projection that learned nothing from y would not beat it
    baseline = cross_val_score(make_pipeline(PCA(n_components=2), SVC()), X, y, cv=3).mean()
    assert grid.best_score_ > baseline, (grid.best_score_, baseline)


def test_kernel_object_parameter_is_cloned(wine):
    from sklearn.base import clone

    X, y = wine
    est = ikdr.ISM(n_components=2, kernel=0.5 * Gaussian() + Polynomial(degree=2))
    c = clone(est)
    c.fit(X, y)
    assert c.sigma_ == pytest.approx(ikdr.median_sigma(X))


@pytest.mark.parametrize("X, y, match", [
    (np.array([[np.nan, 1.0], [1.0, 2.0], [3.0, 4.0]]), [0, 1, 0], "NaN"),
    (np.array([[np.inf, 1.0], [1.0, 2.0], [3.0, 4.0]]), [0, 1, 0], "infinity"),
    (np.array([[1.0, 2.0]]), [0], "minimum of 2"),
    (np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 1.0]]), [1, 1, 1], "single class"),
    (np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 1.0]]), [0, 1], "inconsistent numbers of samples"),
    (np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 1.0]]), [0.5, np.nan, 1.0], "NaN"),
])
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        ikdr.ISM(n_components=1).fit(X, y)


def test_bad_parameters(wine):
    X, y = wine
    with pytest.raises(ValueError, match="q > d"):
        ikdr.ISM(n_components=14).fit(X, y)
    with pytest.raises(ValueError, match="n_components must be >= 1"):
        ikdr.ISM(n_components=0).fit(X, y)
    with pytest.raises(ValueError, match="sigma must be positive"):
        ikdr.ISM(sigma=0.0).fit(X, y)
    with pytest.raises(ValueError, match="sigma must be positive"):
        ikdr.ISM(sigma=-1).fit(X, y)
    with pytest.raises(ValueError, match="sigma must be"):
        ikdr.ISM(sigma="mean").fit(X, y)
    with pytest.raises(ValueError, match="unknown kernel"):
        ikdr.ISM(kernel="laplace").fit(X, y)
    with pytest.raises(ValueError, match="tol"):
        ikdr.ISM(tol=0).fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        ikdr.ISM(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="criterion"):
        ikdr.ISM(criterion="objective").fit(X, y)
    with pytest.raises(TypeError, match="certify"):
        ikdr.ISM(certify="yes").fit(X, y)


def test_criterion_and_certify(wine):
    X, y = wine
    # one split of the held-out halves for every fit: the same support, so the HSIC
    # values below compare one problem's maxima
    paper = ikdr.ISM(n_components=3, criterion="eigenvalues", random_state=0).fit(X, y)
    assert paper.convergence_.stopping_rule == "eigenvalues" and paper.convergence_.second_order
    # the papers' loose rule stops short of first order: not certified
    assert paper.convergence_.relative_gradient_norm > 1e-6 and not paper.converged_
    default = ikdr.ISM(n_components=3, random_state=0).fit(X, y)
    c = default.convergence_
    assert c.stopping_rule == "gradient" and c.relative_gradient_norm <= 1e-6
    assert default.converged_ and c.local_maximum
    grad = ikdr.ISM(n_components=3, criterion="gradient", certify=False, random_state=0).fit(X, y)
    c = grad.convergence_
    assert c.stopping_rule == "gradient" and c.relative_gradient_norm <= 1e-6
    assert c.second_order is None and c.hessian_products == 0 and grad.converged_
    assert grad.hsic_ >= paper.hsic_


def test_max_iter_warns(wine):
    from sklearn.exceptions import ConvergenceWarning

    X, y = wine
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        ikdr.ISM(n_components=3, tol=1e-12, max_iter=1, criterion="eigenvalues").fit(X, y)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1 before its certificate held: "
                                                r"relative gradient norm .* Raise max_iter"):
        ikdr.ISM(n_components=3, max_iter=1).fit(X, y)


def test_ism_takes_a_dense_gamma_array():
    """``ikdr.ism``'s gamma may be an n x n symmetric array, as its type hint says."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    gamma = ikdr.supervised_gamma(y)[0]
    factored = ikdr.ism(X, gamma, n_components=2)
    dense = ikdr.ism(X, gamma.toarray(), n_components=2)
    assert dense.objective == pytest.approx(factored.objective, rel=1e-12)
    assert ikdr.principal_angle(dense.components, factored.components) < 1e-8
    with pytest.raises(TypeError, match="n x n symmetric array"):
        ikdr.ism(X, "supervised")
    with pytest.raises(ValueError, match="square"):
        ikdr.ism(X, np.ones((3, 4)))
    asymmetric = gamma.toarray()
    asymmetric[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        ikdr.ism(X, asymmetric)


def test_importance_intervals_separate_informative_from_noise_features():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 8))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    model = ikdr.ISM(n_components=2).fit(X, y)
    out = ikdr.importance_intervals(model, X, y, n_resamples=8, random_state=0)
    assert out.samples.shape == (8, 8)
    assert np.all(out.low <= out.high)
    assert set(out.selected[:2]) <= {0, 1, 2} and 0 in out.selected and 1 in out.selected
    assert np.all(out.high[3:] < out.low[[0, 1]].min())       # noise never reaches them
    assert np.all(out.top_k_frequency[[0, 1]] == 1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        ikdr.importance_intervals(model, X, y, n_resamples=1)
    with pytest.raises(ValueError, match="confidence"):
        ikdr.importance_intervals(model, X, y, confidence=1.5)


def test_auto_sigma_is_the_median_distance_of_the_projected_start(wine):
    """sigma="auto": the median pairwise distance of X W0, W0 the top-q eigenvectors
    of Phi_0 (which do not depend on the Gaussian's sigma)."""
    X, y = wine
    # q = 2, the rank of Phi_0 for three classes (a third direction would be any
    # vector of its null space)
    model = ikdr.ISM(n_components=2, support="all").fit(X, y)
    gamma = ikdr.supervised_gamma(y)[0]
    vals, vecs = np.linalg.eigh(Gaussian(1.0).phi0(X, gamma))
    W0 = vecs[:, ::-1][:, :2]
    assert model.sigma_ == pytest.approx(ikdr.median_sigma(X @ W0), rel=1e-12)
    assert model.sigma_ < 0.8 * ikdr.median_sigma(X)       # narrower than the papers' rule
    # Phi_0's eigenvectors, hence the rule, do not depend on the sigma used to form it
    other = np.linalg.eigh(Gaussian(5.0).phi0(X, gamma))[1][:, ::-1][:, :2]
    assert ikdr.principal_angle(W0, other) < 1e-8


@pytest.mark.parametrize("task", ["ring", "xor"])
def test_default_ism_finds_nonlinear_features_among_noise(task):
    """A ring or an XOR in two of 50 features: the class means coincide, the papers'
    defaults find neither; the defaults (screen + sigma="auto") find both."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 50))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4) if task == "ring" else (X[:, 0] * X[:, 1] > 0)
    y = y.astype(int)
    model = ikdr.ISM().fit(X, y)
    top = set(np.argsort(model.feature_importances_)[::-1][:2])
    assert top == {0, 1}
    assert set(model.support_) == {0, 1}
    assert model.components_.shape[0] == 50 and np.all(model.components_[2:] == 0)


def test_auto_sigma_on_constant_projections_is_a_clear_error():
    X = np.ones((30, 3))
    X[:, 0] = np.repeat([0.0, 1.0], 15)
    y = np.repeat([0, 1], 15)
    model = ikdr.ISM(n_components=1, support="all", kernel="gaussian")
    X2 = np.column_stack([X[:, 0], X[:, 0]])        # duplicate features, 2 distinct rows
    out = model.fit(X2, y)                           # a positive median: no NaN, no error
    assert np.isfinite(out.sigma_) and out.sigma_ > 0


def test_the_screen_steps_aside_when_its_moments_exceed_the_memory_budget():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 40))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int)
    assert ikdr.ISM().fit(X, y).support_.tolist() == [0, 1]
    with ikdr.memory_budget(10_000):             # bytes: below the screen's 2 x 5 x 40^2 x 8
        wide = ikdr.ISM(n_components=2, random_state=0).fit(X, y)
    # no screen: every feature starts, and the held-out selection keeps the ring's
    assert wide.screen_scores_ is None
    assert {0, 1} <= set(wide.support_) and wide.support_.size < 40
    assert set(np.argsort(wide.feature_importances_)[::-1][:2]) == {0, 1}
