"""Class labels as a one-hot matrix (the supervised Gamma, the separation rule, KDAC)."""
from __future__ import annotations

import numpy as np
from sklearn.preprocessing import LabelEncoder

from .typing import ArrayLike

__all__ = ["one_hot"]


def one_hot(labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One-hot matrix (n x c) and the classes of a label vector."""
    enc = LabelEncoder()
    codes = enc.fit_transform(np.asarray(labels).ravel())
    Y = np.zeros((codes.shape[0], enc.classes_.shape[0]))
    Y[np.arange(codes.shape[0]), codes] = 1.0
    return Y, enc.classes_
