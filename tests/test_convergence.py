"""The safeguarded ISM solver: convergence where the plain fixed point cycles,
unchanged answers where it converges, and a certificate checked by finite differences."""
import itertools
from dataclasses import replace
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr import principal_angle
from ikdr._utils.eig import top_eigenvectors
from ikdr.solver import certificate as _certificate
from ikdr.passes.exact import ExactProblem
from ikdr.solver.problem import CountedProblem
from ikdr.solver.trust_region import Surrogate
from ikdr.solver.trust_region import exp_map as _exp
from ikdr.kernels import Gaussian, Polynomial

from .conftest import shared_csv


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def face():
    X = shared_csv("face_624x20.csv")
    y = shared_csv("face_624x20_identity_label.csv").ravel()
    return X, y


def test_face_case_converges_to_certified_maximum(face):
    """The face data at q = 10: the plain fixed point cycles (2060, 2083, 2057, 2082, ...);
    pymanopt's CG and trust regions reach 2097.17."""
    X, y = face
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = ikdr.ISM(n_components=5).fit(X, y)
    c = model.convergence_
    assert model.converged_ and c.converged and c.stopping_rule == "gradient"
    assert model.n_iter_ < model.max_iter
    objective = model.hsic_ * (X.shape[0] - 1) ** 2
    assert objective >= 2097.1
    assert c.objective == pytest.approx(objective, rel=1e-12)
    assert c.relative_gradient_norm < 1e-6 and c.first_order
    assert c.hessian_max_eigenvalue < 0 and c.second_order and c.local_maximum
    assert c.safeguarded_steps >= 1 and c.rejected_steps >= 1
    # The objective never decreases along the iterates.
    f = [h["objective"] for h in model.history_]
    assert all(b >= a for a, b in zip(f, f[1:]))
    assert len(model.history_) == model.n_iter_ + 1
    # At this maximum W is not the top eigenspace of Phi(W): the fixed point the plain
    # iteration looks for is not where the maximum is (negative eigengap, Eq. C.73).
    assert c.eigengap < 0


def plain_fixed_point(X, gamma, kernel, q, tol=0.01, max_iter=100):
    """Algorithm 1 as it was before the safeguard (reference for unchanged cases)."""
    kernel = kernel.fit(X)
    lam, W, _ = top_eigenvectors(kernel.phi0(X, gamma), q, method="lapack")
    objectives = [kernel.objective(X, W, gamma)]
    for it in range(1, max_iter + 1):
        lam_new, W_new, _ = top_eigenvectors(kernel.phi(X, W, gamma), q, W)
        objectives.append(kernel.objective(X, W_new, gamma))
        change = np.linalg.norm(lam_new - lam) / np.linalg.norm(lam_new)
        # the eigenvalue rule, once W has settled (a step of less than 0.1 rad)
        settled = principal_angle(W, W_new) < 0.1
        lam, W = lam_new, W_new
        if change < tol and settled:
            return W, it, objectives
    raise AssertionError("reference did not converge")


def _plain_cases():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    yield "wine-gaussian", X, y, Gaussian(), 3, 1e-2
    yield "wine-polynomial", X, y, Polynomial(), 3, 1e-2
    yield "wine-gaussian-tight", X, y, Gaussian(), 2, 1e-6


@pytest.mark.parametrize("case", list(_plain_cases()), ids=lambda c: c[0])
def test_plain_convergent_cases_unchanged(case):
    _, X, y, kernel, q, tol = case
    gamma, _ = ikdr.supervised_gamma(y)
    W_ref, n_ref, f_ref = plain_fixed_point(X, gamma, kernel, q, tol=tol)
    # the papers' steps throughout (the default mixes them once W settles: tests/test_mixing.py)
    res = ikdr.ism(X, gamma, kernel, q, tol=tol, criterion="eigenvalues", acceleration=None)
    assert res.convergence.stopping_rule == "eigenvalues"
    # converged means certified, wherever the papers' rule stopped
    c = res.convergence
    assert res.converged is c.converged is bool(c.first_order and c.second_order)
    assert res.n_iter == n_ref
    np.testing.assert_allclose(res.components, W_ref, rtol=0, atol=1e-12)   # same W, same signs
    np.testing.assert_allclose([h["objective"] for h in res.history], f_ref, rtol=1e-12)
    c = res.convergence
    assert c.plain_steps == n_ref and c.safeguarded_steps == 0 and c.rejected_steps == 0
    assert c.eigengap > 0          # a fixed point of the plain iteration


def test_warm_start_at_a_maximum_stays_there(face):
    """At the face case's maximum W is not the top eigenspace of Phi(W) (negative
    eigengap): a plain step from it descends. A warm start is the first iterate,
    guarded like every other, so fitting from the maximum keeps it."""
    X, y = face
    gamma, _ = ikdr.supervised_gamma(y)
    best = ikdr.ism(X, gamma, "gaussian", 5, criterion="gradient", gtol=1e-10, certify=False)
    assert best.convergence.eigengap < 0
    again = ikdr.ism(X, gamma, best.kernel, 5, W0=best.components, criterion="gradient",
                     gtol=1e-9, certify=False)
    assert again.history[0]["objective"] == pytest.approx(best.objective, rel=1e-13)
    assert again.objective >= best.objective * (1 - 1e-13)
    assert np.sin(principal_angle(best.components, again.components)) < 1e-6
    assert again.convergence.phi_evaluations <= 2


def test_eigenvalue_rule_does_not_stop_inside_a_swing():
    """Breast cancer (scikit-learn), median sigma, q = 2: the plain steps turn W by
    about 1.5 rad while the top eigenvalues change by under 1%. The papers' rule
    alone stopped there, 0.31 away in sine from the maximum; the rule now also
    needs W to have settled."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    papers = dict(n_components=2, sigma="median", support="all", criterion="eigenvalues")
    model = ikdr.ISM(**papers).fit(X, y)
    best = ikdr.ISM(**{**papers, "criterion": "gradient"}, gtol=1e-10).fit(X, y)
    assert np.sin(principal_angle(model.components_, best.components_)) < 1e-3
    assert model.convergence_.relative_gradient_norm < 1e-6
    angles = [h["angle"] for h in model.history_ if h["step"] == "plain"]
    assert max(angles) > 1.0          # the swing is there (the test can fail)


class _WrongCurvature:
    """f(W) = Tr(W^T A W), with Hessian products of the wrong sign (as a landmark
    problem's products need not be those of its objective)."""

    def __init__(self, A):
        self.A = A

    def objective(self, W):
        return float(np.trace(W.T @ self.A @ W))

    def hessian_product(self, W, Z, PW, phi):
        right = Z @ (W.T @ PW)
        return -2.0 * ((phi @ Z - right) - W @ (W.T @ (phi @ Z - right)))

    def phi_product(self, W, V):
        return self.A @ V, self.objective(W)


def test_trust_region_stalls_on_a_model_it_cannot_trust(rng):
    """A model that predicts descent must shrink the radius, never grow it: the
    phase ends (stalled) in a bounded number of steps instead of cycling."""
    from ikdr.solver.trust_region import TrustRegion

    d, q = 8, 2
    A = rng.standard_normal((d, d))
    A = A + A.T
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    problem = _WrongCurvature(A)
    region = TrustRegion(problem)
    f = problem.objective(W)
    radii = []
    for _ in range(100):
        W, f, accepted, stalled = region.iterate(W, A, f)
        radii.append((region.radius, accepted))
        if stalled:
            break
    assert stalled and len(radii) < 100
    for (before, _), (after, accepted) in zip(radii, radii[1:]):
        assert accepted or after < before


class _RoundedQuadratic(_WrongCurvature):
    """f(W) = Tr(W^T A W) with its own (exact) Hessian products, evaluated with a
    rounding error of 1e-13 relative (low), as a long sum's can be."""

    def hessian_product(self, W, Z, PW, phi):
        return -super().hessian_product(W, Z, PW, phi)

    def objective(self, W):
        return super().objective(W) * (1 - 1e-13)


def test_trust_region_judges_by_the_gradient_below_the_objectives_rounding(rng):
    """Near a maximum where the ascent a step can make is below the objective's
    rounding, the trust region takes a Newton step that shrinks the gradient
    (it stalled there, short of a tight gtol)."""
    from ikdr.solver.problem import riemannian_gradient
    from ikdr.solver.trust_region import TrustRegion

    d, q = 8, 2
    A = np.diag(np.arange(d, 0, -1.0)) * 1e3
    top = np.eye(d)[:, :q]
    W = np.linalg.qr(top + 1e-10 * rng.standard_normal((d, q)))[0]
    problem = _RoundedQuadratic(A)
    f = float(np.trace(W.T @ A @ W))             # the start's objective, without the error
    gnorm = np.linalg.norm(riemannian_gradient(A @ W, W))
    assert gnorm / f < 1e-8                       # the ascent left is below f's rounding
    W_new, f_new, accepted, stalled = TrustRegion(problem).iterate(W, A, f)
    assert accepted and not stalled
    assert np.linalg.norm(riemannian_gradient(A @ W_new, W_new)) < 1e-3 * gnorm
    assert abs(f_new - f) <= 1e-12 * f


def test_cancer_plain_case_unchanged():
    X = StandardScaler().fit_transform(shared_csv("cancer_683x9.csv"))
    y = shared_csv("cancer_683x9_label.csv").ravel()
    gamma, _ = ikdr.supervised_gamma(y)
    W_ref, n_ref, _ = plain_fixed_point(X, gamma, Gaussian(), 2)
    res = ikdr.ism(X, gamma, "gaussian", 2, certify=False, criterion="eigenvalues")
    assert res.n_iter == n_ref
    np.testing.assert_allclose(res.components, W_ref, rtol=0, atol=1e-12)
    assert res.convergence.second_order is None      # not computed with certify=False


def _tangent_basis(W):
    Q, _ = np.linalg.qr(W, mode="complete")
    Wp = Q[:, W.shape[1]:]
    d, q = W.shape
    basis = []
    for i in range(d - q):
        for j in range(q):
            E = np.zeros((d - q, q))
            E[i, j] = 1.0
            basis.append(Wp @ E)
    return basis


def finite_difference_certificate(f, W, t=1e-4):
    """Riemannian gradient norm and Hessian of f on the Grassmann manifold from objective
    values along geodesics only: d/dt f(Exp(tZ)) = <g, Z>, d2/dt2 f(Exp(tZ)) = <Z, Hess Z>."""
    basis = _tangent_basis(W)
    f0 = f(W)

    def second(Z):
        return (f(_exp(W, t * Z)) - 2 * f0 + f(_exp(W, -t * Z))) / t**2

    grad = np.array([(f(_exp(W, t * Z)) - f(_exp(W, -t * Z))) / (2 * t) for Z in basis])
    m = len(basis)
    H = np.empty((m, m))
    diag = [second(Z) for Z in basis]
    for a in range(m):
        H[a, a] = diag[a]
        for b in range(a):
            H[a, b] = H[b, a] = (second(basis[a] + basis[b]) - diag[a] - diag[b]) / 2
    return np.linalg.norm(grad), H


@pytest.mark.parametrize("setup", ["dense-hessian", "lobpcg"])
def test_certificate_matches_finite_differences(setup, wine, rng):
    if setup == "dense-hessian":          # tangent dimension (6 - 2) * 2 = 8
        X = rng.standard_normal((120, 6))
        y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int) + (X[:, 2] > 0.5)
        q, kernel = 2, Gaussian()
    else:                                 # (13 - 2) * 2 = 22
        X, y = wine
        q, kernel = 2, Polynomial()
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = kernel.fit(X)
    res = ikdr.ism(X, gamma, kernel, q, criterion="gradient", gtol=1e-9)
    c = res.convergence
    W = res.components
    problem = CountedProblem(ExactProblem(X, gamma, kernel))
    phi = kernel.phi(X, W, gamma)
    surrogate = Surrogate(phi, W)

    def f(V):
        return kernel.objective(X, V, gamma)

    with ikdr.num_threads(1):             # hundreds of tiny products: threads only add overhead
        gnorm, H = finite_difference_certificate(f, W)
    eigs = np.linalg.eigvalsh(H)
    scale = np.abs(eigs).max()
    # The reported Ritz value is a Rayleigh quotient (<= the largest eigenvalue) within
    # its reported residual of it; fd: the finite-difference Hessian's own error.
    fd = 1e-5 * scale
    assert c.hessian_converged and c.certificate_hessian_products >= 1
    assert eigs[-1] - c.hessian_residual - fd <= c.hessian_max_eigenvalue <= eigs[-1] + fd
    # Run to a tight residual, the same estimate gives the dense value.
    tight = _certificate.largest_eigenvalue(
        lambda Z: problem.hessian_product(W, Z, phi @ W, phi), surrogate.top_direction(),
        atol=1e-7 * scale, max_products=200, precondition=surrogate.precondition)
    assert tight[2] and tight[0] == pytest.approx(eigs[-1], abs=fd)
    assert gnorm <= 1e-6 * abs(f(W)) and c.relative_gradient_norm <= 1e-6
    assert c.local_maximum and eigs[-1] < 0
    # The eigengap is that of Phi(W) (W spans its top-q eigenspace here).
    vals = np.linalg.eigvalsh(kernel.phi(X, W, gamma))[::-1]
    assert c.eigengap == pytest.approx(vals[q - 1] - vals[q], rel=1e-8)

    # Away from the maximum the gradient norm is also right.
    start = ikdr.ism(X, gamma, kernel, q, max_iter=1, warn=False, certify=False)
    with ikdr.num_threads(1):
        gnorm0, _ = finite_difference_certificate(f, start.components)
    assert start.convergence.gradient_norm == pytest.approx(gnorm0, rel=1e-6)


def test_linear_kernel_certificate_is_exact(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    res = ikdr.ism(X, gamma, "linear", 3)
    c = res.convergence
    assert c.stopping_rule == "exact" and res.n_iter == 0
    assert c.relative_gradient_norm < 1e-12
    # Phi does not depend on W: the Hessian is the surrogate, whose largest eigenvalue is -2 gap.
    assert c.hessian_max_eigenvalue == pytest.approx(-2 * c.eigengap, rel=1e-12)


def test_gradient_criterion_certifies_plain_cases(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    for kernel in ("gaussian", "polynomial"):
        paper = ikdr.ism(X, gamma, kernel, 3)
        res = ikdr.ism(X, gamma, kernel, 3, criterion="gradient")
        c = res.convergence
        assert res.converged and c.stopping_rule == "gradient" and c.local_maximum
        assert res.objective >= paper.objective
        f = [h["objective"] for h in res.history]
        assert all(b >= a for a, b in zip(f, f[1:]))


def test_float32_input_reaches_the_float64_maximum(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    r64 = ikdr.ism(X, gamma, "polynomial", 3, criterion="gradient", certify=False)
    r32 = ikdr.ism(X.astype(np.float32), gamma, "polynomial", 3, criterion="gradient",
                   certify=False)
    assert r32.converged and r32.convergence.relative_gradient_norm <= 1e-6
    assert ikdr.principal_angle(r32.components, r64.components) < 1e-5


def test_limit_reached_warns_and_reports(face):
    X, y = face
    gamma, _ = ikdr.supervised_gamma(y)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = ikdr.ism(X, gamma, "gaussian", 5, max_iter=2, certify=False,
                       criterion="eigenvalues")
    c = res.convergence
    assert not res.converged and not c.converged and c.stopping_rule == "max_iter"
    assert c.relative_gradient_norm > 1e-6 and not c.first_order
    assert res.n_iter == 2


def test_bad_solver_parameters(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    with pytest.raises(ValueError, match="gtol"):
        ikdr.ism(X, gamma, "gaussian", 2, gtol=0)
    with pytest.raises(ValueError, match="criterion"):
        ikdr.ism(X, gamma, "gaussian", 2, criterion="objective")


def _symmetric_saddle_problem():
    """Data invariant under the sign flip of every coordinate (labels depend on |x|):
    each axis e_k is a critical point of f (Phi(e_k) is diagonal), and e_2 is a saddle."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((30, 3))
    labels = (np.abs(base[:, 0]) > 0.7).astype(int) + 2 * (np.abs(base[:, 1]) > 0.7)
    signs = np.array(list(itertools.product([1, -1], repeat=3)))
    X = np.vstack([base * s for s in signs])
    y = np.tile(labels, len(signs))
    gamma, _ = ikdr.supervised_gamma(y)
    return X, gamma, Gaussian(1.0)


def test_saddle_point_is_not_certified():
    X, gamma, kernel = _symmetric_saddle_problem()
    problem = CountedProblem(ExactProblem(X, gamma, kernel))

    def f(V):
        return kernel.objective(X, V, gamma)

    for k, is_maximum in [(0, True), (2, False)]:
        W = np.eye(3)[:, [k]]
        phi, objective = problem.phi(W)
        c = _certificate.certify(problem, W, objective, phi=phi)
        gnorm, H = finite_difference_certificate(f, W)
        eigs = np.linalg.eigvalsh(H)
        fd = 1e-5 * np.abs(eigs).max()
        assert gnorm <= 1e-8 * abs(objective) and c["first_order"]      # critical by symmetry
        assert eigs[-1] - c["hessian_residual"] - fd <= c["hessian_max_eigenvalue"] <= eigs[-1] + fd
        assert c["hessian_converged"]
        assert c["second_order"] is is_maximum
        if not is_maximum:
            assert eigs[0] < 0 < eigs[-1]          # a saddle: curvature of both signs
            assert c["hessian_max_eigenvalue"] > 0


def test_unconverged_hessian_estimate_never_certifies(wine, monkeypatch):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    res = ikdr.ism(X, gamma, "gaussian", 3, criterion="gradient")
    assert res.convergence.local_maximum and res.convergence.hessian_converged
    monkeypatch.setattr(_certificate, "HESSIAN_MAX_PRODUCTS", 1)
    monkeypatch.setattr(_certificate, "HESSIAN_PRODUCT_BUDGET", 1)
    monkeypatch.setattr(_certificate, "HESSIAN_RTOL", 1e-9)
    with pytest.warns(ConvergenceWarning, match="inconclusive after its budget of 1 Hessian"):
        c = ikdr.ism(X, gamma, "gaussian", 3, criterion="gradient").convergence
    assert c.certificate_hessian_products == 1 and c.hessian_converged is False
    assert c.hessian_max_eigenvalue < 0 and c.first_order      # would look like a maximum...
    assert c.second_order is False and not c.local_maximum     # ...but is not claimed


def test_hessian_estimate_runs_until_it_decides(wine, monkeypatch):
    """An estimate whose residual rule is out of reach (RTOL and STOL tiny) is probed
    after HESSIAN_MAX_PRODUCTS products and at each doubling, and stops at the first
    probe where its interval lies below the second-order tolerance: a maximum,
    certified, within the budget; without a budget beyond the first run it stays
    inconclusive."""
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    monkeypatch.setattr(_certificate, "HESSIAN_MAX_PRODUCTS", 1)
    monkeypatch.setattr(_certificate, "HESSIAN_RTOL", 1e-12)
    monkeypatch.setattr(_certificate, "HESSIAN_STOL", 1e-15)
    monkeypatch.setattr(_certificate, "HESSIAN_PRODUCT_BUDGET", 64)
    c = ikdr.ism(X, gamma, "gaussian", 3, criterion="gradient").convergence
    products = c.certificate_hessian_products
    assert c.hessian_converged and c.second_order and c.converged
    # it stopped at a probe (a power of two) once the interval decided
    assert 1 <= products <= 64 and products & (products - 1) == 0
    assert c.hessian_max_eigenvalue + c.hessian_residual <= 1e-4 * c.hessian_scale
    monkeypatch.setattr(_certificate, "HESSIAN_PRODUCT_BUDGET", 1)
    with pytest.warns(ConvergenceWarning, match="inconclusive"):
        undecided = ikdr.ism(X, gamma, "gaussian", 3, criterion="gradient").convergence
    assert undecided.hessian_converged is False and not undecided.converged


@pytest.fixture
def counted_passes(monkeypatch):
    """Count the n^2 passes at the native door (every fused pass goes through these)."""
    from ikdr import _native

    calls = {"n": 0}
    for name in ("fused_product", "phi_product"):
        original = getattr(_native, name)

        def counted(*args, _original=original, **kwargs):
            calls["n"] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(_native, name, counted)
    return calls


@pytest.mark.parametrize("certify", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pass_count_of_a_converging_plain_run(wine, counted_passes, certify, dtype):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)          # factored: Phi_0 needs no n^2 pass
    assert gamma.is_factored
    res = ikdr.ism(X.astype(dtype), gamma, Gaussian(ikdr.median_sigma(X)), 3, tol=1e-6,
                   certify=certify, criterion="eigenvalues")
    c = res.convergence
    assert c.stopping_rule == "eigenvalues" and c.safeguarded_steps == 0
    assert res.n_iter >= 3
    assert c.phi_evaluations <= res.n_iter + 2
    assert c.objective_evaluations == 0
    assert c.hessian_products == c.certificate_hessian_products
    assert (c.hessian_products > 0) is certify
    assert counted_passes["n"] == c.passes      # every pass is counted
    if dtype == np.float64:
        assert c.phi_evaluations == res.n_iter + 1


def test_n_components_none_is_chosen_by_the_solver(wine):
    X, y = wine
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(ikdr.median_sigma(X))
    phi0 = kernel.phi0(X, gamma)
    q = ikdr.choose_n_components(np.linalg.eigvalsh(phi0), minimum=2)
    res = ikdr.ism(X, gamma, kernel, None, min_components=2)
    assert res.components.shape == (13, q)
    ref = ikdr.ism(X, gamma, kernel, q)
    np.testing.assert_allclose(res.components, ref.components, atol=1e-12)
    start = ikdr.ism(X, gamma, kernel, None, W0=ref.components[:, :2])
    assert start.components.shape == (13, 2)
    model = ikdr.ISM().fit(X, y)                 # at least (classes - 1) = 2
    expected = ikdr.choose_n_components(np.linalg.eigvalsh(phi0), minimum=2)
    assert model.components_.shape[1] == expected


class _MatrixProblem:
    """A W-free Phi = A, for the certificate's matrix-free eigengap alone."""

    def __init__(self, A):
        self.A, self.passes = A, 0

    def phi_product(self, W, V):
        self.passes += 1
        return self.A @ V, 0.0


@pytest.mark.parametrize("noise, iterates", [(0.0, False), (1e-2, True)])
def test_matrix_free_eigengap_iterates_only_when_the_start_cannot_fix_it(rng, noise, iterates):
    d, q, e = 40, 3, 6
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    values = np.concatenate([[10.0, 9.0, 8.0], np.linspace(5.0, -5.0, d - q)])
    A = (Q * values) @ Q.T
    W = Q[:, :q]
    # start block: the top complement eigenvectors, exact or perturbed
    E = Q[:, q:q + e] + noise * rng.standard_normal((d, e))
    E = E - W @ (W.T @ E)
    E, _ = np.linalg.qr(E)
    problem = _MatrixProblem(A)
    mu, low, u = _certificate._deflated_top(problem, W, A @ W, E, A @ E, reference=8.0)
    assert (problem.passes > 0) == iterates
    # the gap 8 - mu to 1e-3 relative, never over-claimed by more than that
    assert abs((8.0 - mu) - 3.0) <= _certificate.EIGENGAP_RTOL * 3.0
    assert mu <= 5.0 + 1e-12                       # a Ritz value: a lower bound


def test_the_warning_names_a_swinging_w_when_the_eigenvalues_settled():
    # 40 samples in 80 dimensions, 2 classes, q = 4: Phi's 4th eigenvalue is
    # degenerate, its eigenvectors are not determined, so W keeps turning while
    # the eigenvalues repeat exactly; the warning says that rather than quoting
    # an eigenvalue change below tol as if it were the reason. (The objective is
    # flat along that eigenspace, so the point is certified at the default gtol:
    # a gtol beyond reach makes it uncertified, and then the warning speaks.)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 40)
    X = rng.standard_normal((2, 80))[y] * 1.5 + rng.standard_normal((40, 80)) * 3.0
    papers = dict(n_components=4, sigma=ikdr.median_sigma(X), tol=1e-6, support="all",
                  max_iter=30, criterion="eigenvalues")
    with pytest.warns(ConvergenceWarning, match=r"turned W by .* eigenvalue is degenerate"):
        model = ikdr.ISM(**papers, gtol=1e-15).fit(X, y)
    assert not model.convergence_.converged and model.convergence_.stopping_rule == "max_iter"
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # certified at max_iter: no warning
        model = ikdr.ISM(**papers).fit(X, y)
    assert model.convergence_.converged and model.convergence_.local_maximum


def test_a_fit_that_stops_at_a_saddle_escapes_and_goes_on():
    """A constructed saddle: data symmetric under every sign flip of the axes, labels
    set by x0^2 + 0.3 x1^2. The axes are then critical points of f for q = 1; e1
    (x1 carries some of the labels) is a saddle between the maximum e0 and e2.
    Started there with the gradient rule, the fit stops at once; its certificate
    finds the positive curvature, steps along it and goes on to the maximum."""
    import itertools

    from ikdr.kernels import Gaussian

    rng = np.random.default_rng(0)
    X0 = rng.standard_normal((60, 3))
    X = np.vstack([X0 * np.array(s) for s in itertools.product((1, -1), repeat=3)])
    y = (X[:, 0] ** 2 + 0.3 * X[:, 1] ** 2 > 1.0).astype(int)
    gamma = ikdr.supervised_gamma(y)[0]
    e = np.eye(3)
    at_max = ikdr.ism(X, gamma, Gaussian(1.0), 1, W0=e[:, [0]], criterion="gradient")
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # an escaped saddle is no warning
        fit = ikdr.ism(X, gamma, Gaussian(1.0), 1, W0=e[:, [1]], criterion="gradient")
    c = fit.convergence
    assert c.saddle_escapes == 1
    assert [h["step"] for h in fit.history][:2] == ["start", "saddle escape"]
    assert fit.history[1]["objective"] > fit.history[0]["objective"]
    assert fit.converged and c.second_order
    assert ikdr.principal_angle(fit.components, e[:, [0]]) < 1e-4
    assert fit.objective == pytest.approx(at_max.objective, rel=1e-8)
    assert [h["iteration"] for h in fit.history] == list(range(len(fit.history)))


def test_block_eigensolves_stop_where_the_gradient_rule_is_met(monkeypatch):
    """Under the gradient rule a matrix-free step solves Phi(W)'s eigenvectors only as
    far as the rule needs (a share of the gradient it allows); the answer is the
    same certified maximum as with the 1e-8 residual, in fewer passes."""
    from ikdr.solver import steps
    from ikdr.solver.steps import MF_TOL, GRADIENT_SHARE, PlainStep, Point

    step = PlainStep.__new__(PlainStep)
    step.q, step.tol, step.gtol = 4, MF_TOL, 1e-6
    point = Point(np.eye(6)[:, :4], 2.0e5)
    expected = GRADIENT_SHARE * 1e-6 * 2.0e5 / (2.0 * np.sqrt(4) * 50.0)
    assert step.block_tol(point, 50.0) == pytest.approx(expected)
    assert step.block_tol(point, 1e12) == MF_TOL        # never tighter than needed ...
    step.gtol = None                                      # ... nor looser without the rule
    assert step.block_tol(point, 50.0) == MF_TOL

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1200, 40))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 2).astype(int) + 2 * (X[:, 2] > 0)
    gamma, _ = ikdr.supervised_gamma(y)

    def fit():
        return ikdr.ism(X, gamma, Gaussian(3.0), 3, phi_solver="matrix_free")

    loose = fit()
    monkeypatch.setattr(steps, "GRADIENT_SHARE", 0.0)    # every block solve to MF_TOL
    tight = fit()
    for result in (loose, tight):
        assert result.converged and result.convergence.relative_gradient_norm <= 1e-6
    assert principal_angle(loose.components, tight.components) < 1e-5
    assert loose.convergence.passes < tight.convergence.passes


@pytest.mark.parametrize("d, q, size", [(6, 2, 1.0), (40, 3, 1.0), (120, 7, 1.0), (9, 9, 1.0),
                                         (40, 3, 1e160)])
def test_gradient_only_certificate_reports_the_surrogates_eigengap(d, q, size):
    """certify=False reports the eigengap and scale from eigenvalues alone: the
    same numbers as the surrogate Hessian's bases give (Eq. C.73), at any scale
    of Phi (1e160: a linear kernel on values near 1e80)."""
    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    phi = size * (A + A.T)
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    surrogate = Surrogate(phi, W)
    gap, scale = _certificate._eigengap_and_scale(phi, W, phi @ W)
    if q == d:
        assert (gap, scale) == (np.inf, 0.0)
    else:
        assert gap == pytest.approx(surrogate.eigengap, rel=1e-12, abs=1e-12 * scale)
        assert scale == pytest.approx(surrogate.scale, rel=1e-12)


def test_a_fit_whose_w_alone_is_used_makes_no_pass_of_its_own_at_the_end():
    """exact_finish=False (the held-out halves' fits): the same W in one pass fewer,
    the last point's gradient as its float32 pass gave it."""
    from ikdr.passes import resolve
    from ikdr.solver.driver import solve_ism
    from ikdr.solver.options import ISMOptions
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    gamma = ikdr.supervised_gamma(y)[0]
    options = ISMOptions(n_components=3, gtol=1e-3, certify=False, warn=False)
    fits = [solve_ism(resolve(X), X, gamma, Gaussian(3.0), replace(options, exact_finish=exact))
            for exact in (True, False)]
    exact, as_passed = (f.convergence for f in fits)
    assert np.array_equal(fits[0].components, fits[1].components)
    assert as_passed.phi_evaluations + as_passed.objective_evaluations == \
        exact.phi_evaluations + exact.objective_evaluations - 1
    assert as_passed.relative_gradient_norm == pytest.approx(exact.relative_gradient_norm,
                                                             rel=1e-3)
    assert as_passed.first_order and np.isnan(as_passed.eigengap)
