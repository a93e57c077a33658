r"""Landmark (Nystrom) and random-feature passes: ISM at millions of samples.

Every exact ISM pass forms the n x n weights :math:`\Psi = \Gamma \circ f'(K_{XW})`
tile by tile: :math:`O(n^2 d)` flops. Here the kernel matrices of the pass are
replaced by low-rank forms :math:`K \approx C S C^T` (DESIGN.md, "Passes with
landmarks"):

* **Nystrom** (``approximation="nystrom"``): m landmark samples, with
  :math:`Z = XW` and :math:`Z_L` their projected rows, :math:`C = K(Z, Z_L)`
  (n x m, by :meth:`ikdr.kernels.Kernel.matrix`, i.e. the native door) and
  :math:`S = K(Z_L, Z_L)^+` (pseudo-inverse, eigenvalues below a relative
  ``rcond`` dropped; signed, so indefinite kernels such as the multiquadric's
  similarity :math:`-\sqrt{\beta + c^2}` are served too).
* **Random Fourier features** (``approximation="rff"``, Gaussian only):
  :math:`C = \sqrt{2/D}\cos(Z\Omega + b)`, :math:`S = I` (Rahimi and Recht
  2007), the authors' library's default.

Each member of the kernel contributes a *value* factor (the objective) and a
*derivative* factor (Phi). Gaussian: both are K itself, Laplacian weight
:math:`-1/\sigma^2`. Multiquadric: value :math:`-\sqrt{\beta + c^2}`,
derivative the inverse multiquadric :math:`1/\sqrt{\beta + c^2}` with Laplacian
weight -1. Polynomial of degree p: derivative :math:`p(\beta + c)^{p-1}`
(an inner-product weight). Linear and squared members are represented exactly
(their factors are ``[Z]`` and ``[Z, |z|^2, 1]``), so conic combinations work.

With :math:`\Gamma = G\,\mathrm{diag}(s)\,G^T` and :math:`M = CSC^T`:

* :math:`X^T(\Gamma\circ M)X = \sum_r s_r (X^T\mathrm{diag}(g_r)C)\,S\,(X^T\mathrm{diag}(g_r)C)^T`;
* the degrees :math:`(\Gamma\circ M)1 = \sum_r s_r\, g_r \circ (C S (C^Tg_r))`;
* the objective :math:`1^T(\Gamma\circ K)1 = \sum_r s_r (C^Tg_r)^T S (C^Tg_r)`.

For the supervised :math:`\Gamma = HYY^TH` the loop over classes is avoided:
with class proportions p, :math:`a_i = p_{c_i}` and :math:`s = \|p\|^2`,
:math:`\Gamma_{ij} = [c_i = c_j] - a_i - a_j + s`, so
:math:`X^T(\Gamma\circ M)X = \sum_c B_cSB_c^T - ESB^T - BSE^T + sBSB^T` with
:math:`B_c = X_c^TC_c` (together one n x d x m product), :math:`B = \sum_c B_c`
and :math:`E = X^T\mathrm{diag}(a)C`: two n*d*m products per pass whatever
the number of classes, plus n*d^2 for the degree term
:math:`X^T\mathrm{diag}(\deg)X`. Nothing n x n is formed; memory is
:math:`O(n q + b m + m d)` beyond X (b rows per block).

Every pass is a sum over row blocks of X (:func:`row_blocks`), read one block
at a time, so X may be an ``np.memmap`` larger than memory and a distributed
helper can map the per-block terms (:meth:`LandmarkProblem.block_terms`).

References
----------
Williams, Seeger. Using the Nystrom method to speed up kernel machines. NIPS 2001.
Fowlkes, Belongie, Chung, Malik. Spectral grouping using the Nystrom method.
TPAMI 26 (2004).
Musco, Musco. Recursive sampling for the Nystrom method. NeurIPS 2017 (ridge
leverage scores). Arthur, Vassilvitskii. k-means++. SODA 2007.
Rahimi, Recht. Random features for large-scale kernel machines. NIPS 2007.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import ThreadpoolController

from ._config import get_num_threads
from ._eig import lapack_top
from ._ism_problem import KernelProblem
from ._solver import ism, principal_angle
from ._validation import check_magnitude
from .kernels import _MEDIAN_SUBSAMPLE, Gaussian, Linear, Multiquadratic, Polynomial, RelativeGaussian
from .kernels import Squared

__all__ = ["APPROXIMATIONS", "LANDMARK_METHODS", "Approximation", "make_approximation",
           "row_blocks", "check_rows", "sample_rows", "select_landmarks", "LandmarkProblem",
           "approximate_ism", "nystrom_spectral_embedding", "auto_landmarks"]

APPROXIMATIONS = (None, "nystrom", "rff")
LANDMARK_METHODS = ("uniform", "kmeans++", "leverage")
#: landmark selection used by the estimators; chosen by the measurement in
#: benchmarks/bench_nystrom_ism.py (landmark-method table in
#: benchmarks/results/nystrom_ism.md): k-means++ seeding on XW gave the smallest
#: subspace angle to the exact fit at equal m on digits and at the median sigma;
#: ridge leverage scores at 0.25 x median on wine and cancer (docs/nystrom.md).
DEFAULT_LANDMARK_METHOD = "kmeans++"
#: ``n_landmarks="auto"`` starts here and doubles ...
AUTO_START = 64
#: ... up to this many landmarks (its budget; at most n)
AUTO_MAX = 2048
#: ... until sin(largest principal angle) between successive fits is below this
AUTO_TOL = 1e-2
#: relative squared Cholesky pivot below which K_mm is pseudo-inverted by eigenvalues
_CHOLESKY_MIN_PIVOT = 1e-6
#: relative gradient at which the trust region stops on an approximate problem
APPROX_GTOL = 1e-4
#: an approximate fit that stalls above this relative gradient has not found a maximum
APPROX_WARN_GTOL = 1e-2
#: k-means++ seeds from a uniform pool of this many rows per landmark (large n)
_KMEANSPP_POOL = 20
#: rows of X per block: about this many bytes of X (float64) per block
BLOCK_BYTES = 1 << 25
#: a block product above this many flops runs on ikdr's threads (see LandmarkProblem._pass)
_THREADED_BLOCK_FLOPS = 1e8
_CONTROLLER = None


def _blas_threads(big):
    """Context: the BLAS on ikdr's thread count (``big``) or on one thread. One
    cached controller: a fresh ``threadpool_limits`` scans the loaded libraries
    (measured 56 ms a call)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=get_num_threads() if big else 1, user_api="blas")
#: random Fourier features: their count is ``n_landmarks`` ("auto" starts at)
RFF_DEFAULT = 500


# --------------------------------------------------------------------------
# Data in row blocks
# --------------------------------------------------------------------------
def _block_rows(d, block_rows=None, width=0):
    if block_rows is not None:
        return max(1, int(block_rows))
    return max(256, BLOCK_BYTES // (8 * max(1, d, width)))


def row_blocks(n, d, block_rows=None, *, width=0):
    """The ``slice`` objects of the row blocks of an n x d array; ``width``: the
    widest n_b x width array a block makes (m landmark columns), which bounds it too."""
    b = _block_rows(d, block_rows, width)
    return [slice(s, min(n, s + b)) for s in range(0, n, b)]


def check_rows(X, name="X", *, block_rows=None):
    """Validate a 2-D real array (an ndarray or ``np.memmap``) one row block at a
    time, never loading or copying it whole: at least 2 rows, finite (NaN or
    infinity: a ValueError naming the first bad row), values whose squares do
    not overflow. Returns X unchanged (float32 and float64 kept; other in-memory
    dtypes are converted to float64)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        raise TypeError(f"{name}: sparse input is not supported here; pass a dense array")
    if not isinstance(X, np.ndarray):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        if isinstance(X, np.memmap):
            raise ValueError(f"{name} is a memmap of dtype {X.dtype}; the landmark passes read "
                             "float32 or float64 memmaps")
        X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n < 2:
        raise ValueError(f"{name} has {n} sample(s); at least 2 are required")
    if d < 1:
        raise ValueError(f"{name} has 0 features")
    biggest = 0.0
    for sl in row_blocks(n, d, block_rows):
        B = np.asarray(X[sl])
        bad = ~np.isfinite(B)
        if bad.any():
            i = sl.start + int(np.argmax(bad.any(axis=1)))
            raise ValueError(f"{name} contains NaN or infinite values (first in row {i})")
        biggest = max(biggest, float(np.max(np.abs(B))) if B.size else 0.0)
    check_magnitude(biggest, X.dtype, name)
    return X


def sample_rows(X, max_samples, random_state=None):
    """At most ``max_samples`` rows of X (float64) drawn as :func:`ikdr.median_sigma`
    draws them (the same seeded choice), read without loading X whole."""
    n = X.shape[0]
    if n <= max_samples:
        return np.asarray(X, dtype=np.float64)
    idx = check_random_state(random_state).choice(n, max_samples, replace=False)
    order = np.argsort(idx)
    rows = np.asarray(X[idx[order]], dtype=np.float64)
    out = np.empty_like(rows)
    out[order] = rows
    return out


def fit_kernel_on_rows(kernel, X, random_state=None):
    """The kernel's data-dependent parameters from at most 3,000 rows drawn as
    :func:`ikdr.median_sigma` draws them (X is not loaded whole: a memmap, or
    the blocks of a dask array on a cluster)."""
    return kernel.fit(sample_rows(X, _MEDIAN_SUBSAMPLE, random_state),
                      random_state=random_state)


def _project(X, W, dtype, block_rows=None):
    """Z = XW (n x q) in ``dtype``, by row blocks."""
    n, d = X.shape
    W = np.asarray(W, dtype=dtype)
    Z = np.empty((n, W.shape[1]), dtype=dtype)
    for sl in row_blocks(n, d, block_rows):
        Z[sl] = np.asarray(X[sl], dtype=dtype) @ W
    return Z


# --------------------------------------------------------------------------
# Landmark selection
# --------------------------------------------------------------------------
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
    KSS = np.asarray(_matrix(kernel, ZS), dtype=np.float64)
    ev = np.sort(np.abs(np.linalg.eigvalsh(KSS)))[::-1]
    lam = max(float(ev[min(len(ev) - 1, max(0, m // 4))]), 1e-12 * float(ev[0]), 1e-300)
    inv = np.linalg.inv(KSS + lam * np.eye(s))
    tau = np.empty(n)
    for sl in row_blocks(n, Z.shape[1], width=s):
        Zb = np.ascontiguousarray(Z[sl])
        C = np.asarray(_matrix(kernel, Zb, ZS), dtype=np.float64)
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
        out[s:s + chunk] = np.diag(np.asarray(_matrix(kernel, Zb[s:s + chunk]), dtype=np.float64))
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
        idx = _leverage(Z, m, rng, kernel)
    else:
        raise ValueError(f"landmark method must be one of {LANDMARK_METHODS}, got {method!r}")
    return np.sort(np.asarray(idx, dtype=np.intp))


# --------------------------------------------------------------------------
# Low-rank factors of the kernel matrices of one pass
# --------------------------------------------------------------------------
class _Factor:
    """:math:`M \\approx C S C^T`: ``rows(Zb)`` gives the block of C, ``core`` is S.
    ``uses`` lists (kind, coefficient): kind "value" (objective), "inner"
    (:math:`X^T(\\Gamma\\circ M)X`) or "laplacian" (:math:`X^TL(\\Gamma\\circ M)X`)."""

    def __init__(self, rows, core, uses):
        self.rows = rows
        self.core = np.asarray(core, dtype=np.float64)
        self.uses = list(uses)


def _pinv_symmetric(K, rcond):
    """:math:`K^+` of a symmetric K: by Cholesky (a third of the eigensolver's
    flops) when K is well conditioned (every squared pivot above
    ``_CHOLESKY_MIN_PIVOT`` of the largest diagonal entry), else by eigenvalues
    with those below ``rcond`` (relative) dropped: rank-deficient (polynomial,
    many landmarks at a wide sigma) and indefinite (multiquadric) kernels."""
    K = 0.5 * (K + K.T)
    scale = float(np.max(np.abs(np.diag(K)))) if K.size else 0.0
    if scale > 0:
        try:
            factor = scipy.linalg.cho_factor(K, lower=True)
            if float(np.min(np.diag(factor[0]))) ** 2 > _CHOLESKY_MIN_PIVOT * scale:
                return scipy.linalg.cho_solve(factor, np.eye(K.shape[0]))
        except np.linalg.LinAlgError:
            pass
    vals, vecs = scipy.linalg.eigh(K)
    top = np.abs(vals).max() if vals.size else 0.0
    keep = np.abs(vals) > rcond * top
    if not keep.any():
        return np.zeros_like(K)
    V = vecs[:, keep]
    return (V / vals[keep]) @ V.T


def _landmark_factor(kfun, ZL, dtype, uses):
    ZLd = np.ascontiguousarray(ZL, dtype=dtype)
    Kmm = np.asarray(kfun(np.ascontiguousarray(ZL, dtype=np.float64), None), dtype=np.float64)
    rcond = 1e-10 if np.dtype(dtype) == np.float64 else 1e-5
    S = _pinv_symmetric(Kmm, rcond)
    return _Factor(lambda Zb: kfun(Zb, ZLd), S, uses)


def _rff_factor(omega, offset, uses):
    D = omega.shape[1]
    scale = np.sqrt(2.0 / D)

    def rows(Zb):
        out = Zb @ omega.astype(Zb.dtype) + offset.astype(Zb.dtype)
        np.cos(out, out=out)
        out *= scale
        return out
    return _Factor(rows, np.eye(D), uses)


def _ones_factor(uses):
    return _Factor(lambda Zb: np.ones((Zb.shape[0], 1), dtype=Zb.dtype), np.ones((1, 1)), uses)


#: kernel blocks with fewer entries than this run on one thread of the core:
#: a thread team costs more than it saves there (178 x 50: 4 ms on one thread,
#: 50 ms on two busy cores)
_SMALL_BLOCK = 1 << 20


def _threads(A, B):
    nb = A.shape[0] if B is None else B.shape[0]
    return 1 if A.shape[0] * nb < _SMALL_BLOCK else None


def _matrix(kernel, A, B=None):
    """``kernel.matrix(A, B)`` with the thread rule above."""
    return kernel.matrix(A, B, n_threads=_threads(A, B))


def _matrix_fn(kernel):
    def fn(A, B):
        return _matrix(kernel, A, B)
    return fn


def kernel_factors(kernel, ZL, dtype, *, rff=None):
    """The factors of one pass at the landmark points ``ZL`` (Nystrom) or with
    the random features ``rff = (omega, offset)``; see the module docstring."""
    factors = []
    for w, k in kernel.members():
        if w <= 0:
            continue
        if isinstance(k, Gaussian):
            uses = [("value", w), ("laplacian", -w / float(k.sigma) ** 2)]
            if rff is not None:
                factors.append(_rff_factor(rff[0] / float(k.sigma), rff[1], uses))
            else:
                factors.append(_landmark_factor(_matrix_fn(k), ZL, dtype, uses))
        elif isinstance(k, Multiquadratic):
            factors.append(_landmark_factor(_matrix_fn(k), ZL, dtype, [("value", w)]))

            def imq(A, B, k=k):
                return -1.0 / _matrix(k, A, B)
            factors.append(_landmark_factor(imq, ZL, dtype, [("laplacian", -w)]))
        elif isinstance(k, Polynomial) and int(k.degree) > 1:
            p = int(k.degree)
            factors.append(_landmark_factor(_matrix_fn(k), ZL, dtype, [("value", w)]))
            factors.append(_landmark_factor(_matrix_fn(Polynomial(p - 1, k.c)), ZL, dtype,
                                            [("inner", w * p)]))
        elif isinstance(k, (Linear, Polynomial)):
            # (beta + c)^1 = z_i.z_j + c: exact factor [Z, 1] with S = diag(1, .., 1, c)
            c = float(k.c) if isinstance(k, Polynomial) else 0.0
            q = ZL.shape[1]
            core = np.diag(np.r_[np.ones(q), c])
            factors.append(_Factor(lambda Zb: np.hstack([Zb, np.ones((Zb.shape[0], 1), Zb.dtype)]),
                                   core, [("value", w)]))
            factors.append(_ones_factor([("inner", w)]))
        elif isinstance(k, Squared):
            q = ZL.shape[1]
            core = np.zeros((q + 2, q + 2))
            core[:q, :q] = 2.0 * np.eye(q)
            core[q, q + 1] = core[q + 1, q] = -1.0

            def sq_rows(Zb):
                s = np.einsum("ij,ij->i", Zb, Zb)[:, None]
                return np.hstack([Zb, s, np.ones_like(s)])
            factors.append(_Factor(sq_rows, core, [("value", w)]))
            factors.append(_ones_factor([("laplacian", -2.0 * w)]))
        else:
            raise ValueError(f"no landmark approximation for the kernel member {k!r}")
    return factors


def check_kernel_approximable(kernel, approximation):
    """ValueError naming the problem when ``approximation`` cannot serve ``kernel``."""
    members = [k for w, k in kernel.members() if w > 0]
    for k in members:
        if isinstance(k, RelativeGaussian):
            raise ValueError(f"approximation={approximation!r} cannot serve the kernel {k!r}: its "
                             "per-point bandwidths need the whole data set; use kernel='gaussian'")
        if approximation == "rff" and not isinstance(k, (Gaussian, Linear, Squared)):
            raise ValueError(f"approximation='rff' (random Fourier features) serves the Gaussian "
                             f"kernel only, got {k!r}; use approximation='nystrom'")
    if not kernel.depends_on_w:
        raise ValueError(f"approximation={approximation!r} has nothing to approximate for the "
                         f"kernel {kernel!r}: its Phi does not depend on W, so the exact fit "
                         "already costs O(n d^2); use approximation=None")


# --------------------------------------------------------------------------
# Gamma's structure
# --------------------------------------------------------------------------
class _GammaStructure:
    """A factored Gamma as the passes use it: the class-indicator form of the
    supervised :math:`HYY^TH` when it is one (detected from the factor), else
    the general signed factor."""

    def __init__(self, gamma):
        if not gamma.is_factored:
            raise ValueError("the landmark approximation needs a factored Gamma "
                             "(G diag(s) G^T); a dense Gamma has no such structure")
        G, s, _ = gamma.arrays(np.float64)
        self.G = G
        self.s = np.ones(G.shape[1]) if s is None else np.asarray(s, dtype=np.float64)
        self.codes = None
        if np.all(self.s == 1.0) and G.shape[1] >= 2:
            p = -G.min(axis=0)
            Y = G + p
            codes = np.argmax(Y, axis=1)
            onehot = np.zeros_like(Y)
            onehot[np.arange(Y.shape[0]), codes] = 1.0
            if np.allclose(Y, onehot, atol=1e-12) and np.allclose(p, onehot.mean(axis=0), atol=1e-12):
                self.codes = codes
                self.p = p
                self.a = p[codes]
                self.ssq = float(p @ p)
                self.n_classes = G.shape[1]

    @property
    def classes(self):
        return self.codes is not None

    def columns(self, sl):
        """The block's columns that the first sweep multiplies by C^T:
        ``[Y, 1, a]`` (classes) or ``G`` (general)."""
        if self.classes:
            c = self.codes[sl]
            E = np.zeros((c.shape[0], self.n_classes + 2))
            E[np.arange(c.shape[0]), c] = 1.0
            E[:, -2] = 1.0
            E[:, -1] = self.a[sl]
            return E
        return self.G[sl]

    def value(self, P, S):
        """:math:`1^T(\\Gamma\\circ CSC^T)1` from P = C^T columns."""
        SP = S @ P
        if self.classes:
            k = self.n_classes
            within = float(np.einsum("ij,ij->", P[:, :k], SP[:, :k]))
            return within - 2.0 * float(P[:, -1] @ SP[:, -2]) + self.ssq * float(P[:, -2] @ SP[:, -2])
        return float(np.einsum("ij,ij,j->", P, SP, self.s))

    def degrees(self, sl, C, SP):
        """Rows ``sl`` of :math:`(\\Gamma\\circ CSC^T)1` (C the block of C, SP = S P)."""
        T = C @ SP.astype(C.dtype)
        if self.classes:
            k = self.n_classes
            c = self.codes[sl]
            own = T[np.arange(T.shape[0]), c]
            return own - self.a[sl] * T[:, k] - T[:, k + 1] + self.ssq * T[:, k]
        return (T * self.G[sl]) @ self.s


# --------------------------------------------------------------------------
# The approximate problem: the solver's interface over landmark passes
# --------------------------------------------------------------------------

def _class_products(A, B, structure, rows, dtype):
    """Per row block of a supervised Gamma (class indicators, DESIGN.md section 6):
    ``A_c^T B_c`` for every class c (classes x a x b) and ``A^T diag(a) B`` (float64),
    the two pieces every landmark pass combines."""
    codes = structure.codes[rows]
    per_class = np.zeros((structure.n_classes, A.shape[1], B.shape[1]))
    for c in range(structure.n_classes):
        members = codes == c
        if members.any():
            per_class[c] = A[members].T @ B[members]
    cross = A.T @ (structure.a[rows].astype(dtype)[:, None] * B)
    return per_class, np.asarray(cross, dtype=np.float64)

class LandmarkProblem(KernelProblem):
    """Objective, Phi and Phi-products of ``Tr(Gamma K_XW)`` with every kernel
    matrix replaced by its landmark (or random-feature) factorisation: the
    passes of :class:`ikdr._ism_problem.KernelProblem` (``product``,
    ``objective``, ``phi0``) replaced, its counters and Hessian products
    inherited, so the driver, its trust region and its certificate run on it
    unchanged.

    The landmark *indices* are fixed for the problem's life (chosen lazily on
    XW at the first W the solver evaluates, i.e. the Phi_0 start); the
    landmark *points* :math:`X_L W` move with W.
    """

    supports_coarse = False     # its passes are its own, not the kernel layer's

    def __init__(self, X, gamma, kernel, n_threads, *, approximation):
        super().__init__(X, gamma, kernel, n_threads)
        self._X64 = X         # passes cast X block by block; never a whole copy
        self.approx = approximation
        self.dtype = approximation.compute_dtype(X)
        self.structure = _GammaStructure(gamma)
        self.index = approximation.index
        self.XL = None if self.index is None else np.asarray(X[self.index], dtype=np.float64)
        self.rff = None       # (omega, offset), drawn at the first W (its q columns)

    # -- landmarks ------------------------------------------------------------
    def _ensure_landmarks(self, W):
        if self.approx.kind == "rff" or self.XL is not None:
            return
        a = self.approx
        Z = _project(self.X, W, np.float64, a.block_rows)
        self.index = select_landmarks(Z, min(a.m, self.X.shape[0]), method=a.method,
                                      kernel=self.kernel, random_state=a.random_state)
        a.index = self.index
        self.XL = np.asarray(self.X[self.index], dtype=np.float64)

    def _factors(self, W):
        q = W.shape[1]
        if not np.any(W):
            # W = 0 (Phi_0): every beta is 0 and every kernel matrix is constant,
            # which one landmark reproduces exactly.
            return kernel_factors(self.kernel, np.zeros((1, q)), self.dtype)
        self._ensure_landmarks(W)
        if self.approx.kind == "rff" and self.rff is None:
            self.rff = self.approx.rff_parameters(q)
        ZL = None if self.XL is None else self.XL @ W
        return kernel_factors(self.kernel, ZL, self.dtype, rff=self.rff)

    # -- the passes ------------------------------------------------------------
    def block_terms(self, W, sl, factors, V=None, dense=False):
        """First-sweep terms of one row block (a distributed pass sums these):
        Z_b, per factor C^T columns (P), and the products that need no degrees."""
        st = self.structure
        Xb = np.asarray(self.X[sl], dtype=self.dtype)
        Zb = Xb @ W.astype(self.dtype)
        E = st.columns(sl).astype(self.dtype)
        Rb = None if V is None else Xb @ V.astype(self.dtype)
        out = []
        for f in factors:
            C = np.asarray(f.rows(Zb))
            P = np.asarray(C.T @ E, dtype=np.float64)
            A = None
            if dense and any(kind != "value" for kind, _ in f.uses):
                A = self._x_gamma_c(Xb, C, sl)
            Q = None if Rb is None else self._c_gamma_r(C, Rb, sl)
            out.append((P, A, Q))
        return Zb, Rb, out

    def _x_gamma_c(self, Xb, C, sl):
        """Per block: class terms ``(sum_c X_c^T C_c per class, X^T diag(a) C)`` or
        general ``X^T diag(g_r) C`` for every r, all d x m (float64)."""
        st = self.structure
        if st.classes:
            return _class_products(Xb, C, st, sl, C.dtype)
        Gb = st.G[sl].astype(C.dtype)
        return np.stack([np.asarray(Xb.T @ (Gb[:, j, None] * C), dtype=np.float64)
                         for j in range(Gb.shape[1])], axis=1)

    def _c_gamma_r(self, C, Rb, sl):
        """Per block: ``C^T`` times the right-hand side split by Gamma's structure."""
        st = self.structure
        if st.classes:
            return _class_products(C, Rb, st, sl, C.dtype)
        Gb = st.G[sl].astype(C.dtype)
        r, k = Gb.shape[1], Rb.shape[1]
        stacked = (Gb[:, :, None] * Rb[:, None, :]).reshape(Rb.shape[0], r * k)
        return np.asarray(C.T @ stacked, dtype=np.float64).reshape(C.shape[1], r, k)

    @staticmethod
    def _add(total, part):
        if total is None:
            return part
        if isinstance(part, tuple):
            return tuple(t + p for t, p in zip(total, part))
        return total + part

    def _pass(self, W, V=None, dense=False):
        """One pass: (objective, dense Phi or None, Phi V or None).

        The BLAS runs with ikdr's thread count when a block's main product is
        large (about 1e8 flops) and with one thread otherwise: small products
        gain nothing from threads, and a threaded BLAS on busy cores was
        measured 10x slower (digits, m = 200: 2.3 s against 0.25 s a pass)."""
        n, d = self.X.shape
        m = self.approx.m if isinstance(self.approx.m, int) else 1
        big = min(n, _block_rows(d, self.approx.block_rows, m)) * d * m > _THREADED_BLOCK_FLOPS
        with _blas_threads(big):
            return self._pass_blocks(W, V, dense)

    def _pass_blocks(self, W, V, dense):
        W = np.asarray(W, dtype=np.float64)
        n, d = self.X.shape
        factors = self._factors(W)
        st = self.structure
        width = max([f.core.shape[0] for f in factors] + [1])
        blocks = row_blocks(n, d, self.approx.block_rows, width=width)
        sums = [[None, None, None] for _ in factors]
        for sl in blocks:
            _, _, terms = self.block_terms(W, sl, factors, V=V, dense=dense)
            for acc, term in zip(sums, terms):
                for j in range(3):
                    if term[j] is not None:
                        acc[j] = self._add(acc[j], term[j])
        objective = 0.0
        phi = np.zeros((d, d)) if dense else None
        lap_weight = [0.0] * len(factors)
        need_second = False
        SPs = []
        for i, (f, (P, A, Q)) in enumerate(zip(factors, sums)):
            SP = f.core @ P
            SPs.append(SP)
            for kind, coef in f.uses:
                if kind == "value":
                    objective += coef * st.value(P, f.core)
                    continue
                sign = 1.0 if kind == "inner" else -1.0
                if dense:
                    phi += sign * coef * self._quadratic(A, f.core)
                if kind == "laplacian":
                    lap_weight[i] += coef
                    need_second = True
        if V is not None or (dense and need_second):
            PV = np.zeros((d, V.shape[1])) if V is not None else None
            for sl in blocks:
                Xb = np.asarray(self.X[sl], dtype=self.dtype)
                Zb = Xb @ W.astype(self.dtype)
                Rb = None if V is None else Xb @ V.astype(self.dtype)
                deg = None
                ob = None if V is None else np.zeros(Rb.shape, dtype=np.float64)
                for i, f in enumerate(factors):
                    uses = [(k, c) for k, c in f.uses if k != "value"]
                    if not uses:
                        continue
                    C = np.asarray(f.rows(Zb))
                    if lap_weight[i] != 0.0:
                        part = lap_weight[i] * st.degrees(sl, C, SPs[i])
                        deg = part if deg is None else deg + part
                    if V is not None:
                        MR = self._gamma_m_r(C, f.core, sums[i][2], sl)
                        for kind, coef in uses:
                            ob += (coef if kind == "inner" else -coef) * MR
                if deg is not None and dense:
                    phi += np.asarray(Xb.T @ (deg.astype(self.dtype)[:, None] * Xb), dtype=np.float64)
                if V is not None:
                    if deg is not None:
                        ob += deg[:, None] * Rb
                    PV += np.asarray(Xb.T @ ob.astype(self.dtype), dtype=np.float64)
        if dense:
            phi = 0.5 * (phi + phi.T)
        return objective, phi, (PV if V is not None else None)

    def _quadratic(self, A, S):
        r""":math:`X^T(\Gamma\circ CSC^T)X` from the first sweep's d x m products."""
        st = self.structure
        if st.classes:
            Bc, Ea = A
            B = Bc.sum(axis=0)
            out = np.einsum("cdm,mk,cek->de", Bc, S, Bc, optimize=True)
            BS = B @ S
            cross = Ea @ BS.T
            return out - cross - cross.T + st.ssq * (BS @ B.T)
        r = A.shape[1]
        out = np.zeros((A.shape[0], A.shape[0]))
        for j in range(r):
            Aj = A[:, j, :]
            out += st.s[j] * (Aj @ S @ Aj.T)
        return out

    def _gamma_m_r(self, C, S, Q, sl):
        r"""Rows ``sl`` of :math:`(\Gamma\circ CSC^T)R` from the first sweep's C^T R terms."""
        st = self.structure
        C = np.asarray(C, dtype=np.float64)
        if st.classes:
            Qc, Qa = Q
            codes = st.codes[sl]
            Q1 = Qc.sum(axis=0)
            out = np.empty((C.shape[0], Qa.shape[1]))
            for c in range(st.n_classes):
                rows = codes == c
                if rows.any():
                    out[rows] = C[rows] @ (S @ Qc[c])
            a = st.a[sl][:, None]
            return out - a * (C @ (S @ Q1)) - C @ (S @ Qa) + st.ssq * (C @ (S @ Q1))
        r = Q.shape[1]
        G = st.G[sl]
        out = np.zeros((C.shape[0], Q.shape[2]))
        for j in range(r):
            out += st.s[j] * G[:, j, None] * (C @ (S @ Q[:, j, :]))
        return out

    # -- the driver's interface (counters and Hessian products inherited) -------
    def _pass_in(self, native, W, V=None, dense=False):
        """A pass in the problem's precision (``native``: the plain steps) or in
        float64, as the exact problem's trust region and certificate get theirs:
        float32 block sums carry relative errors near 1e-6, enough to refuse
        good steps and to stall a trust region (measured: 89 passes instead of
        about 10 at 30,000 x 784)."""
        if native or self.dtype == np.float64:
            return self._pass(W, V=V, dense=dense)
        saved, self.dtype = self.dtype, np.dtype(np.float64)
        try:
            return self._pass(W, V=V, dense=dense)
        finally:
            self.dtype = saved

    def phi0(self):
        d = self.X.shape[1]
        return self._pass_in(False, np.zeros((d, 1)), dense=True)[1]

    def objective(self, W, native=False):
        self.n_objective += 1
        return self._pass_in(native, W)[0]

    def product(self, W, V=None, native=False):
        if V is None:
            objective, phi, _ = self._pass_in(native, W, dense=True)
            return phi, objective
        objective, _, PV = self._pass_in(native, W, V=np.asarray(V, dtype=np.float64))
        return PV, objective


# --------------------------------------------------------------------------
# The user-facing approximation and the auto rule
# --------------------------------------------------------------------------
def check_n_landmarks(n_landmarks, n_samples=None):
    """``"auto"`` or an int in [1, n_samples]; a ValueError naming the problem."""
    if isinstance(n_landmarks, str):
        if n_landmarks != "auto":
            raise ValueError(f'n_landmarks must be "auto" or a positive int, got {n_landmarks!r}')
        return "auto"
    if isinstance(n_landmarks, bool) or not isinstance(n_landmarks, numbers.Integral):
        raise TypeError(f'n_landmarks must be "auto" or a positive int, got '
                        f"{type(n_landmarks).__name__}")
    m = int(n_landmarks)
    if m < 1:
        raise ValueError(f"n_landmarks must be a positive int, got {m} (zero or negative)")
    if n_samples is not None and m > n_samples:
        raise ValueError(f"n_landmarks={m} is larger than the number of samples n={n_samples}")
    return m


class Approximation:
    """Settings of a landmark or random-feature approximation, handed to
    :func:`ikdr.ism` as ``approximation=`` (the solver's hook).

    Parameters
    ----------
    kind : {"nystrom", "rff"}
    n_landmarks : int
        m landmarks (Nystrom) or D random features (rff).
    method : {"uniform", "kmeans++", "leverage"}
    dtype : numpy dtype or None
        Precision of the block products (None: float32 for float32 X, else float64).
    random_state, block_rows
    """

    def __init__(self, kind="nystrom", n_landmarks=256, *, method=DEFAULT_LANDMARK_METHOD,
                 dtype=None, random_state=None, block_rows=None):
        if kind not in ("nystrom", "rff"):
            raise ValueError(f"approximation must be None, 'nystrom' or 'rff', got {kind!r}")
        if method not in LANDMARK_METHODS:
            raise ValueError(f"landmark method must be one of {LANDMARK_METHODS}, got {method!r}")
        self.kind = kind
        self.m = check_n_landmarks(n_landmarks)
        self.method = method
        self.dtype = dtype
        self.random_state = random_state
        self.block_rows = block_rows
        self.index = None

    def compute_dtype(self, X):
        if self.dtype is not None:
            return np.dtype(self.dtype)
        return np.dtype(np.float32) if X.dtype == np.float32 else np.dtype(np.float64)

    def rff_parameters(self, q):
        """(omega, offset) of the random features in the q-dimensional projected space,
        drawn once per problem from ``random_state`` (omega unscaled: divided by sigma)."""
        rng = check_random_state(self.random_state)
        return rng.standard_normal((q, self.m)), rng.uniform(0, 2 * np.pi, self.m)

    # -- the solver's hook ------------------------------------------------------
    def check_data(self, X):
        return check_rows(X, block_rows=self.block_rows)

    def fit_kernel(self, kernel, X, random_state=None):
        return fit_kernel_on_rows(kernel, X, random_state)

    def problem(self, X, gamma, kernel, n_threads):
        check_kernel_approximable(kernel, self.kind)
        return LandmarkProblem(X, gamma, kernel, n_threads, approximation=self)


def make_approximation(approximation, n_landmarks, n_samples, *, dtype=None, random_state=None,
                       method=DEFAULT_LANDMARK_METHOD):
    """Validate the estimators' ``approximation`` / ``n_landmarks`` pair; None or
    ``(kind, m_or_"auto")``."""
    if approximation is None:
        return None
    if approximation not in ("nystrom", "rff"):
        raise ValueError(f"approximation must be None, 'nystrom' or 'rff', got {approximation!r}")
    m = check_n_landmarks(n_landmarks, n_samples)
    return approximation, m


def landmark_data(estimator, X, y, kernel, *, multi_output=True):
    """The estimators' input path with an approximation (ValueErrors before any long work).

    Checks ``approximation``, ``n_landmarks`` and that the approximation can
    serve ``kernel`` first, then X by row blocks (:func:`check_rows`: an
    ``np.memmap`` is never loaded whole, NaN anywhere is found), then y
    (in memory, same length); sets ``n_features_in_``. Returns (X, y).
    """
    from sklearn.utils import check_array, check_consistent_length

    approximation = estimator.approximation
    if approximation not in ("nystrom", "rff"):
        raise ValueError(f"approximation must be None, 'nystrom' or 'rff', got {approximation!r}")
    n_landmarks = check_n_landmarks(estimator.n_landmarks)
    check_kernel_approximable(kernel, approximation)
    n = np.shape(X)[0] if hasattr(X, "shape") else len(X)
    if isinstance(n_landmarks, int) and approximation == "nystrom" and n_landmarks > n:
        raise ValueError(f"n_landmarks={n_landmarks} is larger than the number of samples n={n}")
    X = check_rows(X)
    if y is not None:
        y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=False,
                        input_name="y")
        if y.ndim == 2 and not multi_output:
            y = y.ravel()
        check_consistent_length(X, y)
    estimator.n_features_in_ = X.shape[1]
    return X, y


def _fit_at(X, gamma, kernel, q, m, kind, W0, ism_kwargs, method, dtype, random_state,
            block_rows):
    approx = Approximation(kind, m, method=method, dtype=dtype, random_state=random_state,
                           block_rows=block_rows)
    # The solver's d x d algebra (eigh, trust region) on one BLAS thread: OpenBLAS's
    # threaded dsyevr collapses on busy cores (784 x 784: 7.9 s against about
    # 0.3 s); the passes raise it again for their large block products.
    with _blas_threads(False):
        result = ism(X, gamma, kernel, q, W0=W0, approximation=approx, warn=False, **ism_kwargs)
    return result, approx


def approximate_ism(X, gamma, kernel, q, *, approximation="nystrom", n_landmarks="auto",
                    method=DEFAULT_LANDMARK_METHOD, polish=False, W0=None, dtype=None,
                    random_state=None, block_rows=None, auto_tol=AUTO_TOL, auto_max=AUTO_MAX,
                    polish_kwargs=None, **ism_kwargs):
    r"""ISM on a landmark (or random-feature) approximation, with the "auto" rule
    and the optional exact polish.

    ``n_landmarks="auto"`` starts at :data:`AUTO_START` landmarks (Nystrom) or
    :data:`RFF_DEFAULT` features (rff) and doubles m, warm-starting each fit
    from the last, until the sine of the largest principal angle between two
    successive fits is below ``auto_tol``; it stops at ``min(n, auto_max)``
    and then warns (``ConvergenceWarning``) with its last estimate. m = n
    (every sample a landmark) is the exact kernel: that fit runs the exact
    passes (:func:`ikdr.ism` with the caller's options) rather than the
    landmark form, whose pseudo-inverse of the n x n kernel matrix would only
    add its rounding, and needs no warning.

    ``polish=True`` continues from the approximate fixed point with exact
    passes (:func:`ikdr.ism` without approximation, ``polish_kwargs`` its
    stopping rule): the exact answer in fewer exact passes than a cold start.

    Returns
    -------
    result : ISMResult (of the polish when ``polish``)
    info : dict with ``n_landmarks`` (m used), ``auto`` (list of (m, sin change)),
        ``approximate_result`` (the approximate fit), ``index`` (landmark rows).
    """
    from .kernels import make_kernel

    n = X.shape[0]
    kernel = make_kernel(kernel)
    check_kernel_approximable(kernel, approximation)
    # The polish is an exact fit: it takes the caller's options as given, not
    # the approximate fit's defaults below (their looser gtol would stop it
    # short of the exact maximum).
    exact_kwargs = dict(ism_kwargs)
    # A dense Phi pass costs O(n d m) here (no n^2 panel to amortise): the
    # matrix-free eigensolver's many thin passes do not pay.
    ism_kwargs.setdefault("phi_solver", "dense")
    # The approximate fit's certificate would certify the approximate objective,
    # at tens of passes for its Hessian estimate: first order only (the polish,
    # when asked, certifies the exact answer).
    ism_kwargs.setdefault("certify", False)
    # Phi of the approximate problem is the landmark form of the exact Phi, not
    # the exact gradient of the approximate objective (the landmark points move
    # with W): the trust region's gradient tolerance can stall by design there.
    # The approximation's error is reported by the auto rule instead.
    warn = ism_kwargs.pop("warn", True)
    # For the same reason the safeguard (trust region, needed only where a plain
    # step lowers the approximate objective) stops at a relative gradient of
    # APPROX_GTOL: below it the landmark error dominates.
    ism_kwargs.setdefault("gtol", APPROX_GTOL)
    m = check_n_landmarks(n_landmarks, n if approximation == "nystrom" else None)

    def fit(m, start):
        """(result, landmark rows) of the fit with m landmarks or features."""
        if approximation == "nystrom" and m == n:
            return ism(X, gamma, kernel, q, W0=start, dtype=dtype,
                       **dict(exact_kwargs, warn=False)), \
                np.arange(n)
        result, approx = _fit_at(X, gamma, kernel, q, m, approximation, start, ism_kwargs,
                                 method, dtype, random_state, block_rows)
        return result, approx.index

    trail = []
    if m != "auto":
        result, index = fit(m, W0)
    else:
        m = min(n, AUTO_START if approximation == "nystrom" else RFF_DEFAULT)
        cap = min(n, auto_max) if approximation == "nystrom" else auto_max
        result, index = fit(m, W0)
        trail.append((m, np.nan))
        while True:
            if approximation == "nystrom" and m >= n:
                break
            if m >= cap:
                warnings.warn(f"n_landmarks='auto' reached its budget of {cap} "
                              f"{'landmarks' if approximation == 'nystrom' else 'features'} before "
                              f"the fitted subspace stopped moving: the last doubling moved it by "
                              f"sin = {trail[-1][1]:.3g} (tolerance {auto_tol}); that is the "
                              "estimated error of the returned subspace", ConvergenceWarning,
                              stacklevel=3)
                break
            m_next = min(cap, 2 * m)
            nxt, index_next = fit(m_next, result.components)
            change = float(np.sin(principal_angle(result.components, nxt.components)))
            trail.append((m_next, change))
            result, index, m = nxt, index_next, m_next
            if change < auto_tol:
                break
    info = {"n_landmarks": m, "auto": trail, "approximate_result": result, "index": index}
    if warn and not polish:
        _warn_if_unconverged(result.convergence, approximation, m)
    if polish:
        kw = dict(exact_kwargs, warn=warn)
        kw.update(polish_kwargs or {})
        exact = np.asarray(X, dtype=X.dtype)
        result = ism(exact, gamma, kernel, q, W0=result.components, **kw)
    return result, info


def _warn_if_unconverged(convergence, approximation, m):
    """ConvergenceWarning for a returned approximate fit that found no maximum: it
    ran out of iterations, or its trust region stalled while the relative gradient
    (of the landmark problem) was still above :data:`APPROX_WARN_GTOL`. Stalls
    below that are the approximation's floor, by design."""
    rule, rel = convergence.stopping_rule, convergence.relative_gradient_norm
    if rule == "max_iter" or (rule == "stalled" and rel > APPROX_WARN_GTOL):
        what = "landmarks" if approximation == "nystrom" else "random features"
        remedy = f"use more {what}" + (", approximation='nystrom'" if approximation == "rff" else "")
        warnings.warn(f"the {approximation} fit with {m} {what} found no maximum "
                      f"(stopping rule {rule!r}, relative gradient norm {rel:.3g}): the "
                      f"approximation is too coarse for this kernel; {remedy}, or polish=True "
                      "for the exact answer", ConvergenceWarning, stacklevel=3)


def auto_landmarks(fit, n, *, start=AUTO_START, cap=AUTO_MAX, tol=AUTO_TOL, change=None):
    """The "auto" doubling rule for any fit ``fit(m) -> basis`` (orthonormal
    columns): returns (basis, m, trail); warns when the budget ends first."""
    change = change or (lambda A, B: float(np.sin(principal_angle(A, B))))
    cap = min(n, cap)
    m = min(n, start)
    basis = fit(m)
    trail = [(m, np.nan)]
    while m < cap:
        m_next = min(cap, 2 * m)
        nxt = fit(m_next)
        c = change(basis, nxt)
        trail.append((m_next, c))
        basis, m = nxt, m_next
        if c < tol:
            return basis, m, trail
    if m < n:
        warnings.warn(f"n_landmarks='auto' reached its budget of {cap} landmarks before the "
                      f"embedding stopped moving: last change {trail[-1][1]:.3g} (tolerance "
                      f"{tol})", ConvergenceWarning, stacklevel=3)
    return basis, m, trail


# --------------------------------------------------------------------------
# The clustering U-step (Fowlkes et al. 2004)
# --------------------------------------------------------------------------
def nystrom_spectral_embedding(Z, kernel, n_clusters, n_landmarks, *, normalize=True,
                               method=DEFAULT_LANDMARK_METHOD, random_state=None, index=None,
                               block_rows=None):
    r"""Top eigenvectors of :math:`H D^{-1/2} K D^{-1/2} H` with :math:`K \approx CSC^T`
    (m landmarks): the left singular vectors of :math:`H D^{-1/2} C S^{1/2}`
    (Fowlkes, Belongie, Chung, Malik 2004), :math:`O(n m^2)`, nothing n x n.

    :math:`D = \mathrm{diag}(C S C^T 1)` (ones when ``normalize=False``); S's
    square root keeps the positive part of :math:`K_{mm}` (a kernel that is not
    positive semi-definite there loses its negative directions).

    Returns
    -------
    U : ndarray (n, n_clusters); eigenvalues : ndarray (n_clusters,); degrees : ndarray (n,);
    index : the landmark rows.
    """
    n = Z.shape[0]
    m = min(int(n_landmarks), n) if index is None else len(index)
    big = min(n, _block_rows(Z.shape[1], block_rows, m)) * m * m > _THREADED_BLOCK_FLOPS
    with _blas_threads(big):
        return _nystrom_embedding(Z, kernel, n_clusters, n_landmarks, normalize, method,
                                  random_state, index, block_rows)


def _nystrom_embedding(Z, kernel, n_clusters, n_landmarks, normalize, method, random_state,
                       index, block_rows):
    n, qz = Z.shape
    k = int(n_clusters)
    if index is None:
        index = select_landmarks(Z, min(int(n_landmarks), n), method=method, kernel=kernel,
                                 random_state=random_state)
    ZL = np.ascontiguousarray(Z[index])
    Kmm = np.asarray(_matrix(kernel, ZL), dtype=np.float64)
    vals, vecs = scipy.linalg.eigh(0.5 * (Kmm + Kmm.T))
    keep = vals > 1e-10 * max(vals.max(), 0.0) if vals.max() > 0 else np.zeros_like(vals, bool)
    if not keep.any():
        raise ValueError("the landmark kernel matrix has no positive eigenvalue; the spectral "
                         "step needs a positive semi-definite affinity")
    R = vecs[:, keep] / np.sqrt(vals[keep])           # S^{1/2} with S = K_mm^+
    blocks = row_blocks(n, qz, block_rows, width=ZL.shape[0])

    def C_of(sl):
        return np.asarray(_matrix(kernel, np.ascontiguousarray(Z[sl]), ZL), dtype=np.float64)

    if normalize:
        colsum = np.zeros(ZL.shape[0])
        for sl in blocks:
            colsum += C_of(sl).sum(axis=0)
        u = R @ (R.T @ colsum)
        deg = np.empty(n)
        for sl in blocks:
            deg[sl] = C_of(sl) @ u
        if not np.all(np.isfinite(deg)) or np.any(deg <= 0):
            raise ValueError("the Nystrom degrees D = diag(K 1) are not positive; use more "
                             "landmarks or a larger sigma")
    else:
        deg = np.ones(n)
    scale = 1.0 / np.sqrt(deg)
    r = R.shape[1]
    gram = np.zeros((r, r))
    mean = np.zeros(r)
    for sl in blocks:
        F = scale[sl, None] * (C_of(sl) @ R)
        gram += F.T @ F
        mean += F.sum(axis=0)
    mean /= n
    gram -= n * np.outer(mean, mean)                 # (HF)^T (HF)
    ev, V = lapack_top(0.5 * (gram + gram.T), min(k, r))
    ev = np.maximum(ev, 0.0)
    if r < k:
        raise ValueError(f"{r} usable landmarks cannot give {k} clusters; use more landmarks")
    inv = np.where(ev > 0, 1.0 / np.sqrt(np.where(ev > 0, ev, 1.0)), 0.0)
    U = np.empty((n, k))
    for sl in blocks:
        F = scale[sl, None] * (C_of(sl) @ R)
        U[sl] = ((F - mean) @ V) * inv
    # re-orthonormalise (rounding and zero singular values)
    U, _ = np.linalg.qr(U)
    U = U - U.mean(axis=0, keepdims=True)
    U, _ = np.linalg.qr(U)
    return U, ev, deg, index


class ClusteringLandmarks:
    """The landmark side of the clustering alternation (ISMClustering,
    SemiSupervisedISM, KDAC): Nystrom U-steps (:func:`nystrom_spectral_embedding`),
    Nystrom W-steps (the :func:`ikdr.ism` hook) and the paradigms' extra traces,
    all with the same m. ``n_landmarks="auto"`` is resolved at the first U-step
    (on X): m doubles from :data:`AUTO_START` until the embedding's subspace
    moves by less than :data:`AUTO_TOL` (``ikdr._clustering.subspace_change``),
    then stays fixed; the m used is ``n_landmarks``."""

    def __init__(self, n_landmarks="auto", *, dtype=None, random_state=None,
                 method=DEFAULT_LANDMARK_METHOD):
        self.n_landmarks = check_n_landmarks(n_landmarks)
        self.dtype = dtype
        self.random_state = random_state
        self.method = method
        self.trail = []

    def embed(self, Z, affinity, n_clusters, *, random_state=None, n_threads=None,
              normalize=True, U0=None):
        """Drop-in for :func:`ikdr.spectral.spectral_embedding`: (U, eigenvalues, degrees)."""
        n = Z.shape[0]

        def fit(m):
            return nystrom_spectral_embedding(Z, affinity, n_clusters, m, normalize=normalize,
                                              method=self.method, random_state=self.random_state)

        if self.n_landmarks == "auto":
            from ._clustering import subspace_change

            cache = {}

            def basis(m):
                cache[m] = fit(m)
                return cache[m][0]
            _, m, self.trail = auto_landmarks(basis, n, change=subspace_change)
            self.n_landmarks = m
            U, vals, deg, _ = cache[m]
        else:
            U, vals, deg, _ = fit(min(self.n_landmarks, n))
        return U, vals, deg

    def approximation(self, n):
        m = min(n, AUTO_START if self.n_landmarks == "auto" else self.n_landmarks)
        return Approximation("nystrom", m, method=self.method, dtype=self.dtype,
                             random_state=self.random_state)

    def ism_options(self, n):
        """Keyword arguments that make an :func:`ikdr.ism` W-step a landmark one."""
        return {"approximation": self.approximation(n), "phi_solver": "dense"}

    def phi0(self, X, gamma, kernel):
        return self.approximation(X.shape[0]).problem(X, gamma, kernel, None).phi0()

    def quadratic_trace(self, Z, kernel, factor):
        r""":math:`\mathrm{Tr}(F^T K_Z F) \approx \mathrm{Tr}(F^T C S C^T F)` with the landmarks."""
        from .gamma import Gamma

        n = Z.shape[0]
        approx = self.approximation(n)
        Zc = np.ascontiguousarray(Z)
        problem = LandmarkProblem(Zc, Gamma(factor), kernel, None, approximation=approx)
        return problem.objective(np.eye(Z.shape[1]))
