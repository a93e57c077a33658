import os
from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(os.environ.get("IKDR_SHARED_DATA",
                                  Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def shared_csv(name):
    """Load ../shared/data/NAME (skip the test when the folder is absent)."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    return np.loadtxt(path, delimiter=",")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``slow`` unless IKDR_SLOW=1."""
    if os.environ.get("IKDR_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow reproduction test; set IKDR_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
