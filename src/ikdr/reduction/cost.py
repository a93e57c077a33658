r"""What a fit costs: exact passes against landmark passes, for ``n_landmarks="auto"``.

A Nystrom fit pays only where its passes are cheaper than the exact ones
*and* the "auto" rule's doublings (each a fit of its own) do not add up to
more than one exact fit. :class:`LandmarkBudget` decides both from flop
counts of one pass and the expected number of passes of a fit:

* **exact**, one plain step (:func:`ikdr.solver.steps.plain_step_flops`):
  :math:`n^2` kernel-panel entries times about :math:`60 + 2d` flops (dense
  Phi), or the block eigensolver's cheaper iterations at large d;
* **landmarks**, one step of the same kind
  (:func:`ikdr.passes.landmarks.landmark_step_costs`, the flops of the core's
  sweeps) with m landmarks and Gamma's terms (classes, or the columns of its
  factor).

Before the first fit the exact fit (``COLD_PASSES`` passes) is compared with
the cheapest "auto" sequence there is: a cold fit at the first m and a
warm-started fit at 2m (``WARM_PASSES`` passes; the rule needs two fits to
measure a change). Before every later doubling the next warm landmark fit is
compared with a warm-started exact fit from the current W; where exact is
cheaper the rule stops growing and the exact passes finish the fit. The
passes the last landmark fit actually made replace the prior counts.

Landmark flops are weighted by ``LANDMARK_RATE`` (their passes run at that
fraction of the exact fused passes' rate per flop) and every landmark pass
pays ``LANDMARK_PASS_OVERHEAD`` (its fixed costs: the block loop, the
landmark factor and its m x m eigendecomposition call, in flops at the exact
passes' rate). Landmarks are chosen at the start only when they promise to be
``START_MARGIN`` times cheaper: the pass counts are guesses until a fit has run,
and a landmark fit whose plain steps fail runs its trust region for several
times the exact fit's passes (measured: 107 against 61 on 2,000 x 9, m = 64).
Constants measured with ``benchmarks/bench_nystrom_ism.py --sections crossover``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..passes import landmark_step_costs
from ..solver.steps import block_columns, plain_step_flops

__all__ = ["LandmarkBudget", "COLD_PASSES", "WARM_PASSES", "LANDMARK_RATE",
           "LANDMARK_PASS_OVERHEAD", "START_MARGIN"]

#: passes of a fit from the start (Phi_0's eigenvectors) and from a warm start
COLD_PASSES = 12
WARM_PASSES = 6
#: a landmark pass's rate per flop, as a fraction of an exact fused pass's
LANDMARK_RATE = 0.7
#: fixed cost of a landmark pass (its Python and thread set-up), in flops at the exact
#: passes' rate, fitted with ``benchmarks/bench_nystrom_ism.py --sections crossover``
LANDMARK_PASS_OVERHEAD = 5e7
#: landmarks from the start only if the model finds them this many times cheaper
START_MARGIN = 2.0


@dataclass
class LandmarkBudget:
    """The "auto" rule's choice between m landmarks and the exact passes.

    Parameters
    ----------
    n, d, q : problem size
    groups : int
        Gamma's terms (the classes of a supervised Gamma, else its factor's columns).
    classes : bool
        Gamma is the supervised class form (its passes need one n d m product).
    """

    n: int
    d: int
    q: int
    groups: int
    classes: bool = True

    def exact_fit(self, passes):
        """Flops of an exact fit of ``passes`` plain steps (the n x n panel)."""
        return passes * plain_step_flops(self.n, self.d, self.q)

    def landmark_fit(self, m, passes):
        """Flops of a landmark fit with m landmarks (at the exact passes' rate):
        its steps as its solver would make them, dense or matrix-free
        (:func:`ikdr.passes.landmarks.landmark_step_costs`)."""
        costs = landmark_step_costs(self.n, self.d, self.q, m, block_columns(self.d, self.q),
                                    groups=self.groups, classes=self.classes)
        step = plain_step_flops(self.n, self.d, self.q, costs)
        return passes * (step / LANDMARK_RATE + LANDMARK_PASS_OVERHEAD)

    def start(self, m):
        """(use landmarks?, reason) before any fit, the first at m landmarks."""
        exact = self.exact_fit(COLD_PASSES)
        landmarks = self.landmark_fit(m, COLD_PASSES)
        if 2 * m < self.n:
            landmarks += self.landmark_fit(2 * m, WARM_PASSES)
        if exact <= START_MARGIN * landmarks:
            return False, (f"exact passes: an exact fit (about {exact:.2g} flops) costs less "
                           f"than {START_MARGIN:g} x the shortest landmark sequence ({m} then "
                           f"{2 * m} landmarks, about {landmarks:.2g} flops)")
        return True, (f"landmarks: a fit at {m} landmarks and one at {2 * m} (about "
                      f"{landmarks:.2g} flops) cost under 1/{START_MARGIN:g} of an exact fit "
                      f"(about {exact:.2g})")

    def grow(self, m_next, last_passes):
        """(grow to m_next?, reason): the next warm landmark fit against a warm exact
        fit from the current W, both at the passes the last fit made."""
        passes = max(int(last_passes), 1)
        landmarks = self.landmark_fit(m_next, passes)
        exact = self.exact_fit(passes)
        if landmarks < exact:
            return True, ""
        return False, (f"exact passes from the {m_next // 2}-landmark fit: a fit at {m_next} "
                       f"landmarks (about {landmarks:.2g} flops) would cost more than the exact "
                       f"fit (about {exact:.2g})")
