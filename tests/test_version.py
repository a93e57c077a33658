"""One version string, pyproject.toml's: the package metadata, ikdr.__version__, ``ikdr info``,
the compiled core, the documentation and the changelog's latest entry all agree."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ikdr

PACKAGE = Path(ikdr.__file__).resolve().parent
# the source tree these tests belong to (also when ikdr is imported from an installed copy)
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
SOURCE_TREE = PYPROJECT.exists() and (ROOT / "src" / "ikdr" / "__init__.py").exists()
# ikdr itself imported from that tree (PYTHONPATH=src), not from an installed copy
FROM_SOURCE = SOURCE_TREE and PACKAGE == (ROOT / "src" / "ikdr").resolve()


def _declared_version():
    return re.search(r'^version\s*=\s*"([^"]+)"', PYPROJECT.read_text(), re.M).group(1)


def test_version_is_the_metadata_or_pyproject():
    version = ikdr.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([.\-+].+)?", version), version
    if FROM_SOURCE:
        assert version == _declared_version()
    else:
        from importlib.metadata import version as metadata_version

        assert version == metadata_version("ikdr")


def test_the_compiled_core_was_built_from_the_same_version():
    # a core left from a build of another version (rebuild after changing pyproject.toml)
    assert ikdr.build_info()["version"] == ikdr.__version__


def test_ikdr_info_prints_the_same_version():
    env_path = str(PACKAGE.parent)
    out = subprocess.run([sys.executable, "-m", "ikdr", "info"], capture_output=True, text=True,
                         timeout=300, env={**__import__("os").environ, "PYTHONPATH": env_path},
                         check=True)
    first = out.stdout.splitlines()[0]
    assert first == f"ikdr {ikdr.__version__}", first
    assert "threads:" in out.stdout


def _release(version):
    """(release, pre-release or dev part) of a PEP 440 version: 0.2.0.dev0 -> (0.2.0, .dev0)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)*)((?:a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+.*)?", version)
    assert match, version
    return match.group(1), (match.group(2) or "") + (match.group(4) or "")


def test_the_tests_find_their_source_tree():
    """Run from a checkout, these tests see it as one, whether ikdr is imported from
    ``src`` or from an installed copy (the checks below would otherwise skip)."""
    if (ROOT / ".git").exists() or (ROOT / "CHANGELOG.md").exists():
        assert SOURCE_TREE, ROOT


@pytest.mark.skipif(not (SOURCE_TREE and (ROOT / "CHANGELOG.md").exists()),
                    reason="not a source tree")
def test_the_changelog_leads_with_this_version():
    """A development or pre-release version is the changelog's "(unreleased)" entry:
    the version pyproject.toml declares, and the imported package's when it is this tree's."""
    version = ikdr.__version__ if FROM_SOURCE else _declared_version()
    release, unreleased = _release(version)
    heading = re.search(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.M).group(1)
    if unreleased:
        assert heading == f"{release} (unreleased)", (heading, version)
    else:
        assert heading.split()[0] == release, (heading, version)


@pytest.mark.skipif(not (SOURCE_TREE and (ROOT / "docs" / "conf.py").exists()),
                    reason="not a source tree")
def test_the_docs_take_the_package_version():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert re.search(r"^release = ikdr\.__version__$", conf, re.M), "docs/conf.py sets its own release"
    assert not re.search(r"^(release|version) = [\"']\d", conf, re.M)   # no literal version
