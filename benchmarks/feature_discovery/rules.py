"""Bandwidth rules emulated through the public API: a wrapper that resolves sigma on the
training data, then fits ikdr.ISM(sigma=<float>)."""
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
import ikdr
from common import med, phi0_start

RULES = ["median", "med*sqrt(q/d)", "med(XW0)", "0.5*med(XW0)", "separation"]


def default_q(X, y):
    return ikdr.ISM(sigma=1.0, max_iter=1).fit(X, y).components_.shape[1]   # q from Phi_0's eigengap


def resolve(rule, X, y, q):
    d = X.shape[1]
    if rule == "median":
        return med(X)
    if rule == "med*sqrt(q/d)":
        return med(X) * np.sqrt(q / d)
    if rule == "med(XW0)":
        return med(X @ phi0_start(X, y, q))
    if rule == "0.5*med(XW0)":
        return 0.5 * med(X @ phi0_start(X, y, q))
    raise KeyError(rule)


class RuleISM(BaseEstimator, TransformerMixin):
    def __init__(self, rule="median", q=None, q_floor=1):
        self.rule, self.q, self.q_floor = rule, q, q_floor

    def fit(self, X, y):
        q = self.q or max(default_q(X, y), self.q_floor)
        q = min(q, X.shape[1])
        if self.rule == "separation":
            self.ism_ = ikdr.ISM(sigma="separation", n_components=q, random_state=0).fit(X, y)
        else:
            self.ism_ = ikdr.ISM(sigma=resolve(self.rule, X, y, q), n_components=q).fit(X, y)
        self.sigma_ = self.ism_.sigma_
        return self

    def transform(self, X):
        return self.ism_.transform(X)


class ScreenISM(BaseEstimator, TransformerMixin):
    """The defaults' recipe emulated: moment screen, ISM on the kept features, sigma = med(X_S W0)."""
    def __init__(self, q_floor=2, screen=True):
        self.q_floor, self.screen = q_floor, screen

    def fit(self, X, y):
        import sys; sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), ".."))
        from bench_feature_discovery import moment_screen
        s = moment_screen(X, y) if self.screen else np.ones(X.shape[1])
        q = min(max(default_q(X, y), self.q_floor), X.shape[1])
        keep = np.flatnonzero(s > 0)
        if keep.size < q:
            keep = np.sort(np.argsort(-s)[:max(q, 2 * keep.size)])
        self.keep_ = keep; Xs = X[:, keep]
        self.ism_ = ikdr.ISM(sigma=med(Xs @ phi0_start(Xs, y, q)), n_components=q).fit(Xs, y)
        return self

    def transform(self, X):
        return self.ism_.transform(X[:, self.keep_])
