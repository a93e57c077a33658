"""The memory budget: dense n x n paths switch to matrix-free ones or raise MemoryError."""
import numpy as np
import pytest
import scipy.sparse as sp

import ikdr
from ikdr import kernels
from ikdr._config import _parse_bytes
from ikdr.spectral import spectral_embedding


@pytest.fixture
def X(rng):
    return np.vstack([rng.standard_normal((60, 3)), rng.standard_normal((60, 3)) + 4.0])


def test_budget_setting_env_and_context(monkeypatch):
    ikdr.set_memory_budget(None)
    monkeypatch.delenv("IKDR_MEMORY_BUDGET", raising=False)
    default = ikdr.get_memory_budget()
    assert default > 2**26  # half the physical memory
    monkeypatch.setenv("IKDR_MEMORY_BUDGET", "3M")
    assert ikdr.get_memory_budget() == 3 * 2**20
    with ikdr.memory_budget(1000):
        assert ikdr.get_memory_budget() == 1000
    assert ikdr.get_memory_budget() == 3 * 2**20
    monkeypatch.setenv("IKDR_MEMORY_BUDGET", "lots")
    with pytest.raises(ValueError, match="IKDR_MEMORY_BUDGET"):
        ikdr.get_memory_budget()
    assert _parse_bytes("1.5G") == int(1.5 * 2**30) and _parse_bytes("4096") == 4096
    for bad, exc in ((0, ValueError), (-5, ValueError), (True, TypeError), ([1], TypeError)):
        with pytest.raises(exc, match="nbytes"):
            ikdr.set_memory_budget(bad)


def test_spectral_step_switches_to_matrix_free(X):
    kernel = kernels.Gaussian(2.0)
    U_dense, vals_dense, _ = spectral_embedding(X, kernel, 2, method="auto")
    n = X.shape[0]
    with ikdr.memory_budget(3 * 8 * n * n - 1):  # just below the dense estimate
        U_free, vals_free, _ = spectral_embedding(X, kernel, 2, method="auto", random_state=0)
        with pytest.raises(MemoryError, match=r"dense spectral step \(n = 120\).*estimated"):
            spectral_embedding(X, kernel, 2, method="dense")
    np.testing.assert_allclose(vals_free, vals_dense, rtol=1e-8)
    assert ikdr.principal_angle(U_free, U_dense) < 1e-6


def test_clustering_runs_within_tiny_budget(X):
    ref = ikdr.ISMClustering(n_clusters=2, n_components=1, random_state=0).fit(X)
    with ikdr.memory_budget(64 * 1024):  # far below one 120 x 120 float64 matrix x 3
        small = ikdr.ISMClustering(n_clusters=2, n_components=1, random_state=0).fit(X)
        knet = ikdr.KNetClustering(n_clusters=2, hidden_layer_sizes=(6,), max_iter=2,
                                   batch_size=X.shape[0], random_state=0).fit(X)
    assert ikdr.principal_angle(small.components_, ref.components_) < 1e-5
    np.testing.assert_array_equal(small.labels_ == small.labels_[0], ref.labels_ == ref.labels_[0])
    assert np.all(np.isfinite(knet.embedding_))


def test_kernel_matrix_raises_with_estimate(X):
    with ikdr.memory_budget(1000):
        with pytest.raises(MemoryError, match=r"120 x 120 kernel matrix needs an estimated 112\.50 KiB"):
            kernels.Gaussian(1.0).matrix(X)
    assert kernels.Gaussian(1.0).matrix(X).shape == (120, 120)


def test_dense_gamma_raises(X):
    gamma, _ = ikdr.supervised_gamma(np.repeat([0, 1], 60))
    with ikdr.memory_budget(1000):
        with pytest.raises(MemoryError, match="dense 120 x 120 Gamma"):
            gamma.toarray()
        # the supervised fit never forms it
        ikdr.ISM(n_components=1, max_iter=5).fit(X, np.repeat([0, 1], 60))


def test_ksvd_switches_to_arpack_or_raises(X):
    A = np.abs(np.random.default_rng(0).standard_normal((80, 80)))
    ref = ikdr.KernelSVD(n_components=3, random_state=0).fit(A)
    assert ref.solver_ == "dense"
    with ikdr.memory_budget(100_000):  # G is 80 x 80 = 50 KiB, the dense SVD ~ 250 KiB
        model = ikdr.KernelSVD(n_components=3, random_state=0).fit(A)
        assert model.solver_ == "arpack"
        with pytest.raises(MemoryError, match="80 x 80 kernel matrix G"):
            ikdr.KernelSVD(n_components=3, solver="dense").fit(A)
        with pytest.raises(MemoryError, match="densifying"):
            ikdr.KernelSVD(n_components=3, compat="pca").fit(sp.random(40, 4000, density=0.01,
                                                                      format="csr", random_state=0))
    np.testing.assert_allclose(model.singular_values_, ref.singular_values_, rtol=1e-8)


def test_failed_fit_on_memory_keeps_state(X):
    model = ikdr.KernelSVD(n_components=2, solver="dense").fit(X[:50, :2].T @ X[:50, :2])
    before = model.singular_values_.copy()
    with ikdr.memory_budget(100):
        with pytest.raises(MemoryError):
            model.fit(np.ones((30, 30)) + np.eye(30))
    np.testing.assert_array_equal(model.singular_values_, before)
