r"""The class-moment screen: which features a supervised ISM fit starts from.

ISM's start :math:`\Phi_0` (ISM paper, Theorem 3) sees only the class means
(for a centered Gamma, :math:`\Phi_0 \propto X^T \Gamma X`); a ring or an XOR
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

Labels that move none of these (a 3-way parity :math:`\mathrm{sign}(x_0 x_1
x_2)`) are left to :func:`third_moment_screen`, the next order: the class means
of products of three features, tested the same way, at :math:`O(n d^3)` on a
few features and rows.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._utils.eig import grams as class_grams
from .._utils.sampling import sample_index
from .._utils.typing import ArrayLike
from ..passes.dask_data import row_source

__all__ = ["moment_screen", "sparse_moment_screen", "third_moment_screen",
           "third_moment_candidates", "screen_bytes",
           "SLICES", "SCREEN_ROWS", "SPARSE_PAIR_FEATURES", "THIRD_MOMENT_MAX_FEATURES",
           "THIRD_MOMENT_ROWS"]

#: quantile slices of a continuous target for the screen
SLICES = 10
#: rows the supervised estimator's screen reads at most (a seeded sample above):
#: its moments cost n d^2, and 20,000 rows resolve a class moment's deviation to
#: 1/sqrt(n_c), far below the thresholds
SCREEN_ROWS = 20_000
#: features of sparse X whose pairwise covariances the screen tests (the most frequent)
SPARSE_PAIR_FEATURES = 1024
#: the third-moment screen tests the triples of at most this many features (its cost
#: is n d^3) ...
THIRD_MOMENT_MAX_FEATURES = 64
#: ... on at most this many rows: a 3-way parity moves its triple's class mean by
#: half a standard deviation, 20 standard errors at 2,000 rows)
THIRD_MOMENT_ROWS = 2000


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
    class_grams(blocks, out=[grams[c] for c in present])
    for c, Xc in zip(present, blocks):
        sums[c] = Xc.sum(axis=0)
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
    return _scores(n, counts, sums, lambda c: grams[c], grams.sum(axis=0),
                   np.sqrt(2.0 * np.log(max(d, 2))), np.sqrt(2.0 * np.log(max(d * d, 2))))


def sparse_moment_screen(X, y, max_pairs_features=SPARSE_PAIR_FEATURES):
    r""":func:`moment_screen` of a sparse X (CSR) without d x d moments.

    Every feature's class means and variances are tested (O(nnz)); covariances
    only among the ``max_pairs_features`` features with the most stored
    entries (the most frequent terms or genes: a pair of rarer ones has too
    few co-occurrences for its covariance to pass the threshold), from their
    per-class Gram matrices (sparse products, O(sum of squared row counts)).
    The thresholds count the tests made: :math:`\sqrt{2\log d}` for the d
    means and variances, :math:`\sqrt{2\log k^2}` for the k^2 pairs.

    Up to ``max_pairs_features`` features every pair is tested and the scores
    are :func:`moment_screen`'s to rounding. Wider, most features are rare
    (a term in a handful of documents) and far from normal: one co-occurrence
    of two rare terms, or two occurrences of one in a class, is a huge
    standardised moment, and the normal theory's standard errors
    :math:`\sqrt{(1 + S_{jk}^2)/n_c}` would keep thousands of them. There the
    second moments' standard errors are the data's own,
    :math:`\sqrt{(E[z_j^2 z_k^2] - S_{jk}^2)/n_c}`, from the fourth moments of
    the standardised features (equal to the normal theory's for normal
    features), made from sparse products as well.
    Returns ``(kept, raw)`` as :func:`moment_screen` does.
    """
    n, d = X.shape
    codes = _classes(y)
    n_classes = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=n_classes).astype(np.float64)
    member = sp.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(n_classes, n))
    X2 = X.multiply(X).tocsr()
    sums = np.asarray((member @ X).toarray())                       # classes x d
    squares = np.asarray((member @ X2).toarray())
    power = [np.asarray(X.power(k).sum(axis=0), dtype=np.float64).ravel() for k in (1, 2, 3, 4)]
    mean = power[0] / n
    var = power[1] / n - mean * mean
    central4 = (power[3] - 4 * mean * power[2] + 6 * mean ** 2 * power[1]
                - 4 * mean ** 3 * power[0]) / n + mean ** 4
    # the data's own standard errors where not every pair is tested (docstring)
    robust = d > max_pairs_features
    kurtosis = central4 / np.where(var > 0, var * var, 1.0) if robust else np.full(d, 3.0)
    z1 = np.sqrt(2.0 * np.log(max(d, 2)))
    kept, raw = _diagonal_scores(n, counts, sums, squares, z1, kurtosis)
    stored = np.bincount(X.indices, minlength=d)
    pairs = np.sort(np.argsort(-stored, kind="stable")[:min(max_pairs_features, d)])
    pairs = pairs[stored[pairs] > 0]
    if pairs.size >= 2:
        Xp, Xp2 = X[:, pairs], X2[:, pairs]

        def gram_of(c):
            rows = Xp[codes == c]
            return (rows.T @ rows).toarray()

        total = (Xp.T @ Xp).toarray()
        fourth = _fourth_moments(Xp, Xp2, total, mean[pairs], power[0][pairs],
                                 power[1][pairs], var[pairs]) if robust else None
        kept[pairs], raw[pairs] = _scores(n, counts, sums[:, pairs], gram_of, total, z1,
                                          np.sqrt(2.0 * np.log(pairs.size ** 2)), fourth)
    return kept, raw


def _fourth_moments(Xp, Xp2, total, mu, s1, s2, var):
    r""":math:`E[z_j^2 z_k^2]` of the standardised columns of sparse Xp (Xp2 its squares,
    ``total`` its Gram matrix, ``s1``, ``s2`` its column sums and sums of squares):
    :math:`(x_j - \mu_j)^2 (x_k - \mu_k)^2` expanded into sparse products."""
    n = Xp.shape[0]
    # accumulated in place: a few k x k arrays at a time
    fourth = (Xp2.T @ Xp2).toarray()
    cross = (Xp2.T @ Xp).toarray()                               # sum x_j^2 x_k
    cross *= -2.0 * mu[None, :]
    fourth += cross
    fourth += cross.T
    del cross
    fourth += 4.0 * np.outer(mu, mu) * total
    m2 = mu ** 2
    fourth += np.outer(s2 - 2.0 * mu * s1 + 0.5 * n * m2, m2)
    fourth += np.outer(m2, s2 - 2.0 * mu * s1 + 0.5 * n * m2)
    std2 = np.where(var > 0, var, np.inf)
    fourth /= n * np.outer(std2, std2)
    return fourth


def _diagonal_scores(n, counts, sums, squares, z1, kurtosis):
    """The scores of :func:`_scores` from the class means and variances alone (no
    covariance: a d x d moment is never formed); ``kurtosis`` gives the variances'
    standard errors."""
    mean = sums.sum(axis=0) / n
    var = squares.sum(axis=0) / n - mean * mean
    std = np.sqrt(np.maximum(var, 0.0))
    std[~(std > 0)] = np.inf
    classes = counts >= 2
    nc = counts[classes][:, None]
    mean_c = sums[classes] / nc
    second_c = (squares[classes] / nc - 2.0 * mean_c * mean + mean * mean) / (std * std)
    se = np.sqrt(np.maximum(kurtosis - 1.0, _TINY) / nc)
    m = (mean_c - mean) / std * np.sqrt(nc)
    D = (second_c - 1.0) / se
    weight = nc[:, 0] / n
    raw = weight @ (m * m + D * D)
    m = m * (np.abs(m) > z1) / np.sqrt(nc)
    D = D * (np.abs(D) > z1) * se
    return weight @ (m * m + D * D), raw


#: floor of a second moment's variance (a feature whose standardised square is constant)
_TINY = 1e-12


def _scores(n, counts, sums, gram_of, total, z1, z2, fourth=None):
    """(kept, raw) of :func:`moment_screen` from the per-class counts, column sums and
    Gram matrices (``gram_of(c)``, their sum ``total``); ``z1`` and ``z2`` are the
    thresholds of means and variances and of covariances; ``fourth``, when given,
    the standardised fourth moments :math:`E[z_j^2 z_k^2]` whose excess over
    :math:`S_{jk}^2` is the second moments' variance (else the normal theory's
    :math:`1 + S_{jk}^2`). The d x d deviations
    are made a block of rows at a time (memory: a few d x d arrays, not one per
    class)."""
    d = sums.shape[1]
    # the moments of the standardised features (the scores do not depend on X's
    # scale or offset; a constant feature has none and is never kept)
    mean = sums.sum(axis=0) / n
    cov = total / n - np.outer(mean, mean)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    std[~(std > 0)] = np.inf
    S = cov / np.outer(std, std)
    del cov
    # a class of fewer than 2 rows scores nothing
    present = np.flatnonzero(counts >= 2)
    nc = counts[present][:, None]
    mean_c = sums[present] / nc
    m = (mean_c - mean) / std * np.sqrt(nc)
    # each feature's strongest deviation: a mean over its d second moments would
    # bury one strong covariance (an interaction) among d - 1 noise ones
    strongest = np.zeros((present.size, d))
    significant = np.zeros((present.size, d))
    # A class's second moment about the overall mean, standardised, is
    # (G_c / n_c - a m^T - m a^T + m m^T) / (s s^T), a its mean: G_c / n_c / (s s^T)
    # less the rank-2 u m~^T + m~ u^T (m~ = m / s, u = (a - m / 2) / s), one thin
    # product. Its deviation from S in standard errors is D = (second - S) / se,
    # se = sqrt(spread / n_c): |D| is tested, and the deviation itself,
    # second - S, counts where it passes (its square is D^2 spread / n_c).
    inv_std = 1.0 / std
    scaled_mean = mean * inv_std
    for start in range(0, d, _SCORE_ROWS):
        # what every class shares, once per block of rows
        J = slice(start, min(d, start + _SCORE_ROWS))
        inv_scale = np.outer(inv_std[J], inv_std)
        S_J = S[J]
        spread = 1.0 + S_J * S_J if fourth is None else np.maximum(fourth[J] - S_J * S_J, _TINY)
        root = 1.0 / np.sqrt(spread)
        threshold = np.full(S_J.shape, z2 * z2)
        threshold[np.arange(S_J.shape[0]), np.arange(J.start, J.stop)] = z1 * z1
        for i, c in enumerate(present):
            count = nc[i, 0]
            u = (mean_c[i] - 0.5 * mean) * inv_std
            diff = gram_of(c)[J] * inv_scale
            diff *= 1.0 / count
            diff -= np.stack([u[J], scaled_mean[J]], axis=1) @ np.stack([scaled_mean, u])
            diff -= S_J
            diff *= root
            squares = np.square(diff, out=diff)
            squares *= count                # D^2
            strongest[i, J] = squares.max(axis=1)
            squares *= squares > threshold
            significant[i, J] = np.einsum("ij,ij->i", squares, spread) / count
    weight = nc[:, 0] / n
    raw = weight @ (m * m + strongest)
    m = m * (np.abs(m) > z1) / np.sqrt(nc)
    kept = weight @ (m * m + significant)
    return kept, raw


#: rows of the d x d deviations made at once by :func:`_scores`
_SCORE_ROWS = 256


def third_moment_screen(X: np.ndarray, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""The screen's next order, for labels that move no class mean, variance or
    covariance (a 3-way parity :math:`y = \mathrm{sign}(x_0 x_1 x_2)`).

    For every triple of distinct standardised features and every class, the
    deviation of the class mean of :math:`z_j z_k z_l` from its mean over all
    rows, in standard errors:

    .. math:: t_{cjkl} = \sqrt{n_c}\,\frac{\overline{(z_j z_k z_l)}_c
        - \overline{z_j z_k z_l}}{\sqrt{\overline{z_j^2 z_k^2 z_l^2}
        - \overline{z_j z_k z_l}^2}}.

    A feature is kept when a triple it belongs to deviates by more than
    :math:`\sqrt{2\log d^3}` (the largest of that many standard normals).
    ``X`` is in memory, at most :data:`THIRD_MOMENT_MAX_FEATURES` columns (the
    caller samples rows: the cost is :math:`O(n d^3)`). Returns ``(kept, raw)``
    as :func:`moment_screen` does: the significant part of each feature's
    strongest deviation (0: none) and its strongest squared deviation.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if d > THIRD_MOMENT_MAX_FEATURES:
        raise ValueError(f"the third-moment screen takes at most {THIRD_MOMENT_MAX_FEATURES} "
                         f"features, got {d}")
    std = X.std(axis=0)
    std[~(std > 0)] = np.inf                     # a constant feature moves nothing
    Z = (X - X.mean(axis=0)) / std
    codes = _classes(y)
    counts = np.bincount(codes).astype(np.float64)
    triples = _triple_sums(Z) / n
    se = np.sqrt(np.maximum(_triple_sums(Z * Z) / n - triples * triples, _TINY))
    distinct = _distinct_triples(d)
    threshold = np.sqrt(2.0 * np.log(max(d, 2) ** 3))
    kept, raw = np.zeros(d), np.zeros(d)
    # one class's d^3 sums at a time (memory: a few d^3 arrays, whatever the classes)
    for cls in np.flatnonzero(counts >= 2).tolist():
        size = counts[cls]
        t = np.sqrt(size) * (_triple_sums(Z[codes == cls]) / size - triples) / se
        t2 = np.where(distinct, t * t, 0.0)
        # each feature's strongest triple (the tensor is symmetric: one axis suffices)
        raw = np.maximum(raw, size / n * t2.max(axis=(1, 2)))
        kept = np.maximum(kept, (t2 * (t2 > threshold ** 2)).max(axis=(1, 2)) / n)
    return kept, raw


def third_moment_candidates(X, y, order, scores, random_state=None):
    """Where :func:`moment_screen` kept nothing: :func:`third_moment_screen` on the
    first :data:`THIRD_MOMENT_MAX_FEATURES` candidates of ``order`` and a seeded
    sample of :data:`THIRD_MOMENT_ROWS` rows of ``X`` (in memory). Returns (kept,
    ``scores`` with the third-moment ones added, the candidates' order with the
    features it keeps first, by their score)."""
    tested = order[:THIRD_MOMENT_MAX_FEATURES]
    index = sample_index(X.shape[0], THIRD_MOMENT_ROWS, random_state)
    rows, labels = (X, y) if index is None else (X[index], y[index])
    kept_tested, raw_tested = third_moment_screen(rows[:, tested], labels)
    kept = np.zeros(scores.shape[0])
    kept[tested] = kept_tested
    scores = scores.copy()
    scores[tested] += raw_tested
    first = tested[np.argsort(-kept_tested, kind="stable")][:np.count_nonzero(kept_tested)]
    return kept, scores, np.concatenate([first, order[~np.isin(order, first)]])


def _triple_sums(Z):
    r""":math:`\sum_i z_{ij} z_{ik} z_{il}` (d x d x d), a d x d slice (one GEMM) at a time."""
    d = Z.shape[1]
    sums = np.empty((d, d, d))
    for j in range(d):
        sums[j] = (Z * Z[:, j:j + 1]).T @ Z
    return sums


def _distinct_triples(d):
    """Mask of the (j, k, l) with three distinct indices (a repeated index is a
    class's variance or covariance moved by a mean: the lower orders' business)."""
    index = np.arange(d)
    return ((index[:, None, None] != index[None, :, None])
            & (index[:, None, None] != index[None, None, :])
            & (index[None, :, None] != index[None, None, :]))
