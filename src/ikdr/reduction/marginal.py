r"""Each feature's HSIC with a target on its own: the marginal dependence behind the
supervised importances (:mod:`ikdr.reduction.support`) and the clusterers'
(:class:`ikdr.ISMClustering`), with its noise level under independence.

For feature j, :math:`m_j = \mathrm{Tr}(\Gamma K_j) - \mathrm{tr}(\Gamma)(1 - \bar k_j)`:
:math:`K_j` a Gaussian on feature j alone at the median distance of its values,
:math:`\bar k_j` the mean of its off-diagonal entries, so that the
expectation under independence (rows of Gamma permuted) is about 0 for a
centered Gamma. With the rows of :math:`\Gamma` permuted at random,
:math:`\mathrm{Tr}(\Gamma K_j)` deviates by about

.. math:: \mathrm{sd}_j = \sqrt{2}\,\|\Gamma\|_F\,\|H K_j H\|_F / n

(both matrices centered, n large); :func:`marginal_threshold` turns mean and
deviation into the level that independent data exceed with probability
5 % / d. Each feature's values are binned, so nothing n x n is formed
(:mod:`ikdr.reduction.sparse_marginal`: the same from a sparse matrix's stored
values).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2

from .._utils.sampling import sample_pairs
from ..gamma import Gamma
from ..kernels.bandwidth import PAIR_SAMPLES, feature_median_distances
from ..kernels.feature_bins import feature_bin_sums
from .sparse_marginal import sparse_marginal_dependence

__all__ = ["marginal_dependence", "marginal_threshold", "BINS", "MARGINAL_LEVEL"]

#: bins of the one-dimensional kernels
BINS = 64
#: features whose statistics are made at once (their pair distances and spectra)
FEATURE_BLOCK = 1024


def _null_sd(factor, scale, kernel_norms, n, parts=None):
    r"""Standard deviation of :math:`\mathrm{Tr}(\Gamma K_j)` under independence (rows
    of Gamma permuted), :math:`\sqrt{2}\,\|\Gamma\|_F\,\|HK_jH\|_F / n` for large n;
    ``kernel_norms`` are the :math:`\|HK_jH\|_F^2`. ``parts`` (r x P, each column of
    the factor in one part): the Gamma of each part (d x P)."""
    kernel_norms = np.maximum(kernel_norms, 0.0)
    scaled = (factor.T @ factor) * scale[None, :]
    products = scaled * scaled.T          # its sum over a part's columns: ||Gamma_p||_F^2
    if parts is None:
        return np.sqrt(2.0 * float(np.sum(products)) * kernel_norms) / n
    gamma_norms = np.einsum("rp,rs,sp->p", parts, products, parts)
    return np.sqrt(2.0 * np.outer(kernel_norms, gamma_norms)) / n


def _autocorrelation(values, bins, scale, parts=None):
    r""":math:`\sum_r s_r \sum_b v_{jbr} v_{j,b+g,r}` for every feature j and bin gap
    g = 0..bins-1 (``values``: d x bins x r), by a real FFT of twice the length
    (no wrap-around); ``parts`` (r x P): the sum over each part's r apart
    (d x bins x P)."""
    spectrum = np.fft.rfft(values, n=2 * bins, axis=1)
    squares = spectrum.real ** 2 + spectrum.imag ** 2
    # each part's sum: one product with its 0/1 membership (r x P)
    power = np.einsum("jfr,r->jf", squares, scale) if parts is None else \
        (squares * scale) @ parts
    return np.fft.irfft(power, n=2 * bins, axis=1)[:, :bins]


def _toeplitz_product(toeplitz, counts, bins):
    """:math:`K_j c_j` for every feature, K_j the symmetric Toeplitz matrix whose first
    row is ``toeplitz[j]``: a convolution with the kernel at gaps -(bins-1)..bins-1,
    by FFT (twice the length: no wrap-around)."""
    length = 2 * bins
    kernel = np.zeros((toeplitz.shape[0], length))
    kernel[:, :bins] = toeplitz
    kernel[:, length - bins + 1:] = toeplitz[:, :0:-1]     # negative gaps wrap around
    product = np.fft.irfft(np.fft.rfft(counts, n=length, axis=1) *
                           np.fft.rfft(kernel, axis=1), n=length, axis=1)
    return product[:, :bins]


def _binned_statistics(X, pairs, factor, scale, bins, with_noise, parts=None):
    """For the columns of ``X``: (varies, total, 1^T K 1, ||H K H||_F^2 or None), the
    sums of :func:`marginal_dependence` (see there) over each feature's bins
    (``parts``, r x P: ``total`` per part of the factor's columns, d x P)."""
    n = X.shape[0]
    lo, hi = X.min(axis=0), X.max(axis=0)
    varies = hi > lo
    width = np.where(varies, (hi - lo) / bins, 1.0)
    sigma = feature_median_distances(X, pairs)
    varies &= sigma > 0
    # K_j depends on the bin gap only: t_j(g) = exp(-(g * width_j)^2 / (2 sigma_j^2))
    gap = np.arange(bins)
    ratio = np.where(varies, width / np.where(sigma > 0, sigma, 1.0), 0.0)
    toeplitz = np.exp(-0.5 * (ratio[:, None] * gap[None, :]) ** 2)        # d x bins
    # per feature and bin: the rows' factor sums (d x bins x r) and counts (d x bins),
    # one pass of the compiled core over X (nothing n x d is formed)
    counts, sums = feature_bin_sums(X, lo, width, bins, factor)
    # K_j is Toeplitz, so each quadratic form is a sum over bin gaps g of t_j(g)
    # times an autocorrelation, a^T K_j a = sum_g c_g t_j(g) sum_b a_b a_{b+g}
    # (c_0 = 1, c_g = 2 for both signs of g), by FFT: no bins x bins matrix
    weights = toeplitz * np.where(gap > 0, 2.0, 1.0)
    total = np.einsum("jg,jg...->j...", weights,
                      _autocorrelation(sums, bins, scale, parts))
    counts_ac = _autocorrelation(counts[:, :, None], bins, np.ones(1))
    ones_K_ones = np.einsum("jg,jg->j", weights, counts_ac)
    if not with_noise:
        return varies, total, ones_K_ones, None
    # ||H K_j H||_F^2 = 1^T (K_j o K_j) 1 - 2/n ||K_j 1||^2 + (1^T K_j 1)^2 / n^2, by bins
    squared = np.einsum("jg,jg->j", weights * toeplitz, counts_ac)
    K_counts = _toeplitz_product(toeplitz, counts, bins)
    centered = squared - 2.0 / n * np.einsum("jb,jb->j", counts, K_counts ** 2) + \
        (ones_K_ones / n) ** 2
    return varies, total, ones_K_ones, centered


def marginal_dependence(X: np.ndarray, gamma: Gamma, bins: int = BINS,
                        with_noise: bool = False, parts=None, *, random_state=0):
    r"""Each feature's HSIC with the target on its own:
    :math:`\mathrm{Tr}(\Gamma K_j) - \mathrm{tr}(\Gamma)(1 - \bar k_j)`, ``K_j`` a
    Gaussian on feature j at the median distance of its values, :math:`\bar k_j`
    the mean of its off-diagonal entries (the expectation under independence is
    then about 0: a centered Gamma's entries sum to 0).

    Each feature's values are put in ``bins`` equal bins and the kernel taken
    at the bin centers: :math:`O(n r + r\,\mathrm{bins} \log \mathrm{bins})` per
    feature for a Gamma of rank r (the kernel on the bins is Toeplitz: its
    quadratic forms are sums over bin gaps of autocorrelations, by FFT), never
    n x n, in blocks of :data:`FEATURE_BLOCK` features (memory bounded for any d).
    The medians come from one sample of pairs of rows, at most
    :data:`~ikdr.kernels.bandwidth.PAIR_SAMPLES`
    (:func:`ikdr.kernels.bandwidth.feature_median_distances`, the pairs drawn by
    ``random_state``: dense and sparse X take the same pairs; the default 0
    takes the same ones on every call).

    ``with_noise``: returns ``(dependence, null_sd, null_mean)``, with the
    statistic's standard deviation under independence (module docstring) and
    the expectation subtracted, :math:`\mathrm{tr}(\Gamma)(1 - \bar k_j)`.

    ``parts``: several Gammas at once. A factored Gamma
    :math:`\sum_r s_r g_r g_r^T` whose column r belongs to part ``parts[r]``
    (0 .. P-1) is taken as the P Gammas :math:`\Gamma_p = \sum_{r \in p} s_r g_r
    g_r^T` (one per group, or per set of rows: a column that is zero outside some
    rows; :mod:`ikdr.reduction.importances`), and every output has a column per part
    (d x P), from the same bins and medians (sparse X: one call per part).
    """
    n, d = X.shape
    factor: np.ndarray
    if gamma.factor is not None:
        factor = gamma.factor
        scale = np.ones(factor.shape[1]) if gamma.scale is None else gamma.scale
    elif parts is not None:
        raise ValueError("parts needs a factored Gamma (its columns make the parts)")
    else:       # a dense (positive semi-definite) Gamma: its Cholesky factor
        factor = np.linalg.cholesky(gamma.toarray() + 1e-12 * np.eye(n))
        scale = np.ones(n)
    if parts is not None:
        parts = np.asarray(parts)
        parts = (parts[:, None] == np.arange(parts.max() + 1)[None, :]).astype(np.float64)
    pairs = sample_pairs(n, PAIR_SAMPLES, random_state)
    if sp.issparse(X):
        members = [slice(None)] if parts is None else [member > 0 for member in parts.T]
        calls = []
        for member in members:        # one Gamma, or each part's
            part_factor, part_scale = factor[:, member], scale[member]
            trace = float(np.einsum("ir,r,ir->", part_factor, part_scale, part_factor))
            dependence, norms, null_mean = sparse_marginal_dependence(
                X, part_factor, part_scale, trace, bins, pairs)
            calls.append((dependence, _null_sd(part_factor, part_scale, norms, n), null_mean))
        out = calls[0] if parts is None else \
            tuple(np.stack(values, axis=1) for values in zip(*calls))
        return out if with_noise else out[0]
    varies, ones_K_ones = np.zeros(d, dtype=bool), np.zeros(d)
    total = np.zeros(d if parts is None else (d, parts.shape[1]))
    centered = np.zeros(d)
    for start in range(0, d, FEATURE_BLOCK):
        block = slice(start, min(d, start + FEATURE_BLOCK))
        varies[block], total[block], ones_K_ones[block], norms = _binned_statistics(
            X[:, block], pairs, factor, scale, bins, with_noise, parts)
        if with_noise:
            centered[block] = norms
    mean_offdiagonal = (ones_K_ones - n) / (n * (n - 1))
    # tr(Gamma), or each part's
    trace = np.einsum("ir,r,ir->r", factor, scale, factor)
    trace = trace.sum() if parts is None else trace @ parts
    varies_ = varies if parts is None else varies[:, None]
    null_mean = np.where(varies_, np.multiply.outer(1.0 - mean_offdiagonal, trace), 0.0)
    dependence = np.where(varies_, total - null_mean, 0.0)
    if not with_noise:
        return dependence
    return dependence, np.where(varies_, _null_sd(factor, scale, centered, n, parts),
                                0.0), null_mean


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
    feature has no spread. Statistics of several Gammas at once (d x P, one
    column per group, :mod:`ikdr.reduction.importances`) are tested at ``level / (d
    P)``: the chance that any of them counts under independence stays ``level``."""
    tests = null_sd.size
    valid = (null_sd > 0) & (null_mean > 0)
    mean = np.where(valid, null_mean, 1.0)
    variance = np.where(valid, null_sd, 1.0) ** 2
    dof, scale = 2.0 * mean ** 2 / variance, variance / (2.0 * mean)
    return np.where(valid, scale * chi2.isf(level / max(tests, 1), dof) - mean, np.inf)
