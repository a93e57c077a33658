"""Top eigenvectors of the symmetric d x d Phi."""
from __future__ import annotations

import numpy as np
import scipy.linalg

from . import _core

#: up to this dimension LAPACK is used directly: dsyevr costs about (4/3) d^3
#: flops, less than a handful of Chebyshev-filtered block steps (each about
#: 16 d^2 (q + 8) flops) until d is in the thousands
LAPACK_MAX_DIM = 2048


def _fix_signs(vecs):
    # Deterministic orientation: the largest-magnitude entry of each column is positive.
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    return vecs * signs


def lapack_top(A, q):
    """The q largest eigenpairs of symmetric A by LAPACK, eigenvalues descending."""
    d = A.shape[0]
    if not np.all(np.isfinite(A)):
        raise ValueError("the matrix to diagonalise contains NaN or infinite values "
                         "(float64 overflow in the kernel or its derivative)")
    vals, vecs = scipy.linalg.eigh(A, subset_by_index=[d - q, d - 1], driver="evr")
    if vecs.shape[1] != q:
        # dsyevr's index range can return no pairs at all on a cluster of
        # (nearly) equal eigenvalues, e.g. H = I - 11^T/n (measured: 0 of 2);
        # the divide-and-conquer driver computes them all.
        vals, vecs = scipy.linalg.eigh(A, driver="evd")
        vals, vecs = vals[d - q:], vecs[:, d - q:]
    return vals[::-1].copy(), np.ascontiguousarray(vecs[:, ::-1])


def top_eigenvectors(A, q, V0=None, *, method="auto", tol=1e-12, max_iter=12):
    """The q largest *algebraic* eigenpairs of symmetric A, eigenvalues descending.

    ``method="auto"`` uses LAPACK (``dsyevr``) for d <= ``LAPACK_MAX_DIM`` or
    without a warm start, and otherwise the C++ Chebyshev-filtered block power
    iteration warm-started from V0, falling back to LAPACK when it does not
    reach a relative residual ``tol`` within ``max_iter`` steps (tied
    eigenvalues, tiny eigengap).

    Returns
    -------
    values : ndarray (q,)
    vectors : ndarray (d, q)
    info : dict with ``method`` ("lapack", "power" or "power->lapack") and ``iterations``
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    d = A.shape[0]
    info = {"method": "lapack", "iterations": 0}
    if method == "lapack" or (method == "auto" and (V0 is None or d <= LAPACK_MAX_DIM)) or q == d:
        vals, vecs = lapack_top(A, q)
    else:
        v0 = None if V0 is None else np.ascontiguousarray(V0, dtype=np.float64)
        vals, vecs, iters, converged, _ = _core.top_eigenpairs_f64(A, q, v0, max_iter=max_iter,
                                                                   tol=tol)
        info = {"method": "power", "iterations": int(iters)}
        if not converged:
            vals, vecs = lapack_top(A, q)
            info["method"] = "power->lapack"
    return vals, _fix_signs(vecs), info
