r"""What the ISM solver works on: a provider's problem, counted, with its Hessian.

The solver maximises :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})`, :math:`W^TW = I`,
through the passes of a :class:`KernelProblem`, which a pass provider makes
(a :class:`Provider`, picked by :func:`ikdr.passes.resolve`: exact passes in
memory, landmarks over row blocks, or Dask tasks). Both are
:class:`typing.Protocol` classes: a provider implements them without
importing this module, and mypy checks that it does wherever one is handed
to the solver. A problem's members:

==============================================  ===================================================
``n``, ``d``, ``dtype``, ``depends_on_w``       samples, dimension, precision of its own passes,
                                                whether :math:`\Phi` depends on W
``phi0()``                                      :math:`\Phi_0` (d x d), no n^2 pass when Gamma is factored
``phi(W, own_dtype)``                           (dense :math:`\Phi(W)`, f(W)): one pass, d columns
``supports_dense_phi``                          whether ``phi`` may be called (False: sparse X
                                                with many features; the solver then works from
                                                ``phi_product`` only and ``phi0()`` may be an
                                                operator, :class:`ikdr._utils.eig.SymmetricOperator`)
``phi_product(W, V, own_dtype)``                (:math:`\Phi(W)V`, f(W)): one thin pass, k columns
``objective(W, own_dtype)``                     f(W), one pass without right-hand side
``supports_coarse``, ``coarse_phi(W)``,         the dense pass in float32 for a float64 problem
``release_coarse()``                            (plain steps far from the maximum) and the end of them
``objective_floor``                             relative trust-region gain below which the fit ends
                                                (0 for exact passes)
``step_costs(q, k)``                            (flops of a dense step, of a pass with k columns),
                                                or None: the solver's panel model applies
==============================================  ===================================================

``own_dtype=True`` computes in the problem's own ``dtype`` (float32 or
float64: the plain steps); ``own_dtype=False`` in float64 (the trust region
and the certificate, where a relative gradient of 1e-6 and finite
differences need double precision). Every returned array is float64.

The solver wraps the problem in a :class:`CountedProblem`, which counts the
passes of each kind (the certificate reports them) and adds the Riemannian
Hessian-vector products; the formulas below are the solver's own
(:mod:`ikdr.solver.driver` derives them).
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._utils.typing import RandomStateLike
from ..gamma import Gamma
from ..kernels import Kernel

__all__ = ["KernelProblem", "Provider", "CountedProblem", "riemannian_gradient",
           "project_hessian", "FD_STEP"]

#: relative finite-difference step of the Hessian-vector products (forward differences)
FD_STEP = 1e-7


def riemannian_gradient(PW: np.ndarray, W: np.ndarray) -> np.ndarray:
    r""":math:`2(I - WW^T)\Phi(W)W` from :math:`\Phi(W)W` (the only copy of the formula)."""
    return 2.0 * (PW - W @ (W.T @ PW))


def project_hessian(W: np.ndarray, dgrad: np.ndarray, Z: np.ndarray,
                    WtPW: np.ndarray) -> np.ndarray:
    r"""Riemannian Hessian from the Euclidean one: :math:`P\,D\nabla f[Z] - Z\,W^T\nabla f`."""
    return dgrad - W @ (W.T @ dgrad) - 2.0 * Z @ WtPW


class KernelProblem(Protocol):
    """The passes of f(W) = Tr(Gamma K_XW) for one (X, Gamma, kernel), as a
    provider computes them (none counted; see the module docstring)."""

    n: int
    d: int
    dtype: np.dtype
    depends_on_w: bool
    supports_coarse: bool
    supports_dense_phi: bool
    objective_floor: float

    def phi0(self) -> np.ndarray: ...

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]: ...

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]: ...

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float: ...

    def coarse_phi(self, W: np.ndarray) -> tuple[np.ndarray, float]: ...

    def float32_error(self, W: np.ndarray) -> float | None: ...

    def release_coarse(self) -> None: ...

    def step_costs(self, q: int, k: int) -> tuple[float, float] | None: ...


class Provider(Protocol):
    """How the passes of a fit are computed: checks X its own way, fits the
    kernel's data-dependent parameters on its rows and makes the problem."""

    def check_data(self, X: Any) -> Any: ...

    def fit_kernel(self, kernel: Kernel, X: Any,
                   random_state: RandomStateLike = None) -> Kernel: ...

    def problem(self, X: Any, gamma: Gamma, kernel: Kernel,
                n_threads: int | None) -> KernelProblem: ...


class CountedProblem:
    """A :class:`KernelProblem` as the solver sees it: the same passes, each counted
    by kind (``n_phi``, ``n_dense_phi``, ``n_coarse_phi``, ``n_objective``,
    ``n_hessian``), and the Riemannian Hessian-vector products."""

    def __init__(self, problem: KernelProblem) -> None:
        self.problem = problem
        self.n, self.d, self.dtype = problem.n, problem.d, problem.dtype
        self.depends_on_w, self.objective_floor = problem.depends_on_w, problem.objective_floor
        self.supports_dense_phi = problem.supports_dense_phi
        self.n_phi = self.n_dense_phi = self.n_coarse_phi = self.n_objective = self.n_hessian = 0

    @property
    def has_coarse(self) -> bool:
        """A float32 dense pass exists and is cheaper than the problem's own."""
        return self.problem.supports_coarse and self.dtype == np.float64

    def phi0(self) -> np.ndarray:
        r""":math:`\Phi_0`, the W-free start (not a counted pass)."""
        return self.problem.phi0()

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(dense Phi(W), f(W)): one pass with the d columns of X."""
        self.n_phi += 1
        self.n_dense_phi += 1
        return self.problem.phi(W, own_dtype)

    def coarse_phi(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        """(dense Phi(W), f(W)) in float32 (relative error near 1e-7): counted as a
        dense Phi pass."""
        self.n_phi += 1
        self.n_dense_phi += 1
        self.n_coarse_phi += 1
        return self.problem.coarse_phi(W)

    def float32_error(self, W: np.ndarray) -> float | None:
        """Estimated relative error of a coarse pass's objective at W (infinite:
        float32 cannot hold X's squares; None: no estimate for this kernel)."""
        return self.problem.float32_error(W)

    def release_coarse(self) -> None:
        """The coarse steps are over (the problem may drop its float32 copy)."""
        self.problem.release_coarse()

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(Phi(W) V, f(W)): one pass with the k columns of XV."""
        self.n_phi += 1
        return self.problem.phi_product(W, V, own_dtype)

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float:
        self.n_objective += 1
        return self.problem.objective(W, own_dtype)

    def step_costs(self, q: int, k: int) -> tuple[float, float] | None:
        return self.problem.step_costs(q, k)

    def hessian_product(self, W: np.ndarray, Z: np.ndarray, PW: np.ndarray,
                        phi: np.ndarray | None = None) -> np.ndarray:
        r"""Riemannian Hessian of f at W along the tangent vector Z (float64).

        :math:`P(2\Phi Z + 2 D\Phi[Z]W) - 2ZW^T\Phi W` (module docstring of
        :mod:`ikdr.solver.driver`). The kernel-curvature term :math:`D\Phi[Z]W` is the
        forward difference :math:`(\Phi(W + tZ)W - \Phi(W)W)/t`: one pass with
        the q columns of XW when the dense ``phi`` is known, else one pass with
        the 2q columns of X[W, Z] whose second half gives :math:`\Phi Z` (to
        first order in t).
        """
        self.n_hessian += 1
        problem = self.problem
        norm = np.linalg.norm(Z)
        if norm == 0 or not self.depends_on_w:
            phiZ = phi @ Z if phi is not None else problem.phi_product(W, Z)[0]
            return project_hessian(W, 2.0 * phiZ, Z, W.T @ PW)
        t = FD_STEP / norm
        Wt = W + t * Z
        if phi is not None:
            moved, _ = problem.phi_product(Wt, W)
            phiZ = phi @ Z
        else:
            both, _ = problem.phi_product(Wt, np.hstack([W, Z]))
            q = W.shape[1]
            moved, phiZ = both[:, :q], both[:, q:]
        dgrad = 2.0 * (phiZ + (moved - PW) / t)
        return project_hessian(W, dgrad, Z, W.T @ PW)
