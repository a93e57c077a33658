"""The recall-at-k table of benchmarks/results/feature_discovery.md as a figure.

Usage: python benchmarks/feature_discovery/plot_table.py [TABLE.md] [OUT.png]
"""
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOWN = {"ISM()": "ISM (defaults)", "median": "ISM, papers' median", "RF": "random forest",
         "PI": "permutation importance", "NCA": "NCA", "MI": "mutual information"}


def main(table=ROOT / "benchmarks/results/feature_discovery.md",
         out=ROOT / "docs/feature_discovery.png"):
    rows = [line for line in Path(table).read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    tasks, scores = [], {name: [] for name in SHOWN}
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        tasks.append(cells[0])
        for name in SHOWN:
            match = re.match(r"([0-9.]+)", cells[header.index(name)])
            scores[name].append(float(match.group(1)) if match else np.nan)
    y = np.arange(len(tasks))
    height = 0.8 / len(SHOWN)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(tasks) + 1.8))
    for i, (name, label) in enumerate(SHOWN.items()):
        ax.barh(y + (i - (len(SHOWN) - 1) / 2) * height, scores[name], height, label=label)
    ax.set_yticks(y, tasks)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("recall at k (share of the informative features among the top k)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.09), ncol=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
