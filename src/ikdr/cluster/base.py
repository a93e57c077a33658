"""What every clustering estimator of ISM shares (ISMClustering, SemiSupervisedISM, KDAC).

:class:`AlternatingClustering` holds the parameter constraints, the data and
side resolution, the bandwidth defaults, the ``strategy`` (``"select"``:
:mod:`ikdr.cluster.selection`; ``"alternate"``: the papers' alternation,
:mod:`ikdr.cluster.alternation`), the one writer of the fitted attributes
(:class:`ClusteringFit`, stored by :meth:`AlternatingClustering._store`) and
``transform``.
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils.eig import EIGEN_SOLVERS
from .._utils.progress import IterationReport
from .._utils.sampling import rows_at, sample_index, sample_rows
from .._utils.sparse import CLUSTERING_MAX_FEATURES, stored_columns
from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import check_dtype, check_n_components
from .._utils.validation import NewParametersOnLoad, SparseInputMixin, keep_state_on_error
from .._utils.validation import ComponentNamesMixin
from ..gamma import clustering_gamma, supervised_gamma
from ..kernels import MEDIAN_SUBSAMPLE, Gaussian, Kernel, KernelLike, make_kernel
from ..passes import BLOCKS, fit_data, project_data, resolve_clustering
from ..passes.dask_data import is_distributed
from ..passes.sparse_rows import is_sparse
from ..reduction.importances import IMPORTANCE_ROWS, cluster_importances, feature_importances
from ..reduction.marginal import marginal_dependence
from ..spectral import auto_kernel, njw_labels, spectral_gap
from .alternation import AlternationOptions, alternate_on
from .criterion import choose
from .selection import refine, scored_starts, selection_points
from .docstrings import COMMON_ATTRS, COMMON_PARAMS

#: another start's run replaces the default run only when the spectral gap of its
#: final U-step is larger by this much (face, 20 clusters: gaps 0.001 and 0.007
#: with NMI 0.92 and 0.64; the runs kept on the grids of blobs and the
#: few-informative sets win by 0.10-0.86; docs/alternative_clustering.md)
START_GAP_MARGIN = 0.05

__all__ = ["AlternatingClustering", "AlternationRun", "ClusteringFit", "clustering_importances",
           "COMMON_PARAMS",
           "COMMON_ATTRS"]


@dataclass
class ClusteringFit:
    """What one fit found, whatever its strategy: the fitted attributes of
    :class:`AlternatingClustering` by name (each documented in
    :data:`~ikdr.cluster.docstrings.COMMON_ATTRS`). ``phi_eigenvalues``: the
    eigenvalues of Phi belonging to W's columns, None when the fit did not keep
    them; ``start``: the index of the kept start (the selection's candidates, the
    alternation's runs)."""

    strategy: str
    components: np.ndarray
    embedding: np.ndarray
    eigenvalues: np.ndarray
    degrees: np.ndarray
    labels: np.ndarray
    n_iter: int
    converged: bool
    history: list
    best_iteration: int
    objective: float
    quality: float
    kernel: Kernel
    affinity: Kernel
    normalize: bool
    support: np.ndarray
    start: int
    n_landmarks: Optional[int] = None
    phi_eigenvalues: Optional[np.ndarray] = None
    criterion: Optional[float] = None
    selection: Optional[list] = None
    start_gaps: Optional[np.ndarray] = None
    feature_scores: Optional[np.ndarray] = None


@dataclass(frozen=True)
class AlternationRun:
    """One run of the papers' alternation (:meth:`AlternatingClustering._alternate`): its
    W-step ``kernel``, U-step ``affinity``, the paradigm's ``measure``, the first U-step's
    projection ``start`` (None: X itself), its q ``n_components`` and the ``columns`` its
    W may use (None: every feature)."""

    kernel: Kernel
    affinity: Kernel
    measure: Optional[Any] = None
    start: Optional[np.ndarray] = None
    n_components: Optional[int] = None
    columns: Optional[np.ndarray] = None


def _on_rows(W, rows, n_rows):
    """W (len(rows) x q) placed on ``rows`` of an n_rows x q matrix, zero elsewhere."""
    full = np.zeros((n_rows, W.shape[1]), dtype=W.dtype)
    full[rows] = W
    return full


class AlternatingClustering(NewParametersOnLoad, SparseInputMixin, ClusterMixin, ComponentNamesMixin,
                            TransformerMixin, BaseEstimator):
    """Shared parameter constraints, checks, fitted attributes and transform."""

    #: ikdr 0.1's behaviour for the parameters added since (pickles of 0.1 load with it)
    _earlier_parameters = {"eigen_solver": "auto", "strategy": "alternate"}

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
        "strategy": [StrOptions({"auto", "select", "alternate"})],
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
        return X, y, resolve_clustering(X, n_landmarks=self.n_landmarks if rows == BLOCKS
                                        else None, dtype=self._dtype,
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

    def _check_common(self, X, side, *, kernels=True):
        """Validate the data-dependent parameters (the others are checked by
        ``_parameter_constraints`` in :meth:`_input`); return (kernel, affinity,
        options): the fitted kernels and the alternation's settings, an
        :class:`ikdr.cluster.alternation.AlternationOptions` made once.
        ``kernels=False``: the kernels are not fitted (None; ``strategy="select"``
        fits its own on its points, and its local-scaling affinity normalises)."""
        n, d = X.shape
        k = int(self.n_clusters)
        if n <= k:
            raise ValueError(f"n_samples={n} must be larger than n_clusters={k} "
                             "(fewer samples than clusters)")
        q = None if self.n_components is None else check_n_components(self.n_components, d)
        if not kernels:
            normalize = True if isinstance(self.normalize, str) else bool(self.normalize)
            return None, None, self._options(k, q, normalize)
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
        return kernel, affinity, self._options(k, q, normalize)

    def _options(self, n_clusters, n_components, normalize):
        """The alternation's settings from the parameters (the estimator warns itself,
        once per fit, after choosing among its runs)."""
        return AlternationOptions(n_clusters, n_components=n_components, normalize=normalize,
                                  max_iter=self.max_iter, tol=self.tol,
                                  random_state=self.random_state, warn=False,
                                  eigen_solver=self.eigen_solver)

    def _strategy(self, X, side):
        """The strategy this fit runs: ``strategy`` as given, "auto" resolved (see
        :data:`~ikdr.cluster.docstrings.COMMON_PARAMS`): "select" where its kernel is
        at hand (the Gaussian at ``sigma="auto"``, local scaling, in both roles) and
        every row is in memory with exact passes; "alternate" elsewhere."""
        reasons = []
        local = self._local_scaling()
        if not (local["kernel"] and local["affinity"]):
            reasons.append("its W-step kernel and affinity are the local-scaling Gaussian "
                           "(kernel='gaussian', sigma='auto', affinity=None), got "
                           f"kernel={self.kernel!r}, sigma={self.sigma!r}, "
                           f"affinity={self.affinity!r}")
        if not side.rows_in_memory or getattr(self, "approximation", None) is not None:
            reasons.append("it needs every row in memory and exact passes (approximation="
                           f"{getattr(self, 'approximation', None)!r}, "
                           f"{'a dask array' if is_distributed(X) else 'rows in blocks'})")
        if self.strategy == "auto":
            return "alternate" if reasons else "select"
        if self.strategy == "select" and reasons:
            raise ValueError(f"{type(self).__name__}: strategy='select' cannot run here: "
                             + "; ".join(reasons) + ". Use strategy='alternate' (the papers' "
                             "alternation with the given kernel) or strategy='auto'")
        return self.strategy

    def _select(self, X, options, build_gamma=clustering_gamma, measure_with=None):
        """``strategy="select"``: starts, criterion and W-steps (:mod:`ikdr.cluster.selection`)
        on X's selection points (:func:`ikdr.cluster.selection.selection_points`);
        returns the :class:`ClusteringFit`. ``options``: the alternation's settings;
        ``measure_with(kernel)``: the paradigm's measure for a W-step kernel."""
        points, basis = selection_points(X, random_state=self.random_state)
        kernel = auto_kernel(points, options.n_clusters)
        # the feature screen reads X's own columns, not singular vectors
        found = scored_starts(points, options.n_clusters, kernel, screen=basis is None,
                              random_state=self.random_state)
        candidates = found.candidates
        first = choose([c.assessment for c in candidates])
        start = candidates[first]
        run_kernel = found.kernels[None if start.columns is None else "screened"]
        q = options.n_components
        if q is not None:
            q = min(q, points.shape[1] if start.columns is None else start.columns.size)
        with IterationReport(type(self).__name__, self.verbose, total=options.max_iter) as report:
            chosen = refine(points, start, run_kernel, found.criterion, build_gamma,
                            replace(options, n_components=q, report=report),
                            measure=None if measure_with is None else measure_with(run_kernel),
                            dtype=self._dtype)
        if not chosen.converged:
            warnings.warn(f"{type(self).__name__}: the criterion still preferred the last of "
                          f"max_iter={options.max_iter} W-steps, so the W-steps did not "
                          "converge; the last iterate is kept", ConvergenceWarning,
                          stacklevel=3)
        best = chosen.chosen
        W = chosen.components                   # on the view's features of the points
        if best.columns is not None:            # zero on the other features
            W = _on_rows(W, best.columns, points.shape[1])
        if basis is not None:                   # the points are X @ basis
            W = basis @ W
        # the features W uses: the screened ones, else every one but those no kernel
        # sees (constant columns, unstored sparse ones), where W is exactly zero
        support = best.columns if best.columns is not None and basis is None else \
            np.flatnonzero(np.any(W != 0.0, axis=1))
        position = [h["candidate"] for h in chosen.history].index(best.name)
        entry = chosen.history[position]
        return ClusteringFit(
            strategy="select", components=W, embedding=best.embedding,
            eigenvalues=best.eigenvalues, degrees=best.degrees, labels=best.labels,
            n_iter=len(chosen.history) - 1, converged=chosen.converged,
            history=chosen.history, best_iteration=position + 1,
            objective=entry["objective"], quality=entry["quality"],
            kernel=chosen.kernel, affinity=best.affinity, normalize=options.normalize,
            phi_eigenvalues=chosen.eigenvalues, support=support, start=first,
            criterion=best.criterion,
            selection=[{"candidate": c.name, "criterion": c.criterion, "labels": c.labels}
                       for c in candidates[:first] + chosen.candidates + candidates[first + 1:]],
            feature_scores=found.feature_scores if basis is None else None)

    def _alternate(self, X, side, kernels, options, build_gamma=clustering_gamma,
                   measure=None, starts=None):
        """``strategy="alternate"``: the papers' alternation with the given setting; returns
        the :class:`ClusteringFit`.

        ``kernels``: (kernel, affinity); ``options``: the alternation's settings (an
        :class:`ikdr.cluster.alternation.AlternationOptions`). ``starts``: several
        runs, each an :class:`AlternationRun`. The first is the default; another is
        kept only when the
        spectral gap of its final U-step (:func:`ikdr.spectral.spectral_gap`)
        exceeds the default's by at least :data:`START_GAP_MARGIN` (the largest such)."""
        kernel, affinity = kernels
        work = side.working_data(X, self._dtype)
        if starts is None:      # sparse X: its most dispersed stored columns
            starts = [AlternationRun(kernel, affinity, measure, None, options.n_components,
                                     stored_columns(X, CLUSTERING_MAX_FEATURES))]
        outs = []
        for spec in starts:
            start, columns = spec.start, spec.columns
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
                run = replace(options, n_components=spec.n_components, report=report)
                out = alternate_on(run_side, run_work, spec.kernel, run, build_gamma,
                                   affinity=spec.affinity, measure=spec.measure, start=start)
            if columns is not None:         # W is zero on the other features
                out.components = _on_rows(out.components, columns, X.shape[1])
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
        columns = starts[best].columns
        return ClusteringFit(
            strategy="alternate", components=out.components, embedding=out.embedding,
            eigenvalues=out.eigenvalues, degrees=out.degrees,
            labels=njw_labels(out.embedding, self.n_clusters, random_state=self.random_state),
            n_iter=out.n_iter, converged=out.converged, history=out.history,
            best_iteration=out.best_iteration, objective=out.objective,
            quality=out.history[out.best_iteration - 1]["quality"], kernel=out.kernel,
            affinity=out.affinity, normalize=options.normalize, n_landmarks=out.n_landmarks,
            support=np.arange(X.shape[1]) if columns is None else np.asarray(columns),
            start=best, start_gaps=gaps)

    def _store(self, fit, X):
        """Write the fitted attributes of ``fit`` (a :class:`ClusteringFit`): the one
        writer, whatever the strategy."""
        self.strategy_ = fit.strategy
        self.components_ = fit.components
        self.embedding_ = fit.embedding
        self.eigenvalues_ = fit.eigenvalues
        self.degrees_ = fit.degrees
        self.labels_ = fit.labels
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.history_ = fit.history
        self.best_iteration_ = fit.best_iteration
        self.objective_ = fit.objective
        self.quality_ = fit.quality
        self.criterion_ = fit.criterion
        self.selection_ = fit.selection
        self.kernel_ = fit.kernel
        self.affinity_ = fit.affinity
        self.sigma_ = fit.kernel.gaussian_sigma
        self.normalize_ = fit.normalize
        self.n_landmarks_ = fit.n_landmarks
        self.support_ = fit.support
        self.start_ = fit.start
        self.start_gaps_ = fit.start_gaps
        self.feature_scores_ = fit.feature_scores
        # columns weighted by their eigenvalues of Phi where the fit kept them (the
        # selection's W-steps), equal weights otherwise
        self.feature_importances_ = clustering_importances(
            X, feature_importances(fit.components, fit.phi_eigenvalues), self.labels_,
            self.random_state)
        self.cluster_importances_ = cluster_importances(X, fit.components, fit.kernel,
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


