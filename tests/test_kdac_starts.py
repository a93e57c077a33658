"""KDAC's feature start: grids of blobs with noise features, the
spectral gap that picks the start, and bad existing clusterings."""
import warnings
from unittest import mock

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ikdr
from ikdr.cluster.kdac import feature_start
from ikdr.metrics import nmi
from ikdr.cluster.screen import screen_features
from ikdr.spectral import spectral_gap


def blob_grid(rows, cols, noise, per_cell=30, seed=0):
    """rows x cols Gaussian blobs 6 apart (std 0.5) + standard-normal noise features."""
    rng = np.random.default_rng(seed)
    r = np.repeat(np.arange(rows), cols * per_cell)
    c = np.tile(np.repeat(np.arange(cols), per_cell), rows)
    X = np.column_stack([6.0 * r + rng.normal(0, 0.5, r.size),
                         6.0 * c + rng.normal(0, 0.5, r.size),
                         rng.standard_normal((r.size, noise))])
    return (X - X.mean(0)) / X.std(0), r, c


@pytest.mark.parametrize("noise", [4, 20])
@pytest.mark.parametrize("given", ["rows", "columns"])
def test_grid_alternative_is_the_other_axis(noise, given):
    # the reported failure: a 2 x 3 grid + 4 noise features, one axis given, gave 0.379
    X, r, c = blob_grid(2, 3, noise)
    existing, alternative = (r, c) if given == "rows" else (c, r)
    k = np.unique(alternative).size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KDAC(k, random_state=0).fit(X, existing)
    assert nmi(alternative, model.labels_) >= 0.95
    assert model.novelty_ <= 0.1
    # the kept run is the feature start, on the other axis' feature
    assert model.start_ == 1
    assert np.argmax(np.abs(model.components_[:, 0])) == (1 if given == "rows" else 0)


def test_feature_start_ranks_the_clustered_feature_first():
    X, r, c = blob_grid(2, 3, 20)
    Y = np.eye(2)[r]
    start, sigma, scores = feature_start(X, Y, 3, random_state=0)
    assert np.argmax(scores) == 1 and start[1, 0] == 1.0 and start.sum() == 1.0
    assert scores[1] > 0.5 and np.max(np.delete(scores, 1)) < 0.3
    assert sigma > 0
    # the existing view's own feature scores low: its clusters are removed first
    assert scores[0] < 0.3


def test_feature_start_skipped_when_no_feature_clusters(rng=np.random.default_rng(1)):
    # Gaussian data with a visible existing clustering along a direction mixing
    # all features: no single feature holds k clusters, one run only
    X = rng.standard_normal((150, 4))
    y = (X.sum(axis=1) > 0).astype(int)
    X[y == 1] += 3.0
    X = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KDAC(2, random_state=0).fit(X, y)
    assert model.feature_scores_ is not None and model.feature_scores_.max() < 0.5
    assert model.start_ == 0 and model.start_gaps_.shape == (1,)


def test_spectral_gap():
    assert spectral_gap([0.99, 0.98, 0.05]) == pytest.approx(0.93)
    assert spectral_gap([0.9, 0.2]) == pytest.approx(0.7)
    assert spectral_gap([0.4]) == pytest.approx(0.4)


class TestBadExisting:
    X = np.random.default_rng(0).standard_normal((30, 3))

    def test_one_cluster(self):
        with pytest.raises(ValueError, match="single cluster"):
            ikdr.KDAC(2).fit(self.X, np.zeros(30))

    @pytest.mark.parametrize("as_list", [False, True])
    def test_one_sample_per_cluster(self, as_list):
        y = np.arange(30)
        with pytest.raises(ValueError, match="cluster of its own"):
            ikdr.KDAC(2).fit(self.X, [np.arange(30) % 2, y] if as_list else y)

    @pytest.mark.parametrize("est", [ikdr.KDAC, ikdr.ISMClustering, ikdr.SemiSupervisedISM])
    def test_more_clusters_than_samples(self, est):
        second = {ikdr.KDAC: np.arange(30) % 2, ikdr.SemiSupervisedISM: self.X[:, 0]}
        args = (second[est],) if est in second else ()
        with pytest.raises(ValueError, match="n_clusters"):
            est(40).fit(self.X, *args)

    def test_knet_more_clusters_than_samples(self):
        with pytest.raises(ValueError, match="n_clusters"):
            ikdr.KNetClustering(40).fit(self.X)

    def test_wrong_length_before_any_work(self):
        # the bandwidth's k-NN query (sigma="auto") must not run first
        with mock.patch("ikdr.cluster.base.auto_kernel",
                        side_effect=AssertionError("work started")):
            with pytest.raises(ValueError, match="wrong length"):
                ikdr.KDAC(2).fit(self.X, np.arange(29) % 2)

    def test_failed_fit_keeps_state(self):
        model = ikdr.KDAC(2, random_state=0).fit(self.X, np.arange(30) % 2)
        labels = model.labels_.copy()
        with pytest.raises(ValueError):
            model.fit(self.X, np.zeros(30))
        np.testing.assert_array_equal(model.labels_, labels)


def few_informative(n=300, noise=27, seed=0):
    """4 blobs in 3 features + standard-normal noise features, standardised."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n, n_features=3, centers=4, random_state=seed)
    X = np.hstack([X, np.random.default_rng(seed).standard_normal((n, noise))])
    return (X - X.mean(0)) / X.std(0), y


@pytest.mark.parametrize("est", ["ISMClustering", "SemiSupervisedISM"])
def test_screened_run_finds_the_informative_features(est):
    # the default run starts from spectral clustering of all 30 features, which
    # the noise dominates (0.26 on the benchmark's 3-of-50 set)
    X, y = few_informative()
    model = getattr(ikdr, est)(4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, *((X[:, 5],) if est == "SemiSupervisedISM" else ()))
    assert nmi(y, model.labels_) >= 0.85
    candidates = np.flatnonzero(model.feature_scores_ >= 0.25)
    assert set(candidates) <= {0, 1, 2} and len(candidates) >= 2
    np.testing.assert_array_equal(model.support_, candidates)
    # W is zero off the screened features, and transform uses it
    off = np.setdiff1d(np.arange(X.shape[1]), model.support_)
    assert np.all(model.components_[off] == 0)
    np.testing.assert_allclose(model.transform(X), X @ model.components_)


def test_screen_features():
    X, y = few_informative()
    columns, scores, gaps = screen_features(X, 4, random_state=0)
    np.testing.assert_array_equal(columns, np.flatnonzero(scores >= 0.25))
    assert gaps[1] >= gaps[0] + 0.05
    # all features informative: nothing to screen
    assert screen_features(X[:, :3], 4, random_state=0)[0] is None


def test_no_screen_without_a_clear_gain():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    # wine: 3 of 13 features split in two, but spectral clustering of them alone
    # separates the wines less clearly than all 13 (and scores 0.67 against 0.85)
    columns, scores, gaps = screen_features(X, 3, random_state=0)
    assert columns is None and np.sum(scores >= 0.25) >= 1 and gaps[1] < gaps[0] + 0.05
    model = ikdr.ISMClustering(3, random_state=0).fit(X)
    np.testing.assert_array_equal(model.support_, np.arange(13))
    assert nmi(y, model.labels_) >= 0.84


def test_two_views_given_the_third_is_found():
    # a 2 x 2 x 2 cube of blobs + 4 noise features, two axes given as a list:
    # the feature start's W stays on the third axis (it tilted towards noise: 0.89)
    rng = np.random.default_rng(0)
    cells = np.array(np.meshgrid([0, 1], [0, 1], [0, 1], indexing="ij")).reshape(3, -1).T
    cells = cells.repeat(30, axis=0)
    X = np.hstack([6.0 * cells + rng.normal(0, 0.5, cells.shape),
                   rng.standard_normal((cells.shape[0], 4))])
    X = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.KDAC(2, random_state=0).fit(X, [cells[:, 0], cells[:, 1]])
    assert nmi(cells[:, 2], model.labels_) >= 0.95 and model.novelty_ <= 0.1
    assert model.start_ == 1 and 2 in model.support_ and 0 not in model.support_
    np.testing.assert_allclose(np.abs(model.components_[2, 0]), 1.0)
