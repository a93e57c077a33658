"""Which features matter, and does the answer generalize: ISM, a random forest, HSIC Lasso.

Three sections, each on tasks with a known answer (k informative features, the others pure noise;
every column standardised):

``recall``
    recall@k of each method's feature ranking (the share of the k true features among its k
    top-ranked ones, = precision@k), mean over the seeds, and the time per fit on one thread,
    every method measured in the same run.
``heldout``
    Does the answer generalize: the rows are split in half (seeded, stratified for labels), each
    ISM configuration is fitted on the first half, and on the second half the script reports

    * the held-out HSIC, ``ikdr.hsic(X_test @ W, y_test, kernel_x=model.kernel_)``
      = Tr(K_{X_test W} H K_Y H) / (n_test - 1)^2 with the fitted kernel (its bandwidth from the
      training half), K_Y as the fit builds it (one-hot for labels, a Gaussian for a continuous
      target); beside it the same quantity on the training half, where a configuration that
      overfits scores higher;
    * the held-out score of an RBF SVM (scikit-learn's defaults) trained on X_train W: accuracy
      of an SVC for labels, R^2 of an SVR for a continuous target.

    Each configuration brings its own bandwidth, so compare held-out HSIC between rows of one
    task as "which W carries more dependence that holds on new rows, as the fit measures it".
``papers``
    5-fold accuracy of an SVC on XW, ``Pipeline(StandardScaler, ISM(**config), SVC())``, on the
    papers' data sets (wine, breast cancer, digits).

Methods
-------
ISM configurations (``ISM_CONFIGS``; each is ``ikdr.ISM(random_state=seed, **options)``, so
``defaults`` is the library's defaults of the ikdr that runs the script):

defaults                 ISM(): features chosen on held-out rows (support="heldout")
papers                   ISM(sigma="median", support="all", criterion="eigenvalues"): the
                         papers' configuration
all features             ISM(support="all"): every feature, certified
all features, defaults' sigma and q
                         the same with the bandwidth and q that the defaults chose on the same
                         rows (what the feature choice alone changes)
class-moment screen      ISM(support="moments"): the screen's features alone, certified

To compare a new option, add an entry to ``ISM_CONFIGS`` and name it with ``--ism`` (or add it
to a section's default list, ``RECALL_ISM``, ``HELDOUT_ISM``, ``PAPERS_ISM``). An ISM ranks the
features by ``feature_importances_``; its time is the fit alone.

Peers (recall section):

RF          a random forest of 100 trees (``RandomForestClassifier``, ``RandomForestRegressor``
            for a continuous target), ``feature_importances_``
HSICLasso   pyHSICLasso (``pip install pyhsiclasso``; the column is left out when it is not
            installed): ``classification`` (delta kernel on y) or ``regression``, B = 20, M = 3,
            ``num_feat = k``; its selected features are ranked by their coefficients
NCA         scikit-learn's NeighborhoodComponentsAnalysis, the row norms of ``components_``
            (max(2, classes - 1) components, 50 iterations; skipped above 5,000 samples)
MI          mutual_info_classif / mutual_info_regression

Exact ties in a ranking (e.g. the zero importance of every feature an ISM fit leaves out) are
broken at random (seeded), never by index: the informative features have the lowest indices.

Tasks are in ``TASKS`` (``--list`` prints them with their k); ``--only`` picks tasks by a
substring of their name, among those of the run. ``--quick`` runs the small tasks with one seed
(a couple of minutes); the default run adds the larger ones with three seeds (about 8 minutes
on a busy 2-core machine), ``--full`` the 5,000-row tasks and 20,000 x 20 (about half an hour).
Usage::

    OMP_NUM_THREADS=1 python studies/feature_discovery.py [--quick | --full]
        [--seeds 0 1 2] [--only parity Friedman] [--section recall heldout papers]
        [--ism defaults "all features"] [--skip-peers] [--json run.json] [--out DIR]

Everything runs on one thread (ikdr, the BLAS, the peers' n_jobs). Every method is fitted once,
untimed, on a small problem before the timed fits (first-call costs). ``--json PATH`` writes
every per-seed record; ``--out DIR`` writes ``DIR/feature_discovery.md`` and ``.json`` in the
format of the other results files; ``--compare BEFORE.json AFTER.json`` runs nothing and prints
the two runs' means side by side (e.g. a run of the old defaults against one of the new).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import ikdr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))  # _peers
from _peers import compact_json, recall_at_k, timed  # noqa: E402

# ---------------------------------------------------------------------------- tasks


def _standardise(X):
    X = np.asarray(X, float)
    scale = X.std(0)
    scale[scale == 0] = 1
    return (X - X.mean(0)) / scale


def _gaussian_task(label, n, d, seed):
    """X standard normal (n x d), y = label(X, rng)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, label(X, rng)


def _ring(X, rng):            # class = radius of (x0, x1) above its median
    r = np.hypot(X[:, 0], X[:, 1])
    return (r > np.median(r)).astype(int)


def _xor(X, rng):             # class = sign(x0 x1)
    return (X[:, 0] * X[:, 1] > 0).astype(int)


def _ring_xor(X, rng):        # 4 classes: ring on (x0, x1) x XOR on (x2, x3)
    return 2 * _ring(X, rng) + (X[:, 2] * X[:, 3] > 0)


def _pairs(X, rng):           # pairwise interactions: sign(x0 x1 + x2 x3)
    return (X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] > 0).astype(int)


def _parity3(X, rng):         # sign(x0 x1 x2): no class mean, variance or covariance differs
    return (X[:, 0] * X[:, 1] * X[:, 2] > 0).astype(int)


def _linear3(X, rng):         # 3 classes from 5 linear features
    return np.argmax(X[:, :5] @ rng.standard_normal((5, 3)), 1)


def _continuous(X, rng):      # sin(2 x0) + x1^2 + noise
    return np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(X.shape[0])


def _friedman1(n, d, seed, threshold=False):
    """Friedman #1: 10 sin(pi x0 x1) + 20 (x2 - 0.5)^2 + 10 x3 + 5 x4 + N(0, 1), x uniform on
    [0, 1]^d; ``threshold``: the class "target above its median" instead."""
    from sklearn.datasets import make_friedman1

    X, target = make_friedman1(n_samples=n, n_features=d, noise=1.0, random_state=seed)
    return X, (target > np.median(target)).astype(int) if threshold else target


def _clusters(n, d, seed):
    """make_classification with 5 informative features and 4 clusters per class (2 classes).
    scikit-learn's "redundant" features are linear combinations of the informative ones and
    its "repeated" ones copies: both are set to 0, so that with shuffle=False the columns
    0-4 are the whole answer and the other 95 are pure noise."""
    from sklearn.datasets import make_classification

    return make_classification(n_samples=n, n_features=d, n_informative=5, n_redundant=0,
                               n_repeated=0, n_clusters_per_class=4, shuffle=False,
                               random_state=seed)


def _with_noise(load, n_noise, seed):
    """A real data set (every feature counted as informative) + n_noise standard normal columns."""
    X, y = load()
    rng = np.random.default_rng(seed)
    return np.hstack([X, rng.standard_normal((X.shape[0], n_noise))]), y


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer
    return load_breast_cancer(return_X_y=True)


def _wine():
    from sklearn.datasets import load_wine
    return load_wine(return_X_y=True)


def _shared_cancer683():
    """The papers' Cancer (683 x 9) from the shared data sets (``$IKDR_SHARED_DATA``, or
    ``shared/data`` beside the project); FileNotFoundError when absent (the task is skipped)."""
    roots = [os.environ.get("IKDR_SHARED_DATA", ""), str(HERE.parents[1] / "shared" / "data")]
    for root in filter(None, roots):
        path = Path(root) / "cancer_683x9.csv"
        if path.exists():
            return (np.loadtxt(path, delimiter=","),
                    np.loadtxt(path.with_name("cancer_683x9_label.csv"), delimiter=",").astype(int))
    raise FileNotFoundError("cancer_683x9.csv (shared data) not found")


@dataclass(frozen=True)
class Task:
    """A data set with a known answer. ``make(seed) -> (X, y)``; the true features are
    ``range(k)``; ``tier``: "quick" (in every run), "default" (not in --quick), "full" (only
    in --full); ``heldout``: in the held-out section by default."""
    name: str
    make: Callable
    k: int
    tier: str = "quick"
    heldout: bool = False

    def data(self, seed):
        X, y = self.make(seed=seed)
        return _standardise(X), np.asarray(y), np.arange(self.k)


def _g(label, n, d):
    return partial(_gaussian_task, label, n, d)


TASKS = [Task(*spec[:3], **spec[3]) for spec in [
    ("linear3 (1000x50)", _g(_linear3, 1000, 50), 5, {}),
    ("ring (1000x50)", _g(_ring, 1000, 50), 2, {}),
    ("xor (1000x50)", _g(_xor, 1000, 50), 2, {}),
    ("ring+xor (2000x50)", _g(_ring_xor, 2000, 50), 4, {}),
    ("pairs (1000x50)", _g(_pairs, 1000, 50), 4, {}),
    ("ring (2000x200)", _g(_ring, 2000, 200), 2, {"tier": "default"}),
    ("3-way parity (2000x20)", _g(_parity3, 2000, 20), 3, {}),
    ("3-way parity (2000x50)", _g(_parity3, 2000, 50), 3, {"tier": "default"}),
    ("continuous target (1000x50)", _g(_continuous, 1000, 50), 2, {}),
    ("Friedman #1 (1000x10)", partial(_friedman1, 1000, 10), 5, {}),
    ("Friedman #1 (1000x50)", partial(_friedman1, 1000, 50), 5, {}),
    ("Friedman #1 (1000x200)", partial(_friedman1, 1000, 200), 5, {"tier": "default"}),
    ("Friedman #1 > median (1000x200)", partial(_friedman1, 1000, 200, threshold=True), 5,
     {"heldout": True}),
    ("make_classification, 5 of 100, 4 clusters per class (1000x100)",
     partial(_clusters, 1000, 100), 5, {"heldout": True}),
    ("cancer+100 noise (569x130)", partial(_with_noise, _breast_cancer, 100), 30,
     {"heldout": True}),
    ("wine+50 noise (178x63)", partial(_with_noise, _wine, 50), 13, {}),
    ("cancer683+50 noise (683x59)", partial(_with_noise, _shared_cancer683, 50), 9, {}),
    ("ring+xor (2000x784)", _g(_ring_xor, 2000, 784), 4, {"tier": "default"}),
    ("ring+xor (5000x800)", _g(_ring_xor, 5000, 800), 4, {"tier": "full"}),
    ("Friedman #1 (5000x500)", partial(_friedman1, 5000, 500), 5, {"tier": "full"}),
    ("ring (20000x20)", _g(_ring, 20000, 20), 2, {"tier": "full"}),
]]

TIERS = {"quick": ("quick",), "default": ("quick", "default"), "full": ("quick", "default", "full")}

# ------------------------------------------------------------------- ISM configurations

#: name -> keyword arguments of ikdr.ISM (besides random_state). The key "sigma_q_from" names
#: another configuration: its fitted bandwidth and q on the same rows are passed as
#: ``sigma=`` and ``n_components=`` (a fit that differs from it only in what the other
#: options change).
ISM_CONFIGS = {
    "defaults": {},
    "papers": {"sigma": "median", "support": "all", "criterion": "eigenvalues"},
    "all features": {"support": "all"},
    "all features, defaults' sigma and q": {"support": "all", "sigma_q_from": "defaults"},
    "class-moment screen": {"support": "moments"},
}
RECALL_ISM = ["defaults", "papers"]
HELDOUT_ISM = ["defaults", "all features", "all features, defaults' sigma and q",
               "class-moment screen"]
PAPERS_ISM = ["defaults", "papers"]


def describe(config):
    options = ", ".join(f"{k}={v!r}" for k, v in ISM_CONFIGS[config].items()
                        if k != "sigma_q_from")
    source = ISM_CONFIGS[config].get("sigma_q_from")
    return f"ISM({options})" + (f" with the sigma and q that {source!r} chose" if source else "")


def ism_estimator(config, seed, fitted=None, data=None):
    """``ikdr.ISM`` of a configuration; ``fitted``: the configurations already fitted on the
    same rows ``data = (X, y)`` (a "sigma_q_from" source is fitted there when missing)."""
    options = dict(ISM_CONFIGS[config])
    source = options.pop("sigma_q_from", None)
    if source is not None:
        fitted = {} if fitted is None else fitted
        if source not in fitted:
            fitted[source] = ism_estimator(source, seed, fitted, data).fit(*data)
        options.update(sigma=float(fitted[source].sigma_),
                       n_components=int(fitted[source].components_.shape[1]))
    return ikdr.ISM(random_state=seed, **options)


def fit_ism(config, X, y, seed, fitted=None):
    """Fit a configuration (timed: the fit alone) and add it to ``fitted``."""
    fitted = {} if fitted is None else fitted
    estimator = ism_estimator(config, seed, fitted, (X, y))
    model, seconds = timed(lambda: estimator.fit(X, y))
    fitted[config] = model
    return model, seconds


def ism_summary(model):
    """What a fit chose, for the JSON records."""
    return {"n_components": int(model.components_.shape[1]),
            "n_support": int(np.count_nonzero(np.any(model.components_ != 0, axis=1))),
            "sigma": getattr(model, "sigma_", None), "converged": bool(model.converged_)}

# --------------------------------------------------------------------------- peers


def is_continuous(y):
    return np.asarray(y).dtype.kind == "f" and np.unique(y).shape[0] > 20


def peer_rf(X, y, k, seed):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    forest = RandomForestRegressor if is_continuous(y) else RandomForestClassifier
    return forest(n_estimators=100, random_state=seed, n_jobs=1).fit(X, y).feature_importances_


def peer_hsiclasso(X, y, k, seed):
    from pyHSICLasso import HSICLasso
    lasso = HSICLasso()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")     # "B must be an exact divisor": the rest is discarded
        lasso.input(X, np.asarray(y, float))
        fit = lasso.regression if is_continuous(y) else lasso.classification
        fit(num_feat=k, B=20, M=3, n_jobs=1)
    importance = np.zeros(X.shape[1])
    importance[lasso.get_index()] = np.abs(lasso.get_index_score()) + 1e-12
    return importance


def peer_nca(X, y, k, seed):
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    if X.shape[0] > 5000:           # O(n^2) memory and time per iteration
        raise RuntimeError("NCA skipped above 5,000 samples")
    if is_continuous(y):            # classes from 10 quantile slices of the target
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, 11)[1:-1]))
    q = min(X.shape[1], max(2, np.unique(y).shape[0] - 1))
    nca = NeighborhoodComponentsAnalysis(n_components=q, random_state=seed, max_iter=50)
    return np.linalg.norm(nca.fit(X, y).components_, axis=0)


def peer_mi(X, y, k, seed):
    from sklearn.feature_selection import mutual_info_classif, mutual_info_regression
    score = mutual_info_regression if is_continuous(y) else mutual_info_classif
    return score(X, y, random_state=seed)


PEERS = {"RF": peer_rf, "HSICLasso": peer_hsiclasso, "NCA": peer_nca, "MI": peer_mi}


def available_peers(skip=False):
    if skip:
        return {}
    peers = dict(PEERS)
    try:
        import pyHSICLasso  # noqa: F401
    except ImportError:
        del peers["HSICLasso"]
        print("# pyHSICLasso not installed: the HSICLasso column is left out", file=sys.stderr)
    return peers


# ------------------------------------------------------------------------- sections


def _log(text):
    print(text, file=sys.stderr, flush=True)


def _task_data(task, seed):
    try:
        return task.data(seed)
    except FileNotFoundError as err:      # a shared data set that is absent
        _log(f"# {task.name}: skipped ({err})")
        return None


def _seed_data(task, seeds):
    """(seed, X, y, informative) of each seed of ``task``, until its data are absent."""
    for seed in seeds:
        data = _task_data(task, seed)
        if data is None:
            return
        yield (seed, *data)


def recall_section(tasks, seeds, configs, peers):
    records = []
    for task in tasks:
        for seed, X, y, informative in _seed_data(task, seeds):
            fitted = {}
            methods = {c: partial(_ism_importance, c, fitted) for c in configs} | peers
            for method, run in methods.items():
                record = {"task": task.name, "n": X.shape[0], "d": X.shape[1], "k": task.k,
                          "seed": seed, "method": method}
                try:
                    importance, seconds, extra = run(X, y, task.k, seed)
                except Exception as err:
                    _log(f"# {task.name} {method} seed {seed}: {type(err).__name__}: {err}")
                    records.append({**record, "error": f"{type(err).__name__}: {err}"})
                    continue
                records.append({**record, "recall": recall_at_k(importance, informative, seed),
                                "seconds": seconds, **extra})
        _log(recall_row(task.name, records, list(configs) + list(peers)))
    return records


def _ism_importance(config, fitted, X, y, k, seed):
    model, seconds = fit_ism(config, X, y, seed, fitted)
    return model.feature_importances_, seconds, ism_summary(model)


def _peer_importance(peer):
    def run(X, y, k, seed):
        importance, seconds = timed(lambda: peer(X, y, k, seed))
        return importance, seconds, {}
    return run


def heldout_section(tasks, seeds, configs):
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC, SVR
    records = []
    for task in tasks:
        for seed, X, y, informative in _seed_data(task, seeds):
            continuous = is_continuous(y)
            Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.5, random_state=seed,
                                              stratify=None if continuous else y)
            fitted = {}
            for config in configs:
                record = {"task": task.name, "n_train": Xa.shape[0], "d": X.shape[1],
                          "k": task.k, "seed": seed, "config": config}
                try:
                    model, seconds = fit_ism(config, Xa, ya, seed, fitted)
                    W = model.components_
                    svm = (SVR() if continuous else SVC()).fit(Xa @ W, ya)
                    record.update(
                        seconds=seconds, **ism_summary(model),
                        train_hsic=ikdr.hsic(Xa @ W, ya, kernel_x=model.kernel_),
                        heldout_hsic=ikdr.hsic(Xb @ W, yb, kernel_x=model.kernel_),
                        heldout_svm=svm.score(Xb @ W, yb),
                        svm_score="R^2" if continuous else "accuracy",
                        recall=recall_at_k(model.feature_importances_, informative, seed))
                except Exception as err:
                    _log(f"# {task.name} {config} seed {seed}: {type(err).__name__}: {err}")
                    record["error"] = f"{type(err).__name__}: {err}"
                records.append(record)
        for line in heldout_rows(task.name, records, configs):
            _log(line)
    return records


def papers_section(configs, seed=0):
    from sklearn.datasets import load_breast_cancer, load_digits, load_wine
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    records = []
    for load in (load_wine, load_breast_cancer, load_digits):
        X, y = load(return_X_y=True)
        cv = StratifiedKFold(5, shuffle=True, random_state=seed)
        for config in configs:
            if "sigma_q_from" in ISM_CONFIGS[config]:
                continue                  # needs a fit on each fold's rows: not a pipeline
            record = {"data": load.__name__[5:], "config": config}
            try:
                model = make_pipeline(StandardScaler(), ism_estimator(config, seed), SVC())
                scores, seconds = timed(lambda: cross_val_score(model, X, y, cv=cv,
                                                                 error_score="raise"))
            except Exception as err:
                _log(f"# papers' data: {record['data']} {config}: {type(err).__name__}: {err}")
                records.append({**record, "error": f"{type(err).__name__}: {err}"})
                continue
            records.append({**record, "accuracy": float(scores.mean()), "seconds": seconds / 5})
            _log(f"# papers' data: {record['data']} {config} {scores.mean():.3f}")
    return records

# ---------------------------------------------------------------------------- tables


def _ok(records):
    return [r for r in records if "error" not in r]


def _mean_range(values, fmt):
    values = np.asarray(values, float)
    if values.size == 1:
        return format(values[0], fmt)
    return f"{format(values.mean(), fmt)} ({format(values.min(), fmt)}-{format(values.max(), fmt)})"


def recall_row(task, records, methods):
    cells = []
    for method in methods:
        mine = _ok(r for r in records if r["task"] == task and r["method"] == method)
        cells.append(f"{np.mean([r['recall'] for r in mine]):.2f} "
                     f"({np.mean([r['seconds'] for r in mine]):.2g} s)" if mine else "-")
    return f"| {task} | " + " | ".join(cells) + " |"


def recall_table(records, methods):
    tasks = list(dict.fromkeys(r["task"] for r in records))
    return ["| task (n x d) | " + " | ".join(methods) + " |",
            "|---|" + "---|" * len(methods),
            *(recall_row(task, records, methods) for task in tasks)]


HELDOUT_HEADER = ["| task | ISM configuration | held-out HSIC | / first row's | training HSIC | "
                  "held-out SVM | recall@k | features used | q | fit time |",
                  "|---|---|---|---|---|---|---|---|---|---|"]


def heldout_rows(task, records, configs):
    mine = [r for r in records if r["task"] == task]
    reference = {r["seed"]: r["heldout_hsic"] for r in _ok(mine) if r["config"] == configs[0]}
    rows = []
    for config in configs:
        rs = _ok(r for r in mine if r["config"] == config)
        if not rs:
            rows.append(f"| {task} | {config} |" + " - |" * 8)
            continue
        ratio = [r["heldout_hsic"] / reference[r["seed"]] for r in rs if reference.get(r["seed"])]
        rows.append(" | ".join([
            f"| {task}", config, _mean_range([r["heldout_hsic"] for r in rs], ".4g"),
            _mean_range(ratio, ".2f") if ratio else "-",
            _mean_range([r["train_hsic"] for r in rs], ".4g"),
            f"{_mean_range([r['heldout_svm'] for r in rs], '.3f')} ({rs[0]['svm_score']})",
            f"{np.mean([r['recall'] for r in rs]):.2f}",
            _mean_range([r["n_support"] for r in rs], ".0f"),
            _mean_range([r["n_components"] for r in rs], ".0f"),
            f"{np.mean([r['seconds'] for r in rs]):.2g} s"]) + " |")
    return rows


def heldout_table(records, configs):
    tasks = list(dict.fromkeys(r["task"] for r in records))
    return HELDOUT_HEADER + [row for task in tasks for row in heldout_rows(task, records, configs)]


def papers_table(records, configs):
    sets = list(dict.fromkeys(r["data"] for r in records))
    lines = ["| data | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for name in sets:
        cells = [next((f"{r['accuracy']:.3f}" for r in _ok(records)
                       if r["data"] == name and r["config"] == c), "-") for c in configs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def report(results, seeds, legend):
    body = []
    if "recall" in results:
        body += ["## Recall at k", "",
                 f"recall@k (k = the number of informative features), mean over seeds {seeds}; "
                 "time per fit on one thread in parentheses. " + legend, "",
                 *recall_table(results["recall"], results["recall_methods"]), ""]
    if "heldout" in results:
        body += ["## Held-out dependence", "",
                 "Fitted on a seeded half of the rows, measured on the other half: mean "
                 f"(min-max) over seeds {seeds}. Held-out HSIC = Tr(K_{{X_test W}} H K_Y H) / "
                 "(n_test - 1)^2 with each fit's own kernel; \"/ first row's\": its ratio to "
                 "the first configuration's, seed by seed; training HSIC: the same on the "
                 "training half; held-out SVM: an RBF SVM (scikit-learn's defaults) trained on "
                 "X_train W; features used: the rows of W that are not zero.", "",
                 *heldout_table(results["heldout"], results["heldout_configs"]), ""]
    if "papers" in results:
        body += ["## The papers' data sets", "",
                 "5-fold accuracy of `Pipeline(StandardScaler, ISM(**config), SVC())` "
                 "(StratifiedKFold, shuffled, seed 0).", "",
                 *papers_table(results["papers"], results["papers_configs"]), ""]
    return body


def _load_records(path):
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data.get("records", data)          # --out nests the records, --json does not


def _means(records, keys, metrics):
    """{keys tuple: {metric: mean over seeds}} of the records without an error."""
    groups = {}
    for r in _ok(records):
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return {g: {m: float(np.mean([r[m] for r in rs])) for m in metrics} for g, rs in groups.items()}


def compare(before, after):
    """Markdown tables of two runs (JSON files of ``--json`` or ``--out``) side by side: the
    mean over each run's seeds per task and method; "-" where a run lacks the row."""
    runs = [_load_records(before), _load_records(after)]
    sections = [("recall", ("task", "method"), ("recall", "seconds")),
                ("heldout", ("task", "config"), ("heldout_hsic", "heldout_svm", "recall",
                                                 "n_support", "seconds")),
                ("papers", ("data", "config"), ("accuracy",))]
    lines = [f"before: {before}; after: {after}", ""]
    for section, keys, metrics in sections:
        means = [_means(run.get(section, []), keys, metrics) for run in runs]
        rows = list(dict.fromkeys([*means[0], *means[1]]))
        if not rows:
            continue
        lines += [f"## {section}", "",
                  "| " + " | ".join(keys) + " | " + " | ".join(f"{m} before | after"
                                                             for m in metrics) + " |",
                  "|---" * (len(keys) + 2 * len(metrics)) + "|"]
        for row in rows:
            cells = [f"{means[i][row][m]:.4g}" if row in means[i] else "-"
                     for m in metrics for i in (0, 1)]
            lines.append("| " + " | ".join(map(str, row)) + " | " + " | ".join(cells) + " |")
        lines.append("")
    return lines

# ------------------------------------------------------------------------------ main


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    tier = p.add_mutually_exclusive_group()
    tier.add_argument("--quick", action="store_true", help="small tasks, one seed")
    tier.add_argument("--full", action="store_true", help="also the 5,000-row and 20,000-row tasks")
    p.add_argument("--seeds", type=int, nargs="+", help="default 0 1 2 (0 with --quick)")
    p.add_argument("--only", nargs="+", help="of the run's tasks, those whose name contains one "
                   "of these (with --full for the largest: --full --only 5000x800)")
    p.add_argument("--section", nargs="+", choices=["recall", "heldout", "papers"],
                   default=["recall", "heldout", "papers"])
    p.add_argument("--heldout-tasks", choices=["chosen", "all"], default="chosen",
                   help="held-out section on the chosen tasks (default) or on every task run")
    p.add_argument("--ism", nargs="+", choices=list(ISM_CONFIGS),
                   help="ISM configurations for every section (default: each section's list)")
    p.add_argument("--skip-peers", action="store_true")
    p.add_argument("--json", help="write every record to this JSON file")
    p.add_argument("--out", help="write feature_discovery.md and .json to this directory")
    p.add_argument("--list", action="store_true", help="print the tasks and configurations")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE.json", "AFTER.json"),
                   help="run nothing: print the means of two runs' records side by side")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def select_tasks(args):
    """The tasks of the run's tier (--quick, default, --full), filtered by ``--only``."""
    tiers = TIERS["quick" if args.quick else "full" if args.full else "default"]
    return [t for t in TASKS if t.tier in tiers
            and (not args.only or any(s.lower() in t.name.lower() for s in args.only))]


def warm_up(configs, peers):
    """Fit every method once, untimed, so that first-call costs land on no timed fit."""
    X, y, _ = Task("warm-up", _g(_xor, 200, 10), 2).data(0)
    fitted = {}
    methods = {c: partial(fit_ism, c, fitted=fitted) for c in configs} | peers
    for name, method in methods.items():
        try:
            method(X, y, 2, 0) if name in peers else method(X, y, 0)
        except Exception as err:        # reported again, per task, where it is measured
            _log(f"# warm-up {name}: {type(err).__name__}: {err}")


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        for t in TASKS:
            print(f"{t.name:45s} k={t.k:<3d} tier={t.tier:8s}{' held-out' if t.heldout else ''}")
        for name in ISM_CONFIGS:
            print(f"ISM configuration {name!r}: {describe(name)}")
        return None
    if args.compare:
        print("\n".join(compare(*args.compare)))
        return None
    warnings.filterwarnings("ignore")
    from threadpoolctl import threadpool_limits

    ikdr.set_num_threads(1)
    with threadpool_limits(limits=1):
        return run(args)


def run(args):
    from _peers import run_conditions, write_results

    conditions = run_conditions("studies/feature_discovery.py", args.argv)
    _log(conditions["machine"])
    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    tasks = select_tasks(args)
    peers = available_peers(args.skip_peers or "recall" not in args.section)
    configs = {s: args.ism or default for s, default in
               (("recall", RECALL_ISM), ("heldout", HELDOUT_ISM), ("papers", PAPERS_ISM))}
    warm_up(sorted(set().union(*configs.values())), peers)
    results = {"seeds": seeds}
    if "recall" in args.section:
        methods = list(configs["recall"]) + list(peers)
        results["recall_methods"] = methods
        results["recall"] = recall_section(tasks, seeds, configs["recall"],
                                           {p: _peer_importance(f) for p, f in peers.items()})
    if "heldout" in args.section:
        chosen = [t for t in tasks if t.heldout or args.heldout_tasks == "all"]
        results["heldout_configs"] = configs["heldout"]
        results["heldout"] = heldout_section(chosen, seeds, configs["heldout"])
    if "papers" in args.section:
        results["papers_configs"] = configs["papers"]
        results["papers"] = papers_section(configs["papers"])
    legend = ("ISM configurations: " + "; ".join(
        f"{c} = {describe(c)}" for c in dict.fromkeys(c for cs in configs.values() for c in cs)) +
        ". RF = a 100-tree random forest; HSICLasso = pyHSICLasso selecting k features; NCA, "
        "MI: scikit-learn's NeighborhoodComponentsAnalysis and mutual information.")
    body = report(results, seeds, legend)
    print("\n".join(body))
    if args.json:
        Path(args.json).write_text(compact_json({**conditions, "legend": legend, **results}),
                                   encoding="utf-8")
    if args.out:
        path = write_results("feature_discovery", "Which features matter, and does the answer "
                             "generalize: ISM against a random forest and HSIC Lasso",
                             conditions, body, {"legend": legend, **results}, out_dir=args.out)
        _log(f"table: {path}")
    return results


if __name__ == "__main__":
    main()
