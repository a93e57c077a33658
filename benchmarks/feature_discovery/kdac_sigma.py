from common import *
from sklearn.metrics import normalized_mutual_info_score as nmi
D = os.environ.get("IKDR_SHARED_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
L = lambda f: np.loadtxt(f"{D}/{f}", delimiter=",")
sets = {"moon400x4": (L("moon_400x4.csv"), L("moon_400x4_original_label.csv").astype(int), L("moon_400x4_alt_label.csv").astype(int)),
        "face(identity->pose)": (L("face_624x20.csv"), L("face_624x20_identity_label.csv").astype(int), L("face_624x20_pose_label.csv").astype(int))}
for name, (X, yex, yalt) in sets.items():
    X = std(X); k = len(np.unique(yalt)); d = X.shape[1]
    row = []
    for rule in ["auto", "median", "med*sqrt(q/d)"]:
        q = max(k - 1, 1)
        kw = dict(n_clusters=k, random_state=0)
        m = ikdr.KDAC(**kw) if rule == "auto" else ikdr.KDAC(sigma="median", **kw) if rule == "median" else \
            ikdr.KDAC(sigma=med(X) * np.sqrt(q / d), n_components=q, **kw)
        t = time.time(); m.fit(X, yex)
        row.append(f"{rule} alt {nmi(yalt, m.labels_):.3f} / existing {nmi(yex, m.labels_):.3f} ({time.time()-t:.1f}s)")
    print(f"{name:22s} KDAC " + " | ".join(row), flush=True)
