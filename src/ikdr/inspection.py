"""Which features a fitted estimator uses, as a table a user can print or save.

:func:`importance_table` turns the importances an estimator learnt with W
(``feature_importances_`` for all the data, ``class_importances_`` per class
of a supervised :class:`ikdr.ISM`, ``cluster_importances_`` per cluster of a
clusterer, and their intervals where the estimator has them) into one tidy
table: one row per feature and group, ranked within each group.
"""
from __future__ import annotations

import csv
import io
import math
import numbers
import os
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["ImportanceRecord", "ImportanceTable", "importance_table", "ALL"]

#: the group of the ranking over all the data (``feature_importances_``)
ALL = "all"
#: the table's columns, in order
COLUMNS = ("feature", "group", "importance", "low", "high")
#: ``repr`` shows at most this many rows (``print`` shows all)
REPR_ROWS = 40
#: (per-group importances, their intervals, where the group labels come from)
_GROUPED = (("class_importances_", "class_importance_intervals_", "classes_"),
            ("cluster_importances_", "cluster_importance_intervals_", None))


class ImportanceRecord(NamedTuple):
    """One row of an :class:`ImportanceTable`.

    Attributes
    ----------
    feature : str
        The feature's name: its DataFrame column, else ``x0``, ``x1``, ...
    group : str or int or float
        ``"all"`` for the ranking over all the data, else the class label or
        the cluster's number.
    importance : float
        The feature's importance within its group.
    low : float
        Lower end of the importance's interval (NaN when there is none).
    high : float
        Upper end of the importance's interval (NaN when there is none).
    """

    feature: str
    group: Any
    importance: float
    low: float
    high: float


class ImportanceTable:
    """Features ranked by importance, per group: the result of :func:`importance_table`.

    ``print(table)`` shows an aligned text table; ``table.rows`` (or iterating
    over the table) gives :class:`ImportanceRecord` tuples; ``to_csv`` writes
    it and ``to_frame`` makes a pandas DataFrame.

    Attributes
    ----------
    rows : tuple of ImportanceRecord
        Group ``"all"`` first, then the classes (in ``classes_`` order) or the
        clusters (0, 1, ...); within a group the most important feature first
        (ties in feature order).
    columns : tuple of str
        ``("feature", "group", "importance", "low", "high")``.
    """

    columns = COLUMNS

    def __init__(self, rows: Iterable[tuple]) -> None:
        self.rows = tuple(ImportanceRecord(*row) for row in rows)

    def __iter__(self) -> Iterator[ImportanceRecord]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def groups(self) -> list:
        """The groups of the table, in its order (``"all"`` first)."""
        return list(dict.fromkeys(row.group for row in self.rows))

    def __str__(self) -> str:
        return _text(self.rows)

    def __repr__(self) -> str:
        if len(self.rows) <= REPR_ROWS:
            return _text(self.rows)
        return (_text(self.rows[:REPR_ROWS]) + f"\n... {len(self.rows) - REPR_ROWS} more rows "
                "(print() shows them all)")

    def to_csv(self, path_or_buffer: Any = None) -> str | None:
        """Write the table as CSV with a header row: to a path, to an open text
        file, or (None) return it as a string. A missing interval is an empty
        field (pandas reads it back as NaN); numbers keep every digit."""
        if path_or_buffer is None:
            buffer = io.StringIO()
            self._write_csv(buffer)
            return buffer.getvalue()
        if isinstance(path_or_buffer, (str, os.PathLike)):
            with open(path_or_buffer, "w", newline="", encoding="utf-8") as fh:
                self._write_csv(fh)
        elif hasattr(path_or_buffer, "write"):
            self._write_csv(path_or_buffer)
        else:
            raise TypeError(f"to_csv takes a path, an open text file or None, got "
                            f"{type(path_or_buffer).__name__}")
        return None

    def _write_csv(self, fh):
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in self.rows:
            writer.writerow([row.feature, row.group] + [_csv_number(v) for v in row[2:]])

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame (pandas is optional: an ImportError
        says so when it is missing)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("ImportanceTable.to_frame needs pandas (pip install pandas); "
                              "without it, print the table, write it with to_csv or read "
                              "table.rows") from None
        return pd.DataFrame.from_records(self.rows, columns=list(COLUMNS))


def importance_table(estimator: Any, *, top: int | None = None,
                     feature_names: Any = None) -> ImportanceTable:
    """A fitted estimator's feature importances as a tidy table.

    One row per (feature, group): group ``"all"`` holds
    ``feature_importances_`` (every estimator that learns W), the other groups
    each class's row of ``class_importances_`` (a supervised ISM on class
    labels, labelled by ``classes_``) or each cluster's row of
    ``cluster_importances_`` (the clusterers, numbered 0, 1, ...), where the
    estimator has them. ``low`` and ``high`` are the interval of each
    importance where the estimator has one (``feature_importance_intervals_``,
    ``class_importance_intervals_``, ``cluster_importance_intervals_``: [low,
    high] in the last axis), NaN otherwise. Within a group the rows go from
    the most important feature down.

    Parameters
    ----------
    estimator : fitted estimator with ``feature_importances_``
    top : int or None, default=None
        Keep the ``top`` most important features of each group (all when None).
    feature_names : sequence of str or None, default=None
        Names of the features (one per column of the training X). None: the
        estimator's ``feature_names_in_`` (fitted on a DataFrame), else
        scikit-learn's ``x0``, ``x1``, ...

    Returns
    -------
    ImportanceTable

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> import ikdr
    >>> X, y = load_wine(return_X_y=True, as_frame=True)
    >>> pipe = make_pipeline(StandardScaler(), ikdr.ISM(n_components=2, random_state=0))
    >>> model = pipe.set_output(transform="pandas").fit(X, y)[-1]
    >>> table = ikdr.importance_table(model, top=3)
    >>> print(table)
    feature  group  importance  low  high
    ...
    >>> table.groups()[0], table.rows[0].feature in X.columns
    ('all', True)
    >>> table.to_csv().splitlines()[0]
    'feature,group,importance,low,high'
    """
    check_is_fitted(estimator)
    overall = getattr(estimator, "feature_importances_", None)
    if overall is None:
        raise TypeError(f"{type(estimator).__name__} has no feature_importances_: "
                        "importance_table reads an estimator that learns W (ISM, the "
                        "clusterers)")
    overall = np.asarray(overall, dtype=np.float64)
    if overall.ndim != 1:
        raise ValueError(f"feature_importances_ must be 1-D, got shape {overall.shape}")
    names = _feature_names(estimator, overall.shape[0], feature_names)
    top = _check_top(top)
    # (group labels, their importances, their intervals), one block per attribute
    blocks: list[tuple[list, np.ndarray, np.ndarray]] = [
        ([ALL], overall[None, :],
         _intervals(estimator, "feature_importance_intervals_", overall[None, :]))]
    for values_name, intervals_name, labels_name in _GROUPED:
        values = getattr(estimator, values_name, None)
        if values is None:
            continue
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != overall.shape[0]:
            raise ValueError(f"{values_name} must have shape (n_groups, {overall.shape[0]}), "
                             f"got {values.shape}")
        labels = (list(range(values.shape[0])) if labels_name is None
                  else list(getattr(estimator, labels_name)))
        if len(labels) != values.shape[0]:
            raise ValueError(f"{values_name} has {values.shape[0]} rows for {len(labels)} "
                             f"{labels_name}")
        blocks.append((labels, values, _intervals(estimator, intervals_name, values)))
    return ImportanceTable(_ranked(blocks, names, top))


def _ranked(blocks, names, top):
    """The rows of every group, each group from its most important feature down."""
    rows = []
    for labels, values, intervals in blocks:
        for label, importances, bounds in zip(labels, values, intervals):
            order = np.argsort(-importances, kind="stable")[:top]
            group = label.item() if isinstance(label, np.generic) else label
            rows.extend((names[j], group, float(importances[j]), float(bounds[j, 0]),
                         float(bounds[j, 1])) for j in order)
    return rows


def _feature_names(estimator, d, given):
    if given is None:
        given = getattr(estimator, "feature_names_in_", None)
    if given is None:
        return [f"x{j}" for j in range(d)]
    names = [str(name) for name in given]
    if len(names) != d:
        raise ValueError(f"{len(names)} feature names for {d} features")
    return names


def _intervals(estimator, name, values):
    """The estimator's intervals ``name`` as (groups, features, 2), NaN without them."""
    intervals = getattr(estimator, name, None)
    if intervals is None:
        return np.full(values.shape + (2,), np.nan)
    intervals = np.asarray(intervals, dtype=np.float64)
    if intervals.shape[-1:] != (2,) or intervals.size != 2 * values.size:
        raise ValueError(f"{name} must hold [low, high] for each of the {values.size} "
                         f"importances, got shape {intervals.shape}")
    return intervals.reshape(values.shape + (2,))


def _check_top(top):
    if top is None:
        return None
    if isinstance(top, bool) or not isinstance(top, numbers.Integral):
        raise TypeError(f"top must be a positive int or None, got {type(top).__name__}")
    if top < 1:
        raise ValueError(f"top must be a positive int or None, got {top}")
    return int(top)


def _csv_number(value):
    return "" if math.isnan(value) else repr(value)


def _text(rows):
    """An aligned text table of ``rows`` (numbers to 4 significant digits)."""
    cells = [list(COLUMNS)] + [[row.feature, str(row.group)] + [f"{v:.4g}" for v in row[2:]]
                               for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
                     for line in cells)
