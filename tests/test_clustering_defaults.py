"""Issue 15: the clustering estimators with only n_clusters given reach the baselines.

Floor: NMI >= max(k-means, SpectralClustering(affinity="nearest_neighbors")) - 0.03,
both baselines computed here on the same data. Small n and few seeds keep this
fast; benchmarks/bench_clustering_quality.py runs the full table.
"""
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.exceptions import ConvergenceWarning

import ikdr
from ikdr.metrics import nmi

from .conftest import shared_csv

MARGIN = 0.03


def _load_data_module():
    """The data sets of benchmarks/bench_clustering_quality.py (one definition for both)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_clustering_data.py"
    spec = importlib.util.spec_from_file_location("ikdr_benchmarks_clustering_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DATA = _load_data_module()
standardise = _DATA.standardise


def generated(name, seed, n=300):
    """scikit-learn's generators, standardised; small n keeps the suite fast."""
    return _DATA.generated(name, seed, n=n)


def baseline(X, y):
    k = len(np.unique(y))
    km = KMeans(k, n_init=10, random_state=0).fit_predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = SpectralClustering(k, affinity="nearest_neighbors", random_state=0).fit_predict(X)
    return max(nmi(y, km), nmi(y, sc))


def fit_labels(name, X, k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if name == "ISMClustering":
            return ikdr.ISMClustering(k, random_state=0).fit(X).labels_
        if name == "KNetClustering":
            return ikdr.KNetClustering(k, random_state=0).fit_predict(X)
        if name == "KDAC":  # an existing clustering unrelated to the data
            existing = np.random.default_rng(0).integers(0, 2, X.shape[0])
            return ikdr.KDAC(k, random_state=0).fit(X, existing).labels_
        scores = (X - X.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
        return ikdr.SemiSupervisedISM(k, random_state=0).fit(X, scores).labels_


SETS = ["circles", "moons", "blobs", "anisotropic", "varied"]
CASES = ([(e, s, seed) for e in ("ISMClustering", "KNetClustering") for s in SETS
          for seed in (0, 1)]
         + [("KNetClustering", s, 2) for s in ("blobs", "varied")]
         + [(e, s, 0) for e in ("KDAC", "SemiSupervisedISM") for s in ("circles", "moons", "varied")])


#: Cases below the floor: ISMClustering on blobs seed 0 is 0.04 under k-means. (KNet on varied and anisotropic passes since its rounding is judged by the
#: local-scaling HSIC; on the moons at n = 300 since its rounds learn, update="fixed".)
KNOWN_BELOW = {("ISMClustering", "blobs", 0)}
BELOW_THE_FLOOR = ("known to score below the floor (the best of k-means and kNN spectral "
                   "clustering, minus the margin) on this data set, as "
                   "docs/clustering_defaults.md explains; the mark is strict, so a fix makes "
                   "this an error: then remove the case from {}")
CASES = [pytest.param(*c, marks=pytest.mark.xfail(reason=BELOW_THE_FLOOR.format("KNOWN_BELOW"),
                                                  strict=True)) if c in KNOWN_BELOW else c
         for c in CASES]


@pytest.mark.parametrize("estimator, data, seed", CASES)
def test_defaults_reach_the_baselines(estimator, data, seed):
    X, y = generated(data, seed)
    k = len(np.unique(y))
    assert nmi(y, fit_labels(estimator, X, k)) >= baseline(X, y) - MARGIN


#: Real data below the floor (docs/clustering_defaults.md, "Below the floor, and
#: why"): breast cancer's labels are not its spectral structure (every dense
#: affinity <= 0.59 at W = I against the 10-NN graph's 0.66). (KDAC on wine, once
#: 0.833, passes since its W-steps' warm starts are guarded.)
KNOWN_BELOW_REAL = {("ISMClustering", "breast_cancer"),
                    ("SemiSupervisedISM", "breast_cancer"), ("KNetClustering", "breast_cancer")}
REAL_CASES = [(e, "wine") for e in ("ISMClustering", "SemiSupervisedISM", "KDAC",
                                    "KNetClustering")] + \
    [(e, "breast_cancer") for e in ("ISMClustering", "SemiSupervisedISM", "KNetClustering")]
REAL_CASES = [pytest.param(*c, marks=pytest.mark.xfail(
                  reason=BELOW_THE_FLOOR.format("KNOWN_BELOW_REAL"), strict=True))
              if c in KNOWN_BELOW_REAL else c for c in REAL_CASES]


@pytest.mark.parametrize("estimator, data", REAL_CASES)
def test_defaults_on_bundled_real_data(estimator, data):
    X, y = _DATA.bundled(data)
    k = len(np.unique(y))
    assert nmi(y, fit_labels(estimator, X, k)) >= baseline(X, y) - MARGIN


@pytest.mark.parametrize("estimator", ["ISMClustering", "KNetClustering"])
@pytest.mark.parametrize("data", ["spiral", "moon_1000x2", "face_624x20"])
def test_defaults_on_the_paper_data(estimator, data):
    if data == "face_624x20":
        X, y = shared_csv("face_624x20.csv"), shared_csv("face_624x20_identity_label.csv")
    else:
        X, y = shared_csv(f"{data}.csv"), shared_csv(f"{data}_label.csv")
    y = y.astype(int).ravel()
    if X.shape[0] > 600:  # keep the suite fast: a seeded subsample
        idx = np.sort(np.random.default_rng(0).choice(X.shape[0], 600, replace=False))
        X, y = X[idx], y[idx]
    X = standardise(X)
    k = len(np.unique(y))
    assert nmi(y, fit_labels(estimator, X, k)) >= baseline(X, y) - MARGIN


@pytest.mark.parametrize("make", [
    lambda: ikdr.ISMClustering(3), lambda: ikdr.KNetClustering(3),
    lambda: ikdr.SemiSupervisedISM(3), lambda: ikdr.KDAC(3)])
@pytest.mark.parametrize("case", ["identical", "too few"])
def test_auto_sigma_rejects_data_without_a_scale(make, case):
    if case == "identical":
        X, match = np.ones((30, 2)), "identical"
    else:
        X, match = np.random.default_rng(0).normal(size=(8, 2)), "3 x n_clusters"
    model = make()
    args = (X,)
    if isinstance(model, ikdr.SemiSupervisedISM):
        args = (X, np.arange(X.shape[0], dtype=float))
    elif isinstance(model, ikdr.KDAC):
        args = (X, np.arange(X.shape[0]) % 2)
    with pytest.raises(ValueError, match=match):
        model.fit(*args)


def _face():
    X = shared_csv("face_624x20.csv")
    y = shared_csv("face_624x20_identity_label.csv").astype(int).ravel()
    return standardise(X), y


@pytest.mark.parametrize("estimator", ["ISMClustering", "KNetClustering"])
def test_face_beats_both_baselines(estimator):
    # on the face data (624 x 20, 20 identities) ISMClustering
    # and KNet beat k-means (0.840) and kNN spectral clustering (0.830) outright
    X, y = _face()
    assert nmi(y, fit_labels(estimator, X, 20)) > baseline(X, y) + 0.03


def test_default_q_reduces_when_the_cluster_floor_spans_every_feature():
    # face-like: 20 features, 20 clusters, eigengap at 2. The floor of k
    # dimensions is capped at half the features (q = 10, not d = 20); the
    # guided paradigms keep min(d, k); 2-D data keep both axes
    eig = np.r_[10.0, 9.0, np.linspace(2.0, 1.0, 18)]
    assert ikdr.default_n_components(eig, 20, 20) == 10
    assert ikdr.default_n_components(eig, 20, 20, guided=True) == 20
    assert ikdr.default_n_components(eig, 3, 13) == 3
    assert ikdr.default_n_components(np.array([5.0, 1.0]), 2, 2) == 2
    assert ikdr.default_n_components(np.array([5.0, 1.0, 0.9]), 3, 3) == 2
    big_gap = np.r_[np.full(12, 5.0), np.full(8, 0.1)]
    assert ikdr.default_n_components(big_gap, 20, 20) == 12


def test_face_default_q_is_half_the_features_for_ismclustering_only():
    X, y = _face()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ism = ikdr.ISMClustering(20, random_state=0).fit(X)
        kdac = ikdr.KDAC(20, max_iter=2, random_state=0).fit(
            X, np.random.default_rng(0).integers(0, 2, X.shape[0]))
    assert ism.components_.shape[1] == 10
    assert kdac.components_.shape[1] == 20


@pytest.mark.parametrize("data, seed", [("varied", 0), ("varied", 2), ("blobs", 1)])
def test_knet_rounding_is_judged_by_the_local_affinity(data, seed):
    # KNet's own small sigma scored a partition isolating a few outliers highest
    # (NMI 0.02-0.04 on varied blobs); the local-scaling judge picks a real one
    X, y = generated(data, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KNetClustering(3, random_state=0).fit(X)
    assert set(model.partition_hsic_) == {"kmeans", "spectral", "local"}
    assert model.partition_hsic_[model.rounding_] == max(model.partition_hsic_.values())
    assert min(np.bincount(model.labels_, minlength=3)) >= 0.1 * X.shape[0]
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert nmi(y, model.labels_) >= baseline(X, y) - MARGIN


def test_knet_rounding_without_local_bandwidths():
    # fewer than 3 x n_clusters rows with a numeric sigma: the learned kernel judges
    X = np.random.default_rng(0).normal(size=(8, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KNetClustering(3, sigma=1.0, random_state=0).fit(X)
    assert set(model.partition_hsic_) == {"kmeans", "spectral"}
    assert model.labels_.shape == (8,)


def test_numeric_sigma_still_works():
    X, y = generated("blobs", 1)
    model = ikdr.ISMClustering(3, sigma=1.0, random_state=0).fit(X)
    assert model.sigma_ == 1.0 and nmi(y, model.labels_) > 0.9


def test_alternate_returns_the_best_iterate_and_warns():
    X, _ = generated("varied", 0, n=150)
    # two noise columns: with q < d the W-step has a subspace to move in (with
    # q = d = 2 both steps can repeat to the last bit and "converge")
    noise = np.random.default_rng(0).standard_normal((X.shape[0], 2))
    X = np.hstack([X, noise])
    kernel = ikdr.spectral.auto_kernel(X, 3)
    with pytest.warns(ConvergenceWarning, match="highest objective"):
        out = ikdr.alternate(X, kernel, 3, max_iter=2, tol=1e-12)
    assert isinstance(out, ikdr.AlternationResult)
    assert not out.converged and out.n_iter == 2
    objectives = [h["objective"] for h in out.history]
    assert out.objective == max(objectives)
    assert out.best_iteration == int(np.argmax(objectives)) + 1


def test_alternation_converges_with_the_defaults():
    X, _ = generated("moons", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = ikdr.ISMClustering(2, random_state=0).fit(X)
    assert model.converged_
    last = model.history_[-1]
    assert last["u_change"] < model.tol and last["w_change"] < model.tol


def test_default_q_is_at_least_the_cluster_count_or_d():
    X, _ = generated("circles", 0, n=200)
    assert ikdr.ISMClustering(2, random_state=0).fit(X).components_.shape[1] == 2


def test_kdac_leaves_out_a_direction_only_for_a_visible_existing_clustering():
    # a random partition is not visible in X (dependence ~ 1): q = d as in
    # ISMClustering, the rings are found; a real existing clustering (the
    # left/right view of four Gaussians) is visible (>= 3): q < d, the other view
    X, y = generated("circles", 0)
    model = ikdr.KDAC(2, random_state=0).fit(X, np.random.default_rng(0).integers(0, 2, 300))
    assert model.existing_dependence_ < 2 and model.components_.shape[1] == 2
    assert nmi(y, model.labels_) > 0.95
    X, y_orig, y_alt = ikdr.datasets.make_gaussian_views("small", random_state=0)
    X = standardise(X)
    model = ikdr.KDAC(2, random_state=0).fit(X, y_orig)
    assert model.existing_dependence_ > 3 and model.components_.shape[1] == 1
    assert nmi(y_alt, model.labels_) > 0.95


def test_existing_dependence_is_its_permutation_mean_ratio():
    # the closed-form permutation mean against the mean over random relabellings
    from ikdr.cluster.kdac import existing_dependence

    X, y = generated("blobs", 0, n=120)
    kernel = ikdr.spectral.auto_kernel(X, 3)
    Y = np.eye(3)[y]
    rho = existing_dependence(X, kernel, Y)
    rng = np.random.default_rng(0)
    relabelled = [existing_dependence(X, kernel, Y[rng.permutation(120)]) for _ in range(200)]
    K = kernel.matrix(X)
    s = 1 / np.sqrt(K.sum(1))
    M = s[:, None] * K * s[None, :]
    Yc = Y - Y.mean(0)
    observed = np.sum(Yc * (M @ Yc))
    null = np.mean([np.sum(Yc[p] * (M @ Yc[p])) for p in
                    (rng.permutation(120) for _ in range(4000))])
    assert rho == pytest.approx(observed / null, rel=0.02)
    assert rho > 5 and np.mean(relabelled) == pytest.approx(1.0, abs=0.1)


def test_semi_supervised_auto_mu_balances_the_terms_at_the_start():
    # wine, the first principal component as the expert score: mu = 1 lets the
    # score term (thousands) drown the clustering term (<= k): NMI 0.62
    X, y = _DATA.bundled("wine")
    scores = (X - X.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.SemiSupervisedISM(3, random_state=0).fit(X, scores)
    assert nmi(y, model.labels_) >= baseline(X, y) - MARGIN
    # mu_ = CQ(U_0) / Tr(F^T K_X F): the first iterate's weighted terms start level
    kernel = ikdr.spectral.auto_kernel(X, 3)
    U, vals, _ = ikdr.spectral.spectral_embedding(X, kernel, 3, random_state=0)
    F = ikdr.gamma.centered(ikdr.gamma.kernel_factor(scores.reshape(-1, 1),
                                                     ikdr.kernels.make_kernel("gaussian"),
                                                     random_state=0))
    K = kernel.matrix(X)
    assert model.mu_ == pytest.approx(np.sum(vals) / np.sum(F * (K @ F)), rel=1e-6)


@pytest.mark.parametrize("kernel", ["polynomial", "linear", "squared"])
def test_unsupervised_wine_with_a_kernel_that_is_no_affinity(kernel):
    # ISM19 Tables 4-5 (q = 3): polynomial 0.84, linear and squared 0.85. The
    # global kernel finds the subspace; the U-step clusters XW with the local
    # Gaussian (it gave 0.70 / 0.84 / 0.84 clustering with the kernel itself)
    X, y = _DATA.bundled("wine")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.ISMClustering(3, n_components=3, kernel=kernel, random_state=0).fit(X)
    assert isinstance(model.affinity_, ikdr.kernels.RelativeGaussian)
    assert nmi(y, model.labels_) >= 0.84


def test_knet_converged_only_when_rounds_converged():
    X, _ = generated("moons", 0, n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KNetClustering(2, max_iter=30, random_state=0).fit(X)
    if model.stop_reason_ == "converged":
        assert model.converged_ and model.n_rejected_ < model.n_iter_
    else:
        assert not model.converged_
    assert model.converged_ == (model.stop_reason_ == "converged")
