r"""Bandwidth rules of the Gaussian kernels: the median heuristic and the class separation.

:func:`median_sigma` is the papers' rule: the median pairwise distance of the
training rows (a seeded subsample above ``max_samples`` rows).
:func:`feature_median_distances` is the same rule for each feature alone (the
one-dimensional kernels of the marginal dependence and of the clusterers'
feature screen): over every pair of rows, exactly, or over a seeded sample of
pairs (:func:`ikdr._utils.sampling.sample_pairs`).

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

__all__ = ["MEDIAN_SUBSAMPLE", "PAIR_SAMPLES", "median_sigma", "feature_median_distances",
           "separation_sigma", "separation", "warn_if_kernel_vanishes"]

MEDIAN_SUBSAMPLE = 3000
#: pairs of rows whose distances give each feature's median bandwidth, at most (the
#: marginal dependence's sample, :func:`ikdr._utils.sampling.sample_pairs`)
PAIR_SAMPLES = 2000


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


def feature_median_distances(X: ArrayLike, pairs: np.ndarray | None = None, *,
                             untied: bool = True) -> np.ndarray:
    r"""Each feature's median distance: the median of :math:`|x_{ij} - x_{kj}|` over
    pairs of rows (i, k), for every column j.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    pairs : ndarray of shape (2, m), optional
        Pairs of distinct rows (:func:`ikdr._utils.sampling.sample_pairs`): the
        median over them, dense X or sparse X (from the stored differences
        only) alike. None: over every pair i < k, exactly and without the
        m^2 pairs (per column, a bisection on the value whose every step counts
        the pairs below it by one sorted search, O(n log n), or the distinct
        values' pairs when they are few).
    untied : bool, default=True
        Where more than half of a feature's pairs are tied (a dominant value:
        counts with many zeros, an ordinal level), the median of its untied
        pairs' distances, as :func:`median_sigma` takes for whole rows (0 where
        every pair is tied). False: the plain median, 0 there.

    Returns
    -------
    medians : ndarray of shape (n_features,)
    """
    if pairs is None:
        columns = (X[:, [j]].toarray().ravel() if sp.issparse(X) else np.asarray(X[:, j])
                   for j in range(X.shape[1]))
        return np.array([_median_difference(z, untied) for z in columns], dtype=np.float64)
    if sp.issparse(X):
        return _sparse_pair_medians(sp.csr_matrix(X, dtype=np.float64), pairs, untied)
    return _pair_medians(np.asarray(X, dtype=np.float64), pairs, untied)


def _pair_medians(X, pairs, untied):
    """:func:`feature_median_distances` of dense X over ``pairs``."""
    m = pairs.shape[1]
    if m == 0:
        return np.zeros(X.shape[1])
    gaps = np.abs(X[pairs[0]] - X[pairs[1]]).T.copy()        # a row per feature
    # the median of each row, as np.median takes it (the mean of the two middle
    # values for an even count), by one partition in place
    middle = [(m - 1) // 2, m // 2]
    gaps.partition(middle, axis=1)
    sigma = 0.5 * (gaps[:, middle[0]] + gaps[:, middle[1]])
    tied = np.flatnonzero(~(sigma > 0)) if untied else np.zeros(0, dtype=np.intp)
    if tied.size:
        # the untied distances are the last ones of each sorted row: their median
        # from the two middle positions past the zeros, all such rows at once
        ordered = np.sort(gaps[tied], axis=1)
        zeros = np.count_nonzero(ordered == 0, axis=1)
        count = m - zeros
        low = zeros + np.maximum(count - 1, 0) // 2
        high = zeros + count // 2
        rows = np.arange(tied.size)
        middle_values = 0.5 * (ordered[rows, np.minimum(low, m - 1)] +
                               ordered[rows, np.minimum(high, m - 1)])
        sigma[tied] = np.where(count > 0, middle_values, 0.0)
    return sigma


def _sparse_pair_medians(X, pairs, untied):
    """:func:`feature_median_distances` of sparse X (CSR) over ``pairs``: each column's
    differences are its stored ones and zeros (O(nnz of the pairs' rows))."""
    m = pairs.shape[1]
    D = abs(X[pairs[0]] - X[pairs[1]]).tocsc()
    D.eliminate_zeros()
    d = D.shape[1]
    counts = np.diff(D.indptr)
    columns = np.repeat(np.arange(d), counts)
    data = D.data[np.lexsort((D.data, columns))]
    start = D.indptr[:-1]
    last = max(data.size - 1, 0)

    def at(position):
        """The value at ``position`` of each column's sorted m values (zeros first)."""
        inside = position - (m - counts)
        index = np.clip(start + inside, 0, last)
        return np.where(inside >= 0, data[index] if data.size else 0.0, 0.0)

    if m == 0:
        return np.zeros(d)
    full = at(np.full(d, m // 2)) if m % 2 else 0.5 * (at(np.full(d, m // 2 - 1)) +
                                                       at(np.full(d, m // 2)))
    if not untied:
        return full
    # the median of the positive values: the middle of each column's stored ones
    odd = counts % 2 == 1
    half = counts // 2
    low = np.clip(start + np.where(odd, half, half - 1), 0, last)
    high = np.clip(start + half, 0, last)
    positive = np.where(counts > 0, 0.5 * (data[low] + data[high]) if data.size else 0.0, 0.0)
    return np.where(full > 0, full, positive)


#: a column with at most this many distinct values (pixel intensities, counts) takes
#: the median of its pair differences from the values' pairs, weighted by their counts
FEW_VALUES = 256


def _median_difference(z, untied):
    """The median of :math:`|z_i - z_j|` over every pair i < j of a 1-D sample, exactly
    (:func:`feature_median_distances` with ``pairs=None``)."""
    x = np.sort(np.asarray(z, dtype=np.float64).ravel())
    m = x.shape[0]
    if m < 2:
        return 0.0
    pairs = m * (m - 1) // 2
    values, counts = np.unique(x, return_counts=True)
    first, count = 0, pairs
    if untied:
        tied = int(np.sum(counts * (counts - 1) // 2))
        if pairs // 2 < tied < pairs:       # the median is 0: that of the untied pairs
            first, count = tied, pairs - tied
    ranks = (first + (count - 1) // 2, first + count // 2)
    if values.shape[0] <= FEW_VALUES:
        return 0.5 * sum(_kth_difference_of_values(values, counts, r) for r in ranks)
    return 0.5 * sum(_kth_difference(x, r) for r in ranks)


def _kth_difference_of_values(values, counts, k):
    """The k-th smallest (0-based) pair difference of a sample given as sorted distinct
    values with their counts: each pair of values a < b stands for c_a c_b pairs,
    each value for c(c-1)/2 pairs at difference 0."""
    a, b = np.triu_indices(values.shape[0], 1)
    diffs = np.concatenate([[0.0], values[b] - values[a]])
    weights = np.concatenate([[np.sum(counts * (counts - 1) / 2)], counts[a] * counts[b]])
    order = np.argsort(diffs, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(diffs[order][np.searchsorted(cumulative, k, side="right")])


def _kth_difference(x, k):
    """The k-th smallest (0-based) of :math:`x_j - x_i`, i < j, for sorted x."""
    m = x.shape[0]
    rows = np.arange(m)

    def at_most(t):                 # pairs whose difference is <= t (t >= 0)
        return int(np.sum(np.searchsorted(x, x + t, side="right") - rows - 1))

    if at_most(0.0) > k:
        return 0.0
    lo, hi = 0.0, 2.0 * (x[-1] - x[0]) + 1.0   # at_most(lo) <= k < at_most(hi)
    while True:
        below, mid = at_most(lo), 0.5 * (lo + hi)
        if not lo < mid < hi:       # (lo, hi] holds one value: the smallest above lo
            first = np.searchsorted(x, x + lo, side="right")
            inside = first < m
            return float(np.min(x[first[inside]] - x[inside]))
        if at_most(hi) - below <= 4 * m:   # few pairs left: list them
            start = np.searchsorted(x, x + lo, side="right")
            lengths = np.searchsorted(x, x + hi, side="right") - start
            offsets = np.repeat(start - np.cumsum(lengths) + lengths, lengths)
            columns = offsets + np.arange(lengths.sum())
            values = np.sort(x[columns] - x[np.repeat(rows, lengths)])
            return float(values[k - below])
        if at_most(mid) > k:
            hi = mid
        else:
            lo = mid


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
    # neighboring rows of the sample decide almost every fit in O(rows d), and
    # only a sample whose neighbors are all too far apart takes every pair
    step = np.diff(rows, axis=0)
    neighbors = np.einsum("ij,ij->i", step, step)
    if np.any((neighbors > 0) & (neighbors <= limit)):
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
