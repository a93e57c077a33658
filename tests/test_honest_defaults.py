"""The defaults' answers: converged means a certified maximum (checked against a dense
NumPy gradient on ``support_``), and the features are chosen and weighed by dependence
measured on held-out rows."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr._utils.sampling import sample_pairs
from ikdr.kernels.bandwidth import PAIR_SAMPLES
from ikdr.reduction.screen import third_moment_screen
from ikdr.reduction.marginal import marginal_dependence, marginal_threshold
from ikdr.reduction.support import HeldOutRows


def _standardised(X):
    return StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))


def _ordinal_with_ties(n=600, seed=0):
    """Rows drawn with repetition from a 4 x 4 x 3 x 3 grid of ordinal levels (many
    tied rows), three classes set by a score of the levels."""
    rng = np.random.default_rng(seed)
    levels = np.array(list(itertools.product(range(4), range(4), range(3), range(3))), float)
    X = levels[rng.integers(0, len(levels), n)]
    score = (3 - X[:, 0]) + X[:, 1] + 2 * X[:, 3] + 0.5 * X[:, 2]
    y = np.digitize(score, np.quantile(score, [0.5, 0.85]))
    assert len(np.unique(X, axis=0)) < n / 2          # ties (the test can fail)
    return _standardised(X), y


def _data_sets():
    X, y = load_wine(return_X_y=True)
    yield "wine", _standardised(X), y
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", _standardised(X), y
    yield "ordinal with ties", *_ordinal_with_ties()


def dense_relative_gradient(X, y, W, sigma):
    r"""``||(I - WW^T) grad f|| / |f|`` for f(W) = Tr(Gamma K_XW), Gaussian kernel, one-hot
    class Gamma, by dense NumPy: grad f = -(2/sigma^2) X^T L(Gamma o K) X W."""
    n = X.shape[0]
    Y = (y[:, None] == np.unique(y)[None, :]).astype(float)
    H = np.eye(n) - 1.0 / n
    gamma = H @ Y @ Y.T @ H
    Z = X @ W
    sq = np.sum(Z * Z, axis=1)
    K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0) / (2 * sigma ** 2))
    A = gamma * K
    laplacian = np.diag(A.sum(axis=1)) - A
    grad = -(2.0 / sigma ** 2) * X.T @ laplacian @ X @ W
    riemannian = grad - W @ (W.T @ grad)
    return np.linalg.norm(riemannian) / abs(np.sum(A))


@pytest.mark.parametrize("name, X, y", list(_data_sets()), ids=lambda v: v if isinstance(v, str) else "")
def test_the_default_answer_is_a_certified_maximum_on_its_support(name, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)     # a certified fit: no warning
        model = ikdr.ISM(random_state=0).fit(X, y)
    c = model.convergence_
    assert model.converged_ and c.converged and c.local_maximum
    assert c.stopping_rule == "gradient" and c.hessian_max_eigenvalue <= 0
    np.testing.assert_array_equal(c.support, model.support_)
    S = model.support_
    W = model.components_[S]
    np.testing.assert_allclose(model.components_[np.setdiff1d(np.arange(X.shape[1]), S)], 0)
    rel = dense_relative_gradient(X[:, S], y, W, model.sigma_)
    # the documented tolerance (gtol = 1e-6), measured independently of the solver
    assert rel <= 1.01e-6
    assert rel == pytest.approx(c.relative_gradient_norm, rel=1e-3, abs=1e-12)


def test_the_papers_rule_stops_early_and_says_it_is_not_certified():
    X, y = _ordinal_with_ties()
    model = ikdr.ISM(n_components=2, criterion="eigenvalues", support="all").fit(X, y)
    c = model.convergence_
    assert c.stopping_rule == "eigenvalues"
    rel = dense_relative_gradient(X, y, model.components_, model.sigma_)
    assert rel > 1e-6 and not model.converged_ and not c.first_order


def test_max_iter_first_warns_with_the_measured_gradient():
    X, y = _ordinal_with_ties()
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 before its certificate held: "
                                                r"relative gradient norm [0-9.e+-]+ > gtol"):
        model = ikdr.ISM(n_components=3, max_iter=2, support="all").fit(X, y)
    assert not model.converged_


def _weak_feature_case(seed):
    """x0, x1 carry the labels strongly, x2 weakly; 40 noise features."""
    rng = np.random.default_rng(seed)
    n = 1200
    X = rng.standard_normal((n, 43))
    score = 2.0 * X[:, 0] + 1.5 * X[:, 1] + 0.6 * X[:, 2] + rng.standard_normal(n)
    y = (score > 0).astype(int)
    return X, y


def test_the_halves_are_stratified_and_balanced():
    """Each class splits in two halves that differ by at most one row, and so do the
    halves (odd classes give their extra row to the smaller half so far)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 4001)
    rows = HeldOutRows(np.zeros((y.size, 1)), y, "labels", 0)
    first, second = rows.folds[0]
    assert np.array_equal(np.sort(np.concatenate([first, second])), np.arange(y.size))
    assert abs(first.size - second.size) <= 1
    per_class = np.bincount(y[first], minlength=10) - np.bincount(y[second], minlength=10)
    assert np.all(np.abs(per_class) <= 1)
    assert np.array_equal(rows.folds[1][0], second) and np.array_equal(rows.folds[1][1], first)


def test_held_out_selection_keeps_a_weak_feature_and_drops_noise():
    kept_weak = 0
    for seed in range(3):
        X, y = _weak_feature_case(seed)
        model = ikdr.ISM(random_state=seed).fit(X, y)
        assert {0, 1} <= set(model.support_)
        kept_weak += 2 in set(model.support_)
        # what the selection decided, measured on held-out rows: the weak feature
        # adds held-out dependence, each noise feature in the support does not hurt
        rows = HeldOutRows(X, y, "labels", seed + 100)
        gains = _heldout_gain_of_each(model, rows, X, y)
        assert gains[2] > 0
        top3 = np.argsort(model.feature_importances_)[::-1][:3]
        assert set(top3) == {0, 1, 2}
    assert kept_weak >= 2


def _heldout_gain_of_each(model, rows, X, y):
    """Held-out objective lost when each feature's row of W is zeroed (a fit on one
    half, warm from the model, measured on the other)."""
    gains = np.zeros(X.shape[1])
    for train, test in rows.folds:
        gamma_train, _ = ikdr.supervised_gamma(y[train])
        gamma_test, _ = ikdr.supervised_gamma(y[test])
        fit = ikdr.ism(X[train], gamma_train, model.kernel_, model.components_.shape[1],
                       W0=model.components_, warn=False, certify=False)
        W = fit.components
        f = model.kernel_.objective(X[test], W, gamma_test)
        for j in range(X.shape[1]):
            W_without = W.copy()
            W_without[j] = 0
            gains[j] += f - model.kernel_.objective(X[test], W_without, gamma_test)
    return gains


def test_the_three_way_parity_is_found_where_no_class_moment_differs():
    hits = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((2000, 20))
        y = (X[:, 0] * X[:, 1] * X[:, 2] > 0).astype(int)
        model = ikdr.ISM(random_state=seed).fit(X, y)
        hits += set(np.argsort(model.feature_importances_)[::-1][:3]) == {0, 1, 2}
    assert hits >= 2


def test_the_three_way_parity_among_fifty_features_is_found_by_its_third_moments():
    """Among 50 features no fit on all of them holds a 3-way parity (its third-order
    term is buried by the other features' distances); the third-moment screen
    proposes the triple, the held-out rounds keep it."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 50))
    y = (X[:, 0] * X[:, 1] * X[:, 2] > 0).astype(int)
    kept, raw = third_moment_screen(X, y)
    assert set(np.flatnonzero(kept)) == {0, 1, 2}
    assert raw[:3].min() > 10 * raw[3:].max()
    model = ikdr.ISM(random_state=0).fit(X, y)
    assert set(np.argsort(model.feature_importances_)[::-1][:3]) == {0, 1, 2}
    assert set(model.support_) >= {0, 1, 2}


def test_the_third_moment_screen_keeps_no_noise_feature():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 40))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)      # an XOR: second order, no triple
    kept, _ = third_moment_screen(X, y)
    assert not kept.any()
    with pytest.raises(ValueError, match="at most 64 features"):
        third_moment_screen(rng.standard_normal((100, 65)), rng.integers(0, 2, 100))


def test_the_marginal_noise_is_that_of_permuted_labels():
    """The marginal part counts beyond sqrt(2 log d) of its standard deviation under
    independence; the analytic deviation is the one of permuted labels."""
    rng = np.random.default_rng(0)
    X = np.hstack([rng.standard_normal((600, 6)), rng.integers(0, 3, (600, 2)).astype(float)])
    y = (X[:, 0] + 0.5 * rng.standard_normal(600) > 0).astype(int)
    dependence, noise, null_mean = marginal_dependence(X, ikdr.supervised_gamma(y)[0],
                                                       with_noise=True)
    permuted = np.array([marginal_dependence(X, ikdr.supervised_gamma(rng.permutation(y))[0])
                         for _ in range(300)])
    ratio = permuted.std(axis=0) / noise
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio
    # the permuted statistics center on the subtracted mean; the threshold lets
    # through about 5% / d of them per feature (none of 300 x 8 here, typically)
    assert np.all(np.abs(permuted.mean(axis=0)) < 0.2 * noise)
    threshold = marginal_threshold(noise, null_mean)
    assert np.mean(permuted[:, 1:] > threshold[1:]) < 0.01
    assert np.all(threshold[1:] > 2.0 * noise[1:])
    assert dependence[0] > 10 * noise[0]
    sparse_dependence, sparse_noise, sparse_mean = marginal_dependence(
        scipy.sparse.csr_matrix(X), ikdr.supervised_gamma(y)[0], with_noise=True)
    # the sparse path draws the same pairs for the bandwidths: the same numbers
    np.testing.assert_allclose(sparse_noise, noise, rtol=1e-9)
    np.testing.assert_allclose(sparse_mean, null_mean, rtol=1e-12)
    np.testing.assert_allclose(sparse_dependence, dependence, rtol=0,
                               atol=1e-9 * np.abs(dependence).max())


def test_the_binned_kernel_sums_by_fft_equal_the_toeplitz_matrices():
    """The marginal part's quadratic forms and K_j c_j, taken over bin gaps by FFT,
    equal those of the bins x bins Toeplitz kernel matrices."""
    from scipy.linalg import toeplitz

    from ikdr.reduction.marginal import _autocorrelation, _toeplitz_product

    rng = np.random.default_rng(3)
    d, bins, r = 4, 16, 3
    first_rows = np.exp(-0.5 * (rng.uniform(0.05, 2.0, (d, 1)) * np.arange(bins)) ** 2)
    sums, counts = rng.standard_normal((d, bins, r)), rng.integers(0, 9, (d, bins)) * 1.0
    scale = np.array([1.0, -0.5, 2.0])
    weights = first_rows * np.where(np.arange(bins) > 0, 2.0, 1.0)
    by_gaps = np.einsum("jg,jg->j", weights, _autocorrelation(sums, bins, scale))
    product = _toeplitz_product(first_rows, counts, bins)
    for j in range(d):
        K = toeplitz(first_rows[j])
        np.testing.assert_allclose(by_gaps[j], np.einsum("br,bc,cr,r->", sums[j], K, sums[j],
                                                         scale), rtol=1e-12)
        np.testing.assert_allclose(product[j], K @ counts[j], rtol=1e-12, atol=1e-12)


def test_marginal_dependence_in_feature_blocks_is_the_same(monkeypatch):
    """Many features are made a block at a time (bounded memory): blocks change nothing."""
    import ikdr.reduction.marginal as marginal

    rng = np.random.default_rng(1)
    X = np.hstack([rng.standard_normal((300, 7)), rng.integers(0, 2, (300, 3)) * 1.0])
    y = (X[:, 0] + X[:, 8] > 0.5).astype(int)
    gamma = ikdr.supervised_gamma(y)[0]
    whole = marginal_dependence(X, gamma, with_noise=True)
    monkeypatch.setattr(marginal, "FEATURE_BLOCK", 3)
    for got, want in zip(marginal_dependence(X, gamma, with_noise=True), whole):
        np.testing.assert_array_equal(got, want)


def test_a_candidate_the_selection_refused_has_no_loss_in_the_importances():
    """Noise features tried as candidates get held-out losses of either sign; only
    the support's count, so pure noise outside it ranks below every real feature."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((800, 40))
    y = (X[:, 0] + 0.7 * X[:, 1] + 0.4 * rng.standard_normal(800) > 0).astype(int)
    model = ikdr.ISM(random_state=0).fit(X, y)
    outside = np.setdiff1d(np.arange(40), model.support_)
    assert model.feature_importances_[outside].max() < model.feature_importances_[:2].min()
    assert np.count_nonzero(model.feature_importances_[outside]) <= 2


def test_a_quadratic_term_counts_in_the_importances():
    """Friedman #1: 20 (x2 - 0.5)^2 is even in x2, no projection direction holds it,
    and the eigenvalue-weighted loadings gave it nothing; the held-out marginal
    part does."""
    for seed in range(2):
        rng = np.random.default_rng(seed)
        X = rng.uniform(size=(1000, 50))
        y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
             + 10 * X[:, 3] + 5 * X[:, 4] + rng.standard_normal(1000))
        model = ikdr.ISM(random_state=seed).fit(_standardised(X), y)
        assert set(np.argsort(model.feature_importances_)[::-1][:5]) == set(range(5))


def test_marginal_dependence_matches_the_dense_formula():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] ** 2 + 0.3 * rng.standard_normal(300) > 1).astype(int)
    gamma, _ = ikdr.supervised_gamma(y)
    G = gamma.toarray()
    got = marginal_dependence(X, gamma)
    pairs = sample_pairs(300, PAIR_SAMPLES, 0)         # the default random_state's pairs
    exact = np.zeros(4)
    for j in range(4):
        x = X[:, j]
        sigma = np.median(np.abs(x[pairs[0]] - x[pairs[1]]))
        K = np.exp(-(x[:, None] - x[None]) ** 2 / (2 * sigma ** 2))
        mean_off = (K.sum() - 300) / (300 * 299)
        exact[j] = np.sum(K * G) - np.trace(G) * (1 - mean_off)
    # the kernel at the bin centers: within 1% of the strongest dependence
    np.testing.assert_allclose(got, exact, rtol=0, atol=0.01 * np.abs(exact).max())
    assert got[0] > 10 * np.abs(got[1:]).max()


def test_n_components_above_the_support_fills_it_up_and_says_so():
    X, y = _weak_feature_case(0)
    model = ikdr.ISM(n_components=6, random_state=0).fit(X, y)
    assert model.components_.shape[1] == 6
    assert model.support_.size >= 6                       # never silently all 43
    assert model.support_.size < X.shape[1]
    np.testing.assert_allclose(model.components_.T @ model.components_, np.eye(6), atol=1e-10)


@pytest.mark.parametrize("params, name", [
    ({"gtol": 0}, "gtol"), ({"gtol": -1e-6}, "gtol"), ({"sigma": float("nan")}, "sigma"),
    ({"sigma": float("inf")}, "sigma"), ({"criterion": "loss"}, "criterion"),
    ({"support": "screen"}, "support"), ({"support": None}, "support")])
def test_bad_options_are_refused_before_any_pass(params, name, monkeypatch):
    X, y = _weak_feature_case(0)
    import ikdr.kernels.base as base

    def no_pass(*args, **kwargs):
        raise AssertionError("a pass ran before the options were checked")

    monkeypatch.setattr(base.Kernel, "phi_product", no_pass)
    monkeypatch.setattr(base.Kernel, "objective", no_pass)
    with pytest.raises(ValueError, match=name):
        ikdr.ISM(**params).fit(X, y)


def test_the_half_fits_run_in_float32_only_where_it_keeps_their_objective():
    from ikdr.kernels import Gaussian, Polynomial
    from ikdr.reduction.support import fold_precision

    wine = StandardScaler().fit_transform(load_wine().data)
    X = np.tile(wine, (6, 1))           # 1,068 rows: a half of enough rows for float32
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((X.shape[1], 2)))[0]
    kernel = Gaussian(ikdr.median_sigma(X))
    assert fold_precision(X, W, kernel).dtype == np.float32
    assert fold_precision(wine, W, kernel) is wine                  # too few rows
    # far from the origin against their spread, without a float32 estimate (not one
    # Gaussian), or sparse: the rows as they are
    assert fold_precision(X + 1e4, W, kernel).dtype == np.float64
    assert fold_precision(X, W, kernel + Polynomial(degree=2)).dtype == np.float64
    sparse = scipy.sparse.csr_matrix(X)
    assert fold_precision(sparse, W, kernel) is sparse
