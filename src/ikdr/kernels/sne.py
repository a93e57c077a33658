r"""The SNE kernel's blocks for the asymmetric kernel SVD, and a low-rank plus sparse kernel.

Row-normalised Gaussian blocks (KSVD paper, Section 2 and 4.1) computed by
the compiled core in tiles; no n x m matrix is stored by the normalisers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _native
from .._config import require_memory
from .._utils.validation import check_bandwidth, check_finite_result, check_matrix
from .base import FLOATS, Kernel
from .family import MedianBandwidth

__all__ = ["SNE", "sne_row_normalisers", "sne_matrix", "lowrank_plus_sparse"]


def sne_row_normalisers(A: np.ndarray, B: np.ndarray, sigma: float, *,
                        n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Row normalisers of the SNE kernel between the rows of A and B.

    The SNE kernel (KSVD paper, Section 2) is the row-normalised Gaussian
    :math:`\kappa(a_i, b_j) = e^{-d^2_{ij}/2\sigma^2} / \sum_{j'} e^{-d^2_{ij'}/2\sigma^2}`.
    Returns ``(shift, sums)`` with :math:`\mathrm{shift}_i = \min_j d^2_{ij}` and
    :math:`\mathrm{sums}_i = \sum_j e^{-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2} \ge 1`
    (log-sum-exp form: no underflow however far the rows are), in one tiled
    pass that never stores the n x m matrix.
    """
    check_bandwidth(sigma, "sigma")
    return _native.sne_row_normalisers(np.ascontiguousarray(A), np.ascontiguousarray(B), sigma,
                                       n_threads=n_threads)


def sne_matrix(A: np.ndarray, B: np.ndarray, sigma: float, shift: np.ndarray | None = None,
               sums: np.ndarray | None = None, *, n_threads: int | None = None) -> np.ndarray:
    r"""SNE kernel block :math:`e^{-(d^2_{ij} - \mathrm{shift}_i)/2\sigma^2} / \mathrm{sums}_i`.

    ``shift`` and ``sums`` come from :func:`sne_row_normalisers` over the full
    column set, so a block of columns keeps the normalisation of all of them.
    Without them, the rows are normalised over B's rows in the same pass (one
    pass instead of two when B is the whole column set).
    """
    check_bandwidth(sigma, "sigma")
    return _native.sne_matrix(np.ascontiguousarray(A), np.ascontiguousarray(B), sigma, shift,
                              sums, n_threads=n_threads)


def lowrank_plus_sparse(dl: np.ndarray, u: np.ndarray, v: np.ndarray, S: Any, *,
                        n_threads: int | None = None) -> np.ndarray:
    r"""Dense :math:`\mathrm{diag}(d_l)(u v^T + S)` for a sparse S (any scipy format).

    The kernel matrix of sparse points whose kernel is a rank-one term plus a
    sparse correction (KSVD on a graph's adjacency), written in one parallel
    pass instead of three numpy passes.
    """
    S = S.tocsr()
    return _native.lowrank_plus_sparse(dl, u, v, S.indptr, S.indices, S.data,
                                       n_threads=n_threads)


class SNE(MedianBandwidth, Kernel):
    r"""SNE kernel of the asymmetric kernel SVD: a Gaussian normalised over the columns.

    :math:`k(a_i, b_j) = e^{-\|a_i - b_j\|^2 / 2\sigma^2} / \sum_{j'} e^{-\|a_i - b_{j'}\|^2 / 2\sigma^2}`,
    so every row of ``matrix(A, B)`` sums to 1 (KSVD paper, Section 4.1).
    The paper writes :math:`e^{-\|x - z\|^2/\gamma^2}`: :math:`\gamma = \sqrt{2}\,\sigma`,
    i.e. ``SNE(sigma=gamma / sqrt(2))``, as for :class:`Gaussian`. It is
    asymmetric and not of the ISM family (no surrogate Phi): use it with
    :class:`ikdr.KernelSVD` (``KernelSVD(kernel=SNE(sigma))``).

    Parameters
    ----------
    sigma : float or "median", default="median"
    """

    def block_spec(self):
        return "sne", None if isinstance(self.sigma, str) else float(self.sigma), None

    def _check_fitted(self):
        raise TypeError("the SNE kernel is row-normalised and has no ISM surrogate; it gives "
                        "kernel matrices (matrix) for ikdr.KernelSVD only")

    def matrix(self, A, B=None, *, n_threads=None):
        """Row-normalised kernel matrix between the rows of A and of B (rows sum to 1)."""
        A = check_matrix(A, "A", min_samples=1, dtype=FLOATS)
        kernel = self if self.is_resolved else self.fit(A)
        B = A if B is None else check_matrix(B, "B", min_samples=1, dtype=A.dtype)
        if B.shape[1] != A.shape[1]:
            raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}")
        require_memory(A.shape[0] * B.shape[0] * A.dtype.itemsize,
                       f"a {A.shape[0]} x {B.shape[0]} kernel matrix")
        sigma = float(kernel.sigma)
        shift, sums = sne_row_normalisers(A, B, sigma, n_threads=n_threads)
        return check_finite_result(sne_matrix(A, B, sigma, shift, sums, n_threads=n_threads),
                                   "the SNE kernel matrix")

    def _term(self, weight, rows, cols):
        self._check_fitted()

    def _phi0_parts(self, weight, X):
        self._check_fitted()
