"""The clustering estimators of ISM: ISMClustering and SemiSupervisedISM.

Both learn W and a spectral embedding U together, by ``strategy`` (the
selection of :mod:`ikdr.cluster.selection` or the alternation of
:mod:`ikdr.cluster.alternation`); they differ by their Gamma (the paradigm).
What they share with KDAC is :class:`ikdr.cluster.base.AlternatingClustering`.
"""
from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, keep_state_on_error
from ..gamma import centered, clustering_gamma, kernel_factor, semi_supervised_gamma
from ..kernels import Kernel, KernelLike, make_kernel
from .base import COMMON_ATTRS, COMMON_PARAMS, AlternatingClustering

__all__ = ["ISMClustering", "SemiSupervisedISM"]


class ISMClustering(AlternatingClustering):
    __doc__ = r"""Unsupervised interpretable kernel dimension reduction for clustering.

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)` over W
    (:math:`W^TW = I`) and U (:math:`U^TU = I`) (Niu, Dy, Jordan 2011; ISM
    paper section 2): the U-step is spectral clustering of XW, the W-step is
    ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and D held fixed.

    ``strategy="select"`` (the default wherever its kernel is used and the rows
    are in memory; :mod:`ikdr.cluster.selection`) chooses the start, the U-step
    and how far the alternation goes with a label-free criterion, the
    multi-graph normalised cut over the Calinski-Harabasz compactness, every
    candidate judged on every feature
    (:class:`ikdr.cluster.criterion.PartitionCriterion`). Starts: k-means,
    spectral clustering on the 10-NN graph (as scikit-learn's
    ``SpectralClustering(affinity="nearest_neighbors")``) and with the
    local-scaling affinity, and the graph and local starts on a few features
    when the feature screen takes them; sparse or wide X is clustered on its
    leading singular vectors. From the chosen start, W-steps with the U-step of
    the start's kind on XW are kept while the criterion prefers them. W is then
    the subspace in which ISM's kernel matches the kept clusters
    (``feature_importances_``). How it compares with k-means, spectral
    clustering and Leiden on public data: :doc:`/clustering_defaults`.
    ``strategy="alternate"`` runs the papers' alternation with the given
    ``kernel``, ``sigma``, ``affinity`` and ``normalize``.

    Parameters
    ----------""" + COMMON_PARAMS + r"""
    Attributes
    ----------""" + COMMON_ATTRS + r"""
    See Also
    --------
    SemiSupervisedISM, KDAC

    References
    ----------
    Niu, Dy, Jordan. Dimensionality reduction for spectral clustering. AISTATS 2011.
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, section 2 and Table 4.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.preprocessing import StandardScaler
    >>> import ikdr
    >>> X, y = load_wine(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> model = ikdr.ISMClustering(n_clusters=3, n_components=3, random_state=0).fit(X)
    >>> round(ikdr.metrics.nmi(y, model.labels_), 2) >= 0.84
    True
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None,
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "auto", max_iter: int = 20,
                 tol: float = 1e-3, affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, approximation: str | None = None,
                 n_landmarks: int | str = "auto", eigen_solver: str = "auto",
                 strategy: str = "auto") -> None:
        self.strategy = strategy
        self.eigen_solver = eigen_solver
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.max_iter = max_iter
        self.tol = tol
        self.affinity = affinity
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype

    @keep_state_on_error
    def fit(self, X: ArrayLike, y: None = None) -> ISMClustering:
        """Learn W, U and the labels from X (n x d; dense, or ``scipy.sparse`` and
        never made dense: :doc:`/guide/sparse`); y is ignored."""
        X, _, side = self._input(X)
        strategy = self._strategy(X, side)
        kernel, affinity, options = self._check_common(X, side,
                                                       kernels=strategy == "alternate")
        if strategy == "select":
            fit = self._select(X, options)
        else:
            fit = self._alternate(X, side, (kernel, affinity), options)
        self._store(fit, X)
        return self


class SemiSupervisedISM(TargetRequiredMixin, AlternatingClustering):
    _parameter_constraints: dict = {
        **AlternatingClustering._parameter_constraints,
        "mu": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
        "score_kernel": [str, Kernel],
    }

    __doc__ = r"""Semi-supervised clustering guided by expert scores (ISM paper, equations 2-3).

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U) +
    \mu\,\mathrm{Tr}(K_{XW} H K_{\hat Y} H)` over W and U: spectral clustering
    of XW while XW stays dependent on the scores :math:`\hat Y` (n x r). The
    W-step is ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2} + \mu H K_{\hat Y} H`
    (factored, :math:`K_{\hat Y} = FF^T` by pivoted Cholesky).

    Scale of ``mu``: the clustering term is at most ``n_clusters`` while the
    score term is :math:`(n-1)^2\,\mathrm{HSIC}(XW, \hat Y)`, so with the
    literal Eq. (2) ``mu = 1`` lets the scores dominate (wine with the first
    principal component as scores: NMI 0.62 against 0.86-0.88 balanced). The
    default ``mu="auto"`` weighs both terms equally at the start (W = I):
    :math:`\mu = \mathrm{CQ}(U_0) / \mathrm{Tr}(K_X H K_{\hat Y} H)`, two
    kernel passes (:doc:`/clustering_defaults`); the weight used is
    ``mu_``. Both terms are in ``history_`` (``quality`` and ``score_term``).

    Parameters
    ----------""" + COMMON_PARAMS + r"""
    mu : float or "auto", default="auto"
        Weight of the score term (>= 0). "auto": the two terms weigh the same
        at W = I (see above).
    score_kernel : str or Kernel, default="gaussian"
        Kernel on the scores; "gaussian" uses the median heuristic on them.

    Attributes
    ----------""" + COMMON_ATTRS + r"""
    mu_ : float
        The weight of the score term used (``mu``, or the "auto" balance).

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Eq. (2)-(3).
    """

    def __init__(self, n_clusters: int = 2, n_components: int | None = None,
                 mu: float | str = "auto",
                 kernel: KernelLike = "gaussian", sigma: SigmaLike = "auto",
                 score_kernel: KernelLike = "gaussian", max_iter: int = 20, tol: float = 1e-3,
                 affinity: str | None = None, normalize: str | bool = "auto",
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, approximation: str | None = None,
                 n_landmarks: int | str = "auto", eigen_solver: str = "auto",
                 strategy: str = "auto") -> None:
        self.strategy = strategy
        self.eigen_solver = eigen_solver
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.mu = mu
        self.kernel = kernel
        self.sigma = sigma
        self.score_kernel = score_kernel
        self.max_iter = max_iter
        self.tol = tol
        self.affinity = affinity
        self.normalize = normalize
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype

    @keep_state_on_error
    def fit(self, X: ArrayLike, scores: ArrayLike) -> SemiSupervisedISM:
        """Learn W, U and the labels from X (n x d; dense or ``scipy.sparse``,
        :doc:`/guide/sparse`) and expert scores (n x r or n)."""
        if scores is None:
            raise ValueError("SemiSupervisedISM requires y to be passed, but the target y is "
                             "None: give the expert scores, fit(X, scores)")
        X, scores, side = self._input(X, scores, multi_output=True, y_numeric=True)
        kernel, affinity, options = self._check_common(X, side)
        options = replace(options, guided=True)     # the scores are a second term on W
        scores = np.asarray(scores, dtype=np.float64).reshape(X.shape[0], -1)
        if np.all(np.ptp(scores, axis=0) == 0):
            raise ValueError("scores are constant; they carry no guidance")
        F = kernel_factor(scores, make_kernel(self.score_kernel), random_state=self.random_state)
        Fc = centered(F)
        weight = {}

        def build(U, deg):
            if "mu" not in weight:          # the first U-step (W = I) sets mu="auto"
                weight["mu"] = self._score_weight(X, side, affinity, U, deg, Fc)
            return semi_supervised_gamma(U, deg, F, weight["mu"])

        def measure_with(aff):
            def measure(Z, U, vals, deg):
                score_term = side.quadratic_trace(Z, aff, Fc)
                quality = float(np.sum(vals))
                return {"score_term": score_term,
                        "objective": quality + weight["mu"] * score_term}
            return measure

        if self._strategy(X, side) == "select":
            fit = self._select(X, options, build, measure_with)
        else:
            fit = self._alternate(X, side, (kernel, affinity), options, build,
                                  measure_with(affinity))
        self._store(fit, X)
        self.mu_ = weight["mu"]
        return self

    def _score_weight(self, X, side, affinity, U, deg, Fc):
        r"""``mu``, or for "auto" :math:`\mathrm{CQ}(U_0)/\mathrm{Tr}(\bar F^T K_X \bar F)`:
        the clustering and score terms of the objective weigh the same at W = I."""
        if not (isinstance(self.mu, str) and self.mu == "auto"):
            return float(self.mu)
        Z = side.points(X, None)           # the points at W = I: X itself
        clustering = side.quadratic_trace(Z, affinity, clustering_gamma(U, deg).factor)
        score = side.quadratic_trace(Z, affinity, Fc)
        return float(clustering / score) if score > 0 and clustering > 0 else 1.0
