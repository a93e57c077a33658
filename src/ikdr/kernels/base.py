r"""The kernel base class, conic combinations and the low-rank parts of a landmark pass.

:class:`Kernel` holds what every member of the ISM family shares: its kernel
matrix, the fused passes (products, gradient products, Phi, the objective)
through the native door, :math:`\Phi_0`, and its capabilities (an affinity,
needs all rows, random features, low-rank parts). The members themselves are
in :mod:`ikdr.kernels.family`.
"""
from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import numpy as np

from .. import _native
from .._config import require_memory
from .._native import KernelTerm
from .._utils.validation import check_finite_result, check_matrix, largest_magnitude, plain
from .._utils.typing import ArrayLike, RandomStateLike

__all__ = ["Kernel", "ConicKernel", "KernelLike", "LowRankPart", "FLOATS", "PANEL_FLOPS",
           "matrix_of", "projected_points",
           "affine_parts", "ones_rows", "ones_core", "nystrom_part"]


@dataclass(frozen=True)
class LowRankPart:
    r"""One low-rank factor :math:`C S C^T` of a member's matrices in a landmark pass.

    ``uses`` says what the factor stands for, as ``(role, weight)`` pairs:
    ``"value"`` (the kernel itself, the objective), ``"laplacian"`` (a Phi
    term :math:`X^T L(\Gamma \circ M) X`) or ``"inner"`` (a Phi term
    :math:`X^T (\Gamma \circ M) X`). The factor is one of

    * a Nystrom factor of the matrix ``matrix(A, B, n_threads)`` at the landmarks
      (with ``random_features_scale``, the bandwidth of a Gaussian whose random
      Fourier features may replace it);
    * an exact finite-rank factor: rows ``rows(Z_b)`` and core ``core(q)``.

    A Nystrom factor's matrix is also given as the core's kernel ``terms``
    (``negative_reciprocal``: the matrix is -1 over theirs), which the native
    landmark sweeps (:func:`ikdr._native.landmark_first_sweep`) evaluate block by block.

    Attributes
    ----------
    uses : tuple of (str, float)
        What the factor stands for: ``(role, weight)`` pairs, role one of
        ``"value"``, ``"laplacian"``, ``"inner"``.
    matrix : callable or None
        ``matrix(A, B, n_threads)``: the member's matrix between two point sets,
        for a Nystrom factor.
    random_features_scale : float or None
        The Gaussian bandwidth whose random Fourier features may replace the
        Nystrom factor; None when they may not.
    rows : callable or None
        ``rows(Z_b)``: the rows of an exact finite-rank factor for a block of points.
    core : callable or None
        ``core(q)``: the core S of an exact finite-rank factor.
    terms : tuple or None
        The Nystrom factor's matrix as the compiled core's kernel terms.
    negative_reciprocal : bool
        Whether the matrix is -1 over the terms' matrix.
    """

    uses: tuple
    matrix: Optional[Callable] = None
    random_features_scale: Optional[float] = None
    rows: Optional[Callable] = None
    core: Optional[Callable] = None
    terms: Optional[tuple] = None
    negative_reciprocal: bool = False


def projected_points(X, W, *, n_threads=None):
    """The points XW (n x q, C order, in X's precision: float32 or float64) on ikdr's threads.

    The core's GEMM in row chunks, one single-threaded BLAS call each, rather
    than numpy's ``X @ W``: a threaded BLAS leaves its workers spinning after
    the call, and the pass that reads XW next loses a core to them, up to
    doubling a small pass (``benchmarks/bench_call_overhead.py``). A W that does not
    fit X's columns, or that is not finite, raises a ValueError.
    """
    W = np.asarray(W)
    if W.ndim != 2 or W.shape[0] != X.shape[1]:
        raise ValueError(f"W must have one row per column of X ({X.shape[1]}), got shape "
                         f"{W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W contains NaN or infinite values")
    return _native.matmul(X, W, n_threads=n_threads)


def _finite_points(Z):
    """The points of a pass, C-contiguous, or a ValueError when any is NaN or
    infinite: the core's tiles do not propagate NaN, and it returned a finite,
    wrong sum for such points (an objective of 0 for all-NaN points)."""
    Z = np.ascontiguousarray(Z)
    if not np.isfinite(largest_magnitude(Z)):
        raise ValueError("the points Z contain NaN or infinite values")
    return Z


def ones_rows(Zb):
    return np.ones((Zb.shape[0], 1), dtype=Zb.dtype)


def ones_core(q):
    return np.ones((1, 1))


#: a kernel by name (``"gaussian"``, ``"polynomial"``, ...) or a :class:`Kernel`
KernelLike = Union[str, "Kernel"]


class Kernel:
    """Base class of the ISM kernel family (see the module docstring)."""

    #: whether Phi depends on W (False: one ISM step solves the problem)
    depends_on_w = True
    #: whether the member's values are non-negative by construction, so that
    #: the degrees ``K 1`` are positive and the spectral normalisation applies
    _nonnegative = False
    #: whether the member's parameters need every row (per-point bandwidths from
    #: each point's neighbours): it cannot be fitted on a sample of rows, so
    #: data on a cluster or read in landmark blocks cannot use it
    _needs_all_rows = False
    #: whether random Fourier features (or an exact factor) can stand for the member
    _random_features = False
    #: the member's one global bandwidth (a Gaussian's sigma), None for others
    _global_sigma = None
    #: a Gaussian's bandwidth rule while it is unresolved (see :attr:`bandwidth_rule`)
    _gaussian_rule = None

    # -- capabilities --------------------------------------------------------
    @property
    def is_affinity(self):
        """True when every member with positive weight is non-negative by
        construction (Gaussian, relative Gaussian, even-degree polynomial with
        c >= 0): its degrees are positive and it can cluster by itself."""
        return all(k._nonnegative for w, k in self.members() if w > 0)

    @property
    def supports_random_features(self):
        """True when every member has random Fourier features or an exact factor."""
        return all(k._random_features for w, k in self.members() if w > 0)

    def median_scale_gaussian(self):
        """One global Gaussian at the median of a local-scaling kernel's fitted
        per-point bandwidths (:func:`ikdr.spectral.median_scale_gaussian`); a
        TypeError for kernels without local bandwidths."""
        raise TypeError("median_scale_gaussian needs a fitted RelativeGaussian kernel, got "
                        f"{self!r}")

    def feature_map(self, Y):
        """Explicit features F with :math:`K(Y, Y) = FF^T` when the kernel has a finite
        exact one (the linear kernel: Y itself), else None."""
        return None

    def block_spec(self):
        """How the asymmetric kernel SVD's tiled blocks compute this kernel:
        ``(kind, sigma, degree)`` with kind "rbf", "sne", "linear" or
        "polynomial" (sigma None while it is a rule such as "median"), or None
        for a kernel evaluated by its :meth:`matrix` (dense inputs only)."""
        return None

    def low_rank_parts(self, weight):
        """The :class:`LowRankPart` factors of this member (weight ``weight``) in a
        landmark pass (:mod:`ikdr.passes.factors`); a ValueError for a member
        that has none."""
        raise ValueError(f"no landmark approximation for the kernel member {self!r}")

    @property
    def bandwidth_rule(self):
        """The data rule ("median") of a lone Gaussian kernel's bandwidth, None for
        any other kernel or a fixed bandwidth: the kernels whose bandwidth ISM's
        ``sigma="auto"`` takes from the projected start instead."""
        members = self.members()
        return members[0][1]._gaussian_rule if len(members) == 1 else None

    @property
    def gaussian_sigma(self):
        """The bandwidth of the first Gaussian member (None without one): what the
        estimators report as ``sigma_``."""
        sigmas = [k._global_sigma for _, k in self.members() if k._global_sigma is not None]
        return sigmas[0] if sigmas else None

    @property
    def needs_all_rows(self):
        """True when a member's fitted parameters belong to every row (local
        bandwidths), so the kernel cannot be fitted on a sample of rows."""
        return any(k._needs_all_rows for _, k in self.members())

    # -- composition -------------------------------------------------------
    def members(self):
        """The conic combination as a list of ``(weight, member)`` pairs."""
        return [(1.0, self)]

    def __add__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return ConicKernel(self.members() + other.members())

    __radd__ = __add__

    def __mul__(self, weight):
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            return NotImplemented
        weight = float(weight)
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"conic combinations need non-negative finite weights, got {weight}")
        return ConicKernel([(weight * w, k) for w, k in self.members()])

    __rmul__ = __mul__

    # -- parameters fitted to data ------------------------------------------
    def fit(self, X: ArrayLike, random_state: RandomStateLike = None) -> Kernel:
        """Return a copy whose data-dependent parameters (``sigma="median"``,
        per-point bandwidths) are fixed from the training data ``X``."""
        return copy.copy(self)

    def _check_fitted(self):
        pass

    # -- evaluation ------------------------------------------------------------
    def _term(self, weight, rows, cols) -> KernelTerm:
        raise NotImplementedError

    def _phi0_parts(self, weight, X):
        """``(coef_inner, coef_laplacian, row_weights)`` of this member at weight ``weight``:
        Phi_0 = coef_inner X^T Gamma X + coef_laplacian X^T L(D_w Gamma D_w) X with
        D_w = diag(row_weights), or the identity when row_weights is None. ``X``, the
        training rows, is read only by members with per-point bandwidths; it is None
        where the caller wants the coefficients alone (:meth:`phi0_coefficients`)."""
        raise NotImplementedError

    def _terms(self, rows, cols=None):
        cols = rows if cols is None else cols
        return [k._term(w, rows, cols) for w, k in self.members() if w > 0]

    def matrix(self, A, B=None, *, n_threads=None):
        """Kernel matrix :math:`K_{ij} = k(a_i, b_j)` (similarity form), shape (n_a, n_b)."""
        A = check_matrix(A, "A", min_samples=1, dtype=FLOATS)
        kernel = self if self.is_resolved else self.fit(A)
        if B is None:
            B = A
        else:
            B = check_matrix(B, "B", min_samples=1, dtype=A.dtype)
            if B.shape[1] != A.shape[1]:
                raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}")
        require_memory(A.shape[0] * B.shape[0] * A.dtype.itemsize,
                       f"a {A.shape[0]} x {B.shape[0]} kernel matrix")
        K = _native.kernel_matrix(A, B, kernel._terms(A, B), n_threads=n_threads)
        return check_finite_result(K, f"the kernel matrix of {kernel!r}")

    def product(self, Z, R=None, gamma=None, *, n_threads=None):
        r""":math:`(\Gamma \circ K_Z) R` and the row sums :math:`(\Gamma \circ K_Z) 1`.

        One fused pass over the kernel of the points Z (n x k) with itself;
        Gamma (an :class:`ikdr.gamma.Gamma`) defaults to all ones, so
        ``kernel.product(Z, R)`` is :math:`K R` with the degrees :math:`K 1`.
        The n x n matrices are formed tile by tile and never stored.

        Returns
        -------
        KR : ndarray (n, k) or None (when R is None), in Z's dtype
        row_sums : ndarray (n,) float64
        """
        self._check_fitted()
        Z = _finite_points(Z)
        out = _native.fused_product(Z, self._terms(Z), gamma=_gamma_arrays(gamma, Z.dtype),
                                    rhs=R, n_threads=n_threads)
        return out.product, out.value_sums.astype(np.float64)

    def degrees(self, Z, *, n_threads=None):
        """Degrees :math:`K 1` of the kernel on the points Z (n,), without forming K."""
        return self.product(Z, n_threads=n_threads)[1]

    def gradient_product(self, Z, R, gamma=None, *, n_threads=None):
        r""":math:`G R` for the Phi weights G of Z, and :math:`\mathrm{Tr}(\Gamma K_Z)`, in one pass.

        :math:`G = \Gamma \circ A + 2 L(\Gamma \circ B)` with A (B) the
        derivative :math:`f'(\beta_{ij})` of the inner-product (distance)
        members and :math:`L(M) = \mathrm{diag}(M 1) - M`; then
        :math:`\Phi(W) = X^T G(XW) X` and, for points Z
        that are free variables (KNet), :math:`\nabla_Z \mathrm{Tr}(\Gamma K_Z) = 2 G Z`.

        Returns
        -------
        GR : ndarray (n, k), in Z's dtype
        objective : float, :math:`\mathrm{Tr}(\Gamma K_Z)`
        """
        self._check_fitted()
        Z = _finite_points(Z)
        out = _native.fused_product(Z, self._terms(Z), gamma=_gamma_arrays(gamma, Z.dtype),
                                    gradient=True, rhs=R, n_threads=n_threads)
        objective = float(np.sum(out.value_sums, dtype=np.float64))
        return out.product, objective

    def pair_product(self, Z_rows, Z_cols, R_cols, gamma_rows=None, gamma_cols=None, *,
                     gradient=False, R_rows=None, n_threads=None):
        r"""One block pair of a pass: the rows I and columns J of :meth:`product`
        (``gradient=False``) or :meth:`gradient_product` (``gradient=True``).

        ``Z_rows`` (n_I x k) and ``Z_cols`` (n_J x k) are two row blocks of the
        points, ``R_cols`` the right-hand side's rows of block J, ``gamma_rows``
        and ``gamma_cols`` the factored Gammas restricted to the two blocks
        (:meth:`ikdr.gamma.Gamma.rows`), and ``R_rows`` (gradient mode) the
        right-hand side's rows of block I, which the Laplacian's diagonal
        multiplies. Summed over the column blocks J, the products equal the
        single-set pass's rows I, and so do the row sums; this is what a
        distributed pass maps over block pairs.

        Returns
        -------
        product : ndarray (n_I, k_R) in Z's dtype
        row_sums : ndarray (n_I,) float64, the rows of :math:`\Gamma \circ K` summed over J
        """
        self._check_fitted()
        if self.needs_all_rows:
            raise ValueError("block-pair products need bandwidths of the whole data set; the "
                             "RelativeGaussian kernel is not supported here")
        Z_rows = np.ascontiguousarray(Z_rows)
        rows = _gamma_arrays(gamma_rows, Z_rows.dtype, self_pass=False)
        cols = _gamma_arrays(gamma_cols, Z_rows.dtype, self_pass=False)
        if (rows.dense is not None) or (cols.dense is not None):
            raise ValueError("block-pair products need a factored Gamma (or none)")
        if (rows.factor is None) != (cols.factor is None):
            raise ValueError("give the Gamma of both blocks, or of neither")
        out = _native.fused_product(Z_rows, self._terms(Z_rows, Z_cols), gamma=rows,
                                    gradient=gradient, rhs=R_cols, columns=Z_cols,
                                    gamma_columns=cols.factor, rhs_rows=R_rows,
                                    n_threads=n_threads)
        return out.product, out.value_sums.astype(np.float64)

    def phi_product(self, X, W, gamma, V=None, *, n_threads=None):
        r""":math:`\Phi(W) V` (d x k) and the objective :math:`\mathrm{Tr}(\Gamma K_{XW})`, one pass.

        With ``V=None`` the dense :math:`\Phi(W)` (d x d, symmetric). A thin V
        (k columns) costs a pass with k right-hand sides instead of d; from
        k = d/2 the core forms the dense Phi by block pairs and returns
        :math:`\Phi V`, which then costs less.
        Computed in X's dtype (float32 or float64), returned in float64.
        """
        self._check_fitted()
        X = np.ascontiguousarray(X)
        W = np.asarray(W, dtype=X.dtype)
        # the terms read the points only for per-point bandwidths (the relative
        # Gaussian's, of the projected points XW); the core forms XW itself
        points = _native.matmul(X, W, n_threads=n_threads) if self.needs_all_rows else None
        result = _native.phi_product(X, W, None if V is None else np.asarray(V, dtype=X.dtype),
                                     self._terms(points), gamma=_gamma_arrays(gamma, X.dtype),
                                     n_threads=n_threads)
        objective = float(result.value_sums.sum(dtype=np.float64))
        out = np.asarray(result.product, dtype=np.float64)
        if V is None:
            out = 0.5 * (out + out.T)
        check_finite_result(out, lambda: f"Phi(W) of the kernel {self!r}")
        return out, objective

    def phi(self, X, W, gamma, *, n_threads=None):
        r"""The ISM surrogate :math:`\Phi(W)` (d x d) for the objective :math:`\mathrm{Tr}(\Gamma K_{XW})`.

        :math:`\nabla_W \mathrm{Tr}(\Gamma K_{XW}) = 2 \Phi(W) W` (ISM paper,
        Eq. 6-7 with the constants kept). Computed by the fused C++ product:
        :math:`\Psi = \Gamma \circ f'(\beta)` is formed one tile at a time and
        never stored.
        """
        return self.phi_product(X, W, gamma, n_threads=n_threads)[0]

    def phi0(self, X, gamma):
        r""":math:`\Phi_0 = \Phi(W=0)`, the W-free start (ISM paper, Theorem 3)."""
        d = X.shape[1]
        out = np.zeros((d, d), dtype=np.float64)
        for inner, lap, row_weights in self.phi0_terms(X):
            if inner:
                out += inner * gamma.quadratic(X)
            if lap:
                out += lap * gamma.laplacian_quadratic(X, row_weights)
        return check_finite_result(0.5 * (out + out.T), lambda: f"Phi_0 of the kernel {self!r}")

    def phi0_terms(self, X):
        r""":math:`\Phi_0` term by term: ``[(a, b, w)]``, one per member of positive weight,
        with :math:`\Phi_0 = \sum a X^T\Gamma X + b X^T L(D_w\Gamma D_w) X`,
        :math:`D_w = \mathrm{diag}(w)` (w None: the identity). X, the training
        rows, is read only by members with per-point bandwidths; passes that never
        form the d x d :math:`\Phi_0` (sparse data with many features) build it
        from these terms."""
        self._check_fitted()
        return [k._phi0_parts(w, X) for w, k in self.members() if w > 0]

    def phi0_coefficients(self):
        r"""``(a, b)`` with :math:`\Phi_0 = a X^T\Gamma X + b X^T L(\Gamma) X`.

        The W-free start as two numbers, for passes that assemble it from a
        factored Gamma block by block (:mod:`ikdr.distributed`). The
        RelativeGaussian kernel weights the rows by local bandwidths and has
        no such form (ValueError).
        """
        self._check_fitted()
        inner = laplacian = 0.0
        for w, k in self.members():
            if w <= 0:
                continue
            if k._needs_all_rows:
                raise ValueError("the RelativeGaussian kernel's Phi_0 has per-point weights; "
                                 "it has no (a, b) form")
            a, b, _ = k._phi0_parts(w, None)
            inner, laplacian = inner + a, laplacian + b
        return inner, laplacian

    def objective(self, X, W, gamma, *, n_threads=None):
        r""":math:`\mathrm{Tr}(\Gamma K_{XW})` (ISM paper, Eq. 1), without forming K (W=None: K of X itself)."""
        X = np.ascontiguousarray(X)
        Z = X if W is None else projected_points(X, W, n_threads=n_threads)
        _, row_sums = self.product(Z, None, gamma, n_threads=n_threads)
        return float(check_finite_result(np.sum(row_sums, dtype=np.float64),
                                         lambda: f"Tr(Gamma K) of the kernel {self!r}"))

    @property
    def is_resolved(self):
        """Whether every data-dependent parameter is set (the kernel is fitted)."""
        return all(k._is_resolved_member() for _, k in self.members())

    def _is_resolved_member(self):
        return True

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__.keys() == other.__dict__.keys() and all(
            _same(self.__dict__[k], other.__dict__[k]) for k in self.__dict__)

    def __hash__(self):
        return hash(type(self).__name__)

    def get_params(self, deep=True):
        return {k: v for k, v in self.__dict__.items() if not k.endswith("_")}

    def __repr__(self):
        params = ", ".join(f"{k}={plain(v)!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


FLOATS = (np.float64, np.float32)
#: flops to form one kernel-panel entry of a fused pass (Gram row, Gamma, exp, combine;
#: measured by benchmarks/bench_core_rate.py): the cost models of the passes use it
PANEL_FLOPS = 60


def matrix_of(kernel):
    """``(A, B, n_threads) -> kernel.matrix(A, B)``, the Nystrom factor's matrix."""
    def matrix(A, B, n_threads):
        return kernel.matrix(A, B, n_threads=n_threads)
    return matrix


def nystrom_part(uses, kernel, *, negative_reciprocal=False, **extra):
    """The Nystrom :class:`LowRankPart` of a fitted member ``kernel``: its matrix
    (``-1 / kernel.matrix`` with ``negative_reciprocal``) and the same as core terms."""
    if negative_reciprocal:
        def matrix(A, B, n_threads):
            return -1.0 / kernel.matrix(A, B, n_threads=n_threads)
    else:
        matrix = matrix_of(kernel)
    return LowRankPart(tuple(uses), matrix=matrix, terms=(kernel._term(1.0, None, None),),
                       negative_reciprocal=negative_reciprocal, **extra)


def affine_parts(weight, c):
    """(beta + c): exact rows [z, 1] with core diag(1, ..., 1, c); derivative 1."""
    def rows(Zb):
        return np.hstack([Zb, np.ones((Zb.shape[0], 1), Zb.dtype)])

    def core(q):
        return np.diag(np.r_[np.ones(q), c])
    return [LowRankPart((("value", weight),), rows=rows, core=core),
            LowRankPart((("inner", weight),), rows=ones_rows, core=ones_core)]


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _gamma_arrays(gamma, dtype, *, self_pass=True):
    """Gamma (an ikdr.gamma.Gamma or None for all ones) as the native door takes it;
    with its table (made once per Gamma and dtype) for passes of its points with
    themselves (``self_pass``)."""
    if gamma is None:
        return _native.GammaArrays()
    dtype = _native.core_dtype(dtype)
    factor, scale, dense = gamma.arrays(dtype)
    table = None
    if self_pass and factor is not None:
        table = gamma.derived(("gamma_table", dtype.str),
                              lambda: _native.gamma_table(factor, scale, dtype))
    return _native.GammaArrays(factor, scale, dense, table=table)


class ConicKernel(Kernel):
    r"""A conic combination :math:`\sum_m \mu_m k_m` of ISM kernels, :math:`\mu_m \ge 0`.

    :math:`\Phi = \sum_m \mu_m \Phi_m` (ISM paper, Corollary 1). Written
    ``0.5 * Gaussian() + 2 * Polynomial()``.
    """

    def __init__(self, components: Sequence[tuple[float, Kernel]]) -> None:
        # Stored as given (scikit-learn's clone checks identity); members()
        # gives the validated (float weight, kernel) pairs.
        self.components = components
        self.members()

    def members(self):
        comps = []
        for w, k in self.components:
            if not isinstance(k, Kernel) or isinstance(k, ConicKernel):
                raise TypeError("ConicKernel components must be (weight, member kernel) pairs")
            w = float(w)
            if not np.isfinite(w) or w < 0:
                raise ValueError(f"conic combinations need non-negative finite weights, got {w}")
            comps.append((w, k))
        if not comps:
            raise ValueError("a conic combination needs at least one kernel")
        return comps

    @property
    def depends_on_w(self):
        """Whether Phi depends on W: when any member with a positive weight does."""
        return any(k.depends_on_w for w, k in self.members() if w > 0)

    def fit(self, X: ArrayLike, random_state: RandomStateLike = None) -> Kernel:
        return ConicKernel([(w, k.fit(X, random_state)) for w, k in self.members()])

    def _check_fitted(self):
        for _, k in self.members():
            k._check_fitted()

    def __eq__(self, other):
        a, b = self.members(), other.members() if isinstance(other, ConicKernel) else None
        return b is not None and len(a) == len(b) and all(
            w1 == w2 and k1 == k2 for (w1, k1), (w2, k2) in zip(a, b))

    __hash__ = Kernel.__hash__

    def __repr__(self):
        return " + ".join(f"{plain(w)!r} * {k!r}" for w, k in self.members())
