"""Kernel Dependence Networks (dissertation ch. 6)."""
import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.reduction.kdn import KernelDependenceNetwork, _fourier_map, _width_for, normalized_hsic

from .conftest import shared_csv


def _cv_accuracy(X, y, n_splits=10):
    model = make_pipeline(StandardScaler(), KernelDependenceNetwork(random_state=0))
    cv = StratifiedKFold(n_splits, shuffle=True, random_state=0)
    return cross_val_score(model, X, y, cv=cv).mean()


def test_normalized_hsic_bounds(rng):
    y = np.repeat([0, 1, 2], 10)
    Y = np.eye(3)[y]
    Yc = Y - Y.mean(0)
    assert normalized_hsic(Y, Yc) == pytest.approx(1.0)
    assert 0.0 <= normalized_hsic(rng.normal(size=(30, 5)), Yc) < 0.5


def test_fourier_features_approximate_the_gaussian_kernel(rng):
    Z = rng.normal(size=(20, 2))
    omega = rng.normal(size=(2, 20000))
    phase = rng.uniform(0, 2 * np.pi, 20000)
    F = _fourier_map(Z, omega, phase, 1.5)
    K = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / (2 * 1.5**2))
    assert np.abs(F @ F.T - K).max() < 0.05


def test_width_rule():
    assert _width_for([5.0, 3.0, 1.0, 0.5, -2.0]) == 3    # 9/9.5 >= 0.9
    assert _width_for([-1.0, -2.0]) == 1


def test_wine_cv_accuracy():
    X, y = load_wine(return_X_y=True)
    assert _cv_accuracy(X, y) >= 0.95  # paper 0.97


def test_estimator_api():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    net = KernelDependenceNetwork(random_state=0).fit(X, y)
    assert net.n_layers_ == len(net.layers_) == len(net.hsic_per_layer_)
    assert np.all(np.diff(net.hsic_per_layer_) > 0)     # the H-sequence increases
    assert net.transform(X).shape == (178, 300)
    assert net.score(X, y) >= 0.99
    for layer in net.layers_:
        W = layer["W"]
        np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-10)
        assert layer["sigma"] > 0
    again = KernelDependenceNetwork(random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.predict(X), net.predict(X))
    assert set(net.predict(X)) <= set(np.unique(y))


@pytest.mark.slow
def test_cancer_cv_accuracy():
    X = shared_csv("cancer_683x9.csv")
    y = shared_csv("cancer_683x9_label.csv")
    assert _cv_accuracy(X, y) >= 0.95  # paper 0.97


def test_cancer_3fold_accuracy():
    """Cheap stand-in for the slow 10-fold test."""
    X = shared_csv("cancer_683x9.csv")
    y = shared_csv("cancer_683x9_label.csv")
    assert _cv_accuracy(X, y, n_splits=3) >= 0.95


@pytest.mark.slow
def test_spiral_cv_accuracy():
    X = shared_csv("spiral.csv")
    y = shared_csv("spiral_label.csv")
    assert _cv_accuracy(X, y) >= 0.98  # paper 1.00


def test_spiral_subset_accuracy():
    """Cheap stand-in for the slow 10-fold test: 3 folds of a 600-point subsample."""
    X = shared_csv("spiral.csv")
    y = shared_csv("spiral_label.csv")
    idx = np.random.default_rng(0).permutation(len(X))[:600]
    assert _cv_accuracy(X[idx], y[idx], n_splits=3) >= 0.95


def test_adversarial_training_accuracy():
    """Thesis App. D.6: each point has a 0.01-close copy with the other label."""
    rng = np.random.default_rng(0)
    X1 = rng.random((40, 2))
    X = np.vstack([X1, X1 + 0.01 * rng.normal(size=(40, 2))])
    y = np.r_[np.zeros(40), np.ones(40)]
    net = KernelDependenceNetwork(random_state=0).fit(X, y)
    assert net.score(X, y) == 1.0


@pytest.mark.parametrize("kwargs, y_kind, match", [
    ({}, "single", "single class"),
    ({"n_fourier": 0}, None, "n_fourier"),
    ({"hsic_threshold": 1.5}, None, "hsic_threshold"),
    ({"sigma": -1.0}, None, "sigma"),
    ({"width": 0}, None, "width"),
    ({}, "nan", "NaN"),
])
def test_bad_input(kwargs, y_kind, match, rng):
    X = rng.normal(size=(30, 3))
    y = np.repeat([0, 1], 15)
    if y_kind == "single":
        y = np.zeros(30)
    elif y_kind == "nan":
        X[0, 0] = np.nan
    with pytest.raises(ValueError, match=match):
        KernelDependenceNetwork(**kwargs).fit(X, y)


def test_exported():
    assert ikdr.KernelDependenceNetwork is KernelDependenceNetwork


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    from ikdr import KNetClustering

    # These checks set n_clusters=1, which the clustering estimators refuse with a
    # ValueError (one cluster has no spectral embedding to learn from), as in
    # tests/test_clustering.py; every other check must pass.
    one_cluster = {"check_dont_overwrite_parameters", "check_methods_subset_invariance",
                   "check_fit2d_1feature", "check_fit2d_predict1d"}
    for est, allowed in [(KernelDependenceNetwork(max_layers=2, n_fourier=50, random_state=0), set()),
                         (KNetClustering(2, max_iter=2, random_state=0), one_cluster)]:
        results = check_estimator(est, on_fail=None)
        failed = [r["check_name"] for r in results if r["status"] == "failed"]
        assert set(failed) <= allowed, failed
