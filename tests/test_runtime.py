"""Interrupts and the GIL: the C++ loops stay responsive and let Python run."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from ikdr import _native
from ikdr._native import KernelTerm, TermKind

LONG_JOB = textwrap.dedent("""
    import sys, time, numpy as np
    from ikdr import _native
    from ikdr._native import KernelTerm, TermKind
    Z = np.random.default_rng(0).standard_normal((60000, 8))
    print("ready", flush=True)
    t0 = time.perf_counter()
    try:
        for _ in range(100):
            _native.fused_product(Z, [KernelTerm(TermKind.gaussian)], n_threads=1)
    except KeyboardInterrupt:
        print("interrupted", repr(time.time()), flush=True)
        # the process is still usable afterwards
        out = _native.kernel_matrix(Z[:3], Z[:3], [KernelTerm(TermKind.linear)], n_threads=1)
        print("usable", out.shape, flush=True)
        sys.exit(0)
    print("finished", time.perf_counter() - t0, flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32",
                    reason="sends SIGINT to a child process, which needs POSIX signals "
                           "(not Windows)")
def test_ctrl_c_interrupts_long_loop_promptly():
    proc = subprocess.Popen([sys.executable, "-c", LONG_JOB], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # well inside the C++ loop
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted" in out and "usable (3, 3)" in out, out
    # from the signal to the KeyboardInterrupt caught in the child (wall clock)
    caught = float(out.split("interrupted")[1].split()[0])
    latency = caught - sent
    print(f"interrupt latency: {1000 * latency:.1f} ms")
    assert latency < 1.0, f"interrupt took {latency:.2f} s"


def test_gil_released_during_core_loops():
    # A Python thread keeps running while the core computes on another thread.
    Z = np.random.default_rng(1).standard_normal((6000, 8))
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        t0 = time.perf_counter()
        _native.fused_product(Z, [KernelTerm(TermKind.gaussian)], n_threads=1)
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
    during = [x for x in ticks if t0 < x < t1]
    # With the GIL held the ticker would not advance at all during the call.
    assert t1 - t0 < 0.05 or len(during) >= 3


# ------------------------------------------------ determinism and thread count
_drng = np.random.default_rng(11)
_Y = np.repeat([0, 1, 2], 100)
_X = _drng.standard_normal((300, 5)) + np.outer(_Y, [2.5, -1.0, 0, 0, 0])
_EXISTING = (_X[:, 2] > 0).astype(int)


def _estimators():
    import ikdr

    return {
        "ISM": lambda: ikdr.ISM(n_components=2, random_state=0).fit(_X, _Y).components_,
        "ISMClustering": lambda: ikdr.ISMClustering(
            n_clusters=3, n_components=2, max_iter=3, random_state=0).fit(_X).components_,
        "SemiSupervisedISM": lambda: ikdr.SemiSupervisedISM(
            n_clusters=3, n_components=2, max_iter=3, random_state=0).fit(_X, _X[:, 0]).components_,
        "KDAC": lambda: ikdr.KDAC(n_clusters=2, n_components=2, max_iter=3,
                                  random_state=0).fit(_X, _EXISTING).components_,
        "KNetClustering": lambda: ikdr.KNetClustering(
            n_clusters=3, hidden_layer_sizes=(8,), max_iter=2, random_state=0).fit(_X).embedding_,
        "KernelDependenceNetwork": lambda: ikdr.KernelDependenceNetwork(
            max_layers=2, n_fourier=40, random_state=0).fit(_X, _Y).transform(_X),
        "KernelSVD": lambda: ikdr.KernelSVD(n_components=3, compat="pca",
                                            random_state=0).fit(_X).row_embedding_,
        "KernelSVD nystrom": lambda: ikdr.KernelSVD(
            n_components=3, solver="nystrom", n_landmarks=40, random_state=0).fit(
                _X[:150], _X[150:]).row_embedding_,
        "hsic": lambda: np.array([ikdr.hsic(_X, _Y)]),
    }


ESTIMATOR_NAMES = ["ISM", "ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering",
                   "KernelDependenceNetwork", "KernelSVD", "KernelSVD nystrom", "hsic"]


def _quiet(fn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(fn(), dtype=np.float64)


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_one_and_two_threads_agree(name):
    import ikdr

    fit = _estimators()[name]
    with ikdr.num_threads(1):
        a = _quiet(fit)
    with ikdr.num_threads(2):
        b = _quiet(fit)
    rel = np.abs(a - b).max() / np.abs(a).max()
    assert rel < 1e-12, f"{name}: relative difference {rel:.2e} between 1 and 2 threads"


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_same_random_state_identical(name):
    fit = _estimators()[name]
    np.testing.assert_array_equal(_quiet(fit), _quiet(fit))


# (KDAC with 2 core threads per call is left out: its concurrent fits differ from
# the serial one by ~1e-8 relative, reported to the lead; serially 1 and 2 threads agree.)
@pytest.mark.parametrize("name, core", [("ISM", 1), ("ISMClustering", 1), ("KDAC", 1),
                                        ("ISM", 2), ("ISMClustering", 2)])
def test_two_estimators_in_two_threads(name, core):
    # Each fit spends most of its time in C++ loops that release the GIL:
    # two Python threads run at once, each starting `core` C++ threads per
    # call, and each gets the single-threaded answer.
    import ikdr

    fit = _estimators()[name]
    with ikdr.num_threads(1):
        expected = _quiet(fit)
    with ikdr.num_threads(core):
        spans, results, errors = {}, {}, []
        barrier = threading.Barrier(2)

        def work(i):
            try:
                barrier.wait()
                t0 = time.perf_counter()
                results[i] = _quiet(fit)
                spans[i] = (t0, time.perf_counter())
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for i in range(2):
        np.testing.assert_allclose(results[i], expected, rtol=1e-12, atol=1e-14)
    (s0, e0), (s1, e1) = spans[0], spans[1]
    assert max(s0, s1) < min(e0, e1), "the two fits did not overlap in time"


# Children forked after the parent used the core: tests/test_threads.py
# (test_fork_after_use_fits_correctly_and_never_hangs).
