import numpy as np
import pytest

from ikdr.solver.driver import principal_angle
from ikdr.gamma import clustering_gamma
from ikdr.spectral import auto_kernel, median_scale_gaussian, njw_labels, spectral_embedding
from sklearn.datasets import make_moons
from ikdr.kernels import Gaussian


def test_lanczos_matches_dense_embedding(rng):
    # n = 2,000: the matrix-free U-step spans the same subspace as the dense one.
    centers = rng.standard_normal((4, 3)) * 4
    X = np.vstack([c + rng.standard_normal((500, 3)) for c in centers])
    k = Gaussian().fit(X)
    U1, v1, d1 = spectral_embedding(X, k, 4, method="dense")
    U2, v2, d2 = spectral_embedding(X, k, 4, method="lanczos", random_state=0)
    assert np.sin(principal_angle(U1, U2)) < 1e-6
    np.testing.assert_allclose(v1, v2, rtol=1e-8)
    np.testing.assert_allclose(d1, d2, rtol=1e-12)
    labels = njw_labels(U1, 4, random_state=0)
    assert len(np.unique(labels)) == 4


def test_clustering_gamma_factor(rng):
    U = np.linalg.qr(rng.standard_normal((30, 3)))[0]
    deg = rng.uniform(1, 2, 30)
    H = np.eye(30) - 1 / 30
    D = np.diag(deg ** -0.5)
    np.testing.assert_allclose(clustering_gamma(U, deg).toarray(), D @ H @ U @ U.T @ H @ D,
                               atol=1e-12)


def test_non_positive_degrees_rejected(rng):
    from ikdr.kernels import Squared

    X = rng.standard_normal((10, 2))
    with pytest.raises(ValueError, match="positive affinity"):
        spectral_embedding(X, Squared(), 2)


@pytest.mark.parametrize("normalize", [True, False])
def test_lanczos_with_stored_kernel_matches_fused_and_dense(rng, normalize):
    """Wide points take the stored-K Lanczos products; with a budget too small for
    K they take the fused products; both equal the dense eigendecomposition."""
    import ikdr
    from ikdr.spectral import STORED_KERNEL_MIN_D

    n, d, k = 240, STORED_KERNEL_MIN_D + 36, 3
    Z = rng.standard_normal((n, d)) + np.repeat(3.0 * rng.standard_normal((k, d)), n // k, axis=0)
    kernel = Gaussian().fit(Z)
    U_dense, vals_dense, deg_dense = spectral_embedding(Z, kernel, k, method="dense",
                                                        normalize=normalize)
    U_stored, vals_stored, deg_stored = spectral_embedding(Z, kernel, k, method="lanczos",
                                                           normalize=normalize, random_state=0)
    with ikdr.memory_budget(8 * n * n - 1):  # K no longer fits: fused products
        U_fused, vals_fused, deg_fused = spectral_embedding(Z, kernel, k, method="lanczos",
                                                            normalize=normalize, random_state=0)
    for U, vals, deg in [(U_stored, vals_stored, deg_stored), (U_fused, vals_fused, deg_fused)]:
        np.testing.assert_allclose(vals, vals_dense, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(deg, deg_dense, rtol=1e-10)
        assert principal_angle(U, U_dense) < 1e-6


def test_dense_warm_start_matches_lapack(rng):
    # n >= DENSE_WARM_MIN_N with U0 (the alternation's previous U-step): LOBPCG on
    # the formed matrix spans the same top-k subspace as LAPACK, started nearby
    from ikdr.spectral import DENSE_WARM_MIN_N

    centers = rng.standard_normal((3, 4)) * 4
    X = np.vstack([c + rng.standard_normal((DENSE_WARM_MIN_N // 3 + 1, 4)) for c in centers])
    kernel = Gaussian().fit(X)
    U1, v1, d1 = spectral_embedding(X, kernel, 3, method="dense")
    Xs = X + 0.05 * rng.standard_normal(X.shape)       # the next iterate's points
    U2, v2, _ = spectral_embedding(Xs, kernel, 3, method="dense", U0=U1)
    U3, v3, _ = spectral_embedding(Xs, kernel, 3, method="dense")
    assert np.sin(principal_angle(U2, U3)) < 1e-5
    np.testing.assert_allclose(v2, v3, rtol=1e-7)
    assert np.all(np.diff(v2) <= 0)


def test_kept_csr_is_the_masked_matrix(rng):
    """The Lanczos U-step's sparse copy: exactly the kept entries, a valid CSR."""
    from ikdr.spectral import _kept_csr

    for shape in [(6, 6), (7, 3), (1, 1), (4, 9)]:
        M = rng.random(shape)
        kept = M > 0.6
        A = _kept_csr(M, kept)
        A.check_format(full_check=True)
        np.testing.assert_array_equal(A.toarray(), np.where(kept, M, 0.0))
    assert _kept_csr(np.ones((3, 3)), np.zeros((3, 3), dtype=bool)).nnz == 0


def _two_groups(rng, n, d, spread):
    X = rng.standard_normal((n, d))
    X[: n // 2] += spread
    return X


def test_auto_dense_solver_without_lapack(rng, monkeypatch):
    """dense_solver="auto": Lanczos on a dense affinity (wide data), subspace iteration
    with the shifted inverse on a sparse one (the two moons at KNet's 7-NN median
    sigma); both give LAPACK's eigenpairs without calling it."""
    import ikdr.spectral as spectral
    from ikdr.spectral import DENSE_LANCZOS_MIN_N, START_TOL

    calls = []
    lapack_top = spectral.lapack_top
    monkeypatch.setattr(spectral, "lapack_top", lambda A, k: calls.append(k) or lapack_top(A, k))
    n = DENSE_LANCZOS_MIN_N + 100
    wide = _two_groups(rng, n, 40, 1.0)
    moons = make_moons(n, noise=0.05, random_state=0)[0]
    for X, kernel in ((wide, Gaussian().fit(wide)),
                      (moons, median_scale_gaussian(auto_kernel(moons, 2)))):
        dense = kernel.matrix(X)
        normalised = dense / np.sqrt(np.outer(dense.sum(axis=1), dense.sum(axis=1)))
        assert (spectral._sparse_kept(normalised) is None) == (X.shape[1] == 40)
        U_lapack, v_lapack, _ = spectral_embedding(X, kernel, 3, method="dense")
        calls.clear()
        U_auto, v_auto, _ = spectral_embedding(X, kernel, 3, method="dense", dense_solver="auto",
                                               tol=START_TOL, random_state=0)
        assert calls == []
        np.testing.assert_allclose(v_auto, v_lapack, rtol=1e-8)
        assert np.sin(principal_angle(U_auto, U_lapack)) < 1e-4


def test_shift_invert_declines_isolated_points(rng):
    """A Gaussian that isolates points (two 2-D Gaussian blobs at sigma 0.1: tens of
    eigenvalues at 1 to 1e-8) leaves no top-k subspace to converge to: the shifted
    iteration declines at once (its predicted contraction is near 1)."""
    from ikdr.spectral import _kept_csr, _shift_invert_top, _sparse_kept

    X = _two_groups(rng, 600, 2, 6.0)
    K = Gaussian(0.1).matrix(X)
    M = K / np.sqrt(np.outer(K.sum(axis=1), K.sum(axis=1)))
    assert _shift_invert_top(M, _kept_csr(M, _sparse_kept(M)), 3, 1e-6, 0) is None


def test_shift_invert_declines_what_it_cannot_factor():
    """sigma I - HMH is not positive definite when M is no normalised affinity (an
    eigenvalue above 1): the subspace iteration declines and LAPACK answers."""
    import scipy.sparse as sp
    from ikdr.spectral import _shift_invert_top

    M = np.diag(np.linspace(0.0, 3.0, 50))
    assert _shift_invert_top(M.copy(), sp.csr_matrix(M), 2, 1e-8, 0) is None


def test_auto_dense_solver_falls_back_to_lapack_over_budget(rng, monkeypatch):
    """Lanczos that needs more products than its budget gives way to LAPACK: the
    result is LAPACK's, not a half-converged Lanczos basis."""
    import ikdr.spectral as spectral
    from ikdr.spectral import DENSE_LANCZOS_MIN_N

    n = DENSE_LANCZOS_MIN_N + 100
    X = _two_groups(rng, n, 40, 1.0)
    kernel = Gaussian().fit(X)
    U_lapack, v_lapack, _ = spectral_embedding(X, kernel, 3, method="dense")
    calls = []
    lapack_top = spectral.lapack_top
    monkeypatch.setattr(spectral, "lapack_top", lambda A, k: calls.append(k) or lapack_top(A, k))
    monkeypatch.setattr(spectral, "LANCZOS_BUDGET", 2.0 / n)     # two products
    U_auto, v_auto, _ = spectral_embedding(X, kernel, 3, method="dense", dense_solver="auto",
                                           random_state=0)
    assert calls == [3]
    np.testing.assert_allclose(v_auto, v_lapack, rtol=1e-12)
    assert np.sin(principal_angle(U_auto, U_lapack)) < 1e-10


def test_auto_dense_solver_falls_back_to_lapack_from_the_shifted_iteration(rng, monkeypatch):
    """The shifted subspace iteration that does not converge in its iterations gives way
    to LAPACK (a sparse affinity, one iteration allowed)."""
    import ikdr.spectral as spectral
    from ikdr.spectral import DENSE_LANCZOS_MIN_N

    X = make_moons(DENSE_LANCZOS_MIN_N + 100, noise=0.05, random_state=0)[0]
    kernel = median_scale_gaussian(auto_kernel(X, 2))
    U_lapack, v_lapack, _ = spectral_embedding(X, kernel, 3, method="dense")
    calls = []
    lapack_top = spectral.lapack_top
    monkeypatch.setattr(spectral, "lapack_top", lambda A, k: calls.append(k) or lapack_top(A, k))
    monkeypatch.setattr(spectral, "SHIFT_MAX_ITER", 1)
    U_auto, v_auto, _ = spectral_embedding(X, kernel, 3, method="dense", dense_solver="auto",
                                           tol=1e-14, random_state=0)
    assert calls == [3]
    np.testing.assert_allclose(v_auto, v_lapack, rtol=1e-12)
