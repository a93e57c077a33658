"""One version string: package metadata = ikdr.__version__ = ikdr info = the compiled core."""
import re
import subprocess
import sys
from pathlib import Path

import ikdr

PACKAGE = Path(ikdr.__file__).resolve().parent
PYPROJECT = PACKAGE.parents[1] / "pyproject.toml"
FROM_SOURCE = PYPROJECT.exists() and PACKAGE.parent.name == "src"


def test_version_is_the_metadata_or_pyproject():
    version = ikdr.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([.\-+].+)?", version), version
    if FROM_SOURCE:
        declared = re.search(r'^version\s*=\s*"([^"]+)"', PYPROJECT.read_text(), re.M).group(1)
        assert version == declared
    else:
        from importlib.metadata import version as metadata_version

        assert version == metadata_version("ikdr")
        # the wheel's core was compiled with the same project version
        assert ikdr.build_info()["version"] == version


def test_ikdr_info_prints_the_same_version():
    env_path = str(PACKAGE.parent)
    out = subprocess.run([sys.executable, "-m", "ikdr", "info"], capture_output=True, text=True,
                         timeout=300, env={**__import__("os").environ, "PYTHONPATH": env_path},
                         check=True)
    first = out.stdout.splitlines()[0]
    assert first == f"ikdr {ikdr.__version__}", first
    assert "threads:" in out.stdout
