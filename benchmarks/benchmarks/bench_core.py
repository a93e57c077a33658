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


class SupervisedISM:
    """ikdr.ISM (Gaussian, q = 10) on a 10-class mixture."""

    params = [[1000, 2000, 5000], [64, 784]]
    param_names = ["n", "d"]
    timeout = 600

    def setup(self, n, d):
        self.X, self.y = mixture(n, d)

    def time_fit(self, n, d):
        ikdr.ISM(n_components=10).fit(self.X, self.y)

    def peakmem_fit(self, n, d):
        ikdr.ISM(n_components=10).fit(self.X, self.y)

    def track_hsic(self, n, d):
        return ikdr.ISM(n_components=10).fit(self.X, self.y).hsic_
