r"""The one ISM solver shared by every paradigm.

:func:`ism` maximises :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})` over
orthonormal W. f depends on W only through :math:`WW^T`, so the problem lives
on the Grassmann manifold of q-dimensional subspaces of :math:`R^d`.

Geometry used throughout (embedded metric :math:`\langle Z, Y\rangle = \mathrm{Tr}(Z^TY)`,
tangent vectors :math:`Z` with :math:`W^TZ = 0`):

* Euclidean gradient :math:`\nabla f = 2\Phi(W)W` (exact, DESIGN.md section 2).
* Riemannian gradient :math:`g(W) = 2(I - WW^T)\Phi(W)W`.
* Riemannian Hessian :math:`\mathrm{Hess} f(W)[Z] = (I - WW^T)\,D\nabla f(W)[Z] - Z\,W^T\nabla f(W)`
  with :math:`D\nabla f(W)[Z] = 2\Phi(W)Z + 2\,D\Phi(W)[Z]\,W`. The kernel-curvature
  term :math:`D\Phi[Z]W` (the dissertation's :math:`\mathcal{T}_1`, Eq. C.67) is
  taken by a finite difference of :math:`\nabla f` along Z (one thin pass per
  product, relative accuracy about 1e-7); the rest is exact.
* The *surrogate* part :math:`A[Z] = 2(I - WW^T)(\Phi Z - Z\,W^T\Phi W)` is the
  Hessian of :math:`\mathrm{Tr}(V^T\Phi(W)V)` that the plain fixed point
  maximises. In the bases that diagonalise :math:`W^T\Phi W` (values
  :math:`\nu_j`) and :math:`W_\perp^T\Phi W_\perp` (values :math:`\mu_i`) it is
  the diagonal :math:`2(\mu_i - \nu_j)`; it is negative definite exactly when
  the eigengap of dissertation Eq. C.73 is positive. Its absolute value
  preconditions the trust-region solver, which makes the first (Cauchy) step of
  the trust region the linearised plain ISM step.

Three rooms:

* this module, the driver: validation, the start (:math:`\Phi_0`, q by its
  eigengap), one plain step shared by the dense and the matrix-free paths, the
  stopping rules, the history and the pass accounting;
* :mod:`ikdr.solver.trust_region`, the Riemannian trust-region Newton phase;
* :mod:`ikdr.solver.certificate`, the certificate (gradient, eigengap, largest
  Hessian eigenvalue).

All three see the problem only through the interface of
:mod:`ikdr.passes.problem` (objective, dense :math:`\Phi` or thin products
:math:`\Phi V`, Hessian products, pass counters), so an approximate problem
runs through :func:`solve` unchanged.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .certificate import ISMConvergence
from .certificate import certify as certify_point
from .._config import single_threaded_blas
from .._utils.subspace import principal_angle
from .._utils.eig import fix_signs, top_eigenvectors
from .mixing import ACCELERATIONS
from .trust_region import TrustRegion, escape_saddle
from .steps import (COARSE_STOP_TOL, MF_TOL, PlainStep, Point, SLOW_CONTRACTION, check_orthonormal_start, dense64, pass_costs, phi_mode)
from .._utils.validation import check_vector
from ..gamma import Gamma
from ..kernels import Kernel, make_kernel
from .._utils.typing import ArrayLike, RandomStateLike
from ..kernels import KernelLike

__all__ = ["solve_ism", "solve", "ISMResult", "ISMConvergence", "choose_n_components"]


@dataclass
class ISMResult:
    """Outcome of :func:`ism`.

    Attributes
    ----------
    components : ndarray (d, q)
        W, orthonormal columns.
    eigenvalues : ndarray (q,)
        Eigenvalues of Phi belonging to W (descending): of :math:`\\Phi(W_{k-1})`
        after a plain step (W are its eigenvectors), of :math:`W^T\\Phi(W)W` after
        a safeguarded step (W is then rotated to these Ritz vectors).
        With ``n_components=None``, q was chosen by the eigengap of Phi_0.
    n_iter : int
        Iterations (plain and safeguarded) after the start.
    converged : bool
        Whether the stopping rule was met before ``max_iter``.
    objective : float
        :math:`\\mathrm{Tr}(\\Gamma K_{XW})` at the returned W.
    history : list of dict
        One entry per iterate (iteration 0 is the start): ``objective``,
        ``eigenvalues``, ``eigenvalue_change``, ``angle`` (largest principal
        angle to the previous W, radians), ``step`` ("start", "plain", "mixed"
        (a plain step whose W came from a Pulay combination of the last Phi,
        :mod:`ikdr.solver.mixing`) or "trust-region"), ``gradient_norm`` (Riemannian, NaN where Phi was not
        evaluated at that iterate), ``eigen_solver``, ``time``.
    kernel : Kernel
        The kernel with its data-dependent parameters fixed.
    convergence : ISMConvergence or None
        The certificate (see :class:`ISMConvergence`).
    """

    components: np.ndarray
    eigenvalues: np.ndarray
    n_iter: int
    converged: bool
    objective: float
    history: list = field(default_factory=list)
    kernel: Kernel | None = None
    convergence: ISMConvergence | None = None


def choose_n_components(eigenvalues: ArrayLike, *, minimum: int = 1) -> int:
    r"""q by the largest eigengap :math:`\lambda_q - \lambda_{q+1}` of a descending
    spectrum, with q >= ``minimum`` (dissertation equation 3.11)."""
    vals = np.sort(check_vector(eigenvalues, "eigenvalues"))[::-1]
    d = vals.shape[0]
    minimum = max(1, min(int(minimum), d))
    if minimum >= d:
        return d
    gaps = vals[minimum - 1:d - 1] - vals[minimum:d]
    return int(minimum + np.argmax(gaps))


_EIGENVALUE_RULE_MAX_ANGLE = 0.1
#: saddles a fit may escape from (each: a line search along the certificate's
#: ascent direction, then the iteration goes on from the higher point)
MAX_SADDLE_ESCAPES = 3


def _plain_stopping_rule(criterion, change, angle, tol):
    """The papers' stopping rule after a plain step: its name when met, else None.

    The eigenvalue rule holds only when the step also turned W by less than
    :data:`_EIGENVALUE_RULE_MAX_ANGLE`: a period-two cycle repeats nearly the
    same eigenvalues while W swings by almost a right angle (breast cancer,
    median sigma, q = 2: change 0.005 at an angle of 1.54 rad, 0.31 away in sine
    from the maximum), and the papers' rule alone would call that converged.
    """
    if criterion == "eigenvalues" and change < tol and angle < _EIGENVALUE_RULE_MAX_ANGLE:
        return "eigenvalues"
    if criterion == "angle" and angle < tol:
        return "angle"
    return None


def _relative_change(new, old):
    norm = np.linalg.norm(new)
    return float(np.linalg.norm(new - old) / norm) if norm > 0 else 0.0


def _check_solver_options(criterion, tol, gtol, max_iter, acceleration):
    if criterion not in ("eigenvalues", "angle", "gradient"):
        raise ValueError(f"criterion must be 'eigenvalues', 'angle' or 'gradient', got {criterion!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol}")
    if not (gtol > 0):
        raise ValueError(f"gtol must be positive, got {gtol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if acceleration not in ACCELERATIONS:
        raise ValueError(f"acceleration must be one of {ACCELERATIONS}, got {acceleration!r}")


# --------------------------------------------------------------------------
def solve_ism(passes, X: ArrayLike, gamma: Gamma, kernel: KernelLike = "gaussian",
              n_components: int | None = 2, *, W0: ArrayLike | None = None, tol: float = 0.01,
              criterion: str = "eigenvalues", max_iter: int = 100, eigen_solver: str = "auto",
              n_threads: int | None = None, random_state: RandomStateLike = None,
              warn: bool = True, gtol: float = 1e-6, certify: bool = True,
              callback: Callable[[dict[str, Any]], Any] | None = None,
              phi_solver: str = "auto", min_components: int = 1,
              acceleration: str | None = "pulay", stacklevel: int = 3) -> ISMResult:
    """:func:`ikdr.ism` on a resolved pass provider (``passes``: the exact, landmark
    or Dask provider of :func:`ikdr.passes.resolve`).

    The driver never looks at X's type: the provider validates X
    (``check_data``), fits the kernel's data-dependent parameters
    (``fit_kernel``) and makes the problem whose passes :func:`solve` runs
    (``problem``). See :func:`ikdr.ism` for the algorithm and the parameters;
    ``stacklevel`` is that of the ConvergenceWarning (the caller's caller).
    """
    if not isinstance(gamma, Gamma):
        raise TypeError(f"gamma must be an ikdr.gamma.Gamma, got {type(gamma).__name__}")
    # the provider validates X its own way (a memmap by row blocks, a dask array
    # by a map over its blocks) with the same rules and messages
    X = passes.check_data(X)
    n, d = X.shape
    if gamma.n != n:
        raise ValueError(f"Gamma is {gamma.n} x {gamma.n} but X has {n} rows")
    _check_solver_options(criterion, tol, gtol, max_iter, acceleration)
    if n_components is not None:
        n_components = int(n_components)
        if not 1 <= n_components <= d:
            raise ValueError(f"n_components={n_components} must be between 1 and d={d}")
    kernel = make_kernel(kernel)
    if not kernel.is_resolved:
        kernel = passes.fit_kernel(kernel, X, random_state=random_state)
    problem = passes.problem(X, gamma, kernel, n_threads)
    # The d x d algebra between passes (eigh, small products) on one BLAS thread:
    # a threaded BLAS's idle workers spin-wait after each call and take the
    # cores from the next pass's threads (measured 1.4x slower passes on 2 cores).
    with single_threaded_blas():
        result = solve(problem, n_components, W0=W0, tol=tol, criterion=criterion,
                       max_iter=max_iter, eigen_solver=eigen_solver, warn=warn, gtol=gtol,
                       certify=certify, callback=callback, phi_solver=phi_solver,
                       min_components=min_components, acceleration=acceleration,
                       _stacklevel=stacklevel)
    result.kernel = kernel
    return result


def solve(problem, n_components, *, W0=None, tol=0.01, criterion="eigenvalues", max_iter=100,
          eigen_solver="auto", warn=True, gtol=1e-6, certify=True, callback=None,
          phi_solver="auto", min_components=1, coarse_steps=True, acceleration="pulay",
          _stacklevel=2, _escapes=0):
    """The ISM driver on any problem of the interface of :mod:`ikdr.passes.problem`.

    Same options as :func:`ism` (which validates them, builds a
    :class:`ikdr.passes.problem.KernelProblem` and calls this); returns an
    :class:`ISMResult` with ``kernel=None``. ``coarse_steps=False`` makes every
    dense Phi pass in the problem's own precision (see :data:`COARSE_ANGLE`).
    """
    _check_solver_options(criterion, tol, gtol, max_iter, acceleration)
    max_iter = int(max_iter)
    d = problem.d
    t0 = time.perf_counter()
    history: list[dict[str, Any]] = []

    def record(point, vals, change, angle, method, step, gnorm=np.nan):
        history.append({"iteration": len(history), "objective": point.objective,
                        "eigenvalues": vals.copy(), "eigenvalue_change": change, "angle": angle,
                        "step": step, "gradient_norm": gnorm, "eigen_solver": method,
                        "time": time.perf_counter() - t0})
        if callback is not None:
            callback(history[-1])

    # ---- the start: Phi_0 (q by its eigengap when asked), or the warm start W0 ----
    phi0 = problem.phi0() if W0 is None else None
    if W0 is not None and np.ndim(W0) != 2:
        raise ValueError(f"W0 must be 2-D (d x q), got shape {np.shape(W0)}")
    if n_components is None:
        q = np.shape(W0)[1] if W0 is not None and np.ndim(W0) == 2 else \
            choose_n_components(np.linalg.eigvalsh(phi0), minimum=min(int(min_components), d))
    else:
        q = int(n_components)
    mode = phi_mode(phi_solver, problem, problem.n, d, q, costs=pass_costs(problem, q))
    eps = float(np.finfo(problem.native_dtype).eps)
    mf_tol = max(MF_TOL, 50 * eps) if problem.native_dtype == np.float32 else MF_TOL
    # Pulay mixing serves the eigenvalue and angle rules. The gradient rule hands
    # slow plain steps to the trust region, whose Newton steps converge
    # quadratically from there; mixed steps slow down only near a relative
    # gradient of 1e-9, where no trust-region step can be verified against the
    # objective's rounding any more (measured: a fit that stalled at 6.8e-10
    # with mixing reached 3.5e-11 without).
    step = PlainStep(problem, q, mode=mode, eigen_solver=eigen_solver,
                      dense_final=certify, tol=mf_tol, coarse=coarse_steps,
                      acceleration=acceleration if criterion != "gradient" else None)
    if W0 is not None and problem.depends_on_w:
        # A warm start is the first iterate itself, not the first plain step from it:
        # that step can descend (a cycling problem, or a start near another basin's
        # maximum) and must meet the same safeguard as every later one. The
        # eigenvalue rule's first reference is W0's Ritz values. A warm start is
        # presumed near the maximum: no coarse steps.
        step.moved(0.0)
        point = step.evaluate(check_orthonormal_start(W0, d, q))
        ritz = point.W.T @ point.pw
        lam = np.linalg.eigvalsh(0.5 * (ritz + ritz.T))[::-1].copy()
        info = {"method": "warm start"}
    elif W0 is None:
        lam, W, info = top_eigenvectors(phi0, q, method="lapack" if eigen_solver == "auto"
                                        else eigen_solver)
        point = step.evaluate(W) if problem.depends_on_w else None
    else:   # W-free Phi: the warm start only seeds the eigensolver
        W = check_orthonormal_start(W0, d, q)
        phi0, _ = problem.phi(W)
        lam, W, info = top_eigenvectors(phi0, q, W, method=eigen_solver)
    if not problem.depends_on_w:   # Phi is W-free: phi0 is Phi(W) exactly and W the answer
        if phi0 is None:
            phi0 = problem.phi0()
        point = Point(W, problem.objective(W), phi=phi0)
    record(point, lam, np.nan, np.nan, info["method"], "start")

    n_iter = plain_steps = tr_steps = rejected = 0
    phase = "plain"
    converged = not problem.depends_on_w
    stopping_rule = "exact" if converged else "max_iter"
    prev_gnorm = np.nan
    stalled = False
    trust_region = TrustRegion(problem)

    while not converged and n_iter < max_iter:
        if phase == "plain":
            gnorm = point.gradient_norm()
            history[-1]["gradient_norm"] = gnorm
            if criterion == "gradient" and not point.coarse and gnorm <= gtol * abs(point.objective):
                converged, stopping_rule = True, "gradient"
                break
            lam_new, V, info = step.eigensolve(point)
            change, angle = _relative_change(lam_new, lam), principal_angle(point.W, V)
            # an eigensolve that missed its tolerance (matrix-free, out of
            # iterations), or of a coarse Phi for a tight tol, gives
            # eigenvalues too rough to declare convergence by
            rough = not info.get("converged", True) or \
                (info.get("coarse", False) and tol < COARSE_STOP_TOL)
            rule = None if rough else _plain_stopping_rule(criterion, change, angle, tol)
            step.moved(angle)
            new = step.evaluate(V, final=rule is not None)
            if new.objective < point.objective - 16 * eps * abs(point.objective):
                # The step would descend: refuse it. A mixed step is retried as
                # the plain step from the same point; a plain one (cycle /
                # overshoot) hands over to the trust region.
                rejected += 1
                if step.refused():
                    continue
                phase = "trust-region"
                step.moved(0.0)
                continue
            n_iter += 1
            plain_steps += 1
            point, lam = new, lam_new
            record(point, lam, change, angle, info["method"],
                   "mixed" if info.get("mixed", 1) > 1 else "plain")
            if rule is not None:
                converged, stopping_rule = True, rule
            elif criterion == "gradient":
                if plain_steps >= 2 and gnorm > SLOW_CONTRACTION * prev_gnorm:
                    phase = "trust-region"
                prev_gnorm = gnorm
            continue

        # ---- safeguarded phase: one Riemannian trust-region iteration (float64) ----
        point = dense64(problem, point)
        gnorm = point.gradient_norm()
        history[-1]["gradient_norm"] = gnorm
        if gnorm <= gtol * abs(point.objective):
            converged, stopping_rule = True, "gradient"
            break
        W_new, f_new, accepted, stalled = trust_region.iterate(point.W, point.phi, point.objective)
        n_iter += 1
        tr_steps += 1
        nan = np.full(q, np.nan)
        if accepted:
            angle = principal_angle(point.W, W_new)
            gain = f_new - point.objective
            point = Point(W_new, f_new, exact=True)
            record(point, nan, np.nan, angle, "trust-region", "trust-region")
            if problem.objective_floor > 0 and gain <= problem.objective_floor * abs(f_new):
                converged, stopping_rule = True, "objective"
        else:
            rejected += 1
            record(point, nan, np.nan, 0.0, "trust-region", "trust-region")
            if stalled:
                stopping_rule = "stalled"
                break

    # ---- the returned point and its certificate ----
    if phase != "plain" and problem.depends_on_w:
        point = dense64(problem, point)
        # Rotate W to the Ritz vectors of Phi(W): eigen-like columns, descending.
        vals, vecs = np.linalg.eigh(point.W.T @ point.phi @ point.W)
        point = Point(fix_signs(point.W @ vecs[:, ::-1]), point.objective, phi=point.phi)
        lam = vals[::-1].copy()
        history[-1]["eigenvalues"] = lam.copy()
    if not stalled and not converged:
        stopping_rule = "max_iter"
    solve_time = time.perf_counter() - t0
    if certify and not step.thin_certificate:
        point = dense64(problem, point)
    exact = point.exact
    ascent = []
    fields = certify_point(problem, point.W, point.objective,
                           phi=point.exact_phi, PW=point.PW if exact else None,
                           full=certify, gtol=gtol,
                           extra=point.E if point.E is not None and exact else step.extra,
                           extra_product=point.PE if exact else None, ascent=ascent)
    certificate = ISMConvergence(
        converged=bool(converged), stopping_rule=stopping_rule, objective=point.objective,
        plain_steps=plain_steps, safeguarded_steps=tr_steps, rejected_steps=rejected,
        hessian_products=problem.n_hessian, phi_evaluations=problem.n_phi,
        dense_phi_evaluations=problem.n_dense_phi, coarse_phi_evaluations=problem.n_coarse_phi,
        objective_evaluations=problem.n_objective, **fields)
    history[-1]["gradient_norm"] = certificate.gradient_norm
    certificate.solve_time = solve_time
    certificate.certificate_time = time.perf_counter() - t0 - solve_time
    certificate.saddle_escapes = _escapes
    saddle = bool(ascent) and converged
    if saddle:
        # The stopping rule accepted a saddle: the certificate found a direction of
        # positive curvature. Step along it, uphill, and go on from there.
        W_up, f_up = (escape_saddle(problem, point.W, point.objective, ascent[0])
                      if _escapes < MAX_SADDLE_ESCAPES and n_iter < max_iter else (None, None))
        if W_up is not None:
            record(Point(W_up, f_up), np.full(q, np.nan), np.nan,
                   principal_angle(point.W, W_up), "saddle escape", "saddle escape")
            rest = solve(problem, q, W0=W_up, tol=tol, criterion=criterion,
                         max_iter=max_iter - n_iter, eigen_solver=eigen_solver, warn=warn,
                         gtol=gtol, certify=certify, callback=callback, phi_solver=phi_solver,
                         coarse_steps=False, acceleration=acceleration,
                         _stacklevel=_stacklevel + 1, _escapes=_escapes + 1)
            for entry in rest.history[1:]:           # its first entry is W_up again
                entry["iteration"] = len(history)
                history.append(entry)
            c = rest.convergence
            c.plain_steps += plain_steps
            c.safeguarded_steps += tr_steps
            c.rejected_steps += rejected
            c.solve_time += solve_time
            rest.history, rest.n_iter = history, rest.n_iter + n_iter
            return rest
        converged = certificate.converged = False
        if warn:
            warnings.warn(f"ISM stopped at a saddle, not a maximum: the certificate found a "
                          f"positive Hessian eigenvalue ({certificate.hessian_max_eigenvalue:.3g}"
                          f", Hessian scale {certificate.hessian_scale:.3g}) and "
                          + ("no step along its eigenvector raised the objective"
                             if _escapes < MAX_SADDLE_ESCAPES and n_iter < max_iter else
                             f"the solver has used its {MAX_SADDLE_ESCAPES} escapes or max_iter")
                          + "; converged=False", ConvergenceWarning, stacklevel=_stacklevel)
    if not converged and warn and not saddle:
        warnings.warn(_not_converged_message(stalled, phase, criterion, history, certificate,
                                             max_iter, tol, gtol),
                      ConvergenceWarning, stacklevel=_stacklevel)
    return ISMResult(components=point.W, eigenvalues=lam, n_iter=n_iter, converged=converged,
                     objective=point.objective, history=history, kernel=None,
                     convergence=certificate)


def _not_converged_message(stalled, phase, criterion, history, certificate, max_iter, tol, gtol):
    rel = certificate.relative_gradient_norm
    if stalled:
        return (f"ISM stalled: the trust region found no verifiable ascent (its radius "
                f"collapsed, or the ascent it predicts is below the objective's rounding) "
                f"before the relative gradient norm ({rel:.3g}) reached gtol={gtol}")
    if phase == "plain" and criterion != "gradient":
        key = "eigenvalue_change" if criterion == "eigenvalues" else criterion
        last = history[-1].get(key, np.nan)
        angle = history[-1].get("angle", np.nan)
        if criterion == "eigenvalues" and last < tol and angle >= _EIGENVALUE_RULE_MAX_ANGLE:
            # the eigenvalues settled but W still swings (a cycle, or a degenerate
            # q-th eigenvalue whose eigenvectors are not determined)
            return (f"ISM did not converge in max_iter={max_iter} iterations (the eigenvalues "
                    f"changed by {last:.3g} < tol={tol}, but the last step turned W by "
                    f"{angle:.3g} rad >= {_EIGENVALUE_RULE_MAX_ANGLE}: W cycles or Phi's q-th "
                    f"eigenvalue is degenerate)")
        return (f"ISM did not converge in max_iter={max_iter} iterations "
                f"(last {criterion} change {last:.3g} >= tol={tol})")
    return (f"ISM did not converge in max_iter={max_iter} iterations "
            f"(relative gradient norm {rel:.3g} > gtol={gtol})")
