"""asv benchmarks of ikdr inside the programs around it: the import, a scikit-learn grid
search over workers, the command line's batch mode and a fit over a Dask array.

    cd benchmarks && asv run --python=same --quick

Each is the small end of a benchmark script's table: ``benchmarks/bench_import.py``,
``bench_gridsearch_jobs.py``, ``bench_batch.py`` and ``bench_dask.py`` (whose figures
come from a Dask LocalCluster; here the local scheduler runs the same tasks).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

import ikdr

from .common import mixture


class Import:
    """``import ikdr`` in a fresh interpreter, beyond ``import sklearn.base`` (which any
    scikit-learn estimator pays)."""

    def timeraw_import_ikdr(self):
        return "import ikdr", "import sklearn.base"


class GridSearchJobs:
    """``GridSearchCV`` over ``make_pipeline(ISM(), KNeighborsClassifier())`` (6 settings,
    3 folds, 600 x 20) with 1 and 2 joblib workers."""

    params = [[1, 2]]
    param_names = ["n_jobs"]
    timeout = 600

    def setup(self, n_jobs):
        from sklearn.model_selection import GridSearchCV
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline

        self.X, self.y = mixture(600, 20, n_classes=5)
        model = make_pipeline(ikdr.ISM(random_state=0), KNeighborsClassifier())
        grid = {"ism__n_components": [2, 4], "ism__sigma": ["median", 1.0, 2.0]}
        self.search = GridSearchCV(model, grid, cv=3, n_jobs=n_jobs)
        self._fit()            # the workers started and their imports done, untimed

    def _fit(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.search.fit(self.X, self.y)

    def time_fit(self, n_jobs):
        self._fit()


class BatchReduce:
    """``ikdr reduce 'dir/*.csv' --jobs N`` over 20 files of 300 x 10 (labels in the last
    column, q = 2): the command line's batch mode, one process."""

    params = [[1, 2]]
    param_names = ["jobs"]
    timeout = 600

    def setup(self, jobs):
        self.folder = tempfile.mkdtemp(prefix="ikdr-asv-")
        rng = np.random.default_rng(0)
        for i in range(20):
            y = rng.integers(0, 3, 300)
            X = rng.standard_normal((300, 10))
            X[:, :2] += 2.5 * np.column_stack([y == 1, y == 2])
            np.savetxt(os.path.join(self.folder, f"part{i:02d}.csv"), np.column_stack([X, y]),
                       delimiter=",", fmt="%.6g")

    def teardown(self, jobs):
        shutil.rmtree(self.folder, ignore_errors=True)

    def time_reduce(self, jobs):
        out = os.path.join(self.folder, f"out{jobs}")
        subprocess.run([sys.executable, "-m", "ikdr", "reduce",
                        os.path.join(self.folder, "*.csv"), "--label-column", "-1", "-k", "2",
                        "--quiet", "--out", out, "--jobs", str(jobs)],
                       check=True, capture_output=True)
        shutil.rmtree(out, ignore_errors=True)


class DaskISM:
    """``ikdr.ism`` over a row-chunked Dask array (4,000 x 16 in chunks of 1,000, q = 5,
    five plain steps without the certificate) against the same fit in memory."""

    params = [["dask", "memory"]]
    param_names = ["data"]
    timeout = 600

    def setup(self, data):
        try:
            import dask.array as da
        except ImportError:
            raise NotImplementedError("dask is not installed") from None
        X, y = mixture(4000, 16, n_classes=5)
        self.gamma, _ = ikdr.supervised_gamma(y)
        self.kernel = ikdr.kernels.Gaussian().fit(X, random_state=0)
        self.X = da.from_array(X, chunks=(1000, 16)).persist() if data == "dask" else X

    def time_fit(self, data):
        ikdr.ism(self.X, self.gamma, self.kernel, 5, max_iter=5, tol=1e-12, certify=False,
                 warn=False, phi_solver="dense")
