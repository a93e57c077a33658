"""Per-iteration reporting shared by the long-running estimators.

One mechanism for every estimator's ``verbose`` parameter: an
:class:`IterationReport` prints one line per iteration (iteration, objective,
change, elapsed time and the estimator's own extras) and, when tqdm is
installed (``pip install tqdm``, or the ``progress`` extra) and the output is a terminal, keeps
a progress bar over ``max_iter``. Bars appear when ``verbose > 0`` or when
they were switched on process-wide by :func:`progress_bars` (the command line
does so on a terminal unless ``--quiet``). Nothing here is stored on an
estimator, so fitted estimators stay picklable.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import sys
import time
import weakref
from typing import Any

from .validation import plain

_bars_enabled = False       # process-wide switch (the command line turns it on)
_open: weakref.WeakSet[Any] = weakref.WeakSet()   # reports started and not closed: only the outermost draws a bar


def check_verbose(verbose):
    """Validate an estimator's ``verbose`` parameter (a non-negative int or bool)."""
    if not isinstance(verbose, (numbers.Integral, bool)) or verbose < 0:
        raise ValueError(f"verbose must be a non-negative int, got {plain(verbose)!r}")
    return int(verbose)


@contextlib.contextmanager
def progress_bars(enabled=True):
    """Context manager: draw progress bars (if tqdm is installed and stderr is a
    terminal) for every estimator fitted inside, whatever its ``verbose``."""
    global _bars_enabled
    previous = _bars_enabled
    _bars_enabled = bool(enabled)
    try:
        yield
    finally:
        _bars_enabled = previous


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:  # the bar is optional
        return None
    return tqdm


def _format(value):
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.6g}"
    return str(value)


class IterationReport:
    """Report the iterations of one fit (a context manager).

    Parameters
    ----------
    name : str
        Prefix of every line, e.g. ``"ISM"``.
    verbose : int
        0 prints nothing; >= 1 prints one line per iteration.
    total : int or None
        Iteration cap, the length of the progress bar.
    stream : file-like, default sys.stdout
        Where the lines go (scikit-learn's estimators print to stdout).
    """

    def __init__(self, name, verbose=0, total=None, stream=None):
        self.name = name
        self.verbose = int(verbose)
        self.total = total
        self.stream = stream
        self._t0 = time.perf_counter()
        self._bar = None

    def start(self):
        """Open the progress bar (if any); returns self. Pair with :meth:`close`.

        A report left open by an exception is forgotten with its frame (weak
        reference), so it never blocks the bars of later fits.
        """
        outermost = len(_open) == 0
        _open.add(self)
        want_bar = (self.verbose > 0 or _bars_enabled) and outermost
        if want_bar and getattr(sys.stderr, "isatty", lambda: False)():
            tqdm = _tqdm()
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=self.name, leave=False,
                                 file=sys.stderr, dynamic_ncols=True)
        return self

    def close(self):
        """Close the progress bar."""
        _open.discard(self)
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def active(self):
        """Whether reporting does anything (lets callers skip building the line)."""
        return self.verbose > 0 or self._bar is not None

    def __call__(self, iteration, objective=math.nan, change=math.nan, **extra):
        """Report one iteration: its number, objective, change and extras."""
        elapsed = time.perf_counter() - self._t0
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(f"objective={_format(float(objective))}", refresh=False)
        if self.verbose > 0:
            parts = [f"[{self.name}] iter {iteration:>3}"]
            if not math.isnan(float(objective)):  # some loops have no objective (KSVD)
                parts.append(f"objective {_format(float(objective))}")
            parts.append(f"change {_format(float(change))}")
            parts += [f"{key} {_format(value)}" for key, value in extra.items()]
            parts.append(f"time {elapsed:.3f}s")
            self.line("  ".join(parts))

    def ism_step(self, entry):
        """Report one entry of :func:`ikdr.ism`'s history (its ``callback``)."""
        change = entry.get("eigenvalue_change", math.nan)
        if math.isnan(change):
            change = entry.get("angle", math.nan)
        self(entry["iteration"], entry["objective"], change, step=entry["step"])

    def line(self, text):
        """Print a line without breaking a progress bar."""
        if self.verbose <= 0:
            return
        # a nested report writes through the outer loop's bar, so the bar stays whole
        bar = self._bar if self._bar is not None else \
            next((r._bar for r in list(_open) if r._bar is not None), None)
        if bar is not None:
            bar.write(text, file=self.stream or sys.stdout)
        else:
            print(text, file=self.stream or sys.stdout, flush=True)
