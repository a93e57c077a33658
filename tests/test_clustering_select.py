"""strategy="select" on what public data holds: repeated rows, sparse TF-IDF, wide
matrices, many rows; the strategy parameter and what its settings mean."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.cluster.alternation import AlternationOptions
from ikdr.cluster.criterion import PartitionCriterion
from ikdr.cluster.selection import (SELECTION_COMPONENTS, SELECTION_MAX_FEATURES, W_STEP_ROWS,
                                    WStepRun, kmeans_start, selection_points)
from ikdr.gamma import clustering_gamma
from ikdr.kernels import RelativeGaussian
from ikdr.metrics import nmi
from ikdr.spectral import auto_kernel

CLUSTERERS = ["ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering"]


def _fit(name, X, k, guide, **params):
    model = getattr(ikdr, name)(k, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if name == "SemiSupervisedISM":
            return model.fit(X, guide)
        if name == "KDAC":
            return model.fit(X, np.random.default_rng(0).integers(0, 2, X.shape[0]))
        return model.fit(X)


def _repeated_rows(seed=0):
    """Integer-valued features of three groups, most rows repeated many times (as in
    public sets of counts and ratings)."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0, 0, 0], [3, 3, 0, 0], [0, 3, 3, 3]])
    y = np.repeat([0, 1, 2], 60)
    X = centers[y] + rng.integers(0, 2, (180, 4))
    return X.astype(float), y


@pytest.mark.parametrize("name", CLUSTERERS)
def test_repeated_rows_are_clustered_not_refused(name):
    X, y = _repeated_rows()
    assert np.unique(X, axis=0).shape[0] < 50           # mostly repeated rows
    model = _fit(name, X, 3, y + 0.1)
    assert nmi(y, model.labels_) > 0.8


def test_local_scales_count_a_repeated_row_once():
    X = np.repeat(np.arange(10.0)[:, None], 8, axis=0)  # ten values, each eight times
    scales = RelativeGaussian.local_scales(X, 3)
    # the third nearest *other distinct* value: 3 at the ends, else 2
    expected = np.repeat([3, 2, 2, 2, 2, 2, 2, 2, 2, 3], 8).astype(float)
    np.testing.assert_array_equal(scales, expected)
    np.testing.assert_array_equal(RelativeGaussian.local_scales(sp.csr_matrix(X), 3), expected)
    with pytest.raises(ValueError, match="identical"):
        RelativeGaussian.local_scales(np.ones((6, 2)), 3)


def _documents(n_docs=600, n_classes=3, vocabulary=2000, class_words=5, seed=0):
    """TF-IDF of documents with planted classes: each class uses its own few words
    besides the common vocabulary, which has no class."""
    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(seed)
    y = np.arange(n_docs) % n_classes
    counts = rng.poisson(0.02, (n_docs, vocabulary)).astype(float)
    for c in range(n_classes):
        words = vocabulary - (c + 1) * class_words + np.arange(class_words)
        counts[np.ix_(y == c, words)] += rng.poisson(2.0, ((y == c).sum(), class_words))
    return sp.csr_matrix(TfidfTransformer().fit_transform(counts)), y


def test_sparse_tfidf_is_clustered_as_its_dense_copy():
    X, y = _documents()
    sparse = ikdr.ISMClustering(3, random_state=0).fit(X)
    dense = ikdr.ISMClustering(3, random_state=0).fit(X.toarray())
    assert nmi(y, sparse.labels_) > 0.95
    assert nmi(sparse.labels_, dense.labels_) > 0.95
    assert sparse.strategy_ == "select"
    # W lives on the words, orthonormal, and transform is X @ W
    W = sparse.components_
    assert W.shape[0] == X.shape[1]
    np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-10)
    np.testing.assert_allclose(sparse.transform(X), X @ W, atol=1e-12)
    # the class words lead the importances
    top = np.argsort(-sparse.feature_importances_)[:15]
    assert np.mean(top >= X.shape[1] - 15) >= 0.6


def test_selection_points_project_only_wide_or_sparse_data(rng):
    X = rng.standard_normal((50, SELECTION_MAX_FEATURES))
    points, basis = selection_points(X)
    assert basis is None and np.shares_memory(points, X) or np.array_equal(points, X)
    wide = rng.standard_normal((80, SELECTION_MAX_FEATURES + 1))
    points, basis = selection_points(wide, random_state=0)
    assert basis.shape == (wide.shape[1], SELECTION_COMPONENTS)
    np.testing.assert_allclose(points, wide @ basis)
    np.testing.assert_allclose(basis.T @ basis, np.eye(SELECTION_COMPONENTS), atol=1e-10)


def test_every_start_is_judged_on_every_feature():
    """A start found on screened features is scored by the same criterion, on every
    feature, as the starts on all of them."""
    X, y = _repeated_rows()
    X = StandardScaler().fit_transform(X + np.random.default_rng(1).normal(0, 0.3, X.shape))
    model = ikdr.ISMClustering(3, random_state=0).fit(X)
    judge = PartitionCriterion(X, 3, random_state=0)
    for candidate in model.selection_:
        assert candidate["criterion"] == pytest.approx(judge(candidate["labels"]), rel=1e-9)


def test_w_steps_solve_on_a_row_sample_above_its_size(rng):
    n = W_STEP_ROWS + 200
    X = np.vstack([rng.normal(-2, 1, (n // 2, 3)), rng.normal(2, 1, (n - n // 2, 3))])
    start = kmeans_start(X, 2, random_state=0)
    from ikdr.cluster.selection import with_spectra
    kernel = auto_kernel(X, 2)
    start = with_spectra(start, X, kernel)
    unguided = WStepRun(X, start, kernel, clustering_gamma, None, None,
                        AlternationOptions(2, random_state=0))
    assert unguided.rows.shape == (W_STEP_ROWS,) and unguided.work.shape[0] == W_STEP_ROWS
    # a guided paradigm's Gamma holds n x n guidance: every row
    guided = WStepRun(X, start, kernel, clustering_gamma, None, None,
                      AlternationOptions(2, random_state=0, guided=True))
    assert guided.rows is None and guided.work.shape[0] == n


def test_strategy_is_stated_and_resolved():
    X, y = _repeated_rows()
    X = StandardScaler().fit_transform(X)
    assert ikdr.ISMClustering(3, random_state=0).fit(X).strategy_ == "select"
    # normalize no longer switches the algorithm
    assert ikdr.ISMClustering(3, normalize=True, random_state=0).fit(X).strategy_ == "select"
    model = ikdr.ISMClustering(3, strategy="alternate", random_state=0).fit(X)
    assert model.strategy_ == "alternate" and model.selection_ is None
    # a kernel other than local scaling runs the alternation under "auto" ...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert ikdr.ISMClustering(3, sigma=1.0, random_state=0).fit(X).strategy_ == "alternate"
    # ... and is refused by name under "select"
    with pytest.raises(ValueError, match="strategy='select'.*local-scaling"):
        ikdr.ISMClustering(3, sigma=1.0, strategy="select").fit(X)
    with pytest.raises(ValueError, match="strategy"):
        ikdr.ISMClustering(3, strategy="best").fit(X)


def test_select_honours_max_iter_tol_and_normalize():
    X, _ = _repeated_rows()
    X = StandardScaler().fit_transform(X + np.random.default_rng(2).normal(0, 0.5, X.shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = ikdr.ISMClustering(3, max_iter=1, random_state=0).fit(X)
    assert one.n_iter_ <= 1
    loose = ikdr.ISMClustering(3, tol=10.0, random_state=0).fit(X)  # any change is small
    assert loose.n_iter_ <= 1 and loose.converged_
    plain = ikdr.ISMClustering(3, normalize=False, random_state=0).fit(X)
    assert plain.strategy_ == "select" and not plain.normalize_
    np.testing.assert_array_equal(plain.degrees_, np.ones(X.shape[0]))


def test_knet_reads_sparse_or_wide_data_on_its_leading_singular_vectors():
    X, y = _documents()
    sparse = ikdr.KNetClustering(3, random_state=0).fit(X)
    dense = ikdr.KNetClustering(3, random_state=0).fit(X.toarray())
    assert nmi(y, sparse.labels_) > 0.95 and nmi(sparse.labels_, dense.labels_) > 0.95
    basis = sparse.projection_
    assert basis.shape == (X.shape[1], SELECTION_COMPONENTS)
    np.testing.assert_allclose(basis.T @ basis, np.eye(SELECTION_COMPONENTS), atol=1e-10)
    np.testing.assert_array_equal(sparse.predict(X), sparse.labels_)
    np.testing.assert_allclose(sparse.transform(X), sparse.transform(X.toarray()), atol=1e-10)
    narrow, _ = _repeated_rows()
    assert ikdr.KNetClustering(3, random_state=0).fit(narrow).projection_ is None
