"""The selection's parts: the k-NN graph U-step, the criterion, the feature screen."""
import warnings

import numpy as np
import pytest
from sklearn.cluster import SpectralClustering
from sklearn.datasets import load_iris, load_wine, make_moons
from sklearn.preprocessing import StandardScaler

from sklearn.metrics import calinski_harabasz_score

from ikdr.cluster.criterion import (CUT_FLOOR, JUDGE_NEIGHBORS, SCORE_ROWS, Assessment,
                                    PartitionCriterion, calinski_harabasz, choose,
                                    normalised_cut)
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


def test_criterion_is_the_log_of_the_cut_over_the_compactness(rng):
    X = np.vstack([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
    criterion = PartitionCriterion(X, 2)
    split, mixed = np.repeat([0, 1], 50), np.arange(100) % 2
    cuts = criterion.cuts(split)
    assert cuts.shape == (len(JUDGE_NEIGHBORS) + 1,)
    judged = criterion.assess([split, mixed])
    for labels, a in zip((split, mixed), judged):
        cut = criterion.cuts(labels).mean()
        assert a.cut == pytest.approx(cut)
        assert a.compactness == pytest.approx(calinski_harabasz_score(X, labels), rel=1e-10)
        assert a.criterion == pytest.approx(np.log(max(cut, CUT_FLOOR)) -
                                            np.log(a.compactness))
    assert judged[0].separated and not judged[1].separated
    assert criterion(split) < criterion(mixed)
    # relabelling the clusters changes nothing
    assert criterion(1 - split) == pytest.approx(criterion(split), rel=1e-12)
    with pytest.raises(ValueError, match="one entry per row"):
        criterion(split[:-1])


def test_compactness_edge_cases(rng):
    X = rng.standard_normal((10, 2))
    assert calinski_harabasz(X, np.zeros(10, dtype=int)) == 0.0     # one cluster
    assert calinski_harabasz(X, np.arange(10)) == 0.0               # a cluster per row
    twins = np.repeat([[0.0, 0.0], [1.0, 1.0]], 5, axis=0)
    assert calinski_harabasz(twins, np.repeat([0, 1], 5)) == np.inf
    # one cluster is the worst partition there is
    assert PartitionCriterion(X, 2)(np.zeros(10, dtype=int)) == np.inf


def test_choose_prefers_separated_partitions_then_the_lowest_criterion():
    a = Assessment(-5.0, False, 0.1, 10.0)
    b = Assessment(-3.0, True, 0.0, 2.0)
    c = Assessment(-4.0, True, 0.0, 3.0)
    assert choose([a, b, c]) == 2
    assert choose([a, Assessment(-6.0, False, 0.1, 20.0)]) == 1
    assert choose([a, a]) == 0                  # ties: the earlier


def test_moons_prefer_the_graph_partition_to_k_means():
    """The compactness alone prefers k-means' convex halves of two moons; the graph cut
    of the true moons is zero, so the separated partition wins."""
    from sklearn.cluster import KMeans

    X, y = make_moons(400, noise=0.05, random_state=0)
    criterion = PartitionCriterion(X, 2)
    km = KMeans(2, n_init=10, random_state=0).fit_predict(X)
    truth, kmeans = criterion.assess([y, km])
    assert truth.compactness < kmeans.compactness
    assert choose([kmeans, truth]) == 1


def test_large_n_scores_a_fixed_sample_of_rows(rng):
    n = SCORE_ROWS + 500
    X = np.vstack([rng.normal(-3, 1, (n // 2, 2)), rng.normal(3, 1, (n - n // 2, 2))])
    labels = (np.arange(n) >= n // 2).astype(int)
    first = PartitionCriterion(X, 2, random_state=0)
    assert first.Z.shape[0] == SCORE_ROWS
    assert first(labels) == PartitionCriterion(X, 2, random_state=0)(labels)
    assert first(labels) < first(rng.integers(0, 2, n))


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
