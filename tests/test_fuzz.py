"""Property-based fuzzing of the C++ entry points and the estimators.

Random shapes (including empty), dtypes, memory layouts and values (NaN, inf,
subnormals, +-1e300, huge and tiny bandwidths): the call must not crash the
interpreter and must either return a valid (right shape, finite where the
input allows) result or raise a clean ValueError / TypeError (MemoryError for
impossible sizes).

CI runs a short, derandomised profile (well under two minutes). A long run::

    HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py -q -p no:randomly \
        --hypothesis-show-statistics

``IKDR_FUZZ_EXAMPLES=N`` overrides the number of examples per test in
either profile. ``IKDR_FUZZ_REPORT=path`` appends the count of examples run.
"""
from __future__ import annotations

import os
import warnings
from collections import Counter

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed: "
                                                    "pip install '.[test]'")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import ikdr  # noqa: E402
from ikdr import _native  # noqa: E402
from ikdr._native import GammaArrays, KernelTerm, TermKind  # noqa: E402

_PROFILES = {"ci": (40, 12), "long": (2000, 300)}  # (core examples, estimator examples)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_CORE_N, _EST_N = _PROFILES.get(_PROFILE, _PROFILES["ci"])
if os.environ.get("IKDR_FUZZ_EXAMPLES"):
    _CORE_N = _EST_N = int(os.environ["IKDR_FUZZ_EXAMPLES"])


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=_PROFILE == "ci",
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


CORE = _settings(_CORE_N)
ESTIMATOR = _settings(_EST_N)
RAN = Counter()
CLEAN = (ValueError, TypeError, MemoryError)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    total = sum(RAN.values())
    line = f"fuzz examples run ({_PROFILE}): {total} " + str(dict(sorted(RAN.items())))
    print("\n" + line)
    if os.environ.get("IKDR_FUZZ_REPORT"):
        with open(os.environ["IKDR_FUZZ_REPORT"], "a") as fh:
            fh.write(line + "\n")


# ------------------------------------------------------------------ strategies
EXTREMES = [0.0, -0.0, 1.0, -1.0, 1e-310, -1e-310, 1e-300, 1e300, -1e300, 1.7e308,
            np.nan, np.inf, -np.inf]
moderate = st.floats(-1e3, 1e3, allow_nan=False, width=64)
wild = st.one_of(moderate, st.sampled_from(EXTREMES), st.floats(width=64))


@st.composite
def arrays(draw, *, min_rows=0, max_rows=12, min_cols=0, max_cols=5, values=wild, ncols=None):
    n = draw(st.integers(min_rows, max_rows))
    d = ncols if ncols is not None else draw(st.integers(min_cols, max_cols))
    A = draw(hnp.arrays(np.float64, (n, d), elements=values))
    return A


@st.composite
def layouts(draw, A):
    """The same values as float64/float32/int/bool, C/Fortran/strided."""
    kind = draw(st.sampled_from(["C", "F", "strided", "float32", "int", "bool", "list"]))
    if kind == "F":
        return np.asfortranarray(A)
    if kind == "strided":
        return np.repeat(A, 2, axis=1)[:, ::2] if A.size else A
    if kind == "float32":
        with np.errstate(over="ignore"):
            return A.astype(np.float32)
    if kind == "int":
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(A, nan=0, posinf=1e6, neginf=-1e6).clip(-1e6, 1e6).astype(np.int64)
    if kind == "bool":
        return A > 0
    return A.tolist() if kind == "list" else A


def term_strategy():
    # a kind outside the enum (an int, a string) must be refused as a TypeError
    kind = st.one_of(st.sampled_from(list(TermKind.__members__.values())),
                     st.sampled_from([7, "gaussian"]))
    return st.builds(KernelTerm, kind,
                     st.one_of(st.floats(0, 3), st.sampled_from([np.nan, np.inf, -1.0])),
                     st.one_of(st.floats(1e-3, 1e3), st.sampled_from([0.0, -1.0, np.nan, 1e-200])),
                     st.one_of(st.floats(0, 5), st.sampled_from([np.nan, -2.0])),
                     st.integers(-1, 40))


def _core_call(fn, *args, **kwargs):
    """Call a core function; a clean exception is fine, anything else fails."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    except CLEAN:
        return None


# ------------------------------------------------------------------ C++ entry points
@CORE
@given(A=arrays(), B=arrays(), terms=st.lists(term_strategy(), min_size=0, max_size=3),
       f32=st.booleans(), threads=st.integers(-2, 4))
def test_core_kernel_matrix(A, B, terms, f32, threads):
    RAN["kernel_matrix"] += 1
    dtype = np.float32 if f32 else np.float64
    with np.errstate(over="ignore"):
        A, B = A.astype(dtype), B.astype(dtype)
    out = _core_call(_native.kernel_matrix, A, B, terms, n_threads=threads)
    if out is not None:
        assert out.shape == (A.shape[0], B.shape[0]) and out.dtype == dtype


@CORE
@given(A=arrays(min_rows=1, max_rows=10, min_cols=1, values=moderate), data=st.data())
def test_core_kernel_matrix_matches_numpy(A, data):
    RAN["kernel_matrix exact"] += 1
    B = data.draw(arrays(min_rows=1, max_rows=10, values=moderate, ncols=A.shape[1]))
    sigma = data.draw(st.floats(0.5, 1e3))
    degree = data.draw(st.integers(1, 4))
    terms = [KernelTerm(TermKind.linear, 0.5), KernelTerm(TermKind.gaussian, 1.0, sigma=sigma),
             KernelTerm(TermKind.polynomial, 0.25, c=1.0, degree=degree)]
    out = _native.kernel_matrix(A, B, terms, n_threads=data.draw(st.integers(1, 3)))
    dot = A @ B.T
    d2 = np.maximum(((A[:, None, :] - B[None, :, :]) ** 2).sum(-1), 0)
    ref = 0.5 * dot + np.exp(-d2 / (2 * sigma ** 2)) + 0.25 * (dot + 1.0) ** degree
    scale = np.abs(dot).max() + 1.0
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9 * scale ** degree)


@CORE
@given(Z=arrays(max_rows=10), mode=st.booleans(), terms=st.lists(term_strategy(), max_size=2),
       gamma=st.sampled_from(["none", "dense", "factor", "factor+scale", "bad"]),
       rhs_cols=st.integers(-1, 3), f32=st.booleans(), data=st.data())
def test_core_fused_product(Z, mode, terms, gamma, rhs_cols, f32, data):
    RAN["fused_product"] += 1
    dtype = np.float32 if f32 else np.float64
    with np.errstate(over="ignore"):
        Z = Z.astype(dtype)
    n = Z.shape[0]
    kwargs = {}
    if gamma == "dense":
        G = data.draw(arrays(min_rows=n, max_rows=n, ncols=n))
        kwargs["dense"] = (G + G.T).astype(dtype)
    elif gamma.startswith("factor"):
        kwargs["factor"] = data.draw(arrays(min_rows=n, max_rows=n, min_cols=0, max_cols=3)
                                     ).astype(dtype)
        if gamma == "factor+scale":
            kwargs["scale"] = np.ones(max(0, kwargs["factor"].shape[1] + data.draw(
                st.integers(-1, 1))), dtype=dtype)
    elif gamma == "bad":
        kwargs["dense"] = np.ones((n + 1, n), dtype=dtype)
    rhs = None
    if rhs_cols >= 0:
        rhs = data.draw(arrays(min_rows=n, max_rows=n + data.draw(st.integers(0, 1)),
                               ncols=rhs_cols)).astype(dtype)
    out = _core_call(_native.fused_product, Z, terms, gamma=GammaArrays(**kwargs), gradient=mode,
                     rhs=rhs, n_threads=data.draw(st.integers(0, 3)))
    if out is not None:
        y, sums = out
        assert sums.shape == (n,)
        if rhs_cols >= 0:
            assert y.shape == (n, rhs_cols)


@CORE
@given(A=arrays(max_rows=8), B=arrays(max_rows=8), sigma=st.one_of(st.floats(-1, 1e3),
                                                                  st.sampled_from([np.nan, np.inf])),
       data=st.data())
def test_core_gaussian_normalisers_and_shifted(A, B, sigma, data):
    RAN["gaussian_normalisers"] += 1
    out = _core_call(_native.sne_row_normalisers, A, B, sigma, n_threads=2)
    shift = np.zeros(A.shape[0] + data.draw(st.integers(-1, 1)).__abs__())
    _core_call(_native.sne_matrix, A, B, sigma, shift, np.ones_like(shift), n_threads=2)
    if out is not None:
        assert out[0].shape == (A.shape[0],) and out[1].shape == (A.shape[0],)


@CORE
@given(n=st.integers(0, 8), m=st.integers(0, 8), data=st.data())
def test_core_lowrank_plus_sparse(n, m, data):
    RAN["lowrank_plus_sparse"] += 1
    nnz = data.draw(st.integers(0, 6))
    indptr = np.sort(data.draw(hnp.arrays(np.int64, n + 1 + data.draw(st.integers(-1, 1)),
                                          elements=st.integers(-1, nnz + 1))))
    indices = data.draw(hnp.arrays(np.int64, nnz, elements=st.integers(-2, m + 2)))
    vals = data.draw(hnp.arrays(np.float64, nnz + data.draw(st.integers(-1, 1)).__abs__(),
                                elements=wild))
    vecs = [data.draw(hnp.arrays(np.float64, k, elements=wild)) for k in (n, n, m)]
    out = _core_call(_native.lowrank_plus_sparse, *vecs, indptr, indices, vals, n_threads=2)
    if out is not None:
        assert out.shape == (n, m)


@CORE
@given(X=arrays(), bins=st.integers(-1, 70), r=st.integers(0, 3), data=st.data())
def test_core_feature_bin_sums(X, bins, r, data):
    RAN["feature_bin_sums"] += 1
    d = X.shape[1]
    lo = data.draw(hnp.arrays(np.float64, d + data.draw(st.integers(-1, 1)).__abs__(),
                              elements=wild))
    width = data.draw(hnp.arrays(np.float64, d, elements=wild))
    weights = data.draw(hnp.arrays(np.float64, (max(0, X.shape[0] - data.draw(st.integers(0, 1))), r),
                                   elements=wild))
    out = _core_call(_native.feature_bin_sums, X, lo, width, bins, weights, n_threads=2)
    if out is not None:
        counts, sums = out
        assert counts.shape == (d, bins) and sums.shape == (d, bins, r)
        # every row lands in exactly one bin of every feature
        assert np.all(counts.sum(axis=1) == X.shape[0])


@CORE
@given(d=st.integers(0, 12), q=st.integers(-1, 13), data=st.data())
def test_core_top_eigenpairs(d, q, data):
    RAN["top_eigenpairs"] += 1
    A = data.draw(hnp.arrays(np.float64, (d, d), elements=st.one_of(moderate,
                                                                    st.sampled_from(EXTREMES))))
    A = A + A.T
    v0 = None
    if data.draw(st.booleans()) and 0 <= q:
        v0 = data.draw(hnp.arrays(np.float64, (d, max(q, 0)), elements=moderate))
    out = _core_call(_native.top_eigenpairs, A, q, v0, max_iter=data.draw(st.integers(-1, 30)),
                     tol=data.draw(st.sampled_from([1e-10, 0.0, -1.0, np.nan])),
                     oversample=data.draw(st.integers(-2, 9)))
    if out is not None:
        vals, vecs, iters, converged, residual = out
        assert vals.shape == (q,) and vecs.shape == (d, q)
        if np.all(np.isfinite(A)) and converged and np.abs(A).max() < 1e6:
            ref = np.linalg.eigvalsh(A)[::-1][:q]
            np.testing.assert_allclose(vals, ref, atol=1e-6 * (1 + np.abs(ref).max()))


# ------------------------------------------------------------------ estimators
def _fit_estimator(name, X, seed):
    n = np.shape(X)[0] if np.ndim(X) else 0
    labels = np.arange(n) % 2
    if name == "ISM":
        return ikdr.ISM(n_components=1, max_iter=5).fit(X, labels).transform(X)
    if name == "ISMClustering":
        return ikdr.ISMClustering(n_clusters=2, n_components=1, max_iter=2,
                                  random_state=seed).fit(X).transform(X)
    if name == "KDAC":
        return ikdr.KDAC(n_clusters=2, n_components=1, max_iter=2,
                         random_state=seed).fit(X, (np.arange(n) // 2) % 2).transform(X)
    if name == "KNetClustering":
        return ikdr.KNetClustering(n_clusters=2, hidden_layer_sizes=(4,), max_iter=1,
                                   random_state=seed).fit(X).embedding_
    if name == "KernelDependenceNetwork":
        return ikdr.KernelDependenceNetwork(max_layers=1, n_fourier=10,
                                            random_state=seed).fit(X, labels).transform(X)
    if name == "KernelSVD":
        return ikdr.KernelSVD(n_components=1, compat="pca", random_state=seed).fit(X).row_embedding_
    if name == "hsic":
        return np.array([ikdr.hsic(X, labels)])
    raise AssertionError(name)


ESTIMATORS = ["ISM", "ISMClustering", "KDAC", "KNetClustering", "KernelDependenceNetwork",
              "KernelSVD", "hsic"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimators_fuzz(name):
    @ESTIMATOR
    @given(A=arrays(min_rows=0, max_rows=14, min_cols=0, max_cols=4,
                    values=st.one_of(moderate, moderate, moderate, st.sampled_from(EXTREMES))),
           data=st.data())
    def run(A, data):
        RAN[name] += 1
        X = data.draw(layouts(A))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = _fit_estimator(name, X, data.draw(st.integers(0, 3)))
            except CLEAN:
                return
        out = np.asarray(out)
        assert out.shape[0] == (1 if name == "hsic" else len(X))
        assert np.all(np.isfinite(out)), f"{name} returned non-finite values without an error"

    run()
