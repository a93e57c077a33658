r"""ISM on landmarks or random features: the "auto" landmark count and the exact polish.

:func:`approximate_ism` runs the one driver (:func:`ikdr.solver.driver.solve_ism`)
on landmark providers (:func:`ikdr.passes.resolve` of an
:class:`~ikdr.passes.landmarks.Approximation`), lets the "auto" rule
(:func:`ikdr.passes.landmarks.auto_landmarks`) double the landmarks,
warm-starting each fit from the last, weighs exact passes against landmark
passes (:mod:`ikdr.reduction.cost`) and optionally polishes the answer with
exact passes. It is an algorithm over several providers, so it sits above
the solver, which receives one provider per fit.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._config import single_threaded_blas
from ..kernels import make_kernel
from ..passes import (AUTO_MAX, AUTO_START, AUTO_TOL, RFF_DEFAULT, Approximation, auto_landmarks,
                      check_kernel_approximable, resolve)
from ..solver.driver import ISMResult, choose_n_components, solve_ism
from ..solver.options import ISMOptions
from .cost import LandmarkBudget

__all__ = ["approximate_ism", "LandmarkOptions", "APPROX_GTOL", "APPROX_WARN_GTOL"]

#: relative gradient at which the trust region stops on an approximate problem
APPROX_GTOL = 1e-4
#: an approximate fit that stalls above this relative gradient has not found a maximum
APPROX_WARN_GTOL = 1e-2


def _auto_landmarks():
    return Approximation("nystrom", "auto")


@dataclass(frozen=True)
class LandmarkOptions:
    """How :func:`approximate_ism` approximates: the landmark settings, the
    polish and the "auto" rule's.

    Parameters
    ----------
    approximation : Approximation, default=Approximation("nystrom", "auto")
        Kind, m (``n_landmarks``: an int, or "auto"), landmark method, precision,
        seed and row blocks of the landmark passes; each fit derives its own
        from it with :func:`dataclasses.replace`.
    polish : bool, default=False
        Continue from the approximate fixed point with exact passes.
    auto_tol, auto_max : float, int
        The "auto" rule's tolerance (sine of the largest principal angle
        between successive fits) and budget of landmarks.
    weigh_cost : bool, default=True
        For Nystrom, let the cost model (:mod:`ikdr.reduction.cost`) choose
        exact passes where they are cheaper.
    """

    approximation: Approximation = field(default_factory=_auto_landmarks)
    polish: bool = False
    auto_tol: float = AUTO_TOL
    auto_max: int = AUTO_MAX
    weigh_cost: bool = True


def approximate_ism(X, gamma, kernel, options: ISMOptions,
                    landmarks: LandmarkOptions | None = None, *, W0=None) -> tuple[ISMResult, dict]:
    r"""ISM on a landmark (or random-feature) approximation, with the "auto" rule
    and the optional exact polish.

    ``options`` are those of the exact fits (the polish, and every fit whose
    landmarks are all the samples); the landmark fits derive theirs from them
    (:func:`dataclasses.replace`): they certify their gradient only (a Hessian
    estimate of the approximate objective would cost tens of passes and
    certify the wrong problem), stop their trust region at the relative
    gradient :data:`APPROX_GTOL` (below it the landmark error dominates: Phi of
    the approximate problem is the landmark form of the exact Phi, not the
    exact gradient of the approximate objective, so the gradient rule can
    stall there by design) and do not warn (the "auto" rule reports the
    approximation's error instead). ``options.n_components=None``: q by the
    largest eigengap of :math:`\Phi_0`, which one landmark gives exactly (every
    kernel matrix is constant at W = 0), at least ``options.min_components``.

    ``n_landmarks="auto"`` starts at :data:`~ikdr.passes.landmarks.AUTO_START`
    landmarks (Nystrom) or :data:`~ikdr.passes.landmarks.RFF_DEFAULT` features
    (rff) and doubles m, warm-starting each fit from the last, until the sine
    of the largest principal angle between two successive fits is below
    ``auto_tol``; it stops at ``min(n, auto_max)`` and then warns
    (``ConvergenceWarning``) with its last estimate. m = n (every sample a
    landmark) is the exact kernel: that fit runs the exact passes rather than
    the landmark form, whose pseudo-inverse of the n x n kernel matrix would
    only add its rounding, and needs no warning.

    For Nystrom, "auto" also weighs the cost (:mod:`ikdr.reduction.cost`;
    ``weigh_cost=False`` grows the landmarks without it): it runs the exact
    passes from the start when an exact fit costs no more than the shortest
    landmark sequence, and stops doubling, finishing with exact passes
    warm-started from the last landmark fit, where the next landmark fit would
    cost more than an exact one. ``info["choice"]`` says which and why.

    ``polish=True`` continues from the approximate fixed point with exact
    passes: the exact answer in fewer exact passes than a cold start. Every
    provider, landmark or exact, comes from :func:`ikdr.passes.resolve`, so
    rows on a Dask cluster stay there.

    Returns
    -------
    result : ISMResult (of the polish when ``polish``)
    info : dict with ``n_landmarks`` (m used; n when the exact passes gave the
        result), ``approximation`` (the kind used, None for exact passes),
        ``choice`` (why), ``auto`` (list of (m, sin change)),
        ``approximate_result`` (the approximate fit), ``index`` (landmark rows).
    """
    landmarks = LandmarkOptions() if landmarks is None else landmarks
    settings = landmarks.approximation
    n, kind, m = X.shape[0], settings.kind, settings.n_landmarks
    kernel = make_kernel(kernel)
    check_kernel_approximable(kernel, kind)
    if isinstance(m, int) and kind == "nystrom" and m > n:
        raise ValueError(f"n_landmarks={m} is larger than the number of samples n={n}")
    if options.n_components is None:
        options = replace(options, n_components=_components(X, gamma, kernel, options, settings))
    approximate = replace(options, certify=False, gtol=APPROX_GTOL, warn=False)

    def fit(m, start):
        """(result, landmark rows) of the fit with m landmarks or features."""
        if kind == "nystrom" and m == n:
            # every sample a landmark, or the cost model's choice: an exact fit
            # with the exact options
            return solve_ism(resolve(X, dtype=settings.dtype), X, gamma, kernel, options,
                             W0=start), np.arange(n)
        provider = resolve(X, replace(settings, n_landmarks=m))
        # The solver's d x d algebra (eigh, trust region) on one BLAS thread: OpenBLAS's
        # threaded dsyevr collapses on busy cores, its threads waiting for cores the
        # passes hold; the passes raise it again for their large block products.
        with single_threaded_blas():
            result = solve_ism(provider, X, gamma, kernel, approximate, W0=start)
        return result, provider.index

    if m != "auto":
        result, index = fit(m, W0)
        trail, choice = [], f"{kind}: n_landmarks={m} as given"
    elif kind == "nystrom":
        budget = _budget(X, gamma, options.n_components) if landmarks.weigh_cost else None
        result, index, m, trail, choice = _auto_nystrom(fit, n, budget, landmarks.auto_tol,
                                                        landmarks.auto_max, W0)
    else:
        fits: dict[int, tuple] = {}

        def basis(m):
            # each fit warm-starts from the last one (the rule fits m in increasing order)
            start = fits[max(fits)][0].components if fits else W0
            fits[m] = fit(m, start)
            return fits[m][0].components

        _, m, trail, _ = auto_landmarks(basis, None, start=RFF_DEFAULT, cap=landmarks.auto_max,
                                        tol=landmarks.auto_tol, unit="features",
                                        subject="fitted subspace")
        result, index = fits[m]
        choice = f"rff: {m} random features by the 'auto' rule"
    # m = n landmarks are the exact kernel: those fits ran the exact passes
    exact = kind == "nystrom" and m == n
    info = {"n_landmarks": m, "auto": trail, "approximate_result": result, "index": index,
            "approximation": None if exact else kind, "choice": choice}
    if options.warn and not landmarks.polish and not exact:
        _warn_if_unconverged(result.convergence, kind, m)
    if landmarks.polish and not exact:
        # an array or memmap as one ndarray; rows on a cluster stay there
        rows = np.asarray(X, dtype=X.dtype) if isinstance(X, np.ndarray) else X
        result = solve_ism(resolve(rows), rows, gamma, kernel, options, W0=result.components)
    return result, info


def _components(X, gamma, kernel, options, settings):
    """q by the largest eigengap of Phi_0 of the landmark problem (one landmark
    reproduces Phi_0 exactly), at least ``options.min_components``: the landmark
    fits grow m from a fixed q."""
    provider = resolve(X, replace(settings, n_landmarks=1))
    if not kernel.is_resolved:
        kernel = provider.fit_kernel(kernel, X, random_state=options.random_state)
    phi0 = provider.problem(X, gamma, kernel, options.n_threads).phi0()
    return choose_n_components(np.linalg.eigvalsh(phi0), minimum=options.min_components)


def _budget(X, gamma, q):
    """The cost model of the Nystrom "auto" rule for this problem."""
    # the class form of a supervised Gamma is a factor of ones (its passes need
    # one n d m product); the budget's guess, without the structure's n-row scan
    _, scale, _ = gamma.arrays(np.float64)
    classes = scale is None or bool(np.all(np.asarray(scale) == 1.0))
    return LandmarkBudget(X.shape[0], X.shape[1], q, gamma.rank, classes)


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
