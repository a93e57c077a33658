"""Marker genes: do the importances name the genes that mark each cell type, small types too?

Two expression data sets whose per-type markers are known:

``pbmc68k``
    scanpy's bundled ``pbmc68k_reduced`` (700 cells x 765 genes, ``bulk_labels``: 10 sorted
    immune cell types of 8 to 240 cells), standardised. Skipped when scanpy is not installed
    (``pip install scanpy``; the data ship with it, nothing is downloaded). Its markers are
    the well-established ones of each type among the 765 genes (``PBMC_MARKERS``).
``simulated``
    A simulated expression set (``simulated_expression``): 1,200 cells x 600 genes, 10 types of
    400 down to 30 cells, each type marked by 3 genes of its own (up 4-fold), two lineage
    programs shared by groups of types (large types among them), the rest noise; Poisson counts
    on log-normal gene means, log1p, standardised. Its markers are the 30 own genes.

For every method the script reports

* ``recall@50``: how many markers are among its 50 top-ranked genes (out of all markers);
* ``top-5 union``: for the methods that rank the genes per type, how many markers are in the
  union of each type's 5 top-ranked genes;
* the time of the fit (indicative: wall clock, the machine's threads).

Methods: ``ISM`` (``ikdr.ISM(random_state=seed)`` with its defaults: ``feature_importances_``,
and the rows of ``class_importances_`` per type where the estimator has them), a 500-tree random
forest (``feature_importances_``, all cores), the F-test (``f_classif``), the per-type one-vs-rest
Wilcoxon rank-sum test (``scipy.stats.mannwhitneyu``, genes ranked per type by the statistic,
larger in the type; the global ranking takes each type's best in turn).

Usage::

    python studies/markers.py [--seeds 0 1 2] [--data pbmc68k simulated] [--out DIR]

``--out DIR`` writes ``DIR/markers.md`` and ``.json`` in the format of the other results files.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

import ikdr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))  # _peers
from _peers import run_conditions, timed, write_results  # noqa: E402

#: the 10 ``bulk_labels`` types of pbmc68k_reduced and their canonical markers present among
#: its 765 genes (24), with the reason for each type's choice
PBMC_MARKERS = {
    # classical monocytes: lysozyme, the S100 calprotectin pair and ficolin-1 (CD14 is absent)
    "CD14+ Monocyte": ["LYZ", "S100A8", "S100A9", "FCN1"],
    # conventional dendritic cells (cDC2): the IgE receptor, cystatin C, CD301
    "Dendritic": ["FCER1A", "CST3", "CLEC10A"],
    # B cells: CD20 and the B-cell receptor's Ig-alpha/Ig-beta (CD19 is absent)
    "CD19+ B": ["MS4A1", "CD79A", "CD79B"],
    # NK cells: granulysin, NKG7, granzyme B, perforin (KLRD1 and NCAM1 are absent)
    "CD56+ NK": ["GNLY", "NKG7", "GZMB", "PRF1"],
    # CD4 memory T: the T-cell receptor's CD3 and the IL-7 receptor of memory cells
    "CD4+/CD45RO+ Memory": ["CD3D", "IL7R"],
    # naive CD4 T: CD3 epsilon and the lymph-node homing receptor CCR7 (LEF1, TCF7 absent)
    "CD4+/CD45RA+/CD25- Naive T": ["CD3E", "CCR7"],
    # regulatory T: the co-inhibitory TIGIT (FOXP3, IL2RA and CTLA4 are absent)
    "CD4+/CD25 T Reg": ["TIGIT"],
    # cytotoxic CD8 T: the CD8 alpha chain and granzyme K
    "CD8+ Cytotoxic T": ["CD8A", "GZMK"],
    # naive CD8 T: the CD8 beta chain
    "CD8+/CD45RA+ Naive Cytotoxic": ["CD8B"],
    # haematopoietic progenitors: the serine-protease inhibitor SPINK2 and PRSS57 (CD34 absent)
    "CD34+": ["SPINK2", "PRSS57"],
}

#: types, their sizes and the genes of the simulated set
SIM_SIZES = (400, 220, 160, 110, 90, 70, 50, 40, 30, 30)
SIM_GENES = 600
SIM_OWN = 3                 # marker genes per type
SIM_PROGRAMS = ((0, 1, 2), (3, 4, 5, 6))     # types that share a lineage program ...
SIM_PROGRAM_GENES = 15      # ... of this many genes each


def standardise(X):
    X = np.asarray(X, dtype=np.float64)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    return (X - X.mean(axis=0)) / scale


def pbmc68k():
    """(X standardised, y type names, gene names, markers: gene indices per type) or None."""
    try:
        import scanpy as sc
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata = sc.datasets.pbmc68k_reduced()
    genes = np.asarray(adata.var_names)
    index = {g: i for i, g in enumerate(genes)}
    markers = {t: [index[g] for g in gs if g in index] for t, gs in PBMC_MARKERS.items()}
    X = np.asarray(adata.X.toarray() if hasattr(adata.X, "toarray") else adata.X)
    return standardise(X), np.asarray(adata.obs["bulk_labels"].astype(str)), genes, markers


def simulated_expression(seed=0):
    """(X standardised, y, gene names, markers): Poisson counts on log-normal gene means; each
    type's own ``SIM_OWN`` genes 4-fold up in it, each lineage program's genes 4-fold up in its
    types; log1p, standardised. Genes in a random order."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(SIM_SIZES)), SIM_SIZES)
    base = np.exp(rng.normal(0.0, 1.0, SIM_GENES))
    fold = np.ones((len(SIM_SIZES), SIM_GENES))
    genes = rng.permutation(SIM_GENES)
    markers, at = {}, 0
    for t in range(len(SIM_SIZES)):
        markers[f"type {t}"] = genes[at:at + SIM_OWN].tolist()
        fold[t, genes[at:at + SIM_OWN]] = 4.0
        at += SIM_OWN
    for types in SIM_PROGRAMS:
        fold[np.ix_(types, genes[at:at + SIM_PROGRAM_GENES])] = 4.0
        at += SIM_PROGRAM_GENES
    # cell-to-cell variation of the library size, as in droplet data
    library = np.exp(rng.normal(0.0, 0.3, y.size))
    counts = rng.poisson(base[None, :] * fold[y] * library[:, None])
    names = np.array([f"g{j}" for j in range(SIM_GENES)])
    return standardise(np.log1p(counts)), np.array([f"type {t}" for t in y]), names, markers


def top(scores, k):
    return set(np.argsort(-np.asarray(scores, float), kind="stable")[:k].tolist())


def per_type_wilcoxon(X, y, types):
    """Per type, the one-vs-rest Mann-Whitney U statistic of every gene (larger in the type)."""
    from scipy.stats import mannwhitneyu

    out = []
    for t in types:
        inside = y == t
        out.append(mannwhitneyu(X[inside], X[~inside], axis=0, alternative="greater").statistic
                   / (inside.sum() * (~inside).sum()))
    return np.array(out)


def interleaved(per_type):
    """One ranking from per-type rankings: each type's best in turn, then the second ..."""
    orders = np.argsort(-per_type, axis=1, kind="stable")
    seen, ranking = set(), []
    for column in orders.T:
        for j in column:
            if j not in seen:
                seen.add(j)
                ranking.append(j)
    score = np.zeros(per_type.shape[1])
    score[ranking] = np.arange(len(ranking), 0, -1)
    return score


def measure(X, y, markers, seed):
    """{method: (recall@50 count, top-5 union count or None, seconds)}."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_selection import f_classif

    types = list(markers)
    every = set(j for js in markers.values() for j in js)
    found = {}

    def record(name, scores, per_type, seconds):
        union = None if per_type is None else set().union(*(top(r, 5) for r in per_type))
        found[name] = (len(top(scores, 50) & every),
                       None if union is None else len(union & every), seconds)

    model, seconds = timed(ikdr.ISM(random_state=seed).fit, X, y)
    rows = getattr(model, "class_importances_", None)
    if rows is not None:
        rows = rows[[list(model.classes_).index(t) for t in types]]
    record("ISM", model.feature_importances_, rows, seconds)
    forest, seconds = timed(RandomForestClassifier(500, n_jobs=-1, random_state=seed).fit, X, y)
    record("random forest, 500 trees", forest.feature_importances_, None, seconds)
    (f_scores, _), seconds = timed(f_classif, X, y)
    record("F-test", np.nan_to_num(f_scores), None, seconds)
    wilcoxon, seconds = timed(per_type_wilcoxon, X, y, types)
    record("Wilcoxon per type", interleaved(wilcoxon), wilcoxon, seconds)
    return found, len(every), model


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--data", nargs="+", choices=["pbmc68k", "simulated"],
                   default=["pbmc68k", "simulated"])
    p.add_argument("--out", help="write markers.md and .json to this directory")
    args = p.parse_args(argv)
    conditions = run_conditions("studies/markers.py", argv)
    body, records = [], []
    for name in args.data:
        lines = [f"## {name}", "",
                 "| method | seed | markers in the top 50 | markers in the per-type top-5 union "
                 "| fit (s) |", "|---|---|---|---|---|"]
        for seed in args.seeds:
            data = pbmc68k() if name == "pbmc68k" else simulated_expression(seed)
            if data is None:
                print(f"{name}: scanpy is not installed, skipped")
                break
            X, y, genes, markers = data
            found, total, model = measure(X, y, markers, seed)
            for method, (recall, union, seconds) in found.items():
                records.append({"data": name, "seed": seed, "method": method, "markers": total,
                                "recall_at_50": recall, "top5_union": union,
                                "seconds": seconds, "support": int(model.support_.size)})
                lines.append(f"| {method} | {seed} | {recall} of {total} | "
                             f"{'-' if union is None else f'{union} of {total}'} | "
                             f"{seconds:.2f} |")
                print(lines[-1], flush=True)
        body += lines + [""]
    body += ["Times are wall clock with the machine's threads (the forest on all cores), "
             "indicative on a loaded machine (the load average above).", "",
             "pbmc68k's markers, per type (genes of the 765):", ""]
    body += [f"- {kind}: {', '.join(genes)}" for kind, genes in PBMC_MARKERS.items()]
    if args.out:
        print(write_results("markers", "Marker genes of each cell type", conditions, body,
                            records, out_dir=args.out))
    else:
        print("\n".join(body))


if __name__ == "__main__":
    main()
