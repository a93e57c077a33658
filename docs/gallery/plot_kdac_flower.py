"""
Two segmentations of one image: KDAC on a flower photograph
===========================================================

Alternative clustering finds a clustering that is good *and* novel with respect
to an existing one. As in the Flower experiment of the papers (ISM paper,
Fig. 1a; dissertation, Fig. 3.3), every distinct colour of an image is one
sample. Unsupervised ISM first splits the colours into two segments; KDAC
(sigma 2, lambda 10, q 2, the dissertation's Table 3.2) then finds a second
two-segment split that differs from it.

The photograph is scikit-learn's ``load_sample_image("flower.jpg")``, shipped
with scikit-learn. It is taken at a quarter of its resolution and each colour
channel is rounded to a multiple of 25, which leaves about 200 distinct colours
(the papers' Flower drawing has 256).
"""
import matplotlib.pyplot as plt
from sklearn.datasets import load_sample_image
from sklearn.preprocessing import StandardScaler

import ikdr
from ikdr.datasets import load_image_colors, segmentation_image

STEP = 25                                           # colour rounding
photo = load_sample_image("flower.jpg")[::4, ::4]   # 107 x 160 pixels
image = (photo // STEP * STEP + STEP // 2).astype("uint8")
colors, index = load_image_colors(image)   # the distinct colours, and
X = StandardScaler().fit_transform(colors)  # each pixel's row of them

ism = ikdr.ISMClustering(n_clusters=2, n_components=2, random_state=0)
original = ism.fit_predict(X)
kdac = ikdr.KDAC(n_clusters=2, n_components=2, sigma=2.0, lam=10.0,
                 random_state=0)
kdac.fit(X, original)
print(f"{len(colors)} distinct colours; novelty (NMI to the original) "
      f"{kdac.novelty_:.3f}, clustering quality {kdac.quality_:.3f}")

# %%
# The first segmentation separates the orange flower from the green and blue
# leaves. The alternative one cuts across that split (its NMI to the first is
# about 0): each of its segments holds colours of both the flower and the
# leaves.

panels = [
    ("photograph (rounded colours)", image),
    ("original segmentation\n(ISM clustering)",
     segmentation_image(original, index)),
    ("alternative segmentation\n(KDAC)",
     segmentation_image(kdac.labels_, index)),
]
fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
for ax, (title, picture) in zip(axes, panels):
    ax.imshow(picture)
    ax.set_title(title, fontsize=10)
    ax.axis("off")
fig.tight_layout()
plt.show()
