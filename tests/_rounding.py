"""Tolerances for comparing floating-point results that different machines compute.

The same code gives results that differ in their last bits when the order of a
sum changes: another BLAS kernel (``OPENBLAS_CORETYPE``), another SIMD level of
ikdr's core (``IKDR_SIMD``), another split over threads. A test comparing such
runs (a stored result, a subprocess, another thread count of the BLAS) allows
the rounding bound below, derived from the problem's sizes and magnitudes and
the unit roundoff, and says which. Bitwise comparisons stay for the same path
run twice in one process on the same threads (determinism tests).

The bounds are Higham's (*Accuracy and Stability of Numerical Algorithms*, 2nd
ed., 2002, section 3.1 and 3.5): a sum or inner product of n terms computed in
any order is within :func:`gamma` (n) times the sum of the terms' absolute values
of the exact one; a matrix product within ``gamma(k) |A| |B|`` entry by entry.
Two runs each within a bound b of the exact result differ by at most 2 b
(:func:`assert_within`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["unit_roundoff", "gamma", "product_bound", "mlp_bound", "assert_within"]


def unit_roundoff(dtype=np.float64) -> float:
    """u: half the machine epsilon of ``dtype`` (1.1e-16 for float64, 6.0e-8 for float32)."""
    return float(np.finfo(dtype).eps) / 2


def gamma(n: int, dtype=np.float64) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative bound of a sum of n terms in any order."""
    nu = n * unit_roundoff(dtype)
    if nu >= 1:
        raise ValueError(f"n = {n} terms exceed what {np.dtype(dtype)} can bound (n u >= 1)")
    return nu / (1 - nu)


def product_bound(A, B, A_error=None, dtype=np.float64):
    """Entry-wise bound on the error of ``A @ B`` computed in any order:
    ``gamma(k) |A| |B|`` (k inner terms), plus ``A_error |B|`` when A itself carries
    an entry-wise error bound (a previous product's)."""
    A, B = np.abs(np.asarray(A, dtype=np.float64)), np.abs(np.asarray(B, dtype=np.float64))
    bound = gamma(A.shape[-1], dtype) * (A @ B)
    return bound if A_error is None else bound + np.asarray(A_error) @ B


def mlp_bound(mlp, X):
    """Entry-wise bound on the error of ``mlp.forward(X)`` (:class:`ikdr._utils.mlp.MLP`:
    affine layers with ReLU between them), in any summation order.

    Each layer ``A W + b`` is an inner product of k + 1 terms (the bias the last),
    within ``gamma(k + 1) (|A| |W| + |b|)``; an error already in A passes through
    ``|W|``; ReLU moves no value further apart (it is 1-Lipschitz)."""
    A = np.asarray(X, dtype=np.float64)
    error = np.zeros_like(A)
    last = len(mlp.weights) - 1
    for i, (W, b) in enumerate(zip(mlp.weights, mlp.biases)):
        absW = np.abs(W)
        error = error @ absW + gamma(W.shape[0] + 1) * (np.abs(A) @ absW + np.abs(b))
        A = A @ W + b
        if i < last:
            A = np.maximum(A, 0.0)
    return error


def assert_within(actual, expected, bound, err_msg=""):
    """Every entry of ``actual`` within ``2 * bound`` of ``expected``: two runs, each
    within ``bound`` of the exact result (``bound`` a scalar or entry-wise)."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{err_msg}: shapes {actual.shape} and {expected.shape}"
    excess = np.abs(actual - expected) - 2 * np.broadcast_to(bound, expected.shape)
    if np.any(excess > 0):
        worst = np.unravel_index(np.argmax(excess), excess.shape)
        raise AssertionError(
            f"{err_msg}: {int(np.sum(excess > 0))} of {excess.size} entries differ by more than "
            f"their rounding bound (at {tuple(int(i) for i in worst)}: {actual[worst]!r} against "
            f"{expected[worst]!r}, allowed {2 * np.broadcast_to(bound, expected.shape)[worst]:.3g})")
