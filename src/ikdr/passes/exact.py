r"""The exact passes in memory: every n^2 pass by the fused C++ products.

:class:`ExactPasses` is the W-step's provider (the same three methods as the
landmark and Dask providers: ``check_data``, ``fit_kernel``, ``problem``) and
:class:`ExactProblem` its problem;
:class:`ExactClustering` is the clustering alternation's provider (the U-step's
points and embedding, :math:`\Phi_0` and the paradigms' traces). Both are
made by :func:`ikdr.passes.resolve` when X is an in-memory array and no
approximation is asked for.
"""
from __future__ import annotations

import numpy as np

from typing import Any

from .._utils.typing import RandomStateLike
from .._utils.validation import check_dtype, check_float_matrix
from ..gamma import Gamma
from ..kernels import Kernel, projected_points
from ..spectral import spectral_embedding
from .problem import BaseProblem

__all__ = ["ExactPasses", "ExactProblem", "ExactClustering", "points_in_memory"]


def points_in_memory(X, W):
    """The U-step's points XW of rows in memory (C order, X's dtype); X itself when W
    is None. The exact and the landmark sides share it."""
    if W is None:
        return X
    return projected_points(X, W)


class ExactProblem(BaseProblem):
    """f(W) = Tr(Gamma K_XW) for X in memory, every pass by the kernel layer's
    fused product (:meth:`ikdr.kernels.Kernel.phi_product`); the solver's
    problem (:class:`ikdr.solver.problem.KernelProblem`)."""

    supports_coarse = True

    def __init__(self, X: np.ndarray, gamma: Gamma, kernel: Kernel,
                 n_threads: int | None = None) -> None:
        super().__init__(X, gamma, kernel, n_threads)
        self._X32: np.ndarray | None = None

    def phi0(self) -> np.ndarray:
        r""":math:`\Phi_0`, the W-free start (O(n d r) for a rank-r factored Gamma)."""
        return self.kernel.phi0(self.X64, self.gamma)

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(dense Phi(W), f(W)): one pass with the d columns of X."""
        return self.kernel.phi_product(self._own_data(W, own_dtype), W, self.gamma, None,
                                       n_threads=self.n_threads)

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(Phi(W) V, f(W)): one pass with the k columns of XV."""
        return self.kernel.phi_product(self._own_data(W, own_dtype), W, self.gamma, V,
                                       n_threads=self.n_threads)

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float:
        return self.kernel.objective(self._own_data(W, own_dtype), W, self.gamma,
                                     n_threads=self.n_threads)

    def _own_data(self, W: np.ndarray, own_dtype: bool) -> np.ndarray:
        """:meth:`data`, after the float32 accuracy check at the first own-dtype pass."""
        if own_dtype:
            self.check_own_precision(W)
        return self.data(own_dtype)

    def coarse_phi(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        """(dense Phi(W), f(W)) from a float32 copy of X: one pass at about half
        the cost, relative error near 1e-7 (the passes sum in float64)."""
        if self._X32 is None:
            self._X32 = self.X.astype(np.float32)
        return self.kernel.phi_product(self._X32, W, self.gamma, None, n_threads=self.n_threads)

    def release_coarse(self) -> None:
        """Drop the float32 copy of X (the driver's coarse steps are over)."""
        self._X32 = None


class ExactPasses:
    """The W-step's exact provider: :class:`ExactProblem` over X in memory.
    ``dtype`` is the precision of the plain steps' passes (None: X's own,
    float32 or float64)."""

    name = "exact"

    def __init__(self, dtype: Any = None) -> None:
        self.dtype = check_dtype(dtype, allow_none=True)

    def check_data(self, X: Any) -> np.ndarray:
        """X as a finite float32 / float64 matrix of at least 2 rows, in ``dtype``."""
        X = check_float_matrix(X, "X")
        if self.dtype is not None:
            X = np.ascontiguousarray(X, dtype=self.dtype)
        return X

    def fit_kernel(self, kernel: Kernel, X: Any, random_state: RandomStateLike = None) -> Kernel:
        """The kernel's data-dependent parameters (``sigma="median"``) from X."""
        return kernel.fit(X, random_state=random_state)

    def problem(self, X: Any, gamma: Gamma, kernel: Kernel,
                n_threads: int | None) -> ExactProblem:
        return ExactProblem(X, gamma, kernel, n_threads)


class ExactClustering:
    """The exact provider of the clustering alternation: U-steps by
    :func:`ikdr.spectral.spectral_embedding` on the points XW in memory,
    W-steps by :class:`ExactPasses`."""

    n_landmarks = None
    #: every row is at hand (local scaling, all-row bandwidths are possible)
    rows_in_memory = True
    #: how the W-step finds Phi's eigenvectors (``phi_solver`` of :func:`ikdr.ism`)
    phi_solver = "auto"

    def __init__(self, dtype=None):
        self.provider = ExactPasses(dtype)

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

    def w_step_provider(self, n):
        """The W-step's provider."""
        return self.provider

    @staticmethod
    def phi0(X, gamma, kernel):
        return kernel.phi0(X, gamma)

    @staticmethod
    def quadratic_trace(Z, kernel, factor, n_threads=None):
        r""":math:`\mathrm{Tr}(F^T K_Z F)` by one fused pass (F is n x r, never K)."""
        return kernel.objective(Z, None, Gamma(factor), n_threads=n_threads)
