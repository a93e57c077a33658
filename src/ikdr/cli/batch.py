"""Batch mode of the command line: one command over many input files.

``ikdr reduce a.csv b.csv 'runs/*.csv' --labels '{stem}.labels.csv' --out results --jobs 2``
runs the single-file command once per input, in ``--jobs`` worker processes
with ``cores // jobs`` threads each (``--threads`` can only lower it), so that
workers x threads never exceeds the cores. Every input gets its own output
folder ``OUT/<stem>/`` (the arrays and ``summary.json`` of a single run), and
the batch writes

* ``OUT/summary.csv``: one row per file (file, status, error, shape,
  objective, time, the support's feature names separated by ``;``, the path
  of its ``importances.csv``, ...), appended and flushed as each file finishes, so an
  interrupted batch keeps the rows of the files already done;
* ``OUT/summary.json``: the same rows in input order plus the totals.

The options are checked once before any worker starts (a bad option value, or
no source of labels for a command that needs them, is one usage error and exit
code 2). A bad file (missing, unreadable, ragged or non-numeric CSV, wrong
number of labels, a label column it does not have, fewer features than
components) gets ``status=failed`` and its error in its row; the other files go
on. The
exit code is 1 when any file failed. Option values containing ``{stem}``,
``{name}`` or ``{dir}`` (e.g. ``--labels``, ``--existing``) are filled in per
input file.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import glob
import io
import json
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Dict, List, Optional, Sequence

from .._config import usable_cores, num_threads

#: the columns of summary.csv, in order
COLUMNS = ("file", "status", "error", "n_samples", "n_features", "shape", "n_components",
           "n_support", "objective_name", "objective", "n_iter", "converged", "time_s", "output",
           "support", "importances", "warnings")

#: per command: the summary entry reported as the file's objective
OBJECTIVES = {"reduce": ("hsic", "quality"), "altcluster": ("cost",), "knet": ("objective",),
              "ksvd": ("singular_values",)}

_GLOB_CHARS = set("*?[")


def is_batch(inputs: Sequence[str]) -> bool:
    """Several inputs, or a pattern: batch mode (one folder per input)."""
    return len(inputs) > 1 or any(_is_pattern(s) for s in inputs)


def _is_pattern(spec: str) -> bool:
    return bool(_GLOB_CHARS & set(spec)) and not os.path.exists(spec)


def expand_inputs(specs: Sequence[str]) -> List[str]:
    """Files in the order given, each glob pattern expanded (sorted); a
    pattern matching nothing stays as it is (its row then says so)."""
    files: List[str] = []
    for spec in specs:
        matches = sorted(glob.glob(spec)) if _is_pattern(spec) else [spec]
        files.extend(matches or [spec])
    return list(dict.fromkeys(files))  # without repeats, in order


def output_folders(files: Sequence[str], out: str) -> List[str]:
    """``out/<stem>`` per file; repeated stems get ``-2``, ``-3``, ..."""
    used: Dict[str, int] = {}
    folders = []
    for f in files:
        stem = os.path.splitext(os.path.basename(f.rstrip("/\\")))[0] or "input"
        used[stem] = used.get(stem, 0) + 1
        folders.append(os.path.join(out, stem if used[stem] == 1 else f"{stem}-{used[stem]}"))
    return folders


def plan_workers(n_files: int, jobs: Optional[int], threads: Optional[int]) -> "tuple[int, int]":
    """(worker processes, threads per worker) with workers x threads <= cores."""
    cores = usable_cores()
    jobs = cores if jobs is None or jobs <= 0 else jobs
    jobs = max(1, min(jobs, n_files))
    per_worker = max(1, cores // jobs)
    if threads:
        per_worker = min(per_worker, threads)
    return jobs, per_worker


def _fill(value: Any, path: str) -> Any:
    """An option value with {stem}/{name}/{dir} filled in for ``path``."""
    if isinstance(value, str) and "{" in value:
        name = os.path.basename(path)
        return value.format(stem=os.path.splitext(name)[0], name=name,
                            dir=os.path.dirname(path) or ".")
    if isinstance(value, list):
        return [_fill(v, path) for v in value]
    return value


def _row_from_summary(command: str, summary: Dict[str, Any], out: str) -> Dict[str, Any]:
    row: Dict[str, Any] = {}
    if summary.get("support") is not None:
        row["support"] = ";".join(summary["support"])
    if summary.get("importances"):
        row["importances"] = os.path.join(out, summary["importances"])
    if "shape" in summary:
        row["n_samples"], row["n_features"] = summary["shape"][0], summary["shape"][1]
    else:
        row["n_samples"], row["n_features"] = summary.get("n_samples"), summary.get("n_features")
    row["shape"] = f"{row['n_samples']}x{row['n_features']}"
    row["n_components"] = summary.get("n_components")
    # the features the projection uses: with as many as components, W only rotates
    # within them, the objective does not change, and the fit ends at once (n_iter 0)
    row["n_support"] = len(summary["support"]) if "support" in summary else None
    for name in OBJECTIVES.get(command, ()):
        if summary.get(name) is not None:
            value = summary[name]
            if name == "singular_values":
                name, value = "sum_singular_values", float(sum(value))
            row["objective_name"], row["objective"] = name, float(value)
            break
    row["n_iter"] = summary.get("n_iter")
    row["converged"] = summary.get("converged")
    return row


def run_one(options: Dict[str, Any], path: str, out: str, threads: int) -> Dict[str, Any]:
    """Run the single-file command on ``path`` into ``out``; never raises.

    Returns the file's row of the batch summary.
    """
    args = argparse.Namespace(**{k: _fill(v, path) for k, v in options.items()})
    args.data, args.out, args.verbose, args.quiet = path, out, False, True
    row: Dict[str, Any] = {"file": path, "output": out}
    t0 = time.perf_counter()
    caught: List[str] = []
    try:
        with warnings.catch_warnings(record=True) as records, num_threads(threads), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("always")
            summary = args.func(args)
            caught = sorted({str(r.message).strip().splitlines()[0] for r in records})
        row.update(status="ok", error="", **_row_from_summary(args.command, summary, out))
    except Exception as exc:  # noqa: BLE001 - a bad file is a row, not the end of the batch
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        row.update(status="failed", error=f"{type(exc).__name__}: {message}".rstrip(": "),
                   output="")
        with contextlib.suppress(OSError):  # a folder the command made before failing, empty
            if os.path.isdir(out) and not os.listdir(out):
                os.rmdir(out)
    row["time_s"] = round(time.perf_counter() - t0, 6)
    row["warnings"] = "; ".join(caught)
    return row


class _SummaryCSV:
    """summary.csv, one row appended and flushed per finished file."""

    def __init__(self, path: str):
        self._fh = open(path, "w", newline="", encoding="utf-8")
        self._writer = csv.DictWriter(self._fh, fieldnames=COLUMNS, extrasaction="ignore")
        self._writer.writeheader()
        self._fh.flush()

    def add(self, row: Dict[str, Any]) -> None:
        self._writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def _progress(done: int, total: int, row: Dict[str, Any], quiet: bool, command: str) -> None:
    if quiet:
        return
    what = (f"ok {row.get('shape')} {row['time_s']:.2f} s" if row["status"] == "ok"
            else f"FAILED: {row['error']}")
    print(f"ikdr {command}: [{done}/{total}] {row['file']}: {what}", file=sys.stderr, flush=True)


def run_batch(args: argparse.Namespace, jsonable: Callable[[Any], Any]) -> "tuple[Dict[str, Any], int]":
    """Run ``args.func`` over every input of ``args.data``; returns (totals, exit code)."""
    files = expand_inputs(args.data)
    os.makedirs(args.out, exist_ok=True)
    folders = output_folders(files, args.out)
    jobs, threads = plan_workers(len(files), getattr(args, "jobs", 1), args.threads)
    options = {k: v for k, v in vars(args).items() if k not in ("data", "out", "jobs")}
    if not args.quiet:
        print(f"ikdr {args.command}: {len(files)} files, {jobs} worker process(es) x "
              f"{threads} thread(s)", file=sys.stderr, flush=True)
    rows: Dict[int, Dict[str, Any]] = {}
    table = _SummaryCSV(os.path.join(args.out, "summary.csv"))
    t0 = time.perf_counter()
    interrupted = False
    try:
        if jobs == 1:
            for i, (path, folder) in enumerate(zip(files, folders)):
                rows[i] = run_one(options, path, folder, threads)
                table.add(rows[i])
                _progress(len(rows), len(files), rows[i], args.quiet, args.command)
        else:
            pool = ProcessPoolExecutor(max_workers=jobs)
            try:
                futures = {pool.submit(run_one, options, path, folder, threads): i
                           for i, (path, folder) in enumerate(zip(files, folders))}
                for future in as_completed(futures):
                    i = futures[future]
                    try:
                        rows[i] = future.result()
                    except Exception as exc:  # noqa: BLE001 - e.g. a worker killed by the OS
                        rows[i] = {"file": files[i], "output": folders[i], "status": "failed",
                                   "error": f"worker process failed: {type(exc).__name__}: {exc}",
                                   "time_s": 0.0}
                    table.add(rows[i])
                    _progress(len(rows), len(files), rows[i], args.quiet, args.command)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        table.close()
    ordered = [rows.get(i) or {"file": f, "output": d, "status": "not run",
                               "error": "interrupted" if interrupted else ""}
               for i, (f, d) in enumerate(zip(files, folders))]
    n_ok = sum(r["status"] == "ok" for r in ordered)
    totals = {"command": args.command, "n_files": len(files), "n_ok": n_ok,
              "n_failed": len(files) - n_ok, "jobs": jobs, "threads_per_job": threads,
              "time_s": time.perf_counter() - t0,
              "summary_csv": os.path.join(args.out, "summary.csv"),
              "summary_json": os.path.join(args.out, "summary.json")}
    with open(totals["summary_json"], "w", encoding="utf-8") as fh:
        json.dump({**totals, "files": ordered}, fh, indent=2, default=jsonable)
    if interrupted:
        return totals, 130
    return totals, 0 if n_ok == len(files) else 1
