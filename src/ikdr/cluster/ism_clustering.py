"""The clustering estimators of ISM: ISMClustering and SemiSupervisedISM.

Both learn W and a spectral embedding U together by the alternation of
:mod:`ikdr.cluster.alternation`; they differ by their Gamma (the paradigm).
:class:`AlternatingClustering` holds what every alternating estimator shares
(KDAC too): parameter constraints, the data and side resolution, the
bandwidth defaults, the fitted attributes and ``transform``.
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils.eig import EIGEN_SOLVERS
from .._utils.progress import IterationReport
from .._utils.sampling import rows_at, sample_index, sample_rows
from .._utils.sparse import CLUSTERING_MAX_FEATURES, START_COMPONENTS, stored_columns
from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, check_dtype, check_n_components
from .._utils.validation import NewParametersOnLoad, SparseInputMixin, keep_state_on_error
from .._utils.validation import ComponentNamesMixin
from ..gamma import (centered, clustering_gamma, kernel_factor, semi_supervised_gamma,
                     supervised_gamma)
from ..kernels import MEDIAN_SUBSAMPLE, Gaussian, Kernel, KernelLike, make_kernel
from ..passes import BLOCKS, fit_data, project_data, resolve_clustering
from ..passes.dask_data import is_distributed
from ..passes.landmark_clustering import ClusteringLandmarks
from ..passes.sparse_rows import is_sparse
from ..reduction.importances import IMPORTANCE_ROWS, cluster_importances, feature_importances
from ..reduction.marginal import marginal_dependence
from ..spectral import auto_kernel, njw_labels, spectral_gap
from .alternation import AlternationOptions, alternate_on
from .selection import MAX_W_STEPS, refine, scored_starts
from .docstrings import COMMON_ATTRS, COMMON_PARAMS

#: another start's run replaces the default run only when the spectral gap of its
#: final U-step is larger by this much (face, 20 clusters: gaps 0.001 and 0.007
#: with NMI 0.92 and 0.64; the runs kept on the grids of blobs and the
#: few-informative sets win by 0.10-0.86; docs/alternative_clustering.md)
START_GAP_MARGIN = 0.05

__all__ = ["AlternatingClustering", "ISMClustering", "SemiSupervisedISM", "COMMON_PARAMS",
           "COMMON_ATTRS"]


class AlternatingClustering(NewParametersOnLoad, SparseInputMixin, ClusterMixin, ComponentNamesMixin,
                            TransformerMixin, BaseEstimator):
    """Shared parameter constraints, checks, fitted attributes and transform."""

    #: ikdr 0.1's behaviour for the parameters added since (pickles of 0.1 load with it)
    _earlier_parameters = {"eigen_solver": "auto"}

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "kernel": [str, Kernel],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                  StrOptions({"auto", "median"})],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "affinity": [None, str, Kernel],
        "normalize": [StrOptions({"auto"}), "boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "dtype": "no_validation",  # checked by check_dtype (float64 or float32 only)
        # checked with the data by ikdr.passes.landmarks.landmark_data (n_landmarks <= n)
        "approximation": "no_validation",
        "n_landmarks": "no_validation",
        "eigen_solver": [StrOptions(set(EIGEN_SOLVERS))],
    }

    def _input(self, X, y=None, **kwargs):
        """Validated (X, y, side): the one entry check (:func:`ikdr.passes.fit_data`:
        in memory, in row blocks with ``approximation``, or on a Dask cluster)
        and the clustering side the alternation runs on
        (:func:`ikdr.passes.resolve_clustering`)."""
        approximation = getattr(self, "approximation", None)
        if approximation is not None or is_distributed(X):
            # in memory the data come first: scikit-learn's checks expect its own
            # words for bad data; elsewhere the parameters decide how X is read
            self._validate_params()
            if approximation not in (None, "nystrom"):
                raise ValueError(f"approximation must be None or 'nystrom' for "
                                 f"{type(self).__name__} (random features serve supervised "
                                 f"ISM only), got {approximation!r}")
            if approximation is not None and is_distributed(X):
                raise ValueError(f"{type(self).__name__}: Nystrom landmarks of a dask X serve "
                                 "supervised ISM only (the clustering U-step has no landmark "
                                 "form on a cluster yet); pass approximation=None, the exact "
                                 "passes are distributed")
        # C order so that X @ W (the U-step's points) rounds the same whatever the
        # caller's layout
        X, y, rows = fit_data(self, X, y, approximation=approximation,
                              kernel=self._landmark_kernel() if approximation else None,
                              y_required=False, order="C", **kwargs)
        self._validate_params()
        self._dtype = check_dtype(getattr(self, "dtype", np.float64))
        landmarks = None
        if rows == BLOCKS:
            dtype = np.float32 if X.dtype == np.float32 or self._dtype == np.float32 else None
            landmarks = ClusteringLandmarks(self.n_landmarks, dtype=dtype,
                                            random_state=self.random_state)
        return X, y, resolve_clustering(X, landmarks, dtype=self._dtype,
                                        random_state=self.random_state)

    @staticmethod
    def _points0(X, side):
        """X's rows as points at W = I: X, or for sparse X its projection on the side's
        start basis (X itself, every distance kept, up to 20 features)."""
        return side.points(X, None) if is_sparse(X) else X

    def _sigma_rule(self):
        """``sigma`` as a kernel's bandwidth: "auto" stands for the median rule
        wherever local scaling does not replace the kernel."""
        return "median" if self._sigma_auto() else self.sigma

    def _sigma_auto(self):
        return isinstance(self.sigma, str) and self.sigma == "auto"

    def _named_kernels(self):
        """``kernel`` and ``affinity`` (None stays None) as kernels, built once by
        :func:`ikdr.kernels.make_kernel`: every name of a kernel gives the same object."""
        affinity = None if self.affinity is None else make_kernel(self.affinity)
        return make_kernel(self.kernel, sigma=self._sigma_rule()), affinity

    def _local_scaling(self):
        """Which roles ``sigma="auto"`` turns into local scaling: a kernel given by name
        that is an affinity with one global bandwidth still to be fitted (the
        Gaussian, under any of its names), as ``kernel`` or as ``affinity`` (None
        counts as the kernel's own). Asked of the built kernels, never of the names."""
        if not self._sigma_auto():
            return {"kernel": False, "affinity": False}
        kernel, affinity = self._named_kernels()

        def rule_affinity(spec, built):
            return (not isinstance(spec, Kernel) and built.is_affinity and not built.is_resolved
                    and not built.needs_all_rows)

        by_name = rule_affinity(self.kernel, kernel)
        return {"kernel": by_name,
                "affinity": (by_name if affinity is None else
                             rule_affinity(self.affinity, affinity))}

    def _landmark_kernel(self):
        """The W-step kernel of the landmark path: local scaling has per-point
        bandwidths of all n points, so ``sigma="auto"`` uses the median rule there."""
        return self._named_kernels()[0]

    def _check_common(self, X, side):
        """Validate the data-dependent parameters (the others are checked by
        ``_parameter_constraints`` in :meth:`_input`); return (kernel, affinity,
        options): the fitted kernels and the alternation's settings, an
        :class:`ikdr.cluster.alternation.AlternationOptions` made once."""
        n, d = X.shape
        k = int(self.n_clusters)
        if n <= k:
            raise ValueError(f"n_samples={n} must be larger than n_clusters={k} "
                             "(fewer samples than clusters)")
        q = None if self.n_components is None else check_n_components(self.n_components, d)
        named, named_affinity = self._named_kernels()
        # local scaling needs every row at hand; elsewhere (a memmap read in
        # blocks, a cluster) the bandwidths are fitted on a sample of rows
        local = {role: on and side.rows_in_memory for role, on in self._local_scaling().items()}
        X = self._points0(X, side)      # sparse X: its rows at W = I as dense points
        fit_on = X if side.rows_in_memory else sample_rows(X, MEDIAN_SUBSAMPLE, self.random_state)
        kernel = auto_kernel(X, k) if local["kernel"] else \
            named.fit(fit_on, random_state=self.random_state)
        if self.affinity is None and kernel.is_affinity:
            affinity = kernel
        elif local["affinity"] or (self.affinity is None and self._sigma_auto()
                                   and side.rows_in_memory):
            # a kernel that is no affinity (polynomial, linear, squared,
            # multiquadric) finds the subspace but cannot cluster XW by itself
            affinity = auto_kernel(X, k)
        elif self.affinity is None:
            affinity = Gaussian(self._sigma_rule()).fit(fit_on, random_state=self.random_state)
        else:
            affinity = named_affinity.fit(fit_on, random_state=self.random_state)
        if isinstance(self.normalize, str):
            normalize = affinity.is_affinity
        else:
            normalize = bool(self.normalize)
        # the estimator warns itself, once per fit, after choosing among its runs
        options = AlternationOptions(k, n_components=q, normalize=normalize,
                                     max_iter=self.max_iter, tol=self.tol,
                                     random_state=self.random_state, warn=False,
                                     eigen_solver=self.eigen_solver)
        return kernel, affinity, options

    def _selects(self, X, side):
        """Whether the fit is the default one (:mod:`ikdr.cluster.selection`): the
        Gaussian kernel at ``sigma="auto"`` in both roles, ``normalize="auto"``,
        the rows in memory and exact passes. Any other setting runs the papers'
        alternation with that setting. The selection reads X's columns densely
        (screens, neighbour graphs): sparse X takes it up to
        :data:`~ikdr._utils.sparse.START_COMPONENTS` features (its dense form is
        then no larger than the start points every sparse fit makes), and the
        alternation on its stored columns above."""
        local = self._local_scaling()
        return (local["kernel"] and local["affinity"] and side.rows_in_memory
                and (not is_sparse(X) or X.shape[1] <= START_COMPONENTS)
                and isinstance(self.normalize, str)
                and getattr(self, "approximation", None) is None)

    def _select(self, X, kernel, options, build_gamma=clustering_gamma, measure_with=None):
        """The default fit: starts, criterion and W-steps (:mod:`ikdr.cluster.selection`),
        stored. ``kernel``: the local-scaling kernel of X; ``options``: the
        alternation's settings; ``measure_with(kernel)``: the paradigm's measure for
        a W-step kernel."""
        if is_sparse(X):        # at most START_COMPONENTS columns (_selects)
            X = X.toarray()
        found = scored_starts(X, options.n_clusters, kernel, random_state=self.random_state)
        self.feature_scores_ = found.feature_scores
        candidates = found.candidates
        first = int(np.argmin([c.criterion for c in candidates]))   # ties: the earlier
        start = candidates[first]
        run_kernel = found.kernels[None if start.columns is None else "screened"]
        q = options.n_components
        if q is not None and start.columns is not None:
            q = min(q, start.columns.size)
        steps = min(options.max_iter, MAX_W_STEPS)
        with IterationReport(type(self).__name__, self.verbose, total=steps) as report:
            chosen = refine(np.asarray(X), start, run_kernel, found.criterion, build_gamma,
                            replace(options, n_components=q, max_iter=steps, report=report),
                            measure=None if measure_with is None else measure_with(run_kernel),
                            dtype=self._dtype)
        chosen.candidates = candidates[:first] + chosen.candidates + candidates[first + 1:]
        self._store_selection(chosen, X, first)
        if not self.converged_:
            warnings.warn(f"{type(self).__name__}: the criterion still fell at the last of "
                          f"{steps} W-steps (max_iter={options.max_iter}, at most {MAX_W_STEPS} "
                          f"in the default fit), so the W-steps did not converge; the last "
                          "iterate is kept", ConvergenceWarning, stacklevel=3)
        return chosen

    def _store_selection(self, chosen, X, start):
        """The fitted attributes of the default fit."""
        n_features = X.shape[1]
        best = chosen.chosen
        W = chosen.components
        if best.columns is not None:         # W is zero on the other features
            full = np.zeros((n_features, W.shape[1]))
            full[best.columns] = W
            W = full
        position = [h["candidate"] for h in chosen.history].index(best.name)
        entry = chosen.history[position]
        self.components_ = W
        self.embedding_ = best.embedding
        self.eigenvalues_ = best.eigenvalues
        self.degrees_ = best.degrees
        self.labels_ = best.labels
        self.n_iter_ = len(chosen.history) - 1
        # the run ends when the criterion refuses an iterate (or no W-step can move)
        self.converged_ = len(chosen.history) == 1 or not chosen.history[-1]["accepted"]
        self.history_ = chosen.history
        self.best_iteration_ = position + 1
        self.objective_ = entry["objective"]
        self.quality_ = entry["quality"]
        self.criterion_ = best.criterion
        self.selection_ = [{"candidate": c.name, "criterion": c.criterion, "labels": c.labels}
                           for c in chosen.candidates]
        self.kernel_ = chosen.kernel
        self.affinity_ = best.affinity
        self.sigma_ = chosen.kernel.gaussian_sigma
        self.normalize_ = True
        self.n_landmarks_ = None
        # columns weighted by their eigenvalues of Phi, as the supervised ISM's (make_
        # classification 4 of 30-60, seed 2: recall 0.25-0.50 -> 0.75 against equal weights)
        self.feature_importances_ = clustering_importances(
            X, feature_importances(W, chosen.eigenvalues), self.labels_, self.random_state)
        self.cluster_importances_ = cluster_importances(X, W, chosen.kernel, self.labels_,
                                                        self.n_clusters, self.random_state)
        self.support_ = np.arange(n_features) if best.columns is None else best.columns
        self.start_ = start
        self.start_gaps_ = None

    def _alternate(self, X, side, kernel, affinity, options, build_gamma=clustering_gamma,
                   measure=None, starts=None):
        """Run the papers' alternation with the given setting and store the result.

        ``options``: the alternation's settings (an
        :class:`ikdr.cluster.alternation.AlternationOptions`). ``starts``: several
        runs, each ``(kernel, affinity, measure, start, q, columns)`` (``start``:
        the first U-step's projection, ``columns``: the
        features the run's W may use, None for all). The first is the default;
        another is kept only when the spectral gap of its final U-step
        (:func:`ikdr.spectral.spectral_gap`) exceeds the default's by at least
        :data:`START_GAP_MARGIN` (the largest such)."""
        work = side.working_data(X, self._dtype)
        if starts is None:      # sparse X: its most dispersed stored columns
            starts = [(kernel, affinity, measure, None, options.n_components,
                       stored_columns(X, CLUSTERING_MAX_FEATURES))]
        outs = []
        for kern, aff, meas, start, n_components, columns in starts:
            run_side, run_work = side, work
            if columns is not None:
                run_work = work[:, columns] if is_sparse(work) else \
                    np.ascontiguousarray(work[:, columns])
                # the same kind of side on the columns (landmarks stay landmarks)
                run_side = resolve_clustering(run_work, None if side.rows_in_memory else side,
                                              dtype=self._dtype, random_state=self.random_state)
            if start is None and is_sparse(run_work):      # the first U-step's points
                start = run_side.basis_for(run_work)
            with IterationReport(type(self).__name__, self.verbose,
                                 total=options.max_iter) as report:
                run = replace(options, n_components=n_components, report=report)
                out = alternate_on(run_side, run_work, kern, run, build_gamma, affinity=aff,
                                   measure=meas, start=start)
            if columns is not None:         # W is zero on the other features
                W = np.zeros((X.shape[1], out.components.shape[1]), dtype=out.components.dtype)
                W[columns] = out.components
                out.components = W
            outs.append(out)
        gaps = np.array([spectral_gap(o.eigenvalues) for o in outs])
        best = 0
        better = np.flatnonzero(gaps >= gaps[0] + START_GAP_MARGIN)
        if better.size:
            best = int(better[np.argmax(gaps[better])])
        out = outs[best]
        if not out.converged:
            warnings.warn(f"{type(self).__name__}: the U/W alternation did not converge in "
                          f"max_iter={options.max_iter} outer iterations (last changes: U "
                          f"{out.history[-1]['u_change']:.3g}, W "
                          f"{out.history[-1]['w_change']:.3g}, tol={options.tol}); the iterate "
                          f"with the highest objective (iteration {out.best_iteration}) is "
                          "kept", ConvergenceWarning, stacklevel=3)
        self._store(out, options.normalize, X)
        columns = starts[best][5]
        self.support_ = np.arange(X.shape[1]) if columns is None else np.asarray(columns)
        self.start_ = best
        self.start_gaps_ = gaps
        self.feature_scores_ = getattr(self, "feature_scores_", None)
        return out

    def _store(self, out, normalize, X):
        self.components_ = out.components
        self.embedding_ = out.embedding
        self.eigenvalues_ = out.eigenvalues
        self.degrees_ = out.degrees
        self.n_iter_ = out.n_iter
        self.converged_ = out.converged
        self.history_ = out.history
        self.kernel_ = out.kernel
        self.affinity_ = out.affinity
        self.sigma_ = out.kernel.gaussian_sigma
        self.normalize_ = normalize
        self.labels_ = njw_labels(out.embedding, self.n_clusters, random_state=self.random_state)
        self.best_iteration_ = out.best_iteration
        self.objective_ = out.objective
        self.quality_ = out.history[self.best_iteration_ - 1]["quality"]
        self.criterion_ = None
        self.selection_ = None
        self.n_landmarks_ = out.n_landmarks
        # equal column weights: the alternation does not keep the W-step's Phi eigenvalues
        self.feature_importances_ = clustering_importances(
            X, feature_importances(out.components), self.labels_, self.random_state)
        self.cluster_importances_ = cluster_importances(X, out.components, out.kernel,
                                                        self.labels_, self.n_clusters,
                                                        self.random_state)

    def transform(self, X: ArrayLike) -> ArrayLike:
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        return project_data(self, X, self.components_)


def clustering_importances(X, projection, labels, random_state=None):
    r"""``feature_importances_`` of the clusterers: the mean of two shares that each sum
    to 1, the feature's share of the projection (``projection``,
    :func:`ikdr.reduction.importances.feature_importances` of W) and its share of the
    dependence on the clusters on its own (the positive part of its marginal HSIC
    with the partition, :func:`ikdr.reduction.marginal.marginal_dependence` with the
    supervised Gamma of ``labels``, on at most :data:`IMPORTANCE_ROWS` seeded rows).

    W is zero outside the screened features and on directions the clusters do not
    need, so the projection alone ties many features at 0, informative ones among
    them (make_classification 5 of 30-100: recall 0.67, two of the five outside the
    screen); their own dependence on the clusters ranks them. The projection keeps
    what no single feature shows (clusters told apart by a combination of features).
    Where no feature depends on the partition the projection answers alone.
    """
    index = sample_index(X.shape[0], IMPORTANCE_ROWS, random_state)
    rows = rows_at(X, index)
    labels = np.asarray(labels) if index is None else np.asarray(labels)[index]
    if np.unique(labels).shape[0] < 2:
        return projection
    own = np.maximum(marginal_dependence(rows, supervised_gamma(labels)[0],
                                         random_state=random_state), 0.0)
    if not own.sum() > 0:
        return projection
    return 0.5 * (projection + own / own.sum())


class ISMClustering(AlternatingClustering):
    __doc__ = r"""Unsupervised interpretable kernel dimension reduction for clustering.

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)` over W
    (:math:`W^TW = I`) and U (:math:`U^TU = I`) (Niu, Dy, Jordan 2011; ISM
    paper section 2): the U-step is spectral clustering of XW, the W-step is
    ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and D held fixed.

    The default fit (:mod:`ikdr.cluster.selection`) chooses its start, its
    U-step and how far the alternation goes with a label-free criterion,
    the normalised cut of the clusters under three neighbourhood graphs of X
    (:class:`ikdr.cluster.criterion.PartitionCriterion`). Starts: spectral
    clustering of X on its 10-NN graph (as scikit-learn's
    ``SpectralClustering(affinity="nearest_neighbors")``) and with the
    local-scaling affinity, and the same on a few features when the feature
    screen takes them; from the lowest-cut start, W-steps with the U-step of
    the start's kind on XW are kept while they lower the cut. W is then the
    subspace in which ISM's kernel matches the kept clusters
    (``feature_importances_``). At least the better of k-means and kNN
    spectral clustering less 0.02 NMI on every data set of
    :doc:`/benchmarks/clustering_quality`; :doc:`/clustering_defaults`.
    Any other setting of ``kernel``, ``sigma``, ``affinity`` or
    ``normalize``, or ``approximation``, runs the papers' alternation as set.

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
                 n_landmarks: int | str = "auto", eigen_solver: str = "auto") -> None:
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
        kernel, affinity, options = self._check_common(X, side)
        if self._selects(X, side):
            self._select(X, kernel, options)
        else:
            self._alternate(X, side, kernel, affinity, options)
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
                 n_landmarks: int | str = "auto", eigen_solver: str = "auto") -> None:
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

        if self._selects(X, side):
            self._select(X, kernel, options, build, measure_with)
        else:
            self._alternate(X, side, kernel, affinity, options, build, measure_with(affinity))
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
