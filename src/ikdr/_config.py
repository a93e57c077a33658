"""Thread control, version and build information.

ikdr's C++ passes run on OpenMP threads; how many is decided here, in Python,
and passed to every call: :func:`set_num_threads` (or the
:func:`num_threads` context manager) wins, then the environment variable
``IKDR_NUM_THREADS``, then the OpenMP runtime's own setting
(``omp_get_max_threads()``: ``OMP_NUM_THREADS`` when the process started,
which joblib/loky sets in its workers to cores / n_jobs so that
``GridSearchCV(n_jobs=...)`` does not oversubscribe, or what
``threadpoolctl.threadpool_limits`` set since), which defaults to the cores
this process may run on. ``threadpoolctl.threadpool_info()`` lists the
runtime loaded by ikdr's core (``user_api="openmp"``). A core built without
OpenMP runs every call on one thread (:func:`show_config` says so).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from typing import IO, Any, Callable, Iterator

_num_threads: int | None = None
#: omp_get_max_threads of ikdr's OpenMP runtime, registered by ikdr._native
#: when the core was built with OpenMP
_runtime_threads: Callable[[], int] | None = None
#: the compiled core's build information, registered by ikdr._native at import
#: (the configuration sits below the native door and does not import it)
_native_info: Callable[[], dict[str, Any]] | None = None


def register_runtime_threads(reader: Callable[[], int] | None) -> None:
    """Called by :mod:`ikdr._native` at import: how to read the OpenMP runtime's setting."""
    global _runtime_threads
    _runtime_threads = reader


def register_native_info(reader: Callable[[], dict[str, Any]]) -> None:
    """Called by :mod:`ikdr._native` at import: how to read the core's build information."""
    global _native_info
    _native_info = reader


def _core_info() -> dict[str, Any]:
    if _native_info is None:             # only before ikdr._native has loaded the core
        raise RuntimeError("ikdr's compiled core is not loaded; import ikdr first")
    return _native_info()


def _parse_threads(value: str | None) -> int | None:
    """A thread-count variable's value (OpenMP's nested list: the first entry),
    or None when it is unset, not a number or below 1."""
    if not value or not value.strip():
        return None
    try:
        n = int(value.split(",")[0])
    except ValueError:
        return None
    return n if n >= 1 else None


def check_thread_environment() -> None:
    """Warn, naming it, about a thread-count variable that is set but not a
    positive integer: it is ignored (never a crash)."""
    for var in ("IKDR_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var)
        if value is not None and value.strip() and _parse_threads(value) is None:
            warnings.warn(f"{var}={value!r} is not a positive integer and is ignored; ikdr uses "
                          f"{get_num_threads()} threads (set {var} to a number >= 1, or call "
                          "ikdr.set_num_threads)", RuntimeWarning, stacklevel=3)


def _default_threads() -> int:
    """``IKDR_NUM_THREADS``, then the OpenMP runtime's setting (without OpenMP:
    ``OMP_NUM_THREADS``), then the usable cores."""
    n = _parse_threads(os.environ.get("IKDR_NUM_THREADS"))
    if n is not None:
        return n
    if _runtime_threads is not None:
        return max(1, int(_runtime_threads()))
    n = _parse_threads(os.environ.get("OMP_NUM_THREADS"))
    return n if n is not None else usable_cores()


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """Number of threads each call of the C++ core uses (``set_num_threads`` or the default)."""
    return _num_threads if _num_threads is not None else _default_threads()


def set_num_threads(n: int | None) -> None:
    """Set the number of OpenMP threads of ikdr's C++ passes (passed to every call).

    ``None`` restores the default (``IKDR_NUM_THREADS``, then the OpenMP
    runtime's setting: ``OMP_NUM_THREADS`` or ``threadpoolctl``'s limit, by
    default the number of cores). An explicit setting wins over the
    runtime's, as OpenMP's ``num_threads`` clause does over
    ``omp_set_num_threads``. The BLAS used for the GEMM-shaped parts keeps its
    own setting; use :func:`num_threads` to limit both for a block of code.
    """
    global _num_threads
    if n is None:
        _num_threads = None
        return
    if isinstance(n, bool) or not isinstance(n, (int,)) and not hasattr(n, "__index__"):
        raise TypeError(f"n must be an int or None, got {type(n).__name__}")
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    _num_threads = n


@contextlib.contextmanager
def num_threads(n: int) -> Iterator[None]:
    """Context manager: run ikdr's C++ loops and the BLAS with ``n`` threads.

    Examples
    --------
    >>> import ikdr
    >>> with ikdr.num_threads(1):
    ...     ikdr.get_num_threads()
    1
    """
    global _num_threads
    previous = _num_threads
    set_num_threads(n)
    try:
        with blas_threads(n):
            yield
    finally:
        _num_threads = previous


def _core_directory() -> str:
    return os.path.dirname(os.path.realpath(__file__))


# -- one version string -----------------------------------------------------------
_version: str | None = None


def package_version() -> str:
    """ikdr's version: the installed distribution's metadata (pyproject.toml's
    ``version``). In a source tree (``PYTHONPATH=src``) it is read from the
    pyproject.toml next to ``src``, never from another installed copy."""
    global _version
    if _version is None:
        _version = _find_version()
    return _version


def _find_version() -> str:
    import re
    from importlib import metadata

    here = _core_directory()
    try:
        dist = metadata.distribution("ikdr")
        located = os.path.realpath(str(dist.locate_file("ikdr/__init__.py")))
        if os.path.dirname(located) == here:
            return dist.version
    except metadata.PackageNotFoundError:
        pass
    pyproject = os.path.join(here, os.pardir, os.pardir, "pyproject.toml")
    try:
        with open(pyproject, encoding="utf-8") as fh:
            match = re.search(r'^version\s*=\s*"([^"]+)"', fh.read(), re.MULTILINE)
    except OSError:
        match = None
    return match.group(1) if match else "0+unknown"


# -- the one thread limiter --------------------------------------------------------
_controller: Any = None


def _threadpool_controller() -> Any:
    """The process's one ``threadpoolctl.ThreadpoolController``, made at the first
    use (a new one scans every loaded library, more than a small pass costs), or None
    without threadpoolctl. Made after SciPy's BLAS is loaded, so it sees it."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _controller = False
        else:
            _controller = ThreadpoolController()
    return _controller or None


_blas: tuple | None = None


def _blas_libraries() -> tuple:
    """(process-wide, per-thread) BLAS libraries of the one controller, found once."""
    global _blas
    if _blas is None:
        controller = _threadpool_controller()
        found = () if controller is None else controller.select(user_api="blas").lib_controllers
        _blas = (tuple(lib for lib in found if not _per_thread(lib)),
                 tuple(lib for lib in found if _per_thread(lib)))
    return _blas


def _set_process_threads(lib: Any, n: int) -> None:
    """Set a process-wide BLAS pool to ``n`` threads from whichever Python thread
    asks. threadpoolctl (3.8 on) lets only one "controlling" Python thread set
    OpenBLAS's pthreads pool and silently ignores the others: a hold taken in
    a worker thread (a fit in a thread pool) would leave the BLAS threaded
    under the core's own threads, and its results would differ from the same
    fit's in the main thread. The holds are serialised by their own lock, so
    clearing the controlling thread around each change is safe."""
    clear = getattr(type(lib), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)
    lib.set_num_threads(n)
    if clear is not None:
        clear(force=True)


def _per_thread(lib: Any) -> bool:
    """Whether the library's limit is per calling thread (a BLAS on OpenMP threads)."""
    return getattr(lib, "threading_layer", None) == "openmp"


class _BlasHold:
    """Holds every loaded BLAS at ``n`` threads for a block of code, from any Python thread.

    A pthreads BLAS (SciPy's and NumPy's OpenBLAS) has one thread pool for the
    whole process, so holds taken by several Python threads at once overlap:
    the BLAS runs on the fewest threads any active hold asks for, and the last
    hold to end restores each library's own count (read when the first began).
    Holds nest. A hold that changes nothing costs a counter; a change is a
    direct call of the library's setter, where ``threadpoolctl.threadpool_limits``
    re-inspects every loaded library on each use: a small fit makes about 40
    holds (``benchmarks/bench_call_overhead.py`` times the fits and passes at
    n = 1,000). A BLAS whose limit is per thread (OpenBLAS on OpenMP) is set and
    restored by each hold in its own thread."""

    __slots__ = ("n", "shared", "local", "own")
    _lock = threading.Lock()
    _active: list[int] = []          # the thread counts of the holds now active
    _saved: tuple = ()               # each process-wide library's count before the first hold
    _counts: list[int] = []          # each one's count while holds are active

    def __init__(self, n: int, shared: tuple, local: tuple) -> None:
        self.n = n
        self.shared = shared
        self.local = local
        self.own: tuple = ()

    def __enter__(self) -> "_BlasHold":
        cls = _BlasHold
        with cls._lock:
            if not cls._active:
                cls._saved = tuple(lib.num_threads for lib in self.shared)
                cls._counts = list(cls._saved)
            cls._active.append(self.n)
            cls._set(self.shared, [min(cls._active)] * len(self.shared))
        if self.local:
            self.own = tuple((lib, lib.num_threads) for lib in self.local)
            for lib in self.local:
                lib.set_num_threads(self.n)
        return self

    def __exit__(self, *exc: object) -> None:
        cls = _BlasHold
        for lib, threads in reversed(self.own):
            lib.set_num_threads(threads)
        with cls._lock:
            cls._active.remove(self.n)
            cls._set(self.shared, [min(cls._active)] * len(self.shared) if cls._active
                     else list(cls._saved))

    @classmethod
    def _set(cls, shared: tuple, counts: list) -> None:
        for i, (lib, n) in enumerate(zip(shared, counts)):
            if cls._counts[i] != n:
                _set_process_threads(lib, n)
                cls._counts[i] = n


def _new_hold_lock_in_child() -> None:
    # a child forked while another thread held the lock would wait on it forever
    _BlasHold._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_hold_lock_in_child)


def blas_threads(n: int) -> contextlib.AbstractContextManager[Any]:
    """Context manager: every loaded BLAS at ``n`` threads for a block of code.

    ikdr's one thread limiter for the BLAS (:func:`num_threads`,
    :func:`single_threaded_blas`, :func:`small_problem_blas`, :func:`one_thread`
    and the landmark passes use it). It works from any Python thread;
    overlapping holds run the BLAS on the fewest threads any of them asks for
    (see ``_BlasHold``). Without threadpoolctl it does nothing.
    """
    shared, local = _blas_libraries()
    if not shared and not local:
        return contextlib.nullcontext()
    return _BlasHold(max(1, int(n)), shared, local)


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """Hold the BLAS at one thread while a C++ core call runs.

    The core splits its GEMMs over threads of its own; a multi-threaded
    BLAS underneath would spin-wait against them on the same cores, and a
    pass would wait for a core at every barrier (``benchmarks/bench_call_overhead.py``
    times the passes on 1 and on 2 threads); its sums would also depend on the
    BLAS's threads. The hold itself is two calls into each BLAS, cheap beside any pass.
    """
    return blas_threads(1)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Every thread pool at one thread, for light work such as k-means on an n x k
    embedding: the BLAS (:func:`blas_threads`) and the calling thread's OpenMP
    runtimes (their limit is per thread: ``omp_set_num_threads``), through the
    process's one controller."""
    controller = _threadpool_controller()
    with blas_threads(1):
        if controller is None:
            yield
            return
        with controller.limit(limits=1, user_api="openmp"):
            yield


#: BLAS operands up to this many entries count as small (see small_problem_blas)
SMALL_BLAS_ENTRIES = 4_000_000


def small_problem_blas(entries: int) -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread for a small dense problem (``entries`` of its operand up to
    :data:`SMALL_BLAS_ENTRIES`), the BLAS's own threads otherwise.

    Small factorisations gain nothing from threads and lose much when the cores
    are busy: the BLAS's threads then wait for cores the other work holds, and a
    small SVD (a 160 x 160 gesdd, the 958 x 64 SVD of a learned compatibility
    map's step) takes many times its single-threaded time. The threads' per-call
    cost at small sizes: ``benchmarks/bench_call_overhead.py``.
    """
    return single_threaded_blas() if entries <= SMALL_BLAS_ENTRIES else contextlib.nullcontext()


def _blas_description() -> str:
    try:
        from threadpoolctl import threadpool_info

        import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
    except ImportError:  # pragma: no cover
        return "SciPy's BLAS (threadpoolctl unavailable)"
    for info in threadpool_info():
        if info.get("user_api") == "blas" and "scipy" in str(info.get("filepath", "")):
            return (f"{info.get('internal_api')} {info.get('version')} "
                    f"({info.get('architecture')}, {info.get('num_threads')} threads) from SciPy")
    return "SciPy's BLAS"


def build_info() -> dict[str, Any]:
    """How the compiled core was built and runs here.

    Keys: ``version``, ``compiler``, ``simd`` (the instruction set of the
    kernels chosen at run time: baseline, avx2 or avx512), ``threading`` and
    ``threads`` (what :func:`get_num_threads` gives now).
    """
    info = _core_info()
    info["threads"] = get_num_threads() if info.get("openmp", True) else 1
    return info


def show_config(file: IO[str] | None = None) -> None:
    """Print the version, compiler, threading, threads, SIMD level and BLAS in use."""
    info = _core_info()
    lines = [
        f"ikdr {package_version()}",
        f"compiler: {info.get('compiler', 'unknown')}",
        f"threading: {info['threading']}"
        + (f" ({info['openmp_library']})" if info.get("openmp_library") else ""),
        f"threads: {get_num_threads()} ({_threads_source()})" if info.get("openmp", True)
        else "threads: 1 (built without OpenMP: single-threaded)",
        f"SIMD: {info['simd']} (panel kernels dispatched at run time)",
        f"BLAS: {_blas_description()}",
        f"Python: {sys.version.split()[0]}",
    ]
    print("\n".join(lines), file=file or sys.stdout)


def _threads_source() -> str:
    if _num_threads is not None:
        return "set_num_threads"
    if _parse_threads(os.environ.get("IKDR_NUM_THREADS")) is not None:
        return "IKDR_NUM_THREADS"
    if _runtime_threads is not None:
        return "the OpenMP runtime: OMP_NUM_THREADS, threadpoolctl, or the usable cores"
    if _parse_threads(os.environ.get("OMP_NUM_THREADS")) is not None:
        return "OMP_NUM_THREADS"
    return "usable cores"


# -- memory budget of the dense n x n paths ------------------------------------
_memory_budget: int | None = None
#: fraction of the physical memory a single dense allocation may take by default
DEFAULT_MEMORY_FRACTION = 0.5
_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20,
          "MIB": 2**20, "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40,
          "TIB": 2**40}


def _parse_bytes(text) -> int:
    s = str(text).strip().upper().replace(" ", "")
    number = s.rstrip("KMGTIB")
    unit = s[len(number):]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"IKDR_MEMORY_BUDGET must be a number of bytes such as 4000000000 "
                         f"or '4G', got {text!r}") from None
    if unit not in _UNITS or not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"IKDR_MEMORY_BUDGET must be a positive size such as '512M' or '4G', "
                         f"got {text!r}")
    return int(value * _UNITS[unit])


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def get_memory_budget() -> int:
    """Bytes a single dense n x n allocation of ikdr may use.

    ``set_memory_budget`` wins, then the environment variable
    ``IKDR_MEMORY_BUDGET`` (bytes, or with a unit: ``"512M"``, ``"4G"``), then
    half of the physical memory (16 GiB when it cannot be read).
    """
    if _memory_budget is not None:
        return _memory_budget
    env = os.environ.get("IKDR_MEMORY_BUDGET")
    if env:
        return _parse_bytes(env)
    total = _physical_memory()
    return int(DEFAULT_MEMORY_FRACTION * total) if total else 16 * 2**30


def set_memory_budget(nbytes: int | float | str | None) -> None:
    """Set the memory budget of ikdr's dense paths (bytes, ``"4G"``, or None for the default).

    Before forming a dense n x n (or n x m) matrix, ikdr estimates its size.
    Above the budget it takes the matrix-free path when there is one (the
    Lanczos spectral step, ARPACK for :class:`ikdr.KernelSVD`) and otherwise
    raises ``MemoryError`` with the estimate, instead of being killed by the
    operating system.

    Examples
    --------
    >>> import ikdr
    >>> ikdr.set_memory_budget("1G"); ikdr.get_memory_budget()
    1073741824
    >>> ikdr.set_memory_budget(None)
    """
    global _memory_budget
    if nbytes is None:
        _memory_budget = None
        return
    if isinstance(nbytes, str):
        _memory_budget = _parse_bytes(nbytes)
        return
    if isinstance(nbytes, bool) or not hasattr(nbytes, "__index__") and not isinstance(nbytes, float):
        raise TypeError(f"nbytes must be an int, a size string or None, got {type(nbytes).__name__}")
    if not nbytes > 0 or nbytes != nbytes or nbytes == float("inf"):
        raise ValueError(f"nbytes must be positive and finite, got {nbytes}")
    _memory_budget = int(nbytes)


@contextlib.contextmanager
def memory_budget(nbytes: int | float | str | None) -> Iterator[None]:
    """Context manager: run a block with another memory budget (see :func:`set_memory_budget`)."""
    global _memory_budget
    previous = _memory_budget
    set_memory_budget(nbytes)
    try:
        yield
    finally:
        _memory_budget = previous


def _format_bytes(n) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} bytes"


def fits_memory(nbytes: float) -> bool:
    """Whether an allocation of ``nbytes`` stays within the memory budget."""
    return nbytes <= get_memory_budget()


def require_memory(nbytes: float, what: str) -> None:
    """Raise ``MemoryError`` (with the estimate) when ``what`` would exceed the budget."""
    budget = get_memory_budget()
    if nbytes > budget:
        raise MemoryError(f"{what} needs an estimated {_format_bytes(nbytes)}, above ikdr's "
                          f"memory budget of {_format_bytes(budget)}; use a matrix-free option, "
                          "a smaller problem, or raise the budget (ikdr.set_memory_budget or "
                          "IKDR_MEMORY_BUDGET)")
