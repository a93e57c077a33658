r"""The supervised fit behind :class:`ikdr.ISM`: which features it uses, the fit on
every row of them, and how much each feature carries.

:func:`select_and_fit` is the whole algorithm between the estimator's checks
and its attributes:

1. the **selection rows** (all rows, or a seeded sample of ``2 *``
   :data:`~ikdr.reduction.support.FOLD_ROWS`) split in two halves
   (:class:`~ikdr.reduction.support.HeldOutRows`);
2. the **candidates** (:func:`candidates`): the class-moment screen's features
   and every feature in the order of its scores;
3. the **fit on every row** of the starting features (:func:`_fit_features`:
   the bandwidth rule, then the solver, exact or on landmarks);
4. the **support**: ``"heldout"`` lets the halves decide
   (:func:`~ikdr.reduction.support.select_support`) and refits on every row
   where the features changed; ``"moments"`` and ``"all"`` keep the starting
   features and fit the halves once, for the importances;
5. the **importances**, measured on the held-out halves
   (:func:`~ikdr.reduction.support.heldout_importances`).

It returns a :class:`SupportFit`; the estimator only stores it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._config import fits_memory, single_threaded_blas
from .._utils.eig import gap_spectrum, top_eigenvectors
from .._utils.progress import IterationReport
from .._utils.sampling import rows_at, sample_index
from .._utils.sparse import column_counts
from .._utils.validation import check_dtype, check_positive, plain
from ..gamma import supervised_gamma
from ..kernels import (MEDIAN_SUBSAMPLE, Gaussian, Kernel, make_kernel, median_sigma,
                       separation_sigma)
from ..passes import MEMORY, Approximation, resolve, validated_rows
from ..passes.dask_data import take_columns
from ..passes.sparse_rows import is_sparse, sparse_phi0
from ..solver.driver import ISMResult, choose_n_components, solve_ism
from ..solver.options import ISMOptions
from .approximate import LandmarkOptions, approximate_ism
from .screen import (SCREEN_ROWS, moment_screen, screen_bytes, sparse_moment_screen,
                     third_moment_candidates)
from .marginal import marginal_dependence
from .support import (ALL_FEATURES, HeldOutRows, filled, heldout_importances, heldout_losses,
                      select_support)
from .targets import Target

__all__ = ["FitSettings", "PassesUsed", "SupportFit", "Candidates", "select_and_fit",
           "candidates", "check_kernel_params", "LOOSE_GTOL"]

#: relative gradient at which a fit that only proposes features stops its trust region
LOOSE_GTOL = 1e-3


def check_kernel_params(kernel, sigma, *, rules=("median",)):
    """Validate the (kernel, sigma) pair shared by the estimators. ``rules``: the
    named bandwidth rules the estimator accepts (ISM also takes "separation",
    resolved in its ``fit``; the kernel is then built with the median rule)."""
    if isinstance(sigma, str) and sigma in rules and sigma != "median":
        sigma = "median"
    if not (isinstance(sigma, str) and sigma == "median"):
        if isinstance(sigma, str):
            names = " or ".join(f'"{r}"' for r in rules)
            raise ValueError(f'sigma must be a positive float or {names}, got {plain(sigma)!r}')
        check_positive(sigma, "sigma")
    if not isinstance(kernel, (str, Kernel)):
        raise TypeError(f"kernel must be a name or an ikdr.kernels.Kernel, got {type(kernel).__name__}")
    return make_kernel(kernel, sigma=sigma)


@dataclass(frozen=True)
class FitSettings:
    """The parameters of :class:`ikdr.ISM` that the fit reads, validated by the
    estimator (their meaning is its docstring's); ``n_components`` is q or None."""

    kernel: Any = "gaussian"
    sigma: Any = "auto"
    n_components: int | None = None
    support: str = "heldout"
    tol: float = 0.01
    max_iter: int = 100
    criterion: str = "gradient"
    gtol: float = 1e-6
    certify: bool = True
    eigen_solver: str = "auto"
    acceleration: str | None = "pulay"
    random_state: Any = None
    verbose: int = 0
    dtype: Any = np.float64
    approximation: str | None = None
    n_landmarks: Any = "auto"
    polish: bool = False
    #: why ``approximation`` (resolved: None or a kind) where "auto" chose it
    approximation_reason: str | None = None


@dataclass(frozen=True)
class PassesUsed:
    """Which passes gave the fit on every row: ``n_landmarks`` (None for exact passes
    asked for, n where the "auto" rule chose them), ``approximation`` (None: exact)
    and the ``reason``."""

    n_landmarks: int | None
    approximation: str | None
    reason: str


@dataclass(frozen=True)
class RowsFit:
    """The fit on every row of some features: the solver's result and its passes."""

    result: ISMResult
    passes: PassesUsed


@dataclass(frozen=True)
class Candidates:
    """What the screen proposes: ``start`` (the features it keeps, increasing),
    ``order`` (every candidate feature, best first), ``scores`` (raw screen
    scores, None where it did not run) and ``empty`` (sparse columns without a
    stored value: never candidates)."""

    start: np.ndarray
    order: np.ndarray
    scores: np.ndarray | None
    empty: np.ndarray


@dataclass(frozen=True)
class SupportFit:
    """The outcome of :func:`select_and_fit`.

    Attributes
    ----------
    result : ISMResult
        The fit on every row of ``support`` (W has a row per support feature).
    passes : PassesUsed
        The passes that gave it.
    support : ndarray of int
        The features the projection uses, increasing.
    screen_scores : ndarray or None
        The class-moment screen's raw score of every feature.
    empty_features : ndarray of int
        Sparse columns without a stored value (empty for dense X).
    importances : dict
        ``feature_importances_``, ``feature_importance_intervals_``,
        ``class_importances_`` and ``class_importance_intervals_`` by name (the
        last two None for a continuous target).
    """

    result: ISMResult
    passes: PassesUsed
    support: np.ndarray
    screen_scores: np.ndarray | None
    empty_features: np.ndarray
    importances: dict


@dataclass(frozen=True)
class _Rows:
    """Every row of the fit (X where it lives, its ``location``), its target and
    the settings; ``q`` (None: by the eigengap) and ``minimum`` (q's floor)."""

    X: Any
    target: Target
    location: str
    settings: FitSettings
    q: int | None
    minimum: int


def select_and_fit(X, target: Target, location: str, settings: FitSettings) -> SupportFit:
    """The support, the fit on every row of it and the held-out importances
    (module docstring) of X (validated, where it lives: ``location``) for the
    resolved ``target``."""
    d = X.shape[1]
    classes = target.classes
    # q: the largest eigengap of Phi_0, at least (classes - 1) and at least 2 (one
    # direction cannot hold a ring or an XOR)
    minimum = min(d, max(2, classes.shape[0] - 1 if classes is not None else 1))
    heldout = HeldOutRows.sampled(X, target.y, target.kind, settings.random_state)
    found = candidates(X, target.y, heldout, settings)
    start, q = found.start, settings.n_components
    evidence = start.size > 0
    if not evidence:
        # no class moment differs (a parity): Phi_0 holds no signal, and its
        # eigengap no q; the fewest directions, all features up to ALL_FEATURES
        start, q = found.order[:min(d, ALL_FEATURES)], q or minimum
    rows = _Rows(X, target, location, settings, q, minimum)
    features = filled(np.sort(start), found.order, q or minimum)
    heldout_rule = settings.support == "heldout"
    fitted = _fit_features(rows, features, None, loose=heldout_rule and not evidence)
    if heldout_rule:
        selection = select_support(heldout, features, fitted.result, found.order, q or minimum,
                                   evidence)
        support, halves = selection.support, selection.halves
        if selection.refit:
            fitted = _fit_features(rows, support, selection.warm_start)
    else:
        support = features
        halves = heldout_losses(heldout, support, fitted.result.components,
                                fitted.result.kernel).halves
    return SupportFit(result=fitted.result, passes=fitted.passes, support=support,
                      screen_scores=found.scores, empty_features=found.empty,
                      importances=heldout_importances(heldout, support, halves,
                                                      fitted.result.kernel, classes))


def candidates(X, y, heldout: HeldOutRows, settings: FitSettings) -> Candidates:
    """The screen's features and the candidates' order. ``support="all"``: every
    feature, in order. Where the screen's per-class d x d moments would exceed
    the memory budget it does not run: no feature has its evidence, and the
    candidates come in the order of their marginal held-out dependence. Sparse
    X: the screen without d x d moments
    (:func:`ikdr.reduction.screen.sparse_moment_screen`, covariances among the
    most frequent features), or the marginal order; columns without a stored
    value are never candidates."""
    d = X.shape[1]
    none = np.empty(0, dtype=np.intp)
    if is_sparse(X):
        empty = column_counts(X) == 0
        if settings.support == "all":
            order = np.argsort(-marginal_dependence(heldout.X, heldout.gamma()), kind="stable")
            return Candidates(np.flatnonzero(~empty), order[~empty[order]], None,
                              np.flatnonzero(empty))
        kept, scores = sparse_moment_screen(*_screen_rows(X, y, settings))
        order = np.argsort(-scores, kind="stable")
        return Candidates(np.flatnonzero((kept > 0) & ~empty), order[~empty[order]], scores,
                          np.flatnonzero(empty))
    if settings.support == "all":
        return Candidates(np.arange(d), np.arange(d), None, none)
    if fits_memory(screen_bytes(d, y)):
        # the screen only proposes (the held-out halves decide): its moments on a
        # seeded sample of rows, so that its cost does not grow with n
        kept, scores = moment_screen(*_screen_rows(X, y, settings))
        order = np.argsort(-scores, kind="stable")
        if not np.any(kept > 0):
            kept, scores, order = third_moment_candidates(heldout.X, heldout.y, order, scores,
                                                          settings.random_state)
        return Candidates(np.flatnonzero(kept > 0), order, scores, none)
    marginal = marginal_dependence(heldout.X, heldout.gamma())
    return Candidates(none, np.argsort(-marginal, kind="stable"), None, none)


def _screen_rows(X, y, settings):
    """The screen's rows: a seeded sample of at most SCREEN_ROWS, with their targets."""
    index = sample_index(X.shape[0], SCREEN_ROWS, settings.random_state)
    return (X if index is None else rows_at(X, index)), (y if index is None else y[index])


def _fit_features(rows: _Rows, features, W0, loose=False) -> RowsFit:
    """The fit on every row of the columns ``features``: the bandwidth rule, then
    the solver (``loose``: the papers' rule, no certificate), warm-started from
    ``W0`` where it has q columns."""
    X = take_columns(rows.X, features)
    y, settings = rows.target.y, rows.settings
    # the bandwidths are fitted on a seeded sample of rows unless X is in memory
    index = None if rows.location == MEMORY else sample_index(X.shape[0], MEDIAN_SUBSAMPLE,
                                                              settings.random_state)
    kernel, q = _kernel_and_q(X if index is None else rows_at(X, index),
                              y if index is None else y[index], rows, features.size)
    if W0 is not None and q is not None and W0.shape[1] != q:
        W0 = None
    return _solve(X, rows, kernel, q, min(rows.minimum, features.size), W0, loose)


def _kernel_and_q(sample, labels, rows, n_features):
    """(kernel fitted on ``sample``, q or None): the bandwidth rule of ``sigma`` on
    these rows ("auto" also fixes q, by the eigengap of :math:`\\Phi_0`, where it
    is None)."""
    settings, q = rows.settings, rows.q
    kernel = check_kernel_params(settings.kernel, settings.sigma,
                                 rules=("auto", "median", "separation"))
    by_name = isinstance(settings.kernel, str)
    if settings.sigma == "separation" and by_name:
        if rows.target.kind != "labels":
            raise ValueError('sigma="separation" needs class labels; y is continuous')
        kernel = make_kernel(settings.kernel, sigma=separation_sigma(
            sample, labels, random_state=settings.random_state))
    elif settings.sigma == "auto" and by_name and kernel.bandwidth_rule is not None:
        kernel, q = _auto_kernel(sample if is_sparse(sample) else
                                 np.asarray(sample, dtype=np.float64), labels, rows,
                                 min(rows.minimum, n_features))
    return kernel.fit(sample, random_state=settings.random_state), q


def _auto_kernel(sample, labels, rows, minimum):
    r"""sigma="auto": the Gaussian at the median distance of the projected start
    :math:`X W_0`, :math:`W_0` the top-q eigenvectors of :math:`\Phi_0`, which do
    not depend on sigma (for the Gaussian, :math:`\Phi_0 = -\sigma^{-2} X^T
    L(\Gamma) X`). Both are taken on the rows the bandwidth rules sample (all
    of them up to 3,000), in memory: the same numbers wherever the rows live.
    Returns (kernel, q)."""
    q = rows.q
    gamma = supervised_gamma(labels, target=rows.target.kind)[0]
    if is_sparse(sample):
        # no d x d moments: Phi_0 by products, of low rank (ikdr.passes.sparse_rows)
        phi0 = sparse_phi0(Gaussian(1.0), sample, gamma)
        if q is None:
            q = choose_n_components(gap_spectrum(phi0, minimum), minimum=minimum)
        projected = np.asarray(sample @ top_eigenvectors(phi0, q, method="lapack")[1])
    else:
        phi0 = Gaussian(1.0).phi0(sample, gamma)
        # d x d algebra on one BLAS thread: OpenBLAS's threaded eigensolver collapses
        # on busy cores (256 x 256 took most of a Nystrom fit at 20,000 rows)
        with single_threaded_blas():
            vals, vecs = np.linalg.eigh(phi0)
        if q is None:
            q = choose_n_components(vals, minimum=minimum)
        W0 = vecs[:, ::-1][:, :q]
        # einsum, not BLAS: a BLAS product's last bits can depend on the array's
        # alignment, and a gathered sample is a new array
        projected = np.einsum("ij,jk->ik", sample, W0)
    try:
        sigma = median_sigma(projected, random_state=rows.settings.random_state)
    except ValueError:
        raise ValueError('sigma="auto": every training row has the same projection X @ W0 '
                         "(constant or duplicate features); pass sigma as a number") from None
    return Gaussian(sigma), q


def _approx_dtype(X, dtype):
    """Precision of the landmark passes: float32 when X or ``dtype`` asks for it."""
    if X.dtype == np.float32 or np.dtype(check_dtype(dtype)) == np.float32:
        return np.float32
    return np.float64


def _solve(X, rows, kernel, q, minimum, W0, loose):
    """The solver on every row of X (some of the fit's columns); ``loose``: stopped
    by the papers' rule at tol 0.01 (a trust region, where the plain steps
    descend, at a relative gradient of 1e-3), not certified."""
    settings, gamma = rows.settings, rows.target.gamma
    approx = settings.approximation
    with IterationReport("ISM", settings.verbose, total=int(settings.max_iter) + 1) as report:
        # q=None: the solver picks q by the eigengap of Phi_0 (at least classes - 1)
        options = ISMOptions(n_components=q, min_components=minimum, tol=settings.tol,
                             max_iter=settings.max_iter, criterion=settings.criterion,
                             certify=settings.certify, gtol=settings.gtol,
                             eigen_solver=settings.eigen_solver,
                             acceleration=settings.acceleration,
                             random_state=settings.random_state,
                             callback=report.ism_step if report.active else None)
        if loose:
            options = replace(options, criterion="eigenvalues", tol=0.01, certify=False,
                              gtol=LOOSE_GTOL)
        if approx is None:
            work = X.astype(check_dtype(settings.dtype), copy=False)
            result = solve_ism(resolve(work), work, gamma, kernel, options, W0=W0)
            return RowsFit(result, PassesUsed(None, None, settings.approximation_reason or
                                              "approximation=None: exact passes"))
        # the landmark fits certify only their gradient; ``certify`` and ``gtol``
        # apply to the exact polish (approximate_ism)
        approximation = Approximation(approx, settings.n_landmarks,
                                      random_state=settings.random_state,
                                      dtype=_approx_dtype(X, settings.dtype))
        # X passed fit's entry check (a column subset of it, or X itself): the
        # "auto" rule's fits do not read it again to validate it
        with validated_rows(X):
            result, info = approximate_ism(X, gamma, kernel, options,
                                           LandmarkOptions(approximation,
                                                           polish=bool(settings.polish)),
                                           W0=W0)
        reason = info["choice"] if settings.approximation_reason is None else \
            f"{settings.approximation_reason}; {info['choice']}"
        report.line(f"[ISM] passes: {reason}")
    return RowsFit(result, PassesUsed(info["n_landmarks"], info["approximation"], reason))
