"""The scripts in examples/ run and print what they promise."""
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# script -> what it prints: (pattern, the floor a number must reach ("min") or its ceiling
# ("max"), or a phrase that must appear ("text")), ...
EXPECTED = {
    "supervised_wine.py": [(r"10-fold test accuracy \(SVC on XW\): ([0-9.]+)", 0.93, "min")],
    "unsupervised_wine.py": [(r"NMI to the wine classes: +([0-9.]+)", 0.8, "min")],
    # the story (given the Gaussians, find the moons) and the importances agree: the
    # alternative is found and most of the subspace is on the moons' features 1-2
    "alternative_clustering_moon.py": [
        (r"NMI to the moons \(the alternative\): +([0-9.]+)", 0.95, "min"),
        (r"NMI to the Gaussians \(novelty, 0 is best\): +([0-9.]+)", 0.05, "max"),
        (r"share of the moon features \(1-2\): +([0-9.]+)", 0.6, "min")],
    # the story: a fixed half of the nodes as landmarks is poor here (said so), and the
    # automatic landmarks find the exact subspaces
    "ksvd_directed_graph.py": [(r"largest subspace sine: +([0-9.]+)", 0.5, "min"),
                               (r"-> a (poor) approximation", None, "text"),
                               (r"auto largest subspace sine: +([0-9.e+-]+)", 1e-6, "max")],
    "knet_wine.py": [(r"NMI to the wine classes: ([0-9.]+)", 0.8, "min")],
    "knet_moons_embedding.py": [(r"NMI to the moons: +([0-9.]+)", 0.95, "min")],
    "kdn_wine.py": [(r"test accuracy: +([0-9.]+)", 0.9, "min")],
    "feature_importances_wine.py": [(r"share of the top 3 features: ([0-9.]+)", 0.3, "min")],
}


def test_every_example_is_checked():
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs(script):
    r = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    for pattern, bound, kind in EXPECTED[script]:
        match = re.search(pattern, r.stdout)
        assert match, (pattern, r.stdout)
        if kind == "text":
            continue
        value = float(match.group(1))
        assert (value >= bound) if kind == "min" else (value <= bound), (pattern, r.stdout)
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("script, name", [("knet_moons_embedding.py", "knet_moons_embedding.png"),
                                          ("feature_importances_wine.py",
                                           "feature_importances_wine.png")])
def test_figure_goes_where_it_says(tmp_path, script, name):
    """An example given a folder (one that does not exist yet) writes its figure there
    and prints that file's path, the file it wrote."""
    pytest.importorskip("matplotlib")
    folder = tmp_path / "figures"
    r = subprocess.run([sys.executable, str(EXAMPLES / script), str(folder)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    written = folder / name
    assert written.is_file(), list(tmp_path.rglob("*"))
    assert str(written) in r.stdout, r.stdout
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [name]
