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
  taken by a finite difference of :math:`\nabla f` along Z (one extra Phi per
  product, relative accuracy about 1e-8); the rest is exact.
* The *surrogate* part :math:`A[Z] = 2(I - WW^T)(\Phi Z - Z\,W^T\Phi W)` is the
  Hessian of :math:`\mathrm{Tr}(V^T\Phi(W)V)` that the plain fixed point
  maximises. In the bases that diagonalise :math:`W^T\Phi W` (values
  :math:`\nu_j`) and :math:`W_\perp^T\Phi W_\perp` (values :math:`\mu_i`) it is
  the diagonal :math:`2(\mu_i - \nu_j)`; it is negative definite exactly when
  the eigengap of dissertation Eq. C.73 is positive. Its absolute value
  preconditions the trust-region solver, which makes the first (Cauchy) step of
  the trust region the linearised plain ISM step.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning

from ._eig import _fix_signs, block_top_eigenvectors, top_eigenvectors
from ._validation import check_float_matrix, check_vector
from .gamma import Gamma
from .kernels import Kernel, make_kernel
from ._typing import ArrayLike, DTypeLike, KernelLike, RandomStateLike

__all__ = ["ism", "ISMResult", "ISMConvergence", "principal_angle", "choose_n_components"]

#: relative finite-difference step of Hessian-vector products (forward differences)
_FD_STEP = 1e-7
#: relative step of central differences (tests, optional)
_FD_STEP_CENTRAL = 1e-4
#: plain steps are abandoned (gradient criterion) when the gradient shrinks by less than this per step
_SLOW_CONTRACTION = 0.5
#: tangent dimensions up to which the certificate assembles the full Hessian
_DENSE_HESSIAN_MAX_DIM = 12

# Dense or matrix-free Phi (``phi_solver="auto"``). Costs per entry of the n x n
# kernel panel, in flops: every fused pass forms the panel (Gram row, Gamma row,
# exp, combine: about _PANEL_FLOPS, measured by benchmarks/bench_core_rate.py)
# and multiplies it by its right-hand side (2 flops per column). Forming Phi
# passes X itself (d columns); a matrix-free ISM step makes about
# _MF_EXPECTED_PASSES passes with at most 2p columns (p = q + extra Ritz
# vectors): measured 2 (warm, tol 1e-6) to 20 (warm, 1e-8) to 50 (from Phi_0)
# block iterations when Phi's q-th eigenvalue lies inside its bulk (supervised
# ISM with q = number of classes). Matrix-free wins when
#     _PANEL_FLOPS + 2 d  >  _MF_EXPECTED_PASSES (_PANEL_FLOPS + 4 p),
# i.e. for q = 10 (p = 20) above d ~ 1,370. Below _MF_MIN_SAMPLES the Python
# overhead of the extra passes dominates and Phi is formed densely.
_PANEL_FLOPS = 60
_MF_EXPECTED_PASSES = 20
_MF_MIN_SAMPLES = 1000
#: relative residual (to the largest Ritz value) of the matrix-free eigensolves
_MF_TOL = 1e-8
_MF_MAX_ITER = 60
#: iterations of the certificate's matrix-free Hessian eigenvalue estimate
_MF_HESSIAN_ITER = 10
#: above this d (and from _MF_MIN_SAMPLES samples) the first-order certificate
#: (certify=False) of a plain run takes the gradient from one thin pass instead
#: of forming Phi (the full certificate's Hessian eigenvalue needs the dense
#: Phi's preconditioner, and costs about as much as the matrix-free one at d = 784)
_DENSE_CERTIFICATE_MAX_DIM = 256


def _extra_columns(d, q):
    return min(max(10, q), d - q)


def _use_matrix_free(phi_solver, kernel, n, d, q):
    """The rule of ``phi_solver="auto"`` (see the constants above)."""
    if phi_solver not in ("auto", "dense", "matrix_free"):
        raise ValueError(f"phi_solver must be 'auto', 'dense' or 'matrix_free', got {phi_solver!r}")
    if not kernel.depends_on_w or phi_solver == "dense":
        return False
    if phi_solver == "matrix_free":
        return True
    p = q + _extra_columns(d, q)
    dense = _PANEL_FLOPS + 2 * d
    matrix_free = _MF_EXPECTED_PASSES * (_PANEL_FLOPS + 4 * p)
    return n >= _MF_MIN_SAMPLES and dense > matrix_free


@dataclass
class ISMConvergence:
    r"""Convergence certificate of an ISM solution (``ISMResult.convergence``,
    ``convergence_`` of the estimators).

    Every quantity is measured at the returned W, for the maximisation of
    :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})` on the Grassmann manifold.

    Attributes
    ----------
    converged : bool
        The stopping rule was met before ``max_iter``.
    stopping_rule : str
        Which rule stopped the solver: ``"eigenvalues"`` or ``"angle"`` (the
        plain fixed point's rule, ``tol``), ``"gradient"`` (relative gradient
        norm below ``gtol``), ``"exact"`` (Phi does not depend on W: one
        eigendecomposition solves the problem) or ``"max_iter"`` / ``"stalled"``.
    objective : float
    gradient_norm : float
        :math:`\|2(I - WW^T)\Phi(W)W\|_F`, the Riemannian gradient norm.
    relative_gradient_norm : float
        ``gradient_norm / |objective|``.
    eigengap : float
        :math:`\min \mathrm{eig}(W^T\Phi W) - \max \mathrm{eig}(W_\perp^T\Phi W_\perp)`
        for ikdr's :math:`\Phi` (whose *largest* eigenvectors are chosen). Positive
        means W spans the top-q eigenspace of :math:`\Phi(W)` (a fixed point of
        the plain iteration). This is the gap of dissertation Eq. C.73, where the
        proof uses :math:`-\Phi` and writes it as min(unchosen) - max(chosen).
        A local maximum need not have a positive gap: the kernel-curvature term
        :math:`\mathcal{T}_1` can make a W with a negative gap a maximum and a
        fixed point with a positive gap a saddle, which is why the Hessian is
        checked directly.
    hessian_max_eigenvalue : float
        Largest eigenvalue of the Riemannian Hessian over the tangent space
        (estimated from Hessian-vector products, relative accuracy about 1e-8:
        full assembly for tangent dimension (d - q) q <= 12, preconditioned
        LOBPCG otherwise). A local maximum needs
        it <= 0 (second-order necessary condition); NaN when not computed.
    hessian_scale : float
        Largest :math:`|2(\mu_i - \nu_j)|` of the surrogate Hessian, the scale
        against which ``hessian_max_eigenvalue`` is judged.
    first_order : bool
        ``relative_gradient_norm <= gtol``.
    second_order : bool or None
        ``hessian_max_eigenvalue <= 1e-5 * hessian_scale`` (None when not computed).
    plain_steps : int
        Accepted plain fixed-point steps :math:`W \leftarrow V_{\max}(\Phi(W))`.
    safeguarded_steps : int
        Trust-region iterations (accepted or rejected).
    rejected_steps : int
        Plain steps refused because they lowered the objective, plus rejected
        trust-region candidates.
    hessian_products : int
        Hessian-vector products used by the solver (each costs one Phi).
    phi_evaluations, objective_evaluations : int
        Work done, certificate included.
    solve_time, certificate_time : float
        Seconds spent reaching W and certifying it.
    """

    converged: bool
    stopping_rule: str
    objective: float
    gradient_norm: float
    relative_gradient_norm: float
    eigengap: float
    hessian_max_eigenvalue: float
    hessian_scale: float
    first_order: bool
    second_order: bool | None
    plain_steps: int
    safeguarded_steps: int
    rejected_steps: int
    hessian_products: int
    phi_evaluations: int
    objective_evaluations: int
    solve_time: float = np.nan
    certificate_time: float = np.nan

    @property
    def local_maximum(self):
        """First- and second-order necessary conditions both hold."""
        return bool(self.first_order and self.second_order)

    def as_dict(self):
        return asdict(self)


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
    spectrum, with q >= ``minimum`` (dissertation Eq. 3.11)."""
    vals = np.sort(check_vector(eigenvalues, "eigenvalues"))[::-1]
    d = vals.shape[0]
    minimum = max(1, min(int(minimum), d))
    if minimum >= d:
        return d
    gaps = vals[minimum - 1:d - 1] - vals[minimum:d]
    return int(minimum + np.argmax(gaps))


def _check_orthonormal_start(W0, d, q):
    W0 = np.asarray(W0, dtype=np.float64)
    if W0.shape != (d, q):
        raise ValueError(f"W0 must have shape ({d}, {q}), got {W0.shape}")
    if not np.all(np.isfinite(W0)):
        raise ValueError("W0 contains NaN or infinite values")
    Q, _ = np.linalg.qr(W0)
    return Q


# --------------------------------------------------------------------------
# Grassmann geometry of f(W) = Tr(Gamma K_XW)
# --------------------------------------------------------------------------
class _Problem:
    """Objective, Phi, gradient and Hessian-vector products for one (X, Gamma, kernel).

    ``native`` evaluations use X in its own dtype (the plain iteration, as
    before); the safeguarded phase and the certificate use float64, since a
    relative gradient of 1e-6 and finite differences need double precision.
    """

    def __init__(self, X, gamma, kernel, n_threads):
        self.X = X
        self.X64 = X if X.dtype == np.float64 else X.astype(np.float64)
        self.gamma, self.kernel, self.n_threads = gamma, kernel, n_threads
        self.n_phi = 0
        self.n_objective = 0
        self.n_hessian = 0

    def phi0(self):
        r""":math:`\Phi_0`, the W-free start (float64)."""
        return self.kernel.phi0(self.X64, self.gamma)

    def objective(self, W, native=False):
        self.n_objective += 1
        X = self.X if native else self.X64
        return self.kernel.objective(X, W.astype(X.dtype, copy=False), self.gamma,
                                     n_threads=self.n_threads)

    def phi(self, W, native=False):
        self.n_phi += 1
        X = self.X if native else self.X64
        return np.asarray(self.kernel.phi(X, W.astype(X.dtype, copy=False), self.gamma,
                                          n_threads=self.n_threads), dtype=np.float64)

    def phi_products(self, W, V, native=False):
        r""":math:`\Phi(W) V` (d x k) by one fused product with the n x k right-hand
        side XV, without forming the d x d :math:`\Phi`, and the objective
        :math:`f(W)` read off the same pass. Returns (PhiV float64, objective)."""
        self.n_phi += 1
        self.n_objective += 1
        X = self.X if native else self.X64
        return self.kernel.phi_product(X, W.astype(X.dtype, copy=False), self.gamma,
                                       V.astype(X.dtype, copy=False), n_threads=self.n_threads)

    def phi_and_objective(self, W, native=False):
        r"""The dense :math:`\Phi(W)` and :math:`f(W)`, one fused pass with rhs X."""
        self.n_phi += 1
        self.n_objective += 1
        X = self.X if native else self.X64
        return self.kernel.phi_product(X, W.astype(X.dtype, copy=False), self.gamma,
                                       n_threads=self.n_threads)

    def phi_times_w(self, W, R):
        r""":math:`\Phi(W) R` without forming the d x d :math:`\Phi`: one fused product
        with the n x q right-hand side XR instead of the n x d X (float64)."""
        self.n_phi += 1
        return self.kernel.phi_product(self.X64, W, self.gamma, R, n_threads=self.n_threads)[0]

    def hessian_product(self, W, phi, Z, *, central=False):
        r"""Riemannian Hessian of f at W applied to the tangent vector Z.

        :math:`P(2\Phi Z + 2 D\Phi[Z] W) - 2 Z W^T\Phi W`; the kernel-curvature
        term :math:`D\Phi[Z] W` by a forward (or central) difference of
        :math:`\Phi(\cdot) W`, each side one fused product with q right-hand sides.
        """
        self.n_hessian += 1
        norm = np.linalg.norm(Z)
        if norm == 0:
            return np.zeros_like(Z)
        if central:
            t = _FD_STEP_CENTRAL / norm
            dphi_w = (self.phi_times_w(W + t * Z, W) - self.phi_times_w(W - t * Z, W)) / (2 * t)
        else:
            t = _FD_STEP / norm
            dphi_w = (self.phi_times_w(W + t * Z, W) - phi @ W) / t
        dgrad = 2.0 * (phi @ Z + dphi_w)
        return dgrad - W @ (W.T @ dgrad) - 2.0 * Z @ (W.T @ phi @ W)


def _riemannian_gradient(phi, W):
    PW = phi @ W
    return 2.0 * (PW - W @ (W.T @ PW))


def _complement(W):
    """Orthonormal basis of the orthogonal complement of span(W)."""
    Q, _ = np.linalg.qr(W, mode="complete")
    return Q[:, W.shape[1]:]


class _Surrogate:
    r"""The surrogate Hessian :math:`A` at W in diagonalising coordinates.

    Tangent vectors :math:`Z = W_\perp P C Q^T` are represented by C; there
    :math:`A` is the entrywise product with :math:`2(\mu_i - \nu_j)`.
    """

    def __init__(self, phi, W):
        self.W = W
        self.Wp = _complement(W)
        nu, self.Q = np.linalg.eigh(W.T @ phi @ W)
        mu, self.P = np.linalg.eigh(self.Wp.T @ phi @ self.Wp)
        self.nu, self.mu = nu, mu
        self.diag = 2.0 * (mu[:, None] - nu[None, :])           # A in C coordinates
        self.scale = float(np.abs(self.diag).max()) if self.diag.size else 0.0
        self.eigengap = float(nu.min() - mu.max()) if mu.size else np.inf
        # Preconditioner of -Hess: |A| with a floor, so tied eigenvalues stay finite.
        floor = max(1e-3 * self.scale, np.finfo(float).tiny)
        self.precond = np.maximum(np.abs(self.diag), floor)

    def to_coords(self, Z):
        return self.P.T @ (self.Wp.T @ Z) @ self.Q

    def from_coords(self, C):
        return self.Wp @ (self.P @ C @ self.Q.T)

    def precondition(self, Z):
        return self.from_coords(self.to_coords(Z) / self.precond)


def _exp(W, Z):
    """Grassmann geodesic (exponential map) from W along the tangent Z."""
    U, s, Vt = np.linalg.svd(Z, full_matrices=False)
    Wn = (W @ Vt.T) * np.cos(s) @ Vt + (U * np.sin(s)) @ Vt
    Q, R = np.linalg.qr(Wn)           # remove rounding drift
    return Q * np.sign(np.diag(R))


def _truncated_cg(hess, grad, surrogate, radius, max_inner, kappa=0.1, theta=1.0):
    r"""Preconditioned Steihaug-Toint CG for the trust-region model of -f.

    Minimises :math:`m(\eta) = -f - \langle g, \eta\rangle - \tfrac12\langle \eta, H\eta\rangle`
    over :math:`\|\eta\|_M \le` ``radius`` (M the preconditioner's norm); Absil,
    Baker, Gallivan 2007, Algorithm 2. Returns (eta, H eta, hit_boundary, products).
    """
    r = -grad                                   # gradient of -f
    eta = np.zeros_like(grad)
    h_eta = np.zeros_like(grad)
    z = surrogate.precondition(r)
    z_r = float(np.vdot(z, r))
    d_pd = z_r
    delta = -z
    e_pe = e_pd = 0.0
    norm_r0 = np.linalg.norm(r)
    products = 0
    for _ in range(max_inner):
        h_delta = -hess(delta)                  # Hessian of -f
        products += 1
        d_hd = float(np.vdot(delta, h_delta))
        alpha = z_r / d_hd if d_hd != 0 else np.inf
        e_pe_new = e_pe + 2.0 * alpha * e_pd + alpha * alpha * d_pd
        if d_hd <= 0 or e_pe_new >= radius * radius:
            tau = (-e_pd + np.sqrt(max(e_pd * e_pd + d_pd * (radius * radius - e_pe), 0.0))) / d_pd
            return eta + tau * delta, h_eta + tau * h_delta, True, products
        e_pe = e_pe_new
        eta = eta + alpha * delta
        h_eta = h_eta + alpha * h_delta
        r = r + alpha * h_delta
        r = r - surrogate.W @ (surrogate.W.T @ r)
        norm_r = np.linalg.norm(r)
        if norm_r <= norm_r0 * min(norm_r0 ** theta, kappa):
            break
        z = surrogate.precondition(r)
        z_r_old, z_r = z_r, float(np.vdot(z, r))
        beta = z_r / z_r_old
        delta = -z + beta * delta
        e_pd = beta * (e_pd + alpha * d_pd)
        d_pd = z_r + beta * beta * d_pd
    return eta, h_eta, False, products


def _hessian_max_eigenvalue(problem, W, phi, surrogate):
    """Largest eigenvalue of the Riemannian Hessian at W (forward-difference products)."""
    shape = surrogate.diag.shape
    dim = shape[0] * shape[1]
    if dim == 0:
        return -np.inf
    if not problem.kernel.depends_on_w:
        return float(surrogate.diag.max())         # Hess = A exactly

    def apply(C):
        Z = surrogate.from_coords(C.reshape(shape))
        return surrogate.to_coords(problem.hessian_product(W, phi, Z)).ravel()

    if dim <= _DENSE_HESSIAN_MAX_DIM:
        H = np.column_stack([apply(e) for e in np.eye(dim)])
        return float(np.linalg.eigvalsh(0.5 * (H + H.T))[-1])
    from scipy.sparse.linalg import LinearOperator, lobpcg

    def matmat(V):
        V = np.asarray(V).reshape(dim, -1)
        return -np.column_stack([apply(V[:, j]) for j in range(V.shape[1])])

    def precond(V):
        V = np.asarray(V).reshape(dim, -1)
        return V / surrogate.precond.ravel()[:, None]

    # Start from the surrogate's least negative curvature directions.
    order = np.argsort(-surrogate.diag.ravel())
    k = 1
    X0 = np.zeros((dim, k))
    X0[order[:k], np.arange(k)] = 1.0
    X0 += 1e-3 * np.random.default_rng(0).standard_normal((dim, k))
    op = LinearOperator((dim, dim), matvec=lambda v: matmat(v)[:, 0], matmat=matmat, dtype=float)
    pre = LinearOperator((dim, dim), matvec=lambda v: precond(v)[:, 0], matmat=precond, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals, _ = lobpcg(op, X0, M=pre, largest=False, tol=1e-5 * max(surrogate.scale, 1e-300),
                         maxiter=20)
    return float(-np.min(vals))


# --------------------------------------------------------------------------
# The solver
def _plain_stopping_rule(criterion, change, angle, tol):
    """The papers' stopping rule after a plain step: its name when met, else None."""
    if criterion == "eigenvalues" and change < tol:
        return "eigenvalues"
    if criterion == "angle" and angle < tol:
        return "angle"
    return None


# --------------------------------------------------------------------------
def ism(X: ArrayLike, gamma: Gamma | ArrayLike, kernel: KernelLike = "gaussian",
        n_components: int = 2, *, W0: ArrayLike | None = None, tol: float = 0.01,
        criterion: str = "eigenvalues", max_iter: int = 100, eigen_solver: str = "auto",
        n_threads: int | None = None, random_state: RandomStateLike = None, warn: bool = True,
        gtol: float = 1e-6, certify: bool = True,
        callback: Callable[[dict[str, Any]], Any] | None = None, phi_solver: str = "auto",
        dtype: DTypeLike | None = None, approximation: Any = None) -> ISMResult:
    r"""Iterative Spectral Method: maximise :math:`\mathrm{Tr}(\Gamma K_{XW})` s.t. :math:`W^TW = I`.

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
    n_components : int
        q, 1 <= q <= d.
    W0 : ndarray (d, q), optional
        Warm start (orthonormalised); skips Phi_0.
    tol : float, default=0.01
        Plain fixed point's rule: stop when
        :math:`\|\Lambda_k - \Lambda_{k-1}\| / \|\Lambda_k\| < tol`
        (``criterion="eigenvalues"``, the papers' rule with delta = 0.01) or when
        the largest principal angle between successive W is below ``tol``
        radians (``criterion="angle"``).
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
        largest Hessian eigenvalue (Hessian-vector products, one fused product
        with q right-hand sides each: the full Hessian for tangent spaces of
        dimension (d - q) q <= 12, at most 20 preconditioned LOBPCG steps above). With
        False, only the first-order part (one Phi evaluation) is computed and
        the Hessian fields are NaN / None: use it in inner loops.
    callback : callable, optional
        Called with each new ``history`` entry (a dict) as it is recorded;
        the estimators' ``verbose`` output uses it.
    dtype : {None, numpy.float64, numpy.float32}, default=None
        Precision of the plain steps' C++ products; None keeps X's own
        (float32 or float64). The safeguarded phase and the certificate
        always work in float64.
    approximation : ikdr._nystrom.Approximation or None, default=None
        Hook of the landmark passes (issue 20, :mod:`ikdr._nystrom`): every
        Phi, Phi-product and objective of the run comes from its approximate
        problem (Nystrom landmarks or random features, O(n d m) per pass, X
        read in row blocks and never copied). Use
        :func:`ikdr._nystrom.approximate_ism` or the estimators'
        ``approximation`` parameter rather than building it by hand.
    phi_solver : {"auto", "dense", "matrix_free"}, default="auto"
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
        objective. ``"auto"`` goes matrix-free when the estimated flops say so:
        :math:`F + 2d > 20(F + 4p)` with F about 60 flops to form one panel
        entry, p = q + max(10, q) and 20 the typical number of block
        iterations per step, i.e. above d of about 1,370 for q = 10, and
        n >= 1000. The safeguarded (trust-region) phase, which is rarely
        needed, forms :math:`\Phi` densely; the certificate after a
        matrix-free run uses the same products (its eigengap and largest
        Hessian eigenvalue are then estimated by short block iterations); with
        ``certify=False``, d > 256 and n >= 1000 (or after matrix-free steps)
        only the gradient is computed, from one such product, and the eigengap
        is NaN.

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
    # issue 20 hook: the approximate problem validates X by row blocks (no copy of a memmap)
    X = check_float_matrix(X, "X") if approximation is None else approximation.check_data(X)
    if dtype is not None and approximation is None:
        if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(f"dtype must be None, numpy.float64 or numpy.float32, got {dtype!r}")
        X = np.ascontiguousarray(X, dtype=dtype)
    n, d = X.shape
    if gamma.n != n:
        raise ValueError(f"Gamma is {gamma.n} x {gamma.n} but X has {n} rows")
    if criterion not in ("eigenvalues", "angle", "gradient"):
        raise ValueError(f"criterion must be 'eigenvalues', 'angle' or 'gradient', got {criterion!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol}")
    if not (gtol > 0):
        raise ValueError(f"gtol must be positive, got {gtol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    q = int(n_components)
    if not 1 <= q <= d:
        raise ValueError(f"n_components={q} must be between 1 and d={d}")
    kernel = make_kernel(kernel)
    if not kernel._is_resolved():
        kernel = (kernel.fit(X, random_state=random_state) if approximation is None else
                  approximation.fit_kernel(kernel, X, random_state=random_state))
    problem = (_Problem(X, gamma, kernel, n_threads) if approximation is None else
               approximation.problem(X, gamma, kernel, n_threads, q))
    eps = np.finfo(X.dtype).eps
    matrix_free = _use_matrix_free(phi_solver, kernel, n, d, q)
    # Residual tolerance of the matrix-free eigensolves: float32 products
    # carry ~1e-6 relative error, below which no residual can go.
    mf_tol = max(_MF_TOL, 50 * float(eps)) if X.dtype == np.float32 else _MF_TOL

    def mf_solve(W, PW, extra):
        return block_top_eigenvectors(lambda V: problem.phi_products(W, V, native=True)[0],
                                      W, PW, q, extra=extra, tol=mf_tol, max_iter=_MF_MAX_ITER)

    def mf_evaluate(W):
        PW, obj = problem.phi_products(W, W, native=True)
        return PW, obj if obj is not None else problem.objective(W, native=True)

    history: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def record(W, obj, vals, change, angle, method, step):
        history.append({"iteration": len(history), "objective": obj, "eigenvalues": vals.copy(),
                        "eigenvalue_change": change, "angle": angle, "step": step,
                        "gradient_norm": np.nan, "eigen_solver": method,
                        "time": time.perf_counter() - t0})
        if callback is not None:
            callback(history[-1])

    extra = None            # extra Ritz vectors carried between matrix-free eigensolves
    PW = None               # Phi(W) W at the current W (matrix-free plain steps)
    if W0 is None:
        phi = problem.phi0()
        lam, W, info = top_eigenvectors(phi, q, method="lapack" if eigen_solver == "auto" else eigen_solver)
    else:
        W = _check_orthonormal_start(W0, d, q)
        if matrix_free:
            PW, _ = problem.phi_products(W, W, native=True)
            lam, W, info = mf_solve(W, PW, None)
            extra = info["extra"]
        else:
            phi = problem.phi(W, native=True)
            lam, W, info = top_eigenvectors(phi, q, W, method=eigen_solver)
    # Dense steps of a kernel whose objective is read off the gradient pass
    # (Gaussian) evaluate each new W by the pass that forms its Phi (needed by
    # the next step anyway), or, when the step is the last, by a thin pass
    # that also gives the final gradient: no separate objective passes.
    reuse = kernel.depends_on_w and not matrix_free
    next_phi = None
    if matrix_free:
        PW, objective = mf_evaluate(W)
    elif reuse:
        next_phi, objective = problem.phi_and_objective(W, native=True)
    else:
        objective = problem.objective(W, native=True)
    record(W, objective, lam, np.nan, np.nan, info["method"], "start")

    n_iter = plain_steps = tr_steps = rejected = 0
    phase = "plain"
    converged = not kernel.depends_on_w
    stopping_rule = "exact" if converged else "max_iter"
    phi = next_phi          # Phi at the current W (float64), when known
    native_objective = True  # whether `objective` was computed in X's dtype
    prev_gnorm = np.nan
    radius: Any = None
    radius_max: Any = None
    stalled = False

    while not converged and n_iter < max_iter:
        if phase != "plain" and native_objective and problem.X is not problem.X64:
            objective = problem.objective(W)
        native_objective = native_objective and phase == "plain"
        if matrix_free and phase == "plain":
            # ---- matrix-free plain step: Phi(W) only through products ----
            grad = 2.0 * (PW - W @ (W.T @ PW))
            gnorm = float(np.linalg.norm(grad))
            history[-1]["gradient_norm"] = gnorm
            if criterion == "gradient" and gnorm <= gtol * abs(objective):
                converged, stopping_rule = True, "gradient"
                break
            lam_new, V, info = mf_solve(W, PW, extra)
            extra = info["extra"]
            PV, f_new = mf_evaluate(V)
            if f_new < objective - 16 * eps * abs(objective):
                rejected += 1
                phase = "trust-region"          # works on the dense float64 Phi
                continue
            n_iter += 1
            plain_steps += 1
            norm = np.linalg.norm(lam_new)
            change = float(np.linalg.norm(lam_new - lam) / norm) if norm > 0 else 0.0
            angle = principal_angle(W, V)
            W, lam, objective, PW = V, lam_new, f_new, PV
            record(W, objective, lam, change, angle,
                   f"matrix-free ({info['iterations']} it, residual {info['residual']:.1e})", "plain")
            rule = _plain_stopping_rule(criterion, change, angle, tol)
            if rule is not None:
                converged, stopping_rule = True, rule
            elif criterion == "gradient":
                if plain_steps >= 2 and gnorm > _SLOW_CONTRACTION * prev_gnorm:
                    phase = "trust-region"
                prev_gnorm = gnorm
            continue
        if phi is None:
            phi = problem.phi(W, native=(phase == "plain"))
        grad = _riemannian_gradient(phi, W)
        gnorm = float(np.linalg.norm(grad))
        history[-1]["gradient_norm"] = gnorm
        if (phase != "plain" or criterion == "gradient") and gnorm <= gtol * abs(objective):
            converged, stopping_rule = True, "gradient"
            break

        if phase == "plain":
            lam_new, V, info = top_eigenvectors(phi, q, W, method=eigen_solver)
            norm = np.linalg.norm(lam_new)
            change = float(np.linalg.norm(lam_new - lam) / norm) if norm > 0 else 0.0
            angle = principal_angle(W, V)
            next_phi = next_pw = None
            if reuse:
                if _plain_stopping_rule(criterion, change, angle, tol) is not None:
                    next_pw, f_new = problem.phi_products(V, V, native=True)
                else:
                    next_phi, f_new = problem.phi_and_objective(V, native=True)
            else:
                f_new = problem.objective(V, native=True)
            if f_new < objective - 16 * eps * abs(objective):
                # The plain step would descend (cycle / overshoot): refuse it.
                rejected += 1
                phase = "trust-region"
                if problem.X is not problem.X64:
                    phi = None          # the trust region works in float64
                continue
            n_iter += 1
            plain_steps += 1
            W, lam, objective, phi, PW = V, lam_new, f_new, next_phi, next_pw
            record(W, objective, lam, change, angle, info["method"], "plain")
            rule = _plain_stopping_rule(criterion, change, angle, tol)
            if rule is not None:
                converged, stopping_rule = True, rule
            elif criterion == "gradient":
                if plain_steps >= 2 and gnorm > _SLOW_CONTRACTION * prev_gnorm:
                    phase = "trust-region"
                prev_gnorm = gnorm
            continue

        # ---- safeguarded phase: one Riemannian trust-region iteration ----
        surrogate = _Surrogate(phi, W)
        if radius is None:
            # Start with the length (in the preconditioner's norm) of the linearised ISM step.
            radius = np.sqrt(float(np.vdot(grad, surrogate.precondition(grad))))
            radius_max = 1e3 * radius
        dim = (d - q) * q

        def hess(Z, W=W, phi=phi):
            return problem.hessian_product(W, phi, Z)

        eta, h_eta, boundary, _ = _truncated_cg(hess, grad, surrogate, radius, max_inner=dim)
        # Keep the geodesic inside the injectivity radius (principal angles < pi/2).
        s_max = np.linalg.norm(eta, 2)
        if s_max > 0.5 * np.pi:
            shrink = 0.5 * np.pi / s_max
            eta, h_eta, boundary = shrink * eta, shrink * h_eta, True
        predicted = float(np.vdot(grad, eta)) + 0.5 * float(np.vdot(eta, -h_eta))
        W_new = _exp(W, eta)
        f_new = problem.objective(W_new)
        reg = 1e3 * np.finfo(float).eps * max(1.0, abs(objective))
        rho = (f_new - objective + reg) / (predicted + reg)
        eta_norm_m = np.sqrt(float(np.vdot(eta, surrogate.from_coords(
            surrogate.to_coords(eta) * surrogate.precond))))
        if rho < 0.25:
            radius = 0.25 * min(radius, eta_norm_m) if eta_norm_m > 0 else 0.25 * radius
        elif rho > 0.75 and boundary:
            radius = min(2.0 * radius, radius_max)
        n_iter += 1
        tr_steps += 1
        if rho > 0.1 and f_new >= objective:
            angle = principal_angle(W, W_new)
            W, objective, phi = W_new, f_new, None
            record(W, objective, np.full(q, np.nan), np.nan, angle, "trust-region", "trust-region")
        else:
            rejected += 1
            record(W, objective, np.full(q, np.nan), np.nan, 0.0, "trust-region", "trust-region")
            if radius < 1e-12 * radius_max:
                stalled = True
                stopping_rule = "stalled"
                break

    # ---- the returned point and its certificate ----
    if phase != "plain" and kernel.depends_on_w:
        if phi is None:
            phi = problem.phi(W)
        # Rotate W to the Ritz vectors of Phi(W): eigen-like columns, descending.
        vals, vecs = np.linalg.eigh(W.T @ phi @ W)
        W = _fix_signs(W @ vecs[:, ::-1])
        lam = vals[::-1].copy()
        history[-1]["eigenvalues"] = lam.copy()
    if not stalled and not converged:
        stopping_rule = "max_iter"
    solve_time = time.perf_counter() - t0
    thin_gradient_only = not certify and d > _DENSE_CERTIFICATE_MAX_DIM and n >= _MF_MIN_SAMPLES
    if phase == "plain" and kernel.depends_on_w and (matrix_free or thin_gradient_only):
        final_pw = PW if PW is not None and problem.X is problem.X64 else None
        certificate = _certify_matrix_free(problem, W, final_pw, objective, converged,
                                           stopping_rule, gtol, certify, plain_steps, tr_steps,
                                           rejected, extra)
    else:
        # Phi at the returned W is reused when it is known in float64.
        final_phi = phi if phase != "plain" or problem.X is problem.X64 else None
        certificate = _certify(problem, W, final_phi, objective,
                               converged, stopping_rule, gtol, certify,
                               plain_steps, tr_steps, rejected)
    history[-1]["gradient_norm"] = certificate.gradient_norm
    certificate.solve_time = solve_time
    certificate.certificate_time = time.perf_counter() - t0 - solve_time
    if not converged and warn:
        if stalled:
            msg = (f"ISM stalled: the trust region shrank before the relative gradient norm "
                   f"({certificate.relative_gradient_norm:.3g}) reached gtol={gtol}")
        elif phase == "plain":
            key = "eigenvalue_change" if criterion == "eigenvalues" else criterion
            last = history[-1].get(key, np.nan) if criterion != "gradient" else \
                certificate.relative_gradient_norm
            msg = (f"ISM did not converge in max_iter={max_iter} iterations "
                   f"(last {criterion} change {last:.3g} >= tol={tol if criterion != 'gradient' else gtol})")
        else:
            msg = (f"ISM did not converge in max_iter={max_iter} iterations "
                   f"(relative gradient norm {certificate.relative_gradient_norm:.3g} > gtol={gtol})")
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    return ISMResult(components=W, eigenvalues=lam, n_iter=n_iter, converged=converged,
                     objective=objective, history=history, kernel=kernel,
                     convergence=certificate)


def _certify(problem, W, phi, objective, converged, stopping_rule, gtol, full,
             plain_steps, tr_steps, rejected):
    """Gradient, eigengap and (with ``full``) the Hessian's largest eigenvalue at W."""
    W = np.asarray(W, dtype=np.float64)
    if phi is None:
        phi = problem.phi(W)
    grad = _riemannian_gradient(phi, W)
    gnorm = float(np.linalg.norm(grad))
    rel = gnorm / abs(objective) if objective != 0 else (0.0 if gnorm == 0 else np.inf)
    surrogate = _Surrogate(phi, W)
    solver_products = problem.n_hessian
    if full:
        hmax = _hessian_max_eigenvalue(problem, W, phi, surrogate)
        second = bool(hmax <= 1e-5 * surrogate.scale)
    else:
        hmax, second = np.nan, None
    return ISMConvergence(
        converged=bool(converged), stopping_rule=stopping_rule, objective=float(objective),
        gradient_norm=gnorm, relative_gradient_norm=float(rel), eigengap=surrogate.eigengap,
        hessian_max_eigenvalue=float(hmax), hessian_scale=surrogate.scale,
        first_order=bool(rel <= gtol), second_order=second, plain_steps=plain_steps,
        safeguarded_steps=tr_steps, rejected_steps=rejected, hessian_products=solver_products,
        phi_evaluations=problem.n_phi, objective_evaluations=problem.n_objective)


def _certify_matrix_free(problem, W, PW, objective, converged, stopping_rule, gtol, full,
                         plain_steps, tr_steps, rejected, extra):
    r"""The certificate of :func:`_certify` from fused products only (no d x d Phi).

    Gradient: exact, from :math:`\Phi(W)W`. With ``full``: the eigengap uses
    the largest eigenvalue of :math:`W_\perp^T\Phi W_\perp` by a short block
    iteration on the deflated operator; the largest Hessian eigenvalue is the
    Ritz value of at most ``_MF_HESSIAN_ITER`` LOBPCG steps (unpreconditioned,
    one fused pass per Hessian product, started from the direction of least
    negative surrogate curvature), a lower bound of the true value; the scale
    uses the smallest Ritz value seen in place of :math:`\lambda_{\min}(\Phi)`.
    Without ``full`` the eigengap and Hessian fields are NaN / None.
    """
    W = np.asarray(W, dtype=np.float64)
    d, q = W.shape
    if PW is None:
        PW, _ = problem.phi_products(W, W)
    grad = 2.0 * (PW - W @ (W.T @ PW))
    gnorm = float(np.linalg.norm(grad))
    rel = gnorm / abs(objective) if objective != 0 else (0.0 if gnorm == 0 else np.inf)
    solver_products = problem.n_hessian
    eigengap = hmax = scale = np.nan
    second = None
    if full and q < d:
        nu, Q = np.linalg.eigh(0.5 * (W.T @ PW + PW.T @ W))
        Wp_basis = _complement(W)

        def deflated(V):
            V = V - W @ (W.T @ V)
            out, _ = problem.phi_products(W, V)
            return out - W @ (W.T @ out)

        E = extra if extra is not None and extra.shape[1] else \
            np.random.default_rng(0).standard_normal((d, _extra_columns(d, q)))
        E = E - W @ (W.T @ E)
        E, _ = np.linalg.qr(E - W @ (W.T @ E))
        AE1 = deflated(E[:, :1])
        mu_vals, U, info = block_top_eigenvectors(deflated, E[:, :1], AE1, 1, extra=E[:, 1:],
                                                  tol=1e-6, max_iter=8)
        mu_max = float(mu_vals[0])
        ritz = info["ritz_values"]
        mu_low = float(np.min(ritz)) if ritz is not None else mu_max
        eigengap = float(nu.min() - mu_max)
        scale = 2.0 * max(nu.max() - min(mu_low, nu.min()), mu_max - nu.min(), 0.0)

        def hess(Z):
            problem.n_hessian += 1
            norm = np.linalg.norm(Z)
            if norm == 0:
                return np.zeros_like(Z)
            t = _FD_STEP / norm
            both, _ = problem.phi_products(W + t * Z, np.hstack([W, Z]))
            dphi_w = (both[:, :q] - PW) / t
            dgrad = 2.0 * (both[:, q:] + dphi_w)
            return dgrad - W @ (W.T @ dgrad) - 2.0 * Z @ (W.T @ PW)

        shape = (d - q, q)
        dim = shape[0] * shape[1]

        def matmat(Vc):
            Vc = np.asarray(Vc).reshape(dim, -1)
            return -np.column_stack([(Wp_basis.T @ hess(Wp_basis @ Vc[:, j].reshape(shape))).ravel()
                                     for j in range(Vc.shape[1])])

        from scipy.sparse.linalg import LinearOperator, lobpcg
        # Least negative surrogate curvature: the top complement direction
        # against the chosen direction of smallest Ritz value.
        z0 = Wp_basis.T @ (U[:, :1] @ Q[:, :1].T)
        x0 = z0.reshape(dim, 1) + 1e-3 * np.random.default_rng(0).standard_normal((dim, 1))
        op = LinearOperator((dim, dim), matvec=lambda v: matmat(v)[:, 0], matmat=matmat,
                            dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vals, _ = lobpcg(op, x0, largest=False, tol=1e-5 * max(scale, 1e-300),
                             maxiter=_MF_HESSIAN_ITER)
        hmax = float(-np.min(vals))
        second = bool(hmax <= 1e-5 * scale)
    return ISMConvergence(
        converged=bool(converged), stopping_rule=stopping_rule, objective=float(objective),
        gradient_norm=gnorm, relative_gradient_norm=float(rel), eigengap=eigengap,
        hessian_max_eigenvalue=float(hmax), hessian_scale=float(scale),
        first_order=bool(rel <= gtol), second_order=second, plain_steps=plain_steps,
        safeguarded_steps=tr_steps, rejected_steps=rejected, hessian_products=solver_products,
        phi_evaluations=problem.n_phi, objective_evaluations=problem.n_objective)
