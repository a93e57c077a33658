"""What the command line reports about the features of a fit: the importance table
(``importances.csv`` beside ``summary.json``) and the support and the top
features by name in the summary."""
from __future__ import annotations

import os

import numpy as np

from ..inspection import ALL, importance_table

__all__ = ["IMPORTANCES", "TOP_FEATURES", "TOP_PER_GROUP", "column_names", "feature_report"]

#: the file of the importance table, in the output folder
IMPORTANCES = "importances.csv"
#: features of the overall ranking named in summary.json ...
TOP_FEATURES = 10
#: ... and of each class's or cluster's
TOP_PER_GROUP = 5


def column_names(header, d):
    """The names of X's ``d`` columns: a CSV header's (an empty cell gets
    scikit-learn's ``x<j>``), else ``x0``, ``x1``, ..."""
    if header is None or len(header) != d:
        return [f"x{j}" for j in range(d)]
    return [str(name).strip() or f"x{j}" for j, name in enumerate(header)]


def feature_report(model, out, names):
    """Write ``out/importances.csv`` (:func:`ikdr.importance_table`: every feature's
    importance overall and per class or cluster, with intervals where the
    estimator has them) and return the summary's entries: ``support`` (the names
    of the features W uses), ``top_features`` (the most important overall, at
    most :data:`TOP_FEATURES`, importance above 0), ``top_features_by_group``
    (per class or cluster, at most :data:`TOP_PER_GROUP`) and ``importances``
    (the file's name; None when the estimator has no importances)."""
    support = getattr(model, "support_", None)
    report = {"support": None if support is None else [names[j] for j in support],
              "importances": None, "top_features": None, "top_features_by_group": None}
    if getattr(model, "feature_importances_", None) is None:
        return report
    table = importance_table(model, feature_names=names)
    table.to_csv(os.path.join(out, IMPORTANCES))
    ranked = {}
    for row in table:
        if row.importance > 0 and not np.isnan(row.importance):
            ranked.setdefault(row.group, []).append(row.feature)
    report.update(importances=IMPORTANCES, top_features=ranked.pop(ALL, [])[:TOP_FEATURES])
    groups = [group for group in table.groups() if group != ALL]
    if groups:
        report["top_features_by_group"] = {str(group): ranked.get(group, [])[:TOP_PER_GROUP]
                                           for group in groups}
    return report
