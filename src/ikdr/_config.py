"""Thread control and build information."""
from __future__ import annotations

import contextlib
import os
import sys

from . import _core

_num_threads: int | None = None


def _default_threads() -> int:
    env = os.environ.get("IKDR_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    if env:
        try:
            return max(1, int(env.split(",")[0]))
        except ValueError:
            pass
    return max(1, int(_core.build_info()["omp_max_threads"]))


def get_num_threads() -> int:
    """Number of threads the C++ core uses (``set_num_threads`` or the default)."""
    return _num_threads if _num_threads is not None else _default_threads()


def set_num_threads(n: int | None) -> None:
    """Set the number of OpenMP threads of ikdr's C++ loops.

    ``None`` restores the default (``IKDR_NUM_THREADS``, then
    ``OMP_NUM_THREADS``, then the number of cores). The BLAS used for the
    GEMM-shaped parts keeps its own setting; use :func:`num_threads` to limit
    both for a block of code.
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
def num_threads(n: int):
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
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        limiter = contextlib.nullcontext()
    else:
        limiter = threadpool_limits(limits=int(n), user_api="blas")
    try:
        with limiter:
            yield
    finally:
        _num_threads = previous


_controller = None


def single_threaded_blas():
    """Hold the BLAS at one thread while a C++ core call runs.

    The core splits its GEMMs over its own OpenMP threads; a multi-threaded
    BLAS underneath would spin-wait against them on the same cores (measured:
    2x slower on 2 cores). Costs about 15 microseconds per call.
    """
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController

            import scipy.linalg  # noqa: F401  (loads SciPy's BLAS)
            _controller = ThreadpoolController()
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            _controller = False
    if not _controller:
        return contextlib.nullcontext()
    return _controller.limit(limits=1, user_api="blas")


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


def show_config(file=None) -> None:
    """Print the version, compiler, OpenMP, threads, SIMD level and BLAS in use."""
    from . import __version__

    info = _core.build_info()
    lines = [
        f"ikdr {__version__}",
        f"compiler: {info.get('compiler', 'unknown')}",
        f"OpenMP: {'on' if info['openmp'] else 'off'}",
        f"threads: {get_num_threads()} (OpenMP max {info['omp_max_threads']})",
        f"SIMD: {info['simd']} (panel kernels dispatched at run time)",
        f"BLAS: {_blas_description()}",
        f"Python: {sys.version.split()[0]}",
    ]
    print("\n".join(lines), file=file or sys.stdout)
