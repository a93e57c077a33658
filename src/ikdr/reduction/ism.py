"""Supervised interpretable kernel dimension reduction (ISM estimator)."""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._config import fits_memory
from .._utils.eig import EIGEN_SOLVERS
from .._utils.labels import target_type
from .._utils.progress import IterationReport, check_verbose
from .._utils.sampling import sample_index, sample_rows
from .._utils.typing import DTypeLike, RandomStateLike, SigmaLike
from .._utils.validation import TargetRequiredMixin, check_dtype, check_n_components
from .._utils.validation import NewParametersOnLoad, check_positive, keep_state_on_error
from ..gamma import supervised_gamma
from ..kernels import (MEDIAN_SUBSAMPLE, Gaussian, Kernel, KernelLike, make_kernel, median_sigma,
                       separation_sigma)
from ..passes import MEMORY, fit_data, project_data, resolve
from ..passes.dask_data import take_columns
from ..passes.landmarks import Approximation
from ..solver.approximate import approximate_ism
from ..solver.driver import choose_n_components
from ..solver.importances import feature_importances
from .function import ism
from .screen import moment_screen, screen_bytes


def _sample_labels(y, n, random_state):
    """The labels of the rows :func:`ikdr._utils.sampling.sample_rows` draws."""
    idx = sample_index(n, MEDIAN_SUBSAMPLE, random_state)
    return y if idx is None else y[idx]


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
            raise ValueError(f'sigma must be a positive float or {names}, got {sigma!r}')
        check_positive(sigma, "sigma")
    if not isinstance(kernel, (str, Kernel)):
        raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
    return make_kernel(kernel, sigma=sigma)


class ISM(NewParametersOnLoad, TargetRequiredMixin, TransformerMixin, BaseEstimator):
    r"""Supervised interpretable kernel dimension reduction by the Iterative Spectral Method.

    Finds W (d x q, :math:`W^TW = I`) maximising the HSIC between the
    projection XW and the target,
    :math:`\max_W \mathrm{Tr}(\Gamma K_{XW})`, :math:`\Gamma = H K_Y H`
    (ISM paper, Eq. 1), by the fixed point :math:`W \leftarrow V_{\max}(\Phi(W))`
    started at :math:`\Phi_0` (Algorithm 1), accelerated by Pulay mixing once W
    settles and safeguarded by a Riemannian trust region where a plain step
    would lower the objective (see :func:`ikdr.ism`). :math:`K_Y = YY^T` with one-hot Y for
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
        "linear", "polynomial", "gaussian", "squared", "multiquadratic",
        "relative_gaussian", or any :mod:`ikdr.kernels` object including conic
        combinations such as ``Gaussian() + Polynomial()``.
    sigma : float, "auto", "median" or "separation", default="auto"
        Gaussian bandwidth when ``kernel="gaussian"``. "auto": the median
        pairwise distance of the *projected* start :math:`XW_0` (the top-q
        eigenvectors of :math:`\Phi_0`, which do not depend on sigma), measured
        on at most 3,000 rows. The kernel acts on the q columns of XW, not on
        the d of X: the papers' "median" (the median distance of the training
        X, :func:`ikdr.median_sigma`) is then about :math:`\sqrt{d/q}` times too
        wide, nearly flat on XW, and sees little beyond class means (a ring or
        an XOR among noise features is lost: recall 0.00-0.12 against 1.00 with
        "auto" in :doc:`/benchmarks/feature_discovery`; on wine, breast
        cancer and digits 5-fold accuracy within 0.01 of "median"). "separation"
        maximises the mean within-class minus the mean between-class kernel
        value (dissertation Appendix D.11, the authors' library's default;
        :func:`ikdr.kernels.separation_sigma`). Ignored when ``kernel`` is an
        object (its own ``sigma`` is used); for other kernels by name "auto"
        is "median".
    tol : float, default=0.01
        Relative eigenvalue change at which the plain fixed point stops, once
        a step also turns W by less than 0.1 rad (the safeguarded phase, when
        needed, stops at the relative Riemannian gradient norm ``gtol``).
    max_iter : int, default=100
        Maximum number of iterations, plain and safeguarded together.
    criterion : {"eigenvalues", "angle", "gradient"}, default="eigenvalues"
        Stopping rule. ``"eigenvalues"``: relative change of Phi's top-q
        eigenvalues below ``tol``, as in the papers; ``"angle"``: largest
        principal angle between successive W below ``tol``; ``"gradient"``:
        relative Riemannian gradient norm below ``gtol`` (slow plain steps
        hand over to the trust region), for a certified local maximum.
    screen : {"auto", None}, default="auto"
        Which features the fit starts from. "auto": those whose class means,
        variances or covariances differ beyond noise (the class-moment screen,
        :func:`ikdr.reduction.screen.moment_screen`, :math:`O(n d^2)`; a
        continuous target in 10 quantile slices); W is zero on the others, and
        ``feature_importances_`` gives them 0 (``screen_scores_`` ranks them).
        All features when the screen keeps none or fewer than ``n_components``,
        or when its per-class d x d moments would exceed the memory budget
        (:func:`ikdr.set_memory_budget`; d of several thousand).
        It reads the rows once, wherever they live (a memmap by row blocks, a
        Dask array by its chunks). Among many noise
        features the objective's maximum over all of them is itself a noise
        subspace fitted to the sample, which every start then drifts to; the
        screen is what finds 4 informative features among 784. None: every
        feature, the papers' start.
    eigen_solver : {"auto", "lapack", "power", "cpm"}, default="auto"
        How the top-q eigenvectors of a dense :math:`\Phi` are found (see
        :func:`ikdr.ism`); "cpm" is the coordinate-wise power method (Lei,
        Zhong and Dhillon 2016; :doc:`/cpm`).
    gtol : float, default=1e-6
        Relative Riemannian gradient norm :math:`\|g\|_F / |f|` at which the
        safeguarded (trust-region) phase and ``criterion="gradient"`` stop;
        the objective's rounding (about 1e-13 relative) bounds how small it
        can usefully be. With ``approximation`` it applies to the exact
        polish; the landmark fits stop at their own looser tolerance (the
        landmark error dominates below it).
    acceleration : {"pulay", None}, default="pulay"
        Pulay mixing of the plain steps once W settles (:func:`ikdr.ism`,
        :mod:`ikdr.solver.mixing`): the same fixed point in fewer passes where
        the plain iteration converges slowly (not with ``criterion="gradient"``).
        None: the papers' plain steps.
    certify : bool, default=True
        Compute the second-order part of ``convergence_`` (the largest
        Riemannian Hessian eigenvalue, a few thin passes); False keeps only the
        gradient (no extra pass). With ``approximation`` it applies to the exact
        polish; the landmark fits report their gradient only.
    random_state : int, RandomState instance or None
        The seeded sample of rows (at most 3,000) the bandwidth rules use.
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
        (:mod:`ikdr.solver.cost`): it runs the exact passes when they are
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
        Whether the solver's stopping rule was met before ``max_iter``.
    convergence_ : ISMConvergence
        Certificate of the solution: Riemannian gradient norm, eigengap of
        :math:`\Phi` (dissertation Eq. C.73), largest Riemannian Hessian
        eigenvalue (<= 0 at a local maximum), plain and safeguarded step counts
        (see :class:`ikdr.ISMConvergence`).
    classes_ : ndarray or None
        Class labels, or None for a continuous target.
    feature_importances_ : ndarray of shape (n_features,)
        Weight of each input feature in the learned subspace:
        :math:`\sum_k |\lambda_k| W_{jk}^2 / \sum_k |\lambda_k|` with
        :math:`\lambda_k` = ``eigenvalues_`` (non-negative, sums to 1; see
        :func:`ikdr.solver.importances.feature_importances`); 0 on the features
        the screen left out. :func:`ikdr.importance_intervals` gives bootstrap
        intervals and how often each feature is among the top ones.
    support_ : ndarray of int
        The features the fit used (all of them without the screen).
    screen_scores_ : ndarray of shape (n_features,) or None
        The class-moment screen's raw score of every feature (None without it).
    n_landmarks_ : int or None
        Landmarks (or random features) used; None without approximation, n when
        ``n_landmarks="auto"`` chose the exact passes.
    approximation_ : {None, "nystrom", "rff"}
        The passes that gave ``components_``: None when they were exact, either
        because ``approximation=None`` or because the cost model of
        ``n_landmarks="auto"`` (:mod:`ikdr.solver.cost`) found them cheaper.
    approximation_reason_ : str
        Why those passes: the cost model's comparison (flops of an exact fit
        and of the landmark fits), the landmarks given, or "approximation=None".
        Printed with ``verbose >= 1``.
    n_features_in_ : int
        Number of features seen during ``fit``.

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
    _earlier_parameters = {"screen": None, "eigen_solver": "auto", "acceleration": None}

    _parameter_constraints = {
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "criterion": [StrOptions({"eigenvalues", "angle", "gradient"})],
        "gtol": [Interval(Real, 0, None, closed="neither")],
        "certify": ["boolean"],
        "screen": [StrOptions({"auto"}), None],
        "eigen_solver": [StrOptions(set(EIGEN_SOLVERS))],
        "acceleration": [StrOptions({"pulay"}), None],
    }

    def __init__(self, n_components: int | None = None, kernel: KernelLike = "gaussian",
                 sigma: SigmaLike = "auto", tol: float = 0.01, max_iter: int = 100,
                 random_state: RandomStateLike = None, verbose: int = 0,
                 dtype: DTypeLike = np.float64, criterion: str = "eigenvalues",
                 certify: bool = True, approximation: str | None = None,
                 n_landmarks: int | str = "auto", polish: bool = False,
                 gtol: float = 1e-6, screen: str | None = "auto",
                 eigen_solver: str = "auto", acceleration: str | None = "pulay") -> None:
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
        self.screen = screen
        self.eigen_solver = eigen_solver
        self.acceleration = acceleration

    def _validate_params_values(self):
        self._validate_params()
        check_dtype(self.dtype)
        check_verbose(self.verbose)

    @keep_state_on_error
    def fit(self, X, y):
        """Learn W from training data X (n x d) and targets y (labels or continuous).

        X may be a row-chunked ``dask.array.Array`` (and y a dask array): every
        pass then runs as Dask tasks on the active client's workers
        (:mod:`ikdr.distributed`, :doc:`/distributed`).
        """
        self._validate_params_values()
        kernel = check_kernel_params(self.kernel, self.sigma,
                                     rules=("auto", "median", "separation"))
        approx = self.approximation
        # one entry check for every row source: in memory, row blocks (an
        # approximation; a memmap is never loaded whole) or a Dask cluster
        X, y, rows = fit_data(self, X, y, approximation=approx, kernel=kernel)
        # the bandwidths are fitted on a seeded sample of rows unless X is in memory
        sampled = rows != MEMORY
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        target = target_type(y)
        if target in ("multilabel-indicator", "multiclass-multioutput"):
            target = "continuous"
        if target not in ("binary", "multiclass", "continuous", "continuous-multioutput"):
            raise ValueError(f"Unknown label type: {target!r}; y must be class labels or "
                             "continuous targets")
        gamma, classes = supervised_gamma(y, target="labels" if target in ("binary", "multiclass")
                                          else "continuous")
        d = X.shape[1]
        q_user = None if self.n_components is None else check_n_components(self.n_components, d)
        support, scores = self._screen(X, y, q_user)
        X = take_columns(X, support)
        d_fit = X.shape[1]
        sample = X if not sampled else sample_rows(X, MEDIAN_SUBSAMPLE, self.random_state)
        # q: the largest eigengap of Phi_0, at least (classes - 1) and at least 2 (one
        # direction cannot hold a ring or an XOR)
        minimum = min(max(2, classes.shape[0] - 1 if classes is not None else 1), d_fit)
        q = q_user
        rule = self.sigma if isinstance(self.sigma, str) else None
        if rule == "separation" and isinstance(self.kernel, str):
            if classes is None:
                raise ValueError('sigma="separation" needs class labels; y is continuous')
            labels = y if not sampled else _sample_labels(y, X.shape[0], self.random_state)
            sigma = separation_sigma(sample, labels, random_state=self.random_state)
            kernel = make_kernel(self.kernel, sigma=sigma)
        elif rule == "auto" and isinstance(self.kernel, str) and self.kernel.lower() in \
                ("gaussian", "rbf"):
            labels = y if not sampled else _sample_labels(y, X.shape[0], self.random_state)
            kernel, q = self._auto_kernel(np.asarray(sample, dtype=np.float64), labels,
                                          "labels" if classes is not None else "continuous",
                                          q, minimum)
        kernel = kernel.fit(sample, random_state=self.random_state)
        if q is None and approx is not None:
            # the landmark fits grow m from a fixed q: choose it once, from the landmark Phi_0
            phi0 = Approximation(approx, 1).problem(X, gamma, kernel, None).phi0()
            q = choose_n_components(np.linalg.eigvalsh(phi0), minimum=minimum)
        m_used, used, reason = None, None, "approximation=None: exact passes"
        solver_options = {"tol": self.tol, "max_iter": int(self.max_iter),
                          "criterion": self.criterion, "certify": self.certify,
                          "gtol": self.gtol, "eigen_solver": self.eigen_solver,
                          "acceleration": self.acceleration}
        with IterationReport("ISM", self.verbose, total=int(self.max_iter) + 1) as report:
            callback = report.ism_step if report.active else None
            if approx is None:
                # q=None: the solver picks q by the eigengap of Phi_0 (at least classes - 1)
                work = X.astype(check_dtype(self.dtype), copy=False)
                result = ism(work, gamma, kernel, q, min_components=minimum,
                             random_state=self.random_state, callback=callback, **solver_options)
            else:
                # the landmark fits certify only their gradient (a Hessian estimate of
                # the approximate objective costs tens of passes and certifies the
                # wrong problem); ``certify`` applies to the exact polish
                exact_only = {key: solver_options.pop(key) for key in ("certify", "gtol")}
                result, info = approximate_ism(
                    X, gamma, kernel, q, approximation=approx, n_landmarks=self.n_landmarks,
                    polish=bool(self.polish), dtype=_approx_dtype(X, self.dtype),
                    random_state=self.random_state, callback=callback,
                    polish_kwargs=exact_only,
                    exact_passes=lambda dtype: resolve(X, dtype=dtype), **solver_options)
                m_used, used, reason = info["n_landmarks"], info["approximation"], info["choice"]
                report.line(f"[ISM] passes: {reason}")
        n = X.shape[0]
        # W is zero on the features the screen left out (transform stays X @ W)
        W = np.zeros((d, result.components.shape[1]))
        W[support] = result.components
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
        self.n_landmarks_ = m_used
        self.approximation_ = used
        self.approximation_reason_ = reason
        self.feature_importances_ = feature_importances(W, result.eigenvalues)
        return self

    def _screen(self, X, y, q_user):
        """(support, raw scores): the features the fit starts from
        (:func:`ikdr.reduction.screen.moment_screen`). All of them without the
        screen, when its moments would exceed the memory budget, or when it
        keeps none or fewer than ``n_components``."""
        d = X.shape[1]
        everything = np.arange(d)
        if self.screen is None or not fits_memory(screen_bytes(d, y)):
            # (wide data: its per-class d x d moments would exceed the memory budget)
            return everything, None
        kept, raw = moment_screen(X, y)
        support = np.flatnonzero(kept > 0)
        if support.size == 0 or (q_user is not None and support.size < q_user):
            return everything, raw
        return support, raw

    def _auto_kernel(self, sample, labels, target, q, minimum):
        r"""sigma="auto": the Gaussian at the median distance of the projected start
        :math:`X W_0`, :math:`W_0` the top-q eigenvectors of :math:`\Phi_0`, which do
        not depend on sigma (for the Gaussian, :math:`\Phi_0 = -\sigma^{-2} X^T
        L(\Gamma) X`). Both are taken on the rows the bandwidth rules sample (all
        of them up to 3,000), in memory: the same numbers wherever the rows live."""
        gamma = supervised_gamma(labels, target=target)[0]
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

    def transform(self, X):
        """Project X onto the learned subspace: ``X @ components_``."""
        check_is_fitted(self)
        return project_data(self, X, self.components_)

    def fit_transform(self, X, y=None, **fit_params):
        if y is None:
            raise ValueError("ISM is supervised: fit_transform(X, y) needs y")
        return self.fit(X, y).transform(X)
