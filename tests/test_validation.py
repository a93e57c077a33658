"""The bad-input table (docs/validation.md): one parametrised test per row.

Every public estimator, function and command line entry gets each bad input;
the expected outcome is a ValueError / TypeError whose message names the
argument and the problem, and a failed ``fit`` leaves the fitted state of a
previous ``fit`` untouched. Accepted inputs (integers, booleans, Fortran
order, strided views, float32, string labels, sparse KSVD input) must give
the same result as the canonical float64 C-order input.
"""
from __future__ import annotations

import copy
import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr import graph, kernels

# ------------------------------------------------------------------ fixtures
N, D = 36, 4
_rng = np.random.default_rng(7)
LABELS = np.repeat([0, 1], N // 2)
X0 = _rng.standard_normal((N, D)) + np.outer(LABELS, [3.0, 0, 0, 0])
SCORES = X0[:, 0] + 0.1 * _rng.standard_normal(N)
EXISTING = (X0[:, 1] > np.median(X0[:, 1])).astype(int)


class Spec:
    """An estimator, how to build it fast, and what its fit's second argument is."""

    def __init__(self, name, make, target=None, clusters=False, n_components=True,
                 sigma="sigma", sparse=False):
        self.name, self.make, self.target = name, make, target
        self.clusters, self.n_components, self.sigma, self.sparse = (
            clusters, n_components, sigma, sparse)

    def second(self):
        return {None: None, "labels": LABELS, "scores": SCORES, "existing": EXISTING}[self.target]

    def fit(self, est, X, second="default"):
        second = self.second() if isinstance(second, str) else second
        if self.target is None:
            return est.fit(X)
        return est.fit(X, second)

    def __repr__(self):
        return self.name


SPECS = [
    Spec("ISM", lambda **p: ikdr.ISM(**{"n_components": 1, "max_iter": 10, **p}), "labels",
         sparse=True),
    Spec("ISMClustering", lambda **p: ikdr.ISMClustering(
        **{"n_clusters": 2, "n_components": 1, "max_iter": 3, "random_state": 0, **p}),
        clusters=True, sparse=True),
    Spec("SemiSupervisedISM", lambda **p: ikdr.SemiSupervisedISM(
        **{"n_clusters": 2, "n_components": 1, "max_iter": 3, "random_state": 0, **p}),
        "scores", clusters=True, sparse=True),
    Spec("KDAC", lambda **p: ikdr.KDAC(
        **{"n_clusters": 2, "n_components": 1, "max_iter": 3, "random_state": 0, **p}),
        "existing", clusters=True, sparse=True),
    Spec("KNetClustering", lambda **p: ikdr.KNetClustering(
        **{"n_clusters": 2, "hidden_layer_sizes": (6,), "max_iter": 2, "random_state": 0, **p}),
        clusters=True, n_components=False, sparse=True),
    Spec("KernelDependenceNetwork", lambda **p: ikdr.KernelDependenceNetwork(
        **{"max_layers": 2, "n_fourier": 30, "random_state": 0, **p}), "labels",
        n_components=False),
    Spec("KernelSVD", lambda **p: ikdr.KernelSVD(**{"n_components": 2, "compat": "pca",
                                                    "random_state": 0, **p}),
         sigma="sigma", sparse=True),
]
SUPERVISED = [s for s in SPECS if s.target is not None]
CLUSTERING = [s for s in SPECS if s.clusters]
WITH_Q = [s for s in SPECS if s.n_components]


def raises(exc, *patterns):
    """pytest.raises whose message must match every pattern (case-insensitive)."""
    class _Ctx:
        def __enter__(self):
            self.ctx = pytest.raises(exc)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *args):
            out = self.ctx.__exit__(*args)
            msg = str(self.info.value)
            for p in patterns:
                assert re.search(p, msg, re.IGNORECASE), f"{p!r} not in message {msg!r}"
            return out
    return _Ctx()


_FITTED = {}


def fitted(spec):
    """A copy of the estimator fitted on the canonical data (fitted once per session)."""
    if spec.name not in _FITTED:
        _FITTED[spec.name] = spec.fit(spec.make(), X0)
    return copy.deepcopy(_FITTED[spec.name])


def fitted_state(est):
    return pickle.dumps({k: v for k, v in vars(est).items() if k.endswith("_")})


def check_keeps_state(spec, est, call):
    """``call`` must raise, and the estimator fitted before must be unchanged."""
    before = fitted_state(est)
    call()  # inside a raises() context by the caller
    return before


def result_of(spec, est, X):
    if spec.name == "KernelSVD":
        return est.row_embedding_
    if spec.name == "KNetClustering":
        return est.embedding_
    if spec.name == "KernelDependenceNetwork":
        return est.transform(X)
    return est.components_


# ------------------------------------------------------------ bad X, every estimator
def _nan(X):
    X = X.copy(); X[3, 1] = np.nan; return X


def _inf(X):
    X = X.copy(); X[5, 0] = np.inf; return X


def _neginf(X):
    X = X.copy(); X[0, 2] = -np.inf; return X


BAD_X = {
    "nan": (_nan, ValueError, ["X", "nan"]),
    "inf": (_inf, ValueError, ["X", "infinity"]),
    "-inf": (_neginf, ValueError, ["X", "infinity"]),
    "empty": (lambda X: X[:0], ValueError, ["0 sample"]),
    "no features": (lambda X: X[:, :0], ValueError, ["0 feature"]),
    "1-D": (lambda X: X[:, 0], ValueError, ["2D array"]),
    "3-D": (lambda X: X[:, :, None], ValueError, ["dim 3", "2"]),
    "one sample": (lambda X: X[:1], ValueError, [r"1 sample|min\(n, m\) = 1"]),
    "complex": (lambda X: X + 1j, ValueError, ["complex"]),
    "text cell": (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, "abc", X.astype(str))
                  .astype(object), ValueError, ["string|float"]),
    "list of ragged rows": (lambda X: [list(r) for r in X[:-1]] + [[1.0]], ValueError,
                            ["inhomogeneous|sequence"]),
}


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("case", list(BAD_X))
def test_bad_X_rejected_and_state_kept(spec, case):
    make, exc, patterns = BAD_X[case]
    est = fitted(spec)
    before = fitted_state(est)
    X = make(X0)
    second = spec.second()
    if second is not None and case in ("empty", "one sample"):
        second = second[: np.shape(X)[0]]
    with raises(exc, *patterns):
        spec.fit(est, X, second)
    assert fitted_state(est) == before


@pytest.mark.parametrize("spec", SUPERVISED, ids=repr)
def test_failed_refit_on_new_width_keeps_state(spec):
    # validate_data(reset=True) sets n_features_in_ before the target is checked:
    # a refit failing on the target must not leave the new width behind.
    est = fitted(spec)
    before = fitted_state(est)
    X5 = np.column_stack([X0, X0[:, 0]])
    bad = np.ones(N) if spec.target == "scores" else np.zeros(N, dtype=int)
    with raises(ValueError):
        spec.fit(est, X5, bad)
    assert fitted_state(est) == before
    assert est.n_features_in_ == D
    assert np.shape(est.transform(X0))[0] == N


@pytest.mark.parametrize("spec", WITH_Q, ids=repr)
def test_failed_refit_q_above_new_width_keeps_state(spec):
    est = spec.fit(spec.make(n_components=2), X0)
    before = fitted_state(est)
    with raises(ValueError, "n_components"):
        spec.fit(est, X0[:2, :1] if spec.name == "KernelSVD" else X0[:, :1],
                 None if spec.second() is None else spec.second()[:2] if spec.name == "KernelSVD"
                 else spec.second())
    assert fitted_state(est) == before
    assert est.n_features_in_ == D


def test_interrupted_fit_keeps_state(monkeypatch):
    import ikdr.reduction.fitting as mod

    est = ikdr.ISM(n_components=1).fit(X0, LABELS)
    before = fitted_state(est)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(mod, "solve_ism", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X0[:, :3], LABELS)
    assert fitted_state(est) == before and est.n_features_in_ == D


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("case, patterns", [("nan", ["nan"]), ("inf", ["infinity"]),
                                            ("width", ["features"]), ("1-D", ["2D"]),
                                            ("empty", ["0 sample"])])
def test_transform_rejects_bad_X(spec, case, patterns):
    est = fitted(spec)
    X = {"nan": _nan(X0), "inf": _inf(X0), "width": X0[:, :2], "1-D": X0[:, 0],
         "empty": X0[:0]}[case]
    methods = [m for m in ("transform", "predict") if hasattr(est, m)]
    if spec.name == "KNetClustering":
        methods = ["transform"]  # predict is transform + nearest center
    for method in methods:
        with raises(ValueError, *patterns):
            getattr(est, method)(X)


# ----------------------------------------------------------- sparse input
@pytest.mark.parametrize("spec", [s for s in SPECS if not s.sparse], ids=repr)
def test_sparse_X_unsupported_clear_message(spec):
    est = fitted(spec)
    before = fitted_state(est)
    with raises(TypeError, "sparse", "dense"):
        spec.fit(est, sp.csr_matrix(X0))
    assert fitted_state(est) == before


def test_sparse_X_supported_by_ksvd():
    A = sp.random(40, 30, density=0.3, random_state=0, format="csr")
    dense = ikdr.KernelSVD(n_components=3, compat="pca", random_state=0).fit(A.toarray())
    sparse = ikdr.KernelSVD(n_components=3, compat="pca", random_state=0).fit(A)
    np.testing.assert_allclose(sparse.singular_values_, dense.singular_values_, rtol=1e-8)
    for fmt in ("csc", "coo"):
        other = ikdr.KernelSVD(n_components=3, compat="pca", random_state=0).fit(A.asformat(fmt))
        np.testing.assert_allclose(other.singular_values_, dense.singular_values_, rtol=1e-8)


# ------------------------------------------------------- accepted conversions
LAYOUTS = {
    "fortran": lambda X: np.asfortranarray(X),
    "strided": lambda X: np.repeat(X, 2, axis=1)[:, ::2],
    "reversed view": lambda X: X[::-1][::-1],
    "list": lambda X: X.tolist(),
    "object of floats": lambda X: X.astype(object),
}


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_gives_identical_result(spec, layout):
    ref = result_of(spec, fitted(spec), X0)
    X = LAYOUTS[layout](X0)
    if layout == "strided":
        assert not X.flags.c_contiguous and not X.flags.f_contiguous
    got = result_of(spec, spec.fit(spec.make(), X), X0)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_integer_and_bool_X_converted(spec):
    Xi = np.round(X0 * 4).astype(np.int64)
    ref = result_of(spec, spec.fit(spec.make(), Xi.astype(np.float64)), Xi.astype(np.float64))
    got = result_of(spec, spec.fit(spec.make(), Xi), Xi.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    Xb = np.column_stack([X0 > 0, X0[:, :1] > 1, X0[:, :1] < -0.5])
    ref = result_of(spec, spec.fit(spec.make(), Xb.astype(np.float64)), Xb.astype(np.float64))
    got = result_of(spec, spec.fit(spec.make(), Xb), Xb.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_float32_same_within_float32_accuracy(spec):
    ref = result_of(spec, fitted(spec), X0)
    X32 = X0.astype(np.float32)
    got = result_of(spec, spec.fit(spec.make(), X32), X32.astype(np.float64))
    # float32 input is rounded once (relative 6e-8); the fit itself runs in float64
    assert np.all(np.isfinite(got))
    scale = max(1.0, np.abs(ref).max())
    assert np.abs(np.abs(got) - np.abs(ref)).max() < 1e-4 * scale


# --------------------------------------------------- targets of supervised fits
def _bad_targets(spec):
    t = spec.second()
    nan = t.astype(float).copy(); nan[2] = np.nan
    inf = t.astype(float).copy(); inf[4] = np.inf
    rows = {"nan": (nan, ValueError, ["nan"]), "inf": (inf, ValueError, ["inf"]),
            "too short": (t[:-1], ValueError, ["inconsistent|labels|samples"]),
            "too long": (np.r_[t, t[:1]], ValueError, ["inconsistent|labels|samples"]),
            "2-D wrong": (np.zeros((N, 2, 2)), ValueError, ["dim|shape|2-D|1-D|multi"]),
            "complex": (t + 1j, ValueError, ["complex"])}
    if spec.target in ("labels", "existing"):
        rows["single class"] = (np.zeros(N, dtype=int), ValueError,
                                ["single|one class|1 class|only one|constant"])
    else:
        rows["constant"] = (np.ones(N), ValueError, ["constant"])
    return rows


TARGET_CASES = [(s, c) for s in SUPERVISED for c in _bad_targets(s)]


@pytest.mark.parametrize("spec, case", TARGET_CASES, ids=[f"{s.name}-{c}" for s, c in TARGET_CASES])
def test_bad_target_rejected_and_state_kept(spec, case):
    t, exc, patterns = _bad_targets(spec)[case]
    est = fitted(spec)
    before = fitted_state(est)
    with raises(exc, *patterns):
        spec.fit(est, X0, t)
    assert fitted_state(est) == before


@pytest.mark.parametrize("spec", [s for s in SUPERVISED if s.target != "scores"], ids=repr)
def test_string_labels_encoded(spec):
    ref = spec.fit(spec.make(), X0, spec.second())
    names = np.where(spec.second() == 1, "yes", "no").astype(object)
    got = spec.fit(spec.make(), X0, names)
    np.testing.assert_allclose(result_of(spec, got, X0), result_of(spec, ref, X0),
                               rtol=1e-12, atol=1e-12)
    if hasattr(got, "classes_") and got.classes_ is not None:
        assert list(got.classes_) == ["no", "yes"]
    if hasattr(got, "predict") and spec.name == "KernelDependenceNetwork":
        assert set(got.predict(X0)) <= {"yes", "no"}


# ---------------------------------------------------------- sample counts
@pytest.mark.parametrize("spec", CLUSTERING, ids=repr)
def test_fewer_samples_than_clusters(spec):
    est = fitted(spec)
    before = fitted_state(est)
    est.set_params(n_clusters=4)
    X = X0[[0, 1, 20, 21]]  # 4 samples, both classes of the second argument
    second = None if spec.second() is None else spec.second()[[0, 1, 20, 21]]
    with raises(ValueError, "n_clusters", "sample"):
        spec.fit(est, X, second)
    assert fitted_state(est) == before


@pytest.mark.parametrize("batch, pattern", [(N + 1, "larger than n_samples"), (2, "exceed n_clusters"),
                                            (0, r">= 1|range \[1, inf\)")])
def test_knet_batch_size(batch, pattern):
    with raises(ValueError, "batch_size", pattern):
        ikdr.KNetClustering(n_clusters=2, batch_size=batch).fit(X0)


# ------------------------------------------------------------ n_components
@pytest.mark.parametrize("spec", WITH_Q, ids=repr)
@pytest.mark.parametrize("q, exc, patterns", [
    (0, ValueError, ["n_components", r">= 1|range \[1, inf\)"]),
    (-2, ValueError, ["n_components", r">= 1|range \[1, inf\)"]),
    (1.5, TypeError, ["n_components", "int"]),
    ("two", TypeError, ["n_components", "int"]),
    ("too big", ValueError, ["n_components", "larger than|between"]),
])
def test_bad_n_components(spec, q, exc, patterns):
    if q == "too big":
        q = D + 1
    est = fitted(spec)
    before = fitted_state(est)
    est.set_params(n_components=q)
    with raises(exc, *patterns):
        spec.fit(est, X0)
    assert fitted_state(est) == before


def test_ksvd_n_components_above_min_n_m():
    A = np.random.default_rng(0).standard_normal((10, 10))
    with raises(ValueError, "n_components", r"min\(n, m\)"):
        ikdr.KernelSVD(n_components=11).fit(A)
    X, Z = A[:6], A[6:]
    with raises(ValueError, "n_components", r"min\(n, m\) = 4"):
        ikdr.KernelSVD(n_components=5).fit(X, Z)


# --------------------------------------------------------- kernel parameters
@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("value, exc", [(0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError),
                                        (np.inf, ValueError), ("wide", (ValueError, TypeError)),
                                        ([1.0], TypeError)])
def test_bad_sigma(spec, value, exc):
    est = fitted(spec)
    before = fitted_state(est)
    est.set_params(**{spec.sigma: value})
    with raises(exc, spec.sigma):
        spec.fit(est, X0)
    assert fitted_state(est) == before


@pytest.mark.parametrize("build, exc, patterns", [
    (lambda: kernels.Gaussian(sigma=0.0), ValueError, ["sigma", "positive"]),
    (lambda: kernels.Gaussian(sigma=-2.0), ValueError, ["sigma", "positive"]),
    (lambda: kernels.Polynomial(degree=0), ValueError, ["degree", ">= 1"]),
    (lambda: kernels.Polynomial(degree=-3), ValueError, ["degree", ">= 1"]),
    (lambda: kernels.Polynomial(degree=2.5), TypeError, ["degree", "int"]),
    (lambda: kernels.Polynomial(c=-1.0), ValueError, ["c", "non-negative"]),
    (lambda: kernels.Multiquadric(c=0.0), ValueError, ["c", "positive"]),
    (lambda: kernels.Multiquadric(c=-1.0), ValueError, ["c", "positive"]),
    (lambda: -1.0 * kernels.Gaussian(), ValueError, ["weights", "non-negative"]),
    (lambda: kernels.ConicKernel([(-0.5, kernels.Linear())]), ValueError, ["weights", "non-negative"]),
    (lambda: kernels.ConicKernel([(np.nan, kernels.Linear())]), ValueError, ["weights"]),
    (lambda: kernels.ConicKernel([]), ValueError, ["at least one"]),
    (lambda: kernels.RelativeGaussian(n_neighbors=0), ValueError, ["n_neighbors", ">= 1"]),
    (lambda: kernels.make_kernel("laplace"), ValueError, ["unknown kernel"]),
    (lambda: ikdr.ISM(kernel=3.0).fit(X0, LABELS), TypeError, ["kernel"]),
    (lambda: ikdr.KernelSVD(kernel="rbf", gamma=-1.0).fit(X0), ValueError, ["gamma"]),
    (lambda: ikdr.KernelSVD(kernel="polynomial", degree=0).fit(X0), ValueError, ["degree"]),
    (lambda: ikdr.KernelSVD(kernel="laplace").fit(X0), ValueError, ["kernel"]),
])
def test_bad_kernel_parameters(build, exc, patterns):
    with raises(exc, *patterns):
        build()


def test_duplicate_points_with_multiquadric():
    # c = 0 is rejected up front (1/sqrt(beta + c^2) divides by zero on duplicates);
    # a small positive c with duplicate rows stays finite.
    with raises(ValueError, "c", "positive"):
        ikdr.ISM(kernel=kernels.Multiquadric(c=0.0))
    X = np.vstack([X0, X0[:5]])
    y = np.r_[LABELS, LABELS[:5]]
    model = ikdr.ISM(n_components=1, kernel=kernels.Multiquadric(c=1e-3)).fit(X, y)
    assert np.all(np.isfinite(model.components_))


def test_all_rows_identical():
    X = np.ones((10, 3))
    with raises(ValueError, "identical|constant"):
        ikdr.ISM(n_components=1).fit(X, np.repeat([0, 1], 5))
    with raises(ValueError, "identical|constant"):
        ikdr.ISMClustering(n_clusters=2).fit(X)


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_constant_feature_after_standardisation(spec):
    X = np.column_stack([X0, np.full(N, 3.0)])
    Xs = StandardScaler().fit_transform(X)  # the constant column becomes all zeros
    est = spec.fit(spec.make(), Xs)
    out = result_of(spec, est, Xs)
    assert np.all(np.isfinite(out))
    if spec.name in ("ISM", "ISMClustering", "SemiSupervisedISM", "KDAC"):
        # the zero column carries no signal and gets no weight
        assert np.abs(est.components_[-1]).max() < 1e-6


# ------------------------------------------------------------- functions
def _gamma():
    return ikdr.supervised_gamma(LABELS)[0]


FUNCTION_CASES = {
    "ism nan X": (lambda: ikdr.ism(_nan(X0), _gamma(), "gaussian", 1), ValueError, ["X", "nan"]),
    "ism 1-D X": (lambda: ikdr.ism(X0[:, 0], _gamma(), "gaussian", 1), ValueError, ["X", "2D"]),
    "ism q=0": (lambda: ikdr.ism(X0, _gamma(), "gaussian", 0), ValueError, ["n_components"]),
    "ism q>d": (lambda: ikdr.ism(X0, _gamma(), "gaussian", D + 1), ValueError, ["n_components"]),
    "ism gamma size": (lambda: ikdr.ism(X0[:-1], _gamma(), "gaussian", 1), ValueError, ["Gamma", "rows"]),
    "ism gamma type": (lambda: ikdr.ism(X0, np.ones(N), "gaussian", 1), TypeError, ["gamma"]),
    "ism W0 nan": (lambda: ikdr.ism(X0, _gamma(), "gaussian", 1, W0=np.full((D, 1), np.nan)),
                   ValueError, ["W0", "nan"]),
    "Gamma nan": (lambda: ikdr.Gamma(np.full((N, 2), np.nan)), ValueError, ["Gamma", "nan"]),
    "Gamma dense asym": (lambda: ikdr.Gamma(dense=np.triu(np.ones((3, 3)))), ValueError, ["symmetric"]),
    "supervised_gamma nan": (lambda: ikdr.supervised_gamma(np.r_[np.nan, SCORES[1:]]), ValueError, ["nan"]),
    "supervised_gamma single class": (lambda: ikdr.supervised_gamma(np.zeros(N, int)), ValueError,
                                      ["single class"]),
    "hsic nan X": (lambda: ikdr.hsic(_nan(X0), LABELS), ValueError, ["X", "nan"]),
    "hsic nan Y": (lambda: ikdr.hsic(X0, np.r_[np.nan, SCORES[1:]]), ValueError, ["nan"]),
    "hsic length": (lambda: ikdr.hsic(X0, LABELS[:-1]), ValueError, ["samples"]),
    "median_sigma nan": (lambda: ikdr.median_sigma(_inf(X0)), ValueError, ["X", "infinity"]),
    "median_sigma one row": (lambda: ikdr.median_sigma(X0[:1]), ValueError, ["sample"]),
    "kernel matrix nan": (lambda: kernels.Gaussian(1.0).matrix(_nan(X0)), ValueError, ["A", "nan"]),
    "kernel matrix B width": (lambda: kernels.Linear().matrix(X0, X0[:, :2]), ValueError, ["features"]),
    "kernel matrix empty": (lambda: kernels.Linear().matrix(X0[:0]), ValueError, ["0 sample"]),
    "kernel matrix complex": (lambda: kernels.Linear().matrix(X0 + 1j), ValueError, ["complex"]),
    "choose_n_components nan": (lambda: ikdr.choose_n_components(np.array([1.0, np.nan])),
                                ValueError, ["eigenvalues", "nan"]),
    "choose_n_components empty": (lambda: ikdr.choose_n_components(np.array([])), ValueError,
                                  ["eigenvalues", "empty"]),
    "principal_angle shape": (lambda: ikdr.principal_angle(np.eye(3), np.eye(4)), ValueError,
                              ["shape"]),
    "nystrom nan G": (lambda: ikdr.asymmetric_nystrom(np.full((6, 5), np.nan), 2, 3),
                      ValueError, ["nan"]),
    "nystrom q>min": (lambda: ikdr.asymmetric_nystrom(np.ones((6, 5)), 6, 3), ValueError,
                      ["n_landmarks|n_components"]),
    "bicluster nan": (lambda: ikdr.ksvd_bicluster(_nan(X0), 2), ValueError, ["nan"]),
    "bicluster 1 cluster": (lambda: ikdr.ksvd_bicluster(X0, 1), ValueError, [">= 2"]),
    "select_sigma_lambda nan": (lambda: ikdr.select_sigma_lambda(_nan(X0), EXISTING, 2),
                                ValueError, ["X", "nan"]),
    "select_sigma_lambda labels": (lambda: ikdr.select_sigma_lambda(X0, EXISTING[:-1], 2),
                                   ValueError, ["labels"]),
    "adjacency nan": (lambda: graph.node_embeddings(np.full((5, 5), np.nan), 2), ValueError, ["nan"]),
    "adjacency inf sparse": (lambda: graph.node_embeddings(
        sp.csr_matrix(np.diag([1.0, np.inf, 1.0, 1.0])), 2), ValueError, ["inf"]),
    "adjacency not square": (lambda: graph.node_embeddings(np.ones((4, 5)), 2), ValueError, ["square"]),
    "adjacency empty": (lambda: graph.node_embeddings(np.ones((0, 0)), 2), ValueError, ["0 sample"]),
    "reconstruction nan embedding": (lambda: graph.reconstruction_score(
        np.eye(4), np.full((4, 2), np.nan)), ValueError, ["embedding", "nan"]),
    "reconstruction rows": (lambda: graph.reconstruction_score(np.eye(4), np.ones((3, 2))),
                            ValueError, ["rows"]),
    "num_threads 0": (lambda: ikdr.set_num_threads(0), ValueError, ["n", ">= 1"]),
}


@pytest.mark.parametrize("case", list(FUNCTION_CASES))
def test_functions_reject_bad_input(case):
    call, exc, patterns = FUNCTION_CASES[case]
    with raises(exc, *patterns):
        call()


# ------------------------------------------------------------ the command line
def _write_csv(path, X, y=None):
    with open(path, "w") as fh:
        for i, row in enumerate(X):
            cells = ["nan" if np.isnan(v) else repr(float(v)) for v in row]
            if y is not None:
                cells.append(str(y[i]))
            fh.write(",".join(cells) + "\n")


CLI_CASES = {
    "nan in data": (lambda d: _write_csv(d / "x.csv", _nan(X0), LABELS),
                    ["reduce", "x.csv", "--label-column", "-1"], "nan"),
    "single class": (lambda d: _write_csv(d / "x.csv", X0, np.zeros(N, int)),
                     ["reduce", "x.csv", "--label-column", "-1"], "single class"),
    "wrong label count": (lambda d: (_write_csv(d / "x.csv", X0), np.savetxt(d / "y.csv", LABELS[:-2])),
                          ["reduce", "x.csv", "--labels", "y.csv"], "labels for"),
    "one row": (lambda d: _write_csv(d / "x.csv", X0[:1], LABELS[:1]),
                ["reduce", "x.csv", "--label-column", "-1"], "sample"),
    "empty file": (lambda d: open(d / "x.csv", "w").close(),
                   ["reduce", "x.csv", "--label-column", "-1"], "empty"),
    "text cells": (lambda d: open(d / "x.csv", "w").write("1,2,a\n3,4,b\n5,6,c\n"),
                   ["reduce", "x.csv", "--labels", "x.csv"], "non-numeric|could not convert"),
    "clusters > samples": (lambda d: _write_csv(d / "x.csv", X0[:3]),
                           ["reduce", "x.csv", "--clusters", "5"], "n_clusters"),
    "components 0": (lambda d: _write_csv(d / "x.csv", X0, LABELS),
                     ["reduce", "x.csv", "--label-column", "-1", "-k", "0"], "n_components"),
    "bad kernel degree": (lambda d: _write_csv(d / "x.csv", X0, LABELS),
                          ["reduce", "x.csv", "--label-column", "-1", "--kernel",
                           "polynomial:degree=0"], "degree"),
    "negative weight": (lambda d: _write_csv(d / "x.csv", X0, LABELS),
                        ["reduce", "x.csv", "--label-column", "-1", "--kernel=-1*gaussian"],
                        "weight|kernel"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_reduce_bad_input_exit_2(case, tmp_path, monkeypatch, capsys):
    from ikdr.cli.commands import main

    prepare, argv, pattern = CLI_CASES[case]
    monkeypatch.chdir(tmp_path)
    prepare(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv + ["--out", "out", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(pattern, err, re.IGNORECASE), err
    assert len(err.strip().splitlines()) == 1


def test_plain_turns_numpy_scalars_into_python_ones():
    from ikdr._utils.validation import plain

    assert type(plain(np.float64(0.5))) is float and plain(np.float64(0.5)) == 0.5
    assert type(plain(np.int64(3))) is int and type(plain(np.str_("a"))) is str
    assert plain([np.str_("a"), (np.int64(1),)]) == ["a", (1,)]
    assert type(plain([np.float64(1.0)])[0]) is float and plain(np.array([1, 2])) == [1, 2]
    assert plain("text") == "text" and plain(None) is None


# messages quote numpy scalars as plain values: since numpy 2 a bare repr shows
# np.str_('a') or np.int64(1), which tells a user nothing more and reads as noise
NUMPY_SCALAR_MESSAGES = {
    "single class": (lambda: ikdr.ISM().fit(np.random.default_rng(0).random((20, 3)),
                                            np.array([np.str_("airport")] * 20)),
                     "single class ('airport')"),
    "n_resamples": (lambda: ikdr.importance_intervals(
        ikdr.ISM(n_components=2).fit(X0, LABELS), X0, LABELS, n_resamples=np.int64(1)),
        "got 1"),
    "n_samples": (lambda: ikdr.datasets.make_moon_gaussians(np.int64(3)), "got 3"),
    "kernel repr": (lambda: (_ for _ in ()).throw(ValueError(repr(
        np.float64(2.0) * kernels.Gaussian(sigma=np.float64(0.5))))),
        "2.0 * Gaussian(sigma=0.5)"),
}


@pytest.mark.parametrize("case", list(NUMPY_SCALAR_MESSAGES))
def test_messages_quote_numpy_scalars_plainly(case):
    make, expected = NUMPY_SCALAR_MESSAGES[case]
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert expected in message and "np." not in message, message
