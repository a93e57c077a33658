r"""ISM on landmarks or random features: the "auto" landmark count and the exact polish.

:func:`approximate_ism` runs the one driver (:func:`ikdr.solver.driver.solve_ism`)
on the landmark provider (:class:`ikdr.passes.landmarks.Approximation`), lets
the "auto" rule (:func:`ikdr.passes.landmarks.auto_landmarks`) double the
landmarks, warm-starting each fit from the last, and optionally polishes the
answer with exact passes.
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels import make_kernel
from ..passes.exact import ExactPasses
from ..passes.factors import DEFAULT_LANDMARK_METHOD, check_kernel_approximable
from ..passes.landmarks import (AUTO_MAX, AUTO_START, AUTO_TOL, RFF_DEFAULT, Approximation,
                                auto_landmarks, blas_threads, check_n_landmarks)
from .cost import LandmarkBudget
from .driver import solve_ism

__all__ = ["approximate_ism", "APPROX_GTOL", "APPROX_WARN_GTOL"]

#: relative gradient at which the trust region stops on an approximate problem
APPROX_GTOL = 1e-4
#: an approximate fit that stalls above this relative gradient has not found a maximum
APPROX_WARN_GTOL = 1e-2


def _fit_at(X, gamma, kernel, q, m, kind, W0, ism_kwargs, method, dtype, random_state,
            block_rows):
    approx = Approximation(kind, m, method=method, dtype=dtype, random_state=random_state,
                           block_rows=block_rows)
    # The solver's d x d algebra (eigh, trust region) on one BLAS thread: OpenBLAS's
    # threaded dsyevr collapses on busy cores (784 x 784: 7.9 s against about
    # 0.3 s); the passes raise it again for their large block products.
    with blas_threads(False):
        result = solve_ism(approx, X, gamma, kernel, q, W0=W0, warn=False, **ism_kwargs)
    return result, approx


def approximate_ism(X, gamma, kernel, q, *, approximation="nystrom", n_landmarks="auto",
                    method=DEFAULT_LANDMARK_METHOD, polish=False, W0=None, dtype=None,
                    random_state=None, block_rows=None, auto_tol=AUTO_TOL, auto_max=AUTO_MAX,
                    polish_kwargs=None, exact_passes=ExactPasses, weigh_cost=True,
                    **ism_kwargs):
    r"""ISM on a landmark (or random-feature) approximation, with the "auto" rule
    and the optional exact polish.

    ``n_landmarks="auto"`` starts at :data:`AUTO_START` landmarks (Nystrom) or
    :data:`RFF_DEFAULT` features (rff) and doubles m, warm-starting each fit
    from the last, until the sine of the largest principal angle between two
    successive fits is below ``auto_tol``; it stops at ``min(n, auto_max)``
    and then warns (``ConvergenceWarning``) with its last estimate. m = n
    (every sample a landmark) is the exact kernel: that fit runs the exact
    passes (:func:`ikdr.ism` with the caller's options) rather than the
    landmark form, whose pseudo-inverse of the n x n kernel matrix would only
    add its rounding, and needs no warning.

    For Nystrom, "auto" also weighs the cost (:mod:`ikdr.solver.cost`;
    ``weigh_cost=False`` grows the landmarks without it): it runs
    the exact passes from the start when an exact fit costs no more than the
    shortest landmark sequence, and stops doubling, finishing with exact passes
    warm-started from the last landmark fit, where the next landmark fit would
    cost more than an exact one. ``info["choice"]`` says which and why.

    ``polish=True`` continues from the approximate fixed point with exact
    passes (:func:`ikdr.ism` without approximation, ``polish_kwargs`` its
    stopping rule): the exact answer in fewer exact passes than a cold start.
    ``exact_passes(dtype)`` makes the exact provider of those fits (in memory
    by default; the caller's :func:`ikdr.passes.resolve` for rows elsewhere).

    Returns
    -------
    result : ISMResult (of the polish when ``polish``)
    info : dict with ``n_landmarks`` (m used; n when the exact passes gave the
        result), ``approximation`` (the kind used, None for exact passes),
        ``choice`` (why), ``auto`` (list of (m, sin change)),
        ``approximate_result`` (the approximate fit), ``index`` (landmark rows).
    """
    n = X.shape[0]
    kernel = make_kernel(kernel)
    check_kernel_approximable(kernel, approximation)
    # The polish is an exact fit: it takes the caller's options as given, not
    # the approximate fit's defaults below (their looser gtol would stop it
    # short of the exact maximum).
    exact_kwargs = dict(ism_kwargs)
    # phi_solver="auto" weighs the landmark passes' own costs
    # (LandmarkProblem.step_costs): a dense Phi pass costs O(n d m + n d^2), a
    # block iteration O(n d (q + k) + n m k), so the matrix-free eigensolver pays
    # only at large d (benchmarks/results/landmark_pass.md, "where matrix-free pays").
    ism_kwargs.setdefault("phi_solver", "auto")
    # The approximate fit's certificate would certify the approximate objective,
    # at tens of passes for its Hessian estimate: first order only (the polish,
    # when asked, certifies the exact answer).
    ism_kwargs.setdefault("certify", False)
    # Phi of the approximate problem is the landmark form of the exact Phi, not
    # the exact gradient of the approximate objective (the landmark points move
    # with W): the trust region's gradient tolerance can stall by design there.
    # The approximation's error is reported by the auto rule instead.
    warn = ism_kwargs.pop("warn", True)
    # For the same reason the safeguard (trust region, needed only where a plain
    # step lowers the approximate objective) stops at a relative gradient of
    # APPROX_GTOL: below it the landmark error dominates.
    ism_kwargs.setdefault("gtol", APPROX_GTOL)
    m = check_n_landmarks(n_landmarks, n if approximation == "nystrom" else None)

    def fit(m, start):
        """(result, landmark rows) of the fit with m landmarks or features."""
        if approximation == "nystrom" and m == n:
            # every sample a landmark, or the cost model's choice: an exact fit
            # with the caller's exact options, the polish's stopping rule included
            options = {**exact_kwargs, **(polish_kwargs or {}), "warn": warn}
            return solve_ism(exact_passes(dtype), X, gamma, kernel, q, W0=start,
                             **options), np.arange(n)
        result, approx = _fit_at(X, gamma, kernel, q, m, approximation, start, ism_kwargs,
                                 method, dtype, random_state, block_rows)
        return result, approx.index

    if m != "auto":
        result, index = fit(m, W0)
        trail, choice = [], f"{approximation}: n_landmarks={m} as given"
    elif approximation == "nystrom":
        # the class form of a supervised Gamma is a factor of ones (its passes need
        # one n d m product); the budget's guess, without the structure's n-row scan
        _, scale, _ = gamma.arrays(np.float64)
        classes = scale is None or bool(np.all(np.asarray(scale) == 1.0))
        budget = LandmarkBudget(n, X.shape[1], q, gamma.rank, classes) if weigh_cost else None
        result, index, m, trail, choice = _auto_nystrom(fit, n, budget, auto_tol, auto_max, W0)
    else:
        fits = {}

        def basis(m):
            # each fit warm-starts from the last one (the rule fits m in increasing order)
            start = fits[max(fits)][0].components if fits else W0
            fits[m] = fit(m, start)
            return fits[m][0].components

        _, m, trail, _ = auto_landmarks(basis, None, start=RFF_DEFAULT, cap=auto_max,
                                        tol=auto_tol, unit="features", subject="fitted subspace")
        result, index = fits[m]
        choice = f"rff: {m} random features by the 'auto' rule"
    # m = n landmarks are the exact kernel: those fits ran the exact passes
    exact = approximation == "nystrom" and m == n
    info = {"n_landmarks": m, "auto": trail, "approximate_result": result, "index": index,
            "approximation": None if exact else approximation, "choice": choice}
    if warn and not polish and not exact:
        _warn_if_unconverged(result.convergence, approximation, m)
    if polish and not exact:
        kw = dict(exact_kwargs, warn=warn)
        kw.update(polish_kwargs or {})
        # an array or memmap as one ndarray; rows on a cluster stay there
        rows = np.asarray(X, dtype=X.dtype) if isinstance(X, np.ndarray) else X
        result = solve_ism(exact_passes(None), rows, gamma, kernel, q, W0=result.components,
                           **kw)
    return result, info


def _auto_nystrom(fit, n, budget, tol, cap, W0):
    """The "auto" rule for Nystrom under the cost model (:class:`LandmarkBudget`):
    the exact passes from the start when they cost no more than the shortest
    landmark sequence; else landmarks doubling while the next fit costs less
    than an exact one, and the exact passes (warm-started from the last
    landmark fit) where it would not. Returns (result, index, m, trail, reason);
    m = n when the exact passes gave the result. ``budget`` None: no cost model."""
    first = min(n, AUTO_START)
    use_landmarks, reason = (True, "no cost model") if budget is None else budget.start(first)
    if not use_landmarks:
        result, index = fit(n, W0)
        return result, index, n, [], reason
    fits = {}
    why = []

    def basis(m):
        # each fit warm-starts from the last one (the rule fits m in increasing order)
        start = fits[max(fits)][0].components if fits else W0
        fits[m] = fit(m, start)
        return fits[m][0].components

    def affordable(m_next):
        last = fits[max(fits)][0]
        grow, because = budget.grow(m_next, last.convergence.passes)
        why.append(because)
        return grow

    _, m, trail, stopped = auto_landmarks(basis, n, start=first, cap=cap, tol=tol,
                                          subject="fitted subspace",
                                          affordable=None if budget is None else affordable)
    if stopped:
        result, index = fit(n, fits[m][0].components)
        return result, index, n, trail, why[-1]
    result, index = fits[m]
    if m == n:
        return result, index, n, trail, f"exact passes: the 'auto' rule reached m = n = {n}"
    moved = f"; the last doubling moved the fitted subspace by {trail[-1][1]:.2g}" \
        if len(trail) > 1 else ""
    return result, index, m, trail, f"nystrom: {m} landmarks by the 'auto' rule ({reason}{moved})"


def _warn_if_unconverged(convergence, approximation, m):
    """ConvergenceWarning for a returned approximate fit that found no maximum: it
    ran out of iterations, or its trust region stalled or stopped gaining while
    the relative gradient (of the landmark problem) was still above
    :data:`APPROX_WARN_GTOL`. Stops below that are the approximation's floor, by
    design."""
    rule, rel = convergence.stopping_rule, convergence.relative_gradient_norm
    # a trust region that stalled, or whose steps stopped gaining (the problem's
    # objective floor), far from a stationary point found no maximum either
    if rule == "max_iter" or (rule in ("stalled", "objective") and rel > APPROX_WARN_GTOL):
        what = "landmarks" if approximation == "nystrom" else "random features"
        remedy = f"use more {what}" + (", approximation='nystrom'" if approximation == "rff" else "")
        warnings.warn(f"the {approximation} fit with {m} {what} found no maximum "
                      f"(stopping rule {rule!r}, relative gradient norm {rel:.3g}): the "
                      f"approximation is too coarse for this kernel; {remedy}, or polish=True "
                      "for the exact answer", ConvergenceWarning, stacklevel=3)
