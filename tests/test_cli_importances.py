"""What the command line says about the features: importances.csv beside
summary.json, the support and the top features by the CSV header's names, in
single runs and batches; --target."""
import csv
import json
import warnings

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.cli.commands import main

HEADER = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]


def _write(path, X, y=None, header=HEADER):
    with open(path, "w") as fh:
        if header:
            fh.write(",".join(header + ([] if y is None else ["cls"])) + "\n")
        for i, row in enumerate(X):
            cells = [repr(float(v)) for v in row] + ([] if y is None else [str(y[i])])
            fh.write(",".join(cells) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """200 rows, two classes carried by 'gamma' (a shift) among five noise columns."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 100)
    X = rng.standard_normal((200, 6))
    X[:, 2] += 2.5 * y
    folder = tmp_path_factory.mktemp("named")
    _write(folder / "named.csv", X, y)
    return folder, X, y


def _importances(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_reduce_names_its_importances(data, tmp_path):
    folder, X, y = data
    out = tmp_path / "out"
    assert main(["reduce", str(folder / "named.csv"), "--label-column", "cls", "-k", "2",
                 "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = _importances(out / summary["importances"])
    assert list(rows[0]) == ["feature", "group", "importance", "low", "high"]
    assert {r["feature"] for r in rows} == set(HEADER)          # the header's names, all of them
    assert rows[0]["feature"] == "gamma" and rows[0]["group"] == "all"
    assert summary["top_features"][0] == "gamma"
    assert "gamma" in summary["support"] and set(summary["support"]) <= set(HEADER)
    # the same numbers as the library's fit on the standardised data
    model = ikdr.ISM(n_components=2, random_state=0).fit(StandardScaler().fit_transform(X), y)
    assert summary["support"] == [HEADER[j] for j in model.support_]
    by_name = {r["feature"]: float(r["importance"]) for r in rows if r["group"] == "all"}
    np.testing.assert_array_equal([by_name[n] for n in HEADER], model.feature_importances_)


def test_without_a_header_the_features_are_x0_x1(tmp_path, data):
    _, X, y = data
    _write(tmp_path / "plain.csv", X, y, header=None)
    out = tmp_path / "out"
    assert main(["reduce", str(tmp_path / "plain.csv"), "--label-column", "-1", "-k", "2",
                 "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["top_features"][0] == "x2"
    assert {r["feature"] for r in _importances(out / "importances.csv")} == \
        {f"x{j}" for j in range(6)}


@pytest.mark.parametrize("command", [["reduce", "--clusters", "2"],
                                     ["altcluster", "--clusters", "2", "--max-iter", "3"],
                                     ["knet", "--clusters", "2", "--max-iter", "3"]])
def test_clustering_commands_name_the_support(data, tmp_path, command):
    folder, _, y = data
    csv_path = tmp_path / "unlabelled.csv"
    _write(csv_path, np.loadtxt(folder / "named.csv", delimiter=",", skiprows=1)[:, :6])
    extra = []
    if command[0] == "altcluster":
        np.savetxt(tmp_path / "existing.csv", y, fmt="%d")
        extra = ["--existing", str(tmp_path / "existing.csv")]
    out = tmp_path / "out"
    assert main([command[0], str(csv_path), *command[1:], *extra, "--out", str(out),
                 "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["support"] and set(summary["support"]) <= set(HEADER)
    if summary["importances"] is not None:      # every estimator that has importances
        rows = _importances(out / summary["importances"])
        assert {r["feature"] for r in rows if r["group"] == "all"} == set(HEADER)
        assert set(summary["top_features"]) <= set(HEADER)
    else:
        assert command[0] == "knet"


def test_bundled_datasets_use_their_feature_names(tmp_path):
    out = tmp_path / "out"
    assert main(["reduce", "wine", "-k", "2", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "proline" in {r["feature"] for r in _importances(out / "importances.csv")}
    assert all(not name.startswith("x") for name in summary["support"])


def test_batch_points_to_each_files_importances(data, tmp_path):
    folder, X, y = data
    for i in range(2):
        _write(tmp_path / f"run{i}.csv", X, y)
    out = tmp_path / "res"
    assert main(["reduce", str(tmp_path / "run*.csv"), "--label-column", "cls", "-k", "2",
                 "--out", str(out), "--quiet"]) == 0
    with open(out / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    for row in rows:
        assert "gamma" in row["support"].split(";")
        rows_of_file = _importances(row["importances"])
        assert rows_of_file[0]["feature"] == "gamma"
    files = json.loads((out / "summary.json").read_text())["files"]
    assert all(f["importances"].endswith("importances.csv") for f in files)


def test_target_option(tmp_path):
    """--target continuous fits an integer label column as a continuous quantity, as
    the library does; --target with --clusters is a usage error."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.round(10 * X[:, 0] + 50).astype(int)           # an integer-valued measure
    _write(tmp_path / "measure.csv", X, y, header=HEADER[:4])
    out = tmp_path / "out"
    assert main(["reduce", str(tmp_path / "measure.csv"), "--label-column", "cls",
                 "--target", "continuous", "-k", "2", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["parameters"]["target"] == "continuous"
    model = ikdr.ISM(n_components=2, random_state=0, target="continuous").fit(
        StandardScaler().fit_transform(X), y)
    assert summary["hsic"] == model.hsic_
    assert summary["top_features"][0] == "alpha"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["reduce", "wine", "--clusters", "3", "--target", "classes",
                     "--out", str(tmp_path / "o2"), "--quiet"])
    assert code == 2
