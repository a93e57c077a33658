r"""Distances between subspaces, from their orthonormal bases (never n x n).

Two views of one quantity, the principal angles :math:`\theta_i` between the
column spaces of A and B (:math:`\cos\theta_i` are the singular values of
:math:`A^TB`):

* :func:`principal_angle`: the largest, :math:`\theta_{\max}` (the ISM
  driver's ``criterion="angle"`` and the landmark "auto" rule, by its sine);
* :func:`subspace_change`: the root mean square of :math:`\sin\theta_i` times
  :math:`\sqrt 2`, i.e. :math:`\|AA^T - BB^T\|_F / \|AA^T\|_F` (the clustering
  alternation's U and W changes, which weigh every direction).
"""
from __future__ import annotations

import numpy as np

from .typing import ArrayLike

__all__ = ["principal_angle", "subspace_change"]


def principal_angle(U: ArrayLike, V: ArrayLike) -> float:
    r"""Largest principal angle between the column spaces of U and V (radians),
    :math:`\arccos \sigma_{\min}(U^T V)` for orthonormal U, V."""
    U, V = np.asarray(U, dtype=np.float64), np.asarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[0] != V.shape[0]:
        raise ValueError(f"U and V must be 2-D with the same number of rows, got shapes "
                         f"{U.shape} and {V.shape}")
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):
        raise ValueError("U or V contains NaN or infinite values")
    if not (U.shape[1] and V.shape[1]):
        return 0.0
    overlap = U.T @ V
    # sin(theta_max) = ||(I - UU^T) V||_2, the root of the largest eigenvalue of
    # M^T M (q x q): exact for small angles, where arccos of the cosines
    # resolves them only down to ~1e-8
    M = V - U @ overlap
    sine = float(np.sqrt(max(float(np.linalg.eigvalsh(M.T @ M)[-1]), 0.0)))
    if sine < np.sin(0.5):
        return float(np.arcsin(sine))
    # near a right angle the sine is flat: the smallest cosine instead
    s = np.linalg.svd(overlap, compute_uv=False)
    return float(np.arccos(np.clip(s.min(), -1.0, 1.0)))


def subspace_change(A: np.ndarray, B: np.ndarray) -> float:
    r"""Relative change :math:`\|AA^T - BB^T\|_F / \|AA^T\|_F` of two orthonormal bases.

    Invariant to signs and rotations of the columns; computed from the k x k
    product (:math:`\|AA^T - BB^T\|_F^2 = 2k - 2\|A^TB\|_F^2`), never n x n.
    """
    k = A.shape[1]
    overlap = float(np.linalg.norm(A.T @ B)) ** 2
    return float(np.sqrt(max(0.0, 2.0 * k - 2.0 * overlap) / k))
