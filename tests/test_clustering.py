"""Unsupervised and semi-supervised ISM clustering, metrics, generated data."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import ikdr
from ikdr.solver.driver import principal_angle
from ikdr.spectral import spectral_embedding
from ikdr.gamma import semi_supervised_gamma
from ikdr.kernels import Gaussian
from ikdr.metrics import nmi

from .conftest import shared_csv


def test_wine_unsupervised():
    # ISM paper Table 4 (Gaussian, q = 3): NMI 0.86; data standardised, sigma = median.
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = ikdr.ISMClustering(n_clusters=3, n_components=3, sigma="median", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(X)
    assert nmi(y, labels) >= 0.84
    assert model.sigma_ == pytest.approx(ikdr.median_sigma(X))
    W = model.components_
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(model.transform(X), X @ W)
    assert model.embedding_.shape == (178, 3)
    best = model.history_[model.best_iteration_ - 1]
    assert best["objective"] == max(h["objective"] for h in model.history_)


def test_cancer_unsupervised():
    # ISM paper Table 4 (Gaussian, q = 2): NMI 0.80 on the 683 x 9 Cancer data.
    X = StandardScaler().fit_transform(shared_csv("cancer_683x9.csv"))
    y = shared_csv("cancer_683x9_label.csv")
    model = ikdr.ISMClustering(n_clusters=2, n_components=2, random_state=0).fit(X)
    assert nmi(y, model.labels_) >= 0.78


def test_n_components_by_eigengap():
    X, y_orig, y_alt = ikdr.datasets.make_gaussian_views("large", n_samples=200, random_state=0)
    model = ikdr.ISMClustering(n_clusters=4, random_state=0).fit(StandardScaler().fit_transform(X))
    assert 1 <= model.components_.shape[1] <= 4
    assert nmi(2 * y_orig + y_alt, model.labels_) > 0.95


@pytest.mark.parametrize("favoured", ["original", "alternative"])
def test_semi_supervised_follows_scores(favoured):
    # Two valid 2-clusterings (one per axis); noisy expert scores favour one.
    X, y_orig, y_alt = ikdr.datasets.make_gaussian_views("small", n_samples=120, random_state=2)
    X = StandardScaler().fit_transform(X)
    target = y_orig if favoured == "original" else y_alt
    rng = np.random.default_rng(0)
    scores = target + 0.3 * rng.standard_normal(120)
    model = ikdr.SemiSupervisedISM(n_clusters=2, n_components=1, mu=1.0, random_state=0)
    model.fit(X, scores)
    assert nmi(target, model.labels_) >= 0.9
    h = model.history_[-1]
    assert h["objective"] == pytest.approx(h["quality"] + h["score_term"])


def test_semi_supervised_gamma_matches_dense(rng):
    n = 25
    U = np.linalg.qr(rng.standard_normal((n, 2)))[0]
    F = rng.standard_normal((n, 3))
    deg = rng.uniform(0.5, 2.0, n)
    H = np.eye(n) - 1.0 / n
    Dm = np.diag(deg ** -0.5)
    ref = Dm @ H @ U @ U.T @ H @ Dm + 0.3 * H @ F @ F.T @ H
    np.testing.assert_allclose(semi_supervised_gamma(U, deg, F, 0.3).toarray(), ref, atol=1e-13)


def test_linear_kernel_uses_plain_hsic(rng):
    # The linear kernel is no affinity (K 1 = 0 on centered data): "auto" drops D.
    # K_XW has rank q, so the U-step needs n_components >= n_clusters.
    centers = np.array([[4.0, 0, 0, 0], [-4, 0, 0, 0], [0, 4, 0, 0]])
    X = np.vstack([c + 0.5 * rng.standard_normal((40, 4)) for c in centers])
    y = np.repeat([0, 1, 2], 40)
    model = ikdr.ISMClustering(n_clusters=3, n_components=3, kernel="linear",
                               affinity="linear", random_state=0).fit(X)
    assert not model.normalize_ and np.all(model.degrees_ == 1)
    assert nmi(y, model.labels_) > 0.95
    # by default a kernel that is no affinity leaves the U-step to the local Gaussian
    model = ikdr.ISMClustering(n_clusters=3, n_components=3, kernel="linear",
                               random_state=0).fit(X)
    assert isinstance(model.affinity_, ikdr.kernels.RelativeGaussian) and model.normalize_
    assert isinstance(model.kernel_, ikdr.kernels.Linear)
    assert nmi(y, model.labels_) > 0.95
    with pytest.raises(ValueError, match="positive affinity"):
        ikdr.ISMClustering(n_clusters=3, kernel="squared", affinity="squared",
                           normalize=True).fit(X)


def test_unnormalised_lanczos_matches_dense(rng):
    X = np.vstack([c + rng.standard_normal((300, 2)) for c in rng.standard_normal((3, 2)) * 5])
    k = Gaussian().fit(X)
    U1, v1, _ = spectral_embedding(X, k, 3, method="dense", normalize=False)
    U2, v2, d2 = spectral_embedding(X, k, 3, method="lanczos", normalize=False, random_state=0)
    assert np.sin(principal_angle(U1, U2)) < 1e-6
    np.testing.assert_allclose(v1, v2, rtol=1e-8)
    assert np.all(d2 == 1)


def test_warm_started_u_step_matches_dense(rng):
    # The matrix-free U-step from a nearby embedding (LOBPCG) spans the dense subspace.
    X = np.vstack([c + rng.standard_normal((400, 3)) for c in rng.standard_normal((3, 3)) * 4])
    k = Gaussian().fit(X)
    U1, v1, _ = spectral_embedding(X, k, 3, method="dense")
    W = np.linalg.qr(np.eye(3) + 0.05 * rng.standard_normal((3, 3)))[0]
    U0, _, _ = spectral_embedding(X @ W, k, 3, method="dense")
    U2, v2, _ = spectral_embedding(X, k, 3, method="lanczos", U0=U0)
    assert np.sin(principal_angle(U1, U2)) < 1e-6
    np.testing.assert_allclose(v1, v2, rtol=1e-8)


def test_lanczos_u_step_inside_estimator(rng, monkeypatch):
    # The estimators reach the matrix-free path through the shared U-step.
    import ikdr.spectral as spectral

    X = np.vstack([c + 0.5 * rng.standard_normal((150, 2)) for c in [(-4, 0), (4, 0)]])
    X = np.column_stack([X, rng.uniform(-1, 1, 300)])
    dense = ikdr.ISMClustering(n_clusters=2, n_components=1, random_state=0).fit(X)
    monkeypatch.setattr(spectral, "DENSE_MAX_N", 100)
    lanczos = ikdr.ISMClustering(n_clusters=2, n_components=1, random_state=0).fit(X)
    assert np.sin(principal_angle(dense.components_, lanczos.components_)) < 1e-6
    assert nmi(dense.labels_, lanczos.labels_) == pytest.approx(1.0)


def test_pipeline_and_grid_search():
    X, y_orig, y_alt = ikdr.datasets.make_gaussian_views("small", random_state=0)
    pipe = make_pipeline(StandardScaler(), ikdr.ISMClustering(n_clusters=4, n_components=2,
                                                               random_state=0))
    assert pipe.fit_transform(X).shape == (40, 2)
    assert nmi(2 * y_orig + y_alt, pipe.fit_predict(X)) == pytest.approx(1.0)
    grid = GridSearchCV(ikdr.KDAC(n_clusters=2, random_state=0),
                        {"lam": [0.1, 1.0]}, cv=2, scoring=lambda est, X, y: -est.novelty_)
    grid.fit(StandardScaler().fit_transform(X), y_orig)
    assert grid.best_params_["lam"] in (0.1, 1.0)


# -- metrics ------------------------------------------------------------------

def test_nmi_is_geometric():
    a = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    b = np.array([0, 0, 1, 1, 1, 1, 1, 0])
    n = len(a)
    pa = np.bincount(a) / n
    pb = np.bincount(b) / n
    pab = np.zeros((3, 2))
    np.add.at(pab, (a, b), 1.0 / n)
    mask = pab > 0
    mi = np.sum(pab[mask] * np.log(pab[mask] / np.outer(pa, pb)[mask]))
    ha, hb = -np.sum(pa * np.log(pa)), -np.sum(pb * np.log(pb))
    assert nmi(a, b) == pytest.approx(mi / np.sqrt(ha * hb), rel=1e-12)
    assert ikdr.metrics.novelty(b, [a, b]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="differ in length"):
        nmi(a, b[:-1])


def test_clustering_quality_dense(rng):
    X = rng.standard_normal((40, 4))
    W = np.linalg.qr(rng.standard_normal((4, 2)))[0]
    labels = np.arange(40) % 3
    Z = X @ W
    k = Gaussian(1.5)
    K = k.matrix(Z)
    d = K.sum(1)
    H = np.eye(40) - 1.0 / 40
    Y = np.eye(3)[labels]
    U = Y / np.sqrt(Y.sum(0))
    ref = np.trace(U.T @ H @ (K / np.sqrt(np.outer(d, d))) @ H @ U)
    assert ikdr.metrics.clustering_quality(X, labels, components=W, kernel=k) == \
        pytest.approx(ref, rel=1e-10)
    assert ikdr.metrics.clustering_quality(X, U, components=W, kernel=k) == \
        pytest.approx(ref, rel=1e-10)


# -- generated data -------------------------------------------------------------

@pytest.mark.parametrize("make, shape", [
    (lambda: ikdr.datasets.make_gaussian_views("small", random_state=0), (40, 2)),
    (lambda: ikdr.datasets.make_gaussian_views("large", random_state=0), (1000, 4)),
    (lambda: ikdr.datasets.make_moon_gaussians(random_state=0), (400, 4)),
    (lambda: ikdr.datasets.make_moon_gaussians(200, n_noise=3, random_state=0), (200, 7)),
])
def test_generated_views_are_independent(make, shape):
    X, y_orig, y_alt = make()
    assert X.shape == shape
    assert nmi(y_orig, y_alt) == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.bincount(2 * y_orig + y_alt) == shape[0] // 4)


def test_png_round_trip(tmp_path):
    img = (np.arange(5 * 7 * 3) * 11 % 256).astype(np.uint8).reshape(5, 7, 3)
    write_png = ikdr.datasets.write_png
    write_png(tmp_path / "a.png", img)
    np.testing.assert_array_equal(ikdr.datasets.read_png(tmp_path / "a.png"), img)
    colors, index = ikdr.datasets.load_image_colors(img)
    np.testing.assert_array_equal(colors[index], img)
    assert len(colors) == len(np.unique(img.reshape(-1, 3), axis=0))


@pytest.mark.parametrize("params, match", [
    ({"n_clusters": 1}, r"'n_clusters' parameter .* int in the range \[2, inf\)"),
    ({"n_clusters": 50}, "fewer samples than clusters"),
    ({"n_clusters": 2, "tol": -1.0}, "'tol' parameter"),
    ({"n_clusters": 2, "normalize": "yes"}, "'normalize' parameter"),
])
def test_bad_input(rng, params, match):
    X = rng.standard_normal((20, 3))
    with pytest.raises(ValueError, match=match):
        ikdr.ISMClustering(**params).fit(X)


def test_semi_supervised_bad_input(rng):
    X = rng.standard_normal((20, 3))
    with pytest.raises(ValueError, match="'mu' parameter"):
        ikdr.SemiSupervisedISM(2, mu=-1.0).fit(X, rng.standard_normal(20))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ikdr.SemiSupervisedISM(2).fit(X, rng.standard_normal(19))
    with pytest.raises(ValueError, match="NaN"):
        ikdr.SemiSupervisedISM(2).fit(X, np.r_[np.nan, rng.standard_normal(19)])
    with pytest.raises(ValueError, match="constant"):
        ikdr.SemiSupervisedISM(2).fit(X, np.ones(20))


@pytest.mark.parametrize("params, match", [
    ({"max_iter": 0}, "max_iter must be >= 1"),
    ({"tol": 0.0}, "tol must be positive"),
    ({"eigen_solver": "eigh"}, "eigen_solver must be one of"),
])
def test_alternate_checks_its_settings_before_any_work(rng, params, match, monkeypatch):
    from ikdr.cluster import alternation

    def no_work(*args, **kwargs):
        raise AssertionError("the data were touched before the settings were checked")

    monkeypatch.setattr(alternation, "resolve_clustering", no_work)
    with pytest.raises(ValueError, match=match):
        ikdr.alternate(rng.standard_normal((20, 3)), Gaussian(1.0), 2, **params)


def test_alternation_options_are_frozen_and_checked_when_derived():
    from dataclasses import FrozenInstanceError, replace

    from ikdr.cluster.alternation import AlternationOptions

    options = AlternationOptions(3, n_components=2.0, max_iter=5.0, normalize=0)
    assert (options.n_components, options.max_iter, options.normalize) == (2, 5, False)
    assert type(options.max_iter) is int
    with pytest.raises(FrozenInstanceError):
        options.tol = 0.5
    assert replace(options, guided=True).guided and not options.guided
    with pytest.raises(ValueError, match="tol must be positive"):
        replace(options, tol=-1.0)


_N_CLUSTERS_1 = ("the check sets n_clusters=1, which these estimators refuse with a "
                 "ValueError by design: one cluster has no spectral embedding to learn W from")


def _expected_failures(estimator):
    failures = {name: _N_CLUSTERS_1 for name in (
        "check_dont_overwrite_parameters", "check_methods_subset_invariance",
        "check_fit2d_1feature", "check_fit2d_predict1d")}
    if not isinstance(estimator, ikdr.ISMClustering):
        second = "y_existing" if isinstance(estimator, ikdr.KDAC) else "scores"
        failures["check_fit_score_takes_y"] = (
            f"fit's second argument is named {second!r} by design (it is not a target y)")
        failures["check_clustering"] = (
            f"calls fit(X) without {second!r}, which this estimator needs")
    return failures


@parametrize_with_checks([ikdr.ISMClustering(n_clusters=2, n_components=1, max_iter=3),
                          ikdr.KDAC(n_clusters=2, n_components=1, max_iter=3),
                          ikdr.SemiSupervisedISM(n_clusters=2, n_components=1, max_iter=3)],
                         expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


# -- kernel names ---------------------------------------------------------------

def _alias_groups():
    """The kernel names that share a class (aliases), grouped."""
    from ikdr.kernels.names import KERNEL_NAMES

    groups = {}
    for name, cls in KERNEL_NAMES.items():
        groups.setdefault(cls, []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def _alias_fit(make, name, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(name)
        if isinstance(model, ikdr.SemiSupervisedISM):
            return model.fit(X, X[:, 0] + X[:, 1])
        if isinstance(model, ikdr.KDAC):
            return model.fit(X, np.arange(X.shape[0]) % 2)
        if isinstance(model, ikdr.ISM):
            return model.fit(X, np.arange(X.shape[0]) % 3)
        return model.fit(X)


@pytest.mark.parametrize("names", _alias_groups(), ids=lambda names: "=".join(names))
@pytest.mark.parametrize("make", [
    lambda name: ikdr.ISMClustering(3, kernel=name, max_iter=3, random_state=0),
    lambda name: ikdr.ISMClustering(3, kernel="linear", affinity=name, max_iter=3,
                                    random_state=0),
    lambda name: ikdr.SemiSupervisedISM(3, kernel=name, max_iter=3, random_state=0),
    lambda name: ikdr.SemiSupervisedISM(3, score_kernel=name, max_iter=3, random_state=0),
    lambda name: ikdr.KDAC(3, kernel=name, max_iter=3, random_state=0),
    lambda name: ikdr.KDAC(3, kernel="linear", affinity=name, max_iter=3, random_state=0),
    lambda name: ikdr.ISM(n_components=2, kernel=name, random_state=0),
], ids=["ISMClustering.kernel", "ISMClustering.affinity", "SemiSupervisedISM.kernel",
        "SemiSupervisedISM.score_kernel", "KDAC.kernel", "KDAC.affinity", "ISM.kernel"])
def test_every_alias_fits_the_same_model(make, names):
    # names become kernels (make_kernel) before anything looks at them: "rbf" once
    # fitted a global Gaussian where "gaussian" fitted local scaling
    X = StandardScaler().fit_transform(load_wine(return_X_y=True)[0])[::2]
    fits = []
    for name in names:
        try:
            fits.append(_alias_fit(make, name, X))
        except ValueError as error:     # the same refusal under every name
            fits.append(str(error))
    if isinstance(fits[0], str):
        assert fits == [fits[0]] * len(names)
        return
    for other in fits[1:]:
        assert type(other.kernel_) is type(fits[0].kernel_)
        assert type(getattr(other, "affinity_", None)) is type(getattr(fits[0], "affinity_", None))
        if hasattr(other, "labels_"):
            np.testing.assert_array_equal(other.labels_, fits[0].labels_)
        np.testing.assert_allclose(other.components_, fits[0].components_, rtol=0, atol=0)


def test_rbf_is_the_gaussian_of_the_defaults():
    X = StandardScaler().fit_transform(load_wine(return_X_y=True)[0])
    rbf = ikdr.ISMClustering(3, kernel="rbf", random_state=0).fit(X)
    gaussian = ikdr.ISMClustering(3, random_state=0).fit(X)
    assert isinstance(rbf.kernel_, ikdr.kernels.RelativeGaussian)
    assert [(c["candidate"], c["criterion"]) for c in rbf.selection_] == \
        [(c["candidate"], c["criterion"]) for c in gaussian.selection_]
    np.testing.assert_array_equal(rbf.labels_, gaussian.labels_)


def test_alternate_takes_its_settings_as_options_or_keywords(rng):
    from ikdr.cluster.alternation import AlternationOptions

    X = rng.standard_normal((40, 3))
    kernel = Gaussian(1.0).fit(X)
    by_keywords = ikdr.alternate(X, kernel, 2, max_iter=2, random_state=0, warn=False)
    options = AlternationOptions(2, max_iter=2, random_state=0, warn=False)
    by_options = ikdr.alternate(X, kernel, 2, options=options)
    np.testing.assert_array_equal(by_keywords.components, by_options.components)
    with pytest.raises(TypeError, match="not both"):
        ikdr.alternate(X, kernel, 2, options=options, max_iter=3)
    with pytest.raises(ValueError, match="n_clusters"):
        ikdr.alternate(X, kernel, 3, options=options)
    with pytest.raises(TypeError, match="max_iters"):
        ikdr.alternate(X, kernel, 2, max_iters=3)
