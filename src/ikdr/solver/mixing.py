r"""Pulay mixing of the plain step: fewer passes where the fixed point converges slowly.

The plain step :math:`W \leftarrow V_{\max}(\Phi(W))` is a self-consistent
field iteration: near a maximum it converges linearly, at a rate set by how
strongly :math:`\Phi` turns with W. Where that rate is close to one (the
supervised 1,000 x 32 mixture of ``benchmarks/bench_ism_vs_numpy.py``, q = 20:
each step shrinks the error by about 0.68), the papers' stopping rule takes
fourteen Phi passes. Pulay's direct inversion in the iterative subspace (DIIS:
Pulay, Chem. Phys. Lett. 73, 1980; with the commutator residual of
J. Comput. Chem. 3, 1982, Eq. 4; the standard accelerator of self-consistent
field iterations) diagonalises instead the combination :math:`\bar\Phi = \sum_i c_i \Phi(W_i)`
of the last few Phi whose commutator residuals

.. math:: R_i = \Phi(W_i) P_i - P_i \Phi(W_i), \qquad P_i = W_i W_i^\top,

combine to the smallest norm, with :math:`\sum_i c_i = 1`. :math:`R_i = 0`
exactly at a fixed point of the plain step (:math:`\Phi W = W \Lambda`, the
first-order condition), so the combination extrapolates the iteration to it.
The same example then stops after nine Phi passes, closer to the maximum
(relative gradient 1.2e-7 against 1.0e-6; 1.7e-5 against 1.3e-4 from the
maximum in sine).

What this changes and what it does not:

- only W moves differently. The stopping rule still compares the top-q
  eigenvalues of :math:`\Phi(W)` at consecutive iterates (the papers' rule),
  and every candidate still has to raise the objective: a mixed step that
  would lower it is not taken; the driver retries the plain step from the same
  point (:meth:`PulayMixing.refused`) and after :data:`MAX_REFUSALS` mixes no
  more;
- mixing starts only once a step turned W by less than :data:`START_ANGLE`
  radians (the iterates are then near one maximum and the map is nearly
  linear) and forgets its history after any longer step, so it does not jump
  between basins that the plain iteration would not;
- it needs the dense Phi at every iterate, so it applies to the dense steps,
  the coarse ones included (a float64 problem's Phi made in float32 while W
  is far from the maximum: accurate to about 1e-7, far below the residuals
  it is combined at), not to the matrix-free eigensolver. Mixing early saves
  the most where the plain steps crawl: a 1,000 x 32 mixture whose plain steps
  shrink the gradient by 0.7 each, 28 passes to certify without mixing coarse
  steps, 22 with it. Under ``criterion="gradient"`` the driver stops mixing
  below a relative gradient of
  :data:`~ikdr.solver.driver.MIXING_MIN_GRADIENT`, where rounding dominates the
  combination.

The inner products :math:`\langle R_i, R_j\rangle_F` are formed from the thin
factors :math:`G_i = \Phi(W_i) W_i` (``R = G W^T - W G^T``), never d x d:
:math:`\langle R_i, R_j\rangle = 2\,[\,\mathrm{sum}((G_i^\top G_j)\circ(W_i^\top W_j))
- \mathrm{sum}((G_i^\top W_j)\circ(W_i^\top G_j))\,]`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ACCELERATIONS", "PulayMixing", "residual_inners"]

#: the values of ``acceleration`` (:func:`ikdr.ism`): Pulay mixing, or the papers' plain steps
ACCELERATIONS = ("pulay", None)
#: the Phi combined at most (older ones are dropped first)
DEPTH = 6
#: mixing starts after a step that turned W by less than this (radians)
START_ANGLE = 0.2
#: a combination with a coefficient larger than this in magnitude is an
#: extrapolation too far to trust: the oldest Phi is dropped and the rest combined
MAX_COEFFICIENT = 50.0
#: mixed steps refused (they would lower the objective) before the solve mixes no more
MAX_REFUSALS = 2


def residual_inners(stacked, q):
    """<R_i, R_k>_F of every iterate i of ``stacked`` = [G_1 W_1 G_2 W_2 ... G_k W_k]
    (d x 2kq, each factor d x q) with the last one, k: one product of the
    stacked factors with the last pair, then the four q x q blocks of each
    iterate summed at once."""
    stacked = np.asarray(stacked)
    if q < 1 or stacked.ndim != 2 or stacked.shape[1] == 0 or stacked.shape[1] % (2 * q):
        raise ValueError(f"stacked must hold whole pairs of d x {q} factors, got shape "
                         f"{stacked.shape}")
    k = stacked.shape[1] // (2 * q)
    blocks = (stacked.T @ stacked[:, -2 * q:]).reshape(k, 2, q, 2, q)
    # GG o WW - GW o WG: blocks[:, a, :, b, :] = (G or W)_i^T (G or W)_k
    products = blocks[:, 0, :, 0] * blocks[:, 1, :, 1] - blocks[:, 0, :, 1] * blocks[:, 1, :, 0]
    return 2.0 * products.reshape(k, -1).sum(axis=1)


class PulayMixing:
    """The Phi of the last iterates and their residuals, combined by DIIS.

    ``mix(W, phi, PW)`` adds an iterate (W, its dense Phi and Phi W) and returns
    the matrix whose top eigenvectors are the next W: the DIIS combination,
    or the iterate's own Phi while fewer than two are kept (and whenever the
    combination is refused). ``moved(angle)`` is told how far each accepted
    step turned W; ``refused()`` that a step was not taken.
    """

    def __init__(self, depth=DEPTH):
        self.depth = int(depth)
        self.phis = []
        self.factors = None              # [G_1 W_1 G_2 W_2 ...], G_i = Phi(W_i) W_i (d x 2kq)
        self.gram = np.zeros((0, 0))     # <R_i, R_j>, the kept iterates in order
        self.near = False                # the last step was short enough to mix
        self.refusals = 0
        self.last_mixed = 1              # Phi combined for the last candidate

    @property
    def active(self):
        return self.refusals < MAX_REFUSALS

    def reset(self):
        self.phis, self.factors = [], None
        self.gram = np.zeros((0, 0))

    def moved(self, angle):
        """The step about to be evaluated turns W by ``angle`` radians (0 for a
        warm start, or after a refused step): short enough, and the point it
        reaches is mixed with the ones before; longer, and they are forgotten."""
        self.near = bool(angle < START_ANGLE)
        if not self.near:
            self.reset()

    def refused(self):
        """The last candidate would have lowered the objective. True when it was
        mixed (the driver then retries the plain step from the same point, which
        :meth:`mix` gives next), False when it was plain."""
        mixed = self.last_mixed > 1
        self.reset()
        self.near = False
        if mixed:
            self.refusals += 1
        return mixed

    def mix(self, W, phi, PW):
        if not (self.active and self.near):
            self.reset()
            self.last_mixed = 1
            return phi
        self.phis.append(phi)
        pair = np.concatenate((PW, W), axis=1)
        self.factors = pair if self.factors is None else \
            np.concatenate((self.factors, pair), axis=1)
        new_row = residual_inners(self.factors, W.shape[1])
        k = len(self.phis)
        gram = np.zeros((k, k))
        gram[:k - 1, :k - 1] = self.gram
        gram[-1, :] = gram[:, -1] = new_row
        self.gram = gram
        if k > self.depth:
            self._drop_oldest()
        coefficients = self._coefficients()
        while coefficients is None and len(self.phis) > 2:
            self._drop_oldest()
            coefficients = self._coefficients()
        if coefficients is None:
            self.last_mixed = 1
            return phi
        self.last_mixed = len(coefficients)
        mixed = coefficients[-1] * phi
        for c, older in zip(coefficients[:-1], self.phis[:-1]):
            mixed += c * older
        return mixed

    def _drop_oldest(self):
        q2 = self.factors.shape[1] // len(self.phis)
        del self.phis[0]
        self.factors = self.factors[:, q2:]
        self.gram = self.gram[1:, 1:]

    def _coefficients(self):
        """argmin ||sum c_i R_i|| subject to sum c_i = 1, or None when fewer than
        two iterates are kept or the combination is not to be trusted.

        Solved in the residuals' own scales (c_i = a_i / ||R_i||: the Gram
        matrix of the unit residuals, unit diagonal), so the newest residuals,
        orders of magnitude below the oldest near convergence, are not lost
        to the rounding of the oldest's (unscaled, the combination stopped
        improving a wine fit at a relative gradient of 1.6e-9 that the plain
        steps went below)."""
        k = len(self.phis)
        if k < 2:
            return None
        norms = np.sqrt(np.maximum(self.gram.diagonal(), 0.0))
        if not np.all((norms > 0) & (norms < np.inf)):
            return None
        system = np.zeros((k + 1, k + 1))
        system[:k, :k] = self.gram / np.outer(norms, norms)
        weights = norms.min() / norms          # the constraint sum a_i / ||R_i|| = 1, scaled
        system[k, :k] = system[:k, k] = weights
        rhs = np.zeros(k + 1)
        rhs[k] = 1.0
        try:
            solution = np.linalg.solve(system, rhs)
        except np.linalg.LinAlgError:       # parallel residuals: the least-norm combination
            solution, *_ = np.linalg.lstsq(system, rhs, rcond=1e-14)
        coefficients = solution[:k] * weights
        if not np.abs(coefficients).max() <= MAX_COEFFICIENT:     # NaN fails it too
            return None
        return coefficients
