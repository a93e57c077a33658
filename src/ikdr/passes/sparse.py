r"""Exact passes over sparse rows in memory (``scipy.sparse``), never densifying X.

One pass of :class:`SparseProblem` (docs/maths.md, section 2):
:math:`Z = XW` and :math:`R = XV` (O(nnz (q + k))), the fused gradient pass
of the kernel layer on the dense n x q points with the right-hand side R
(:meth:`ikdr.kernels.Kernel.gradient_product`: :math:`GR`, O(n^2 (q + k)),
nothing n x n stored), then :math:`\Phi(W)V = X^T(GR)` (O(nnz k)). Memory
beyond X: O(n (q + k)). The dense d x d Phi is formed only up to
:data:`~ikdr.passes.sparse_rows.DENSE_PHI_MAX_FEATURES` features, from
column blocks of X of at most :data:`PHI_BLOCK_BYTES`; above, the problem
sets ``supports_dense_phi = False`` and the driver's steps, trust region and
certificate work from products :math:`\Phi V`, with :math:`\Phi_0` an
operator (:mod:`ikdr.passes.sparse_rows`).

:class:`SparsePasses` is the W-step's provider, :class:`SparseClustering`
and :class:`SparseClusteringLandmarks` the clustering alternation's sides;
:func:`sparse_data` is the estimators' entry check for sparse X. All are
picked by :mod:`ikdr.passes.choice`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from .._utils.sparse import START_COMPONENTS, check_sparse, start_basis
from .._utils.validation import FLOAT_DTYPES, check_dtype, check_finite_result
from ..gamma import Gamma
from ..kernels import PANEL_FLOPS, Kernel
from .exact import ExactClustering
from .landmark_clustering import ClusteringLandmarks
from .landmarks import check_landmark_options
from .problem import BaseProblem
from .sparse_rows import DENSE_PHI_MAX_FEATURES, forms_dense_phi, sparse_phi0

__all__ = ["SparsePasses", "SparseProblem", "SparseClustering", "SparseClusteringLandmarks",
           "sparse_data", "sparse_project", "PHI_BLOCK_BYTES", "SPARSE_PRODUCT_COST"]

#: a dense Phi pass multiplies the kernel weights by column blocks of X made dense,
#: n x b with at most this many bytes (a few hundred columns at n = 20,000)
PHI_BLOCK_BYTES = 1 << 25
#: flops charged per stored value and dense column of a sparse product (XW, X^T R):
#: SciPy's products run on one thread, with an index read per multiply-add, well
#: below the rate of the core's GEMM-backed passes (``benchmarks/bench_sparse.py``)
SPARSE_PRODUCT_COST = 16


def sparse_data(estimator, X, y=None, *, y_required=True, multi_output=True,
                approximation=None, kernel=None, **check_options):
    """The estimators' entry check for sparse X (:func:`ikdr.passes.fit_data`).

    scikit-learn's ``validate_data`` with ``accept_sparse="csr"`` (CSC, COO and
    other formats converted to CSR once; NaN or infinity among the stored
    values: its ValueError naming X), then :func:`ikdr._utils.sparse.check_sparse`
    (sorted indices, no duplicates, squares that do not overflow). The
    approximation's options are checked first, as for dense rows."""
    if approximation is not None:
        check_landmark_options(estimator, X.shape[0], kernel)
    options = {"dtype": FLOAT_DTYPES, "ensure_min_samples": 2, **check_options,
               "accept_sparse": "csr"}
    options.pop("order", None)
    y_numeric = options.pop("y_numeric", False)
    if y is None and not y_required:
        X = validate_data(estimator, X, **options)
    else:
        X, y = validate_data(estimator, X, y, multi_output=multi_output, y_numeric=y_numeric,
                             **options)
    return check_sparse(X), y


def sparse_project(estimator, X, W):
    """``X @ W`` for a fitted estimator's ``transform`` of sparse X (checked against
    the fit: features, finite values), as a dense n x q array."""
    X = check_sparse(validate_data(estimator, X, reset=False, accept_sparse="csr",
                                   dtype=FLOAT_DTYPES), min_samples=1)
    return np.asarray(X @ np.asarray(W, dtype=np.float64))


class SparseProblem(BaseProblem):
    """f(W) = Tr(Gamma K_XW) for sparse rows X (module docstring): the passes of the
    solver's problem (:class:`ikdr.solver.problem.KernelProblem`) with X read
    through products."""

    supports_coarse = False         # no float32 dense pass: its cost is the panel's

    def __init__(self, X: Any, gamma: Gamma, kernel: Kernel, n_threads: int | None = None):
        super().__init__(X, gamma, kernel, n_threads)
        self.supports_dense_phi = forms_dense_phi(self.d)
        self._columns: Any = None   # CSC copy for the dense Phi's column blocks

    def _points(self, W: np.ndarray, own_dtype: bool) -> np.ndarray:
        """Z = XW, dense, in the problem's own dtype or in float64."""
        if own_dtype:
            self.check_own_precision(W)
        dtype = self.dtype if own_dtype else np.dtype(np.float64)
        return np.ascontiguousarray(self.X @ np.asarray(W, dtype=np.float64), dtype=dtype)

    def phi0(self) -> Any:
        r""":math:`\Phi_0`: d x d up to ``DENSE_PHI_MAX_FEATURES`` features, else an operator."""
        return sparse_phi0(self.kernel, self.X64, self.gamma, dense=self.supports_dense_phi)

    def phi(self, W: np.ndarray, own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(dense Phi(W), f(W)): one fused pass per column block of X (dense, n x b)."""
        if not self.supports_dense_phi:
            raise ValueError(f"the dense {self.d} x {self.d} Phi of sparse X is not formed "
                             f"(more than {DENSE_PHI_MAX_FEATURES} features); use "
                             "phi_solver='matrix_free'")
        Z = self._points(W, own_dtype)
        if self._columns is None:
            self._columns = self.X.tocsc()
        columns = self._columns
        n, d = self.X.shape
        width = int(max(1, min(d, PHI_BLOCK_BYTES // (8 * n))))
        out = np.empty((d, d))
        objective = 0.0
        for start in range(0, d, width):
            block = columns[:, start:start + width].toarray().astype(Z.dtype, copy=False)
            GR, objective = self.kernel.gradient_product(Z, block, self.gamma,
                                                         n_threads=self.n_threads)
            out[:, start:start + width] = np.asarray(self.X.T @ np.asarray(GR, np.float64))
        out = 0.5 * (out + out.T)
        check_finite_result(out, lambda: f"Phi(W) of the kernel {self.kernel!r}")
        return out, objective

    def phi_product(self, W: np.ndarray, V: np.ndarray,
                    own_dtype: bool = False) -> tuple[np.ndarray, float]:
        """(Phi(W) V, f(W)): XW and XV, one fused gradient pass, then X^T."""
        Z = self._points(W, own_dtype)
        R = np.ascontiguousarray(self.X @ np.asarray(V, dtype=np.float64), dtype=Z.dtype)
        GR, objective = self.kernel.gradient_product(Z, R, self.gamma, n_threads=self.n_threads)
        out = np.asarray(self.X.T @ np.asarray(GR, dtype=np.float64))
        check_finite_result(out, lambda: f"Phi(W) V of the kernel {self.kernel!r}")
        return out, objective

    def objective(self, W: np.ndarray, own_dtype: bool = False) -> float:
        _, row_sums = self.kernel.product(self._points(W, own_dtype), None, self.gamma,
                                          n_threads=self.n_threads)
        return float(check_finite_result(np.sum(row_sums, dtype=np.float64),
                                         lambda: f"Tr(Gamma K) of the kernel {self.kernel!r}"))

    def step_costs(self, q: int, k: int) -> tuple[float, float]:
        """(flops of a dense Phi pass, of a pass with k columns) for the solver's choice
        of steps (:func:`ikdr.solver.steps.phi_mode`): the n x n panel once per column
        block of X (about :data:`ikdr.kernels.base.PANEL_FLOPS` per entry) times its columns, the
        sparse products at :data:`SPARSE_PRODUCT_COST` flops per stored value and
        column, and the dense Phi's eigendecomposition (about 4 d^3)."""
        n, d = self.n, self.d
        blocks = -(-d // max(1, PHI_BLOCK_BYTES // (8 * n)))
        sparse = SPARSE_PRODUCT_COST * self.X.nnz
        dense = n * n * (PANEL_FLOPS * blocks + 2.0 * d) + sparse * (q + d) + 4.0 * d ** 3
        return dense, n * n * (PANEL_FLOPS + 2.0 * k) + sparse * (q + 2 * k)


class SparsePasses:
    """The W-step's provider for sparse rows in memory: :class:`SparseProblem`.
    ``dtype`` is the precision of the plain steps' kernel passes (None: X's)."""

    name = "sparse"

    def __init__(self, dtype=None):
        self.dtype = check_dtype(dtype, allow_none=True)

    def check_data(self, X):
        """X as canonical CSR (:func:`ikdr._utils.sparse.check_sparse`), in ``dtype``."""
        X = check_sparse(X)
        if self.dtype is not None and X.dtype != self.dtype:
            X = X.astype(self.dtype)
        return X

    def fit_kernel(self, kernel, X, random_state=None):
        """The kernel's data-dependent parameters from the sparse rows (the median
        rule on at most 3,000 of them, :func:`ikdr.median_sigma`)."""
        return kernel.fit(X, random_state=random_state)

    def problem(self, X, gamma, kernel, n_threads):
        return SparseProblem(X, gamma, kernel, n_threads)


class _StartPoints:
    """The clustering sides' points for sparse rows: XW, and at W = I (the first
    U-step, the kernels' bandwidths) X's projection on its leading
    :data:`~ikdr._utils.sparse.START_COMPONENTS` right singular vectors, which
    is X itself (every distance kept) when d is at most that many."""

    basis = None

    def basis_for(self, X):
        """The start basis of X (d x r, :func:`ikdr._utils.sparse.start_basis`), made once."""
        if self.basis is None or self.basis.shape[0] != X.shape[1]:
            self.basis = start_basis(X, START_COMPONENTS, self.random_state)
        return self.basis

    def points(self, X, W):
        W = self.basis_for(X) if W is None else W
        return np.ascontiguousarray(X @ np.asarray(W, dtype=np.float64), dtype=X.dtype)

    @staticmethod
    def prepare(X):
        return X

    @staticmethod
    def working_data(X, dtype):
        """X (CSR) in the working precision of the passes (its values copied only
        when the precision changes)."""
        return X.astype(dtype, copy=False)


class SparseClustering(_StartPoints, ExactClustering):
    r"""The exact clustering provider for sparse rows: the U-steps and the
    quadratic trace of :class:`ikdr.passes.exact.ExactClustering` on the dense
    points, W-steps by :class:`SparsePasses`, :math:`\Phi_0` an operator for
    many features."""

    def __init__(self, dtype=None, random_state=None):
        self.provider = SparsePasses(dtype)
        self.random_state = random_state

    @staticmethod
    def phi0(X, gamma, kernel):
        return sparse_phi0(kernel, X, gamma)


class SparseClusteringLandmarks(_StartPoints, ClusteringLandmarks):
    """The landmark clustering side for sparse rows: Nystrom U-steps on the dense
    points, landmark W-steps over the sparse rows (the NumPy sweeps: every
    product O(nnz) times its dense factor's columns), matrix-free where d is
    large."""

    #: the solver weighs dense and matrix-free steps by the passes' costs
    phi_solver = "auto"

    @classmethod
    def like(cls, landmarks):
        """The sparse side with the settings of ``landmarks`` (a ClusteringLandmarks)."""
        out = cls(landmarks.n_landmarks, dtype=landmarks.dtype,
                  random_state=landmarks.random_state, method=landmarks.method)
        return out
