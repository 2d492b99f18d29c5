r"""The common interface of the privacy accountants, and the error for what they cannot account.

:class:`Accountant` composes a :class:`~dpbounds.privacy.mechanisms.ComposedMechanism` part by part
under its own :class:`~dpbounds.privacy.mechanisms.Neighbouring` relation and reports
:math:`(\varepsilon,\delta)`; :class:`UnsupportedMechanismError` (a ``ValueError``) is what it
raises for a mechanism it cannot account.
"""

from __future__ import annotations

import abc
import math
import sys
from typing import Any

import numpy as np

from dpbounds._validation import MAX_COUNT, check_int
from dpbounds.privacy.mechanisms import ComposedMechanism, Mechanism, Neighbouring

__all__ = [
    "Accountant",
    "UnsupportedMechanismError",
]


class UnsupportedMechanismError(ValueError):
    """The accountant cannot account this mechanism (under its neighbouring relation)."""


def _finite(value: Any) -> Any:
    """``value`` if finite; else OverflowError (``Accountant.compose`` turns it into a
    ``ValueError`` and leaves the accountant unchanged)."""
    if type(value) is float:  # a scalar budget (zCDP, pure): no NumPy round trip
        if not math.isfinite(value):
            raise OverflowError("the composed budget is not finite")
        return value
    if not np.all(np.isfinite(value)):
        raise OverflowError("the composed budget is not finite")
    return value


def _half_ratio_squared(sensitivity: float, sigma: float) -> float:
    """:math:`s^2/(2\\sigma^2)`, the Gaussian's zCDP rho (Bun & Steinke 2016 Prop. 1.6; Lee &
    Kifer Lemma 3.6, VERBATIM). Where either square would leave the
    float range (``--G 1e300`` gave ``s = 2e297``, ``sigma = 9.8e298``: rho 2e-4, but
    ``s**2`` overflowed) the ratio is formed first; elsewhere the same floats as before. A
    rho below the smallest normal float (flushed to 0 or subnormal) raises ``OverflowError``,
    which :meth:`Accountant.compose` refuses in words: a rho of 0 claims epsilon 0 at every
    delta, below the truth at a delta under ~0.4 s/sigma (``z = 1e300``); PLD, which needs no
    rho, still answers there."""
    if 1e-150 < sensitivity < 1e150 and 1e-150 < sigma < 1e150:
        rho = sensitivity**2 / (2 * sigma**2)
    else:
        rho = (sensitivity / sigma) ** 2 / 2
    if sensitivity > 0 and rho < sys.float_info.min:
        raise OverflowError("rho underflows")
    return rho


def _reason(err: BaseException) -> str:
    """An arithmetic error in words: math's OverflowError carries the errno pair
    ``(34, 'Numerical result out of range')``, printed as a tuple (fuzz round 7)."""
    args = err.args
    if len(args) == 2 and isinstance(args[1], str):
        return args[1]
    return str(err) or type(err).__name__


def _brief(mechanism: Any) -> str:
    """``GaussianMechanism(sigma=2, sensitivity=1, neighbouring=add_remove)``: a mechanism's
    fields with the relation by its value (a dataclass repr shows the enum member's repr)."""
    fields = getattr(mechanism, "__dataclass_fields__", None)
    if not fields:
        return repr(mechanism)
    parts = []
    for name in fields:
        v = getattr(mechanism, name, None)
        v = getattr(v, "value", v) if isinstance(v, Neighbouring) else v
        parts.append(f"{name}={v:g}" if isinstance(v, float) else f"{name}={v}")
    return f"{type(mechanism).__name__}({', '.join(parts)})"


class Accountant(abc.ABC):
    """Common interface: ``compose(mechanism, count)``, ``get_epsilon(delta)``,
    ``get_delta(epsilon)``, ``supports(mechanism)`` and ``spawn()`` (an empty copy)."""

    name: str = "accountant"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE) -> None:
        self.neighbouring = Neighbouring.coerce(neighbouring)
        self.entries: list[tuple[Mechanism, int]] = []

    def compose(self, mechanism: Mechanism, count: int = 1) -> Accountant:
        """Account ``count`` runs of ``mechanism`` (``0 <= count <= MAX_COUNT`` = 10^15);
        returns ``self`` for chaining. A budget beyond the float range raises ``ValueError``
        and leaves the accountant unchanged."""
        count = check_int("count", count, minimum=0, maximum=MAX_COUNT)
        if not isinstance(mechanism, Mechanism):
            raise UnsupportedMechanismError(f"mechanism must be a Mechanism, got {mechanism!r}")
        if isinstance(mechanism, ComposedMechanism):  # a composition composes its parts
            for part, n in mechanism.parts:
                self.compose(part, check_int("count", count * n, maximum=MAX_COUNT))
            return self
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                self._compose(mechanism, count)
        except (OverflowError, ZeroDivisionError, FloatingPointError) as err:
            why = ("its sensitivity-to-noise ratio is too far from 1 for float64 (huge noise "
                   "underflows, tiny noise overflows)" if hasattr(mechanism, "sensitivity")
                   and (hasattr(mechanism, "sigma") or hasattr(mechanism, "scale")) else
                   "its budget is too large (or too small) for float64")
            raise ValueError(
                f"count={count} runs of {_brief(mechanism)}: the {self.name} accountant's budget "
                f"leaves the floating-point range ({_reason(err)}): {why}") from None
        self.entries.append((mechanism, count))
        return self

    def supports(self, mechanism: Mechanism) -> bool:
        """Whether :meth:`compose` would accept ``mechanism``."""
        parts = mechanism.parts if isinstance(mechanism, ComposedMechanism) else ((mechanism, 1),)
        try:
            for part, _ in parts:
                self.spawn()._compose(part, 1)
        except UnsupportedMechanismError:
            return False
        return True

    def closed_form_noise(self, mechanism_for: Any, epsilon: float, delta: float | None,
                          count: int) -> float | None:
        """A closed-form noise level for ``count`` runs of the family ``mechanism_for`` at the
        target, or ``None`` (no closed form). :func:`~dpbounds.privacy.calibrate.calibrate`
        uses it as its fast path and verifies it with :meth:`get_epsilon` before returning it."""
        return None

    def _pure_epsilon(self, mechanism: Mechanism) -> float:
        """Pure ε of one run of a pure-DP mechanism under this relation (the mechanism's own
        :meth:`epsilon_under`, e.g. the subsampled-Laplace amplification); a relation it is not
        stated for becomes :class:`UnsupportedMechanismError`."""
        try:
            # only the pure-DP mechanisms (Laplace, pure, subsampled Laplace) define it
            epsilon_under = getattr(mechanism, "epsilon_under", None)
            if epsilon_under is None:
                raise ValueError(f"{type(mechanism).__name__} is not a pure-DP mechanism")
            return float(epsilon_under(self.neighbouring))
        except ValueError as err:
            raise self._unsupported(mechanism, str(err)) from None

    @abc.abstractmethod
    def _compose(self, mechanism: Mechanism, count: int) -> None: ...

    @abc.abstractmethod
    def get_epsilon(self, delta: float | None) -> float:
        """Smallest epsilon this accountant certifies at ``delta`` (``None``: pure DP only)."""

    @abc.abstractmethod
    def get_delta(self, epsilon: float) -> float:
        """Smallest delta this accountant certifies at ``epsilon``."""

    @abc.abstractmethod
    def spawn(self) -> Accountant:
        """A fresh, empty accountant with the same settings."""

    def _sensitivity(self, mechanism: Mechanism) -> float:
        """``mechanism.sensitivity_under(self.neighbouring)``; a refused conversion (replace-one
        → add/remove without ``per_example_sum``) becomes :class:`UnsupportedMechanismError`."""
        try:
            return mechanism.sensitivity_under(self.neighbouring)
        except ValueError as err:
            raise self._unsupported(mechanism, str(err)) from None

    def _unsupported(self, mechanism: Mechanism, why: str = "") -> UnsupportedMechanismError:
        # the mechanism's class and fields, not its repr (whose relation printed as
        # "<Neighbouring.ADD_REMOVE: 'add_remove'>")
        text = f"{self.name} accountant ({self.neighbouring}) does not support {_brief(mechanism)}"
        return UnsupportedMechanismError(text + (f": {why}" if why else ""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(neighbouring={self.neighbouring.value!r}, " \
               f"entries={len(self.entries)})"
