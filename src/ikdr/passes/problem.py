r"""What every provider's problem shares: X, Gamma, the kernel, the thread count.

Each provider makes the problem the solver works on
(:class:`ikdr.solver.problem.KernelProblem`, a protocol: the providers
implement it without importing the solver): :class:`ikdr.passes.exact.ExactProblem`
(the kernel layer's fused passes in memory),
:class:`ikdr.passes.landmarks.LandmarkProblem` (landmark factors over row blocks)
and :class:`ikdr.passes.dask.DaskProblem` (Dask tasks over block pairs). They
share this base: the data and its float64 form on demand, the thread count
read once, and no float32 (coarse) passes unless a problem provides them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._config import get_num_threads
from ..gamma import Gamma
from ..kernels import Kernel

__all__ = ["BaseProblem"]


class BaseProblem:
    """The part of a provider's problem that does not depend on how it computes passes.

    Parameters
    ----------
    X : ndarray (n, d), float64 or float32, or the provider's own rows
        (a memmap, :class:`ikdr.passes.dask_data.DaskData`)
    gamma : Gamma
    kernel : Kernel, fitted
    n_threads : int or None
        Threads of every pass; None: :func:`ikdr.get_num_threads` when the
        problem is made (read once: all the passes of a fit use one count).
    """

    #: whether :meth:`coarse_phi` exists (only the exact passes in memory have it)
    supports_coarse = False
    #: relative objective gain below which a trust-region step ends the fit
    #: ("objective"): 0 for exact passes; an approximate problem sets its own
    #: floor, where its approximation error dominates any further gain
    objective_floor = 0.0

    def __init__(self, X: Any, gamma: Gamma, kernel: Kernel, n_threads: int | None = None):
        self.X = X
        self._X64 = X if X.dtype == np.float64 else None
        self.gamma, self.kernel = gamma, kernel
        self.n_threads = get_num_threads() if n_threads is None else int(n_threads)
        self.n: int = int(X.shape[0])
        self.d: int = int(X.shape[1])
        #: the precision of the problem's own passes (``own_dtype=True``)
        self.dtype: np.dtype = np.dtype(X.dtype)
        self.depends_on_w: bool = bool(kernel.depends_on_w)

    @property
    def X64(self) -> Any:
        """X in float64 (a copy made once, when first asked for)."""
        if self._X64 is None:
            self._X64 = self.X.astype(np.float64)
        return self._X64

    def data(self, own_dtype: bool) -> Any:
        """X in the problem's own dtype, or in float64."""
        return self.X if own_dtype else self.X64

    def coarse_phi(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        raise NotImplementedError(f"{type(self).__name__} has no float32 passes "
                                  "(supports_coarse is False)")

    def release_coarse(self) -> None:
        """Nothing to release: no float32 copy was made."""

    def step_costs(self, q: int, k: int) -> tuple[float, float] | None:
        """(flops of a dense Phi pass, flops of a pass with k columns) when the
        problem's passes have their own cost model, else None: the solver then
        weighs the exact passes' n x n panel (:mod:`ikdr.solver.steps`)."""
        return None
