"""The command line over many files: parallel workers, one result per file,
a summary row per file, bad files recorded without stopping the batch."""
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ikdr
from ikdr.cli import batch as _batch

SRC = str(Path(ikdr.__file__).resolve().parents[1])


def run(*args, cwd):
    import os

    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "ikdr", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env=env)


def _write(path, X, y=None):
    data = X if y is None else np.column_stack([X, y])
    np.savetxt(path, data, delimiter=",", fmt="%.8f")


@pytest.fixture
def folder(tmp_path):
    """Three good CSV files (labels in their own files) and four bad inputs."""
    rng = np.random.default_rng(5)
    (tmp_path / "labels").mkdir()
    for i in range(3):
        y = np.repeat([0, 1], 40)
        X = rng.standard_normal((80, 4)) + np.outer(y, [2.0, 0, 0, 0])
        _write(tmp_path / f"good{i}.csv", X)
        np.savetxt(tmp_path / "labels" / f"good{i}.csv", y, fmt="%d")
    (tmp_path / "ragged.csv").write_text("1,2,3,4\n5,6\n")              # wrong number of columns
    (tmp_path / "labels" / "ragged.csv").write_text("0\n1\n")
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 4)       # unreadable
    (tmp_path / "labels" / "binary.csv").write_text("0\n")
    _write(tmp_path / "shortlabels.csv", rng.standard_normal((30, 4)))  # wrong number of labels
    np.savetxt(tmp_path / "labels" / "shortlabels.csv", np.zeros(29), fmt="%d")
    return tmp_path


def _rows(path):
    with open(path, newline="") as fh:
        return {Path(r["file"]).name: r for r in csv.DictReader(fh)}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_batch_with_bad_files_among_good_ones(folder, jobs):
    r = run("reduce", "good*.csv", "ragged.csv", "missing.csv", "binary.csv", "shortlabels.csv",
            "--labels", "labels/{stem}.csv", "-k", "1", "--out", "res", "--jobs", jobs,
            cwd=folder)
    assert r.returncode == 1, r.stderr
    totals = json.loads(r.stdout)
    assert totals["n_files"] == 7 and totals["n_ok"] == 3 and totals["n_failed"] == 4
    assert totals["jobs"] * totals["threads_per_job"] <= ikdr._config.usable_cores()
    rows = _rows(folder / "res" / "summary.csv")
    assert set(rows) == {"good0.csv", "good1.csv", "good2.csv", "ragged.csv", "missing.csv",
                         "binary.csv", "shortlabels.csv"}
    assert "number of columns" in rows["ragged.csv"]["error"]
    assert "no such file" in rows["missing.csv"]["error"]
    assert "not a text" in rows["binary.csv"]["error"]
    assert "29 labels for 30 samples" in rows["shortlabels.csv"]["error"]
    for name in ("ragged.csv", "missing.csv", "binary.csv", "shortlabels.csv"):
        assert rows[name]["status"] == "failed" and not (folder / "res" / Path(name).stem).exists()
    # progress over the files, one line each
    assert sum("[" in line and "/7]" in line for line in r.stderr.splitlines()) == 7
    for i in range(3):
        row = rows[f"good{i}.csv"]
        assert row["status"] == "ok" and row["shape"] == "80x4" and row["error"] == ""
        assert row["objective_name"] == "hsic" and float(row["objective"]) > 0
        assert float(row["time_s"]) > 0
        out = folder / "res" / f"good{i}"
        W = np.load(out / "W.npy")
        per_file = json.loads((out / "summary.json").read_text())
        assert per_file["hsic"] == pytest.approx(float(row["objective"]), rel=1e-12)
        # the same answer as a single call on that file
        single = run("reduce", f"good{i}.csv", "--labels", f"labels/good{i}.csv", "-k", "1",
                     "--out", f"single{i}", "--quiet", cwd=folder)
        assert single.returncode == 0, single.stderr
        np.testing.assert_allclose(W, np.load(folder / f"single{i}" / "W.npy"), rtol=1e-10,
                                   atol=1e-12)
    listed = json.loads((folder / "res" / "summary.json").read_text())
    assert [Path(f["file"]).name for f in listed["files"]] == [
        "good0.csv", "good1.csv", "good2.csv", "ragged.csv", "missing.csv", "binary.csv",
        "shortlabels.csv"]


def test_batch_all_good_exits_0_and_other_commands(folder):
    r = run("knet", "good0.csv", "good1.csv", "--clusters", "2", "--max-iter", "2", "--out", "k",
            "--quiet", cwd=folder)
    assert r.returncode == 0, r.stderr
    rows = _rows(folder / "k" / "summary.csv")
    assert {row["status"] for row in rows.values()} == {"ok"}
    assert {row["objective_name"] for row in rows.values()} == {"objective"}
    assert (folder / "k" / "good1" / "labels.npy").exists()
    r = run("ksvd", "good*.csv", "-k", "2", "--compat", "pca", "--out", "s", "--quiet",
            "--jobs", "0", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert len(_rows(folder / "s" / "summary.csv")) == 3


def test_pattern_matching_nothing_is_a_failed_row(folder):
    r = run("reduce", "nothing*.csv", "--labels", "x", "--out", "n", "--quiet", cwd=folder)
    assert r.returncode == 1
    (row,) = _rows(folder / "n" / "summary.csv").values()
    assert row["status"] == "failed" and "no such file" in row["error"]


def test_single_file_keeps_its_layout(folder):
    r = run("reduce", "good0.csv", "--labels", "labels/good0.csv", "-k", "1", "--out", "one",
            "--quiet", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert (folder / "one" / "W.npy").exists() and not (folder / "one" / "summary.csv").exists()


@pytest.mark.parametrize("cores, files, jobs, threads, expected", [
    (2, 200, 2, None, (2, 1)),
    (2, 200, 1, None, (1, 2)),
    (2, 200, 0, None, (2, 1)),
    (8, 200, 3, None, (3, 2)),
    (8, 200, 2, 1, (2, 1)),
    (8, 200, 2, 16, (2, 4)),
    (8, 2, 8, None, (2, 4)),
    (1, 10, 4, None, (4, 1)),
])
def test_workers_times_threads_within_cores(monkeypatch, cores, files, jobs, threads, expected):
    monkeypatch.setattr(_batch, "usable_cores", lambda: cores)
    got = _batch.plan_workers(files, jobs, threads)
    assert got == expected
    assert got[0] * got[1] <= max(cores, got[0])


def test_interrupted_batch_keeps_what_was_written(folder, monkeypatch):
    import argparse

    from ikdr.cli import commands as _cli

    calls = []
    real = _batch.run_one

    def interrupt_third(options, path, out, threads):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(options, path, out, threads)

    monkeypatch.setattr(_batch, "run_one", interrupt_third)
    args = _cli.build_parser().parse_args(
        ["reduce", str(folder / "good*.csv"), "--labels", str(folder / "labels/{stem}.csv"),
         "-k", "1", "--out", str(folder / "res"), "--quiet"])
    assert isinstance(args, argparse.Namespace)
    totals, code = _batch.run_batch(args, _cli._jsonable)
    assert code == 130 and totals["n_ok"] == 2
    rows = _rows(folder / "res" / "summary.csv")
    assert set(rows) == {"good0.csv", "good1.csv"}
    assert (folder / "res" / "good1" / "W.npy").exists()
    listed = json.loads((folder / "res" / "summary.json").read_text())
    assert listed["files"][2]["status"] == "not run"


@pytest.mark.parametrize("options, message", [
    ([], "reduce needs --labels FILE, --label-column NAME|INDEX or --clusters K"),
    (["--labels", "labels/{stem}.csv", "--kernel", "laplace"], "unknown kernel"),
    (["--labels", "labels/{stem}.csv", "--sigma", "-1"], "--sigma must be positive"),
    (["--clusters", "1"], "'n_clusters' parameter of ISMClustering"),
])
def test_usage_error_once_before_any_worker(folder, options, message):
    """A bad option is one error line and exit 2, before a file is read or a worker starts."""
    r = run("reduce", "good*.csv", "-k", "1", "--jobs", "2", "--out", "res", *options,
            cwd=folder)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("ikdr reduce: error:") and message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (folder / "res").exists()      # no worker ran, no summary was started


def test_label_column_batch_as_in_the_readme(tmp_path):
    """CSV files whose last column is the label, as the README makes them."""
    rng = np.random.default_rng(2)
    (tmp_path / "runs").mkdir()
    for i in range(3):
        y = rng.integers(0, 2, 60)
        _write(tmp_path / "runs" / f"{i}.csv", rng.standard_normal((60, 5)) + y[:, None], y)
    r = run("reduce", "runs/*.csv", "--label-column", "-1", "--components", "2", "--jobs", "2",
            "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = _rows(tmp_path / "out" / "summary.csv")
    assert set(rows) == {"0.csv", "1.csv", "2.csv"}
    assert {row["status"] for row in rows.values()} == {"ok"}
    assert {row["shape"] for row in rows.values()} == {"60x5"}


def test_rows_carry_each_fits_own_iterations_and_certificate(tmp_path):
    """n_iter, converged and n_support of each row are the library fit's on that file.
    On the README's files some fits end at once (n_iter 0, converged): the support
    they select has as many features as components, so W only rotates within them
    and the objective cannot change; the row shows that support beside them."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    (tmp_path / "runs").mkdir()
    for i in range(4):
        X, y = make_classification(200, 10, random_state=i)
        np.savetxt(tmp_path / "runs" / f"{i}.csv", np.column_stack([X, y]), delimiter=",")
    # one worker: the fits below run with the same thread count as the batch's
    r = run("reduce", "runs/*.csv", "--label-column", "-1", "--components", "3", "--jobs", "1",
            "--out", "out", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = _rows(tmp_path / "out" / "summary.csv")
    iterations = set()
    for i in range(4):
        data = np.loadtxt(tmp_path / "runs" / f"{i}.csv", delimiter=",")
        model = ikdr.ISM(n_components=3, random_state=0).fit(
            StandardScaler().fit_transform(data[:, :-1]), data[:, -1])
        row = rows[f"{i}.csv"]
        assert int(row["n_iter"]) == model.n_iter_, (i, row)
        assert row["converged"] == str(model.converged_), (i, row)
        assert int(row["n_support"]) == model.support_.size, (i, row)
        if model.n_iter_ == 0:
            assert model.support_.size == 3
        iterations.add(model.n_iter_)
    assert len(iterations) > 1, iterations     # not one constant for every file
