"""A small numpy multilayer perceptron with its own backward pass and Adam.

Used by :class:`ikdr.KNetClustering` as the encoder psi_theta (and decoder);
no deep-learning framework is needed for networks of this size.

Identity construction (dissertation Eq. 4.12). KNet starts from psi = identity
so that its first iterate is plain spectral clustering. With ReLU units this
holds *exactly* when every hidden layer has at least 2 d units: the first
layer emits ``(relu(x), relu(-x))``, each further hidden layer maps that pair
to itself through ``[[I, -I], [-I, I]]`` and the output layer returns
``relu(x) - relu(-x) = x``. Extra hidden units get random incoming weights and
zero outgoing weights, so they do not change the output but do receive
gradient and learn. Narrower networks are pre-trained to the identity by Adam
on ``||X - psi(X)||^2`` instead (the paper's Eq. 4.12).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MLP", "Adam"]


class MLP:
    """Fully connected ReLU network ``sizes[0] -> ... -> sizes[-1]`` with a linear output.

    Parameters
    ----------
    sizes : sequence of int
        Input width, hidden widths, output width.
    rng : numpy Generator
    """

    def __init__(self, sizes, rng):
        self.sizes = [int(s) for s in sizes]
        self.weights = []
        self.biases = []
        for fan_in, fan_out in zip(self.sizes[:-1], self.sizes[1:]):
            # He initialisation for ReLU layers
            self.weights.append(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)))
            self.biases.append(np.zeros(fan_out))
        self._cache = None

    @property
    def params(self):
        return self.weights + self.biases

    def can_be_identity(self):
        d = self.sizes[0]
        return self.sizes[-1] == d and all(h >= 2 * d for h in self.sizes[1:-1])

    def set_identity(self, rng):
        """Make the network the exact identity map (needs hidden widths >= 2 d)."""
        if not self.can_be_identity():
            raise ValueError("the exact identity needs hidden widths >= 2 * input width")
        d = self.sizes[0]
        eye = np.eye(d)
        n_layers = len(self.weights)
        if n_layers == 1:
            self.weights[0] = eye.copy()
            self.biases[0] = np.zeros(d)
            return
        for i, W in enumerate(self.weights):
            fan_in, fan_out = W.shape
            b = np.zeros(fan_out)
            if i == 0:
                W = rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out))
                W[:, :d], W[:, d:2 * d] = eye, -eye
            elif i < n_layers - 1:
                W = rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out))
                W[:, :2 * d] = 0.0            # identity units ignore the extra units
                W[:d, :d], W[:d, d:2 * d] = eye, -eye
                W[d:2 * d, :d], W[d:2 * d, d:2 * d] = -eye, eye
            else:
                W = np.zeros((fan_in, fan_out))  # extra units start silent
                W[:d], W[d:2 * d] = eye, -eye
            self.weights[i], self.biases[i] = W, b

    def forward(self, X, *, keep=False):
        """Output for rows X; ``keep=True`` stores the activations for :meth:`backward`."""
        acts = [X]
        A = X
        last = len(self.weights) - 1
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            A = A @ W + b
            if i < last:
                A = np.maximum(A, 0.0)
            acts.append(A)
        if keep:
            self._cache = acts
        return A

    def backward(self, grad_out):
        """Gradients of a loss w.r.t. (weights..., biases...) and the input, given
        ``grad_out`` = dloss/doutput of the last :meth:`forward` with ``keep=True``."""
        acts = self._cache
        if acts is None:
            raise RuntimeError("call forward(..., keep=True) before backward")
        gW = [None] * len(self.weights)
        gb = [None] * len(self.weights)
        G = grad_out
        for i in range(len(self.weights) - 1, -1, -1):
            if i < len(self.weights) - 1:
                G = G * (acts[i + 1] > 0)
            gW[i] = acts[i].T @ G
            gb[i] = G.sum(axis=0)
            G = G @ self.weights[i].T
        return gW + gb, G


class Adam:
    """Adam (Kingma and Ba 2015) minimising over a list of arrays updated in place.

    The one Adam of ikdr (KNet's networks, their identity pretraining and the
    learned compatibility map of KernelSVD). ``scales``: a step size factor
    per array (default 1), for parameters whose units differ.
    """

    def __init__(self, params, learning_rate, beta1=0.9, beta2=0.999, eps=1e-8, scales=None):
        self.params = params
        self.lr, self.beta1, self.beta2, self.eps = learning_rate, beta1, beta2, eps
        self.scales = [1.0] * len(params) if scales is None else [float(s) for s in scales]
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def state(self):
        """A copy of the moments and step count (for :meth:`restore`)."""
        return [m.copy() for m in self.m], [v.copy() for v in self.v], self.t

    def restore(self, state):
        """Return to a :meth:`state` taken earlier (an undone step)."""
        m, v, self.t = state
        for dst, src in zip(self.m + self.v, m + v):
            dst[...] = src

    def step(self, grads):
        self.t += 1
        c1 = 1.0 - self.beta1 ** self.t
        c2 = 1.0 - self.beta2 ** self.t
        for p, g, m, v, scale in zip(self.params, grads, self.m, self.v, self.scales):
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            lr = self.lr if scale == 1.0 else self.lr * scale
            p -= lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def pretrain_identity(nets, X, *, learning_rate=1e-2, epochs=500, batch_size=256, rng=None):
    """Fit a chain of networks to the identity map on X (dissertation Eq. 4.12):
    ``min sum_k ||X - (net_k o ... o net_1)(X)||^2`` by Adam."""
    params = [p for net in nets for p in net.params]
    opt = Adam(params, learning_rate)
    n = X.shape[0]
    rng = np.random.default_rng(rng)
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            Xb = X[order[start:start + batch_size]]
            outs, A = [], Xb
            for net in nets:
                A = net.forward(A, keep=True)
                outs.append(A)
            grads_all = []
            upstream = np.zeros_like(outs[-1])
            for net, out in zip(reversed(nets), reversed(outs)):
                g, upstream = net.backward(2.0 * (out - Xb) / Xb.shape[0] + upstream)
                grads_all.append(g)
            grads_all.reverse()
            # params are ordered net by net: weights then biases of each
            opt.step([g for gs in grads_all for g in gs])
    return nets
