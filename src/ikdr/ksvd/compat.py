"""Compatibility maps of KSVD (paper Remark 2.3 / Algorithm 1): a0-a2 and the learned a3.

A rectangular data matrix A (N x M) has rows in R^M and columns in R^N; the
longer side is mapped by C to the dimension of the other so that a kernel
can compare them: M > N maps the rows, ``x_i -> C^T x_i`` (C is M x N);
N > M maps the columns, ``z_j -> C^T z_j`` (C is N x M).

The learned map (a3) is also offered on its own for a symmetric kernel
between the mapped points, :func:`learn_compat_map` (KernelPCA of
:math:`XC` with C learned on the downstream loss: the same supervision as
a3, without the asymmetric kernel).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn.utils import check_random_state
import scipy.linalg
import scipy.sparse as sp

from .._config import require_memory, small_problem_blas
from .._utils.mlp import Adam
from .._utils.eig import fix_signs
from .blocks import dense_kernel_matrix
from .solvers import top_svd
from .._utils.typing import ArrayLike, RandomStateLike
from .._utils.validation import check_bandwidth, check_matrix, check_n_components, plain
from ..gamma import centered
from ..kernels import median_sigma

#: compat="learned": Adam steps, step size and L2 weight of the linear head
LEARNED_MAX_ITER = 150
LEARNED_STEP = 0.02
LEARNED_ALPHA = 1e-3


def _dense(A, compat):
    if sp.issparse(A):
        require_memory(8 * A.shape[0] * A.shape[1], f"densifying the {A.shape[0]} x {A.shape[1]} "
                       f"sparse X for compat={compat!r}")
        A = A.toarray()
    return A


def _sides(A):
    """(D, other, rows_mapped): D holds the points to map (one per row), other the rest."""
    N, M = A.shape
    rows_mapped = M > N
    D = A if rows_mapped else np.ascontiguousarray(A.T)
    other = np.ascontiguousarray(A.T if rows_mapped else A)
    return D, other, rows_mapped


def _assemble(D, C, other, rows_mapped):
    """(X, Z) of the kernel: the mapped points DC on their side, ``other`` on the
    other; ``other=None``: both sides are DC (a symmetric kernel)."""
    mapped = np.ascontiguousarray(D @ C)
    if other is None:
        return mapped, mapped
    return (mapped, other) if rows_mapped else (other, mapped)


def _double_centered(G):
    """:math:`H_n G H_m` (row and column means removed)."""
    return centered(centered(G).T).T


@dataclass(frozen=True)
class MapTask:
    """What the learned map (a3) is fitted to: the points ``D`` that C maps (one
    per row), the ``other`` side (None: both sides are DC, a symmetric kernel),
    ``rows_mapped`` (the mapped points are the kernel's rows), the kernel
    (``kernel_matrix``, its ``kind`` and bandwidth ``gamma``), the one-hot
    target ``Y``, ``center`` (learn on H G H) and the head's L2 weight ``alpha``."""

    D: np.ndarray
    other: np.ndarray | None
    rows_mapped: bool
    kernel_matrix: Callable
    kind: str
    gamma: float
    Y: np.ndarray
    center: bool = False
    alpha: float = LEARNED_ALPHA

    def kernel_of(self, C):
        """(X, Z, G, features matrix): the kernel of the mapped points and the
        matrix whose SVD gives the features (G, or H G H with ``center``)."""
        X, Z = _assemble(self.D, C, self.other, self.rows_mapped)
        G = self.kernel_matrix(X, Z)
        return X, Z, G, (_double_centered(G) if self.center else G)


def fixed_map(D, compat, rng):
    """C of a0 ("pinv"), a1 ("pca") or a2 ("random") for the points D (k x big)."""
    k, big = D.shape
    if compat == "pinv":  # a0: C = ((D D^T)^+ D)^T
        return (scipy.linalg.pinvh(D @ D.T) @ D).T
    if compat == "pca":  # a1: argmin ||D - D C C^T||_F = top-k right singular vectors
        C = scipy.linalg.svd(D, full_matrices=False)[2][:k].T
        if C.shape[1] < k:
            C = np.hstack([C, np.zeros((big, k - C.shape[1]))])
        return C
    # a2: Gaussian random projection, scaled to keep squared norms in expectation
    return rng.standard_normal((big, k)) / np.sqrt(k)


def compat_points(A, compat, rng, *, learn=None):
    """Points (X, Z) of equal dimension from a rectangular A (paper Algorithm 1).

    Returns ``(X, Z, C, rows_mapped)``. ``learn`` (compat="learned") is a
    callable ``(D, other, rows_mapped, C0) -> C`` that optimises C from the a1
    start.
    """
    A = _dense(A, compat)
    D, other, rows_mapped = _sides(A)
    if compat == "learned":
        C = learn(D, other, rows_mapped, fixed_map(D, "pca", rng))
    else:
        C = fixed_map(D, compat, rng)
    X, Z = _assemble(D, C, other, rows_mapped)
    return X, Z, C, rows_mapped


# ------------------------------------------------------------------ a3: learned C
def check_learned_target(y, n_rows, who="compat='learned'", call="fit(X, y)"):
    """The target of a learned map: 1-D, one label per row, at least 2 classes."""
    if y is None:
        raise ValueError(f"{who} optimises C on a downstream classification loss "
                         f"and needs the target: {call} with one label per row of X")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{who} needs a 1-D target y, got shape {y.shape}")
    if y.shape[0] != n_rows:
        raise ValueError(f"{who}: y has {y.shape[0]} entries but X has "
                         f"{n_rows} rows (a wrong-length target; one label per row)")
    if np.unique(y).size < 2:
        raise ValueError(f"{who} needs at least 2 classes in y")
    return y


def learn_compat_map(X: ArrayLike, y: ArrayLike, n_components: int = 4, *, kernel: str = "rbf",
                     gamma: float | None = None, center: bool = True,
                     max_iter: int = LEARNED_MAX_ITER, random_state: RandomStateLike = None
                     ) -> tuple[np.ndarray, list[float]]:
    r"""The learnable compatibility map (a3) for a symmetric kernel: KernelPCA with a learned C.

    KSVD's ``compat="learned"`` (paper Remark 2.3, App. C.3) learns the map C
    of one side of a rectangular data matrix on the downstream loss. This is
    the same mechanism (``ikdr.ksvd.compat.learn_map``, one code path) with C mapping
    *both* sides: the points :math:`P = XC` (n x d, C is d x d, started at
    the identity) and the kernel :math:`K = \kappa(P, P)`, centered
    :math:`K_c = H K H` as KernelPCA centers it. C, a linear head W, b are
    optimised on the mean softmax cross-entropy of
    :math:`((K_c V - \mu)/s) W + b` (V the top ``n_components`` singular
    vectors of :math:`K_c`, i.e. KernelPCA's eigenvectors for the RBF
    kernel, refreshed by an SVD before each Adam step and held fixed during
    it; :math:`\mu`, s the features' first mean and spread), the gradient
    backpropagated through the kernel in numpy
    (``ikdr.ksvd.compat.learned_objective``). KernelPCA (RBF, the paper's
    :math:`\exp(-\|x - z\|^2/\gamma^2)`, i.e. scikit-learn's
    ``gamma = 1 / gamma**2``) on ``X @ C`` then has the supervision of a3
    without the asymmetric kernel: the control that tells what a3 owes to
    the labels and what to KSVD.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Class labels (at least 2 classes).
    n_components : int, default=4
        r, the KernelPCA features the loss sees (at most min(n, d)).
    kernel : {"rbf", "sne"}, default="rbf"
        "rbf" is KernelPCA's kernel; "sne" (rows normalised, not symmetric)
        is allowed, as for KSVD's a3.
    gamma : float or None, default=None
        Bandwidth, :math:`\exp(-\|x - z\|^2/\gamma^2)`; None: the median
        distance of X (:func:`ikdr.median_sigma`).
    center : bool, default=True
        Learn on the centered kernel :math:`H K H` (KernelPCA's); False: on K.
    max_iter : int, default=150
        Adam steps (step 0.02 relative to C's scale, head L2 weight 1e-3).
    random_state : int, RandomState instance or None
        Subsample of the median rule.

    Returns
    -------
    C : ndarray of shape (d, d)
        Apply as ``X @ C`` to training and new points alike.
    history : list of float
        The loss before each step.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.decomposition import KernelPCA
    >>> from sklearn.preprocessing import StandardScaler
    >>> from ikdr import learn_compat_map
    >>> X, y = load_wine(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> C, history = learn_compat_map(X, y, 4, gamma=5.0, max_iter=30)
    >>> C.shape, bool(history[-1] < history[0])
    ((13, 13), True)
    >>> KernelPCA(4, kernel="rbf", gamma=1 / 5.0 ** 2).fit_transform(X @ C).shape
    (178, 4)
    """
    X = check_matrix(X, "X")
    y = check_learned_target(y, X.shape[0], "learn_compat_map", "learn_compat_map(X, y)")
    if kernel not in ("rbf", "sne"):
        raise ValueError(f"learn_compat_map backpropagates through the RBF or SNE kernel; "
                         f"got kernel={kernel!r}")
    r = check_n_components(n_components, min(X.shape))
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {plain(max_iter)!r}")
    gamma = (check_bandwidth(gamma, "gamma") if gamma is not None
             else median_sigma(X, random_state=check_random_state(random_state)))
    return learn_map(X, None, True, np.eye(X.shape[1]), y, r,
                     (kernel, gamma, dense_kernel_matrix(kernel, gamma)), center=bool(center),
                     max_iter=int(max_iter))


def _softmax_loss(logits, Y):
    shift = logits - logits.max(axis=1, keepdims=True)
    P = np.exp(shift)
    P /= P.sum(axis=1, keepdims=True)
    n = Y.shape[0]
    loss = -float(np.sum(Y * (shift - np.log(np.exp(shift).sum(axis=1, keepdims=True))))) / n
    return loss, (P - Y) / n


def learned_objective(C, W, b, task, *, V, mu, sd, evaluated=None):
    r"""Downstream loss of a3 and its gradients with respect to C, W and b.

    With the points :math:`P = DC` of ``task`` (a :class:`MapTask`) on the
    mapped side (``other=None``: on both sides, :math:`X = Z = P`),
    :math:`G = \kappa(X, Z)` (N x M), or
    :math:`G_c = H_N G H_M` with ``center`` (:math:`H_n = I - 11^T/n`), features
    :math:`F = (G_c V - \mu) / s` (V, mu, s held fixed: the paper detaches V
    and refreshes it by an SVD between steps), the loss is the mean softmax
    cross-entropy of :math:`FW + b` plus :math:`\tfrac{\alpha}{2}\|W\|^2`.
    Backpropagation: :math:`\partial L/\partial G_c = (\partial L/\partial F) V^T`,
    :math:`\partial L/\partial G = H_N (\partial L/\partial G_c) H_M`;
    with :math:`E_{ij} = e^{-\|x_i - z_j\|^2/\gamma^2}` and
    :math:`Q = (\partial L/\partial E) \circ E` (RBF: :math:`Q = (\partial L/\partial G)\circ G`;
    SNE, :math:`G = E / E1`: :math:`Q_{ij} = G_{ij}(\partial L/\partial G_{ij} - \sum_k
    \partial L/\partial G_{ik} G_{ik})`),
    :math:`\partial L/\partial Z = \tfrac{2}{\gamma^2}(Q^T X - \mathrm{diag}(Q^T 1) Z)`,
    :math:`\partial L/\partial X = \tfrac{2}{\gamma^2}(Q Z - \mathrm{diag}(Q 1) X)`
    (both, summed, when X = Z = P), and
    :math:`\partial L/\partial C = D^T \partial L/\partial P`.

    ``evaluated``: the ``(X, Z, G, G_c)`` of this C when already computed.

    Returns
    -------
    loss : float
    grad_C, grad_W, grad_b : ndarrays shaped like C, W, b
    """
    X, Z, G, Gf = evaluated if evaluated is not None else task.kernel_of(C)
    F = (Gf @ V - mu) / sd
    loss, dlogits = _softmax_loss(F @ W + b, task.Y)
    loss += 0.5 * task.alpha * float(np.sum(W * W))
    grad_W = F.T @ dlogits + task.alpha * W
    grad_b = dlogits.sum(axis=0)
    dG = ((dlogits @ W.T) / sd) @ V.T
    if task.center:
        dG = _double_centered(dG)
    if task.kind == "sne":
        Q = G * (dG - np.sum(dG * G, axis=1, keepdims=True))
    else:
        Q = dG * G
    scale = 2.0 / task.gamma ** 2
    grad_X = lambda: scale * (Q @ Z - Q.sum(axis=1)[:, None] * X)  # noqa: E731
    grad_Z = lambda: scale * (Q.T @ X - Q.sum(axis=0)[:, None] * Z)  # noqa: E731
    if task.other is None:
        dP = grad_X() + grad_Z()
    else:
        dP = grad_X() if task.rows_mapped else grad_Z()
    return loss, task.D.T @ dP, grad_W, grad_b


def _top_right_vectors(G, r, previous):
    """Top-r right singular vectors of G (``_ksvd_solvers.top_svd``: LAPACK for a
    small G, else ARPACK: a KernelPCA kernel is n x n, and a full SVD at every step
    would cost O(n^3)), oriented like ``previous``."""
    V = top_svd(G, r)[2]
    if previous is None:
        return fix_signs(V)
    signs = np.sign(np.sum(V * previous, axis=0))
    signs[signs == 0] = 1.0
    return V * signs  # keep the orientation the head was trained on


def learn_map(D, other, rows_mapped, C0, y, r, kernel, *, center=False,
              max_iter=LEARNED_MAX_ITER, step=LEARNED_STEP):
    """Optimise C (a3) on the softmax loss of a linear head on the features GV.

    Alternates, as the paper (App. C.3): an SVD of G(C) (H G H with
    ``center``) gives V, held fixed; then one Adam step on (C, W, b) along
    :func:`learned_objective`. ``other=None`` maps both sides (a symmetric
    kernel between the points DC). ``kernel``: ``(kind, gamma, kernel
    matrix)``. Full-batch, numpy only. Returns C and the loss history.
    """
    classes, codes = np.unique(y, return_inverse=True)
    kind, gamma, kernel_matrix = kernel
    task = MapTask(D, other, rows_mapped, kernel_matrix, kind, gamma,
                   Y=np.eye(classes.size)[codes], center=center)
    C = np.array(C0, dtype=np.float64)
    with small_problem_blas(D.size):
        return _adam_loop(task, C, r, max_iter, step)


def _adam_loop(task, C, r, max_iter, step):
    W = np.zeros((r, task.Y.shape[1]))
    b = np.zeros(task.Y.shape[1])
    V = mu = sd = None
    history = []
    # C's step is relative to its scale, so the map's units do not matter
    c_scale = max(float(np.sqrt(np.mean(C * C))), np.finfo(float).tiny)
    optimizer = Adam([C, W, b], step, scales=[c_scale, 1.0, 1.0])
    for it in range(1, max_iter + 1):
        evaluated = task.kernel_of(C)
        G = evaluated[3]
        V = _top_right_vectors(G, r, V)
        if mu is None:
            F0 = G @ V
            mu, sd = F0.mean(axis=0), F0.std(axis=0)
            sd = np.where(sd > 0, sd, 1.0)
        loss, *grads = learned_objective(C, W, b, task, V=V, mu=mu, sd=sd, evaluated=evaluated)
        history.append(loss)
        optimizer.step(grads)
    return C, history
