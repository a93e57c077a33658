"""The fast paths give the dense path's answer on small problems:
the matrix-free Phi step of ISM, its certificate, and the float32 mode."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import ikdr
from ikdr import principal_angle
from ikdr._utils.eig import block_top_eigenvectors, lapack_top
from ikdr.solver import steps as _solver
from ikdr.passes.exact import ExactProblem
from ikdr.solver.options import ISMOptions
from ikdr.solver.problem import CountedProblem
from ikdr.solver.steps import phi_mode
from ikdr.kernels import Gaussian, Linear, Polynomial

from ._mixtures import mixture


@pytest.fixture(scope="module")
def supervised():
    X, y = mixture(600, 30, 4)
    gamma, _ = ikdr.supervised_gamma(y)
    return X, y, gamma, Gaussian(ikdr.median_sigma(X))


def sin_angle(U, V):
    return np.sin(principal_angle(U, V))


def test_principal_angle_resolves_small_angles(rng):
    U = np.linalg.qr(rng.standard_normal((50, 3)))[0]
    t = 1e-10
    V = np.linalg.qr(U + t * rng.standard_normal((50, 3)))[0]
    expected = np.linalg.norm(V - U @ (U.T @ V), 2)
    assert abs(sin_angle(U, V) - expected) < 1e-3 * expected
    assert sin_angle(U, U) < 1e-14


def test_block_eigensolver_matches_lapack(rng):
    B = rng.standard_normal((120, 120))
    A = B + B.T
    vals, V = lapack_top(A, 4)
    V0 = np.linalg.qr(V + 0.1 * rng.standard_normal(V.shape))[0]
    got, U, info = block_top_eigenvectors(lambda S: A @ S, V0, A @ V0, 4, tol=1e-12,
                                          max_iter=200)
    assert info["converged"]
    np.testing.assert_allclose(got, vals, rtol=1e-10)
    assert sin_angle(U, V) < 1e-9
    # the extra Ritz vectors stay orthogonal to the wanted ones
    assert np.abs(info["extra"].T @ U).max() < 1e-10


@pytest.mark.parametrize("kernel", [None, Polynomial(2, 1.0), 0.5 * Gaussian(4.0) + Polynomial(2)])
def test_matrix_free_matches_dense(supervised, kernel):
    X, y, gamma, gauss = supervised
    kernel = gauss if kernel is None else kernel
    dense = ikdr.ism(X, gamma, kernel, 3, phi_solver="dense", criterion="eigenvalues")
    free = ikdr.ism(X, gamma, kernel, 3, phi_solver="matrix_free", criterion="eigenvalues")
    assert free.n_iter == dense.n_iter
    assert sin_angle(dense.components, free.components) < 1e-6
    assert abs(free.objective - dense.objective) <= 1e-8 * abs(dense.objective)
    np.testing.assert_allclose(free.eigenvalues, dense.eigenvalues, rtol=1e-6)
    assert all(h["eigen_solver"].startswith("matrix-free") for h in free.history[1:])


def test_matrix_free_certificate_agrees(supervised):
    X, y, gamma, kernel = supervised
    dense = ikdr.ism(X, gamma, kernel, 3, criterion="gradient", phi_solver="dense")
    free = ikdr.ism(X, gamma, kernel, 3, criterion="gradient", phi_solver="matrix_free")
    a, b = dense.convergence, free.convergence
    assert a.first_order and b.first_order
    assert abs(a.eigengap - b.eigengap) <= 1e-5 * abs(a.eigengap)
    assert b.hessian_max_eigenvalue <= 0 and b.second_order
    assert abs(a.hessian_max_eigenvalue - b.hessian_max_eigenvalue) <= 0.05 * abs(
        a.hessian_max_eigenvalue)
    # certify=False: the gradient only, from the same products
    light = ikdr.ism(X, gamma, kernel, 3, criterion="gradient", phi_solver="matrix_free",
                     certify=False).convergence
    assert light.relative_gradient_norm == pytest.approx(b.relative_gradient_norm, rel=1e-6)
    assert light.second_order is None


def test_matrix_free_warm_start(supervised):
    X, y, gamma, kernel = supervised
    start = ikdr.ism(X, gamma, kernel, 3, max_iter=1, warn=False, criterion="eigenvalues").components
    dense = ikdr.ism(X, gamma, kernel, 3, W0=start, phi_solver="dense", criterion="eigenvalues")
    free = ikdr.ism(X, gamma, kernel, 3, W0=start, phi_solver="matrix_free", criterion="eigenvalues")
    assert sin_angle(dense.components, free.components) < 1e-6
    assert abs(free.objective - dense.objective) <= 1e-8 * abs(dense.objective)


def test_matrix_free_hands_over_to_the_trust_region():
    # the face data's cycling case is slow to build; force a refusal by
    # a start far from the plain iteration's basin on a tiny problem
    X, y = mixture(300, 12, 3, seed=3)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(0.3 * ikdr.median_sigma(X))
    dense = ikdr.ism(X, gamma, kernel, 2, criterion="gradient", phi_solver="dense")
    free = ikdr.ism(X, gamma, kernel, 2, criterion="gradient", phi_solver="matrix_free")
    assert free.convergence.first_order
    assert abs(free.objective - dense.objective) <= 1e-6 * abs(dense.objective)


def _problem(n, d, kernel):
    """A problem of n samples and d features (its passes are never run)."""
    X = np.broadcast_to(np.zeros((1, d)), (n, d))
    return ExactProblem(X, ikdr.supervised_gamma(np.arange(n) % 2)[0], kernel)


def _mode(phi_solver, kernel, n, d, q):
    problem = _problem(n, d, kernel)
    return phi_mode(phi_solver, problem, q, _solver.PassCosts.of_problem(problem, q))


def test_auto_rule():
    g = Gaussian(1.0)
    assert _mode("auto", g, 10_000, 64, 10) == "dense"
    assert _mode("auto", g, 10_000, 300, 10) == "dense"
    assert _mode("auto", g, 10_000, 784, 10) == "hybrid"
    assert _mode("auto", g, 10_000, 3000, 10) == "matrix_free"
    assert _mode("auto", g, 500, 3000, 10) == "dense"      # too few samples
    assert _mode("auto", Linear(), 10_000, 3000, 10) == "dense"   # Phi is W-free
    assert _mode("matrix_free", g, 10, 5, 2) == "matrix_free"
    assert _mode("hybrid", g, 10, 5, 2) == "hybrid"
    assert _mode("dense", g, 10_000, 3000, 10) == "dense"
    with pytest.raises(ValueError, match="phi_solver"):
        ISMOptions(phi_solver="lanczos")


@pytest.fixture
def cheap_blocks(monkeypatch):
    """A block iteration costs 1/1000 of a dense pass: the hybrid always prefers it."""
    monkeypatch.setattr(_solver.PassCosts, "of", classmethod(
        lambda cls, n, d, q: cls(dense=1000.0, block=1.0)))


@pytest.mark.parametrize("certify", [True, False])
def test_hybrid_matches_dense(supervised, certify, cheap_blocks):
    X, y, gamma, kernel = supervised
    dense = ikdr.ism(X, gamma, kernel, 3, phi_solver="dense", certify=certify, criterion="eigenvalues")
    hybrid = ikdr.ism(X, gamma, kernel, 3, phi_solver="hybrid", certify=certify, criterion="eigenvalues")
    assert hybrid.n_iter == dense.n_iter
    assert sin_angle(dense.components, hybrid.components) < 1e-6
    assert abs(hybrid.objective - dense.objective) <= 1e-8 * abs(dense.objective)
    # the first step forms Phi (LAPACK), every later one is matrix-free
    methods = [h["eigen_solver"] for h in hybrid.history[1:]]
    assert methods[0] == "lapack"
    assert all(m.startswith("matrix-free") for m in methods[1:])
    assert hybrid.convergence.dense_phi_evaluations == 1
    assert dense.convergence.dense_phi_evaluations == dense.n_iter + int(certify)
    if certify:
        a, b = dense.convergence, hybrid.convergence
        assert abs(a.eigengap - b.eigengap) <= 1e-5 * abs(a.eigengap)
        assert a.second_order == b.second_order


def test_hybrid_goes_back_to_dense_when_a_block_eigensolve_fails(supervised, monkeypatch,
                                                                  cheap_blocks):
    X, y, gamma, kernel = supervised
    monkeypatch.setattr(_solver, "_MF_MAX_ITER", 1)     # no block eigensolve converges
    dense = ikdr.ism(X, gamma, kernel, 3, phi_solver="dense", criterion="eigenvalues")
    hybrid = ikdr.ism(X, gamma, kernel, 3, phi_solver="hybrid", criterion="eigenvalues")
    # every step after the first tried the block eigensolver, then formed Phi at the same point
    assert all(h["eigen_solver"] == "lapack" for h in hybrid.history[1:])
    assert hybrid.convergence.dense_phi_evaluations == hybrid.n_iter
    assert hybrid.n_iter == dense.n_iter
    assert sin_angle(dense.components, hybrid.components) < 1e-8


def test_hybrid_forms_phi_when_block_iterations_would_cost_more(supervised):
    # 600 x 30: a block iteration costs about as much as a dense pass, so the
    # predicted iterations of every step cost more and each step forms Phi
    X, y, gamma, kernel = supervised
    assert _solver.PassCosts.of(600, 30, 3).ratio < 2
    dense = ikdr.ism(X, gamma, kernel, 3, phi_solver="dense", certify=False, criterion="eigenvalues")
    hybrid = ikdr.ism(X, gamma, kernel, 3, phi_solver="hybrid", certify=False, criterion="eigenvalues")
    assert all(h["eigen_solver"] == "lapack" for h in hybrid.history[1:])
    assert hybrid.n_iter == dense.n_iter
    assert sin_angle(dense.components, hybrid.components) < 1e-8


@pytest.fixture(scope="module")
def supervised_large():
    """Enough samples and features for coarse (float32) dense passes in the early steps."""
    X, y = mixture(1200, 65, 4, seed=2)
    gamma, _ = ikdr.supervised_gamma(y)
    return X, y, gamma, Gaussian(0.5 * ikdr.median_sigma(X))


def float64_only(monkeypatch):
    monkeypatch.setattr(_solver, "_COARSE_MIN_SAMPLES", 10**12)


def coarse_methods(result):
    return ["float32" in h["eigen_solver"] for h in result.history[1:]]


@pytest.mark.parametrize("phi_solver", ["dense", "hybrid"])
def test_coarse_steps_reach_the_float64_answer(supervised_large, monkeypatch, phi_solver):
    X, y, gamma, kernel = supervised_large
    # the papers' steps, so that the two runs' iterates can be compared one by one
    # (Pulay mixing extrapolates from them: the float32 noise of the coarse
    # points can then shift the step the rule stops at; its answer is compared below)
    papers = dict(tol=1e-9, phi_solver=phi_solver, acceleration=None)
    coarse = ikdr.ism(X, gamma, kernel, 3, **papers, criterion="eigenvalues")
    mixed = ikdr.ism(X, gamma, kernel, 3, tol=1e-9, phi_solver=phi_solver, criterion="eigenvalues")
    float64_only(monkeypatch)
    exact = ikdr.ism(X, gamma, kernel, 3, **papers, criterion="eigenvalues")
    assert mixed.convergence.coarse_phi_evaluations >= 1
    assert sin_angle(exact.components, mixed.components) < 1e-7
    assert rel(mixed.objective, exact.objective) < 1e-12
    c = coarse.convergence
    assert exact.convergence.coarse_phi_evaluations == 0
    assert 1 <= c.coarse_phi_evaluations <= _solver._MAX_COARSE_STEPS
    assert c.coarse_phi_evaluations <= c.dense_phi_evaluations
    used = coarse_methods(coarse)
    assert used[0] and not used[-1]            # far steps coarse, the deciding step float64
    assert used == sorted(used, reverse=True)  # coarse steps only at the start
    assert coarse.converged and c.stopping_rule == "eigenvalues"
    assert sin_angle(exact.components, coarse.components) < 1e-7
    assert rel(coarse.objective, exact.objective) < 1e-12
    # a coarse point's objective is the float32 pass's, within its error bound;
    # beyond those bounds the history's objectives never decrease
    f = [h["objective"] for h in coarse.history]
    largest_bound = _solver.COARSE_ERROR_MARGIN * _solver.COARSE_MAX_ERROR
    slack = 2 * largest_bound
    assert all(b >= a - slack * abs(a) for a, b in zip(f, f[1:]))
    np.testing.assert_allclose(f, [h["objective"] for h in exact.history],
                               rtol=largest_bound)
    # every other point's objective is exact (point k is coarse where the eigensolve
    # made at it, recorded with point k + 1, used a float32 Phi)
    float64_points = [k for k, c in enumerate(used + [False]) if not c]
    assert len(float64_points) >= 2
    np.testing.assert_allclose([f[k] for k in float64_points],
                               [exact.history[k]["objective"] for k in float64_points],
                               rtol=1e-9)
    assert any(abs(f[k] / exact.history[k]["objective"] - 1) > 1e-12
               for k, c in enumerate(used) if c)    # the coarse ones are the float32 pass's
    assert c.second_order == exact.convergence.second_order
    assert rel(c.eigengap, exact.convergence.eigengap) < 1e-6


def test_no_coarse_steps_where_they_would_not_pay(supervised_large):
    # below _COARSE_MIN_SAMPLES a pass costs little beside a step's fixed costs:
    # all float64
    X, y, gamma, kernel = supervised_large
    few = X[:_solver._COARSE_MIN_SAMPLES - 1]
    result = ikdr.ism(few, ikdr.supervised_gamma(y[:len(few)])[0], kernel, 3, tol=1e-9,
                      phi_solver="dense", criterion="eigenvalues")
    assert result.convergence.coarse_phi_evaluations == 0


def test_coarse_steps_are_bounded(supervised_large, monkeypatch):
    # even if every step looked far from the maximum, at most _MAX_COARSE_STEPS are coarse
    X, y, gamma, kernel = supervised_large
    monkeypatch.setattr(_solver, "COARSE_ANGLE", 0.0)
    result = ikdr.ism(X, gamma, kernel, 3, tol=1e-9, phi_solver="dense", criterion="eigenvalues")
    assert result.convergence.coarse_phi_evaluations == _solver._MAX_COARSE_STEPS
    assert not coarse_methods(result)[-1]
    float64_only(monkeypatch)
    exact = ikdr.ism(X, gamma, kernel, 3, tol=1e-9, phi_solver="dense", criterion="eigenvalues")
    assert sin_angle(exact.components, result.components) < 1e-7


def test_a_tight_tol_never_stops_on_a_coarse_step(supervised_large, monkeypatch):
    # Every eigensolve coarse (no budget limit): a loose tol may stop on one,
    # a tight one runs until float64 steps decide, i.e. to max_iter here.
    X, y, gamma, kernel = supervised_large
    monkeypatch.setattr(_solver, "COARSE_ANGLE", 0.0)
    monkeypatch.setattr(_solver, "_MAX_COARSE_STEPS", 10**6)
    loose = ikdr.ism(X, gamma, kernel, 3, tol=1e-2, phi_solver="dense", criterion="eigenvalues")
    assert loose.convergence.stopping_rule == "eigenvalues" and coarse_methods(loose)[-1]
    # the step that stops the fit evaluates its W in float64: an exact objective
    exact_f = ExactProblem(X, gamma, kernel.fit(X)).objective(loose.components)
    assert rel(loose.objective, exact_f) < 1e-12
    tight = ikdr.ism(X, gamma, kernel, 3, tol=1e-6, phi_solver="dense", max_iter=12,
                     criterion="eigenvalues", warn=False)
    assert tight.convergence.stopping_rule == "max_iter" and all(coarse_methods(tight))
    # converged says whether the point reached is certified, whichever rule stopped
    assert tight.converged is tight.convergence.local_maximum
    # the start and every iterate coarse; the certificate's Phi at the returned W is float64
    assert tight.convergence.coarse_phi_evaluations == 13
    assert tight.convergence.dense_phi_evaluations == 14
    # without a certificate, the coarse point max_iter ends on gets its exact
    # objective by one objective pass
    uncertified = ikdr.ism(X, gamma, kernel, 3, tol=1e-6, phi_solver="dense", max_iter=12,
                           criterion="eigenvalues", certify=False, warn=False)
    assert coarse_methods(uncertified)[-1]
    assert uncertified.convergence.objective_evaluations == 1
    exact_f = ExactProblem(X, gamma, kernel.fit(X)).objective(uncertified.components)
    assert rel(uncertified.objective, exact_f) < 1e-12
    assert uncertified.history[-1]["objective"] == uncertified.objective


def test_float32_data_and_small_problems_make_no_coarse_passes(supervised, supervised_large):
    X, y, gamma, kernel = supervised_large
    f32 = ikdr.ism(X, gamma, kernel, 3, dtype=np.float32, criterion="eigenvalues")
    assert f32.convergence.coarse_phi_evaluations == 0
    X, y, gamma, kernel = supervised        # 600 samples: Algorithm 1's float64 iterates
    assert ikdr.ism(X, gamma, kernel, 3, criterion="eigenvalues").convergence.coarse_phi_evaluations == 0


def rel(a, b):
    return abs(a - b) / abs(b)


def test_ism_float32_agrees(supervised):
    X, y, _, _ = supervised
    # the same held-out halves (random_state) choose the same support
    a = ikdr.ISM(n_components=3, random_state=0).fit(X, y)
    b = ikdr.ISM(n_components=3, dtype=np.float32, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.support_, b.support_)
    assert rel(b.hsic_, a.hsic_) < 1e-4
    assert b.components_.dtype == np.float64
    assert sin_angle(a.components_, b.components_) < 1e-2
    c = ikdr.ism(X[:, a.support_], ikdr.supervised_gamma(y)[0], a.kernel_, 3, dtype=np.float32,
                 phi_solver="matrix_free", criterion="eigenvalues")
    assert rel(c.objective, a.hsic_ * (X.shape[0] - 1) ** 2) < 1e-4


def test_clustering_float32_agrees():
    X, y = mixture(240, 6, 3, seed=1)
    for cls, args, kw in [(ikdr.ISMClustering, (), {}),
                          (ikdr.KDAC, (y,), {"lam": 0.1}),
                          (ikdr.SemiSupervisedISM, (y.astype(float),), {"mu": 1e-4})]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            a = cls(n_clusters=3, n_components=2, random_state=0, max_iter=3, **kw).fit(X, *args)
            b = cls(n_clusters=3, n_components=2, random_state=0, max_iter=3, dtype=np.float32,
                    **kw).fit(X, *args)
        assert rel(b.history_[0]["objective"], a.history_[0]["objective"]) < 1e-4, cls
        assert ikdr.metrics.nmi(a.labels_, b.labels_) > 0.95, cls


@pytest.mark.parametrize("cls", [ikdr.ISM, ikdr.ISMClustering, ikdr.KDAC, ikdr.SemiSupervisedISM])
def test_bad_dtype(cls):
    X, y = mixture(60, 4, 2)
    with pytest.raises(ValueError, match="dtype"):
        cls(dtype=np.int32).fit(X, y)


def test_unconverged_block_eigensolves_never_stop_the_fit(supervised, monkeypatch):
    # Eigenvalues of an eigensolve that missed its tolerance are too rough for
    # the papers' rule: the fit runs out of iterations instead of claiming it.
    X, y, gamma, kernel = supervised
    monkeypatch.setattr(_solver, "_MF_MAX_ITER", 1)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        result = ikdr.ism(X, gamma, kernel, 3, phi_solver="matrix_free", tol=1e-2, max_iter=6, criterion="eigenvalues")
    assert not result.converged and result.n_iter == 6
    assert all("residual" in h["eigen_solver"] for h in result.history[1:])


def test_coarse_points_carry_their_float32_error_bound(supervised_large):
    # each coarse point's bound is ten times the float32 estimate at its W, and
    # the float32 objective lies within it of the exact one
    X, y, gamma, kernel = supervised_large
    problem = ExactProblem(X, gamma, kernel.fit(X))
    step = _solver.PlainStep(CountedProblem(problem), 3,
                             ISMOptions(n_components=3, acceleration=None), mode="dense",
                             costs=_solver.PassCosts.of(*X.shape, 3))
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((X.shape[1], 3)))[0]
    point = step.evaluate(W)
    assert point.coarse and point.objective_error > 0
    exact = problem.objective(W)
    assert abs(point.objective - exact) <= point.objective_error
    estimate = problem.float32_error(W)
    assert point.objective_error == pytest.approx(_solver.COARSE_ERROR_MARGIN * estimate
                                                  * abs(point.objective))
    assert _solver.with_exact_objective(problem, point).objective == exact


def test_no_coarse_passes_where_float32_cannot_keep_the_objective(supervised_large):
    # points far from the origin against their spread: the float32 estimate is far
    # above COARSE_MAX_ERROR, so every pass is float64 (and the answer is the same)
    X, y, gamma, kernel = supervised_large
    far = X + 1e4
    shifted = ikdr.ism(far, gamma, kernel, 3, tol=1e-9, phi_solver="dense",
                       criterion="eigenvalues")
    problem = ExactProblem(far, gamma, kernel.fit(far))
    assert problem.float32_error(shifted.components) > _solver.COARSE_MAX_ERROR
    assert shifted.convergence.coarse_phi_evaluations == 0
    # values whose squares float32 cannot hold: no estimate is finite
    huge = ExactProblem(X * 1e20, gamma, Gaussian(1e20).fit(X * 1e20))
    assert huge.float32_error(shifted.components) == np.inf


def test_a_kernel_without_a_float32_estimate_gets_exact_coarse_objectives(supervised_large):
    # a conic combination has no float32 estimate: its coarse points' objectives
    # come from one exact objective pass each, so the history never decreases
    X, y, gamma, kernel = supervised_large
    combined = kernel + 0.1 * Polynomial(degree=2)
    result = ikdr.ism(X, gamma, combined, 3, tol=1e-9, phi_solver="dense",
                      criterion="eigenvalues", acceleration=None)
    c = result.convergence
    assert c.coarse_phi_evaluations >= 1
    assert c.objective_evaluations >= c.coarse_phi_evaluations
    f = [h["objective"] for h in result.history]
    assert all(b >= a - 1e-13 * abs(a) for a, b in zip(f, f[1:]))


def test_an_uncertified_warm_start_goes_hybrid_earlier():
    class Problem:
        n, d, supports_dense_phi, depends_on_w = 1800, 784, True, True
    costs = _solver.PassCosts.of(1800, 784, 10)     # a half of the selection rows
    assert _solver._WARM_HYBRID_PASSES < costs.ratio <= _solver._HYBRID_EXPECTED_PASSES
    assert phi_mode("auto", Problem, 10, costs) == "dense"
    assert phi_mode("auto", Problem, 10, costs, warm=True) == "hybrid"
    assert phi_mode("dense", Problem, 10, costs, warm=True) == "dense"


def test_coarse_steps_at_a_narrow_width_reach_the_float64_answer(monkeypatch):
    # coarse passes run at any d from 1,000 samples: 32 features
    X, y = mixture(1200, 32, 4, seed=3)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(0.5 * ikdr.median_sigma(X))
    coarse = ikdr.ism(X, gamma, kernel, 3, tol=1e-9, phi_solver="dense", criterion="eigenvalues",
                      acceleration=None)
    float64_only(monkeypatch)
    exact = ikdr.ism(X, gamma, kernel, 3, tol=1e-9, phi_solver="dense", criterion="eigenvalues",
                     acceleration=None)
    assert coarse.convergence.coarse_phi_evaluations >= 1
    assert exact.convergence.coarse_phi_evaluations == 0
    assert sin_angle(exact.components, coarse.components) < 1e-7
    assert rel(coarse.objective, exact.objective) < 1e-12
