"""asv benchmarks of the fits that scale past the exact passes: landmark (Nystrom) ISM
and ISMClustering, from an array and from a memmap, and ISM on sparse counts.

    cd benchmarks && asv run --python=same --quick

The sizes are a fraction of the scale rows of ``benchmarks/bench_nystrom_ism.py``
(1,000,000 x 784 from a memmap, 1,000,000 x 2 clusterings) and
``benchmarks/bench_sparse.py`` (20,000 x 30,000 documents): the same code paths, small
enough for a regression run.
"""
import os
import tempfile
import warnings

import numpy as np

import ikdr

from .common import documents, mixture


class NystromISM:
    """Supervised ``ISM(approximation="nystrom")`` (10 classes, q = 10, float32) on n x 64,
    from memory and from a read-only ``np.memmap`` of the same rows."""

    params = [[20000], ["array", "memmap"]]
    param_names = ["n", "source"]
    timeout = 600

    def setup(self, n, source):
        X, self.y = mixture(n, 64)
        X = X.astype(np.float32)
        self.folder = None
        if source == "memmap":
            self.folder = tempfile.mkdtemp(prefix="ikdr-asv-")
            path = os.path.join(self.folder, "X.f32")
            X.tofile(path)
            X = np.memmap(path, dtype=np.float32, mode="r", shape=X.shape)
        self.X = X

    def teardown(self, n, source):
        if self.folder is not None:
            del self.X
            for name in os.listdir(self.folder):
                os.remove(os.path.join(self.folder, name))
            os.rmdir(self.folder)

    def time_fit(self, n, source):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ikdr.ISM(n_components=10, approximation="nystrom", dtype=np.float32,
                     random_state=0).fit(self.X, self.y)

    def peakmem_fit(self, n, source):
        self.time_fit(n, source)


class NystromClustering:
    """``ISMClustering(approximation="nystrom")`` on n two-dimensional blobs (4 clusters,
    three outer rounds)."""

    params = [[10000]]
    param_names = ["n"]
    timeout = 600

    def setup(self, n):
        self.X, _ = mixture(n, 2, n_classes=4)

    def time_fit(self, n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ikdr.ISMClustering(n_clusters=4, approximation="nystrom", max_iter=3,
                               random_state=0).fit(self.X)


class SparseISM:
    """``ISM()`` with its defaults on sparse term counts (CSR, n x 3,000, about 40 terms a
    document), exact and with landmarks."""

    params = [[2000], [None, "nystrom"]]
    param_names = ["n", "approximation"]
    timeout = 600

    def setup(self, n, approximation):
        self.X, self.y = documents(n, 3000)

    def time_fit(self, n, approximation):
        options = {} if approximation is None else {"approximation": approximation}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ikdr.ISM(random_state=0, **options).fit(self.X, self.y)

    def peakmem_fit(self, n, approximation):
        self.time_fit(n, approximation)
