"""Top eigenvectors of the symmetric d x d Phi, dense or given by products."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator, eigsh

from .. import _native
from .._config import get_num_threads, single_threaded_blas

#: up to this dimension LAPACK is used directly: dsyevr costs about (4/3) d^3
#: flops, less than a handful of Chebyshev-filtered block steps (each about
#: 16 d^2 (q + 8) flops) until d is in the thousands
LAPACK_MAX_DIM = 2048

#: up to this dimension LAPACK computes every eigenpair (cheaper than selecting some)
SMALL_DIM = 64

#: the eigen-solvers of :func:`top_eigenvectors` (``eigen_solver`` of ``ikdr.ism``)
EIGEN_SOLVERS = ("auto", "lapack", "power", "cpm")

#: CPM's answer is kept only when its gap estimate lambda_q - lambda_{q+1} is at
#: least this many times its residual (both times ||A||_F): the top-q subspace is
#: then determined to about 1 / CPM_MIN_SEPARATION; else LAPACK decides
CPM_MIN_SEPARATION = 1e8


def check_eigen_solver(name):
    """Raise a ValueError unless ``name`` is one of :data:`EIGEN_SOLVERS`."""
    if name not in EIGEN_SOLVERS:
        raise ValueError(f"eigen_solver must be one of {', '.join(map(repr, EIGEN_SOLVERS))}; "
                         f"got {name!r}")


def fix_signs(vecs):
    # Deterministic orientation: the largest-magnitude entry of each column is positive.
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    return vecs * signs


def _require_finite(A):
    if not np.all(np.isfinite(A)):
        raise ValueError("the matrix to diagonalise contains NaN or infinite values "
                         "(float64 overflow in the kernel or its derivative)")


def lapack_top(A, q):
    """The q largest eigenpairs of symmetric A by LAPACK, eigenvalues descending.

    Up to :data:`SMALL_DIM` all pairs by divide and conquer (NumPy's
    ``dsyevd``): at such d SciPy's wrapper for an index range costs more than
    the solve itself; above, ``dsyevr`` on the top q only, which computes q
    eigenvectors instead of d (``benchmarks/bench_cpm.py`` times the eigensolvers).
    """
    d = A.shape[0]
    _require_finite(A)
    if d <= SMALL_DIM:
        vals, vecs = np.linalg.eigh(A)
        return vals[::-1][:q].copy(), np.ascontiguousarray(vecs[:, ::-1][:, :q])
    vals, vecs = scipy.linalg.eigh(A, subset_by_index=[d - q, d - 1], driver="evr")
    if vecs.shape[1] != q:
        # dsyevr's index range can return no pairs at all on a cluster of
        # (nearly) equal eigenvalues, e.g. H = I - 11^T/n (measured: 0 of 2);
        # the divide-and-conquer driver computes them all.
        vals, vecs = scipy.linalg.eigh(A, driver="evd")
        vals, vecs = vals[d - q:], vecs[:, d - q:]
    return vals[::-1].copy(), np.ascontiguousarray(vecs[:, ::-1])


def full_eigh(A):
    """Every eigenpair of symmetric A, eigenvalues ascending, by divide and conquer
    (``dsyevd``). SciPy's default ``dsyevr`` slows down several times on a
    clustered spectrum, such as a Gaussian landmark kernel matrix near the
    identity, where divide and conquer does not (the landmark fits of
    ``benchmarks/bench_nystrom_ism.py`` meet such matrices)."""
    return scipy.linalg.eigh(A, driver="evd")


def top_eigenvalues(A, q):
    """The q largest eigenvalues of symmetric A, descending (LAPACK, as :func:`lapack_top`)."""
    d = A.shape[0]
    _require_finite(A)
    if d > SMALL_DIM:
        vals = scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[d - q, d - 1],
                                 driver="evr")
        if vals.shape[0] == q:
            return vals[::-1].copy()
    return np.linalg.eigvalsh(A)[::-1][:q].copy()


def top_eigenvectors(A, q, V0=None, *, method="auto", tol=1e-12, max_iter=12):
    """The q largest *algebraic* eigenpairs of symmetric A, eigenvalues descending.

    ``method="auto"`` uses LAPACK (``dsyevr``) for d <= ``LAPACK_MAX_DIM`` or
    without a warm start, and otherwise the C++ Chebyshev-filtered block power
    iteration warm-started from V0, falling back to LAPACK when it does not
    reach a relative residual ``tol`` within ``max_iter`` steps (tied
    eigenvalues, tiny eigengap).

    ``method="cpm"``: the C++ coordinate-wise power method (Lei, Zhong and
    Dhillon 2016; :func:`cpm_top`), warm-started from V0. Where it does not
    converge, or its gap estimate shows eigenvalues q and q + 1 (nearly) tied
    so that no top-q subspace is determined, LAPACK answers instead
    (``info["method"] == "cpm->lapack"``).

    A :class:`SymmetricOperator` (Phi_0 of sparse wide data, never formed)
    answers for itself (``method`` is then unused).

    Returns
    -------
    values : ndarray (q,)
    vectors : ndarray (d, q)
    info : dict with ``method`` ("lapack", "power", "power->lapack", "cpm",
        "cpm->lapack", "low rank" or "lanczos") and ``iterations``
    """
    check_eigen_solver(method)
    if isinstance(A, SymmetricOperator):
        vals, vecs, info = A.top_eigenpairs(q)
        return vals, fix_signs(vecs), info
    A = np.ascontiguousarray(A, dtype=np.float64)
    d = A.shape[0]
    info = {"method": "lapack", "iterations": 0}
    if method == "cpm" and q < d:
        vals, vecs, info = cpm_top(A, q, V0, tol=max(tol, 1e-13))
    elif method == "lapack" or (method == "auto" and (V0 is None or d <= LAPACK_MAX_DIM)) or q == d:
        vals, vecs = lapack_top(A, q)
    else:
        v0 = None if V0 is None else np.ascontiguousarray(V0, dtype=np.float64)
        vals, vecs, iters, converged, _ = _native.top_eigenpairs(A, q, v0, max_iter=max_iter,
                                                                   tol=tol)
        info = {"method": "power", "iterations": int(iters)}
        if not converged:
            vals, vecs = lapack_top(A, q)
            info["method"] = "power->lapack"
    return vals, fix_signs(vecs), info


def cpm_top(A, q, V0=None, *, tol=1e-12, active=0, max_sweeps=300.0):
    """The q largest eigenpairs of symmetric A by the coordinate-wise power method.

    See :func:`ikdr._native.cpm_eigenpairs` (``cpp/include/ikdr/cpm.hpp``;
    ``docs/cpm.md``). Falls back to LAPACK when CPM does not reach ``tol``
    within ``max_sweeps`` or when eigenvalues q and q + 1 are not separated by
    :data:`CPM_MIN_SEPARATION` times its residual (a tie: the top-q
    eigenvectors are not determined). Eigenvalues descending; ``info`` with
    ``method`` ("cpm" or "cpm->lapack"), ``iterations``, ``sweeps``,
    ``residual`` and ``gap``.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    v0 = None if V0 is None else np.ascontiguousarray(V0, dtype=np.float64)
    vals, vecs, raw = _native.cpm_eigenpairs(A, q, v0, active=active, max_sweeps=max_sweeps,
                                             tol=tol)
    info = {"method": "cpm", **raw}
    separated = raw["gap"] >= CPM_MIN_SEPARATION * raw["residual"] * float(np.linalg.norm(A))
    if not (raw["converged"] and separated):
        vals, vecs = lapack_top(A, q)
        info["method"] = "cpm->lapack"
        info["reason"] = "not converged" if not raw["converged"] else \
            f"eigenvalues {q} and {q + 1} not separated (gap {raw['gap']:.2e})"
    return vals, vecs, info


def orthonormal_complement(S, X):
    """Orthonormal basis of the part of span(S) orthogonal to the orthonormal X
    (two projection passes; directions lost to rounding are dropped)."""
    for _ in range(2):
        S = S - X @ (X.T @ S)
    U, s, _ = np.linalg.svd(S, full_matrices=False)
    keep = s > 1e-10 * max(float(s[0]) if s.size else 0.0, np.finfo(float).tiny)
    S = U[:, keep]
    S = S - X @ (X.T @ S)
    Q, _ = np.linalg.qr(S)
    return Q


def block_top_eigenvectors(matmat, V0, AV0, q, *, extra=None, tol=1e-9, max_iter=40):
    r"""Top-q eigenpairs of a symmetric operator given only by block products.

    A locally optimal block preconditioned CG (LOBPCG, Knyazev 2001) without
    preconditioner, for the q largest *algebraic* eigenvalues: each iteration
    does a Rayleigh-Ritz step on :math:`[X, R, P]` (Ritz block, residuals,
    previous directions) and costs one call ``matmat(S)`` with the new
    directions S (at most 2p columns), so an operator whose cost is dominated
    by a per-call setup (the fused ISM product re-forms its kernel panels on
    every call) pays that setup once per iteration. The Ritz block has
    ``p = q + extra.shape[1]`` columns: the extra columns make the
    convergence rate depend on the gap to the (p+1)-th eigenvalue, not the
    (q+1)-th (Phi's (q+1)-th eigenvalue is often nearly tied with the q-th).

    Parameters
    ----------
    matmat : callable, (d, k) -> (d, k)
    V0 : ndarray (d, k), k >= q
        Warm start, orthonormal columns (e.g. the previous ISM iterate, or it
        and extra start columns whose products are known too).
    AV0 : ndarray (d, k)
        ``matmat(V0)``, usually already known (it is the gradient product).
    extra : ndarray (d, e), optional
        Additional start columns (e.g. the extra Ritz vectors of the previous
        call), multiplied by the first iteration; without them and with
        k = q, e = max(10, q) random columns are used. The Ritz block has
        ``p = max(k, q + e)`` columns.
    tol : float
        Stop when every one of the first q residuals
        :math:`\|Av_j - \theta_j v_j\|` is at most ``tol`` times the largest
        Ritz value magnitude.

    Returns
    -------
    values : ndarray (q,), descending
    vectors : ndarray (d, q)
    info : dict with ``method`` ("matrix-free"), ``iterations``, ``products``
        (columns passed to matmat), ``residual`` (relative), ``converged``,
        ``ritz_values`` (all p, descending) and ``extra`` (the p - q extra
        Ritz vectors, a warm start for the next call).
    """
    V0 = np.asarray(V0, dtype=np.float64)
    d = V0.shape[0]
    if extra is None:
        e = min(max(10, q), d - q) if V0.shape[1] == q else 0
        rng = np.random.default_rng(0)
        extra = rng.standard_normal((d, e))
    p = min(d, max(V0.shape[1], q + extra.shape[1]))
    X = V0
    AX = np.asarray(AV0, dtype=np.float64)
    S = orthonormal_complement(extra, X)
    products = 0
    P = None
    theta = None
    residual = np.inf
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        if S.shape[1]:
            AS = np.asarray(matmat(S), dtype=np.float64)
            products += S.shape[1]
        else:                           # nothing left to add: Rayleigh-Ritz on X only
            AS = np.empty((d, 0))
        B = np.hstack([X, S])
        AB = np.hstack([AX, AS])
        G = B.T @ AB
        G = 0.5 * (G + G.T)
        vals, C = np.linalg.eigh(G)
        keep = min(p, vals.shape[0])
        vals, C = vals[::-1][:keep], C[:, ::-1][:, :keep]
        k = X.shape[1]
        X_new, AX_new = B @ C, AB @ C
        P = S @ C[k:]                   # the new part of the step
        X, AX, theta = X_new, AX_new, vals
        R = AX - X * theta
        norms = np.linalg.norm(R, axis=0)
        scale = max(float(np.abs(theta).max()), np.finfo(float).tiny)
        residual = float(norms[:q].max()) / scale
        if residual <= tol:
            converged = True
            break
        S = orthonormal_complement(np.hstack([R, P]), X)
        if S.shape[1] == 0:             # nothing left to add
            break
    info = {"method": "matrix-free", "iterations": it, "products": products,
            "residual": residual, "converged": converged,
            "ritz_values": None if theta is None else theta.copy(),
            "extra": X[:, q:].copy()}
    return theta[:q].copy(), fix_signs(np.ascontiguousarray(X[:, :q])), info


#: flops of the Gram matrices from which :func:`grams` shares them among threads
_POOL_FLOPS = 1e8


def grams(blocks, out=None):
    r""":math:`X_i^T X_i` in float64 for each block :math:`X_i`, whose bits do not depend
    on the BLAS threads: one BLAS call each on one BLAS thread (a threaded BLAS
    called from several Dask tasks at once sums in varying orders), under one
    thread limit for all the blocks (a limit per block cost more than the
    products of the class-moment screen's small classes). The blocks are shared
    among :func:`ikdr.get_num_threads` Python threads (the BLAS call releases the
    GIL), so the cores are used all the same. ``out``: a float64 d x d array per
    block to write each product into (no new arrays)."""
    blocks = [np.asarray(b, dtype=np.float64) for b in blocks]
    outs = [None] * len(blocks) if out is None else list(out)
    flops = sum(b.shape[0] * b.shape[1] ** 2 for b in blocks)
    # a pool costs about a tenth of a millisecond: worth it from 1e8 flops
    workers = min(get_num_threads(), len(blocks)) if flops >= _POOL_FLOPS else 1

    def gram(X, G):
        return np.matmul(X.T, X, out=G)

    with single_threaded_blas():
        if workers <= 1:
            return [gram(X, G) for X, G in zip(blocks, outs)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(gram, blocks, outs))


#: eigenvalues of a :class:`SymmetricOperator` computed beyond ``minimum`` for the
#: eigengap choice of q (:func:`gap_spectrum`): the gap is sought among these
SPECTRUM_WINDOW = 16
#: relative tolerance and iterations (per eigenpair) of Lanczos on a :class:`SymmetricOperator`
OPERATOR_TOL = 1e-10
OPERATOR_MAX_ITER = 300


class SymmetricOperator(LinearOperator):
    r"""A symmetric d x d matrix :math:`A S A^T + E` given by its parts, never formed.

    ``factor`` A (d x r) and ``core`` S (r x r, symmetric) make the low-rank
    part; ``extra(V)`` (d x k -> d x k, optional) the rest, a product only.
    Phi_0 of sparse data with many features is one (:mod:`ikdr.passes.sparse`):
    :math:`X^T\Gamma X` has the rank of Gamma and :math:`X^T\mathrm{diag}(w)X`
    costs O(nnz k) per product.

    :meth:`top_eigenpairs`: without ``extra``, exactly from a thin QR of A
    (:math:`A = QR`, the eigenpairs of :math:`RSR^T` rotated by Q; eigenvalue 0
    beyond the rank, with vectors orthogonal to A drawn from a fixed seed);
    with it, by Lanczos (ARPACK's ``eigsh``) on products from a fixed start.
    """

    def __init__(self, d, factor=None, core=None, extra=None):
        super().__init__(np.float64, (int(d), int(d)))
        self.factor = None if factor is None else np.asarray(factor, dtype=np.float64)
        self.core = None if core is None else np.asarray(core, dtype=np.float64)
        self.extra = extra

    def _matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        out = np.zeros((self.shape[0], V.shape[1]))
        if self.factor is not None:
            out += self.factor @ (self.core @ (self.factor.T @ V))
        if self.extra is not None:
            out += self.extra(V)
        return out

    def _matvec(self, v):
        return self._matmat(np.reshape(v, (-1, 1))).ravel()

    def _adjoint(self):
        return self

    def top_eigenpairs(self, k):
        """The k largest eigenpairs, eigenvalues descending: ``(values, vectors, info)``."""
        d = self.shape[0]
        k = int(min(k, d))
        if self.extra is None:
            return self._low_rank_top(k)
        if k >= d - 1:                  # ARPACK needs k < d: the matrix itself (d tiny)
            vals, vecs = lapack_top(self.matmat(np.eye(d)), k)
            return vals, vecs, {"method": "lapack", "iterations": 0}
        # Lanczos (ARPACK) from a fixed start: a product per iteration, O(nnz) each
        v0 = np.random.default_rng(0).standard_normal(d)
        vals, vecs = eigsh(self, k=k, which="LA", v0=v0, tol=OPERATOR_TOL,
                           maxiter=OPERATOR_MAX_ITER * k)
        order = np.argsort(-vals)
        return vals[order], np.ascontiguousarray(vecs[:, order]), {"method": "lanczos",
                                                                    "iterations": 0}

    def _low_rank_top(self, k):
        d = self.shape[0]
        if self.factor is None or self.factor.shape[1] == 0:
            vals, Q = np.zeros(0), np.zeros((d, 0))
        else:
            Q, R = np.linalg.qr(self.factor)
            small = R @ self.core @ R.T
            vals, vecs = np.linalg.eigh(0.5 * (small + small.T))
            Q = Q @ vecs
        # descending: the positive eigenvalues of the span, the complement's zeros, the rest
        order = np.argsort(-vals, kind="stable")
        positive, rest = order[vals[order] > 0], order[vals[order] <= 0]
        nulls = max(0, min(d - vals.shape[0], k - positive.shape[0]))
        values = np.concatenate([vals[positive], np.zeros(nulls), vals[rest]])[:k]
        vectors = np.hstack([Q[:, positive], _complement_vectors(Q, nulls), Q[:, rest]])[:, :k]
        return values, np.ascontiguousarray(vectors), {"method": "low rank", "iterations": 0}


def _complement_vectors(Q, count):
    """``count`` orthonormal vectors orthogonal to the orthonormal Q, from a fixed seed."""
    if count == 0:
        return np.zeros((Q.shape[0], 0))
    S = np.random.default_rng(0).standard_normal((Q.shape[0], count))
    return orthonormal_complement(S, Q)[:, :count]


def gap_spectrum(A, minimum=1):
    """The eigenvalues :func:`ikdr.solver.driver.choose_n_components` searches for the
    largest gap: the largest ``minimum +`` :data:`SPECTRUM_WINDOW`, descending, of
    a dense A or of a :class:`SymmetricOperator`.

    The window keeps the default q a reduction on wide data: over the whole
    spectrum of a wide Phi_0 the largest gap can lie at its far end (wide
    sparse counts, 2,048 features and 4 clusters: q = 2,047, and each
    trust-region step of the W-step then works on a d x d basis instead of a
    thin one), and the same rule must hold
    whether Phi_0 is formed or an operator."""
    window = int(minimum) + SPECTRUM_WINDOW
    if isinstance(A, SymmetricOperator):
        return A.top_eigenpairs(window)[0]
    return np.linalg.eigvalsh(A)[::-1][:window]
