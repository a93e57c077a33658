r"""Gamma: the n x n matrix that encodes the learning paradigm.

ISM maximises :math:`\mathrm{Tr}(\Gamma K_{XW})` (docs/maths.md, section 1). In the
supervised, unsupervised and alternative-clustering paradigms Gamma has low
rank and is kept in factored form :math:`\Gamma = G\,\mathrm{diag}(s)\,G^T`
(G is n x r), so nothing n x n is ever stored; the C++ core forms tiles of
Gamma on the fly. A dense Gamma is accepted where no factor exists.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from ._config import require_memory
from ._utils.labels import one_hot, target_type
from ._utils.validation import check_matrix, plain
from ._utils.typing import ArrayLike, RandomStateLike, SigmaLike
from .kernels import Gaussian, KernelLike, make_kernel

__all__ = ["Gamma", "as_gamma", "supervised_gamma", "centered", "one_hot", "pivoted_cholesky",
           "kernel_factor", "alternative_gamma", "semi_supervised_gamma", "clustering_gamma"]


class Gamma:
    r"""A symmetric n x n matrix, factored :math:`G\,\mathrm{diag}(s)\,G^T` or dense.

    Parameters
    ----------
    factor : ndarray of shape (n, r), optional
    scale : ndarray of shape (r,), optional
        Signed weights of the factor's columns (default all ones).
    dense : ndarray of shape (n, n), optional
        Used when no factor is given; must be symmetric.
    """

    def __init__(self, factor: ArrayLike | None = None, scale: ArrayLike | None = None,
                 dense: ArrayLike | None = None) -> None:
        if (factor is None) == (dense is None):
            raise ValueError("give exactly one of factor and dense")
        if factor is not None:
            factor = np.ascontiguousarray(factor, dtype=np.float64)
            if factor.ndim != 2:
                raise ValueError("Gamma factor must be 2-D (n x r)")
            if scale is not None:
                scale = np.ascontiguousarray(scale, dtype=np.float64).ravel()
                if scale.shape[0] != factor.shape[1]:
                    raise ValueError("Gamma scale must have one entry per factor column")
            if not np.all(np.isfinite(factor)) or (scale is not None and not np.all(np.isfinite(scale))):
                raise ValueError("Gamma contains NaN or infinite values")
        else:
            dense = np.ascontiguousarray(dense, dtype=np.float64)
            if dense.ndim != 2 or dense.shape[0] != dense.shape[1]:
                raise ValueError("dense Gamma must be square")
            if not np.all(np.isfinite(dense)):
                raise ValueError("Gamma contains NaN or infinite values")
            if not np.allclose(dense, dense.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(dense).max())):
                raise ValueError("dense Gamma must be symmetric")
            dense = 0.5 * (dense + dense.T)
        self.factor = factor
        self.scale = scale
        self.dense = dense
        self._cast_cache: dict[Any, Any] = {}

    @property
    def n(self):
        """Number of samples: Gamma is n x n."""
        return self.factor.shape[0] if self.factor is not None else self.dense.shape[0]

    @property
    def is_factored(self):
        r"""Whether Gamma is kept as :math:`G\,\mathrm{diag}(s)\,G^T` (True) or dense."""
        return self.factor is not None

    @property
    def rank(self):
        """Columns of the factor G (n when Gamma is dense)."""
        return self.factor.shape[1] if self.factor is not None else self.n

    def _s(self):
        return np.ones(self.factor.shape[1]) if self.scale is None else self.scale

    def toarray(self):
        """The dense n x n matrix (for tests and small problems)."""
        require_memory(8 * self.n * self.n, f"a dense {self.n} x {self.n} Gamma")
        if self.dense is not None:
            return self.dense.copy()
        return (self.factor * self._s()) @ self.factor.T

    def row_scaled(self, weights):
        r""":math:`D_w \Gamma D_w` for a vector of row weights w (stays factored)."""
        w = np.asarray(weights, dtype=np.float64).ravel()
        if self.factor is not None:
            return Gamma(self.factor * w[:, None], self.scale)
        return Gamma(dense=self.dense * np.outer(w, w))

    def rows(self, index):
        r"""The factored Gamma's rows ``index`` (a slice or index array): the factor
        restricted to those samples, the same scale. Block pairs of a distributed
        pass use :math:`G_I\,\mathrm{diag}(s)\,G_J^T` (see :meth:`ikdr.kernels.Kernel.pair_product`)."""
        if self.factor is None:
            raise ValueError("only a factored Gamma can be restricted to a block of rows")
        return Gamma(self.factor[index], self.scale)

    def row_sums(self):
        r""":math:`\Gamma 1`."""
        if self.factor is not None:
            return self.factor @ (self._s() * self.factor.sum(axis=0))
        return self.dense.sum(axis=1)

    def matvec(self, R):
        r""":math:`\Gamma R`."""
        if self.factor is not None:
            return self.factor @ (self._s()[:, None] * (self.factor.T @ R)) if R.ndim == 2 else \
                self.factor @ (self._s() * (self.factor.T @ R))
        return self.dense @ R

    def quadratic(self, X, weights=None):
        r""":math:`X^T D_w \Gamma D_w X` (w = 1 when not given)."""
        g = self if weights is None else self.row_scaled(weights)
        if sp.issparse(X):      # sparse X: products from its side, X never densified
            gx = np.asarray(X.T @ (g.factor if g.factor is not None else g.dense)).T
            if g.factor is None:        # gx = Gamma X (Gamma symmetric)
                return np.asarray(X.T @ gx)
            return gx.T @ (g._s()[:, None] * gx)
        if g.factor is not None:
            gx = g.factor.T @ X
            return gx.T @ (g._s()[:, None] * gx)
        return X.T @ (g.dense @ X)

    def row_sums_rounding(self):
        r"""A bound of the rounding in :meth:`row_sums`: :math:`n\epsilon\,|\Gamma|1`."""
        if self.factor is not None:
            absolute = np.abs(self.factor)
            bound = absolute @ (np.abs(self._s()) * absolute.sum(axis=0))
        else:
            bound = np.abs(self.dense).sum(axis=1)
        return self.n * np.finfo(np.float64).eps * bound

    def laplacian_quadratic(self, X, weights=None):
        r""":math:`X^T L(D_w \Gamma D_w) X`, :math:`L(M) = \mathrm{diag}(M1) - M`.

        Row sums within their own rounding are taken as 0: a centered Gamma
        (every supervised and clustering Gamma) has none, and its degree term
        would only add rounding, at the cost of a d x n x d product.
        """
        g = self if weights is None else self.row_scaled(weights)
        deg = g.row_sums()
        deg[np.abs(deg) <= g.row_sums_rounding()] = 0.0
        if not deg.any():
            return -g.quadratic(X)
        if sp.issparse(X):
            return (X.T @ X.multiply(deg[:, None]).tocsr()).toarray() - g.quadratic(X)
        return X.T @ (deg[:, None] * X) - g.quadratic(X)

    def __add__(self, other):
        if not isinstance(other, Gamma):
            return NotImplemented
        if self.n != other.n:
            raise ValueError("Gamma sizes differ")
        if self.factor is not None and other.factor is not None:
            return Gamma(np.hstack([self.factor, other.factor]),
                         np.concatenate([self._s(), other._s()]))
        return Gamma(dense=self.toarray() + other.toarray())

    def __mul__(self, alpha):
        alpha = float(alpha)
        if self.factor is not None:
            return Gamma(self.factor, alpha * self._s())
        return Gamma(dense=alpha * self.dense)

    __rmul__ = __mul__

    def arrays(self, dtype=np.float64):
        """``(factor, scale, dense)`` in ``dtype``, C-contiguous, the unused ones None.

        Cast once per dtype and cached, so the passes of a float32 fit do not
        copy the factor every time.
        """
        key = np.dtype(dtype).str
        if key not in self._cast_cache:
            cast = (lambda a: None if a is None else np.ascontiguousarray(a, dtype=dtype))
            self._cast_cache[key] = (cast(self.factor), cast(self.scale), cast(self.dense))
        return self._cast_cache[key]

    def derived(self, key, make):
        """A value derived from this Gamma alone, made once by ``make()`` and kept
        with it under ``key`` (the kernel layer keeps the core's per-pass
        preparation of a factored Gamma here, made once per fit and dtype)."""
        key = ("derived", key)
        if key not in self._cast_cache:
            self._cast_cache[key] = make()
        return self._cast_cache[key]

    def __getstate__(self):
        # the caches are rebuilt on demand; a pickle (a Dask task, a saved
        # model) carries the factors only, not the core's tables
        state = self.__dict__.copy()
        state["_cast_cache"] = {}
        return state

    def __repr__(self):
        form = f"factored, rank {self.rank}" if self.is_factored else "dense"
        return f"Gamma(n={self.n}, {form})"


def as_gamma(gamma: Gamma | ArrayLike) -> Gamma:
    """A :class:`Gamma` as given, or a dense one from an n x n symmetric array
    (a ValueError names what is wrong with it; a TypeError for anything else)."""
    if isinstance(gamma, Gamma):
        return gamma
    if isinstance(gamma, (str, bytes)) or np.ndim(gamma) != 2:
        raise TypeError(f"gamma must be an ikdr.gamma.Gamma or an n x n symmetric array, got "
                        f"{type(gamma).__name__}")
    return Gamma(dense=np.asarray(gamma, dtype=np.float64))


def centered(M: ArrayLike) -> np.ndarray:
    r""":math:`H M` with :math:`H = I - 11^T/n` (column means removed)."""
    M = np.asarray(M, dtype=np.float64)
    return M - M.mean(axis=0, keepdims=True)


def pivoted_cholesky(diagonal: ArrayLike, column: Callable[[int], np.ndarray], *,
                     rtol: float = 1e-12, max_rank: int | None = None) -> np.ndarray:
    r"""Low-rank factor L with :math:`K \approx L L^T` for a PSD K given by columns.

    Greedy pivoting on the residual diagonal; stops when the trace of the
    (PSD) residual falls below ``rtol`` times the trace of K, which bounds its
    nuclear norm. ``column(i)`` returns column i of K.
    """
    d = np.array(diagonal, dtype=np.float64)
    n = d.shape[0]
    max_rank = n if max_rank is None else min(n, int(max_rank))
    total = d.sum()
    L = np.zeros((n, max(1, min(max_rank, 64))))
    k = 0
    while k < max_rank and d.sum() > rtol * total:
        i = int(np.argmax(d))
        if k == L.shape[1]:
            L = np.hstack([L, np.zeros((n, L.shape[1]))])
        col = np.asarray(column(i), dtype=np.float64).ravel() - L[:, :k] @ L[i, :k]
        piv = np.sqrt(d[i])
        L[:, k] = col / piv
        d -= L[:, k] ** 2
        d[d < 0] = 0.0
        d[i] = 0.0
        k += 1
    return L[:, :k]


def target_factor(y: ArrayLike, *, kernel: KernelLike = "auto", sigma: SigmaLike = "median"
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """Factor F with K_Y = F F^T for a target y, and what kind of target it was.

    Class labels (binary/multiclass) give the one-hot matrix (:math:`K_Y = YY^T`);
    continuous targets a pivoted-Cholesky factor of a Gaussian kernel on y
    (``sigma="median"``: median heuristic on y).
    Returns ``(F, classes_or_None)``.
    """
    y = np.asarray(y)
    kind = target_type(y) if kernel == "auto" else kernel
    if kind in ("binary", "multiclass", "labels"):
        F, classes = one_hot(y)
        if classes.shape[0] < 2:
            raise ValueError(f"y has a single class ({plain(classes[0])!r}); supervised ISM "
                             "needs at least 2 classes")
        return F, classes
    Y = y.reshape(y.shape[0], -1).astype(np.float64)
    if not np.all(np.isfinite(Y)):
        raise ValueError("y contains NaN or infinite values")
    if np.ptp(Y, axis=0).max() == 0:
        raise ValueError("y is constant; supervised ISM needs a varying target")
    k = Gaussian(sigma=sigma).fit(Y)
    Yc = np.ascontiguousarray(Y)
    F = pivoted_cholesky(np.ones(Y.shape[0]), lambda i: k.matrix(Yc, Yc[i:i + 1])[:, 0])
    return F, None


def supervised_gamma(y: ArrayLike, *, target: KernelLike = "auto", sigma_y: SigmaLike = "median"
                     ) -> tuple[Gamma, np.ndarray | None]:
    r"""Supervised Gamma :math:`H K_Y H` in factored form :math:`G G^T`, :math:`G = H F`.

    :math:`K_Y = YY^T` with one-hot Y for class labels; a Gaussian kernel on y
    (factored by pivoted Cholesky to 1e-12 relative trace) for continuous
    targets.

    Returns
    -------
    gamma : Gamma
        :math:`H K_Y H`, factored.
    classes : ndarray or None
        The sorted class labels, or None for a continuous target.
    """
    F, classes = target_factor(y, kernel=target, sigma=sigma_y)
    return Gamma(centered(F)), classes


#: rows of the diagonal blocks :func:`kernel_factor` reads the kernel's diagonal from
_DIAGONAL_BLOCK = 256


def kernel_factor(Y: ArrayLike, kernel: KernelLike, *, random_state: RandomStateLike = None
                  ) -> np.ndarray:
    r"""Factor F with :math:`K_Y \approx F F^T` for a PSD kernel on the rows of Y.

    The linear kernel is its own factor (F = Y); any other kernel is
    factored by pivoted Cholesky to 1e-12 relative trace, evaluating one
    kernel column at a time (O(n r) memory).
    """

    Y = check_matrix(np.asarray(Y).reshape(np.shape(Y)[0], -1), "Y")
    ky = make_kernel(kernel)
    features = ky.feature_map(Y)
    if features is not None:
        return features         # a kernel with explicit features is its own factor
    ky = ky.fit(Y, random_state=random_state) if not ky.is_resolved else ky
    n = Y.shape[0]
    # the diagonal from diagonal blocks: n / 256 kernel calls, not n
    diag = np.concatenate([np.diag(ky.matrix(Y[b:b + _DIAGONAL_BLOCK]))
                           for b in range(0, n, _DIAGONAL_BLOCK)])
    if np.any(diag < 0):
        raise ValueError("the kernel on Y must be positive semi-definite")
    return pivoted_cholesky(diag, lambda i: ky.matrix(Y, Y[i:i + 1])[:, 0])


def _degree_scaled_centered(M, degrees):
    d = np.asarray(degrees, dtype=np.float64).ravel()
    if d.shape[0] != np.shape(M)[0]:
        raise ValueError(f"degrees has {d.shape[0]} entries but the factor has "
                         f"{np.shape(M)[0]} rows")
    if not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ValueError("degrees must be positive and finite")
    return centered(M) / np.sqrt(d)[:, None]


def alternative_gamma(U: np.ndarray, existing: np.ndarray | Sequence[np.ndarray],
                      degrees: np.ndarray, lam: float) -> Gamma:
    r"""KDAC Gamma :math:`D^{-1/2} H (U U^T - \lambda Y Y^T) H D^{-1/2}` (dissertation equation 3.4).

    Kept factored with a signed scale: :math:`G = D^{-1/2} H [U, Y]`,
    :math:`s = (1, \dots, 1, -\lambda, \dots, -\lambda)`, rank k + r.

    Parameters
    ----------
    U : ndarray (n, k)
        Spectral embedding of the alternative clustering.
    existing : ndarray (n, r)
        One-hot matrix Y of the existing clustering (several clusterings:
        their one-hot matrices side by side, so :math:`YY^T = \sum_c Y_c Y_c^T`).
    degrees : ndarray (n,)
        Diagonal of D, held fixed during the W-step (ones: no normalisation).
    lam : float
        :math:`\lambda \ge 0`, weight of the novelty term.
    """
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be non-negative and finite, got {lam}")
    U = np.asarray(U, dtype=np.float64)
    Y = np.asarray(existing, dtype=np.float64)
    factor = _degree_scaled_centered(np.hstack([U, Y]), degrees)
    scale = np.concatenate([np.ones(U.shape[1]), np.full(Y.shape[1], -lam)])
    return Gamma(factor, scale)


def semi_supervised_gamma(U: np.ndarray, degrees: np.ndarray, score_factor: np.ndarray,
                          mu: float) -> Gamma:
    r"""Semi-supervised Gamma :math:`D^{-1/2} H U U^T H D^{-1/2} + \mu H K_{\hat Y} H`
    (ISM paper, equations 2-3), factored as :math:`[D^{-1/2} H U, H F]`, :math:`K_{\hat Y} = F F^T`.

    U from the centered U-step already satisfies HU = U, so the H around
    :math:`UU^T` only makes the factor exact for any U.
    """
    mu = float(mu)
    if not np.isfinite(mu) or mu < 0:
        raise ValueError(f"mu must be non-negative and finite, got {mu}")
    U = np.asarray(U, dtype=np.float64)
    F = np.asarray(score_factor, dtype=np.float64)
    if F.shape[0] != U.shape[0]:
        raise ValueError(f"the score factor has {F.shape[0]} rows but U has {U.shape[0]}")
    factor = np.hstack([_degree_scaled_centered(U, degrees), centered(F)])
    scale = np.concatenate([np.ones(U.shape[1]), np.full(F.shape[1], mu)])
    return Gamma(factor, scale)


def clustering_gamma(U: ArrayLike, degrees: ArrayLike) -> Gamma:
    r"""Unsupervised Gamma :math:`D^{-1/2} H U U^T H D^{-1/2}` as the factor
    :math:`G = D^{-1/2} H U` (ISM paper section 2; the
    W-step of :class:`ikdr.ISMClustering` and of KNet's epochs).

    Parameters
    ----------
    U : ndarray (n, k)
        Spectral embedding (orthonormal columns).
    degrees : ndarray (n,)
        Diagonal of D (all ones for the unnormalised HSIC).
    """
    d = np.asarray(degrees, dtype=np.float64)
    return Gamma(centered(U) / np.sqrt(d)[:, None])
