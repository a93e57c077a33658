"""The clustering estimators with only n_clusters given reach the baselines.

Floor: NMI >= max(k-means, SpectralClustering(affinity="nearest_neighbors")) - 0.02,
both baselines computed here on the same data. Small data sets keep this fast;
benchmarks/bench_clustering_quality.py runs the full table.
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

MARGIN = 0.02
ESTIMATORS = ("ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering")


def _load_data_module():
    """The data sets of benchmarks/bench_clustering_quality.py (one definition for both)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_clustering_data.py"
    spec = importlib.util.spec_from_file_location("ikdr_benchmarks_clustering_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DATA = _load_data_module()
standardise = _DATA.standardise


def generated(name, seed, n=900):
    """scikit-learn's generators, standardised, as the benchmark's rows (900 points).
    (At 300 points overlapping blobs leave the candidates' cuts within 5 % of each
    other and their NMI up to 0.06 apart: blobs-0 and anisotropic-0 then fall 0.01-0.05
    below the floor; docs/clustering_defaults.md.)"""
    return _DATA.generated(name, seed, n=n)


def baseline(X, y):
    k = len(np.unique(y))
    km = KMeans(k, n_init=10, random_state=0).fit_predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = SpectralClustering(k, affinity="nearest_neighbors", random_state=0).fit_predict(X)
    return max(nmi(y, km), nmi(y, sc))


def fit(name, X, k, y=None):
    """The estimator fitted with its defaults as the benchmark fits it (``y``, when
    given, is passed where an estimator ignores it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if name == "ISMClustering":
            return ikdr.ISMClustering(k, random_state=0).fit(X, y)
        if name == "KNetClustering":
            return ikdr.KNetClustering(k, random_state=0).fit(X, y)
        if name == "KDAC":  # an existing clustering unrelated to the data
            existing = np.random.default_rng(0).integers(0, 2, X.shape[0])
            return ikdr.KDAC(k, random_state=0).fit(X, existing)
        scores = (X - X.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
        return ikdr.SemiSupervisedISM(k, random_state=0).fit(X, scores)


def fit_labels(name, X, k):
    return fit(name, X, k).labels_


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("data", ["iris", "wine"])
def test_each_clusterer_meets_the_floor_on_small_public_data(estimator, data):
    X, y = _DATA.bundled(data)
    k = len(np.unique(y))
    assert nmi(y, fit_labels(estimator, X, k)) >= baseline(X, y) - MARGIN


SETS = ["circles", "moons", "blobs", "anisotropic", "varied"]
CASES = ([(e, s, seed) for e in ("ISMClustering", "KNetClustering") for s in SETS
          for seed in (0, 1)]
         + [(e, s, 0) for e in ("KDAC", "SemiSupervisedISM") for s in ("circles", "moons", "varied")])


@pytest.mark.parametrize("estimator, data, seed", CASES)
def test_defaults_reach_the_baselines(estimator, data, seed):
    X, y = generated(data, seed)
    k = len(np.unique(y))
    assert nmi(y, fit_labels(estimator, X, k)) >= baseline(X, y) - MARGIN


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_breast_cancer_reaches_the_knn_baseline(estimator):
    # every dense affinity of all 30 features gives 0.46-0.59 here; the 10-NN graph
    # start (scikit-learn's kNN spectral clustering, 0.66) is what the criterion keeps
    X, y = _DATA.bundled("breast_cancer")
    assert nmi(y, fit_labels(estimator, X, 2)) >= baseline(X, y) - MARGIN


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


@pytest.mark.parametrize("estimator", ["ISMClustering", "KNetClustering"])
def test_the_fit_reads_no_labels(estimator):
    # y is ignored: the criterion that chooses among the candidates never sees it,
    # so true, permuted and absent labels give the same fit
    X, y = _DATA.bundled("wine")
    permuted = np.random.default_rng(0).permutation(y)
    fits = [fit(estimator, X, 3, labels) for labels in (None, y, permuted)]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.labels_, fits[0].labels_)
        np.testing.assert_array_equal(other.transform(X), fits[0].transform(X))


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


def test_face_default_q_is_half_the_features_unless_guided():
    X, y = _face()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ism = ikdr.ISMClustering(20, random_state=0).fit(X)
        first = (X - X.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
        semi = ikdr.SemiSupervisedISM(20, random_state=0).fit(X, first)
        kdac = ikdr.KDAC(20, max_iter=2, random_state=0).fit(
            X, np.random.default_rng(0).integers(0, 2, X.shape[0]))
    assert ism.components_.shape[1] == 10
    assert semi.components_.shape[1] == 20        # guided: the floor min(d, k)
    # against an existing clustering not visible in X, KDAC fits by ISMClustering's
    # rules: the eigengap of its Phi_0 (19 here), at least 10
    assert kdac.existing_dependence_ < 2 and 10 <= kdac.components_.shape[1] < 20


@pytest.mark.parametrize("data, seed", [("varied", 0), ("varied", 2), ("blobs", 1)])
def test_knet_rounding_is_judged_by_the_criterion(data, seed):
    # KNet's own small sigma scored a partition isolating a few outliers highest
    # (NMI 0.02-0.04 on varied blobs); the multi-graph cut does not reward that
    X, y = generated(data, seed)
    model = fit("KNetClustering", X, 3)
    assert {"kmeans", "spectral", "graph", "kernel"} <= set(model.partition_criterion_)
    scores = model.partition_criterion_
    assert scores[model.rounding_] == min(scores.values())
    assert min(np.bincount(model.labels_, minlength=3)) >= 0.1 * X.shape[0]
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert nmi(y, model.labels_) >= baseline(X, y) - MARGIN


def test_knet_rounding_without_local_bandwidths():
    # fewer than 3 x n_clusters rows with a numeric sigma: the graphs judge alone
    X = np.random.default_rng(0).normal(size=(8, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KNetClustering(3, sigma=1.0, random_state=0).fit(X)
    assert set(model.partition_criterion_) == {"kmeans", "spectral"}
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


def test_the_papers_alternation_converges():
    # strategy="alternate" runs the papers' alternation with the local-scaling kernel
    X, _ = generated("moons", 0, n=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = ikdr.ISMClustering(2, strategy="alternate", random_state=0).fit(X)
    assert model.converged_ and model.selection_ is None
    last = model.history_[-1]
    assert last["u_change"] < model.tol and last["w_change"] < model.tol


def test_the_default_fit_warns_when_max_iter_stops_a_falling_criterion():
    # wine: the criterion prefers the first W-step's clusters; max_iter=1 stops the run there
    X, _ = _DATA.bundled("wine")
    with pytest.warns(ConvergenceWarning, match="still preferred"):
        model = ikdr.ISMClustering(3, max_iter=1, random_state=0).fit(X)
    assert not model.converged_ and model.n_iter_ == 1 and model.history_[-1]["accepted"]


def test_the_default_fit_records_its_candidates():
    X, y = _DATA.bundled("wine")
    model = fit("ISMClustering", X, 3)
    names = [c["candidate"] for c in model.selection_]
    starts = [name for name in names if "W-step" not in name]
    assert starts[:3] == ["kmeans", "graph", "kernel"]
    # the kept start's W-steps follow it
    start = model.history_[0]["candidate"]
    assert names[names.index(start) + 1] == f"{start} + 1 W-step"
    scores = {c["candidate"]: c["criterion"] for c in model.selection_}
    kept = model.history_[model.best_iteration_ - 1]
    assert model.criterion_ == scores[kept["candidate"]] == kept["criterion"]
    # the kept start is the criterion's choice among the starts
    assert scores[start] == min(scores[name] for name in starts)
    # W-steps are kept only while the criterion falls, and the run stops at the first
    # that does not lower it or that barely moves U
    accepted = [h["criterion"] for h in model.history_ if h["accepted"]]
    assert accepted == sorted(accepted, reverse=True)
    last = model.history_[-1]
    assert model.converged_ == (not last["accepted"] or last.get("u_change", 0) < model.tol)


def test_default_q_is_at_least_the_cluster_count_or_d():
    X, _ = generated("circles", 0, n=200)
    assert ikdr.ISMClustering(2, random_state=0).fit(X).components_.shape[1] == 2


def test_kdac_leaves_out_a_direction_only_for_a_visible_existing_clustering():
    # a random partition is not visible in X (dependence ~ 1): q = d as in
    # ISMClustering, the rings are found; a real existing clustering (the
    # left/right view of four Gaussians) is visible (>= 3): q < d, the other view
    X, y = generated("circles", 0)
    existing = np.random.default_rng(0).integers(0, 2, X.shape[0])
    model = ikdr.KDAC(2, random_state=0).fit(X, existing)
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
    # mu_ = CQ(U_0) / Tr(F^T K_X F): the start's weighted terms are level (the start,
    # history_[0], is on every feature here)
    kernel = ikdr.spectral.auto_kernel(X, 3)
    F = ikdr.gamma.centered(ikdr.gamma.kernel_factor(scores.reshape(-1, 1),
                                                     ikdr.kernels.make_kernel("gaussian"),
                                                     random_state=0))
    K = kernel.matrix(X)
    start = model.history_[0]
    assert model.support_.size == X.shape[1]
    assert model.mu_ == pytest.approx(start["quality"] / np.sum(F * (K @ F)), rel=1e-6)
    assert model.mu_ * start["score_term"] == pytest.approx(start["quality"], rel=1e-6)


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


def test_clustering_importances_rank_what_the_projection_leaves_out(rng):
    """A feature the projection does not use (W zero on it) still ranks by its own
    dependence on the clusters: informative features above noise, the two shares
    summing to 1; a partition without two clusters leaves the projection alone."""
    from ikdr.cluster.base import clustering_importances

    labels = np.repeat([0, 1, 2], 200)
    X = rng.standard_normal((600, 12))
    X[:, :3] += 3.0 * np.eye(3)[labels]          # features 0-2 carry the clusters
    projection = np.zeros(12)
    projection[0] = 1.0                          # W uses feature 0 only
    importances = clustering_importances(X, projection, labels, random_state=0)
    assert importances.sum() == pytest.approx(1.0)
    assert set(np.argsort(-importances)[:3]) == {0, 1, 2}
    assert importances[0] > importances[1] > 0 and importances[3:].max() < importances[2]
    np.testing.assert_array_equal(clustering_importances(X, projection, np.zeros(600, int)),
                                  projection)


def test_screen_taken_where_all_features_hold_no_clusters():
    """The screen's second rule: every feature's U-step holds no k clusters (its
    (k-1)-th eigenvalue near 0) while the candidates' does, even with a gap the
    first rule refuses (make_classification 4 of 100, seed 2)."""
    from ikdr.cluster.screen import SCREEN_GAP_MARGIN, screen_taken

    flat, clustered = [0.0137, 0.0133, 0.0127], [0.9956, 0.9857, 0.9705]
    assert spectral_gap_of(clustered) < spectral_gap_of(flat) + SCREEN_GAP_MARGIN
    assert screen_taken(flat, clustered)
    assert not screen_taken([0.9, 0.7, 0.6], clustered)          # all features hold clusters
    assert not screen_taken(flat, [0.3, 0.2, 0.19])               # nor do the candidates
    assert screen_taken([0.5, 0.2, 0.01], [0.99, 0.9, 0.1])       # the gap rule


def spectral_gap_of(values):
    from ikdr.spectral import spectral_gap

    return spectral_gap(np.asarray(values))


def test_informative_features_of_a_clustering_no_view_of_all_features_shows():
    """make_classification, 4 informative of 100 features, seed 2: no clustering of all
    features finds the classes; the screen's two bimodal candidates do, and the
    importances put at least three informative features among the top four (the
    Laplacian score: two)."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(600, 100, n_informative=4, n_redundant=0, n_repeated=0,
                               n_classes=3, n_clusters_per_class=1, class_sep=2.0,
                               shuffle=False, random_state=2)
    X = StandardScaler().fit_transform(X)
    model = ikdr.ISMClustering(3, random_state=2).fit(X)
    assert nmi(y, model.labels_) > 0.5                    # 0.005 on all 100 features
    assert len(set(np.argsort(-model.feature_importances_)[:4]) & {0, 1, 2, 3}) >= 3
