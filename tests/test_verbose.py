"""The estimators' ``verbose`` output and the optional progress bar (ikdr._utils.progress)."""
import re
import sys
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_wine, make_blobs
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr._utils import progress as _progress


@pytest.fixture(scope="module")
def data():
    Xb, yb = make_blobs(90, 3, centers=3, random_state=0)
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(Xb), yb, StandardScaler().fit_transform(X), y


CASES = {
    "ISM": (lambda v: ikdr.ISM(n_components=2, verbose=v), "wine", True),
    "ISMClustering": (lambda v: ikdr.ISMClustering(3, n_components=2, max_iter=4,
                                                   random_state=0, verbose=v), "blobs", False),
    "SemiSupervisedISM": (lambda v: ikdr.SemiSupervisedISM(3, n_components=2, mu=1e-3,
                                                           max_iter=3, random_state=0,
                                                           verbose=v), "blobs", True),
    "KDAC": (lambda v: ikdr.KDAC(2, n_components=2, max_iter=3, random_state=0, verbose=v),
             "blobs", True),
    "KNetClustering": (lambda v: ikdr.KNetClustering(3, max_iter=4, random_state=0, verbose=v),
                       "blobs", False),
    "KernelDependenceNetwork": (lambda v: ikdr.KernelDependenceNetwork(
        max_layers=2, n_fourier=50, random_state=0, verbose=v), "wine", True),
}


def _fit(name, verbose, data):
    make, which, supervised = CASES[name]
    Xb, yb, Xw, yw = data
    X, y = (Xb, yb) if which == "blobs" else (Xw, yw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(verbose).fit(X, *((y,) if supervised else ())), X


def _result(model, X):
    return model.labels_ if hasattr(model, "labels_") else model.transform(X)


@pytest.mark.parametrize("name", list(CASES))
def test_verbose_prints_one_line_per_iteration(name, data, capsys):
    silent, X = _fit(name, 0, data)
    assert capsys.readouterr().out == ""
    loud, _ = _fit(name, 1, data)
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    pattern = re.compile(rf"^\[{name}\] iter +\d+  objective \S+  change \S+  .*time \d+\.\d+s$")
    assert lines and all(pattern.match(line) for line in lines), out
    if name == "ISM":
        assert len(lines) == len(silent.history_)  # the start, then one per iteration
        assert lines[0].split()[2] == "0" and "step start" in lines[0]
        objectives = [float(line.split()[4]) for line in lines]
        np.testing.assert_allclose(objectives, [h["objective"] for h in silent.history_],
                                   rtol=1e-5)
    elif name == "KernelDependenceNetwork":
        assert len(lines) >= silent.n_layers_
        hsic = [float(line.split()[4]) for line in lines[:silent.n_layers_]]
        np.testing.assert_allclose(hsic, silent.hsic_per_layer_, rtol=1e-5)
    else:
        assert len(lines) == silent.n_iter_
    # printing changes nothing
    np.testing.assert_array_equal(_result(loud, X), _result(silent, X))
    assert clone(loud).get_params()["verbose"] == 1


def test_verbose_2_also_prints_the_w_steps(data, capsys):
    Xb = data[0]
    model = ikdr.ISMClustering(3, n_components=2, max_iter=2, random_state=0, verbose=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(Xb)
    lines = capsys.readouterr().out.splitlines()
    outer = [line for line in lines if line.startswith("[ISMClustering]")]
    inner = [line for line in lines if line.startswith("[  W-step ISM]")]
    assert len(outer) == model.n_iter_
    assert sum("step start" in line for line in inner) == model.n_iter_  # one ISM per W-step
    assert len(inner) >= model.n_iter_ + sum(h["ism_iterations"] for h in model.history_)


@pytest.mark.parametrize("bad", [-1, 1.5, "yes", None])
@pytest.mark.parametrize("name", list(CASES))
def test_bad_verbose_is_refused(name, bad, data):
    make, which, supervised = CASES[name]
    Xb, yb, _, _ = data
    # the estimators with declarative constraints say it in scikit-learn's words
    with pytest.raises(ValueError, match=r"verbose must be a non-negative int|'verbose' parameter"):
        make(bad).fit(Xb, *((yb,) if supervised else ()))


class FakeBar:
    instances = []

    def __init__(self, total=None, desc=None, **kwargs):
        self.total, self.desc, self.n, self.closed, self.written = total, desc, 0, False, []
        FakeBar.instances.append(self)

    def update(self, n):
        self.n += n

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def write(self, text, file=None):
        self.written.append(text)

    def close(self):
        self.closed = True


class FakeTerminal:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty

    def write(self, text):
        pass

    def flush(self):
        pass


@pytest.fixture
def fake_tqdm(monkeypatch):
    FakeBar.instances = []
    monkeypatch.setattr(_progress, "_tqdm", lambda: FakeBar)
    return FakeBar


def test_progress_bar_on_a_terminal(fake_tqdm, monkeypatch, data, capsys):
    Xb = data[0]
    monkeypatch.setattr(sys, "stderr", FakeTerminal(True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ikdr.ISMClustering(3, n_components=2, max_iter=3, random_state=0,
                                   verbose=2).fit(Xb)
    # one bar, for the outer loop only (the W-steps' reports are nested)
    assert len(fake_tqdm.instances) == 1
    bar = fake_tqdm.instances[0]
    assert bar.desc == "ISMClustering" and bar.total == 3 and bar.n == model.n_iter_
    assert bar.closed
    assert len([t for t in bar.written if t.startswith("[ISMClustering]")]) == model.n_iter_
    assert sum(t.startswith("[  W-step ISM]") for t in bar.written) > model.n_iter_
    assert capsys.readouterr().out == ""  # lines went through the bar's write


def test_progress_bars_switch_without_verbose(fake_tqdm, monkeypatch, data, capsys):
    Xw, yw = data[2], data[3]
    monkeypatch.setattr(sys, "stderr", FakeTerminal(True))
    ikdr.ISM(n_components=2).fit(Xw, yw)
    assert fake_tqdm.instances == []          # verbose=0 and bars not switched on
    with _progress.progress_bars():
        model = ikdr.ISM(n_components=2).fit(Xw, yw)
    assert len(fake_tqdm.instances) == 1 and fake_tqdm.instances[0].n == model.n_iter_ + 1
    assert fake_tqdm.instances[0].written == [] and capsys.readouterr().out == ""
    monkeypatch.setattr(sys, "stderr", FakeTerminal(False))
    with _progress.progress_bars():
        ikdr.ISM(n_components=2, verbose=1).fit(Xw, yw)
    assert len(fake_tqdm.instances) == 1      # not a terminal: no bar
    assert capsys.readouterr().out.count("[ISM] iter") == model.n_iter_ + 1


def test_no_bar_without_tqdm(monkeypatch, data, capsys):
    monkeypatch.setattr(_progress, "_tqdm", lambda: None)
    terminal = FakeTerminal(True)
    written = []
    terminal.write = written.append
    monkeypatch.setattr(sys, "stderr", terminal)
    with _progress.progress_bars():
        report = _progress.IterationReport("ISM", 0, total=3).start()
        model = ikdr.ISM(n_components=2).fit(data[2], data[3])
    assert not report.active                  # no tqdm: no bar, and nothing else instead
    assert written == [] and capsys.readouterr().out == ""
    assert model.components_.shape == (data[2].shape[1], 2)


def test_a_report_left_open_by_an_exception_is_forgotten(fake_tqdm, monkeypatch):
    monkeypatch.setattr(sys, "stderr", FakeTerminal(True))

    def failing_fit():
        report = _progress.IterationReport("first", 1).start()
        report(1, 1.0)
        raise RuntimeError

    with pytest.raises(RuntimeError):
        failing_fit()
    import gc

    gc.collect()
    with _progress.IterationReport("second", 1, total=2) as report:
        report(1, 1.0)
    assert [bar.desc for bar in fake_tqdm.instances] == ["first", "second"]


def test_kernel_svd_reports_automatic_landmarks(capsys):
    from ikdr.graph import directed_sbm

    A, _ = directed_sbm(300, 1500, 3, random_state=0)
    silent = ikdr.KernelSVD(4, kernel="sne", solver="nystrom", random_state=0).fit(A)
    assert capsys.readouterr().out == ""
    loud = ikdr.KernelSVD(4, kernel="sne", solver="nystrom", random_state=0, verbose=1).fit(A)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(silent.landmark_history_)
    for line, ((n, m), eta) in zip(lines, silent.landmark_history_):
        assert re.match(rf"^\[KernelSVD\] iter +\d+  change \S+  landmarks {n}x{m}  time ", line)
        assert float(line.split()[4]) == pytest.approx(eta, rel=1e-5)
    np.testing.assert_array_equal(loud.row_embedding_, silent.row_embedding_)
    with pytest.raises(ValueError, match="verbose"):
        ikdr.KernelSVD(4, verbose=-1).fit(A)
