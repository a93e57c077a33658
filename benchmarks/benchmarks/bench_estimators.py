"""asv benchmarks of the estimators beyond supervised ISM, each parameterised by n.

    cd benchmarks && asv run --python=same --quick

Sizes are kept small enough for a loaded 2-core machine; the scale targets
(n = 10,000 to 70,000) are measured by the scripts in ``benchmarks/``
(``bench_targets.py``, ``bench_scaling.py``), not here.
"""
import warnings

import numpy as np

import ikdr
from ikdr.kernels import Gaussian

from .common import mixture


class ISMClustering:
    """Unsupervised ISM with its default strategy ("select": the starts, the criterion
    and W-steps while it prefers them; 10 clusters, q = 10, at most 5 W-steps) on a
    10-class mixture: the fit whose NMI and time ``results/clustering_real.md`` and
    ``results/clustering_quality.md`` report against k-means and spectral clustering.
    """

    params = [[300, 1000]]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        self.X, _ = mixture(n, 32)

    def _fit(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ikdr.ISMClustering(n_clusters=10, n_components=10, max_iter=5,
                                      random_state=0).fit(self.X)

    def time_fit(self, n):
        self._fit()

    def peakmem_fit(self, n):
        self._fit()


class KDAC:
    """Alternative clustering (2 clusters, q = 3) away from a given 5-cluster labelling.

    Five outer U/W rounds (a fixed amount of work, whether or not it has converged).
    """

    params = [[300, 600]]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        self.X, y = mixture(n, 16)
        self.y_existing = y % 5

    def _fit(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ikdr.KDAC(n_clusters=2, n_components=3, max_iter=5,
                             random_state=0).fit(self.X, self.y_existing)

    def time_fit(self, n):
        self._fit()

    def peakmem_fit(self, n):
        self._fit()


class KernelSVD:
    """Asymmetric kernel SVD (r = 8, Gaussian) between two point sets of n and n/2 points.

    ``dense`` builds G and calls LAPACK, ``arpack`` runs svds on the
    matrix-free operator, ``nystrom`` is :func:`ikdr.asymmetric_nystrom`
    with 200 x 200 landmarks.
    """

    params = [[1000, 4000], ["dense", "arpack", "nystrom"]]
    param_names = ["n", "solver"]
    timeout = 600

    def setup(self, n, solver):
        X, _ = mixture(n + n // 2, 32)
        self.X, self.Z = X[:n], X[n:]

    def _fit(self, solver):
        kw = {"n_landmarks": 200} if solver == "nystrom" else {}
        return ikdr.KernelSVD(n_components=8, solver=solver, random_state=0, **kw).fit(self.X, self.Z)

    def time_fit(self, n, solver):
        self._fit(solver)

    def peakmem_fit(self, n, solver):
        self._fit(solver)


class AsymmetricNystrom:
    """:func:`ikdr.asymmetric_nystrom` alone on a dense n x n/2 matrix, 200 landmarks."""

    params = [[2000, 8000]]
    param_names = ["n"]

    def setup(self, n):
        rng = np.random.default_rng(0)
        A = rng.standard_normal((n, 20))
        B = rng.standard_normal((n // 2, 20))
        self.G = Gaussian(sigma=4.0).matrix(A, B)

    def time_nystrom(self, n):
        ikdr.asymmetric_nystrom(self.G, 8, 200, random_state=0)


class KNetStep:
    """One KNet round (spectral start, one epoch of Adam on the encoder, D- and U-steps)."""

    params = [[300, 1000]]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        self.X, _ = mixture(n, 10, n_classes=4)

    def _fit(self):
        return ikdr.KNetClustering(n_clusters=4, max_iter=1, random_state=0).fit(self.X)

    def time_fit_one_round(self, n):
        self._fit()

    def peakmem_fit_one_round(self, n):
        self._fit()


class GraphKernelSVD:
    """KernelSVD of a directed graph: the SNE kernel between adjacency rows (out-links) of
    a directed block model (n nodes, 4 n edges, 5 blocks), r = 16, the bandwidth of the
    KSVD paper (``ikdr.graph.paper_gamma``, passed as sigma = gamma / sqrt 2): the matrix-free exact SVD and the Nystrom
    solver, as ``benchmarks/bench_ksvd.py``'s Table 4 runs them at the papers' sizes."""

    params = [[2000], ["arpack", "nystrom"]]
    param_names = ["n", "solver"]
    timeout = 600

    def setup(self, n, solver):
        self.A, _ = ikdr.graph.directed_sbm(n, 4 * n, 5, random_state=0)
        self.sigma = ikdr.graph.paper_gamma(self.A) / np.sqrt(2.0)

    def time_fit(self, n, solver):
        kw = {"n_landmarks": 320} if solver == "nystrom" else {}
        ikdr.KernelSVD(16, kernel="sne", sigma=self.sigma, solver=solver, random_state=0,
                       **kw).fit(self.A)
