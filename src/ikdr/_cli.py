"""The ``ikdr`` command line (also ``python -m ikdr``).

Exit codes: 0 success, 2 usage or input error (one-line message, no
traceback), 1 unexpected failure.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

import numpy as np

from ._io import InputError, load_data, load_labels, save_array
from ._reproduce import add_parser as _add_reproduce_parser

log = logging.getLogger("ikdr")


class UsageError(ValueError):
    pass


def _common(parser):
    parser.add_argument("--threads", type=int, default=None, help="C++/BLAS threads")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--verbose", "-v", action="store_true", help="log progress")
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")


def _out_dir(path):
    os.makedirs(path, exist_ok=True)
    return path


def _write_summary(out, summary):
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2, default=_jsonable)


def _jsonable(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def _standardise(X, enabled):
    if not enabled:
        return X
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit_transform(X)


def _dense_data(args):
    label_column = getattr(args, "label_column", None)
    X, y, _ = load_data(args.data, label_column=label_column)
    if hasattr(X, "tocsr"):
        raise InputError(f"{args.data}: sparse input is not supported by this command")
    return X, y


def _sigma(text):
    if text is None or text == "median":
        return "median"
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--sigma must be a positive number or 'median', got {text!r}") from None
    if not value > 0:
        raise UsageError(f"--sigma must be positive, got {value}")
    return value


def cmd_reduce(args):
    from . import ISM
    from ._kernel_syntax import parse_kernel

    X, y_col = _dense_data(args)
    X = _standardise(X, not args.no_standardize)
    kernel = parse_kernel(args.kernel, sigma=_sigma(args.sigma))
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    if args.clusters is not None:
        from . import ISMClustering  # provided by the clustering module

        model = ISMClustering(n_clusters=args.clusters, n_components=args.components,
                              kernel=kernel, random_state=args.seed)
        model.fit(X)
        save_array(os.path.join(out, "labels" + args.format), model.labels_)
        extra = {"n_clusters": args.clusters}
    else:
        if args.labels is not None:
            y = load_labels(args.labels, X.shape[0])
        elif y_col is not None:
            y = y_col
        else:
            raise UsageError("reduce needs --labels (or --label-column / a bundled dataset), "
                             "or --clusters for unsupervised ISM")
        model = ISM(n_components=args.components, kernel=kernel, random_state=args.seed)
        model.fit(X, y)
        extra = {"hsic": model.hsic_}
    elapsed = time.perf_counter() - t0
    save_array(os.path.join(out, "W" + args.format), model.components_)
    save_array(os.path.join(out, "embedding" + args.format), model.transform(X))
    summary = {"command": "reduce", "data": args.data, "n_samples": X.shape[0],
               "n_features": X.shape[1], "n_components": model.components_.shape[1],
               "kernel": repr(model.kernel_) if hasattr(model, "kernel_") else args.kernel,
               "n_iter": model.n_iter_, "time_s": elapsed, **extra}
    _write_summary(out, summary)
    return summary


def cmd_info(args):
    from ._config import show_config

    show_config()
    return None


def build_parser():
    parser = argparse.ArgumentParser(
        prog="ikdr", description="Interpretable kernel dimension reduction (ISM, KDAC, KSVD, KNet).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("reduce", help="supervised ISM (or unsupervised with --clusters)")
    p.add_argument("data", help="CSV/.npy/.npz file or wine|breast_cancer|digits|iris")
    p.add_argument("--labels", help="label file (.csv one per row, or .npy)")
    p.add_argument("--label-column", help="take the labels from this CSV column (name or index)")
    p.add_argument("--clusters", type=int, help="unsupervised ISM with this many clusters")
    p.add_argument("--kernel", default="gaussian",
                   help="e.g. gaussian, polynomial:degree=3,c=1, 0.5*gaussian+2*polynomial")
    p.add_argument("--components", "-k", type=int, default=None, help="q (default: eigengap)")
    p.add_argument("--sigma", default=None, help="Gaussian bandwidth or 'median' (default)")
    p.add_argument("--no-standardize", action="store_true", help="use the data as given")
    p.add_argument("--format", choices=[".npy", ".csv"], default=".npy", help="array output format")
    p.add_argument("--out", required=True, help="output directory")
    _common(p)
    p.set_defaults(func=cmd_reduce)

    _add_reproduce_parser(sub, _common)

    p = sub.add_parser("info", help="version, build and thread configuration")
    p.set_defaults(func=cmd_info, threads=None, verbose=False, quiet=False, seed=0)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="ikdr: %(message)s")
    from ._config import num_threads
    import contextlib
    import warnings

    ctx = num_threads(args.threads) if args.threads else contextlib.nullcontext()
    try:
        if args.threads is not None and args.threads < 1:
            raise UsageError("--threads must be >= 1")
        with ctx, warnings.catch_warnings():
            if args.quiet:
                warnings.simplefilter("ignore")
            summary = args.func(args)
    except (InputError, UsageError, ValueError, TypeError, FileNotFoundError, MemoryError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"ikdr {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ikdr {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        print(f"ikdr {args.command}: unexpected failure: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        if args.verbose:
            raise
        return 1
    if summary is not None and not args.quiet:
        print(json.dumps(summary, indent=2, default=_jsonable))
    return 0
