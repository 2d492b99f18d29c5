r"""An accountant with Opacus's interface that never overshoots and reports its bracket.

Opacus (1.6+) lets a user register an accountant by name
(``opacus.accountants.register_accountant(mechanism, cls)``, then
``PrivacyEngine(accountant=mechanism)``). :class:`DpboundsAccountant` implements its
``IAccountant`` interface (``step``, ``get_epsilon``, ``__len__``, ``mechanism``, ``history``,
``state_dict``/``load_state_dict``, ``get_optimizer_hook_fn``) without importing Opacus;
:func:`register_with_opacus` makes an ``IAccountant`` subclass of it and registers it.

The history is Opacus's own: ``(noise_multiplier, sample_rate, num_steps)`` triples, a step
with the same pair as the last extending it (as Opacus's ``RDPAccountant.step`` does). The
epsilon is the pessimistic PLD accountant's (an upper bound; exact for the Gaussian parts), or,
where it cannot account the history (more than 10^9 steps, a grid beyond its limits), the RDP
accountant's (also an upper bound); ``last_accountant`` and ``last_fallback`` say which and
why. :meth:`DpboundsAccountant.epsilon_bracket` gives the optimistic / pessimistic pair.

Example
-------
>>> from dpbounds.privacy.opacus_accountant import DpboundsAccountant
>>> acc = DpboundsAccountant()
>>> for _ in range(1000):
...     acc.step(noise_multiplier=1.1, sample_rate=0.01)
>>> acc.history, len(acc)
([(1.1, 0.01, 1000)], 1000)
>>> round(acc.get_epsilon(1e-5), 3)
1.515
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from dpbounds._validation import check_choice
from dpbounds.privacy.ledger import PrivacyLedger

__all__ = ["MECHANISM", "DpboundsAccountant", "register_with_opacus"]

#: The name :func:`register_with_opacus` registers by default (``PrivacyEngine(accountant=...)``).
MECHANISM = "dpbounds"


class DpboundsAccountant:
    """Opacus's ``IAccountant`` interface over dpbounds' accountants (module notes).

    Parameters
    ----------
    accountant:
        ``'pld'`` (default; falls back to ``'rdp'`` where it cannot account the history) or
        ``'rdp'``.
    """

    def __init__(self, accountant: str = "pld") -> None:
        self.accountant = check_choice("accountant", accountant, ("pld", "rdp"))
        self.history: list[tuple[float, float, int]] = []
        self.last_accountant: str | None = None
        self.last_fallback: str | None = None

    @classmethod
    def mechanism(cls) -> str:
        """The accounting mechanism's name (Opacus's ``IAccountant.mechanism``)."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (refused, with the history unchanged, if it cannot be
        accounted: see :meth:`~dpbounds.privacy.ledger.PrivacyLedger.from_opacus`)."""
        PrivacyLedger.from_opacus([(noise_multiplier, sample_rate, 1)])  # validates
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            z, q, n = self.history[-1]
            self.history[-1] = (z, q, n + 1)
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def __len__(self) -> int:
        return sum(n for _, _, n in self.history)

    def ledger(self) -> PrivacyLedger:
        """The history as a :class:`~dpbounds.privacy.ledger.PrivacyLedger`."""
        return PrivacyLedger.from_opacus(self.history)

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """Epsilon spent so far at ``delta`` (an upper bound; module notes). Extra arguments
        that Opacus passes to its own accountants are accepted and ignored."""
        ledger = self.ledger()
        self.last_fallback = None
        if self.accountant == "pld":
            try:
                eps = float(ledger.epsilon(delta, "pld"))
                self.last_accountant = "pld"
                return eps
            except ValueError as err:  # UnsupportedMechanismError is one
                self.last_fallback = " ".join(str(err).split())
        self.last_accountant = "rdp"
        return float(ledger.epsilon(delta, "rdp"))

    def epsilon_bracket(self, delta: float) -> tuple[float, float]:
        """(optimistic, pessimistic) epsilon from the PLD accountant's two discretisations."""
        lo, hi = self.ledger().accountant("pld").epsilon_interval(delta)  # type: ignore[attr-defined]
        return float(lo), float(hi)

    def get_optimizer_hook_fn(self, sample_rate: float) -> Any:
        """What Opacus attaches to its ``DPOptimizer`` (as its ``IAccountant`` does)."""
        def hook_fn(optim: Any) -> None:
            self.step(noise_multiplier=optim.noise_multiplier,
                      sample_rate=sample_rate * optim.accumulated_iterations)

        return hook_fn

    def state_dict(self, destination: Any = None) -> Any:
        """``{"history", "mechanism"}`` (Opacus's checkpoint format)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = list(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict: Any) -> None:
        """Restore :meth:`state_dict`; ``ValueError`` for another mechanism's or a history
        that cannot be accounted."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ValueError("state_dict must have the keys 'history' and 'mechanism'")
        mech = state_dict["mechanism"]
        mech = mech() if callable(mech) else mech
        if mech != self.mechanism():
            raise ValueError(f"state_dict of {mech!r} cannot be loaded into the "
                             f"{self.mechanism()!r} accountant")
        PrivacyLedger.from_opacus(state_dict["history"])  # validates
        self.history = [(float(z), float(q), int(n)) for z, q, n in state_dict["history"]]


def register_with_opacus(name: str = MECHANISM) -> type:
    """Register :class:`DpboundsAccountant` with Opacus under ``name`` (an ``IAccountant``
    subclass is made); returns the class. Registering a name again that a dpbounds accountant
    holds replaces it; a name that another accountant holds (Opacus's ``'rdp'``, ``'prv'``,
    ``'gdp'``, a user's) is refused with Opacus's ``ValueError``. ``ImportError`` without
    Opacus.

    Checked with Opacus 1.6.0 and a CPU build of PyTorch 2.13.0 on a real DP-SGD loop
    (``tests/privacy/test_opacus_accountant.py``): ``PrivacyEngine(accountant=name)`` builds
    the registered class through ``opacus.accountants.create_accountant``, ``make_private``
    attaches :meth:`DpboundsAccountant.get_optimizer_hook_fn` to the optimizer, and
    ``PrivacyEngine.get_epsilon(delta)`` returns :meth:`DpboundsAccountant.get_epsilon`.
    """
    try:
        from opacus.accountants import IAccountant, create_accountant, register_accountant
    except ImportError as err:
        raise ImportError("register_with_opacus needs Opacus >= 1.6 (register_accountant): "
                          f"pip install opacus ({err})") from None

    def mechanism(cls: type) -> str:
        return name

    cls = type("DpboundsOpacusAccountant", (DpboundsAccountant, IAccountant),
               {"mechanism": classmethod(mechanism)})
    try:
        register_accountant(name, cls)
    except ValueError:
        # the name is taken: replace it only if a dpbounds accountant holds it (a module
        # reloaded, a test run twice); Opacus's own accountants are never overwritten
        if not isinstance(create_accountant(name), DpboundsAccountant):
            raise
        register_accountant(name, cls, force=True)
    return cls
