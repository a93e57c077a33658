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

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils.eig import EIGEN_SOLVERS
from .._utils.progress import IterationReport
from .._utils.sampling import sample_rows
from .._utils.sparse import START_COMPONENTS, stored_columns
from .._utils.typing import DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, check_dtype, check_n_components
from .._utils.validation import NewParametersOnLoad, keep_state_on_error
from ..gamma import centered, clustering_gamma, kernel_factor, semi_supervised_gamma
from ..kernels import MEDIAN_SUBSAMPLE, Gaussian, Kernel, KernelLike, make_kernel
from ..passes import BLOCKS, fit_data, project_data, resolve_clustering
from ..passes.dask_data import is_distributed
from ..passes.landmark_clustering import ClusteringLandmarks
from ..passes.sparse_rows import DENSE_PHI_MAX_FEATURES, is_sparse
from ..solver.importances import feature_importances
from ..spectral import auto_kernel, njw_labels, screen_features, spectral_gap
from .alternation import alternate_on

#: another start's run replaces the default run only when the spectral gap of its
#: final U-step is larger by this much (face, 20 clusters: gaps 0.001 and 0.007
#: with NMI 0.92 and 0.64; the runs kept on the grids of blobs and the
#: few-informative sets win by 0.10-0.86; docs/alternative_clustering.md)
START_GAP_MARGIN = 0.05

__all__ = ["AlternatingClustering", "ISMClustering", "SemiSupervisedISM", "COMMON_PARAMS",
           "COMMON_ATTRS"]


class AlternatingClustering(NewParametersOnLoad, ClusterMixin, TransformerMixin, BaseEstimator):
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

    def _landmark_kernel(self):
        """The W-step kernel of the landmark path: local scaling has per-point
        bandwidths of all n points, so ``sigma="auto"`` uses the median rule there."""
        auto = isinstance(self.sigma, str) and self.sigma == "auto"
        return make_kernel(self.kernel, sigma="median" if auto else self.sigma)

    def _check_common(self, X, side):
        """Validate the data-dependent parameters (the others are checked by
        ``_parameter_constraints`` in :meth:`_input`); return (kernel, affinity,
        n_clusters, q, normalize)."""
        self._max_iter = int(self.max_iter)
        n, d = X.shape
        k = int(self.n_clusters)
        if n <= k:
            raise ValueError(f"n_samples={n} must be larger than n_clusters={k} "
                             "(fewer samples than clusters)")
        q = None if self.n_components is None else check_n_components(self.n_components, d)
        sigma_auto = isinstance(self.sigma, str) and self.sigma == "auto"
        # a fixed bandwidth rule where local scaling is not used (it needs all rows)
        sigma = "median" if sigma_auto else self.sigma
        # local scaling needs every row at hand; elsewhere (a memmap read in
        # blocks, a cluster) the bandwidths are fitted on a sample of rows
        auto = sigma_auto and side.rows_in_memory
        X = self._points0(X, side)
        fit_on = X if side.rows_in_memory else sample_rows(X, MEDIAN_SUBSAMPLE, self.random_state)
        if auto and isinstance(self.kernel, str) and self.kernel.lower() == "gaussian":
            kernel = auto_kernel(X, k)
        elif not side.rows_in_memory:
            kernel = self._landmark_kernel().fit(fit_on, random_state=self.random_state)
        else:
            kernel = make_kernel(self.kernel, sigma=sigma).fit(X, random_state=self.random_state)
        gaussian_affinity = isinstance(self.affinity, str) and self.affinity.lower() == "gaussian"
        if self.affinity is None and kernel.is_affinity:
            affinity = kernel
        elif (self.affinity is None or gaussian_affinity) and auto:
            # a kernel that is no affinity (polynomial, linear, squared,
            # multiquadric) finds the subspace but cannot cluster XW by itself
            affinity = auto_kernel(X, k)
        elif self.affinity is None:
            affinity = Gaussian(sigma).fit(fit_on, random_state=self.random_state)
        else:
            affinity = make_kernel(self.affinity).fit(fit_on, random_state=self.random_state)
        if isinstance(self.normalize, str):
            normalize = affinity.is_affinity
        else:
            normalize = bool(self.normalize)
        return kernel, affinity, k, q, normalize

    def _auto_gaussian(self):
        """Whether the kernel is the default Gaussian at ``sigma="auto"`` (and the
        affinity the default): the data-driven starts apply only then."""
        return (isinstance(self.sigma, str) and self.sigma == "auto" and
                isinstance(self.kernel, str) and self.kernel.lower() == "gaussian" and
                (self.affinity is None or (isinstance(self.affinity, str) and
                                           self.affinity.lower() == "gaussian")))

    def _screened_run(self, X, side, kernel, affinity, k, q, measure_with=None):
        """The run of the alternation: on every feature, or, at the defaults, on
        the features :func:`ikdr.spectral.screen_features` takes (local scaling
        fitted on them; W is zero elsewhere). Sets ``feature_scores_``.
        ``measure_with(affinity)``: the paradigm's measure."""
        columns, self.feature_scores_ = None, None
        # sparse X: screened where its start points are X itself, all-zero columns left out
        screen = not is_sparse(X) or X.shape[1] <= START_COMPONENTS
        if self._auto_gaussian() and side.rows_in_memory and X.shape[1] > 2 and screen:
            columns, self.feature_scores_, _ = screen_features(
                self._points0(X, side), k, random_state=self.random_state)
        if columns is None:     # sparse X: at most the features whose dense Phi is formed
            columns = stored_columns(X, DENSE_PHI_MAX_FEATURES)
        else:
            kernel = affinity = auto_kernel(np.asarray(self._points0(X, side))[:, columns], k)
            q = None if q is None else min(q, columns.size)
        measure = None if measure_with is None else measure_with(affinity)
        return [(kernel, affinity, measure, None, q, columns)]

    def _alternate(self, X, side, kernel, affinity, k, q, normalize,
                   build_gamma=clustering_gamma, measure=None, alternative=False, guided=False,
                   starts=None):
        """Run the alternation and store the result.

        ``starts``: several runs, each ``(kernel, affinity, measure, start, q,
        columns)`` (``start``: the first U-step's projection, ``columns``: the
        features the run's W may use, None for all). The first is the default;
        another is kept only when the spectral gap of its final U-step
        (:func:`ikdr.spectral.spectral_gap`) exceeds the default's by at least
        :data:`START_GAP_MARGIN` (the largest such)."""
        work = side.working_data(X, self._dtype)
        if starts is None:
            starts = [(kernel, affinity, measure, None, q, None)]
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
                                 total=self._max_iter) as report:
                out = alternate_on(run_side, run_work, kern, k, build_gamma,
                                   affinity=aff, n_components=n_components,
                                   normalize=normalize, max_iter=self._max_iter, tol=self.tol,
                                   random_state=self.random_state, measure=meas,
                                   report=report, warn=False, alternative=alternative,
                                   guided=guided, start=start,
                                   eigen_solver=self.eigen_solver)
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
                          f"max_iter={self._max_iter} outer iterations (last changes: U "
                          f"{out.history[-1]['u_change']:.3g}, W "
                          f"{out.history[-1]['w_change']:.3g}, tol={self.tol}); the iterate "
                          f"with the highest objective (iteration {out.best_iteration}) is "
                          "kept", ConvergenceWarning, stacklevel=3)
        self._store(out, normalize)
        columns = starts[best][5]
        self.support_ = np.arange(X.shape[1]) if columns is None else np.asarray(columns)
        self.start_ = best
        self.start_gaps_ = gaps
        return out

    def _store(self, out, normalize):
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
        self.n_landmarks_ = out.n_landmarks
        # equal column weights: the alternation does not keep the W-step's Phi eigenvalues
        self.feature_importances_ = feature_importances(out.components)

    def transform(self, X):
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        return project_data(self, X, self.components_)


COMMON_PARAMS = r"""
    n_clusters : int
        Number of clusters k (>= 2).
    n_components : int or None, default=None
        q, the dimension of the learned subspace. ``None`` picks q by the
        largest eigengap of :math:`\Phi_0` at the first W-step (dissertation
        Eq. 3.11: the gap between the q-th and (q+1)-th largest eigenvalues),
        but at least ``min(n_clusters, max(2, n_features // 2))`` (SemiSupervisedISM
        and KDAC, whose objectives have a second term on W: at least
        ``min(n_features, n_clusters)``) and at most ``n_features``
        (:func:`ikdr.default_n_components`).
    kernel : str or Kernel, default="gaussian"
        Any ISM kernel or conic combination (:mod:`ikdr.kernels`).
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of ``kernel="gaussian"``. "auto" (chosen from the data
        alone, no labels): local scaling, the relative Gaussian
        :math:`\exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma_i\sigma_j)` with
        :math:`\sigma_i` the distance of :math:`x_i` to its 7th nearest
        neighbour in X, used by both the W-step kernel and the U-step affinity
        (:func:`ikdr.spectral.auto_kernel`: rule, measurements and cost, one
        k-NN query). It raises ValueError when every sample is identical or
        n_samples < 3 x n_clusters. "median": a global Gaussian at the median
        pairwise distance of X (the papers' choice). A float: that global
        bandwidth. All are fixed for the whole run.
    max_iter : int, default=20
        Cap on the outer U/W iterations.
    tol : float, default=1e-3
        Stop when the relative subspace changes of U and W are both below tol.
    affinity : None, str or Kernel, default=None
        Kernel of the U-step (spectral clustering of XW). None: ``kernel``
        itself (the papers' single-kernel objective) when it is an affinity
        (Gaussian, relative Gaussian, even-degree polynomial with c >= 0);
        otherwise (polynomial of odd degree, linear, squared, multiquadric) the
        Gaussian of ``sigma`` ("auto": local scaling, :func:`ikdr.spectral.auto_kernel`):
        such a global kernel finds the subspace in the W-step but cannot
        cluster XW by itself (unsupervised wine, q = 3: polynomial 0.70 -> 0.86,
        linear 0.84 -> 0.90; :doc:`/clustering_defaults`). ISM keeps ``kernel``
        in the W-step and D comes from the affinity in both steps. A Gaussian
        given by name uses ``sigma`` ("auto": local scaling; else the median
        distance of X). Pass the kernel itself (e.g. ``affinity="linear"``)
        for the single-kernel objective with a non-affinity kernel.
    normalize : "auto" or bool, default="auto"
        Degree normalisation :math:`D = \mathrm{diag}(K_{XW}1)` of the papers.
        "auto" uses it when the U-step kernel is non-negative by construction
        (Gaussian, relative Gaussian, even-degree polynomial) and otherwise
        D = I: the U-step then maximises the plain HSIC
        :math:`\mathrm{Tr}(U^THK_{XW}HU)`, which needs no positive degrees
        (linear, squared, multiquadric and odd polynomial kernels take
        negative values, so ``K 1`` can vanish or change sign).
    random_state : int, RandomState instance or None
        Seeds the median heuristic's subsample, the Lanczos start vector and k-means.
    verbose : int, default=0
        1 prints one line per outer U/W iteration (objective, the larger
        subspace change of U and W, quality, ISM iterations, time); 2 also
        the W-steps' ISM iterations. With tqdm installed, a progress bar on a
        terminal.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the C++ kernel products during ``fit``. ``np.float32``
        runs the fused products (and their BLAS calls) in single precision,
        about twice as fast at large n, with HSIC agreeing to about 1e-4
        relative; the certificate and the fitted attributes stay float64.
    approximation : {None, "nystrom"}, default=None
        "nystrom": U-steps by Nystrom spectral embedding (Fowlkes et al.
        2004: left singular vectors of :math:`HD^{-1/2}CK_{mm}^{+1/2}`,
        :math:`O(nm^2)`) and W-steps by landmark passes (:mod:`ikdr.passes.landmarks`),
        so the whole alternation is near-linear in n; X may be an
        ``np.memmap``. Serves the Gaussian, multiquadric and polynomial
        kernels; ``sigma="auto"`` uses the median rule on this path.
    n_landmarks : "auto" or int, default="auto"
        m. "auto": doubled from 64 at the first U-step until the embedding
        moves by less than 0.01 (``ConvergenceWarning`` at 2,048); the m
        used is ``n_landmarks_``.
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
        How each W-step finds the top-q eigenvectors of a dense :math:`\Phi`
        (as :class:`ikdr.ISM`'s); "cpm" is the coordinate-wise power method
        (Lei, Zhong and Dhillon 2016; :doc:`/cpm`).
"""

COMMON_ATTRS = r"""
    labels_ : ndarray (n_samples,)
        k-means labels of the row-normalised embedding (Ng-Jordan-Weiss).
    components_ : ndarray (n_features, n_components)
        W, orthonormal columns.
    embedding_ : ndarray (n_samples, n_clusters)
        U, the final spectral embedding of XW.
    eigenvalues_ : ndarray (n_clusters,)
        Eigenvalues belonging to U; their sum is ``quality_``.
    degrees_ : ndarray (n_samples,)
        Diagonal of the final D (ones when not normalised).
    quality_ : float
        Clustering quality CQ = :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)`
        (dissertation Table 3.1; at most n_clusters when normalised).
    n_iter_ : int
        Outer U/W iterations.
    objective_ : float
        The paradigm's objective at ``best_iteration_``.
    best_iteration_ : int
        The (1-based) outer iteration whose W, U are returned: the one with
        the highest objective (D is held fixed in the W-step, so the true
        objective need not rise monotonically).
    converged_ : bool
        Whether the U and W changes both fell below ``tol`` before ``max_iter``.
    history_ : list of dict
        Per outer iteration: ``objective`` (the paradigm's objective, maximised),
        ``cost`` (its negative, the thesis' convention), ``quality``,
        ``u_change``, ``w_change``, ``ism_iterations``, ``time`` and the
        paradigm's own terms.
    kernel_ : Kernel
        The W-step kernel with fitted parameters.
    affinity_ : Kernel
        The U-step kernel (``kernel_`` unless ``affinity`` was given).
    sigma_ : float or None
        Bandwidth of the W-step kernel when it is a plain Gaussian; None for
        other kernels (a local-scaling Gaussian has one bandwidth per point).
    normalize_ : bool
        Whether D was the degree matrix (True) or the identity.
    feature_importances_ : ndarray (n_features,)
        Squared row norms of W divided by q (columns weighted equally; sums
        to 1): the weight of each input feature in the learned subspace.
    n_landmarks_ : int or None
        Landmarks used with ``approximation="nystrom"`` (None otherwise).
    feature_scores_ : ndarray (n_features,) or None
        Each feature's 2-group gap (:func:`ikdr.spectral.feature_gaps`) when
        the default kernel let the features be screened (KDAC: each feature's
        k-group gap in X without the existing clusters' means, see its
        Notes); None otherwise.
    support_ : ndarray of int
        The features W may use: all, unless :func:`ikdr.spectral.screen_features`
        took a few (4 blobs in 3 of 50 features: ISMClustering 0.26 -> 0.90;
        :doc:`/alternative_clustering`); ``components_`` is zero elsewhere.
    start_ : int
        Which of the runs was kept (KDAC's feature start is 1, see its Notes;
        0 when there was one run).
    start_gaps_ : ndarray
        The spectral gap :math:`\lambda_{k-1} - \lambda_k` of each run's final
        U-step (:func:`ikdr.spectral.spectral_gap`); a run other than the
        first is kept only when its gap is larger by at least 0.05.
    n_features_in_ : int
        Number of features seen during ``fit``.
"""


class ISMClustering(AlternatingClustering):
    __doc__ = r"""Unsupervised interpretable kernel dimension reduction for clustering.

    Maximises :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)` over W
    (:math:`W^TW = I`) and U (:math:`U^TU = I`) (Niu, Dy, Jordan 2011; ISM
    paper section 2): the U-step is spectral clustering of XW, the W-step is
    ISM with :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and D held fixed.

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
    def fit(self, X, y=None):
        """Learn W, U and the labels from X (n x d); y is ignored."""
        X, _, side = self._input(X)
        kernel, affinity, k, q, normalize = self._check_common(X, side)
        self._alternate(X, side, kernel, affinity, k, q, normalize,
                        starts=self._screened_run(X, side, kernel, affinity, k, q))
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
    def fit(self, X, scores):
        """Learn W, U and the labels from X (n x d) and expert scores (n x r or n)."""
        if scores is None:
            raise ValueError("SemiSupervisedISM requires y to be passed, but the target y is "
                             "None: give the expert scores, fit(X, scores)")
        X, scores, side = self._input(X, scores, multi_output=True, y_numeric=True)
        kernel, affinity, k, q, normalize = self._check_common(X, side)
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

        starts = self._screened_run(X, side, kernel, affinity, k, q, measure_with)
        self._alternate(X, side, kernel, affinity, k, q, normalize, build, None, guided=True,
                        starts=starts)
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
