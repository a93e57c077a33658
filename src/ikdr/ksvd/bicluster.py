"""Biclustering by KSVD (paper Section 4.2, App. C.1)."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .estimator import KernelSVD
from .solvers import normalise_columns
from .._utils.typing import ArrayLike, RandomStateLike
from .._utils.validation import plain


def ksvd_bicluster(A: ArrayLike, n_row_clusters: int, n_column_clusters: int | None = None, *,
                   n_components: int | None = None, kernel: str = "rbf",
                   gamma: float | None = None, center: bool = True, compat: str | None = "pca",
                   solver: str = "auto", random_state: RandomStateLike = None
                   ) -> tuple[np.ndarray, np.ndarray, KernelSVD]:
    """Bicluster a data matrix: k-means on KSVD's left and right singular vectors.

    The rows (e.g. documents) are clustered on the left vectors U, the columns
    (e.g. terms) on the right vectors V (paper Section 4.2, App. C.1), each
    row of U and V scaled to unit length first. G is double-centered by
    default: an all-positive kernel's first singular pair is otherwise the
    near-constant mean direction, which carries no cluster information and
    leaves k - 1 useful vectors for k clusters (measured on make_biclusters /
    make_checkerboard: minimum NMI 0.74 without centering, 0.98 with).

    Parameters
    ----------
    A : {array-like, sparse matrix} of shape (N, M)
    n_row_clusters : int
    n_column_clusters : int or None
        Defaults to ``n_row_clusters``.
    n_components : int or None
        Rank r; None uses ``max(n_row_clusters, n_column_clusters)``.
    kernel, gamma, center, compat, solver, random_state
        As in :class:`KernelSVD` (``compat`` only used when N != M).

    Returns
    -------
    row_labels : ndarray of shape (N,)
    column_labels : ndarray of shape (M,)
    model : KernelSVD
        The fitted model.

    Examples
    --------
    >>> from sklearn.datasets import make_biclusters
    >>> from ikdr import ksvd_bicluster
    >>> A, rows, cols = make_biclusters((60, 40), 3, noise=1, random_state=0)
    >>> r, c, _ = ksvd_bicluster(A, 3, random_state=0)
    >>> r.shape, c.shape
    ((60,), (40,))
    """
    from sklearn.cluster import KMeans

    kc = n_row_clusters if n_column_clusters is None else n_column_clusters
    for name, k in (("n_row_clusters", n_row_clusters), ("n_column_clusters", kc)):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
            raise ValueError(f"{name} must be an int >= 2, got {plain(k)!r}")
    shape = A.shape
    r = n_components or max(n_row_clusters, kc)
    r = min(r, min(shape))
    sigma = "median" if gamma is None else float(gamma) / np.sqrt(2.0)
    model = KernelSVD(n_components=r, kernel=kernel, sigma=sigma, center=center,
                      compat=compat if shape[0] != shape[1] else None, solver=solver,
                      random_state=random_state).fit(A)
    rng = check_random_state(random_state)

    def labels(vectors, k):
        Y = normalise_columns(vectors.T).T
        return KMeans(k, n_init=10, random_state=rng.randint(2**31 - 1)).fit_predict(Y)

    return labels(model.left_vectors_, n_row_clusters), labels(model.right_vectors_, kc), model
