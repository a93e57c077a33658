"""Reading data and labels for the command line: CSV, .npy, .npz, bundled datasets."""
from __future__ import annotations

import csv
import os

import numpy as np

BUNDLED = ("wine", "breast_cancer", "digits", "iris")


class InputError(ValueError):
    """Bad input file or option (the command line exits with code 2)."""


def _load_bundled(name):
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    return bunch.data.astype(np.float64), bunch.target, [str(n) for n in bunch.feature_names]


def _sniff_header(path):
    try:
        with open(path, newline="") as fh:
            first = fh.readline()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text (CSV) file") from None
    if not first.strip():
        raise InputError(f"{path}: empty file")
    cells = next(csv.reader([first]))
    numeric = 0
    for c in cells:
        try:
            float(c)
            numeric += 1
        except ValueError:
            pass
    return cells if numeric < len(cells) else None


def read_table(path):
    """(values, column_names or None) of a CSV with or without a header row."""
    header = _sniff_header(path)
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1 if header else 0, ndmin=2, dtype=str)
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text (CSV) file") from None
    except ValueError as exc:
        raise InputError(f"{path}: cannot parse as CSV ({exc})") from None
    return data, header


def _as_float(values, what):
    try:
        out = np.asarray(values, dtype=np.float64)
    except ValueError:
        raise InputError(f"{what}: non-numeric values") from None
    return out


def load_data(spec, *, label_column=None):
    """Load X (and labels from a column or a bundled dataset).

    ``spec`` is a path (.csv, .npy, .npz) or a bundled dataset name
    (wine, breast_cancer, digits, iris). ``label_column`` (name or index)
    takes the labels out of a CSV. Returns ``(X, y_or_None, column_names)``;
    X may be a scipy.sparse matrix for .npz files saved by scipy.sparse.
    """
    if spec in BUNDLED:
        X, y, names = _load_bundled(spec)
        return X, y, names
    if not os.path.exists(spec):
        raise InputError(f"{spec}: no such file (or a dataset name other than {', '.join(BUNDLED)})")
    ext = os.path.splitext(spec)[1].lower()
    y = None
    names = None
    if ext == ".npy":
        X = np.load(spec, allow_pickle=False)
    elif ext == ".npz":
        import scipy.sparse as sp

        try:
            X = sp.load_npz(spec).tocsr()
        except (ValueError, KeyError, OSError):
            with np.load(spec, allow_pickle=False) as z:
                key = "X" if "X" in z.files else z.files[0]
                X = z[key]
                if "y" in z.files:
                    y = z["y"]
    elif ext in (".csv", ".txt"):
        values, names = read_table(spec)
        if label_column is not None:
            idx = _column_index(label_column, names, values.shape[1], spec)
            y = values[:, idx]
            values = np.delete(values, idx, axis=1)
            if names:
                names = [n for i, n in enumerate(names) if i != idx]
            try:
                y = y.astype(np.float64)
                if np.all(y == np.round(y)):
                    y = y.astype(np.int64)
            except ValueError:
                pass
        X = _as_float(values, spec)
    else:
        raise InputError(f"{spec}: unsupported file type {ext!r} (use .csv, .npy or .npz)")
    if not hasattr(X, "tocsr"):
        X = np.asarray(X)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise InputError(f"{spec}: data must be 2-D, got shape {X.shape}")
        X = _as_float(X, spec)
    return X, y, names


def _column_index(column, names, n_cols, path):
    if isinstance(column, str) and not column.lstrip("-").isdigit():
        if not names or column not in names:
            raise InputError(f"{path}: no column named {column!r}")
        return names.index(column)
    idx = int(column)
    if not -n_cols <= idx < n_cols:
        raise InputError(f"{path}: column index {idx} out of range (0..{n_cols - 1})")
    return idx % n_cols


def load_labels(spec, n_samples):
    """Labels from a file (.csv/.txt one per row, or .npy); strings are kept."""
    if not os.path.exists(spec):
        raise InputError(f"{spec}: no such label file")
    ext = os.path.splitext(spec)[1].lower()
    if ext == ".npy":
        y = np.load(spec, allow_pickle=False).ravel()
    else:
        values, header = read_table(spec)
        if values.shape[1] != 1:
            raise InputError(f"{spec}: label file must have one column, got {values.shape[1]}")
        y = values[:, 0]
        try:
            yf = y.astype(np.float64)
            y = yf.astype(np.int64) if np.all(yf == np.round(yf)) else yf
        except ValueError:
            pass
    if y.shape[0] != n_samples:
        raise InputError(f"{spec}: {y.shape[0]} labels for {n_samples} samples")
    return y


def save_array(path, array):
    """Write .npy or .csv depending on the extension."""
    array = np.asarray(array)
    if path.endswith(".csv"):
        fmt = "%d" if np.issubdtype(array.dtype, np.integer) else "%.17g"
        np.savetxt(path, array, delimiter=",", fmt=fmt)
    else:
        np.save(path, array)
