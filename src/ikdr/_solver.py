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
* :mod:`ikdr._trust_region`, the Riemannian trust-region Newton phase;
* :mod:`ikdr._certificate`, the certificate (gradient, eigengap, largest
  Hessian eigenvalue).

All three see the problem only through the interface of
:mod:`ikdr._ism_problem` (objective, dense :math:`\Phi` or thin products
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

from . import distributed as _distributed
from ._certificate import ISMConvergence
from ._certificate import certify as certify_point
from ._config import single_threaded_blas
from ._eig import _fix_signs, block_top_eigenvectors, orthonormal_complement, top_eigenvectors
from ._ism_problem import KernelProblem, riemannian_gradient
from ._trust_region import TrustRegion
from ._validation import check_float_matrix, check_vector
from .gamma import Gamma
from .kernels import Kernel, make_kernel
from ._typing import ArrayLike, DTypeLike, KernelLike, RandomStateLike

__all__ = ["ism", "solve", "ISMResult", "ISMConvergence", "principal_angle", "choose_n_components"]

#: plain steps are abandoned (gradient criterion) when the gradient shrinks by less than this per step
_SLOW_CONTRACTION = 0.5

# Dense, hybrid or matrix-free Phi (``phi_solver="auto"``). Costs per entry of
# the n x n kernel panel, in flops (_PassCosts): every fused pass forms the
# panel (Gram row, Gamma row, exp, combine: about _PANEL_FLOPS, measured by
# benchmarks/bench_core_rate.py) and multiplies it by its right-hand side
# (2 flops per column). Forming Phi passes X itself (d columns); an iteration
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
_PANEL_FLOPS = 60
_MF_EXPECTED_PASSES = 20
_HYBRID_EXPECTED_PASSES = 8
_MF_MIN_SAMPLES = 1000
#: relative residual (to the largest Ritz value) of the matrix-free eigensolves
_MF_TOL = 1e-8
_MF_MAX_ITER = 60
#: residual reduction per block iteration assumed before one has been observed
_BLOCK_RATE = 0.5

# Coarse steps. A float64 problem's dense Phi pass made in float32
# (``KernelProblem.coarse_phi``) costs half (it is a GEMM with the d columns
# of X) and is accurate to about 1e-7 relative (the passes sum in float64);
# its top eigenvectors were measured within 2e-5 to 5e-5 (sine) of the exact
# ones on 10,000 x 784 and 6e-6 on 10,000 x 64, where the q-th eigenvalue
# lies in Phi's bulk (gap 1e-5 of the largest). A plain step far from the
# maximum moves W by far more than that, so while the last step turned W by
# more than _COARSE_ANGLE radians the next dense Phi is coarse; from the first
# step that turned it less, every dense pass is float64 again. At most
# _MAX_COARSE_STEPS are coarse, so a problem whose eigengap is too small for
# float32 cannot keep the iteration coarse by moving W with rounding noise.
# Objectives are always exact (a coarse point's by an objective pass), and
# so is the certificate's pass at the returned W.
#
# A coarse step stops the iteration only when the rule's tolerance is at least
# _COARSE_STOP_TOL, 20 times the coarse eigenvectors' error (the papers' tol =
# 0.01 is; a tight tol such as 1e-6 is decided by float64 steps), so the
# returned W can differ from the all-float64 iteration's by that error only
# where the tolerance admits far more. Below _COARSE_MIN_SAMPLES a pass costs
# little beside the fixed costs of a step, and below _COARSE_MIN_FEATURES the
# float32 pass saves less than the objective pass a coarse point needs
# (measured, 10,000 samples: d = 32 dense 194 ms against float32 126 ms +
# objective 87 ms; d = 48: 251 against 126 + 73; d = 64: 301 against 165 + 75;
# 2,000 x 32: 10.8 against 5.9 + 5.0): there every step is float64, and the
# iterates are those of the papers' Algorithm 1 to the last bits
# (tests/test_convergence.py).
_COARSE_ANGLE = 1e-2
_MAX_COARSE_STEPS = 4
_COARSE_MIN_SAMPLES = 1000
_COARSE_MIN_FEATURES = 48
_COARSE_STOP_TOL = 1e-3


def _extra_columns(d, q):
    return min(max(10, q), d - q)


@dataclass(frozen=True)
class _PassCosts:
    """Flops per kernel-panel entry of the two ways to a plain step."""

    dense: float        # the pass that forms Phi (the panel times the d columns of X)
    block: float        # one block-eigensolver iteration (at most 2p columns, and X S, X^T Y)

    @classmethod
    def of(cls, n, d, q):
        p = q + _extra_columns(d, q)
        return cls(dense=_PANEL_FLOPS + 2 * d, block=_PANEL_FLOPS + 4 * p + 8 * d * p / n)

    @property
    def ratio(self):
        """Block iterations that cost one dense pass."""
        return self.dense / self.block


PHI_SOLVERS = ("auto", "dense", "hybrid", "matrix_free")


def phi_mode(phi_solver, kernel, n, d, q):
    """The plain steps' way to Phi's eigenvectors: ``"dense"``, ``"hybrid"`` or
    ``"matrix_free"`` (``phi_solver="auto"`` by the flop counts above)."""
    if phi_solver not in PHI_SOLVERS:
        raise ValueError(f"phi_solver must be one of {', '.join(map(repr, PHI_SOLVERS))}, "
                         f"got {phi_solver!r}")
    if not kernel.depends_on_w:
        return "dense"
    if phi_solver != "auto":
        return phi_solver
    if n < _MF_MIN_SAMPLES:
        return "dense"
    ratio = _PassCosts.of(n, d, q).ratio
    if ratio > _MF_EXPECTED_PASSES:
        return "matrix_free"
    return "hybrid" if ratio > _HYBRID_EXPECTED_PASSES else "dense"


def _relative_residual(W, PW):
    """max_j ||(Phi W - W W^T Phi W)_j|| / max |eig(W^T Phi W)|: the block
    eigensolver's measure, at its start."""
    ritz = W.T @ PW
    scale = float(np.abs(np.linalg.eigvalsh(0.5 * (ritz + ritz.T))).max())
    residual = float(np.linalg.norm(PW - W @ ritz, axis=0).max())
    return residual / scale if scale > 0 else np.inf


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
    objective : float
        ``Tr(Gamma K_XW)`` at the returned W.
    history : list of dict
        One entry per iterate (iteration 0 is the start): ``objective``,
        ``eigenvalues``, ``eigenvalue_change``, ``angle`` (largest principal
        angle to the previous W, radians), ``step`` ("start", "plain" or
        "trust-region"), ``gradient_norm`` (Riemannian, NaN where Phi was not
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


def principal_angle(U: ArrayLike, V: ArrayLike) -> float:
    r"""Largest principal angle between the column spaces of U and V (radians),
    :math:`\arccos \sigma_{\min}(U^T V)` for orthonormal U, V."""
    U, V = np.asarray(U, dtype=np.float64), np.asarray(V, dtype=np.float64)
    if U.ndim != 2 or V.ndim != 2 or U.shape[0] != V.shape[0]:
        raise ValueError(f"U and V must be 2-D with the same number of rows, got shapes "
                         f"{U.shape} and {V.shape}")
    if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):
        raise ValueError("U or V contains NaN or infinite values")
    s = np.linalg.svd(U.T @ V, compute_uv=False)
    if not s.size:
        return 0.0
    angle = float(np.arccos(np.clip(s.min(), -1.0, 1.0)))
    if angle < 0.5:
        # arccos near 1 resolves angles only down to ~1e-8; for small angles
        # use sin(theta_max) = ||(I - UU^T) V||_2 (orthonormal U, V).
        angle = float(np.arcsin(min(1.0, float(np.linalg.norm(V - U @ (U.T @ V), 2)))))
    return angle


def choose_n_components(eigenvalues: ArrayLike, *, minimum: int = 1) -> int:
    """q by the largest eigengap ``lambda_q - lambda_{q+1}`` of a descending
    spectrum, with q >= ``minimum`` (dissertation equation 3.11)."""
    vals = np.sort(check_vector(eigenvalues, "eigenvalues"))[::-1]
    d = vals.shape[0]
    minimum = max(1, min(int(minimum), d))
    if minimum >= d:
        return d
    gaps = vals[minimum - 1:d - 1] - vals[minimum:d]
    return int(minimum + np.argmax(gaps))


def _check_orthonormal_start(W0, d, q):
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.ndim != 2 or W0.shape != (d, q):
        raise ValueError(f"W0 must have shape ({d}, {q}), got {W0.shape}")
    if not np.all(np.isfinite(W0)):
        raise ValueError("W0 contains NaN or infinite values")
    Q, _ = np.linalg.qr(W0)
    return Q


class _Point:
    """An iterate: W, f(W) and whichever of the dense Phi(W) / Phi(W) W the last pass gave.

    ``exact``: computed in float64 (else in the problem's float32). ``coarse``:
    its dense Phi was made in float32 for a float64 problem (a coarse step);
    its objective is exact all the same. ``E``, ``PE``: extra start
    columns of the block eigensolver (orthonormal, orthogonal to W) and their
    products Phi(W) E, made by the same thin pass as Phi(W) W."""

    __slots__ = ("W", "objective", "phi", "PW", "exact", "coarse", "E", "PE")

    def __init__(self, W, objective, *, phi=None, PW=None, exact=True, coarse=False, E=None,
                 PE=None):
        self.W, self.objective, self.phi, self.PW, self.exact = W, float(objective), phi, PW, exact
        self.coarse, self.E, self.PE = coarse, E, PE

    @property
    def exact_phi(self):
        """The dense Phi(W) in float64, when the point carries it."""
        return self.phi if self.exact and not self.coarse else None

    @property
    def pw(self):
        if self.PW is None:
            self.PW = self.phi @ self.W
        return self.PW

    def gradient_norm(self):
        return float(np.linalg.norm(riemannian_gradient(self.pw, self.W)))


def _dense64(problem, point):
    """The point with its dense Phi in float64 (one pass unless already known)."""
    if point.exact_phi is not None:
        return point
    phi, f = problem.phi(point.W)
    # an exact objective is kept: the two passes may differ in the last bit,
    # and the history's objectives must not decrease by rounding
    return _Point(point.W, point.objective if point.exact else f, phi=phi)


class _PlainStep:
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
    never forms it; ``"hybrid"`` forms it for the first step only, whose
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
    step is exact to ``tol``.

    Every dense Phi of a float64 problem is coarse (float32) while the last
    step turned W by more than :data:`_COARSE_ANGLE` (``coarse=True``; see
    there); an eigensolve of a coarse Phi says so (``info["coarse"]``), and the
    driver stops on it only for a loose tol (:data:`_COARSE_STOP_TOL`).
    """

    def __init__(self, problem, q, *, mode, eigen_solver, dense_final, tol, coarse=True):
        self.problem, self.q, self.mode = problem, q, mode
        self.eigen_solver, self.dense_final, self.tol = eigen_solver, dense_final, tol
        self.costs = _PassCosts.of(problem.n, problem.d, q)
        self.block_budget = _MF_MAX_ITER if mode != "hybrid" else \
            int(min(_MF_MAX_ITER, max(10, 2 * self.costs.ratio)))
        self.rate = _BLOCK_RATE     # residual reduction per block iteration, as last observed
        self.exact = problem.native_dtype == np.float64
        self.extra = None           # extra Ritz vectors carried between matrix-free eigensolves
        self.dense_start = mode == "hybrid"     # the hybrid's first step forms Phi
        self.coarse = bool(coarse) and problem.has_coarse and problem.depends_on_w and \
            problem.n >= _COARSE_MIN_SAMPLES and problem.d >= _COARSE_MIN_FEATURES
        self.coarse_steps = 0

    def _phi(self, W, final=False):
        """A dense Phi pass: coarse while the steps are far from the maximum
        (never at the returned W, whose Phi the certificate uses)."""
        if self.coarse and not final:
            self.coarse_steps += 1
            phi, f = self.problem.coarse_phi(W)
            return phi, f, True
        phi, f = self.problem.phi(W, native=True)
        return phi, f, False

    def moved(self, angle):
        """The driver's report of how far the last step turned W (inf: the start
        from Phi_0, far from the maximum). Ends the coarse steps for good when
        the step was short or their budget is spent."""
        if self.coarse and not (angle > _COARSE_ANGLE and self.coarse_steps < _MAX_COARSE_STEPS):
            self.coarse = False
            self.problem.release_coarse()

    def _block_is_cheaper(self, start):
        """The hybrid's choice: the block iterations predicted from the start
        residual cost less than a dense pass."""
        if start <= self.tol:
            return True
        iterations = np.log(self.tol / start) / np.log(self.rate)
        return iterations < self.costs.ratio

    @property
    def thin_certificate(self):
        """The certificate uses thin products (no dense Phi at the returned W)."""
        return self.mode != "dense"

    def eigensolve(self, point):
        start = _relative_residual(point.W, point.pw) if point.phi is None else np.nan
        if point.phi is None and (self.mode == "matrix_free" or self._block_is_cheaper(start)):
            W = point.W
            if point.E is not None:
                V0, AV0, extra = np.hstack([W, point.E]), np.hstack([point.pw, point.PE]), \
                    np.empty((W.shape[0], 0))
            else:
                V0, AV0, extra = W, point.pw, self.extra
            vals, V, info = block_top_eigenvectors(
                lambda S: self.problem.phi_product(W, S, native=True)[0], V0, AV0, self.q,
                extra=extra, tol=self.tol, max_iter=self.block_budget)
            self.extra = info["extra"]
            if info["iterations"] > 1 and start > info["residual"] > 0:
                self.rate = float(np.clip((info["residual"] / start) ** (1 / info["iterations"]),
                                          0.05, 0.95))
            info["method"] = (f"matrix-free ({info['iterations']} it, "
                              f"residual {info['residual']:.1e})")
            if info["converged"] or self.mode == "matrix_free":
                return vals, V, info
        if point.phi is None:
            point.phi, _, point.coarse = self._phi(point.W)
        if self.mode != "hybrid":
            vals, V, info = top_eigenvectors(point.phi, self.q, point.W, method=self.eigen_solver)
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

    def evaluate(self, V, final=False):
        dense = not final and self.dense_start if self.mode != "dense" else \
            not final or self.dense_final
        if not dense:
            if self.extra is None or (final and not self.dense_final):
                PV, f = self.problem.phi_product(V, V, native=True)
                return _Point(V, f, PW=PV, exact=self.exact)
            E = orthonormal_complement(self.extra, V)
            both, f = self.problem.phi_product(V, np.hstack([V, E]), native=True)
            q = V.shape[1]
            return _Point(V, f, PW=both[:, :q], exact=self.exact, E=E, PE=both[:, q:])
        phi, f, coarse = self._phi(V, final)
        if coarse:
            # f decides whether the step is accepted and is the history's
            # record: exact, by one objective pass (a quarter of a dense pass
            # at d = 64, a thirtieth at d = 784)
            f = self.problem.objective(V, native=True)
        return _Point(V, f, phi=phi, exact=self.exact, coarse=coarse)


#: the eigenvalue rule also needs W to have settled: a step that turns W by more
#: than this (radians) is not convergence, however little the eigenvalues moved
_EIGENVALUE_RULE_MAX_ANGLE = 0.1


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


def _check_solver_options(criterion, tol, gtol, max_iter):
    if criterion not in ("eigenvalues", "angle", "gradient"):
        raise ValueError(f"criterion must be 'eigenvalues', 'angle' or 'gradient', got {criterion!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol}")
    if not (gtol > 0):
        raise ValueError(f"gtol must be positive, got {gtol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")


# --------------------------------------------------------------------------
def ism(X: ArrayLike, gamma: Gamma | ArrayLike, kernel: KernelLike = "gaussian",
        n_components: int | None = 2, *, W0: ArrayLike | None = None, tol: float = 0.01,
        criterion: str = "eigenvalues", max_iter: int = 100, eigen_solver: str = "auto",
        n_threads: int | None = None, random_state: RandomStateLike = None, warn: bool = True,
        gtol: float = 1e-6, certify: bool = True,
        callback: Callable[[dict[str, Any]], Any] | None = None, phi_solver: str = "auto",
        dtype: DTypeLike | None = None, min_components: int = 1,
        approximation: Any = None) -> ISMResult:
    r"""Iterative Spectral Method: maximise :math:`\mathrm{Tr}(\Gamma K_{XW})` subject to :math:`W^TW = I`.

    Plain fixed point :math:`W \leftarrow V_{\max}(\Phi(W))` (ISM paper,
    Algorithm 1) while it climbs, started from the W-free :math:`\Phi_0`
    (Theorem 3) unless ``W0`` is given; a Riemannian trust region where it does
    not. :math:`V_{\max}` are the eigenvectors of the q largest *algebraic*
    eigenvalues (Phi is indefinite). A kernel whose Phi does not depend on W
    (linear, squared) is solved by the first eigendecomposition.

    **Why a safeguard.** The plain fixed point is fast where it converges, but
    nothing makes it monotone: on some problems (e.g. face images, 20
    identities, Gaussian kernel, q = 5) it cycles with period two forever, or
    its eigenvalue rule stops it while the objective is still falling. ikdr
    therefore evaluates the objective of every plain candidate (it did so
    anyway for ``history``) and

    1. accepts the plain step while it raises the objective. Where the plain
       iteration converges monotonically, the iterates, the stopping rule
       (``criterion``, ``tol``) and the answer are exactly those of Algorithm 1;
    2. when a plain step would lower the objective (cycling, stalling, tied
       eigenvalues), refuses it and switches, from the best iterate, to a
       Riemannian trust-region Newton method on the Grassmann manifold
       (Absil, Baker, Gallivan 2007): exact gradient :math:`2(I - WW^T)\Phi W`,
       Hessian-vector products from Phi (the kernel-curvature term by a forward
       difference of the gradient: one Phi per product), steps along geodesics,
       a candidate is accepted only if the objective rises as the model
       predicts. Its truncated CG is preconditioned by the *surrogate* Hessian
       (the Hessian of :math:`\mathrm{Tr}(V^T\Phi(W)V)`, diagonal in the
       eigenbases of :math:`W^T\Phi W` and :math:`W_\perp^T\Phi W_\perp`), so
       its first step is the linearised ISM step and the CG iterations only add
       the curvature the plain fixed point ignores. It is monotone, converges
       to points satisfying the second-order necessary conditions from any
       start, and quadratically near a non-degenerate maximum; it stops when the
       Riemannian gradient norm is at most ``gtol`` times the objective.

    With ``criterion="gradient"`` the plain steps also hand over to the trust
    region as soon as their convergence is slow (gradient shrinking by less
    than half per step), and every run ends with a relative gradient norm
    below ``gtol``: use it when a certified local maximum matters more than
    matching the papers' iteration counts.

    Parameters
    ----------
    X : ndarray (n, d), float64 or float32
        Data, usually standardised. Its dtype selects the precision of the
        C++ products of the plain steps (the trust region works in float64).
    gamma : Gamma
        Paradigm matrix (see :mod:`ikdr.gamma`).
    kernel : str or Kernel
        Any ISM kernel or conic combination; data-dependent parameters
        (``sigma="median"``) are fitted on X.
    n_components : int or None
        q, 1 <= q <= d. None: the q of the largest eigengap of :math:`\Phi_0`
        (:func:`choose_n_components`, dissertation Eq. 3.11) with q >=
        ``min_components``, or W0's number of columns when W0 is given.
    W0 : ndarray (d, q), optional
        Warm start (orthonormalised); skips Phi_0.
    tol : float, default=0.01
        Plain fixed point's rule: stop when
        :math:`\|\Lambda_k - \Lambda_{k-1}\| / \|\Lambda_k\| < tol`
        (``criterion="eigenvalues"``, the papers' rule with delta = 0.01, and
        the step turned W by less than 0.1 rad: a period-two cycle can repeat
        its eigenvalues while W swings) or when the largest principal angle
        between successive W is below ``tol`` radians (``criterion="angle"``).
    criterion : {"eigenvalues", "angle", "gradient"}
        ``"gradient"``: stop only when the relative Riemannian gradient norm is
        below ``gtol`` (``tol`` is unused).
    max_iter : int, default=100
        Plain plus trust-region iterations.
    eigen_solver : {"auto", "lapack", "power"}
        See :func:`ikdr._eig.top_eigenvectors`.
    n_threads : int, optional
        Threads of the C++ core (default :func:`ikdr.get_num_threads`).
    warn : bool, default=True
        Emit a ``ConvergenceWarning`` when ``max_iter`` is reached or the trust
        region stalls before its tolerance.
    gtol : float, default=1e-6
        Relative Riemannian gradient norm :math:`\|g\|_F / |f|` at which the
        trust region (and ``criterion="gradient"``) stops.
    certify : bool, default=True
        Compute the full certificate (:class:`ISMConvergence`), including the
        largest Hessian eigenvalue (LOBPCG on Hessian-vector products, one
        thin pass each, preconditioned by the surrogate, run to a residual of
        1e-4 times the Hessian's scale or 40 products; see
        :mod:`ikdr._certificate`). With False, only the gradient is
        computed, from the last pass of the solve, and the Hessian fields are
        NaN / None: use it in inner loops.
    callback : callable, optional
        Called with each new ``history`` entry (a dict) as it is recorded;
        the estimators' ``verbose`` output uses it.
    dtype : {None, numpy.float64, numpy.float32}, default=None
        Precision of the plain steps' C++ products; None keeps X's own
        (float32 or float64). The safeguarded phase and the certificate
        always work in float64.
    phi_solver : {"auto", "dense", "hybrid", "matrix_free"}, default="auto"
        How a plain step finds the top-q eigenvectors of :math:`\Phi(W)`.
        ``"dense"`` forms the d x d :math:`\Phi = X^T L(\Psi) X` (one fused pass
        with the d columns of X: :math:`O(n^2 d)`) and calls LAPACK.
        ``"matrix_free"`` never forms it: a block eigensolver
        (:func:`ikdr._eig.block_top_eigenvectors`, LOBPCG on :math:`[W, R, P]`
        plus a few extra Ritz vectors) warm-started from the current W uses
        only products :math:`V \mapsto X^T L(\Psi)(XV)`, one fused pass with
        the few columns of XV each (:math:`O(n^2 q)`); the pass that evaluates
        a candidate W also yields :math:`\Phi(W)W` (the next gradient and the
        next eigensolve's first product) and, for a Gaussian kernel, its
        objective. ``"hybrid"`` forms Phi for the first step (its start, the
        top eigenvectors of :math:`\Phi_0`, is far from those of
        :math:`\Phi(W_1)`, and the block eigensolver would need about 40
        iterations), seeds the block eigensolver with that Phi's next
        eigenvectors, and then takes each step the cheaper way: the block
        iterations are predicted from the residual of W (known from the thin
        pass that evaluated it) and the convergence rate observed so far, and
        Phi is formed when they would cost more than a dense pass (or when a
        block eigensolve does not converge). ``"auto"`` chooses by the
        estimated flops per kernel-panel entry, F about 60 to form an entry,
        a dense pass F + 2d, a block iteration F + 4p + 8dp/n with
        p = q + max(10, q) columns: matrix-free when a dense pass costs more
        than 20 block iterations (above d of about 1,600 for q = 10 and
        n = 10,000), hybrid when it costs more than 8 (above d of about 570),
        dense otherwise or when n < 1000. The safeguarded (trust-region)
        phase, which is rarely needed, forms :math:`\Phi` densely; the
        certificate after a hybrid or matrix-free run uses the same thin
        products (its eigengap by a short block iteration, its Hessian
        eigenvalue unpreconditioned).
    min_components : int, default=1
        Smallest q considered when ``n_components=None``.
    approximation : ikdr._nystrom.Approximation or None, default=None
        Landmark (Nystrom) or random-feature passes (:mod:`ikdr._nystrom`):
        the driver runs unchanged on its
        :class:`ikdr._nystrom.LandmarkProblem`, whose every Phi, Phi-product
        and objective costs O(n d m) (X read in row blocks, never copied).
        Use :func:`ikdr._nystrom.approximate_ism` or the estimators'
        ``approximation`` parameter rather than building it by hand.
        A row-chunked ``dask.array.Array`` X takes this hook by itself
        (:class:`ikdr.distributed.Passes`): every pass runs as Dask tasks on
        block pairs (:class:`ikdr.distributed.DaskProblem`) while W, the
        eigenproblems and the trust region stay here (docs/distributed.md).

    Notes
    -----
    **Passes.** Every n^2 pass is counted in ``convergence`` (``phi_evaluations``,
    ``objective_evaluations``, ``hessian_products``). A plain dense run that
    converges makes :math:`\Phi_0` without an n^2 pass when Gamma is
    factored, one pass per iteration (the pass that forms :math:`\Phi(W_k)`
    for the next step also gives :math:`f(W_k)`), and ends with one thin pass
    (:math:`\Phi W` and f, q columns) when ``certify=False``:
    ``phi_evaluations <= n_iter + 2``.

    Returns
    -------
    ISMResult

    References
    ----------
    Wu, Miller, Chang, Sznaier, Dy. Solving Interpretable Kernel Dimension
    Reduction. NeurIPS 2019, Algorithm 1 and Eq. (1).
    Wu. Kernel dependence methods for interpretable representations,
    dissertation, 2020, Theorem 5.1 and Eq. (C.73) (eigengap condition).
    Absil, Baker, Gallivan. Trust-region methods on Riemannian manifolds.
    Found. Comput. Math. 7 (2007), Algorithms 1-2.
    """
    if not isinstance(gamma, Gamma):
        raise TypeError(f"gamma must be an ikdr.gamma.Gamma, got {type(gamma).__name__}")
    # issue 17: a row-chunked dask X gets the distributed passes through the same hook
    approximation = _distributed.solver_hook(X, approximation, dtype)
    # the approximate problem validates X by row blocks (no copy of a memmap)
    X = check_float_matrix(X, "X") if approximation is None else approximation.check_data(X)
    if dtype is not None and approximation is None:
        if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(f"dtype must be None, numpy.float64 or numpy.float32, got {dtype!r}")
        X = np.ascontiguousarray(X, dtype=dtype)
    n, d = X.shape
    if gamma.n != n:
        raise ValueError(f"Gamma is {gamma.n} x {gamma.n} but X has {n} rows")
    _check_solver_options(criterion, tol, gtol, max_iter)
    if n_components is not None:
        n_components = int(n_components)
        if not 1 <= n_components <= d:
            raise ValueError(f"n_components={n_components} must be between 1 and d={d}")
    kernel = make_kernel(kernel)
    if not kernel._is_resolved():
        kernel = (kernel.fit(X, random_state=random_state) if approximation is None else
                  approximation.fit_kernel(kernel, X, random_state=random_state))
    problem = (KernelProblem(X, gamma, kernel, n_threads) if approximation is None else
               approximation.problem(X, gamma, kernel, n_threads))
    # The d x d algebra between passes (eigh, small products) on one BLAS thread:
    # a threaded BLAS's idle workers spin-wait after each call and take the
    # cores from the next pass's threads (measured 1.4x slower passes on 2 cores).
    with single_threaded_blas():
        result = solve(problem, n_components, W0=W0, tol=tol, criterion=criterion,
                       max_iter=max_iter, eigen_solver=eigen_solver, warn=warn, gtol=gtol,
                       certify=certify, callback=callback, phi_solver=phi_solver,
                       min_components=min_components, _stacklevel=3)
    result.kernel = kernel
    return result


def solve(problem, n_components, *, W0=None, tol=0.01, criterion="eigenvalues", max_iter=100,
          eigen_solver="auto", warn=True, gtol=1e-6, certify=True, callback=None,
          phi_solver="auto", min_components=1, coarse_steps=True, _stacklevel=2):
    """The ISM driver on any problem of the interface of :mod:`ikdr._ism_problem`.

    Same options as :func:`ism` (which validates them, builds a
    :class:`ikdr._ism_problem.KernelProblem` and calls this); returns an
    :class:`ISMResult` with ``kernel=None``. ``coarse_steps=False`` makes every
    dense Phi pass in the problem's own precision (see :data:`_COARSE_ANGLE`).
    """
    _check_solver_options(criterion, tol, gtol, max_iter)
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
    mode = phi_mode(phi_solver, problem, problem.n, d, q)
    eps = float(np.finfo(problem.native_dtype).eps)
    mf_tol = max(_MF_TOL, 50 * eps) if problem.native_dtype == np.float32 else _MF_TOL
    step = _PlainStep(problem, q, mode=mode, eigen_solver=eigen_solver,
                      dense_final=certify, tol=mf_tol, coarse=coarse_steps)
    if W0 is not None and problem.depends_on_w:
        # A warm start is the first iterate itself, not the first plain step from it:
        # that step can descend (a cycling problem, or a start near another basin's
        # maximum) and must meet the same safeguard as every later one. The
        # eigenvalue rule's first reference is W0's Ritz values. A warm start is
        # presumed near the maximum: no coarse steps.
        step.moved(0.0)
        point = step.evaluate(_check_orthonormal_start(W0, d, q))
        ritz = point.W.T @ point.pw
        lam = np.linalg.eigvalsh(0.5 * (ritz + ritz.T))[::-1].copy()
        info = {"method": "warm start"}
    elif W0 is None:
        lam, W, info = top_eigenvectors(phi0, q, method="lapack" if eigen_solver == "auto"
                                        else eigen_solver)
        point = step.evaluate(W) if problem.depends_on_w else None
    else:   # W-free Phi: the warm start only seeds the eigensolver
        W = _check_orthonormal_start(W0, d, q)
        phi0, _ = problem.phi(W)
        lam, W, info = top_eigenvectors(phi0, q, W, method=eigen_solver)
    if not problem.depends_on_w:   # Phi is W-free: phi0 is Phi(W) exactly and W the answer
        if phi0 is None:
            phi0 = problem.phi0()
        point = _Point(W, problem.objective(W), phi=phi0)
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
                (info.get("coarse", False) and tol < _COARSE_STOP_TOL)
            rule = None if rough else _plain_stopping_rule(criterion, change, angle, tol)
            step.moved(angle)
            new = step.evaluate(V, final=rule is not None)
            if new.objective < point.objective - 16 * eps * abs(point.objective):
                # The plain step would descend (cycle / overshoot): refuse it.
                rejected += 1
                phase = "trust-region"
                step.moved(0.0)
                continue
            n_iter += 1
            plain_steps += 1
            point, lam = new, lam_new
            record(point, lam, change, angle, info["method"], "plain")
            if rule is not None:
                converged, stopping_rule = True, rule
            elif criterion == "gradient":
                if plain_steps >= 2 and gnorm > _SLOW_CONTRACTION * prev_gnorm:
                    phase = "trust-region"
                prev_gnorm = gnorm
            continue

        # ---- safeguarded phase: one Riemannian trust-region iteration (float64) ----
        point = _dense64(problem, point)
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
            point = _Point(W_new, f_new, exact=True)
            record(point, nan, np.nan, angle, "trust-region", "trust-region")
        else:
            rejected += 1
            record(point, nan, np.nan, 0.0, "trust-region", "trust-region")
            if stalled:
                stopping_rule = "stalled"
                break

    # ---- the returned point and its certificate ----
    if phase != "plain" and problem.depends_on_w:
        point = _dense64(problem, point)
        # Rotate W to the Ritz vectors of Phi(W): eigen-like columns, descending.
        vals, vecs = np.linalg.eigh(point.W.T @ point.phi @ point.W)
        point = _Point(_fix_signs(point.W @ vecs[:, ::-1]), point.objective, phi=point.phi)
        lam = vals[::-1].copy()
        history[-1]["eigenvalues"] = lam.copy()
    if not stalled and not converged:
        stopping_rule = "max_iter"
    solve_time = time.perf_counter() - t0
    if certify and not step.thin_certificate:
        point = _dense64(problem, point)
    exact = point.exact
    fields = certify_point(problem, point.W, point.objective,
                           phi=point.exact_phi, PW=point.PW if exact else None,
                           full=certify, gtol=gtol,
                           extra=point.E if point.E is not None and exact else step.extra,
                           extra_product=point.PE if exact else None)
    certificate = ISMConvergence(
        converged=bool(converged), stopping_rule=stopping_rule, objective=point.objective,
        plain_steps=plain_steps, safeguarded_steps=tr_steps, rejected_steps=rejected,
        hessian_products=problem.n_hessian, phi_evaluations=problem.n_phi,
        dense_phi_evaluations=problem.n_dense_phi, coarse_phi_evaluations=problem.n_coarse_phi,
        objective_evaluations=problem.n_objective, **fields)
    history[-1]["gradient_norm"] = certificate.gradient_norm
    certificate.solve_time = solve_time
    certificate.certificate_time = time.perf_counter() - t0 - solve_time
    if not converged and warn:
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
