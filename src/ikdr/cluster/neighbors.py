"""The k-NN graph U-step: spectral clustering as scikit-learn's
``SpectralClustering(affinity="nearest_neighbors")`` does it, on X or on XW.

The clustering estimators' selection starts from it and judges every
clustering by graphs of this kind (:mod:`ikdr.cluster.criterion`,
:mod:`ikdr.cluster.selection`).
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.manifold import spectral_embedding as laplacian_eigenmaps
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .._config import one_thread

__all__ = ["GRAPH_NEIGHBORS", "nearest_neighbors", "neighbor_graph", "graph_embedding"]


#: neighbors of the graph U-step: scikit-learn's ``SpectralClustering`` default
GRAPH_NEIGHBORS = 10


def nearest_neighbors(Z, n_neighbors):
    """Distances and indices of each row's ``n_neighbors`` nearest rows of Z, the row
    itself first (one query; at most n rows)."""
    Z = np.asarray(Z)
    m = min(int(n_neighbors), Z.shape[0])
    return NearestNeighbors(n_neighbors=m).fit(Z).kneighbors(Z)


def neighbor_graph(indices, n_neighbors=GRAPH_NEIGHBORS):
    r"""The symmetric k-NN connectivity graph :math:`(A + A^T)/2` (sparse, n x n).

    ``indices``: each row's nearest rows, itself first (the second output of
    :func:`nearest_neighbors`), at least ``n_neighbors`` columns.
    :math:`A_{ij} = 1` when j is among the ``n_neighbors`` nearest rows of i,
    i itself included: the graph of scikit-learn's
    ``kneighbors_graph(include_self=True)`` that
    ``SpectralClustering(affinity="nearest_neighbors")`` clusters.
    """
    n = indices.shape[0]
    m = min(int(n_neighbors), indices.shape[1])
    A = sp.csr_matrix((np.ones(n * m), np.ascontiguousarray(indices[:, :m]).ravel(),
                       np.arange(0, n * m + 1, m)), shape=(n, n))
    return (0.5 * (A + A.T)).tocsr()


def graph_embedding(A, n_clusters, *, random_state=None):
    r"""The U-step of a graph: spectral clustering of the affinity A as scikit-learn does it.

    The ``n_clusters`` leading eigenvectors of :math:`D^{-1/2} A D^{-1/2}`
    (:math:`D = \mathrm{diag}(A1)`) scaled by :math:`D^{-1/2}` (scikit-learn's
    ``spectral_embedding``, the random-walk embedding of Shi and Malik), then
    k-means with 10 starts, both seeded by one ``RandomState`` in that order:
    the labels of ``SpectralClustering(affinity="precomputed")`` on A for the
    same ``random_state``.

    Returns
    -------
    labels : ndarray (n,)
    eigenvalues : ndarray (n_clusters,)
        The Rayleigh quotients of the eigenvectors in
        :math:`D^{-1/2} A D^{-1/2}`, descending (the first is 1).
    """
    rng = check_random_state(random_state)
    with warnings.catch_warnings():
        # a graph of several components is clustered all the same (scikit-learn warns)
        warnings.simplefilter("ignore", UserWarning)
        maps = laplacian_eigenmaps(A, n_components=int(n_clusters), random_state=rng,
                                   drop_first=False)
    with one_thread():
        labels = KMeans(n_clusters=int(n_clusters), n_init=10,
                        random_state=rng).fit_predict(maps)
    root = np.sqrt(np.asarray(A.sum(axis=1)).ravel())
    V = maps * root[:, None]
    V /= np.linalg.norm(V, axis=0, keepdims=True)
    S = V / root[:, None]
    vals = np.sum(S * (A @ S), axis=0)
    return labels, np.sort(vals)[::-1]
