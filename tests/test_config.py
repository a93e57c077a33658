import io

import numpy as np
import pytest

import ikdr
from ikdr.gamma import Gamma
from ikdr.kernels import Gaussian


def test_version_and_show_config():
    assert isinstance(ikdr.__version__, str) and ikdr.__version__
    buf = io.StringIO()
    ikdr.show_config(file=buf)
    text = buf.getvalue()
    for key in ("ikdr", "compiler", "threading", "threads", "SIMD", "BLAS"):
        assert key in text


def test_set_num_threads_and_context():
    ikdr.set_num_threads(1)
    try:
        assert ikdr.get_num_threads() == 1
        with ikdr.num_threads(2):
            assert ikdr.get_num_threads() == 2
        assert ikdr.get_num_threads() == 1
    finally:
        ikdr.set_num_threads(None)
    with pytest.raises(ValueError):
        ikdr.set_num_threads(0)
    with pytest.raises(TypeError):
        ikdr.set_num_threads("two")


def test_result_independent_of_thread_count(rng):
    X = rng.standard_normal((700, 6))
    G = rng.standard_normal((700, 3))
    W = np.linalg.qr(rng.standard_normal((6, 2)))[0]
    k = Gaussian(sigma=1.5)
    with ikdr.num_threads(1):
        a = k.phi(X, W, Gamma(G))
    with ikdr.num_threads(2):
        b = k.phi(X, W, Gamma(G))
    assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()


def test_example_runs(capsys):
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "supervised_wine.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "accuracy" in out and "HSIC" in out
