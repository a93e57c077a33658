"""The default fit's speed: ``ikdr.ISM()`` as a user first runs it, against its peers.

Four rows, one run (indicative unless the machine is quiet):

* **expression, 700 x 765, 10 classes**: the default fit (``ikdr.ISM(random_state=0)``,
  best of ``--repeat``) against a 100-tree random forest (``n_jobs=-1``) on the same
  rows, in the same run (target: at most 1 s on 2 quiet cores, no slower than the
  forest). The data: scanpy's bundled ``pbmc68k_reduced`` (700 cells x 765 genes,
  ``bulk_labels``) where scanpy is installed, else a simulated expression set of that
  shape (``studies/markers.py``'s ``simulated_expression``: 10 sorted types of 8 to 240
  cells);
* **exact against Nystrom at 20,000 x 256** (``_peers.mixture``, 10 classes, q = 9):
  ``approximation=None`` against ``approximation="nystrom"`` with its defaults and
  against the default ``approximation="auto"``; the ratio (target: at least 10x);
* **a million rows by default**: ``ikdr.ISM(random_state=0)`` on a 1,000,000 x
  ``--wide`` mixture of 5 classes (``approximation="auto"`` chooses landmarks; target:
  under a minute);
* **the machine**: its GEMM rate in float64 and float32, and its CPU and flags in the
  head (``_peers.machine_summary``).

    python benchmarks/bench_defaults.py                  # every row
    python benchmarks/bench_defaults.py --rows expression nystrom --repeat 5
    python benchmarks/bench_defaults.py --out benchmarks/results    # also writes defaults.md

Each fit's passes (``approximation_``, ``n_landmarks_``) and result (HSIC, support size)
are printed beside its time. Run it alone on a quiet machine for figures to quote.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "studies"))     # markers: the expression data
import ikdr  # noqa: E402
from _peers import gemm_rate, mixture, results_head, run_conditions, timed  # noqa: E402
from _peers import write_results  # noqa: E402

#: the cells of each simulated type (700 in all, sorted like pbmc68k_reduced's 10 types)
EXPRESSION_SIZES = (240, 160, 100, 60, 40, 30, 25, 20, 17, 8)
#: genes of the simulated set (pbmc68k_reduced's count)
EXPRESSION_GENES = 765


def expression_data():
    """(X, y, source) of the expression row."""
    from markers import pbmc68k, simulated_expression

    data = pbmc68k()            # None without scanpy
    if data is not None:
        return data[0], data[1], "pbmc68k_reduced (scanpy)"
    X, y, _, _ = simulated_expression(0, EXPRESSION_SIZES, EXPRESSION_GENES)
    return X, y, "simulated expression, 10 types of 8 to 240 cells"


def warm_up():
    """The process's one-time costs (imports on first use, the core's threads) before
    any timed fit."""
    rng = np.random.default_rng(0)
    for approximation in (None, "nystrom"):
        ikdr.ISM(n_components=2, approximation=approximation, n_landmarks=20).fit(
            rng.standard_normal((300, 8)), np.arange(300) % 3)


def fitted(make, X, y, repeat):
    """(model, best seconds) of ``make().fit(X, y)`` over ``repeat`` fits."""
    return timed(lambda: make().fit(X, y), repeat=repeat, quiet=True)


def describe(model):
    passes = "exact" if model.approximation_ is None else \
        f"{model.approximation_}, m = {model.n_landmarks_}"
    return (f"{passes}; HSIC {model.hsic_:.4g}, {model.support_.size} features, "
            f"{model.n_iter_} iterations, converged {model.converged_}")


def row_expression(repeat, out, records):
    from sklearn.ensemble import RandomForestClassifier

    X, y, source = expression_data()
    ism, t_ism = fitted(lambda: ikdr.ISM(random_state=0), X, y, repeat)
    _, t_forest = fitted(lambda: RandomForestClassifier(100, n_jobs=-1, random_state=0), X, y,
                         repeat)
    out.append(f"| expression, {source} | {X.shape[0]:,} x {X.shape[1]} | ISM() {t_ism:.2f} s "
               f"({describe(ism)}) | 100-tree forest {t_forest:.2f} s | "
               f"ISM / forest {t_ism / t_forest:.2f} | <= 1 s and <= the forest |")
    records.append({"row": "expression", "ism_s": t_ism, "forest_s": t_forest})


def row_nystrom(repeat, out, records):
    Xall, yall = mixture(25_000, 256, 10, seed=2)
    X, y = Xall[:20_000], yall[:20_000]
    exact, t_exact = fitted(lambda: ikdr.ISM(n_components=9, random_state=0,
                                             approximation=None), X, y, repeat)
    nystrom, t_nystrom = fitted(lambda: ikdr.ISM(n_components=9, random_state=0,
                                                 approximation="nystrom"), X, y, repeat)
    default, t_default = fitted(lambda: ikdr.ISM(n_components=9, random_state=0), X, y, repeat)
    out.append(f"| mixture, 10 classes, q = 9 | 20,000 x 256 | exact {t_exact:.2f} s "
               f"({describe(exact)}) | nystrom {t_nystrom:.2f} s ({describe(nystrom)}); "
               f"default {t_default:.2f} s ({describe(default)}) | "
               f"exact / nystrom x{t_exact / t_nystrom:.1f}, exact / default "
               f"x{t_exact / t_default:.1f} | >= 10x |")
    records.append({"row": "nystrom", "exact_s": t_exact, "nystrom_s": t_nystrom,
                    "default_s": t_default})


def row_million(wide, out, records):
    X, y = mixture(1_000_000, wide, 5, seed=1)
    model, seconds = fitted(lambda: ikdr.ISM(random_state=0), X, y, 1)
    out.append(f"| mixture, 5 classes | 1,000,000 x {wide} | default {seconds:.2f} s "
               f"({describe(model)}) | | | < 60 s |")
    records.append({"row": "million", "default_s": seconds})


def floors(records):
    """The sentence that says which of the table's targets hold."""
    missed = []
    for r in records:
        if r["row"] == "expression" and not (r["ism_s"] <= 1.0 and r["ism_s"] <= r["forest_s"]):
            missed.append(f"the expression fit ({r['ism_s']:.2f} s against the 1 s target and "
                          f"the forest's {r['forest_s']:.2f} s)")
        if r["row"] == "nystrom" and r["exact_s"] / r["nystrom_s"] < 10:
            missed.append(f"Nystrom at 20,000 x 256 (x{r['exact_s'] / r['nystrom_s']:.1f})")
        if r["row"] == "million" and r["default_s"] >= 60:
            missed.append(f"the million-row fit ({r['default_s']:.0f} s)")
    return ("Every floor in this table is met." if not missed else
            "Below its floor: " + "; ".join(missed) + ".")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", nargs="+", default=["expression", "nystrom", "million"],
                        choices=["expression", "nystrom", "million"])
    parser.add_argument("--repeat", type=int, default=3, help="fits per timing (best of)")
    parser.add_argument("--wide", type=int, default=8, help="features of the million-row fit")
    parser.add_argument("--out", help="also write OUT/defaults.md and .json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    body = [f"GEMM rate (numpy's BLAS, 2048^3): float64 {gemm_rate() / 1e9:.0f} GFLOP/s, "
            f"float32 {gemm_rate(dtype=np.float32) / 1e9:.0f} GFLOP/s", "",
            "| data | n x d | ikdr | peer | ratio | target |", "|---|---|---|---|---|---|"]
    for line in results_head("The default fit's speed", "bench_defaults.py", argv) + body:
        print(line, flush=True)
    warm_up()
    records: list = []
    rows = {"expression": lambda out: row_expression(args.repeat, out, records),
            "nystrom": lambda out: row_nystrom(max(1, args.repeat - 1), out, records),
            "million": lambda out: row_million(args.wide, out, records)}
    for name in args.rows:
        out: list = []
        rows[name](out)
        body += out
        print(out[-1], flush=True)
    body += ["", floors(records)]
    print(body[-1], flush=True)
    if args.out:
        write_results("defaults", "The default fit's speed", run_conditions("bench_defaults.py",
                                                                            argv),
                      body, records, out_dir=args.out)


if __name__ == "__main__":
    main()
