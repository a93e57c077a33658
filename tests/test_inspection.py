"""ikdr.importance_table: the tidy ranking of features per group, printed or saved."""
import csv
import io
import math

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler

import ikdr


@pytest.fixture(scope="module")
def model():
    X, y = load_wine(return_X_y=True)
    return ikdr.ISM(n_components=2, random_state=0).fit(StandardScaler().fit_transform(X), y)


@pytest.fixture(scope="module")
def fitted(model):
    """The fitted model with ``feature_importances_`` alone: the per-class importances
    and the intervals removed, so that each test sets the attributes it reads."""
    import copy

    bare = copy.deepcopy(model)
    for name in ("class_importances_", "class_importance_intervals_",
                 "feature_importance_intervals_"):
        bare.__dict__.pop(name, None)
    return bare


def test_a_fitted_ism_ranks_every_class_with_intervals(model):
    table = ikdr.importance_table(model)
    assert table.groups() == ["all", *model.classes_.tolist()]
    assert len(table) == 13 * (1 + len(model.classes_))
    assert all(row.low <= row.importance + 1e-12 and row.importance <= row.high + 1e-12
               for row in table)


def _with(model, **attributes):
    """A copy of a fitted model with the per-group importances and intervals another
    part of the library fills in (the table reads whichever exist)."""
    import copy

    model = copy.deepcopy(model)
    for name, value in attributes.items():
        setattr(model, name, value)
    return model


def test_global_ranking_with_default_names(fitted):
    table = ikdr.importance_table(fitted)
    assert table.columns == ("feature", "group", "importance", "low", "high")
    assert len(table) == 13 and table.groups() == ["all"]
    importances = [row.importance for row in table]
    assert importances == sorted(importances, reverse=True)
    best = int(np.argmax(fitted.feature_importances_))
    assert table.rows[0].feature == f"x{best}"
    assert {row.feature for row in table} == {f"x{j}" for j in range(13)}
    assert all(math.isnan(row.low) and math.isnan(row.high) for row in table)


def test_groups_intervals_and_top(fitted):
    d = 13
    rng = np.random.default_rng(0)
    per_class = rng.random((3, d))
    model = _with(fitted, class_importances_=per_class,
                  feature_importance_intervals_=np.c_[fitted.feature_importances_ - 0.01,
                                                      fitted.feature_importances_ + 0.01],
                  class_importance_intervals_=np.stack([per_class - 0.1, per_class + 0.1], -1))
    table = ikdr.importance_table(model, top=2, feature_names=[f"g{j}" for j in range(d)])
    assert table.groups() == ["all", 0, 1, 2] and len(table) == 8
    for c in range(3):
        rows = [row for row in table if row.group == c]
        order = np.argsort(-per_class[c], kind="stable")[:2]
        assert [row.feature for row in rows] == [f"g{j}" for j in order]
        assert rows[0].low == pytest.approx(per_class[c, order[0]] - 0.1)
        assert rows[0].high == pytest.approx(per_class[c, order[0]] + 0.1)
    assert table.rows[0].high - table.rows[0].low == pytest.approx(0.02)
    text = str(table).splitlines()
    assert text[0].split() == list(table.columns) and len(text) == 9
    # the columns line up: every row's group starts under the header's "group"
    assert {line.index(str(row.group), len(row.feature)) for line, row in
            zip(text[1:], table)} == {text[0].index("group")}


def test_clusters_are_numbered(fitted):
    model = _with(fitted, cluster_importances_=np.eye(2, 13))
    table = ikdr.importance_table(model, top=1)
    assert [(row.feature, row.group) for row in table][1:] == [("x0", 0), ("x1", 1)]


def test_csv_round_trip(fitted, tmp_path):
    model = _with(fitted, feature_importance_intervals_=np.c_[fitted.feature_importances_,
                                                              fitted.feature_importances_])
    table = ikdr.importance_table(model, top=3)
    path = tmp_path / "importances.csv"
    assert table.to_csv(path) is None
    text = path.read_text()
    assert text == table.to_csv()
    buffer = io.StringIO()
    table.to_csv(buffer)
    assert buffer.getvalue() == text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["feature"] for r in rows] == [row.feature for row in table]
    assert [float(r["importance"]) for r in rows] == [row.importance for row in table]  # every digit
    no_interval = ikdr.importance_table(fitted, top=1).to_csv().splitlines()[1]
    assert no_interval.endswith(",,")


def test_to_frame(fitted):
    pd = pytest.importorskip("pandas")
    frame = ikdr.importance_table(fitted).to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["feature", "group", "importance", "low", "high"]
    assert frame["importance"].is_monotonic_decreasing and len(frame) == 13


def test_rows_are_plain_records(fitted):
    row = next(iter(ikdr.importance_table(fitted)))
    assert row._asdict()["group"] == "all" and isinstance(row.importance, float)
    feature, group, importance, low, high = row
    assert feature == row.feature


def test_bad_input(fitted):
    with pytest.raises(NotFittedError):
        ikdr.importance_table(ikdr.ISM())
    svd = ikdr.KernelSVD(n_components=1).fit(np.eye(4) + 1)
    with pytest.raises(TypeError, match="no feature_importances_"):
        ikdr.importance_table(svd)
    with pytest.raises(ValueError, match="top"):
        ikdr.importance_table(fitted, top=0)
    with pytest.raises(TypeError, match="top"):
        ikdr.importance_table(fitted, top="3")
    with pytest.raises(ValueError, match="3 feature names for 13 features"):
        ikdr.importance_table(fitted, feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="class_importances_ must have shape"):
        ikdr.importance_table(_with(fitted, class_importances_=np.ones((3, 5))))
    with pytest.raises(ValueError, match="feature_importance_intervals_ must hold"):
        ikdr.importance_table(_with(fitted, feature_importance_intervals_=np.ones((13, 3))))
    with pytest.raises(TypeError, match="to_csv takes"):
        ikdr.importance_table(fitted).to_csv(42)
