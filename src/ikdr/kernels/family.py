r"""The ISM family of kernels and their conic combinations.

A kernel belongs to the ISM family when :math:`k(x_i, x_j) = f(\beta)` with
:math:`\beta = a^T W W^T b` (ISM paper, Definition 1; docs/maths.md, section 2):

================  =====================================  ====================
kernel            similarity :math:`k` used by ikdr      :math:`a, b`
================  =====================================  ====================
Linear            :math:`\beta`                          :math:`x_i, x_j`
Polynomial        :math:`(\beta + c)^p`                  :math:`x_i, x_j`
Gaussian          :math:`\exp(-\beta / 2\sigma^2)`       :math:`x_i - x_j`
RelativeGaussian  :math:`\exp(-\beta / 2\sigma_i\sigma_j)` :math:`x_i - x_j`
Squared           :math:`-\beta`                         :math:`x_i - x_j`
Multiquadric      :math:`-\sqrt{\beta + c^2}`            :math:`x_i - x_j`
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
import warnings
from typing import TypeVar

import numpy as np
import scipy.sparse as sp

from .._native import KernelTerm, TermKind
from .._utils.typing import ArrayLike, RandomStateLike, SigmaLike
from .._utils.validation import check_bandwidth, check_positive
from .bandwidth import median_sigma, warn_if_kernel_vanishes
from .base import Kernel, LowRankPart, affine_parts, nystrom_part, ones_core, ones_rows

__all__ = ["Linear", "Polynomial", "Gaussian", "RelativeGaussian", "Squared", "Multiquadric",
           "MedianBandwidth", "RENAMED", "renamed_class"]


class Linear(Kernel):
    r"""Linear kernel :math:`k = x_i^T W W^T x_j`; :math:`\Phi = X^T \Gamma X`.

    Phi does not depend on W, so one eigendecomposition solves ISM.
    """

    depends_on_w = False

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.linear, weight)

    _random_features = True

    def feature_map(self, Y):
        return Y

    def block_spec(self):
        return "linear", None, None

    def low_rank_parts(self, weight):
        return affine_parts(weight, 0.0)

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
        """Whether Phi depends on W: for every degree above 1 (degree 1 is linear)."""
        return int(self.degree) > 1

    @property
    def _nonnegative(self):
        # (beta + c)^p with c >= 0 is non-negative for every beta only at even p
        return int(self.degree) % 2 == 0

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.polynomial, weight, c=float(self.c), degree=int(self.degree))

    def block_spec(self):
        # the KSVD blocks compute (x^T z + 1)^p: other offsets use the matrix
        return ("polynomial", None, int(self.degree)) if float(self.c) == 1.0 else None

    def low_rank_parts(self, weight):
        p = int(self.degree)
        if p == 1:
            return affine_parts(weight, float(self.c))
        # value (beta + c)^p, derivative p (beta + c)^(p-1) as an inner-product weight
        lower = Polynomial(p - 1, self.c)
        return [nystrom_part((("value", weight),), self),
                nystrom_part((("inner", weight * p),), lower)]

    def _phi0_parts(self, weight, X):
        p = int(self.degree)
        return weight * p * float(self.c) ** (p - 1), 0.0, None


_Bandwidth = TypeVar("_Bandwidth", bound="MedianBandwidth")


class MedianBandwidth:
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


class Gaussian(MedianBandwidth, Kernel):
    r"""Gaussian kernel :math:`k = \exp(-\|W^T(x_i - x_j)\|^2 / 2\sigma^2)`.

    :math:`\Phi = -\sigma^{-2} X^T L(\Gamma \circ K_{XW}) X`,
    :math:`\Phi_0 = -\sigma^{-2} X^T L(\Gamma) X`, :math:`L(M) = \mathrm{diag}(M1) - M`.

    Parameters
    ----------
    sigma : float or "median", default="median"
        Bandwidth; "median" is the median pairwise distance of the training
        data (:func:`median_sigma`), fixed for the whole run.
    """

    _nonnegative = True

    def fit(self, X, random_state=None):
        if not isinstance(self.sigma, str):
            warn_if_kernel_vanishes(X, float(self.sigma))
        return MedianBandwidth.fit(self, X, random_state)

    def _check_fitted(self):
        if isinstance(self.sigma, str):
            raise ValueError('Gaussian(sigma="median") must be fitted to data first (kernel.fit(X))')

    def _term(self, weight, rows, cols):
        return KernelTerm(TermKind.gaussian, weight, sigma=float(self.sigma))

    @property
    def _global_sigma(self):
        return None if isinstance(self.sigma, str) else float(self.sigma)

    @property
    def _gaussian_rule(self):
        return self.sigma if isinstance(self.sigma, str) else None

    _random_features = True

    def block_spec(self):
        return "rbf", self._global_sigma, None

    def low_rank_parts(self, weight):
        sigma = float(self.sigma)
        return [nystrom_part((("value", weight), ("laplacian", -weight / sigma ** 2)), self,
                             random_features_scale=sigma)]

    def _phi0_parts(self, weight, X):
        # 2 * f'(0) = -1 / sigma^2
        return 0.0, -weight / float(self.sigma) ** 2, None


def _distinct_rows(X):
    """(distinct rows of X, index of each row of X among them), dense or sparse (CSR
    rows compared by their stored entries, O(nnz))."""
    if not sp.issparse(X):
        distinct, inverse = np.unique(X, axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1)
    X = sp.csr_matrix(X)
    X.sum_duplicates()
    X.eliminate_zeros()
    seen: dict = {}
    inverse = np.empty(X.shape[0], dtype=np.intp)
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        key = (X.indices[lo:hi].tobytes(), X.data[lo:hi].tobytes())
        inverse[i] = seen.setdefault(key, len(seen))
    first = np.zeros(len(seen), dtype=np.intp)
    first[inverse[::-1]] = np.arange(X.shape[0])[::-1]
    return X[first], inverse


class RelativeGaussian(Kernel):
    r"""Gaussian kernel with local bandwidths, :math:`k = \exp(-\beta / 2\sigma_i\sigma_j)`.

    :math:`\sigma_i` is the distance from :math:`x_i` to its ``n_neighbors``-th
    nearest neighbor (self-tuning scale; dissertation appendix C, Eq. C.39-C.43).
    :math:`\Phi = -X^T L(\Sigma \circ \Gamma \circ K_{XW}) X`,
    :math:`\Sigma_{ij} = 1/\sigma_i\sigma_j`; :math:`\Phi_0 = -X^T L(\Sigma\circ\Gamma) X`.

    The bandwidths are fitted on the training X (:meth:`fit`) and used for
    every matrix with that many rows; for other data they are recomputed
    from that data.
    """

    _nonnegative = True
    _needs_all_rows = True

    n_neighbors: int
    scales_: np.ndarray | None  # per-point bandwidths, set by fit

    def median_scale_gaussian(self):
        if getattr(self, "scales_", None) is None:
            return Kernel.median_scale_gaussian(self)
        return Gaussian(float(np.median(self.scales_)))

    def __init__(self, n_neighbors: int = 7) -> None:
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, numbers.Integral):
            raise TypeError("n_neighbors must be an int")
        if n_neighbors < 1:
            raise ValueError(f"n_neighbors must be >= 1, got {n_neighbors}")
        self.n_neighbors = n_neighbors

    @staticmethod
    def local_scales(X, n_neighbors):
        """Distance of each row to its ``n_neighbors``-th nearest other *distinct* row.

        Repeated rows count once: on integer-valued data many rows repeat, and a
        point's neighbors among its own copies are at distance zero, which is no
        bandwidth. A row with fewer distinct other rows than ``n_neighbors`` takes
        the farthest of them. Raises a ValueError only when every row is the same.
        """
        from sklearn.neighbors import NearestNeighbors

        # sparse rows stay sparse (the neighbor search takes them as they are)
        X = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if X.shape[0] < 2:
            raise ValueError("RelativeGaussian needs at least 2 samples")
        distinct, inverse = _distinct_rows(X)
        k = min(int(n_neighbors), distinct.shape[0] - 1)
        if k < 1:
            raise ValueError(f"RelativeGaussian: all {X.shape[0]} rows of X are identical, so "
                             "no row has a neighbor to set its bandwidth; remove the "
                             "repeated rows or pass a kernel with a fixed sigma")
        dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(distinct).kneighbors(distinct)
        return dist[:, k][inverse]

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

    _random_features = True

    def low_rank_parts(self, weight):
        # -|z_i - z_j|^2 = 2 z_i.z_j - |z_i|^2 - |z_j|^2: rows [z, |z|^2, 1], rank q + 2
        def rows(Zb):
            s = np.einsum("ij,ij->i", Zb, Zb)[:, None]
            return np.hstack([Zb, s, np.ones_like(s)])

        def core(q):
            S = np.zeros((q + 2, q + 2))
            S[:q, :q] = 2.0 * np.eye(q)
            S[q, q + 1] = S[q + 1, q] = -1.0
            return S
        return [LowRankPart((("value", weight),), rows=rows, core=core),
                LowRankPart((("laplacian", -2.0 * weight),), rows=ones_rows, core=ones_core)]

    def _phi0_parts(self, weight, X):
        return 0.0, -2.0 * weight, None


class Multiquadric(Kernel):
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

    def low_rank_parts(self, weight):
        # value -sqrt(beta + c^2), derivative the inverse multiquadric 1/sqrt(beta + c^2)
        return [nystrom_part((("value", weight),), self),
                nystrom_part((("laplacian", -weight),), self, negative_reciprocal=True)]

    def _phi0_parts(self, weight, X):
        return 0.0, -weight / float(self.c), None


#: kernel classes renamed since ikdr 0.2: old name -> class. The old names still
#: resolve (module ``__getattr__`` below and in :mod:`ikdr.kernels`), with a
#: FutureWarning, so code and estimators pickled before the rename keep working.
RENAMED = {"Multiquadratic": Multiquadric}


def renamed_class(module: str, name: str) -> type:
    """The class once called ``name`` (see :data:`RENAMED`), with a FutureWarning;
    AttributeError naming ``module`` for any other name."""
    if name not in RENAMED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new = RENAMED[name]
    warnings.warn(f"{module}.{name} is deprecated and will be removed: use "
                  f"{module}.{new.__name__} (the same kernel; its correct name)", FutureWarning,
                  stacklevel=3)
    return new


def __getattr__(name: str) -> type:
    return renamed_class(__name__, name)
