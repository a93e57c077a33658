r"""
Which words matter
==================

A corpus of 4,000 short documents over a vocabulary of 8,000 words, as a
``scipy.sparse`` matrix of term counts: most words follow Zipf's law and
mean nothing; three groups of five words are planted. A document's class is
set by whether it uses the *weather* words or the *travel* words, but not
both (an XOR), and by whether it uses the *price* words. A weather word alone
says nothing about the class, so a univariate test (chi-squared) ranks it
among the noise; ISM keeps the sparse matrix as it is (never densified),
finds all fifteen words, and each direction of :math:`W` reads as a list of
words.
"""
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.feature_selection import chi2

import ikdr

rng = np.random.default_rng(0)
n, d = 4000, 8000
syllables = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze", "bo", "di"]
vocabulary = np.array(["".join(rng.choice(syllables, 3)) + str(i) for i in range(d)])
planted = {"weather": ["rain", "sunny", "cloudy", "storm", "breeze"],
           "travel": ["train", "airport", "ticket", "hotel", "luggage"],
           "price": ["cheap", "discount", "expensive", "bargain", "sale"]}
positions = rng.choice(np.arange(100, 2000), size=15, replace=False).reshape(3, 5)
for group, words in zip(positions, planted.values()):
    vocabulary[group] = words

# Zipf noise: about 60 words a document
p = np.arange(1, d + 1) ** -1.1
tokens = rng.poisson(70, n)
rows = np.repeat(np.arange(n), tokens)
cols = rng.permutation(d)[rng.choice(d, size=rows.size, p=p / p.sum())]
X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, d))
# the planted groups: each present in half the documents, its words then used
present = rng.random((n, 3)) < 0.5
y = 2 * (present[:, 0] ^ present[:, 1]) + present[:, 2]
i, g, t = np.nonzero((rng.random((n, 3, 5)) < 0.9) & present[:, :, None])
X = (X + sp.csr_matrix((np.ones(i.size), (i, positions[g, t])), shape=(n, d))).tocsr()
print(f"{n} documents x {d} words, {X.nnz} stored counts "
      f"({100 * X.nnz / (n * d):.1f}% of the dense matrix)")

# %%
# ISM on the counts
# -----------------
# The defaults choose the words on held-out rows; ``support_`` is the answer.
ism = ikdr.ISM(random_state=0).fit(X, y)
print("words ISM keeps:", ", ".join(sorted(vocabulary[ism.support_].tolist())))
top_chi2 = np.argsort(-np.nan_to_num(chi2(X, y)[0]))[:15]
print("chi-squared's top 15:", ", ".join(sorted(vocabulary[top_chi2].tolist())))

# %%
# Top words per component
# -----------------------
# Each column of ``components_`` is a direction of the projection; its
# largest loadings name the words it is made of.
W = ism.components_
for k in range(W.shape[1]):
    order = np.argsort(-np.abs(W[:, k]))[:6]
    words = ", ".join(f"{vocabulary[j]} ({W[j, k]:+.2f})" for j in order)
    print(f"component {k}: {words}")

fig, axes = plt.subplots(1, W.shape[1], figsize=(3.2 * W.shape[1], 3), sharey=False)
for k, ax in enumerate(np.atleast_1d(axes)):
    order = np.argsort(-np.abs(W[:, k]))[:8][::-1]
    ax.barh(vocabulary[order], W[order, k])
    ax.set_title(f"component {k}")
fig.suptitle("Top words of each direction of W")
fig.tight_layout()
plt.show()
