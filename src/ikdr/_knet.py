"""KNet deep kernel clustering (dissertation ch. 4)."""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from ._mlp import MLP, Adam, pretrain_identity
from ._progress import IterationReport
from ._validation import check_scale, keep_state_on_error
from .gamma import Gamma, centered, clustering_gamma
from .kernels import Gaussian, Kernel, RelativeGaussian
from .spectral import (AUTO_NEIGHBORS, auto_kernel, kernel_degrees, njw_labels,
                       row_normalised, spectral_embedding)
from ._typing import RandomStateLike, SigmaLike

__all__ = ["KNetClustering", "KNetTraining", "auto_sigma", "cayley_step",
           "knet_objective_and_gradient", "train_knet"]


def auto_sigma(X, n_clusters, *, n_neighbors=AUTO_NEIGHBORS):
    r"""KNet's default bandwidth (``sigma="auto"``): the median over the samples
    of the distance to the 7th nearest neighbour in X.

    The global counterpart of the local scaling of the ISM estimators
    (:func:`ikdr.spectral.auto_kernel`): KNet's kernel acts on the moving
    embedding and on mini-batches, where per-sample bandwidths of X do not
    apply, so one global sigma at the scale of the neighbourhoods is used.
    On the standardised Moon, Spiral and circles it is 0.04-0.07 x the median
    distance (the thesis used 0.1 x median there, Table 4.1); NMI 1.0 on all
    three against 0.45-0.60 at the median (issue 15). Cost: one k-NN query.

    Raises ValueError when n_samples < 3 x n_clusters or all samples coincide.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if n < 3 * int(n_clusters):
        raise ValueError(f'sigma="auto" needs at least 3 x n_clusters = {3 * int(n_clusters)} '
                         f"samples to estimate a bandwidth, got n_samples={n}; give a numeric "
                         "sigma")
    if not np.any(X != X[:1]):
        raise ValueError('sigma="auto": every sample of X is identical, no bandwidth can be '
                         "estimated from the data")
    scales = RelativeGaussian.local_scales(X, min(int(n_neighbors), n - 1))
    return float(np.median(scales))


def knet_objective_and_gradient(Psi: np.ndarray, gamma: Gamma, kernel: Kernel, *,
                                with_value: bool = True,
                                n_threads: int | None = None) -> tuple[float, np.ndarray]:
    r"""Value and row gradient of :math:`J(\Psi) = \sum_{ij}\Gamma_{ij}
    \exp(-\|\psi_i - \psi_j\|^2 / 2\sigma^2)` (dissertation Eq. 4.11).

    :math:`\nabla_\Psi J = -(2/\sigma^2) L(\Gamma \circ K) \Psi`, a Laplacian
    product the fused C++ core forms tile by tile (DESIGN.md section 5): its
    gradient mode returns :math:`2 L(\Gamma \circ f') R` with
    :math:`f' = -K/2\sigma^2`, i.e. :math:`-(1/\sigma^2) L(\Gamma\circ K)\Psi`,
    which is half the gradient (J counts every pair twice).
    """
    Psi = np.ascontiguousarray(Psi, dtype=np.float64)
    Y, value = kernel.gradient_product(Psi, Psi, gamma, n_threads=n_threads)
    return (value if with_value else np.nan), 2.0 * Y


def _u_gradient(Psi, kernel, U, degrees):
    r""":math:`\nabla_U \mathrm{Tr}(U^T M U) = 2 M U`, :math:`M = H D^{-1/2} K D^{-1/2} H`,
    by one matrix-free kernel product; also returns :math:`\mathrm{Tr}(U^T M U)`."""
    s = 1.0 / np.sqrt(degrees)
    R = np.ascontiguousarray(s[:, None] * centered(U))
    KR, _ = kernel.product(Psi, R)
    MU = centered(s[:, None] * KR)
    return 2.0 * MU, float(np.sum(U * MU))


def cayley_step(U: np.ndarray, G: np.ndarray, tau: float) -> np.ndarray:
    r"""One Cayley step on the Stiefel manifold in the ascent direction G (Wen and Yin 2013).

    :math:`U^+ = (I - \tfrac\tau2 A)^{-1}(I + \tfrac\tau2 A)U` with the
    skew-symmetric :math:`A = G U^T - U G^T` (dissertation Eq. 4.15-4.17 with
    the sign fixed so that A is skew and the step ascends; DESIGN.md section 5).
    With :math:`A = L R^T`, :math:`L = [G, U]`, :math:`R = [U, -G]`, the
    Sherman-Morrison-Woodbury identity gives
    :math:`U^+ = U + \tau L (I - \tfrac\tau2 R^T L)^{-1} R^T U` in
    :math:`O(n k^2 + k^3)`; :math:`U^{+T} U^+ = I` whenever :math:`U^T U = I`.
    """
    L = np.hstack([G, U])
    R = np.hstack([U, -G])
    small = np.eye(L.shape[1]) - 0.5 * tau * (R.T @ L)
    return U + tau * (L @ np.linalg.solve(small, R.T @ U))


#: halvings of the learning rate after which a run stops (no ascent step is left)
_MAX_HALVINGS = 10
#: below this many rows a fused product runs on one thread (thread start-up dominates)
_SERIAL_ROWS = 1024
#: rows of new data per kernel block in :meth:`KNetClustering.predict`
_PREDICT_CHUNK = 2048
#: no round runs when the points' similarity to themselves is more than this
#: share of the start's Tr(Gamma K) (measured: clean data sets 8-13 %,
#: anisotropic-1 38 %, fragmented ones 55-100 %; docs/clustering_defaults.md)
_FRAGMENTED_SELF_SHARE = 0.5


def _kernel_times(A, B, kernel, R):
    """``K(A, B) R`` (or the row sums ``K(A, B) 1`` when R is None), in row blocks."""
    out = []
    for start in range(0, A.shape[0], _PREDICT_CHUNK):
        K = kernel.matrix(A[start:start + _PREDICT_CHUNK], B)
        out.append(K.sum(axis=1) if R is None else K @ R)
    return np.concatenate(out, axis=0)


def _partition_hsic(Psi, kernel, degrees, labels, k):
    r"""HSIC (Eq. 4.4, up to the constant) of a partition with the learned kernel:
    :math:`\mathrm{Tr}(Y^T H D^{-1/2} K D^{-1/2} H Y)` with Y the orthonormalised
    centred indicator matrix (Eq. 4.5 restricted to partitions)."""
    Y = centered(np.eye(k)[labels])
    Y = Y[:, np.linalg.norm(Y, axis=0) > 0]
    if Y.shape[1] == 0:
        return -np.inf
    Q = np.linalg.qr(Y)[0]
    return _u_gradient(Psi, kernel, Q, degrees)[1]


def _self_similarity(U, degrees):
    r"""The diagonal part of :math:`\mathrm{Tr}(\Gamma K)`, :math:`\sum_i \Gamma_{ii}
    k(\psi_i, \psi_i) = \sum_i \|(HU)_i\|^2 / d_i` (a Gaussian's k(x, x) = 1)."""
    return float(np.sum(centered(U) ** 2 / np.asarray(degrees)[:, None]))


def _spread(Psi):
    """Root-mean-square distance of the rows to their mean (the embedding's scale)."""
    return float(np.sqrt(np.mean(np.sum(centered(Psi) ** 2, axis=1)))) or 1.0


@dataclass
class KNetTraining:
    r"""Result of :func:`train_knet`.

    Attributes
    ----------
    embedding : ndarray (n, d)
        :math:`\psi_\theta(X)` after the last kept round.
    U : ndarray (n, k)
    degrees : ndarray (n,)
    history : list of float
        Objective the rounds ascend after each round (entry 0: the start);
        non-decreasing. ``update="fixed"``: :math:`\mathrm{Tr}(HUU^TH K_\psi)`
        of the embedding kernel; otherwise Eq. 4.8a.
    n_iter : int
        Rounds run (0 after a fragmented start).
    n_rejected : int
        Rounds undone because they lowered the objective or raised it only
        through the points' similarity to themselves.
    converged : bool
        True only when a kept round changed :math:`UU^T` by less than ``tol``
        and raised the objective by less than ``tol`` times its value; False
        when the step size ran out (every recent round undone), ``max_iter``
        was reached or the start was fragmented.
    stop_reason : str
        "converged", "step size exhausted", "max_iter" or "fragmented start"
        (no round run: more than half of the start's objective is
        :math:`\sum_i \Gamma_{ii} k(\psi_i, \psi_i)`, see :class:`KNetClustering`).
    spread : float
        Spread of X the embedding is scaled to.
    """

    embedding: np.ndarray = field(repr=False)
    U: np.ndarray = field(repr=False)
    degrees: np.ndarray = field(repr=False)
    history: list = field(default_factory=list)
    n_iter: int = 0
    n_rejected: int = 0
    converged: bool = False
    stop_reason: str = ""
    spread: float = 1.0

    @property
    def n_accepted(self):
        """Rounds kept."""
        return self.n_iter - self.n_rejected


def _embed(encoder, X, spread0):
    """psi(X): the network output rescaled to the spread of the training data."""
    out = encoder.forward(X)
    return out * (spread0 / _spread(out))


def _batch_objective(X, gamma, kernel, encoder, decoder, lam, spread0, *, keep=False,
                     with_value=True):
    r"""Objective (4.8a) on rows X (a batch) and the gradients of every
    parameter, for gradient *ascent*.

    The embedding is the network output scaled to a fixed spread,
    :math:`\psi = c\,f_\theta(X)/s(f_\theta(X))` (s: root-mean-square
    distance to the batch mean, c: that of the training X). With sigma fixed,
    an unscaled network can raise (4.11) by shrinking everything, which
    merges the clusters; the scaling removes that trivial direction and is
    the identity at the start.
    """
    out = encoder.forward(X, keep=keep)
    s = _spread(out)
    Psi = out * (spread0 / s)
    value, grad_z = knet_objective_and_gradient(
        Psi, gamma, kernel, with_value=with_value,
        n_threads=1 if Psi.shape[0] <= _SERIAL_ROWS else None)
    if decoder is not None:
        recon = decoder.forward(Psi, keep=keep)
        diff = X - recon
        value -= lam * float(np.sum(diff * diff))
        if keep:
            dec_grads, g_in = decoder.backward(2.0 * lam * diff)
            grad_z = grad_z + g_in
    else:
        dec_grads = []
    if not keep:
        return value, []
    # chain rule through Psi = c out / s(out)
    Zc = centered(Psi)
    m = Psi.shape[0]
    grad_out = (spread0 / s) * (grad_z - (np.sum(grad_z * Psi) / (m * spread0 ** 2)) * Zc)
    enc_grads = encoder.backward(grad_out)[0]
    return value, enc_grads + dec_grads


def _sma_step(Psi, kernel, U, degrees, tau):
    """One Cayley step with backtracking (Armijo) on Tr(U^T M U); returns (U, next tau)."""
    G, value = _u_gradient(Psi, kernel, U, degrees)
    # Riemannian gradient norm^2 = 1/2 ||A||_F^2 for the canonical metric
    slope = float(np.sum(G * G) - np.sum((U.T @ G) ** 2))
    if slope <= 1e-300:
        return U, tau
    for _ in range(30):
        U_new = cayley_step(U, G, tau)
        _, new_value = _u_gradient(Psi, kernel, U_new, degrees)
        if new_value >= value + 1e-4 * tau * slope:
            return U_new, 2.0 * tau
        tau *= 0.5
    return U, tau


def train_knet(X, kernel, n_clusters, encoder, decoder=None, *, embedding_kernel=None,
               lam=0.0, learning_rate=1e-2, batch_size=200, max_iter=100, epochs_per_iter=1,
               tol=1e-3, update="fixed", rng=None, report=None):
    r"""KNet's rounds (dissertation Algorithm 3, and the fixed-target variant).

    The start: U is the spectral embedding of ``kernel`` (the affinity) on
    :math:`\psi(X) = X`, i.e. spectral clustering of X. Each round then runs
    ``epochs_per_iter`` epochs of Adam ascent on
    :math:`\sum_{ij}\Gamma_{ij} k(\psi_i, \psi_j)` (Eq. 4.11; mini-batches
    use the batch's rows of Gamma's factor):

    * ``update="fixed"``: :math:`\Gamma = HUU^TH` with U held at the start
      and k the Gaussian ``embedding_kernel`` (plain HSIC, D = I). The network
      learns to map the affinity's clusters of X to compact groups; no U-step.
      A round that lowers :math:`\mathrm{Tr}(\Gamma K_\psi)` is undone.
    * ``update="eig"`` / ``"sma"`` (Algorithm 3): :math:`\Gamma =
      D^{-1/2}HUU^THD^{-1/2}` and k = ``kernel``, then D, then U (top
      eigenvectors or one Cayley step). A round whose epoch lowers Eq. 4.8a
      with D recomputed (at the old U), or lowers its part over pairs of
      distinct points, is undone.

    An undone round halves the learning rate (see :class:`KNetClustering`);
    after ten halvings the run stops (``stop_reason="step size exhausted"``,
    ``converged=False``). The run converges when a kept round changes
    :math:`UU^T` by less than ``tol`` and raises the objective by less than
    ``tol`` relative to its value. No round runs when the start is fragmented
    (``stop_reason="fragmented start"``).

    Parameters
    ----------
    X : ndarray (n, d), standardised
    kernel : Gaussian
        Fitted affinity on the embedding: the start's spectral clustering, and
        the network's kernel for ``"eig"`` and ``"sma"``.
    n_clusters : int
    encoder, decoder : ikdr._mlp.MLP
        Networks (the encoder starting at the identity); decoder None when lam = 0.
    embedding_kernel : Gaussian
        Fitted kernel the network ascends with ``update="fixed"`` (required there).
    lam, learning_rate, batch_size, max_iter, epochs_per_iter, tol, update
        As in :class:`KNetClustering`.
    rng : RandomState
    report : IterationReport, optional

    Returns
    -------
    KNetTraining
    """
    rng = check_random_state(rng)
    n = X.shape[0]
    k = int(n_clusters)
    fixed = update == "fixed"
    if fixed and embedding_kernel is None:
        raise ValueError('update="fixed" needs the embedding_kernel the network ascends')
    params = encoder.params + (decoder.params if decoder is not None else [])
    optimizer = Adam(params, learning_rate)
    shuffle = np.random.default_rng(rng.randint(2**31 - 1))
    spread0 = _spread(X)
    Psi = _embed(encoder, X, spread0)
    U, _, degrees = spectral_embedding(Psi, kernel, k, random_state=rng.randint(2**31 - 1))
    gamma = clustering_gamma(U, degrees)
    start_value = kernel.objective(Psi, None, gamma)
    if _self_similarity(U, degrees) > _FRAGMENTED_SELF_SHARE * start_value:
        # More of Tr(Gamma K) comes from the points' similarity to themselves than from
        # pairs: the kernel isolates points of X and U holds indicators of them, not
        # clusters (digits at the 7-NN median sigma: 97 %, its NJW partition 9 clusters of
        # 1-7 points; the clean data sets 8-13 %). Epochs on that Gamma only push the
        # isolated points further out (digits: NMI of k-means on psi 0.63 -> 0.19), so the
        # start is kept.
        return KNetTraining(embedding=Psi, U=U, degrees=degrees, history=[start_value],
                            n_iter=0, n_rejected=0, converged=False,
                            stop_reason="fragmented start", spread=spread0)
    if fixed:
        # The plain HSIC of the embedding kernel against the start's clusters. The
        # normalised objective of the narrow affinity is already near its maximum k on
        # the moons (1.998 of 2) and only its degrees move (every round undone, issue 15);
        # the wide kernel sees whole clusters, so ascending it gathers each cluster into
        # a compact group. Its U-step would follow that wide kernel to a convex split
        # (moons NMI 0.49-0.57, circles 0.00), so U stays the affinity's.
        ascended = embedding_kernel
        gamma = clustering_gamma(U, np.ones(n))
        history = [ascended.objective(Psi, None, gamma)]
    else:
        ascended = kernel
        history = [start_value]
    tau = 1.0
    converged = False
    stop_reason = "max_iter"
    n_iter = 0
    n_rejected = 0
    halvings = 0
    for n_iter in range(1, int(max_iter) + 1):
        factor, scale = gamma.factor, gamma.scale
        value_before = history[-1]
        saved = ([p.copy() for p in params], optimizer.state())
        for _ in range(int(epochs_per_iter)):
            order = shuffle.permutation(n)
            for start in range(0, n, batch_size):
                idx = order[start:start + batch_size]
                if idx.shape[0] <= k and start > 0:  # fold a tiny tail into the last batch
                    continue
                _, grads = _batch_objective(X[idx], Gamma(factor[idx], scale), ascended, encoder,
                                            decoder, lam, spread0, keep=True, with_value=False)
                optimizer.step([-g for g in grads])
        Psi_new = _embed(encoder, X, spread0)
        if fixed:
            # Gamma does not depend on psi, so the points' similarity to themselves,
            # sum_i ||(HU)_i||^2, is constant: a rise is a rise over pairs.
            value_after = ascended.objective(Psi_new, None, gamma)
            lowered = value_after < value_before
        else:
            # Eq. 4.8a judged at the old U with D recomputed. (Judging after the U-step
            # instead kept most rounds on the moons and raised the objective, but tore a
            # moon apart: NMI 1.0 -> 0.60 at n = 600; issue 15.)
            degrees_new = kernel_degrees(Psi_new, kernel)
            value_after = _u_gradient(Psi_new, kernel, U, degrees_new)[1]
            # The same objective without each point's similarity to itself,
            # k(psi_i, psi_i) = 1: that part, sum_i ||(HU)_i||^2 / d_i, rises only as
            # degrees fall towards 1, i.e. by isolating points, never by gathering a
            # cluster (digits: every kept round raised (4.8a) 9.885 -> 9.958 through it
            # while the rest fell 0.33 -> 0.04).
            pairs_before = value_before - _self_similarity(U, degrees)
            pairs_after = value_after - _self_similarity(U, degrees_new)
            lowered = value_after < value_before or pairs_after < pairs_before
        if lowered:
            # The epoch holds D fixed (a surrogate of Eq. 4.8a) or runs on mini-batches;
            # when it lowers the objective, or (eig, sma) raises it only by fragmenting
            # the data, undo it and halve the step, so the rounds ascend monotonically
            # and cannot wander away from the spectral-clustering start.
            for p, old in zip(params, saved[0]):
                p[...] = old
            optimizer.restore(saved[1])
            optimizer.lr *= 0.5
            n_rejected += 1
            halvings += 1
            history.append(history[-1])
            if report is not None:  # one line per round, kept or undone
                report(n_iter, history[-1], 0.0, round="undone")
            if halvings >= _MAX_HALVINGS:
                stop_reason = "step size exhausted"
                break
            continue
        Psi = Psi_new
        if fixed:
            U_new, value = U, value_after
        elif update == "eig":
            # dense up to DENSE_MAX_N; above, LOBPCG warm-started from the previous U.
            U_new, vals, degrees = spectral_embedding(
                Psi, kernel, k, random_state=rng.randint(2**31 - 1), U0=U)
            value = float(np.sum(vals))  # Tr(U^T H D^-1/2 K D^-1/2 H U)
        else:
            degrees = degrees_new
            U_new, tau = _sma_step(Psi, kernel, U, degrees, tau)
            value = None
        change = np.sqrt(max(2.0 * (k - np.sum((U.T @ U_new) ** 2)), 0.0) / k)
        if not fixed:
            U = U_new
            gamma = clustering_gamma(U, degrees)
            if value is None:
                value = kernel.objective(Psi, None, gamma)
        gain = (value - history[-1]) / max(abs(value), np.finfo(float).tiny)
        history.append(value)
        if report is not None:
            report(n_iter, history[-1], change)
        if change < tol and gain < tol:
            converged = True
            stop_reason = "converged"
            break
    return KNetTraining(embedding=Psi, U=U, degrees=degrees, history=history, n_iter=n_iter,
                        n_rejected=n_rejected, converged=converged, stop_reason=stop_reason,
                        spread=spread0)



class KNetClustering(ClusterMixin, TransformerMixin, BaseEstimator):
    r"""KNet deep kernel clustering (dissertation chapter 4, Algorithm 3).

    Learns an embedding :math:`\psi_\theta` (a ReLU MLP) that maximises the
    dependence :math:`\mathrm{HSIC}(\psi_\theta(X), U)` on a spectral
    clustering U (Eq. 4.8). The start is plain spectral clustering of X: U is
    the top eigenvectors of :math:`H D^{-1/2} K_X D^{-1/2} H` for the
    Gaussian affinity of ``sigma`` (Eq. 4.14), whose small default bandwidth
    follows non-convex clusters. Each round is one epoch of stochastic
    gradient ascent (Adam) on :math:`\sum_{ij}\Gamma_{ij}
    \exp(-\|\psi_i - \psi_j\|^2/2s^2)` (Eq. 4.11; mini-batches use the
    batch's sub-matrix of Gamma), for one of two U-updates:

    * ``update="fixed"`` (default): :math:`\Gamma = HUU^TH` with U held at the
      start and s = ``embedding_sigma`` (the median distance): the plain HSIC
      of a wide kernel, which sees whole clusters and so rises as the network
      gathers each cluster of the start into a compact, convex group. The
      rounds stop when one raises it by less than ``tol`` (relative).
    * ``update="eig"`` / ``"sma"`` (the thesis' KNet_EIG / KNet_SMA):
      :math:`\Gamma = D^{-1/2} H U U^T H D^{-1/2}` and s = ``sigma``; after
      the epoch D, then U by the top eigenvectors of
      :math:`H D^{-1/2} K_\Psi D^{-1/2} H` or one Cayley step on the Stiefel
      manifold (Eq. 4.16), until :math:`UU^T` stops changing.

    Why "fixed" is the default (a deviation from the paper). With the
    small sigma the normalised objective is already near its maximum k at the
    start (moons 1.998 of 2): it only sees neighbourhoods, gives no reason to
    gather a cluster, and every round of ``"eig"`` on the moons was undone
    (below), so the network learned nothing. Ascending the wide kernel against
    the start's clusters raises the objective 1.4-1.8x on the moons, the
    Spiral and Moon and maps them to groups k-means separates (NMI 1.0 from
    0.39-0.51 on X). U-steps with either kernel on the moving embedding
    drifted away from the clusters (moons NMI 0.0-0.6), so U stays the start's.

    Monotone rounds (deviation from the paper). For ``"eig"`` and ``"sma"``
    the epoch holds D fixed, a surrogate of (4.8a); on the Moon and the Spiral
    (sigma = 0.1 x median, Table 4.1) every such epoch *lowers* (4.8a)
    evaluated with D recomputed (it rewards making neighbourhoods denser), and
    repeated epochs tore the clusters apart (NMI 0.44-0.66). A round whose
    epoch lowers the objective (for ``"eig"``/``"sma"``: (4.8a) at the old U
    with D recomputed) is therefore undone and the learning rate halved; after
    ten halvings the run stops with ``converged_ = False`` and a
    ConvergenceWarning. The history is non-decreasing.

    No gain by fragmenting (deviation from the paper). (4.8a) is
    :math:`\mathrm{Tr}(\Gamma K) = \sum_i \Gamma_{ii} + \sum_{i \ne j}
    \Gamma_{ij} k(\psi_i, \psi_j)`; the first part, :math:`\sum_i
    \|(HU)_i\|^2 / d_i`, grows only as degrees fall towards a point's
    similarity to itself, i.e. by isolating points. A round is also undone
    when it lowers the second part (the pairs). And when the first part is
    more than half of the objective at the start, the Gaussian of ``sigma``
    isolates points of X and U holds indicators of them rather than clusters;
    epochs on that Gamma only push those points further out, so no round is
    run (``stop_reason_ = "fragmented start"``, ``n_iter_ = 0``, a
    ConvergenceWarning) and the output is the rounding of the start. On the
    standardised digits at the default sigma the first part is 97 % of the
    objective (the learned kernel's NJW partition: nine clusters of 1-7
    points), and the five rounds the guard kept before took k-means on psi
    from NMI 0.63 to 0.19; on circles, moons, spiral, face and wine it is
    8-13 % and nothing changes.

    Output. Three partitions are formed: k-means on :math:`\psi_\theta(X)`
    (Alg. 3), the NJW rounding of U (k-means on the row-normalised spectral
    embedding of the learned kernel 4.10) and the NJW rounding of the
    local-scaling affinity on :math:`\psi_\theta(X)` (the default affinity of
    the ISM estimators, :func:`ikdr.spectral.auto_kernel`); ``labels_`` is the
    one with the largest HSIC (4.4) under that local-scaling affinity, the
    better discrete solution of (4.5) by a judge without a global bandwidth.
    This uses no labels. Judged by the learned kernel itself, whose sigma is
    small enough for the spiral and the moons, a partition that isolates the
    few outliers of a wide cluster scored highest (varied-variance blobs:
    NMI 0.02-0.04; with the local judge 0.71-0.93). After the
    rounds of ``"fixed"`` the three mostly agree (k-means on the gathered
    groups wins on the moons, circles, Moon and Spiral); on the untrained
    starts of blobs and varied blobs the local rounding usually wins, on
    cancer k-means. ``rounding_`` tells which.
    After a fragmented start (digits, breast cancer, most blobs) the same
    three partitions are formed on the start, :math:`\psi(X) = X`, i.e. of X
    itself.

    The embedding is the network output rescaled to the spread of the
    training data, :math:`\psi = c f_\theta(X) / s(f_\theta(X))` (s: root
    mean square distance to the mean). Deviation from the paper: with sigma
    fixed, the unscaled objective (4.11) rises by shrinking every distance,
    which merged the clusters in our runs; the rescaling removes that trivial
    direction and is the identity at the start.

    The encoder starts as the exact identity map (see :mod:`ikdr._mlp`; hidden
    widths < 2 d are pre-trained to it, Eq. 4.12) and U as the spectral
    embedding of X, so the first iterate is plain spectral clustering.

    Data should be standardised first, as in the paper. Training on a subset
    and clustering the rest with :meth:`predict` (out of sample, Table 4.4) is
    a supported use: ``KNetClustering(2).fit(X[subset]).predict(X)``. New
    points go to the nearest k-means centre in the embedding, with the
    spectral rounding through the Nystrom extension of U with the learned
    kernel to the nearest NJW centre, with the local rounding to the cluster
    of the nearest training point in the embedding.

    Parameters
    ----------
    n_clusters : int
    hidden_layer_sizes : tuple of int or None, default=None
        Hidden widths of the encoder (the decoder mirrors them). None: two
        hidden layers of ``max(2 d, 20)`` units, the smallest network that
        starts as the exact identity (the paper used 3 layers of width d or 20).
    update : {"fixed", "eig", "sma"}, default="fixed"
        "fixed": train against the start's U with the kernel of
        ``embedding_sigma``; "eig" / "sma": KNet_EIG or KNet_SMA (Algorithm 3).
    sigma : float, "auto" or "median", default="auto"
        Bandwidth of the Gaussian affinity: the start's spectral clustering,
        the rounding of the learned embedding and, for "eig" and "sma", the
        kernel the network ascends. "auto": the median distance of the
        samples to their 7th nearest neighbour (:func:`auto_sigma`, chosen
        from X alone; raises ValueError when all samples coincide or
        n_samples < 3 x n_clusters); "median": the median pairwise distance of
        the training X (dissertation Table 4.1).
    embedding_sigma : float or "median", default="median"
        Bandwidth of the Gaussian the network ascends with ``update="fixed"``
        (ignored otherwise); "median": the median pairwise distance of X. The
        embedding keeps the spread of X, so the scale stays meaningful.
    lam : float, default=0.0
        Weight of the autoencoder penalty; 0 (no decoder) in all of the
        paper's reported results.
    max_iter : int, default=100
        Maximum number of (epoch, D, U) rounds.
    epochs_per_iter : int, default=1
        Epochs of gradient ascent per round.
    learning_rate : float, default=1e-2
        Adam step size (halved after every undone round).
    batch_size : int or None, default=None
        Mini-batch size; None uses ``min(n_samples, 200)``.
    tol : float, default=1e-3
        Stop after a kept round that changes U by less than ``tol``
        (:math:`\|U_kU_k^T - U_{k-1}U_{k-1}^T\|_F / \|U_kU_k^T\|_F`, zero for
        "fixed") and raises the objective by less than ``tol`` times its value.
    random_state : int, RandomState instance or None
    verbose : int, default=0
        >= 1 prints one line per round (HSIC objective, change of
        :math:`UU^T`, time); with tqdm installed, a progress bar on a terminal.

    Attributes
    ----------
    labels_ : ndarray (n_samples,)
    embedding_ : ndarray (n_samples, n_features)
        :math:`\psi_\theta(X)` of the training data.
    cluster_centers_ : ndarray (n_clusters, n_features)
        k-means centres in the embedding (used by :meth:`predict`).
    U_ : ndarray (n_samples, n_clusters)
        Final spectral embedding.
    sigma_ : float
        Bandwidth of the affinity.
    embedding_kernel_ : Gaussian or None
        The kernel the network ascended (``update="fixed"``; None otherwise).
    n_iter_ : int
        Rounds run (0 after a fragmented start).
    history_ : list of float
        The objective the rounds ascend, :math:`\mathrm{Tr}(\Gamma K_\Psi)`,
        after each round (entry 0: the spectral-clustering start; "fixed":
        the plain HSIC of the embedding kernel, "eig"/"sma": Eq. 4.8a with D
        recomputed; after a fragmented start: (4.8a) of the start).
    converged_ : bool
        True only when a kept round met ``tol`` (not when the rounds stopped
        because every step was undone or ``max_iter`` was reached; a
        ConvergenceWarning is issued then, as after a fragmented start).
    stop_reason_ : str
        "converged", "step size exhausted", "max_iter" or "fragmented start"
        (no round run; see "No gain by fragmenting").
    n_rejected_ : int
        Rounds undone because their epoch lowered (4.8a) or its part over
        pairs of distinct points.
    rounding_ : {"kmeans", "spectral", "local"}
        Which partition of ``embedding_`` became ``labels_``: k-means on it,
        the NJW rounding of ``U_`` or that of the local-scaling affinity on it.
    partition_hsic_ : dict
        HSIC (4.4) of each of these candidate partitions under the
        local-scaling affinity on ``embedding_`` (X itself when no round was
        kept; the learned kernel when n_samples < 3 x n_clusters); the largest
        wins.

    References
    ----------
    Wu, C. (2020). Interpretable Kernel Dimension Reduction... PhD thesis,
    Northeastern University, ch. 4 (Eqs. 4.8-4.17, Algorithm 3).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.preprocessing import StandardScaler
    >>> from ikdr import KNetClustering
    >>> X = StandardScaler().fit_transform(make_moons(300, noise=0.05, random_state=0)[0])
    >>> labels = KNetClustering(2, sigma=0.2, random_state=0).fit_predict(X)
    >>> labels.shape
    (300,)
    """

    def __init__(self, n_clusters: int = 2, hidden_layer_sizes: Sequence[int] | None = None,
                 update: str = "fixed", sigma: SigmaLike = "auto",
                 embedding_sigma: float | str = "median", lam: float = 0.0,
                 max_iter: int = 100, epochs_per_iter: int = 1, learning_rate: float = 1e-2,
                 batch_size: int | None = None, tol: float = 1e-3,
                 random_state: RandomStateLike = None, verbose: int = 0) -> None:
        self.n_clusters = n_clusters
        self.hidden_layer_sizes = hidden_layer_sizes
        self.update = update
        self.sigma = sigma
        self.embedding_sigma = embedding_sigma
        self.lam = lam
        self.max_iter = max_iter
        self.epochs_per_iter = epochs_per_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 2, None, closed="left")],
        "hidden_layer_sizes": [None, tuple, list],
        "update": [StrOptions({"fixed", "eig", "sma"})],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                  StrOptions({"auto", "median"})],
        "embedding_sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                            StrOptions({"median"})],
        "lam": [Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "epochs_per_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    # -- validation ----------------------------------------------------------
    def _check_params(self, n, d):
        """Data-dependent checks (the rest: ``_parameter_constraints``)."""
        self._validate_params()
        k = int(self.n_clusters)
        if k >= n:
            raise ValueError(f"n_clusters={k} needs more samples than clusters; got "
                             f"n_samples={n}")
        batch = self.batch_size
        if batch is None:
            batch = min(n, 200)
        elif batch > n:
            raise ValueError(f"batch_size={batch} is larger than n_samples={n}")
        if batch <= k:
            raise ValueError(f"batch_size={batch} must exceed n_clusters={k}")
        if self.hidden_layer_sizes is None:
            hidden = (max(2 * d, 20),) * 2
        else:
            hidden = tuple(self.hidden_layer_sizes)
            for h in hidden:
                if isinstance(h, bool) or not isinstance(h, numbers.Integral):
                    raise TypeError(f"hidden_layer_sizes entries must be ints, got {h!r}")
                if h < 1:
                    raise ValueError(f"hidden_layer_sizes entries must be >= 1, got {h}")
        return k, float(self.lam), int(batch), hidden

    # -- network ---------------------------------------------------------------
    def _build(self, X, hidden, lam, rng):
        d = X.shape[1]
        seed = np.random.default_rng(rng.randint(2**31 - 1))
        encoder = MLP((d,) + hidden + (d,), seed)
        decoder = MLP((d,) + hidden[::-1] + (d,), seed) if lam > 0 else None
        nets = [encoder] + ([decoder] if decoder is not None else [])
        if all(net.can_be_identity() for net in nets):
            for net in nets:
                net.set_identity(seed)
        else:  # Eq. 4.12: pre-train to the identity
            pretrain_identity(nets, X, rng=seed)
        return encoder, decoder

    # -- fitting -----------------------------------------------------------------
    @keep_state_on_error
    def fit(self, X, y=None):
        """Learn the embedding and cluster X (:func:`train_knet` does the rounds).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        check_scale(X)
        n, d = X.shape
        k, lam, batch, hidden = self._check_params(n, d)
        rng = check_random_state(self.random_state)
        seed = rng.randint(2**31 - 1)
        if isinstance(self.sigma, str) and self.sigma == "auto":
            kernel = Gaussian(auto_sigma(X, k))
        else:
            kernel = Gaussian(self.sigma).fit(X, random_state=seed)
        embedding_kernel = (Gaussian(self.embedding_sigma).fit(X, random_state=seed)
                            if self.update == "fixed" else None)
        encoder, decoder = self._build(X, hidden, lam, rng)
        report = IterationReport("KNetClustering", self.verbose, total=int(self.max_iter)).start()
        try:
            out = train_knet(X, kernel, k, encoder, decoder,
                             embedding_kernel=embedding_kernel, lam=lam,
                             learning_rate=self.learning_rate, batch_size=batch,
                             max_iter=int(self.max_iter),
                             epochs_per_iter=int(self.epochs_per_iter), tol=self.tol,
                             update=self.update, rng=rng, report=report)
        finally:
            report.close()
        if out.stop_reason == "fragmented start":
            warnings.warn(f"KNetClustering did not train: at sigma={kernel.sigma:.4g} the kernel "
                          "isolates points of X (more of the objective comes from the points' "
                          "similarity to themselves than from pairs), so the labels are the "
                          "rounding of the start, psi = identity; a larger sigma may let KNet "
                          "learn", ConvergenceWarning, stacklevel=2)
        elif not out.converged:
            warnings.warn(f"KNetClustering stopped without converging ({out.stop_reason}); "
                          f"{out.n_accepted} of {out.n_iter} rounds were kept",
                          ConvergenceWarning, stacklevel=2)
        self.encoder_, self.decoder_ = encoder, decoder
        self.kernel_ = kernel
        self.sigma_ = float(kernel.sigma)
        self.embedding_kernel_ = embedding_kernel
        self.embedding_ = out.embedding
        self.scale_ = out.spread / _spread(encoder.forward(X))
        # the rounding and predict need the eigenvectors of the learned embedding: "fixed"
        # kept the start's U, "sma" one Cayley step from them
        moved = self.update == "sma" or (self.update == "fixed" and out.n_accepted > 0)
        self._round(out.embedding, kernel, k, out.U, out.degrees, rng, recompute_u=moved)
        self.n_iter_ = out.n_iter
        self.n_rejected_ = out.n_rejected
        self.converged_ = out.converged
        self.stop_reason_ = out.stop_reason
        self.history_ = out.history
        return self

    def _round(self, Psi, kernel, k, U, degrees, rng, recompute_u=False):
        """Turn the learned embedding into labels (see the class docstring, "Output").

        Candidates: k-means on psi(X) (Alg. 3), the NJW rounding of the
        spectral embedding of the learned kernel, and the NJW rounding of the
        local-scaling affinity on psi(X) (:func:`ikdr.spectral.auto_kernel`).
        The one with the largest HSIC (Eq. 4.4) under the local-scaling
        affinity wins: a judge without a global bandwidth (under the learned
        kernel's small sigma a partition isolating a few outliers scored
        highest).
        """
        if recompute_u:
            U, _, degrees = spectral_embedding(Psi, kernel, k, random_state=rng.randint(2**31 - 1))
        seed = rng.randint(2**31 - 1)
        if Psi.shape[0] >= 3 * k and np.any(Psi != Psi[:1]):
            judge = auto_kernel(Psi, k)
            U_local, _, degrees_local = spectral_embedding(Psi, judge, k, random_state=seed)
        else:  # too few points for local bandwidths: the learned kernel judges alone
            judge, U_local, degrees_local = kernel, None, degrees
        # k-means on n x k data is light; its OpenMP threads only fight busy cores
        with threadpool_limits(limits=1):
            km = KMeans(n_clusters=k, n_init=10, random_state=rng.randint(2**31 - 1)).fit(Psi)
            njw = KMeans(n_clusters=k, n_init=10,
                         random_state=rng.randint(2**31 - 1)).fit(row_normalised(U))
            candidates = {"kmeans": km.labels_, "spectral": njw.labels_}
            if U_local is not None:
                candidates["local"] = njw_labels(U_local, k, random_state=seed)
        self.partition_hsic_ = {name: _partition_hsic(Psi, judge, degrees_local, labels, k)
                                for name, labels in candidates.items()}
        # ties keep the earlier candidate (k-means, then the learned kernel's)
        self.rounding_ = max(candidates, key=lambda name: self.partition_hsic_[name])
        self.labels_ = candidates[self.rounding_]
        self.U_ = U
        self.degrees_ = degrees
        self.cluster_centers_ = km.cluster_centers_
        if self.rounding_ == "spectral":
            # Nystrom extension of U (Bengio et al. 2004): u(x) = a(x) (U^T M U)^-1 with
            # a(x) = d(x)^-1/2 k(x, .) D^-1/2 U - c; exact on the training points.
            SU = U / np.sqrt(degrees)[:, None]
            MU = _u_gradient(Psi, kernel, U, degrees)[0] / 2.0
            self._nystrom_shift = np.mean(np.sqrt(degrees)[:, None] * _kernel_times(
                Psi, Psi, kernel, SU) / degrees[:, None], axis=0)
            self._nystrom_inverse = np.linalg.pinv(U.T @ MU)
            self._spectral_rows = SU
            self._spectral_centers = njw.cluster_centers_

    def fit_predict(self, X, y=None):
        """Fit and return the cluster labels of X."""
        return self.fit(X).labels_

    def transform(self, X):
        """The learned embedding :math:`\\psi_\\theta(X)`."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.encoder_.forward(X) * self.scale_

    def predict(self, X):
        """Cluster new points (out of sample, dissertation Table 4.4).

        With the k-means rounding: the nearest learned cluster centre in the
        embedding. With the spectral rounding: the Nystrom extension of U
        through the learned kernel (4.10), then the nearest NJW centre. With the
        local rounding (its bandwidths belong to the training points): the
        label of the nearest training point in the embedding. All reproduce
        ``labels_`` on the training data.
        """
        Psi = self.transform(X)
        if self.rounding_ == "kmeans":
            d2 = ((Psi[:, None, :] - self.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
            return np.argmin(d2, axis=1)
        if self.rounding_ == "local":
            # the local bandwidths belong to the training points: the label of the
            # nearest training point in the embedding
            from sklearn.neighbors import NearestNeighbors

            nearest = NearestNeighbors(n_neighbors=1).fit(self.embedding_).kneighbors(
                Psi, return_distance=False)[:, 0]
            return self.labels_[nearest]
        labels = np.empty(Psi.shape[0], dtype=np.intp)
        for start in range(0, Psi.shape[0], _PREDICT_CHUNK):
            P = Psi[start:start + _PREDICT_CHUNK]
            KS = _kernel_times(P, self.embedding_, self.kernel_, self._spectral_rows)
            deg = _kernel_times(P, self.embedding_, self.kernel_, None)
            far = deg <= 0.0
            deg[far] = 1.0
            u = (KS / np.sqrt(deg)[:, None] - self._nystrom_shift) @ self._nystrom_inverse
            d2 = (row_normalised(u)[:, None, :] - self._spectral_centers[None, :, :]) ** 2
            lab = np.argmin(d2.sum(axis=2), axis=1)
            if np.any(far):  # no training point within reach of the kernel: nearest one
                nearest = np.argmin(((P[far][:, None, :] - self.embedding_[None]) ** 2).sum(2), 1)
                lab[far] = self.labels_[nearest]
            labels[start:start + _PREDICT_CHUNK] = lab
        return labels
