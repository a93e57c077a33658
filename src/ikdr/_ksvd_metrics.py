"""Accuracy of an approximate truncated SVD (the asymmetric Nystrom paper's eta)."""
from __future__ import annotations

import numpy as np

from ._typing import ArrayLike


def singular_alignment(U: ArrayLike, V: ArrayLike, s: ArrayLike, U_approx: ArrayLike,
                       V_approx: ArrayLike, *, normalize: bool = False) -> float:
    r"""Weighted misalignment ``eta`` of approximate singular vectors.

    .. math::
        \eta = \frac1r \sum_{i=1}^r w_i \Big(1 - \frac{|u_i^T \tilde u_i|}{\|\tilde u_i\|}\Big)
             + \frac1r \sum_{i=1}^r w_i \Big(1 - \frac{|v_i^T \tilde v_i|}{\|\tilde v_i\|}\Big)

    with :math:`w_i = \lambda_i` (the paper, Appendix C.2) or, with
    ``normalize=True``, :math:`w_i = \lambda_i / \sum_j \lambda_j`. The paper's
    weights carry the scale of G: for a row-stochastic (SNE) matrix every
    :math:`\lambda_i \le 1`, so a tolerance of 1e-1 is met by almost any
    approximation; the normalised value is scale free. Signs are ignored.

    Parameters
    ----------
    U : ndarray of shape (n, r)
        Exact left singular vectors (orthonormal columns), e.g. from a full SVD.
    V : ndarray of shape (m, r)
        Exact right singular vectors.
    s : ndarray of shape (r,)
        Exact singular values (the weights).
    U_approx, V_approx : ndarray of shape (n, r) and (m, r)
        Approximations; their columns need not be normalised.
    normalize : bool, default=False
        Use the weights :math:`\lambda_i / \sum_j \lambda_j`.

    Returns
    -------
    eta : float
        0 for a perfect approximation; at most ``2 * mean(w)``.

    References
    ----------
    Tao, Tonin, Lambert, Chen, Patrinos and Suykens, "Learning in feature spaces via coupled
    covariances: asymmetric kernel SVD and Nystrom method", ICML 2024, App. C.2.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.metrics import singular_alignment
    >>> U, s, Vt = np.linalg.svd(np.arange(12.0).reshape(4, 3), full_matrices=False)
    >>> round(singular_alignment(U[:, :2], Vt[:2].T, s[:2], -U[:, :2], 3 * Vt[:2].T), 12)
    0.0
    """
    U, V, Ua, Va = (np.asarray(a, dtype=np.float64) for a in (U, V, U_approx, V_approx))
    s = np.asarray(s, dtype=np.float64).ravel()
    r = s.shape[0]
    for name, a, rows in (("U", U, None), ("V", V, None), ("U_approx", Ua, U.shape[0] if U.ndim == 2 else None),
                          ("V_approx", Va, V.shape[0] if V.ndim == 2 else None)):
        if a.ndim != 2 or a.shape[1] != r:
            raise ValueError(f"{name} must be 2-D with {r} columns (one per singular value), got shape {a.shape}")
        if rows is not None and a.shape[0] != rows:
            raise ValueError(f"{name} has {a.shape[0]} rows, expected {rows}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or infinite values")
    if r == 0:
        raise ValueError("s must hold at least one singular value")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("s must hold finite non-negative singular values")
    w = s / s.sum() if normalize else s

    def misalignment(exact, approx):
        norms = np.linalg.norm(approx, axis=0)
        cos = np.abs(np.einsum("ij,ij->j", exact, approx)) / np.where(norms > 0, norms, 1.0)
        return np.where(norms > 0, 1.0 - np.minimum(cos, 1.0), 1.0)

    return float((w * misalignment(U, Ua)).sum() / r + (w * misalignment(V, Va)).sum() / r)
