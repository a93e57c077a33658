r"""Bandwidth rules of the Gaussian kernels: the median heuristic and the class separation.

:func:`median_sigma` is the papers' rule: the median pairwise distance of the
training rows (a seeded subsample above ``max_samples`` rows).

:func:`separation_sigma` is the authors' library's default bandwidth for
supervised IKDR (dissertation, Appendix D.11): the :math:`\sigma` maximising
the mean within-class kernel value minus the mean between-class value,

.. math::
   J(\sigma) = \frac{\sum_c 1_c^T K 1_c - n}{\sum_c n_c^2 - n}
             - \frac{1^T K 1 - \sum_c 1_c^T K 1_c}{n^2 - \sum_c n_c^2},

found by a bounded 1-D optimiser (Brent) over :math:`\log\sigma`. Each
evaluation is one fused kernel pass :math:`(K Y, K 1)` over the points
(:meth:`ikdr.kernels.Kernel.product`): nothing n x n is stored. Above
``max_samples`` rows (default 3,000) J is evaluated on a seeded subsample (the
rows :func:`ikdr.median_sigma` uses), which estimates the two class means
with a standard error of order :math:`1/\sqrt{\text{pairs}}`, about 3e-4 at
3,000 rows.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.spatial.distance import pdist
from sklearn.utils import check_random_state

from .. import _native
from .._config import require_memory
from .._native import KernelTerm, TermKind
from .._utils.labels import one_hot
from .._utils.sampling import sample_index, sample_rows
from .._utils.validation import check_bandwidth, check_matrix
from .._utils.typing import ArrayLike, RandomStateLike

__all__ = ["MEDIAN_SUBSAMPLE", "median_sigma", "separation_sigma", "separation",
           "warn_if_kernel_vanishes"]

MEDIAN_SUBSAMPLE = 3000


def median_sigma(X: ArrayLike, Z: ArrayLike | None = None, *,
                 max_samples: int = MEDIAN_SUBSAMPLE,
                 random_state: RandomStateLike = None) -> float:
    r"""Median heuristic bandwidth: the median of :math:`\|x_i - x_j\|` over ``i < j``.

    Above ``max_samples`` rows (default 3,000, i.e. 4.5 million pairs) the median
    is taken over a seeded random subsample of that many rows. If more than
    half of the pairs coincide, the median of the positive distances is used.

    With a second point set Z (two sets, as the asymmetric kernel SVD), the
    median of the distances :math:`\|x_i - z_j\|` between the sets, each set
    subsampled to ``max_samples`` rows; X and Z may then be sparse (the
    distances come from :math:`\|x\|^2 + \|z\|^2 - 2 x^T z`).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    Z : array-like or sparse matrix of shape (m_samples, n_features), optional
    max_samples : int, default=3000
    random_state : int, RandomState instance or None

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr import median_sigma
    >>> median_sigma(np.array([[0.0], [1.0], [3.0]]))
    2.0
    >>> median_sigma(np.array([[0.0], [1.0]]), np.array([[3.0]]))
    2.5
    """
    rng = check_random_state(random_state)
    # squared distances (the median of their roots is the roots' median: no square
    # root per pair, which would cost more than the distances themselves)
    if Z is None and sp.issparse(X):
        # sparse rows (checked by the caller's one entry check): the distances of the
        # sample among itself, the same pairs pdist takes
        squared = _pair_squared_distances(sample_rows(X, max_samples, rng))
    elif Z is None:
        X = check_matrix(X, min_samples=2)
        squared = pdist(sample_rows(X, max_samples, rng), "sqeuclidean")
    else:
        X, Z = (sample_rows(A, max_samples, rng) for A in (X, Z))
        if X.shape[1] != Z.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}")
        squared = cross_squared_distances(X, Z).ravel()
    sigma = _median_distance(squared)
    if sigma <= 0:
        positive = squared[squared > 0]
        if positive.size == 0:
            if Z is None:
                raise ValueError("median_sigma: all rows of X are identical, the bandwidth is "
                                 "zero")
            raise ValueError("median_sigma: all sampled distances between the rows of X and "
                             "Z are 0, the bandwidth is zero; pass it explicitly")
        sigma = _median_distance(positive)
    return sigma


def _median_distance(squared):
    """The median of the distances whose squares are ``squared`` (a 1-d array of
    them, reordered in place): the middle one or the mean of the two middle ones,
    as ``np.median`` of the distances, without its copy."""
    middle = squared.size // 2
    if squared.size % 2:
        squared.partition(middle)
        return float(np.sqrt(squared[middle]))
    squared.partition([middle - 1, middle])
    return float(0.5 * (np.sqrt(squared[middle - 1]) + np.sqrt(squared[middle])))


def cross_squared_distances(X, Z):
    """Dense ||x_i - z_j||^2 (clamped at 0) between the rows of X and Z, dense or sparse."""
    if sp.issparse(X) or sp.issparse(Z):
        X, Z = sp.csr_matrix(X), sp.csr_matrix(Z)
        r = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        c = np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
        d2 = r[:, None] + c[None, :] - 2.0 * (X @ Z.T).toarray()
        return np.maximum(d2, 0.0)
    require_memory(X.shape[0] * Z.shape[0] * 8, f"a {X.shape[0]} x {Z.shape[0]} distance matrix")
    squared = [KernelTerm(TermKind.squared, 1.0)]
    return np.maximum(-_native.kernel_matrix(np.ascontiguousarray(X), np.ascontiguousarray(Z),
                                             squared), 0.0)


def _pair_squared_distances(rows):
    """The squared distances ||x_i - x_j||^2, i < j, of sparse rows (pdist's order)."""
    d2 = cross_squared_distances(rows, rows)
    return d2[np.triu_indices(d2.shape[0], 1)]


def warn_if_kernel_vanishes(X, sigma, max_rows=200):
    """Warn when sigma is so small against the data that every off-diagonal
    Gaussian entry underflows to 0 (K = I: the objective no longer depends on W)."""
    X = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        return
    rows = X[np.linspace(0, X.shape[0] - 1, min(X.shape[0], max_rows)).astype(int)]
    # exp(-t) is 0 in float64 for t > 745
    limit = 745.0 * 2.0 * sigma * sigma
    if sp.issparse(rows):
        rows = _pair_squared_distances(rows)
        rows = rows[rows > 0]
        if rows.size and float(np.min(rows)) > limit:
            _warn_vanishing(sigma, float(np.sqrt(np.min(rows))))
        return
    # Any pair of distinct rows within the limit has a nonzero kernel entry: the
    # neighbouring rows of the sample decide almost every fit in O(rows d), and
    # only a sample whose neighbours are all too far apart takes every pair
    step = np.diff(rows, axis=0)
    neighbours = np.einsum("ij,ij->i", step, step)
    if np.any((neighbours > 0) & (neighbours <= limit)):
        return
    d2 = pdist(rows, "sqeuclidean")
    d2 = d2[d2 > 0]
    if d2.size and float(np.min(d2)) > limit:
        _warn_vanishing(sigma, float(np.sqrt(np.min(d2))))


def _warn_vanishing(sigma, nearest):
    warnings.warn(f"Gaussian sigma={sigma:.3g} is tiny against the data (nearest distinct "
                  f"points {nearest:.3g} apart): every off-diagonal kernel entry "
                  "is 0 in float64, so the kernel matrix is the identity and the result "
                  "carries no information; use a larger sigma or sigma='median'",
                  RuntimeWarning, stacklevel=4)




def separation(X: ArrayLike, Y: ArrayLike, sigma: float) -> float:
    r"""Mean within-class minus mean between-class Gaussian kernel value, :math:`J(\sigma)`.

    The objective that :func:`separation_sigma` maximises (dissertation, Appendix
    D.11). With :math:`K_{ij} = \exp(-\|x_i - x_j\|^2 / (2\sigma^2))`, the
    indicator vector :math:`1_c` of class c and :math:`n_c` its size,

    .. math::
       J(\sigma) = \frac{\sum_c 1_c^T K 1_c - n}{\sum_c n_c^2 - n}
                 - \frac{1^T K 1 - \sum_c 1_c^T K 1_c}{n^2 - \sum_c n_c^2}:

    the mean kernel value over the pairs of distinct points of one class, minus
    the mean over the pairs of points of different classes (the diagonal,
    :math:`K_{ii} = 1`, is left out). It costs one fused kernel pass
    :math:`(K Y, K 1)` over the points; nothing n x n is stored.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The points (standardised, as the estimators expect).
    Y : array-like of shape (n_samples, n_classes)
        One-hot class indicators: 0 or 1, exactly one 1 per row.
    sigma : float
        The Gaussian bandwidth, positive.

    Returns
    -------
    J : float
        Between -1 and 1; large when the classes are tight at this bandwidth
        and far from each other. A term without pairs (a single class, or
        classes of one point each) counts as 0.

    See Also
    --------
    separation_sigma : the bandwidth that maximises it.

    References
    ----------
    Wu, dissertation (2020), Appendix D.11.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.kernels import separation
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1]])
    >>> round(separation(X, Y, sigma=1.0), 3)
    0.995
    """
    X = check_matrix(X, "X")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise ValueError(f"Y must be one-hot of shape (n_samples, n_classes) with n_samples = "
                         f"{X.shape[0]}, got shape {Y.shape}")
    if not (np.all((Y == 0) | (Y == 1)) and np.all(Y.sum(axis=1) == 1)):
        raise ValueError("Y must be one-hot: 0 or 1, with exactly one 1 per row")
    sigma = check_bandwidth(sigma)
    n = X.shape[0]
    # the Gaussian's fused pass (KY, K1); nothing n x n is stored
    gaussian = [KernelTerm(TermKind.gaussian, 1.0, sigma=float(sigma))]
    out = _native.fused_product(np.ascontiguousarray(X), gaussian,
                                rhs=np.ascontiguousarray(Y, dtype=X.dtype))
    KY, K1 = out.product, out.value_sums.astype(np.float64)
    within_sum = float(np.sum(Y * KY)) - n              # k(x_i, x_i) = 1 left out
    counts = Y.sum(axis=0)
    within_pairs = float(counts @ counts) - n
    between_pairs = float(n * n - counts @ counts)
    total = float(np.sum(K1))
    within = within_sum / within_pairs if within_pairs > 0 else 0.0
    between = (total - within_sum - n) / between_pairs if between_pairs > 0 else 0.0
    return within - between


def separation_sigma(X: ArrayLike, y: ArrayLike, *, max_samples: int = MEDIAN_SUBSAMPLE,
                     random_state: RandomStateLike = None, xtol: float = 1e-3) -> float:
    r"""Gaussian bandwidth maximising within-class minus between-class mean kernel value.

    Parameters
    ----------
    X : ndarray (n, d)
        Data (standardised); at most ``max_samples`` rows are used (seeded
        subsample, the rows of :func:`ikdr.median_sigma`).
    y : array-like (n,)
        Class labels (at least two classes).
    xtol : float
        Tolerance on :math:`\log\sigma` (1e-3: sigma to 0.1%).

    Returns
    -------
    sigma : float
        Searched over [median / 100, 10 x median] of the same rows.

    References
    ----------
    Wu, dissertation (2020), Appendix D.11.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    idx = sample_index(X.shape[0], max_samples, random_state)
    if idx is not None:
        X, y = X[idx], y[idx]
    Y, classes = one_hot(y)
    if classes.shape[0] < 2:
        raise ValueError('sigma="separation" needs at least two classes in y')
    med = median_sigma(X)
    res = minimize_scalar(lambda t: -separation(X, Y, float(np.exp(t))),
                          bounds=(np.log(med / 100.0), np.log(10.0 * med)), method="bounded",
                          options={"xatol": xtol})
    return float(np.exp(res.x))
