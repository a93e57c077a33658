"""The command line end to end through subprocess."""
import json
import subprocess
import sys

import numpy as np
import pytest

from ikdr.kernels.syntax import parse_kernel
from ikdr.kernels import ConicKernel, Gaussian, Polynomial


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ikdr", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_reduce_bundled_dataset(tmp_path):
    out = tmp_path / "wine"
    r = run("reduce", "wine", "--components", "3", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    W = np.load(out / "W.npy")
    assert W.shape == (13, 3)
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-10)
    assert np.load(out / "embedding.npy").shape == (178, 3)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_components"] == 3 and summary["hsic"] > 0 and summary["n_iter"] >= 1


@pytest.mark.parametrize("sigma", [None, "auto", "median", "2.5"])
def test_reduce_gives_the_libraries_fit(tmp_path, sigma):
    """The command line's defaults are the library's: the same W and HSIC on the
    same data and seed (the command standardises, as the example pipeline does)."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    import ikdr

    out = tmp_path / "wine"
    extra = [] if sigma is None else ["--sigma", sigma]
    r = run("reduce", "wine", "--seed", "3", "--out", str(out), "--quiet", *extra)
    assert r.returncode == 0, r.stderr
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    value = "auto" if sigma is None else (float(sigma) if sigma[0].isdigit() else sigma)
    model = ikdr.ISM(sigma=value, random_state=3).fit(X, y)
    np.testing.assert_array_equal(np.load(out / "W.npy"), model.components_)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["hsic"] == model.hsic_


def test_reduce_csv_with_header_and_label_column(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = (X[:, 0] > 0).astype(int)
    path = tmp_path / "data.csv"
    with open(path, "w") as fh:
        fh.write("a,b,c,d,cls\n")
        for row, lab in zip(X, y):
            fh.write(",".join(f"{v:.6f}" for v in row) + f",{lab}\n")
    out = tmp_path / "out"
    r = run("reduce", str(path), "--label-column", "cls", "--kernel",
            "0.5*gaussian+polynomial:degree=2", "-k", "1", "--out", str(out), "--format", ".csv")
    assert r.returncode == 0, r.stderr
    W = np.loadtxt(out / "W.csv", delimiter=",")
    assert W.shape == (4,) and abs(abs(W[0]) - 1) < 0.1  # the informative feature
    assert json.loads(r.stdout)["n_samples"] == 60


@pytest.mark.parametrize("args, message", [
    (["reduce", "missing.csv", "--labels", "y.csv", "--out", "o"], "no such file"),
    (["reduce", "wine", "--kernel", "laplace", "--out", "o"], "unknown kernel"),
    (["reduce", "wine", "--sigma", "-1", "--out", "o"], "--sigma must be positive"),
    (["reduce", "wine", "--components", "99", "--out", "o"], "q > d"),
    (["reduce", "wine", "--threads", "0", "--out", "o"], "--threads"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, message):
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_bad_option_exits_2(tmp_path):
    r = run("reduce", "wine", "--no-such-option", cwd=tmp_path)
    assert r.returncode == 2


def test_bad_csv_exits_2(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("1,2\n3,x\n")
    r = run("reduce", str(p), "--labels", str(p), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_info():
    r = run("info")
    assert r.returncode == 0 and "SIMD" in r.stdout and "threading" in r.stdout


def test_version():
    """``ikdr --version`` prints the package version and exits 0, as ``ikdr info``'s first line."""
    import ikdr

    r = run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ikdr {ikdr.__version__}"


def test_kernel_syntax():
    assert parse_kernel("gaussian") == Gaussian()
    assert parse_kernel("polynomial:degree=3,c=1") == Polynomial(degree=3, c=1)
    k = parse_kernel("0.5*gaussian:sigma=2+2*polynomial:degree=3")
    assert isinstance(k, ConicKernel)
    (w1, k1), (w2, k2) = k.members()
    assert (w1, k1, w2, k2) == (0.5, Gaussian(sigma=2), 2.0, Polynomial(degree=3))
    for bad in ["", "gauss", "polynomial:degree", "polynomial:degree=x", "-1*gaussian"]:
        with pytest.raises(ValueError):
            parse_kernel(bad)


def test_reduce_unsupervised_clusters(tmp_path):
    from sklearn.datasets import load_wine

    from ikdr.metrics import nmi

    out = tmp_path / "clusters"
    r = run("reduce", "wine", "--clusters", "3", "--components", "3", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    labels = np.load(out / "labels.npy")
    assert labels.shape == (178,) and set(np.unique(labels)) <= {0, 1, 2}
    assert nmi(load_wine().target, labels) > 0.8
    assert json.loads((out / "summary.json").read_text())["n_clusters"] == 3


# -- exit codes: input errors (2) versus unexpected failures inside the library (1) ----------

def _failing_fit(exc):
    def fit(self, *args, **kwargs):
        raise exc
    return fit


@pytest.mark.parametrize("exc", [
    RuntimeError("boom"),
    ZeroDivisionError("float division by zero"),
    np.linalg.LinAlgError("eigh did not converge"),   # a ValueError, but not an input check
    ValueError("operands could not be broadcast"),    # raised outside ikdr's checks
    MemoryError(),                                      # the allocator, not the memory budget
])
def test_unexpected_failure_exits_1_with_one_line(tmp_path, monkeypatch, capsys, exc):
    import ikdr
    from ikdr.cli.commands import main

    monkeypatch.setattr(ikdr.ISM, "fit", _failing_fit(exc))
    code = main(["reduce", "wine", "-k", "2", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith(f"ikdr reduce: unexpected failure: {type(exc).__name__}")
    assert "--verbose shows the traceback" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unexpected_failure_verbose_shows_the_traceback(tmp_path, monkeypatch, capsys):
    import ikdr
    from ikdr.cli.commands import main

    monkeypatch.setattr(ikdr.ISM, "fit", _failing_fit(RuntimeError("boom")))
    code = main(["reduce", "wine", "-k", "2", "--out", str(tmp_path / "o"), "--verbose"])
    err = capsys.readouterr().err
    assert code == 1
    assert "unexpected failure: RuntimeError: boom" in err
    assert "Traceback (most recent call last)" in err
    assert "raise exc" in err


def test_input_error_classification():
    from sklearn.utils import check_array
    from sklearn.utils._param_validation import InvalidParameterError

    from ikdr import ISM
    from ikdr.cli.commands import is_input_error
    from ikdr._utils.validation import check_positive

    def caught(fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            return exc
        raise AssertionError("no exception")

    # ikdr's and scikit-learn's own checks: input errors
    assert is_input_error(caught(check_positive, -1.0, "sigma"))
    assert is_input_error(caught(check_array, [[1.0, np.nan]]))
    bad_param = caught(ISM(n_components="two").fit, np.eye(3), [0, 1, 1])
    assert isinstance(bad_param, (InvalidParameterError, TypeError))
    assert is_input_error(bad_param)
    # the same types raised by NumPy (compiled code or its Python layer): failures
    assert not is_input_error(caught(np.matmul, np.ones((2, 3)), np.ones((2, 3))))
    assert not is_input_error(caught(np.linalg.cholesky, -np.eye(2)))
    assert not is_input_error(caught(lambda: 1 / 0))
    assert not is_input_error(ValueError("never raised"))
