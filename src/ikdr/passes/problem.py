r"""The problem interface of the ISM driver (:func:`ikdr.solver.driver.solve`).

The driver, the trust-region phase and the certificate see the problem
:math:`\max_W f(W) = \mathrm{Tr}(\Gamma K_{XW})`, :math:`W^TW = I`, only
through the methods of :class:`KernelProblem`. The counted calls below and
the Hessian products are built on one uncounted pass, ``product(W, V)``; an
approximate problem (the landmarks of :class:`ikdr.passes.landmarks.LandmarkProblem`)
subclasses :class:`KernelProblem` and replaces ``product``, ``objective`` and
``phi0`` only:

========================================  ===================================================
``d``, ``native_dtype``, ``depends_on_w``  dimension, precision of the plain steps' passes,
                                           whether :math:`\Phi` depends on W
``phi0()``                                 :math:`\Phi_0` (d x d), no n^2 pass when Gamma is factored
``phi(W, native)``                         (dense :math:`\Phi(W)`, f(W)): one pass, d columns
``coarse_phi(W)``                          the same in float32 for a float64 problem
                                           (``supports_coarse``; plain steps far from
                                           the maximum), ``release_coarse()``
``phi_product(W, V, native)``              (:math:`\Phi(W)V`, f(W)): one thin pass, k columns
``objective(W, native)``                   f(W), one pass without right-hand side
``hessian_product(W, Z, PW, phi)``         Riemannian Hessian at W along the tangent Z:
                                           one thin pass (q columns with the dense phi,
                                           2q without)
``n_phi``, ``n_objective``, ``n_hessian``  passes made by each kind of call
``n_dense_phi``, ``n_coarse_phi``          those of ``n_phi`` that formed the dense Phi,
                                           and those of them made by ``coarse_phi``
========================================  ===================================================

``native=True`` computes in the problem's own dtype (float32 or float64, the
plain steps); ``native=False`` in float64 (the trust region and the
certificate, where a relative gradient of 1e-6 and finite differences need
double precision). ``coarse_phi`` makes a float64 problem's dense pass in
float32 (half the time: the pass is a GEMM with the d columns of X); the
driver uses it only for plain steps far from the maximum, whose
eigenvectors need not be exact to the last digit (:mod:`ikdr.solver.driver`).
Every returned array is float64.
"""
from __future__ import annotations

import warnings

import numpy as np

from .._config import get_num_threads

#: relative finite-difference step of the Hessian-vector products (forward differences)
FD_STEP = 1e-7
#: the relative error of a float32 pass's objective the estimators document for
#: ``dtype=np.float32``; a float32 problem whose passes cannot meet it warns
FLOAT32_OBJECTIVE_TOLERANCE = 1e-4
#: rows of X (evenly spaced) that :func:`float32_objective_error` reads
_PRECISION_SAMPLE = 512


def float32_objective_error(X, W, sigma):
    r"""Estimated relative error of :math:`\mathrm{Tr}(\Gamma K_{XW})` from float32
    passes with a Gaussian kernel of bandwidth ``sigma`` (None: no estimate, 0).

    A float32 kernel value is rounded to :math:`\epsilon = 2^{-24}`, while the
    objective of a centred Gamma is a difference of kernel values of relative
    size :math:`\min(1, d^2/2\sigma^2)` (d: the points' typical distance): a
    bandwidth far above the distances loses :math:`2\sigma^2/d^2` of the
    precision. Points far from the origin lose more: their squared distances
    :math:`|a|^2 + |b|^2 - 2a^Tb` are differences of norms :math:`|z|^2` far
    above them. Measured on Gaussian mixtures (docs/guide/performance.md), the
    error is at most about :math:`3\epsilon\max(1, 2\sigma^2/d^2)(1 + |z|^2/30\sigma^2)`:
    this estimate was 2 to 50 times the measured error where one cause
    dominates (1e-4 at sigma 16 times the median distance, or at points about
    300 of their standard deviations from the origin), up to 500 times where
    both are moderate; it warns early rather than late. Computed on at most
    512 evenly spaced rows of Z = XW:
    :math:`|z|^2` their mean squared norm, :math:`d^2` the median squared
    distance between their two halves.
    """
    if sigma is None or not np.isfinite(sigma) or sigma <= 0:
        return 0.0
    step = max(1, X.shape[0] // _PRECISION_SAMPLE)
    Z = np.asarray(X[::step][:_PRECISION_SAMPLE], dtype=np.float64) @ np.asarray(W, np.float64)
    half = Z.shape[0] // 2
    if half == 0:
        return 0.0
    d2 = float(np.median(np.sum((Z[:half] - Z[half:2 * half]) ** 2, axis=1)))
    if d2 <= 0:
        return 0.0
    z2 = float(np.mean(np.sum(Z * Z, axis=1)))
    s2 = float(sigma) ** 2
    return 3.0 * 2.0 ** -24 * max(1.0, 2.0 * s2 / d2) * (1.0 + z2 / (30.0 * s2))


def riemannian_gradient(PW, W):
    r""":math:`2(I - WW^T)\Phi(W)W` from :math:`\Phi(W)W` (the only copy of the formula)."""
    return 2.0 * (PW - W @ (W.T @ PW))


def project_hessian(W, dgrad, Z, WtPW):
    r"""Riemannian Hessian from the Euclidean one: :math:`P\,D\nabla f[Z] - Z\,W^T\nabla f`."""
    return dgrad - W @ (W.T @ dgrad) - 2.0 * Z @ WtPW


class KernelProblem:
    """f(W) = Tr(Gamma K_XW) for one (X, Gamma, kernel), by the public kernel layer.

    Parameters
    ----------
    X : ndarray (n, d), float64 or float32
    gamma : Gamma
    kernel : Kernel, fitted
    n_threads : int or None
        Threads of every pass; None: :func:`ikdr.get_num_threads` when the
        problem is made (read once: all the passes of a fit use one count).
    """

    #: whether :meth:`coarse_phi` exists (a problem whose passes are not the
    #: kernel layer's, landmarks or a cluster, sets this to False)
    supports_coarse = True
    #: relative objective gain below which a trust-region step ends the fit
    #: ("objective"): 0 for exact passes; an approximate problem sets its own
    #: floor, where its approximation error dominates any further gain
    objective_floor = 0.0

    def __init__(self, X, gamma, kernel, n_threads=None):
        self.X = X
        self._X64 = X if X.dtype == np.float64 else None
        self._X32 = None
        self.gamma, self.kernel = gamma, kernel
        self.n_threads = get_num_threads() if n_threads is None else int(n_threads)
        self.n, self.d = X.shape
        self.native_dtype = X.dtype
        self.depends_on_w = bool(kernel.depends_on_w)
        self.n_phi = self.n_dense_phi = self.n_coarse_phi = self.n_objective = self.n_hessian = 0
        # float32 passes: their accuracy is checked at the first W (check_native_precision)
        self._precision_checked = self.native_dtype != np.float32

    @property
    def X64(self):
        if self._X64 is None:
            self._X64 = self.X.astype(np.float64)
        return self._X64

    def _data(self, native):
        return self.X if native else self.X64

    def check_native_precision(self, W):
        """Once, at the first float32 pass: warn (RuntimeWarning) when float32
        passes cannot give the objective to the documented
        :data:`FLOAT32_OBJECTIVE_TOLERANCE` at these points and this bandwidth
        (:func:`float32_objective_error`)."""
        if self._precision_checked:
            return
        self._precision_checked = True
        error = float32_objective_error(self.X, W, self.kernel.gaussian_sigma)
        if error > FLOAT32_OBJECTIVE_TOLERANCE:
            warnings.warn(f"dtype=float32: the float32 passes give the objective to about "
                          f"{error:.1e} (relative) here, not {FLOAT32_OBJECTIVE_TOLERANCE:.0e}: the "
                          "bandwidth is far above the projected points' distances, or the points "
                          "lie far from the origin against their spread; center the data, use a "
                          "smaller sigma, or float64", RuntimeWarning, stacklevel=4)

    def phi0(self):
        r""":math:`\Phi_0`, the W-free start (O(n d r) for a rank-r factored Gamma)."""
        return self.kernel.phi0(self.X64, self.gamma)

    def product(self, W, V=None, native=False):
        """(Phi(W) V, f(W)), or (dense Phi(W), f(W)) when V is None: one pass, not
        counted (the counted calls below and :meth:`hessian_product` use it).
        A problem with other passes (landmarks, a cluster) overrides this,
        :meth:`objective` and :meth:`phi0`; the driver needs nothing else."""
        if native:
            self.check_native_precision(W)
        return self.kernel.phi_product(self._data(native), W, self.gamma, V,
                                       n_threads=self.n_threads)

    def step_costs(self, q, k):
        """(flops of a dense Phi pass, flops of a pass with k columns) when the
        problem's passes have their own cost model, else None: the solver then
        weighs the exact passes' n x n panel (:mod:`ikdr.solver.steps`)."""
        return None

    def phi(self, W, native=False):
        """(dense Phi(W), f(W)): one pass with the d columns of X."""
        self.n_phi += 1
        self.n_dense_phi += 1
        return self.product(W, None, native)

    @property
    def has_coarse(self):
        """A float32 dense pass exists and is cheaper than the problem's own."""
        return self.supports_coarse and self.native_dtype == np.float64

    def coarse_phi(self, W):
        """(dense Phi(W), f(W)) from a float32 copy of X: one pass at about half
        the cost, relative error near 1e-7 (the passes sum in float64). Counted
        as a dense Phi pass."""
        self.n_phi += 1
        self.n_dense_phi += 1
        self.n_coarse_phi += 1
        if self._X32 is None:
            self._X32 = self.X.astype(np.float32)
        return self.kernel.phi_product(self._X32, W, self.gamma, None, n_threads=self.n_threads)

    def release_coarse(self):
        """Drop the float32 copy of X (the driver's coarse steps are over)."""
        self._X32 = None

    def phi_product(self, W, V, native=False):
        """(Phi(W) V, f(W)): one pass with the k columns of XV."""
        self.n_phi += 1
        return self.product(W, V, native)

    def objective(self, W, native=False):
        self.n_objective += 1
        if native:
            self.check_native_precision(W)
        return self.kernel.objective(self._data(native), W, self.gamma, n_threads=self.n_threads)

    def hessian_product(self, W, Z, PW, phi=None):
        r"""Riemannian Hessian of f at W along the tangent vector Z (float64).

        :math:`P(2\Phi Z + 2 D\Phi[Z]W) - 2ZW^T\Phi W` (module docstring of
        :mod:`ikdr.solver.driver`). The kernel-curvature term :math:`D\Phi[Z]W` is the
        forward difference :math:`(\Phi(W + tZ)W - \Phi(W)W)/t`: one pass with
        the q columns of XW when the dense ``phi`` is known, else one pass with
        the 2q columns of X[W, Z] whose second half gives :math:`\Phi Z` (to
        first order in t).
        """
        self.n_hessian += 1
        norm = np.linalg.norm(Z)
        if norm == 0 or not self.depends_on_w:
            phiZ = phi @ Z if phi is not None else self.product(W, Z)[0]
            return project_hessian(W, 2.0 * phiZ, Z, W.T @ PW)
        t = FD_STEP / norm
        Wt = W + t * Z
        if phi is not None:
            moved, _ = self.product(Wt, W)
            phiZ = phi @ Z
        else:
            both, _ = self.product(Wt, np.hstack([W, Z]))
            q = W.shape[1]
            moved, phiZ = both[:, :q], both[:, q:]
        dgrad = 2.0 * (phiZ + (moved - PW) / t)
        return project_hessian(W, dgrad, Z, W.T @ PW)
