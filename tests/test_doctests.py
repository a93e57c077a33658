"""The Examples sections of the public docstrings run."""
import doctest
import importlib

import pytest

MODULES = ["ikdr._config", "ikdr._hsic", "ikdr._ism", "ikdr._kernel_syntax", "ikdr.kernels",
           "ikdr.gamma", "ikdr._solver", "ikdr._clustering", "ikdr._kdac", "ikdr.metrics",
           "ikdr.datasets"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
