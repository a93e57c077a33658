"""The one ISM solver shared by every paradigm."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._eig import top_eigenvectors
from .gamma import Gamma
from .kernels import Kernel, make_kernel

__all__ = ["ism", "ISMResult", "principal_angle", "choose_n_components"]


@dataclass
class ISMResult:
    """Outcome of :func:`ism`.

    Attributes
    ----------
    components : ndarray (d, q)
        W, orthonormal columns.
    eigenvalues : ndarray (q,)
        Eigenvalues of Phi(W) belonging to W (descending).
    n_iter : int
        Fixed-point iterations after the Phi_0 start.
    converged : bool
    objective : float
        ``Tr(Gamma K_XW)`` at the returned W.
    history : list of dict
        One entry per iterate (iteration 0 is the Phi_0 start): ``objective``,
        ``eigenvalues``, ``eigenvalue_change``, ``angle`` (largest principal
        angle to the previous W, radians), ``eigen_solver``, ``time``.
    kernel : Kernel
        The kernel with its data-dependent parameters fixed.
    """

    components: np.ndarray
    eigenvalues: np.ndarray
    n_iter: int
    converged: bool
    objective: float
    history: list = field(default_factory=list)
    kernel: Kernel | None = None


def principal_angle(U, V):
    r"""Largest principal angle between the column spaces of U and V (radians),
    :math:`\arccos \sigma_{\min}(U^T V)` for orthonormal U, V."""
    s = np.linalg.svd(U.T @ V, compute_uv=False)
    return float(np.arccos(np.clip(s.min(), -1.0, 1.0))) if s.size else 0.0


def choose_n_components(eigenvalues, *, minimum=1):
    """q by the largest eigengap ``lambda_q - lambda_{q+1}`` of a descending
    spectrum, with q >= ``minimum`` (dissertation Eq. 3.11)."""
    vals = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    d = vals.shape[0]
    minimum = max(1, min(int(minimum), d))
    if minimum >= d:
        return d
    gaps = vals[minimum - 1:d - 1] - vals[minimum:d]
    return int(minimum + np.argmax(gaps))


def _check_orthonormal_start(W0, d, q):
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.shape != (d, q):
        raise ValueError(f"W0 must have shape ({d}, {q}), got {W0.shape}")
    if not np.all(np.isfinite(W0)):
        raise ValueError("W0 contains NaN or infinite values")
    Q, _ = np.linalg.qr(W0)
    return Q


def ism(X, gamma, kernel="gaussian", n_components=2, *, W0=None, tol=0.01,
        criterion="eigenvalues", max_iter=100, eigen_solver="auto", n_threads=None,
        random_state=None, warn=True):
    r"""Iterative Spectral Method: maximise :math:`\mathrm{Tr}(\Gamma K_{XW})` s.t. :math:`W^TW = I`.

    Fixed point :math:`W \leftarrow V_{\max}(\Phi(W))` (ISM paper, Algorithm 1),
    started from the W-free :math:`\Phi_0` (Theorem 3) unless ``W0`` is given.
    :math:`V_{\max}` are the eigenvectors of the q largest *algebraic*
    eigenvalues (Phi is indefinite). A kernel whose Phi does not depend on W
    (linear, squared) is solved by the first eigendecomposition.

    Parameters
    ----------
    X : ndarray (n, d), float64 or float32
        Data, usually standardised. Its dtype selects the precision of the
        C++ products.
    gamma : Gamma
        Paradigm matrix (see :mod:`ikdr.gamma`).
    kernel : str or Kernel
        Any ISM kernel or conic combination; data-dependent parameters
        (``sigma="median"``) are fitted on X.
    n_components : int
        q, 1 <= q <= d.
    W0 : ndarray (d, q), optional
        Warm start (orthonormalised); skips Phi_0.
    tol : float, default=0.01
        Stop when :math:`\|\Lambda_k - \Lambda_{k-1}\| / \|\Lambda_k\| < tol`
        (``criterion="eigenvalues"``, the papers' rule with delta = 0.01) or when
        the largest principal angle between successive W is below ``tol``
        radians (``criterion="angle"``, the definitive check).
    criterion : {"eigenvalues", "angle"}
    max_iter : int, default=100
    eigen_solver : {"auto", "lapack", "power"}
        See :func:`ikdr._eig.top_eigenvectors`.
    n_threads : int, optional
        Threads of the C++ core (default :func:`ikdr.get_num_threads`).
    warn : bool, default=True
        Emit a ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns
    -------
    ISMResult

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Algorithm 1 and Eq. (1).
    """
    if not isinstance(gamma, Gamma):
        raise TypeError(f"gamma must be an ikdr.gamma.Gamma, got {type(gamma).__name__}")
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float64, np.float32):
        X = X.astype(np.float64)
    n, d = X.shape
    if gamma.n != n:
        raise ValueError(f"Gamma is {gamma.n} x {gamma.n} but X has {n} rows")
    if criterion not in ("eigenvalues", "angle"):
        raise ValueError(f"criterion must be 'eigenvalues' or 'angle', got {criterion!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    q = int(n_components)
    if not 1 <= q <= d:
        raise ValueError(f"n_components={q} must be between 1 and d={d}")
    kernel = make_kernel(kernel)
    if not kernel._is_resolved():
        kernel = kernel.fit(X, random_state=random_state)
    X64 = X if X.dtype == np.float64 else X.astype(np.float64)

    history = []
    t0 = time.perf_counter()

    def record(W, vals, change, angle, info):
        obj = kernel.objective(X, W.astype(X.dtype, copy=False), gamma, n_threads=n_threads)
        history.append({"iteration": len(history), "objective": obj, "eigenvalues": vals.copy(),
                        "eigenvalue_change": change, "angle": angle,
                        "eigen_solver": info["method"], "time": time.perf_counter() - t0})
        return obj

    if W0 is None:
        phi = kernel.phi0(X64, gamma)
        lam, W, info = top_eigenvectors(phi, q, method="lapack" if eigen_solver == "auto" else eigen_solver)
    else:
        W = _check_orthonormal_start(W0, d, q)
        phi = kernel.phi(X, W.astype(X.dtype), gamma, n_threads=n_threads)
        lam, W, info = top_eigenvectors(phi, q, W, method=eigen_solver)
    objective = record(W, lam, np.nan, np.nan, info)

    converged = not kernel.depends_on_w
    n_iter = 0
    while not converged and n_iter < max_iter:
        n_iter += 1
        phi = kernel.phi(X, W.astype(X.dtype), gamma, n_threads=n_threads)
        lam_new, W_new, info = top_eigenvectors(phi, q, W, method=eigen_solver)
        norm = np.linalg.norm(lam_new)
        change = float(np.linalg.norm(lam_new - lam) / norm) if norm > 0 else 0.0
        angle = principal_angle(W, W_new)
        W, lam = W_new, lam_new
        objective = record(W, lam, change, angle, info)
        converged = (change < tol) if criterion == "eigenvalues" else (angle < tol)
    if not converged and warn:
        warnings.warn(f"ISM did not converge in max_iter={max_iter} iterations "
                      f"(last {criterion} change {history[-1]['eigenvalue_change' if criterion == 'eigenvalues' else 'angle']:.3g} "
                      f">= tol={tol})", ConvergenceWarning, stacklevel=2)
    return ISMResult(components=W, eigenvalues=lam, n_iter=n_iter, converged=converged,
                     objective=objective, history=history, kernel=kernel)
