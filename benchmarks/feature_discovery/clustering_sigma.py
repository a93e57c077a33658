"""Sigma rules on the clustering estimators: NMI on wine, iris, cancer (683x9), face (624x20, identity)."""
import sys, os
from common import *
from sklearn.datasets import load_wine, load_iris
from sklearn.metrics import normalized_mutual_info_score as nmi

D = "/work/shared/data"
sets = {"wine": load_wine(return_X_y=True), "iris": load_iris(return_X_y=True)}
if os.path.exists(f"{D}/cancer_683x9.csv"):
    sets["cancer683"] = (np.loadtxt(f"{D}/cancer_683x9.csv", delimiter=","),
                         np.loadtxt(f"{D}/cancer_683x9_label.csv", delimiter=",").astype(int))
if os.path.exists(f"{D}/face_624x20.csv"):
    sets["face"] = (np.loadtxt(f"{D}/face_624x20.csv", delimiter=","),
                    np.loadtxt(f"{D}/face_624x20_identity_label.csv", delimiter=",").astype(int))
ests = sys.argv[1:] or ["ISMClustering", "SemiSupervisedISM", "KDAC", "KNetClustering"]
for name, (X, y) in sets.items():
    X = std(X); k = len(np.unique(y)); d = X.shape[1]
    for est in ests:
        cls = getattr(ikdr, est)
        row = []
        for rule in ["auto", "median", "med*sqrt(q/d)"]:
            kw = dict(n_clusters=k, random_state=0)
            try:
                if rule == "auto":
                    m = cls(**kw)
                elif rule == "median":
                    m = cls(sigma="median", **kw)
                else:
                    q = max(k - 1, 1) if est != "KNetClustering" else d   # KNet's kernel acts on its embedding
                    if est == "KNetClustering":
                        row.append(f"{rule} n/a"); continue
                    m = cls(sigma=med(X) * np.sqrt(min(q, d) / d), n_components=min(q, d), **kw)
                t = time.time()
                if est == "SemiSupervisedISM":
                    rng = np.random.default_rng(0); yl = np.full(len(y), -1)
                    lab = rng.choice(len(y), len(y) // 10, replace=False); yl[lab] = y[lab]
                    m.fit(X, yl)
                else:
                    m.fit(X)
                row.append(f"{rule} {nmi(y, m.labels_):.3f} ({time.time()-t:.1f}s)")
            except Exception as e:
                row.append(f"{rule} ERR {type(e).__name__}: {str(e)[:60]}")
        print(f"{name:10s} {est:18s} " + " | ".join(row), flush=True)
