"""Pulay mixing of the plain ISM steps (ikdr.solver.mixing)."""
import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr import principal_angle
from ikdr.kernels import Gaussian, Polynomial
from ikdr.solver.mixing import MAX_REFUSALS, PulayMixing, residual_inners

from ._mixtures import mixture


@pytest.fixture(scope="module")
def slow_case():
    """A fit whose plain steps converge slowly (each shrinks the error by about 0.7)."""
    X, y = mixture(600, 24, 8)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(ikdr.median_sigma(X, random_state=0))
    return X, gamma, kernel


def test_mixing_reaches_the_same_maximum_in_fewer_passes(slow_case):
    X, gamma, kernel = slow_case
    q = 16
    best = ikdr.ism(X, gamma, kernel, q, criterion="gradient", gtol=1e-10)
    plain = ikdr.ism(X, gamma, kernel, q, tol=1e-6, acceleration=None, criterion="eigenvalues")
    mixed = ikdr.ism(X, gamma, kernel, q, tol=1e-6, criterion="eigenvalues")
    assert plain.convergence.stopping_rule == mixed.convergence.stopping_rule == "eigenvalues"
    assert any(h["step"] == "mixed" for h in mixed.history)
    assert not any(h["step"] == "mixed" for h in plain.history)
    # fewer passes (the test can fail: without mixing they are equal)
    assert mixed.convergence.phi_evaluations < plain.convergence.phi_evaluations
    # at least as near the maximum, in W and in the gradient
    sin = lambda a, b: np.sin(principal_angle(a, b))  # noqa: E731
    assert sin(mixed.components, best.components) <= sin(plain.components, best.components)
    assert mixed.convergence.relative_gradient_norm < plain.convergence.relative_gradient_norm
    assert mixed.objective >= plain.objective * (1 - 1e-12)
    # mixing starts only after a short step, and the objective never falls
    steps = [h["step"] for h in mixed.history]
    first = steps.index("mixed")
    assert mixed.history[first - 1]["angle"] < 0.2
    objectives = [h["objective"] for h in mixed.history]
    assert all(b >= a * (1 - 1e-13) for a, b in zip(objectives, objectives[1:]))


def test_coarse_steps_are_mixed_and_save_passes():
    """On float64 data of 1,000 rows the first dense passes are float32 (coarse);
    mixing starts among them once a step is short, and the certified maximum is
    reached in fewer passes than by plain steps (22 against 26). With the coarse
    steps left unmixed, as they once were, no float32 step is mixed and the test
    fails."""
    X, y = mixture(1000, 32, 10, seed=2)
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian(ikdr.median_sigma(X, random_state=0))
    plain = ikdr.ism(X, gamma, kernel, 20, acceleration=None)
    mixed = ikdr.ism(X, gamma, kernel, 20)
    assert plain.converged and mixed.converged
    assert any(h["step"] == "mixed" and "float32 Phi" in h["eigen_solver"]
               for h in mixed.history)
    assert mixed.convergence.passes < plain.convergence.passes
    # the same maximum: the objective to 1e-10, and the 9 directions that 10 classes
    # determine (the other 11 lie in a nearly flat part of it, 3e-4 apart in sine)
    assert mixed.objective == pytest.approx(plain.objective, rel=1e-10)
    assert np.sin(principal_angle(mixed.components[:, :9], plain.components[:, :9])) < 1e-4


@pytest.mark.parametrize("kernel", [Gaussian(), Polynomial()], ids=["gaussian", "polynomial"])
def test_mixed_answer_agrees_with_the_papers_iteration(kernel):
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    gamma, _ = ikdr.supervised_gamma(y)
    plain = ikdr.ism(X, gamma, kernel, 3, tol=1e-8, acceleration=None, criterion="eigenvalues")
    mixed = ikdr.ism(X, gamma, kernel, 3, tol=1e-8, criterion="eigenvalues")
    assert mixed.convergence.stopping_rule == "eigenvalues"
    assert np.sin(principal_angle(mixed.components, plain.components)) < 1e-5
    assert mixed.objective == pytest.approx(plain.objective, rel=1e-10)
    assert mixed.convergence.phi_evaluations <= plain.convergence.phi_evaluations


def test_residual_inner_products_from_thin_factors():
    rng = np.random.default_rng(1)
    d, q = 9, 3
    pairs = []
    for _ in range(2):
        A = rng.standard_normal((d, d))
        phi = A + A.T
        W = np.linalg.qr(rng.standard_normal((d, q)))[0]
        pairs.append((phi, W))

    def residual(phi, W):
        P = W @ W.T
        return phi @ P - P @ phi

    (p0, W0), (p1, W1) = pairs
    explicit = np.sum(residual(p0, W0) * residual(p1, W1))
    stacked = np.hstack([p0 @ W0, W0, p1 @ W1, W1])
    inners = residual_inners(stacked, q)
    assert inners[0] == pytest.approx(explicit, rel=1e-12)
    assert inners[1] == pytest.approx(np.sum(residual(p1, W1) ** 2), rel=1e-12)
    with pytest.raises(ValueError, match="whole pairs"):
        residual_inners(stacked[:, :-1], q)


def test_combination_sums_to_one_and_extrapolates_a_linear_iteration():
    """On Phi(W) that turns with W, DIIS's combination of two iterates is an
    affine one: coefficients summing to one."""
    rng = np.random.default_rng(2)
    d, q = 8, 2
    base = np.diag(np.arange(d, 0, -1.0))
    B = rng.standard_normal((d, d))
    B = 0.3 * (B + B.T)

    def phi_of(W):
        return base + B @ (W @ W.T) @ B

    mixing = PulayMixing()
    mixing.moved(0.0)
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    out = mixing.mix(W, phi_of(W), phi_of(W) @ W)
    assert mixing.last_mixed == 1 and out is not None
    W2 = np.linalg.eigh(out)[1][:, -q:]
    out2 = mixing.mix(W2, phi_of(W2), phi_of(W2) @ W2)
    assert mixing.last_mixed == 2
    older, newer = phi_of(W), phi_of(W2)
    c0 = np.sum((out2 - newer) * (older - newer)) / np.sum((older - newer) ** 2)
    np.testing.assert_allclose(out2, c0 * older + (1 - c0) * newer, rtol=1e-10, atol=1e-12)
    assert c0 != 0


def test_refused_mixed_steps_fall_back_then_stop_mixing():
    rng = np.random.default_rng(3)
    d, q = 6, 2
    mixing = PulayMixing()
    assert not mixing.refused()           # nothing mixed yet: a plain refusal

    def iterate():
        W = np.linalg.qr(rng.standard_normal((d, q)))[0]
        A = rng.standard_normal((d, d))
        phi = A + A.T
        return W, phi, phi @ W

    for _ in range(MAX_REFUSALS):
        mixing.moved(0.0)
        mixing.mix(*iterate())
        mixing.mix(*iterate())
        assert mixing.last_mixed == 2
        assert mixing.refused()           # a mixed step refused: the driver retries plain
        W, phi, PW = iterate()
        assert mixing.mix(W, phi, PW) is phi   # the retry is the plain step
    mixing.moved(0.0)
    for _ in range(3):
        W, phi, PW = iterate()
        assert mixing.mix(W, phi, PW) is phi   # no more mixing in this solve
    assert not mixing.active


def test_a_long_step_forgets_the_history():
    rng = np.random.default_rng(4)
    d, q = 6, 2
    mixing = PulayMixing()
    mixing.moved(0.0)
    for _ in range(3):
        A = rng.standard_normal((d, d))
        W = np.linalg.qr(rng.standard_normal((d, q)))[0]
        mixing.mix(W, A + A.T, (A + A.T) @ W)
    assert len(mixing.phis) == 3
    mixing.moved(1.0)
    assert mixing.phis == []


def test_bad_acceleration_is_named():
    X, y = load_wine(return_X_y=True)
    gamma, _ = ikdr.supervised_gamma(y)
    with pytest.raises(ValueError, match="acceleration"):
        ikdr.ism(X, gamma, "gaussian", 2, acceleration="anderson")
    with pytest.raises(ValueError, match="acceleration"):
        ikdr.ISM(n_components=2, acceleration="anderson").fit(X, y)


def test_the_gradient_rule_mixes_only_above_its_rounding(slow_case):
    """The default gradient rule mixes the plain steps, but not below a relative
    gradient of 1e-8: there a mixed W stalls near 1e-9, where no trust-region
    step can be verified any more, and the plain steps and the trust region
    reach a tight gtol."""
    X, gamma, kernel = slow_case
    res = ikdr.ism(X, gamma, kernel, 16, gtol=1e-10)
    assert res.converged and res.convergence.relative_gradient_norm <= 1e-10
    mixed = [i for i, h in enumerate(res.history) if h["step"] == "mixed"]
    assert mixed                                  # the default mixes (the test can fail)
    for i in mixed:                               # each from a point above 1e-8
        before = res.history[i - 1]
        assert before["gradient_norm"] > 1e-8 * abs(before["objective"])
