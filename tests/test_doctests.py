"""The Examples sections of the docstrings run, in every module of the package."""
import doctest
import importlib
import pkgutil

import pytest

import ikdr

#: every module (the command line's ``__main__`` runs it on import)
MODULES = sorted(m.name for m in pkgutil.walk_packages(ikdr.__path__, "ikdr.")
                 if not m.name.endswith(("__main__", "._core")))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_examples_are_found():
    """The walk reaches the modules whose docstrings carry examples."""
    attempted = {name: doctest.testmod(importlib.import_module(name), report=False).attempted
                 for name in ("ikdr.kernels.bandwidth", "ikdr.cluster.kdac", "ikdr.metrics")}
    assert all(attempted.values()), attempted
