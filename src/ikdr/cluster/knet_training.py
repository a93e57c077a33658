r"""KNet's training: the objective, its gradients and the rounds of Algorithm 3.

:func:`train_knet` trains the encoder (and decoder) of
:class:`ikdr.KNetClustering` (dissertation chapter 4, Algorithm 3): each round
is one epoch of Adam on the HSIC objective of the embedding psi(X) against the
spectral embedding U, with U updated by an eigendecomposition, by Cayley steps
(SMA), or held fixed. A round that lowers the objective is undone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from .._utils.mlp import Adam
from .._utils.validation import largest_magnitude, within_scale
from ..gamma import Gamma, centered, clustering_gamma
from ..kernels import Kernel
from ..spectral import START_TOL, kernel_degrees, spectral_embedding

__all__ = ["KNetOptions", "KNetTraining", "cayley_step", "knet_objective_and_gradient", "train_knet",
           "PREDICT_CHUNK", "kernel_times", "spread", "u_gradient"]


def knet_objective_and_gradient(Psi: np.ndarray, gamma: Gamma, kernel: Kernel, *,
                                with_value: bool = True,
                                n_threads: int | None = None) -> tuple[float, np.ndarray]:
    r"""Value and row gradient of :math:`J(\Psi) = \sum_{ij}\Gamma_{ij}
    \exp(-\|\psi_i - \psi_j\|^2 / 2\sigma^2)` (dissertation Eq. 4.11).

    :math:`\nabla_\Psi J = -(2/\sigma^2) L(\Gamma \circ K) \Psi`, a Laplacian
    product the fused C++ core forms tile by tile: its
    gradient mode returns :math:`2 L(\Gamma \circ f') R` with
    :math:`f' = -K/2\sigma^2`, i.e. :math:`-(1/\sigma^2) L(\Gamma\circ K)\Psi`,
    which is half the gradient (J counts every pair twice).
    """
    Psi = np.ascontiguousarray(Psi, dtype=np.float64)
    Y, value = kernel.gradient_product(Psi, Psi, gamma, n_threads=n_threads)
    return (value if with_value else np.nan), 2.0 * Y


def u_gradient(Psi, kernel, U, degrees):
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
    the sign fixed so that A is skew and the step ascends).
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
PREDICT_CHUNK = 2048
#: no round runs when the points' similarity to themselves is more than this
#: share of the start's Tr(Gamma K) (measured: clean data sets 8-13 %,
#: anisotropic-1 38 %, fragmented ones 55-100 %; docs/clustering_defaults.md)
_FRAGMENTED_SELF_SHARE = 0.5


def kernel_times(A, B, kernel, R):
    """``K(A, B) R`` (or the row sums ``K(A, B) 1`` when R is None), in row blocks."""
    out = []
    for start in range(0, A.shape[0], PREDICT_CHUNK):
        K = kernel.matrix(A[start:start + PREDICT_CHUNK], B)
        out.append(K.sum(axis=1) if R is None else K @ R)
    return np.concatenate(out, axis=0)


def _self_similarity(U, degrees):
    r"""The diagonal part of :math:`\mathrm{Tr}(\Gamma K)`, :math:`\sum_i \Gamma_{ii}
    k(\psi_i, \psi_i) = \sum_i \|(HU)_i\|^2 / d_i` (a Gaussian's k(x, x) = 1)."""
    return float(np.sum(centered(U) ** 2 / np.asarray(degrees)[:, None]))


def spread(Psi):
    """Root-mean-square distance of the rows to their mean (the embedding's scale)."""
    return _centered_spread(Psi)[1]


def _centered_spread(Psi):
    """The rows less their mean, and :func:`spread`."""
    C = centered(Psi)
    return C, float(np.sqrt(np.mean(np.einsum("ij,ij->i", C, C)))) or 1.0


@dataclass(frozen=True)
class KNetOptions:
    """The settings of KNet's rounds (:func:`train_knet`), as in
    :class:`ikdr.KNetClustering`.

    Attributes
    ----------
    embedding_kernel : Gaussian, callable or None
        Fitted kernel the network ascends with ``update="fixed"`` (required there),
        or a function that makes it when the rounds start (a fragmented start runs
        none, and its median bandwidth is a pass over the rows that it then spares).
    lam, learning_rate, batch_size, max_iter, epochs_per_iter, tol, update
        As in :class:`ikdr.KNetClustering`.
    """

    embedding_kernel: object = None
    lam: float = 0.0
    learning_rate: float = 1e-2
    batch_size: int = 200
    max_iter: int = 100
    epochs_per_iter: int = 1
    tol: float = 1e-3
    update: str = "fixed"


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
    embedding_kernel : Gaussian or None
        The kernel the rounds ascended (``update="fixed"``; None when no round ran).
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
    embedding_kernel: Kernel | None = None

    @property
    def n_accepted(self):
        """Rounds kept."""
        return self.n_iter - self.n_rejected


def _embed(encoder, X, spread0):
    """psi(X): the network output rescaled to the spread of the training data."""
    out = encoder.forward(X)
    return out * (spread0 / spread(out))


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
    out_centered, s = _centered_spread(out)
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
    # chain rule through Psi = c out / s(out) (H Psi = (c / s) H out)
    m = Psi.shape[0]
    radial = np.vdot(grad_z, Psi) / (m * spread0 ** 2) * (spread0 / s)
    grad_out = (spread0 / s) * (grad_z - radial * out_centered)
    enc_grads = encoder.backward(grad_out)[0]
    return value, enc_grads + dec_grads


def _sma_step(Psi, kernel, U, degrees, tau):
    """One Cayley step with backtracking (Armijo) on Tr(U^T M U); returns (U, next tau)."""
    G, value = u_gradient(Psi, kernel, U, degrees)
    # Riemannian gradient norm^2 = 1/2 ||A||_F^2 for the canonical metric
    slope = float(np.sum(G * G) - np.sum((U.T @ G) ** 2))
    if slope <= 1e-300:
        return U, tau
    for _ in range(30):
        U_new = cayley_step(U, G, tau)
        _, new_value = u_gradient(Psi, kernel, U_new, degrees)
        if new_value >= value + 1e-4 * tau * slope:
            return U_new, 2.0 * tau
        tau *= 0.5
    return U, tau


class _Rounds:
    """The state of KNet's rounds: the networks and their optimiser, U, D, Gamma, the
    ascended kernel and the counters. :func:`train_knet` runs them; each method is
    one part of a round."""

    def __init__(self, X, kernel, n_clusters, encoder, decoder, options, rng):
        self.X, self.kernel, self.k = X, kernel, int(n_clusters)
        self.encoder, self.decoder = encoder, decoder
        self.o = options
        self.params = encoder.params + (decoder.params if decoder is not None else [])
        self.optimizer = Adam(self.params, options.learning_rate)
        self.rng = rng
        self.shuffle = np.random.default_rng(rng.randint(2**31 - 1))
        self.spread0 = spread(X)
        self.n_rejected = self.halvings = 0
        self.tau = 1.0

    def start(self):
        r"""U, D and Gamma of the start (spectral clustering of psi(X) = X); returns
        (Tr(Gamma K) of the start, whether it is fragmented)."""
        self.Psi = _embed(self.encoder, self.X, self.spread0)
        # Lanczos where the affinity is dense (wide data: a few eigenpairs of a full
        # matrix), the shifted inverse where it is a sparse graph of low dimension
        # (ikdr.spectral.affinity_embedding; benchmarks/bench_clustering_quality.py
        # times both)
        self.U, _, self.degrees = spectral_embedding(self.Psi, self.kernel, self.k,
                                                     random_state=self.rng.randint(2**31 - 1),
                                                     dense_solver="auto", tol=START_TOL)
        self.gamma = clustering_gamma(self.U, self.degrees)
        value = self.kernel.objective(self.Psi, None, self.gamma)
        # More of Tr(Gamma K) from the points' similarity to themselves than from pairs:
        # the kernel isolates points of X and U holds indicators of them, not clusters
        # (digits at the 7-NN median sigma: 97 %, its NJW partition 9 clusters of 1-7
        # points; the clean data sets 8-13 %). Epochs on that Gamma only push the
        # isolated points further out (digits: NMI of k-means on psi 0.63 -> 0.19).
        return value, _self_similarity(self.U, self.degrees) > _FRAGMENTED_SELF_SHARE * value

    def fix_target(self):
        """``update="fixed"``: the plain HSIC of the wide embedding kernel against the
        start's U (D = I); returns its value at the start."""
        # The normalised objective of the narrow affinity is already near its maximum k
        # on the moons (1.998 of 2) and only its degrees move (every round undone); the
        # wide kernel sees whole clusters, so ascending it gathers each cluster into a
        # compact group. Its U-step would follow that wide kernel to a convex split
        # (moons NMI 0.49-0.57, circles 0.00), so U stays the affinity's.
        made = self.o.embedding_kernel
        self.ascended = made() if callable(made) else made
        self.gamma = clustering_gamma(self.U, np.ones(self.X.shape[0]))
        return self.fixed_value(self.Psi)

    def fixed_value(self, Psi):
        r"""``update="fixed"``: :math:`\mathrm{Tr}(\Gamma K_\psi)` of the ascended kernel,
        by float32 products summed in float64 (relative error about 1e-8, far below
        the ``tol`` on a round's gain, and faster: benchmarks/bench_clustering_quality.py),
        or float64 ones where float32 cannot hold Psi's squares (X at 1e80)."""
        if within_scale(largest_magnitude(Psi), np.float32):
            Psi = Psi.astype(np.float32)
        return self.ascended.objective(Psi, None, self.gamma)

    def epochs(self):
        """``epochs_per_iter`` epochs of Adam ascent on mini-batches (the batch's rows of
        Gamma's factor); returns the saved parameters and optimiser state."""
        saved = ([p.copy() for p in self.params], self.optimizer.state())
        factor, scale = self.gamma.factor, self.gamma.scale
        n, batch = self.X.shape[0], self.o.batch_size
        for _ in range(int(self.o.epochs_per_iter)):
            order = self.shuffle.permutation(n)
            for first in range(0, n, batch):
                idx = order[first:first + batch]
                if idx.shape[0] <= self.k and first > 0:  # fold a tiny tail into the last batch
                    continue
                _, grads = _batch_objective(self.X[idx], Gamma(factor[idx], scale),
                                            self.ascended, self.encoder, self.decoder,
                                            self.o.lam, self.spread0, keep=True,
                                            with_value=False)
                self.optimizer.step([-g for g in grads])
        return saved

    def judge(self, Psi_new, value_before):
        """(value after the epochs, whether they lowered the objective, new degrees)."""
        if self.o.update == "fixed":
            # Gamma does not depend on psi, so the points' similarity to themselves,
            # sum_i ||(HU)_i||^2, is constant: a rise is a rise over pairs.
            value = self.fixed_value(Psi_new)
            return value, value < value_before, self.degrees
        # Eq. 4.8a judged at the old U with D recomputed. (Judging after the U-step
        # instead kept most rounds on the moons and raised the objective, but tore a
        # moon apart: NMI 1.0 -> 0.60 at n = 600.)
        degrees = kernel_degrees(Psi_new, self.kernel)
        value = u_gradient(Psi_new, self.kernel, self.U, degrees)[1]
        # The same objective without each point's similarity to itself, k(psi_i, psi_i)
        # = 1: that part, sum_i ||(HU)_i||^2 / d_i, rises only as degrees fall towards
        # 1, i.e. by isolating points, never by gathering a cluster (digits: every kept
        # round raised (4.8a) 9.885 -> 9.958 through it while the rest fell 0.33 -> 0.04).
        pairs_before = value_before - _self_similarity(self.U, self.degrees)
        pairs_after = value - _self_similarity(self.U, degrees)
        return value, value < value_before or pairs_after < pairs_before, degrees

    def undo(self, saved):
        """Restore the parameters and halve the step (see :class:`KNetClustering`);
        returns whether the step size is exhausted."""
        for p, old in zip(self.params, saved[0]):
            p[...] = old
        self.optimizer.restore(saved[1])
        self.optimizer.lr *= 0.5
        self.n_rejected += 1
        self.halvings += 1
        return self.halvings >= _MAX_HALVINGS

    def update_u(self, degrees, value):
        """The U-step of the update rule after a kept round; returns (change of UU^T,
        the objective after it)."""
        update = self.o.update
        if update == "fixed":
            return 0.0, value
        if update == "eig":
            # dense up to DENSE_MAX_N; above, LOBPCG warm-started from the previous U.
            U_new, vals, self.degrees = spectral_embedding(
                self.Psi, self.kernel, self.k, random_state=self.rng.randint(2**31 - 1),
                U0=self.U)
            value = float(np.sum(vals))  # Tr(U^T H D^-1/2 K D^-1/2 H U)
        else:
            self.degrees = degrees
            U_new, self.tau = _sma_step(self.Psi, self.kernel, self.U, self.degrees, self.tau)
            value = None
        change = np.sqrt(max(2.0 * (self.k - np.sum((self.U.T @ U_new) ** 2)), 0.0) / self.k)
        self.U = U_new
        self.gamma = clustering_gamma(self.U, self.degrees)
        if value is None:
            value = self.kernel.objective(self.Psi, None, self.gamma)
        return change, value

    def result(self, history, n_iter, converged, stop_reason):
        ascended = self.ascended if self.o.update == "fixed" and n_iter > 0 else None
        return KNetTraining(embedding=self.Psi, U=self.U, degrees=self.degrees, history=history,
                            n_iter=n_iter, n_rejected=self.n_rejected, converged=converged,
                            stop_reason=stop_reason, spread=self.spread0,
                            embedding_kernel=ascended)


def train_knet(X, kernel, n_clusters, encoder, decoder=None, *,
               options: KNetOptions = KNetOptions(), rng=None, report=None):
    r"""KNet's rounds (dissertation Algorithm 3, and the fixed-target variant).

    The start: U is the spectral embedding of ``kernel`` (the affinity) on
    :math:`\psi(X) = X`, i.e. spectral clustering of X. Each round then runs
    ``options.epochs_per_iter`` epochs of Adam ascent on
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
    encoder, decoder : ikdr._utils.mlp.MLP
        Networks (the encoder starting at the identity); decoder None when lam = 0.
    options : KNetOptions
        The rounds' settings (``embedding_kernel``, ``lam``, ``learning_rate``,
        ``batch_size``, ``max_iter``, ``epochs_per_iter``, ``tol``, ``update``).
    rng : RandomState
    report : IterationReport, optional

    Returns
    -------
    KNetTraining
    """
    if options.update == "fixed" and options.embedding_kernel is None:
        raise ValueError('update="fixed" needs the embedding_kernel the network ascends')
    rounds = _Rounds(X, kernel, n_clusters, encoder, decoder, options, check_random_state(rng))
    value, fragmented = rounds.start()
    if fragmented:
        return rounds.result([value], 0, False, "fragmented start")
    rounds.ascended = kernel
    history = [rounds.fix_target() if options.update == "fixed" else value]
    n_iter, converged, stop_reason = 0, False, "max_iter"
    for n_iter in range(1, int(options.max_iter) + 1):
        saved = rounds.epochs()
        Psi_new = _embed(encoder, X, rounds.spread0)
        value_after, lowered, degrees = rounds.judge(Psi_new, history[-1])
        if lowered:
            # The epoch holds D fixed (a surrogate of Eq. 4.8a) or runs on mini-batches;
            # when it lowers the objective, or (eig, sma) raises it only by fragmenting
            # the data, undo it and halve the step, so the rounds ascend monotonically
            # and cannot wander away from the spectral-clustering start.
            exhausted = rounds.undo(saved)
            history.append(history[-1])
            if report is not None:  # one line per round, kept or undone
                report(n_iter, history[-1], 0.0, round="undone")
            if exhausted:
                stop_reason = "step size exhausted"
                break
            continue
        rounds.Psi = Psi_new
        change, value = rounds.update_u(degrees, value_after)
        gain = (value - history[-1]) / max(abs(value), np.finfo(float).tiny)
        history.append(value)
        if report is not None:
            report(n_iter, history[-1], change)
        if change < options.tol and gain < options.tol:
            converged, stop_reason = True, "converged"
            break
    return rounds.result(history, n_iter, converged, stop_reason)
