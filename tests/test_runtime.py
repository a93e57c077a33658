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
    import signal, sys, time, numpy as np
    # Ctrl-C as a terminal delivers it, whatever this process inherited: a
    # process started in the background of a non-interactive shell (a CI job,
    # nohup) inherits SIGINT ignored, and Python then leaves it ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    from ikdr import _native
    from ikdr._native import KernelTerm, TermKind
    THREADS = int(sys.argv[1])
    Z = np.random.default_rng(0).standard_normal((40000, 8))
    terms = [KernelTerm(TermKind.gaussian)]
    # the control: how long one uninterrupted call takes here, now
    t0 = time.perf_counter()
    _native.fused_product(Z, terms, n_threads=THREADS)
    print("ready", time.perf_counter() - t0, flush=True)
    try:
        for _ in range(20):
            _native.fused_product(Z, terms, n_threads=THREADS)
    except KeyboardInterrupt:
        print("interrupted", repr(time.time()), flush=True)
        # the process is still usable afterwards
        out = _native.kernel_matrix(Z[:3], Z[:3], [KernelTerm(TermKind.linear)], n_threads=1)
        print("usable", out.shape, flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32",
                    reason="sends SIGINT to a child process, which needs POSIX signals "
                           "(not Windows)")
@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_interrupts_long_loop_promptly(threads):
    """Ctrl-C stops a call within a small part of the call's own duration.

    The child first times one uninterrupted call (the control, about a second,
    taken under the machine's current load), then loops over the same call;
    the signal arrives a fifth of a call after the loop starts. Polled, the
    KeyboardInterrupt comes within tens of milliseconds; unpolled, only when the
    call returns, most of a call later. The bound is a quarter of a call.
    """
    proc = subprocess.Popen([sys.executable, "-c", LONG_JOB, str(threads)],
                            stdout=subprocess.PIPE, text=True)
    try:
        ready = proc.stdout.readline().split()
        assert ready and ready[0] == "ready", ready
        call = float(ready[1])
        time.sleep(call / 5)  # inside the loop's first call
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60 + 25 * call)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted" in out and "usable (3, 3)" in out, out
    # from the signal to the KeyboardInterrupt caught in the child (wall clock)
    caught = float(out.split("interrupted")[1].split()[0])
    latency = caught - sent
    print(f"interrupt latency: {1000 * latency:.1f} ms; one call: {1000 * call:.0f} ms")
    assert latency < call / 4, f"interrupt took {latency:.3f} s; one call takes {call:.3f} s"


def _ticks_during(work, *, tick=0.001):
    """How many times a Python thread that wakes every ``tick`` seconds ran while
    ``work()`` ran on this thread, and how long it ran."""
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(tick)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(5 * tick)  # the ticker is running
        t0 = time.perf_counter()
        work()
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
    return sum(t0 < x < t1 for x in ticks), t1 - t0


def test_gil_released_during_core_loops():
    """A Python thread runs while the core computes on another thread.

    Controls, in the same process and at the same moment: the ticker's rate while
    this thread sleeps (the GIL is free: the most it can tick) and while this
    thread runs C code that holds the GIL (it cannot tick at all), so the check
    can tell a released GIL from a held one.
    """
    Z = np.random.default_rng(1).standard_normal((12000, 8))
    terms = [KernelTerm(TermKind.gaussian)]

    def core_calls():  # at least a quarter of a second inside the core
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.25:
            _native.fused_product(Z, terms, n_threads=1)

    during_core, core_time = _ticks_during(core_calls)
    free, free_time = _ticks_during(lambda: time.sleep(core_time))
    held, _ = _ticks_during(lambda: sum(range(20_000_000)))  # C code, the GIL held
    free_rate = free / free_time
    print(f"ticks: {during_core} in {core_time:.3f} s of core calls, {free} in {free_time:.3f} s "
          f"asleep, {held} while the GIL was held")
    assert held <= 2, "the control that holds the GIL let the ticker run: the check is blind"
    assert during_core >= max(5, 0.25 * free_rate * core_time), (during_core, free_rate)


def test_passes_of_two_threads_run_at_once():
    """Two threads' core calls are inside the core at the same moment (each has
    released the GIL), as a third thread, which needs the GIL to look, sees."""
    Z = np.random.default_rng(2).standard_normal((15000, 8))
    terms = [KernelTerm(TermKind.gaussian)]
    barrier = threading.Barrier(3)

    def work():
        barrier.wait()
        _native.fused_product(Z, terms, n_threads=1)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    barrier.wait()
    seen = []
    while any(t.is_alive() for t in threads):
        seen.append(_native.active_passes())
        time.sleep(0.0005)
    for t in threads:
        t.join()
    assert max(seen) == 2, f"passes inside the core at once: {sorted(set(seen))}"


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


@pytest.mark.parametrize("core", [1, 2])
@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_two_estimators_in_two_threads(name, core):
    # Each fit spends most of its time in C++ loops that release the GIL:
    # two Python threads run at once, each starting `core` C++ threads per
    # call, and each gets the single-threaded answer. Every estimator, KDAC
    # included: its concurrent fits differed (1e-13 to 1e-8) while the core's
    # one-BLAS-thread hold did nothing outside the main thread. The core's sums
    # do not depend on its thread count; the NumPy products around it may run
    # on another BLAS thread count while the other fit holds the BLAS, which a
    # GEMM splitting its output (OpenBLAS) does not see, and a BLAS splitting its
    # sums moves by gamma_n of the 300 rows (3e-14) times the fit's conditioning:
    # rtol 1e-12.
    import ikdr

    fit = _estimators()[name]
    with ikdr.num_threads(1):
        expected = _quiet(fit)
    with ikdr.num_threads(core):
        results, errors = {}, []
        barrier = threading.Barrier(2)

        def work(i):
            try:
                barrier.wait()
                results[i] = _quiet(fit)
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
    # that the threads' passes really run at once: test_passes_of_two_threads_run_at_once


# Children forked after the parent used the core: tests/test_threads.py
# (test_fork_after_use_fits_correctly_and_never_hangs).
