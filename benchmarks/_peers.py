"""Peers measured in the same run as ikdr: plain dense numpy implementations of
the same formulas (form Psi, form Phi = X^T L(Psi) X, eigh)."""
from __future__ import annotations

import numpy as np
import scipy.linalg


def mixture(n, d, n_classes=10, seed=0):
    """A standardised n x d mixture of ``n_classes`` Gaussian classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    centers = rng.standard_normal((n_classes, d)) * 1.5
    X = centers[y] + rng.standard_normal((n, d)) * 3.0
    X = (X - X.mean(0)) / X.std(0)
    return X, y


def numpy_supervised_ism(X, y, sigma, q, tol=0.01, max_iter=100):
    """Dense supervised Gaussian ISM exactly as the papers write it."""
    n = X.shape[0]
    Y = np.eye(int(y.max()) + 1)[y]
    H = np.eye(n) - 1.0 / n
    gamma = H @ Y @ Y.T @ H

    def top(phi):
        vals, vecs = scipy.linalg.eigh(phi, subset_by_index=[phi.shape[0] - q, phi.shape[0] - 1])
        return vals[::-1], vecs[:, ::-1]

    def laplacian(M):
        return np.diag(M.sum(axis=1)) - M

    lam, W = top(-(1 / sigma**2) * X.T @ laplacian(gamma) @ X)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        Z = X @ W
        sq = (Z * Z).sum(1)
        D2 = np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0)
        psi = gamma * np.exp(-D2 / (2 * sigma**2))
        phi = -(1 / sigma**2) * X.T @ laplacian(psi) @ X
        new_lam, W = top(phi)
        change = np.linalg.norm(new_lam - lam) / np.linalg.norm(new_lam)
        lam = new_lam
        if change < tol:
            break
    Z = X @ W
    sq = (Z * Z).sum(1)
    K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0) / (2 * sigma**2))
    return W, n_iter, float(np.sum(gamma * K))
