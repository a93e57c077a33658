"""Feature importances from an orthonormal projection W."""
from __future__ import annotations

import numpy as np

__all__ = ["feature_importances"]


def feature_importances(W, weights=None):
    r"""Importance of each input feature in the subspace of W (d x q, orthonormal).

    :math:`\mathrm{imp}_j = \sum_k |\lambda_k| W_{jk}^2 / \sum_k |\lambda_k|`:
    the squared loadings of feature j on the learned directions, weighted by
    the absolute eigenvalues :math:`\lambda_k` of :math:`\Phi` belonging to the
    directions (``weights``; equal weights when None or all zero). The
    columns of W have unit norm, so the importances are non-negative and sum
    to 1. They measure how much of the projection a feature carries on the
    (standardised) input scale, not a causal effect.
    """
    W = np.asarray(W, dtype=np.float64)
    q = W.shape[1]
    w = np.ones(q) if weights is None else np.abs(np.asarray(weights, dtype=np.float64).ravel())
    if w.shape[0] != q or not np.all(np.isfinite(w)) or w.sum() <= 0:
        w = np.ones(q)
    imp = (W * W) @ w / w.sum()
    return imp / imp.sum()
