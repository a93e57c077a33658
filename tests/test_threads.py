"""Thread control other programs can rely on, fork safety, concurrent fits.

What the C++ core is told: every call gets its thread count from the Python
layer (``_native._threads`` -> ``ikdr.get_num_threads()``); these tests spy on
that value, so they check the number ikdr's passes actually run with. The
threads are OpenMP's: the default is the runtime's own setting
(``OMP_NUM_THREADS`` at start-up, threadpoolctl's limits), which only a fresh
process can show for the environment variable.
"""
import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ikdr
from ikdr import _native

_rng = np.random.default_rng(3)
_Y = np.repeat([0, 1, 2], 200)
_X = _rng.standard_normal((600, 5)) + np.outer(_Y, [2.0, -1.0, 0, 0, 0])
SRC = str(Path(ikdr.__file__).resolve().parents[1])


@pytest.fixture
def core_threads(monkeypatch):
    """The thread counts the Python layer hands to the core, call by call."""
    seen = []
    original = _native._threads

    def spy(n_threads):
        seen.append(original(n_threads))
        return seen[-1]

    monkeypatch.setattr(_native, "_threads", spy)
    return seen


@pytest.fixture
def default_threads(monkeypatch):
    """No explicit setting and no thread environment variables."""
    monkeypatch.delenv("IKDR_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(ikdr._config, "_num_threads", None)


def _fit():
    return ikdr.ISM(n_components=2, random_state=0).fit(_X, _Y).components_


def test_set_num_threads_reaches_every_core_call(core_threads, default_threads):
    default = ikdr.get_num_threads()
    for n in (1, 2, 3):
        core_threads.clear()
        ikdr.set_num_threads(n)
        try:
            _fit()
        finally:
            ikdr.set_num_threads(None)
        assert core_threads and set(core_threads) == {n}
    core_threads.clear()
    with ikdr.num_threads(1):
        _fit()
    assert set(core_threads) == {1}
    assert ikdr.get_num_threads() == default


needs_openmp = pytest.mark.skipif(
    not _native.OPENMP, reason="the compiled core was built without OpenMP (ikdr info says "
                               "so): rebuild with a compiler that has OpenMP to run it")


@needs_openmp
def test_default_is_the_openmp_runtime_setting(default_threads):
    assert ikdr.get_num_threads() == _native.openmp_max_threads()
    if "OMP_NUM_THREADS" not in os.environ:    # what the runtime read at start-up
        assert ikdr.get_num_threads() == ikdr._config.usable_cores()


def test_ikdr_variable_is_read_at_every_call(core_threads, default_threads, monkeypatch):
    monkeypatch.setenv("IKDR_NUM_THREADS", "1")
    _fit()
    assert core_threads and set(core_threads) == {1}
    core_threads.clear()
    monkeypatch.setenv("IKDR_NUM_THREADS", "3,1")  # OpenMP's nested syntax: the outer level counts
    _fit()
    assert set(core_threads) == {3}
    with ikdr.num_threads(2):  # an explicit setting wins over the environment
        assert ikdr.get_num_threads() == 2


def test_ikdr_variable_wins_over_omp(default_threads, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("IKDR_NUM_THREADS", "2")
    assert ikdr.get_num_threads() == 2


def _fresh(env_changes, code="import ikdr; print(ikdr.get_num_threads())"):
    env = {**os.environ, "PYTHONPATH": SRC}
    for name in ("IKDR_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(name, None)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-W", "always", "-c", code], env=env,
                          capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.parametrize("value, expected", [("1", 1), ("3", 3), ("3,1", 3)])
def test_omp_num_threads_in_a_fresh_process(value, expected):
    out = _fresh({"OMP_NUM_THREADS": value})
    assert out.stdout.strip() == str(expected)
    assert "RuntimeWarning" not in out.stderr


@functools.lru_cache(maxsize=None)
def _fresh_default():
    return _fresh({}).stdout.strip()


@pytest.mark.parametrize("variable", ["OMP_NUM_THREADS", "IKDR_NUM_THREADS"])
@pytest.mark.parametrize("value", ["0", "-2", "four"])
def test_bad_thread_variables_are_ignored_with_a_warning(variable, value):
    out = _fresh({variable: value})         # never a crash (check=True)
    assert out.stdout.strip() == _fresh_default()
    assert "RuntimeWarning" in out.stderr and f"{variable}={value!r}" in out.stderr


@pytest.mark.skipif("gomp" not in os.path.basename(_native.build_info().get("openmp_library") or ""),
                    reason="checks libgomp's idle spin (GOMP_SPINCOUNT); this core uses "
                           "another OpenMP runtime")
@pytest.mark.parametrize("user, expected", [({}, _native.IDLE_SPIN_COUNT),
                                            ({"GOMP_SPINCOUNT": "77"}, "77")])
def test_idle_workers_spin_briefly_unless_the_user_says_otherwise(user, expected):
    """The core's libgomp loads with a short idle spin (a worker spinning between
    passes takes the core of the calling thread on a busy machine); a user's own
    setting wins, and the process environment is left as it was."""
    code = "import os, ikdr._native; print(os.environ.get('GOMP_SPINCOUNT'))"
    out = _fresh({"OMP_DISPLAY_ENV": "verbose", **user}, code)
    assert f"GOMP_SPINCOUNT = '{expected}'" in out.stderr
    assert out.stdout.strip() == user.get("GOMP_SPINCOUNT", "None")


def _our_openmp(threadpoolctl):
    """threadpoolctl's entries for the OpenMP runtime ikdr's core links."""
    ours = os.path.realpath(_native.build_info()["openmp_library"])
    return [i for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "openmp" and os.path.realpath(i["filepath"]) == ours]


@needs_openmp
def test_threadpoolctl_sees_and_limits_ikdrs_openmp_runtime(core_threads, default_threads):
    threadpoolctl = pytest.importorskip("threadpoolctl", minversion="3.5",
                                        reason="needs threadpoolctl >= 3.5, an ikdr "
                                               "dependency: reinstall ikdr")
    info = _our_openmp(threadpoolctl)
    assert len(info) == 1, threadpoolctl.threadpool_info()
    assert info[0]["num_threads"] == ikdr.get_num_threads()
    assert not [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "ikdr"]
    default = ikdr.get_num_threads()

    with threadpoolctl.threadpool_limits(1):
        _fit()
    assert core_threads and set(core_threads) == {1}
    assert ikdr.get_num_threads() == default    # restored on exit
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert ikdr.get_num_threads() == 1
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        assert ikdr.get_num_threads() == default
    with ikdr.num_threads(3):                    # an explicit setting wins, as num_threads() in OpenMP
        with threadpoolctl.threadpool_limits(1):
            assert ikdr.get_num_threads() == 3
    controller = threadpoolctl.ThreadpoolController().select(user_api="openmp")
    with controller.limit(limits=2):
        assert ikdr.get_num_threads() == 2
    assert ikdr.get_num_threads() == default


def test_worker_exceptions_reach_the_calling_thread():
    from ikdr import _core

    for threads in (1, 2, 3):
        counts = _core._parallel_check(64, threads)
        assert sum(counts) == 64 and len(counts) == threads
        for fail_at in (0, 31, 63):             # the master's first task, another worker's, the last
            with pytest.raises(RuntimeError, match=f"task {fail_at} failed"):
                _core._parallel_check(64, threads, fail_at)
    assert _core._parallel_check(0, 2) == [0, 0]


def test_every_round_sees_the_whole_round_before_it():
    """parallel_rounds' barrier: with tasks of uneven length on 1 to 3 threads (3
    is more workers than this machine may have cores), no task of a round reads
    a stale entry of the round before it, and an error in a later round reaches
    the caller (the barrier still releases every worker)."""
    from ikdr import _core

    for threads in (1, 2, 3):
        assert _core._rounds_check(40, 7, threads) == (0, 40 * 7)
        with pytest.raises(RuntimeError, match="round 5 task 3 failed"):
            _core._rounds_check(40, 7, threads, fail_round=5, fail_at=3)


@needs_openmp
def test_two_threads_share_the_tasks():
    from ikdr import _core

    counts = _core._parallel_check(1000, 2)      # 1,000 tasks of 0.2 ms each
    assert sum(counts) == 1000 and min(counts) > 0, counts


def test_show_config_names_the_threading():
    import io

    text = io.StringIO()
    ikdr.show_config(file=text)
    line = [ln for ln in text.getvalue().splitlines() if ln.startswith("threading:")][0]
    if _native.OPENMP:
        assert "OpenMP" in line and ikdr.build_info()["threads"] == ikdr.get_num_threads()
    else:
        assert "without OpenMP" in line and ikdr.build_info()["threads"] == 1


class ThreadProbeISM(ikdr.ISM):
    """ISM whose score is the number of threads its fit handed to the core."""

    def fit(self, X, y=None):
        seen = []
        original = _native._threads

        def spy(n_threads):
            seen.append(original(n_threads))
            return seen[-1]

        _native._threads = spy
        try:
            super().fit(X, y)
        finally:
            _native._threads = original
        self.core_threads_ = max(seen)
        return self

    def score(self, X, y=None):
        return float(self.core_threads_)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grid_search_workers_do_not_oversubscribe(monkeypatch):
    # joblib's loky workers get OMP_NUM_THREADS = cores // n_jobs (unless the
    # parent sets it); ikdr follows it, so n_jobs workers x threads <= cores.
    joblib = pytest.importorskip("joblib", reason="needs joblib, which scikit-learn "
                                                  "installs: reinstall scikit-learn")
    from sklearn.model_selection import GridSearchCV

    monkeypatch.delenv("IKDR_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(ikdr._config, "_num_threads", None)
    cores = joblib.cpu_count()
    grid = {"n_components": [1, 2]}
    serial = GridSearchCV(ThreadProbeISM(random_state=0), grid, cv=2, n_jobs=1).fit(_X, _Y)
    assert set(serial.cv_results_["mean_test_score"]) == {float(ikdr.get_num_threads())}
    for n_jobs in (2, 3):
        search = GridSearchCV(ThreadProbeISM(random_state=0), grid, cv=2, n_jobs=n_jobs)
        search.fit(_X, _Y)
        per_worker = max(cores // n_jobs, 1)
        assert set(search.cv_results_["mean_test_score"]) == {float(per_worker)}, n_jobs


# ---------------------------------------------------------------- fork safety
FORK_SCRIPT = textwrap.dedent("""
    import json, multiprocessing as mp, os, sys, time
    import numpy as np
    import ikdr

    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 400)
    X = rng.standard_normal((1200, 6)) + np.outer(y, [2.0, -1.0, 0, 0, 0, 0])

    def fit(seed=0):
        ikdr.set_num_threads(2)
        model = ikdr.ISM(n_components=2, random_state=seed).fit(X, y)
        return model.components_, ikdr.get_num_threads()

    ikdr.set_num_threads(2)
    timings = {}
    t0 = time.perf_counter()
    reference = fit()[0]                      # the parent uses ikdr's threads first
    timings["parent_fit_s"] = time.perf_counter() - t0

    def check(result, what):
        W, threads = result
        assert threads == 2, (what, threads)
        assert np.array_equal(W, reference), what + ": differs from the parent's fit"

    # 1. multiprocessing, fork start method
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    t0 = time.perf_counter()
    child = ctx.Process(target=lambda: queue.put(fit()))
    child.start()
    check(queue.get(timeout=TIMEOUT), "mp fork Process")
    child.join(TIMEOUT)
    assert child.exitcode == 0, child.exitcode
    timings["mp_fork_process_s"] = time.perf_counter() - t0

    # 2. os.fork: the child sends its answer through a pipe
    t0 = time.perf_counter()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            W, threads = fit()
            os.write(w, json.dumps([W.tolist(), threads]).encode())
            code = 0
        except BaseException:
            code = 3
        os._exit(code)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    W, threads = json.loads(b"".join(chunks))
    check((np.array(W), threads), "os.fork")
    timings["os_fork_s"] = time.perf_counter() - t0

    # 3. a Pool.map over several fits (the batch pattern)
    t0 = time.perf_counter()
    with ctx.Pool(2) as pool:
        results = pool.map_async(fit, [0, 0, 0, 0]).get(timeout=TIMEOUT)
    for result in results:
        check(result, "Pool.map")
    timings["pool_map_4_fits_s"] = time.perf_counter() - t0

    # and the parent still works after its children
    check(fit(), "parent after fork")
    print(json.dumps(timings))
""")


#: the tests that fork a threaded process
needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                                reason="needs os.fork of a threaded process, which only Linux "
                                       "and other POSIX systems but macOS support")


def _forking_script(script, hang):
    """Run a script that forks in a subprocess of its own session, so that a hang (a
    thread pool that did not survive fork) is a timeout here and every child is killed;
    the script gets TIMEOUT (half the test's). Returns the JSON its last line prints."""
    timeout = 240
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", f"TIMEOUT = {timeout / 2}\n" + script],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{hang} (no answer within {timeout} s)")
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@needs_fork
def test_fork_after_use_fits_correctly_and_never_hangs():
    timings = _forking_script(FORK_SCRIPT, "a forked child hung")
    print("fork timings:", timings)


FORK_DURING_PASS_SCRIPT = textwrap.dedent("""
    import json, os, threading, time
    import numpy as np
    from ikdr import _native
    from ikdr._native import KernelTerm, TermKind

    rng = np.random.default_rng(0)
    terms = [KernelTerm(TermKind.gaussian, sigma=2.0)]
    X = rng.standard_normal((20000, 8))          # a pass of about half a second
    small = rng.standard_normal((600, 5))
    expected_small = _native.fused_product(small, terms, rhs=small, n_threads=1).product
    # this thread's runtime keeps threads of its own, as after any fit
    assert np.array_equal(_native.fused_product(small, terms, rhs=small, n_threads=2).product,
                          expected_small)

    results = []
    def long_passes():
        for _ in range(3):
            results.append(_native.fused_product(X, terms, n_threads=2).value_sums)
    thread = threading.Thread(target=long_passes)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while _native.active_passes() == 0:           # until the thread is inside a pass
        assert time.monotonic() < deadline, "the pass never started"
        time.sleep(0.0005)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            skipped = _native._forked_without_pause and _native.active_passes() == 0
            got = _native.fused_product(small, terms, rhs=small, n_threads=2).product
            code = 0 if skipped and np.array_equal(got, expected_small) else 2
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    thread.join()
    assert os.WIFEXITED(status), status
    # the parent's passes went on undisturbed (the single-threaded answer, bitwise);
    # the child's exit code says what it saw
    passes = _native.active_passes()
    expected = _native.fused_product(X, terms, n_threads=1).value_sums
    parent_ok = len(results) == 3 and all(np.array_equal(r, expected) for r in results)
    print(json.dumps({"child": os.WEXITSTATUS(status), "passes_after": passes,
                      "parent_ok": parent_ok}))
""")


@needs_fork
@pytest.mark.skipif(not _native.OPENMP,
                    reason="needs a build with OpenMP (there is no runtime to pause without it)")
def test_fork_while_another_thread_runs_a_pass():
    """The fork handler leaves the runtime alone while another thread's pass runs in it
    (pausing it then is not allowed), and the child runs single-threaded instead."""
    report = _forking_script(FORK_DURING_PASS_SCRIPT, "a fork during a pass hung")
    # 0: the child saw the pause skipped, no pass of its own counted, and the right answer
    assert report == {"child": 0, "passes_after": 0, "parent_ok": True}, report


def test_passes_are_counted_while_they_run():
    """What the fork handler reads: calls inside the core, of every thread."""
    import threading
    import time

    from ikdr._native import KernelTerm, TermKind

    X = np.random.default_rng(0).standard_normal((20000, 8))
    assert _native.active_passes() == 0
    seen = []
    thread = threading.Thread(target=lambda: _native.fused_product(
        X, [KernelTerm(TermKind.gaussian, sigma=2.0)], n_threads=1))
    thread.start()
    while thread.is_alive():
        seen.append(_native.active_passes())
        time.sleep(0.001)
    thread.join()
    assert max(seen) == 1 and _native.active_passes() == 0, sorted(set(seen))


# Concurrent fits from Python threads: tests/test_runtime.py
# (test_two_estimators_in_two_threads).


def test_core_calls_hold_the_blas_at_one_thread_and_restore_it():
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="needs threadpoolctl, an "
                                                                "ikdr dependency: reinstall ikdr")
    from ikdr._config import single_threaded_blas

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]

    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        outer = blas_threads()
        with single_threaded_blas():
            assert set(blas_threads()) <= {1}
            with single_threaded_blas():            # nested: still one, then back to one
                assert set(blas_threads()) <= {1}
            assert set(blas_threads()) <= {1}
        assert blas_threads() == outer
        # overlapping holds (two Python threads' fits): the first to end leaves
        # the BLAS at one thread, the last restores it
        first, second = single_threaded_blas(), single_threaded_blas()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert set(blas_threads()) <= {1}
        second.__exit__(None, None, None)
        assert blas_threads() == outer


def test_a_hold_taken_in_another_python_thread_holds_the_blas():
    """threadpoolctl (3.8 on) lets only one Python thread set OpenBLAS's process-wide
    pool and ignores the others: the core's hold in a worker thread (a fit in a
    thread pool) did nothing once the main thread had held the BLAS, and the
    core's GEMMs ran threaded, with other sums."""
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="needs threadpoolctl, an "
                                                                "ikdr dependency: reinstall ikdr")
    from concurrent.futures import ThreadPoolExecutor

    from ikdr._config import blas_threads, single_threaded_blas

    def counts():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]

    def held(n):
        with blas_threads(n):
            return counts()

    with single_threaded_blas():         # the main thread holds first ...
        pass
    with blas_threads(2):
        outer = counts()
        with ThreadPoolExecutor(1) as pool:   # ... then a worker thread
            assert set(pool.submit(held, 1).result()) <= {1}
            assert counts() == outer
            with single_threaded_blas():      # overlapping holds: the fewest threads
                assert set(pool.submit(held, 2).result()) <= {1}


@pytest.mark.skipif(not _native.OPENMP_PAUSE,
                    reason="this OpenMP runtime cannot release its threads (no "
                           "omp_pause_resource_all, OpenMP 5.0): forked children run "
                           "single-threaded and there is nothing to test")
def test_a_pass_after_the_runtime_released_its_threads():
    # what the fork handler does before every fork, in this process
    from ikdr import _core

    before = _core._parallel_check(400, 2)
    assert _native.openmp_pause() == 0
    after = _core._parallel_check(400, 2)        # new threads, the same split
    assert sum(before) == sum(after) == 400 and len(after) == 2
    assert np.array_equal(_fit(), _fit())
