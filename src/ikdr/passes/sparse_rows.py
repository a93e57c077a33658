r"""Sparse rows in memory: the row source of the landmark passes and :math:`\Phi_0`.

A sparse X (CSR, :func:`ikdr._utils.sparse.canonical_csr`) is read through
products only: :math:`XW`, :math:`XV` and :math:`X^T R` cost O(nnz) times
the columns of the dense factor, and nothing d x d is formed when d exceeds
:data:`DENSE_PHI_MAX_FEATURES`. :math:`\Phi_0` (docs/maths.md, section 2) is
then a :class:`ikdr._utils.eig.SymmetricOperator`: for a factored
:math:`\Gamma = G\,\mathrm{diag}(s)\,G^T` and a member with coefficients
(a, b) and row weights w (``Kernel.phi0_terms``),

.. math:: a X^T\Gamma X + b X^T L(\Gamma_w) X = A S A^T + b X^T\mathrm{diag}(\Gamma_w 1)X,
    \qquad \Gamma_w = D_w\Gamma D_w,

with :math:`A = X^T[G, D_wG]` (d x 2r, O(nnz r)) and S the matching signed
core; the degree term is a product, :math:`V \mapsto X^T(\delta \circ XV)`.
Every supervised Gamma and every centered one has :math:`\Gamma 1 = 0`, and
their :math:`\Phi_0` is exactly of low rank.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._config import fits_memory
from .._utils.eig import SymmetricOperator
from .._utils.sparse import check_sparse
from .rows import MemoryRows, row_blocks

__all__ = ["DENSE_PHI_MAX_FEATURES", "SparseRows", "forms_dense_phi", "sparse_phi0",
           "check_sparse"]

#: the widest sparse X whose d x d Phi (and Phi_0) a problem forms; above, every
#: pass is a product Phi V and the plain steps are matrix-free
DENSE_PHI_MAX_FEATURES = 2048


def forms_dense_phi(d):
    """Whether a problem on sparse rows with d features may form the d x d Phi:
    d at most :data:`DENSE_PHI_MAX_FEATURES` and a few d x d arrays within the
    memory budget (:func:`ikdr.set_memory_budget`)."""
    return d <= DENSE_PHI_MAX_FEATURES and fits_memory(4 * 8 * d * d)


def _phi0_parts(kernel, X, gamma):
    """(factor A, signed core S, degree weights or None) of Phi_0 (module docstring)."""
    if not gamma.is_factored:
        raise ValueError("sparse X with many features needs a factored Gamma (G diag(s) G^T) "
                         "for its Phi_0; a dense n x n Gamma has no low-rank form")
    G, s, _ = gamma.arrays(np.float64)
    s = np.ones(G.shape[1]) if s is None else s
    columns, cores, degrees = [], [], np.zeros(X.shape[0])
    for inner, lap, row_weights in kernel.phi0_terms(X):
        Gw = G if row_weights is None else G * np.asarray(row_weights)[:, None]
        if inner:
            columns.append(G)
            cores.append(inner * s)
        if lap:
            columns.append(Gw)
            cores.append(-lap * s)
            deg = Gw @ (s * Gw.sum(axis=0))
            # row sums within their rounding are 0 (Gamma.laplacian_quadratic's rule)
            bound = X.shape[0] * np.finfo(np.float64).eps * (
                np.abs(Gw) @ (np.abs(s) * np.abs(Gw).sum(axis=0)))
            deg[np.abs(deg) <= bound] = 0.0
            degrees += lap * deg
    factor = np.asarray(X.T @ np.hstack(columns)) if columns else np.zeros((X.shape[1], 0))
    core = np.diag(np.concatenate(cores)) if cores else np.zeros((0, 0))
    return factor, core, (degrees if degrees.any() else None)


def sparse_phi0(kernel, X, gamma, *, dense=None):
    r""":math:`\Phi_0` of sparse rows X: the d x d array where the problem forms dense
    Phi (``dense``, default :func:`forms_dense_phi`), else a
    :class:`~ikdr._utils.eig.SymmetricOperator` (module docstring)."""
    dense = forms_dense_phi(X.shape[1]) if dense is None else dense
    if dense:
        return kernel.phi0(X, gamma)
    factor, core, degrees = _phi0_parts(kernel, X, gamma)
    extra = None
    if degrees is not None:
        def extra(V):
            return np.asarray(X.T @ (degrees[:, None] * np.asarray(X @ V)))
    return SymmetricOperator(X.shape[1], factor, core, extra)


class SparseRows(MemoryRows):
    """The rows of a sparse X for passes written as sums over row blocks (the
    landmark passes' NumPy sweeps): each block is handed on as CSR rows, never
    densified; blocks are bounded by the dense arrays they make (``width``
    columns: landmarks, right-hand sides), not by d."""

    #: the compiled sweeps read dense rows; sparse blocks go through NumPy's
    native_sweeps = False

    def slices(self, width=0):
        return row_blocks(self.shape[0], 1, self.block_rows, width=max(width, 64))

    def take(self, index):
        """The rows ``index`` as CSR (float64)."""
        return self.X[index].astype(np.float64)

    def project(self, W, dtype):
        """XW (n x q) in ``dtype``: one sparse product."""
        return np.ascontiguousarray(self.X @ np.asarray(W, dtype=np.float64), dtype=dtype)


def is_sparse(X):
    """X is a ``scipy.sparse`` matrix or array."""
    return sp.issparse(X)
