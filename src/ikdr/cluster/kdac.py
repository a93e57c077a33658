r"""Kernel dimension alternative clustering (KDAC) solved by ISM (dissertation ch. 3)."""
from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import numbers

from sklearn.utils._param_validation import Interval

from .._utils.labels import one_hot
from .._utils.sampling import sample_index
from .._utils.sparse import CLUSTERING_MAX_FEATURES, stored_columns
from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, check_matrix, check_positive
from .._utils.validation import keep_state_on_error
from ..gamma import alternative_gamma, centered, clustering_gamma
from ..kernels import Gaussian, KernelLike, median_sigma
from ..kernels.bandwidth import feature_median_distances
from ..metrics import nmi
from ..passes.dask_data import check_target, is_dask_array
from ..spectral import median_scale_gaussian
from .base import COMMON_ATTRS, COMMON_PARAMS, AlternatingClustering, AlternationRun
from .screen import FEATURE_GAP_MAX_SAMPLES, FEATURE_GAP_SCALE, feature_gaps

__all__ = ["KDAC", "select_sigma_lambda", "existing_dependence", "feature_start"]

#: the existing clustering counts as visible in X when its normalised HSIC with X
#: is this many times its mean under random relabelling (seeded random
#: partitions of 15 data sets measured 0.57-1.47, real existing clusterings
#: 9.7-25; docs/clustering_defaults.md)
DEPENDENCE_THRESHOLD = 3.0
#: rows of the dense dependence check (a seeded subsample above this)
DEPENDENCE_MAX_SAMPLES = 1000
#: the feature start runs when the existing clustering is this visible in X (below
#: DEPENDENCE_THRESHOLD too: a 3-cluster view among 50 noise features scores 2.9;
#: random partitions 0.57-1.47)
FEATURE_START_DEPENDENCE = 2.0
#: the feature start runs only when its feature's gap reaches this: a feature
#: that alone holds k clusters (grids of blobs 0.65-0.91, noise features at most
#: 0.19; the face data 0.20 and the moon data 0.32, where the clusters need
#: several features and the start from one of them lost 0.35-0.45 NMI)
FEATURE_START_MIN_GAP = 0.5


def existing_clusterings(y_existing, n_samples):
    """One-hot matrices of one clustering or a list of clusterings, side by side.

    Returns ``(Y, labels)``: Y is n x (sum of cluster counts) with
    :math:`YY^T = \\sum_c Y_c Y_c^T`, ``labels`` the list of 1-D label arrays.
    """
    if y_existing is None:
        raise ValueError("KDAC requires y to be passed, but the target y is None: give the "
                         "existing clustering, fit(X, y_existing)")
    if isinstance(y_existing, (list, tuple)) and len(y_existing) > 0 and \
            all(np.ndim(y) >= 1 for y in y_existing):
        candidates = list(y_existing)
    else:
        candidates = [y_existing]
    blocks, labels = [], []
    for c, y in enumerate(candidates):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y_existing[{c}] must be a 1-D label vector, got shape {y.shape}; "
                             "pass several clusterings as a list of label vectors")
        if y.shape[0] != n_samples:
            raise ValueError(f"y_existing[{c}] has {y.shape[0]} labels but X has {n_samples} "
                             "samples (y_existing of the wrong length)")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError(f"y_existing[{c}] contains NaN or infinite values")
        Y, classes = one_hot(y)
        if classes.shape[0] < 2:
            raise ValueError(f"y_existing[{c}] has a single cluster; it carries no information "
                             "to be novel against")
        if classes.shape[0] >= n_samples:
            raise ValueError(f"y_existing[{c}] puts every sample in a cluster of its own "
                             f"({classes.shape[0]} clusters for {n_samples} samples); it carries "
                             "no information to be novel against")
        blocks.append(Y)
        labels.append(y)
    return np.hstack(blocks), labels


def existing_dependence(X, kernel, Y, *, normalize=True, max_samples=DEPENDENCE_MAX_SAMPLES,
                        random_state=None):
    r"""How visible the existing clustering is in X: its HSIC over its permutation mean.

    .. math:: \rho = \frac{\mathrm{Tr}(\bar Y^T M \bar Y)}
              {\mathrm{E}_\pi\,\mathrm{Tr}(\bar Y^T P_\pi^T M P_\pi \bar Y)},
              \qquad M = D^{-1/2} K_X D^{-1/2},

    with :math:`\bar Y` the centered one-hot matrix (n x c) of the existing
    clustering(s), :math:`D = \mathrm{diag}(K_X 1)` (the identity when
    ``normalize`` is False) and the expectation over uniformly random
    relabellings :math:`\pi` in closed form (:math:`\bar Y` has zero column
    sums): :math:`\mathrm{Tr}(\bar Y^T\bar Y)\,[\mathrm{tr} M / n -
    (1^T M 1 - \mathrm{tr} M) / n(n-1)]`. :math:`\rho \approx 1` when the
    existing clustering is unrelated to X (nothing for an alternative view to
    leave out); a real clustering gives :math:`\rho \gg 1`. Dense on at most
    ``max_samples`` rows (a seeded subsample).

    Returns
    -------
    float
        :math:`\rho`; ``inf`` when the permutation mean is not positive.
    """
    n = X.shape[0]
    idx = sample_index(n, max_samples, random_state)
    idx = np.arange(n) if idx is None else np.sort(idx)
    Z = np.ascontiguousarray(np.asarray(X[idx], dtype=np.float64))
    Yc = centered(np.asarray(Y, dtype=np.float64)[idx])
    m = Z.shape[0]
    K = kernel.matrix(Z).astype(np.float64)
    if normalize:
        deg = K.sum(axis=1)
        if np.any(deg <= 0):
            return float("inf")
        s = 1.0 / np.sqrt(deg)
        K = s[:, None] * K * s[None, :]
    trace, total = float(np.trace(K)), float(K.sum())
    null = float(np.sum(Yc * Yc)) * (trace / m - (total - trace) / (m * (m - 1)))
    if not null > 0:
        return float("inf")
    return float(np.sum(Yc * (K @ Yc)) / null)


def feature_start(X, Y, n_clusters, *, random_state=None):
    r"""KDAC's second start: the single feature that best clusters what the existing view leaves.

    Residual :math:`R = X - \bar Y \bar Y^+ X` (X with the existing
    clusters' means removed, :math:`\bar Y` the centered one-hot matrix), then
    :func:`ikdr.cluster.screen.feature_gaps` of R with k groups: a feature that
    carries k clusters besides the existing view scores near 1, a unimodal
    (noise) feature low (grids of blobs: 0.65-0.90 against at most 0.21 for
    0-50 noise features), and the existing view's own features low too, their
    clusters removed.

    Returns
    -------
    start : ndarray (d, 1)
        The unit vector of the best feature (the first U-step's projection).
    sigma : float
        :data:`ikdr.spectral.FEATURE_GAP_SCALE` x the median pairwise distance
        of X along that feature (on the same sampled rows): the bandwidth of
        the projected space for this start.
    scores : ndarray (d,)
        The gap of every feature.
    """
    X = np.asarray(X, dtype=np.float64)
    Yc = centered(np.asarray(Y, dtype=np.float64))
    R = X - Yc @ np.linalg.lstsq(Yc, X, rcond=None)[0]
    scores = feature_gaps(R, n_clusters, random_state=random_state)
    best = int(np.argmax(scores))
    start = np.zeros((X.shape[1], 1))
    start[best, 0] = 1.0
    rows = sample_index(X.shape[0], FEATURE_GAP_MAX_SAMPLES, random_state)
    column = X[:, best] if rows is None else X[rows, best]
    sigma = FEATURE_GAP_SCALE * feature_median_distances(column[:, None], untied=False)[0]
    return start, sigma, scores


class KDAC(TargetRequiredMixin, AlternatingClustering):
    _parameter_constraints: dict = {
        **AlternatingClustering._parameter_constraints,
        "lam": [Interval(numbers.Real, 0, None, closed="left")],
    }

    __doc__ = r"""Kernel dimension alternative clustering, solved by ISM.

    Finds a clustering of high quality that differs from an existing one
    (dissertation ch. 3, Eq. 3.2):

    .. math:: \max_{U, W}\ \mathrm{HSIC}(XW, U) - \lambda\,\mathrm{HSIC}(XW, Y),
              \quad W^TW = I,\ U^TU = I,

    with the normalised kernel :math:`D^{-1/2}K_{XW}D^{-1/2}`. The W-step is
    ISM on :math:`\Gamma = D^{-1/2} H (UU^T - \lambda YY^T) H D^{-1/2}` (Eq. 3.4,
    factored with signed weights), started at :math:`\Phi_0` (Eq. 3.12) in the
    first outer iteration and warm-started afterwards; the U-step is spectral
    clustering of XW (Eq. 3.3). :math:`U_0` is the spectral embedding of the full
    data (W = I). Y is the one-hot matrix of ``y_existing``; a list of earlier
    clusterings penalises each: :math:`YY^T = \sum_c Y_cY_c^T`, so alternative
    views can be found one after another. Labels: k-means on the row-normalised U.

    Thesis hyperparameters (sigma, lambda, q) on standardised data (Table 3.2):
    Moon 400x4 (0.1, 1, 3), Flower (2, 10, 2), Face (3.1, 1, 17). Table 3.1's
    Face row (NMI 0.57, novelty 0.004) takes the 4 poses as the existing
    clustering and scores 4 alternative clusters against the 20 identities,
    as the authors' code does (ikdr: 0.566, 0.004; :doc:`/clustering_defaults`).
    :func:`ikdr.select_sigma_lambda` runs the thesis' grid search.

    Parameters
    ----------""" + COMMON_PARAMS + r"""
    lam : float, default=1.0
        :math:`\lambda \ge 0`, the weight of the novelty term. Y is the
        unnormalised one-hot matrix, so the penalty grows with cluster sizes.

    Attributes
    ----------""" + COMMON_ATTRS + r"""
    existing_dependence_ : float
        :func:`existing_dependence` of ``y_existing`` at W = I: how many
        times its normalised HSIC with X exceeds that of a random relabelling.
        Below 2 the existing clustering is not visible in X, there is nothing
        to leave out, and KDAC at its defaults fits as ISMClustering's default
        fit (its penalty term, the same for every W in expectation, is left
        out of the W-steps; ``novelty_`` and the history's
        ``alternativeness`` still report it).
        With ``n_components=None``, q stays below d (an alternative view leaves
        a direction out) only when it is at least 3; below, the existing
        clustering is not visible in X and q follows :func:`ikdr.default_n_components`
        as in :class:`ISMClustering`. From 3 on, ``sigma="auto"`` also trades
        local scaling for one global Gaussian at the median local scale
        (:func:`ikdr.spectral.median_scale_gaussian`, the median distance to
        the 7th nearest neighbor) in the W-step kernel and the U-step
        affinity: the per-point scales are set by the neighbors in the
        existing view (face pose -> identity NMI 0.49 -> 0.57, moon 400 x 4
        0.76 -> 0.87; :doc:`/clustering_defaults`).
    novelty_ : float
        NMI between ``labels_`` and the existing clustering (the largest one
        when several are given); 0 is fully novel.

    Notes
    -----
    The second run (``start_`` = 1) is the feature start: spectral clustering
    of the best single feature of the residual (:func:`feature_start`) with a
    Gaussian at half its median pairwise distance, q = 1 unless given, W on
    the features whose k-group gap is at least 0.5 (zero elsewhere,
    ``support_``); it runs when ``existing_dependence_`` is at least 2 and the
    best feature's gap is at least 0.5.

    ``history_`` entries carry ``quality`` (CQ, Table 3.1), ``alternativeness``
    (:math:`\mathrm{Tr}(Y^T H D^{-1/2} K_{XW} D^{-1/2} H Y)`, the HSIC to the
    existing clustering in the same normalisation), ``objective`` =
    quality - lam * alternativeness and ``cost`` = -objective (Table 3.1's Cost).

    See Also
    --------
    select_sigma_lambda, ISMClustering, ikdr.metrics.novelty

    References
    ----------
    Wu, Ioannidis, Sznaier, Li, Kaeli, Dy. Iterative Spectral Method for
    Alternative Clustering. AISTATS 2018. Wu, dissertation (2020), ch. 3,
    Algorithms 1-2, Eq. 3.2-3.4, 3.12. Niu, Dy, Jordan. Iterative discovery of
    multiple alternative clustering views. TPAMI 2014.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> import ikdr
    >>> X, y_original, y_alternative = ikdr.datasets.make_moon_gaussians(random_state=0)
    >>> X = StandardScaler().fit_transform(X)
    >>> model = ikdr.KDAC(n_clusters=2, n_components=3, sigma=0.1, lam=1.0, random_state=0)
    >>> labels = model.fit_predict(X, y_original)
    >>> round(ikdr.metrics.nmi(y_alternative, labels), 2)
    1.0
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None,
                 sigma: SigmaLike = "auto", lam: float = 1.0, kernel: KernelLike = "gaussian",
                 max_iter: int = 20, tol: float = 1e-3, affinity: str | None = None,
                 normalize: str | bool = "auto", random_state: RandomStateLike = None,
                 verbose: int = 0, dtype: DTypeLike = np.float64, approximation: str | None = None,
                 n_landmarks: int | str = "auto", eigen_solver: str = "auto",
                 strategy: str = "auto") -> None:
        self.strategy = strategy
        self.eigen_solver = eigen_solver
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.sigma = sigma
        self.lam = lam
        self.kernel = kernel
        self.max_iter = max_iter
        self.tol = tol
        self.affinity = affinity
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype

    @keep_state_on_error
    def fit(self, X: ArrayLike, y_existing: ArrayLike) -> KDAC:
        """Find an alternative clustering of X (n x d; dense, or ``scipy.sparse``
        and never made dense: :doc:`/guide/sparse`) to ``y_existing`` (a label
        vector, or a list of label vectors of earlier clusterings)."""
        X, _, side = self._input(X)
        # the existing clustering is checked before any work (the k-NN query of
        # sigma="auto", the kernels): a wrong length fails at once
        if is_dask_array(y_existing):      # gathered, its length checked first
            y_existing = check_target(y_existing, X.shape[0], "y_existing")
        Y, existing = existing_clusterings(y_existing, X.shape[0])
        kernel, affinity, options = self._check_common(X, side)
        lam = float(self.lam)
        Yc = centered(Y)
        # q below d only when the existing clustering is visible in X: against a
        # clustering unrelated to X there is nothing to leave out, and a line cannot
        # hold rings or moons (docs/clustering_defaults.md)
        # on at most 1,000 sampled rows, gathered from wherever X lives: the same
        # value in memory, from a memmap and on a cluster
        points = self._points0(X, side)     # X, or sparse X's rows at W = I as dense points
        self.existing_dependence_ = existing_dependence(points, affinity, Y,
                                                        normalize=options.normalize,
                                                        random_state=self.random_state)
        alternative = self.existing_dependence_ >= DEPENDENCE_THRESHOLD
        if alternative:
            kernel, affinity = self._global_scale(kernel, affinity)

        def build(U, deg):
            return alternative_gamma(U, Y, deg, lam)

        def measure_with(aff):
            def measure(Z, U, vals, deg):
                alt = side.quadratic_trace(Z, aff, Yc / np.sqrt(deg)[:, None])
                quality = float(np.sum(vals))
                return {"alternativeness": alt, "objective": quality - lam * alt}
            return measure

        strategy = self._strategy(X, side)
        if self.strategy == "auto" and self.existing_dependence_ >= FEATURE_START_DEPENDENCE:
            strategy = "alternate"      # the existing clustering is visible: leave it out
        if strategy == "select" and self.existing_dependence_ < FEATURE_START_DEPENDENCE:
            # Nothing to leave out: the existing clustering is not visible in X, so its
            # HSIC with XW is the same for every W in expectation and its penalty, of the
            # size of the clusters (unnormalised Y), only adds noise to the W-steps (on
            # make_classification 3 of 60 it steered W to noise features: recall 0.67).
            # KDAC is then ISMClustering's selection; the history still reports the
            # alternativeness.
            fit = self._select(X, options, clustering_gamma, measure_with)
        elif strategy == "select":
            # asked for by name where the existing clustering is visible: the selection
            # with the alternative Gamma in its W-steps (guided by the novelty term)
            fit = self._select(X, replace(options, alternative=alternative, guided=True),
                               build, measure_with)
        else:
            # the existing clustering is a second term on W
            options = replace(options, alternative=alternative, guided=True)
            fit = self._alternative_runs(X, points, side, (kernel, affinity), options, Y,
                                         build, measure_with)
        self._store(fit, X)
        self.alternativeness_ = self.history_[self.best_iteration_ - 1]["alternativeness"]
        self.novelty_ = max(nmi(y, self.labels_) for y in existing)
        return self

    def _alternative_runs(self, X, points, side, kernels, options, Y, build, measure_with):
        """The alternation against an existing clustering (one-hot Y), with the
        feature start (see the Notes) when the clustering is visible in X.
        ``points``: X's rows at W = I (X itself, or sparse X's start points)."""
        kernel, affinity = kernels
        k, q = options.n_clusters, options.n_components
        # sparse X: W on its most dispersed stored columns
        starts = [AlternationRun(kernel, affinity, measure_with(affinity), None, q,
                                 stored_columns(X, CLUSTERING_MAX_FEATURES))]
        feature_scores = None
        # the feature start needs X's own columns (sparse X: its points are X itself)
        if self.existing_dependence_ >= FEATURE_START_DEPENDENCE and side.rows_in_memory \
                and all(self._local_scaling().values()) and points.shape[1] == X.shape[1]:
            # a second start from the feature that best clusters what the existing
            # view leaves, with the bandwidth of that projection; the run whose
            # final U-step separates its k clusters best is kept (the HSIC
            # objectives of the two bandwidths are not comparable, and at one
            # bandwidth noise directions score as high as the alternative:
            # docs/alternative_clustering.md)
            start, sigma0, feature_scores = feature_start(
                points, Y, k, random_state=self.random_state)
            if sigma0 > 0 and feature_scores.max() >= FEATURE_START_MIN_GAP:
                # W on the features that hold k clusters besides the existing view
                # (otherwise the objective tilts W towards noise features that lower
                # the penalty: the cube with two views given, 0.89 -> 1.0), and
                # q = 1 unless given: the start is one feature (the eigengap of
                # Phi_0 keeps q = d - 1 here, every noise feature included)
                columns = np.flatnonzero(feature_scores >= FEATURE_START_MIN_GAP)
                g = Gaussian(sigma0).fit(points[:, columns])
                starts.append(AlternationRun(g, g, measure_with(g), start[columns],
                                             1 if q is None else min(q, columns.size),
                                             columns))
        fit = self._alternate(X, side, (kernel, affinity), options, build, None, starts=starts)
        return replace(fit, feature_scores=feature_scores)

    def _global_scale(self, kernel, affinity):
        """sigma="auto" against an existing clustering visible in X: the local-scaling
        kernels of the default become one global Gaussian at their median scale
        (:func:`ikdr.spectral.median_scale_gaussian`; :doc:`/clustering_defaults`)."""
        default = self._local_scaling()
        swap = {}
        for role, K in (("kernel", kernel), ("affinity", affinity)):
            # the default's local-scaling kernel (its bandwidths need all rows)
            if default[role] and K.needs_all_rows and id(K) not in swap:
                swap[id(K)] = median_scale_gaussian(K)
        return swap.get(id(kernel), kernel), swap.get(id(affinity), affinity)

    def fit_predict(self, X: ArrayLike, y_existing: ArrayLike, **kwargs: Any) -> np.ndarray:
        """Fit and return ``labels_``."""
        return self.fit(X, y_existing, **kwargs).labels_


def _second_order_condition(X, W, gamma, kernel, block=256):
    r"""Both sides of the thesis' inequality (3.10) at W, in ikdr's sign convention.

    Thesis: :math:`\sigma^2[\min\bar\Lambda - \max\Lambda] \ge \sum_{ij}
    |\gamma_{ij}| \sigma^{-2} e^{-\|W^T(x_i-x_j)\|^2/2\sigma^2} \|x_i - x_j\|^4`,
    with the thesis' :math:`\Phi = -2\Phi_{ikdr}` (it takes the smallest
    eigenvalues, ikdr the largest), so the left side is
    :math:`2\sigma^2(\lambda_q - \lambda_{q+1})` of ikdr's Phi. The right side
    is summed over row blocks (O(block n) memory).
    """
    sigma = float(kernel.sigma)
    q = W.shape[1]
    phi = kernel.phi(X, W, gamma)
    vals = np.sort(np.linalg.eigvalsh(phi))[::-1]
    lhs = np.inf if q >= X.shape[1] else 2.0 * sigma ** 2 * (vals[q - 1] - vals[q])
    Z = X @ W
    G, s = gamma.factor, gamma._s()
    sq_x = np.einsum("ij,ij->i", X, X)
    sq_z = np.einsum("ij,ij->i", Z, Z)
    rhs = 0.0
    for start in range(0, X.shape[0], block):
        sl = slice(start, start + block)
        g = np.abs((G[sl] * s) @ G.T)
        dx = np.maximum(sq_x[sl, None] + sq_x[None, :] - 2.0 * X[sl] @ X.T, 0.0)
        dz = np.maximum(sq_z[sl, None] + sq_z[None, :] - 2.0 * Z[sl] @ Z.T, 0.0)
        rhs += float(np.sum(g * np.exp(-dz / (2 * sigma ** 2)) * dx ** 2))
    return lhs, rhs / sigma ** 2


def select_sigma_lambda(X: ArrayLike, y_existing: ArrayLike, n_clusters: int, *,
                        sigmas: Sequence[float] | None = None,
                        lams: Sequence[float] | None = None, n_components: int | None = None,
                        max_iter: int = 20, tol: float = 1e-3,
                        random_state: RandomStateLike = None) -> dict[str, Any]:
    r"""The thesis' hyperparameter search for Gaussian KDAC (dissertation section 3.5).

    For every (sigma, lambda) of the grid, fit :class:`KDAC` and evaluate the
    clustering quality CQ and the second-order condition (3.10) at the
    solution. Returns the pair with the highest CQ among those satisfying
    (3.10); if none does, the pair closest to satisfying it (largest
    lhs / rhs). With ``n_components=None`` each fit picks q by the eigengap
    of :math:`\Phi_0` (Eq. 3.11).

    The thesis scans :math:`\lambda, \sigma \in (0, 10]` at steps of 0.01
    (10^6 fits); the default grid here is coarse, sigma in
    {0.1, 0.25, 0.5, 1, 2} x median distance and lambda in {0.01, 0.1, 1, 10}:
    pass finer grids for a closer search. Condition (3.10) needs an n x n pass
    per pair (in row blocks), so this is meant for n up to a few thousand.

    Parameters
    ----------
    X : array-like (n, d), standardised
    y_existing : array-like (n,) or list of them
    n_clusters : int
    sigmas, lams : sequences of positive floats, optional
    n_components : int or None
    max_iter, tol, random_state : as in :class:`KDAC`

    Returns
    -------
    result : dict
        ``sigma``, ``lam``, ``n_components``, ``satisfied`` (whether (3.10)
        held for the chosen pair) and ``table``: one dict per grid point with
        ``sigma``, ``lam``, ``n_components``, ``quality``, ``novelty``,
        ``lhs``, ``rhs``, ``satisfied``.

    References
    ----------
    Wu, dissertation (2020), Eq. 3.10-3.11 and "Hyperparameter Tuning", section 3.5.
    """
    X = check_matrix(X, "X")
    if sigmas is None:
        med = median_sigma(X, random_state=random_state)
        sigmas = [f * med for f in (0.1, 0.25, 0.5, 1.0, 2.0)]
    if lams is None:
        lams = [0.01, 0.1, 1.0, 10.0]
    sigmas = [check_positive(s, "sigma") for s in np.atleast_1d(sigmas)]
    lams = [check_positive(v, "lam", strict=False) for v in np.atleast_1d(lams)]
    Y, _ = existing_clusterings(y_existing, X.shape[0])
    table = []
    for sigma in sigmas:
        for lam in lams:
            model = KDAC(n_clusters=n_clusters, n_components=n_components, sigma=sigma, lam=lam,
                         max_iter=max_iter, tol=tol, random_state=random_state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X, y_existing)
            gamma = alternative_gamma(model.embedding_, Y, model.degrees_, lam)
            lhs, rhs = _second_order_condition(X, model.components_, gamma, model.kernel_)
            table.append({"sigma": sigma, "lam": lam, "n_components": model.components_.shape[1],
                          "quality": model.quality_, "novelty": model.novelty_,
                          "lhs": lhs, "rhs": rhs, "satisfied": bool(lhs >= rhs)})
    ok = [row for row in table if row["satisfied"]]
    if ok:
        best = max(ok, key=lambda r: r["quality"])
    else:
        best = max(table, key=lambda r: (r["lhs"] / r["rhs"] if r["rhs"] > 0 else np.inf,
                                         r["quality"]))
    return {"sigma": best["sigma"], "lam": best["lam"], "n_components": best["n_components"],
            "satisfied": best["satisfied"], "table": table}
