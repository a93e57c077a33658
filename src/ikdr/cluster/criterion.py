r"""A label-free criterion that ranks clusterings of the same data: the multi-graph cut.

A partition :math:`P = (C_1, \dots, C_k)` of the rows of X is scored by its
normalised cut (Shi and Malik 2000) under several neighbourhood graphs of X,
averaged:

.. math:: \mathrm{cut}(P) = \frac{1}{|J|}\sum_{A \in J} \frac{1}{k}\sum_{c=1}^{k}
          \frac{\mathrm{vol}_A(C_c) - A(C_c, C_c)}{\mathrm{vol}_A(C_c)},
          \qquad \mathrm{vol}_A(C) = \sum_{i \in C} \sum_j A_{ij},

the share of each cluster's edge weight that leaves it, per cluster (0: the
clusters are disconnected; lower is better). The judges J are the symmetric
10- and 20-nearest-neighbour graphs of X and the dense local-scaling
affinity of X (:func:`ikdr.spectral.auto_kernel`), and, when a feature screen
took a few features, the same three on those features. (With fewer than
three rows per cluster the local scales are not defined and the graphs judge
alone.)

Why several graphs. Each judge alone prefers the partition that spectral
clustering of its own graph finds (the 10-NN graph picks scikit-learn's
kNN spectral clustering on every data set; :doc:`/clustering_defaults`). A
partition that is good under graphs of three scales is rarely an artefact of
one of them, and a judge that sees no clusters (the local-scaling affinity of
64-dimensional digits, whose cuts differ by less than 0.01 between
partitions) contributes a near-constant and so abstains. The criterion reads
no labels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from .._config import fits_memory
from .._utils.labels import one_hot
from ..kernels import Kernel
from ..spectral import DENSE_MAX_N, auto_kernel
from .neighbours import nearest_neighbours, neighbour_graph

__all__ = ["JUDGE_NEIGHBORS", "PartitionCriterion", "View", "normalised_cut"]

#: the neighbourhood sizes of the criterion's graph judges (10 is scikit-learn's
#: SpectralClustering default; 20 alone or 10 alone each lost one data set of the
#: benchmark, both together none: :doc:`/clustering_defaults`)
JUDGE_NEIGHBORS = (10, 20)


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


@dataclass
class View:
    """A view of X the criterion judges on: the features ``columns`` (None: all), with
    their :func:`ikdr.spectral.nearest_neighbours` (at least ``max(JUDGE_NEIGHBORS)``
    deep), local-scaling kernel and its matrix when already computed."""

    columns: Optional[np.ndarray] = None
    neighbours: Optional[tuple] = None
    local: Optional[Kernel] = None
    matrix: Optional[np.ndarray] = None


class _Judges:
    """The judges on one view of the data (all features, or the screened ones)."""

    def __init__(self, X, n_clusters, view, n_threads):
        Z = np.ascontiguousarray(X if view.columns is None else X[:, view.columns])
        depth = max(JUDGE_NEIGHBORS)
        neighbours = view.neighbours
        if neighbours is None or neighbours[1].shape[1] < min(depth, Z.shape[0]):
            neighbours = nearest_neighbours(Z, depth)
        local = view.local
        if local is None and Z.shape[0] >= 3 * n_clusters and np.any(Z != Z[:1]):
            local = auto_kernel(Z, n_clusters)
        self.graphs = [neighbour_graph(neighbours[1], m) for m in JUDGE_NEIGHBORS]
        self.Z, self.local, self.n_threads = Z, local, n_threads
        self.K = view.matrix
        n = Z.shape[0]
        if local is not None and self.K is None and n <= DENSE_MAX_N and \
                fits_memory(8 * n * n):
            self.K = local.matrix(Z, n_threads=n_threads)

    def cuts(self, Ys):
        """Each judge's cut of each partition (indicators ``Ys``): one product per
        judge for all of them (the local affinity's n x n matrix is read once)."""
        Y = np.hstack(Ys)
        splits = np.cumsum([block.shape[1] for block in Ys])[:-1]
        products = [A @ Y for A in self.graphs]
        if self.local is not None:      # (fewer than 3 rows per cluster: no local scales)
            if self.K is not None:
                products.append(self.K @ Y)
            else:                       # large n: one fused product, K never formed
                products.append(self.local.product(self.Z, np.ascontiguousarray(Y),
                                                   n_threads=self.n_threads)[0])
        return [[_cut(AY_c, Y_c) for AY_c, Y_c in zip(np.split(np.asarray(AY), splits, axis=1),
                                                       Ys)]
                for AY in products]


class PartitionCriterion:
    r"""The multi-graph normalised cut of partitions of X (lower is better; see the module).

    Parameters
    ----------
    X : ndarray (n, d)
        The data the partitions divide (standardised).
    n_clusters : int
    views : sequence of View, default=(View(),)
        The views judged: all features, and the screened features of
        :func:`ikdr.cluster.screen.screen_features` when a screen was taken.
    n_threads : int or None

    Cost: one k-NN query per view (unless given), the n x n local affinity (formed up to
    :data:`ikdr.spectral.DENSE_MAX_N` rows, else one fused kernel product per
    call), then O(n k (20 + n)) per partition scored.

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

    def __init__(self, X, n_clusters: int, *, views: Sequence[View] = (View(),),
                 n_threads: int | None = None) -> None:
        X = np.asarray(X, dtype=np.float64)
        self.n_clusters = int(n_clusters)
        self.views = [_Judges(X, self.n_clusters, view, n_threads) for view in views]

    def cuts(self, labels) -> np.ndarray:
        """Each judge's normalised cut of the partition (views in order, graphs by
        neighbourhood size, then the local affinity)."""
        return self._cuts([labels])[:, 0]

    def _cuts(self, partitions) -> np.ndarray:
        """Judges x partitions normalised cuts."""
        n = self.views[0].Z.shape[0]
        Ys = []
        for labels in partitions:
            labels = np.asarray(labels)
            if labels.shape != (n,):
                raise ValueError(f"labels must have one entry per row of X ({n}), got shape "
                                 f"{labels.shape}")
            Ys.append(_indicators(labels, self.n_clusters))
        return np.array([judge for view in self.views for judge in view.cuts(Ys)])

    def __call__(self, labels) -> float:
        """The criterion: the judges' mean normalised cut of the partition."""
        return float(np.mean(self.cuts(labels)))

    def scores(self, partitions) -> list:
        """The criterion of each of several partitions (as calling it on each, with
        one product per judge for all of them)."""
        partitions = list(partitions)
        if not partitions:
            return []
        return [float(value) for value in self._cuts(partitions).mean(axis=0)]

