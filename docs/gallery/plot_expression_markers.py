r"""
Genes of each cell type
=======================

A simulated single-cell expression set: 1,000 cells of eight immune cell
types, from 400 T cells down to 15 progenitors, and 300 genes. Each type
expresses a few marker genes of its own (the T cells *CD3D*, *CD3E* and
*IL7R*, the progenitors *CD34* and *SPINK2*, ...); the antigen-presenting
types (B cells, monocytes, dendritic cells) share the HLA class II program;
the other genes vary at random. The counts are Poisson, log-transformed and
standardised, as an expression matrix usually is.

``class_importances_`` says, for each type, which genes tell it from the
other types, each of them weighed alike whatever its size: the small types'
markers rank at the top of their rows as the large types' do.
``feature_importances_`` ranks every gene by its largest share in any type.
The dot plot reads as a biologist's marker plot: a dot per type and gene, its
size the gene's importance for the type, its colour the gene's mean
expression in the type (the importance measures dependence, not its sign: the
colour says whether the gene is up or down).
"""
import matplotlib.pyplot as plt
import numpy as np

import ikdr

rng = np.random.default_rng(0)
types = {"T cell": (400, ["CD3D", "CD3E", "IL7R"]),
         "monocyte": (250, ["LYZ", "S100A8", "S100A9"]),
         "B cell": (150, ["MS4A1", "CD79A", "CD79B"]),
         "NK cell": (80, ["GNLY", "NKG7", "PRF1"]),
         "dendritic": (50, ["FCER1A", "CLEC10A"]),
         "platelet": (30, ["PPBP", "PF4"]),
         "plasma cell": (20, ["MZB1", "JCHAIN"]),
         "progenitor": (15, ["CD34", "SPINK2"])}
program = ["HLA-DRA", "HLA-DRB1", "HLA-DPA1", "CD74"]       # B, monocyte, dendritic
markers = [gene for _, genes in types.values() for gene in genes]
genes = np.array(markers + program + [f"G{i:03d}" for i in range(300 - len(markers) - 4)])
names = list(types)
y = np.repeat(np.arange(len(types)), [size for size, _ in types.values()])

# Poisson counts on log-normal gene means; a type's markers and the shared
# program four times higher where they are expressed
base = np.exp(rng.normal(0.0, 1.0, genes.size))
fold = np.ones((len(types), genes.size))
for t, (_, own) in enumerate(types.values()):
    fold[t, np.isin(genes, own)] = 4.0
fold[np.ix_([1, 2, 4], np.flatnonzero(np.isin(genes, program)))] = 4.0
library = np.exp(rng.normal(0.0, 0.3, y.size))               # the cells' depths
counts = rng.poisson(base * fold[y] * library[:, None])
X = np.log1p(counts)
X = (X - X.mean(axis=0)) / X.std(axis=0)
print(f"{X.shape[0]} cells x {X.shape[1]} genes; cells per type:",
      dict(zip(names, np.bincount(y))))

# %%
# Per-type importances
# --------------------
model = ikdr.ISM(random_state=0).fit(X, y)
rows = model.class_importances_                   # one row per type, in classes_ order
top = {name: genes[np.argsort(-rows[t])[:3]] for t, name in enumerate(names)}
for name, best in top.items():
    print(f"{name:>12}: {', '.join(best)}")
found = sum(len(set(best) & set(own)) for best, (_, own) in zip(top.values(), types.values()))
print(f"own markers among each type's top 3: {found} of "
      f"{sum(min(3, len(own)) for _, own in types.values())}")
top50 = set(genes[np.argsort(-model.feature_importances_)[:50]])
print(f"markers among the 50 most important genes: {len(top50 & set(markers))} of "
      f"{len(markers)}")

# %%
# A dot plot of the markers
# -------------------------
# Each type's three most important genes, in the order of the types.
shown = list(dict.fromkeys(gene for best in top.values() for gene in best))
columns = [int(np.flatnonzero(genes == gene)[0]) for gene in shown]
means = np.array([X[y == t][:, columns].mean(axis=0) for t in range(len(types))])
size = rows[:, columns] / rows[:, columns].max()
fig, ax = plt.subplots(figsize=(10, 4.2))
tt, gg = np.meshgrid(np.arange(len(types)), np.arange(len(shown)), indexing="ij")
dots = ax.scatter(gg.ravel(), tt.ravel(), s=400 * size.ravel() + 2, c=means.ravel(),
                  cmap="coolwarm", vmin=-2, vmax=2, edgecolors="0.3", linewidths=0.3)
ax.set_xticks(range(len(shown)), shown, rotation=90)
ax.set_yticks(range(len(types)), names)
ax.invert_yaxis()
ax.set_xlabel("gene (each type's three most important)")
ax.set_title("class_importances_: dot size; mean standardised expression: colour")
fig.colorbar(dots, ax=ax, label="mean expression in the type", shrink=0.8)
fig.tight_layout()
plt.show()
