r"""The trust-region Newton phase of the ISM solver (Absil, Baker, Gallivan 2007).

Used by the driver (:mod:`ikdr.solver.driver`) where a plain step would lower the
objective. One :meth:`TrustRegion.iterate` solves the trust-region model of
:math:`-f` by Steihaug-Toint truncated CG preconditioned with the surrogate
Hessian (:class:`Surrogate`), moves along the Grassmann geodesic, and accepts
the candidate only if f rises as the model predicts, or, where the ascent left
is below f's rounding, if the candidate's Riemannian gradient is at most half
the current one.
"""
from __future__ import annotations

import numpy as np

from .problem import riemannian_gradient


def complement(W):
    """Orthonormal basis of the orthogonal complement of span(W)."""
    Q, _ = np.linalg.qr(W, mode="complete")
    return Q[:, W.shape[1]:]


class Surrogate:
    r"""The surrogate Hessian :math:`A[Z] = 2(I - WW^T)(\Phi Z - Z\,W^T\Phi W)` at W.

    In the bases diagonalising :math:`W^T\Phi W` (values :math:`\nu_j`, Q) and
    :math:`W_\perp^T\Phi W_\perp` (values :math:`\mu_i`, P) tangent vectors
    :math:`Z = W_\perp P C Q^T` are represented by C, and A is the entrywise
    product with ``diag`` :math:`= 2(\mu_i - \nu_j)`. ``eigengap`` is
    :math:`\min\nu - \max\mu` (dissertation Eq. C.73), ``scale`` the largest
    :math:`|2(\mu_i - \nu_j)|`, ``precond`` :math:`|A|` with a floor (the
    preconditioner of :math:`-\mathrm{Hess}`).
    """

    def __init__(self, phi, W):
        self.W = W
        self.Wp = complement(W)
        nu, self.Q = np.linalg.eigh(W.T @ phi @ W)
        mu, self.P = np.linalg.eigh(self.Wp.T @ phi @ self.Wp)
        self.nu, self.mu = nu, mu
        self.diag = 2.0 * (mu[:, None] - nu[None, :])
        self.scale = float(np.abs(self.diag).max()) if self.diag.size else 0.0
        self.eigengap = float(nu.min() - mu.max()) if mu.size else np.inf
        floor = max(1e-3 * self.scale, np.finfo(float).tiny)
        self.precond = np.maximum(np.abs(self.diag), floor)

    def to_coords(self, Z):
        return self.P.T @ (self.Wp.T @ Z) @ self.Q

    def from_coords(self, C):
        return self.Wp @ (self.P @ C @ self.Q.T)

    def precondition(self, Z):
        return self.from_coords(self.to_coords(Z) / self.precond)

    def top_direction(self):
        """The unit tangent vector of least negative surrogate curvature."""
        C = np.zeros_like(self.diag)
        C[np.unravel_index(np.argmax(self.diag), C.shape)] = 1.0
        return self.from_coords(C)


class TangentProjection:
    r"""The trust region's preconditioner where the dense :math:`\Phi` is not formed
    (sparse X with many features): the identity on the tangent space, with the
    interface of :class:`Surrogate` (coordinates are the tangent vectors
    themselves). The truncated CG is then unpreconditioned; every step still
    costs one thin pass per Hessian product and nothing d x d."""

    def __init__(self, W):
        self.W = W
        self.precond = 1.0

    def to_coords(self, Z):
        return Z

    def from_coords(self, C):
        return C

    def precondition(self, Z):
        return Z - self.W @ (self.W.T @ Z)


def exp_map(W, Z):
    """Grassmann geodesic (exponential map) from W along the tangent Z."""
    U, s, Vt = np.linalg.svd(Z, full_matrices=False)
    Wn = (W @ Vt.T) * np.cos(s) @ Vt + (U * np.sin(s)) @ Vt
    Q, R = np.linalg.qr(Wn)           # remove rounding drift
    return Q * np.sign(np.diag(R))


#: geodesic step lengths (radians) tried along an ascent direction from a saddle,
#: longest first: the first that raises f (on either side) is taken
ESCAPE_STEPS = tuple(0.5 ** k for k in range(1, 14))
#: the widest W (features) whose trust region is preconditioned by the surrogate
#: Hessian: building it takes two eigendecompositions of order d, O(d^3), cheap at
#: d = 512 but many times a pass at d = 2,048 for every iteration (wide sparse X, whose
#: W may use 2,048 columns); wider, the truncated CG runs unpreconditioned
SURROGATE_MAX_FEATURES = 512


def escape_saddle(problem, W, objective, direction):
    r"""A point above the saddle W along the tangent ``direction`` (the certificate's
    Hessian eigenvector of a positive eigenvalue :math:`\theta`).

    Near W, :math:`f(\exp_W(tZ)) \approx f(W) + \tfrac12 \theta t^2` on both
    sides, so the longest step of :data:`ESCAPE_STEPS` that raises f (by more
    than its rounding) is taken, the better of the two signs; one objective
    pass per trial. Returns (W_new, f_new), or (None, None) when no trial rises.
    """
    Z = direction - W @ (W.T @ direction)
    norm = float(np.linalg.norm(Z))
    if not np.isfinite(norm) or norm == 0.0:
        return None, None
    Z = Z / norm
    margin = 16.0 * np.finfo(float).eps * abs(objective)
    for t in ESCAPE_STEPS:
        best = None
        for s in (t, -t):
            W_new = exp_map(W, s * Z)
            f_new = problem.objective(W_new)
            if f_new > objective + margin and (best is None or f_new > best[1]):
                best = (W_new, f_new)
        if best is not None:
            return best
    return None, None


def truncated_cg(hess, grad, surrogate, radius, max_inner, kappa=0.1, theta=1.0):
    r"""Preconditioned Steihaug-Toint CG for the trust-region model of -f.

    Minimises :math:`m(\eta) = -f - \langle g, \eta\rangle - \tfrac12\langle \eta, H\eta\rangle`
    over :math:`\|\eta\|_M \le` ``radius`` (M the preconditioner's norm); Absil,
    Baker, Gallivan 2007, Algorithm 2. Returns (eta, H eta, hit_boundary).
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
    for _ in range(max_inner):
        h_delta = -hess(delta)                  # Hessian of -f
        d_hd = float(np.vdot(delta, h_delta))
        alpha = z_r / d_hd if d_hd != 0 else np.inf
        e_pe_new = e_pe + 2.0 * alpha * e_pd + alpha * alpha * d_pd
        if d_hd <= 0 or e_pe_new >= radius * radius:
            tau = (-e_pd + np.sqrt(max(e_pd * e_pd + d_pd * (radius * radius - e_pe), 0.0))) / d_pd
            return eta + tau * delta, h_eta + tau * h_delta, True
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
    return eta, h_eta, False


class TrustRegion:
    """State (radius) of the Riemannian trust-region phase for one solve."""

    def __init__(self, problem):
        self.problem = problem
        self.radius = self.radius_max = None

    def iterate(self, W, phi, objective, PW=None):
        r"""One trust-region iteration from W (float64 ``phi`` = :math:`\Phi(W)`, f(W)).

        Returns ``(W_new, objective_new, accepted, stalled)``; W_new is W when
        the candidate is rejected. The candidate's f is one objective pass;
        each truncated-CG iteration one Hessian product. Without the dense
        ``phi`` (None; ``PW`` = :math:`\Phi(W)W` in float64 is then given), or
        above :data:`SURROGATE_MAX_FEATURES` features, the CG runs
        unpreconditioned (:class:`TangentProjection`).
        """
        PW = phi @ W if phi is not None else PW
        grad = riemannian_gradient(PW, W)
        preconditioned = phi is not None and W.shape[0] <= SURROGATE_MAX_FEATURES
        surrogate = Surrogate(phi, W) if preconditioned else TangentProjection(W)
        if self.radius is None:
            # Start with the length (in the preconditioner's norm) of the linearised ISM step.
            self.radius = np.sqrt(float(np.vdot(grad, surrogate.precondition(grad))))
            self.radius_max = 1e3 * self.radius
        d, q = W.shape

        def hess(Z):
            return self.problem.hessian_product(W, Z, PW, phi)

        eta, h_eta, boundary = truncated_cg(hess, grad, surrogate, self.radius,
                                            max_inner=(d - q) * q)
        # Keep the geodesic inside the injectivity radius (principal angles < pi/2).
        s_max = np.linalg.norm(eta, 2)
        if s_max > 0.5 * np.pi:
            shrink = 0.5 * np.pi / s_max
            eta, h_eta, boundary = shrink * eta, shrink * h_eta, True
        predicted = float(np.vdot(grad, eta)) + 0.5 * float(np.vdot(eta, -h_eta))
        W_new = exp_map(W, eta)
        f_new = self.problem.objective(W_new)
        # The objective's rounding: ascents below it can be neither seen nor verified.
        reg = 1e3 * np.finfo(float).eps * max(1.0, abs(objective))
        # A model that predicts no ascent (possible where the Hessian products are not
        # those of the objective, as on a landmark problem) is not to be trusted, however
        # well the objective then agrees with it: shrink, never grow on it.
        rho = (f_new - objective + reg) / (predicted + reg) if predicted > 0 else -np.inf
        accepted = rho > 0.1 and f_new >= objective
        eta_norm_m = np.sqrt(float(np.vdot(eta, surrogate.from_coords(
            surrogate.to_coords(eta) * surrogate.precond))))
        if rho < 0.25 or not accepted:
            self.radius = 0.25 * min(self.radius, eta_norm_m) if eta_norm_m > 0 else 0.25 * self.radius
        elif rho > 0.75 and boundary:
            self.radius = min(2.0 * self.radius, self.radius_max)
        if accepted:
            return W_new, f_new, True, False
        if 0 < predicted <= reg and abs(f_new - objective) <= reg:
            # Below the objective's rounding: the model's ascent can no longer be
            # seen, but the gradient still can. A candidate whose Riemannian
            # gradient is at most half the current one is taken (one thin pass):
            # near a maximum the Newton step shrinks it quadratically, which the
            # objective cannot show (measured: breast cancer, a polish that
            # stalled at a relative gradient of 3.8e-9 against gtol = 1e-9).
            PW_new, _ = self.problem.phi_product(W_new, W_new)
            if np.linalg.norm(riemannian_gradient(PW_new, W_new)) <= 0.5 * np.linalg.norm(grad):
                return W_new, f_new, True, False
        # Stalled: the radius has collapsed, or the model promises no ascent beyond the
        # objective's rounding, so no step could be verified as one. An exact problem's
        # model always promises some while the gradient is not zero (the truncated CG's
        # first step is the Cauchy step); a landmark problem's may not, and its fit ends
        # here (approximate_ism warns when its gradient is still large).
        stalled = self.radius < 1e-12 * self.radius_max or predicted <= reg
        return W, objective, False, stalled
