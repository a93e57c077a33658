"""Values of the command line's options: parsed and checked, a UsageError naming
the option when they are wrong."""
from __future__ import annotations

from .errors import UsageError, first_line


def sigma_option(text, rules=("median",)):
    """--sigma: a positive number or one of the estimator's bandwidth ``rules``
    (the first is the default)."""
    if text is None:
        return rules[0]
    if text in rules:
        return text
    try:
        value = float(text)
    except ValueError:
        names = " or ".join(f"'{r}'" for r in rules)
        raise UsageError(f"--sigma must be a positive number or {names}, got {text!r}") from None
    if not value > 0:
        raise UsageError(f"--sigma must be positive, got {value}")
    return value


def positive_option(name, value, *, strict=True):
    """An option's number, positive (or, with ``strict=False``, non-negative)."""
    if value is not None and not (value > 0 if strict else value >= 0):
        raise UsageError(f"{name} must be {'positive' if strict else 'non-negative'}, got {value}")
    return value


def kernel_option(args, sigma=None):
    """--kernel parsed, its Gaussian members at ``sigma`` (default: --sigma)."""
    from ..kernels.syntax import parse_kernel

    sigma = sigma_option(args.sigma) if sigma is None else sigma
    try:
        return parse_kernel(args.kernel, sigma=sigma)
    except (TypeError, ValueError) as exc:
        raise UsageError(first_line(exc)) from None


def ism_kernel_option(args):
    """(kernel, sigma) as :class:`ikdr.ISM` takes them, so that the command and the
    library give the same fit: a plain kernel name stays a name, its bandwidth
    --sigma's rule ("auto" by default, as the library's); a composite
    specification is parsed into a kernel (its Gaussian members at the median
    rule unless --sigma gives a number)."""
    from ..kernels.names import KERNEL_NAMES

    sigma = sigma_option(args.sigma, rules=("auto", "median", "separation"))
    if args.kernel.strip().lower() in KERNEL_NAMES:
        return args.kernel.strip().lower(), sigma
    return kernel_option(args, sigma if not isinstance(sigma, str) else "median"), sigma


def landmarks_option(text):
    """--landmarks: a positive int, or "auto" (None)."""
    if text is None or text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--landmarks must be a positive int or 'auto', got {text!r}") from None
    if value < 1:
        raise UsageError(f"--landmarks must be positive, got {value}")
    return value


def hidden_option(text):
    """--hidden: comma-separated positive layer sizes."""
    if text is None:
        return None
    try:
        sizes = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise UsageError(f"--hidden must be comma-separated ints such as 20,20, got {text!r}") \
            from None
    if not sizes or min(sizes) < 1:
        raise UsageError(f"--hidden sizes must be positive, got {text!r}")
    return sizes
