r"""The class-moment screen: which features a supervised ISM fit starts from.

ISM's start :math:`\Phi_0` (ISM paper, Theorem 3) sees only the class means
(for a centred Gamma, :math:`\Phi_0 \propto X^T \Gamma X`); a ring or an XOR
moves no class mean, and among many noise features the fit then drifts to
noise: at 2,000 x 784 with 4 informative features, 0.004-0.017 of W's mass
lands on them, from every start tried, because the objective's own maximum
over all features is a noise subspace that fits the sample (the documentation's
"How ISM's defaults were chosen" gives the measurements). The screen keeps the
features whose first or second class moments differ beyond noise, and the fit
runs on those:

.. math::

    z^{(1)}_{cj} = \sqrt{n_c}\,(\bar x_{cj} - \bar x_j), \qquad
    z^{(2)}_{cjk} = \frac{S^{(c)}_{jk} - S_{jk}}{\sqrt{(1 + S_{jk}^2)/n_c}},

the class-mean and class-second-moment deviations in standard errors, for
the standardised features (:math:`S` their correlation matrix, :math:`S^{(c)}`
the class's second moments; the scores do not depend on X's scale). A
feature is
kept when a mean or variance deviates by more than
:math:`\sqrt{2\log d}` or a covariance with another feature by more than
:math:`\sqrt{2\log d^2}` (the largest of that many standard normals: no noise
feature passes, a weak real one may not). Cost: one d x d Gram matrix per
class, :math:`O(n d^2)`. A continuous target is cut into 10 quantile slices.
"""
from __future__ import annotations

import numpy as np

from .._utils.eig import grams as class_grams
from .._utils.typing import ArrayLike
from ..passes.dask_data import row_source

__all__ = ["moment_screen", "screen_bytes", "SLICES", "SCREEN_ROWS"]

#: quantile slices of a continuous target for the screen
SLICES = 10
#: rows the supervised estimator's screen reads at most (a seeded sample above):
#: its moments cost n d^2, and 20,000 rows resolve a class moment's deviation to
#: 1/sqrt(n_c), far below the thresholds
SCREEN_ROWS = 20_000


def _classes(y):
    y = np.asarray(y)
    if y.ndim == 2:
        y = y[:, 0] if y.shape[1] == 1 else y @ np.linalg.svd(y - y.mean(0), full_matrices=False)[2][0]
    if y.dtype.kind == "f" and np.unique(y).shape[0] > SLICES:
        edges = np.quantile(y, np.linspace(0.0, 1.0, SLICES + 1)[1:-1])
        return np.digitize(y, edges)
    return np.unique(y, return_inverse=True)[1]


def screen_bytes(d, y):
    """Memory the screen's per-class d x d moments take (a block's and the sum's)."""
    return 2 * (int(_classes(y).max()) + 3) * d * d * 8


def _class_sums(X_b, codes_b, n_classes):
    """One row block's per-class counts, column sums and Gram matrices."""
    # the rows grouped by class (a stable sort keeps their order within a class),
    # so each class is one contiguous slice: no mask and copy per class
    order = np.argsort(codes_b, kind="stable")
    X_b = np.asarray(X_b, dtype=np.float64)[order]
    counts = np.bincount(codes_b, minlength=n_classes).astype(np.float64)
    ends = np.cumsum(counts.astype(np.intp))
    sums = np.zeros((n_classes, X_b.shape[1]))
    grams = np.zeros((n_classes, X_b.shape[1], X_b.shape[1]))
    present = np.flatnonzero(counts)
    blocks = [X_b[ends[c] - int(counts[c]):ends[c]] for c in present]
    for c, Xc, G in zip(present, blocks, class_grams(blocks)):
        sums[c] = Xc.sum(axis=0)
        grams[c] = G
    return [counts, sums, grams]


def moment_screen(X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature screen scores (module docstring).

    One pass over the rows of X (an array, a memmap read in row blocks, or data
    on a Dask cluster: the per-class sums map over its chunks).

    Parameters
    ----------
    X : ndarray (n, d), standardised, or :class:`ikdr.distributed.DaskData`
    y : array-like (n,) class labels, or a continuous target (sliced)

    Returns
    -------
    kept : ndarray (d,) float
        The significant part of each feature's deviations (0: not significant).
    raw : ndarray (d,) float
        Each feature's squared class-mean z-score plus its largest squared
        second-moment z-score (variance or covariance with any feature),
        weighted by class size: the order in which the features the screen
        drops are tried (:mod:`ikdr.reduction.support`).
    """
    n, d = X.shape
    codes = _classes(y)
    n_classes = int(codes.max()) + 1
    counts, sums, grams = row_source(X).map_reduce(_class_sums, lambda sl: codes[sl],
                                                   (n_classes,))
    z1 = np.sqrt(2.0 * np.log(max(d, 2)))
    z2 = np.sqrt(2.0 * np.log(max(d * d, 2)))
    threshold = np.full((d, d), z2)
    np.fill_diagonal(threshold, z1)
    # the moments of the standardised features (the scores do not depend on X's
    # scale or offset; a constant feature has none and is never kept)
    mean = sums.sum(axis=0) / n
    cov = grams.sum(axis=0) / n - np.outer(mean, mean)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    std[~(std > 0)] = np.inf
    scale = np.outer(std, std)
    S = cov / scale
    # every class at once (classes x d x d); a class of fewer than 2 rows scores nothing
    classes = counts >= 2
    nc = counts[classes][:, None]
    mean_c = sums[classes] / nc
    second_c = (grams[classes] / nc[:, :, None] - mean_c[:, :, None] * mean[None, None, :]
                - mean[None, :, None] * mean_c[:, None, :] + np.outer(mean, mean)) / scale
    se = np.sqrt((1.0 + S * S)[None] / nc[:, :, None])
    m = (mean_c - mean) / std * np.sqrt(nc)
    D = (second_c - S) / se
    weight = nc[:, 0] / n
    # each feature's strongest deviation: a mean over its d second moments would
    # bury one strong covariance (an interaction) among d - 1 noise ones
    raw = weight @ (m * m + np.max(D * D, axis=2))
    m = m * (np.abs(m) > z1) / np.sqrt(nc)
    D = D * (np.abs(D) > threshold) * se
    kept = weight @ (m * m + np.sum(D * D, axis=2))
    return kept, raw
