"""Distributed fits on a Dask cluster (ikdr.distributed): same answer as in memory."""
import os
import subprocess
import sys

import numpy as np
import pytest

NEEDS_DASK = "dask is not installed: pip install '.[dask]' (the test extra includes it)"
da = pytest.importorskip("dask.array", reason=NEEDS_DASK)
distributed = pytest.importorskip("distributed", reason=NEEDS_DASK)

import ikdr  # noqa: E402
from ikdr import principal_angle  # noqa: E402
from ikdr.kernels import Gaussian, Linear, Multiquadric, Polynomial, Squared  # noqa: E402

MEMORY_LIMIT = "1GiB"


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=None, memory_limit=MEMORY_LIMIT)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n, d = 240, 5
    X = rng.standard_normal((n, d))
    y = (X[:, 0] + 0.6 * X[:, 1] > 0).astype(int) + (X[:, 2] > 0.8)
    return X, y


def _sine(A, B):
    return np.sin(principal_angle(A, B))


def _same(a, b):
    assert _sine(a.components_, b.components_) < 1e-8
    assert abs(a.hsic_ - b.hsic_) <= 1e-10 * abs(a.hsic_)


KERNELS = {
    "gaussian": Gaussian(),
    "polynomial": Polynomial(2),
    "linear": Linear(),
    "squared": Squared(),
    "multiquadric": Multiquadric(),
    "conic": 0.5 * Gaussian() + Polynomial(2),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_ism_matches_in_memory(client, data, name):
    X, y = data
    kw = dict(n_components=2, kernel=KERNELS[name], random_state=0)
    ref = ikdr.ISM(**kw).fit(X, y)
    out = ikdr.ISM(**kw).fit(da.from_array(X, chunks=(100, X.shape[1])), y)
    _same(ref, out)
    # the certificate's products ran on the cluster too
    c_ref, c_out = ref.convergence_, out.convergence_
    assert c_out.gradient_norm == pytest.approx(c_ref.gradient_norm, rel=1e-5, abs=1e-9 * abs(c_ref.objective))
    if np.isfinite(c_ref.hessian_max_eigenvalue):
        assert c_out.hessian_max_eigenvalue == pytest.approx(
            c_ref.hessian_max_eigenvalue, rel=1e-4, abs=1e-5 * c_ref.hessian_scale)
    assert out.n_features_in_ == X.shape[1]


def test_any_chunking_gives_the_same_answer_and_repeats_bit_for_bit(client, data):
    X, y = data
    y_dask = da.from_array(y, chunks=70)
    ref = ikdr.ISM(n_components=2, random_state=0).fit(X, y)
    for rows in (240, 70):
        Xd = da.from_array(X, chunks=(rows, X.shape[1]))
        out = ikdr.ISM(n_components=2, random_state=0).fit(Xd, y_dask)
        _same(ref, out)
    again = ikdr.ISM(n_components=2, random_state=0).fit(Xd, y_dask)
    _same(out, again)
    # bit for bit on the papers' configuration (all columns of the persisted data). With
    # the screen's column subset a dense Phi pass was seen to differ in its last bit
    # between runs on a two-process cluster (docs/distributed.md, known limitation)
    papers = dict(n_components=2, random_state=0, sigma="median", support="all")
    first = ikdr.ISM(**papers).fit(Xd, y_dask)
    second = ikdr.ISM(**papers).fit(Xd, y_dask)
    assert np.array_equal(first.components_, second.components_)
    assert first.hsic_ == second.hsic_


def test_float32_and_numpy_x_with_dask_y(client, data):
    X, y = data
    kw = dict(n_components=2, kernel="polynomial", random_state=0, dtype=np.float32)
    ref = ikdr.ISM(**kw).fit(X, y)
    out = ikdr.ISM(**kw).fit(da.from_array(X, chunks=(100, X.shape[1])), y)
    assert _sine(ref.components_, out.components_) < 1e-4
    # seeded: the held-out halves that choose the support are drawn from random_state
    linear = dict(n_components=2, kernel="linear", random_state=0)
    mixed = ikdr.ISM(**linear).fit(X, da.from_array(y, chunks=50))
    _same(ikdr.ISM(**linear).fit(X, y), mixed)


def test_eigengap_choice_of_q_and_median_subsample(client):
    # n > 3000 exercises the subsampled median heuristic: the same rows as in memory
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3100, 3))
    y = (X[:, 0] > 0).astype(int)
    ism_kw = dict(random_state=1, kernel="linear")
    ref = ikdr.ISM(**ism_kw).fit(X, y)
    out = ikdr.ISM(**ism_kw).fit(da.from_array(X, chunks=(1600, 3)), y)
    assert out.components_.shape == ref.components_.shape
    _same(ref, out)
    from ikdr import distributed as D

    data = D.as_data(da.from_array(X, chunks=(1600, 3)))
    assert D.fit_kernel(Gaussian(), data, random_state=4).sigma == \
        Gaussian().fit(X, random_state=4).sigma


def test_transform_maps_over_blocks(client, data):
    X, y = data
    model = ikdr.ISM(n_components=2, kernel="linear").fit(X, y)
    Xd = da.from_array(X, chunks=(100, X.shape[1]))
    Z = model.transform(Xd)
    assert isinstance(Z, da.Array) and Z.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(Z.compute(), model.transform(X), rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="features"):
        model.transform(Xd[:, :3])


@pytest.mark.parametrize("kernel", ["rbf", "sne", "linear", "polynomial"])
def test_nystrom_ksvd_matches_in_memory(client, kernel):
    rng = np.random.default_rng(11)
    X, Z = rng.standard_normal((300, 4)), rng.standard_normal((200, 4)) + 0.3
    kw = dict(n_components=3, kernel=kernel, solver="nystrom", n_landmarks=(30, 25), random_state=0)
    ref = ikdr.KernelSVD(**kw).fit(X, Z)
    out = ikdr.KernelSVD(**kw).fit(da.from_array(X, chunks=(80, 4)), da.from_array(Z, chunks=50))
    np.testing.assert_allclose(out.singular_values_, ref.singular_values_, rtol=1e-12)
    for a, b in ((ref.left_vectors_, out.left_vectors_), (ref.right_vectors_, out.right_vectors_)):
        # Nystrom vectors have unit columns but are not orthogonal: compare column by column
        sine = np.linalg.norm(b - a * np.einsum("ij,ij->j", a, b), axis=0)
        assert np.all(sine < 1e-8)
        np.testing.assert_allclose(b, a, atol=1e-10)
    Xn = rng.standard_normal((50, 4))
    rows = out.transform(da.from_array(Xn, chunks=(20, 4)))
    assert isinstance(rows, da.Array)
    np.testing.assert_allclose(rows.compute(), ref.transform(Xn), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.transform_columns(Xn), ref.transform_columns(Xn),
                               rtol=1e-10, atol=1e-12)


def test_nystrom_ksvd_refuses_what_needs_the_whole_matrix(client):
    X = da.from_array(np.random.default_rng(0).standard_normal((100, 3)), chunks=(50, 3))
    Z = np.ones((20, 3))
    with pytest.raises(ValueError, match="int n_landmarks"):
        ikdr.KernelSVD(n_components=2).fit(X, Z)
    with pytest.raises(ValueError, match="solver='nystrom'"):
        ikdr.KernelSVD(n_components=2, solver="dense", n_landmarks=10).fit(X, Z)
    with pytest.raises(ValueError, match="two point sets"):
        ikdr.KernelSVD(n_components=2, n_landmarks=10).fit(X)


@pytest.fixture
def small_spectral(monkeypatch):
    # In memory, small U-steps are dense (LAPACK); on the cluster they are always
    # Lanczos. Compare like with like: the in-memory reference runs Lanczos too.
    import ikdr.spectral as spectral

    monkeypatch.setattr(spectral, "DENSE_MAX_N", 0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_clustering_w_and_u_steps_match_in_memory(client, small_spectral):
    rng = np.random.default_rng(2)
    X = np.vstack([rng.standard_normal((60, 4)) + [3, 0, 0, 0], rng.standard_normal((60, 4))])
    Xd = da.from_array(X, chunks=(60, 4))
    existing = (X[:, 1] > 0).astype(int)
    # sigma="median": the default "auto" (local scaling) needs every point's neighbors
    kw = dict(n_clusters=2, n_components=2, max_iter=2, random_state=0, sigma="median")
    cases = [(ikdr.ISMClustering(**kw), ()),
             (ikdr.KDAC(**kw), (da.from_array(existing, chunks=60),)),
             (ikdr.SemiSupervisedISM(**kw), (X[:, :1],))]
    for est, args in cases:
        ref = est.fit(X, *[a.compute() if isinstance(a, da.Array) else a for a in args])
        W, labels, quality, U = ref.components_, ref.labels_, ref.quality_, ref.embedding_
        out = est.fit(Xd, *args)
        assert _sine(W, out.components_) < 1e-8, type(est).__name__
        assert abs(out.quality_ - quality) <= 1e-10 * abs(quality)
        assert _sine(U, out.embedding_) < 1e-8
        assert np.array_equal(labels, out.labels_)
        assert isinstance(out.transform(Xd), da.Array)
    # the public alternation takes a dask X by itself (q by the eigengap of Phi_0 there)
    kernel = Gaussian(sigma=2.0)
    ref = ikdr.alternate(X, kernel, 2, max_iter=1, random_state=0, warn=False)
    out = ikdr.alternate(Xd, kernel, 2, max_iter=1, random_state=0, warn=False)
    assert out.n_components == ref.n_components
    assert _sine(ref.components, out.components) < 1e-8
    assert abs(out.objective - ref.objective) <= 1e-10 * abs(ref.objective)


def test_grid_search_runs_every_estimator_on_the_dask_joblib_backend(client):
    import joblib
    from sklearn.model_selection import GridSearchCV

    rng = np.random.default_rng(4)
    X = np.vstack([rng.standard_normal((30, 3)) + [2.5, 0, 0], rng.standard_normal((30, 3))])
    y = np.repeat([0, 1], 30)
    order = rng.permutation(60)
    X, y = X[order], y[order]

    def score(est, X, y):
        return float(np.linalg.norm(est.transform(X)))

    grids = [(ikdr.ISM(kernel="linear", random_state=0), {"n_components": [1, 2]}),
             # the clusterers seeded: their k-means starts and W-steps draw random numbers,
             # and unseeded they draw other ones in every worker
             (ikdr.ISMClustering(n_clusters=2, max_iter=2, random_state=0),
              {"n_components": [1, 2]}),
             (ikdr.KDAC(n_clusters=2, max_iter=2, random_state=0), {"n_components": [1, 2]}),
             (ikdr.SemiSupervisedISM(n_clusters=2, max_iter=2, n_components=1, random_state=0),
              {"mu": [0.5, 1.0]}),
             (ikdr.KernelSVD(solver="dense", compat="pca"), {"n_components": [1, 2]}),
             (ikdr.KNetClustering(n_clusters=2, max_iter=2, random_state=0), {"lam": [0.0, 0.1]}),
             (ikdr.KernelDependenceNetwork(max_layers=1, n_fourier=20, random_state=0),
              {"n_fourier": [10, 20]})]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est, grid in grids:
            serial = GridSearchCV(est, grid, cv=2, scoring=score).fit(X, y)
            with joblib.parallel_backend("dask"):
                parallel = GridSearchCV(est, grid, cv=2, scoring=score, n_jobs=-1).fit(X, y)
            np.testing.assert_allclose(parallel.cv_results_["mean_test_score"],
                                       serial.cv_results_["mean_test_score"], rtol=1e-10,
                                       err_msg=type(est).__name__)
            assert parallel.best_params_ == serial.best_params_


def _poisoned(n, d, chunks):
    """A dask array whose blocks raise if any task is ever run."""
    def boom(block):
        raise RuntimeError("a task was submitted")

    return da.zeros((n, d), chunks=chunks).map_blocks(boom, dtype=float)


def test_bad_input_is_refused_before_any_task(client):
    y = np.arange(100) % 2
    with pytest.raises(ValueError, match="chunked along its columns"):
        ikdr.ISM(n_components=1).fit(_poisoned(100, 4, (50, 2)), y)
    with pytest.raises(ValueError, match="unequal size"):
        ikdr.ISM(n_components=1).fit(_poisoned(100, 4, ((30, 50, 20), (4,))), y)
    with pytest.raises(ValueError, match="different lengths"):
        ikdr.ISM(n_components=1).fit(_poisoned(100, 4, (50, 4)), y[:90])
    with pytest.raises(ValueError, match="different lengths"):
        ikdr.ISM(n_components=1).fit(_poisoned(100, 4, (50, 4)), da.from_array(y[:90]))
    with pytest.raises(ValueError, match="n_landmarks=500 is larger"):
        ikdr.ISM(n_components=1, approximation="nystrom", n_landmarks=500).fit(
            _poisoned(100, 4, (50, 4)), y)
    with pytest.raises(ValueError, match="approximation"):
        ikdr.ISMClustering(approximation="nystrom").fit(_poisoned(100, 4, (50, 4)))
    with pytest.raises(ValueError, match="RelativeGaussian"):
        ikdr.ISM(n_components=1, kernel="relative_gaussian").fit(
            da.from_array(np.random.default_rng(0).standard_normal((100, 4)), chunks=(50, 4)), y)


def test_chunks_too_large_for_the_workers_memory_are_refused(client):
    n, d = 1_000_000, 16          # 128 MB in one chunk, about 1 GB per task: never computed
    with pytest.raises(ValueError, match=r"use chunks of at most \d+ rows"):
        ikdr.ISM(n_components=1).fit(_poisoned(n, d, (n, d)), np.arange(n) % 2)
    with pytest.raises(ValueError, match="does not fit the cluster"):
        ikdr.ISM(n_components=1).fit(_poisoned(20 * n, d, (n // 8, d)), np.arange(20 * n) % 2)


def test_a_killed_worker_is_replaced_and_the_fit_finishes(client, data):
    X, y = data
    gamma, _ = ikdr.supervised_gamma(y)
    kernel = Gaussian().fit(X, random_state=0)
    # both fits stop on a step below 1e-10 rad, so each is within about that
    # of the maximum and the 1e-8 below tests the recovery, not the stopping rule
    ref = ikdr.ism(X, gamma, kernel, 2, tol=1e-10, criterion="angle")
    killed = []

    def kill_one_worker(entry):
        if entry["iteration"] == 1 and not killed:
            pids = client.run(os.getpid)
            address, pid = sorted(pids.items())[0]
            os.kill(pid, 9)             # the nanny starts a new worker; lost blocks are recomputed
            killed.append(address)

    out = ikdr.ism(da.from_array(X, chunks=(60, X.shape[1])), gamma, kernel, 2, tol=1e-10,
                   criterion="angle", callback=kill_one_worker)
    assert killed
    assert _sine(ref.components, out.components) < 1e-8
    assert abs(ref.objective - out.objective) <= 1e-10 * abs(ref.objective)
    client.wait_for_workers(2, timeout=60)


def test_the_core_imports_and_runs_without_dask():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
            "import numpy as np, ikdr\n"
            "X = np.random.default_rng(0).standard_normal((40, 3)); y = X[:, 0] > 0\n"
            "print(ikdr.ISM(n_components=1).fit(X, y).components_.shape)\n")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "(3, 1)" in out.stdout


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("approximation", ["nystrom", "rff"])
def test_landmark_ism_on_dask_gives_the_in_memory_answer(client, approximation):
    """The landmark passes are sums over row blocks: on a Dask array they map over its
    chunks on the workers, with the answer of the same fit in memory."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 8))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 0)
    # 64 landmarks among 600 rows: K_mm is singular to rounding (condition 1e17),
    # and its pseudo-inverse amplifies the chunks' regrouped block sums; measured
    # over seeds 3 to 6 of these data, with either LAPACK eigensolver for the
    # pseudo-inverse: 2e-8 to 8e-4 in the subspace, the HSIC within 3e-6
    options = dict(n_components=2, approximation=approximation, n_landmarks=64,
                   sigma="median", support="all", random_state=0)
    ref = ikdr.ISM(**options).fit(X, y)
    got = ikdr.ISM(**options).fit(da.from_array(X, chunks=(150, 8)), y)
    assert ikdr.principal_angle(ref.components_, got.components_) < 2e-3
    # chunks regroup the block sums; the pseudo-inverse of K_mm multiplies that
    # rounding by its condition number (tests/test_providers.py measures it)
    assert got.hsic_ == pytest.approx(ref.hsic_, rel=1e-5)
    assert got.n_landmarks_ == ref.n_landmarks_ == 64
