"""Solvers of the KSVD truncated SVD: dense LAPACK, ARPACK, randomized, and the
asymmetric Nystrom method (paper Eq. 9) with automatic landmarks."""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import svds
from sklearn.utils import check_random_state

from .._config import fits_memory, require_memory, small_problem_blas
from .._utils.eig import fix_signs
from .._utils.progress import IterationReport
from .blocks import ArrayBlocks, block_operator
from .metrics import svd_accuracy
from .._utils.typing import RandomStateLike
from .._utils.validation import plain

#: ``n_landmarks="auto"`` stops growing at this many rows / columns (or all of them).
#: G with at most this many entries is decomposed densely by ``solver="auto"``.
AUTO_DENSE_MAX = 4_000_000
#: ... and up to this many by ARPACK; beyond it ``"auto"`` uses Nystrom.
AUTO_ARPACK_MAX = 100_000_000
AUTO_MAX_LANDMARKS = 4096


def dense_svd_bytes(n, m):
    """Peak bytes of the dense SVD: G, its LAPACK copy, U, V^T and gesdd's workspace."""
    k = min(n, m)
    return 8 * (2 * n * m + n * k + k * m + 4 * k * k)


def svd_dense(G, r):
    U, s, Vt = scipy.linalg.svd(G, full_matrices=False, lapack_driver="gesdd")
    return U[:, :r], s[:r], Vt[:r].T


def svd_arpack(G, r, tol, random_state):
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1, 1, min(G.shape))
    U, s, Vt = svds(G, k=r, tol=0.0 if tol is None else tol, v0=v0)
    order = np.argsort(s)[::-1]
    return U[:, order], s[order], Vt[order].T


def svd_randomized(G, r, n_oversamples, n_iter, random_state):
    """Halko-Martinsson-Tropp range finder with power iterations (dense G or operator)."""
    rng = check_random_state(random_state)
    n, m = G.shape
    k = min(r + n_oversamples, n, m)
    mm = (lambda B: G @ B) if isinstance(G, np.ndarray) else G.matmat
    rm = (lambda B: G.T @ B) if isinstance(G, np.ndarray) else G.rmatmat
    Q = np.linalg.qr(mm(rng.standard_normal((m, k))))[0]
    for _ in range(n_iter):
        Q = np.linalg.qr(rm(Q))[0]
        Q = np.linalg.qr(mm(Q))[0]
    B = rm(Q).T  # k x m
    Ub, s, Vt = scipy.linalg.svd(B, full_matrices=False)
    return (Q @ Ub)[:, :r], s[:r], Vt[:r].T


def normalise_columns(A):
    norms = np.linalg.norm(A, axis=0)
    return A / np.where(norms > 0, norms, 1.0)


def top_svd(W, k, random_state=0):
    """Top-k SVD of the landmark block W: LAPACK when W is tiny, else ARPACK to
    machine precision (only k of min(W.shape) triplets are needed), LAPACK again
    when ARPACK does not converge (measured: 640 x 640 blocks of the SNE matrix of
    a graph's cosine features, whose spectrum after the first value is a cluster
    of nearly equal values: 16 of 20 triplets after 6,400 iterations)."""
    from scipy.sparse.linalg import ArpackNoConvergence

    def lapack():
        u, s, vt = scipy.linalg.svd(W, full_matrices=False)
        return u[:, :k], s[:k], vt[:k].T

    with small_problem_blas(W.size):
        if min(W.shape) <= max(4 * k, 200) or k >= min(W.shape):
            return lapack()
        try:
            return svd_arpack(W, k, None, random_state)
        except ArpackNoConvergence:
            return lapack()


def _nystrom_from_blocks(C, R, I, J, r, N, M):
    """Eq. (9) from G[:, J] (C, N x m) and G[I, :] (R, n x M); W = G[I, J] = C[I]."""
    W = C[I]
    n, m = W.shape
    u, lam, v = top_svd(W, r)
    safe = np.where(lam > 0, lam, 1.0)
    U = normalise_columns((C @ v) / safe)
    V = normalise_columns((R.T @ u) / safe)
    return U, lam * np.sqrt(N * M / (n * m)), V


def asymmetric_nystrom(G_blocks: Any, n_components: int, n_landmarks: int | tuple[int, int], *,
                       random_state: RandomStateLike = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    r"""Asymmetric Nystrom approximation of the rank-r SVD of G (paper equation 9).

    Samples n rows I and m columns J uniformly without replacement (for a
    square G and n = m the same indices, J = I, so that a symmetric G gets the
    standard Nystrom approximation of Williams and Seeger), takes the
    rank-r SVD :math:`G_{IJ} = u\,\mathrm{diag}(\lambda)\,v^T` and extends it:
    :math:`\tilde U = G_{:J}\,v / \lambda`, :math:`\tilde V = G_{I:}^T\,u / \lambda` (columns
    then scaled to unit length; they are not re-orthogonalised),
    :math:`\tilde\lambda = \sqrt{NM / (nm)}\,\lambda`. A zero :math:`\lambda` (the landmarks
    do not resolve that component) leaves a zero singular value and zero
    vectors. Needs only the blocks G[:, J] and G[I, :]: O((N m + n M))
    kernel entries. With all rows and columns as landmarks it is the exact
    SVD. No accuracy check: for landmarks grown until an estimated
    per-component error meets a tolerance, use ``KernelSVD(solver="nystrom")``
    (automatic landmarks), and measure against an exact SVD with
    :func:`ikdr.metrics.svd_accuracy`.

    Parameters
    ----------
    G_blocks : ndarray of shape (N, M) or object with ``block(rows, cols)``, ``n``, ``m``
        The matrix, or an evaluator of its blocks (``rows`` / ``cols`` index
        arrays or None for all).
    n_components : int
        r, at most the landmarks on either side.
    n_landmarks : int or (int, int)
        n = m, or (n, m): landmark rows and columns, at most N and M.
    random_state : int, RandomState instance or None
        The landmark sample.

    Returns
    -------
    U : ndarray (N, r), s : ndarray (r,), V : ndarray (M, r), (I, J) : sampled indices
        s in decreasing order; I and J sorted.
    """
    blocks = ArrayBlocks(G_blocks) if isinstance(G_blocks, np.ndarray) else G_blocks
    N, M = blocks.n, blocks.m
    n, m = landmark_pair(n_landmarks, N, M, n_components)
    rng = check_random_state(random_state)
    I = np.sort(rng.choice(N, n, replace=False))
    # Square G (a graph's nodes in two roles): sample landmark nodes, J = I, so
    # a symmetric G gets the standard Nystrom approximation (paper eq. 13).
    J = I.copy() if (N == M and n == m) else np.sort(rng.choice(M, m, replace=False))
    U, s, V = _nystrom_from_blocks(blocks.block(None, J), blocks.block(I, None),
                                   I, J, n_components, N, M)
    return U, s, V, (I, J)


def landmark_pair(n_landmarks, N, M, r, auto=False):
    if isinstance(n_landmarks, (numbers.Integral, np.integer)) and not isinstance(n_landmarks, bool):
        pair = (int(n_landmarks), int(n_landmarks))
    elif isinstance(n_landmarks, (tuple, list)) and len(n_landmarks) == 2 and all(
            isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, bool)
            for x in n_landmarks):
        pair = (int(n_landmarks[0]), int(n_landmarks[1]))
    else:
        kinds = 'an int, a pair (n, m) of ints or "auto"' if auto else \
            "an int or a pair (n, m) of ints"
        raise ValueError(f"n_landmarks must be {kinds}, got {plain(n_landmarks)!r}")
    n, m = pair
    if n > N:
        raise ValueError(f"n_landmarks asks for {n} rows but G has only {N} rows "
                         "(more landmarks than rows)")
    if m > M:
        raise ValueError(f"n_landmarks asks for {m} columns but G has only {M} columns "
                         "(more landmarks than columns)")
    if min(n, m) < r:
        raise ValueError(f"n_landmarks={pair} must be at least n_components={r} on both sides")
    return n, m


def _split_half_error(first, second, s_full):
    """Estimated per-component error of the approximation on both halves.

    ``first`` and ``second`` are (U, s, V) from disjoint halves of the
    landmarks, ``s_full`` the singular values from both. With independent
    sampling errors of size e per half, the halves differ by about
    sqrt(2) e and the approximation on all 2h landmarks errs by about
    e / sqrt(2): half their disagreement. The estimate is
    ``max(d_value / 2, (d_sine / 2)^2)`` with d_value the largest relative
    difference of a singular value and d_sine the largest sine between the
    halves' left or right subspaces (clusters of nearly equal values compared
    as subspaces, :func:`ikdr.metrics.svd_accuracy`), the scale of
    ``svd_accuracy(...).error()``. A component that the landmarks cannot
    resolve (a zero singular value of a landmark block) makes it infinite.
    """
    (Ua, sa, Va), (Ub, sb, Vb) = first, second
    floor = np.finfo(float).eps * max(float(s_full[0]), np.finfo(float).tiny) * 16
    if min(sa[-1], sb[-1], s_full[-1]) <= floor:
        return np.inf
    acc = svd_accuracy(Ua, sa, Va, Ub, sb, Vb)
    return float(max(0.5 * acc["max_value_error"], (0.5 * acc["max_sine"]) ** 2))


def nystrom_auto(blocks, r, tol, rng, start=None, max_landmarks=None, report=None):
    """Automatic landmarks: two disjoint halves, doubled until they agree within ``tol``.

    At each step two approximations come from disjoint samples of h rows and
    h columns each; their disagreement estimates the per-component error of
    the approximation on all 2h landmarks (:func:`_split_half_error`), which
    is the one returned. The next step keeps every sampled block and draws 2h
    fresh ones. When all rows and columns are landmarks the result is the
    exact SVD (estimate 0). Returns ``(U, s, V, landmarks, history, estimate)``.
    """
    N, M = blocks.n, blocks.m
    cap = AUTO_MAX_LANDMARKS if max_landmarks is None else max_landmarks
    cap_n, cap_m = min(N, cap), min(M, cap)
    perm_r = rng.permutation(N)
    perm_c = perm_r if N == M else rng.permutation(M)  # square G: landmark nodes
    hn = hm = max(start or 2 * r, r + 5)
    C = np.empty((N, 0))
    R = np.empty((0, M))
    history = []
    while True:
        last = 2 * hn >= cap_n - 1 and 2 * hm >= cap_m - 1
        if last:  # the budget: take all of it (all rows / columns when they fit)
            hn, hm = cap_n / 2, cap_m / 2
        nn, nm = int(round(2 * hn)), int(round(2 * hm))
        h_n, h_m = nn // 2, nm // 2
        if C.shape[1] < nm:
            C = np.hstack([C, blocks.block(None, perm_c[C.shape[1]:nm])])
        if R.shape[0] < nn:
            R = np.vstack([R, blocks.block(perm_r[R.shape[0]:nn], None)])
        I, J = perm_r[:nn], perm_c[:nm]
        U, s, V = _nystrom_from_blocks(C[:, :nm], R[:nn], I, J, r, N, M)
        if nn == N and nm == M:
            estimate = 0.0  # every row and column is a landmark: the exact SVD
        elif min(h_n, h_m) < r:  # halves too small to hold r components: cannot estimate yet
            estimate = np.inf
        else:
            first = _nystrom_from_blocks(C[:, :h_m], R[:h_n], I[:h_n], J[:h_m], r, N, M)
            second = _nystrom_from_blocks(C[:, h_m:2 * h_m], R[h_n:2 * h_n], I[h_n:2 * h_n],
                                          J[h_m:2 * h_m], r, N, M)
            estimate = _split_half_error(first, second, s)
        history.append(((nn, nm), estimate))
        if report is not None:
            report(len(history), change=estimate, landmarks=f"{nn}x{nm}")
        if estimate <= tol or last:
            return U, s, V, (np.sort(I), np.sort(J)), history, estimate
        hn, hm = 2 * hn, 2 * hm


def budget_exhausted(blocks, r, U, s, V, history, tol, rng):
    """Automatic landmarks ran out of budget: warn with the estimate, and never
    return zero singular values that the landmarks could not resolve (those
    are recomputed exactly by ARPACK on a matrix-free operator)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    (n, m), estimate = history[-1]
    msg = (f"automatic landmarks stopped at the budget of {n} x {m} landmarks with an "
           f"estimated per-component error of {estimate:.3g} > tol={tol:g}")
    floor = 16 * np.finfo(float).eps * max(float(s[0]), np.finfo(float).tiny)
    if s[-1] <= floor or not np.isfinite(estimate):
        msg += (f"; the landmarks do not resolve all {r} components ({int(np.sum(s <= floor))} "
                "singular values 0, or 0 in a half sample), so the exact matrix-free solver "
                "(ARPACK) was used instead")
        if r < min(blocks.n, blocks.m):
            U, s, V = svd_arpack(block_operator(blocks), r, None, rng)
        else:
            U, s, V = svd_dense(blocks.block(), r)
    else:
        msg += "; pass a larger tol, or n_landmarks explicitly"
    warnings.warn(msg, ConvergenceWarning, stacklevel=4)
    return U, s, V


def choose_solver(solver, n, m, r, blocks, distributed):
    """The solver of ``solver="auto"`` for an n x m problem of rank r: dense while
    G fits (size and memory), ARPACK below :data:`AUTO_ARPACK_MAX` entries or on
    sparse input, Nystrom above it and for rows on a Dask cluster."""
    if solver != "auto":
        return solver
    if distributed:
        return "nystrom"
    size = n * m
    if size <= AUTO_DENSE_MAX and fits_memory(dense_svd_bytes(n, m)):
        return "dense"
    # sparse input: the matrix-free ARPACK costs O(nnz(P)) per product and is
    # exact; on graphs' SNE matrices (flat spectrum after the first value)
    # Nystrom needs nearly every row and column to get r components right
    matrix_free = blocks.operator is not None
    if r < min(n, m) and (size <= AUTO_ARPACK_MAX or matrix_free):
        return "arpack"
    return "nystrom"


def exact_svd(blocks, solver, n, m, r, tol, rng):
    """(U, s, V) of the top r singular triplets of G by ``solver`` ("dense",
    "arpack" or "randomized"): G formed densely where the solver needs it
    (within the memory budget), else its matrix-free operator."""
    op = blocks.operator
    if solver == "dense" or (op is None and solver in ("arpack", "randomized")):
        require_memory(dense_svd_bytes(n, m) if solver == "dense" else 8 * n * m,
                       f"the dense {n} x {m} kernel matrix G (solver={solver!r})")
        G = blocks.block()
    else:
        G = op
    if solver == "dense":
        return svd_dense(G, r)
    if solver == "arpack":
        return svd_arpack(G, r, tol, rng)
    return svd_randomized(G if isinstance(G, np.ndarray) else op, r, 10, 4, rng)


class KSVDSolution(NamedTuple):
    """The top r singular triplets of G (U n x r, s, V m x r; signs fixed) and, for
    the Nystrom solver, the landmarks (row and column indices), the automatic
    choice's history of (landmark counts, estimated error) and its last estimate."""

    U: np.ndarray
    s: np.ndarray
    V: np.ndarray
    landmarks: Any
    history: list
    estimate: float | None


def solve_ksvd(blocks, solver, r, n_landmarks, tol, rng, verbose=0) -> KSVDSolution:
    """The rank-r SVD of the kernel blocks by ``solver`` (not "auto": see
    :func:`choose_solver`). Nystrom with ``n_landmarks`` None or "auto" doubles the
    landmarks until two halves agree within ``tol`` (default 1e-2), and falls back
    to an exact solver where its budget cannot resolve every component
    (:func:`nystrom_auto`, :func:`budget_exhausted`); with an int or a pair it takes
    that many. Both sides share one orientation rule (:func:`fix_signs`)."""
    n, m = blocks.n, blocks.m
    landmarks, history, estimate = None, [], None
    if solver == "nystrom":
        chosen = "auto" if n_landmarks is None else n_landmarks
        if isinstance(chosen, str):
            if chosen != "auto":
                raise ValueError('n_landmarks must be an int, a pair or "auto", '
                                 f"got {plain(chosen)!r}")
            tol = 1e-2 if tol is None else float(tol)
            with IterationReport("KernelSVD", verbose) as report:
                U, s, V, landmarks, history, estimate = nystrom_auto(blocks, r, tol, rng,
                                                                     report=report)
            if estimate > tol:
                U, s, V = budget_exhausted(blocks, r, U, s, V, history, tol, rng)
        else:
            landmark_pair(chosen, n, m, r, auto=True)  # the message names "auto" too
            U, s, V, landmarks = asymmetric_nystrom(blocks, r, chosen, random_state=rng)
    else:
        if n_landmarks is not None:
            raise ValueError("n_landmarks is only used by solver='nystrom'")
        U, s, V = exact_svd(blocks, solver, n, m, r, tol, rng)
    UV = fix_signs(np.vstack([U, V]))
    return KSVDSolution(UV[:U.shape[0]], s, UV[U.shape[0]:], landmarks, history, estimate)
