from common import *
from rules import ScreenISM
from sklearn.datasets import load_wine, load_breast_cancer, load_digits
from sklearn.model_selection import cross_val_score, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
cv = StratifiedKFold(5, shuffle=True, random_state=0)
for name, (X, y) in {"wine": load_wine(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True),
                     "digits": load_digits(return_X_y=True)}.items():
    for screen in [True, False]:
        t = time.time()
        acc = cross_val_score(make_pipeline(StandardScaler(), ScreenISM(screen=screen), SVC()), X, y, cv=cv).mean()
        kept = ScreenISM(screen=screen).fit(StandardScaler().fit_transform(X), y).keep_.size
        print(f"{name:14s} screen={screen!s:5s} q>=2 sigma=med(XW0): acc {acc:.3f}  kept {kept}/{X.shape[1]} features ({time.time()-t:.1f}s)", flush=True)
