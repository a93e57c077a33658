r"""Evaluation measures: clustering (dissertation section 3.5, Table 3.1) and the
per-component accuracy of a truncated SVD (:func:`svd_accuracy`) with the
asymmetric kernel SVD paper's eta beside it."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from sklearn.metrics import normalized_mutual_info_score
from sklearn.utils.validation import column_or_1d

from ._utils.validation import check_matrix
from .gamma import Gamma, centered, kernel_factor, one_hot, target_factor

from .ksvd.metrics import SVDAccuracy, singular_alignment, singular_value_clusters, svd_accuracy
from ._utils.typing import ArrayLike, RandomStateLike
from .kernels import Kernel, KernelLike, make_kernel
from .spectral import kernel_degrees

__all__ = ["hsic", "nmi", "novelty", "clustering_quality", "singular_alignment", "svd_accuracy",
           "SVDAccuracy", "singular_value_clusters"]


def _labels(y, name):
    y = column_or_1d(np.asarray(y), warn=False)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return y


def nmi(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    r"""Normalised mutual information :math:`I(L, U) / \sqrt{H(L) H(U)}` (geometric mean).

    The normalisation of the papers (Strehl and Ghosh 2002; dissertation
    section 3.5); scikit-learn's default is the arithmetic mean, which differs.

    Examples
    --------
    >>> from ikdr.metrics import nmi
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    a = _labels(labels_true, "labels_true")
    b = _labels(labels_pred, "labels_pred")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"the label vectors differ in length ({a.shape[0]} and {b.shape[0]})")
    return float(normalized_mutual_info_score(a, b, average_method="geometric"))


def novelty(labels: ArrayLike, y_existing: ArrayLike | Sequence[ArrayLike]) -> float:
    """Redundancy of a clustering with an existing one: their NMI (0 = fully novel).

    ``y_existing`` may be a list of earlier clusterings; the largest NMI is
    returned (the clustering is only as novel as against its closest
    predecessor). This is the "Novelty" column of dissertation Table 3.1.
    """
    if isinstance(y_existing, (list, tuple)) and len(y_existing) > 0 and \
            all(np.ndim(y) >= 1 for y in y_existing):
        return max(nmi(y, labels) for y in y_existing)
    return nmi(y_existing, labels)


def clustering_quality(X: ArrayLike, clustering: ArrayLike, *,
                       components: ArrayLike | None = None, kernel: KernelLike = "gaussian",
                       normalize: bool = True, random_state: RandomStateLike = None) -> float:
    r"""Clustering quality CQ = :math:`\mathrm{Tr}(U^T H D^{-1/2} K_{XW} D^{-1/2} H U)`.

    The HSIC between XW and the clustering U with the spectral-clustering
    normalisation of KDAC and without the :math:`1/(n-1)^2` factor, as in
    dissertation Table 3.1 (it is the spectral-clustering objective: at most
    the number of clusters, reached by perfectly separated clusters).

    Parameters
    ----------
    X : array-like (n, d)
    clustering : array-like (n,) of labels, or (n, k) embedding with orthonormal columns
        Labels are turned into the orthonormal :math:`U = Y (Y^TY)^{-1/2}`.
    components : ndarray (d, q), optional
        W; the identity when omitted.
    kernel : str or Kernel, default="gaussian"
        "gaussian" uses the median distance of X (the rows of X, not XW).
    normalize : bool, default=True
        D = diag(K 1) (True) or the identity.

    Returns
    -------
    float
    """
    X = check_matrix(X, "X")
    U = np.asarray(clustering)
    if U.ndim == 1 or (U.ndim == 2 and U.shape[1] == 1 and U.dtype.kind in "iub"):
        Y, _ = one_hot(_labels(U, "clustering"))
        U = Y / np.sqrt(Y.sum(axis=0))
    else:
        U = check_matrix(U, "clustering")
    if U.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but the clustering has {U.shape[0]}")
    k = make_kernel(kernel)
    k = k.fit(X, random_state=random_state) if not k.is_resolved else k
    Z = X if components is None else np.ascontiguousarray(X @ np.asarray(components, float))
    deg = kernel_degrees(Z, k) if normalize else np.ones(X.shape[0])
    if normalize and np.any(deg <= 0):
        raise ValueError("the kernel's degrees are not positive; use normalize=False")
    return k.objective(Z, None, Gamma(centered(U) / np.sqrt(deg)[:, None]))


def hsic(X: ArrayLike, Y: ArrayLike, kernel_x: KernelLike = "gaussian", kernel_y: KernelLike = "auto",
         *, random_state: RandomStateLike = None) -> float:
    r"""Empirical HSIC :math:`\mathrm{Tr}(K_X H K_Y H) / (n-1)^2` (Gretton et al. 2005).

    Parameters
    ----------
    X : array-like (n, d)
        The samples.
    Y : array-like (n,) or (n, t)
        Labels, or a continuous target of t columns.
    kernel_x : str or Kernel, default="gaussian"
        Any ISM-family kernel (similarity form); ``"gaussian"`` uses the
        median heuristic on X.
    kernel_y : "auto", "labels" or str or Kernel
        ``"auto"``: class labels use :math:`K_Y = YY^T` on the one-hot matrix (as
        supervised ISM does), continuous targets a Gaussian kernel with the
        median heuristic.

    Notes
    -----
    :math:`K_Y` is factored (one-hot, linear features, or pivoted Cholesky), so
    :math:`H K_Y H` is a factored :class:`ikdr.gamma.Gamma` and the trace is one
    fused C++ pass over X: O(n^2 d) time, O(n d) memory.

    Examples
    --------
    >>> import numpy as np, ikdr
    >>> X = np.arange(8.0).reshape(4, 2); y = [0, 0, 1, 1]
    >>> round(ikdr.hsic(X, y, kernel_x="linear"), 6)
    7.111111
    """
    X = check_matrix(X, "X")
    Y = np.asarray(Y)
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}")
    n = X.shape[0]
    if isinstance(kernel_y, str) and kernel_y in ("auto", "labels"):
        F, _ = target_factor(Y, kernel="labels" if kernel_y == "labels" else "auto")
    else:
        F = kernel_factor(Y.reshape(n, -1), kernel_y, random_state=random_state)
    gamma = Gamma(centered(F))
    kx = make_kernel(kernel_x)
    kx = kx.fit(X, random_state=random_state) if not kx.is_resolved else kx
    assert isinstance(kx, Kernel)
    return kx.objective(X, None, gamma) / (n - 1) ** 2
