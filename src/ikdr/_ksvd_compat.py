"""Compatibility maps of KSVD (paper Remark 2.3 / Algorithm 1): a0-a2 and the learned a3.

A rectangular data matrix A (N x M) has rows in R^M and columns in R^N; the
longer side is mapped by C to the dimension of the other so that a kernel
can compare them: M > N maps the rows, ``x_i -> C^T x_i`` (C is M x N);
N > M maps the columns, ``z_j -> C^T z_j`` (C is N x M).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ._config import require_memory, small_problem_blas
from ._eig import _fix_signs

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
    mapped = np.ascontiguousarray(D @ C)
    return (mapped, other) if rows_mapped else (other, mapped)


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
def _softmax_loss(logits, Y):
    shift = logits - logits.max(axis=1, keepdims=True)
    P = np.exp(shift)
    P /= P.sum(axis=1, keepdims=True)
    n = Y.shape[0]
    loss = -float(np.sum(Y * (shift - np.log(np.exp(shift).sum(axis=1, keepdims=True))))) / n
    return loss, (P - Y) / n


def learned_objective(C, W, b, *, D, other, rows_mapped, V, mu, sd, Y, kernel_matrix, kind,
                      gamma, alpha):
    r"""Downstream loss of a3 and its gradients with respect to C, W and b.

    With the points :math:`P = DC` on the mapped side, :math:`G = \kappa(X, Z)`
    (N x M), features :math:`F = (GV - \mu) / s` (V, mu, s held fixed: the
    paper detaches V and refreshes it by an SVD between steps), the loss is
    the mean softmax cross-entropy of :math:`FW + b` plus
    :math:`\tfrac{\alpha}{2}\|W\|^2`. Backpropagation:
    :math:`\partial L/\partial G = (\partial L/\partial F) V^T`; with
    :math:`E_{ij} = e^{-\|x_i - z_j\|^2/\gamma^2}` and
    :math:`H = (\partial L/\partial E) \circ E` (RBF: :math:`H = (\partial L/\partial G)\circ G`;
    SNE, :math:`G = E / E1`: :math:`H_{ij} = G_{ij}(\partial L/\partial G_{ij} - \sum_k
    \partial L/\partial G_{ik} G_{ik})`),
    :math:`\partial L/\partial Z = \tfrac{2}{\gamma^2}(H^T X - \mathrm{diag}(H^T 1) Z)`,
    :math:`\partial L/\partial X = \tfrac{2}{\gamma^2}(H Z - \mathrm{diag}(H 1) X)`, and
    :math:`\partial L/\partial C = D^T \partial L/\partial P`.

    Returns
    -------
    loss : float
    grad_C, grad_W, grad_b : ndarrays shaped like C, W, b
    """
    X, Z = _assemble(D, C, other, rows_mapped)
    G = kernel_matrix(X, Z)
    F = (G @ V - mu) / sd
    loss, dlogits = _softmax_loss(F @ W + b, Y)
    loss += 0.5 * alpha * float(np.sum(W * W))
    grad_W = F.T @ dlogits + alpha * W
    grad_b = dlogits.sum(axis=0)
    dG = ((dlogits @ W.T) / sd) @ V.T
    if kind == "sne":
        H = G * (dG - np.sum(dG * G, axis=1, keepdims=True))
    else:
        H = dG * G
    scale = 2.0 / gamma ** 2
    if rows_mapped:
        dP = scale * (H @ Z - H.sum(axis=1)[:, None] * X)
    else:
        dP = scale * (H.T @ X - H.sum(axis=0)[:, None] * Z)
    return loss, D.T @ dP, grad_W, grad_b


def _top_right_vectors(G, r, previous):
    V = scipy.linalg.svd(G, full_matrices=False)[2][:r].T
    if previous is None:
        return _fix_signs(V)
    signs = np.sign(np.sum(V * previous, axis=0))
    signs[signs == 0] = 1.0
    return V * signs  # keep the orientation the head was trained on


def learn_map(D, other, rows_mapped, C0, y, r, kind, gamma, kernel_matrix, *,
              max_iter=LEARNED_MAX_ITER, step=LEARNED_STEP, alpha=LEARNED_ALPHA):
    """Optimise C (a3) on the softmax loss of a linear head on the features GV.

    Alternates, as the paper (App. C.3): an SVD of G(C) gives V, held fixed;
    then one Adam step on (C, W, b) along :func:`learned_objective`.
    Full-batch, numpy only. Returns C and the loss history.
    """
    classes, codes = np.unique(y, return_inverse=True)
    Y = np.eye(classes.size)[codes]
    C = np.array(C0, dtype=np.float64)
    W = np.zeros((r, classes.size))
    b = np.zeros(classes.size)
    with small_problem_blas(D.size):
        return _adam_loop(D, other, rows_mapped, C, W, b, Y, r, kind, gamma, kernel_matrix,
                          max_iter, step, alpha)


def _adam_loop(D, other, rows_mapped, C, W, b, Y, r, kind, gamma, kernel_matrix, max_iter,
               step, alpha):
    params = [C, W, b]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    V = mu = sd = None
    history = []
    # C's step is relative to its scale, so the map's units do not matter
    c_scale = max(float(np.sqrt(np.mean(C * C))), np.finfo(float).tiny)
    for it in range(1, max_iter + 1):
        X, Z = _assemble(D, C, other, rows_mapped)
        G = kernel_matrix(X, Z)
        V = _top_right_vectors(G, r, V)
        if mu is None:
            F0 = G @ V
            mu, sd = F0.mean(axis=0), F0.std(axis=0)
            sd = np.where(sd > 0, sd, 1.0)
        loss, *grads = learned_objective(C, W, b, D=D, other=other, rows_mapped=rows_mapped,
                                         V=V, mu=mu, sd=sd, Y=Y, kernel_matrix=kernel_matrix,
                                         kind=kind, gamma=gamma, alpha=alpha)
        history.append(loss)
        for i, (p, g) in enumerate(zip(params, grads)):
            m1[i] = beta1 * m1[i] + (1 - beta1) * g
            m2[i] = beta2 * m2[i] + (1 - beta2) * g * g
            hat1 = m1[i] / (1 - beta1 ** it)
            hat2 = m2[i] / (1 - beta2 ** it)
            lr = step * (c_scale if i == 0 else 1.0)
            p -= lr * hat1 / (np.sqrt(hat2) + eps)
    return C, history
