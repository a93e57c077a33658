"""Every fitted estimator pickles (and joblib-dumps) and unpickles to identical results."""
import io
import pickle

import joblib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine, make_blobs
from sklearn.preprocessing import StandardScaler

import ikdr

from ._rounding import assert_within, gamma, mlp_bound, product_bound


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _graph():
    A = sp.random(60, 60, density=0.1, random_state=np.random.default_rng(0), format="csr")
    A.data[:] = 1.0
    return A


def _fitted(name, X, y):
    """(fitted model, data to call it on) for every public estimator."""
    if name == "ISM":
        return ikdr.ISM(n_components=3).fit(X, y), X
    Xb, yb = make_blobs(90, 3, centers=3, random_state=0)
    Xb = StandardScaler().fit_transform(Xb)
    if name == "ISMClustering":
        return ikdr.ISMClustering(3, n_components=2, max_iter=3, random_state=0).fit(Xb), Xb
    if name == "SemiSupervisedISM":
        return ikdr.SemiSupervisedISM(3, n_components=2, mu=1e-3, max_iter=3,
                                      random_state=0).fit(Xb, yb), Xb
    if name == "KDAC":
        return ikdr.KDAC(2, n_components=2, max_iter=3, random_state=0).fit(Xb, yb), Xb
    if name == "KNetClustering":
        return ikdr.KNetClustering(3, max_iter=3, random_state=0).fit(Xb), Xb
    if name == "KernelDependenceNetwork":
        return ikdr.KernelDependenceNetwork(max_layers=2, n_fourier=50,
                                            random_state=0).fit(X, y), X
    if name == "KernelSVD-dense":
        A = np.random.default_rng(0).random((40, 40))
        return ikdr.KernelSVD(4, kernel="sne", center=True, random_state=0).fit(A), A
    if name == "KernelSVD-sparse":
        A = _graph()
        return ikdr.KernelSVD(4, kernel="sne", solver="arpack", random_state=0).fit(A), A
    if name == "KernelSVD-nystrom":
        A = _graph()
        return ikdr.KernelSVD(4, kernel="rbf", solver="nystrom", n_landmarks=30,
                              random_state=0).fit(A), A
    raise KeyError(name)


ESTIMATORS = ["ISM", "ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering",
              "KernelDependenceNetwork", "KernelSVD-dense", "KernelSVD-sparse",
              "KernelSVD-nystrom"]


def test_every_public_estimator_is_covered():
    public = {name for name in ikdr.__all__ if isinstance(getattr(ikdr, name), type)
              and hasattr(getattr(ikdr, name), "fit")}
    assert public == {name.split("-")[0] for name in ESTIMATORS}


def _assert_same(a, b):
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif sp.issparse(a):
        assert (a != b).nnz == 0
    elif isinstance(a, (list, tuple)) and len(a) == len(b):
        for u, v in zip(a, b):
            _assert_same(u, v)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _assert_same(a[key], b[key])
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    elif isinstance(a, (int, float, str, bool, np.generic)) or a is None:
        assert a == b


def _outputs(model, X):
    out = {}
    for method in ("transform", "predict", "decision_function", "transform_columns"):
        if hasattr(model, method):
            arg = X.T.tocsr() if method == "transform_columns" and sp.issparse(X) else \
                (X.T if method == "transform_columns" else X)
            out[method] = getattr(model, method)(arg)
    return out


@pytest.mark.parametrize("name", ESTIMATORS)
def test_pickle_round_trip(name, wine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter is kept small on purpose
        model, X = _fitted(name, *wine)
    expected = _outputs(model, X)
    assert expected
    for clone in (pickle.loads(pickle.dumps(model)), _joblib_round_trip(model)):
        assert type(clone) is type(model) and clone.get_params() == model.get_params()
        got = _outputs(clone, X)
        for method, value in expected.items():
            np.testing.assert_array_equal(got[method], value, err_msg=method)
        for attr in [a for a in vars(model) if a.endswith("_") and not a.startswith("_")]:
            _assert_same(getattr(model, attr), getattr(clone, attr))
        if hasattr(model, "labels_"):
            np.testing.assert_array_equal(clone.labels_, model.labels_)


def _joblib_round_trip(model):
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


def test_estimators_pickled_by_ikdr_0_1_load_and_transform_alike():
    """tests/data holds ISM, ISMClustering, KDAC, KNetClustering and KernelSVD fitted and
    pickled by ikdr 0.1.0 (module paths such as ``ikdr._ism``), with the data and what
    ``transform`` gave then; they load here and give the same numbers to rounding
    (another machine's BLAS kernel and SIMD level sum in another order:
    :func:`_transform_bound`)."""
    from pathlib import Path

    path = Path(__file__).parent / "data" / "estimators-ikdr-0.1.0.pkl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # scikit-learn's version notes, if any
        with open(path, "rb") as f:
            stored = pickle.load(f)
    assert stored["version"] == "0.1.0"
    assert sorted(stored["models"]) == ["ISM", "ISMClustering", "KDAC", "KNetClustering",
                                        "KernelSVD-dense"]
    for name, (model, X, expected) in stored["models"].items():
        assert type(model).__module__.startswith("ikdr."), name
        assert_within(model.transform(X), expected, _transform_bound(model, X), err_msg=name)
        # the parameters added since load with 0.1's behaviour: get_params and
        # clone work, and ISM keeps every feature as it did
        params = model.get_params()
        assert set(params) == set(type(model)._get_param_names()), name
        from sklearn.base import clone
        clone(model)
    assert stored["models"]["ISM"][0].support == "all"


def _transform_bound(model, X):
    """Entry-wise rounding bound of ``model.transform(X)`` in any summation order.

    ISM, ISMClustering, KDAC: ``X W``, d-term inner products. KNet: its MLP
    (:func:`tests._rounding.mlp_bound`), times its scale. KernelSVD: the kernel
    rows G against the training rows, centred, times V. Each SNE entry is
    ``exp(-t)`` normalised over the n training rows; t, a squared distance over
    d features (the expansion's 3 products), is within ``gamma(3 d + 3) |t|``,
    so each entry within that times the row's largest t, plus ``gamma(n + 2)``
    from the normalisation; the centring adds ``gamma(2)`` of |G| and its means."""
    if isinstance(model, ikdr.KNetClustering):
        Xs = np.ascontiguousarray(X[:, model.support_])
        out = model.encoder_.forward(Xs)
        return mlp_bound(model.encoder_, Xs) * model.scale_ + gamma(1) * np.abs(out * model.scale_)
    if isinstance(model, ikdr.KernelSVD):
        base = model._base()
        G = base.new_rows(np.asarray(X, dtype=np.float64))
        t = -np.log(np.maximum(G / G.max(axis=1, keepdims=True), np.finfo(float).tiny))
        entry = (gamma(3 * X.shape[1] + 3) * t.max(axis=1, keepdims=True) + gamma(X.shape[0] + 2)) * G
        if base is not model._blocks:       # centred: G minus its training column means
            mean = np.abs(model._blocks.col_mean)[None, :]
            entry = entry + entry.mean(axis=0, keepdims=True) + gamma(2) * (np.abs(G) + mean)
            G = G - model._blocks.col_mean[None, :]
        return product_bound(G, model.right_vectors_, A_error=entry)
    return product_bound(X, model.components_)


def test_an_unknown_name_of_ikdr_0_1_fails_naming_the_version():
    import importlib

    old = importlib.import_module("ikdr._ksvd_blocks")
    with pytest.raises(AttributeError, match=r"ikdr 0\.1.*refit"):
        old.NoSuchBlocks
