"""The coordinate-wise power method (``eigen_solver="cpm"``) against LAPACK."""
import numpy as np
import pytest
import scipy.linalg

import ikdr
from ikdr import _native
from ikdr._utils import eig as _eig


def _matrix(rng, d, top, rest=(-3.0, 2.0)):
    """A symmetric d x d matrix with the given top eigenvalues and the rest
    uniform in ``rest`` (indefinite: ISM's Phi is)."""
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    lam = np.concatenate([top, rng.uniform(*rest, d - len(top))])
    A = (Q * lam) @ Q.T
    return 0.5 * (A + A.T)


def _sin(U, V):
    """The sine of the largest principal angle between span(U) and span(V) (orthonormal)."""
    return np.linalg.norm(V - U @ (U.T @ V), 2)


def _lapack(A, q):
    d = A.shape[0]
    w, U = scipy.linalg.eigh(A, subset_by_index=[d - q, d - 1])
    return w[::-1], U[:, ::-1]


@pytest.mark.parametrize("d, q", [(2, 1), (40, 1), (60, 3), (300, 5), (700, 2)])
def test_cpm_matches_lapack_on_separated_spectra(d, q):
    rng = np.random.default_rng(d + q)
    A = _matrix(rng, d, [10.0, 8.0, 6.0, 5.0, 4.0, 3.5][:q] + [2.5])
    vals, vecs, info = _native.cpm_eigenpairs(A, q)
    w, U = _lapack(A, q)
    assert info["converged"], info
    assert _sin(U, vecs) < 1e-8
    np.testing.assert_allclose(vals, w, rtol=0, atol=1e-10 * np.linalg.norm(A))
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(q), atol=1e-12)
    assert info["gap"] >= (w[-1] - 2.5) * (1 - 1e-9)   # a Ritz estimate: never below the gap


def test_cpm_finds_the_largest_algebraic_not_the_largest_magnitude():
    rng = np.random.default_rng(1)
    A = _matrix(rng, 80, [6.0, 4.0], rest=(-10.0, 1.0))   # the largest magnitude is negative
    vals, vecs, info = _eig.cpm_top(A, 2)
    w, U = _lapack(A, 2)
    assert info["method"] == "cpm"
    assert _sin(U, vecs) < 1e-8 and np.allclose(vals, w, atol=1e-9)


def test_cpm_changes_only_the_active_coordinates_per_step():
    rng = np.random.default_rng(2)
    A = _matrix(rng, 200, [6.0, 5.0, 1.0])
    few = _native.cpm_eigenpairs(A, 2, active=5)[2]
    many = _native.cpm_eigenpairs(A, 2, active=200)[2]
    assert few["converged"] and many["converged"]
    # sweeps = coordinate updates / d: 5 per step against 200 per step
    assert few["sweeps"] == pytest.approx(few["iterations"] * 5 / 200, abs=1.0)
    assert many["sweeps"] == pytest.approx(many["iterations"], abs=1.0)


def test_a_warm_start_at_the_answer_needs_no_step():
    rng = np.random.default_rng(3)
    A = _matrix(rng, 120, [9.0, 7.0, 3.0])
    _, U = _lapack(A, 2)
    vals, vecs, info = _native.cpm_eigenpairs(A, 2, np.ascontiguousarray(U))
    assert info["converged"] and info["iterations"] == 0
    assert _sin(U, vecs) < 1e-12


def test_a_tie_at_q_falls_back_to_lapack():
    # eigenvalues q and q + 1 equal: no top-q eigenspace is determined
    rng = np.random.default_rng(4)
    A = _matrix(rng, 60, [8.0, 5.0, 5.0])
    vals, vecs, info = _eig.top_eigenvectors(A, 2, method="cpm")
    assert info["method"] == "cpm->lapack" and "not separated" in info["reason"]
    np.testing.assert_allclose(vals, _lapack(A, 2)[0], atol=1e-10)


def test_no_convergence_falls_back_to_lapack():
    rng = np.random.default_rng(5)
    A = _matrix(rng, 100, [5.0, 4.99])
    vals, vecs, info = _eig.cpm_top(A, 1, max_sweeps=1, tol=1e-14)
    assert info["method"] == "cpm->lapack" and info["reason"] == "not converged"
    w, U = _lapack(A, 1)
    assert _sin(U, vecs) < 1e-8


def test_zero_matrix():
    vals, vecs, info = _native.cpm_eigenpairs(np.zeros((5, 5)), 2)
    assert info["converged"] and np.all(vals == 0)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(2), atol=1e-12)


def test_bad_arguments():
    A = np.eye(4)
    with pytest.raises(ValueError, match="square"):
        _native.cpm_eigenpairs(np.ones((3, 4)), 1)
    with pytest.raises(ValueError, match="q must be"):
        _native.cpm_eigenpairs(A, 5)
    with pytest.raises(ValueError, match="active"):
        _native.cpm_eigenpairs(A, 1, active=-1)
    with pytest.raises(ValueError, match="NaN"):
        _native.cpm_eigenpairs(np.full((3, 3), np.nan), 1)
    with pytest.raises(ValueError, match="V0"):
        _native.cpm_eigenpairs(A, 2, np.ones((4, 3)))


def test_unknown_eigen_solver_lists_the_names():
    with pytest.raises(ValueError, match="'auto', 'lapack', 'power', 'cpm'.*got 'arpack'"):
        _eig.top_eigenvectors(np.eye(3), 1, method="arpack")
    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 4))
    y = np.repeat([0, 1], 30)
    with pytest.raises(ValueError, match="eigen_solver must be one of"):
        ikdr.ism(X, ikdr.supervised_gamma(y)[0], n_components=2, eigen_solver="arpack")


def test_ism_with_cpm_finds_the_lapack_answer():
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1, 2], 50)
    X = rng.standard_normal((150, 6)) + np.outer(y, [2.0, -1.0, 0, 0, 0, 0])
    gamma = ikdr.supervised_gamma(y)[0]
    ref = ikdr.ism(X, gamma, n_components=2, eigen_solver="lapack", random_state=0)
    cpm = ikdr.ism(X, gamma, n_components=2, eigen_solver="cpm", random_state=0)
    assert _sin(ref.components, cpm.components) < 1e-6
    assert cpm.objective == pytest.approx(ref.objective, rel=1e-8)
    assert any(str(h["eigen_solver"]).startswith("cpm") for h in cpm.history)


def test_the_ism_estimator_takes_eigen_solver_cpm():
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    ref = ikdr.ISM(n_components=2, sigma="median", support="all").fit(X, y)
    cpm = ikdr.ISM(n_components=2, sigma="median", support="all", eigen_solver="cpm").fit(X, y)
    assert ikdr.principal_angle(ref.components_, cpm.components_) < 1e-6
    assert cpm.hsic_ == pytest.approx(ref.hsic_, rel=1e-10)
    with pytest.raises(ValueError, match="eigen_solver"):
        ikdr.ISM(eigen_solver="arnoldi").fit(X, y)


@pytest.mark.parametrize("make", [
    lambda **kw: ikdr.ISMClustering(n_clusters=3, random_state=0, **kw),
    lambda **kw: ikdr.KDAC(n_clusters=3, random_state=0, **kw),
    lambda **kw: ikdr.SemiSupervisedISM(n_clusters=3, random_state=0, **kw),
], ids=["ISMClustering", "KDAC", "SemiSupervisedISM"])
def test_the_clustering_estimators_take_eigen_solver_cpm(make, monkeypatch):
    """Their W-steps run the coordinate-wise power method when asked (counted at
    the native door) and land where LAPACK's do."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    target = (X[:, :1] > 0).astype(int).ravel() if make().__class__ is ikdr.KDAC else X[:, 0]
    fit = (lambda m: m.fit(X, target)) if not isinstance(make(), ikdr.ISMClustering) else \
        (lambda m: m.fit(X))
    ref = fit(make(eigen_solver="lapack"))
    calls = []
    real = _native.cpm_eigenpairs
    monkeypatch.setattr(_native, "cpm_eigenpairs", lambda *a, **k: calls.append(1) or real(*a, **k))
    cpm = fit(make(eigen_solver="cpm"))
    assert calls
    assert ikdr.metrics.nmi(ref.labels_, cpm.labels_) == pytest.approx(1.0)
    assert ikdr.principal_angle(ref.components_, cpm.components_) < 1e-6
    with pytest.raises(ValueError, match="eigen_solver"):
        fit(make(eigen_solver="arnoldi"))
