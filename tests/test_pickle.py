"""Every fitted estimator pickles and unpickles to identical results."""
import pickle

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import ikdr


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _fitted(name, X, y):
    if name == "ISM":
        return ikdr.ISM(n_components=3).fit(X, y)
    raise KeyError(name)


ESTIMATORS = ["ISM"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_pickle_round_trip(name, wine):
    X, y = wine
    model = _fitted(name, X, y)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.transform(X), model.transform(X))
    for attr in [a for a in vars(model) if a.endswith("_") and not a.startswith("_")]:
        a, b = getattr(model, attr), getattr(clone, attr)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
