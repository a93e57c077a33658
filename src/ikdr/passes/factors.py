r"""Landmark selection and the low-rank factors of the kernel matrices of one pass.

With m landmark rows :math:`Z_L` of the projected data :math:`Z = XW`, every
member of a kernel contributes a *value* factor (the objective) and a
*derivative* factor (Phi) :math:`K \approx C S C^T`, :math:`C = K(Z, Z_L)`,
:math:`S = K(Z_L, Z_L)^+` (Nystrom), or random Fourier features
:math:`C = \sqrt{2/D}\cos(Z\Omega + b)`, :math:`S = I` (Gaussian only). See
:mod:`ikdr.passes.landmarks` for how a pass uses them.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.utils import check_random_state

from .._native import LandmarkFactor
from .._utils.eig import full_eigh
from .rows import row_blocks

__all__ = ["LANDMARK_METHODS", "DEFAULT_LANDMARK_METHOD", "select_landmarks", "kernel_factors",
           "check_kernel_approximable", "kernel_block"]

LANDMARK_METHODS = ("uniform", "kmeans++", "leverage")
#: landmark selection used by the estimators; chosen by the measurement in
#: benchmarks/bench_nystrom_ism.py (landmark-method table in
#: benchmarks/results/nystrom_ism.md): k-means++ seeding on XW gave the smallest
#: subspace angle to the exact fit at equal m on digits and at the median sigma;
#: ridge leverage scores at 0.25 x median on wine and cancer (docs/nystrom.md).
DEFAULT_LANDMARK_METHOD = "kmeans++"
#: relative squared Cholesky pivot below which K_mm is pseudo-inverted by eigenvalues
_CHOLESKY_MIN_PIVOT = 1e-6
#: k-means++ seeds from a uniform pool of this many rows per landmark (large n)
_KMEANSPP_POOL = 20


def _kmeanspp(Z, m, rng):
    """k-means++ seeding (D^2 sampling) on the rows of Z: m distinct indices."""
    n = Z.shape[0]
    Z = np.asarray(Z, dtype=np.float64)
    sq = np.einsum("ij,ij->i", Z, Z)
    first = int(rng.randint(n))
    chosen = [first]
    dist = np.maximum(sq + sq[first] - 2.0 * Z @ Z[first], 0.0)
    dist[first] = 0.0
    for _ in range(1, m):
        total = dist.sum()
        if total <= 0:
            # every point coincides with a landmark: fill up uniformly
            rest = np.setdiff1d(np.arange(n), chosen)
            chosen.extend(rng.choice(rest, m - len(chosen), replace=False).tolist())
            break
        i = int(np.searchsorted(np.cumsum(dist), rng.uniform(0, total)))
        i = min(i, n - 1)
        if dist[i] <= 0:
            continue
        chosen.append(i)
        dist = np.minimum(dist, np.maximum(sq + sq[i] - 2.0 * Z @ Z[i], 0.0))
        dist[i] = 0.0
    return np.array(chosen[:m])


def _leverage(Z, m, rng, kernel):
    r"""Approximate ridge leverage scores (Musco and Musco 2017, one round):
    from a uniform sample S of 2m rows, :math:`\tau_i \approx (k_{ii} - c_i^T (K_{SS} +
    \lambda I)^{-1} c_i)/\lambda` with :math:`\lambda` the (m/4)-th eigenvalue of
    :math:`K_{SS}` scaled to n; m rows are then drawn proportionally to
    :math:`\tau` without replacement."""
    n = Z.shape[0]
    s = min(n, 2 * m)
    S = np.sort(rng.choice(n, s, replace=False))
    ZS = np.ascontiguousarray(Z[S])
    KSS = np.asarray(kernel_block(kernel, ZS), dtype=np.float64)
    ev = np.sort(np.abs(np.linalg.eigvalsh(KSS)))[::-1]
    lam = max(float(ev[min(len(ev) - 1, max(0, m // 4))]), 1e-12 * float(ev[0]), 1e-300)
    inv = np.linalg.inv(KSS + lam * np.eye(s))
    tau = np.empty(n)
    for sl in row_blocks(n, Z.shape[1], width=s):
        Zb = np.ascontiguousarray(Z[sl])
        C = np.asarray(kernel_block(kernel, Zb, ZS), dtype=np.float64)
        tau[sl] = np.maximum(_diagonal(kernel, Zb) - np.einsum("ij,jk,ik->i", C, inv, C),
                             0.0) / lam
    tau += 1e-12 * tau.max() if tau.max() > 0 else 1.0
    p = tau / tau.sum()
    nonzero = int(np.count_nonzero(p))
    if nonzero < m:
        p = np.full(n, 1.0 / n)
    return rng.choice(n, m, replace=False, p=p)


def _diagonal(kernel, Zb, chunk=256):
    """:math:`k(z_i, z_i)` for the rows of Zb (small diagonal blocks of the kernel matrix)."""
    out = np.empty(Zb.shape[0])
    for s in range(0, Zb.shape[0], chunk):
        out[s:s + chunk] = np.diag(np.asarray(kernel_block(kernel, Zb[s:s + chunk]), dtype=np.float64))
    return out


def select_landmarks(Z, m, *, method=DEFAULT_LANDMARK_METHOD, kernel=None, random_state=None):
    """m distinct landmark rows of the points Z (n x q), sorted.

    ``"uniform"``: a uniform sample; ``"kmeans++"``: k-means++ seeding (D^2
    sampling on the Euclidean distances of Z); ``"leverage"``: approximate
    ridge leverage scores of ``kernel`` on Z (:func:`_leverage`).
    """
    n = Z.shape[0]
    m = int(m)
    if not 1 <= m <= n:
        raise ValueError(f"n_landmarks={m} must be between 1 and n_samples={n}")
    rng = check_random_state(random_state)
    if m == n:
        return np.arange(n)
    if method == "uniform":
        idx = rng.choice(n, m, replace=False)
    elif method == "kmeans++":
        if n > _KMEANSPP_POOL * m:
            # seeding costs O(n m q): on a uniform pool of _KMEANSPP_POOL m rows
            # it stays O(m^2 q) (n = 10^6, m = 2,048: a minute against seconds)
            pool = np.sort(rng.choice(n, _KMEANSPP_POOL * m, replace=False))
            idx = pool[_kmeanspp(np.asarray(Z[pool]), m, rng)]
        else:
            idx = _kmeanspp(Z, m, rng)
    elif method == "leverage":
        if kernel is None:
            raise ValueError("leverage-score landmarks need the kernel")
        idx = _leverage(np.asarray(Z, dtype=np.float64), m, rng, kernel)
    else:
        raise ValueError(f"landmark method must be one of {LANDMARK_METHODS}, got {method!r}")
    return np.sort(np.asarray(idx, dtype=np.intp))


class _Factor:
    """:math:`M \\approx C S C^T`: ``rows(Zb)`` gives the block of C, ``core`` is S.
    ``uses`` lists (kind, coefficient): kind "value" (objective), "inner"
    (:math:`X^T(\\Gamma\\circ M)X`) or "laplacian" (:math:`X^TL(\\Gamma\\circ M)X`).
    ``native``: the same rows as the core's sweeps make them
    (:class:`ikdr._native.LandmarkFactor`), or None (exact finite-rank
    and random-feature factors: their rows are made here)."""

    def __init__(self, rows, core, uses, native=None, core_factors=None):
        self.rows = rows
        self.core = np.asarray(core, dtype=np.float64)
        self.uses = list(uses)
        self.native = native
        self._core_factors = core_factors

    @property
    def products(self):
        """True when the factor enters Phi (a use other than the objective's value)."""
        return any(kind != "value" for kind, _ in self.uses)

    @property
    def core_factors(self):
        """``(P, N, upper)`` with :math:`S = PP^T - NN^T` (N None when S is
        positive semidefinite; ``upper``: P is upper triangular), so that a
        dense Phi's :math:`A S A^T` is :math:`(AP)(AP)^T - (AN)(AN)^T`: a
        symmetric rank-k product, half the flops of :math:`(AS)A^T`."""
        if self._core_factors is None:
            self._core_factors = _symmetric_factors(self.core)
        return self._core_factors


def _symmetric_factors(S, rcond=0.0):
    """``(P, N, False)``: :math:`S = PP^T - NN^T` from the eigenvalues of the
    symmetric S (those at most ``rcond`` of the largest in magnitude dropped)."""
    vals, vecs = full_eigh(0.5 * (S + S.T))
    top = np.abs(vals).max() if vals.size else 0.0
    pos, neg = vals > rcond * top, vals < -rcond * top
    P = vecs[:, pos] * np.sqrt(vals[pos])
    N = vecs[:, neg] * np.sqrt(-vals[neg]) if neg.any() else None
    return P, N, False


def _pinv_symmetric(K, rcond):
    """:math:`K^+` of a symmetric K and its factors (:attr:`_Factor.core_factors`):
    by Cholesky (a third of the eigensolver's flops) when K is well conditioned
    (every squared pivot above ``_CHOLESKY_MIN_PIVOT`` of the largest diagonal
    entry), :math:`K^{-1} = L^{-T}L^{-1}`, else by eigenvalues with those below
    ``rcond`` (relative) dropped: rank-deficient (polynomial, many landmarks at
    a wide sigma) and indefinite (multiquadric) kernels."""
    K = 0.5 * (K + K.T)
    m = K.shape[0]
    scale = float(np.max(np.abs(np.diag(K)))) if K.size else 0.0
    if scale > 0:
        lower, info = scipy.linalg.lapack.dpotrf(K, lower=1, clean=1)
        if info == 0 and float(np.min(np.diag(lower))) ** 2 > _CHOLESKY_MIN_PIVOT * scale:
            # L^{-1} by one triangular inversion, then K^{-1} = L^{-T} L^{-1} by one
            # GEMM (two triangular solves against the identity cost twice the flops,
            # once per landmark factor)
            inverse, info = scipy.linalg.lapack.dtrtri(lower, lower=1)
            if info == 0:
                upper = inverse.T
                return upper @ inverse, (upper, None, True)
    vals, vecs = full_eigh(K)
    top = np.abs(vals).max() if vals.size else 0.0
    keep = np.abs(vals) > rcond * top
    if not keep.any():
        return np.zeros_like(K), (np.zeros((m, 0)), None, False)
    V = vecs[:, keep]
    kept = vals[keep]
    pos, neg = kept > 0, kept < 0
    factors = (V[:, pos] / np.sqrt(kept[pos]), V[:, neg] / np.sqrt(-kept[neg]) if neg.any() else None,
               False)
    return (V / kept) @ V.T, factors


def _landmark_factor(kfun, ZL, dtype, part):
    ZLd = np.ascontiguousarray(ZL, dtype=dtype)
    Kmm = np.asarray(kfun(np.ascontiguousarray(ZL, dtype=np.float64), None), dtype=np.float64)
    rcond = 1e-10 if np.dtype(dtype) == np.float64 else 1e-5
    S, core_factors = _pinv_symmetric(Kmm, rcond)
    native = None if part.terms is None else LandmarkFactor(part.terms, ZLd,
                                                            part.negative_reciprocal)
    return _Factor(lambda Zb: kfun(Zb, ZLd), S, list(part.uses), native, core_factors)


def _rff_factor(omega, offset, uses):
    D = omega.shape[1]
    scale = np.sqrt(2.0 / D)

    def rows(Zb):
        out = Zb @ omega.astype(Zb.dtype) + offset.astype(Zb.dtype)
        np.cos(out, out=out)
        out *= scale
        return out
    return _Factor(rows, np.eye(D), uses, core_factors=(np.eye(D), None, True))


#: kernel blocks with fewer entries than this run on one thread of the core:
#: a thread team costs more than it saves there, and on busy cores many times the
#: block's own work (the threads' per-call cost: benchmarks/bench_call_overhead.py)
_SMALL_BLOCK = 1 << 20


def _threads(A, B):
    nb = A.shape[0] if B is None else B.shape[0]
    return 1 if A.shape[0] * nb < _SMALL_BLOCK else None


def kernel_block(kernel, A, B=None):
    """``kernel.matrix(A, B)`` with the thread rule above."""
    return kernel.matrix(A, B, n_threads=_threads(A, B))


def kernel_factors(kernel, ZL, dtype, *, rff=None):
    """The factors of one pass at the landmark points ``ZL`` (Nystrom) or with
    the random features ``rff = (omega, offset)``: each member's
    :meth:`~ikdr.kernels.Kernel.low_rank_parts` turned into factors."""
    q = ZL.shape[1] if ZL is not None else rff[0].shape[0]      # rff: omega is q x D
    factors = []
    for w, k in kernel.members():
        if w <= 0:
            continue
        for part in k.low_rank_parts(w):
            if part.rows is not None:
                factors.append(_Factor(part.rows, part.core(q), list(part.uses)))
            elif rff is not None and part.random_features_scale is not None:
                factors.append(_rff_factor(rff[0] / part.random_features_scale, rff[1],
                                           list(part.uses)))
            else:
                def matrix(A, B, matrix=part.matrix):
                    return matrix(A, B, _threads(A, B))
                factors.append(_landmark_factor(matrix, ZL, dtype, part))
    return factors


def check_kernel_approximable(kernel, approximation):
    """ValueError naming the problem when ``approximation`` cannot serve ``kernel``."""
    for w, k in kernel.members():
        if w <= 0:
            continue
        if k.needs_all_rows:
            raise ValueError(f"approximation={approximation!r} cannot serve the kernel {k!r}: its "
                             "per-point bandwidths need the whole data set; use kernel='gaussian'")
        if approximation == "rff" and not k.supports_random_features:
            raise ValueError(f"approximation='rff' (random Fourier features) serves the Gaussian "
                             f"kernel only, got {k!r}; use approximation='nystrom'")
    if not kernel.depends_on_w:
        raise ValueError(f"approximation={approximation!r} has nothing to approximate for the "
                         f"kernel {kernel!r}: its Phi does not depend on W, so the exact fit "
                         "already costs O(n d^2); use approximation=None")
