"""How much to trust ``feature_importances_``: bootstrap intervals and rank stability."""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._utils.typing import ArrayLike, RandomStateLike
from .._utils.validation import plain

__all__ = ["ImportanceIntervals", "importance_intervals"]


@dataclass
class ImportanceIntervals:
    """Bootstrap distribution of an estimator's ``feature_importances_``.

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
    """

    importances: np.ndarray
    low: np.ndarray
    high: np.ndarray
    samples: np.ndarray
    top_k_frequency: np.ndarray

    @property
    def selected(self):
        """Indices of the features whose importance is above 1/d in every refit's
        interval (``low > 1/d``), most important first."""
        d = self.importances.shape[0]
        idx = np.flatnonzero(self.low > 1.0 / d)
        return idx[np.argsort(self.importances[idx])[::-1]]


def importance_intervals(estimator: Any, X: ArrayLike, y: ArrayLike | None = None, *,
                         n_resamples: int = 20, confidence: float = 0.9,
                         random_state: RandomStateLike = None) -> ImportanceIntervals:
    """Bootstrap intervals of a fitted estimator's ``feature_importances_``.

    The estimator (any ikdr estimator that learns W: ISM, ISMClustering,
    SemiSupervisedISM, KDAC) is refitted with its own parameters on
    ``n_resamples`` bootstrap samples of the rows (drawn with replacement,
    stratified by nothing); each refit's importances are its row norms of W,
    weighted as the estimator weighs them. W is determined only up to a
    rotation of its columns, and the importances do not depend on it, so
    refits are comparable feature by feature. Costs ``n_resamples`` fits.

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
    d = own.shape[0]
    samples = np.empty((n_resamples, d))
    for i in range(n_resamples):
        idx = rng.randint(0, n, n)
        model = clone(estimator)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X[idx]) if y is None else model.fit(X[idx], y[idx])
        samples[i] = model.feature_importances_
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
    k = max(1, int(np.sum(own > 1.0 / d)))
    top = np.argsort(samples, axis=1)[:, ::-1][:, :k]
    frequency = np.bincount(top.ravel(), minlength=d) / n_resamples
    return ImportanceIntervals(importances=own, low=low, high=high, samples=samples,
                               top_k_frequency=frequency)
