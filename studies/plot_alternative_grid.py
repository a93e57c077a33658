"""Figure of docs/alternative_clustering.md: KDAC on a 2 x 3 grid of blobs + 4 noise features.

Panels: the existing clustering (the grid's rows, given), KDAC's alternative
(defaults, n_clusters=3) and the loadings of its W on the six features.

    PYTHONPATH=src python studies/plot_alternative_grid.py   # writes docs/alternative_grid.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ikdr  # noqa: E402
from alternative_clustering import blob_grid  # noqa: E402
from ikdr.metrics import nmi  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "alternative_grid.png"


def main():
    X, (rows, cols) = blob_grid((2, 3), noise=4)
    model = ikdr.KDAC(3, random_state=0).fit(X, rows)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, labels, title in ((axes[0], rows, "existing clustering (given): rows"),
                              (axes[1], model.labels_,
                               f"KDAC's alternative: NMI to columns "
                               f"{nmi(cols, model.labels_):.2f}, novelty {model.novelty_:.2f}")):
        ax.scatter(X[:, 0], X[:, 1], c=labels, cmap="tab10", s=10, vmin=0, vmax=9)
        ax.set_xlabel("feature 1 (rows)")
        ax.set_ylabel("feature 2 (columns)")
        ax.set_title(title, fontsize=9)
    W = model.components_
    names = ["rows", "columns"] + [f"noise {i}" for i in range(1, X.shape[1] - 1)]
    axes[2].bar(np.arange(X.shape[1]), np.abs(W).sum(axis=1))
    axes[2].set_xticks(np.arange(X.shape[1]), names, rotation=45, fontsize=8)
    axes[2].set_title(f"|W| per feature (q = {W.shape[1]})", fontsize=9)
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(OUT)


if __name__ == "__main__":
    main()
