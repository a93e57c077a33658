r"""Each feature's HSIC with a target on its own: the marginal dependence behind the
supervised importances (:mod:`ikdr.reduction.support`) and the clusterers'
(:class:`ikdr.ISMClustering`), with its noise level under independence.

For feature j, :math:`m_j = \mathrm{Tr}(\Gamma K_j) - \mathrm{tr}(\Gamma)(1 - \bar k_j)`:
:math:`K_j` a Gaussian on feature j alone at the median distance of its values,
:math:`\bar k_j` the mean of its off-diagonal entries, so that the
expectation under independence (rows of Gamma permuted) is about 0 for a
centred Gamma. With the rows of :math:`\Gamma` permuted at random,
:math:`\mathrm{Tr}(\Gamma K_j)` deviates by about

.. math:: \mathrm{sd}_j = \sqrt{2}\,\|\Gamma\|_F\,\|H K_j H\|_F / n

(both matrices centred, n large); :func:`marginal_threshold` turns mean and
deviation into the level that independent data exceed with probability
5 % / d. Each feature's values are binned, so nothing n x n is formed
(:mod:`ikdr.solver.sparse_marginal`: the same from a sparse matrix's stored
values).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2

from ..gamma import Gamma
from ..kernels.feature_bins import feature_bin_sums
from .sparse_marginal import sparse_marginal_dependence

__all__ = ["marginal_dependence", "marginal_threshold", "BINS", "MARGINAL_LEVEL"]

#: bins of the one-dimensional kernels
BINS = 64


def _null_sd(factor, scale, kernel_norms, n):
    r"""Standard deviation of :math:`\mathrm{Tr}(\Gamma K_j)` under independence (rows
    of Gamma permuted), :math:`\sqrt{2}\,\|\Gamma\|_F\,\|HK_jH\|_F / n` for large n;
    ``kernel_norms`` are the :math:`\|HK_jH\|_F^2`."""
    scaled = (factor.T @ factor) * scale[None, :]
    gamma_norm = float(np.sum(scaled * scaled.T))
    return np.sqrt(2.0 * gamma_norm * np.maximum(kernel_norms, 0.0)) / n


def marginal_dependence(X: np.ndarray, gamma: Gamma, bins: int = BINS,
                        with_noise: bool = False):
    r"""Each feature's HSIC with the target on its own:
    :math:`\mathrm{Tr}(\Gamma K_j) - \mathrm{tr}(\Gamma)(1 - \bar k_j)`, ``K_j`` a
    Gaussian on feature j at the median distance of its values, :math:`\bar k_j`
    the mean of its off-diagonal entries (the expectation under independence is
    then about 0: a centred Gamma's entries sum to 0).

    Each feature's values are put in ``bins`` equal bins and the kernel taken
    at the bin centres: :math:`O(n r + \mathrm{bins}^2 r)` per feature for a
    Gamma of rank r, never n x n. The medians come from a fixed sample of
    pairs of rows.

    ``with_noise``: returns ``(dependence, null_sd, null_mean)``, with the
    statistic's standard deviation under independence (module docstring) and
    the expectation subtracted, :math:`\mathrm{tr}(\Gamma)(1 - \bar k_j)`.
    """
    n, d = X.shape
    factor: np.ndarray
    if gamma.factor is not None:
        factor = gamma.factor
        scale = np.ones(factor.shape[1]) if gamma.scale is None else gamma.scale
    else:       # a dense (positive semi-definite) Gamma: its Cholesky factor
        factor = np.linalg.cholesky(gamma.toarray() + 1e-12 * np.eye(n))
        scale = np.ones(n)
    trace = float(np.einsum("ir,r,ir->", factor, scale, factor))
    if sp.issparse(X):
        dependence, norms, null_mean = sparse_marginal_dependence(X, factor, scale, trace, bins)
        if not with_noise:
            return dependence
        return dependence, _null_sd(factor, scale, norms, n), null_mean
    lo, hi = X.min(axis=0), X.max(axis=0)
    varies = hi > lo
    width = np.where(varies, (hi - lo) / bins, 1.0)
    pairs = np.random.default_rng(0).integers(0, n, size=(2, min(4 * n, 2000)))
    pairs = pairs[:, pairs[0] != pairs[1]]
    gaps = np.abs(X[pairs[0]] - X[pairs[1]])
    sigma = np.median(np.ascontiguousarray(gaps.T), axis=1)     # a row per feature: faster
    # more than half the pairs tied (an ordinal feature with a dominant level): the
    # median of the distinct pairs' distances, as the median rule does
    for j in np.flatnonzero(varies & ~(sigma > 0)):
        distinct = gaps[:, j][gaps[:, j] > 0]
        sigma[j] = np.median(distinct) if distinct.size else 0.0
    varies &= sigma > 0
    # K_j depends on the bin gap only: exp(-(gap * width_j)^2 / (2 sigma_j^2))
    gap = np.arange(bins)
    ratio = np.where(varies, width / np.where(sigma > 0, sigma, 1.0), 0.0)
    toeplitz = np.exp(-0.5 * (gap[:, None] * ratio[None, :]) ** 2)        # bins x d
    # d x bins x bins, gathered contiguous (for the batched products below)
    K = np.take(np.ascontiguousarray(toeplitz.T), np.abs(gap[:, None] - gap[None, :]), axis=1)
    # per feature and bin: the rows' factor sums (d x bins x r) and counts (d x bins),
    # one pass of the compiled core over X (nothing n x d is formed)
    counts, sums = feature_bin_sums(X, lo, width, bins, factor)
    # sum_r s_r S_jr^T K_j S_jr (K_j is symmetric), and 1^T K_j 1 over the rows, by
    # batched products
    total = np.einsum("jbr,jbr,r->j", sums, K @ sums, scale)
    K_counts = np.einsum("jb,jbc->jc", counts, K)                          # d x bins
    ones_K_ones = np.einsum("jb,jb->j", counts, K_counts)
    mean_offdiagonal = (ones_K_ones - n) / (n * (n - 1))
    null_mean = np.where(varies, trace * (1.0 - mean_offdiagonal), 0.0)
    dependence = np.where(varies, total - null_mean, 0.0)
    if not with_noise:
        return dependence
    # ||H K_j H||_F^2 = 1^T (K_j o K_j) 1 - 2/n ||K_j 1||^2 + (1^T K_j 1)^2 / n^2, by bins
    squared = np.einsum("jb,jb->j", counts, np.einsum("jb,jbc->jc", counts, K * K))
    centred = squared - 2.0 / n * np.einsum("jb,jb->j", counts, K_counts ** 2) + \
        (ones_K_ones / n) ** 2
    return dependence, np.where(varies, _null_sd(factor, scale, centred, n), 0.0), null_mean


#: the chance that some feature's marginal part counts under independence
MARGINAL_LEVEL = 0.05


def marginal_threshold(null_sd, null_mean, level=MARGINAL_LEVEL):
    r"""Per feature, the marginal dependence that independent data exceeds with
    probability ``level / d``: under independence :math:`\mathrm{Tr}(\Gamma K_j)`
    is a weighted sum of chi-squares, skewed to the right (one eigenvalue of a
    one-dimensional kernel dominates), so the normal quantile would let through
    far more noise. Its scaled chi-square with the same mean and variance
    (Satterthwaite), :math:`g\chi^2_\nu` with :math:`\nu = 2\mu^2/s^2` and
    :math:`g = s^2 / 2\mu`, gives the quantile, less the mean. Infinite where a
    feature has no spread."""
    d = null_sd.shape[0]
    valid = (null_sd > 0) & (null_mean > 0)
    mean = np.where(valid, null_mean, 1.0)
    variance = np.where(valid, null_sd, 1.0) ** 2
    dof, scale = 2.0 * mean ** 2 / variance, variance / (2.0 * mean)
    return np.where(valid, scale * chi2.isf(level / max(d, 1), dof) - mean, np.inf)
