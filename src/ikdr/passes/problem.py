r"""What every provider's problem shares: X, Gamma, the kernel, the thread count.

Each provider makes the problem the solver works on
(:class:`ikdr.solver.problem.KernelProblem`, a protocol: the providers
implement it without importing the solver): :class:`ikdr.passes.exact.ExactProblem`
(the kernel layer's fused passes in memory),
:class:`ikdr.passes.landmarks.LandmarkProblem` (landmark factors over row blocks),
:class:`ikdr.passes.dask.DaskProblem` (Dask tasks over block pairs) and
:class:`ikdr.passes.sparse.SparseProblem` (sparse rows read by products). They
share this base: the data and its float64 form on demand, the thread count
read once, and no float32 (coarse) passes unless a problem provides them.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._config import get_num_threads
from .._utils.validation import largest_magnitude, within_scale
from ..gamma import Gamma
from ..kernels import Kernel

__all__ = ["BaseProblem", "FLOAT32_OBJECTIVE_TOLERANCE", "float32_objective_error",
           "float32_estimate", "float32_holds"]

#: the relative error of a float32 pass's objective the estimators document for
#: ``dtype=np.float32``; a float32 problem whose passes cannot meet it warns
FLOAT32_OBJECTIVE_TOLERANCE = 1e-4
#: rows of X (evenly spaced) that :func:`float32_objective_error` reads
_PRECISION_SAMPLE = 512


def float32_objective_error(X: Any, W: np.ndarray, sigma: float | None) -> float:
    r"""Estimated relative error of :math:`\mathrm{Tr}(\Gamma K_{XW})` from float32
    passes with a Gaussian kernel of bandwidth ``sigma`` (None: no estimate, 0).

    A float32 kernel value is rounded to :math:`\epsilon = 2^{-24}`, while the
    objective of a centered Gamma is a difference of kernel values of relative
    size :math:`\min(1, d^2/2\sigma^2)` (d: the points' typical distance): a
    bandwidth far above the distances loses :math:`2\sigma^2/d^2` of the
    precision. Points far from the origin lose more: their squared distances
    :math:`|a|^2 + |b|^2 - 2a^Tb` are differences of norms :math:`|z|^2` far
    above them. Measured on Gaussian mixtures (docs/guide/performance.md), the
    error is at most about :math:`3\epsilon\max(1, 2\sigma^2/d^2)(1 + |z|^2/30\sigma^2)`:
    this estimate was 2 to 50 times the measured error where one cause
    dominates (1e-4 at sigma 16 times the median distance, or at points about
    300 of their standard deviations from the origin), up to 500 times where
    both are moderate; it warns early rather than late. Computed on at most
    512 evenly spaced rows of Z = XW: :math:`|z|^2` their mean squared norm,
    :math:`d^2` the median squared distance between their two halves.
    """
    if sigma is None or not np.isfinite(sigma) or sigma <= 0:
        return 0.0
    step = max(1, X.shape[0] // _PRECISION_SAMPLE)
    rows = X[::step][:_PRECISION_SAMPLE]        # dense or sparse rows: a product either way
    Z = np.asarray(rows @ np.asarray(W, np.float64), dtype=np.float64)
    half = Z.shape[0] // 2
    if half == 0:
        return 0.0
    d2 = float(np.median(np.sum((Z[:half] - Z[half:2 * half]) ** 2, axis=1)))
    if d2 <= 0:
        return 0.0
    z2 = float(np.mean(np.sum(Z * Z, axis=1)))
    s2 = float(sigma) ** 2
    return 3.0 * 2.0 ** -24 * max(1.0, 2.0 * s2 / d2) * (1.0 + z2 / (30.0 * s2))


def float32_holds(X: np.ndarray) -> bool:
    """Whether X's largest magnitude (in memory) is within float32's bounds of
    :func:`ikdr._utils.validation.check_scale` (squares neither overflow nor underflow)."""
    return within_scale(largest_magnitude(X), np.float32)


def float32_estimate(X: np.ndarray, W: np.ndarray, kernel: Kernel,
                     holds: bool | None = None) -> float | None:
    """Estimated relative error of float32 passes' objective on X (in memory) at W:
    infinite where float32 cannot hold X (:func:`float32_holds`, or ``holds``
    when known), :func:`float32_objective_error` for a kernel that is one
    Gaussian member alone, None (no estimate) for any other kernel."""
    if not (float32_holds(X) if holds is None else holds):
        return np.inf
    sigma = kernel.gaussian_sigma
    if sigma is None or len(kernel.members()) != 1:
        return None
    return float32_objective_error(X, W, sigma)


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
    #: whether the d x d Phi may be formed (``phi``, the dense plain steps and the
    #: trust region's preconditioner); a problem on sparse rows with many
    #: features sets this to False and the solver then works from products only
    supports_dense_phi = True
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
        # float32 passes: their accuracy is checked at the first W (check_own_precision)
        self._precision_checked = self.dtype != np.float32
        self._float32_holds: bool | None = None     # read at the first float32_error

    @property
    def X64(self) -> Any:
        """X in float64 (a copy made once, when first asked for)."""
        if self._X64 is None:
            self._X64 = self.X.astype(np.float64)
        return self._X64

    def data(self, own_dtype: bool) -> Any:
        """X in the problem's own dtype, or in float64."""
        return self.X if own_dtype else self.X64

    def check_own_precision(self, W: np.ndarray) -> None:
        """Once, at the first float32 pass: warn (RuntimeWarning) when float32
        passes cannot give the objective to the documented
        :data:`FLOAT32_OBJECTIVE_TOLERANCE` at these points and this bandwidth
        (:func:`float32_objective_error`)."""
        if self._precision_checked:
            return
        self._precision_checked = True
        error = float32_objective_error(self.X, W, self.kernel.gaussian_sigma)
        if error > FLOAT32_OBJECTIVE_TOLERANCE:
            warnings.warn(f"dtype=float32: the float32 passes give the objective to about "
                          f"{error:.1e} (relative) here, not {FLOAT32_OBJECTIVE_TOLERANCE:.0e}: "
                          "the bandwidth is far above the projected points' distances, or the "
                          "points lie far from the origin against their spread; center the "
                          "data, use a smaller sigma, or float64", RuntimeWarning, stacklevel=4)

    def float32_error(self, W: np.ndarray) -> float | None:
        """:func:`float32_estimate` of the problem's rows (in memory) at W (their
        range read once)."""
        if self._float32_holds is None:
            self._float32_holds = float32_holds(self.X)
        return float32_estimate(self.X, W, self.kernel, self._float32_holds)

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
