"""studies/reproduce.py (the papers' reproduction harness, run from a checkout): the quick
ISM and KDAC reports end to end, --list, errors, no matplotlib."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ikdr
from ikdr.datasets import read_png

from .conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "studies" / "reproduce.py"
HAVE_SHARED = (SHARED_DATA / "face_624x20.csv").exists()
if not SCRIPT.exists():  # pragma: no cover - tests run from a checkout
    pytest.skip("runs studies/reproduce.py, which a source checkout has and an "
                "installed package does not: run the tests from the checkout",
                allow_module_level=True)


def _load_script():
    spec = importlib.util.spec_from_file_location("ikdr_studies_reproduce", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


_reproduce = _load_script()


def reproduce_script(*args, env=None, timeout=900):
    # the child imports the same ikdr as this process (installed or PYTHONPATH=src)
    package_parent = str(Path(ikdr.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    environment = dict(os.environ, PYTHONPATH=path, **(env or {}))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=ROOT, env=environment, timeout=timeout)


def test_the_library_does_not_carry_the_harness():
    from ikdr.cli import commands as _cli

    assert not (Path(ikdr.__file__).parent / "_reproduce.py").exists()
    assert "reproduce" not in _cli.build_parser().format_help()


def table_rows(report, first_cell):
    """The cells of every markdown table row whose first cell is ``first_cell``."""
    rows = []
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            rows.append(cells)
    return rows


def assert_png(path):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = read_png(path)  # decodes every row: a truncated or corrupt file raises
    assert image.ndim == 3 and min(image.shape[:2]) >= 100
    assert image.reshape(-1, 3).std(axis=0).max() > 10  # something was drawn


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    env = {"IKDR_SHARED_DATA": str(SHARED_DATA)}
    proc = reproduce_script("ism-supervised", "ism-unsupervised", "kdac", "--quick",
                    "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    return out, (out / "report.md").read_text(), json.loads(proc.stdout)


def test_quick_report_supervised_rows(quick_report):
    _, report, summary = quick_report
    assert summary["experiments"] == ["ism-supervised", "ism-unsupervised", "kdac"]
    assert summary["failed"] == []
    assert "## ism-supervised" in report and "ISM19 Table 4" in report
    rows = {r[3]: r for r in table_rows(report, "wine") if len(r) == 8}
    assert set(rows) == {"Gaussian", "polynomial", "linear", "squared", "multiquadric",
                         "Gaussian + polynomial"}
    # the paper column is the paper's (ISM19 Table 4), the ikdr column a measurement
    assert rows["Gaussian"][4] == "95.0% ± 5%"
    for row in rows.values():
        accuracy = float(row[5].split("%")[0])
        assert 90.0 <= accuracy <= 100.0
    if HAVE_SHARED:
        assert table_rows(report, "cancer 683x9") and table_rows(report, "face")


def test_quick_report_unsupervised_rows(quick_report):
    _, report, _ = quick_report
    section = report.split("## ism-unsupervised")[1].split("## kdac")[0]
    rows = {r[4]: r for r in table_rows(section, "wine")}
    assert rows["Gaussian"][5] == "0.86"  # ISM19 Table 4
    assert float(rows["Gaussian"][6]) >= 0.8
    assert "unsupervised digits rows (--quick)" in report


def test_quick_report_kdac_rows_and_figures(quick_report):
    out, report, summary = quick_report
    section = report.split("## kdac")[1]
    for name in ("Small Gaussian (SG)", "Large Gaussian (LG)", "Moon"):
        (row,) = table_rows(section, name)
        assert row[3] == "1"  # Thesis Table 3.1, NMI of ISM SI
        assert float(row[4]) >= 0.95 and float(row[8]) <= 0.05
    if not HAVE_SHARED:
        assert "flower.png not found" in report
        return
    (face,) = table_rows(section, "Face")   # pose -> identity, as the authors' code
    assert face[3] == "0.57" and float(face[4]) >= 0.55 and float(face[8]) <= 0.05
    assert table_rows(section, "Face identity -> pose")
    assert table_rows(section, "Flower")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in report
        return
    assert summary["figures"] == 2
    for name in ("kdac_flower_segmentations.png", "kdac_face_cluster_means.png"):
        assert f"]({name})" in report
        assert_png(out / name)


def test_list_names_every_experiment():
    proc = reproduce_script("--list")
    assert proc.returncode == 0, proc.stderr
    for name, exp in _reproduce.EXPERIMENTS.items():
        line = next(l for l in proc.stdout.splitlines() if l.startswith(name + " "))
        assert exp.description in line
    assert proc.stdout.count("data: ") == len(_reproduce.EXPERIMENTS)
    assert {"ism-supervised", "ism-unsupervised", "kdac", "ism-runtime", "ksvd-nystrom",
            "knet", "kdn"} <= set(_reproduce.EXPERIMENTS)


@pytest.mark.parametrize("args, message", [
    (["no-such-experiment", "--out", "OUT"], "unknown experiment 'no-such-experiment'"),
    (["kdac"], "needs --out"),
    (["kdac", "--out", "OUT", "--data-dir", "/no/such/folder"], "not a directory"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    proc = reproduce_script(*[str(tmp_path / "o") if a == "OUT" else a for a in args])
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert message in proc.stderr
    assert not (tmp_path / "o" / "report.md").exists()


def test_absent_data_is_named_as_skipped(tmp_path):
    empty = tmp_path / "data"
    empty.mkdir()
    summary = _reproduce.run(["ism-supervised"], tmp_path / "out", quick=True, data_dir=empty)
    report = (tmp_path / "out" / "report.md").read_text()
    assert any("cancer rows: cancer_683x9.csv not found" in s for s in summary["skipped"])
    assert "face rows: face_624x20.csv not found" in report
    assert table_rows(report, "wine") and not table_rows(report, "face")


def _tiny_experiment(ctx):
    result = _reproduce.Result()
    table = _reproduce.Table("tiny", "nowhere", ["a", "b"], [[1, 2]])
    result.tables.append(table)

    def draw(fig):
        ax = fig.add_subplot()
        ax.plot(np.arange(5), np.arange(5) ** 2)

    ctx.figure(result, "tiny.png", "a parabola", draw)
    return result


def test_without_matplotlib_report_says_figures_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(_reproduce.EXPERIMENTS, "tiny",
                        _reproduce.Experiment("tiny", "test", "none", _tiny_experiment))
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    code = _reproduce.main(["tiny", "--out", str(tmp_path), "--quiet"])
    assert code == 0
    report = (tmp_path / "report.md").read_text()
    assert "figures: skipped, matplotlib is not installed" in report
    assert "tiny: figure tiny.png: matplotlib is not installed" in report
    assert table_rows(report, "1") == [["1", "2"]]
    assert not (tmp_path / "tiny.png").exists()


def test_with_matplotlib_figure_is_written(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: "
                                             "pip install '.[test]'")
    monkeypatch.setitem(_reproduce.EXPERIMENTS, "tiny",
                        _reproduce.Experiment("tiny", "test", "none", _tiny_experiment))
    summary = _reproduce.run(["tiny"], tmp_path)
    assert summary["figures"] == 1 and summary["skipped"] == []
    assert "![a parabola](tiny.png)" in (tmp_path / "report.md").read_text()
    assert_png(tmp_path / "tiny.png")


def test_failed_experiment_is_reported_and_exits_1(tmp_path, monkeypatch):
    def broken(ctx):
        raise RuntimeError("boom")

    monkeypatch.setitem(_reproduce.EXPERIMENTS, "broken",
                        _reproduce.Experiment("broken", "test", "none", broken))
    assert _reproduce.main(["broken", "--out", str(tmp_path), "--quiet"]) == 1
    report = (tmp_path / "report.md").read_text()
    assert "**Failed:** RuntimeError: boom" in report and re.search(r"## Failed\s+- broken", report)


def test_interrupted_run_keeps_finished_sections(tmp_path, monkeypatch):
    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setitem(_reproduce.EXPERIMENTS, "tiny",
                        _reproduce.Experiment("tiny", "test", "none", _tiny_experiment))
    monkeypatch.setitem(_reproduce.EXPERIMENTS, "interrupted",
                        _reproduce.Experiment("interrupted", "test", "none", interrupted))
    with pytest.raises(KeyboardInterrupt):
        _reproduce.run(["tiny", "interrupted"], tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "## tiny" in report and table_rows(report, "1") == [["1", "2"]]
    assert re.search(r"## Not run yet\s+- interrupted", report)
