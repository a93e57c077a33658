"""GridSearchCV over an ikdr estimator: n_jobs=2 must not be slower than n_jobs=1.

joblib's loky workers get OMP_NUM_THREADS = cores // n_jobs and ikdr follows
it, so n_jobs workers x threads stay within the cores (no oversubscription).
Times ``GridSearchCV(make_pipeline(ikdr.ISM(), KNeighborsClassifier()),
{n_components, sigma}, cv=3)`` on a labelled
Gaussian mixture for each ``--n-jobs`` (best of ``--repeat``), after one
warm-up fit per setting so that the loky workers are already started.

    PYTHONPATH=src python benchmarks/bench_gridsearch_jobs.py --n 2000 --d 20 \\
        --n-jobs 1 2 --out benchmarks/results/gridsearch_jobs.md
    PYTHONPATH=src python benchmarks/bench_gridsearch_jobs.py --n 200 --d 5 --repeat 1  # check
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    import joblib
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    import ikdr
    from _peers import emit, mixture, results_head

    X, y = mixture(args.n, args.d, n_classes=5, seed=0)
    grid = {"ism__n_components": [2, 4], "ism__sigma": ["median", 1.0, 2.0]}
    rows = []
    for n_jobs in args.n_jobs:
        model = make_pipeline(ikdr.ISM(random_state=0), KNeighborsClassifier())
        search = GridSearchCV(model, grid, cv=3, n_jobs=n_jobs)
        times = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, y)  # warm-up: workers started, imports done
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                search.fit(X, y)
                times.append(time.perf_counter() - t0)
        rows.append((n_jobs, min(times), search.best_params_))
    base = rows[0][1]
    cores = joblib.cpu_count()
    lines = [*results_head("GridSearchCV(ISM + k-NN pipeline) with n_jobs workers",
                           "bench_gridsearch_jobs.py", details=[
                               f"n={args.n}, d={args.d}, 5 classes; grid {grid}, cv=3; "
                               f"best of {args.repeat}"]),
             "| n_jobs | ikdr threads per worker | seconds | vs first row |", "|---|---|---|---|"]
    for n_jobs, seconds, _ in rows:
        per_worker = ikdr.get_num_threads() if n_jobs == 1 else max(cores // n_jobs, 1)
        lines.append(f"| {n_jobs} | {per_worker} | {seconds:.2f} | {base / seconds:.2f}x |")
    text = "\n".join(lines) + "\n"
    emit(text, args.out)


if __name__ == "__main__":
    main()
