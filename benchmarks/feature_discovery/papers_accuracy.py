"""5-fold SVC accuracy on XW (StandardScaler -> ISM(rule) -> SVC) on the papers' data sets."""
import sys, warnings
from common import *
from rules import RuleISM, RULES
from sklearn.datasets import load_wine, load_breast_cancer, load_digits
from sklearn.model_selection import cross_val_score, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

sets = {"wine": load_wine(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True),
        "digits": load_digits(return_X_y=True)}
cv = StratifiedKFold(5, shuffle=True, random_state=0)
for name, (X, y) in sets.items():
    t = time.time()
    base = cross_val_score(make_pipeline(StandardScaler(), ikdr.ISM(), SVC()), X, y, cv=cv).mean()
    print(f"{name:14s} ISM() defaults               acc {base:.3f} ({time.time()-t:.1f}s)", flush=True)
    for qf in [1, 2]:
        for rule in RULES:
            t = time.time()
            acc = cross_val_score(make_pipeline(StandardScaler(), RuleISM(rule, q_floor=qf), SVC()), X, y, cv=cv).mean()
            print(f"{name:14s} q_floor={qf} {rule:16s} acc {acc:.3f} ({time.time()-t:.1f}s)", flush=True)
