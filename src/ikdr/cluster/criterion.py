r"""A label-free criterion that ranks clusterings of the same data.

A partition :math:`P = (C_1, \dots, C_k)` of the rows of X is judged by two
measures on every feature of X (all candidates on one footing, whatever
features they were found on):

* the **multi-graph cut**: its normalised cut (Shi and Malik 2000) under
  several neighborhood graphs of X, averaged,

  .. math:: \mathrm{cut}(P) = \frac{1}{|J|}\sum_{A \in J} \frac{1}{k}\sum_{c=1}^{k}
            \frac{\mathrm{vol}_A(C_c) - A(C_c, C_c)}{\mathrm{vol}_A(C_c)},
            \qquad \mathrm{vol}_A(C) = \sum_{i \in C} \sum_j A_{ij},

  the share of each cluster's edge weight that leaves it (0: the clusters
  are disconnected). The judges J are the symmetric 10- and 20-nearest-neighbor
  graphs of X and its dense local-scaling affinity
  (:func:`ikdr.spectral.auto_kernel`), on X's distinct rows (copies of a row
  are one point, labelled as the first copy);
* the **compactness**: the Calinski-Harabasz ratio CH(P), between-cluster over
  within-cluster dispersion, each per degree of freedom.

The criterion is

.. math:: c(P) = \log \max(\mathrm{cut}(P), \epsilon) - \log \mathrm{CH}(P)

(lower is better; :math:`\epsilon` = :data:`CUT_FLOOR`), with two preferences
before it (:func:`choose`): partitions whose smallest cluster holds at least :data:`MIN_CLUSTER_SHARE` of an even
split's rows (*admissible*) over those that do not, and among them a
*separated* partition, one whose graph cuts are all below :data:`CUT_FLOOR`
(no neighborhood edge leaves its clusters) and whose smallest cluster holds at
least :data:`BALANCE` of an even split's rows, over one that is not: a clean
cut of the neighborhood graphs is what non-convex clusters (moons, rings)
have and what the compactness cannot see.

Why both. On public labelled data (``benchmarks/bench_clustering_real.py
--criteria``) a lower cut alone is not a truer clustering: the published
classes usually cut *more* neighborhood edges than k-means' or spectral
clustering's partitions, and the cut prefers whatever its own graph's spectral
clustering finds. The compactness alone picks k-means' convex cells on
manifolds. Their ratio ranks the candidates the way the labels do more
often than either (the rank correlations are on :doc:`/clustering_defaults`).
The floor stops the log from rewarding differences among cuts that are all
essentially zero.

Above :data:`SCORE_ROWS` rows the judges score a fixed random sample of rows
(the same for every partition), which keeps the criterion O(SCORE_ROWS^2)
whatever n. The criterion reads no labels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from sklearn.utils import check_random_state

from .._config import fits_memory
from .._utils.labels import one_hot
from ..spectral import auto_kernel
from .neighbors import nearest_neighbors, neighbor_graph

__all__ = ["Assessment", "BALANCE", "CUT_FLOOR", "MIN_CLUSTER_SHARE", "JUDGE_NEIGHBORS",
           "PartitionCriterion", "SCORE_ROWS",
           "choose", "normalised_cut"]

#: the neighborhood sizes of the criterion's graph judges (10 is scikit-learn's
#: SpectralClustering default; two sizes so that no one graph's artefacts decide)
JUDGE_NEIGHBORS = (10, 20)
#: cuts below this are "no edge leaves the clusters": they count as equal in the
#: criterion (the log would otherwise reward differences among cuts that are all
#: essentially zero), and a balanced partition whose graph cuts are all below it is
#: *separated* (two moons: 0-0.001; at 0.01, one-hot data's clumps made a partition
#: of mushroom separated that k-means' beats by 0.2 NMI)
CUT_FLOOR = 1e-3
#: a partition is *balanced* when its smallest cluster holds at least this share of the
#: n / k rows of an even split, and *admissible* when it holds at least
#: :data:`MIN_CLUSTER_SHARE` of them (k-means of data with outliers can give an outlier
#: a cluster of its own, and a graph with a disconnected clump a cluster of the clump)
BALANCE = 0.5
MIN_CLUSTER_SHARE = 0.05
#: rows the judges score at most (a fixed sample above): the local affinity on them is
#: formed densely, 72 MB at this size
SCORE_ROWS = 3000


def normalised_cut(A, labels, n_clusters=None):
    r"""The normalised cut of a partition under the affinity A, divided by k.

    :math:`\frac1k\sum_c (\mathrm{vol}(C_c) - A(C_c, C_c)) / \mathrm{vol}(C_c)`
    for a sparse or dense symmetric A (n x n) and integer labels; empty
    clusters count as 0. In [0, 1]: 0 when no edge leaves a cluster.
    """
    Y = _indicators(labels, n_clusters)
    return _cut(A @ Y, Y)


def _indicators(labels, n_clusters=None):
    Y, _ = one_hot(np.asarray(labels))
    if n_clusters is not None and Y.shape[1] < n_clusters:
        Y = np.hstack([Y, np.zeros((Y.shape[0], n_clusters - Y.shape[1]))])
    return Y


def _cut(AY, Y):
    """The normalised cut per cluster from :math:`AY` and the indicators Y."""
    AY = np.asarray(AY)
    volume = AY.sum(axis=0)     # sum over rows of (A Y): each cluster's volume
    within = np.sum(Y * AY, axis=0)
    kept = volume > 0
    return float(np.sum(1.0 - within[kept] / volume[kept]) / Y.shape[1])


def calinski_harabasz(Z, labels):
    r"""The Calinski-Harabasz ratio of a partition of the rows of Z (0 with fewer than two
    non-empty clusters, or a cluster per row):
    :math:`\frac{\mathrm{tr} B / (k - 1)}{\mathrm{tr} W / (n - k)}`, B and W the
    between- and within-cluster scatter. A partition with no within-cluster scatter
    and some between-cluster scatter is infinitely compact."""
    labels = np.asarray(labels)
    clusters, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    k, n = clusters.size, Z.shape[0]
    if k < 2 or k >= n:
        return 0.0
    Y = np.zeros((n, k))
    Y[np.arange(n), inverse.reshape(-1)] = 1.0
    means = (Y.T @ Z) / counts[:, None]
    center = Z.mean(axis=0)
    between = float(np.sum(counts * np.sum((means - center) ** 2, axis=1)))
    within = float(np.sum((Z - means[inverse.reshape(-1)]) ** 2))
    if within <= 0.0:
        return np.inf if between > 0 else 0.0
    return between * (n - k) / (within * (k - 1))


@dataclass(frozen=True)
class Assessment:
    """One partition's judgement: ``criterion`` (lower is better, see the module),
    ``separated`` (balanced, every graph cut below :data:`CUT_FLOOR`), ``cut`` (the
    judges' mean cut), ``compactness`` (its Calinski-Harabasz ratio) and
    ``admissible`` (no cluster below :data:`MIN_CLUSTER_SHARE` of an even split)."""

    criterion: float
    separated: bool
    cut: float
    compactness: float
    admissible: bool = True


def choose(assessments: Sequence[Assessment]) -> int:
    """The index of the best of several assessed partitions: among the admissible ones
    (all when none is), the lowest criterion of the separated ones when any is, else
    of all of them (ties: the earlier)."""
    pool = [i for i, a in enumerate(assessments) if a.admissible] or list(range(len(assessments)))
    pool = [i for i in pool if assessments[i].separated] or pool
    return min(pool, key=lambda i: (assessments[i].criterion, i))


class PartitionCriterion:
    r"""The label-free criterion of partitions of X: the multi-graph cut over the
    compactness (see the module; lower is better).

    Parameters
    ----------
    X : ndarray (n, d)
        The data the partitions divide, every feature (standardised; for wide or
        sparse data its projection on its leading singular vectors).
    n_clusters : int
    random_state : int, RandomState or None
        Draws the scored rows above :data:`SCORE_ROWS` rows.
    n_threads : int or None
    local_matrix : ndarray (n, n) or None
        :func:`ikdr.spectral.auto_kernel`'s matrix on X when the caller has formed it
        (used when every row is scored and no row repeats; it is read, not written).

    Cost: one k-NN query and the local affinity on at most :data:`SCORE_ROWS` rows,
    then O(m k (20 + m + d)) per partition scored (m the scored rows).

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.cluster.criterion import PartitionCriterion
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
    >>> criterion = PartitionCriterion(X, 2)
    >>> criterion(np.repeat([0, 1], 50)) < criterion(np.arange(100) % 2)
    True
    """

    def __init__(self, X, n_clusters: int, *, random_state=None, n_threads: int | None = None,
                 local_matrix=None) -> None:
        X = np.asarray(X, dtype=np.float64)
        self.n, self.n_clusters = X.shape[0], int(n_clusters)
        self.rows = None
        if self.n > SCORE_ROWS:
            rng = check_random_state(random_state)
            self.rows = np.sort(rng.choice(self.n, SCORE_ROWS, replace=False))
            X = X[self.rows]
        self.Z = np.ascontiguousarray(X)
        # the graphs join distinct points: copies of a row are one point (else a clump
        # of repeated rows is a clique no partition cuts, and any partition that keeps
        # the clumps whole looks separated)
        distinct, first = np.unique(self.Z, axis=0, return_index=True)
        self.first: np.ndarray | None = \
            None if distinct.shape[0] == self.Z.shape[0] else np.sort(first)
        points = self.Z if self.first is None else self.Z[self.first]
        m = points.shape[0]
        neighbors = nearest_neighbors(points, min(max(JUDGE_NEIGHBORS), m - 1))
        self.graphs = [neighbor_graph(neighbors[1], min(size, m - 1))
                       for size in JUDGE_NEIGHBORS] if m > 1 else []
        self.K = None
        if local_matrix is not None and self.rows is None and self.first is None:
            # the caller formed X's local affinity already (the selection's kernel start)
            self.K = local_matrix
        # fewer than 3 points per cluster: no local scales
        elif m >= 3 * self.n_clusters and fits_memory(8 * m * m):
            self.K = auto_kernel(points, self.n_clusters).matrix(points, n_threads=n_threads)

    def _scored(self, labels):
        labels = np.asarray(labels)
        if labels.shape != (self.n,):
            raise ValueError(f"labels must have one entry per row of X ({self.n}), got shape "
                             f"{labels.shape}")
        return labels if self.rows is None else labels[self.rows]

    def _judge_cuts(self, partitions):
        """Judges x partitions cuts: one product per judge for all of them (each distinct
        point labelled as its first copy)."""
        if self.first is not None:
            partitions = [labels[self.first] for labels in partitions]
        Ys = [_indicators(labels, self.n_clusters) for labels in partitions]
        Y = np.hstack(Ys)
        splits = np.cumsum([block.shape[1] for block in Ys])[:-1]
        judges = self.graphs + ([] if self.K is None else [self.K])
        return np.array([[_cut(AY_c, Y_c) for AY_c, Y_c in
                          zip(np.split(np.asarray(A @ Y), splits, axis=1), Ys)]
                         for A in judges])

    def cuts(self, labels) -> np.ndarray:
        """Each judge's normalised cut of the partition (graphs by neighborhood size,
        then the local affinity)."""
        return self._judge_cuts([self._scored(labels)])[:, 0]

    def assess(self, partitions) -> list:
        """The :class:`Assessment` of each of several partitions."""
        partitions = [self._scored(labels) for labels in partitions]
        if not partitions:
            return []
        cuts = self._judge_cuts(partitions)
        out = []
        for j, labels in enumerate(partitions):
            cut = float(np.mean(cuts[:, j]))
            compactness = calinski_harabasz(self.Z, labels)
            smallest = np.bincount(np.unique(labels, return_inverse=True)[1].reshape(-1),
                                   minlength=self.n_clusters).min() * self.n_clusters / len(labels)
            separated = bool(smallest >= BALANCE and
                             np.all(cuts[:len(self.graphs), j] < CUT_FLOOR))
            criterion = (np.inf if compactness <= 0 else
                         float(np.log(max(cut, CUT_FLOOR)) - np.log(compactness)))
            out.append(Assessment(criterion, separated, cut, compactness,
                                  bool(smallest >= MIN_CLUSTER_SHARE)))
        return out

    def __call__(self, labels) -> float:
        """The criterion of one partition (lower is better)."""
        return self.assess([labels])[0].criterion

    def scores(self, partitions) -> list:
        """The criterion of each of several partitions (as calling it on each)."""
        return [a.criterion for a in self.assess(partitions)]
