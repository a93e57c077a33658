r"""One plain ISM step, shared by the dense, hybrid and matrix-free paths, and its cost model.

A plain step is the papers' fixed point :math:`W \leftarrow V_{\max}(\Phi(W))`
(ISM paper, Algorithm 1). How it finds the top eigenvectors of :math:`\Phi(W)`
(form the d x d Phi, or a block eigensolver on thin products
:math:`V \mapsto \Phi(W)V`, or both, the cheaper per step) and when its dense
pass may run in float32 (coarse steps far from the maximum) are decided here,
by the flop model in the comments below; :mod:`ikdr.solver.driver` runs the
iteration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._utils.eig import (block_top_eigenvectors, orthonormal_complement, top_eigenvalues,
                          top_eigenvectors)
from ..kernels import PANEL_FLOPS
from .problem import riemannian_gradient
from .mixing import PulayMixing

#: plain steps are abandoned (gradient criterion) when the gradient shrinks by less than this per step
SLOW_CONTRACTION = 0.5

# Dense, hybrid or matrix-free Phi (``phi_solver="auto"``). Costs per entry of
# the n x n kernel panel, in flops (PassCosts): every fused pass forms the
# panel (Gram row, Gamma row, exp, combine: about PANEL_FLOPS, measured by
# benchmarks/bench_core_rate.py) and multiplies it by its right-hand side
# (2 flops per column; half of that where the pass forming Phi multiplies
# each block pair once, d <= 64, which this model, deciding only for wide d,
# leaves out). Forming Phi passes X itself (d columns); an iteration
# of the block eigensolver makes one pass with at most 2p columns (p = q +
# extra Ritz vectors) plus the products X S and X^T (L X S) (4 d p / n flops per
# panel entry each). Measured block iterations per step when Phi's q-th
# eigenvalue lies inside its bulk (supervised ISM with q = the number of
# classes; 10,000 x 784, tol 1e-8): about 40 for the first step, whose start
# (the top eigenvectors of Phi_0) is far from those of Phi(W_1), then 12 and 2,
# the residual shrinking by about _BLOCK_RATE per iteration. Hence three modes:
#   matrix-free every step when a dense pass costs more than _MF_EXPECTED_PASSES
#     block iterations (above d ~ 1,600 for q = 10 at n = 10,000);
#   hybrid when it costs more than _HYBRID_EXPECTED_PASSES of them (above
#     d ~ 570): the first step dense, then each step by its predicted cost;
#   dense otherwise. Below _MF_MIN_SAMPLES the Python overhead of the extra
# passes dominates and Phi is formed densely.
_MF_EXPECTED_PASSES = 20
_HYBRID_EXPECTED_PASSES = 8
_MF_MIN_SAMPLES = 1000
# An uncertified warm start (W0 near the maximum: the support selection's half
# fits) goes hybrid from a dense pass worth _WARM_HYBRID_PASSES block
# iterations: its first step starts with a thin pass, then each step by its
# predicted cost, so the most it wastes is that thin pass, a quarter of a dense
# one (the thin and dense passes' costs: benchmarks/bench_core_rate.py).
_WARM_HYBRID_PASSES = 4
#: relative residual (to the largest Ritz value) of the matrix-free eigensolves
MF_TOL = 1e-8
#: under the gradient rule a block eigensolve stops once its residual alone would
#: leave a gradient of GRADIENT_SHARE times the rule's bound: solving Phi(W)'s
#: eigenvectors to MF_TOL is wasted where the next Phi(V) moves them by more (at
#: 10,000 x 784 a step from a relative gradient of 1.6e-5 needs 2 block iterations
#: at this share, 4 at 0.1, 13 for MF_TOL, which cost more than the dense pass they
#: replace). The residual's bound on the gradient is a worst case (every column at
#: the largest residual, aligned): the iterate that followed had a relative gradient
#: of 7e-8 at this share (3.6e-8 at 0.1), against the rule's 1e-6; on mixtures of
#: 3,000-10,000 rows and 784-2,000 features it never needed an extra step
GRADIENT_SHARE = 0.3
_MF_MAX_ITER = 60
#: residual reduction per block iteration assumed before one has been observed
_BLOCK_RATE = 0.5

# Coarse steps. A float64 problem's dense Phi pass made in float32
# (``KernelProblem.coarse_phi``, exact passes only) costs half (it is a GEMM
# with the d columns of X) and is accurate to about 1e-7 relative (the passes sum in float64);
# its top eigenvectors were measured within 2e-5 to 5e-5 (sine) of the exact
# ones on 10,000 x 784 and 6e-6 on 10,000 x 64, where the q-th eigenvalue
# lies in Phi's bulk (gap 1e-5 of the largest). A plain step far from the
# maximum moves W by far more than that, so while the last step turned W by
# more than COARSE_ANGLE radians the next dense Phi is coarse; from the first
# step that turned it less, every dense pass is float64 again. At most
# _MAX_COARSE_STEPS are coarse, so a problem whose eigengap is too small for
# float32 cannot keep the iteration coarse by moving W with rounding noise.
# A coarse point's objective is the float32 pass's own (summed in float64), with
# an error bound of COARSE_ERROR_MARGIN times the estimate of
# ikdr.passes.problem.float32_objective_error at its W (measured errors: 0.1 to
# 1.3 times that estimate on mixtures, digits and shifted data at 1 and 0.25
# times the median bandwidth). A step is refused only where it descends by
# more than the two points' bounds (the far steps that are coarse gain far
# more, or are flat to float32 accuracy), so the history's objectives never
# decrease beyond those bounds. Where the estimate exceeds COARSE_MAX_ERROR
# (points far from the origin against their spread, a bandwidth far above
# their distances, values whose squares float32 cannot hold) every pass is
# float64; for a kernel without an estimate (not one Gaussian alone) a coarse
# point's objective is exact, by one objective pass. The returned point's
# objective is always exact (one objective pass where a loose tol stops on a
# coarse point), and so is the certificate's pass at the returned W.
#
# A coarse step stops the iteration only when the rule's tolerance is at least
# COARSE_STOP_TOL, 20 times the coarse eigenvectors' error (the papers' tol =
# 0.01 is; a tight tol such as 1e-6 is decided by float64 steps), so the
# returned W can differ from the all-float64 iteration's by that error only
# where the tolerance admits far more. Below _COARSE_MIN_SAMPLES a pass costs
# little beside the fixed costs of a step: there every step is float64, and
# (without Pulay mixing, acceleration=None) the iterates are those of the
# papers' Algorithm 1 to the last bits (tests/test_convergence.py). Above it the
# float32 Phi(W) pass saves about half a dense pass, more than the exact
# objective pass that a coarse point would otherwise need (both passes in both
# dtypes: benchmarks/bench_core_rate.py, results in benchmarks/results/core_rate.md).
COARSE_ANGLE = 1e-2
_MAX_COARSE_STEPS = 4
_COARSE_MIN_SAMPLES = 1000
COARSE_STOP_TOL = 1e-3
#: a coarse point's objective error bound, in estimates of its float32 error
COARSE_ERROR_MARGIN = 10.0
#: coarse passes only where the estimated float32 error of the objective is at most this
COARSE_MAX_ERROR = 1e-5


def _extra_columns(d, q):
    return min(max(10, q), d - q)


@dataclass(frozen=True)
class PassCosts:
    """Flops per kernel-panel entry of the two ways to a plain step."""

    dense: float        # the pass that forms Phi (the panel times the d columns of X)
    block: float        # one block-eigensolver iteration (at most 2p columns, and X S, X^T Y)

    @classmethod
    def of(cls, n, d, q):
        p = q + _extra_columns(d, q)
        return cls(dense=PANEL_FLOPS + 2 * d, block=PANEL_FLOPS + 4 * p + 8 * d * p / n)

    @property
    def ratio(self):
        """Block iterations that cost one dense pass."""
        return self.dense / self.block

    @classmethod
    def of_problem(cls, problem, q):
        """The problem's own costs of a dense pass and of a block iteration (its
        ``step_costs(q, k)`` with the iteration's k = 2p columns: landmark passes
        cost O(n d m + n d^2) and O(n d (q + k) + n m k), no panel), else the
        panel's above."""
        costs = problem.step_costs(q, block_columns(problem.d, q))
        return cls.of(problem.n, problem.d, q) if costs is None else cls(*costs)


PHI_SOLVERS = ("auto", "dense", "hybrid", "matrix_free")


def block_columns(d, q):
    """Columns of one block-eigensolver pass (2p: the q vectors and their extras)."""
    return 2 * (q + _extra_columns(d, q))


def plain_step_flops(n, d, q, costs=None):
    """Flops of one plain step: the dense Phi pass, or at most
    ``_HYBRID_EXPECTED_PASSES`` block-eigensolver iterations where those are
    cheaper (the hybrid and matrix-free modes of :func:`phi_mode`). ``costs``:
    (dense pass, block iteration) of a problem's own passes in flops
    (``step_costs``), else the exact passes' n x n panel."""
    if costs is not None:
        c, entries = PassCosts(*costs), 1.0
    else:
        c, entries = PassCosts.of(n, d, q), float(n) ** 2
    return entries * min(c.dense, _HYBRID_EXPECTED_PASSES * c.block)


def phi_mode(phi_solver, problem, q, costs, warm=False):
    """The plain steps' way to Phi's eigenvectors on ``problem``: ``"dense"``,
    ``"hybrid"`` or ``"matrix_free"`` (``phi_solver="auto"`` by ``costs``, the
    :class:`PassCosts` of the problem's passes, :meth:`PassCosts.of_problem`,
    and ``warm``: the run starts from a given W0, see
    :data:`_WARM_HYBRID_PASSES`; always ``"matrix_free"`` for a problem that
    does not form the dense Phi)."""
    if not problem.supports_dense_phi:
        # sparse rows with many features: the d x d Phi is never formed
        if phi_solver in ("dense", "hybrid"):
            raise ValueError(f"phi_solver={phi_solver!r} forms the dense {problem.d} x "
                             f"{problem.d} Phi, which this problem does not (sparse X with "
                             "many features); use 'matrix_free' or 'auto'")
        return "matrix_free"
    if not problem.depends_on_w:
        return "dense"
    if phi_solver != "auto":
        return phi_solver
    if problem.n < _MF_MIN_SAMPLES:
        return "dense"
    if costs.ratio > _MF_EXPECTED_PASSES:
        return "matrix_free"
    return "hybrid" if costs.ratio > (_WARM_HYBRID_PASSES if warm else _HYBRID_EXPECTED_PASSES) \
        else "dense"


def _relative_residual(W, PW):
    """(max_j ||(Phi W - W W^T Phi W)_j|| / max |eig(W^T Phi W)|: the block
    eigensolver's measure, at its start; that largest Ritz value's magnitude)."""
    ritz = W.T @ PW
    scale = float(np.abs(np.linalg.eigvalsh(0.5 * (ritz + ritz.T))).max())
    residual = float(np.linalg.norm(PW - W @ ritz, axis=0).max())
    return (residual / scale if scale > 0 else np.inf), scale


def check_orthonormal_start(W0, d, q):
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.ndim != 2 or W0.shape != (d, q):
        raise ValueError(f"W0 must have shape ({d}, {q}), got {W0.shape}")
    if not np.all(np.isfinite(W0)):
        raise ValueError("W0 contains NaN or infinite values")
    Q, _ = np.linalg.qr(W0)
    return Q


class Point:
    """An iterate: W, f(W) and whichever of the dense Phi(W) / Phi(W) W the last pass gave.

    ``exact``: computed in float64 (else in the problem's float32). ``coarse``:
    its dense Phi was made in float32 for a float64 problem (a coarse step);
    its objective is that pass's, within ``objective_error`` (0 for every
    other point: see :data:`COARSE_ERROR_MARGIN`). ``E``, ``PE``: extra start
    columns of the block eigensolver (orthonormal, orthogonal to W) and their
    products Phi(W) E, made by the same thin pass as Phi(W) W."""

    __slots__ = ("W", "objective", "phi", "_PW", "exact", "coarse", "E", "PE",
                 "objective_error")

    def __init__(self, W, objective, *, phi=None, PW=None, exact=True, coarse=False, E=None,
                 PE=None, objective_error=0.0):
        self.W, self.objective, self.phi, self._PW, self.exact = W, float(objective), phi, PW, exact
        self.coarse, self.E, self.PE = coarse, E, PE
        self.objective_error = objective_error

    @property
    def exact_phi(self):
        """The dense Phi(W) in float64, when the point carries it."""
        return self.phi if self.exact and not self.coarse else None

    @property
    def PW(self):
        """Phi(W) W: from the thin pass that evaluated W, or from the dense Phi
        (multiplied once, when first asked for); None when neither is known."""
        if self._PW is None and self.phi is not None:
            self._PW = self.phi @ self.W
        return self._PW

    def gradient_norm(self):
        return float(np.linalg.norm(riemannian_gradient(self.PW, self.W)))


def dense64(problem, point):
    """The point with its dense Phi in float64 (one pass unless already known); for a
    problem that does not form the dense Phi, with Phi W in float64 instead."""
    if point.exact_phi is not None:
        return point
    if not problem.supports_dense_phi:
        if point.exact and point.PW is not None:
            return point
        PW, f = problem.phi_product(point.W, point.W)
        return Point(point.W, point.objective if point.exact else f, PW=PW)
    phi, f = problem.phi(point.W)
    # an exact objective is kept: the two passes may differ in the last bit,
    # and the history's objectives must not decrease by rounding
    return Point(point.W, point.objective if point.exact and not point.objective_error else f,
                 phi=phi)


def with_exact_objective(problem, point):
    """The point with its objective exact (one objective pass where it carries an
    error bound, a coarse point's); Phi and Phi W stay the coarse pass's."""
    if not point.objective_error:
        return point
    point.objective = problem.objective(point.W, own_dtype=True)
    point.objective_error = 0.0
    return point


class PlainStep:
    r"""The plain step :math:`W \leftarrow V_{\max}(\Phi(W))`: dense, hybrid or matrix-free.

    ``eigensolve(point)`` returns the top-q eigenpairs of :math:`\Phi(W)`:
    LAPACK / power when the point carries the dense Phi, else the block
    eigensolver on thin products warm-started from W and the extra Ritz
    vectors E of the previous eigensolve. ``evaluate(V, final)`` makes the one
    pass that gives the new iterate's f and what the next step needs: the
    dense :math:`\Phi(V)`, or the thin :math:`\Phi(V)[V, E]` (E made
    orthogonal to V; at the last iterate only for the certificate, whose
    eigengap iteration starts from the same columns), so the block
    eigensolver's first iteration needs no pass of its own.

    ``mode``: ``"dense"`` forms Phi at every iterate (thin at the last one
    when the certificate does not need the dense Phi); ``"matrix_free"``
    never forms it; ``"hybrid"`` forms it for the first step of a cold start only
    (``warm``: the run starts from a given W0), whose
    start is far from Phi(W_1)'s eigenvectors (about 40 block iterations,
    more than one dense pass costs when d is large), takes its next p - q
    eigenvectors as the block eigensolver's extra start columns, and goes
    matrix-free from there when that is cheaper: the block iterations a step
    needs are predicted from the residual of W in :math:`\Phi(W)` (known from
    the thin pass that evaluated W) and the residual reduction per iteration
    observed so far (:data:`_BLOCK_RATE` before any); when they would cost
    more than a dense pass, the step forms Phi instead. A hybrid block
    eigensolve that does not converge within twice a dense pass's worth of
    iterations is replaced by the dense one at the same point, so every
    step is exact to the block tolerance: :data:`MF_TOL`, or under the gradient
    rule the residual that leaves a gradient of :data:`GRADIENT_SHARE` times the
    rule's bound (:meth:`block_tol`).

    Every dense Phi of a float64 problem is coarse (float32) while the last
    step turned W by more than :data:`COARSE_ANGLE` (see there, and
    :data:`_COARSE_MIN_SAMPLES`); an eigensolve of a coarse Phi says so (``info["coarse"]``), and the
    driver stops on it only for a loose tol (:data:`COARSE_STOP_TOL`).

    ``options.acceleration="pulay"``: the dense steps' W is the top eigenvectors of a
    Pulay combination of the last iterates' Phi (:mod:`ikdr.solver.mixing`);
    the eigenvalues returned, which the stopping rule compares, are still those
    of the point's own Phi. ``None``: the papers' plain step.
    """

    def __init__(self, problem, q, options, *, mode, costs, warm=False):
        self.mixing = PulayMixing() if options.acceleration == "pulay" else None
        self.problem, self.q, self.mode, self.costs = problem, q, mode, costs
        # the certificate uses the dense Phi at the returned W
        self.eigen_solver, self.dense_final = options.eigen_solver, options.certify
        eps = float(np.finfo(problem.dtype).eps)
        self.tol = max(MF_TOL, 50 * eps) if problem.dtype == np.float32 else MF_TOL
        self.gtol = options.gtol if options.criterion == "gradient" else None
        self.block_budget = _MF_MAX_ITER if mode != "hybrid" else \
            int(min(_MF_MAX_ITER, max(10, 2 * costs.ratio)))
        self.rate = _BLOCK_RATE     # residual reduction per block iteration, as last observed
        self.exact = problem.dtype == np.float64
        self.extra = None           # extra Ritz vectors carried between matrix-free eigensolves
        # the hybrid's first step forms Phi, unless it starts warm (near its answer)
        self.dense_start = mode == "hybrid" and not warm
        self.coarse = problem.has_coarse and problem.depends_on_w and \
            problem.n >= _COARSE_MIN_SAMPLES
        self.coarse_steps = 0

    def _phi(self, W, final=False):
        """A dense Phi pass: (Phi, f, coarse, the bound of f's error: 0 for float64,
        None for a coarse pass without an estimate). Coarse while the steps are far
        from the maximum (never at the returned W, whose Phi the certificate
        uses) and float32 is accurate enough at W (:data:`COARSE_MAX_ERROR`)."""
        if self.coarse and not final:
            estimate = self.problem.float32_error(W)
            if estimate is None or estimate <= COARSE_MAX_ERROR:
                self.coarse_steps += 1
                phi, f = self.problem.coarse_phi(W)
                bound = None if estimate is None else \
                    COARSE_ERROR_MARGIN * max(estimate, 2.0 ** -24) * abs(f)
                return phi, f, True, bound
            self.coarse = False             # float64 from here on
            self.problem.release_coarse()
        phi, f = self.problem.phi(W, own_dtype=True)
        return phi, f, False, 0.0

    def moved(self, angle):
        """The driver's report of how far the last step turned W (inf: the start
        from Phi_0, far from the maximum). Ends the coarse steps for good when
        the step was short or their budget is spent; starts (or restarts) the
        mixing after a short step."""
        if self.mixing is not None:
            self.mixing.moved(angle)
        if self.coarse and not (angle > COARSE_ANGLE and self.coarse_steps < _MAX_COARSE_STEPS):
            self.coarse = False
            self.problem.release_coarse()

    def block_tol(self, point, scale):
        r"""The block eigensolver's relative residual at ``point`` (``scale``: the
        largest Ritz value's magnitude). Under the gradient rule, the residual whose
        gradient :math:`2\sqrt{q}\,\mathrm{tol}\cdot\mathrm{scale}` (at most, column by
        column) is :data:`GRADIENT_SHARE` of the rule's bound
        :math:`\mathrm{gtol}\,|f(W)|`, never below :data:`MF_TOL`."""
        if self.gtol is None or not scale > 0:
            return self.tol
        bound = self.gtol * abs(point.objective)
        return max(self.tol, GRADIENT_SHARE * bound / (2.0 * np.sqrt(self.q) * scale))

    def _block_is_cheaper(self, start, tol):
        """The hybrid's choice: the block iterations predicted from the start
        residual cost less than a dense pass."""
        if start <= tol:
            return True
        iterations = np.log(tol / start) / np.log(self.rate)
        return iterations < self.costs.ratio

    @property
    def thin_certificate(self):
        """The certificate uses thin products (no dense Phi at the returned W)."""
        return self.mode != "dense"

    def eigensolve(self, point):
        start, tol = np.nan, self.tol
        if point.phi is None:
            start, scale = _relative_residual(point.W, point.PW)
            tol = self.block_tol(point, scale)
        if point.phi is None and (self.mode == "matrix_free" or self._block_is_cheaper(start, tol)):
            W = point.W
            if point.E is not None:
                V0, AV0, extra = np.hstack([W, point.E]), np.hstack([point.PW, point.PE]), \
                    np.empty((W.shape[0], 0))
            else:
                V0, AV0, extra = W, point.PW, self.extra
            vals, V, info = block_top_eigenvectors(
                lambda S: self.problem.phi_product(W, S, own_dtype=True)[0], V0, AV0, self.q,
                extra=extra, tol=tol, max_iter=self.block_budget)
            self.extra = info["extra"]
            if info["iterations"] > 1 and start > info["residual"] > 0:
                self.rate = float(np.clip((info["residual"] / start) ** (1 / info["iterations"]),
                                          0.05, 0.95))
            info["method"] = (f"matrix-free ({info['iterations']} it, "
                              f"residual {info['residual']:.1e})")
            if info["converged"] or self.mode == "matrix_free":
                return vals, V, info
        if point.phi is None:
            point.phi, _, point.coarse, _ = self._phi(point.W)
        if self.mode != "hybrid":
            target = point.phi
            if self.mixing is not None and self.mode == "dense":
                # coarse points too: their float32 error is far below the
                # residuals mixed while they run (ikdr.solver.mixing)
                target = self.mixing.mix(point.W, point.phi, point.PW)
            vals, V, info = top_eigenvectors(target, self.q, point.W, method=self.eigen_solver)
            if target is not point.phi:
                # the rule compares the eigenvalues of the iterates' own Phi
                vals = top_eigenvalues(point.phi, self.q)
                info["mixed"] = self.mixing.last_mixed
        else:
            # LAPACK's next p - q eigenvectors start the next block eigensolve
            d = point.phi.shape[0]
            vals, vecs, info = top_eigenvectors(point.phi,
                                                min(d, self.q + _extra_columns(d, self.q)),
                                                method="lapack")
            self.extra, self.dense_start = vecs[:, self.q:], False
            vals, V = vals[:self.q].copy(), np.ascontiguousarray(vecs[:, :self.q])
        if point.coarse:
            info["coarse"] = True
            info["method"] = f"{info['method']} (float32 Phi)"
        return vals, V, info

    def refused(self):
        """The driver refused the last candidate (it would lower the objective).
        True when the candidate was mixed: the next :meth:`eigensolve` at the
        same point gives the plain step, to be tried before the trust region."""
        return self.mixing is not None and self.mixing.refused()

    def evaluate(self, V, final=False):
        dense = not final and self.dense_start if self.mode != "dense" else \
            not final or self.dense_final
        if not dense:
            if self.extra is None or (final and not self.dense_final):
                PV, f = self.problem.phi_product(V, V, own_dtype=True)
                return Point(V, f, PW=PV, exact=self.exact)
            E = orthonormal_complement(self.extra, V)
            both, f = self.problem.phi_product(V, np.hstack([V, E]), own_dtype=True)
            q = V.shape[1]
            return Point(V, f, PW=both[:, :q], exact=self.exact, E=E, PE=both[:, q:])
        phi, f, coarse, bound = self._phi(V, final)
        if bound is None:
            # no estimate of this kernel's float32 error: the objective is exact,
            # by one objective pass
            f, bound = self.problem.objective(V, own_dtype=True), 0.0
        # else a coarse point's objective is the float32 pass's, within its bound
        # (an objective pass costs 60% of what the float32 pass saves at d = 64)
        return Point(V, f, phi=phi, exact=self.exact, coarse=coarse, objective_error=bound)
