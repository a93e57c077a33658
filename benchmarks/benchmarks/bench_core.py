"""asv benchmarks of the C++ core and supervised ISM, parameterised by n.

    cd benchmarks && asv run --python=same --quick
"""
import numpy as np

import ikdr
from ikdr.kernels import Gaussian

from .common import mixture


class FusedProduct:
    """One fused Phi product (Gaussian, factored Gamma) and one kernel matvec."""

    params = [[2000, 5000], [10, 784]]
    param_names = ["n", "rhs_cols"]

    def setup(self, n, rhs_cols):
        X, y = mixture(n, 64)
        self.gamma, _ = ikdr.supervised_gamma(y)
        self.kernel = Gaussian(sigma=8.0)
        rng = np.random.default_rng(0)
        self.Z = np.ascontiguousarray(X[:, :10])
        self.R = rng.standard_normal((n, rhs_cols))

    def time_fused_gradient(self, n, rhs_cols):
        ikdr.kernels._fused(self.Z, self.kernel._terms(self.Z), 1, self.gamma, rhs=self.R)

    def time_kernel_matvec(self, n, rhs_cols):
        ikdr.kernels._fused(self.Z, self.kernel._terms(self.Z), 0, None, rhs=self.R)


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
