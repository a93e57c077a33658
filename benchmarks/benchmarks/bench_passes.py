"""asv benchmarks of single passes and of the eigensolver step, apart from any fit.

    cd benchmarks && asv run --quick HEAD^!

``PhiProduct``: one exact pass through the public kernel API at d = 32, 64 and
784 (the tiles' thin widths, and a width that goes through the BLAS).
``LandmarkSweeps``: the two sweeps of a Nystrom pass. ``CPM``: the
coordinate-wise power method against LAPACK on a Phi(W).
"""
import numpy as np
import scipy.linalg

import ikdr
from ikdr.kernels import Gaussian

from .common import mixture


class PhiProduct:
    """Phi(W) (d x d) and Phi(W) V (V: d x 10) of a supervised Gaussian problem,
    q = 10: ``Kernel.phi_product``, one fused pass each."""

    params = [[2000], [32, 64, 784], ["float64", "float32"]]
    param_names = ["n", "d", "dtype"]
    timeout = 600

    def setup(self, n, d, dtype):
        X, y = mixture(n, d)
        self.X = np.ascontiguousarray(X, dtype=dtype)
        self.gamma, _ = ikdr.supervised_gamma(y)
        rng = np.random.default_rng(0)
        self.W = np.linalg.qr(rng.standard_normal((d, 10)))[0]
        self.V = rng.standard_normal((d, 10))
        self.kernel = Gaussian(sigma=float(np.sqrt(20.0)))

    def time_dense_phi(self, n, d, dtype):
        self.kernel.phi_product(self.X, self.W, self.gamma)

    def time_phi_v(self, n, d, dtype):
        self.kernel.phi_product(self.X, self.W, self.gamma, V=self.V)


class LandmarkSweeps:
    """The two row sweeps of one Nystrom pass (supervised Gamma of 10 classes, a
    Gaussian factor at m = 256 landmarks, q = 10), as the core runs them: the
    objective (first sweep alone), the dense Phi and Phi V (k = 10; both sweeps)."""

    params = [[20000], [64, 256]]
    param_names = ["n", "d"]
    timeout = 600
    M = 256

    def setup(self, n, d):
        # ikdr._native: the sweeps have no public entry point of their own (a fit
        # reaches them through ISM(approximation="nystrom")), and asv must time
        # them apart from the fit and its choice of landmarks
        from ikdr import _native

        self.native = _native
        X, y = mixture(n, d)
        self.X = np.ascontiguousarray(X, dtype=np.float32)
        rng = np.random.default_rng(0)
        self.W = np.linalg.qr(rng.standard_normal((d, 10)))[0].astype(np.float32)
        self.V = rng.standard_normal((d, 10)).astype(np.float32)
        landmarks = self.X[rng.choice(n, self.M, replace=False)] @ self.W
        term = _native.KernelTerm(_native.TermKind.gaussian, sigma=float(np.sqrt(20.0)))
        self.factors = [_native.LandmarkFactor([term], landmarks)]
        counts = np.bincount(y, minlength=10)
        self.gamma = _native.LandmarkGamma(codes=y.astype(np.int64),
                                           proportions=counts / counts.sum())
        # the second sweep's right-hand sides (classes x m x (1 + k)); their values
        # do not change its work
        self.rhs_dense = [rng.standard_normal((10, self.M, 1)).astype(np.float32)]
        self.rhs_v = [rng.standard_normal((10, self.M, 11)).astype(np.float32)]

    def time_objective(self, n, d):
        self.native.landmark_first_sweep(self.X, self.W, self.factors, self.gamma,
                                         products=[False])

    def time_dense_phi(self, n, d):
        self.native.landmark_first_sweep(self.X, self.W, self.factors, self.gamma,
                                         products=[True], dense=True)
        self.native.landmark_second_sweep(self.X, self.W, self.factors, self.gamma,
                                          self.rhs_dense, dense=True)

    def time_phi_v(self, n, d):
        self.native.landmark_first_sweep(self.X, self.W, self.factors, self.gamma,
                                         products=[True], V=self.V)
        self.native.landmark_second_sweep(self.X, self.W, self.factors, self.gamma,
                                          self.rhs_v, V=self.V)


class CPM:
    """The top q = 10 eigenpairs of a supervised Gaussian Phi(W) (n = 2,000):
    the coordinate-wise power method warm-started from a nearby subspace,
    against LAPACK's subset eigensolver on the same matrix."""

    params = [[256, 784]]
    param_names = ["d"]
    timeout = 600

    def setup(self, d):
        # ikdr._native: the eigensolver alone; ism(eigen_solver="cpm") would time a fit
        from ikdr import _native

        self.native = _native
        X, y = mixture(2000, d)
        gamma, _ = ikdr.supervised_gamma(y)
        rng = np.random.default_rng(0)
        W = np.linalg.qr(rng.standard_normal((d, 10)))[0]
        self.phi = Gaussian(sigma=float(np.sqrt(20.0))).phi(X, W, gamma)
        exact = scipy.linalg.eigh(self.phi, subset_by_index=[d - 10, d - 1])[1]
        # a warm start, as in a fit: the exact subspace moved by a small rotation
        self.V0 = np.linalg.qr(exact + 0.05 * rng.standard_normal(exact.shape))[0]

    def time_cpm(self, d):
        self.native.cpm_eigenpairs(self.phi, 10, self.V0, tol=1e-10)

    def time_lapack(self, d):
        scipy.linalg.eigh(self.phi, subset_by_index=[d - 10, d - 1])


class SmallPasses:
    """The passes of a small fit (n = 1,000, d = 32, q = 20) on 1 thread and on 2: the
    objective, the thin Phi V and the dense Phi, where the threads' fork and join is a
    visible share of the call (``benchmarks/bench_call_overhead.py``)."""

    params = [[1, 2]]
    param_names = ["threads"]

    def setup(self, threads):
        X, y = mixture(1000, 32)
        self.X = np.ascontiguousarray(X)
        self.gamma, _ = ikdr.supervised_gamma(y)
        self.kernel = Gaussian(sigma=ikdr.median_sigma(self.X, random_state=0))
        self.W = np.linalg.qr(np.random.default_rng(0).standard_normal((32, 20)))[0]
        self.V = np.linalg.qr(np.random.default_rng(1).standard_normal((32, 20)))[0]
        self.Z = np.ascontiguousarray(self.X @ self.W)

    def time_objective(self, threads):
        self.kernel.product(self.Z, None, self.gamma, n_threads=threads)

    def time_thin_phi(self, threads):
        self.kernel.phi_product(self.X, self.W, self.gamma, self.V, n_threads=threads)

    def time_dense_phi(self, threads):
        self.kernel.phi_product(self.X, self.W, self.gamma, n_threads=threads)
