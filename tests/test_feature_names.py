"""Names through scikit-learn: feature_names_in_ from DataFrames, get_feature_names_out,
set_output(transform="pandas") and a Pipeline's names end to end; pandas optional."""
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ikdr

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True, as_frame=True)
    return pd.DataFrame(StandardScaler().fit_transform(X), columns=X.columns), y.to_numpy()


#: (estimator, what its fit takes besides X, output prefix)
ESTIMATORS = [
    (lambda: ikdr.ISM(n_components=2, random_state=0), "labels", "ism"),
    (lambda: ikdr.ISM(n_components=2, random_state=0, approximation="nystrom", n_landmarks=32),
     "labels", "ism"),
    (lambda: ikdr.ISMClustering(n_clusters=3, n_components=2, max_iter=3, random_state=0), None,
     "ismclustering"),
    (lambda: ikdr.SemiSupervisedISM(n_clusters=3, n_components=2, max_iter=3, random_state=0),
     "scores", "semisupervisedism"),
    (lambda: ikdr.KDAC(n_clusters=3, n_components=2, max_iter=3, random_state=0), "labels",
     "kdac"),
    (lambda: ikdr.KNetClustering(n_clusters=3, max_iter=3, random_state=0), None,
     "knetclustering"),
    (lambda: ikdr.KernelDependenceNetwork(max_layers=2, n_fourier=20, random_state=0), "labels",
     "kerneldependencenetwork"),
]


def _fit(estimator, X, y, takes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if takes is None:
            return estimator.fit(X)
        return estimator.fit(X, y.astype(float) if takes == "scores" else y)


@pytest.mark.parametrize("make, takes, prefix", ESTIMATORS,
                         ids=[f"{p}-{i}" for i, (_, _, p) in enumerate(ESTIMATORS)])
def test_dataframe_names_in_and_out(wine, make, takes, prefix):
    X, y = wine
    estimator = make()
    with pytest.raises(NotFittedError):
        estimator.get_feature_names_out()
    _fit(estimator, X, y, takes)
    np.testing.assert_array_equal(estimator.feature_names_in_, X.columns)
    names = estimator.get_feature_names_out()
    plain = estimator.transform(X)
    np.testing.assert_array_equal(names, [f"{prefix}{i}" for i in range(plain.shape[1])])
    frame = estimator.set_output(transform="pandas").transform(X)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(names)
    np.testing.assert_array_equal(frame.to_numpy(), plain)
    if hasattr(estimator, "support_"):       # the features W uses, by name
        assert set(estimator.feature_names_in_[estimator.support_]) <= set(X.columns)


def test_kernel_svd_names(wine):
    X = wine[0].iloc[:30, :5].to_numpy()
    A = pd.DataFrame(X @ X.T, columns=[f"c{i}" for i in range(30)])
    model = ikdr.KernelSVD(n_components=2, random_state=0).fit(A)
    assert list(model.feature_names_in_[:2]) == ["c0", "c1"]
    assert list(model.get_feature_names_out()) == ["kernelsvd0", "kernelsvd1"]
    out = model.set_output(transform="pandas").transform(A)
    assert list(out.columns) == ["kernelsvd0", "kernelsvd1"]


def test_pipeline_with_pandas_output(wine):
    """StandardScaler + ISM with set_output pandas: ISM sees the column names, the
    pipeline's output is a DataFrame named ism0, ism1, and the ranking uses names."""
    X, y = load_wine(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(), ikdr.ISM(n_components=2, random_state=0))
    Z = pipe.set_output(transform="pandas").fit_transform(X, y)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == ["ism0", "ism1"]
    assert list(pipe.get_feature_names_out()) == ["ism0", "ism1"]
    model = pipe[-1]
    np.testing.assert_array_equal(model.feature_names_in_, X.columns)
    table = ikdr.importance_table(model)
    assert {row.feature for row in table} == set(X.columns)


def test_pipeline_names_without_pandas_output():
    X, y = load_wine(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), ikdr.ISM(n_components=3, random_state=0)).fit(X, y)
    assert list(pipe.get_feature_names_out()) == ["ism0", "ism1", "ism2"]
    assert not hasattr(pipe[-1], "feature_names_in_")


def test_core_works_without_pandas():
    """pandas is optional: ikdr imports, fits, names its outputs and ranks features
    without it; only to_frame asks for it."""
    code = (
        "import sys\n"
        "class NoPandas:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pandas':\n"
        "            raise ImportError('no pandas here')\n"
        "sys.meta_path.insert(0, NoPandas())\n"
        "import numpy as np, ikdr\n"
        "X = np.random.default_rng(0).standard_normal((40, 4)); y = (X[:, 0] > 0).astype(int)\n"
        "m = ikdr.ISM(n_components=2, random_state=0).fit(X, y)\n"
        "assert list(m.get_feature_names_out()) == ['ism0', 'ism1']\n"
        "t = ikdr.importance_table(m); print(t)\n"
        "try:\n    t.to_frame()\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ImportError: ImportanceTable.to_frame needs pandas" in proc.stdout
    assert proc.stdout.startswith("feature")
