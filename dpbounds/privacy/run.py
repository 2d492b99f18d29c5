r"""The privacy record of one algorithm run: what it spent (a ledger), against what target, and
through which accountant.

Every algorithm in :mod:`dpbounds.algorithms` declares the mechanisms it runs, calibrates their
noise with :func:`~dpbounds.privacy.calibrate.calibrate` and returns a :class:`RunPrivacy` as
``result.privacy``; ``result.ledger`` (a :class:`~dpbounds.algorithms.SpentBudget`) is a view
derived from it.

Examples
--------
>>> from dpbounds.privacy.ledger import PrivacyLedger
>>> from dpbounds.privacy.mechanisms import GaussianMechanism
>>> from dpbounds.privacy.run import RunPrivacy
>>> led = PrivacyLedger("add_remove", [(GaussianMechanism(sigma=20.0), 50)])
>>> run = RunPrivacy(led, target_epsilon=2.0, target_delta=1e-6, accountant="zcdp",
...                  sensitivity=1.0)
>>> run.epsilon <= 2.0, sorted(run.report())[:2]
(True, ['basic', 'pld'])
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dpbounds._validation import (
    check_choice,
    check_closed_interval,
    check_positive,
    real_scalar,
)
from dpbounds.privacy.accountants import ACCOUNTANTS, Accountant
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import Neighbouring

__all__ = ["RunPrivacy"]


@dataclass(frozen=True)
class RunPrivacy:
    """What a run spent and how it was accounted (frozen).

    Attributes
    ----------
    ledger : PrivacyLedger
        The mechanisms the run executed (frozen). For runs whose spending differs per trial
        (DP-AGD), the ledger of the trial that spent the most; all are in ``trial_ledgers``.
    target_epsilon : float
        The caller's target epsilon (``inf``: a non-private run, empty ledger).
    target_delta : float
        The caller's target delta.
    accountant : str
        Name of the accountant that calibrated the noise (``'rdp'``, ``'zcdp'``, ``'pld'``,
        ``'pure'``, ``'basic'``); ``accountant_options`` its settings (e.g. the conversion).
    sensitivity : float
        The sensitivity of the main noised query, under ``neighbouring``.
    neighbouring : Neighbouring
        Relation of the guarantee (the ledger's).
    trial_ledgers : tuple of PrivacyLedger
        One per trial for adaptive runs, else empty.
    """

    ledger: PrivacyLedger
    target_epsilon: float
    target_delta: float
    accountant: str
    sensitivity: float = math.nan
    accountant_options: dict[str, Any] = field(default_factory=dict)
    trial_ledgers: tuple[PrivacyLedger, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.ledger, PrivacyLedger):
            raise ValueError(f"ledger must be a PrivacyLedger, got {self.ledger!r}")
        check_positive("target_epsilon", self.target_epsilon, allow_inf=True)
        check_choice("accountant", self.accountant, tuple(ACCOUNTANTS))
        self.ledger.freeze()
        for led in self.trial_ledgers:
            led.freeze()

    @property
    def neighbouring(self) -> Neighbouring:
        return self.ledger.neighbouring

    @property
    def private(self) -> bool:
        """``False`` for a non-private run (``target_epsilon = inf``)."""
        return math.isfinite(self.target_epsilon)

    @property
    def delta(self) -> float:
        """δ of the guarantee: 0 for pure DP, else the target's."""
        return 0.0 if self.accountant == "pure" else float(self.target_delta)

    def make_accountant(self, ledger: PrivacyLedger | None = None) -> Accountant:
        """The run's accountant with every entry of ``ledger`` (default: :attr:`ledger`)."""
        led = self.ledger if ledger is None else ledger
        return led.accountant(self.accountant, **self.accountant_options)

    def epsilon_of(self, ledger: PrivacyLedger) -> float:
        """ε of ``ledger`` under the run's accountant at the target δ."""
        if not self.private:
            return math.inf
        acc = self.make_accountant(ledger)
        return float(acc.get_epsilon(None if acc.name == "pure" else self.target_delta))

    @cached_property
    def epsilon(self) -> float:
        """ε spent, by the run's accountant at the target δ (``inf`` when non-private)."""
        return self.epsilon_of(self.ledger)

    def report(self, delta: float | None = None) -> dict[str, float | None]:
        """ε at ``delta`` (default: the target's) under every accountant, side by side;
        ``None`` where one does not apply (an unsupported mechanism, a grid it cannot
        represent) — never raises for that."""
        if not self.private:
            return {name: math.inf for name in ACCOUNTANTS}
        return self.ledger.report(self.target_delta if delta is None else delta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ledger": self.ledger.to_dict(), "target_epsilon": self.target_epsilon,
                "target_delta": self.target_delta, "accountant": self.accountant,
                "sensitivity": self.sensitivity,
                "accountant_options": dict(self.accountant_options),
                "trial_ledgers": [led.to_dict() for led in self.trial_ledgers],
                "description": self.description}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunPrivacy:
        """Inverse of :meth:`to_dict`."""
        needed = ("ledger", "target_epsilon", "target_delta", "accountant")
        if not isinstance(data, Mapping) or any(k not in data for k in needed):
            # {} raised KeyError, None TypeError (fuzz 17)
            raise ValueError(f"data must be a RunPrivacy.to_dict() mapping with the keys "
                             f"{', '.join(needed)}, got {reprlib.repr(data)}")
        options = data.get("accountant_options", {})
        trials = data.get("trial_ledgers", ())
        # [1, 2] and 5 raised TypeError from dict() and iter() (fuzz round 18)
        if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
            raise ValueError(f"accountant_options must be a mapping of option names, got "
                             f"{reprlib.repr(options)}")
        if isinstance(trials, str | bytes | Mapping) or not isinstance(trials, list | tuple):
            raise ValueError(f"trial_ledgers must be a list of PrivacyLedger.to_dict() "
                             f"mappings, got {reprlib.repr(trials)}")
        # 0 for pure DP and non-private runs
        delta = check_closed_interval("target_delta", data["target_delta"], 0.0, 1.0)
        if delta >= 1.0:
            raise ValueError(f"target_delta must lie in [0, 1), got {delta!r}")
        sens = data.get("sensitivity", math.nan)
        if not real_scalar(sens):  # "a" was kept, to fail wherever it was read
            raise ValueError(f"sensitivity must be a number (nan where unknown), got "
                             f"{reprlib.repr(sens)}")
        if not isinstance(data.get("description", ""), str):
            raise ValueError(f"description must be text, got "
                             f"{reprlib.repr(data['description'])}")
        return cls(PrivacyLedger.from_dict(data["ledger"]), data["target_epsilon"],
                   delta, data["accountant"], float(sens),
                   dict(options), tuple(PrivacyLedger.from_dict(d) for d in trials),
                   data.get("description", ""))

    @classmethod
    def non_private(cls, neighbouring: Any = Neighbouring.REPLACE_ONE,
                    accountant: str = "rdp") -> RunPrivacy:
        """The record of a run with ``epsilon = inf`` (no noise, nothing recorded)."""
        return cls(PrivacyLedger(neighbouring), math.inf, 0.0, accountant)

    def __str__(self) -> str:
        return (f"{self.accountant} accountant ({self.neighbouring}): eps={self.epsilon:.6g} "
                f"<= target ({self.target_epsilon:.6g}, {self.target_delta:.3g}); "
                f"{self.ledger!r}")
