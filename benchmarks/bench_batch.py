"""Batch throughput: ``ikdr reduce 'dir/*.csv' --jobs N`` against a shell loop of single calls.

Writes ``--files`` CSV files of ``--rows`` x ``--cols`` (a labelled Gaussian
mixture, the label in the last column) into a temporary folder, then times

* ``loop``: ``for f in dir/*.csv; do ikdr reduce "$f" ...; done`` in bash,
  one interpreter per file (what a shell pipeline does today);
* ``batch jobs=N``: one ``ikdr reduce 'dir/*.csv' ... --jobs N`` call, for each N
  of ``--jobs`` (workers x threads <= cores).

Both use the same options (``--label-column -1 -k 2 --quiet``) and the same
interpreter (``python -m ikdr``), and the batch's per-file W is checked equal to
the loop's. Reported: wall time, files per second, speed-up over the loop.

    PYTHONPATH=src python benchmarks/bench_batch.py --files 200 --rows 500 --cols 20 \\
        --jobs 1 2 --out benchmarks/results/batch_throughput.md
    PYTHONPATH=src python benchmarks/bench_batch.py --files 6 --rows 100 --cols 5   # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def write_files(folder: str, files: int, rows: int, cols: int) -> None:
    rng = np.random.default_rng(0)
    for i in range(files):
        y = rng.integers(0, 3, rows)
        X = rng.standard_normal((rows, cols))
        X[:, :2] += 2.5 * np.column_stack([y == 1, y == 2])
        np.savetxt(os.path.join(folder, f"part{i:04d}.csv"), np.column_stack([X, y]),
                   delimiter=",", fmt="%.6g")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", help="write the table (markdown) here")
    args = parser.parse_args()
    from _peers import emit, results_head

    options = ["--label-column", "-1", "-k", "2", "--quiet"]
    ikdr = [sys.executable, "-m", "ikdr"]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        write_files(data, args.files, args.rows, args.cols)

        loop_out = os.path.join(tmp, "loop")
        script = (f'for f in {shlex.quote(data)}/*.csv; do '
                  f'b=$(basename "$f" .csv); {shlex.join(ikdr)} reduce "$f" '
                  f'{shlex.join(options)} --out {shlex.quote(loop_out)}/"$b" || exit 1; done')
        t0 = time.perf_counter()
        subprocess.run(["bash", "-c", script], check=True)
        loop_s = time.perf_counter() - t0
        results.append(("shell loop of single calls", loop_s))

        for jobs in args.jobs:
            out = os.path.join(tmp, f"batch{jobs}")
            t0 = time.perf_counter()
            run = subprocess.run([*ikdr, "reduce", os.path.join(data, "*.csv"), *options,
                                  "--out", out, "--jobs", str(jobs)], capture_output=True,
                                 text=True)
            elapsed = time.perf_counter() - t0
            if run.returncode != 0:
                raise SystemExit(f"batch failed: {run.stderr[-2000:]}")
            with open(os.path.join(out, "summary.json")) as fh:
                summary = json.load(fh)
            for row in summary["files"]:  # the same answers as the single calls
                stem = os.path.splitext(os.path.basename(row["file"]))[0]
                np.testing.assert_allclose(np.load(os.path.join(out, stem, "W.npy")),
                                           np.load(os.path.join(loop_out, stem, "W.npy")),
                                           rtol=1e-9, atol=1e-12)
            label = (f"ikdr reduce 'dir/*.csv' --jobs {jobs} "
                     f"({summary['jobs']} workers x {summary['threads_per_job']} threads)")
            results.append((label, elapsed))

    lines = [*results_head("Batch throughput: one `ikdr reduce` over many files vs a shell loop",
                           "bench_batch.py", details=[
                               f"{args.files} files of {args.rows} x {args.cols} (+ label "
                               f"column); options `{' '.join(options)}`"]),
             "| run | wall s | files/s | vs loop |", "|---|---|---|---|"]
    for label, seconds in results:
        lines.append(f"| {label} | {seconds:.2f} | {args.files / seconds:.2f} | "
                     f"{loop_s / seconds:.2f}x |")
    text = "\n".join(lines) + "\n"
    emit(text, args.out)


if __name__ == "__main__":
    main()
