"""One validation path for every public entry point."""
from __future__ import annotations

import functools
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils import check_array

FLOAT_DTYPES = (np.float64, np.float32)


def plain(value):
    """``value`` with numpy scalars (also inside lists, tuples and arrays) turned into the
    Python ones they hold, for messages and reprs: since numpy 2 ``repr(np.float64(0.5))``
    is ``np.float64(0.5)`` and ``repr(np.str_("a"))`` is ``np.str_('a')``; ``plain``
    makes them ``0.5`` and ``'a'``. Anything else is returned unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def check_matrix(X, name="X", *, min_samples=2, dtype=np.float64):
    """Validate a dense 2-D finite array of at least ``min_samples`` rows."""
    if sp.issparse(X):
        raise TypeError(f"{name}: sparse input is not supported here; pass a dense array")
    accepted = dtype if isinstance(dtype, tuple) else (dtype,)
    if type(X) is np.ndarray and X.ndim == 2 and X.dtype in accepted and \
            X.flags.c_contiguous and X.shape[0] >= min_samples and X.shape[1] >= 1:
        # already what check_array would return (the library's own arrays, passed
        # between its layers): its checks without its conversions; the finite
        # check rides on check_scale's two reductions
        return check_scale(X, name, finite=True)
    X = check_array(X, dtype=dtype, ensure_2d=True, ensure_all_finite=True,
                    ensure_min_samples=min_samples, input_name=name, order="C")
    return check_scale(X, name)


def check_scale(X, name="X", *, finite=False):
    """Reject values whose squares (squared distances, ``X^T Gamma X``) would
    overflow or underflow X's floating type.

    The bounds are the cube roots of the largest and smallest normal numbers
    (float64: 5.6e102 and 2.8e-103; float32: 7.0e12 and 2.3e-13), which leaves
    room for sums over samples and features. ``finite``: also reject NaN and
    infinite values (with check_array's messages). Returns X unchanged.
    """
    X = np.asarray(X)
    biggest = largest_magnitude(X)
    if finite and not np.isfinite(biggest):
        if np.isnan(biggest) or np.isnan(X).any():
            raise ValueError(f"Input {name} contains NaN.")
        raise ValueError(f"Input {name} contains infinity or a value too large for "
                         f"{X.dtype!r}.")
    check_magnitude(biggest, X.dtype, name)
    return X


def largest_magnitude(X):
    """max |X| of a dense array by two reductions, no n x d temporary of |X| (NaN
    propagates through both); 0 for an empty one."""
    return max(abs(float(X.max())), abs(float(X.min()))) if X.size else 0.0


def within_scale(biggest, dtype):
    """Whether a largest magnitude ``biggest`` is within the bounds of
    :func:`check_scale` for ``dtype`` (0, data of zeros only, is)."""
    info = np.finfo(dtype if np.dtype(dtype).kind == "f" else np.float64)
    return biggest == 0 or float(info.tiny) ** (1 / 3) <= biggest <= float(info.max) ** (1 / 3)


def check_magnitude(biggest, dtype, name="X"):
    """The bound of :func:`check_scale` for a known largest magnitude ``biggest``
    of data of ``dtype`` (row-block readers of a memmap compute it block by block)."""
    if within_scale(biggest, dtype):
        return
    info = np.finfo(dtype if np.dtype(dtype).kind == "f" else np.float64)
    if biggest > float(info.max) ** (1 / 3):
        raise ValueError(f"{name} has values up to {biggest:.3g}: squared distances would overflow "
                         f"{info.dtype}; rescale {name} (e.g. StandardScaler)")
    if 0 < biggest < float(info.tiny) ** (1 / 3):
        raise ValueError(f"{name} has no value above {biggest:.3g} in magnitude: squared distances "
                         f"would underflow {info.dtype}; rescale {name} (e.g. StandardScaler)")


def check_float_matrix(X, name="X", *, min_samples=2):
    """Like :func:`check_matrix` but keeps float32 (the core has both precisions)."""
    return check_matrix(X, name, min_samples=min_samples, dtype=FLOAT_DTYPES)


def check_vector(values, name, *, allow_empty=False):
    """A finite 1-D float64 array."""
    if sp.issparse(values):
        raise TypeError(f"{name}: sparse input is not supported here; pass a dense array")
    values = np.asarray(values)
    if values.dtype.kind == "c":
        raise ValueError(f"{name}: complex values are not supported")
    try:
        values = values.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got dtype {values.dtype}") from None
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {values.shape}")
    if values.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return values


def keep_state_on_error(fit):
    """Decorate ``fit`` so that a failure (bad input, KeyboardInterrupt, MemoryError)
    leaves the estimator exactly as it was: the attributes of a previous
    successful fit survive, none of a half-finished one remain."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return wrapper


def check_bandwidth(sigma, name="sigma"):
    """A positive finite bandwidth whose ``1 / sigma^2`` is finite in float64."""
    sigma = check_positive(sigma, name)
    with np.errstate(all="ignore"):
        s2 = np.float64(sigma) ** 2
        ok = np.isfinite(s2) and s2 >= np.finfo(np.float64).tiny and np.isfinite(1.0 / s2)
    if not ok:
        raise ValueError(f"{name}={sigma:.3g} is out of range: 1/{name}^2 overflows or "
                         f"{name}^2 overflows float64")
    return sigma


def check_finite_result(values, what):
    """Raise a clear error instead of returning NaN/inf from a numerical step.

    ``what`` names the result: a string, or a callable returning it (formatted
    only on failure: a pass's check must not pay for a kernel's repr).
    """
    if not np.all(np.isfinite(values)):
        what = what() if callable(what) else what
        raise ValueError(f"{what} is not finite (float64 overflow); lower the polynomial "
                                 "degree, use a larger sigma or rescale the data")
    return values


def check_positive(value, name, *, allow_none=False, strict=True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or (value <= 0 if strict else value < 0):
        raise ValueError(f"{name} must be {'positive' if strict else 'non-negative'} and finite, "
                         f"got {value}")
    return value


def check_n_components(q, d, *, name="n_components"):
    if isinstance(q, bool) or not isinstance(q, numbers.Integral):
        raise TypeError(f"{name} must be an int or None, got {type(q).__name__}")
    q = int(q)
    if q < 1:
        raise ValueError(f"{name} must be >= 1, got {q}")
    if q > d:
        raise ValueError(f"{name}={q} is larger than the number of features d={d} (q > d)")
    return q


def check_dtype(dtype, *, allow_none=False):
    """A working precision: numpy.float64 or numpy.float32 (their scalar type), or
    None when ``allow_none`` (keep the data's own); a ValueError otherwise. The
    one dtype check of the estimators, the solver and the pass providers."""
    if dtype is None and allow_none:
        return None
    try:
        out = np.dtype(dtype)
    except TypeError:
        out = None
    if out not in (np.dtype(np.float64), np.dtype(np.float32)):
        allowed = "None, numpy.float64 or numpy.float32" if allow_none else \
            "numpy.float64 or numpy.float32"
        raise ValueError(f"dtype must be {allowed}, got {dtype!r}")
    return out.type


class TargetRequiredMixin:
    """Tags an estimator whose ``fit`` needs a second argument (labels, expert
    scores or an existing clustering), for scikit-learn's checks and tools."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class SparseInputMixin:
    """Tags an estimator whose ``fit`` and ``transform`` take ``scipy.sparse`` X as
    it is (never made dense), for scikit-learn's checks and tools."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class ComponentNamesMixin(ClassNamePrefixFeaturesOutMixin):
    """``get_feature_names_out`` of a transformer whose output columns are its
    learnt components: the lower-case class name and the column's number
    (``ism0``, ``ism1``, ...), scikit-learn's convention for projections. With
    it, scikit-learn's ``TransformerMixin`` gives ``set_output`` (e.g.
    ``transform="pandas"``) and a Pipeline names its output end to end."""

    #: the fitted array whose last axis holds one entry per output column
    _output_columns_of = "components_"

    @property
    def _n_features_out(self):
        # an AttributeError before fit: scikit-learn's check_is_fitted then says so
        return np.shape(getattr(self, self._output_columns_of))[-1]


class NewParametersOnLoad:
    """Estimators pickled by an earlier ikdr lack the parameters added since. On
    load each gets the value in ``_earlier_parameters`` (the one that does what
    the earlier version did, e.g. ISM's ``support="all"``), so that
    ``get_params``, ``clone`` and a refit work, and the fitted attributes added
    since get ``_fitted_defaults(state)``."""

    #: parameter -> the value that reproduces the earlier versions
    _earlier_parameters: dict = {}

    def __setstate__(self, state):
        missing = {name: value for name, value in self._earlier_parameters.items()
                   if name not in state}
        fitted = {name: value for name, value in self._fitted_defaults(state).items()
                  if name not in state}
        super().__setstate__({**state, **missing, **fitted})

    def _fitted_defaults(self, state):
        return {}
