"""The altcluster, ksvd and knet subcommands end to end through subprocess."""
import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.cli.commands import main
from ikdr.metrics import nmi


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ikdr", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def write_csv(path, X, header=None):
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(header) + "\n")
        for row in np.atleast_2d(X):
            fh.write(",".join(repr(float(v)) if isinstance(v, float) else str(v) for v in row)
                     + "\n")


@pytest.fixture(scope="module")
def moon(tmp_path_factory):
    """KDAC's Moon data (200 x 4): existing = the moons, alternative = the Gaussians."""
    d = tmp_path_factory.mktemp("moon")
    X, y_original, y_alternative = ikdr.datasets.make_moon_gaussians(200, random_state=0)
    np.save(d / "X.npy", X)
    write_csv(d / "existing.csv", y_original[:, None].astype(int))
    return d, X, y_original, y_alternative


def test_altcluster_finds_the_alternative_view(moon, tmp_path):
    d, X, y_original, y_alternative = moon
    out = tmp_path / "alt"
    r = run("altcluster", d / "X.npy", "--existing", d / "existing.csv", "--clusters", 2,
            "--components", 3, "--sigma", 0.1, "--lam", 1, "--out", out)
    assert r.returncode == 0, r.stderr
    labels = np.load(out / "labels.npy")
    W = np.load(out / "W.npy")
    assert labels.shape == (200,) and set(np.unique(labels)) <= {0, 1}
    assert W.shape == (4, 3)
    np.testing.assert_allclose(W.T @ W, np.eye(3), atol=1e-10)
    Xs = StandardScaler().fit_transform(X)
    np.testing.assert_allclose(np.load(out / "embedding.npy"), Xs @ W, atol=1e-12)
    assert nmi(y_alternative, labels) > 0.95 and nmi(y_original, labels) < 0.05
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(r.stdout)
    assert summary["novelty"] == pytest.approx(nmi(y_original, labels))
    assert summary["n_components"] == 3 and summary["n_iter"] >= 1
    assert summary["cost"] == pytest.approx(-(summary["quality"]
                                              - summary["parameters"]["lam"]
                                              * summary["alternativeness"]))
    # the command computes exactly what the Python API computes
    model = ikdr.KDAC(2, n_components=3, sigma=0.1, lam=1.0, random_state=0).fit(Xs, y_original)
    np.testing.assert_array_equal(model.labels_, labels)
    np.testing.assert_allclose(model.components_, W, atol=1e-12)


def test_altcluster_label_column_csv_output_and_two_existing(moon, tmp_path):
    d, X, y_original, y_alternative = moon
    path = tmp_path / "moon.csv"
    write_csv(path, np.column_stack([X, y_original]), header=["a", "b", "c", "d", "moon"])
    out = tmp_path / "alt"
    r = run("altcluster", path, "--label-column", "moon", "--clusters", 2, "-k", 3,
            "--sigma", 0.1, "--format", ".csv", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    labels = np.loadtxt(out / "labels.csv", dtype=int)
    assert nmi(y_alternative, labels) > 0.95
    assert np.loadtxt(out / "W.csv", delimiter=",").shape == (4, 3)
    # a second existing clustering is penalised too
    np.save(tmp_path / "alt.npy", labels)
    r = run("altcluster", d / "X.npy", "--existing", d / "existing.csv", "--existing",
            tmp_path / "alt.npy", "--clusters", 2, "-k", 3, "--sigma", 0.1, "--out",
            tmp_path / "third", "--quiet")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "third" / "summary.json").read_text())
    assert len(summary["parameters"]["existing"]) == 2


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    d = tmp_path_factory.mktemp("graph")
    A = sp.random(80, 80, density=0.08, random_state=np.random.default_rng(0), format="csr")
    A.data[:] = 1.0
    sp.save_npz(d / "A.npz", A)
    dense = np.random.default_rng(1).random((40, 40))
    write_csv(d / "dense.csv", dense)
    return d, A, dense


@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_ksvd(graph, tmp_path, kind):
    d, A, dense = graph
    data, matrix = (d / "A.npz", A) if kind == "sparse" else (d / "dense.csv", dense)
    out = tmp_path / "ksvd"
    r = run("ksvd", data, "--kernel", "sne", "--components", 5, "--solver", "dense",
            "--out", out)
    assert r.returncode == 0, r.stderr
    rows, cols = np.load(out / "row_embedding.npy"), np.load(out / "column_embedding.npy")
    s = np.load(out / "singular_values.npy")
    n = matrix.shape[0]
    assert rows.shape == (n, 5) and cols.shape == (n, 5) and s.shape == (5,)
    assert np.all(np.diff(s) <= 0) and s[-1] > 0
    model = ikdr.KernelSVD(5, kernel="sne", solver="dense", random_state=0).fit(matrix)
    np.testing.assert_allclose(s, model.singular_values_, rtol=1e-12)
    np.testing.assert_allclose(rows, model.row_embedding_, atol=1e-12)
    np.testing.assert_allclose(cols, model.column_embedding_, atol=1e-12)
    # U Lambda with orthonormal U: the columns are orthogonal with norms s
    np.testing.assert_allclose(rows.T @ rows, np.diag(s ** 2), atol=1e-10)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sparse"] is (kind == "sparse") and summary["solver"] == "dense"
    assert summary["shape"] == [n, n] and summary["gamma"] == pytest.approx(model.gamma_)
    if kind == "sparse":
        assert summary["nnz"] == A.nnz


def test_ksvd_nystrom_and_rectangular(graph, tmp_path):
    d, A, _ = graph
    r = run("ksvd", d / "A.npz", "--solver", "nystrom", "--landmarks", 40, "-k", 4,
            "--out", tmp_path / "ny", "--quiet")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "ny" / "summary.json").read_text())
    assert summary["landmarks"] == [40, 40] and summary["solver"] == "nystrom"
    r = run("ksvd", "iris", "--compat", "pca", "--center", "-k", 3, "--out", tmp_path / "iris",
            "--quiet")
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "iris" / "row_embedding.npy").shape == (150, 3)
    assert np.load(tmp_path / "iris" / "column_embedding.npy").shape == (4, 3)


def test_knet(tmp_path):
    X, y = make_blobs(150, 4, centers=3, random_state=0)
    path = tmp_path / "blobs.csv"
    write_csv(path, np.column_stack([X, y]))
    out = tmp_path / "knet"
    r = run("knet", path, "--label-column", -1, "--clusters", 3, "--max-iter", 10,
            "--hidden", "10,10", "--out", out, "--verbose")
    assert r.returncode == 0, r.stderr
    labels, emb = np.load(out / "labels.npy"), np.load(out / "embedding.npy")
    assert labels.shape == (150,) and set(np.unique(labels)) <= {0, 1, 2}
    assert emb.shape == (150, 4) and np.all(np.isfinite(emb))
    assert nmi(y, labels) > 0.9
    summary = json.loads(r.stdout)  # --verbose logs go to stderr, the summary stays JSON
    assert summary["nmi_to_given_labels"] == pytest.approx(nmi(y, labels))
    assert 1 <= summary["n_iter"] <= 10 and summary["parameters"]["hidden"] == "10,10"
    iteration_lines = [line for line in r.stderr.splitlines() if "[KNetClustering] iter" in line]
    assert len(iteration_lines) == summary["n_iter"]


def test_verbose_logs_iterations_on_stderr(tmp_path):
    r = run("reduce", "wine", "-k", 2, "--out", tmp_path / "o", "--verbose")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    lines = [line for line in r.stderr.splitlines() if line.startswith("[ISM] iter")]
    assert len(lines) == summary["n_iter"] + 1  # the start, then one per iteration
    assert "ikdr: loaded wine: 178 samples x 13 features" in r.stderr
    quiet = run("reduce", "wine", "-k", 2, "--out", tmp_path / "q")
    assert quiet.stderr == ""


@pytest.mark.parametrize("args, message", [
    (["altcluster", "wine", "--out", "o"], "required: --clusters"),
    (["altcluster", "wine", "--clusters", "two", "--out", "o"], "invalid int value"),
    (["altcluster", "wine", "--clusters", "1", "--out", "o"], "'n_clusters' parameter of KDAC must be an int in the range [2, inf)"),
    (["altcluster", "wine", "--clusters", "2", "--lam", "-1", "--out", "o"], "--lam"),
    (["altcluster", "wine", "--clusters", "2", "--existing", "nothere.csv", "--out", "o"],
     "no such label file"),
    (["altcluster", "X.npy", "--clusters", "2", "--out", "o"], "needs --existing"),
    (["altcluster", "X.npy", "--clusters", "2", "--existing", "short.csv", "--out", "o"],
     "3 labels for 30 samples"),
    (["altcluster", "X.npy", "--clusters", "2", "--existing", "X.npy", "--out", "o"],
     "90 labels for 30 samples"),
    (["altcluster", "A.npz", "--clusters", "2", "--out", "o"], "sparse input"),
    (["ksvd", "missing.npz", "--out", "o"], "no such file"),
    (["ksvd", "X.npy", "--out", "o"], "pass --compat pinv, pca or random"),
    (["ksvd", "A.npz", "--kernel", "laplace", "--out", "o"], "invalid choice"),
    (["ksvd", "A.npz", "-k", "100", "--out", "o"], "larger than min(n, m)"),
    (["ksvd", "A.npz", "--gamma", "0", "--out", "o"], "--gamma must be positive"),
    (["ksvd", "A.npz", "--landmarks", "7", "--out", "o"], "--landmarks needs --solver nystrom"),
    (["ksvd", "A.npz", "--solver", "nystrom", "--landmarks", "x", "--out", "o"], "--landmarks"),
    (["ksvd", "binary.csv", "--out", "o"], "not a text (CSV) file"),
    (["knet", "wine", "--out", "o"], "required: --clusters"),
    (["knet", "wine", "--clusters", "3", "--hidden", "4,x", "--out", "o"], "--hidden"),
    (["knet", "wine", "--clusters", "3", "--update", "newton", "--out", "o"], "invalid choice"),
    (["knet", "wine", "--clusters", "3", "--sigma", "0", "--out", "o"], "--sigma"),
    (["knet", "wine", "--clusters", "3", "--learning-rate", "-1", "--out", "o"],
     "--learning-rate"),
    (["knet", "wine", "--clusters", "300", "--out", "o"], "n_clusters=300"),
    (["knet", "nan.csv", "--clusters", "2", "--out", "o"], "NaN"),
    (["knet", "wine", "--clusters", "3", "--threads", "0", "--out", "o"], "--threads"),
    (["no-such-command"], "invalid choice"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    # in-process through the same entry point as the console script (fast); the
    # subprocess test below checks the same guarantee end to end
    bad_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def bad_files(d):
    rng = np.random.default_rng(0)
    np.save(d / "X.npy", rng.standard_normal((30, 3)))
    write_csv(d / "short.csv", np.array([[0], [1], [0]]))
    sp.save_npz(d / "A.npz", sp.random(20, 20, density=0.2, random_state=0, format="csr"))
    (d / "binary.csv").write_bytes(bytes(range(256)))
    (d / "nan.csv").write_text("1,2\n3,nan\n4,5\n6,7\n")


@pytest.mark.parametrize("args, message", [
    (["knet", "wine", "--clusters", "two", "--out", "o"], "invalid int value"),
    (["ksvd", "binary.csv", "--out", "o"], "not a text (CSV) file"),
    (["altcluster", "X.npy", "--clusters", "2", "--existing", "short.csv", "--out", "o"],
     "3 labels for 30 samples"),
])
def test_bad_input_subprocess(tmp_path, args, message):
    bad_files(tmp_path)
    r = run(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith(f"ikdr {args[0]}: error:") and message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
