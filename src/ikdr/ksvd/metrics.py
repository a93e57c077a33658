"""Accuracy of an approximate truncated SVD: per component (values and subspace
angles), and the asymmetric Nystrom paper's eta."""
from __future__ import annotations

import numpy as np

from .._utils.typing import ArrayLike
from .._utils.validation import check_positive


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


#: singular values closer than this (relative to the larger) form one cluster
CLUSTER_RTOL = 1e-2


def singular_value_clusters(s: ArrayLike, rtol: float = CLUSTER_RTOL) -> list[np.ndarray]:
    r"""Index blocks of consecutive (descending) singular values within ``rtol`` of each other.

    :math:`s_i` and :math:`s_{i+1}` share a cluster when
    :math:`s_i - s_{i+1} \le \mathrm{rtol}\, s_i`;
    the vectors inside a cluster are not determined individually (any rotation
    of them is as good), only their span is.
    """
    s = np.asarray(s, dtype=np.float64).ravel()
    if s.size == 0:
        return []
    breaks = np.flatnonzero(s[:-1] - s[1:] > rtol * np.abs(s[:-1])) + 1
    return [np.arange(a, b) for a, b in zip(np.r_[0, breaks], np.r_[breaks, s.size])]


def _orthonormal_span(A):
    """Orthonormal basis of span(A) (numerically zero directions dropped)."""
    if A.shape[1] == 0:
        return A
    Q, sv, _ = np.linalg.svd(A, full_matrices=False)
    keep = sv > 1e-12 * max(float(sv[0]), np.finfo(float).tiny)
    return Q[:, keep]


def _cluster_sines(exact, approx, clusters, r):
    """Per approximate component i < r: sine of the largest principal angle between
    the span of the approximate vectors of i's cluster and the exact cluster span."""
    out = np.ones(r)
    for c in clusters:
        inside = c[c < r]
        if inside.size == 0:
            continue
        E = exact[:, c]
        Q = _orthonormal_span(approx[:, inside])
        if Q.shape[1] < inside.size:  # zero or dependent approximate vectors: not resolved
            out[inside] = 1.0
            continue
        residual = Q - E @ (E.T @ Q)
        out[inside] = min(1.0, float(np.linalg.norm(residual, 2)))
    return out


class SVDAccuracy(dict):
    r"""Per-component accuracy of an approximate truncated SVD (see :func:`svd_accuracy`).

    A dict with the keys ``value_errors`` (r,), ``left_sines`` (r,),
    ``right_sines`` (r,), ``clusters`` (list of index arrays),
    ``max_value_error``, ``max_sine``, ``eta_paper`` (the paper's eta,
    weights :math:`\lambda_i`) and ``eta_normalized`` (weights
    :math:`\lambda_i / \sum_j \lambda_j`); the last two are the paper's
    measure, reported beside the per-component one.
    """

    def meets(self, tol=1e-2, sine_tol=None):
        """Every singular value within ``tol`` (relative) and every subspace
        sine at most ``sine_tol`` (default ``sqrt(tol)``: 0.1 for tol = 1e-2)."""
        sine_tol = np.sqrt(tol) if sine_tol is None else sine_tol
        return bool(self["max_value_error"] <= tol and self["max_sine"] <= sine_tol)

    def error(self):
        """One number: ``max(max_value_error, max_sine ** 2)``; ``meets(tol)`` iff it is <= tol."""
        return float(max(self["max_value_error"], self["max_sine"] ** 2))


def svd_accuracy(U: ArrayLike, s: ArrayLike, V: ArrayLike, U_approx: ArrayLike,
                 s_approx: ArrayLike, V_approx: ArrayLike, *,
                 cluster_rtol: float = CLUSTER_RTOL) -> SVDAccuracy:
    r"""Accuracy of each component of an approximate rank-r SVD against the exact one.

    For each of the top r components:

    * the relative error of the singular value,
      :math:`|\tilde\lambda_i - \lambda_i| / \lambda_i` (0 when both are 0, inf
      when only the exact one is 0);
    * the sine of the largest principal angle between the exact and the
      approximate left (and right) subspaces, :math:`\|(I - E E^T) Q\|_2`
      with Q an orthonormal basis of the approximate vectors. For a cluster
      of nearly equal singular values (:func:`singular_value_clusters`:
      consecutive values within ``cluster_rtol`` relative) the angle is taken
      between the cluster's subspaces, since the individual vectors are not
      determined; a cluster cut by r is compared with the exact cluster's
      whole span if the exact SVD holds more than r columns. Zero or
      linearly dependent approximate vectors count as sine 1.

    Signs and scaling of the approximate vectors are ignored. The paper's eta
    (App. C.2) is reported beside, as ``eta_paper`` and ``eta_normalized``.

    Parameters
    ----------
    U : ndarray of shape (n, k), k >= r
        Exact left singular vectors (orthonormal columns, descending values).
    s : ndarray of shape (k,)
        Exact singular values, descending.
    V : ndarray of shape (m, k)
        Exact right singular vectors.
    U_approx, s_approx, V_approx : ndarrays of shape (n, r), (r,), (m, r)
        The approximation.
    cluster_rtol : float, default=1e-2

    Returns
    -------
    SVDAccuracy
        A dict (``value_errors``, ``left_sines``, ``right_sines``,
        ``clusters``, ``max_value_error``, ``max_sine``, ``eta_paper``,
        ``eta_normalized``) with ``meets(tol, sine_tol=sqrt(tol))``.

    Examples
    --------
    >>> import numpy as np
    >>> from ikdr.metrics import svd_accuracy
    >>> U, s, Vt = np.linalg.svd(np.diag([3.0, 2.0, 1.0]))
    >>> acc = svd_accuracy(U, s, Vt.T, -U[:, :2], s[:2] * 1.001, Vt[:2].T)
    >>> round(acc["max_value_error"], 6), round(acc["max_sine"], 6), acc.meets(1e-2)
    (0.001, 0.0, True)
    """
    U, V, Ua, Va = (np.asarray(a, dtype=np.float64) for a in (U, V, U_approx, V_approx))
    s = np.asarray(s, dtype=np.float64).ravel()
    sa = np.asarray(s_approx, dtype=np.float64).ravel()
    r = sa.shape[0]
    k = s.shape[0]
    if r == 0:
        raise ValueError("s_approx must hold at least one singular value")
    if k < r:
        raise ValueError(f"the exact SVD has {k} singular values, fewer than the {r} approximated")
    for name, a, cols, rows in (("U", U, k, None), ("V", V, k, None),
                                ("U_approx", Ua, r, U.shape[0] if U.ndim == 2 else None),
                                ("V_approx", Va, r, V.shape[0] if V.ndim == 2 else None)):
        if a.ndim != 2 or a.shape[1] != cols:
            raise ValueError(f"{name} must be 2-D with {cols} columns (one per singular value), "
                             f"got shape {a.shape}")
        if rows is not None and a.shape[0] != rows:
            raise ValueError(f"{name} has {a.shape[0]} rows, expected {rows}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} contains NaN or infinite values")
    for name, v in (("s", s), ("s_approx", sa)):
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise ValueError(f"{name} must hold finite non-negative singular values")
    check_positive(cluster_rtol, "cluster_rtol")
    exact = s[:r]
    with np.errstate(divide="ignore", invalid="ignore"):
        value_errors = np.where(exact > 0, np.abs(sa - exact) / np.where(exact > 0, exact, 1.0),
                                np.where(sa == 0, 0.0, np.inf))
    clusters = singular_value_clusters(s, cluster_rtol)
    left = _cluster_sines(U, Ua, clusters, r)
    right = _cluster_sines(V, Va, clusters, r)
    s_pos = s[:r] if s[:r].sum() > 0 else np.ones(r)
    return SVDAccuracy(
        value_errors=value_errors, left_sines=left, right_sines=right,
        clusters=[c for c in clusters if c[0] < r],
        max_value_error=float(value_errors.max()), max_sine=float(max(left.max(), right.max())),
        eta_paper=singular_alignment(U[:, :r], V[:, :r], s_pos, Ua, Va),
        eta_normalized=singular_alignment(U[:, :r], V[:, :r], s_pos, Ua, Va, normalize=True))
