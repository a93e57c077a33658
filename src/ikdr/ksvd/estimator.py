"""Asymmetric kernel SVD (KSVD) and the asymmetric Nystrom method (ICML 2024).

G_ij = kappa(x_i, z_j) between two point sets: the rows and the columns of a
data matrix A, the source and target roles of a directed graph's nodes, or two
given sets X and Z. KSVD is the rank-r truncated SVD G = U Lambda V^T (the
coupled covariance eigenproblem reduces to it, Prop. 2.4-2.5 of the paper).

This module holds the estimator; :mod:`ikdr.ksvd.kernel_spec` resolves its
kernel and bandwidth; :mod:`ikdr.ksvd.blocks` evaluates blocks of G
(dense points, sparse graphs, double centering); :mod:`ikdr.ksvd.solvers` the
truncated SVDs (dense, ARPACK, randomized, asymmetric Nystrom with automatic
landmarks); :mod:`ikdr.ksvd.compat` the compatibility maps a0-a3;
:mod:`ikdr.ksvd.metrics` the accuracy measures; :mod:`ikdr.ksvd.bicluster`
biclustering.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..passes.dask_data import DaskData, as_data, is_dask_array, is_distributed
from .dask_blocks import KSVDBlocks, ksvd_transform, ksvd_transform_columns
from .kernel_spec import KERNELS, KernelSpec, fit_gamma, kernel_spec, make_blocks
from .. import kernels as _kernels
from .blocks import Centered, dense_kernel_matrix
from .compat import check_learned_target, compat_points, learn_map
from .metrics import SVDAccuracy, svd_accuracy
from .solvers import choose_solver, solve_ksvd
from .._utils.progress import check_verbose
from .._utils.validation import check_bandwidth, check_scale
from .._utils.validation import NewParametersOnLoad, SparseInputMixin, keep_state_on_error
from .._utils.validation import ComponentNamesMixin
from .._utils.typing import ArrayLike, RandomStateLike

COMPAT = ("pinv", "pca", "random", "learned")
SOLVERS = ("auto", "dense", "arpack", "randomized", "nystrom")


# ---------------------------------------------------------------- estimator
class KernelSVD(NewParametersOnLoad, SparseInputMixin, ComponentNamesMixin, TransformerMixin,
                BaseEstimator):
    r"""Asymmetric kernel SVD (KSVD) between two point sets.

    With :math:`G_{ij} = \kappa(x_i, z_j)` (n x m), KSVD is the rank-r
    truncated SVD :math:`G = U \Lambda V^T`, the solution of the coupled
    covariance eigenproblem (He et al., ICML 2024, Eq. 2-4, Prop. 2.4-2.5).
    ``fit(A)`` takes the rows :math:`x_i = A[i, :]` and the columns
    :math:`z_j = A[:, j]` of a data matrix (a directed graph's adjacency:
    out-links versus in-links); ``fit(X, Z)`` takes two point sets of the same
    dimension.

    Parameters
    ----------
    n_components : int, default=8
        Rank r, at most min(n, m).
    kernel : {"rbf", "sne", "polynomial", "linear"}, another kernel name, a kernel of :mod:`ikdr.kernels`, or callable, default="rbf"
        RBF :math:`\exp(-\|x - z\|^2/\gamma^2)` (the paper's form, no factor 2);
        SNE, the RBF normalised over the columns,
        :math:`\kappa(x_i, z_j) = e_{ij} / \sum_{j'} e_{ij'}` (rows of G sum
        to 1); polynomial :math:`(x^T z + 1)^p`; linear :math:`x^T z`.
        The same kernels as objects of the package's one kernel vocabulary:
        ``Gaussian(sigma)`` is "rbf" and ``SNE(sigma)`` is "sne" with
        :math:`\gamma = \sqrt{2}\sigma` (:math:`e^{-\|x-z\|^2/\gamma^2} =
        e^{-\|x-z\|^2/2\sigma^2}`; ``sigma="median"`` leaves the bandwidth to
        ``gamma``), ``Linear()``, ``Polynomial(p, c=1)``; any other kernel
        object (e.g. ``RelativeGaussian``) and ``kappa(X, Z) -> G`` callables
        are evaluated by their matrix (dense inputs only). The other
        estimators' kernel names are accepted too: ``"gaussian"`` is "rbf"
        (the same kernel and bandwidth rule), ``"poly"`` is "polynomial", and
        the other names of :data:`ikdr.kernels.KERNEL_NAMES` stand for their
        kernel objects.
    sigma : float or "median", default="median"
        RBF / SNE bandwidth, as :class:`ikdr.kernels.Gaussian`'s:
        :math:`\exp(-\|x - z\|^2/2\sigma^2)`, i.e. the paper's
        :math:`\exp(-\|x - z\|^2/\gamma^2)` with :math:`\gamma = \sqrt 2\,\sigma`.
        "median": the paper's rule, :math:`\gamma` the median of
        :math:`\|x_i - z_j\|` over (up to 1000 x 1000 seeded) pairs (the
        median of the positive distances if more than half are 0).
    degree : int, default=2
        Polynomial degree p.
    gamma : float or None, default=None
        Deprecated alias of the bandwidth in the paper's parametrisation,
        :math:`\gamma = \sqrt 2\,\sigma` (a ``FutureWarning`` when given; it
        overrides ``sigma``). It is neither scikit-learn's ``gamma`` nor the
        ISM paradigm matrix Gamma; use ``sigma``.
    center : bool, default=False
        Decompose :math:`H_n G H_m` (double centering with exact row and column
        means of G).
    compat : {"pinv", "pca", "random", "learned"} or None, default=None
        Compatibility map of Algorithm 1 for ``fit(A)`` with a rectangular A
        (N x M): the longer side is mapped to the dimension of the other
        (needed there; ignored for a square A, whose rows and columns already
        live in the same space, and with ``fit(X, Z)``, except ``"learned"``,
        which is an error there).
        ``"pinv"`` (a0) :math:`C = ((DD^T)^+ D)^T`, with D the mapped side
        (D = A when M > N), makes the mapped points :math:`DC = DD^T(DD^T)^+`,
        the identity whenever D has full row rank, the generic case when
        M > N (and, mirrored, when N > M): a0 collapses every mapped point to
        a unit vector, so that side keeps no geometry of its own and
        :math:`G_{ij}` becomes an entry-wise function of :math:`A_{ij}` and
        the other side's norms.
        ``"pca"`` (a1) projects on the top right singular vectors of D
        (uncentered). ``"random"`` (a2) is a Gaussian matrix scaled by
        :math:`1/\sqrt{k}` so squared norms are kept in expectation (the paper
        writes randn(M, N) unscaled). ``"learned"`` (a3) starts from a1 and
        optimises C on a downstream loss (needs ``fit(X, y)``; RBF and SNE
        kernels): the softmax cross-entropy of a linear head on the standardised
        row embeddings GV (:math:`H_N G H_M V` with ``center=True``),
        alternating an SVD of G (V then held fixed, as the paper's App. C.3)
        with an Adam step on C and the head (150 steps), backpropagated through
        the kernel in numpy (``ikdr.ksvd.compat.learned_objective``); the
        bandwidth (``gamma=None``: the median rule at the a1 start) is then
        kept. The same mechanism with a symmetric kernel is
        :func:`ikdr.learn_compat_map` (KernelPCA of XC with a learned C).
        Sparse A is densified by a map.
    solver : {"auto", "dense", "arpack", "randomized", "nystrom"}, default="auto"
        ``"dense"``: LAPACK on the built G (n m doubles). ``"arpack"``:
        :func:`scipy.sparse.linalg.svds`, on a matrix-free operator for sparse
        inputs (O(nnz(A A)) per product), else on the built G. ``"randomized"``:
        Halko et al. range finder, 10 oversamples, 4 power iterations.
        ``"nystrom"``: the asymmetric Nystrom method (Eq. 9). ``"auto"``:
        dense up to 4e6 entries of G when the dense SVD fits the memory budget
        (:func:`ikdr.set_memory_budget`), else ARPACK up to 1e8 entries (and
        at any size for sparse input, whose products are matrix-free) when
        ``n_components < min(n, m)``, else Nystrom (always Nystrom for a Dask
        array).
    n_landmarks : int, (int, int), "auto" or None, default=None
        Rows and columns sampled by Nystrom (uniformly, without replacement;
        for a square G and equal counts the same nodes on both sides, J = I);
        only with ``solver="nystrom"`` (given with another solver, including
        the one ``"auto"`` picks, it is a ValueError). None means "auto":
        landmarks in two disjoint halves of h rows and h columns each,
        starting at h = max(2r, r + 5) and doubling. At each step the two halves give
        two independent approximations; half their disagreement estimates the
        per-component error of the approximation on all 2h landmarks (the one
        kept): ``max(d_value / 2, (d_sine / 2)^2)`` with d_value the largest
        relative difference of a singular value and d_sine the largest sine
        of the principal angles between their left or right subspaces
        (clusters of nearly equal singular values compared as subspaces, as
        in :func:`ikdr.metrics.svd_accuracy`). A zero singular value of a
        landmark block (the landmarks do not resolve r components) counts as
        an infinite error. Growth stops when the estimate is at most ``tol``
        or at the budget: all rows and columns up to 4096 of each (with all
        of them the result is the exact SVD). If the budget ends first, a
        ``ConvergenceWarning`` gives the estimate, and the approximation on
        all the landmarks is returned; if the landmarks could not resolve all
        r components (a zero singular value, or an infinite estimate), the
        whole rank-r SVD is instead recomputed exactly (ARPACK on products
        by G, matrix-free for sparse input and by row blocks otherwise), so a
        zero singular value is never returned for a non-zero one.
    tol : float or None, default=None
        ``"arpack"``: svds tolerance (None: machine precision).
        ``"nystrom"`` with automatic landmarks: target per-component error
        (None: 1e-2, i.e. singular values within about 1% and subspace sines
        within about 0.1; see :meth:`ikdr.metrics.SVDAccuracy.meets`).
        Unused by the other solvers and by a given ``n_landmarks``.
    random_state : int, RandomState instance or None, default=None
        Landmarks, ARPACK start vector, randomized range, random compat map,
        median-heuristic sample.
    verbose : int, default=0
        >= 1 prints each step of automatic Nystrom landmarks (landmark counts
        and the estimated per-component error, as ``change``); the other solvers
        are single decompositions and print nothing.

    Attributes
    ----------
    singular_values_ : ndarray of shape (r,)
        The r largest singular values :math:`\Lambda` of G, descending.
    left_vectors_ : ndarray of shape (n, r)
        U, the left singular vectors of G (one row per row of the data).
    right_vectors_ : ndarray of shape (m, r)
        V, the right singular vectors of G (one row per column point).
    row_embedding_ : ndarray of shape (n, r)
        :math:`U\Lambda` (equals :math:`GV` for the exact solvers).
    column_embedding_ : ndarray of shape (m, r)
        :math:`V\Lambda` (equals :math:`G^TU` for the exact solvers).
    gamma_ : float or None
        Bandwidth used, in the paper's parametrisation (:math:`\sqrt 2\,\sigma`).
    sigma_ : float or None
        Bandwidth used, as :class:`ikdr.kernels.Gaussian`'s sigma.
    landmarks_ : tuple of ndarray or None
        Sampled (rows, columns) of the Nystrom solver (sorted), None for the
        other solvers.
    landmark_history_ : list
        ((n, m), estimated per-component error) per step of automatic
        landmarks (empty otherwise).
    accuracy_estimate_ : float or None
        The last estimate of automatic landmarks (0 when every row and column
        was a landmark), None otherwise (other solvers, a given ``n_landmarks``).
    compat_history_ : list of float or None
        ``compat="learned"``: the downstream loss before each Adam step of the
        map; None otherwise.
    solver_ : str
        The solver that ran (what ``"auto"`` chose).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame X (absent otherwise).
        ``get_feature_names_out()`` names the columns of ``transform``
        (``kernelsvd0``, ...).

    Notes
    -----
    Costs. Sparse input (a graph): G = diag(d) (u v^T + S) with S sparse on
    the pattern of :math:`P = XZ^T` (for ``fit(A)``, :math:`P = AA`), so
    SNE row normalisers, blocks and products are exact in O(nnz(P)) and G is
    never stored unless the dense solver runs (``solver="dense"``, or
    ``"auto"`` up to 4e6 entries: n m doubles, 3.1 GB at N = M = 19,717;
    ``"arpack"``, ``"randomized"`` and ``"nystrom"`` need
    O(nnz(P) + (N+M)r), Nystrom plus its landmark blocks).
    Dense input: blocks come from the C++ kernel panels; the SNE normalisers
    of all rows (needed by Nystrom's G[:, J]) cost one fused pass over all
    n m pairs, O(n m d) time but O(n) memory.

    New points. ``transform(X_new)`` returns :math:`\sum_j \kappa(x, z_j) V_j`
    (:math:`= G_{x,:} V`; for SNE the new row is normalised over all training
    columns). ``transform_columns(Z_new)`` returns :math:`\sum_i \kappa(x_i,
    z) U_i`; for SNE each training row keeps its training normaliser, so a new
    column does not renormalise the rows. With ``center=True`` the training
    column means (resp. row means) are subtracted first.

    References
    ----------
    Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos, J. A. K. Suykens,
    "Learning in feature spaces via coupled covariances: asymmetric kernel SVD
    and Nystrom method", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr import KernelSVD
    >>> A = np.random.default_rng(0).random((30, 30))
    >>> ksvd = KernelSVD(n_components=3, solver="dense").fit(A)
    >>> ksvd.row_embedding_.shape, ksvd.column_embedding_.shape
    ((30, 3), (30, 3))
    >>> bool(np.allclose(ksvd.transform(A[:2]), ksvd.row_embedding_[:2]))
    True
    """

    #: ikdr 0.1's behaviour for the parameters added since (its ``gamma`` still wins)
    _earlier_parameters = {"sigma": "median"}

    #: get_feature_names_out names the r components: ``kernelsvd0``, ...
    _output_columns_of = "right_vectors_"

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS) | set(_kernels.KERNEL_NAMES)), _kernels.Kernel,
                   callable],
        "sigma": [Interval(numbers.Real, 0, np.inf, closed="neither"), StrOptions({"median"})],
        "gamma": [Interval(numbers.Real, 0, np.inf, closed="neither"), None],
        "degree": [Interval(numbers.Integral, 1, None, closed="left")],
        "center": ["boolean"],
        "compat": [StrOptions(set(COMPAT)), None],
        "solver": [StrOptions(set(SOLVERS))],
        # an int, a (rows, columns) pair or "auto": checked with the data's shape
        "n_landmarks": "no_validation",
        "tol": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_components: int = 8, kernel: str = "rbf", sigma: float | str = "median",
                 degree: int = 2, center: bool = False, compat: str | None = None,
                 solver: str = "auto", n_landmarks: int | tuple[int, int] | str | None = None,
                 tol: float | None = None, random_state: RandomStateLike = None,
                 verbose: int = 0, gamma: float | None = None) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.sigma = sigma
        self.gamma = gamma
        self.degree = degree
        self.center = center
        self.compat = compat
        self.solver = solver
        self.n_landmarks = n_landmarks
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    # -- validation
    def _kernel_spec(self) -> KernelSpec:
        """The kernel of the parameters (:func:`ikdr.ksvd.kernel_spec.kernel_spec`)."""
        return kernel_spec(self.kernel, self.sigma, self.gamma, self.degree)

    def _check_params(self):
        self._validate_params()
        # a bandwidth whose square under- or overflows (the constraints allow any positive float)
        if not isinstance(self.sigma, str):
            check_bandwidth(self.sigma, "sigma")
        if self.gamma is not None:
            warnings.warn("KernelSVD(gamma=...) is deprecated and will be removed: pass the "
                          "bandwidth as sigma = gamma / sqrt(2), as for ikdr.kernels.Gaussian "
                          "(exp(-|x - z|^2 / 2 sigma^2) = exp(-|x - z|^2 / gamma^2))",
                          FutureWarning, stacklevel=3)
            check_bandwidth(self.gamma, "gamma")
        self._kernel_spec()
        check_verbose(self.verbose)

    @staticmethod
    def _check_points(X, name, accept_sparse=True):
        X = check_array(X, accept_sparse=("csr",) if accept_sparse else False, dtype=np.float64,
                        ensure_all_finite=True, ensure_min_samples=1, input_name=name)
        if sp.issparse(X):
            X = X.tocsr()
            X.sum_duplicates()
            check_scale(X.data, name)
        else:
            X = np.ascontiguousarray(X)
            check_scale(X, name)
        return X

    def _check_distributed(self, Z):
        """What a fit on dask rows supports: ``fit(X, Z)`` with the
        Nystrom solver, an int number of landmarks, uncentered, dense points."""
        if self.solver not in ("auto", "nystrom"):
            raise ValueError(f"KernelSVD on a dask array uses solver='nystrom' (the others need "
                             f"the whole n x m kernel matrix), got solver={self.solver!r}")
        if self.n_landmarks is None or isinstance(self.n_landmarks, str):
            raise ValueError("KernelSVD on a dask array needs an int n_landmarks (or a pair): "
                             "the automatic choice grows the landmark blocks on the client")
        if self.center:
            raise ValueError("center=True is not supported on a dask array (it needs the row "
                             "and column means of the whole kernel matrix)")
        if self.compat is not None:
            raise ValueError("compat maps are not supported on a dask array; pass fit(X, Z) "
                             "with points of the same dimension")
        if Z is None:
            raise ValueError("KernelSVD on a dask array needs the two point sets, fit(X, Z): "
                             "the columns of a row-chunked X are not row blocks")

    def _check_learned_target(self, A, Z, y):
        if Z is not None:
            raise ValueError("compat='learned' maps the rows or columns of one data matrix; "
                             "it cannot be used with fit(X, Z)")
        if self._kernel_spec().kind not in ("rbf", "sne"):
            raise ValueError(f"compat='learned' backpropagates through the RBF or SNE kernel; "
                             f"got kernel={self.kernel!r}")
        return check_learned_target(y, A.shape[0])

    def _learn_map(self, D, other, rows_mapped, C0, y, rng, out):
        """a3: optimise C from the a1 start (:func:`ikdr.ksvd.compat.learn_map`)."""
        X0 = np.ascontiguousarray(D @ C0)
        X0, Z0 = (X0, other) if rows_mapped else (other, X0)
        spec = self._kernel_spec()
        gamma = fit_gamma(spec, X0, Z0, rng)
        r = min(int(self.n_components), *X0.shape[:1], *Z0.shape[:1])
        C, history = learn_map(D, other, rows_mapped, C0, y, r,
                               (spec.kind, gamma,
                                dense_kernel_matrix(spec.kind, gamma, spec.degree)),
                               center=bool(self.center))
        out.update(history=history, gamma=gamma)
        return C

    # -- fitting
    @keep_state_on_error
    def fit(self, X: ArrayLike, Z: ArrayLike = None, y: None = None) -> KernelSVD:
        """Fit on the rows and columns of X, or on the point sets X and Z.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, m) or (n, d)
            The data matrix A (its rows and columns are the two sets), or the
            first point set when Z is given.
        Z : {array-like, sparse matrix} of shape (m, d) or None
            The second point set. In a Pipeline this slot receives the target
            y: a 1-D array here is taken for y (a point set is 2-D).
        y : array-like of shape (n,) or None
            Labels of the rows; used only by ``compat="learned"``, which needs
            them (one per row of X), ignored otherwise.

        Returns
        -------
        self

        Notes
        -----
        X may be a row-chunked ``dask.array.Array`` with ``fit(X, Z)``,
        ``solver="nystrom"`` and an int ``n_landmarks``: the landmark columns
        ``G[:, J] v`` are then mapped over X's row blocks as Dask tasks and Z is
        shipped once to each worker (:mod:`ikdr.distributed`, :doc:`/distributed`).
        """
        self._check_params()
        # the column names of a DataFrame X (``feature_names_in_``); X is checked below
        validate_data(self, X, skip_check_array=True)
        rng = check_random_state(self.random_state)
        A, Xp, Zp, learned = self._fit_points(X, Z, y, rng)
        n, m = Xp.shape[0], Zp.shape[0]
        r = int(self.n_components)
        if r > min(n, m):
            raise ValueError(f"n_components={r} is larger than min(n, m) = {min(n, m)}")
        self._fit_bandwidth(Xp, Zp, learned, rng)
        blocks = make_blocks(self._kernel_spec(), Xp, Zp, self.gamma_)
        if self.center:
            blocks = Centered(blocks)
        self._blocks = blocks
        solver = choose_solver(self.solver, n, m, r, blocks, isinstance(Xp, DaskData))
        if solver == "arpack" and r >= min(n, m):
            raise ValueError(f"solver='arpack' needs n_components < min(n, m) = {min(n, m)}")
        svd = solve_ksvd(blocks, solver, r, self.n_landmarks, self.tol, rng, self.verbose)
        self.solver_ = solver
        self.landmarks_ = svd.landmarks
        self.landmark_history_ = svd.history
        self.accuracy_estimate_ = svd.estimate
        self.singular_values_ = svd.s
        self.left_vectors_ = svd.U
        self.right_vectors_ = svd.V
        self.row_embedding_ = svd.U * svd.s
        self.column_embedding_ = svd.V * svd.s
        self.n_features_in_ = A.shape[1]
        # widths of new rows / new columns before any compat map
        self._n_in_rows = A.shape[1]
        self._n_in_cols = A.shape[0] if Z is None else A.shape[1]
        self._n_rows, self._n_cols = n, m
        return self

    def _fit_points(self, X, Z, y, rng):
        """The checked data A and the two point sets of the fit: ``(A, X, Z, learned)``.

        Z None: the rows and the columns of A (a compat map first when their
        dimensions differ; ``learned`` then holds what compat="learned" found);
        a 1-D Z is the target a Pipeline passes (y). Sets ``_compat_map`` and
        ``compat_history_``.
        """
        self._compat_map = None
        self.compat_history_ = None
        learned = {}
        if Z is not None and not sp.issparse(Z) and \
                (Z if is_dask_array(Z) else np.asarray(Z)).ndim == 1:
            y = Z if y is None else y  # a target passed by Pipeline / GridSearchCV
            Z = None
        if is_distributed(X):
            self._check_distributed(Z)
            A = as_data(X)
        else:
            A = self._check_points(X, "X")
        if is_dask_array(Z):
            Z = Z.compute()       # the column set is shipped to every worker: it must fit in memory
        if self.compat == "learned" and (Z is not None or A.shape[0] != A.shape[1]):
            y = self._check_learned_target(A, Z, y)  # a square A needs no map
        if Z is not None:
            Zp = self._check_points(Z, "Z")
            if A.shape[1] != Zp.shape[1]:
                raise ValueError(f"X and Z must have the same number of features (mismatched "
                                 f"dimensions): X has {A.shape[1]}, Z has {Zp.shape[1]}")
            return A, A, Zp, learned
        N, M = A.shape
        if N == M:
            return A, A, (A.T.tocsr() if sp.issparse(A) else np.ascontiguousarray(A.T)), learned
        if self.compat is None:
            raise ValueError(
                f"X has {N} rows and {M} columns: its rows live in R^{M} and its columns "
                f"in R^{N}, so they cannot be compared; pass compat='pinv', 'pca' or "
                "'random' (mismatched dimensions)")
        Xp, Zp, C, rows_mapped = compat_points(
            A, self.compat, rng, learn=lambda *a: self._learn_map(*a, y, rng, learned))
        self._compat_map = (C, rows_mapped)
        self.compat_history_ = learned.get("history")
        return A, Xp, Zp, learned

    def _fit_bandwidth(self, X, Z, learned, rng):
        """``gamma_`` and ``sigma_``: the bandwidth a learned compat map was fitted
        with, the kernel's or the parameter's, or the median rule between X and Z;
        None for kernels without one."""
        self.gamma_ = learned["gamma"] if "gamma" in learned else \
            fit_gamma(self._kernel_spec(), X, Z, rng)
        self.sigma_ = None if self.gamma_ is None else self.gamma_ / np.sqrt(2.0)

    def fit_transform(self, X: ArrayLike, Z: ArrayLike = None, y: None = None) -> np.ndarray:
        """Fit and return ``row_embedding_`` (n x r)."""
        return self.fit(X, Z, y).row_embedding_

    # -- new points
    def _base(self):
        return self._blocks.base if isinstance(self._blocks, Centered) else self._blocks

    def _new_points(self, X, side):
        X = self._check_points(X, "X")
        base = self._base()
        ref = base.Z if side == "rows" else base.X
        expected = self._n_in_rows if side == "rows" else self._n_in_cols
        if X.shape[1] != expected:
            raise ValueError(f"X has {X.shape[1]} features, but KernelSVD is expecting {expected} "
                             f"features as input ({'rows' if side == 'rows' else 'columns'})")
        if self._compat_map is not None:
            C, rows_mapped = self._compat_map
            if rows_mapped == (side == "rows"):
                X = X.toarray() if sp.issparse(X) else X
                if X.shape[1] != C.shape[0]:
                    raise ValueError(f"X has {X.shape[1]} features, expected {C.shape[0]}")
                X = np.ascontiguousarray(X @ C)
        if X.shape[1] != ref.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but KernelSVD was fitted with "
                             f"{ref.shape[1]}")
        if sp.issparse(ref) and not sp.issparse(X):
            X = sp.csr_matrix(X)
        elif not sp.issparse(ref) and sp.issparse(X):
            X = np.ascontiguousarray(X.toarray())
        return X

    def transform(self, X: ArrayLike) -> ArrayLike:
        r"""Row embeddings of new rows: :math:`\sum_j \kappa(x, z_j) V_j` (n_new x r).

        For ``fit(A)`` a new row lives where A's rows live (m features, or
        the unmapped dimension with a compat map); for ``fit(X, Z)`` like X.
        """
        check_is_fitted(self)
        if is_dask_array(X):          # a lazy map over row blocks
            return ksvd_transform(self, X)
        X = self._new_points(X, "rows")
        G = self._base().new_rows(X)
        if isinstance(self._blocks, Centered):
            G = G - self._blocks.col_mean[None, :]
        return G @ self.right_vectors_

    def transform_columns(self, Z: ArrayLike) -> ArrayLike:
        r"""Column embeddings of new columns: :math:`\sum_i \kappa(x_i, z) U_i` (m_new x r).

        ``Z`` holds one new column per row (a new node's in-links for a graph,
        i.e. ``A_new[:, j]`` transposed; a new point of the Z set for ``fit(X, Z)``).
        """
        check_is_fitted(self)
        if isinstance(self._base(), KSVDBlocks):   # fitted on dask rows
            return ksvd_transform_columns(self, Z)
        Z = self._new_points(Z, "columns")
        G = self._base().new_columns(Z)
        if isinstance(self._blocks, Centered):
            G = G - self._blocks.row_mean[:, None]
        return G.T @ self.left_vectors_

    def accuracy(self, U: ArrayLike, s: ArrayLike, V: ArrayLike) -> SVDAccuracy:
        """Per-component accuracy of this fit against a reference SVD (U, s, V):
        :func:`ikdr.metrics.svd_accuracy` (relative singular value errors,
        subspace sines, and the paper's eta beside)."""
        check_is_fitted(self)
        return svd_accuracy(U, s, V, self.left_vectors_, self.singular_values_,
                            self.right_vectors_)
