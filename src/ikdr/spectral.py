"""The spectral step shared by every clustering paradigm (public: ``ikdr.spectral``).

Functions: :func:`spectral_embedding` (the U-step), :func:`njw_labels` (the
Ng-Jordan-Weiss rounding), :func:`kernel_degrees`, :func:`auto_kernel`
(the data-driven default affinity behind ``sigma="auto"``),
:func:`median_scale_gaussian` (its global counterpart for KDAC).

U = top-k eigenvectors of :math:`H D^{-1/2} K D^{-1/2} H`, :math:`D = \\mathrm{diag}(K 1)`
(dissertation Eq. 3.4). Below ``DENSE_MAX_N`` samples the
n x n matrix is formed and LAPACK solves it; above, a matrix-free Lanczos
(``scipy.sparse.linalg.eigsh``) runs on a ``LinearOperator`` whose matvec is
the fused C++ kernel product, so memory stays O(n k).
"""
from __future__ import annotations

import warnings

import numpy as np

import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator, eigsh
from sklearn.cluster import KMeans
from sklearn.manifold import spectral_embedding as laplacian_eigenmaps
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from ._config import fits_memory, one_thread, require_memory, single_threaded_blas
from ._utils.eig import lapack_top
from .kernels import Kernel, RelativeGaussian

__all__ = ["DENSE_MAX_N", "START_TOL", "MatrixFreePoints", "auto_kernel", "median_scale_gaussian",
           "kernel_degrees", "row_normalised", "spectral_embedding", "affinity_embedding",
           "spectral_gap", "njw_labels", "AUTO_NEIGHBORS"]

#: up to this many samples the U-step builds the dense n x n matrix
DENSE_MAX_N = 3000
#: from this many samples a warm-started dense U-step (``U0`` given) runs LOBPCG
#: on the formed matrix before LAPACK's O(n^3) eigensolver
DENSE_WARM_MIN_N = 1000
#: above this many samples the dense U-step finds its few eigenpairs by Lanczos
DENSE_LANCZOS_MIN_N = 500
#: Lanczos tolerance of the dense starts (relative to the eigenvalues): the labels of
#: every data set of the clustering benchmark are those of LAPACK's eigenvectors,
#: 30-50 % sooner than at 1e-10
START_TOL = 1e-6
#: Above this many columns the matrix-free U-step stores K once (when it fits
#: the memory budget) instead of recomputing it in every product.
STORED_KERNEL_MIN_D = 64


#: k of the k-NN local bandwidths behind ``sigma="auto"`` (Zelnik-Manor and Perona 2004)
AUTO_NEIGHBORS = 7


def auto_kernel(X, n_clusters, *, n_neighbors=AUTO_NEIGHBORS):
    r"""The default kernel of the clustering estimators (``sigma="auto"``): local scaling.

    Rule: the relative Gaussian :math:`k(x_i, x_j) = \exp(-\|W^T(x_i - x_j)\|^2
    / 2\sigma_i\sigma_j)` with :math:`\sigma_i` the distance from :math:`x_i`
    to its ``n_neighbors``-th (7th) nearest neighbor in the training X
    (self-tuning spectral clustering, Zelnik-Manor and Perona 2004;
    dissertation Eq. C.39-C.43; :class:`ikdr.kernels.RelativeGaussian`). It
    uses no labels and serves both the U-step affinity and the W-step kernel.

    Chosen by measurement (``benchmarks/bench_clustering_quality.py``):
    against a global Gaussian at the median distance (the papers' default) and
    against the eigengap of the normalised affinity over a grid of multiples
    of the median distance, local scaling was the only rule that separated
    circles, moons and the spiral (NMI 1.0 where the other two gave 0.0-0.6)
    while matching them on blobs, wine and the face data. Using it only in
    the U-step (median Gaussian in the W-step) gave the same NMI; one kernel
    for both steps keeps the papers' single objective.

    Cost: one k-NN query on X (a k-d/ball tree, about O(n log n d) for small
    d, O(n^2 d) for wide data), done once per fit; the kernel passes
    themselves cost the same as a global Gaussian's.

    Raises
    ------
    ValueError
        When X has fewer than ``3 * n_clusters`` rows (too few points to
        estimate local bandwidths for that many clusters) or when every row
        is identical (no bandwidth can be estimated).
    """
    X = np.asarray(X)
    n = X.shape[0]
    k = int(n_clusters)
    if n < 3 * k:
        raise ValueError(f'sigma="auto" needs at least 3 x n_clusters = {3 * k} samples to '
                         f"estimate local bandwidths, got n_samples={n}; give a numeric sigma")
    if not np.any(X != X[:1]):
        raise ValueError('sigma="auto": every sample of X is identical, no bandwidth can be '
                         "estimated from the data")
    return RelativeGaussian(min(int(n_neighbors), n - 1)).fit(X)


def median_scale_gaussian(kernel):
    r"""A global Gaussian at the median local scale of a fitted local-scaling kernel.

    :math:`\sigma = \mathrm{median}_i\,\sigma_i`, the :math:`\sigma_i` of a fitted
    :class:`ikdr.kernels.RelativeGaussian` (the distance of :math:`x_i` to its
    k-th nearest neighbor, as :func:`auto_kernel`): the same scale from the
    same k-NN query, one bandwidth for every point. KDAC's ``sigma="auto"``
    when the existing clustering is visible in X (:class:`ikdr.KDAC`): there
    each :math:`\sigma_i` is set by the point's neighbors in the existing
    view, and the per-point scales carry that view into the alternative one
    (face pose -> identity NMI 0.49 -> 0.57, identity -> pose 0.02 -> 0.45,
    moon 400 x 4 0.76 -> 0.87; docs/clustering_defaults.md). No extra pass:
    the median of the n stored scales.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.kernels import RelativeGaussian
    >>> from ikdr.spectral import median_scale_gaussian
    >>> X = np.arange(10.0).reshape(-1, 1)
    >>> median_scale_gaussian(RelativeGaussian(3).fit(X)).sigma
    2.0
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(f"median_scale_gaussian needs a fitted RelativeGaussian kernel, got "
                        f"{kernel!r}")
    return kernel.median_scale_gaussian()


def kernel_degrees(Z, kernel, *, n_threads=None):
    """Degrees ``K 1`` of the kernel on Z, without forming K."""
    return kernel.degrees(Z, n_threads=n_threads)


def dense_step_bytes(n):
    """Peak bytes of the dense U-step: K, the normalised copy M and LAPACK's
    workspace and eigenvectors (about one more n x n)."""
    return 3 * 8 * n * n


def _check_degrees(deg):
    if not np.all(np.isfinite(deg)):
        raise ValueError("the kernel's degrees D = diag(K 1) are not finite (float64 overflow); "
                         "rescale X or use a larger sigma")
    if np.any(deg <= 0):
        raise ValueError("the kernel's degree matrix D = diag(K 1) is not positive; the spectral "
                         "step needs a positive affinity (e.g. a Gaussian kernel)")
    return deg


class MatrixFreePoints:
    r"""Points whose kernel is reached only through products, never as a matrix:
    the U-step's points XW of data that stay where they live (the row blocks
    of a Dask cluster). A subclass provides ``shape``, ``dtype``,
    ``product(kernel, R)`` (:math:`K R`), ``degrees(kernel)`` (:math:`K 1`) and
    ``objective(kernel, gamma)`` (:math:`\mathrm{Tr}(\Gamma K)`);
    :func:`spectral_embedding` then takes its matrix-free path."""

    shape: tuple
    dtype: np.dtype

    def product(self, kernel, R, gamma=None):
        raise NotImplementedError

    def degrees(self, kernel):
        raise NotImplementedError

    def objective(self, kernel, gamma):
        raise NotImplementedError


def spectral_embedding(Z, kernel, n_clusters, *, method="auto", random_state=None,
                       n_threads=None, tol=1e-10, normalize=True, U0=None,
                       dense_solver="lapack"):
    r"""Top ``n_clusters`` eigenvectors of :math:`H D^{-1/2} K D^{-1/2} H`.

    With ``normalize=False`` D is the identity: the eigenvectors of
    :math:`H K H` maximise the plain HSIC :math:`\mathrm{Tr}(U^T H K H U)`
    (dissertation Eq. 3.2 without the spectral-clustering normalisation),
    which needs no positive degrees and so serves kernels that are not
    affinities (linear, squared, multiquadric, odd polynomials).

    Parameters
    ----------
    Z : ndarray (n, q) or MatrixFreePoints
        Points the kernel is evaluated on (XW in ISM). Points on a Dask
        cluster (a distributed clustering's U-step) take the matrix-free path
        with every product and the degrees as block-pair tasks.
    kernel : Kernel
        A fitted kernel giving a positive affinity (degrees must be > 0).
    n_clusters : int
    method : {"auto", "dense", "lanczos"}
        "auto": dense up to :data:`DENSE_MAX_N` samples, matrix-free Lanczos above
        or when the dense step would exceed the memory budget
        (:func:`ikdr.set_memory_budget`); "dense" raises ``MemoryError`` then.
        For points wider than :data:`STORED_KERNEL_MIN_D` the matrix-free path
        stores K (n x n, if it fits the budget) so that its products are GEMMs.
    normalize : bool, default=True
        Degree normalisation :math:`D = \mathrm{diag}(K1)`; False uses D = I.
    U0 : ndarray (n, n_clusters), optional
        A nearby embedding (the previous U-step of an alternation). The
        matrix-free path then runs LOBPCG from it: each block iteration is
        one fused kernel pass for all columns, and a warm start needs a few
        (against tens of single-vector Lanczos passes). Falls back to Lanczos
        when LOBPCG does not reach its tolerance. The dense path runs LOBPCG
        on the formed matrix from U0 from :data:`DENSE_WARM_MIN_N` samples on
        (falling back to LAPACK): on digits (n = 1,797) LAPACK's O(n^3) full
        tridiagonalisation at every U-step took most of an ISMClustering fit.
    dense_solver : {"lapack", "lanczos", "auto"}, default="lapack"
        How the dense path finds the eigenpairs without ``U0``: LAPACK, or
        Lanczos above :data:`DENSE_LANCZOS_MIN_N` rows (to ``tol``), or
        "auto": Lanczos only where the normalised affinity is dense, within a
        budget of products (see :func:`affinity_embedding`).

    Returns
    -------
    U : ndarray (n, n_clusters), orthonormal columns
    eigenvalues : ndarray (n_clusters,), descending
    degrees : ndarray (n,)
        ``K 1`` (all ones when ``normalize=False``).
    """
    if not isinstance(kernel, Kernel):
        raise TypeError("kernel must be an ikdr.kernels.Kernel")
    on_cluster = isinstance(Z, MatrixFreePoints)   # products only (e.g. Dask tasks)
    if not on_cluster:
        Z = np.ascontiguousarray(Z)
    n = Z.shape[0]
    k = int(n_clusters)
    if not 1 <= k < n:
        raise ValueError(f"n_clusters={k} must be between 1 and n_samples - 1 = {n - 1}")
    if U0 is not None and np.shape(U0) != (n, k):
        U0 = None                       # not a warm start for this problem
    method = _embedding_method(method, n, on_cluster)
    if method == "dense":
        require_memory(dense_step_bytes(n), f"the dense spectral step (n = {n})")
        K = kernel.matrix(Z, n_threads=n_threads).astype(np.float64, copy=False)
        return affinity_embedding(K, k, normalize=normalize, U0=U0, random_state=random_state,
                                  tol=tol, lanczos={"lapack": False, "lanczos": True,
                                                    "auto": "auto"}[dense_solver])
    op, deg = _normalised_operator(Z, kernel, normalize, n_threads, on_cluster)
    vals = None
    if U0 is not None:
        vals, U = _warm_lobpcg(op, np.asarray(U0, dtype=np.float64))
    if vals is None:
        rng = check_random_state(random_state)
        v0 = rng.uniform(-1, 1, n)
        vals, U = eigsh(op, k=k, which="LA", v0=v0 - v0.mean(), tol=tol)
    order = np.argsort(vals)[::-1]
    return np.ascontiguousarray(U[:, order]), vals[order], deg


def _embedding_method(method, n, on_cluster):
    """The U-step's path: "dense" or "lanczos" (see :func:`spectral_embedding`)."""
    if method == "auto":
        # the matrix-free path also when the dense one would exceed the memory budget
        # (and always for points on a cluster: the dense step needs the n x n K)
        return "dense" if n <= DENSE_MAX_N and fits_memory(dense_step_bytes(n)) \
            and not on_cluster else "lanczos"
    if method not in ("dense", "lanczos"):
        raise ValueError(f"method must be 'auto', 'dense' or 'lanczos', got {method!r}")
    if method == "dense" and on_cluster:
        raise ValueError("the dense spectral step needs the n x n kernel matrix; points on a "
                         "Dask cluster use method='lanczos'")
    return method


def affinity_embedding(K, n_clusters, *, normalize=True, U0=None, random_state=None,
                       tol=1e-10, lanczos=False):
    r"""The dense U-step of a formed affinity matrix K (n x n, float64, overwritten).

    Top ``n_clusters`` eigenpairs of :math:`H D^{-1/2} K D^{-1/2} H`,
    :math:`D = \mathrm{diag}(K1)` (the identity when ``normalize`` is False):
    by LOBPCG from ``U0`` from :data:`DENSE_WARM_MIN_N` rows on, else by
    LAPACK; with ``lanczos`` by Lanczos (ARPACK, seeded by ``random_state``)
    above :data:`DENSE_LANCZOS_MIN_N` rows, where LAPACK's O(n^3) reduction
    costs several times more than Lanczos's O(n^2) products for a few eigenpairs
    (the same eigenvalues to 1e-15; ``benchmarks/bench_clustering_quality.py``). Where the
    leading eigenvalues are (nearly) tied the two span the same subspace but
    may return different bases of it.

    ``lanczos="auto"`` (:func:`_auto_top`): where the normalised affinity is
    dense, Lanczos for at most :data:`LANCZOS_BUDGET` x n products; where it
    is sparse, subspace iteration with the shifted inverse
    (:func:`_shift_invert_top`); LAPACK when either does not converge. Without
    ``normalize`` (eigenvalues not bounded by 1): Lanczos within that budget.
    Returns ``(U, eigenvalues, degrees)`` as :func:`spectral_embedding`.
    """
    n = K.shape[0]
    k = int(n_clusters)
    if normalize:
        deg = _check_degrees(K.sum(axis=1))
        s = 1.0 / np.sqrt(deg)
        K *= s[:, None]
        K *= s[None, :]
    else:
        deg = np.ones(n)
    # One BLAS thread: OpenBLAS's threaded dsyevr collapses when the cores are
    # busy (its threads wait for cores, many times its single-threaded time on 2
    # shared cores), and its gain on an idle machine is small.
    with single_threaded_blas():
        if lanczos and n > DENSE_LANCZOS_MIN_N and k < n // 10:
            # (the shifted inverse needs the normalised affinity's eigenvalues <= 1)
            auto = lanczos == "auto" and normalize
            found = (_auto_top if auto else _lanczos_top)(
                K, k, tol, random_state,
                budget=int(LANCZOS_BUDGET * n) if lanczos == "auto" else None)
            if found is not None:
                return np.ascontiguousarray(found[1]), found[0], deg
        K -= K.mean(axis=0, keepdims=True)
        K -= K.mean(axis=1, keepdims=True)
        vals = None
        if U0 is not None and np.shape(U0) == (n, k) and n >= DENSE_WARM_MIN_N:
            # a warm start inside an alternation: LOBPCG's block products with the
            # dense matrix cost O(n^2 k) each against dsyevr's O(n^3)
            vals, U = _warm_lobpcg(K, np.asarray(U0, dtype=np.float64))
        if vals is None:
            vals, U = lapack_top(K, k)
    return np.ascontiguousarray(U), vals, deg


#: entries of a normalised affinity below this share of its largest are dropped by the
#: Lanczos U-step when few remain (:data:`SPARSE_DENSITY`): a local-scaling affinity of
#: 2-D data keeps 9-15 % of its entries above 1e-12 of the largest
SPARSE_CUTOFF = 1e-12
#: the Lanczos U-step multiplies by a sparse copy when at most this share of entries is kept
SPARSE_DENSITY = 0.3
#: ``lanczos="auto"`` gives Lanczos at most this many products per row of the matrix
#: (2 n^2 flops each: about half of LAPACK's (4/3) n^3 reduction), then LAPACK
LANCZOS_BUDGET = 1 / 3


class _OverBudget(Exception):
    """Lanczos used its products (``lanczos="auto"``): LAPACK answers instead."""


def _kept_csr(M, kept):
    """The entries of the dense M where ``kept`` as a CSR matrix, built from their flat
    positions (SciPy's conversion of a dense array scans it in Python-level steps,
    an order of magnitude slower than one ``flatnonzero``)."""
    n_rows, n_cols = M.shape
    flat = np.flatnonzero(kept)
    indptr = np.searchsorted(flat, np.arange(n_rows + 1) * n_cols)
    return sp.csr_matrix((M.ravel()[flat], flat % n_cols, indptr), shape=M.shape)


def _sparse_kept(M):
    """The entries a sparse copy of M keeps (above :data:`SPARSE_CUTOFF` of the
    largest), or None where M is dense (more than :data:`SPARSE_DENSITY` of them)
    or has negative entries (not an affinity)."""
    kept = M > SPARSE_CUTOFF * M.max()
    if np.count_nonzero(kept) <= SPARSE_DENSITY * kept.size and M.min() >= 0:
        return kept
    return None


def _auto_top(M, k, tol, random_state, *, budget):
    r"""Top k eigenpairs of H M H (M a normalised affinity, n x n, overwritten), or None
    (then LAPACK): the solver that suits M's spectrum (``lanczos="auto"`` of
    :func:`affinity_embedding`).

    A sparse M is a neighborhood graph of data of low intrinsic dimension:
    its spectrum crowds below 1 (many smooth modes), and a Gaussian that
    isolates points adds eigenvalues at 1. Lanczos needed 200-300 products
    there on 2-D data at n = 900-1,200, and 1,800-5,400 where points were
    isolated, far slower than LAPACK's dense solve; the shifted inverse
    separates exactly that top of the spectrum (:func:`_shift_invert_top`,
    2-6 iterations on every such data set of the clustering benchmark, faster
    than LAPACK there). A dense M (wide data) has a decaying spectrum: Lanczos
    needed 44 products on digits, a fraction of LAPACK's time, here at most
    ``budget`` of them (``benchmarks/bench_clustering_quality.py`` times the fits).
    """
    kept = _sparse_kept(M)
    if kept is None:
        return _lanczos_top(M, k, tol, random_state, budget=budget)
    sparse = _kept_csr(M, kept)
    found = _shift_invert_top(M, sparse, k, tol, random_state)
    if found is None:
        # M was overwritten: LAPACK's from the sparse copy (what it dropped is below
        # 1e-12 of the largest entry)
        M[...] = sparse.toarray()
    return found


#: the shift of :func:`_shift_invert_top` above the largest possible eigenvalue, 1
SHIFT_ABOVE_ONE = 1e-4
#: vectors the shifted subspace iteration carries beyond the k it returns
SHIFT_EXTRA_VECTORS = 8
#: its iterations at most, and the contraction per iteration (predicted from the Ritz
#: values) above which it gives way to LAPACK
SHIFT_MAX_ITER = 20
SHIFT_MAX_CONTRACTION = 0.5


def _shift_invert_top(M, sparse, k, tol, random_state):
    r"""Top k eigenpairs of :math:`A = HMH` (M a normalised affinity, overwritten; its
    products by ``sparse``, M's sparse copy) by subspace iteration with
    :math:`(\sigma I - A)^{-1}`, or None (then LAPACK).

    M's eigenvalues lie in [-1, 1] (it is similar to the stochastic
    :math:`D^{-1}K`) and H is a projection, so :math:`\sigma I - A` with
    :math:`\sigma = 1 +` :data:`SHIFT_ABOVE_ONE` is positive definite: one
    Cholesky factorisation ((1/3) n^3 flops against LAPACK's (4/3) n^3
    reduction), then per iteration a block of k + :data:`SHIFT_EXTRA_VECTORS`
    solves, orthonormalised, and the Rayleigh-Ritz step with A (for a centered
    block Q, :math:`AQ = H(MQ)`: one sparse product). Eigenvalue
    :math:`\lambda_i` converges by :math:`(\sigma - \lambda_i) / (\sigma -
    \lambda_{b+1})` per iteration (b the block), which the shift makes small
    for the top of a spectrum crowding below 1. Stops when every returned Ritz
    pair has residual at most ``tol`` times its value (ARPACK's rule); gives
    up after :data:`SHIFT_MAX_ITER` iterations, when the predicted contraction
    exceeds :data:`SHIFT_MAX_CONTRACTION`, or when the factorisation fails.
    """
    n = M.shape[0]
    sigma = 1.0 + SHIFT_ABOVE_ONE
    # sigma I - HMH = sigma I - M + 1 w^T + w 1^T, w = m - (1^T m / 2n) 1, m = M 1 / n:
    # built in place on M's lower triangle, which is all the factorisation reads, through
    # the transposed view (Fortran order: LAPACK takes it without a copy; M is symmetric)
    means = M.mean(axis=0)
    shifted = np.negative(M, out=M).T
    shifted = scipy.linalg.blas.dsyr2(1.0, np.ones(n), means - 0.5 * means.mean(), lower=1,
                                      a=shifted, overwrite_a=1)
    diagonal = np.arange(n)
    shifted[diagonal, diagonal] += sigma
    factor, info = scipy.linalg.lapack.dpotrf(shifted, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        return None
    b = min(n - 1, k + SHIFT_EXTRA_VECTORS)
    V = check_random_state(random_state).standard_normal((n, b))
    for iteration in range(SHIFT_MAX_ITER):
        Y, info = scipy.linalg.lapack.dpotrs(factor, V - V.mean(axis=0), lower=1)
        if info != 0:
            return None
        Q, _ = np.linalg.qr(Y - Y.mean(axis=0))
        AQ = sparse @ Q
        AQ -= AQ.mean(axis=0)
        values, S = np.linalg.eigh(0.5 * (Q.T @ AQ + AQ.T @ Q))
        values, S = values[::-1], S[:, ::-1]
        V = Q @ S
        residual = np.linalg.norm(AQ @ S[:, :k] - V[:, :k] * values[:k], axis=0)
        if np.all(residual <= tol * np.abs(values[:k])):
            return values[:k].copy(), V[:, :k]
        contraction = (sigma - values[k - 1]) / (sigma - values[-1])
        if iteration >= 1 and contraction > SHIFT_MAX_CONTRACTION:
            return None
    return None


def _lanczos_top(M, k, tol, random_state, *, budget=None):
    """Top k eigenpairs of H M H (M symmetric, n x n, overwritten) by Lanczos, descending:
    M centered in place, or, for a non-negative M of which at most
    :data:`SPARSE_DENSITY` of the entries exceed :data:`SPARSE_CUTOFF` of the largest,
    multiplied as a sparse copy without the others. None, with M centered, where the
    eigenpairs need more than ``budget`` products."""
    n = M.shape[0]
    kept = _sparse_kept(M)
    if kept is not None:
        A = _kept_csr(M, kept)

        def matmat(V):
            V = np.asarray(V, dtype=np.float64).reshape(n, -1)
            Y = A @ (V - V.mean(axis=0, keepdims=True))
            return Y - Y.mean(axis=0, keepdims=True)

        op = LinearOperator((n, n), matvec=lambda v: matmat(v)[:, 0], matmat=matmat,
                            dtype=np.float64)
    else:
        M -= M.mean(axis=0, keepdims=True)
        M -= M.mean(axis=1, keepdims=True)
        op = M
    if budget is not None:
        op = _budgeted(aslinearoperator(op), budget)
    v0 = check_random_state(random_state).uniform(-1, 1, n)
    try:
        vals, U = eigsh(op, k=k, which="LA", v0=v0 - v0.mean(), tol=tol)
    except _OverBudget:
        return None
    order = np.argsort(vals)[::-1]
    return vals[order], U[:, order]


def _budgeted(op, budget):
    """``op`` that raises :class:`_OverBudget` once it has multiplied ``budget`` vectors."""
    used = [0]

    def matmat(V):
        V = np.asarray(V).reshape(op.shape[1], -1)
        used[0] += V.shape[1]
        if used[0] > budget:
            raise _OverBudget
        return op.matmat(V)

    return LinearOperator(op.shape, matvec=lambda v: matmat(v)[:, 0], matmat=matmat,
                          dtype=op.dtype)


def _normalised_operator(Z, kernel, normalize, n_threads, on_cluster):
    r""":math:`H D^{-1/2} K D^{-1/2} H` as a ``LinearOperator`` (never formed as a
    matrix unless K is stored for wide points), and the degrees."""
    n = Z.shape[0]
    K = None
    if not on_cluster and Z.shape[1] > STORED_KERNEL_MIN_D and \
            fits_memory(Z.dtype.itemsize * n * n):
        # Wide points (the first U-step of a clustering runs on X itself): every
        # fused product would recompute O(n^2 d) distances, and the eigensolver
        # needs tens to hundreds of products. Forming K once (one such pass) makes
        # each product a plain O(n^2 k) GEMM.
        K = kernel.matrix(Z, n_threads=n_threads)
    if not normalize:
        deg = np.ones(n)
    elif K is not None:
        deg = _check_degrees(K.sum(axis=1, dtype=np.float64))
    else:
        deg = _check_degrees(Z.degrees(kernel) if on_cluster else
                             kernel.degrees(Z, n_threads=n_threads))
    s = (1.0 / np.sqrt(deg)).astype(Z.dtype)

    def matmat(V):
        V = np.asarray(V, dtype=np.float64).reshape(n, -1)
        V = V - V.mean(axis=0, keepdims=True)
        R = np.ascontiguousarray(s[:, None] * V, dtype=Z.dtype)
        if K is not None:
            Y = K @ R
        elif on_cluster:
            Y = Z.product(kernel, R)
        else:
            Y, _ = kernel.product(Z, R, n_threads=n_threads)
        Y = s[:, None] * Y.astype(np.float64)
        return Y - Y.mean(axis=0, keepdims=True)

    op = LinearOperator((n, n), matvec=lambda v: matmat(v)[:, 0], matmat=matmat,
                        dtype=np.float64)
    return op, deg


#: LOBPCG residual tolerance of the warm-started U-step (sin of the angle to
#: the Lanczos subspace ~1e-6 at n = 5,000)
LOBPCG_TOL = 1e-8


def _warm_lobpcg(op, U0, max_iter=40):
    """Top eigenpairs by LOBPCG from U0, largest first; (None, None) when it does not converge."""
    import warnings

    from scipy.sparse.linalg import lobpcg

    X0 = U0 - U0.mean(axis=0, keepdims=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vals, U = lobpcg(op, X0, largest=True, tol=LOBPCG_TOL, maxiter=max_iter)
    if any("not reaching the requested tolerance" in str(w.message) for w in caught):
        return None, None
    order = np.argsort(vals)[::-1]
    return vals[order], U[:, order]


def spectral_gap(eigenvalues):
    r"""How clearly a U-step's embedding splits into its k clusters:
    :math:`\lambda_{k-1} - \lambda_k`.

    ``eigenvalues``: the k descending eigenvalues of the centered normalised
    affinity :math:`H D^{-1/2} K D^{-1/2} H` (the U-step, :func:`spectral_embedding`).
    k well-separated clusters give k - 1 eigenvalues near 1 (centering removes
    the constant vector) and a k-th near 0: a gap near 1; a unimodal cloud
    gives a slowly decaying spectrum and a gap near 0. Scale-free in [0, 1],
    so it compares embeddings made with different bandwidths, where the HSIC
    objective does not (KDAC's starts, docs/alternative_clustering.md).
    """
    vals = np.asarray(eigenvalues, dtype=np.float64)
    k = vals.shape[0]
    if k < 2:
        return float(vals[0]) if k else 0.0
    return float(vals[k - 2] - vals[k - 1])


def row_normalised(U):
    """Rows of U scaled to unit length (zero rows kept): the NJW rounding's input."""
    norms = np.linalg.norm(U, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return U / norms


def njw_labels(U, n_clusters, *, random_state=None, n_init=10):
    """Ng-Jordan-Weiss assignment: k-means on the row-normalised embedding U."""
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state)
    # k-means on an n x k embedding is light; its OpenMP threads only add
    # contention on busy cores, many times the work itself at a few hundred rows.
    with one_thread():
        return km.fit_predict(row_normalised(U))

