"""asv benchmarks of the C++ core and supervised ISM, parameterised by n.

    cd benchmarks && asv run --python=same --quick
"""
import numpy as np

import ikdr
from ikdr.kernels import Gaussian

from .common import mixture


class CorePasses:
    """The native passes of benchmarks/bench_core_rate.py through the public kernel API:
    the dense Phi pass (n x n weights times X), a thin pass with 10 right-hand
    sides, the objective, the kernel product K R and the SNE block."""

    params = [[2000, 5000], [64, 784], ["float64", "float32"]]
    param_names = ["n", "d", "dtype"]

    def setup(self, n, d, dtype):
        X, y = mixture(n, d)
        self.X = np.ascontiguousarray(X, dtype=dtype)
        self.gamma, _ = ikdr.supervised_gamma(y)
        self.kernel = Gaussian(sigma=ikdr.median_sigma(X, random_state=0))
        W = np.linalg.qr(np.random.default_rng(0).standard_normal((d, 10)))[0]
        self.Z = np.ascontiguousarray(self.X @ W.astype(dtype))
        self.R = np.ascontiguousarray(self.Z[:, :10])

    def time_dense_phi_pass(self, n, d, dtype):
        self.kernel.gradient_product(self.Z, self.X, self.gamma)

    def time_thin_pass(self, n, d, dtype):
        self.kernel.gradient_product(self.Z, self.R, self.gamma)

    def time_objective(self, n, d, dtype):
        self.kernel.product(self.Z, None, self.gamma)

    def time_kernel_product(self, n, d, dtype):
        self.kernel.product(self.Z, self.R)

    def time_sne_block(self, n, d, dtype):
        ikdr.kernels.sne_matrix(self.X[: n // 2, :64], self.X[n // 2:, :64], 8.0)


# float32 mode (issue 6): benchmarked only when the estimators have a ``dtype`` parameter.
DTYPES = ["float64", "float32"] if "dtype" in ikdr.ISM().get_params() else ["float64"]


class SupervisedISM:
    """ikdr.ISM (Gaussian, q = 10) on a 10-class mixture, in each available dtype."""

    params = [[1000, 2000, 5000], [64, 784], DTYPES]
    param_names = ["n", "d", "dtype"]
    timeout = 600

    def setup(self, n, d, dtype):
        self.X, self.y = mixture(n, d)

    def _fit(self, dtype):
        kw = {"dtype": np.dtype(dtype).type} if dtype != "float64" else {}
        return ikdr.ISM(n_components=10, **kw).fit(self.X, self.y)

    def time_fit(self, n, d, dtype):
        self._fit(dtype)

    def peakmem_fit(self, n, d, dtype):
        self._fit(dtype)

    def track_hsic(self, n, d, dtype):
        return self._fit(dtype).hsic_


class PapersISM:
    """Supervised ISM in the papers' configuration (``sigma="median"``, every feature,
    the eigenvalue stopping rule) on the bundled wine and digits sets, standardised, q =
    classes - 1: the fits of ``benchmarks/bench_table4.py`` and
    ``benchmarks/bench_manifold.py``, whose peers are pymanopt's solvers."""

    params = [["wine", "digits"]]
    param_names = ["data"]
    timeout = 600

    def setup(self, data):
        from sklearn.datasets import load_digits, load_wine

        X, self.y = {"wine": load_wine, "digits": load_digits}[data](return_X_y=True)
        std = X.std(0)
        self.X = (X - X.mean(0)) / np.where(std > 0, std, 1.0)
        self.q = len(np.unique(self.y)) - 1

    def time_fit(self, data):
        ikdr.ISM(n_components=self.q, sigma="median", support="all", criterion="eigenvalues",
                 random_state=0).fit(self.X, self.y)
