"""tools/collect_papers_data.py: the papers' data folder built from clones of the authors'
repositories, under the names the tests read (tested on fake clones, without network)."""
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import PAPERS_DATA_FILES

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "collect_papers_data.py"
GUIDE = ROOT / "docs" / "guide" / "reproduce.md"

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason="not a source tree")


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("collect_papers_data", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _png(path, width, height):
    """A PNG signature and IHDR chunk of that size (all the tool reads of an image)."""
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 3, 0, 0, 0])
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + (13).to_bytes(4, "big") + b"IHDR" + ihdr
                     + b"\x00" * 4)


def fake_clones(tool, root, rng, skip=()):
    """Every upstream file of the mapping, of its shape, in folders laid out as the
    repositories are; returns the clones by option name."""
    clones = {key: root / key for key in tool.REPOSITORIES}
    for entry in tool.MAPPING:
        if entry.name in skip:
            continue
        path = clones[entry.clone] / entry.upstream
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.name.endswith(".png"):
            _png(path, *entry.shape)
        else:
            np.savetxt(path, rng.integers(0, 5, entry.shape), fmt="%d", delimiter=",")
    return clones


def test_a_fake_clone_becomes_the_folder_the_tests_read(tool, tmp_path, rng):
    clones = fake_clones(tool, tmp_path / "clones", rng)
    out = tmp_path / "papers-data"
    argv = [f"--{key}={path}" for key, path in clones.items()] + ["--out", str(out)]
    assert tool.main(argv) == 0
    assert {p.name for p in out.iterdir()} == PAPERS_DATA_FILES
    for entry in tool.MAPPING:
        source = clones[entry.clone] / entry.upstream
        assert (out / entry.name).read_bytes() == source.read_bytes(), entry
    assert tool.main(argv) == 0            # again: the same files are already in place


def test_what_cannot_be_placed_is_reported_and_the_rest_copied(tool, tmp_path, rng, capsys):
    clones = fake_clones(tool, tmp_path / "clones", rng, skip={"spiral_label.csv"})
    # another version of a file: one row short
    face = clones["ism"] / "data_sets" / "face_624_20.csv"
    face.write_text("\n".join(face.read_text().splitlines()[:-1]) + "\n")
    out = tmp_path / "papers-data"
    (out).mkdir()
    (out / "moon_400x4.csv").write_text("1,2,3,4\n")        # a different file in the way
    assert tool.main([f"--ism={clones['ism']}", f"--kernelnet={clones['kernelnet']}",
                      "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "spiral_label.csv: datasets/spiral/spiral_label.csv is not in the clone" in err
    assert "face_624x20.csv: data_sets/face_624_20.csv is 623 x 20, expected 624 x 20" in err
    assert "moon_400x4.csv:" in err and "--force" in err
    placed = {p.name for p in out.iterdir()}
    assert placed == PAPERS_DATA_FILES - {"spiral_label.csv", "face_624x20.csv"}
    assert (out / "moon_400x4.csv").read_text() == "1,2,3,4\n"     # left alone
    assert tool.main([f"--ism={clones['ism']}", "--out", str(out), "--force"]) == 1
    assert "no clone of neu-spiral/KernelNet given" in capsys.readouterr().err
    assert (out / "moon_400x4.csv").read_bytes() == \
        (clones["ism"] / "data_sets" / "moon_400x4.csv").read_bytes()


def test_usage_errors(tool, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        tool.main(["--out", str(tmp_path)])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        tool.main(["--ism", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    assert info.value.code == 2 and "no such folder" in capsys.readouterr().err


def test_one_list_of_names_in_the_tool_the_tests_and_the_guide(tool):
    """The tool writes exactly the files the tests may read (conftest.shared_path refuses
    any other name), and the reproduction guide's table maps the same upstream files."""
    assert len({e.name for e in tool.MAPPING}) == len(tool.MAPPING)
    assert {e.name for e in tool.MAPPING} == PAPERS_DATA_FILES
    rows = re.findall(r"^\| (\w+) \| `([^`]+)` \| `([^`]+)` \|", GUIDE.read_text(encoding="utf-8"),
                      re.M)
    repository = {name.split("/")[1]: key for key, name in tool.REPOSITORIES.items()}
    assert sorted((repository[r], up, name) for r, up, name in rows) == \
        sorted((e.clone, e.upstream, e.name) for e in tool.MAPPING)


def test_the_benchmarks_read_the_same_names():
    """Every papers' file a benchmark script names is one the tool writes."""
    named = set()
    for path in (ROOT / "benchmarks").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "IKDR_SHARED_DATA" in text or "SHARED" in text:
            named |= set(re.findall(r"[\"']([a-z0-9_]+x[0-9]+(?:_\w+)?\.csv|flower\.png|"
                                    r"spiral(?:_label)?\.csv)[\"']", text))
    assert named and named <= PAPERS_DATA_FILES, named - PAPERS_DATA_FILES
