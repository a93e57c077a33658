"""Class labels: the kind of a target and its one-hot matrix (the supervised
Gamma, the separation rule, KDAC)."""
from __future__ import annotations

import numpy as np
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import type_of_target

from .typing import ArrayLike

__all__ = ["one_hot", "target_type"]

#: dtype kinds whose labels NumPy sorts and compares as LabelEncoder does
#: (booleans, integers, floats); other labels (strings, objects) go through it
_NUMERIC_KINDS = "biuf"


def target_type(y: ArrayLike) -> str:
    """scikit-learn's ``type_of_target``, answered directly for a 1-D array of
    integers or booleans: ``"binary"`` (at most two distinct values) or
    ``"multiclass"``, as ``type_of_target`` says for them. Its own checks
    (several passes over the labels, with copies: a few percent of a small
    fit, ``benchmarks/bench_call_overhead.py``) run for every other target."""
    y = np.asarray(y)
    if y.ndim == 1 and y.size and y.dtype.kind in "biu":
        return "binary" if np.unique(y).size <= 2 else "multiclass"
    return type_of_target(y)


def one_hot(labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One-hot matrix (n x c) and the sorted classes of a label vector."""
    labels = np.asarray(labels).ravel()
    if labels.dtype.kind in _NUMERIC_KINDS:
        classes, codes = np.unique(labels, return_inverse=True)
    else:
        encoder = LabelEncoder()
        codes = encoder.fit_transform(labels)
        classes = encoder.classes_
    Y = np.zeros((codes.shape[0], classes.shape[0]))
    Y[np.arange(codes.shape[0]), codes] = 1.0
    return Y, classes
