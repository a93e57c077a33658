"""The spectral step shared by every clustering paradigm (public: ``ikdr.spectral``).

Functions: :func:`spectral_embedding` (the U-step), :func:`njw_labels` (the
Ng-Jordan-Weiss rounding), :func:`kernel_degrees`, :func:`auto_kernel`
(the data-driven default affinity behind ``sigma="auto"``),
:func:`median_scale_gaussian` (its global counterpart for KDAC) and the
feature screen (:func:`feature_gaps`, :func:`screen_features`).

U = top-k eigenvectors of :math:`H D^{-1/2} K D^{-1/2} H`, :math:`D = \\mathrm{diag}(K 1)`
(dissertation Eq. 3.4). Below ``DENSE_MAX_N`` samples the
n x n matrix is formed and LAPACK solves it; above, a matrix-free Lanczos
(``scipy.sparse.linalg.eigsh``) runs on a ``LinearOperator`` whose matvec is
the fused C++ kernel product, so memory stays O(n k).
"""
from __future__ import annotations

import warnings

import numpy as np

import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.cluster import KMeans
from sklearn.manifold import spectral_embedding as laplacian_eigenmaps
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ._config import fits_memory, require_memory, single_threaded_blas
from ._utils.eig import lapack_top
from ._utils.sampling import sample_index
from .kernels import Gaussian, Kernel, RelativeGaussian

__all__ = ["DENSE_MAX_N", "MatrixFreePoints", "auto_kernel", "median_scale_gaussian",
           "kernel_degrees", "row_normalised", "spectral_embedding", "affinity_embedding",
           "spectral_gap", "feature_gaps", "median_pairwise_distance_1d", "screen_features",
           "njw_labels", "AUTO_NEIGHBORS", "screen_candidates", "screen_taken"]

#: up to this many samples the U-step builds the dense n x n matrix
DENSE_MAX_N = 3000
#: from this many samples a warm-started dense U-step (``U0`` given) runs LOBPCG
#: on the formed matrix before LAPACK's O(n^3) eigensolver
DENSE_WARM_MIN_N = 1000
#: above this many samples the dense U-step finds its few eigenpairs by Lanczos
DENSE_LANCZOS_MIN_N = 500
#: Above this many columns the matrix-free U-step stores K once (when it fits
#: the memory budget) instead of recomputing it in every product.
STORED_KERNEL_MIN_D = 64


#: k of the k-NN local bandwidths behind ``sigma="auto"`` (Zelnik-Manor and Perona 2004)
AUTO_NEIGHBORS = 7


def auto_kernel(X, n_clusters, *, n_neighbors=AUTO_NEIGHBORS):
    r"""The default kernel of the clustering estimators (``sigma="auto"``): local scaling.

    Rule: the relative Gaussian :math:`k(x_i, x_j) = \exp(-\|W^T(x_i - x_j)\|^2
    / 2\sigma_i\sigma_j)` with :math:`\sigma_i` the distance from :math:`x_i`
    to its ``n_neighbors``-th (7th) nearest neighbour in the training X
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
    k-th nearest neighbour, as :func:`auto_kernel`): the same scale from the
    same k-NN query, one bandwidth for every point. KDAC's ``sigma="auto"``
    when the existing clustering is visible in X (:class:`ikdr.KDAC`): there
    each :math:`\sigma_i` is set by the point's neighbours in the existing
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
                       n_threads=None, tol=1e-10, normalize=True, U0=None):
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
        (falling back to LAPACK): digits (n = 1,797), ISMClustering's 20
        U-steps took 16 of its 35 s in LAPACK's full tridiagonalisation.

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
        return affinity_embedding(K, k, normalize=normalize, U0=U0)
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
    costs 4-5 times more for a few eigenpairs (n = 1,797, k = 10: 0.40 s
    against 0.11 s on one core, the same eigenvalues to 1e-15). Where the
    leading eigenvalues are (nearly) tied the two span the same subspace but
    may return different bases of it.
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
    K -= K.mean(axis=0, keepdims=True)
    K -= K.mean(axis=1, keepdims=True)
    # One BLAS thread: OpenBLAS's threaded dsyevr collapses when the cores are
    # busy (here 0.7 s instead of 14 ms at n = 400, 3.3 s instead of 0.55 s at
    # n = 2,000 on 2 shared cores), and its gain on an idle machine is small.
    with single_threaded_blas():
        vals = None
        if U0 is not None and np.shape(U0) == (n, k) and n >= DENSE_WARM_MIN_N:
            # a warm start inside an alternation: LOBPCG's block products with the
            # dense matrix cost O(n^2 k) each against dsyevr's O(n^3)
            vals, U = _warm_lobpcg(K, np.asarray(U0, dtype=np.float64))
        if vals is None and lanczos and n > DENSE_LANCZOS_MIN_N and k < n // 10:
            v0 = check_random_state(random_state).uniform(-1, 1, n)
            vals, U = eigsh(K, k=k, which="LA", v0=v0 - v0.mean(), tol=tol)
            order = np.argsort(vals)[::-1]
            vals, U = vals[order], U[:, order]
        elif vals is None:
            vals, U = lapack_top(K, k)
    return np.ascontiguousarray(U), vals, deg


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
    r"""How clearly a U-step's embedding splits into its k clusters: :math:`\lambda_{k-1} - \lambda_k`.

    ``eigenvalues``: the k descending eigenvalues of the centred normalised
    affinity :math:`H D^{-1/2} K D^{-1/2} H` (the U-step, :func:`spectral_embedding`).
    k well-separated clusters give k - 1 eigenvalues near 1 (centring removes
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


#: bandwidth of a single feature's U-step in :func:`feature_gaps`: this multiple of
#: its median pairwise distance (0.25 lost two of eight grids of blobs in KDAC's
#: feature start, 0.5 none; docs/alternative_clustering.md)
FEATURE_GAP_SCALE = 0.5
#: rows of :func:`feature_gaps` (a seeded subsample above this)
FEATURE_GAP_MAX_SAMPLES = 500


def median_pairwise_distance_1d(z):
    """Median of :math:`|z_i - z_j|` over the pairs i < j of a 1-D sample, exactly, without
    the m^2 pairs: a bisection on the value whose every step counts the pairs below
    it by one sorted search (O(m log m)), or the distinct values' pairs when few."""
    x = np.sort(np.asarray(z, dtype=np.float64).ravel())
    m = x.shape[0]
    if m < 2:
        return 0.0
    pairs = m * (m - 1) // 2
    ranks = ((pairs - 1) // 2, pairs // 2)
    values, counts = np.unique(x, return_counts=True)
    if values.shape[0] <= FEW_VALUES:
        return 0.5 * sum(_kth_difference_of_values(values, counts, r) for r in ranks)
    return 0.5 * sum(_kth_difference(x, r) for r in ranks)


#: a sample with at most this many distinct values (pixel intensities, counts) takes
#: the median of its pair differences from the values' pairs, weighted by their counts
FEW_VALUES = 256


def _kth_difference_of_values(values, counts, k):
    """The k-th smallest (0-based) pair difference of a sample given as sorted distinct
    values with their counts: each pair of values a < b stands for c_a c_b pairs,
    each value for c(c-1)/2 pairs at difference 0."""
    a, b = np.triu_indices(values.shape[0], 1)
    diffs = np.concatenate([[0.0], values[b] - values[a]])
    weights = np.concatenate([[np.sum(counts * (counts - 1) / 2)], counts[a] * counts[b]])
    order = np.argsort(diffs, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(diffs[order][np.searchsorted(cumulative, k, side="right")])


def _kth_difference(x, k):
    """The k-th smallest (0-based) of :math:`x_j - x_i`, i < j, for sorted x."""
    m = x.shape[0]
    rows = np.arange(m)

    def at_most(t):                 # pairs whose difference is <= t (t >= 0)
        return int(np.sum(np.searchsorted(x, x + t, side="right") - rows - 1))

    if at_most(0.0) > k:
        return 0.0
    lo, hi = 0.0, 2.0 * (x[-1] - x[0]) + 1.0   # at_most(lo) <= k < at_most(hi)
    while True:
        below, mid = at_most(lo), 0.5 * (lo + hi)
        if not lo < mid < hi:       # (lo, hi] holds one value: the smallest above lo
            first = np.searchsorted(x, x + lo, side="right")
            inside = first < m
            return float(np.min(x[first[inside]] - x[inside]))
        if at_most(hi) - below <= 4 * m:   # few pairs left: list them
            start = np.searchsorted(x, x + lo, side="right")
            lengths = np.searchsorted(x, x + hi, side="right") - start
            offsets = np.repeat(start - np.cumsum(lengths) + lengths, lengths)
            columns = offsets + np.arange(lengths.sum())
            values = np.sort(x[columns] - x[np.repeat(rows, lengths)])
            return float(values[k - below])
        if at_most(mid) > k:
            hi = mid
        else:
            lo = mid


def _binned_gap(z, bandwidth, n_groups, bins):
    r"""The ``n_groups`` spectral gap of a 1-D sample's Gaussian U-step, each value moved
    to the mean of its bin (width range / bins): the eigenvalues of the bins' matrix
    :math:`H_c C^{1/2} D_b^{-1/2} K_b D_b^{-1/2} C^{1/2} H_c` (C: the bin counts,
    :math:`D_b = \mathrm{diag}(K_b c)`, :math:`H_c = I - \sqrt c\sqrt c^T / n`),
    at most ``bins`` rows instead of the sample's."""
    lo, hi = float(z.min()), float(z.max())
    if not hi > lo:
        return 0.0
    index = np.minimum(((z - lo) / (hi - lo) * bins).astype(np.intp), bins - 1)
    counts = np.bincount(index, minlength=bins).astype(np.float64)
    filled = counts > 0
    counts = counts[filled]
    centres = np.bincount(index, weights=z, minlength=bins)[filled] / counts
    K = np.exp(-np.subtract.outer(centres, centres) ** 2 / (2.0 * bandwidth ** 2))
    r = np.sqrt(counts / (K @ counts))
    M = r[:, None] * K * r[None, :]
    v = np.sqrt(counts / counts.sum())      # the constant vector, in the bins' weights
    Mv = M @ v
    M += (v @ Mv) * np.outer(v, v) - np.outer(v, Mv) - np.outer(Mv, v)
    vals = np.linalg.eigvalsh(M)[::-1]
    k = min(int(n_groups), vals.shape[0])
    return spectral_gap(vals[:k])


#: bins of the 1-D U-steps of :func:`feature_gaps` (their gaps agree with those of
#: the unbinned 500-row samples to 3e-4 on the benchmark's data sets)
FEATURE_GAP_BINS = 128


def feature_gaps(X, n_groups, *, max_samples=FEATURE_GAP_MAX_SAMPLES, random_state=None):
    r"""How clearly each single feature splits into ``n_groups`` clusters.

    For every column j: the :func:`spectral_gap` of the ``n_groups``-cluster
    U-step of :math:`X_{:,j}` alone, with a Gaussian at
    :data:`FEATURE_GAP_SCALE` x its median pairwise distance, each value
    moved to the mean of its bin among :data:`FEATURE_GAP_BINS` equal bins
    (:func:`_binned_gap`: the same eigenvalues as the binned sample's, from
    a matrix of at most 128 rows). A feature holding that many separated
    groups scores near 1, a unimodal one (noise) low: 1-D standard-normal
    noise scored at most 0.21 on 300-600 rows, the informative features of a
    grid of blobs 0.65-0.91 (``n_groups`` = k, KDAC) and of make_blobs /
    make_classification with 3 informative features among 30-50 0.27-0.50
    (``n_groups`` = 2, ISMClustering; docs/alternative_clustering.md). On a
    seeded subsample of at most ``max_samples`` rows.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rows = sample_index(n, max_samples, random_state)
    rows = np.arange(n) if rows is None else np.sort(rows)
    scores = np.zeros(d)
    for j in range(d):
        z = X[rows, j]
        s = FEATURE_GAP_SCALE * median_pairwise_distance_1d(z)
        if s > 0:
            scores[j] = _binned_gap(z, s, n_groups, FEATURE_GAP_BINS)
    return scores


#: a feature joins the screen when its 2-group gap (:func:`feature_gaps`) reaches
#: this: 1-D standard-normal noise of 300-600 rows scored at most 0.21, the
#: informative features of 4 blobs in 3 of 50 features 0.27-0.43 and of
#: make_classification 3 of 30 0.32-0.50 (docs/alternative_clustering.md)
SCREEN_MIN_GAP = 0.25
#: the screen is taken when the k-cluster spectral gap of the screened features at
#: W = I beats that of all features by this much (4 blobs in 3 of 50: 0.110 against
#: 0.001; face, 20 clusters: 0.007 against 0.003, where the screen lost 0.28 NMI)
SCREEN_GAP_MARGIN = 0.05
#: rows of the screen's two U-steps (a seeded subsample above this)
SCREEN_MAX_SAMPLES = 1000


def screen_features(X, n_clusters, *, random_state=None):
    r"""The features the clustering estimators' W may use when a few carry the clusters.

    1. Candidates: the features whose 2-group :func:`feature_gaps` is at
       least :data:`SCREEN_MIN_GAP` (a bimodal feature; noise scores lower).
    2. Taken when the ``n_clusters``-cluster :func:`spectral_gap` of the
       local-scaling U-step (:func:`auto_kernel`) on the candidates alone beats
       the one on all features by :data:`SCREEN_GAP_MARGIN`: spectral
       clustering of all features is dominated by the noise there, and so is
       the start of every alternation (ISMClustering on 4 blobs in 3 of 50
       features 0.26 -> 0.90; docs/alternative_clustering.md).

    Cost: d dense eigenproblems of at most 500 rows, two U-steps of at most
    :data:`SCREEN_MAX_SAMPLES` rows.

    Returns
    -------
    columns : ndarray of int or None
        The screened features, or None (use all).
    scores : ndarray (d,)
        Every feature's 2-group gap.
    gaps : tuple of float or None
        The spectral gaps of all features and of the candidates (None when
        no proper subset was a candidate).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    columns, scores = screen_candidates(X, random_state=random_state)
    if columns is None:
        return None, scores, None
    rows = sample_index(n, SCREEN_MAX_SAMPLES, random_state)
    Xs = X if rows is None else X[np.sort(rows)]
    gaps = []
    for Z in (Xs, Xs[:, columns]):
        Z = np.ascontiguousarray(Z)
        _, vals, _ = spectral_embedding(Z, auto_kernel(Z, n_clusters), n_clusters,
                                        random_state=random_state)
        gaps.append(spectral_gap(vals))
    return (columns if screen_taken(*gaps) else None), scores, tuple(gaps)


def screen_candidates(X, *, random_state=None):
    """Step 1 of :func:`screen_features`: the features whose 2-group gap reaches
    :data:`SCREEN_MIN_GAP` (None unless a proper, non-empty subset) and every
    feature's gap (:func:`feature_gaps`)."""
    scores = feature_gaps(X, 2, random_state=random_state)
    columns = np.flatnonzero(scores >= SCREEN_MIN_GAP)
    if columns.size == 0 or columns.size == scores.shape[0]:
        return None, scores
    return columns, scores


def screen_taken(gap_all, gap_screened):
    """Step 2 of :func:`screen_features`: whether the local-scaling U-step of the
    candidates separates the clusters more clearly than that of every feature
    (:func:`spectral_gap` larger by :data:`SCREEN_GAP_MARGIN`)."""
    return gap_screened >= gap_all + SCREEN_GAP_MARGIN


def row_normalised(U):
    """Rows of U scaled to unit length (zero rows kept): the NJW rounding's input."""
    norms = np.linalg.norm(U, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return U / norms


def njw_labels(U, n_clusters, *, random_state=None, n_init=10):
    """Ng-Jordan-Weiss assignment: k-means on the row-normalised embedding U."""
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state)
    # k-means on an n x k embedding is light; its OpenMP threads only add
    # contention on busy cores (47 ms instead of ~1 ms per run at n = 400).
    with threadpool_limits(limits=1):
        return km.fit_predict(row_normalised(U))

