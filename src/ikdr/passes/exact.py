r"""The exact passes in memory: every n^2 pass by the fused C++ products.

:class:`ExactPasses` is the W-step's provider (the same three methods as the
landmark and Dask providers: ``check_data``, ``fit_kernel``, ``problem``);
:class:`ExactClustering` is the clustering alternation's side (the U-step's
points and embedding, :math:`\Phi_0` and the paradigms' traces). Both are
made by :func:`ikdr.passes.resolve` when X is an in-memory array and no
approximation is asked for.
"""
from __future__ import annotations

import numpy as np

from .._utils.validation import check_dtype, check_float_matrix
from ..gamma import Gamma
from ..spectral import spectral_embedding
from .problem import KernelProblem

__all__ = ["ExactPasses", "ExactClustering", "points_in_memory"]


def points_in_memory(X, W):
    """The U-step's points XW of rows in memory (C order, X's dtype); X itself when W
    is None. The exact and the landmark sides share it."""
    if W is None:
        return X
    return np.ascontiguousarray(X @ W, dtype=X.dtype)


class ExactPasses:
    """The W-step's exact provider: :class:`ikdr.passes.problem.KernelProblem`
    over X in memory. ``dtype`` is the precision of the plain steps' passes
    (None: X's own, float32 or float64)."""

    name = "exact"

    def __init__(self, dtype=None):
        self.dtype = check_dtype(dtype, allow_none=True)

    def check_data(self, X):
        """X as a finite float32 / float64 matrix of at least 2 rows, in ``dtype``."""
        X = check_float_matrix(X, "X")
        if self.dtype is not None:
            X = np.ascontiguousarray(X, dtype=self.dtype)
        return X

    def fit_kernel(self, kernel, X, random_state=None):
        """The kernel's data-dependent parameters (``sigma="median"``) from X."""
        return kernel.fit(X, random_state=random_state)

    def problem(self, X, gamma, kernel, n_threads):
        return KernelProblem(X, gamma, kernel, n_threads)


class ExactClustering:
    """The exact side of the clustering alternation: U-steps by
    :func:`ikdr.spectral.spectral_embedding` on the points XW in memory,
    W-steps by :class:`ExactPasses`."""

    n_landmarks = None
    #: every row is at hand (local scaling, all-row bandwidths are possible)
    rows_in_memory = True
    #: how the W-step finds Phi's eigenvectors (``phi_solver`` of :func:`ikdr.ism`)
    phi_solver = "auto"

    def __init__(self, dtype=None):
        self.passes = ExactPasses(dtype)

    @staticmethod
    def prepare(X):
        """X as the alternation holds it (in memory: unchanged)."""
        return X

    @staticmethod
    def working_data(X, dtype):
        """X in the working precision of the passes."""
        return X.astype(dtype, copy=False)

    points = staticmethod(points_in_memory)

    @staticmethod
    def embed(Z, affinity, n_clusters, **options):
        """:func:`ikdr.spectral.spectral_embedding` of the points Z."""
        return spectral_embedding(Z, affinity, n_clusters, **options)

    def ism_passes(self, n):
        """The W-step's provider."""
        return self.passes

    @staticmethod
    def phi0(X, gamma, kernel):
        return kernel.phi0(X, gamma)

    @staticmethod
    def quadratic_trace(Z, kernel, factor, n_threads=None):
        r""":math:`\mathrm{Tr}(F^T K_Z F)` by one fused pass (F is n x r, never K)."""
        return kernel.objective(Z, None, Gamma(factor), n_threads=n_threads)
