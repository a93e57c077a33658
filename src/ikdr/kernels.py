r"""The ISM family of kernels and their conic combinations.

A kernel belongs to the ISM family when :math:`k(x_i, x_j) = f(\beta)` with
:math:`\beta = a^T W W^T b` (ISM paper, Definition 1; DESIGN.md section 2):

================  =====================================  ====================
kernel            similarity :math:`k` used by ikdr      :math:`a, b`
================  =====================================  ====================
Linear            :math:`\beta`                          :math:`x_i, x_j`
Polynomial        :math:`(\beta + c)^p`                  :math:`x_i, x_j`
Gaussian          :math:`\exp(-\beta / 2\sigma^2)`       :math:`x_i - x_j`
RelativeGaussian  :math:`\exp(-\beta / 2\sigma_i\sigma_j)` :math:`x_i - x_j`
Squared           :math:`-\beta`                         :math:`x_i - x_j`
Multiquadratic    :math:`-\sqrt{\beta + c^2}`            :math:`x_i - x_j`
================  =====================================  ====================

The squared and multiquadric members are used in their *similarity* form
(negated): read literally, maximising ``Tr(Gamma K)`` with the distance-like
forms returns the null space of ``X^T Gamma X`` or pushes classes together.
The papers' tables (wine 96.6% / 97.2%) were produced with the similarity
forms, which is what ikdr optimises.

Every kernel gives its kernel matrix, the ISM surrogate
:math:`\Phi(W) = \tfrac12\sum_{ij}\Gamma_{ij} f'(\beta_{ij}) A_{ij}` with
:math:`\nabla_W \mathrm{Tr}(\Gamma K_{XW}) = 2\Phi W` exactly (all constants
kept), and :math:`\Phi_0 = \Phi(W = 0)`, the Taylor start of the papers.
Conic combinations ``0.5 * Gaussian() + 2 * Polynomial()`` have
:math:`\Phi = \sum_m \mu_m \Phi_m` (ISM paper, Corollary 1).
"""
from __future__ import annotations

import copy
import numbers
from typing import Any, Sequence, TypeVar

import numpy as np

from . import _native
from ._config import require_memory
from ._native import KernelTerm, TermKind
from ._validation import check_bandwidth, check_finite_result, check_positive
from ._typing import ArrayLike, KernelLike, RandomStateLike, SigmaLike

__all__ = [
    "Kernel", "Linear", "Polynomial", "Gaussian", "RelativeGaussian", "Squared",
    "Multiquadratic", "ConicKernel", "SNE", "make_kernel", "median_sigma", "sne_row_normalisers",
    "sne_matrix", "lowrank_plus_sparse",
]

_MEDIAN_SUBSAMPLE = 3000


def median_sigma(X: ArrayLike, Z: ArrayLike | None = None, *,
                 max_samples: int = _MEDIAN_SUBSAMPLE,
                 random_state: RandomStateLike = None) -> float:
    r"""Median heuristic bandwidth: the median of :math:`\|x_i - x_j\|` over ``i < j``.

    Above ``max_samples`` rows (default 3,000, i.e. 4.5 million pairs) the median
    is taken over a seeded random subsample of that many rows. If more than
    half of the pairs coincide, the median of the positive distances is used.

    With a second point set Z (two sets, as the asymmetric kernel SVD), the
    median of the distances :math:`\|x_i - z_j\|` between the sets, each set
    subsampled to ``max_samples`` rows; X and Z may then be sparse (the
    distances come from :math:`\|x\|^2 + \|z\|^2 - 2 x^T z`).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    Z : array-like or sparse matrix of shape (m_samples, n_features), optional
    max_samples : int, default=3000
    random_state : int, RandomState instance or None

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr import median_sigma
    >>> median_sigma(np.array([[0.0], [1.0], [3.0]]))
    2.0
    >>> median_sigma(np.array([[0.0], [1.0]]), np.array([[3.0]]))
    2.5
    """
    from scipy.spatial.distance import pdist
    from sklearn.utils import check_random_state

    from ._validation import check_matrix

    rng = check_random_state(random_state)
    if Z is None:
        X = check_matrix(X, min_samples=2)
        if X.shape[0] > max_samples:
            X = X[rng.choice(X.shape[0], max_samples, replace=False)]
        dist = pdist(X)
    else:
        X, Z = (_sample_rows(A, max_samples, rng) for A in (X, Z))
        if X.shape[1] != Z.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}")
        dist = np.sqrt(_cross_squared_distances(X, Z)).ravel()
    sigma = float(np.median(dist))
    if sigma <= 0:
        positive = dist[dist > 0]
        if positive.size == 0:
            if Z is None:
                raise ValueError("median_sigma: all rows of X are identical, the bandwidth is "
                                 "zero")
            raise ValueError("median_sigma: all sampled distances between the rows of X and "
                             "Z are 0, the bandwidth is zero; pass it explicitly")
        sigma = float(np.median(positive))
    return sigma


def _sample_rows(A, max_samples, rng):
    import scipy.sparse as sp

    if A.shape[0] > max_samples:
        A = A[np.sort(rng.choice(A.shape[0], max_samples, replace=False))]
    return A.tocsr() if sp.issparse(A) else np.asarray(A, dtype=np.float64)


def _cross_squared_distances(X, Z):
    """Dense ||x_i - z_j||^2 (clamped at 0) between the rows of X and Z, dense or sparse."""
    import scipy.sparse as sp

    if sp.issparse(X) or sp.issparse(Z):
        X, Z = sp.csr_matrix(X), sp.csr_matrix(Z)
        r = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        c = np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
        d2 = r[:, None] + c[None, :] - 2.0 * (X @ Z.T).toarray()
        return np.maximum(d2, 0.0)
    return np.maximum(-Squared().matrix(X, Z), 0.0)


class Kernel:
    """Base class of the ISM kernel family (see the module docstring)."""

    #: whether Phi depends on W (False: one ISM step solves the problem)
    depends_on_w = True

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

    def _phi0_parts(self, weight):
        """(coef_inner, coef_laplacian, row_weights) with
        Phi_0 = coef_inner X^T Gamma X + coef_laplacian X^T L(D_w Gamma D_w) X."""
        raise NotImplementedError

    def _terms(self, rows, cols=None):
        cols = rows if cols is None else cols
        return [k._term(w, rows, cols) for w, k in self.members() if w > 0]

    def matrix(self, A, B=None, *, n_threads=None):
        """Kernel matrix ``K_ij = k(a_i, b_j)`` (similarity form), shape (n_a, n_b)."""
        from ._validation import check_matrix

        A = check_matrix(A, "A", min_samples=1, dtype=FLOATS)
        kernel = self if self._is_resolved() else self.fit(A)
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
        Z = np.ascontiguousarray(Z)
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
        Z = np.ascontiguousarray(Z)
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
        if any(isinstance(k, RelativeGaussian) for _, k in self.members()):
            raise ValueError("block-pair products need bandwidths of the whole data set; the "
                             "RelativeGaussian kernel is not supported here")
        Z_rows = np.ascontiguousarray(Z_rows)
        rows = _gamma_arrays(gamma_rows, Z_rows.dtype)
        cols = _gamma_arrays(gamma_cols, Z_rows.dtype)
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
        (k columns) costs a pass with k right-hand sides instead of d.
        Computed in X's dtype (float32 or float64), returned in float64.
        """
        X = np.ascontiguousarray(X)
        Z = _native.matmul(X, np.asarray(W, dtype=X.dtype), n_threads=n_threads)
        R = X if V is None else _native.matmul(X, np.asarray(V, dtype=X.dtype), n_threads=n_threads)
        GR, objective = self.gradient_product(Z, R, gamma, n_threads=n_threads)
        out = np.asarray(_native.matmul(X, GR, transpose_a=True, n_threads=n_threads),
                         dtype=np.float64)
        if V is None:
            out = 0.5 * (out + out.T)
        check_finite_result(out, f"Phi(W) of the kernel {self!r}")
        return out, objective

    def phi(self, X, W, gamma, *, n_threads=None):
        r"""The ISM surrogate :math:`\Phi(W)` (d x d) for the objective ``Tr(Gamma K_XW)``.

        :math:`\nabla_W \mathrm{Tr}(\Gamma K_{XW}) = 2 \Phi(W) W` (ISM paper,
        Eq. 6-7 with the constants kept). Computed by the fused C++ product:
        :math:`\Psi = \Gamma \circ f'(\beta)` is formed one tile at a time and
        never stored.
        """
        return self.phi_product(X, W, gamma, n_threads=n_threads)[0]

    def phi0(self, X, gamma):
        r""":math:`\Phi_0 = \Phi(W=0)`, the W-free start (ISM paper, Theorem 3)."""
        self._check_fitted()
        d = X.shape[1]
        out = np.zeros((d, d), dtype=np.float64)
        for w, k in self.members():
            if w <= 0:
                continue
            inner, lap, row_weights = k._phi0_parts(w, X)
            if inner:
                out += inner * gamma.quadratic(X)
            if lap:
                out += lap * gamma.laplacian_quadratic(X, row_weights)
        return check_finite_result(0.5 * (out + out.T), f"Phi_0 of the kernel {self!r}")

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
            if isinstance(k, RelativeGaussian):
                raise ValueError("the RelativeGaussian kernel's Phi_0 has per-point weights; "
                                 "it has no (a, b) form")
            a, b, _ = k._phi0_parts(w, None)
            inner, laplacian = inner + a, laplacian + b
        return inner, laplacian

    def objective(self, X, W, gamma, *, n_threads=None):
        r"""``Tr(Gamma K_XW)`` (ISM paper, Eq. 1), without forming K (W=None: K of X itself)."""
        X = np.ascontiguousarray(X)
        Z = X if W is None else np.ascontiguousarray(X @ np.asarray(W, dtype=X.dtype))
        _, row_sums = self.product(Z, None, gamma, n_threads=n_threads)
        return float(check_finite_result(np.sum(row_sums, dtype=np.float64),
                                         f"Tr(Gamma K) of the kernel {self!r}"))

    def _is_resolved(self):
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
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


FLOATS = (np.float64, np.float32)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _gamma_arrays(gamma, dtype):
    """Gamma (an ikdr.gamma.Gamma or None for all ones) as the native door takes it."""
    if gamma is None:
        return _native.GammaArrays()
    return _native.GammaArrays(*gamma.arrays(_native.core_dtype(dtype)))


class Linear(Kernel):
    r"""Linear kernel :math:`k = x_i^T W W^T x_j`; :math:`\Phi = X^T \Gamma X`.

    Phi does not depend on W, so one eigendecomposition solves ISM.
    """

    depends_on_w = False

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.linear, weight)

    def _phi0_parts(self, weight, X):
        return weight, 0.0, None


class Polynomial(Kernel):
    r"""Polynomial kernel :math:`k = (x_i^T W W^T x_j + c)^p`.

    :math:`\Phi = p X^T (\Gamma \circ K_{p-1}) X`, :math:`K_{p-1} = (XWW^TX^T + c)^{p-1}`;
    :math:`\Phi_0 = p c^{p-1} X^T \Gamma X`.

    Parameters
    ----------
    degree : int, default=3
        p >= 1.
    c : float, default=1.0
        c >= 0 (with c = 0 and p >= 2, Phi_0 vanishes and ISM has no start).
    """

    def __init__(self, degree: int = 3, c: float = 1.0) -> None:
        self.degree = degree
        self.c = c
        if isinstance(degree, bool) or not isinstance(degree, numbers.Integral):
            raise TypeError(f"polynomial degree must be an int, got {type(degree).__name__}")
        if degree < 1:
            raise ValueError(f"polynomial degree must be >= 1, got {degree}")
        check_positive(c, "c", strict=False)

    @property
    def depends_on_w(self):
        return int(self.degree) > 1

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.polynomial, weight, c=float(self.c), degree=int(self.degree))

    def _phi0_parts(self, weight, X):
        p = int(self.degree)
        return weight * p * float(self.c) ** (p - 1), 0.0, None


_Bandwidth = TypeVar("_Bandwidth", bound="_MedianBandwidth")


class _MedianBandwidth:
    """A bandwidth ``sigma``: a positive float, or "median" fixed from the data by :meth:`fit`."""

    def __init__(self, sigma: SigmaLike = "median") -> None:
        self.sigma = sigma
        if not (isinstance(sigma, str) and sigma == "median"):
            check_bandwidth(sigma, "sigma")

    def fit(self: _Bandwidth, X: ArrayLike, random_state: RandomStateLike = None) -> _Bandwidth:
        out = copy.copy(self)
        if isinstance(self.sigma, str):
            out.sigma = median_sigma(X, random_state=random_state)
        return out

    def _is_resolved_member(self):
        return not isinstance(self.sigma, str)


class Gaussian(_MedianBandwidth, Kernel):
    r"""Gaussian kernel :math:`k = \exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma^2)`.

    :math:`\Phi = -\sigma^{-2} X^T L(\Gamma \circ K_{XW}) X`,
    :math:`\Phi_0 = -\sigma^{-2} X^T L(\Gamma) X`, :math:`L(M) = \mathrm{diag}(M1) - M`.

    Parameters
    ----------
    sigma : float or "median", default="median"
        Bandwidth; "median" is the median pairwise distance of the training
        data (:func:`median_sigma`), fixed for the whole run.
    """

    def fit(self, X, random_state=None):
        if not isinstance(self.sigma, str):
            _warn_if_kernel_vanishes(X, float(self.sigma))
        return _MedianBandwidth.fit(self, X, random_state)

    def _check_fitted(self):
        if isinstance(self.sigma, str):
            raise ValueError('Gaussian(sigma="median") must be fitted to data first (kernel.fit(X))')

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.gaussian, weight, sigma=float(self.sigma))

    def _phi0_parts(self, weight, X):
        # 2 * f'(0) = -1 / sigma^2
        return 0.0, -weight / float(self.sigma) ** 2, None


def _warn_if_kernel_vanishes(X, sigma, max_rows=200):
    """Warn when sigma is so small against the data that every off-diagonal
    Gaussian entry underflows to 0 (K = I: the objective no longer depends on W)."""
    from scipy.spatial.distance import pdist

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        return
    rows = X[np.linspace(0, X.shape[0] - 1, min(X.shape[0], max_rows)).astype(int)]
    d2 = pdist(rows, "sqeuclidean")
    d2 = d2[d2 > 0]
    # exp(-t) is 0 in float64 for t > 745
    if d2.size and float(np.min(d2)) / (2.0 * sigma * sigma) > 745.0:
        import warnings

        warnings.warn(f"Gaussian sigma={sigma:.3g} is tiny against the data (nearest distinct "
                      f"points {np.sqrt(np.min(d2)):.3g} apart): every off-diagonal kernel entry "
                      "is 0 in float64, so the kernel matrix is the identity and the result "
                      "carries no information; use a larger sigma or sigma='median'",
                      RuntimeWarning, stacklevel=3)


class RelativeGaussian(Kernel):
    r"""Gaussian kernel with local bandwidths, :math:`k = \exp(-\beta / 2\sigma_i\sigma_j)`.

    :math:`\sigma_i` is the distance from :math:`x_i` to its ``n_neighbors``-th
    nearest neighbour (self-tuning scale; dissertation appendix C, Eq. C.39-C.43).
    :math:`\Phi = -X^T L(\Sigma \circ \Gamma \circ K_{XW}) X`,
    :math:`\Sigma_{ij} = 1/\sigma_i\sigma_j`; :math:`\Phi_0 = -X^T L(\Sigma\circ\Gamma) X`.

    The bandwidths are fitted on the training X (:meth:`fit`) and used for
    every matrix with that many rows; for other data they are recomputed
    from that data.
    """

    n_neighbors: int
    scales_: np.ndarray | None  # per-point bandwidths, set by fit

    def __init__(self, n_neighbors: int = 7) -> None:
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral):
            raise TypeError("n_neighbors must be an int")
        if n_neighbors < 1:
            raise ValueError(f"n_neighbors must be >= 1, got {n_neighbors}")
        self.n_neighbors = n_neighbors

    @staticmethod
    def local_scales(X, n_neighbors):
        """Distance of each row to its ``n_neighbors``-th nearest other row."""
        from sklearn.neighbors import NearestNeighbors

        X = np.asarray(X, dtype=np.float64)
        k = min(int(n_neighbors), X.shape[0] - 1)
        if k < 1:
            raise ValueError("RelativeGaussian needs at least 2 samples")
        dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
        scales = dist[:, k]
        positive = scales[scales > 0]
        if positive.size == 0:
            raise ValueError("RelativeGaussian: every point has n_neighbors duplicates; "
                             "the local bandwidths are zero")
        # Points inside a clump of duplicates get the smallest positive scale.
        return np.where(scales > 0, scales, positive.min())

    def fit(self, X: ArrayLike, random_state: RandomStateLike = None) -> Kernel:
        out = copy.copy(self)
        out.scales_ = self.local_scales(X, self.n_neighbors)
        return out

    def _scales_for(self, X):
        fitted = getattr(self, "scales_", None)
        if fitted is not None and fitted.shape[0] == X.shape[0]:
            return fitted
        return self.local_scales(X, self.n_neighbors)

    def _is_resolved_member(self):
        return getattr(self, "scales_", None) is not None

    def _term(self, weight, rows, cols):
        s_rows = self._scales_for(rows)
        s_cols = s_rows if cols is rows else self._scales_for(cols)
        return KernelTerm(TermKind.gaussian, weight, row_scales=s_rows, col_scales=s_cols)

    def _phi0_parts(self, weight, X):
        return 0.0, -weight, 1.0 / self._scales_for(X)


class Squared(Kernel):
    r"""Squared-distance kernel, used as the similarity :math:`k = -\|W^T(x_i - x_j)\|^2`.

    :math:`\Phi = \Phi_0 = -2 X^T L(\Gamma) X` does not depend on W.
    """

    depends_on_w = False

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.squared, weight)

    def _phi0_parts(self, weight, X):
        return 0.0, -2.0 * weight, None


class Multiquadratic(Kernel):
    r"""Multiquadric kernel, used as the similarity :math:`k = -\sqrt{\beta + c^2}`.

    :math:`\Phi = -X^T L(\Gamma \circ K^{(-1)}) X` with
    :math:`K^{(-1)}_{ij} = 1/\sqrt{\beta_{ij} + c^2}`; :math:`\Phi_0 = -c^{-1} X^T L(\Gamma) X`.

    Parameters
    ----------
    c : float, default=1.0
        c > 0.
    """

    def __init__(self, c: float = 1.0) -> None:
        self.c = c
        check_positive(c, "c")

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.multiquadric, weight, c=float(self.c))

    def _phi0_parts(self, weight, X):
        return 0.0, -weight / float(self.c), None


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
        return " + ".join(f"{w!r} * {k!r}" for w, k in self.members())


class SNE(_MedianBandwidth, Kernel):
    r"""SNE kernel of the asymmetric kernel SVD: a Gaussian normalised over the columns.

    :math:`k(a_i, b_j) = e^{-\|a_i - b_j\|^2 / 2\sigma^2} / \sum_{j'} e^{-\|a_i - b_{j'}\|^2 / 2\sigma^2}`,
    so every row of ``matrix(A, B)`` sums to 1 (KSVD paper, Section 4.1).
    The paper writes :math:`e^{-\|x - z\|^2/\gamma^2}`: :math:`\gamma = \sqrt{2}\,\sigma`,
    i.e. ``SNE(sigma=gamma / sqrt(2))``, as for :class:`Gaussian`. It is
    asymmetric and not of the ISM family (no surrogate Phi): use it with
    :class:`ikdr.KernelSVD` (``KernelSVD(kernel=SNE(sigma))``).

    Parameters
    ----------
    sigma : float or "median", default="median"
    """

    def _check_fitted(self):
        raise TypeError("the SNE kernel is row-normalised and has no ISM surrogate; it gives "
                        "kernel matrices (matrix) for ikdr.KernelSVD only")

    def matrix(self, A, B=None, *, n_threads=None):
        """Row-normalised kernel matrix between the rows of A and of B (rows sum to 1)."""
        from ._validation import check_matrix

        A = check_matrix(A, "A", min_samples=1, dtype=FLOATS)
        kernel = self if self._is_resolved() else self.fit(A)
        B = A if B is None else check_matrix(B, "B", min_samples=1, dtype=A.dtype)
        if B.shape[1] != A.shape[1]:
            raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}")
        require_memory(A.shape[0] * B.shape[0] * A.dtype.itemsize,
                       f"a {A.shape[0]} x {B.shape[0]} kernel matrix")
        sigma = float(kernel.sigma)
        shift, sums = sne_row_normalisers(A, B, sigma, n_threads=n_threads)
        return check_finite_result(sne_matrix(A, B, sigma, shift, sums, n_threads=n_threads),
                                   "the SNE kernel matrix")

    def _term(self, weight, rows, cols):
        self._check_fitted()

    def _phi0_parts(self, weight, X):
        self._check_fitted()


_NAMES = {
    "linear": Linear,
    "polynomial": Polynomial,
    "poly": Polynomial,
    "gaussian": Gaussian,
    "rbf": Gaussian,
    "squared": Squared,
    "multiquadratic": Multiquadratic,
    "multiquadric": Multiquadratic,
    "relative_gaussian": RelativeGaussian,
    "sne": SNE,
}


def make_kernel(kernel: KernelLike | None, *, sigma: SigmaLike = "median") -> Kernel:
    """A kernel object from a name (``"gaussian"``, ``"polynomial"``, ...) or a kernel.

    ``sigma`` is used by the Gaussian kernel when the kernel is given by name.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        key = kernel.lower()
        if key not in _NAMES:
            raise ValueError(f"unknown kernel {kernel!r}; expected one of {sorted(set(_NAMES))} "
                             "or an ikdr.kernels.Kernel")
        cls = _NAMES[key]
        return cls(sigma=sigma) if cls in (Gaussian, SNE) else cls()
    raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")


# -- KSVD kernel blocks ------------------------------------------------------------
def sne_row_normalisers(A: np.ndarray, B: np.ndarray, sigma: float, *,
                        n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Row normalisers of the SNE kernel between the rows of A and B.

    The SNE kernel (KSVD paper, Section 2) is the row-normalised Gaussian
    :math:`\kappa(a_i, b_j) = e^{-d^2_{ij}/2\sigma^2} / \sum_{j'} e^{-d^2_{ij'}/2\sigma^2}`.
    Returns ``(shift, sums)`` with :math:`\mathrm{shift}_i = \min_j d^2_{ij}` and
    :math:`\mathrm{sums}_i = \sum_j e^{-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2} \ge 1`
    (log-sum-exp form: no underflow however far the rows are), in one tiled
    pass that never stores the n x m matrix.
    """
    check_bandwidth(sigma, "sigma")
    return _native.sne_row_normalisers(np.ascontiguousarray(A), np.ascontiguousarray(B), sigma,
                                       n_threads=n_threads)


def sne_matrix(A: np.ndarray, B: np.ndarray, sigma: float, shift: np.ndarray | None = None,
               sums: np.ndarray | None = None, *, n_threads: int | None = None) -> np.ndarray:
    r"""SNE kernel block :math:`e^{-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2} / \mathrm{sums}_i`.

    ``shift`` and ``sums`` come from :func:`sne_row_normalisers` over the full
    column set, so a block of columns keeps the normalisation of all of them.
    Without them, the rows are normalised over B's rows in the same pass (one
    pass instead of two when B is the whole column set).
    """
    check_bandwidth(sigma, "sigma")
    return _native.sne_matrix(np.ascontiguousarray(A), np.ascontiguousarray(B), sigma, shift,
                              sums, n_threads=n_threads)


def lowrank_plus_sparse(dl: np.ndarray, u: np.ndarray, v: np.ndarray, S: Any, *,
                        n_threads: int | None = None) -> np.ndarray:
    r"""Dense :math:`\mathrm{diag}(d_l)(u v^T + S)` for a sparse S (any scipy format).

    The kernel matrix of sparse points whose kernel is a rank-one term plus a
    sparse correction (KSVD on a graph's adjacency), written in one parallel
    pass instead of three numpy passes.
    """
    S = S.tocsr()
    return _native.lowrank_plus_sparse(dl, u, v, S.indptr, S.indices, S.data,
                                       n_threads=n_threads)
