"""The ``ikdr`` command line (also ``python -m ikdr``).

Subcommands: ``reduce`` (supervised / unsupervised ISM), ``altcluster``
(KDAC), ``ksvd`` (asymmetric kernel SVD), ``knet`` (KNet clustering) and
``info``. Each data command reads CSV / .npy / .npz / a bundled dataset name,
writes its arrays (.npy or .csv) and ``summary.json`` into ``--out`` and prints
the summary.

Batch: give several files or a glob (``'runs/*.csv'``) and ``--jobs N``: one
output folder per input under ``--out`` plus ``summary.csv`` / ``summary.json``
with one row per file (see :mod:`ikdr.cli.batch`); a bad file is recorded and the
others go on.

Options are checked once, before any file is read or any batch worker starts
(each command's ``check_*`` function): a bad option value, or a command
that needs labels and has no source of them, is one usage error, not one per
file.

Exit codes: 0 success; 2 usage or input error (one-line message, no
traceback): a bad option, a missing or malformed file, or data and parameters
that ikdr's or scikit-learn's validation rejects; 1 unexpected failure inside
the library (a one-line message; ``--verbose`` prints the traceback) or, in a
batch, any file failed; 130 interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
import traceback
import warnings

import numpy as np

from .._config import num_threads, package_version, show_config
from .._utils.progress import progress_bars
from .batch import expand_inputs, is_batch, run_batch
from .errors import UsageError, first_line, is_input_error
from .options import (hidden_option, ism_kernel_option, kernel_option, landmarks_option,
                      positive_option, sigma_option)
from .io import BUNDLED, InputError, load_data, load_labels, save_array

log = logging.getLogger("ikdr")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message (exit code 2, no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common(parser):
    parser.add_argument("--threads", type=int, default=None, help="C++/BLAS threads")
    if any(a.dest == "data" for a in parser._actions):
        parser.add_argument("--jobs", "-j", type=int, default=1,
                            help="batch: worker processes (default 1; 0 = one per core); "
                                 "each gets cores // jobs threads")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="log the steps and every iteration (on stderr)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print nothing on success, no progress bar, no warnings")


def _outputs(parser):
    parser.add_argument("--format", choices=[".npy", ".csv"], default=".npy", help="array output format")
    parser.add_argument("--out", required=True, help="output directory")


_MANY = " (several files or a quoted glob such as 'runs/*.csv' run a batch: see --jobs)"


def _data(parser, standardize=True):
    parser.add_argument("data", nargs="+",
                        help="CSV/.npy/.npz file or wine|breast_cancer|digits|iris" + _MANY)
    parser.add_argument("--label-column", help="take the labels from this CSV column (name or index)")
    if standardize:
        parser.add_argument("--no-standardize", action="store_true", help="use the data as given")


def _out_dir(path):
    os.makedirs(path, exist_ok=True)
    return path


def _save(args, name, array):
    path = os.path.join(args.out, name + args.format)
    save_array(path, array)
    log.info("wrote %s %s", path, np.shape(array))


def _write_summary(out, summary):
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2, default=_jsonable)


def _jsonable(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def _parameters(args, *names):
    """The options a command ran with, for the summary."""
    return {name: getattr(args, name) for name in names + ("seed", "threads")}


def _standardise(X, enabled):
    if not enabled:
        return X
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit_transform(X)


def _dense_data(args):
    """(X, labels from the data or None, the names of X's columns)."""
    label_column = getattr(args, "label_column", None)
    X, y, header = load_data(args.data, label_column=label_column)
    if hasattr(X, "tocsr"):
        raise InputError(f"{args.data}: sparse input is not supported by this command")
    log.info("loaded %s: %d samples x %d features", args.data, X.shape[0], X.shape[1])
    from .report import column_names

    return X, y, column_names(header, X.shape[1])


def _features(model, out, names):
    """importances.csv beside summary.json, and the summary's support and top
    features by name (:func:`ikdr.cli.report.feature_report`)."""
    from .report import feature_report

    return feature_report(model, out, names)


def _inputs(args):
    """The input files of a run, a batch's patterns expanded."""
    return expand_inputs(args.data) if isinstance(args.data, list) else [args.data]


def _carries_labels(spec):
    """A bundled dataset or an .npz archive (arrays X and y) may hold its own labels;
    a CSV or .npy file holds them only in a column named by --label-column."""
    return spec in BUNDLED or spec.lower().endswith(".npz")


def _require_labels(args, what):
    """Without a label option, every input must be able to carry its own labels."""
    if args.label_column is not None:
        return
    unlabelled = [spec for spec in _inputs(args) if not _carries_labels(spec)]
    if unlabelled:
        many = f" (and {len(unlabelled) - 1} more)" if len(unlabelled) > 1 else ""
        raise UsageError(f"{what}; {unlabelled[0]}{many} has no labels of its own")


def _checked(model):
    """The estimator a command will fit, its parameters validated by its own constraints."""
    from sklearn.utils._param_validation import InvalidParameterError

    try:
        model._validate_params()
    except InvalidParameterError as exc:
        raise UsageError(first_line(exc)) from None
    return model


def _reduce_model(args):
    if args.clusters is not None:
        from ..cluster.ism_clustering import ISMClustering

        return ISMClustering(n_clusters=args.clusters, n_components=args.components,
                             kernel=kernel_option(args), random_state=args.seed,
                             verbose=int(args.verbose))
    from ..reduction.ism import ISM

    kernel, sigma = ism_kernel_option(args)
    return ISM(n_components=args.components, kernel=kernel, sigma=sigma, random_state=args.seed,
               verbose=int(args.verbose), target=args.target)


def check_reduce(args):
    """The options of ``reduce``, before any file is read."""
    _checked(_reduce_model(args))
    if args.clusters is not None and args.target != "auto":
        raise UsageError("--target applies to supervised reduce (labels), not to --clusters")
    if args.clusters is None and args.labels is None:
        _require_labels(args, "reduce needs --labels FILE, --label-column NAME|INDEX or "
                              "--clusters K")


def _altcluster_model(args):
    from ..cluster.kdac import KDAC

    positive_option("--lam", args.lam, strict=False)
    return KDAC(n_clusters=args.clusters, n_components=args.components, kernel=kernel_option(args),
                lam=args.lam, max_iter=args.max_iter, random_state=args.seed,
                verbose=int(args.verbose))


def check_altcluster(args):
    """The options of ``altcluster``, before any file is read."""
    _checked(_altcluster_model(args))
    if not args.existing:
        _require_labels(args, "altcluster needs --existing LABELS or --label-column "
                              "NAME|INDEX (the existing clustering)")


def check_ksvd(args):
    """The options of ``ksvd``, before any file is read."""
    positive_option("--components", args.components)
    positive_option("--gamma", args.gamma)
    positive_option("--tol", args.tol)
    if landmarks_option(args.landmarks) is not None and args.solver != "nystrom":
        raise UsageError("--landmarks needs --solver nystrom")


def _knet_model(args):
    from ..cluster.knet import KNetClustering

    positive_option("--learning-rate", args.learning_rate)
    positive_option("--lam", args.lam, strict=False)
    return KNetClustering(n_clusters=args.clusters, hidden_layer_sizes=hidden_option(args.hidden),
                          update=args.update,
                          sigma="auto" if args.sigma is None else sigma_option(args.sigma),
                          embedding_sigma=sigma_option(args.embedding_sigma), lam=args.lam,
                          max_iter=args.max_iter, learning_rate=args.learning_rate,
                          batch_size=args.batch_size, random_state=args.seed,
                          verbose=int(args.verbose))


def check_knet(args):
    """The options of ``knet``, before any file is read."""
    _checked(_knet_model(args))


@contextlib.contextmanager
def _fitting(args):
    """Around a fit: with --verbose the estimator's per-iteration lines go to
    stderr (stdout carries the JSON summary)."""
    if args.verbose:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    else:
        yield


def _nmi_if_known(y, labels):
    if y is None:
        return {}
    from ..metrics import nmi

    try:
        return {"nmi_to_given_labels": float(nmi(y, labels))}
    except (ValueError, TypeError):
        return {}


def cmd_reduce(args):
    X, y_col, names = _dense_data(args)
    X = _standardise(X, not args.no_standardize)
    model = _reduce_model(args)
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    if args.clusters is not None:
        with _fitting(args):
            model.fit(X)
        _save(args, "labels", model.labels_)
        extra = {"n_clusters": args.clusters, "quality": model.quality_,
                 "converged": model.converged_, **_nmi_if_known(y_col, model.labels_)}
    else:
        if args.labels is not None:
            y = load_labels(args.labels, X.shape[0])
        elif y_col is not None:
            y = y_col
        else:
            raise UsageError(f"{args.data} holds no labels: reduce needs --labels FILE, "
                             "--label-column NAME|INDEX or --clusters K")
        with _fitting(args):
            model.fit(X, y)
        extra = {"hsic": model.hsic_, "converged": model.converged_}
    elapsed = time.perf_counter() - t0
    _save(args, "W", model.components_)
    _save(args, "embedding", model.transform(X))
    summary = {"command": "reduce", "data": args.data, "n_samples": X.shape[0],
               "n_features": X.shape[1], "n_components": model.components_.shape[1],
               "kernel": repr(model.kernel_) if hasattr(model, "kernel_") else args.kernel,
               "support": [int(j) for j in model.support_],
               "n_iter": model.n_iter_, "time_s": elapsed, **extra,
               **_features(model, out, names),
               "parameters": _parameters(args, "kernel", "sigma", "components", "clusters",
                                         "target", "no_standardize")}
    _write_summary(out, summary)
    return summary


def _existing_labels(args, n_samples, y_col):
    if args.existing:
        return [load_labels(path, n_samples) for path in args.existing]
    if y_col is not None:
        return [y_col]
    raise UsageError(f"{args.data} holds no labels: altcluster needs --existing LABELS or "
                     "--label-column NAME|INDEX (the existing clustering)")


def cmd_altcluster(args):
    X, y_col, names = _dense_data(args)
    X = _standardise(X, not args.no_standardize)
    existing = _existing_labels(args, X.shape[0], y_col)
    model = _altcluster_model(args)
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    with _fitting(args):
        model.fit(X, existing if len(existing) > 1 else existing[0])
    elapsed = time.perf_counter() - t0
    _save(args, "labels", model.labels_)
    _save(args, "W", model.components_)
    _save(args, "embedding", model.transform(X))
    best = model.history_[model.best_iteration_ - 1]
    summary = {"command": "altcluster", "data": args.data, "n_samples": X.shape[0],
               "n_features": X.shape[1], "n_clusters": args.clusters,
               "n_components": model.components_.shape[1], "kernel": repr(model.kernel_),
               "novelty": model.novelty_, "quality": model.quality_,
               "alternativeness": model.alternativeness_, "cost": best["cost"],
               "n_iter": model.n_iter_, "converged": model.converged_, "time_s": elapsed,
               **_features(model, out, names),
               "parameters": _parameters(args, "kernel", "sigma", "components", "clusters",
                                         "lam", "max_iter", "existing", "no_standardize")}
    _write_summary(out, summary)
    return summary


def cmd_ksvd(args):
    from ..ksvd.estimator import KernelSVD

    A, _, _ = load_data(args.data)
    log.info("loaded %s: %d x %d (%s)", args.data, A.shape[0], A.shape[1],
             f"sparse, {A.nnz} non-zeros" if hasattr(A, "tocsr") else "dense")
    Z = None
    if args.columns is not None:
        Z, _, _ = load_data(args.columns)
        log.info("loaded %s: %d x %d", args.columns, Z.shape[0], Z.shape[1])
    landmarks = landmarks_option(args.landmarks)
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    sigma = "median" if args.gamma is None else args.gamma / np.sqrt(2.0)
    model = KernelSVD(n_components=args.components, kernel=args.kernel, sigma=sigma,
                      degree=args.degree, center=args.center, compat=args.compat,
                      solver=args.solver, n_landmarks=landmarks, tol=args.tol,
                      random_state=args.seed)
    try:
        model.fit(A, Z)
    except ValueError as exc:  # speak in options, not in Python parameters
        raise UsageError(str(exc).replace("pass compat='pinv', 'pca' or 'random'",
                                          "pass --compat pinv, pca or random")) from None
    elapsed = time.perf_counter() - t0
    _save(args, "row_embedding", model.row_embedding_)
    _save(args, "column_embedding", model.column_embedding_)
    _save(args, "singular_values", model.singular_values_)
    summary = {"command": "ksvd", "data": args.data, "shape": list(A.shape),
               "sparse": bool(hasattr(A, "tocsr")), "n_components": args.components,
               "solver": model.solver_, "gamma": model.gamma_,
               "singular_values": model.singular_values_,
               "landmarks": None if model.landmarks_ is None
               else [len(model.landmarks_[0]), len(model.landmarks_[1])],
               "time_s": elapsed,
               "parameters": _parameters(args, "kernel", "gamma", "degree", "center", "compat",
                                         "solver", "landmarks", "tol", "columns")}
    if hasattr(A, "tocsr"):
        summary["nnz"] = int(A.nnz)
    _write_summary(out, summary)
    return summary


def cmd_knet(args):
    X, y_col, names = _dense_data(args)
    X = _standardise(X, not args.no_standardize)
    model = _knet_model(args)
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    with _fitting(args):
        model.fit(X)
    elapsed = time.perf_counter() - t0
    _save(args, "labels", model.labels_)
    _save(args, "embedding", model.embedding_)
    summary = {"command": "knet", "data": args.data, "n_samples": X.shape[0],
               "n_features": X.shape[1], "n_clusters": args.clusters, "sigma": model.sigma_,
               "objective": model.history_[-1], "n_iter": model.n_iter_,
               "converged": model.converged_, "time_s": elapsed,
               **_nmi_if_known(y_col, model.labels_), **_features(model, out, names),
               "parameters": _parameters(args, "sigma", "update", "hidden", "lam", "max_iter",
                                         "learning_rate", "batch_size", "no_standardize")}
    _write_summary(out, summary)
    return summary


def cmd_info(args):
    show_config()
    return None


def build_parser():
    parser = _Parser(
        prog="ikdr", description="Interpretable kernel dimension reduction (ISM, KDAC, KSVD, KNet).")
    parser.add_argument("--version", action="version", version=f"ikdr {package_version()}",
                        help="print the version and exit (`ikdr info` adds the build and threads)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    kernel_help = "ISM kernel, e.g. gaussian, polynomial:degree=3,c=1, 0.5*gaussian+2*polynomial"

    p = sub.add_parser("reduce", help="supervised ISM (or unsupervised with --clusters)")
    _data(p)
    p.add_argument("--labels", help="label file (.csv one per row, or .npy)")
    p.add_argument("--clusters", type=int, help="unsupervised ISM with this many clusters")
    p.add_argument("--target", choices=["auto", "classes", "continuous"], default="auto",
                   help="what the labels are: classes, a continuous quantity (integers "
                        "included), or auto (default: scikit-learn's type_of_target, with a "
                        "warning where integers look continuous)")
    p.add_argument("--kernel", default="gaussian", help=kernel_help)
    p.add_argument("--components", "-k", type=int, default=None, help="q (default: eigengap)")
    p.add_argument("--sigma", default=None,
                   help="Gaussian bandwidth, or a rule: 'auto' (default, as ikdr.ISM: the median "
                        "distance of the projected start), 'median' or 'separation'; with "
                        "--clusters a number or 'median' (default)")
    _outputs(p)
    _common(p)
    p.set_defaults(func=cmd_reduce, check=check_reduce)

    p = sub.add_parser("altcluster", help="alternative clustering (KDAC) to existing labels")
    _data(p)
    p.add_argument("--existing", action="append", metavar="LABELS",
                   help="label file of an existing clustering (repeat for several); default: "
                        "the --label-column or the bundled dataset's labels")
    p.add_argument("--clusters", type=int, required=True, help="number of clusters k")
    p.add_argument("--kernel", default="gaussian", help=kernel_help)
    p.add_argument("--components", "-k", type=int, default=None, help="q (default: eigengap)")
    p.add_argument("--sigma", default=None, help="Gaussian bandwidth or 'median' (default)")
    p.add_argument("--lam", type=float, default=1.0, help="novelty weight lambda (default 1)")
    p.add_argument("--max-iter", type=int, default=20, help="outer U/W iterations (default 20)")
    _outputs(p)
    _common(p)
    p.set_defaults(func=cmd_altcluster, check=check_altcluster)

    p = sub.add_parser("ksvd", help="asymmetric kernel SVD (dense data or a sparse .npz graph)")
    p.add_argument("data", nargs="+",
                   help="data matrix A: CSV/.npy, or .npz (scipy.sparse.save_npz adjacency)" + _MANY)
    p.add_argument("--columns", help="second point set Z (fit(X, Z)); default: rows and columns of A")
    p.add_argument("--components", "-k", type=int, default=8, help="rank r (default 8)")
    p.add_argument("--kernel", default="rbf", choices=["rbf", "gaussian", "sne", "polynomial",
                                                       "linear"],
                   help="rbf (also named gaussian, as in the other commands), sne, polynomial, "
                        "linear")
    p.add_argument("--gamma", type=float, default=None, help="RBF/SNE bandwidth (default: median)")
    p.add_argument("--degree", type=int, default=2, help="polynomial degree (default 2)")
    p.add_argument("--center", action="store_true", help="double-center G")
    p.add_argument("--compat", choices=["pinv", "pca", "random"], default=None,
                   help="compatibility map for a rectangular A")
    p.add_argument("--solver", default="auto",
                   choices=["auto", "dense", "arpack", "randomized", "nystrom"])
    p.add_argument("--landmarks", default=None, help="Nystrom landmarks: an int or 'auto'")
    p.add_argument("--tol", type=float, default=None, help="ARPACK tol / Nystrom target eta")
    _outputs(p)
    _common(p)
    p.set_defaults(func=cmd_ksvd, check=check_ksvd)

    p = sub.add_parser("knet", help="KNet deep kernel clustering")
    _data(p)
    p.add_argument("--clusters", type=int, required=True, help="number of clusters k")
    p.add_argument("--sigma", default=None,
                   help="affinity bandwidth or 'median' (default: auto, from the 7-NN distances)")
    p.add_argument("--embedding-sigma", default=None,
                   help="bandwidth the network ascends with --update fixed, or 'median' (default)")
    p.add_argument("--update", choices=["fixed", "eig", "sma"], default="fixed",
                   help="fixed: train against the start's clusters (default); eig, sma: "
                        "Algorithm 3's U-steps")
    p.add_argument("--hidden", default=None, help="hidden widths, e.g. 20,20 (default 2d,2d)")
    p.add_argument("--lam", type=float, default=0.0, help="autoencoder weight (default 0)")
    p.add_argument("--max-iter", type=int, default=100, help="rounds (default 100)")
    p.add_argument("--learning-rate", type=float, default=1e-2, help="Adam step (default 1e-2)")
    p.add_argument("--batch-size", type=int, default=None, help="default min(n, 200)")
    _outputs(p)
    _common(p)
    p.set_defaults(func=cmd_knet, check=check_knet)

    p = sub.add_parser("info", help="version, build and thread configuration")
    p.set_defaults(func=cmd_info, threads=None, verbose=False, quiet=False, seed=0)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"ikdr: warning: {str(message).strip().splitlines()[0]}", file=file or sys.stderr)


def _main_batch(args, run_batch):
    """``main`` for many input files: exit 0 all done, 1 any file failed, 130 interrupted."""
    totals, code = run_batch(args, _jsonable)
    if not args.quiet:
        print(json.dumps(totals, indent=2, default=_jsonable))
    if code == 1:
        print(f"ikdr {args.command}: {totals['n_failed']} of {totals['n_files']} files failed "
              f"(see {totals['summary_csv']})", file=sys.stderr)
    elif code == 130:
        print(f"ikdr {args.command}: interrupted", file=sys.stderr)
    return code


def main(argv=None):
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (2) and --help (0), as a return code
        return exc.code
    if args.command is None:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="ikdr: %(message)s")
    if args.threads is not None and args.threads < 1:
        print(f"ikdr {args.command}: error: --threads must be >= 1", file=sys.stderr)
        return 2
    check = getattr(args, "check", None)
    if check is not None:
        try:    # once, before any file is read or any batch worker starts
            check(args)
        except UsageError as exc:
            print(f"ikdr {args.command}: error: {first_line(exc)}", file=sys.stderr)
            return 2
    if isinstance(getattr(args, "data", None), list):
        if is_batch(args.data):
            return _main_batch(args, run_batch)
        args.data = args.data[0]
    ctx = num_threads(args.threads) if args.threads else contextlib.nullcontext()
    # bars on a terminal only (IterationReport checks stderr is a tty), never with --quiet
    bars = progress_bars(not args.quiet)
    try:
        with ctx, bars, warnings.catch_warnings():
            warnings.showwarning = _one_line_warning
            if args.quiet:
                warnings.simplefilter("ignore")
            summary = args.func(args)
    except KeyboardInterrupt:
        print(f"ikdr {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - sorted below: input error (2) or failure (1)
        if is_input_error(exc):
            print(f"ikdr {args.command}: error: {first_line(exc)}", file=sys.stderr)
            return 2
        print(f"ikdr {args.command}: unexpected failure: {type(exc).__name__}: "
              f"{first_line(exc)}" + ("" if args.verbose else " (--verbose shows the traceback)"),
              file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return 1
    if summary is not None and not args.quiet:
        print(json.dumps(summary, indent=2, default=_jsonable))
    return 0
