"""Sparse X (scipy.sparse): the same fits as dense X, without densifying it.

Small problems are fitted from the dense array and from its CSR / CSC / COO
forms: W agrees to rounding for every estimator and for the solver function
with each kernel. Wide problems (more features than the dense Phi is formed
for) run matrix-free and within a memory cap far below the dense X; bad
input is refused with ValueErrors naming the problem.
"""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import ikdr
from ikdr.gamma import supervised_gamma
from ikdr.passes.sparse_rows import DENSE_PHI_MAX_FEATURES


def _counts(n=300, d=24, seed=0):
    """Poisson counts whose classes (4) are an XOR of two columns' presence plus a third."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.4, (n, d)).astype(float)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int) + 2 * (X[:, 2] > 0)
    return X, y


def _clusters(n=240, d=12, seed=0):
    """Three count clusters, each marked by one column."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    X = rng.poisson(0.3, (n, d)).astype(float)
    X[:, :3] += 3 * np.eye(3)[labels] * rng.poisson(2, (n, 1))
    return X, labels


def _same_subspace(A, B, atol):
    """The columns agree up to sign."""
    assert A.shape == B.shape
    np.testing.assert_allclose(np.abs(A), np.abs(B), atol=atol)


@pytest.mark.parametrize("kernel", ["gaussian", "linear", "polynomial", "squared",
                                    "relative_gaussian", "multiquadric"])
def test_ism_function_sparse_equals_dense(kernel):
    X, y = _counts()
    gamma = supervised_gamma(y)[0]
    k = ikdr.kernels.make_kernel(kernel, sigma=1.0) if kernel == "gaussian" else kernel
    dense = ikdr.ism(X, gamma, k, 3)
    for form in (sp.csr_matrix(X), sp.csc_matrix(X), sp.coo_matrix(X), sp.csr_array(X)):
        result = ikdr.ism(form, gamma, k, 3)
        _same_subspace(result.components, dense.components, 1e-6)
        assert result.objective == pytest.approx(dense.objective, rel=1e-10)


@pytest.mark.parametrize("options", [{}, {"support": "all"}, {"support": "moments"},
                                     {"approximation": "nystrom", "n_landmarks": 64}],
                         ids=["heldout", "all", "moments", "nystrom"])
def test_ism_estimator_sparse_equals_dense(options):
    X, y = _counts()
    dense = ikdr.ISM(random_state=0, **options).fit(X, y)
    sparse = ikdr.ISM(random_state=0, **options).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    # the landmark passes sum in another order over sparse rows (NumPy's sweeps) and
    # stop at their own looser tolerance
    tol = 1e-3 if "approximation" in options else 1e-5
    _same_subspace(sparse.components_, dense.components_, tol)
    # the importances move with the subspace: a change of W by tol moves the held-out
    # losses' loadings by about twice that (OPENBLAS_CORETYPE=Haswell: 1.1e-6 with Nystrom)
    np.testing.assert_allclose(sparse.feature_importances_, dense.feature_importances_,
                               atol=2 * tol if "approximation" in options else 1e-6)
    np.testing.assert_allclose(np.abs(sparse.transform(sp.csr_matrix(X))),
                               np.abs(dense.transform(X)), atol=10 * tol)


CLUSTERING = {
    "ISMClustering": (lambda **p: ikdr.ISMClustering(3, random_state=0, **p), None),
    "SemiSupervisedISM": (lambda **p: ikdr.SemiSupervisedISM(3, random_state=0, **p), "scores"),
    "KDAC": (lambda **p: ikdr.KDAC(3, random_state=0, **p), "existing"),
}


@pytest.mark.parametrize("name", sorted(CLUSTERING))
@pytest.mark.parametrize("options", [{}, {"sigma": 2.0},
                                     {"approximation": "nystrom", "n_landmarks": 64}],
                         ids=["auto", "sigma", "nystrom"])
def test_clustering_sparse_equals_dense(name, options):
    X, labels = _clusters()
    make, target = CLUSTERING[name]
    second = {None: (), "scores": (X[:, 0] + 0.1 * np.arange(X.shape[0]) / X.shape[0],),
              "existing": (labels,)}[target]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        dense = make(**options).fit(X, *second)
        sparse = make(**options).fit(sp.csr_matrix(X), *second)
    assert ikdr.metrics.nmi(dense.labels_, sparse.labels_) == pytest.approx(1.0)
    if "approximation" in options:
        # The landmark W-steps sum in another order over sparse rows (NumPy's
        # sweeps), and this alternation's objective is flat in W: its quality
        # differs by 1e-4 (relative) between subspaces 0.01 apart (measured: sin
        # 1e-4 to 1.2e-2 between the two paths as rounding changes, the quality
        # within 1.3e-4). The same clustering at the same quality is the answer.
        assert sparse.history_[-1]["quality"] == pytest.approx(dense.history_[-1]["quality"],
                                                               rel=1e-3)
        assert np.sin(ikdr.principal_angle(sparse.components_, dense.components_)) < 0.05
        return
    _same_subspace(sparse.components_, dense.components_, 1e-5)
    np.testing.assert_allclose(np.abs(sparse.transform(sp.csr_matrix(X))),
                               np.abs(dense.transform(X)), atol=1e-2)


def _wide(n=600, d=DENSE_PHI_MAX_FEATURES + 3000, seed=0):
    """Sparse counts wider than the dense Phi is formed for: 4 classes from an XOR of
    two planted columns' presence and a third, about 30 stored values a row."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=30 / d, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.poisson(1.0, k) + 1.0)
    planted = (rng.random((n, 3)) < 0.5).astype(float)
    X = sp.hstack([sp.csr_matrix(2.0 * planted), X[:, 3:]]).tocsr()
    y = (planted[:, 0].astype(int) ^ planted[:, 1].astype(int)) + 2 * planted[:, 2].astype(int)
    return X, y


class _NoDense(sp.csr_matrix):
    """A CSR matrix that refuses to become dense."""

    def toarray(self, *args, **kwargs):
        raise AssertionError("X was densified")

    todense = toarray

    def __array__(self, *args, **kwargs):
        raise AssertionError("X was densified")


def test_wide_sparse_fit_never_densifies_and_stays_in_a_memory_cap():
    X, y = _wide(d=60_000)
    n, d = X.shape
    tracemalloc.start()
    try:
        model = ikdr.ISM(random_state=0).fit(_NoDense(X), y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the dense X alone would take n d 8 bytes (288 MB here); the fit stays far below
    # (its largest arrays: the screen's pair moments of the 1,024 most frequent
    # features, 8 MB each)
    assert peak < 0.25 * n * d * 8, peak
    assert {0, 1, 2} <= set(model.support_.tolist())
    assert model.transform(_NoDense(X)).shape == (n, model.components_.shape[1])


def test_wide_sparse_problem_is_matrix_free_with_an_operator_start():
    X, y = _wide(n=300)
    gamma = supervised_gamma(y)[0]
    kernel = ikdr.kernels.Gaussian(2.0)
    problem = ikdr.passes.resolve(X).problem(X, gamma, kernel, None)
    assert not problem.supports_dense_phi
    # one pass: the products of the sparse rows are the dense rows'
    rng = np.random.default_rng(1)
    W, _ = np.linalg.qr(rng.standard_normal((X.shape[1], 3)))
    V = rng.standard_normal((X.shape[1], 2))
    dense = kernel.phi_product(X.toarray(), W, gamma, V)
    sparse = problem.phi_product(W, V)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-9, atol=1e-12)
    assert sparse[1] == pytest.approx(dense[1], rel=1e-12)
    # the start: Phi_0 of low rank, its eigenpairs from X^T G without the d x d matrix
    phi0 = problem.phi0()
    values, vectors, _ = ikdr._utils.eig.top_eigenvectors(phi0, 3)
    A = np.asarray(X.T @ gamma.factor) / 2.0        # -L(Gamma)/sigma^2 = Gamma/4 here
    reference = np.linalg.eigvalsh(A.T @ A)[::-1][:3]
    np.testing.assert_allclose(values, reference, rtol=1e-9)
    result = ikdr.ism(X, gamma, kernel, 3, criterion="gradient", max_iter=30)
    assert result.convergence.dense_phi_evaluations == 0
    assert result.objective > problem.objective(vectors)
    with pytest.raises(ValueError, match="matrix_free"):
        ikdr.ism(X, gamma, kernel, 3, phi_solver="dense")


def test_wide_sparse_clustering_with_landmarks():
    X, y = _wide(n=400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ikdr.ISMClustering(4, approximation="nystrom", n_landmarks=64, max_iter=3,
                                   random_state=0).fit(X)
    assert model.components_.shape[0] == X.shape[1]
    assert np.all(np.isfinite(model.components_))


def test_nan_in_sparse_data_is_named():
    X, y = _counts()
    X = sp.csr_matrix(X)
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ikdr.ISM().fit(X, y)
    X.data[3] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        ikdr.ISMClustering(2).fit(X)


def test_empty_rows_allowed_and_all_zero_columns_left_out():
    X, y = _counts()
    X[5] = 0.0                      # an empty document
    X[:, 7] = 0.0                   # a term no document uses
    model = ikdr.ISM(random_state=0, support="all").fit(sp.csr_matrix(X), y)
    assert 7 not in model.support_ and model.empty_features_.tolist() == [7]
    assert np.all(model.components_[7] == 0)
    keep = np.delete(np.arange(X.shape[1]), 7)
    dense = ikdr.ISM(random_state=0, support="all").fit(X[:, keep], y)
    _same_subspace(model.components_[keep], dense.components_, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clusters = ikdr.ISMClustering(3, max_iter=3, random_state=0).fit(sp.csr_matrix(X))
    assert 7 not in clusters.support_


def test_other_formats_are_converted_once_and_bad_ones_refused():
    X, y = _counts()
    for fmt in ("lil", "dok", "bsr"):
        model = ikdr.ISM(random_state=0, support="all").fit(sp.csr_matrix(X).asformat(fmt), y)
        assert model.components_.shape[0] == X.shape[1]
    with pytest.raises(ValueError, match="[Cc]omplex"):
        ikdr.ISM().fit(sp.csr_matrix(X).astype(np.complex128), y)
    with pytest.raises(ValueError, match="features"):
        ikdr.ISM(support="all").fit(sp.csr_matrix(X), y).transform(sp.csr_matrix(X[:, :5]))


def test_caller_matrix_is_not_modified():
    X, y = _counts()
    coo = sp.coo_matrix(X)
    duplicated = sp.coo_matrix((np.r_[coo.data, 1.0], (np.r_[coo.row, 0], np.r_[coo.col, 0])),
                               shape=X.shape).tocsr()
    duplicated.has_canonical_format = False
    before = duplicated.data.copy()
    ikdr.ISM(random_state=0, support="all").fit(duplicated, y)
    np.testing.assert_array_equal(duplicated.data, before)
