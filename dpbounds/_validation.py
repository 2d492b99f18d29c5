"""Input checks shared by the whole library.

Each check raises :class:`ValueError` naming the parameter and its valid range, and
returns the value converted to the expected type, so public functions can write
``epsilon = check_positive("epsilon", epsilon)``. Array inputs are checked elementwise.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from dpbounds._suggest import did_you_mean  # re-exported: its home is NumPy-free

#: Largest number of steps, compositions or records a privacy computation accepts: 10^15, below
#: 2^53 (~9.0e15), the last count float64 arithmetic holds exactly, and far beyond any training
#: run or dataset. Larger counts raise ``ValueError`` instead of overflowing or hanging.
MAX_COUNT = 10**15

#: Largest dimension d of a simulated run: one float64 state of 10^8 coordinates takes 0.8 GB,
#: so a few states per trial still fit a 24 GB machine; beyond it a run would exhaust memory.
MAX_DIMENSION = 10**8

#: Largest number of records n of a simulated data set (an n x d float64 matrix needs 8 n d
#: bytes: 10^8 records of one feature is 0.8 GB; the product n d is the caller's to bound).
MAX_SAMPLES = 10**8

#: Integers with more digits than this print in scientific notation in error messages.
_SCI_DIGITS = 16


def show_value(value: Any) -> str:
    """The value as a user typed it: ``1.5``, not ``array(1.5)``; an integer of 17 or more
    digits as ``1.00e+400`` rather than its 401 digits."""
    if isinstance(value, np.ndarray | np.generic) and np.ndim(value) == 0:
        value = value.item()
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            return repr(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and (
            abs(value) >= 10**_SCI_DIGITS):
        bits = abs(int(value)).bit_length()
        if bits > 14_000:  # str() refuses past 4300 digits
            return f"{'-' if value < 0 else ''}an integer of ~{int(bits * 0.30103)} digits"
        digits = str(abs(int(value)))
        return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"
    if isinstance(value, list | tuple) and len(value) > 8:  # a long array: its ends
        return f"[{', '.join(show_value(v) for v in value[:3])}, ..., {show_value(value[-1])}] " \
               f"({len(value)} entries)"
    return repr(value)


_show = show_value  # the name the library's modules import

#: Exact types taken by the scalar fast path of the checks (subclasses, bools and everything else
#: go through :func:`_as_float_array`).
_FLOAT_TYPES = (float, np.float64)
#: Bounds the fast path compares with (an array bound goes through the array path).
_BOUND_TYPES = (float, int)


def _finite_scalar(value: Any) -> float | None:
    """``float(value)`` for a finite Python float, NumPy float64 or integer below 2^53 (exact in
    float64), else ``None``: the common scalar case without building an array, the same value
    and the same verdicts as :func:`_as_float_array` (the tuners call these checks ~10^5 times;
    the array path was a tenth of an LMI-class tune)."""
    kind = type(value)
    if kind in _FLOAT_TYPES:
        return float(value) if math.isfinite(value) else None
    if kind is int and -2**53 <= value <= 2**53:
        return float(value)
    return None


def real_scalar(value: Any) -> bool:
    """Whether ``value`` is one real number: a Python int or float, a NumPy integer or float
    scalar, or a 0-d array of one (not a bool, a string or an array of several)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return False
    if isinstance(value, numbers.Real):
        return True
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"


def holds_text(value: Any) -> bool:
    """Whether a list, tuple or array holds a string anywhere (nested lists included): text
    where numbers belong, which ``np.asarray(value, dtype=float)`` would read as numbers.
    NumPy's own reading first (numbers: no scan); only an object array is scanned."""
    if not isinstance(value, list | tuple | np.ndarray):
        return False
    try:
        raw = value if isinstance(value, np.ndarray) else np.asarray(value)
    except ValueError:  # ragged: the objects, one by one
        raw = np.empty(len(value), dtype=object)
        raw[:] = [np.asarray(v, dtype=object) if isinstance(v, list | tuple) else v
                  for v in value]
    if raw.dtype.kind in "US":
        return True
    if raw.dtype.kind != "O":  # numbers (or bools: refused by the caller)
        return False
    return any(isinstance(v, str | bytes) or (isinstance(v, list | tuple | np.ndarray)
                                              and holds_text(v))
               for v in raw.ravel())


def _as_float_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, bool | np.bool_) or getattr(value, "dtype", None) == np.bool_ or (
            isinstance(value, list | tuple) and value and all(
                isinstance(v, bool | np.bool_) for v in value)):
        # True would silently be 1.0: a flag passed where a number belongs
        raise ValueError(f"{name} must be a real number, got {show_value(value)}")
    if isinstance(value, str | bytes) or holds_text(value):
        # float("1") is 1.0: a ledger read from JSON with "sigma": "1", or epsilon="1" passed
        # from a form, ran with a number nobody wrote as one (fuzz round 17); the DpEvent and
        # Opacus readers already refused them
        raise ValueError(f"{name} must be a real number (not text), got {show_value(value)}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {show_value(value)}") from None
    except OverflowError:  # an integer beyond the float range, e.g. 10**400
        raise ValueError(f"{name} must be finite, got {show_value(value)} (beyond the float range, "
                         "~1e308)") from None
    if arr.size == 0 and not isinstance(value, np.ndarray):
        # a user's [] (every check would pass vacuously where a number was expected); an
        # empty ndarray is a vectorised call over nothing, which the library makes itself
        raise ValueError(f"{name} must be a real number or a non-empty array, got "
                         f"{show_value(value)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {show_value(value)}")
    return arr


def _ret(arr: np.ndarray, value: Any) -> Any:
    return float(arr) if arr.ndim == 0 else arr


def check_scalar(name: str, value: Any) -> Any:
    """``value`` itself where it is one number (a 0-d array or NumPy scalar included); a
    ``ValueError`` naming ``name`` for a list or an array: functions that compute one number
    raised ``TypeError: only 0-dimensional arrays can be converted`` or "unhashable type",
    naming no parameter. The number's own range is checked by the caller's other checks."""
    if isinstance(value, (list, tuple)) or np.ndim(value) > 0:
        raise ValueError(f"{name} must be one number (this function takes no arrays), got "
                         f"{show_value(value)}")
    return value


def check_scalars(**values: Any) -> None:
    """:func:`check_scalar` of each ``name=value`` (``None`` is left to the caller): a list
    or array where one number belongs raised ``TypeError: only 0-dimensional arrays can be
    converted`` or "unhashable type" from deep inside (fuzz round 7). Called in the body, not
    as a decorator: a wrapper's frame moved the caller's warnings (``stacklevel``) onto it."""
    for name, value in values.items():
        if value is not None:
            check_scalar(name, value)


def check_finite(name: str, value: Any) -> Any:
    """A finite real number (or array of them)."""
    v = _finite_scalar(value)
    if v is not None:
        return v
    return _ret(_as_float_array(name, value), value)


def check_positive(name: str, value: Any, *, allow_inf: bool = False) -> Any:
    """A real number in (0, ∞) (``allow_inf`` admits +∞)."""
    if allow_inf and np.ndim(value) == 0 and value == math.inf:
        return math.inf
    v = _finite_scalar(value)
    if v is not None and v > 0:
        return v
    arr = _as_float_array(name, value)
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be > 0 (valid range (0, inf)), got {show_value(value)}")
    return _ret(arr, value)


def check_nonnegative(name: str, value: Any) -> Any:
    """A real number in [0, ∞); -0.0 comes back as 0.0 (``rho=-0`` was shown with its sign)."""
    v = _finite_scalar(value)
    if v is not None and v >= 0:
        return v + 0.0
    arr = _as_float_array(name, value)
    if not np.all(arr >= 0):
        raise ValueError(f"{name} must be >= 0 (valid range [0, inf)), got {show_value(value)}")
    if arr.ndim == 0 or np.signbit(arr).any():  # -0.0: a copy only where one is held
        arr = arr + 0.0
    return _ret(arr, value)


def check_open_interval(name: str, value: Any, low: float, high: float) -> Any:
    """A real number in the open interval (low, high)."""
    v = _finite_scalar(value)
    if v is not None and type(low) in _BOUND_TYPES and type(high) in _BOUND_TYPES \
            and low < v < high:
        return v
    arr = _as_float_array(name, value)
    if not np.all((arr > low) & (arr < high)):
        raise ValueError(f"{name} must lie in ({low}, {high}), got {show_value(value)}")
    return _ret(arr, value)


def check_closed_interval(name: str, value: Any, low: float, high: float) -> Any:
    """A real number in the closed interval [low, high]."""
    v = _finite_scalar(value)
    if v is not None and type(low) in _BOUND_TYPES and type(high) in _BOUND_TYPES \
            and low <= v <= high:
        return v
    arr = _as_float_array(name, value)
    if not np.all((arr >= low) & (arr <= high)):
        raise ValueError(f"{name} must lie in [{low}, {high}], got {show_value(value)}")
    return _ret(arr, value)


def check_probability(name: str, value: Any) -> Any:
    """A probability strictly between 0 and 1, e.g. δ."""
    return check_open_interval(name, value, 0.0, 1.0)


def check_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer in [minimum, maximum] (floats with an integral value are accepted)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer, got {show_value(value)}")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    else:
        if not math.isfinite(value) or value != math.floor(value):
            raise ValueError(f"{name} must be an integer, got {show_value(value)}")
        ivalue = int(math.floor(value))  # exact for any integral Real (Fraction, Decimal)
    if ivalue < minimum or (maximum is not None and ivalue > maximum):
        upper = "inf" if maximum is None else show_value(int(maximum))
        raise ValueError(f"{name} must be an integer in [{show_value(int(minimum))}, {upper}], got "
                         f"{show_value(value)}")
    return ivalue


def check_size(name: str, value: Any, maximum: int, why: str, *, minimum: int = 1) -> int:
    """An integer size in ``[minimum, maximum]`` whose upper end keeps a run within memory or
    time; ``why`` says so in the message, e.g.
    ``check_size("d", d, MAX_DIMENSION, "a float64 state of d coordinates takes 8 d bytes")``.
    """
    try:
        return check_int(name, value, minimum=minimum, maximum=maximum)
    except ValueError as exc:
        raise ValueError(f"{exc} ({why})") from None


def check_flag(name: str, value: Any) -> bool:
    """A bool (``numpy.bool_`` too); anything else, even truthy, is refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {show_value(value)}")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of a fixed set of strings (a mistyped one gets the closest as a suggestion)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {show_value(value)}"
                         f"{did_you_mean(value, choices)}")
    return str(value)
