"""The pass providers' contract, one suite for all of them.

Every provider that :func:`ikdr.passes.resolve` can pick (exact passes in
memory, exact passes over an ``np.memmap``, Nystrom landmarks read in row
blocks, Dask tasks over row blocks) must give the W-step what the exact
passes give: the objective, the dense Phi, the thin product Phi V and
:math:`\\Phi_0`; and every clustering provider the same U-step. The landmark
provider is compared with every row a landmark (then its factored kernel is
the exact one up to the pseudo-inverse's rounding). Results do not depend on
the thread count (bitwise) nor on how the rows are cut into blocks (to
rounding: a sum regrouped by other blocks rounds differently).
"""
import numpy as np
import pytest

import ikdr
from ikdr import Gamma, supervised_gamma
from ikdr.kernels import Gaussian, Polynomial
from ikdr.passes import resolve, resolve_clustering
from ikdr.passes.landmark_clustering import ClusteringLandmarks
from ikdr.passes.landmarks import Approximation

da = pytest.importorskip("dask.array", reason="dask is not installed: pip install '.[dask]' "
                                             "(the test extra includes it)")

N, D, Q = 120, 6, 2
ROWS = ["memory", "memmap", "landmarks", "dask"]
#: relative agreement with the exact passes (landmarks: K_nm K_mm^+ K_mn at m = n)
RTOL = {"memory": 1e-12, "memmap": 1e-12, "landmarks": 1e-6, "dask": 1e-11}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4).astype(int) + 2 * (X[:, 2] > 0)
    path = tmp_path_factory.mktemp("rows") / "X.dat"
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    W = np.linalg.qr(rng.standard_normal((D, Q)))[0]
    V = rng.standard_normal((D, 3))
    return X, np.memmap(path, dtype=np.float64, mode="r", shape=X.shape), y, W, V


def rows_of(kind, X, memmap, chunk=40, m=N):
    """(X as that row source holds it, the approximation asked for)."""
    if kind == "memmap":
        return memmap, None
    if kind == "landmarks":
        return memmap, Approximation("nystrom", m, method="uniform", random_state=0,
                                     block_rows=chunk)
    if kind == "dask":
        return da.from_array(X, chunks=(chunk, D)), None
    return X, None


def problem_of(kind, X, memmap, gamma, kernel, n_threads=None, chunk=40, m=N):
    rows, approximation = rows_of(kind, X, memmap, chunk, m)
    provider = resolve(rows, approximation)
    return provider.problem(provider.check_data(rows), gamma, kernel, n_threads)


@pytest.fixture(scope="module")
def gamma(data):
    return supervised_gamma(data[2])[0]


KERNELS = [Gaussian(2.0), 0.5 * Gaussian(1.5) + Polynomial(2)]


@pytest.mark.parametrize("kernel", KERNELS, ids=["gaussian", "conic"])
@pytest.mark.parametrize("kind", ROWS)
def test_every_provider_gives_the_exact_passes(kind, kernel, data, gamma):
    X, memmap, _, W, V = data
    exact = problem_of("memory", X, memmap, gamma, kernel)
    other = problem_of(kind, X, memmap, gamma, kernel)
    rtol = RTOL[kind]
    f = exact.objective(W)
    assert other.objective(W) == pytest.approx(f, rel=rtol)
    phi, f_phi = exact.phi(W)
    phi_other, f_other = other.phi(W)
    scale = np.abs(phi).max()
    np.testing.assert_allclose(phi_other, phi, rtol=0, atol=rtol * scale)
    assert f_other == pytest.approx(f_phi, rel=rtol)
    pv, _ = exact.phi_product(W, V)
    pv_other, _ = other.phi_product(W, V)
    np.testing.assert_allclose(pv_other, pv, rtol=0, atol=rtol * np.abs(pv).max())
    np.testing.assert_allclose(other.phi0(), exact.phi0(), rtol=0,
                               atol=RTOL["dask"] * np.abs(exact.phi0()).max())


@pytest.mark.parametrize("kind", ["memory", "memmap", "dask"])
def test_passes_are_bitwise_independent_of_the_thread_count(kind, data, gamma):
    X, memmap, _, W, V = data
    one = problem_of(kind, X, memmap, gamma, Gaussian(2.0), n_threads=1)
    two = problem_of(kind, X, memmap, gamma, Gaussian(2.0), n_threads=2)
    assert one.objective(W) == two.objective(W)
    np.testing.assert_array_equal(one.phi(W)[0], two.phi(W)[0])
    np.testing.assert_array_equal(one.phi_product(W, V)[0], two.phi_product(W, V)[0])


@pytest.mark.parametrize("kind", ["landmarks", "dask"])
def test_passes_do_not_depend_on_the_row_blocks(kind, data, gamma):
    X, memmap, _, W, V = data
    # 5 landmarks: the pseudo-inverse of K_mm multiplies the regrouped rounding by its
    # condition number (measured: 2e-13 relative at m = 5, 9e-11 at 10, 6e-7 at 30 of
    # these 120 points in q = 2 dimensions)
    a = problem_of(kind, X, memmap, gamma, Gaussian(2.0), chunk=25, m=5)
    b = problem_of(kind, X, memmap, gamma, Gaussian(2.0), chunk=60, m=5)
    assert a.objective(W) == pytest.approx(b.objective(W), rel=1e-12)
    np.testing.assert_allclose(a.phi_product(W, V)[0], b.phi_product(W, V)[0], rtol=1e-11,
                               atol=1e-11 * np.abs(b.phi_product(W, V)[0]).max())


def test_repeated_dask_passes_give_identical_bits(data, gamma):
    """The partials of a pass are summed in a fixed order: the same bits every run."""
    X, memmap, _, W, _ = data
    problem = problem_of("dask", X, memmap, gamma, Gaussian(2.0))
    assert problem.objective(W) == problem.objective(W)
    np.testing.assert_array_equal(problem.phi(W)[0], problem.phi(W)[0])


@pytest.mark.parametrize("kind", ROWS)
def test_every_clustering_provider_gives_the_exact_u_step(kind, data):
    X, memmap, _, W, _ = data
    rows, approximation = rows_of(kind, X, memmap)
    landmarks = None if approximation is None else ClusteringLandmarks(N, random_state=0)
    exact_clustering = resolve_clustering(X)
    clustering = resolve_clustering(rows, landmarks)
    affinity = Gaussian(1.0)
    U, vals, deg = exact_clustering.embed(exact_clustering.points(X, W), affinity, 3,
                                          random_state=0)
    held = clustering.prepare(rows if kind != "memmap" else memmap)
    U2, vals2, deg2 = clustering.embed(clustering.points(held, W), affinity, 3, random_state=0)
    rtol = max(RTOL[kind], 1e-8)
    np.testing.assert_allclose(vals2, vals, rtol=rtol)
    np.testing.assert_allclose(deg2, deg, rtol=rtol)
    assert ikdr.principal_angle(U, U2) < 1e-6
    F = np.random.default_rng(1).standard_normal((N, 2))
    exact_trace = exact_clustering.quadratic_trace(exact_clustering.points(X, W), affinity, F)
    assert clustering.quadratic_trace(clustering.points(held, W), affinity, F) == \
        pytest.approx(exact_trace, rel=rtol)


@pytest.mark.parametrize("kind", ["memory", "memmap", "dask"])
def test_the_estimators_give_one_answer_wherever_the_rows_live(kind, data):
    X, memmap, y, _, _ = data
    rows, _ = rows_of(kind, X, memmap)
    # the passes sum in another order on each row source, so the iterates differ by
    # rounding and two certified answers agree to about gtol (4e-7 at the default
    # 1e-6 on these three features): run both to 1e-9
    ref = ikdr.ISM(n_components=Q, random_state=0, gtol=1e-9).fit(X, y)
    got = ikdr.ISM(n_components=Q, random_state=0, gtol=1e-9).fit(rows, y)
    assert ikdr.principal_angle(ref.components_, got.components_) < 1e-8
    assert got.hsic_ == pytest.approx(ref.hsic_, rel=1e-9)


def test_kdac_existing_dependence_is_computed_on_every_backend(data):
    """The fitted default does not depend on where the rows live (it was ``inf`` on Dask)."""
    X, _, y, _, _ = data
    existing = (X[:, 0] > 0).astype(int)
    # a global bandwidth: sigma="auto" means local scaling in memory only (it needs all rows)
    ref = ikdr.KDAC(2, n_components=1, sigma=1.5, max_iter=2, random_state=0).fit(X, existing)
    got = ikdr.KDAC(2, n_components=1, sigma=1.5, max_iter=2, random_state=0).fit(
        da.from_array(X, chunks=(40, D)), existing)
    assert np.isfinite(got.existing_dependence_)
    assert got.existing_dependence_ == pytest.approx(ref.existing_dependence_, rel=1e-9)


def test_gamma_must_be_factored_for_landmarks(data):
    X, memmap, _, _, _ = data
    provider = resolve(memmap, Approximation("nystrom", 10))
    with pytest.raises(ValueError, match="factored Gamma"):
        provider.problem(provider.check_data(memmap), Gamma(dense=np.eye(N)),
                         Gaussian(1.0), None)


def test_row_passes_add_their_partials_in_place_and_leave_start_alone():
    from ikdr.passes.rows import MemoryRows, add_into, sum_parts

    X = np.random.default_rng(0).standard_normal((1000, 6))
    start = [np.ones((6, 6)), None]
    kept = start[0].copy()

    def fn(X_b, _, __):
        return [X_b.T @ X_b, X_b.sum(axis=0)]

    rows = MemoryRows(X, block_rows=128)
    total = rows.map_reduce(fn, lambda sl: None, (None,), start=start)
    np.testing.assert_array_equal(start[0], kept)           # the caller's start unchanged
    expected = [kept, None]
    for sl in rows.slices():
        expected = sum_parts(expected, fn(X[sl], None, None))
    np.testing.assert_array_equal(total[0], expected[0])    # the same sums, in block order
    np.testing.assert_array_equal(total[1], expected[1])
    # in place only where the sum keeps the array's shape and dtype
    a = np.zeros(3, np.float32)
    assert add_into(a, np.ones(3, np.float32)) is a
    wider = add_into(a, np.ones(3))
    assert wider is not a and wider.dtype == np.float64
    assert add_into((1.0, a), (2.0, a))[0] == 3.0


def test_class_grams_are_written_into_the_given_arrays():
    from ikdr._utils.eig import grams

    rng = np.random.default_rng(1)
    blocks = [rng.standard_normal((50, 8)), rng.standard_normal((70, 8))]
    out = [np.empty((8, 8)), np.empty((8, 8))]
    result = grams(blocks, out=out)
    for X_b, G, R in zip(blocks, out, result):
        assert R is G
        np.testing.assert_allclose(G, X_b.T @ X_b, rtol=1e-13)
