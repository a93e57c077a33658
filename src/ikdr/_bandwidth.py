r"""Data-driven Gaussian bandwidths beyond the median rule, and feature importances.

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

import numpy as np
from scipy.optimize import minimize_scalar

from .gamma import one_hot
from .kernels import _MEDIAN_SUBSAMPLE, Gaussian, median_sigma

__all__ = ["separation_sigma", "separation", "feature_importances"]


def separation(X, Y, sigma):
    """J(sigma) of the module docstring for the points X (n x d) and one-hot Y (n x c)."""
    n = X.shape[0]
    KY, K1 = Gaussian(sigma).product(np.ascontiguousarray(X), np.ascontiguousarray(Y, dtype=X.dtype))
    within_sum = float(np.sum(Y * KY)) - n              # k(x_i, x_i) = 1 left out
    counts = Y.sum(axis=0)
    within_pairs = float(counts @ counts) - n
    between_pairs = float(n * n - counts @ counts)
    total = float(np.sum(K1))
    within = within_sum / within_pairs if within_pairs > 0 else 0.0
    between = (total - within_sum - n) / between_pairs if between_pairs > 0 else 0.0
    return within - between


def separation_sigma(X, y, *, max_samples=_MEDIAN_SUBSAMPLE, random_state=None, xtol=1e-3):
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
    from sklearn.utils import check_random_state

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).ravel()
    if X.shape[0] > max_samples:
        idx = check_random_state(random_state).choice(X.shape[0], max_samples, replace=False)
        X, y = X[idx], y[idx]
    Y, classes = one_hot(y)
    if classes.shape[0] < 2:
        raise ValueError('sigma="separation" needs at least two classes in y')
    med = median_sigma(X)
    res = minimize_scalar(lambda t: -separation(X, Y, float(np.exp(t))),
                          bounds=(np.log(med / 100.0), np.log(10.0 * med)), method="bounded",
                          options={"xatol": xtol})
    return float(np.exp(res.x))


def feature_importances(W, weights=None):
    r"""Importance of each input feature in the subspace of W (d x q, orthonormal).

    :math:`\mathrm{imp}_j = \sum_k |\lambda_k| W_{jk}^2 / \sum_k |\lambda_k|`:
    the squared loadings of feature j on the learned directions, weighted by
    the absolute eigenvalues :math:`\lambda_k` of :math:`\Phi` belonging to the
    directions (``weights``; equal weights when None or all zero). The
    columns of W have unit norm, so the importances are non-negative and sum
    to 1. They measure how much of the projection a feature carries on the
    (standardised) input scale, not a causal effect.
    """
    W = np.asarray(W, dtype=np.float64)
    q = W.shape[1]
    w = np.ones(q) if weights is None else np.abs(np.asarray(weights, dtype=np.float64).ravel())
    if w.shape[0] != q or not np.all(np.isfinite(w)) or w.sum() <= 0:
        w = np.ones(q)
    imp = (W * W) @ w / w.sum()
    return imp / imp.sum()
