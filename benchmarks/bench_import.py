"""What ``import ikdr`` costs beyond ``import sklearn.base`` (target: <= 0.25 s).

Each repeat is a fresh interpreter that imports ``sklearn.base`` (numpy, scipy
and joblib come with it), then ``ikdr``, and reports both times; the table
gives the median and the minimum over the repeats, and the ten modules
``python -X importtime`` charges most to ``import ikdr`` once sklearn.base is
loaded. The lazy names (estimators, submodules, command line) are loaded on
first access, also timed (``from ikdr import ISM``).

    python benchmarks/bench_import.py                   # the installed / PYTHONPATH ikdr
    PYTHONPATH=src python benchmarks/bench_import.py --repeat 15 --out benchmarks/results/import_time.md
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _peers import emit, results_head  # noqa: E402

PROBE = """
import json, time
t0 = time.perf_counter()
import sklearn.base
t1 = time.perf_counter()
import ikdr
t2 = time.perf_counter()
from ikdr import ISM
t3 = time.perf_counter()
print(json.dumps({"sklearn_base": t1 - t0, "ikdr": t2 - t1, "first_estimator": t3 - t2,
                  "file": ikdr.__file__, "version": ikdr.__version__}))
"""


def measure(repeat: int) -> list[dict]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout))
    return runs


def top_modules(count: int = 10) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of what ``import ikdr`` loads after sklearn.base."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import sklearn.base; import ikdr"], capture_output=True, text=True,
                         check=True)
    lines = out.stderr.splitlines()
    start = max(i for i, line in enumerate(lines) if line.rstrip().endswith("| sklearn.base"))
    rows = []
    for line in lines[start + 1:]:
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--out", help="write the table (markdown) here")
    args = parser.parse_args()
    runs = measure(args.repeat)
    ikdr_s = [r["ikdr"] for r in runs]
    lines = [
        *results_head("import ikdr: cost beyond import sklearn.base", "bench_import.py",
                      details=[f"Python {platform.python_version()}, ikdr {runs[0]['version']}, "
                               f"median and minimum over {args.repeat} fresh interpreters"]),
        "| step | median s | min s |",
        "|---|---|---|",
    ]
    for key, label in (("sklearn_base", "import sklearn.base"), ("ikdr", "then import ikdr"),
                       ("first_estimator", "then from ikdr import ISM")):
        values = [r[key] for r in runs]
        lines.append(f"| {label} | {statistics.median(values):.3f} | {min(values):.3f} |")
    verdict = "meets" if statistics.median(ikdr_s) <= 0.25 else "MISSES"
    lines += ["", f"`import ikdr` after sklearn.base: median {statistics.median(ikdr_s):.3f} s, "
              f"{verdict} the 0.25 s target.", "",
              "Largest cumulative import times charged to `import ikdr` (-X importtime, one run):",
              "", "| us | module |", "|---|---|"]
    lines += [f"| {us} | `{name.strip()}` |" for us, name in top_modules()]
    text = "\n".join(lines) + "\n"
    emit(text, args.out)


if __name__ == "__main__":
    main()
