r"""The clustering provider of the landmark passes: Nystrom U-steps and the W-step's landmarks.

The U-step of the alternation with m landmarks (Fowlkes, Belongie, Chung,
Malik, TPAMI 2004): the top eigenvectors of the normalised kernel from the
n x m columns :math:`C = K(Z, Z_L)` and :math:`K(Z_L, Z_L)`, :math:`O(n m^2)`,
never n x n. :class:`ClusteringLandmarks` is the alternation's provider
(the same shape as :class:`ikdr.passes.exact.ExactClustering` and
:class:`ikdr.distributed.ClusteringPasses`).
"""
from __future__ import annotations

import numpy as np

from .._utils.eig import full_eigh, lapack_top
from .._utils.subspace import subspace_change
from ..gamma import Gamma
from .exact import points_in_memory
from .factors import DEFAULT_LANDMARK_METHOD, kernel_block, select_landmarks
from .landmarks import (AUTO_START, THREADED_BLOCK_FLOPS, Approximation, LandmarkPasses,
                        LandmarkProblem, auto_landmarks, blas_threads, check_n_landmarks)
from .rows import row_blocks, rows_per_block

__all__ = ["nystrom_spectral_embedding", "ClusteringLandmarks"]


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
    big = min(n, rows_per_block(Z.shape[1], block_rows, m)) * m * m > THREADED_BLOCK_FLOPS
    with blas_threads(big):
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
    Kmm = np.asarray(kernel_block(kernel, ZL), dtype=np.float64)
    vals, vecs = full_eigh(0.5 * (Kmm + Kmm.T))
    keep = vals > 1e-10 * max(vals.max(), 0.0) if vals.max() > 0 else np.zeros_like(vals, bool)
    if not keep.any():
        raise ValueError("the landmark kernel matrix has no positive eigenvalue; the spectral "
                         "step needs a positive semi-definite affinity")
    R = vecs[:, keep] / np.sqrt(vals[keep])           # S^{1/2} with S = K_mm^+
    blocks = row_blocks(n, qz, block_rows, width=ZL.shape[0])

    def C_of(sl):
        return np.asarray(kernel_block(kernel, np.ascontiguousarray(Z[sl]), ZL), dtype=np.float64)

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
    """The landmark provider of the clustering alternation (ISMClustering,
    SemiSupervisedISM, KDAC): Nystrom U-steps (:func:`nystrom_spectral_embedding`),
    Nystrom W-steps (a :class:`~ikdr.passes.landmarks.LandmarkPasses`) and the
    paradigms' extra traces, all with the same m. ``n_landmarks="auto"`` is
    resolved at the first U-step (on X): m doubles from :data:`AUTO_START`
    until the embedding's subspace moves by less than :data:`AUTO_TOL`
    (``ikdr._utils.subspace.subspace_change``), then stays fixed; the m used
    is ``n_landmarks``."""

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
            cache = {}

            def basis(m):
                cache[m] = fit(m)
                return cache[m][0]
            _, m, self.trail, _ = auto_landmarks(basis, n, change=subspace_change)
            self.n_landmarks = m
            U, vals, deg, _ = cache[m]
        else:
            U, vals, deg, _ = fit(min(self.n_landmarks, n))
        return U, vals, deg

    #: the bandwidths are fitted on a sample of rows (X may be a memmap)
    rows_in_memory = False
    #: a dense landmark Phi costs O(n d m): the matrix-free eigensolver does not pay
    phi_solver = "dense"

    @staticmethod
    def prepare(X):
        """X as the alternation holds it (an ndarray or memmap, read in row blocks)."""
        return X

    @staticmethod
    def working_data(X, dtype):
        """X unchanged: the landmark passes cast it block by block (a memmap is not copied)."""
        return X

    points = staticmethod(points_in_memory)      # the same points as the exact provider

    def w_step_provider(self, n):
        """The W-step's provider: landmark passes with this provider's m."""
        return LandmarkPasses(self.approximation(n))

    def approximation(self, n):
        """The landmark settings of the W-steps (m fixed by the first U-step)."""
        m = min(n, AUTO_START if self.n_landmarks == "auto" else self.n_landmarks)
        return Approximation("nystrom", m, method=self.method, dtype=self.dtype,
                             random_state=self.random_state)

    def phi0(self, X, gamma, kernel):
        return self.w_step_provider(X.shape[0]).problem(X, gamma, kernel, None).phi0()

    def quadratic_trace(self, Z, kernel, factor):
        r""":math:`\mathrm{Tr}(F^T K_Z F) \approx \mathrm{Tr}(F^T C S C^T F)` with the landmarks."""
        Zc = np.ascontiguousarray(Z)
        problem = LandmarkProblem(Zc, Gamma(factor), kernel, None,
                                  provider=self.w_step_provider(Z.shape[0]))
        return problem.objective(np.eye(Z.shape[1]))
