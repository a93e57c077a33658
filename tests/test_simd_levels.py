"""The same numbers, to rounding, under two SIMD levels of the core.

Each case runs in a subprocess with ``IKDR_SIMD`` set (the level is chosen when
the core loads): the baseline kernels and the best this machine runs. The
levels sum in other orders and evaluate exp with their own vector code (about
1 ulp), so they agree to the rounding bounds of :mod:`tests._rounding`, stated
per case, not bitwise. CI runs the numerical tests under
``IKDR_SIMD=baseline`` too (``.ci/run``); this test compares the two levels'
answers with each other on every run.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ikdr

from . import _rounding
from ._rounding import assert_within, unit_roundoff

ROOT = Path(__file__).resolve().parents[1]
PICKLES = Path(__file__).parent / "data" / "estimators-ikdr-0.1.0.pkl"

_CHILD = r"""
import pickle, sys, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
from tests import test_simd_levels as t
import ikdr
out = {"simd": ikdr.build_info()["simd"]}
out.update(t.knet_case())
out.update(t.sweep_case())
out.update(t.pickle_case())
sys.stdout.buffer.write(pickle.dumps(out))
"""


def _run(level):
    env = dict(os.environ)
    env.pop("IKDR_SIMD", None)
    if level is not None:
        env["IKDR_SIMD"] = level
    r = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT)], env=env, capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return pickle.loads(r.stdout)


# -- the cases, run in the children --------------------------------------------------
def _moons():
    from sklearn.datasets import make_moons
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit_transform(make_moons(200, noise=0.05, random_state=0)[0])


def knet_case():
    """A seeded KNet fit: its start's objective, its labels, its iterations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ikdr.KNetClustering(2, max_iter=3, random_state=0).fit(_moons())
    return {"knet_start": m.history_[0], "knet_labels": m.labels_, "knet_n_iter": m.n_iter_,
            "knet_sigma": m.embedding_kernel_.sigma, "knet_U": m.U_}


def _sweep_problem():
    from ikdr import supervised_gamma
    from ikdr.kernels import Gaussian

    from .test_landmark_native import _problem

    rng = np.random.default_rng(0)
    n, d, q, k, sigma = 1200, 40, 4, 3, 4.0
    y = rng.integers(0, 4, n)
    X = rng.standard_normal((n, d)) + np.outer(y, np.r_[2.0, -1.0, np.zeros(d - 2)])
    W = np.linalg.qr(rng.standard_normal((d, q)))[0]
    V = rng.standard_normal((d, k))
    return X, W, V, _problem(X, supervised_gamma(y)[0], Gaussian(sigma), m=50), sigma


def sweep_case():
    """The first sweep of a landmark pass (P, A, Q of every factor), float64."""
    from ikdr.passes.landmark_sweeps import SweepOptions, native_first_sweep

    X, W, V, p, _ = _sweep_problem()
    factors = p._factors(W)
    (P, A, Q), = native_first_sweep(X, p.structure, W, V, factors, True,
                                    SweepOptions(128, None, np.float64))
    return {"sweep_P": P, "sweep_A": A, "sweep_Q": Q[0]}


def pickle_case():
    """``transform`` of each estimator ikdr 0.1 pickled (tests/data)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open(PICKLES, "rb") as f:
            stored = pickle.load(f)
    return {"pickle_" + name: model.transform(X) for name, (model, X, _) in stored["models"].items()}


# -- the comparison --------------------------------------------------------------------
@pytest.fixture(scope="module")
def levels():
    best = _run(None)
    if best["simd"] == "baseline":
        pytest.skip("this machine runs the baseline kernels only: one SIMD level to compare")
    base = _run("baseline")
    assert base["simd"] == "baseline"
    return best, base


def test_knet_fit_alike(levels):
    """The start (U: the spectral embedding of X, LAPACK on the same kernel
    matrix to rounding) is scored on float32 points (see
    test_knet.test_first_iterate_is_spectral_clustering): its value within the
    float32 bound of Tr(Gamma K). The labels of the well-separated moons are
    the same. (The embedding after training is not compared: each round's
    ascent is steered by float32 objectives, which move it by more than one
    product's rounding.)"""
    best, base = levels
    X = _moons()
    sq = np.sum(X * X, axis=1)
    sigma = best["knet_sigma"]
    assert base["knet_sigma"] == pytest.approx(sigma, rel=_rounding.gamma(len(X)))
    K = np.exp(-(sq[:, None] + sq[None, :] - 2 * X @ X.T) / (2 * sigma ** 2))
    H = np.eye(len(X)) - 1.0 / len(X)
    G = H @ best["knet_U"] @ best["knet_U"].T @ H
    relative = _rounding.gamma(X.shape[1] + 3, np.float32) * 2 * sq.max() / (2 * sigma ** 2)
    assert abs(best["knet_start"] - base["knet_start"]) <= 2 * relative * np.sum(np.abs(G) * K)
    np.testing.assert_array_equal(best["knet_labels"], base["knet_labels"])
    assert best["knet_n_iter"] == base["knet_n_iter"]


def test_landmark_sweep_alike(levels):
    """Each sum of the first sweep runs over the n rows: within gamma_n of the
    sum of its terms' magnitudes, plus each kernel entry's own error eta, for
    exp (about 1 ulp: 2u) of an exponent t = |z - l|^2 / (2 sigma^2) whose
    three q-term products (and Z = X W, d terms) are within
    (gamma_{q+2} + 2 gamma_d) 4 R^2 / (2 sigma^2), R the largest |x_i| |W|.
    Gaussian entries are at most 1, so the magnitudes are n (P: C^T E, E of
    0/1 and proportions), sum_i |x_i| (A: X_c^T C_c) and sum_i |x_i| |V| (Q:
    C_c^T X_c V, whose XV adds gamma_d)."""
    best, base = levels
    X, W, V, p, sigma = _sweep_problem()
    n, d = X.shape
    q = W.shape[1]
    R = np.sqrt(np.max(np.sum((np.abs(X) @ np.abs(W)) ** 2, axis=1)))
    g = _rounding.gamma
    eta = 2 * unit_roundoff() + (g(q + 2) + 2 * g(d)) * 4 * R ** 2 / (2 * sigma ** 2)
    rows = (g(n) + eta)
    assert_within(best["sweep_P"], base["sweep_P"], rows * n, "P")
    assert_within(best["sweep_A"], base["sweep_A"],
                  rows * np.abs(X).sum(axis=0)[None, :, None], "A")
    assert_within(best["sweep_Q"], base["sweep_Q"],
                  (rows + g(d)) * (np.abs(X) @ np.abs(V)).sum(axis=0)[None, None, :], "Q")


def test_pickled_estimators_transform_alike(levels):
    """The 0.1 pickles' transforms: within the bound of
    test_pickle._transform_bound of each other."""
    from .test_pickle import _transform_bound

    best, base = levels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open(PICKLES, "rb") as f:
            stored = pickle.load(f)
    for name, (model, X, _) in stored["models"].items():
        assert_within(best["pickle_" + name], base["pickle_" + name],
                      _transform_bound(model, X), name)
