"""Small numerical helpers shared by the privacy modules (not public API)."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_output(value: np.ndarray | float) -> Any:
    """Return a Python float for 0-d results and the array otherwise."""
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value


def log1p_times_expm1(x: Any, ratio: Any) -> np.ndarray:
    r"""``log(1 + ratio * (exp(x) - 1))`` for ``x >= 0`` and ``ratio > 0``, without overflow.

    For ``x <= 30`` it uses ``log1p(ratio * expm1(x))`` (no cancellation, no overflow); beyond,
    ``x + log(ratio) + log1p((1/ratio - 1) e^{-x})`` keeps ``exp(x)`` out of the computation.
    """
    x = np.asarray(x, dtype=float)
    ratio = np.asarray(ratio, dtype=float)
    x, ratio = np.broadcast_arrays(x, ratio)
    out = np.empty(x.shape, dtype=float)
    small = x <= 30.0
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        out[small] = np.log1p(ratio[small] * np.expm1(x[small]))
        xl, rl = x[~small], ratio[~small]
        out[~small] = xl + np.log(rl) + np.log1p((1.0 / rl - 1.0) * np.exp(-xl))
    return out


def nudge_up(value: Any, ulps: int = 4) -> Any:
    """Move a calibrated noise level a few ulps up so rounding can never overshoot privacy."""
    out = np.asarray(value, dtype=float)
    for _ in range(ulps):
        out = np.nextafter(out, np.inf)
    return out


def finite_or_raise(value: Any, names: str) -> Any:
    """Return ``value`` if every entry is finite; else a ValueError naming the inputs.

    Used where an input is valid but so extreme that the result leaves float64 range
    (e.g. a squared sensitivity of 1e200): better a clear error than a silent inf/NaN.
    """
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{names} out of floating-point range: the result is not finite")
    return value


def positive_or_raise(value: Any, names: str) -> Any:
    """Like :func:`finite_or_raise`, and also refuse results that underflowed to 0."""
    finite_or_raise(value, names)
    if np.any(np.asarray(value, dtype=float) <= 0):
        raise ValueError(f"{names} out of floating-point range: the result underflows to 0")
    return value


def guard_range(fn: Any) -> Any:
    """Turn float overflow/underflow accidents of extreme inputs into a ``ValueError`` naming
    the function's parameters, and refuse non-finite float results (no silent inf/NaN)."""
    import functools
    import inspect

    names = ", ".join(inspect.signature(fn).parameters)

    def fail(detail: str) -> ValueError:
        return ValueError(f"{fn.__name__}: inputs ({names}) out of floating-point range: {detail}")

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # Overflow, division by zero or an invalid operation anywhere inside is an error,
            # not a warning followed by a silently wrong (if finite) result.
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                out = fn(*args, **kwargs)
        except (OverflowError, ZeroDivisionError, FloatingPointError) as err:
            # an errno tuple ("(34, 'Numerical result out of range')") is no reason in words
            detail = (err.args[1] if len(err.args) == 2 and isinstance(err.args[1], str)
                      else str(err))
            raise fail(detail.lower() if detail[:1].isupper() else detail) from None
        if isinstance(out, float | np.ndarray | np.floating) and not np.all(
            np.isfinite(np.asarray(out, dtype=float))
        ):
            raise fail("the result is not finite")
        return out

    return wrapper


def guard_module(namespace: dict, names: Any) -> None:
    """Apply :func:`guard_range` to the public functions ``names`` of a module namespace."""
    import types

    for name in names:
        obj = namespace.get(name)
        if isinstance(obj, types.FunctionType):
            namespace[name] = guard_range(obj)
