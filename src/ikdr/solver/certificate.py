r"""The certificate of an ISM solution: gradient, eigengap and the largest
Riemannian Hessian eigenvalue, over the Hessian products of the solver's
problem (:class:`ikdr.solver.problem.CountedProblem`).

The largest Hessian eigenvalue is computed by a single-vector LOBPCG
(Knyazev 2001) on Hessian products, one thin pass each. It starts from the
surrogate's direction of least negative curvature and, when the dense
:math:`\Phi(W)` is known, is preconditioned by the surrogate's absolute value
(the surrogate is the Hessian without its kernel-curvature term, so the
preconditioned operator is close to the identity and a few products
suffice). It stops when the residual :math:`r = \|Hx - \theta x\|` of its
unit Ritz vector x is at most ``HESSIAN_RTOL`` times :math:`|\theta|` or
``HESSIAN_STOL`` times the Hessian's scale, whichever is larger, or after
``HESSIAN_MAX_PRODUCTS`` products. The Hessian then has an eigenvalue in
:math:`[\theta - r, \theta + r]` (and the Ritz value's error is about
:math:`r^2` over the gap to the rest of the spectrum); :math:`\theta` is a
Rayleigh quotient, so the largest eigenvalue is at least :math:`\theta`.
The second-order condition is claimed only for a converged estimate with
:math:`\theta + r \le` ``SECOND_ORDER_RTOL * hessian_scale``: an
unconverged estimate never certifies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._utils.eig import block_top_eigenvectors
from .problem import riemannian_gradient
from .trust_region import Surrogate, complement

#: residual of the Hessian eigenvalue estimate: at most HESSIAN_RTOL |theta| ...
HESSIAN_RTOL = 0.1
#: ... or HESSIAN_STOL hessian_scale, whichever is larger
HESSIAN_STOL = 1e-4
#: Hessian products allowed for the estimate (each one thin pass)
HESSIAN_MAX_PRODUCTS = 40
#: second-order condition: largest Hessian eigenvalue <= SECOND_ORDER_RTOL * hessian_scale,
#: the accuracy the estimate is run to (HESSIAN_STOL): with 1e-5, a maximum whose
#: Hessian is flat in one direction (a 10-class mixture at 10,000 x 784, q = 10:
#: theta = -2.5, r = 9.0, scale 2.0e5, relative 4.5e-5) could never be certified
SECOND_ORDER_RTOL = HESSIAN_STOL
#: relative accuracy of a matrix-free eigengap taken from the start block without iterating
EIGENGAP_RTOL = 1e-3


@dataclass
class ISMConvergence:
    r"""Convergence certificate of an ISM solution (``ISMResult.convergence``,
    ``convergence_`` of the estimators).

    Every quantity is measured at the returned W, for the maximisation of
    :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})` on the Grassmann manifold.

    Attributes
    ----------
    converged : bool
        The certificate holds: ``first_order`` and, where it was computed,
        ``second_order`` (and no saddle was left unescaped).
    stopping_rule : str
        Which rule stopped the solver: ``"eigenvalues"`` or ``"angle"`` (the
        plain fixed point's rule, ``tol``), ``"gradient"`` (relative gradient
        norm below ``gtol``), ``"exact"`` (Phi does not depend on W: one
        eigendecomposition solves the problem), ``"objective"`` (an approximate
        problem's trust-region step gained less than its ``objective_floor``)
        or ``"max_iter"`` / ``"stalled"``.
    objective : float
        :math:`f(W) = \mathrm{Tr}(\Gamma K_{XW})` at the returned W.
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
        checked directly. NaN when not computed (``certify=False`` and the
        dense :math:`\Phi` not formed at W).
    hessian_max_eigenvalue : float
        Largest eigenvalue of the Riemannian Hessian over the tangent space,
        the Ritz value of a LOBPCG run on Hessian-vector products (see
        ``hessian_residual``). A local maximum needs it <= 0 (second-order
        necessary condition); NaN when not computed.
    hessian_residual : float
        :math:`\|Hx - \theta x\|` of the unit Ritz vector x: an eigenvalue of
        the Hessian lies within this distance of ``hessian_max_eigenvalue``.
    hessian_converged : bool or None
        The residual reached ``max(0.1 |hessian_max_eigenvalue|, 1e-4 *
        hessian_scale)`` within 40 products (None when not computed).
    hessian_scale : float
        Largest :math:`|2(\mu_i - \nu_j)|` of the surrogate Hessian, the scale
        against which ``hessian_max_eigenvalue`` is judged.
    first_order : bool
        ``relative_gradient_norm <= gtol``.
    second_order : bool or None
        ``hessian_converged`` and ``hessian_max_eigenvalue + hessian_residual
        <= 1e-4 * hessian_scale`` (None when not computed). An unconverged
        estimate never certifies.
    plain_steps : int
        Accepted plain fixed-point steps :math:`W \leftarrow V_{\max}(\Phi(W))`.
    safeguarded_steps : int
        Trust-region iterations (accepted or rejected).
    rejected_steps : int
        Plain (or mixed) steps refused because they lowered the objective, plus
        rejected trust-region candidates.
    hessian_products : int
        Hessian-vector products (trust region and certificate), one thin pass each.
    certificate_hessian_products : int
        Those spent by the certificate.
    phi_evaluations : int
        Passes that formed :math:`\Phi` or products :math:`\Phi V` (each also
        gives the objective), certificate included, Hessian products excluded.
    dense_phi_evaluations : int
        Those of ``phi_evaluations`` that formed the dense d x d :math:`\Phi`
        (a pass with the d columns of X); the others are thin (a few columns).
    coarse_phi_evaluations : int
        Those of ``dense_phi_evaluations`` made in float32 for float64 data
        (plain steps far from the maximum, at about half the cost).
    objective_evaluations : int
        Passes that computed only the objective (trust-region candidates).
    saddle_escapes : int
        Times the certificate found a positive Hessian eigenvalue at a point the
        stopping rule had accepted (a saddle, not a maximum) and the solver
        stepped along its eigenvector and went on.
    solve_time, certificate_time : float
        Seconds spent reaching W and certifying it.
    support : ndarray of int or None
        The input features the problem had (an estimator's ``support_``): W's
        rows outside them are fixed at zero, and every quantity above is for
        the problem on these features. None: all of X's columns.
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
    dense_phi_evaluations: int = 0
    coarse_phi_evaluations: int = 0
    hessian_residual: float = np.nan
    hessian_converged: bool | None = None
    certificate_hessian_products: int = 0
    saddle_escapes: int = 0
    solve_time: float = np.nan
    certificate_time: float = np.nan
    support: np.ndarray | None = None

    @property
    def local_maximum(self):
        """First- and second-order necessary conditions both hold."""
        return bool(self.first_order and self.second_order)

    @property
    def passes(self):
        """Every n^2 pass of the fit: Phi passes, objective-only passes, Hessian products."""
        return self.phi_evaluations + self.objective_evaluations + self.hessian_products


def largest_eigenvalue(apply, x0, *, atol, rtol=0.0, max_products, precondition=None,
                       vector=None):
    r"""Largest eigenvalue of a symmetric operator by single-vector LOBPCG.

    ``apply`` and ``precondition`` map arrays of x0's shape to the same shape
    (inner product ``vdot``). Each iteration does a Rayleigh-Ritz step on
    [x, T r, p] and costs one ``apply``. Stops when the residual
    :math:`\|Ax - \theta x\|` (x unit) is at most ``max(atol, rtol |theta|)``.

    Returns (theta, residual, converged, products); with ``vector`` (a list), the
    unit Ritz vector x is appended to it.
    """
    x = x0 / np.linalg.norm(x0)
    Ax = apply(x)
    products = 1
    theta = float(np.vdot(x, Ax))
    p = Ap = None
    while True:
        r = Ax - theta * x
        residual = float(np.linalg.norm(r))
        done = residual <= max(atol, rtol * abs(theta))
        if done or products >= max_products:
            if vector is not None:
                vector.append(x)
            return theta, residual, bool(done), products
        w = precondition(r) if precondition is not None else r
        w = w - x * np.vdot(x, w)
        if p is not None:
            w = w - p * (np.vdot(p, w) / max(np.vdot(p, p), np.finfo(float).tiny))
        w = w / np.linalg.norm(w)
        Aw = apply(w)
        products += 1
        S = [x, w] + ([p] if p is not None else [])
        AS = [Ax, Aw] + ([Ap] if p is not None else [])
        V = np.stack([s.ravel() for s in S], axis=1)
        AV = np.stack([s.ravel() for s in AS], axis=1)
        gram = V.T @ V
        s, U = np.linalg.eigh(gram)
        keep = s > 1e-12 * s.max()
        T = U[:, keep] / np.sqrt(s[keep])
        B, AB = V @ T, AV @ T
        G = B.T @ AB
        vals, C = np.linalg.eigh(0.5 * (G + G.T))
        c = C[:, -1]
        x_new = (B @ c).reshape(x.shape)
        Ax_new = (AB @ c).reshape(x.shape)
        nrm = np.linalg.norm(x_new)
        x_new, Ax_new = x_new / nrm, Ax_new / nrm
        overlap = float(np.vdot(x, x_new))
        p, Ap = x_new - overlap * x, Ax_new - overlap * Ax
        if np.linalg.norm(p) < 1e-14:
            p = Ap = None
        x, Ax = x_new, Ax_new
        theta = float(np.vdot(x, Ax))


def _deflated_top(problem, W, PW, extra, extra_product=None, reference=None):
    r"""Largest eigenvalue of :math:`W_\perp^T\Phi W_\perp` and a few lower Ritz values
    by a short block iteration on the deflated operator (matrix-free eigengap),
    started from the columns ``extra`` (orthonormal and orthogonal to W when
    their products :math:`\Phi E` come with them as ``extra_product``).

    The top Ritz value :math:`\theta_0` of the start block is returned without
    iterating when it already fixes the eigengap ``reference - mu`` to a
    relative :data:`EIGENGAP_RTOL`: a Ritz value is a lower bound of the
    eigenvalue it approximates, short of it by at most :math:`r^2/\delta`
    (residual r, distance :math:`\delta` to the rest of the spectrum, here the
    next Ritz value), so the gap is over-estimated by at most that much.
    Otherwise the block iteration runs to a relative residual of 1e-6."""
    d, q = W.shape

    def deflated(V):
        V = V - W @ (W.T @ V)
        out, _ = problem.phi_product(W, V)
        return out - W @ (W.T @ out)

    if extra is not None and extra_product is not None:
        E = extra
        AE = extra_product - W @ (W.T @ extra_product)
    else:
        E = extra if extra is not None and extra.shape[1] else \
            np.random.default_rng(0).standard_normal((d, min(max(10, q), d - q)))
        E = E - W @ (W.T @ E)
        E, _ = np.linalg.qr(E - W @ (W.T @ E))
        AE = deflated(E)
    if reference is not None and E.shape[1] >= 2:
        theta, U = np.linalg.eigh(0.5 * (E.T @ AE + AE.T @ E))
        theta, U = theta[::-1], U[:, ::-1]
        x = E @ U[:, 0]
        residual = float(np.linalg.norm(AE @ U[:, 0] - theta[0] * x))
        separation = float(theta[0] - theta[1])
        if residual ** 2 <= EIGENGAP_RTOL * abs(reference - theta[0]) * separation:
            return float(theta[0]), float(theta[-1]), x
    mu, U, info = block_top_eigenvectors(deflated, E, AE, 1, extra=np.empty((d, 0)),
                                         tol=1e-6, max_iter=8)
    ritz = info["ritz_values"]
    return float(mu[0]), float(np.min(ritz)) if ritz is not None else float(mu[0]), U[:, 0]


def _eigengap_and_scale(phi, W, PW):
    r""":class:`Surrogate`'s ``eigengap`` and ``scale`` from eigenvalues alone (no
    bases: a certificate without its Hessian part needs only these numbers).

    With :math:`P = I - WW^T`, the eigenvalues :math:`\mu` of
    :math:`W_\perp^T\Phi W_\perp` are those of :math:`P\Phi P` less q zeros (on
    span W); :math:`P\Phi P - sWW^T` moves those q to :math:`-s`, below every
    :math:`\mu` for :math:`s > \|\Phi\|_2` (here :math:`1 + 2\|\Phi\|_F`).
    One d x d eigenvalue problem without vectors, instead of a complete QR and an
    eigendecomposition with vectors: fewer flops, and LAPACK's eigenvalues-only
    path skips the back-transformation that dominates at large d."""
    d, q = W.shape
    if q == d:
        return np.inf, 0.0
    # in units of Phi's largest entry: its squares (the shift's norm) stay finite
    # at any scale the data checks admit (a linear kernel on values near 1e80)
    unit = float(np.abs(phi).max())
    if unit == 0.0:
        return 0.0, 0.0
    phi, PW = phi / unit, PW / unit
    ritz = W.T @ PW
    nu = np.linalg.eigvalsh(0.5 * (ritz + ritz.T))
    shift = 1.0 + 2.0 * float(np.linalg.norm(phi))
    deflated = phi - W @ PW.T - PW @ W.T + W @ (ritz - shift * np.eye(q)) @ W.T
    mu = np.linalg.eigvalsh(0.5 * (deflated + deflated.T))[q:]
    scale = 2.0 * max(mu[-1] - nu[0], nu[-1] - mu[0])
    return float(nu[0] - mu[-1]) * unit, float(scale) * unit


def certify(problem, W, objective, *, phi=None, PW=None, full=True, gtol=1e-6, extra=None,
            extra_product=None, ascent=None):
    """The certificate's numbers at W (float64 ``phi`` or ``PW`` = Phi(W) W when known;
    ``extra``: start columns of the matrix-free eigengap iteration, with their
    products Phi(W) extra as ``extra_product`` when known).

    Returns a dict of :class:`ISMConvergence` fields: ``gradient_norm``,
    ``relative_gradient_norm``, ``first_order``, ``eigengap``, ``hessian_*``,
    ``second_order``, ``certificate_hessian_products``. Without ``full`` only
    the gradient (and the eigengap, when ``phi`` is known) are computed: one
    thin pass at most. ``ascent`` (a list) receives the Hessian's top eigenvector
    when its eigenvalue is certainly positive (``theta - residual`` above the
    second-order tolerance): a tangent direction in which f rises, W a saddle.
    """
    W = np.asarray(W, dtype=np.float64)
    d, q = W.shape
    if PW is None:
        PW = phi @ W if phi is not None else problem.phi_product(W, W)[0]
    gnorm = float(np.linalg.norm(riemannian_gradient(PW, W)))
    rel = gnorm / abs(objective) if objective != 0 else (0.0 if gnorm == 0 else np.inf)
    out = {"gradient_norm": gnorm, "relative_gradient_norm": float(rel),
           "first_order": bool(rel <= gtol), "eigengap": np.nan, "hessian_max_eigenvalue": np.nan,
           "hessian_scale": np.nan, "hessian_residual": np.nan, "hessian_converged": None,
           "second_order": None, "certificate_hessian_products": 0}
    if not full:
        if phi is not None:
            out["eigengap"], out["hessian_scale"] = _eigengap_and_scale(phi, W, PW)
        return out
    surrogate = Surrogate(phi, W) if phi is not None else None
    if surrogate is not None:
        out["eigengap"], out["hessian_scale"] = surrogate.eigengap, surrogate.scale
    if q == d:                              # a single point: no tangent space
        out.update(hessian_max_eigenvalue=-np.inf, hessian_residual=0.0, hessian_converged=True,
                   second_order=True)
        return out
    if surrogate is not None:
        scale = surrogate.scale
        x0, precondition = surrogate.top_direction(), surrogate.precondition
        if not problem.depends_on_w:        # Hess = A exactly
            out.update(hessian_max_eigenvalue=float(surrogate.diag.max()), hessian_residual=0.0,
                       hessian_converged=True,
                       second_order=bool(surrogate.diag.max() <= SECOND_ORDER_RTOL * scale))
            return out
    else:
        nu, Q = np.linalg.eigh(0.5 * (W.T @ PW + PW.T @ W))
        mu_max, mu_low, u = _deflated_top(problem, W, PW, extra, extra_product,
                                          reference=float(nu.min()))
        out["eigengap"] = float(nu.min() - mu_max)
        scale = 2.0 * max(nu.max() - min(mu_low, nu.min()), mu_max - nu.min(), 0.0)
        out["hessian_scale"] = scale = float(scale)
        # least negative surrogate curvature: top complement direction x lowest chosen one
        x0, precondition = np.outer(u, Q[:, 0]), None
        x0 = x0 - W @ (W.T @ x0)
    before = problem.n_hessian
    found = []
    theta, residual, converged, _ = largest_eigenvalue(
        lambda Z: problem.hessian_product(W, Z, PW, phi), x0,
        atol=HESSIAN_STOL * max(scale, np.finfo(float).tiny), rtol=HESSIAN_RTOL,
        max_products=HESSIAN_MAX_PRODUCTS,
        precondition=precondition, vector=found)
    out.update(hessian_max_eigenvalue=theta, hessian_residual=residual,
               hessian_converged=bool(converged),
               second_order=bool(converged and theta + residual <= SECOND_ORDER_RTOL * scale),
               certificate_hessian_products=problem.n_hessian - before)
    if ascent is not None and found and theta - residual > SECOND_ORDER_RTOL * scale:
        # an eigenvalue of the Hessian is certainly positive: W is no maximum, and
        # x (a tangent vector at W) is a direction of ascent from it
        ascent[:] = [found[0]]
    return out


__all__ = ["ISMConvergence", "certify", "largest_eigenvalue", "complement"]
