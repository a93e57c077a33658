"""
Two segmentations of one image: KDAC on the Flower
==================================================

Alternative clustering finds a clustering that is good *and* novel with respect
to an existing one. The distinct colours of the Flower image (ISM paper, Fig. 1a;
dissertation, Fig. 3.3) are first clustered into two segments by unsupervised
ISM; KDAC (sigma 2, lambda 10, q 2, the dissertation's Table 3.2) then finds an
alternative two-segment split that differs from it.

The image is one of the papers' data files, read from ``$IKDR_SHARED_DATA`` or
``../shared/data`` next to the repository; without it this example only says so.
"""
import os
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.datasets import load_image_colors, read_png, segmentation_image


def find_flower():
    candidates = []
    if os.environ.get("IKDR_SHARED_DATA"):
        candidates.append(Path(os.environ["IKDR_SHARED_DATA"]))
    here = Path(__file__).resolve() if "__file__" in globals() else Path.cwd()
    candidates += [parent / "shared" / "data" for parent in here.parents]
    return next((c / "flower.png" for c in candidates if (c / "flower.png").exists()), None)


path = find_flower()
if path is None:
    print("flower.png not found (set IKDR_SHARED_DATA to the papers' data folder): "
          "example skipped")
else:
    colors, index = load_image_colors(path)       # distinct colours, and each pixel's colour
    X = StandardScaler().fit_transform(colors)
    original = ikdr.ISMClustering(n_clusters=2, n_components=2, random_state=0).fit_predict(X)
    kdac = ikdr.KDAC(n_clusters=2, n_components=2, sigma=2.0, lam=10.0, random_state=0)
    kdac.fit(X, original)
    print(f"{len(colors)} distinct colours; novelty (NMI to the original) "
          f"{kdac.novelty_:.3f}, clustering quality {kdac.quality_:.3f}")

    panels = [("Flower", read_png(path)),
              ("original segmentation\n(ISM clustering)", segmentation_image(original, index)),
              ("alternative segmentation\n(KDAC)", segmentation_image(kdac.labels_, index))]
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    for ax, (title, image) in zip(axes, panels):
        ax.imshow(image)
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.tight_layout()
    plt.show()
