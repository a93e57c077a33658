r"""The ISM driver: the start, the plain fixed point, the safeguard and the certificate.

:func:`solve_ism` maximises :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})` over
orthonormal W on the problem a pass provider makes (:func:`ikdr.passes.resolve`);
:func:`solve` runs the iteration on any problem of the interface of
:mod:`ikdr.solver.problem`. f depends on W only through :math:`WW^T`, so the
problem lives on the Grassmann manifold of q-dimensional subspaces of :math:`R^d`.

Geometry used throughout (embedded metric :math:`\langle Z, Y\rangle = \mathrm{Tr}(Z^TY)`,
tangent vectors :math:`Z` with :math:`W^TZ = 0`):

* Euclidean gradient :math:`\nabla f = 2\Phi(W)W` (exact; docs/maths.md, section 2).
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

This module holds the start (:math:`\Phi_0`, q by its eigengap), the stopping
rules, the history and the pass accounting; one plain step is
:mod:`ikdr.solver.steps`, the trust-region phase :mod:`ikdr.solver.trust_region`
and the certificate :mod:`ikdr.solver.certificate`.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._config import single_threaded_blas
from .._utils.eig import fix_signs, gap_spectrum, top_eigenvectors
from .._utils.subspace import principal_angle
from .._utils.typing import ArrayLike
from .._utils.validation import check_vector
from ..gamma import Gamma
from ..kernels import Kernel, KernelLike, make_kernel
from .certificate import ISMConvergence
from .certificate import certify as certify_point
from .options import ISMOptions
from .problem import CountedProblem, KernelProblem, Provider
from .steps import (COARSE_STOP_TOL, SLOW_CONTRACTION, PlainStep, Point,
                    PassCosts, check_orthonormal_start, dense64, phi_mode,
                    with_exact_objective)
from .trust_region import TrustRegion, escape_saddle

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
        Whether the certificate holds at W (``convergence.converged``): a
        certified local maximum under the gradient rule.
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
    """q by the largest eigengap ``lambda_q - lambda_{q+1}`` of a descending
    spectrum, with q >= ``minimum`` (dissertation equation 3.11).

    Eigenvalues within rounding of zero (``1e-9`` of the largest magnitude) count
    as zero: a spectrum of rank r below ``minimum`` (a supervised Phi_0 of c
    classes has rank c - 1) has no gap left beyond its rounding, and q is then
    ``minimum``, not the position of the largest rounding difference."""
    vals = np.sort(check_vector(eigenvalues, "eigenvalues"))[::-1]
    d = vals.shape[0]
    minimum = max(1, min(int(minimum), d))
    if minimum >= d:
        return d
    scale = float(np.abs(vals).max())
    vals = np.where(np.abs(vals) <= _ROUNDING_GAP * scale, 0.0, vals)
    gaps = vals[minimum - 1:d - 1] - vals[minimum:d]
    return int(minimum + np.argmax(gaps))


#: relative size below which an eigenvalue of Phi_0 is rounding (choose_n_components)
_ROUNDING_GAP = 1e-9


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


# --------------------------------------------------------------------------
def solve_ism(provider: Provider, X: ArrayLike, gamma: Gamma, kernel: KernelLike,
              options: ISMOptions, *, W0: ArrayLike | None = None,
              stacklevel: int = 3) -> ISMResult:
    """:func:`ikdr.ism` on a resolved pass provider (the exact, landmark or Dask
    provider of :func:`ikdr.passes.resolve`) with checked ``options``.

    The driver never looks at X's type: the provider validates X
    (``check_data``), fits the kernel's data-dependent parameters
    (``fit_kernel``) and makes the problem whose passes :func:`solve` runs
    (``problem``). See :func:`ikdr.ism` for the algorithm; ``stacklevel`` is
    that of the ConvergenceWarning (the caller's caller).
    """
    if not isinstance(gamma, Gamma):
        raise TypeError(f"gamma must be an ikdr.gamma.Gamma, got {type(gamma).__name__}")
    # the provider validates X its own way (a memmap by row blocks, a dask array
    # by a map over its blocks) with the same rules and messages
    X = provider.check_data(X)
    n, d = X.shape
    if gamma.n != n:
        raise ValueError(f"Gamma is {gamma.n} x {gamma.n} but X has {n} rows")
    q = options.n_components
    if q is not None and not 1 <= q <= d:
        raise ValueError(f"n_components={q} must be between 1 and d={d}")
    fitted = make_kernel(kernel)
    if not fitted.is_resolved:
        fitted = provider.fit_kernel(fitted, X, random_state=options.random_state)
    problem = provider.problem(X, gamma, fitted, options.n_threads)
    # The d x d algebra between passes (eigh, small products) on one BLAS thread:
    # a threaded BLAS's idle workers spin-wait after each call and take the
    # cores from the next pass's threads (benchmarks/bench_call_overhead.py).
    with single_threaded_blas():
        result = solve(problem, options, W0=W0, stacklevel=stacklevel + 1)
    result.kernel = fitted
    return result


def solve(problem: KernelProblem, options: ISMOptions, *, W0: ArrayLike | None = None,
          stacklevel: int = 2) -> ISMResult:
    """The ISM driver on any :class:`ikdr.solver.problem.KernelProblem`.

    :func:`solve_ism` makes the problem and calls this; the result has
    ``kernel=None``. The run is a sequence of phases on one :class:`_Run`: the
    start, plain (possibly mixed) steps while they climb, trust-region steps
    where they do not, then the certificate at the point reached. Under
    ``criterion="gradient"`` a certificate that finds a saddle (a certainly
    positive Hessian eigenvalue) sends the run on from a point above it along
    that eigenvector, with trust-region steps only: the plain fixed point
    could lead back to the saddle, the trust region is monotone and its steps
    follow negative curvature.
    """
    run = _Run(CountedProblem(problem), options)
    run.start(W0)
    while True:
        run.iterate()
        certificate, ascent = run.finish()
        # a saddle is a critical point: only a run the gradient rule stopped escapes
        if ascent is None or run.stopping_rule != "gradient" or not run.can_escape():
            break
        if not run.escape(ascent):
            break
    return run.result(certificate, ascent, stacklevel + 1)


#: plain steps in a row that shrink the gradient by less than SLOW_CONTRACTION
#: before the gradient rule hands over to the trust region (mixed steps can
#: stall for a step before the extrapolation takes hold)
_SLOW_STEPS = 2
#: below this relative gradient Pulay mixing stops: the mixed combination of
#: Phi is then dominated by rounding and stalls near 1e-9 (measured: 6.8e-10
#: where the trust region reached 3.5e-11)
MIXING_MIN_GRADIENT = 1e-8


class _Run:
    """The state of one :func:`solve`: the iterate, its eigenvalues, the phase,
    the counters and the history."""

    def __init__(self, problem, options):
        self.problem, self.options = problem, options
        self.criterion, self.tol, self.gtol = options.criterion, options.tol, options.gtol
        self.max_iter = options.max_iter
        self.t0 = time.perf_counter()
        self.history: list[dict[str, Any]] = []
        self.n_iter = self.plain_steps = self.tr_steps = self.rejected = self.escapes = 0
        self.slow_steps = 0
        self.prev_gnorm = np.nan
        self.phase = "plain"
        self.stopping_rule = "max_iter"
        self.stopped = False        # a stopping rule was met
        self.stalled = False
        self.solve_time = self.certificate_time = 0.0
        self.trust_region = TrustRegion(problem)
        self.eps = float(np.finfo(problem.dtype).eps)

    def record(self, point, vals, change, angle, method, step, gnorm=np.nan):
        self.history.append({"iteration": len(self.history), "objective": point.objective,
                             "eigenvalues": vals.copy(), "eigenvalue_change": change,
                             "angle": angle, "step": step, "gradient_norm": gnorm,
                             "eigen_solver": method, "time": time.perf_counter() - self.t0})
        if self.options.callback is not None:
            self.options.callback(self.history[-1])

    # ---- the start: Phi_0 (q by its eigengap when asked), or the warm start W0 ----
    def start(self, W0):
        problem, d, options = self.problem, self.problem.d, self.options
        if W0 is not None and np.ndim(W0) != 2:
            raise ValueError(f"W0 must be 2-D (d x q), got shape {np.shape(W0)}")
        phi0 = problem.phi0() if W0 is None else None
        if options.n_components is not None:
            q = options.n_components
        elif W0 is not None:
            q = np.shape(W0)[1]
        else:
            minimum = min(options.min_components, d)
            # Phi_0 of sparse X with many features is an operator: its leading eigenvalues
            q = choose_n_components(gap_spectrum(phi0, minimum), minimum=minimum)
        self.q = q
        costs = PassCosts.of_problem(problem, q)
        # an uncertified warm start (the support selection's half fits) may go
        # hybrid earlier; a certified fit keeps the dense Phi at the returned W,
        # which preconditions the certificate's Hessian estimate
        mode = phi_mode(options.phi_solver, problem, q, costs,
                        warm=W0 is not None and not options.certify)
        self.step = PlainStep(problem, q, options, mode=mode, costs=costs, warm=W0 is not None)
        eigen_solver = options.eigen_solver
        if W0 is not None and problem.depends_on_w:
            # A warm start is the first iterate itself, not the first plain step from it:
            # that step can descend (a cycling problem, or a start near another basin's
            # maximum) and must meet the same safeguard as every later one. The
            # eigenvalue rule's first reference is W0's Ritz values. A warm start is
            # presumed near the maximum: no coarse steps (and no dense first step
            # in hybrid mode, PlainStep's ``warm``)
            self.step.moved(0.0)
            point = self.step.evaluate(check_orthonormal_start(W0, d, q))
            ritz = point.W.T @ point.PW
            lam = np.linalg.eigvalsh(0.5 * (ritz + ritz.T))[::-1].copy()
            info = {"method": "warm start"}
        elif W0 is None:
            lam, W, info = top_eigenvectors(phi0, q, method="lapack" if eigen_solver == "auto"
                                            else eigen_solver)
            point = self.step.evaluate(W) if problem.depends_on_w else None
        else:   # W-free Phi: the warm start only seeds the eigensolver
            W = check_orthonormal_start(W0, d, q)
            phi0, _ = problem.phi(W)
            lam, W, info = top_eigenvectors(phi0, q, W, method=eigen_solver)
        if not problem.depends_on_w:   # Phi is W-free: phi0 is Phi(W) exactly and W the answer
            if problem.supports_dense_phi:
                point = Point(W, problem.objective(W), phi=phi0 if phi0 is not None
                              else problem.phi0())
            else:                      # Phi_0 is an operator: the point carries Phi W
                PW, f = problem.phi_product(W, W)
                point = Point(W, f, PW=PW)
            self.stopped, self.stopping_rule = True, "exact"
        self.point, self.lam = point, lam
        self.record(point, lam, np.nan, np.nan, info["method"], "start")

    def can_escape(self):
        return self.escapes < MAX_SADDLE_ESCAPES and self.n_iter < self.max_iter

    def iterate(self):
        """Plain and trust-region steps until a stopping rule holds, the trust
        region stalls, or max_iter."""
        while not self.stopped and not self.stalled and self.n_iter < self.max_iter:
            if self.phase == "plain":
                self.plain_step()
            else:
                self.trust_region_step()
        self.solve_time = time.perf_counter() - self.t0

    def _gradient_rule(self, gnorm, point):
        """The gradient rule holds at ``point`` (never at a coarse float32 one)."""
        return not point.coarse and gnorm <= self.gtol * abs(point.objective)

    def plain_step(self):
        point, step = self.point, self.step
        gnorm = point.gradient_norm()
        self.history[-1]["gradient_norm"] = gnorm
        gradient_rule = self.criterion == "gradient"
        if gradient_rule and self._gradient_rule(gnorm, point):
            self.stopped, self.stopping_rule = True, "gradient"
            return
        if gradient_rule and step.mixing is not None and \
                gnorm < MIXING_MIN_GRADIENT * abs(point.objective):
            step.mixing = None
        lam_new, V, info = step.eigensolve(point)
        change, angle = _relative_change(lam_new, self.lam), principal_angle(point.W, V)
        # an eigensolve that missed its tolerance (matrix-free, out of
        # iterations), or of a coarse Phi for a tight tol, gives
        # eigenvalues too rough to declare convergence by
        rough = not info.get("converged", True) or \
            (info.get("coarse", False) and self.tol < COARSE_STOP_TOL)
        rule = None if rough else _plain_stopping_rule(self.criterion, change, angle, self.tol)
        step.moved(angle)
        new = step.evaluate(V, final=rule is not None)
        # beyond rounding and, for coarse points, the float32 objective's error bound
        margin = 16 * self.eps * abs(point.objective) + point.objective_error + \
            new.objective_error
        if new.objective < point.objective - margin:
            # The step would descend: refuse it. A mixed step is retried as the
            # plain step from the same point; a plain one (cycle / overshoot)
            # hands over to the trust region.
            self.rejected += 1
            if not step.refused():
                self.phase = "trust-region"
                step.moved(0.0)
            return
        self.n_iter += 1
        self.plain_steps += 1
        self.point, self.lam = new, lam_new
        self.record(new, lam_new, change, angle, info["method"],
                    "mixed" if info.get("mixed", 1) > 1 else "plain")
        if rule is not None:
            self.stopped, self.stopping_rule = True, rule
        elif gradient_rule:
            # slow plain steps hand over to the trust region, whose Newton steps
            # converge quadratically from there
            slow = self.plain_steps >= 2 and gnorm > SLOW_CONTRACTION * self.prev_gnorm
            self.slow_steps = self.slow_steps + 1 if slow else 0
            if self.slow_steps >= (_SLOW_STEPS if step.mixing is not None else 1):
                self.phase = "trust-region"
            self.prev_gnorm = gnorm

    # ---- safeguarded phase: one Riemannian trust-region iteration (float64) ----
    def trust_region_step(self):
        problem = self.problem
        point = self.point = dense64(problem, self.point)
        gnorm = point.gradient_norm()
        self.history[-1]["gradient_norm"] = gnorm
        if gnorm <= self.gtol * abs(point.objective):
            self.stopped, self.stopping_rule = True, "gradient"
            return
        W_new, f_new, accepted, self.stalled = self.trust_region.iterate(
            point.W, point.phi, point.objective, PW=point.PW)
        self.n_iter += 1
        self.tr_steps += 1
        nan = np.full(self.q, np.nan)
        if not accepted:
            self.rejected += 1
            self.record(point, nan, np.nan, 0.0, "trust-region", "trust-region")
            if self.stalled:
                self.stopping_rule = "stalled"
            return
        angle = principal_angle(point.W, W_new)
        gain = f_new - point.objective
        self.point = Point(W_new, f_new, exact=True)
        self.record(self.point, nan, np.nan, angle, "trust-region", "trust-region")
        if problem.objective_floor > 0 and gain <= problem.objective_floor * abs(f_new):
            self.stopped, self.stopping_rule = True, "objective"

    # ---- the returned point and its certificate ----
    def finish(self):
        """Certify the point reached. Returns (certificate fields, ascent direction
        or None): the direction when the Hessian has a certainly positive
        eigenvalue there (a saddle)."""
        problem, step, certify = self.problem, self.step, self.options.certify
        if self.phase != "plain" and problem.depends_on_w:
            point = dense64(problem, self.point)
            # Rotate W to the Ritz vectors of Phi(W): eigen-like columns, descending.
            ritz = point.W.T @ point.PW
            vals, vecs = np.linalg.eigh(0.5 * (ritz + ritz.T))
            rotated = fix_signs(point.W @ vecs[:, ::-1])
            self.point = Point(rotated, point.objective, phi=point.phi,
                               PW=None if point.phi is not None else point.PW @ (
                                   rotated.T @ point.W).T)
            self.lam = vals[::-1].copy()
            self.history[-1]["eigenvalues"] = self.lam.copy()
        if certify and not step.thin_certificate:
            self.point = dense64(problem, self.point)
        # exact_finish=False: only W is wanted, the gradient as the last pass gave it
        # (and no eigengap: a d x d eigensolve nobody reads)
        as_passed = not certify and not self.options.exact_finish and self.point.PW is not None
        if not as_passed:
            # a loose tol may stop on a coarse point: its objective is made exact
            self.point = with_exact_objective(problem, self.point)
            self.history[-1]["objective"] = self.point.objective
        point, exact = self.point, self.point.exact
        t = time.perf_counter()
        ascent: list = []
        fields = certify_point(problem, point.W, point.objective,
                               phi=None if as_passed else point.exact_phi,
                               PW=point.PW if exact or as_passed else None,
                               full=certify, gtol=self.gtol,
                               extra=point.E if point.E is not None and exact else step.extra,
                               extra_product=point.PE if exact else None, ascent=ascent)
        self.certificate_time += time.perf_counter() - t
        self.history[-1]["gradient_norm"] = fields["gradient_norm"]
        return fields, (ascent[0] if ascent else None)

    def escape(self, direction):
        """Leave the saddle: the best point along the Hessian's ascent direction,
        then trust-region steps only. False when no step along it rises."""
        point = self.point
        W_up, f_up = escape_saddle(self.problem, point.W, point.objective, direction)
        if W_up is None:
            return False
        self.escapes += 1
        self.point = Point(W_up, f_up)
        self.record(self.point, np.full(self.q, np.nan), np.nan,
                    principal_angle(point.W, W_up), "saddle escape", "saddle escape")
        self.phase, self.stopped, self.stalled = "trust-region", False, False
        self.stopping_rule = "max_iter"
        return True

    def result(self, fields, ascent, stacklevel):
        """The ISMResult, with ``converged`` True only where the certificate holds."""
        problem, point = self.problem, self.point
        saddle = ascent is not None and bool(fields["first_order"])
        certified = bool(fields["first_order"] and fields["second_order"] is not False
                         and not saddle)
        if not problem.depends_on_w:
            certified = True
        if not self.stopped and not self.stalled:
            self.stopping_rule = "max_iter"
        certificate = ISMConvergence(
            converged=certified, stopping_rule=self.stopping_rule,
            objective=point.objective, plain_steps=self.plain_steps,
            safeguarded_steps=self.tr_steps, rejected_steps=self.rejected,
            hessian_products=problem.n_hessian, phi_evaluations=problem.n_phi,
            dense_phi_evaluations=problem.n_dense_phi,
            coarse_phi_evaluations=problem.n_coarse_phi,
            objective_evaluations=problem.n_objective, saddle_escapes=self.escapes, **fields)
        certificate.solve_time = self.solve_time - self.certificate_time
        certificate.certificate_time = self.certificate_time
        # an uncertified answer warns under the gradient rule; under the papers'
        # rules only when max_iter (or a stall) came before the rule itself
        failed = not certified and (self.criterion == "gradient" or not self.stopped)
        if self.options.warn and failed:
            warnings.warn(_not_converged_message(self, certificate, saddle),
                          ConvergenceWarning, stacklevel=stacklevel)
        return ISMResult(components=point.W, eigenvalues=self.lam, n_iter=self.n_iter,
                         converged=certified, objective=point.objective,
                         history=self.history, kernel=None, convergence=certificate)


def _not_converged_message(run, certificate, saddle):
    """What went wrong, with the measured numbers and what to change."""
    rel, gtol, max_iter = certificate.relative_gradient_norm, run.gtol, run.max_iter
    if saddle:
        return (f"ISM stopped at a saddle, not a maximum: the Hessian has a positive "
                f"eigenvalue ({certificate.hessian_max_eigenvalue:.3g}, Hessian scale "
                f"{certificate.hessian_scale:.3g}) and "
                + ("no step along its eigenvector raised the objective"
                   if run.can_escape() else
                   f"the solver has used its {MAX_SADDLE_ESCAPES} escapes or max_iter={max_iter}")
                + "; converged=False. Try another start (W0) or a larger max_iter")
    if run.stalled:
        return (f"ISM stalled at a relative gradient norm of {rel:.3g} > gtol={gtol}: the trust "
                f"region found no ascent it could verify against the objective's rounding. "
                f"gtol below about 1e-10 is beyond the objective's precision; loosen gtol")
    if run.stopping_rule == "max_iter" and run.criterion != "gradient":
        key = "eigenvalue_change" if run.criterion == "eigenvalues" else run.criterion
        last = run.history[-1].get(key, np.nan)
        angle = run.history[-1].get("angle", np.nan)
        if run.criterion == "eigenvalues" and last < run.tol and \
                angle >= _EIGENVALUE_RULE_MAX_ANGLE:
            # the eigenvalues settled but W still swings (a cycle, or a degenerate
            # q-th eigenvalue whose eigenvectors are not determined)
            return (f"ISM did not converge in max_iter={max_iter} iterations (the eigenvalues "
                    f"changed by {last:.3g} < tol={run.tol}, but the last step turned W by "
                    f"{angle:.3g} rad >= {_EIGENVALUE_RULE_MAX_ANGLE}: W cycles or Phi's q-th "
                    f"eigenvalue is degenerate)")
        return (f"ISM did not converge in max_iter={max_iter} iterations "
                f"(last {run.criterion} change {last:.3g} >= tol={run.tol})")
    if run.stopping_rule == "max_iter":
        return (f"ISM reached max_iter={max_iter} before its certificate held: relative "
                f"gradient norm {rel:.3g} > gtol={gtol}. Raise max_iter, or loosen gtol")
    # first order holds; the Hessian check did not conclude within its products
    return (f"ISM reached a relative gradient norm of {rel:.3g} <= gtol={gtol}, but the "
            f"Hessian check was inconclusive (largest eigenvalue estimate "
            f"{certificate.hessian_max_eigenvalue:.3g} +- {certificate.hessian_residual:.3g}, "
            f"scale {certificate.hessian_scale:.3g}); converged=False")
