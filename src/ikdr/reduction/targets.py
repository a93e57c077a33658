r"""What a supervised target y is: class labels or a continuous quantity, and
whether its classes are large enough for the held-out halves.

:class:`ikdr.ISM` builds :math:`\Gamma = H K_Y H` from y (ISM paper, Eq. 1):
:math:`K_Y = YY^T` with one-hot Y for class labels, a Gaussian kernel on y
for a continuous target. Which of the two y is decides the fit, and a
number can be either: scikit-learn's diabetes target holds integers (214
distinct values among 442 rows) and is a continuous measure of disease
progression, while digits' ten integers are classes. ``target`` says which;
``"auto"`` asks scikit-learn's ``type_of_target`` and warns
(:class:`TargetWarning`) where its answer is doubtful.

The support and the importances are measured on two halves of the rows,
split class by class (:class:`ikdr.reduction.support.HeldOutRows`); a class
with a single row can be in one half only. :func:`check_halves` says what
happens then.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._utils.labels import target_type
from ..gamma import supervised_gamma

__all__ = ["TargetWarning", "Target", "resolve_target", "check_halves", "many_values", "TARGETS",
           "CLASS_ONLY_ATTRIBUTES", "ClassAttributesMixin"]

#: the values of ISM's ``target`` parameter
TARGETS = ("auto", "classes", "continuous")
#: an integer target with more distinct values than this ...
MANY_VALUES = 20
#: ... and fewer rows per distinct value than this on average is more likely a
#: continuous measure than classes (``target="auto"`` warns): diabetes has 2.1
#: rows per value, digits 180 per class, a 40-person face set 7.5 or 10
ROWS_PER_CLASS = 5
#: the fitted attributes defined for class labels only
CLASS_ONLY_ATTRIBUTES = ("class_importances_", "class_importance_intervals_")
#: classes named in a warning or an error at most (the rest are counted)
_NAMED = 5


class TargetWarning(UserWarning):
    """The target y is fitted, but perhaps not as meant: an integer target taken
    for classes although it looks continuous, or a class too small to be held
    out on both halves of the rows. The message says what to pass instead.

    Attributes
    ----------
    args : tuple
        The message, as for every warning.
    """


@dataclass(frozen=True)
class Target:
    r"""A resolved supervised target: ``y`` (labels as integers where they are
    integer-valued, a continuous target as float64), ``kind`` ("labels" or
    "continuous"), its ``gamma`` (:math:`\Gamma`) and ``classes`` (the sorted
    labels, None for a continuous target)."""

    y: np.ndarray
    kind: str
    gamma: Any
    classes: np.ndarray | None


def many_values(y):
    """Whether integer-valued class labels ``y`` (1-D) have so many distinct values
    that they are more likely a continuous measure: more than
    ``max(20, n / 5)`` of them, i.e. more than 20 and fewer than 5 rows per
    value on average."""
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iuf":
        return False
    distinct = np.unique(y).size
    return distinct > max(MANY_VALUES, y.shape[0] / ROWS_PER_CLASS)


def resolve_target(y, target="auto") -> Target:
    """The :class:`Target` of a supervised fit: ``kind`` "labels" or "continuous",
    ``classes`` the sorted labels (None for a continuous target).

    ``target="classes"``: y (1-D) holds labels whatever its dtype;
    ``"continuous"``: y (numeric, 1-D or one column per output) is continuous,
    integers included; ``"auto"``: scikit-learn's ``type_of_target`` decides
    (binary and multiclass are labels, everything else continuous), and an
    integer-valued target with more than ``max(20, n / 5)`` distinct values
    (:func:`many_values`) is fitted as classes with a :class:`TargetWarning`.
    Integer-valued float labels are passed on as integers (the class-moment
    screen would otherwise cut them into quantile slices); ``classes`` keeps
    their own values.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    kind = _kind(y, target)
    if kind == "continuous":
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f'target="continuous" needs a numeric y, got dtype {y.dtype}; '
                             'pass target="classes" for labels') from None
        return Target(y, kind, supervised_gamma(y, target="continuous")[0], None)
    if y.ndim != 1:
        raise ValueError(f'target="classes" needs one label per row (a 1-D y), got shape '
                         f"{y.shape}")
    if target == "auto" and many_values(y):
        distinct = np.unique(y).size
        warnings.warn(f"y holds {distinct} distinct integer values among {y.shape[0]} rows: it "
                      "is fitted as that many classes, but looks like a continuous measure. "
                      'Pass target="continuous" to fit it as one (a Gaussian kernel on y), '
                      'or target="classes" if the values are classes (no such warning then)',
                      TargetWarning, stacklevel=4)
    classes = np.unique(y) if y.dtype.kind == "f" else None
    if y.dtype.kind == "f" and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    gamma, found = supervised_gamma(y, target="labels")
    return Target(y, "labels", gamma, found if classes is None else classes)


def _kind(y, target):
    """"labels" or "continuous" for ``target``; "auto" asks ``type_of_target``
    (its own warning about many classes is replaced by :func:`resolve_target`'s)."""
    if target in ("classes", "continuous"):
        return "labels" if target == "classes" else target
    if target != "auto":
        raise ValueError(f"target must be one of {', '.join(map(repr, TARGETS))}, got {target!r}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The number of unique classes is greater")
        kind = target_type(y)
    if kind in ("multilabel-indicator", "multiclass-multioutput"):
        return "continuous"
    if kind not in ("binary", "multiclass", "continuous", "continuous-multioutput"):
        raise ValueError(f"Unknown label type: {kind!r}; y must be class labels or "
                         "continuous targets")
    return "labels" if kind in ("binary", "multiclass") else "continuous"


def check_halves(y, halves):
    """Check the two halves (row indices into the class labels ``y``) of a
    held-out split: each needs at least 2 classes to measure a dependence.

    A class with a single row is held out in one half only: the fit on every
    row still sees it, and where both halves keep at least 2 classes the
    support and the importances are measured as usual, the class in one half
    (a :class:`TargetWarning` names it). Where a half would be left with a
    single class (e.g. two classes, one of them with one row) nothing can be
    measured on it: a ValueError says which classes are too small and what to
    do.
    """
    labels, counts = np.unique(y, return_counts=True)
    small = labels[counts < 2]
    if small.size == 0:
        return
    listed = ", ".join(repr(c.item() if hasattr(c, "item") else c) for c in small[:_NAMED])
    if small.size > _NAMED:
        listed += f" and {small.size - _NAMED} more"
    which = f"class {listed} has 1 row" if small.size == 1 else f"classes {listed} have 1 row each"
    where = f"among the {len(y)} rows split into two held-out halves"
    if min(np.unique(y[h]).size for h in halves) < 2:
        raise ValueError(f"{which} {where}: one half would hold a single class, and the support "
                         "and feature_importances_ are measured on both halves. Give each class "
                         "at least 2 rows (more rows of it, or merge it with a related class or "
                         "drop its rows)")
    warnings.warn(f"{which} {where}: it is fitted with every row but held out in one half "
                  "only, so the support and the importances see it less. Give each class at "
                  "least 2 rows to have it measured on both halves", TargetWarning, stacklevel=5)


class ClassAttributesMixin:
    """Explains the absence of the attributes defined for class labels only
    (:data:`CLASS_ONLY_ATTRIBUTES`, e.g. ``class_importances_``) on an estimator
    fitted on a continuous target (``classes_`` is None): an AttributeError that
    says why, instead of the bare one. ``hasattr`` stays False."""

    def __getattr__(self, name):
        # only reached when normal lookup fails; vars() avoids recursing into here
        if name in CLASS_ONLY_ATTRIBUTES and "classes_" in vars(self) and \
                vars(self)["classes_"] is None:
            raise AttributeError(f"{type(self).__name__} was fitted on a continuous target: "
                                 f"{name} is defined for class labels only (fit with "
                                 'target="classes" for them); feature_importances_ holds the '
                                 "dependence on y")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
