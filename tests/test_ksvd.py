"""KernelSVD, the asymmetric Nystrom method and singular_alignment."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_biclusters, make_checkerboard
from sklearn.metrics import normalized_mutual_info_score as nmi

import ikdr
from ikdr import KernelSVD, asymmetric_nystrom, ksvd_bicluster
from ikdr.ksvd.blocks import SparseBlocks
from ikdr.metrics import singular_alignment, svd_accuracy

KERNELS = ["rbf", "sne", "polynomial", "linear"]


def numpy_G(X, Z, kernel, gamma=None, degree=2):
    """The asymmetric kernel matrix written out with numpy (the specification)."""
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    if kernel == "linear":
        return X @ Z.T
    if kernel == "polynomial":
        return (X @ Z.T + 1.0) ** degree
    E = np.exp(-(d2 - d2.min(axis=1, keepdims=True)) / gamma ** 2)
    if kernel == "sne":
        return E / E.sum(axis=1, keepdims=True)
    return np.exp(-d2 / gamma ** 2)


def assert_same_vectors(A, B, tol):
    """Columns equal up to sign."""
    signs = np.sign((A * B).sum(axis=0))
    np.testing.assert_allclose(A, B * signs, atol=tol, rtol=0)


@pytest.fixture
def graph(rng):
    A = (rng.random((70, 70)) < 0.08).astype(float) * rng.integers(1, 3, (70, 70))
    return A


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("sparse", [False, True])
def test_dense_solver_equals_numpy_svd(graph, kernel, sparse):
    gamma = 2.0
    A = sp.csr_matrix(graph) if sparse else graph
    m = KernelSVD(6, kernel=kernel, sigma=gamma / np.sqrt(2), solver="dense").fit(A)
    G = numpy_G(graph, graph.T, kernel, gamma)
    U, s, Vt = np.linalg.svd(G)
    np.testing.assert_allclose(m.singular_values_, s[:6], rtol=1e-10)
    assert_same_vectors(m.left_vectors_, U[:, :6], 1e-8)
    assert_same_vectors(m.right_vectors_, Vt[:6].T, 1e-8)
    np.testing.assert_allclose(m.row_embedding_, G @ m.right_vectors_, atol=1e-10 * s[0])
    np.testing.assert_allclose(m.column_embedding_, G.T @ m.left_vectors_, atol=1e-10 * s[0])


@pytest.mark.parametrize("kernel", KERNELS)
def test_two_point_sets_and_solvers_agree(rng, kernel):
    X, Z = rng.normal(size=(80, 7)), rng.normal(size=(60, 7)) + 0.3
    G = numpy_G(X, Z, kernel, 1.5)
    s = np.linalg.svd(G, compute_uv=False)
    dense = KernelSVD(5, kernel=kernel, sigma=1.5 / np.sqrt(2), solver="dense").fit(X, Z)
    np.testing.assert_allclose(dense.singular_values_, s[:5], rtol=1e-10)
    arpack = KernelSVD(5, kernel=kernel, sigma=1.5 / np.sqrt(2), solver="arpack", random_state=0).fit(X, Z)
    np.testing.assert_allclose(arpack.singular_values_, s[:5], rtol=1e-9)
    assert_same_vectors(arpack.left_vectors_, dense.left_vectors_, 1e-6)
    rand = KernelSVD(5, kernel=kernel, sigma=1.5 / np.sqrt(2), solver="randomized", random_state=0).fit(X, Z)
    np.testing.assert_allclose(rand.singular_values_, s[:5], rtol=1e-2)
    assert singular_alignment(dense.left_vectors_, dense.right_vectors_, s[:5],
                              rand.left_vectors_, rand.right_vectors_, normalize=True) < 1e-2


def test_callable_kernel_and_float32_input(rng):
    X, Z = rng.normal(size=(30, 3)), rng.normal(size=(25, 3))
    fn = lambda a, b: np.tanh(a @ b.T) + 2.0  # noqa: E731
    m = KernelSVD(4, kernel=fn, solver="dense").fit(X.astype(np.float32), Z)
    s = np.linalg.svd(fn(X.astype(np.float32).astype(float), Z), compute_uv=False)
    np.testing.assert_allclose(m.singular_values_, s[:4], rtol=1e-10)


def test_sne_rows_sum_to_one_without_underflow(rng):
    # Rows far from every column: exp(-d2 / gamma^2) underflows to 0 without the shift.
    X = np.vstack([rng.normal(size=(20, 3)), rng.normal(size=(5, 3)) + 60.0])
    Z = rng.normal(size=(30, 3))
    for fit_X, fit_Z in [(X, Z), (sp.csr_matrix(X), sp.csr_matrix(Z))]:
        m = KernelSVD(3, kernel="sne", sigma=0.5 / np.sqrt(2), solver="dense").fit(fit_X, fit_Z)
        G = m._blocks.block()
        assert np.all(np.isfinite(G))
        np.testing.assert_allclose(G.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(G, numpy_G(X, Z, "sne", 0.5), atol=1e-12)
        # a new far-away row is normalised over the training columns too
        np.testing.assert_allclose(m._blocks.new_rows(fit_X[-2:]).sum(axis=1), 1.0, rtol=1e-12)


def test_sne_normalisers_match_numpy(rng):
    from ikdr.kernels import sne_matrix, sne_row_normalisers

    A, B = rng.normal(size=(40, 6)), 2 * rng.normal(size=(33, 6))
    d2 = ((A[:, None] - B[None]) ** 2).sum(-1)
    for dtype, tol in [(np.float64, 1e-12), (np.float32, 1e-4)]:
        shift, sums = sne_row_normalisers(A.astype(dtype), B.astype(dtype), 0.7)
        np.testing.assert_allclose(shift, d2.min(1), rtol=tol, atol=tol)
        E = np.exp(-(d2 - d2.min(1, keepdims=True)) / (2 * 0.49))
        np.testing.assert_allclose(sums, E.sum(1), rtol=tol)
        np.testing.assert_allclose(sne_matrix(A.astype(dtype), B.astype(dtype), 0.7, shift, sums),
                                   E / E.sum(1, keepdims=True), rtol=tol * 10, atol=tol)
    with pytest.raises(ValueError, match="sigma"):
        sne_row_normalisers(A, B, 0.0)


def test_sparse_blocks_products_and_pieces(graph):
    A = sp.csr_matrix(graph)
    for kernel in KERNELS:
        b = SparseBlocks(A, A.T.tocsr(), kernel, 1.7, 3)
        G = numpy_G(graph, graph.T, kernel, 1.7, 3)
        np.testing.assert_allclose(b.block(), G, rtol=1e-12, atol=1e-14)
        I, J = np.array([3, 1, 50]), np.array([0, 69, 7, 8])
        np.testing.assert_allclose(b.block(I, J), G[np.ix_(I, J)], rtol=1e-12, atol=1e-14)
        B = np.random.default_rng(0).normal(size=(70, 3))
        np.testing.assert_allclose(b.matmat(B), G @ B, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(b.rmatmat(B), G.T @ B, rtol=1e-10, atol=1e-12)


def test_center_double_centers(rng):
    X, Z = rng.normal(size=(50, 3)), rng.normal(size=(40, 3))
    G = numpy_G(X, Z, "rbf", 1.0)
    Gc = G - G.mean(0) - G.mean(1)[:, None] + G.mean()
    s = np.linalg.svd(Gc, compute_uv=False)
    for solver in ["dense", "arpack"]:
        m = KernelSVD(4, sigma=1.0 / np.sqrt(2), center=True, solver=solver, random_state=0).fit(X, Z)
        np.testing.assert_allclose(m.singular_values_, s[:4], rtol=1e-9)
        np.testing.assert_allclose(m.transform(X[:5]), m.row_embedding_[:5], atol=1e-9)
        np.testing.assert_allclose(m.transform_columns(Z[:5]), m.column_embedding_[:5], atol=1e-9)
    A = sp.csr_matrix((rng.random((60, 60)) < 0.1).astype(float))
    dense = KernelSVD(4, kernel="sne", sigma=1.0 / np.sqrt(2), center=True, solver="dense").fit(A.toarray())
    for solver in ["dense", "arpack"]:
        m = KernelSVD(4, kernel="sne", sigma=1.0 / np.sqrt(2), center=True, solver=solver, random_state=0).fit(A)
        np.testing.assert_allclose(m.singular_values_, dense.singular_values_, rtol=1e-9)


@pytest.mark.parametrize("kernel", KERNELS)
def test_transform_of_training_points(graph, kernel):
    for A in (graph, sp.csr_matrix(graph)):
        m = KernelSVD(5, kernel=kernel, sigma=1.3 / np.sqrt(2), solver="arpack", random_state=0).fit(A)
        np.testing.assert_allclose(m.transform(A[[0, 5, 9]]), m.row_embedding_[[0, 5, 9]],
                                   atol=1e-9 * m.singular_values_[0])
        cols = A.T.tocsr()[[2, 4]] if sp.issparse(A) else A.T[[2, 4]]
        np.testing.assert_allclose(m.transform_columns(cols), m.column_embedding_[[2, 4]],
                                   atol=1e-9 * m.singular_values_[0])


def test_sparse_and_dense_A_agree(graph):
    for kernel in KERNELS:
        d = KernelSVD(5, kernel=kernel, solver="dense", random_state=0).fit(graph)
        s = KernelSVD(5, kernel=kernel, solver="dense", random_state=0).fit(sp.csr_matrix(graph))
        assert d.gamma_ == s.gamma_
        np.testing.assert_allclose(d.singular_values_, s.singular_values_, rtol=1e-10)
        np.testing.assert_allclose(d.left_vectors_, s.left_vectors_, atol=1e-8)


def test_median_heuristic_gamma(rng):
    X, Z = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    m = KernelSVD(2, solver="dense").fit(X, Z)
    d = np.sqrt(((X[:, None] - Z[None]) ** 2).sum(-1))
    assert m.gamma_ == pytest.approx(np.median(d), rel=1e-12)
    assert KernelSVD(2, kernel="linear", solver="dense").fit(X, Z).gamma_ is None


# ------------------------------------------------------------------ Nystrom
def test_nystrom_all_landmarks_is_exact(rng):
    X, Z = rng.normal(size=(60, 6)), rng.normal(size=(45, 6))
    for kernel in KERNELS:
        exact = KernelSVD(5, kernel=kernel, sigma=1.2 / np.sqrt(2), solver="dense").fit(X, Z)
        ny = KernelSVD(5, kernel=kernel, sigma=1.2 / np.sqrt(2), solver="nystrom", n_landmarks=(60, 45),
                       random_state=0).fit(X, Z)
        np.testing.assert_allclose(ny.singular_values_, exact.singular_values_, rtol=1e-10)
        assert_same_vectors(ny.left_vectors_, exact.left_vectors_, 1e-8)
        assert_same_vectors(ny.right_vectors_, exact.right_vectors_, 1e-8)
    # double centering uses the exact means of all of G, also under Nystrom
    exact = KernelSVD(4, kernel="sne", sigma=1.2 / np.sqrt(2), center=True, solver="dense").fit(X, Z)
    ny = KernelSVD(4, kernel="sne", sigma=1.2 / np.sqrt(2), center=True, solver="nystrom",
                   n_landmarks=(60, 45), random_state=0).fit(X, Z)
    np.testing.assert_allclose(ny.singular_values_, exact.singular_values_, rtol=1e-10)


def test_auto_solver_choice(rng):
    X = rng.normal(size=(50, 3))
    assert KernelSVD(2).fit(X, X).solver_ == "dense"
    A = sp.random(3000, 3000, density=1e-3, random_state=0, format="csr")
    assert KernelSVD(2, kernel="sne").fit(A).solver_ == "arpack"


def test_nystrom_symmetric_reduces_to_standard_nystrom(rng):
    X = rng.normal(size=(200, 2))
    G = numpy_G(X, X, "rbf", 1.0)  # symmetric PSD
    U, s, V, (I, J) = asymmetric_nystrom(G, 5, 40, random_state=0)
    # Standard Nystrom (Williams-Seeger, paper eq. 13) with the same samples.
    assert np.array_equal(I, J)
    lam, u = np.linalg.eigh(G[np.ix_(I, I)])
    lam, u = lam[::-1][:5], u[:, ::-1][:, :5]
    U_std = G[:, I] @ u / lam
    U_std /= np.linalg.norm(U_std, axis=0)
    np.testing.assert_allclose(s, 200 / 40 * lam, rtol=1e-10)
    assert_same_vectors(U, U_std, 1e-10)
    assert_same_vectors(V, U_std, 1e-10)


def test_nystrom_eta_falls_with_landmarks(rng):
    # anisotropic data: well separated singular values, so each vector is well defined
    X, Z = rng.normal(size=(900, 2)) * [2.0, 0.6], rng.normal(size=(800, 2)) * [2.0, 0.6] + 0.5
    exact = KernelSVD(3, sigma=3.0 / np.sqrt(2), solver="arpack", random_state=0).fit(X, Z)
    U, s, V = exact.left_vectors_, exact.singular_values_, exact.right_vectors_
    etas = []
    for n in (10, 40, 160):
        e = np.mean([singular_alignment(U, V, s, *asymmetric_nystrom(exact._blocks, 3, n,
                                                                      random_state=k)[0:3:2],
                                        normalize=True)
                     for k in range(3)])
        etas.append(e)
    assert etas[0] > etas[1] > etas[2]
    assert etas[2] < 3e-3


def test_nystrom_auto_landmarks_meet_tolerance(rng):
    X, Z = rng.normal(size=(900, 2)) * [2.0, 0.6], rng.normal(size=(800, 2)) * [2.0, 0.6] + 0.5
    exact = KernelSVD(3, sigma=3.0 / np.sqrt(2), solver="arpack", random_state=0).fit(X, Z)
    used = []
    for tol in (1e-1, 1e-2):
        m = KernelSVD(3, sigma=3.0 / np.sqrt(2), solver="nystrom", tol=tol, random_state=0).fit(X, Z)
        acc = svd_accuracy(exact.left_vectors_, exact.singular_values_, exact.right_vectors_,
                           m.left_vectors_, m.singular_values_, m.right_vectors_)
        assert acc.error() <= 2 * tol, (tol, acc, m.landmark_history_)  # the estimate is statistical
        assert m.landmark_history_[-1][1] <= tol
        assert m.accuracy_estimate_ == m.landmark_history_[-1][1]
        used.append(m.landmark_history_[-1][0][0])
    assert used[1] > used[0]  # the tighter tolerance needed more landmarks


def test_nystrom_sparse_graph_matches_dense(graph):
    A = sp.csr_matrix(graph)
    a = KernelSVD(4, kernel="sne", sigma=1.5 / np.sqrt(2), solver="nystrom", n_landmarks=(30, 40),
                  random_state=3).fit(A)
    b = KernelSVD(4, kernel="sne", sigma=1.5 / np.sqrt(2), solver="nystrom", n_landmarks=(30, 40),
                  random_state=3).fit(graph)
    np.testing.assert_allclose(a.singular_values_, b.singular_values_, rtol=1e-10)
    np.testing.assert_allclose(a.left_vectors_, b.left_vectors_, atol=1e-9)


def test_large_sparse_graph_without_densifying():
    import tracemalloc

    from ikdr.graph import directed_sbm

    A, _ = directed_sbm(20_000, 45_000, 4, random_state=0)
    tracemalloc.start()
    ny = KernelSVD(8, kernel="sne", solver="nystrom", n_landmarks=200, random_state=0).fit(A)
    ar = KernelSVD(8, kernel="sne", sigma=ny.gamma_ / np.sqrt(2), solver="arpack", random_state=0).fit(A)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 400e6  # a dense 20,000 x 20,000 G would be 3.2 GB
    assert ny.left_vectors_.shape == (20_000, 8)
    # the dominant (near-stationary) direction is resolved by both
    assert abs(ny.left_vectors_[:, 0] @ ar.left_vectors_[:, 0]) > 0.999


# ------------------------------------------------------------------ compat and biclustering
def test_compat_maps(rng):
    A = rng.random((30, 80))  # M > N: rows are mapped to R^N
    m = KernelSVD(4, compat="pinv", solver="dense").fit(A)
    X = m._blocks.X
    np.testing.assert_allclose(X, np.eye(30), atol=1e-8)  # a0 collapses to unit vectors
    for compat in ("pca", "random"):
        m = KernelSVD(4, compat=compat, solver="dense", random_state=0).fit(A)
        assert m.left_vectors_.shape == (30, 4) and m.right_vectors_.shape == (80, 4)
        np.testing.assert_allclose(m.transform(A[:3]), m.row_embedding_[:3], atol=1e-9)
        np.testing.assert_allclose(m.transform_columns(A.T[:3]), m.column_embedding_[:3],
                                   atol=1e-9)
    B = rng.random((90, 12))  # N > M: columns are mapped to R^M
    m = KernelSVD(4, compat="pca", solver="dense").fit(B)
    np.testing.assert_allclose(m.transform_columns(B.T[:3]), m.column_embedding_[:3], atol=1e-9)


def test_bicluster_biclusters_and_checkerboard():
    A, rows, cols = make_biclusters((240, 160), 4, noise=3, random_state=0)
    r, c, _ = ksvd_bicluster(A, 4, random_state=0)
    assert nmi(rows.argmax(0), r) >= 0.9 and nmi(cols.argmax(0), c) >= 0.9
    A, rows, cols = make_checkerboard((240, 160), (4, 3), noise=3, random_state=0)
    r, c, _ = ksvd_bicluster(A, 4, 3, random_state=0)
    assert nmi(rows.argmax(0), r) >= 0.9 and nmi(cols.argmax(0), c) >= 0.9


# ------------------------------------------------------------------ metric and bad input
def test_singular_alignment(rng):
    G = rng.normal(size=(20, 15))
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    U, s, V = U[:, :3], s[:3], Vt[:3].T
    assert singular_alignment(U, V, s, -2 * U, V) == pytest.approx(0.0, abs=1e-14)
    W = U.copy()
    W[:, 0] = U[:, 1]  # first vector orthogonal: 1 - 0 with weight s_0
    assert singular_alignment(U, V, s, W, V) == pytest.approx(s[0] / 3)
    assert singular_alignment(U, V, s, W, V, normalize=True) == pytest.approx(s[0] / s.sum() / 3)
    with pytest.raises(ValueError, match="columns"):
        singular_alignment(U, V, s, U[:, :2], V)
    with pytest.raises(ValueError, match="NaN"):
        singular_alignment(U, V, s, U * np.nan, V)


def _perturbed_svd(G, r, eps, seed):
    E = np.random.default_rng(seed).normal(size=G.shape)
    U, s, Vt = np.linalg.svd(G + eps * E / np.linalg.norm(E, 2), full_matrices=False)
    return U[:, :r], s[:r], Vt[:r].T


def test_svd_accuracy_against_dense_svd(rng):
    from scipy.linalg import subspace_angles

    # well separated singular values: each component is its own cluster
    Q1 = np.linalg.qr(rng.normal(size=(40, 6)))[0]
    Q2 = np.linalg.qr(rng.normal(size=(30, 6)))[0]
    s_true = np.array([10.0, 6.0, 3.0, 1.5, 0.7, 0.3])
    G = Q1 * s_true @ Q2.T
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    V = Vt.T
    Ua, sa, Va = _perturbed_svd(G, 4, 1e-2, 0)
    acc = svd_accuracy(U, s, V, Ua, sa, Va)
    np.testing.assert_allclose(acc["value_errors"], np.abs(sa - s[:4]) / s[:4], rtol=1e-12)
    for i in range(4):
        assert acc["left_sines"][i] == pytest.approx(
            np.sin(subspace_angles(U[:, [i]], Ua[:, [i]]).max()), rel=1e-6, abs=1e-12)
        assert acc["right_sines"][i] == pytest.approx(
            np.sin(subspace_angles(V[:, [i]], Va[:, [i]]).max()), rel=1e-6, abs=1e-12)
    assert 0 < acc["max_sine"] < 1e-2 and acc.meets(1e-2)
    # the paper's eta is reported beside
    assert acc["eta_paper"] == pytest.approx(singular_alignment(U[:, :4], V[:, :4], s[:4], Ua, Va))
    # signs and scales of the approximate vectors do not matter
    same = svd_accuracy(U, s, V, -3 * U[:, :4], s[:4], 0.5 * V[:, :4])
    assert same["max_sine"] < 1e-12 and same["max_value_error"] == 0.0
    # a component swapped for another is wrong by a full angle
    W = U[:, :4].copy()
    W[:, 1] = U[:, 4]
    assert svd_accuracy(U, s, V, W, s[:4], V[:, :4])["left_sines"][1] == pytest.approx(1.0)
    # a zero approximate component: value error 1, sine 1 (the cora failure)
    Z = U[:, :4].copy()
    Z[:, 3] = 0.0
    bad = svd_accuracy(U, s, V, Z, np.r_[s[:3], 0.0], V[:, :4])
    assert bad["value_errors"][3] == 1.0 and bad["left_sines"][3] == 1.0 and not bad.meets(0.5)


def test_svd_accuracy_clusters_compare_subspaces(rng):
    from scipy.linalg import subspace_angles

    Q1 = np.linalg.qr(rng.normal(size=(30, 5)))[0]
    Q2 = np.linalg.qr(rng.normal(size=(25, 5)))[0]
    s = np.array([5.0, 2.0, 2.0 * (1 - 1e-4), 1.0, 0.5])  # components 1 and 2 nearly tied
    U, V = Q1, Q2
    c, sn = np.cos(0.7), np.sin(0.7)
    rot = np.array([[c, -sn], [sn, c]])
    Ua, Va = U[:, :3].copy(), V[:, :3].copy()
    Ua[:, 1:3] = U[:, 1:3] @ rot  # any basis of the tied pair is as good
    Va[:, 1:3] = V[:, 1:3] @ rot
    acc = svd_accuracy(U, s, V, Ua, s[:3], Va)
    assert [list(k) for k in acc["clusters"]] == [[0], [1, 2]]
    assert acc["max_sine"] < 1e-12 and acc.meets(1e-2)
    assert acc["eta_paper"] > 0.1  # the paper's per-vector eta calls this wrong
    # the cluster's angle: tilt the pair's span towards component 3
    Ut = Ua.copy()
    Ut[:, 2] = np.cos(0.2) * Ua[:, 2] + np.sin(0.2) * U[:, 3]
    tilted = svd_accuracy(U, s, V, Ut, s[:3], Va)
    expected = np.sin(subspace_angles(U[:, 1:3], Ut[:, 1:3]).max())
    np.testing.assert_allclose(tilted["left_sines"][1:], expected, rtol=1e-10)
    assert tilted["left_sines"][1] == pytest.approx(np.sin(0.2))
    with pytest.raises(ValueError, match="fewer"):
        svd_accuracy(U[:, :2], s[:2], V[:, :2], Ua, s[:3], Va)
    with pytest.raises(ValueError, match="NaN"):
        svd_accuracy(U, s, V, Ua * np.nan, s[:3], Va)


def test_auto_landmarks_never_return_zero_singular_values():
    """Sparse directed SBM with a flat SNE spectrum (the cora failure at small size):
    fixed small landmarks return zeros, automatic landmarks keep growing."""
    import warnings

    from ikdr.graph import directed_sbm

    A, _ = directed_sbm(800, 1600, 5, random_state=0)
    exact = KernelSVD(10, kernel="sne", solver="arpack", random_state=0).fit(A)
    few = KernelSVD(10, kernel="sne", sigma=exact.gamma_ / np.sqrt(2), solver="nystrom", n_landmarks=40,
                    random_state=0).fit(A)
    assert few.singular_values_[-1] < 1e-12 < exact.singular_values_[-1]  # the failure
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auto = KernelSVD(10, kernel="sne", sigma=exact.gamma_ / np.sqrt(2), solver="nystrom",
                         random_state=0).fit(A)
    acc = svd_accuracy(exact.left_vectors_, exact.singular_values_, exact.right_vectors_,
                       auto.left_vectors_, auto.singular_values_, auto.right_vectors_)
    assert auto.accuracy_estimate_ <= 1e-2 and acc.meets(1e-2), acc
    assert [h[1] for h in auto.landmark_history_][0] == np.inf


def test_landmark_block_svd_falls_back_to_lapack(monkeypatch, rng):
    """ARPACK can fail on a landmark block whose spectrum is a cluster of nearly
    equal values (a graph's cosine SNE matrix); the Nystrom fit then uses LAPACK."""
    from scipy.sparse.linalg import ArpackNoConvergence

    import ikdr.ksvd.solvers as solvers

    def no_convergence(*args, **kwargs):
        raise ArpackNoConvergence("ARPACK error -1: No convergence", None, None)

    G = rng.random((400, 350))
    exact = np.linalg.svd(G, compute_uv=False)[:5]
    monkeypatch.setattr(solvers, "svd_arpack", no_convergence)
    u, s, v = solvers.top_svd(G, 5)
    np.testing.assert_allclose(s, exact, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(u * (G @ v), axis=0)), exact, rtol=1e-10)
    U, s, V, _ = asymmetric_nystrom(G, 5, (400, 350), random_state=0)  # all: exact
    np.testing.assert_allclose(s, exact, rtol=1e-10)


def test_auto_landmarks_warn_at_the_budget(monkeypatch):
    from sklearn.exceptions import ConvergenceWarning

    from ikdr.graph import directed_sbm

    import ikdr.ksvd.solvers as ksvd_module
    A, _ = directed_sbm(800, 1600, 5, random_state=0)
    exact = KernelSVD(10, kernel="sne", solver="arpack", random_state=0).fit(A)
    monkeypatch.setattr(ksvd_module, "AUTO_MAX_LANDMARKS", 120)
    with pytest.warns(ConvergenceWarning, match=r"budget of 120 x 120.*estimated per-component "
                                                r"error of inf.*ARPACK"):
        m = KernelSVD(10, kernel="sne", sigma=exact.gamma_ / np.sqrt(2), solver="nystrom",
                      random_state=0).fit(A)
    # unresolved components were recomputed exactly, never returned as zeros
    np.testing.assert_allclose(m.singular_values_, exact.singular_values_, rtol=1e-8)
    # dense points with a flat spectrum: accurate or a warning with the estimate
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(400, 10)), rng.normal(size=(300, 10))
    ref = KernelSVD(8, sigma=1.0 / np.sqrt(2), solver="dense").fit(X, Z)
    monkeypatch.setattr(ksvd_module, "AUTO_MAX_LANDMARKS", 60)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = KernelSVD(8, sigma=1.0 / np.sqrt(2), solver="nystrom", random_state=0).fit(X, Z)
    acc = svd_accuracy(ref.left_vectors_, ref.singular_values_, ref.right_vectors_,
                       m.left_vectors_, m.singular_values_, m.right_vectors_)
    warned = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert acc.meets(1e-2) or (warned and "estimated per-component error" in str(warned[0].message))
    assert np.all(m.singular_values_ > 0)


@pytest.mark.parametrize("params, fit_args, match", [
    ({}, "rect", "compat"),
    ({}, "mismatch", "mismatched"),
    ({"n_components": 40}, "square", "min"),
    ({}, "nan", "NaN"),
    ({}, "inf", "infinity|NaN"),
    ({"gamma": -1.0}, "square", "gamma"),
    ({"gamma": 0.0}, "square", "gamma"),
    ({"solver": "nystrom", "n_landmarks": 31}, "square", "more landmarks than rows"),
    ({"solver": "nystrom", "n_landmarks": (5, 40)}, "square", "landmarks"),
    ({"solver": "foo"}, "square", "solver"),
    ({"kernel": "cosine"}, "square", "kernel"),
    ({"compat": "svd"}, "rect", "compat"),
])
def test_bad_input(rng, params, fit_args, match):
    sq = rng.random((30, 30))
    args = {"rect": (rng.random((30, 20)),), "mismatch": (sq, rng.random((10, 4))),
            "square": (sq,), "nan": (np.where(sq > 0.9, np.nan, sq),),
            "inf": (np.where(sq > 0.9, np.inf, sq),)}[fit_args]
    with pytest.raises(ValueError, match=match):
        KernelSVD(**{"n_components": 3, **params}).fit(*args)


def test_transform_wrong_width_and_unfitted(rng):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        KernelSVD().transform(np.ones((2, 2)))
    m = KernelSVD(2, solver="dense").fit(rng.random((10, 10)))
    with pytest.raises(ValueError, match="features"):
        m.transform(np.ones((2, 3)))


def test_pipeline_and_grid_search(rng):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    X = rng.normal(size=(80, 8))
    y = (X[:, 0] > 0).astype(int)
    pipe = make_pipeline(KernelSVD(2, compat="pca", solver="dense"), LogisticRegression())
    search = GridSearchCV(pipe, {"kernelsvd__kernel": ["rbf", "linear"]}, cv=2).fit(X, y)
    assert search.best_score_ > 0.6


def test_sklearn_estimator_checks():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(
            KernelSVD(n_components=1, compat="pca", solver="dense"),
            expected_failed_checks={
                "check_fit_score_takes_y": "fit(X, Z): the second argument is the column point "
                                           "set; y is accepted as the third (and a 1-D Z is "
                                           "taken for y), so Pipeline and GridSearchCV work"})


# ------------------------------------------------------------------ learned compatibility map (a3)
@pytest.mark.parametrize("kind", ["rbf", "sne"])
@pytest.mark.parametrize("shape, side", [((40, 7), "columns"), ((6, 30), "rows"),
                                         ((25, 5), "both")])
@pytest.mark.parametrize("center", [False, True])
def test_learned_map_gradient_matches_finite_differences(rng, kind, shape, side, center):
    """One side mapped (KSVD's a3: columns or rows) or both (learn_compat_map: KernelPCA
    of XC), on G or the double-centered H G H."""
    from ikdr.ksvd.blocks import dense_kernel_matrix
    from ikdr.ksvd.compat import MapTask, _sides, fixed_map, learned_objective

    A = rng.normal(size=shape)
    if side == "both":
        D, other, rows_mapped = A, None, True
        C = np.eye(shape[1]) + 0.3 * rng.normal(size=(shape[1], shape[1]))
    else:
        D, other, rows_mapped = _sides(A)
        assert rows_mapped == (side == "rows")
        C = fixed_map(D, "random", rng)
    gamma = 2.5
    km = dense_kernel_matrix(kind, gamma)
    r, K = 3, 3
    X0 = D @ C
    X0, Z0 = (X0, X0) if other is None else (X0, other) if rows_mapped else (other, X0)
    G0 = km(X0, Z0)
    if center:
        G0 = G0 - G0.mean(0) - G0.mean(1)[:, None] + G0.mean()
    V = np.linalg.svd(G0)[2][:r].T
    F = G0 @ V
    task = MapTask(D, other, rows_mapped, km, kind, gamma,
                   Y=np.eye(K)[rng.integers(0, K, D.shape[0] if other is None else A.shape[0])],
                   center=center, alpha=0.1)
    kw = dict(V=V, mu=F.mean(0), sd=F.std(0))
    W, b = rng.normal(size=(r, K)), rng.normal(size=K)
    loss, gC, gW, gb = learned_objective(C, W, b, task, **kw)
    h = 1e-6
    for P, grad, name in ((C, gC, "C"), (W, gW, "W"), (b, gb, "b")):
        num = np.zeros_like(P)
        for idx in np.ndindex(P.shape):
            old = P[idx]
            P[idx] = old + h
            up = learned_objective(C, W, b, task, **kw)[0]
            P[idx] = old - h
            down = learned_objective(C, W, b, task, **kw)[0]
            P[idx] = old
            num[idx] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8, err_msg=name)
    assert np.abs(gC).max() > 1e-6  # the map does receive a gradient


def test_learned_map_lowers_the_loss_and_classifies():
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    m = KernelSVD(4, kernel="rbf", compat="learned", random_state=0).fit(X, y)
    assert m.compat_history_[-1] < 0.5 * m.compat_history_[0]
    fixed = KernelSVD(4, kernel="rbf", compat="pca", random_state=0).fit(X)
    acc = {}
    for name, model in (("learned", m), ("pca", fixed)):
        F = StandardScaler().fit_transform(model.row_embedding_)
        acc[name] = LogisticRegression(max_iter=3000).fit(F, y).score(F, y)
    assert acc["learned"] > acc["pca"] and acc["learned"] > 0.95, acc
    # transform applies the learned map to new rows
    np.testing.assert_allclose(m.transform(X[:5]), m.row_embedding_[:5], atol=1e-9)
    # in a Pipeline the target reaches the map
    from sklearn.pipeline import make_pipeline
    pipe = make_pipeline(KernelSVD(4, kernel="sne", compat="learned", random_state=0),
                         StandardScaler(), LogisticRegression(max_iter=3000)).fit(X, y)
    assert pipe.score(X, y) > 0.9


@pytest.mark.parametrize("y, match", [(None, "needs the target"),
                                      (np.zeros(10), "y has 10 entries but X has 30 rows"),
                                      (np.zeros((30, 2)), "1-D target")])
def test_learned_map_bad_target(rng, y, match):
    with pytest.raises(ValueError, match=match):
        KernelSVD(3, compat="learned").fit(rng.random((30, 5)), y=y)
    with pytest.raises(ValueError, match="RBF or SNE"):
        KernelSVD(3, kernel="linear", compat="learned").fit(rng.random((30, 5)), y=np.arange(30) % 2)


def test_learn_compat_map_kernel_pca_with_a_learned_map():
    """KernelPCA (RBF) of X C, C learned on the labels: the loss falls, the map is no
    longer the identity it starts from, and the KernelPCA features of X C classify
    better than those of X at the same bandwidth (training accuracy, 2 features)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import KernelPCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::2]
    y = y[::2]
    gamma = ikdr.median_sigma(X, random_state=0)
    C, history = ikdr.learn_compat_map(X, y, 2, gamma=gamma, max_iter=60)
    assert C.shape == (X.shape[1], X.shape[1])
    assert history[-1] < 0.5 * history[0]
    assert np.abs(C - np.eye(X.shape[1])).max() > 0.05
    acc = {}
    for name, P in (("learned", X @ C), ("identity", X)):
        F = StandardScaler().fit_transform(KernelPCA(2, kernel="rbf",
                                                     gamma=1 / gamma ** 2).fit_transform(P))
        acc[name] = LogisticRegression(max_iter=3000).fit(F, y).score(F, y)
    assert acc["learned"] > acc["identity"] + 0.01 and acc["learned"] > 0.95, acc
    # centering is KernelPCA's: without it the learning sees a different matrix
    C_unc, _ = ikdr.learn_compat_map(X, y, 2, gamma=gamma, center=False, max_iter=5)
    C_cen, _ = ikdr.learn_compat_map(X, y, 2, gamma=gamma, center=True, max_iter=5)
    assert not np.allclose(C_unc, C_cen)
    # gamma=None is the median rule
    np.testing.assert_allclose(ikdr.learn_compat_map(X, y, 2, max_iter=3)[0],
                               ikdr.learn_compat_map(X, y, 2, gamma=gamma, max_iter=3)[0])


@pytest.mark.parametrize("kwargs, y, err, match", [
    ({}, None, ValueError, "needs the target: learn_compat_map"),
    ({}, np.zeros(7), ValueError, "y has 7 entries but X has 30 rows"),
    ({}, np.zeros(30), ValueError, "at least 2 classes"),
    ({"kernel": "linear"}, np.arange(30) % 2, ValueError, "RBF or SNE"),
    ({"n_components": 9}, np.arange(30) % 2, ValueError, "n_components"),
    ({"gamma": -1.0}, np.arange(30) % 2, ValueError, "gamma"),
    ({"max_iter": 0}, np.arange(30) % 2, ValueError, "max_iter"),
])
def test_learn_compat_map_bad_input(rng, kwargs, y, err, match):
    with pytest.raises(err, match=match):
        ikdr.learn_compat_map(rng.random((30, 5)), y, **kwargs)


def test_learned_map_with_center_learns_on_the_centered_matrix(rng):
    """KernelSVD(compat="learned", center=True) learns C on H G H, the matrix it
    then decomposes (the same mechanism as learn_compat_map)."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    a = KernelSVD(3, compat="learned", center=True, random_state=0).fit(X, y)
    b = KernelSVD(3, compat="learned", center=False, random_state=0).fit(X, y)
    assert a.compat_history_[-1] < 0.5 * a.compat_history_[0]
    assert not np.allclose(a._compat_map[0], b._compat_map[0])


def test_kernels_of_the_kernel_layer(graph, rng):
    """One kernel vocabulary: Gaussian(sigma) / SNE(sigma) are the paper's rbf / sne with
    gamma = sqrt(2) sigma; other kernel objects are evaluated by their matrix."""
    from ikdr.kernels import SNE, Gaussian, Linear, Polynomial, RelativeGaussian

    sigma = 1.1
    for A in (graph, sp.csr_matrix(graph)):
        for obj, name in ((Gaussian(sigma), "rbf"), (SNE(sigma), "sne")):
            a = KernelSVD(4, kernel=obj, solver="dense").fit(A)
            b = KernelSVD(4, kernel=name, sigma=sigma, solver="dense").fit(A)
            assert a.gamma_ == pytest.approx(b.gamma_)
            np.testing.assert_allclose(a.singular_values_, b.singular_values_, rtol=1e-12)
    G = numpy_G(graph, graph.T, "sne", np.sqrt(2) * sigma)
    np.testing.assert_allclose(SNE(sigma).matrix(graph, graph.T), G, atol=1e-13)
    for obj, name in ((Linear(), "linear"), (Polynomial(2, c=1.0), "polynomial")):
        a = KernelSVD(3, kernel=obj, solver="dense").fit(graph)
        b = KernelSVD(3, kernel=name, solver="dense").fit(graph)
        np.testing.assert_allclose(a.singular_values_, b.singular_values_, rtol=1e-12)
    # sigma="median" leaves the bandwidth to gamma / the median rule
    assert KernelSVD(3, kernel=SNE(), solver="dense").fit(graph).gamma_ == \
        KernelSVD(3, kernel="sne", solver="dense").fit(graph).gamma_
    X, Z = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    k = RelativeGaussian(5)
    m = KernelSVD(3, kernel=k, solver="dense").fit(X, Z)
    K = k.fit(np.vstack([X, Z])).matrix(X, Z)
    np.testing.assert_allclose(m.singular_values_, np.linalg.svd(K, compute_uv=False)[:3],
                               rtol=1e-10)
    with pytest.raises(TypeError, match="dense"):
        KernelSVD(3, kernel=Polynomial(2, c=3.0)).fit(sp.csr_matrix(graph))


def test_the_other_estimators_kernel_names(graph, rng):
    """KernelSVD takes the names every other estimator takes: "gaussian" is "rbf" (same
    kernel, same bandwidth rule, with or without sigma), "poly" is "polynomial", and
    another name of the vocabulary is its kernel object; an unknown name says which exist."""
    from ikdr.kernels import RelativeGaussian

    for sigma in ("median", 0.9):
        a = KernelSVD(3, kernel="gaussian", sigma=sigma, solver="dense").fit(graph)
        b = KernelSVD(3, kernel="rbf", sigma=sigma, solver="dense").fit(graph)
        assert a.gamma_ == b.gamma_
        np.testing.assert_array_equal(a.singular_values_, b.singular_values_)
    a = KernelSVD(3, kernel="poly", degree=3, solver="dense").fit(graph)
    b = KernelSVD(3, kernel="polynomial", degree=3, solver="dense").fit(graph)
    np.testing.assert_array_equal(a.singular_values_, b.singular_values_)
    X, Z = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    a = KernelSVD(3, kernel="relative_gaussian", solver="dense").fit(X, Z)
    b = KernelSVD(3, kernel=RelativeGaussian(), solver="dense").fit(X, Z)
    np.testing.assert_array_equal(a.singular_values_, b.singular_values_)
    with pytest.raises(ValueError, match="kernel"):
        KernelSVD(3, kernel="laplacian").fit(graph)


def test_docstring_rules_hold(rng):
    """What the KernelSVD / asymmetric_nystrom docstrings promise about the parameters."""
    A = rng.random((12, 12))
    # compat is ignored for a square A: no target needed, same fit as without it
    a = KernelSVD(3, compat="learned", solver="dense").fit(A)
    b = KernelSVD(3, solver="dense").fit(A)
    np.testing.assert_allclose(a.singular_values_, b.singular_values_)
    assert a.compat_history_ is None
    # n_landmarks only with solver="nystrom", also when "auto" picks another solver
    with pytest.raises(ValueError, match="only used by solver='nystrom'"):
        KernelSVD(3, n_landmarks=6).fit(A)
    # asymmetric_nystrom takes no "auto"; KernelSVD does, and its message says so
    with pytest.raises(ValueError, match=r"an int or a pair \(n, m\) of ints, got 'auto'"):
        asymmetric_nystrom(A, 3, "auto")
    with pytest.raises(ValueError, match='or "auto", got 2.5'):
        KernelSVD(3, solver="nystrom", n_landmarks=2.5).fit(A)
    # the Nystrom vectors are unit columns, s decreasing, landmarks sorted
    U, s, V, (I, J) = asymmetric_nystrom(rng.random((30, 25)), 3, (10, 8), random_state=0)
    np.testing.assert_allclose(np.linalg.norm(U, axis=0), 1.0)
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0)
    assert np.all(np.diff(s) <= 0) and np.all(np.diff(I) > 0) and np.all(np.diff(J) > 0)
