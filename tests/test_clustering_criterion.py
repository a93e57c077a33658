"""The default fit's parts: the k-NN graph U-step, the multi-graph cut, the feature screen."""
import warnings

import numpy as np
import pytest
from sklearn.cluster import SpectralClustering
from sklearn.datasets import load_iris, load_wine, make_moons
from sklearn.preprocessing import StandardScaler

from ikdr.cluster.criterion import JUDGE_NEIGHBORS, PartitionCriterion, normalised_cut
from ikdr.cluster.neighbors import graph_embedding, nearest_neighbors, neighbor_graph
from ikdr.cluster.screen import feature_gaps
from ikdr.kernels.bandwidth import feature_median_distances
from ikdr.kernels import Gaussian
from ikdr.spectral import spectral_embedding, spectral_gap


@pytest.mark.parametrize("data", ["moons", "iris", "wine"])
def test_graph_u_step_is_scikit_learns_knn_spectral_clustering(data):
    if data == "moons":
        X, _ = make_moons(300, noise=0.08, random_state=0)
        k = 2
    else:
        X, y = (load_iris if data == "iris" else load_wine)(return_X_y=True)
        k = len(np.unique(y))
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = SpectralClustering(k, affinity="nearest_neighbors",
                                      random_state=3).fit_predict(X)
    _, indices = nearest_neighbors(X, 20)          # deeper than the graph: its first 10
    labels, vals = graph_embedding(neighbor_graph(indices, 10), k, random_state=3)
    np.testing.assert_array_equal(labels, expected)
    assert vals[0] == pytest.approx(1.0) and np.all(np.diff(vals) <= 1e-12)


def _dense_cut(A, labels):
    A = np.asarray(A.todense() if hasattr(A, "todense") else A)
    total = 0.0
    for c in np.unique(labels):
        inside = labels == c
        total += A[inside][:, ~inside].sum() / A[inside].sum()
    return total / len(np.unique(labels))


def test_normalised_cut_is_the_share_of_each_clusters_edges_that_leave_it(rng):
    X = rng.standard_normal((60, 3))
    labels = rng.integers(0, 4, 60)
    A = neighbor_graph(nearest_neighbors(X, 10)[1], 10)
    assert normalised_cut(A, labels) == pytest.approx(_dense_cut(A, labels), rel=1e-12)
    K = Gaussian(1.0).fit(X).matrix(X)
    assert normalised_cut(K, labels) == pytest.approx(_dense_cut(K, labels), rel=1e-12)
    assert normalised_cut(A, np.zeros(60, dtype=int), 3) == 0.0   # one cluster, two empty


def test_criterion_averages_its_judges_and_reads_only_the_partition(rng):
    X = np.vstack([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
    criterion = PartitionCriterion(X, 2)
    split, mixed = np.repeat([0, 1], 50), np.arange(100) % 2
    cuts = criterion.cuts(split)
    assert cuts.shape == (len(JUDGE_NEIGHBORS) + 1,)
    assert criterion(split) == pytest.approx(cuts.mean())
    assert criterion(split) < 0.01 < 0.4 < criterion(mixed)
    # relabelling the clusters changes nothing
    assert criterion(1 - split) == pytest.approx(criterion(split), rel=1e-12)
    with pytest.raises(ValueError, match="one entry per row"):
        criterion(split[:-1])


def test_criterion_without_local_scales_judges_by_the_graphs(rng):
    X = rng.standard_normal((8, 2))         # fewer than 3 rows per cluster
    criterion = PartitionCriterion(X, 3)
    assert criterion.cuts(np.arange(8) % 3).shape == (len(JUDGE_NEIGHBORS),)


def test_median_pair_difference_is_exact(rng):
    for m in (2, 3, 17, 200):
        for z in (rng.standard_normal(m), rng.integers(0, 5, m).astype(float),
                  np.r_[np.zeros(m // 2), rng.standard_normal(m - m // 2)]):
            pairs = np.abs(np.subtract.outer(z, z))[np.triu_indices(m, 1)]
            assert feature_median_distances(z[:, None], untied=False)[0] == np.median(pairs)
    assert feature_median_distances(np.ones((5, 1)), untied=False)[0] == 0.0


def test_binned_feature_gaps_match_the_sample_gaps(rng):
    # two features with two and three modes, one of noise
    n = 300
    X = np.column_stack([np.r_[rng.normal(-2, 0.5, n // 2), rng.normal(2, 0.5, n // 2)],
                         rng.normal(0, 0.4, n) + 3 * rng.integers(0, 3, n),
                         rng.standard_normal(n)])
    for groups in (2, 3):
        binned = feature_gaps(X, groups)
        for j in range(3):
            z = X[:, j:j + 1]
            s = 0.5 * feature_median_distances(z, untied=False)[0]
            _, vals, _ = spectral_embedding(z, Gaussian(s).fit(z), groups)
            assert binned[j] == pytest.approx(spectral_gap(vals), abs=2e-3)


def test_scores_judge_several_partitions_as_one_each(rng):
    """``scores`` reads each judge once for all the partitions; its values are those
    of the criterion called on each (to rounding: the products are summed in another
    order), and identical partitions get identical values within one call."""
    X = np.vstack([rng.normal(-3, 1, (60, 2)), rng.normal(3, 1, (60, 2))])
    criterion = PartitionCriterion(X, 2)
    halves = np.repeat([0, 1], 60)
    partitions = [halves, np.arange(120) % 2, rng.integers(0, 2, 120), 1 - halves, halves]
    together = criterion.scores(partitions)
    np.testing.assert_allclose(together, [criterion(p) for p in partitions], rtol=1e-12,
                               atol=1e-15)
    assert together[0] == together[4]
    assert together[0] < together[1]
    assert criterion.scores([]) == []
    with pytest.raises(ValueError, match="one entry per row"):
        criterion.scores([halves, halves[:10]])
