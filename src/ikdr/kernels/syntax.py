"""Kernel specifications as text: ``gaussian``, ``polynomial:degree=3,c=1``,
``0.5*gaussian+2*polynomial:degree=3``."""
from __future__ import annotations

import re

from .base import Kernel
from .names import kernel_class, make_kernel

_TERM = re.compile(r"^\s*(?:(?P<w>[0-9.eE+-]+)\s*\*\s*)?(?P<name>[a-zA-Z_]+)\s*(?::(?P<args>.*))?$")


def _value(text):
    text = text.strip()
    if text == "median":
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"kernel parameter value {text!r} is not a number") from None


def parse_kernel(spec: str, *, sigma="median") -> Kernel:
    """Parse a kernel specification into an :mod:`ikdr.kernels` object.

    Examples
    --------
    >>> parse_kernel("0.5*gaussian:sigma=2+polynomial:degree=2")
    0.5 * Gaussian(sigma=2) + 1.0 * Polynomial(degree=2, c=1.0)
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("empty kernel specification")
    # '+' separates terms, but not inside a number's exponent (1e+3)
    parts = re.split(r"(?<![eE])\+", spec)
    kernels = []
    for part in parts:
        m = _TERM.match(part)
        if not m:
            raise ValueError(f"cannot parse kernel term {part!r}")
        name = m.group("name").lower()
        cls = kernel_class(name)
        kwargs = {}
        if m.group("args"):
            for item in m.group("args").split(","):
                if "=" not in item:
                    raise ValueError(f"kernel parameter {item!r} must be key=value")
                key, val = item.split("=", 1)
                kwargs[key.strip()] = _value(val)
        if not kwargs and name in ("gaussian", "rbf"):
            kwargs["sigma"] = sigma
        try:
            k = cls(**kwargs)
        except TypeError as exc:
            raise ValueError(f"bad parameters for {name}: {exc}") from None
        w = m.group("w")
        kernels.append(float(w) * k if w is not None else k)
    out = kernels[0]
    for k in kernels[1:]:
        out = out + k
    if len(kernels) == 1 and m is not None and m.group("w") is None:
        return make_kernel(out)
    return out if len(kernels) > 1 else 1.0 * out
