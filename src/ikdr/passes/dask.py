r"""ikdr beyond one machine: the passes of ISM and Nystrom KSVD as Dask tasks.

Every expensive step of ikdr is a *pass*: a sum over pairs of samples
:math:`(i, j)` of a kernel panel, :math:`\Phi(W) V = X^T G(XW) X V`,
:math:`\mathrm{Tr}(\Gamma K_{XW})`, :math:`(\Gamma \circ K) R`. Cut the rows
into blocks :math:`I_1, \dots, I_B` (the chunks of a row-chunked
``dask.array.Array``) and a pass is a sum over block pairs:

.. math::

    \Phi(W) V = \sum_I X_I^T \sum_J \big[G(XW)\big]_{IJ\,\cdot}\, (X V)_J ,

where one pair :math:`(I, J)` is :meth:`ikdr.kernels.Kernel.pair_product`
(the same fused C++ product the single-machine pass uses, on the rectangular
block pair). One Dask task computes one pair and reduces it to its d x k
partial *inside the task*, so the traffic of a pass is
:math:`O(B^2 d k)` numbers, independent of the chunk size, and nothing n x n
is formed or shipped. The partials of row block I are summed in the order of
J, then the row blocks are summed by a binary tree in the order of I: the
reduction order is fixed, so repeated runs give identical bits.

W, the small eigenproblems and the trust region stay on the client (see
:func:`ikdr.ism`); :class:`DaskProblem` is the solver's problem
(:class:`ikdr.solver.problem.KernelProblem`) whose passes are these tasks.

Entry points: pass a row-chunked dask array to ``ISM.fit``, ``ism``, the
clustering estimators (``ISMClustering``, ``SemiSupervisedISM``, ``KDAC``) or
:func:`ikdr.alternate`, ``KernelSVD(solver="nystrom").fit`` or ``transform``.
:func:`ikdr.passes.resolve` picks the W-step's provider (:class:`DaskPasses`)
and :func:`ikdr.passes.resolve_clustering` the clustering provider
(:class:`ClusteringPasses`). With an active
``dask.distributed.Client`` the tasks run on its workers (otherwise on Dask's
local scheduler). Dask is an optional dependency (``pip install "dask[array]" distributed``, or the ``dask`` extra);
this module imports it lazily.

Requirements on X: 2-D, chunked along rows only (one column block), known
chunk sizes, all row chunks of the same size except a smaller last one, and
a chunk small enough for the workers' memory limit (checked before any task
is submitted; the error names the chunk size to use).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._utils.validation import check_dtype, check_finite_result
from .._utils.typing import RandomStateLike
from ..gamma import Gamma
from ..kernels import Kernel
from ..spectral import MatrixFreePoints, spectral_embedding
from .dask_data import (DaskData, as_data, check_row_chunked, degree_task, is_distributed, lowrank_task)
from .problem import BaseProblem
from .rows import fit_kernel_on_rows

__all__ = ["is_distributed", "DaskProblem", "DaskPasses", "Projected", "ClusteringPasses",
           "fit_kernel", "phi0", "project"]


# ---------------------------------------------------------------- fitted parameters and Phi_0
def _refuse_local_bandwidths(kernel):
    if kernel.needs_all_rows:
        raise ValueError("the RelativeGaussian kernel needs every point's nearest neighbors "
                         "and is not supported on distributed (dask) data; use Gaussian")


def fit_kernel(kernel, X, random_state=None):
    """``kernel.fit`` for distributed X: the median heuristic draws the same rows
    as in memory (:func:`ikdr.median_sigma` with ``random_state``) and gathers
    only those (at most 3,000) to the client, as the landmark path does
    (:func:`ikdr.passes.landmarks.fit_kernel_on_rows`). RelativeGaussian needs every
    point's neighbors and is refused."""
    _refuse_local_bandwidths(kernel)
    return fit_kernel_on_rows(kernel, X, random_state)


def phi0(kernel, X, gamma):
    r""":math:`\Phi_0` of distributed X.

    :math:`\Phi_0 = a\,X^T\Gamma X + b\,X^T L(\Gamma) X` (the kernel's
    :meth:`~ikdr.kernels.Kernel.phi0_coefficients`) from the factor alone, in
    two maps over row blocks (O(n d r), no pair pass):
    :math:`X^T \Gamma X = (G^TX)^T \mathrm{diag}(s) (G^TX)`,
    :math:`X^T \mathrm{diag}(\Gamma 1) X = \sum_I X_I^T \mathrm{diag}(G_I s \circ G^T 1) X_I`.
    """
    inner, lap = kernel.phi0_coefficients()
    g_blocks, scale = X.gamma_blocks(gamma)
    GX, g1 = X.map_reduce(lowrank_task, g_blocks)
    quad = GX.T @ (scale[:, None] * GX)
    out = inner * quad
    if lap:
        D, _ = X.map_reduce(degree_task, g_blocks, shared=(scale, g1))
        out = out + lap * (D - quad)
    return check_finite_result(0.5 * (out + out.T), f"Phi_0 of the kernel {kernel!r}")


# ---------------------------------------------------------------- the solver's problem and provider
class DaskProblem(BaseProblem):
    """The solver's problem (:class:`ikdr.solver.problem.KernelProblem`) with every
    pass mapped over block pairs of a :class:`DaskData`: the trust region and
    the certificate run unchanged on the client on top of them."""

    def __init__(self, X, gamma, kernel, n_threads=None):
        _refuse_local_bandwidths(kernel)
        super().__init__(X, gamma, kernel, n_threads)

    def _phi(self, W: np.ndarray, V: np.ndarray | None,
             own_dtype: bool) -> tuple[np.ndarray, float]:
        out, value = self.data(own_dtype).reduce_pairs(self.kernel, W, V, "phi", self.gamma)
        if V is None:
            out = 0.5 * (out + out.T)
        check_finite_result(out, lambda: f"Phi(W) of the kernel {self.kernel!r}")
        return out, float(value)

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]:
        return self._phi(W, None, own_dtype)

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]:
        return self._phi(W, V, own_dtype)

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float:
        _, value = self.data(own_dtype).reduce_pairs(self.kernel, W, None, "objective",
                                                     self.gamma)
        return float(value)

    def phi0(self) -> np.ndarray:
        return phi0(self.kernel, self.X64, self.gamma)


class DaskPasses:
    """The W-step's provider for a row-chunked dask X (``check_data``,
    ``fit_kernel``, ``problem``, as the exact and landmark providers), so
    :func:`ikdr.ism` runs its one driver on a :class:`DaskProblem`. Made by
    :func:`ikdr.passes.resolve`; ``dtype`` is the precision of the plain
    steps' passes (None: X's own)."""

    name = "dask"

    def __init__(self, dtype=None):
        self.dtype = check_dtype(dtype, allow_none=True)

    def check_data(self, X: Any) -> DaskData:
        data = as_data(X)
        return data if self.dtype is None else data.astype(self.dtype)

    def fit_kernel(self, kernel: Kernel, X: Any, random_state: RandomStateLike = None) -> Kernel:
        return fit_kernel(kernel, X, random_state)

    def problem(self, X: Any, gamma: Gamma, kernel: Kernel,
                n_threads: int | None) -> DaskProblem:
        return DaskProblem(X, gamma, kernel, n_threads)


# ---------------------------------------------------------------- out-of-sample maps
def _project_task(X_I, W):
    return X_I @ W


def project(X, W, name="X"):
    """``X @ W`` for a dask X as a lazy dask array with X's row chunks (transform)."""
    check_row_chunked(X, name)
    if X.shape[1] != W.shape[0]:
        raise ValueError(f"{name} has {X.shape[1]} features, but the estimator is expecting "
                         f"{W.shape[0]} features as input")
    W = np.asarray(W)
    return X.map_blocks(_project_task, W, chunks=(X.chunks[0], (W.shape[1],)),
                        dtype=np.result_type(X.dtype, W.dtype))


# ---------------------------------------------------------------- clustering: the U-step's points
class Projected(MatrixFreePoints):
    """The points XW of a distributed X, never gathered: the U-step's kernel
    products map over block pairs with W applied inside each task."""

    def __init__(self, data, W):
        self.data = data
        self.W = None if W is None else np.ascontiguousarray(W, dtype=data.dtype)
        self.shape = (data.shape[0], data.shape[1] if W is None else self.W.shape[1])
        self.dtype = data.dtype

    def product(self, kernel, R, gamma=None):
        r""":math:`(\Gamma \circ K) R` (n x k) on the client, by value-mode pair tasks."""
        return self.data.product(kernel, self.W, R, gamma)[0]

    def degrees(self, kernel):
        """Degrees :math:`K 1` (n,)."""
        return self.data.product(kernel, self.W, None)[1]

    def objective(self, kernel, gamma):
        r""":math:`\mathrm{Tr}(\Gamma K)` by value-mode pair tasks."""
        return float(self.data.reduce_pairs(kernel, self.W, None, "objective", gamma)[1])


class ClusteringPasses:
    """The distributed provider of the clustering alternation (ISMClustering,
    SemiSupervisedISM, KDAC, :func:`ikdr.alternate`): the shape of
    :class:`ikdr.passes.landmark_clustering.ClusteringLandmarks` (``embed``, ``w_step_provider``,
    ``phi0``, ``quadratic_trace``, ``n_landmarks``) plus ``points``. The
    U-step's Lanczos / LOBPCG products and degrees and the W-step's passes run
    as block-pair tasks; the n x k embedding U, the k x k eigenproblems and W
    stay on the client. Exact: the same answer as in memory."""

    n_landmarks = None
    #: the bandwidths are fitted on a sample of rows gathered to the client
    rows_in_memory = False
    phi_solver = "auto"

    @staticmethod
    def prepare(X):
        """X on the cluster (:class:`DaskData`), checked and persisted once."""
        return as_data(X)

    @staticmethod
    def working_data(X, dtype):
        """X in the working precision, cast on the workers."""
        return X.astype(dtype)

    @staticmethod
    def points(X, W):
        """The U-step's points XW, kept on the cluster (:class:`Projected`; W None: X)."""
        return Projected(X, W)

    def embed(self, Z, affinity, n_clusters, **options):
        """:func:`ikdr.spectral.spectral_embedding` of the points on the cluster
        (X itself at the first U-step)."""
        _refuse_local_bandwidths(affinity)
        if isinstance(Z, DaskData):
            Z = Projected(Z, None)
        return spectral_embedding(Z, affinity, n_clusters, **options)

    def w_step_provider(self, n):
        """The W-step's provider: the Dask passes."""
        return DaskPasses()

    def phi0(self, X, gamma, kernel):
        return phi0(kernel, X.astype(np.float64), gamma)

    def quadratic_trace(self, Z, kernel, factor):
        r""":math:`\mathrm{Tr}(F^T K_Z F)` by value-mode pair tasks (F is n x r)."""
        return Z.objective(kernel, Gamma(factor))
