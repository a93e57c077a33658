"""5-fold accuracy of an SVC on XW on the papers' data sets: ISM's defaults against the
papers' configuration (sigma="median", every feature), each in a Pipeline with
StandardScaler. Usage: python benchmarks/feature_discovery/papers_defaults.py"""
import warnings

from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import ikdr

warnings.filterwarnings("ignore")
CONFIGS = {"defaults": {}, "papers (median, all features)": {"sigma": "median", "screen": None}}
print("| data | " + " | ".join(CONFIGS) + " |\n|---|" + "---|" * len(CONFIGS))
for load in (load_wine, load_breast_cancer, load_digits):
    X, y = load(return_X_y=True)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    cells = []
    for options in CONFIGS.values():
        model = make_pipeline(StandardScaler(), ikdr.ISM(random_state=0, **options), SVC())
        cells.append(f"{cross_val_score(model, X, y, cv=cv).mean():.3f}")
    print(f"| {load.__name__[5:]} | " + " | ".join(cells) + " |")
