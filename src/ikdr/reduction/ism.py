"""Supervised interpretable kernel dimension reduction (ISM estimator)."""
from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._config import fits_memory
from .._utils.eig import EIGEN_SOLVERS, gap_spectrum, top_eigenvectors
from .._utils.progress import IterationReport, check_verbose
from .._utils.sampling import rows_at, sample_index
from .._utils.sparse import column_counts
from .._utils.typing import ArrayLike, DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, check_dtype, check_n_components, plain
from .._utils.validation import NewParametersOnLoad, SparseInputMixin, check_positive
from .._utils.validation import ComponentNamesMixin
from .._utils.validation import keep_state_on_error
from ..gamma import supervised_gamma
from ..kernels import (MEDIAN_SUBSAMPLE, Gaussian, Kernel, KernelLike, make_kernel, median_sigma,
                       separation_sigma)
from ..passes import MEMORY, Approximation, fit_data, project_data, resolve, validated_rows
from ..passes.dask_data import take_columns
from ..passes.sparse_rows import is_sparse, sparse_phi0
from ..solver.driver import choose_n_components, solve_ism
from ..solver.options import ISMOptions
from .approximate import LandmarkOptions, approximate_ism
from .screen import (SCREEN_ROWS, moment_screen, screen_bytes, sparse_moment_screen,
                     third_moment_candidates)
from .support import (ALL_FEATURES, FOLD_GTOL, FOLD_ROWS, HeldOutRows, filled as _filled,
                      fold_precision, heldout_importances, heldout_losses, marginal_dependence,
                      select_support)
from .targets import TARGETS, ClassAttributesMixin, resolve_target


#: relative gradient at which a fit that only proposes features stops its trust region
LOOSE_GTOL = 1e-3
#: a half's fit (:mod:`ikdr.reduction.support`): from the fit on every row (its
#: columns give q) to a maximum of that half alone; it only ranks features, and
#: only its W is used (no float64 pass for the last point's gradient)
_FOLD_OPTIONS = ISMOptions(n_components=None, gtol=FOLD_GTOL, max_iter=30, certify=False,
                           warn=False, exact_finish=False)


def _approx_dtype(X, dtype):
    """Precision of the landmark passes: float32 when X or ``dtype`` asks for it."""
    if X.dtype == np.float32 or np.dtype(check_dtype(dtype)) == np.float32:
        return np.float32
    return np.float64


def check_kernel_params(kernel, sigma, *, rules=("median",)):
    """Validate the (kernel, sigma) pair shared by the estimators. ``rules``: the
    named bandwidth rules the estimator accepts (ISM also takes "separation",
    resolved in its ``fit``; the kernel is then built with the median rule)."""
    if isinstance(sigma, str) and sigma in rules and sigma != "median":
        sigma = "median"
    if not (isinstance(sigma, str) and sigma == "median"):
        if isinstance(sigma, str):
            names = " or ".join(f'"{r}"' for r in rules)
            raise ValueError(f'sigma must be a positive float or {names}, got {plain(sigma)!r}')
        check_positive(sigma, "sigma")
    if not isinstance(kernel, (str, Kernel)):
        raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
    return make_kernel(kernel, sigma=sigma)


class ISM(NewParametersOnLoad, ClassAttributesMixin, TargetRequiredMixin, SparseInputMixin,
          ComponentNamesMixin, TransformerMixin, BaseEstimator):
    r"""Supervised interpretable kernel dimension reduction by the Iterative Spectral Method.

    Finds W (d x q, :math:`W^TW = I`) maximising the HSIC between the
    projection XW and the target,
    :math:`\max_W \mathrm{Tr}(\Gamma K_{XW})`, :math:`\Gamma = H K_Y H`
    (ISM paper, Eq. 1), by the fixed point :math:`W \leftarrow V_{\max}(\Phi(W))`
    started at :math:`\Phi_0` (Algorithm 1), accelerated by Pulay mixing once W
    settles and safeguarded by a Riemannian trust region where a plain step
    would lower the objective, run until the answer is a certified local
    maximum (see :func:`ikdr.ism`), on the features chosen by held-out
    dependence (``support``). :math:`K_Y = YY^T` with one-hot Y for
    class labels, a Gaussian kernel on y for continuous targets.

    Data should be standardised first (e.g. ``make_pipeline(StandardScaler(), ISM())``),
    as in the papers.

    Parameters
    ----------
    n_components : int or None, default=None
        q. ``None`` picks q by the largest eigengap of :math:`\Phi_0`, with q at
        least (number of classes - 1) and at least 2 (one direction cannot hold
        a ring or an XOR; on the papers' data sets the floor changes nothing).
    kernel : str or Kernel, default="gaussian"
        "linear", "polynomial", "gaussian", "squared", "multiquadric",
        "relative_gaussian", or any :mod:`ikdr.kernels` object including conic
        combinations such as ``Gaussian() + Polynomial()``. A Gaussian by name
        takes its bandwidth from ``sigma`` ("auto" by default); an object keeps
        its own: ``Gaussian()`` is the median pairwise distance of X in all its
        features, as ``sigma="median"`` by name (:doc:`/guide/kernels`).
    sigma : float, "auto", "median" or "separation", default="auto"
        Gaussian bandwidth when ``kernel="gaussian"``. "auto": the median
        pairwise distance of the *projected* start :math:`XW_0` (the top-q
        eigenvectors of :math:`\Phi_0`, which do not depend on sigma), measured
        on at most 3,000 rows. The kernel acts on the q columns of XW, not on
        the d of X: the papers' "median" (the median distance of the training
        X, :func:`ikdr.median_sigma`) is then about :math:`\sqrt{d/q}` times too
        wide, nearly flat on XW, and sees little beyond class means (a ring or
        an XOR among noise features is lost: recall 0.00-0.50 against 1.00 with
        "auto" in :doc:`/studies/feature_discovery`; on wine, breast
        cancer and digits 5-fold accuracy within 0.01 of "median"). "separation"
        maximises the mean within-class minus the mean between-class kernel
        value (dissertation Appendix D.11, the authors' library's default;
        :func:`ikdr.kernels.separation_sigma`). Ignored when ``kernel`` is an
        object (its own ``sigma`` is used); for other kernels by name "auto"
        is "median".
    tol : float, default=0.01
        Used by the papers' rules only (``criterion="eigenvalues"`` or
        ``"angle"``): the relative eigenvalue change (or the angle, radians) at
        which the plain fixed point stops, once a step also turns W by less
        than 0.1 rad.
    max_iter : int, default=100
        Maximum number of iterations, plain and safeguarded together.
    criterion : {"gradient", "eigenvalues", "angle"}, default="gradient"
        Stopping rule. ``"gradient"``: run until the relative Riemannian
        gradient norm is at most ``gtol``, then check the Hessian (the
        certificate; plain steps that converge slowly hand over to the trust
        region, a saddle is left along its ascent direction). ``"eigenvalues"``
        (relative change of Phi's top-q eigenvalues below ``tol``) and
        ``"angle"`` (largest principal angle between successive W below
        ``tol``) are the papers' looser rules; ``converged_`` still says
        whether the point they stop at is certified.
    support : {"heldout", "moments", "all"}, default="heldout"
        Which features the projection may use; W is zero on the others.
        ``"heldout"``: chosen by dependence measured on rows W was not fitted
        on (:mod:`ikdr.reduction.support`): the class-moment screen
        (:func:`ikdr.reduction.screen.moment_screen`) proposes, two halves of
        at most 2 x 2,000 rows are each fitted and measured on the other, and
        a feature stays unless removing it would raise the held-out HSIC by more
        than 1% (to first order); candidates the screen dropped are tried in the
        order of its scores. Among many noise features the training objective's
        maximum over all of them is partly a noise subspace fitted to the
        sample, which every start drifts to: a held-out choice keeps the
        features that generalise. ``"moments"``: the screen's features alone
        (those whose class means, variances or covariances differ beyond
        noise; a continuous target in 10 quantile slices). ``"all"``: every
        feature, the papers' configuration. The support never has fewer
        features than ``n_components``: where fewer carry dependence, the
        next best (by held-out loss, then screen score) fill it up, and
        ``support_`` says which. The screen needs per-class d x d moments;
        where they would exceed the memory budget (:func:`ikdr.set_memory_budget`)
        the candidates come in the order of their marginal dependence.
    target : {"auto", "classes", "continuous"}, default="auto"
        What y is: ``"classes"``, labels whatever their dtype (one-hot
        :math:`K_Y`); ``"continuous"``, a quantity, integers included (a
        Gaussian kernel on y, e.g. scikit-learn's diabetes target); ``"auto"``,
        scikit-learn's ``type_of_target``, with an :class:`ikdr.TargetWarning`
        where an integer y has more than ``max(20, n / 5)`` distinct values (fewer
        than 5 rows per value on average: likely continuous). Classes too small
        for the held-out halves: :func:`ikdr.reduction.targets.check_halves`.
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
        How the top-q eigenvectors of a dense :math:`\Phi` are found (see
        :func:`ikdr.ism`); "cpm" is the coordinate-wise power method (Lei,
        Zhong and Dhillon 2016; :doc:`/cpm`).
    gtol : float, default=1e-6
        Relative Riemannian gradient norm :math:`\|g\|_F / |f|` at which the
        fit stops (``criterion="gradient"``) and below which the certificate's
        first-order condition holds; the objective's rounding (about 1e-13
        relative) bounds how small it can usefully be. With ``approximation`` it applies to the exact
        polish; the landmark fits stop at their own looser tolerance (the
        landmark error dominates below it).
    acceleration : {"pulay", None}, default="pulay"
        Pulay mixing of the plain steps once W settles (:func:`ikdr.ism`,
        :mod:`ikdr.solver.mixing`): the same fixed point in fewer passes where
        the plain iteration converges slowly (not below a relative gradient of
        1e-8, where the combination is dominated by rounding). None: the
        papers' plain steps.
    certify : bool, default=True
        Compute the second-order part of ``convergence_`` (the largest
        Riemannian Hessian eigenvalue, a few thin passes); False keeps only the
        gradient (no extra pass). With ``approximation`` it applies to the exact
        polish; the landmark fits report their gradient only.
    random_state : int, RandomState instance or None
        The seeded samples of rows: the bandwidth rules' (at most 3,000) and
        the held-out halves of ``support="heldout"`` and of the importances.
    verbose : int, default=0
        >= 1 prints one line per ISM iteration (objective, relative eigenvalue
        change or principal angle, step kind, elapsed time); with tqdm
        installed, a progress bar on a terminal.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the C++ kernel products during ``fit``. ``np.float32``
        runs the fused products (and their BLAS calls) in single precision,
        about twice as fast at large n, with HSIC agreeing to about 1e-4
        relative; the certificate and the fitted attributes stay float64.
    approximation : {None, "nystrom", "rff"}, default=None
        None: exact passes (:math:`O(n^2 d)` each). "nystrom": every kernel
        matrix of a pass is replaced by its landmark factorisation
        :math:`C K_{mm}^+ C^T` (:mod:`ikdr.passes.landmarks`): a pass costs a few
        n*d*m flops (two for the supervised Gamma whatever the number of
        classes) plus n*d^2, memory :math:`O(nq + m d)` beyond X, and X may be
        an ``np.memmap`` read in row blocks (never loaded whole). Serves the
        Gaussian, multiquadric and polynomial kernels and conic combinations
        with linear and squared members; the linear and squared kernels alone
        need no approximation (ValueError). "rff": random Fourier features of
        the Gaussian kernel (the authors' library's default; less accurate at
        small sigma, see :doc:`/benchmarks/nystrom_ism`).
    n_landmarks : "auto" or int, default="auto"
        m, the number of landmarks (Nystrom) or features (rff). "auto" starts
        at 64 landmarks (500 features) and doubles m, warm-starting each fit
        from the last, until the fitted subspace moves by less than
        sin = 0.01 (largest principal angle); at 2,048 landmarks (or n) it
        stops and warns (``ConvergenceWarning``) with its last estimate. The
        m used is ``n_landmarks_``. For Nystrom, "auto" weighs flops
        (:mod:`ikdr.reduction.cost`): it runs the exact passes when they are
        cheaper than the landmark fits, and finishes with exact passes where
        the next doubling would cost more than an exact fit
        (``approximation_``, ``approximation_reason_``).
    polish : bool, default=False
        With an approximation: continue from the approximate fixed point with
        exact passes until the exact stopping rule holds (the exact answer,
        in fewer exact passes than a cold exact fit).

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_components)
        W, orthonormal columns.
    eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues of :math:`\Phi(W)` at the solution.
    n_iter_ : int
        Iterations run after the start, plain and safeguarded together.
    sigma_ : float or None
        Gaussian bandwidth used (None for kernels without one).
    kernel_ : Kernel
        The kernel with fitted parameters.
    hsic_ : float
        Empirical :math:`\mathrm{HSIC}(XW, y) = \mathrm{Tr}(K_{XW} H K_Y H)/(n-1)^2`
        with the fitted kernel.
    history_ : list of dict
        Objective and eigenvalues per iteration (see :class:`ikdr.ISMResult`).
    converged_ : bool
        True only when the certificate holds at ``components_``: the relative
        gradient norm is at most ``gtol`` and (with ``certify=True``) the
        Hessian's largest eigenvalue is not positive, for the problem on the
        features of ``support_`` (the rows of W outside it fixed at zero).
    convergence_ : ISMConvergence
        Certificate of the solution: Riemannian gradient norm, eigengap of
        :math:`\Phi` (dissertation Eq. C.73), largest Riemannian Hessian
        eigenvalue (<= 0 at a local maximum), plain and safeguarded step counts
        (see :class:`ikdr.ISMConvergence`); its ``support`` is ``support_``,
        the features it covers.
    classes_ : ndarray or None
        Class labels, or None for a continuous target (``class_importances_``
        is then absent: reading it raises an AttributeError saying why).
    feature_importances_ : ndarray of shape (n_features,)
        The held-out dependence each feature carries, summing to 1 (zeros where
        none carries any): for class labels the largest of its
        ``class_importances_``, normalised, so that a small class's features rank
        with the large ones'; for a continuous target the same two parts on its
        Gamma (:mod:`ikdr.reduction.groups`).
    class_importances_ : ndarray of shape (n_classes, n_features)
        Class labels only (absent for a continuous target): per class (rows in
        ``classes_`` order, each summing to 1), how much each feature tells it
        from the other classes, each weighed alike, on held-out rows: the mean of
        its share of what the held-out dependence loses, to first order, without
        it in the projection, and of its own dependence on the class.
    feature_importance_intervals_, class_importance_intervals_ : ndarray
        ``[..., 0]`` low, ``[..., 1]`` high: the range of the estimate and of each
        held-out half's own; :func:`ikdr.importance_intervals` refits instead.
    support_ : ndarray of int
        The features the projection uses (``support``), increasing;
        ``feature_names_in_[support_]`` names them.
    empty_features_ : ndarray of int
        For sparse X, the columns without any stored value (never candidates;
        their weight is 0). Empty for dense X.
    screen_scores_ : ndarray of shape (n_features,) or None
        The class-moment screen's raw score of every feature (None where it
        did not run).
    n_landmarks_ : int or None
        Landmarks (or random features) used; None without approximation, n when
        ``n_landmarks="auto"`` chose the exact passes.
    approximation_ : {None, "nystrom", "rff"}
        The passes that gave ``components_``: None when they were exact, either
        because ``approximation=None`` or because the cost model of
        ``n_landmarks="auto"`` (:mod:`ikdr.reduction.cost`) found them cheaper.
    approximation_reason_ : str
        Why those passes: the cost model's comparison (flops of an exact fit
        and of the landmark fits), the landmarks given, or "approximation=None".
        Printed with ``verbose >= 1``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame X (absent otherwise); the output columns
        are ``get_feature_names_out()``: ``ism0``, ``ism1``, ...

    See Also
    --------
    ikdr.ism : the solver as a function, for any Gamma.

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.preprocessing import StandardScaler
    >>> import ikdr
    >>> X, y = load_wine(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> model = ikdr.ISM(n_components=3).fit(X, y)
    >>> model.transform(X).shape
    (178, 3)
    """

    #: ikdr 0.1's behaviour for the parameters added since (pickles of 0.1 load with it)
    _earlier_parameters = {"support": "all", "eigen_solver": "auto", "acceleration": None,
                           "target": "auto"}

    def __setstate__(self, state):
        # a pickle of an earlier 0.2 development version has ``screen`` ("auto": the
        # class-moment screen, None: every feature) where ``support`` is now
        if "screen" in state and "support" not in state:
            state = dict(state)
            state["support"] = "moments" if state.pop("screen") == "auto" else "all"
        super().__setstate__(state)

    _parameter_constraints = {
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "criterion": [StrOptions({"eigenvalues", "angle", "gradient"})],
        "gtol": [Interval(Real, 0, None, closed="neither")],
        "certify": ["boolean"],
        "support": [StrOptions({"heldout", "moments", "all"})],
        "eigen_solver": [StrOptions(set(EIGEN_SOLVERS))],
        "acceleration": [StrOptions({"pulay"}), None],
        "target": [StrOptions(set(TARGETS))],
    }

    def __init__(self, n_components: int | None = None, kernel: KernelLike = "gaussian",
                 sigma: SigmaLike = "auto", tol: float = 0.01, max_iter: int = 100,
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, criterion: str = "gradient",
                 certify: bool = True, approximation: str | None = None,
                 n_landmarks: int | str = "auto", polish: bool = False,
                 gtol: float = 1e-6, support: str = "heldout",
                 eigen_solver: str = "auto", acceleration: str | None = "pulay",
                 target: str = "auto") -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.tol = tol
        self.max_iter = max_iter
        self.criterion = criterion
        self.gtol = gtol
        self.certify = certify
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype
        self.approximation = approximation
        self.n_landmarks = n_landmarks
        self.polish = polish
        self.support = support
        self.eigen_solver = eigen_solver
        self.acceleration = acceleration
        self.target = target

    def _validate_params_values(self):
        self._validate_params()
        check_dtype(self.dtype)
        check_verbose(self.verbose)

    @keep_state_on_error
    def fit(self, X: ArrayLike, y: ArrayLike) -> ISM:
        """Learn W from training data X (n x d) and targets y (labels or continuous).

        X may be a row-chunked ``dask.array.Array`` (and y a dask array): every
        pass then runs as Dask tasks on the active client's workers
        (:mod:`ikdr.distributed`, :doc:`/distributed`). X may be a
        ``scipy.sparse`` matrix or array, read by products and never made
        dense (:doc:`/guide/sparse`).
        """
        self._validate_params_values()
        kernel = check_kernel_params(self.kernel, self.sigma,
                                     rules=("auto", "median", "separation"))
        # one entry check for every row source: in memory, row blocks (an
        # approximation; a memmap is never loaded whole) or a Dask cluster
        X, y, location = fit_data(self, X, y, approximation=self.approximation, kernel=kernel)
        y, target, gamma, classes = resolve_target(y, self.target)
        d = X.shape[1]
        q_user = None if self.n_components is None else check_n_components(self.n_components, d)
        # q: the largest eigengap of Phi_0, at least (classes - 1) and at least 2 (one
        # direction cannot hold a ring or an XOR)
        minimum = min(d, max(2, classes.shape[0] - 1 if classes is not None else 1))
        selection_X, selection_y = self._selection_rows(X, y)
        heldout = HeldOutRows(selection_X, selection_y, target, self.random_state)
        self.empty_features_ = np.empty(0, dtype=np.intp)     # sparse X: set by the screen
        start, order, scores = self._candidates(X, y, heldout)
        evidence = start.size > 0
        if not evidence:
            # no class moment differs (a parity): Phi_0 holds no signal, and its
            # eigengap no q; the fewest directions, all features up to ALL_FEATURES
            start, q_user = order[:min(d, ALL_FEATURES)], q_user or minimum

        def fit_rows(features, W0, loose=False):
            fitted = self._fit_features(X, y, location, gamma, target, features, q_user,
                                        min(minimum, features.size), W0, loose)
            return fitted[0].components, fitted[0].kernel, fitted[0].eigenvalues, fitted

        if self.support == "heldout":
            selection, result = select_support(heldout, start, order, fit_rows,
                                               self._fold_fit, q_user or minimum, evidence)
            support, fits = selection.support, selection.fits
        else:
            support = _filled(np.sort(start), order, q_user or minimum)
            W, kernel, _, result = fit_rows(support, None)
            fits = heldout_losses(heldout, support, W, kernel, self._fold_fit)[2]
        solution, passes_used = result
        self._set_fitted(solution, passes_used, support, d, X.shape[0], scores, classes)
        for name, value in heldout_importances(heldout, support, fits, solution.kernel,
                                               classes).items():
            if value is not None:
                setattr(self, name, value)
            else:       # a continuous target has no class_importances_ (an earlier fit's go)
                self.__dict__.pop(name, None)
        return self

    def _set_fitted(self, result, passes_used, support, d, n, scores, classes):
        """The fitted attributes from the fit on the rows of ``support``."""
        # W is zero on the features the support leaves out (transform stays X @ W)
        W = np.zeros((d, result.components.shape[1]))
        W[support] = result.components
        result.convergence.support = support
        self.components_ = W
        self.support_ = support
        self.screen_scores_ = scores
        self.eigenvalues_ = result.eigenvalues
        self.n_iter_ = result.n_iter
        self.kernel_ = result.kernel
        self.sigma_ = result.kernel.gaussian_sigma
        self.hsic_ = result.objective / (n - 1) ** 2
        self.history_ = result.history
        self.classes_ = classes
        self.converged_ = result.converged
        self.convergence_ = result.convergence
        self.n_landmarks_, self.approximation_, self.approximation_reason_ = passes_used

    def _selection_rows(self, X, y):
        """The rows the support is chosen on (all of them, or a seeded sample of
        ``2 * FOLD_ROWS``), in memory, float64, with their targets."""
        index = sample_index(X.shape[0], 2 * FOLD_ROWS, self.random_state)
        return rows_at(X, index), (y if index is None else y[index])

    def _candidates(self, X, y, heldout):
        """(the screen's features, every feature in the candidates' order, raw
        screen scores or None). ``support="all"``: every feature, in order.
        Where the screen's per-class d x d moments would exceed the memory
        budget it does not run: no feature has its evidence, and the candidates
        come in the order of their marginal held-out dependence."""
        d = X.shape[1]
        if is_sparse(X):
            return self._sparse_candidates(X, y, heldout)
        if self.support == "all":
            return np.arange(d), np.arange(d), None
        if fits_memory(screen_bytes(d, y)):
            # the screen only proposes (the held-out halves decide): its moments on a
            # seeded sample of rows, so that its cost does not grow with n
            index = sample_index(X.shape[0], SCREEN_ROWS, self.random_state)
            kept, scores = moment_screen(X if index is None else rows_at(X, index),
                                         y if index is None else y[index])
            order = np.argsort(-scores, kind="stable")
            if not np.any(kept > 0):
                kept, scores, order = third_moment_candidates(heldout.X, heldout.y, order, scores,
                                                              self.random_state)
            return np.flatnonzero(kept > 0), order, scores
        marginal = marginal_dependence(heldout.X, heldout.gamma())
        return np.empty(0, np.intp), np.argsort(-marginal, kind="stable"), None

    def _sparse_candidates(self, X, y, heldout):
        """:meth:`_candidates` for sparse X: the screen without d x d moments
        (:func:`ikdr.reduction.screen.sparse_moment_screen`, covariances among the
        most frequent features), or the marginal order; columns without a stored
        value are never candidates (``empty_features_``)."""
        empty = column_counts(X) == 0
        self.empty_features_ = np.flatnonzero(empty)
        if self.support == "all":
            marginal = marginal_dependence(heldout.X, heldout.gamma())
            order = np.argsort(-marginal, kind="stable")
            return np.flatnonzero(~empty), order[~empty[order]], None
        index = sample_index(X.shape[0], SCREEN_ROWS, self.random_state)
        kept, scores = sparse_moment_screen(rows_at(X, index), y if index is None else y[index])
        order = np.argsort(-scores, kind="stable")
        return np.flatnonzero((kept > 0) & ~empty), order[~empty[order]], scores

    def _fit_features(self, X, y, location, gamma, target, features, q, minimum, W0, loose):
        """The fit on every row of the columns ``features``: the bandwidth rule,
        then the solver (``loose``: the papers' rule, no certificate); returns
        :meth:`_solve`'s pair."""
        X = take_columns(X, features)
        # the bandwidths are fitted on a seeded sample of rows unless X is in memory
        index = None if location == MEMORY else sample_index(X.shape[0], MEDIAN_SUBSAMPLE,
                                                             self.random_state)
        kernel, q = self._kernel_and_q(X if index is None else rows_at(X, index),
                                       y if index is None else y[index], target, q, minimum)
        if W0 is not None and q is not None and W0.shape[1] != q:
            W0 = None
        return self._solve(X, gamma, kernel, q, minimum, W0, loose)

    def _fold_fit(self, X, gamma, kernel, W0):
        """W of one half of the selection rows (``X``, its ``gamma``): from the fit
        on every row (``W0``, ``kernel``) to a maximum of that half alone
        (relative gradient :data:`~ikdr.reduction.support.FOLD_GTOL`: the halves
        only rank features; the fit on every row is certified), in the precision
        of :func:`~ikdr.reduction.support.fold_precision`."""
        X = fold_precision(X, W0, kernel)
        return solve_ism(resolve(X), X, gamma, kernel, _FOLD_OPTIONS, W0=W0).components

    def _kernel_and_q(self, sample, labels, target, q, minimum):
        """(kernel fitted on ``sample``, q or None): the bandwidth rule of
        ``sigma`` on these rows ("auto" also fixes q, by the eigengap of
        :math:`\\Phi_0`, where it is None)."""
        kernel = check_kernel_params(self.kernel, self.sigma,
                                     rules=("auto", "median", "separation"))
        by_name = isinstance(self.kernel, str)
        if self.sigma == "separation" and by_name:
            if target != "labels":
                raise ValueError('sigma="separation" needs class labels; y is continuous')
            kernel = make_kernel(self.kernel, sigma=separation_sigma(
                sample, labels, random_state=self.random_state))
        elif self.sigma == "auto" and by_name and kernel.bandwidth_rule is not None:
            kernel, q = self._auto_kernel(sample if is_sparse(sample) else
                                          np.asarray(sample, dtype=np.float64), labels, target,
                                          q, minimum)
        return kernel.fit(sample, random_state=self.random_state), q

    def _solve(self, X, gamma, kernel, q, minimum, W0=None, loose=False):
        """The fit on every row: (ISMResult, (landmarks used, approximation used,
        why)); ``loose``: stopped by the papers' rule at tol 0.01 (a trust region,
        where the plain steps descend, at a relative gradient of 1e-3), not
        certified."""
        approx = self.approximation
        with IterationReport("ISM", self.verbose, total=int(self.max_iter) + 1) as report:
            # q=None: the solver picks q by the eigengap of Phi_0 (at least classes - 1)
            options = ISMOptions(n_components=q, min_components=minimum, tol=self.tol,
                                 max_iter=self.max_iter, criterion=self.criterion,
                                 certify=self.certify, gtol=self.gtol,
                                 eigen_solver=self.eigen_solver, acceleration=self.acceleration,
                                 random_state=self.random_state,
                                 callback=report.ism_step if report.active else None)
            if loose:
                options = replace(options, criterion="eigenvalues", tol=0.01, certify=False,
                                  gtol=LOOSE_GTOL)
            if approx is None:
                work = X.astype(check_dtype(self.dtype), copy=False)
                result = solve_ism(resolve(work), work, gamma, kernel, options, W0=W0)
                return result, (None, None, "approximation=None: exact passes")
            # the landmark fits certify only their gradient; ``certify`` and ``gtol``
            # apply to the exact polish (approximate_ism)
            settings = Approximation(approx, self.n_landmarks, random_state=self.random_state,
                                     dtype=_approx_dtype(X, self.dtype))
            # X passed fit's entry check (a column subset of it, or X itself): the
            # "auto" rule's fits do not read it again to validate it
            with validated_rows(X):
                result, info = approximate_ism(X, gamma, kernel, options,
                                               LandmarkOptions(settings, polish=bool(self.polish)),
                                               W0=W0)
            report.line(f"[ISM] passes: {info['choice']}")
        return result, (info["n_landmarks"], info["approximation"], info["choice"])

    def _auto_kernel(self, sample, labels, target, q, minimum):
        r"""sigma="auto": the Gaussian at the median distance of the projected start
        :math:`X W_0`, :math:`W_0` the top-q eigenvectors of :math:`\Phi_0`, which do
        not depend on sigma (for the Gaussian, :math:`\Phi_0 = -\sigma^{-2} X^T
        L(\Gamma) X`). Both are taken on the rows the bandwidth rules sample (all
        of them up to 3,000), in memory: the same numbers wherever the rows live."""
        gamma = supervised_gamma(labels, target=target)[0]
        if is_sparse(sample):
            # no d x d moments: Phi_0 by products, of low rank (ikdr.passes.sparse_rows)
            phi0 = sparse_phi0(Gaussian(1.0), sample, gamma)
            if q is None:
                q = choose_n_components(gap_spectrum(phi0, minimum), minimum=minimum)
            projected = np.asarray(sample @ top_eigenvectors(phi0, q, method="lapack")[1])
        else:
            vals, vecs = np.linalg.eigh(Gaussian(1.0).phi0(sample, gamma))
            if q is None:
                q = choose_n_components(vals, minimum=minimum)
            W0 = vecs[:, ::-1][:, :q]
            # einsum, not BLAS: a BLAS product's last bits can depend on the array's
            # alignment, and a gathered sample is a new array
            projected = np.einsum("ij,jk->ik", sample, W0)
        try:
            sigma = median_sigma(projected, random_state=self.random_state)
        except ValueError:
            raise ValueError('sigma="auto": every training row has the same projection X @ W0 '
                             "(constant or duplicate features); pass sigma as a number") from None
        return Gaussian(sigma), q

    def transform(self, X: ArrayLike) -> ArrayLike:
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        return project_data(self, X, self.components_)

    def fit_transform(self, X: ArrayLike, y: ArrayLike = None, **fit_params: Any) -> ArrayLike:
        if y is None:
            raise ValueError("ISM is supervised: fit_transform(X, y) needs y")
        return self.fit(X, y).transform(X)
