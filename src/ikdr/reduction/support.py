r"""Which features a supervised ISM fit uses, and how much each carries, measured on
rows the projection was not fitted on (cross-fitting).

The fit maximises the training HSIC over every feature it is given; among many
noise features that maximum is partly a noise subspace fitted to the sample,
so the training objective cannot say which features to keep. Here every
decision is taken on held-out rows: the selection rows (all rows, or a seeded
sample of :data:`FOLD_ROWS` per half) are split in two halves (stratified by
class), W is fitted on one and measured on the other, and the other way round.
Each half's fit starts from the fit on every row and climbs to a maximum of
that half alone (relative gradient :data:`FOLD_GTOL`): started cold, a half
would often miss the structure the full fit found, and a start is no data.

**Held-out loss of a feature.** Scaling feature j of X by s is scaling row j
of W by s, so with :math:`\nabla_W f = 2\Phi(W)W` the rate at which the
held-out objective :math:`f_B(W_A) = \mathrm{Tr}(\Gamma_B K_{X_B W_A})` falls as
feature j is removed is

.. math:: \ell_j = \left.\frac{\partial f_B}{\partial s_j}\right|_{s=1}
    = \sum_k \ell_{jk}, \qquad \ell_{jk} = 2 (W_A)_{jk}\,[\Phi_B(W_A) W_A]_{jk},

one thin pass on the held-out half for every feature at once (a cross-fitted
first-order form of the held-out HSIC lost without the feature). On the
training half at its maximum, :math:`\Phi_A W_A = W_A\Lambda`, this is
:math:`2\sum_k \lambda_k W_{jk}^2`, the eigenvalue-weighted loadings; on the
held-out half a noise feature scores below zero on average (it shrinks every
kernel value alike) and a feature that carries dependence above it. A
direction k whose held-out value :math:`\sum_j \ell_{jk}` is negative carries
no dependence (the floor on q, at least 2 directions, can force such a one on
a linear problem) and is left out of the sum, so that a feature is not
blamed for the wasted direction it happens to load.

**Selection.** The class-moment screen (:mod:`ikdr.reduction.screen`) proposes:
the fit starts from the features it keeps, and the others are candidates in
the order of their raw screen scores. Where it keeps none (a parity moves no
class moment) the first fit runs on all features (up to :data:`ALL_FEATURES`)
and its :data:`LEADING_FEATURES` leading loadings per direction are the
features in use: a half of the rows on as many features can lose a structure
that all the rows found. Each
round measures the current features and a batch of untried candidates on
both halves. A feature in use stays unless its summed loss is below
:math:`-` :data:`SUPPORT_MARGIN` times the summed held-out objective (a loss
within noise of zero must not flip the support between near-equal fits); a
candidate enters when its summed loss is above :data:`CANDIDATE_MARGIN` times
it and positive on each half. The rounds end when one changes nothing, or
after :data:`MAX_ROUNDS`; where the features changed, the fit on every row is
made once more on them, warm-started.

**Marginal part.** A feature whose dependence is additive and even (a
quadratic term) is not kept in the projection, whose single isotropic kernel
it would blur; it still carries dependence. Its marginal HSIC,
:math:`m_j = \mathrm{Tr}(\Gamma K_j)` for a one-dimensional Gaussian
:math:`K_j` on feature j (median bandwidth), less its expectation under
independence, measures that; nothing is fitted for it, so it is measured on
all the selection rows (held out for it all alike), and counts where
independent data would exceed it with probability below 5% / d
(:func:`marginal_threshold`; with the rows of :math:`\Gamma` permuted at
random, :math:`\mathrm{Tr}(\Gamma K_j)` deviates by about
:math:`\mathrm{sd}_j = \sqrt{2}\,\|\Gamma\|_F\,\|H K_j H\|_F / n` around its
mean :math:`\mathrm{tr}(\Gamma)(1 - \bar k_j)`).

**Importances** (:func:`heldout_importances`). For class labels both parts
are taken per class, with each class set against the other classes weighed
alike (:mod:`ikdr.reduction.groups`): the held-out loss :math:`\ell_{jc}` from
each half's W on the other half, one thin pass per class, summed over both
halves and counted for the features of the support (a candidate the
selection refused showed no loss beyond its entry margin), and the marginal
part :math:`m_{jc}`. A class's row of ``class_importances_`` is the mean of
the two parts' shares; ``feature_importances_`` is each feature's largest
share in any class, normalised. A continuous target is one group, its own
Gamma. Each half's own estimate (its losses, the marginal part of its rows)
gives the intervals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ..gamma import supervised_gamma
from ..passes import resolve
from ..passes.dask_data import take_columns
from ..passes.problem import float32_estimate
from ..solver.marginal import marginal_dependence, marginal_threshold
from .groups import (combined_importances, group_contrasts, marginal_parts, on_rows,
                     projection_losses)
from .targets import check_halves

__all__ = ["HeldOutRows", "Selection", "select_support", "heldout_losses", "heldout_importances",
           "filled", "fold_precision", "FOLD_GTOL", "FOLD_FLOAT32_ERROR", "FOLD_FLOAT32_MIN_ROWS",
           "FOLD_ROWS", "MAX_ROUNDS",
           "ALL_FEATURES", "marginal_dependence", "marginal_threshold"]

#: rows of each half at most (a larger X is subsampled, seeded)
FOLD_ROWS = 2000
#: selection rounds at most
MAX_ROUNDS = 4
#: where the screen keeps no feature, the fit starts from all of them up to this many
#: (the ones with the highest raw screen scores above it)
ALL_FEATURES = 64
#: a feature in use leaves when its summed held-out loss is below -SUPPORT_MARGIN
#: times the summed held-out objective: a loss within the sampling noise of zero
#: must not flip the support between two draws of the halves. On breast cancer
#: (30 draws) the losses of the features that carry nothing average -0.1% with a
#: spread of up to 0.26% from draw to draw; at 0.1% the support changed with
#: random_state (23-28 features over 10 seeds), at 1% it does not ...
SUPPORT_MARGIN = 1e-2
#: ... and a candidate enters above +CANDIDATE_MARGIN times it: the held-out loss of a
#: noise feature that a half's fit took in reaches 1-1.5% (ring or XOR among 50
#: noise features, 1,000 rows), a weak real one several percent
CANDIDATE_MARGIN = 2e-2
#: features per direction that a first fit without the screen's evidence proposes
LEADING_FEATURES = 3
#: relative gradient at which a half's fit stops. It only ranks features: at 1e-3
#: instead, every recall and held-out HSIC of the feature-discovery suite (17 tasks x
#: 3 seeds) was the same and one support of 51 took one more feature, at a pass more
#: per half in most fits (from the fit on every row, one step takes a half to about
#: 1e-3-3e-3); at 1e-4, the same supports as at 1e-3, at 6% more time
FOLD_GTOL = 3e-3
#: a half's fit runs in float32 where the estimated relative error of its objective
#: is at most this (10 times below the float32 passes' warning level, far below
#: FOLD_GTOL) ...
FOLD_FLOAT32_ERROR = 1e-5
#: ... and it has at least this many rows: below, a float32 pass saves less than
#: the estimate and the result's float64 gradient pass cost, which do not shrink
#: with the rows (``benchmarks/bench_core_rate.py`` times the passes in both dtypes)
FOLD_FLOAT32_MIN_ROWS = 1000


class HeldOutRows:
    """The two halves of the selection rows: fit on one, measure on the other.

    ``X`` (n x d, float64, in memory) and ``y`` are the selection rows (all
    rows, or a seeded sample of ``2 * FOLD_ROWS``); class labels are split
    stratified (a class of one row in one half only:
    :func:`ikdr.reduction.targets.check_halves`), a continuous target at random.
    """

    def __init__(self, X, y, target, random_state=None):
        self.X, self.y, self.target = X, y, target
        rng = check_random_state(random_state)
        n = X.shape[0]
        if target == "labels":
            halves = ([], [])
            for c in np.unique(y):
                rows = rng.permutation(np.flatnonzero(y == c))
                # odd class sizes alternate their extra row between the halves: the
                # smaller half so far takes it (the halves never differ by more than 1)
                cut = (rows.size + len(halves[1]) - len(halves[0])) // 2
                halves[0].extend(rows[:cut])
                halves[1].extend(rows[cut:])
            first, second = (np.sort(np.asarray(h, dtype=np.intp)) for h in halves)
            check_halves(y, (first, second))
        else:
            order = rng.permutation(n)
            first, second = np.sort(order[:n // 2]), np.sort(order[n // 2:])
        self.folds = ((first, second), (second, first))
        self._gammas = {}

    def gamma(self):
        r""":math:`\Gamma` of all the selection rows."""
        if "all" not in self._gammas:
            self._gammas["all"] = supervised_gamma(self.y, target=self.target)[0]
        return self._gammas["all"]

    def half_gamma(self, fold, part):
        """:math:`\\Gamma` of one half of ``fold`` (0 or 1): ``part`` 0 the rows
        fitted on, 1 the held-out rows. Each half's is computed once: every round
        reuses them, and one fold's held-out rows are the other's fitted rows."""
        half = (fold + part) % 2
        if half not in self._gammas:
            rows = self.folds[fold][part]
            self._gammas[half] = supervised_gamma(self.y[rows], target=self.target)[0]
        return self._gammas[half]


def fold_precision(X, W0, kernel):
    """A half's rows in the precision of its fit: dense rows in float32 where they
    are at least :data:`FOLD_FLOAT32_MIN_ROWS` and the estimated error of float32
    passes' objective at W0 (:func:`ikdr.passes.problem.float32_estimate`; the
    passes sum in float64) is at most :data:`FOLD_FLOAT32_ERROR`, else as they
    are."""
    if sp.issparse(X) or X.shape[0] < FOLD_FLOAT32_MIN_ROWS:
        return X
    estimate = float32_estimate(X, W0, kernel)
    return X.astype(np.float32) if estimate is not None and estimate <= FOLD_FLOAT32_ERROR \
        else X


@dataclass
class Selection:
    """The outcome of :func:`select_support`.

    Attributes
    ----------
    support : ndarray of int
        The features the projection uses, increasing.
    losses : ndarray (d,)
        Summed held-out losses :math:`\\ell_j` (module docstring) of the last
        round's fits, 0 outside their features.
    tried : ndarray of int
        Every feature a round fitted.
    rounds : list of dict
        Per round: ``features`` fitted, ``kept``, ``heldout_objective``.
    fits : tuple
        The last round's fitted features and the W of each half's fit (rows of
        those features), which the importances measure on the other half.
    """

    support: np.ndarray
    losses: np.ndarray
    tried: np.ndarray
    rounds: list = field(default_factory=list)
    fits: tuple = ()


def heldout_losses(rows, features, W, kernel, fold_fit):
    """Held-out losses of ``features`` (module docstring), one row per half, the
    summed held-out objective and ``(features, each half's W)``. Each half's W is
    ``fold_fit(X_train, Gamma_train, kernel, W0)`` started from ``W`` (the fit on
    every row, rows of ``features``; zero rows for features it did not use) and run
    to a maximum of that half alone."""
    X = take_columns(rows.X, features)     # X itself when features are all its columns
    # fewer features than directions: the leading directions (W's columns come
    # in the order of their eigenvalues)
    W = W[:, :min(W.shape[1], features.size)]
    losses = np.zeros((len(rows.folds), features.size))
    objective, fits = 0.0, []
    for fold, (train, test) in enumerate(rows.folds):
        W_half = fold_fit(X[train], rows.half_gamma(fold, 0), kernel, W)
        fits.append(W_half)
        passes = resolve(X[test])          # in memory, dense or sparse
        held = passes.check_data(X[test])
        PW, f = passes.problem(held, rows.half_gamma(fold, 1), kernel, None).phi_product(W_half,
                                                                                   W_half)
        shares = 2.0 * W_half * PW
        # a direction whose held-out value is negative carries no dependence (the
        # floor on q can force one): the features are judged on the others
        losses[fold] = shares[:, shares.sum(axis=0) > 0].sum(axis=1)
        objective += f
    return losses, objective, (features, fits)


def select_support(rows: HeldOutRows, start: np.ndarray, order: np.ndarray, fit: Callable,
                   fold_fit: Callable, minimum: int, evidence: bool = True):
    """The features whose held-out loss is positive (module docstring).

    ``start``: the features the first fit uses (``evidence=False``: without the
    screen's evidence, as every feature where it kept none; the first fit's
    leading loadings then propose, see below); ``order``: every feature, the
    candidates' order; ``fit(features, W0, loose)`` -> (W on those features,
    fitted kernel, eigenvalues, result): the fit on every row, warm-started from
    W0 where given, stopped by the papers' loose rule where ``loose`` (a fit
    that only proposes features, not the answer);
    ``fold_fit``: see :func:`heldout_losses`; ``minimum``: the fewest features
    the support may have (q: where fewer carry held-out dependence, the next
    best by held-out loss, then by ``order``, fill it up).

    Each round tests the current features and a batch of untried candidates on
    the two halves, warm-started from the first fit on every row (zero rows for
    the features it did not use); the fit on every row is made once more, warm,
    at the end, when the features changed. Returns (:class:`Selection`, the
    result of the fit on ``support``).
    """
    d = rows.X.shape[1]
    current = filled(np.sort(start), order, minimum)
    W, kernel, eigenvalues, result = fit(current, None, not evidence)
    fitted = current
    W_all = np.zeros((d, W.shape[1]))
    W_all[current] = W
    if not evidence:
        # Without the screen's evidence the first fit ran on many features; a half
        # of the rows on as many features can lose what all the rows found (a
        # 3-way parity among 50 features, 2,000 rows). Its leading loadings
        # propose LEADING_FEATURES per direction; the others become candidates.
        loadings = (W_all * W_all) @ np.abs(eigenvalues)
        keep = max(minimum, LEADING_FEATURES * W.shape[1])
        current = np.sort(np.argsort(-loadings, kind="stable")[:min(keep, current.size)])
    tried = set(current.tolist())
    batch_size = max(4, current.size // 2)
    rounds: list = []
    losses = np.zeros(d)
    for _ in range(MAX_ROUNDS):
        batch = np.array([j for j in order if j not in tried][:batch_size], dtype=np.intp)
        tried.update(batch.tolist())
        features = np.sort(np.concatenate([current, batch]))
        halves, objective, fits = heldout_losses(rows, features, W_all[features], kernel,
                                                 fold_fit)
        loss = halves.sum(axis=0)
        losses = np.zeros(d)
        losses[features] = loss
        # hysteresis: a feature in use stays unless its loss is clearly negative, a
        # candidate enters only when clearly positive, on each half
        keep = np.where(np.isin(features, current), loss > -SUPPORT_MARGIN * abs(objective),
                        (loss > CANDIDATE_MARGIN * abs(objective)) & (halves.min(axis=0) > 0))
        new = filled(features[keep], _by_loss(losses, order, features), minimum)
        rounds.append({"features": features, "kept": new, "heldout_objective": objective,
                       "fits": fits})
        if len(rounds) > 1:
            rounds[-2].pop("fits")          # only the last round's halves are measured again
        changed = not np.array_equal(new, current)
        current = new
        if not changed:
            break
    if not evidence or not np.array_equal(current, fitted):
        # the fit on every row of the chosen features, from the first fit's
        # directions where they still span q dimensions
        W0 = W_all[current]
        ok = current.size >= W0.shape[1] and np.linalg.matrix_rank(W0) == W0.shape[1]
        result = fit(current, W0 if ok else None, False)[-1]
    return Selection(support=current, losses=losses, tried=np.array(sorted(tried), dtype=np.intp),
                     rounds=rounds, fits=rounds[-1].pop("fits")), result


def _by_loss(losses, order, features):
    """Features ranked by held-out loss (the fitted ones) then by raw score."""
    fitted = features[np.argsort(-losses[features], kind="stable")]
    rest = order[~np.isin(order, features)]
    return np.concatenate([fitted, np.asarray(rest, dtype=np.intp)])


def filled(features, ranking, minimum):
    """``features`` with the first of ``ranking`` added until there are ``minimum``."""
    features = list(features)
    for j in ranking:
        if len(features) >= minimum:
            break
        if j not in features:
            features.append(j)
    return np.sort(np.asarray(features, dtype=np.intp))


def heldout_importances(rows: HeldOutRows, support: np.ndarray, fits: tuple, kernel,
                        groups=None):
    r"""``feature_importances_``, the per-class rows and their intervals, from the
    halves' fits ``fits`` (the fitted features and each half's W on them, as
    :func:`heldout_losses` returns them) measured on the other halves
    (:mod:`ikdr.reduction.groups`).

    The projection part of each group is summed over both halves and counted for
    the features of ``support`` only: a candidate the selection did not take showed
    no held-out loss beyond the noise its entry margin allows. The marginal part fits
    nothing, so every selection row is held out for it: it is measured once on all of
    them. ``groups``: the classes (one row each, in this order), or None for a
    continuous target (one row, its own Gamma).

    Each half also gives its own estimate (its held-out losses, the marginal part of
    its rows, measured with the kernels, bins and noise level of all the selection
    rows: one pass over them for the three); the intervals are the range of the two
    and the estimate on all rows.
    Returns the fitted attributes by name: ``feature_importances_``,
    ``feature_importance_intervals_``, ``class_importances_`` and
    ``class_importance_intervals_`` (None for a continuous target). All zeros where
    no feature carries held-out dependence.
    """
    n, d = rows.X.shape
    outside = ~np.isin(np.arange(d), support)

    def target(index):
        if groups is None:
            return rows.gamma() if index is None else rows.half_gamma(*index)
        labels = rows.y if index is None else rows.y[rows.folds[index[0]][1]]
        return group_contrasts(labels, groups)[0]

    features, components = fits
    X = take_columns(rows.X, features)
    losses = []
    for fold, (_, test) in enumerate(rows.folds):
        half = np.zeros((1 if groups is None else len(groups), d))
        half[:, features] = projection_losses(X[test], components[fold], kernel,
                                              target((fold, 1)))
        half[:, outside] = 0.0
        losses.append(half)
    # the halves' marginal parts in the same pass over the bins as all the rows'
    marginal = marginal_parts(rows.X, target(None), *(
        on_rows(target((fold, 1)), test, n) for fold, (_, test) in enumerate(rows.folds)))
    estimate = combined_importances(sum(losses), marginal[0])
    each = [estimate] + [combined_importances(*half) for half in zip(losses, marginal[1:])]
    feature_values = np.stack([e[1] for e in each])
    row_values = np.stack([e[0] for e in each])
    feature_intervals = np.stack([feature_values.min(axis=0), feature_values.max(axis=0)], axis=-1)
    row_intervals = np.stack([row_values.min(axis=0), row_values.max(axis=0)], axis=-1)
    per_class = groups is not None
    return {"feature_importances_": estimate[1], "feature_importance_intervals_": feature_intervals,
            "class_importances_": estimate[0] if per_class else None,
            "class_importance_intervals_": row_intervals if per_class else None}
