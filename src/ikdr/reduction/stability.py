"""How much to trust ``feature_importances_`` and the per-class or per-cluster
importances: intervals and rank stability over refits on subsamples of the rows."""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._utils.typing import ArrayLike, RandomStateLike
from .._utils.validation import plain

__all__ = ["ImportanceIntervals", "importance_intervals", "SUBSAMPLE"]

#: the share of the rows each refit reads (drawn without replacement)
SUBSAMPLE = 0.8


@dataclass
class ImportanceIntervals:
    """The distribution of an estimator's importances over refits on subsamples.

    Attributes
    ----------
    importances : ndarray (d,)
        The estimator's own ``feature_importances_`` (fitted on all rows).
    low, high : ndarray (d,)
        The ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
        the importances over the refits.
    samples : ndarray (n_resamples, d)
        The importances of every refit.
    top_k_frequency : ndarray (d,)
        How often each feature is among the k most important of a refit, k the
        number of features whose own importance is above the uniform 1/d: a
        feature that is always selected has 1.0.
    groups : ndarray or None
        The classes (``classes_``) or clusters (0 .. n_clusters - 1) of the
        per-group importances; None where the estimator has none (a continuous
        target).
    group_importances : ndarray (n_groups, d) or None
        The estimator's own ``class_importances_`` or ``cluster_importances_``.
    group_low, group_high : ndarray (n_groups, d) or None
        Their quantiles over the refits (NaN for a group no refit saw).
    group_samples : ndarray (n_resamples, n_groups, d) or None
        The per-group importances of every refit, NaN where a refit's subsample
        lacked the group. A refit's clusters are matched to the estimator's by
        the largest overlap of their rows (the Hungarian assignment).
    """

    importances: np.ndarray
    low: np.ndarray
    high: np.ndarray
    samples: np.ndarray
    top_k_frequency: np.ndarray
    groups: np.ndarray | None = None
    group_importances: np.ndarray | None = None
    group_low: np.ndarray | None = None
    group_high: np.ndarray | None = None
    group_samples: np.ndarray | None = None

    @property
    def selected(self):
        """Indices of the features whose importance is above 1/d in every refit's
        interval (``low > 1/d``), most important first."""
        d = self.importances.shape[0]
        idx = np.flatnonzero(self.low > 1.0 / d)
        return idx[np.argsort(self.importances[idx])[::-1]]


def _own_groups(estimator):
    """(groups, the estimator's per-group importances) or (None, None)."""
    for name in ("class_importances_", "cluster_importances_"):
        rows = getattr(estimator, name, None)
        if rows is not None:
            groups = getattr(estimator, "classes_", None) if name == "class_importances_" \
                else np.arange(rows.shape[0])
            return np.asarray(groups), np.asarray(rows, dtype=np.float64)
    return None, None


def _matched_groups(model, groups, own_labels):
    """The refit's per-group rows in the order of ``groups`` (NaN rows for groups it
    lacks): classes by label, clusters by the Hungarian assignment of the refit's
    clusters to the estimator's on the subsample's rows (``own_labels``)."""
    refit_groups, rows = _own_groups(model)
    out = np.full((groups.shape[0], rows.shape[1]), np.nan)
    if own_labels is None:         # classes: by label
        position = {g: i for i, g in enumerate(groups.tolist())}
        for g, row in zip(refit_groups.tolist(), rows):
            out[position[g]] = row
        return out
    overlap = np.zeros((groups.shape[0], rows.shape[0]))
    np.add.at(overlap, (own_labels, np.asarray(model.labels_)), 1.0)
    own, refit = linear_sum_assignment(-overlap)
    out[own] = rows[refit]
    return out


def importance_intervals(estimator: Any, X: ArrayLike, y: ArrayLike | None = None, *,
                         n_resamples: int = 20, confidence: float = 0.9,
                         random_state: RandomStateLike = None) -> ImportanceIntervals:
    """Intervals of a fitted estimator's importances from refits on subsamples.

    The estimator (any ikdr estimator with ``feature_importances_``: ISM,
    ISMClustering, SemiSupervisedISM, KDAC) is refitted with its own parameters
    on ``n_resamples`` subsamples of :data:`SUBSAMPLE` of the rows, drawn
    without replacement: a bootstrap sample repeats rows, and a repeated row
    can fall in both held-out halves of a supervised fit, or look like
    dependence to the marginal test (a noise feature's values copied together
    with their labels). W is determined only up to a rotation of its columns,
    and the importances do not depend on it, so refits are comparable feature
    by feature. The per-class (``class_importances_``) or per-cluster
    (``cluster_importances_``) importances get intervals too. Costs
    ``n_resamples`` fits.

    Parameters
    ----------
    estimator : fitted estimator with ``feature_importances_``
    X : array-like (n, d)
    y : array-like or None
        The second argument of ``fit`` (labels, scores, an existing clustering).
    n_resamples : int, default=20
    confidence : float in (0, 1), default=0.9
    random_state : int, RandomState or None

    Returns
    -------
    ImportanceIntervals
    """
    check_is_fitted(estimator, "feature_importances_")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) \
            or n_resamples < 2:
        raise ValueError(f"n_resamples must be an int >= 2, got {plain(n_resamples)!r}")
    if not (isinstance(confidence, numbers.Real) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {plain(confidence)!r}")
    X = np.asarray(X)
    n = X.shape[0]
    y = None if y is None else np.asarray(y)
    if y is not None and y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]}")
    rng = check_random_state(random_state)
    own = np.asarray(estimator.feature_importances_, dtype=np.float64)
    groups, own_rows = _own_groups(estimator)
    clusters = groups is not None and hasattr(estimator, "cluster_importances_")
    d = own.shape[0]
    size = max(2, int(np.ceil(SUBSAMPLE * n)))
    samples = np.empty((n_resamples, d))
    group_samples = None if groups is None else np.empty((n_resamples,) + own_rows.shape)
    for i in range(n_resamples):
        idx = np.sort(rng.choice(n, size, replace=False))
        model = clone(estimator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X[idx]) if y is None else model.fit(X[idx], y[idx])
        samples[i] = model.feature_importances_
        if group_samples is not None:
            group_samples[i] = _matched_groups(
                model, groups, np.asarray(estimator.labels_)[idx] if clusters else None)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
    k = max(1, int(np.sum(own > 1.0 / d)))
    top = np.argsort(samples, axis=1)[:, ::-1][:, :k]
    frequency = np.bincount(top.ravel(), minlength=d) / n_resamples
    out = ImportanceIntervals(importances=own, low=low, high=high, samples=samples,
                              top_k_frequency=frequency)
    if group_samples is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # a group no refit saw
            out.group_low, out.group_high = np.nanquantile(group_samples, [alpha, 1.0 - alpha],
                                                           axis=0)
        out.groups, out.group_importances, out.group_samples = groups, own_rows, group_samples
    return out
