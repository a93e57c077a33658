import os
from pathlib import Path

import numpy as np
import pytest

#: The papers' data sets (Cancer 683 x 9, Face, Moon, Spiral, the Flower image): the folder
#: named by IKDR_SHARED_DATA, else ``shared/data`` beside the checkout. Tests that need them
#: skip when they are absent; "Reproducing the papers" in the user guide lists the files.
SHARED_DATA = Path(os.environ.get("IKDR_SHARED_DATA",
                                  Path(__file__).resolve().parents[1].parent / "shared" / "data"))
_WHERE = ("the folder IKDR_SHARED_DATA names" if os.environ.get("IKDR_SHARED_DATA")
          else "../shared/data beside the checkout (IKDR_SHARED_DATA unset)")


#: every file of the papers' data sets a test may read: the names the user guide's table
#: and tools/collect_papers_data.py give them (tests/test_papers_data.py checks all three)
PAPERS_DATA_FILES = frozenset({
    "cancer_683x9.csv", "cancer_683x9_label.csv",
    "face_624x20.csv", "face_624x20_identity_label.csv", "face_624x20_pose_label.csv",
    "moon_400x4.csv", "moon_400x4_original_label.csv", "moon_400x4_alt_label.csv",
    "moon_1000x2.csv", "moon_1000x2_label.csv", "spiral.csv", "spiral_label.csv",
    "flower.png"})


def shared_path(name):
    """The path of one of the papers' data files; skip the test when it is absent."""
    assert name in PAPERS_DATA_FILES, f"{name} is not one of the papers' data files: add it to " \
        "PAPERS_DATA_FILES, tools/collect_papers_data.py and the reproduction guide"
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"needs the papers' data file {name}, not found in {_WHERE}: put the "
                    "papers' data sets in a folder (the user guide's 'Reproducing the papers' "
                    "page lists them) and set IKDR_SHARED_DATA to it")
    return path


def shared_csv(name):
    """One of the papers' CSV data files as an array (skips the test when it is absent)."""
    return np.loadtxt(shared_path(name), delimiter=",")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _seeded_global_rng():
    """NumPy's global RNG seeded before every test. An estimator with
    ``random_state=None`` draws from it (scikit-learn's convention): ISM's held-out
    halves, for one, then differ from fit to fit, and on wine one split in about a
    hundred chooses another support. Seeded, a test's outcome does not depend on
    which tests ran before it, and a failure repeats when the test is run alone."""
    np.random.seed(0)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``slow`` unless IKDR_SLOW=1."""
    if os.environ.get("IKDR_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="a slow reproduction of a paper's table: run it with "
                                   "IKDR_SLOW=1 in the environment")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
