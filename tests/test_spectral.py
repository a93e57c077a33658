import numpy as np
import pytest

from ikdr.solver.driver import principal_angle
from ikdr.gamma import clustering_gamma
from ikdr.spectral import njw_labels, spectral_embedding
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
