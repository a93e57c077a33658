"""Per-class and per-cluster importances (``class_importances_``, ``cluster_importances_``),
the feature importances built from them, their intervals, and a support that does not
depend on ``random_state``."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr._utils.sampling import sample_pairs
from ikdr.gamma import Gamma, supervised_gamma
from ikdr.kernels.bandwidth import PAIR_SAMPLES, feature_median_distances
from ikdr.reduction.importances import combined_importances, group_contrasts
from ikdr.reduction.marginal import marginal_dependence


def _standardised(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _small_class_case(seed):
    """Three large classes apart on features 0-5 (two each), a class of 30 rows marked
    by feature 6 alone, 23 noise features."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), (500, 300, 200, 30))
    X = rng.standard_normal((y.size, 30))
    for c in range(3):
        X[y == c, 2 * c:2 * c + 2] += 2.0
    X[y == 3, 6] += 3.0
    return _standardised(X), y


@pytest.mark.parametrize("seed", [0, 1])
def test_a_small_class_marked_by_its_own_feature_ranks_at_the_top(seed):
    """Weighted by class size, the small class's feature came 7th, after the six of the
    large classes (importance 0.003 against 0.08-0.25); each class weighed alike, it
    ranks with them, and first for its class."""
    X, y = _small_class_case(seed)
    model = ikdr.ISM(random_state=seed).fit(X, y)
    order = np.argsort(-model.feature_importances_)
    assert 6 in order[:3]
    assert model.class_importances_.shape == (4, 30)
    assert np.argmax(model.class_importances_[3]) == 6
    # each large class's two features lead its row
    for c in range(3):
        assert set(np.argsort(-model.class_importances_[c])[:2]) == {2 * c, 2 * c + 1}


def test_class_importances_follow_classes_and_their_intervals_hold_the_estimate():
    X, y = _small_class_case(0)
    names = np.array(["b", "c", "d", "a"])[y]         # the small class sorts first
    model = ikdr.ISM(random_state=0).fit(X, names)
    assert list(model.classes_) == ["a", "b", "c", "d"]
    assert np.argmax(model.class_importances_[0]) == 6
    np.testing.assert_allclose(model.class_importances_.sum(axis=1), 1.0)
    assert model.feature_importances_.sum() == pytest.approx(1.0)
    assert np.all(model.class_importances_ >= 0)
    rows, intervals = model.class_importances_, model.class_importance_intervals_
    assert intervals.shape == (4, 30, 2)
    assert np.all(intervals[..., 0] <= rows + 1e-15) and np.all(rows <= intervals[..., 1] + 1e-15)
    low, high = model.feature_importance_intervals_.T
    assert model.feature_importance_intervals_.shape == (30, 2)
    assert np.all(low <= model.feature_importances_ + 1e-15)
    assert np.all(model.feature_importances_ <= high + 1e-15)
    assert high[6] > 0 and np.all(high[7:] < low[6])     # the noise stays below the marker


def test_two_classes_have_the_same_row_twice():
    """h_1 = -h_0: what tells one class from the other is the same for both."""
    X, y = load_breast_cancer(return_X_y=True)
    model = ikdr.ISM(random_state=0).fit(StandardScaler().fit_transform(X), y)
    np.testing.assert_array_equal(model.class_importances_[0], model.class_importances_[1])
    np.testing.assert_allclose(model.feature_importances_, model.class_importances_[0])


def test_a_continuous_target_has_no_class_importances():
    X, y = _small_class_case(0)
    model = ikdr.ISM(random_state=0).fit(X, y)
    assert hasattr(model, "class_importances_")
    model.fit(X, X[:, 0] + X[:, 1] ** 2)              # a refit on a continuous target
    assert not hasattr(model, "class_importances_")
    assert not hasattr(model, "class_importance_intervals_")
    assert model.feature_importance_intervals_.shape == (30, 2)
    assert set(np.argsort(-model.feature_importances_)[:2]) == {0, 1}


def _jaccard(a, b):
    return len(set(a) & set(b)) / len(set(a) | set(b))


def test_the_support_does_not_depend_on_random_state():
    """Breast cancer: with a margin inside the halves' sampling noise the support had
    23-28 features over seeds 0-9 (mean pairwise Jaccard 0.93)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    supports = [ikdr.ISM(random_state=seed).fit(X, y).support_ for seed in range(5)]
    jaccard = [_jaccard(a, b) for a, b in itertools.combinations(supports, 2)]
    assert np.mean(jaccard) >= 0.98


def test_group_contrasts_sum_to_the_class_balanced_gamma():
    y = np.repeat([0, 1, 2], [50, 20, 5])
    H, groups = group_contrasts(y)
    np.testing.assert_allclose(H.sum(axis=0), 0.0, atol=1e-15)      # centered
    P = (y[:, None] == groups[None, :]) / np.bincount(y)
    J = np.eye(3) - 1.0 / 3
    np.testing.assert_allclose(H @ H.T, (3 / 2) ** 2 * P @ J @ P.T, atol=1e-15)
    two, _ = group_contrasts(y[y < 2])
    np.testing.assert_allclose(two[:, 1], -two[:, 0])
    # a group absent from the rows (a class missing from one held-out half)
    absent, _ = group_contrasts(y[y < 2], groups=np.array([0, 1, 2]))
    assert np.all(absent[:, 2] == 0)
    np.testing.assert_allclose(absent[:, :2], two)
    with pytest.raises(ValueError, match="at least 2 groups"):
        group_contrasts(np.zeros(10), groups=np.array([0, 1]))


def test_the_parts_share_each_row_and_the_largest_share_ranks_the_features():
    losses = np.array([[3.0, 1.0, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0]])
    marginal = np.array([[0.0, 1.0, 1.0, 2.0], [0.0, 0.0, 0.0, 4.0]])
    rows, features = combined_importances(losses, marginal)
    np.testing.assert_allclose(rows[0], [0.375, 0.125 + 0.125, 0.125, 0.25])
    np.testing.assert_allclose(rows[1], [0.0, 0.0, 0.0, 1.0])       # one part alone
    top = np.maximum(rows[0], rows[1])
    np.testing.assert_allclose(features, top / top.sum())
    rows, features = combined_importances(np.zeros((2, 3)), np.zeros((2, 3)))
    assert not rows.any() and not features.any()


@pytest.mark.parametrize("sparse", [False, True])
def test_marginal_dependence_in_parts_is_one_gamma_per_part(sparse):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 300)
    X = rng.standard_normal((300, 6))
    X[:, 0] += y
    X[rng.random((300, 6)) < 0.5] = 0.0                 # ties, as in counts
    H, _ = group_contrasts(y)
    data = scipy.sparse.csr_matrix(X) if sparse else X
    for parts, members in (([0, 1, 2, 3], [[0], [1], [2], [3]]), ([1, 0, 0, 1], [[1, 2], [0, 3]])):
        together = marginal_dependence(data, Gamma(H), with_noise=True, parts=np.array(parts))
        for part, columns in enumerate(members):
            alone = marginal_dependence(data, Gamma(H[:, columns]), with_noise=True)
            for got, want in zip(together, alone):
                # the same bins and medians; the sums over bins in another order
                np.testing.assert_allclose(got[:, part], want, rtol=1e-9,
                                           atol=1e-9 * np.abs(want).max())
    summed = marginal_dependence(X, Gamma(H))
    np.testing.assert_allclose(together[0].sum(axis=1), summed, rtol=1e-9,
                               atol=1e-9 * np.abs(summed).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_the_median_of_tied_features_is_that_of_their_untied_pairs(sparse):
    """Features with more than half of the sampled pairs tied (counts with many zeros)
    take the median of the untied distances, the same bits as np.median of them (all
    such features at once, dense or sparse X); over every pair (``pairs=None``) the
    same rule, and the plain median with ``untied=False``."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 8))
    X[rng.random((500, 8)) < 0.8] = 0.0
    X[:, 3] = 0.0                                       # constant: no untied pair
    X[:2, 4] = 1.0                                      # few untied pairs
    X[:, 5] = rng.integers(0, 3, 500)                   # ordinal, untied mostly
    pairs = np.random.default_rng(0).integers(0, 500, size=(2, 2000))
    pairs = pairs[:, pairs[0] != pairs[1]]
    gaps = np.abs(X[pairs[0]] - X[pairs[1]])
    want = []
    for j in range(8):
        untied = gaps[:, j][gaps[:, j] > 0]
        median = np.median(gaps[:, j])
        want.append(median if median > 0 or untied.size == 0 else np.median(untied))
    assert sum(np.median(gaps, axis=0) == 0) >= 6       # the tied case is tested
    data = scipy.sparse.csr_matrix(X) if sparse else X
    np.testing.assert_array_equal(feature_median_distances(data, pairs), want)
    plain = np.median(gaps, axis=0)
    np.testing.assert_array_equal(feature_median_distances(data, pairs, untied=False), plain)
    # every pair of the first 80 rows, exactly
    head = X[:80]
    every = np.abs(head[:, None, :] - head[None, :, :])[np.triu_indices(80, 1)]
    want = []
    for j in range(8):
        untied = every[:, j][every[:, j] > 0]
        median = np.median(every[:, j])
        want.append(median if median > 0 or untied.size == 0 else np.median(untied))
    got = feature_median_distances(scipy.sparse.csr_matrix(head) if sparse else head)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        feature_median_distances(head, untied=False), np.median(every, axis=0))


def test_the_pairs_of_the_medians_follow_random_state():
    """The marginal dependence's pairs are drawn by its random_state: the same seed
    gives the same numbers, another seed other medians (dense and sparse alike)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    gamma = ikdr.supervised_gamma(rng.integers(0, 2, 300))[0]
    first = marginal_dependence(X, gamma, random_state=3)
    np.testing.assert_array_equal(marginal_dependence(X, gamma, random_state=3), first)
    assert not np.array_equal(marginal_dependence(X, gamma, random_state=4), first)
    sparse = marginal_dependence(scipy.sparse.csr_matrix(X), gamma, random_state=3)
    np.testing.assert_allclose(sparse, first, rtol=1e-9, atol=1e-12)
    a, b = sample_pairs(300, PAIR_SAMPLES, 3), sample_pairs(300, PAIR_SAMPLES, 3)
    np.testing.assert_array_equal(a, b)
    assert a.shape[0] == 2 and np.all(a[0] != a[1]) and a.shape[1] <= 4 * 300


def _marked_clusters(seed=0):
    """Three clusters of 250, 150 and 60 rows, each apart on a feature of its own
    (0, 1, 2), among 6 noise features."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), (250, 150, 60))
    X = rng.standard_normal((labels.size, 9))
    for c in range(3):
        X[labels == c, c] += 5.0
    return _standardised(X), labels


@pytest.mark.parametrize("make", [
    lambda: (ikdr.ISMClustering(3, random_state=0), ()),
    lambda: (ikdr.SemiSupervisedISM(3, random_state=0), ("partial",)),
    lambda: (ikdr.KDAC(3, random_state=0), ("existing",)),
    lambda: (ikdr.KNetClustering(3, random_state=0, max_iter=3), ()),
], ids=["ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering"])
def test_every_clusterer_marks_each_cluster_by_its_own_feature(make):
    X, truth = _marked_clusters()
    model, extra = make()
    rng = np.random.default_rng(0)
    second = {"partial": np.where(rng.random(truth.size) < 0.1, truth, -1),
              "existing": rng.integers(0, 2, truth.size)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, *[second[e] for e in extra])
    rows = model.cluster_importances_
    assert rows.shape == (3, 9)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0)
    for cluster in range(3):
        members = truth[model.labels_ == cluster]
        marked = np.bincount(members, minlength=3).argmax()     # the true cluster it found
        assert np.argmax(rows[cluster]) == marked


def test_importance_intervals_per_class_and_per_cluster():
    X, y = _small_class_case(0)
    model = ikdr.ISM(random_state=0).fit(X, y)
    out = ikdr.importance_intervals(model, X, y, n_resamples=3, random_state=0)
    assert out.group_samples.shape == (3, 4, 30)
    np.testing.assert_array_equal(out.groups, model.classes_)
    assert np.all(out.group_low <= out.group_high)
    assert np.all(out.group_low[3, 6] > out.group_high[3, 7:])     # the marker, every refit
    X, truth = _marked_clusters()
    clusters = ikdr.ISMClustering(3, random_state=0).fit(X)
    out = ikdr.importance_intervals(clusters, X, n_resamples=3, random_state=0)
    # the refits' clusters are matched to the model's: each keeps its own feature first
    for cluster in range(3):
        marked = np.argmax(clusters.cluster_importances_[cluster])
        assert np.all(np.argmax(out.group_samples[:, cluster], axis=1) == marked)
    regression = ikdr.ISM(random_state=0).fit(X, X[:, 0] ** 2)
    assert ikdr.importance_intervals(regression, X, X[:, 0] ** 2, n_resamples=2).groups is None
