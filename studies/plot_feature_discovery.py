"""Recall at k per task, as a bar chart, from the records of feature_discovery.py.

Reads the JSON file that ``feature_discovery.py --out DIR`` (or ``--json PATH``) writes,
never its printed table. Usage::

    python studies/plot_feature_discovery.py [RESULTS.json] [OUT.png] [--methods defaults RF ...]

Defaults: ``studies/results/feature_discovery.json`` and ``docs/feature_discovery.png``,
every method of the recall section.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LABELS = {"defaults": "ISM (defaults)", "papers": "ISM, papers' configuration",
          "RF": "random forest", "HSICLasso": "HSIC Lasso", "NCA": "NCA",
          "MI": "mutual information"}


def mean_recall(records, methods):
    """(tasks in run order, {method: mean recall per task, NaN where it did not run})."""
    tasks = list(dict.fromkeys(r["task"] for r in records))
    scores = {m: [] for m in methods}
    for task in tasks:
        for m in methods:
            values = [r["recall"] for r in records
                      if r["task"] == task and r["method"] == m and "recall" in r]
            scores[m].append(np.mean(values) if values else np.nan)
    return tasks, scores


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", default=ROOT / "studies/results/feature_discovery.json")
    p.add_argument("out", nargs="?", default=ROOT / "docs/feature_discovery.png")
    p.add_argument("--methods", nargs="+", help="default: every method of the recall section")
    args = p.parse_args(argv)
    data = json.loads(Path(args.results).read_text(encoding="utf-8"))
    results = data.get("records", data)        # --out nests the records, --json does not
    methods = args.methods or results["recall_methods"]
    tasks, scores = mean_recall(results["recall"], methods)
    y = np.arange(len(tasks))
    height = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(tasks) + 1.8))
    for i, m in enumerate(methods):
        ax.barh(y + (i - (len(methods) - 1) / 2) * height, scores[m], height,
                label=LABELS.get(m, m))
    ax.set_yticks(y, tasks)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("recall at k (share of the informative features among the top k)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110, bbox_inches="tight")
    print(args.out)


if __name__ == "__main__":
    main()
