"""ISM's ``target``: classes, a continuous quantity, or scikit-learn's guess with a
warning where integers look continuous; classes too small for the held-out halves."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_digits, make_classification
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.gamma import supervised_gamma
from ikdr.reduction.targets import many_values, resolve_target


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y.astype(np.int64)


def _target_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, ikdr.TargetWarning)]


def test_continuous_target_on_integers_gives_the_continuous_gamma(diabetes):
    """diabetes' integer target with target="continuous" is the Gaussian kernel on y:
    the Gamma of the same values as floats, and the fit of y + 0.5 (non-integer, so
    continuous by scikit-learn's rule; the kernel and its median bandwidth only see
    differences of y)."""
    X, y = diabetes
    resolved = resolve_target(y, "continuous")
    kind, gamma, classes = resolved.kind, resolved.gamma, resolved.classes
    expected = supervised_gamma(y.astype(np.float64), target="continuous")[0]
    assert kind == "continuous" and classes is None
    np.testing.assert_allclose(gamma.toarray(), expected.toarray(), rtol=0, atol=1e-12)
    model = ikdr.ISM(n_components=2, random_state=0, target="continuous").fit(X, y)
    shifted = ikdr.ISM(n_components=2, random_state=0).fit(X, y + 0.5)
    assert model.classes_ is None and shifted.classes_ is None
    # the same problem up to the rounding of y + 0.5's quantiles: the same fit to
    # far below the solver's tolerance
    assert model.hsic_ == pytest.approx(shifted.hsic_, rel=1e-8)
    assert ikdr.principal_angle(model.components_, shifted.components_) < 1e-6


def test_auto_warns_on_an_integer_target_that_looks_continuous(diabetes):
    X, y = diabetes
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = ikdr.ISM(n_components=2, random_state=0).fit(X, y)
    messages = _target_warnings(record)
    assert any("214 distinct integer values among 442 rows" in m for m in messages), messages
    many = next(m for m in messages if "distinct integer values" in m)
    assert 'target="continuous"' in many and 'target="classes"' in many
    assert model.classes_.shape == (214,)       # auto still fits it as classes


def test_auto_does_not_warn_on_genuine_classes():
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ikdr.TargetWarning)
        ikdr.ISM(n_components=9, random_state=0).fit(X, y[:300])
    # 50 classes of 20 rows (a large class set), 40 people of 7-10 face images
    assert not many_values(make_classification(1000, 20, n_informative=10, n_classes=50,
                                               n_clusters_per_class=1, random_state=0)[1])
    assert not many_values(np.repeat(np.arange(40), 7))
    assert many_values(np.arange(442) % 214) and not many_values(np.arange(20))


def test_classes_takes_any_dtype_as_labels():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4))
    y = np.where(X[:, 0] > 0, 1.5, 0.5)          # floats that are not integers: labels here
    model = ikdr.ISM(n_components=2, random_state=0, target="classes").fit(X, y)
    np.testing.assert_array_equal(model.classes_, [0.5, 1.5])
    assert ikdr.ISM(n_components=2, random_state=0).fit(X, y).classes_ is None


def test_unknown_target_is_named():
    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match="'target'.*'bogus'"):
        ikdr.ISM(target="bogus").fit(X, np.arange(20) % 2)


def test_bad_targets_for_the_choice():
    X = np.random.default_rng(0).standard_normal((20, 3))
    with pytest.raises(ValueError, match='target="continuous" needs a numeric y'):
        ikdr.ISM(target="continuous").fit(X, np.array(["a", "b"] * 10))
    with pytest.raises(ValueError, match='target="classes" needs one label per row'):
        ikdr.ISM(target="classes").fit(X, np.zeros((20, 2)))


def test_class_importances_absent_on_a_continuous_target(diabetes):
    X, y = diabetes
    model = ikdr.ISM(n_components=2, random_state=0, target="continuous").fit(X[:150], y[:150])
    assert not hasattr(model, "class_importances_")
    with pytest.raises(AttributeError, match="continuous target.*class labels only"):
        model.class_importances_
    with pytest.raises(AttributeError, match="no attribute 'something_else_'"):
        model.something_else_


# -- classes too small for the held-out halves -----------------------------------

def _one_member(classes):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.repeat(np.arange(classes - 1), 60 // (classes - 1))[:60]
    X[:, 0] += y
    y[7] = classes - 1                        # one row of the last class
    return X, y


@pytest.mark.parametrize("support", ["heldout", "all"])
def test_a_one_row_class_beside_two_others_is_fitted_with_a_warning(support):
    """The class stays in the fit on every row; the halves hold it on one side."""
    X, y = _one_member(3)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = ikdr.ISM(n_components=2, random_state=0, support=support).fit(X, y)
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    assert any("class 2 has 1 row" in m for m in _target_warnings(record))
    assert np.isfinite(model.feature_importances_).all()


@pytest.mark.parametrize("support", ["heldout", "all", "moments"])
def test_a_one_row_class_of_two_gets_a_clear_error(support):
    """Two classes, one of a single row: a half would hold one class. The message
    says which class, how many rows, what to do; never "y has a single class"."""
    X, y = _one_member(2)
    with pytest.raises(ValueError) as info:
        ikdr.ISM(n_components=2, random_state=0, support=support).fit(X, y)
    message = str(info.value)
    assert "class 1 has 1 row" in message and "at least 2 rows" in message
    assert "single class (" not in message
