"""Clustering on public labelled data: NMI and fit time of ikdr's clusterers with their
defaults beside k-means, kNN spectral clustering, Ward and Leiden, on 50 real data
sets and a few stress sets (``_real_data.py`` lists them and how each is prepared).

Every method gets the same matrix (standardised; the stress sets' sparse matrices and
their dense copies as they are) and ``k`` = the number of published classes, seeded
with each of ``--seeds``:

* ``k-means``: ``KMeans(k, n_init=10)``;
* ``spectral-kNN``: ``SpectralClustering(k, affinity="nearest_neighbors")`` (scikit-learn's
  default 10 neighbors);
* ``Ward``: ``AgglomerativeClustering(k, linkage="ward")`` (dense input only);
* ``Leiden`` (from 500 rows): PCA to at most 50 components, the symmetrised,
  unweighted 15-nearest-neighbor graph, then ``leidenalg``'s
  ``RBConfigurationVertexPartition``. With k known, its resolution is found by bisection
  on log10(resolution) in [-3, 2] until the partition has k communities (at most 30
  Leiden runs; else the run closest to k); every run counts in its time;
* ``ISMClustering`` and ``KNetClustering``: ``(n_clusters=k, random_state=seed)``;
* any candidate: ``--estimator [NAME=]module:callable`` (or ``path/file.py:callable``),
  where ``callable(k, random_state)`` returns an estimator with ``fit_predict`` or
  ``fit``/``labels_``.

Each fit runs in a worker process (``--timeout`` seconds, ``--memory-gb`` of address
space); an error or a timeout is recorded with its message and the run goes on. A
failed fit counts as NMI 0 in the summaries. Times are wall seconds of the fit alone
(every method is warmed up once in its worker first), with every method on the same
threads (``--threads``; default all usable cores).

The floor of a set is max(NMI of k-means, NMI of spectral-kNN); the summary gives, per
estimator, the median NMI against each peer's, the sets more than 0.05 below the floor,
the share within 0.02 of it, the worst gap, and the time against spectral-kNN on sets
of at least 500 rows. ``--criteria`` adds the label-free selection study
(:func:`criterion_study`); ``--scaling`` the rows-against-time curves.

    python benchmarks/bench_clustering_real.py --criteria --scaling      # everything
    python benchmarks/bench_clustering_real.py --sets iris,wine --only ISMClustering
    python benchmarks/bench_clustering_real.py --estimator mine=cand:make --only mine
    python benchmarks/bench_clustering_real.py --report results.jsonl   # re-render

Writes ``results/clustering_real.md`` and the records, one JSON object a line, to
``results/clustering_real.jsonl`` (``--out-dir``). NMI figures hold on a loaded
machine; times only on a quiet one.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _real_data as data  # noqa: E402
from _peers import RESULTS, gemm_rate, run_conditions, write_results  # noqa: E402
from _real_report import (FROM_ROWS, PEERS, REFERENCE, criterion_summary,  # noqa: E402
                          report, spearman)

STEM = "clustering_real"
TITLE = "Clustering on public labelled data with the defaults"
IKDR = ("ISMClustering", "KNetClustering")
LETTER_SIZES = (1000, 2000, 5000, 10000, 20000)
BLOB_SIZES = (10000, 20000, 50000, 100000)
SERIES = {"letter": "letter", "blobs": "blobs 16-d, 10 centers"}
#: the errors after which a method is not tried on more rows
RESOURCE_FAILURES = ("timeout after", "MemoryError", "the worker died")
#: seconds a worker process may take to import its libraries and say it is ready
STARTUP_SECONDS = 300


# --- the methods (run in the worker) ---------------------------------------------------------

def leiden_labels(X, k, seed, n_neighbors=15, max_components=50, max_runs=30):
    """PCA -> symmetrised kNN graph -> Leiden with the resolution bisected to k communities.
    Returns (labels, {"resolution", "communities"})."""
    import igraph
    import leidenalg
    from sklearn.decomposition import PCA
    from sklearn.neighbors import kneighbors_graph

    n, d = X.shape
    components = min(max_components, n, d) if not sp.issparse(X) else min(max_components,
                                                                          min(n, d) - 1)
    Z = PCA(components, random_state=seed).fit_transform(X)
    A = kneighbors_graph(Z, n_neighbors, include_self=False)
    rows, cols = sp.triu(A.maximum(A.T), 1).nonzero()
    graph = igraph.Graph(n=n, edges=list(zip(rows.tolist(), cols.tolist())))
    lo, hi, best = -3.0, 2.0, None
    for _ in range(max_runs):
        mid = (lo + hi) / 2
        part = leidenalg.find_partition(graph, leidenalg.RBConfigurationVertexPartition,
                                        resolution_parameter=10 ** mid, seed=seed)
        found = len(part)
        if best is None or abs(found - k) < abs(best[1] - k):
            best = (np.asarray(part.membership), found, 10 ** mid)
        if found == k:
            break
        lo, hi = (mid, hi) if found < k else (lo, mid)
    return best[0], {"resolution": float(best[2]), "communities": int(best[1])}


def load_factory(spec):
    """``module:callable`` or ``path/to/file.py:callable`` -> the callable."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):
        loaded = importlib.util.spec_from_file_location(Path(where).stem, where)
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, attr)


def estimator_labels(estimator, X):
    """Labels of a fitted estimator (``fit_predict`` when it has one, else ``labels_``);
    returns (labels, info), info naming the start an ikdr clusterer kept."""
    if hasattr(estimator, "fit_predict"):
        labels = estimator.fit_predict(X)
    else:
        labels = estimator.fit(X).labels_
    info = {}
    selection, start = getattr(estimator, "selection_", None), getattr(estimator, "start_", None)
    if selection and start is not None and 0 <= start < len(selection):
        info["start"] = str(selection[start]["candidate"])
    return np.asarray(labels), info


def method(name, spec, k, seed):
    """fit(X) -> (labels, info) of a method of the table, or of a ``spec`` candidate."""
    from sklearn.cluster import AgglomerativeClustering, KMeans, SpectralClustering

    import ikdr

    builders = {
        "k-means": lambda: KMeans(k, n_init=10, random_state=seed),
        "spectral-kNN": lambda: SpectralClustering(k, affinity="nearest_neighbors",
                                                   random_state=seed),
        "Ward": lambda: AgglomerativeClustering(k, linkage="ward"),
        "ISMClustering": lambda: ikdr.ISMClustering(n_clusters=k, random_state=seed),
        "KNetClustering": lambda: ikdr.KNetClustering(n_clusters=k, random_state=seed),
    }
    if name == "Leiden":
        return lambda X: leiden_labels(X, k, seed)
    build = (lambda: load_factory(spec)(k, seed)) if spec else builders[name]
    return lambda X: estimator_labels(build(), X)


def label_free_scores(X, k, partitions):
    """Each label-free criterion's score of each partition, higher = better: the
    clusterers' criterion (the log of the multi-graph cut over the compactness, negated),
    the multi-graph cut alone (negated), silhouette, Calinski-Harabasz (nan for one
    cluster)."""
    from sklearn.metrics import calinski_harabasz_score, silhouette_score

    # the clusterers' own label-free criterion; the public API does not expose it
    from ikdr.cluster.criterion import PartitionCriterion

    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    several = [np.unique(p).shape[0] > 1 for p in partitions]
    judge = PartitionCriterion(X, k)
    return {"cut over compactness": [-c for c in judge.scores(partitions)],
            "multi-graph cut": [-float(np.mean(judge.cuts(p))) for p in partitions],
            "silhouette": [silhouette_score(X, p) if ok else np.nan
                           for p, ok in zip(partitions, several)],
            "Calinski-Harabasz": [calinski_harabasz_score(X, p) if ok else np.nan
                                  for p, ok in zip(partitions, several)]}


# --- the worker process: one fit or one scoring per task, killed on a timeout ---------------

def _warm_up(task):
    """An untimed fit on small blobs: imports, thread pools and caches before the timing."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(200, n_features=5, centers=3, random_state=0)
    try:
        method(task["method"], task.get("spec"), 3, 0)(X)
    except Exception:  # noqa: BLE001 - the timed fit reports the error
        pass


def _execute(task):
    if task["kind"] == "score":
        return {"scores": label_free_scores(task["X"], task["k"], task["partitions"])}
    if task["kind"] == "warm":
        _warm_up(task)
        return {}
    fit = method(task["method"], task.get("spec"), task["k"], task["seed"])
    wall, cpu = time.perf_counter(), time.process_time()
    labels, info = fit(task["X"])
    return {"labels": labels, "seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu, "info": info}


def _serve(conn, memory_gb):
    """The worker: bounded address space, warnings off, tasks until None."""
    if memory_gb:
        import resource

        limit = int(memory_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    warnings.simplefilter("ignore")
    import sklearn.cluster  # noqa: F401 - the imports before the first timed task

    import ikdr  # noqa: F401
    conn.send("ready")
    while True:
        task = conn.recv()
        if task is None:
            return
        try:
            result = _execute(task)
        except BaseException as exc:  # noqa: BLE001 - recorded, the run goes on
            result = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
        conn.send(result)


class Runner:
    """Runs tasks in a spawned worker; a task past ``timeout`` seconds kills the worker
    (a fresh one takes the next task) and returns an error. The worker's start and each
    method's first (warm-up) fit in it are outside the timed task."""

    def __init__(self, timeout, memory_gb):
        self.timeout, self.memory_gb = timeout, memory_gb
        self.context = multiprocessing.get_context("spawn")
        self.process = self.conn = None
        self.warmed = set()

    def _start(self):
        self.conn, child = self.context.Pipe()
        self.process = self.context.Process(target=_serve, args=(child, self.memory_gb),
                                            daemon=True)
        self.process.start()
        child.close()
        self.warmed = set()
        if not (self.conn.poll(STARTUP_SECONDS) and self.conn.recv() == "ready"):
            raise RuntimeError("the benchmark's worker process did not start")

    def _stop(self):
        self.process.kill()
        self.process.join()
        self.process = None

    def run(self, task):
        if self.process is None or not self.process.is_alive():
            self._start()
        if task["kind"] == "fit" and task["method"] not in self.warmed:
            self.warmed.add(task["method"])
            self._exchange({"kind": "warm", "method": task["method"], "spec": task["spec"]},
                           max(self.timeout, STARTUP_SECONDS))
            if self.process is None:
                self._start()
        return self._exchange(task, self.timeout)

    def _exchange(self, task, timeout):
        self.conn.send(task)
        if not self.conn.poll(timeout):
            self._stop()
            return {"error": f"timeout after {timeout:g} s"}
        try:
            return self.conn.recv()
        except EOFError:
            self.process.join()
            code, self.process = self.process.exitcode, None
            return {"error": f"the worker died (exit code {code})"}
        except Exception as exc:  # noqa: BLE001 - an answer this process cannot read
            self._stop()
            return {"error": f"unreadable answer from the worker: {type(exc).__name__}: {exc}"}

    def close(self):
        if self.process is not None:
            self.conn.send(None)
            self.process.join(30)
            if self.process.is_alive():
                self._stop()


# --- the runs ---------------------------------------------------------------------------------

class Log:
    """Appends records to a JSON-lines file as they come, and keeps them."""

    def __init__(self, path):
        self.path, self.records = Path(path), []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")

    def add(self, record):
        self.records.append(record)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=_plain) + "\n")


def _plain(value):
    return value.item() if isinstance(value, np.generic) else str(value)


def set_record(s):
    return {"kind": "set", "set": s.name, "source": s.source, "group": s.group,
            "n": s.X.shape[0], "d": s.X.shape[1], "k": s.k, "rows_of": s.rows_of,
            "repeated": round(s.repeated, 4), "integer": s.integer, "sparse": s.sparse,
            "note": s.note}


def skip_reason(name, s):
    if name == "Leiden" and s.X.shape[0] < FROM_ROWS:
        return f"n/a (< {FROM_ROWS} rows)"
    if name == "Ward" and s.sparse:
        return "n/a (dense only)"
    return None


def fit_sets(runner, log, sets, methods, seeds):
    """Every method on every set and seed; returns {set name: {method: labels of seed 0}}."""
    from ikdr.metrics import nmi

    partitions = {}
    for s in sets:
        log.add(set_record(s))
        print(f"== {s.describe()}", flush=True)
        for name, spec in methods:
            reason = skip_reason(name, s)
            for seed in seeds:
                base = {"kind": "fit", "set": s.name, "method": name, "seed": seed}
                if reason:
                    log.add({**base, "skipped": reason})
                    continue
                out = runner.run({"kind": "fit", "method": name, "spec": spec, "X": s.X,
                                  "k": s.k, "seed": seed})
                record = {**base, **{key: out[key] for key in
                                     ("seconds", "cpu_seconds", "info", "error") if key in out}}
                if "labels" in out:
                    record["nmi"] = nmi(s.y, out["labels"])
                    if seed == seeds[0]:
                        partitions.setdefault(s.name, {})[name] = out["labels"]
                log.add(record)
                print(f"   {name:16s} seed {seed}: " + (f"NMI {record['nmi']:.3f} "
                      f"{record['seconds']:8.2f} s" if "nmi" in record else record["error"]),
                      flush=True)
    return partitions


# --- the criterion study ----------------------------------------------------------------------

def rank_correlation(partitions, classes, score):
    """Spearman correlation between a label-free score and NMI over candidate partitions.

    ``partitions``: the candidates' label arrays; ``classes``: the published classes;
    ``score``: a callable (labels -> float, higher = better) or the scores themselves.
    nan when the scores or the NMIs do not vary."""
    from ikdr.metrics import nmi

    partitions = list(partitions)
    scores = [score(p) for p in partitions] if callable(score) else score
    return spearman(scores, [nmi(classes, p) for p in partitions])


def stability_scores(runner, s, candidates, seed, rounds=5, share=0.8):
    """Each method's stability: the mean adjusted Rand index, over ``rounds`` seeded
    subsamples of ``share`` of the rows, between the method's partition of all rows
    (restricted to the subsample) and its fit on the subsample alone."""
    from sklearn.metrics import adjusted_rand_score

    n = s.X.shape[0]
    subsets = [np.sort(np.random.default_rng(1000 + r).choice(n, int(share * n), replace=False))
               for r in range(rounds)]
    out = []
    for name, spec, labels in candidates:
        values = []
        for rows in subsets:
            fit = runner.run({"kind": "fit", "method": name, "spec": spec, "X": s.X[rows],
                              "k": s.k, "seed": seed})
            values.append(adjusted_rand_score(labels[rows], fit["labels"])
                          if "labels" in fit else np.nan)
        out.append(float(np.nanmean(values)) if np.isfinite(values).any() else np.nan)
    return out


def criterion_study(runner, log, sets, partitions, methods, seed, rounds=5):
    """For every set, score the candidates (every method's partition of ``seed``) and the
    published classes with each label-free criterion (the multi-graph cut, silhouette,
    Calinski-Harabasz, stability under 80% subsamples), record them with the candidates'
    NMI, and print each criterion's summary (:func:`criterion_summary`)."""
    from ikdr.metrics import nmi

    specs = dict(methods)
    for s in sets:
        pool = [(m, specs[m], lab) for m, lab in partitions.get(s.name, {}).items()]
        if len(pool) < 2:
            continue
        print(f"== criteria: {s.name}", flush=True)
        labels = [lab for _, _, lab in pool] + [s.y]
        scored = runner.run({"kind": "score", "X": s.X, "k": s.k, "partitions": labels})
        if "error" in scored:
            log.add({"kind": "criterion", "set": s.name, "error": scored["error"]})
            continue
        scores = scored["scores"]
        scores["stability"] = stability_scores(runner, s, pool, seed, rounds) + [np.nan]
        log.add({"kind": "criterion", "set": s.name, "methods": [m for m, _, _ in pool],
                 "nmi": [nmi(s.y, lab) for _, _, lab in pool],
                 "scores": {c: [float(v) for v in vals[:-1]] for c, vals in scores.items()},
                 "classes": {c: float(vals[-1]) for c, vals in scores.items()}})
    for line in criterion_summary(log.records):
        print(line)


# --- rows against time ------------------------------------------------------------------------

def scaling(runner, log, methods, seed, series=("letter", "blobs")):
    """The methods on letter subsampled to LETTER_SIZES and on blobs of BLOB_SIZES rows
    (``series``: which of the two). A method that runs out of time or memory at one size
    is not run at the larger ones of that series; after any other error it is."""
    from ikdr.metrics import nmi

    sizes = [("letter", n, lambda n=n: data.letter(n)) for n in LETTER_SIZES] + \
            [("blobs", n, lambda n=n: data.blobs(n)) for n in BLOB_SIZES]
    exhausted = set()
    for name, n, make in (entry for entry in sizes if entry[0] in series):
        made = make()
        if made is None:
            continue
        X, y = made
        for m, spec in methods:
            base = {"kind": "scaling", "series": SERIES[name], "n": n, "method": m}
            if (name, m) in exhausted:
                log.add({**base, "skipped": "out of time or memory at a smaller n"})
                continue
            out = runner.run({"kind": "fit", "method": m, "spec": spec, "X": X,
                              "k": int(np.unique(y).shape[0]), "seed": seed})
            if "labels" in out:
                log.add({**base, "nmi": nmi(y, out["labels"]), "seconds": out["seconds"]})
            else:
                if out["error"].startswith(RESOURCE_FAILURES):
                    exhausted.add((name, m))
                log.add({**base, "error": out["error"]})
            print(f"   scaling {name} n={n} {m}: {log.records[-1]}", flush=True)


# --- command line -----------------------------------------------------------------------------

def chosen_methods(args):
    """[(name, spec or None)]: the reference pair always, then the peers, ikdr's
    estimators and the ``--estimator`` candidates that ``--only`` keeps."""
    extra = []
    for text in args.estimator:
        name, _, spec = text.rpartition("=") if "=" in text.split(":")[0] else ("", "", text)
        extra.append((name or spec.rpartition(":")[2], spec))
    every = [(m, None) for m in PEERS + IKDR] + extra
    only = {m.strip().lower() for m in args.only.split(",")} if args.only else None
    return [(m, spec) for m, spec in every
            if m in REFERENCE or only is None or m.lower() in only]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", help="comma-separated parts of set names to run (default all)")
    p.add_argument("--only", help="comma-separated methods to run besides k-means and "
                   "spectral-kNN (which define the floor): Ward, Leiden, ISMClustering, "
                   "KNetClustering or an --estimator name")
    p.add_argument("--estimator", action="append", default=[],
                   help="[NAME=]module:callable or file.py:callable; callable(k, random_state) "
                   "returns an estimator (repeatable)")
    p.add_argument("--max-rows", type=int, default=data.MAX_ROWS,
                   help="suite sets above this are a stratified sample (seed 0)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--skip-suite", action="store_true")
    p.add_argument("--skip-stress", action="store_true")
    p.add_argument("--criteria", action="store_true", help="the label-free criterion study")
    p.add_argument("--stability-rounds", type=int, default=5)
    p.add_argument("--scaling", action="store_true", help="rows against time")
    p.add_argument("--scaling-methods", default="ISMClustering,k-means,spectral-kNN")
    p.add_argument("--scaling-series", default="letter,blobs",
                   help="letter (1,000-20,000 rows), blobs (10,000-100,000 rows) or both")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    p.add_argument("--memory-gb", type=float, default=10.0,
                   help="address-space limit of the worker (0: none)")
    p.add_argument("--threads", type=int, help="threads of every method (default: all)")
    p.add_argument("--out-dir", default=str(RESULTS))
    p.add_argument("--report", metavar="JSONL", nargs="+",
                   help="only render the page from these runs' records (the first run's "
                   "machine, date and command head the page)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    out_dir = Path(args.out_dir)
    methods = chosen_methods(args)
    candidates = [m for m, _ in methods if m not in PEERS]
    if args.report:
        records = [json.loads(line) for path in args.report
                   for line in Path(path).read_text().splitlines()]
        runs = [r for r in records if r["kind"] == "conditions"]
        conditions, details = runs[0]["conditions"], list(runs[0]["details"])
        details += [f"merged with the records of `{r['conditions']['command']}` "
                    f"({r['conditions']['date']}; {'; '.join(r['details'])})" for r in runs[1:]]
    else:
        if args.threads:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                        "IKDR_NUM_THREADS"):
                os.environ[var] = str(args.threads)   # the workers inherit them
        sys.path.insert(0, os.getcwd())               # --estimator modules, in the workers too
        conditions = run_conditions("bench_clustering_real.py", argv)
        details = [f"float64 GEMM 2048^3 on the BLAS's threads, measured in this run: "
                   f"{gemm_rate() / 1e9:.1f} GFLOP/s",
                   f"usable cores {len(os.sched_getaffinity(0))}; threads per method "
                   f"{args.threads or 'all'}; seeds {args.seeds}; at most {args.max_rows} rows "
                   f"per suite set; per-fit timeout {args.timeout:g} s"]
        log = Log(out_dir / f"{STEM}.jsonl")
        log.add({"kind": "conditions", "conditions": conditions, "details": details})
        records = run_all(args, methods, log)
    body = report(records, candidates)
    md = write_results(STEM, TITLE, conditions, body, out_dir=out_dir, details=details)
    print("\n".join(body))
    print(f"wrote {md}")


def run_all(args, methods, log):
    patterns = args.sets.split(",") if args.sets else None
    sets = [] if args.skip_suite else data.suite_sets(args.max_rows)
    sets += [] if args.skip_stress else data.stress_sets()
    sets = data.by_name(sets, patterns)
    runner = Runner(args.timeout, args.memory_gb)
    try:
        partitions = fit_sets(runner, log, sets, methods, args.seeds)
        if args.criteria:
            small = [s for s in sets if s.X.shape[0] <= args.max_rows]
            criterion_study(runner, log, small, partitions, methods, args.seeds[0],
                            args.stability_rounds)
        if args.scaling:
            wanted = {m.strip().lower() for m in args.scaling_methods.split(",")}
            scaling(runner, log, [(m, s) for m, s in methods if m.lower() in wanted],
                    args.seeds[0], args.scaling_series.split(","))
    finally:
        runner.close()
    return log.records


if __name__ == "__main__":
    main()
