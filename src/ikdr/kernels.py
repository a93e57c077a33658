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

import numpy as np

from . import _core
from ._config import get_num_threads, require_memory, single_threaded_blas
from ._validation import check_bandwidth, check_finite_result, check_positive

__all__ = [
    "Kernel", "Linear", "Polynomial", "Gaussian", "RelativeGaussian", "Squared",
    "Multiquadratic", "ConicKernel", "make_kernel", "median_sigma",
]

# C++ term kinds (cpp/include/ikdr/fused.hpp).
_LINEAR, _POLYNOMIAL, _GAUSSIAN, _SQUARED, _MULTIQUADRIC = range(5)
_MEDIAN_SUBSAMPLE = 3000


def median_sigma(X, *, max_samples=_MEDIAN_SUBSAMPLE, random_state=None):
    r"""Median heuristic bandwidth: the median of :math:`\|x_i - x_j\|` over ``i < j``.

    Above ``max_samples`` rows (default 3,000, i.e. 4.5 million pairs) the median
    is taken over a seeded random subsample of that many rows. If more than
    half of the pairs coincide, the median of the positive distances is used.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
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
    """
    from scipy.spatial.distance import pdist
    from sklearn.utils import check_random_state

    from ._validation import check_matrix

    X = check_matrix(X, min_samples=2)
    if X.shape[0] > max_samples:
        rng = check_random_state(random_state)
        X = X[rng.choice(X.shape[0], max_samples, replace=False)]
    dist = pdist(X)
    sigma = float(np.median(dist))
    if sigma <= 0:
        positive = dist[dist > 0]
        if positive.size == 0:
            raise ValueError("median_sigma: all rows of X are identical, the bandwidth is zero")
        sigma = float(np.median(positive))
    return sigma


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
    def fit(self, X, random_state=None):
        """Return a copy whose data-dependent parameters (``sigma="median"``,
        per-point bandwidths) are fixed from the training data ``X``."""
        return copy.copy(self)

    def _check_fitted(self):
        pass

    # -- evaluation ------------------------------------------------------------
    def _term(self, weight, rows, cols):
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
        fn = _core.kernel_matrix_f32 if A.dtype == np.float32 else _core.kernel_matrix_f64
        terms = kernel._terms(A, B)
        with single_threaded_blas():
            K = fn(A, B, _cast_terms(terms, A.dtype), n_threads or get_num_threads())
        return check_finite_result(K, f"the kernel matrix of {kernel!r}")

    def phi(self, X, W, gamma, *, n_threads=None):
        r"""The ISM surrogate :math:`\Phi(W)` (d x d) for the objective ``Tr(Gamma K_XW)``.

        :math:`\nabla_W \mathrm{Tr}(\Gamma K_{XW}) = 2 \Phi(W) W`. Computed by the
        fused C++ product: :math:`\Psi = \Gamma \circ f'(\beta)` is formed one
        row panel at a time and never stored.
        """
        self._check_fitted()
        X = np.ascontiguousarray(X)
        Z = np.ascontiguousarray(X @ W, dtype=X.dtype)
        y, _, _ = _fused(Z, self._terms(X), 1, gamma, rhs=X, n_threads=n_threads)
        phi = X.T @ y
        return check_finite_result(0.5 * (phi + phi.T), f"Phi(W) of the kernel {self!r}")

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

    def objective(self, X, W, gamma, *, n_threads=None):
        r"""``Tr(Gamma K_XW)`` (ISM paper, Eq. 1), without forming K."""
        self._check_fitted()
        X = np.ascontiguousarray(X)
        Z = np.ascontiguousarray(X @ W, dtype=X.dtype) if W is not None else X
        _, row_sums, _ = _fused(Z, self._terms(X), 0, gamma, rhs=None, n_threads=n_threads)
        return float(check_finite_result(np.sum(row_sums, dtype=np.float64),
                                         f"Tr(Gamma K) of the kernel {self!r}"))

    def _objective_from_gradient_sums(self, row_sums_b):
        r"""``Tr(Gamma K_XW)`` from the gradient-mode row sums of :math:`2\Gamma\circ b`
        of the same fused pass, when the kernel is one plain Gaussian (then
        :math:`b = -K/2\sigma^2`, so the objective is :math:`-\sigma^2` times
        their sum); None for any other kernel."""
        members = [k for w, k in self.members() if w > 0]
        if len(members) != 1 or type(members[0]) is not Gaussian:
            return None
        sigma = float(members[0].sigma)
        return float(-sigma * sigma * np.sum(row_sums_b, dtype=np.float64))

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


def _cast_terms(terms, dtype):
    out = []
    for kind, w, sigma, c, degree, rows, cols in terms:
        if rows is not None:
            rows = np.ascontiguousarray(rows, dtype=dtype)
            cols = np.ascontiguousarray(cols, dtype=dtype)
        out.append((kind, float(w), float(sigma), float(c), int(degree), rows, cols))
    return out


def _fused(Z, terms, mode, gamma, *, rhs=None, n_threads=None):
    """Call the fused C++ product with Gamma in whichever form it is held."""
    dtype = Z.dtype
    fn = _core.fused_product_f32 if dtype == np.float32 else _core.fused_product_f64
    kwargs = gamma._core_arguments(dtype) if gamma is not None else {}
    with single_threaded_blas():
        return fn(Z, _cast_terms(terms, dtype), mode, rhs=rhs,
                  n_threads=n_threads or get_num_threads(), **kwargs)


class Linear(Kernel):
    r"""Linear kernel :math:`k = x_i^T W W^T x_j`; :math:`\Phi = X^T \Gamma X`.

    Phi does not depend on W, so one eigendecomposition solves ISM.
    """

    depends_on_w = False

    def _term(self, weight, rows, cols):
        return (_LINEAR, weight, 1.0, 0.0, 1, None, None)

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

    def __init__(self, degree=3, c=1.0):
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
        return (_POLYNOMIAL, weight, 1.0, float(self.c), int(self.degree), None, None)

    def _phi0_parts(self, weight, X):
        p = int(self.degree)
        return weight * p * float(self.c) ** (p - 1), 0.0, None


class Gaussian(Kernel):
    r"""Gaussian kernel :math:`k = \exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma^2)`.

    :math:`\Phi = -\sigma^{-2} X^T L(\Gamma \circ K_{XW}) X`,
    :math:`\Phi_0 = -\sigma^{-2} X^T L(\Gamma) X`, :math:`L(M) = \mathrm{diag}(M1) - M`.

    Parameters
    ----------
    sigma : float or "median", default="median"
        Bandwidth; "median" is the median pairwise distance of the training
        data (:func:`median_sigma`), fixed for the whole run.
    """

    def __init__(self, sigma="median"):
        self.sigma = sigma
        if not (isinstance(sigma, str) and sigma == "median"):
            check_bandwidth(sigma, "sigma")

    def fit(self, X, random_state=None):
        out = copy.copy(self)
        if isinstance(self.sigma, str):
            out.sigma = median_sigma(X, random_state=random_state)
        else:
            _warn_if_kernel_vanishes(X, float(self.sigma))
        return out

    def _is_resolved_member(self):
        return not isinstance(self.sigma, str)

    def _check_fitted(self):
        if isinstance(self.sigma, str):
            raise ValueError('Gaussian(sigma="median") must be fitted to data first (kernel.fit(X))')

    def _term(self, weight, rows, cols):
        return (_GAUSSIAN, weight, float(self.sigma), 0.0, 1, None, None)

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

    def __init__(self, n_neighbors=7):
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

    def fit(self, X, random_state=None):
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
        return (_GAUSSIAN, weight, 1.0, 0.0, 1, s_rows, s_cols)

    def _phi0_parts(self, weight, X):
        return 0.0, -weight, 1.0 / self._scales_for(X)


class Squared(Kernel):
    r"""Squared-distance kernel, used as the similarity :math:`k = -\|W^T(x_i - x_j)\|^2`.

    :math:`\Phi = \Phi_0 = -2 X^T L(\Gamma) X` does not depend on W.
    """

    depends_on_w = False

    def _term(self, weight, rows, cols):
        return (_SQUARED, weight, 1.0, 0.0, 1, None, None)

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

    def __init__(self, c=1.0):
        self.c = c
        check_positive(c, "c")

    def _term(self, weight, rows, cols):
        return (_MULTIQUADRIC, weight, 1.0, float(self.c), 1, None, None)

    def _phi0_parts(self, weight, X):
        return 0.0, -weight / float(self.c), None


class ConicKernel(Kernel):
    r"""A conic combination :math:`\sum_m \mu_m k_m` of ISM kernels, :math:`\mu_m \ge 0`.

    :math:`\Phi = \sum_m \mu_m \Phi_m` (ISM paper, Corollary 1). Written
    ``0.5 * Gaussian() + 2 * Polynomial()``.
    """

    def __init__(self, components):
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

    def fit(self, X, random_state=None):
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
}


def make_kernel(kernel, *, sigma="median"):
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
        return cls(sigma=sigma) if cls is Gaussian else cls()
    raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
