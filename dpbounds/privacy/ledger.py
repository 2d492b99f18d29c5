"""A privacy ledger: what an algorithm spent, reported by any accountant.

Examples
--------
>>> from dpbounds.privacy.ledger import PrivacyLedger
>>> from dpbounds.privacy.mechanisms import GaussianMechanism, PureDpMechanism
>>> ledger = PrivacyLedger()
>>> ledger.record(GaussianMechanism(sigma=20.0), count=50)
>>> ledger.record(PureDpMechanism(epsilon=0.01), count=50)   # e.g. NoisyMax
>>> round(ledger.epsilon(1e-6, accountant="zcdp"), 4)
1.9603
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from dpbounds._validation import MAX_COUNT, check_int, check_probability, holds_text
from dpbounds.privacy.accountants import (
    ACCOUNTANTS,
    Accountant,
    UnsupportedMechanismError,
    make_accountant,
)
from dpbounds.privacy.mechanisms import Mechanism, Neighbouring, mechanism_from_dict

__all__ = ["LedgerReport", "PrivacyLedger"]


def _grid(name: str, value: Any) -> np.ndarray:
    """``value`` as a flat float array; ``ValueError`` naming ``name`` for text (``"1"`` was
    read as 1.0: fuzz round 17), a bool, ``None`` or anything else that is not numbers."""
    if value is None or isinstance(value, str | bytes | bool) or holds_text(value):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        return np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number or an array of numbers, got "
                         f"{value!r}") from None


class LedgerReport(dict[str, "float | None"]):
    """ε by accountant name (a plain ``dict``), with :attr:`reasons` for each ``None``.

    ``reasons[name]`` says why that accountant gave no ε (the mechanism it cannot take, a
    replace-one mechanism in an add/remove ledger, a composition the PLD grid cannot
    represent); the ``repr`` shows them, so a report of ``None`` everywhere explains itself
    in a notebook (walkthrough of stop 78: ``PrivacyLedger()`` defaults to add/remove and its
    report was ``None`` for every accountant on replace-one mechanisms, without a word).
    """

    def __init__(self, values: dict[str, float | None], reasons: dict[str, str]) -> None:
        super().__init__(values)
        self.reasons: dict[str, str] = dict(reasons)

    def __repr__(self) -> str:
        body = dict.__repr__(self)
        if not self.reasons:
            return body
        # one line per distinct cause; the mechanism's repr (the same in each) is left to
        # .reasons, which keeps every accountant's full message
        groups: dict[str, list[str]] = {}
        for name, text in self.reasons.items():
            groups.setdefault(_cause(text), []).append(name)
        why = "\n".join(f"#   {', '.join(names)}: {cause}" for cause, names in groups.items())
        return f"{body}\n# None (full messages in .reasons):\n{why}"


#: Smallest FPR at which :meth:`PrivacyLedger.gdp` fits its mu.
GDP_MIN_FPR = 1e-10


def _reason(err: Exception, neighbouring: Neighbouring) -> str:
    """One line on why an accountant gave no ε: its error's words, with the ledger's relation
    named where a replace-one mechanism sits in an add/remove ledger (the usual cause)."""
    text = " ".join(str(err).split())
    if "account under replace_one" in text and neighbouring is Neighbouring.ADD_REMOVE:
        text = (f"{text} (this ledger is add/remove, the default: "
                f"PrivacyLedger('replace_one') accounts replace-one mechanisms)")
    return text


def _cause(text: str) -> str:
    """``text`` less its leading "X accountant (...) does not support Mechanism(...): "."""
    head = text.find(" does not support ")
    if head < 0:
        return text
    depth, i = 0, head
    for i in range(head, len(text)):  # skip the mechanism's repr, parentheses balanced
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0 and text[i] == ")":
            break
    rest = text[i + 1:].lstrip(": ")
    return rest or text


def _rows(items: Any, name: str, width: int, whole: str, each: str) -> Any:
    """``(i, item)`` of ``items``, a list of ``width``-long lists or tuples (a ValueError
    naming ``name`` and the form expected otherwise)."""
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{name} must be {whole}, got {items!r}")
    for i, item in enumerate(items):
        if not isinstance(item, (list, tuple)) or len(item) != width:
            raise ValueError(f"{name}[{i}] must be {each}, got {item!r}")
        yield i, item


class PrivacyLedger:
    """Records ``(mechanism, count)`` pairs and reports (ε, δ) through a chosen accountant.

    Parameters
    ----------
    neighbouring : 'add_remove' or 'replace_one'
        Relation of the reported guarantees (passed to accountants built by name).
    """

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE,
                 entries: Any = ()) -> None:
        self.neighbouring = Neighbouring.coerce(neighbouring)
        self._entries: list[tuple[Mechanism, int]] = []
        self._frozen = False
        for mechanism, count in entries:
            self.record(mechanism, count)

    def freeze(self) -> PrivacyLedger:
        """Refuse further :meth:`record` calls (a finished run's ledger); returns ``self``."""
        self._frozen = True
        return self

    def copy(self) -> PrivacyLedger:
        """An unfrozen copy with the same entries."""
        return PrivacyLedger(self.neighbouring, self._entries)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``json.dumps`` it); :meth:`from_dict` reads it back."""
        return {"neighbouring": self.neighbouring.value,
                "entries": [[m.to_dict(), int(n)] for m, n in self._entries]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or "entries" not in data:
            raise ValueError(f"data must be a PrivacyLedger.to_dict(), got {data!r}")
        out = []
        for i, pair in _rows(data["entries"], "entries", 2, "a list of [mechanism, count] pairs",
                             "a [mechanism, count] pair"):
            # the count as record() checks it: int() truncated 3.99 runs to 3 and 0.9 to
            # none at all (epsilon under-reported; fuzz round 9)
            out.append((mechanism_from_dict(pair[0]),
                        check_int(f"entries[{i}] count", pair[1], minimum=0,
                                  maximum=MAX_COUNT)))  # 0 as record() takes it
        return cls(data.get("neighbouring", Neighbouring.ADD_REMOVE), out)

    @classmethod
    def from_opacus(cls, history: Any) -> PrivacyLedger:
        r"""The ledger of an Opacus accountant's history (add/remove).

        ``history`` is an Opacus accountant (its ``.history``), its ``state_dict()`` or the
        list itself: ``(noise_multiplier, sample_rate, num_steps)`` triples, as Opacus's RDP,
        GDP and PRV accountants keep them. Each becomes ``num_steps`` runs of a Poisson
        subsampled Gaussian, ``SubsampledGaussianMechanism(noise_multiplier, sample_rate)``
        with sensitivity 1 and ``per_example_sum=True`` (DERIVED from Opacus's
        ``DPOptimizer``: it adds :math:`N(0, (zC)^2)` to a sum of per-sample gradients clipped
        to :math:`C` — an add/remove sensitivity :math:`C` — and its accountants assume
        Poisson sampling at ``sample_rate``, as this conversion does).

        ``ValueError`` for what cannot be accounted: a noise multiplier that is not a finite
        number > 0 (0 is no privacy), a sample rate outside (0, 1], a step count that is not
        an integer >= 1, or an entry that is not such a triple.
        """
        from dpbounds.privacy.mechanisms import Sampling, SubsampledGaussianMechanism

        if hasattr(history, "history"):
            history = history.history
        elif isinstance(history, dict):
            if "history" not in history:
                raise ValueError("history: a state_dict must have the key 'history'")
            history = history["history"]
        entries = []
        for i, item in _rows(history, "history", 3,
                             "a list of (noise_multiplier, sample_rate, num_steps)",
                             "(noise_multiplier, sample_rate, num_steps)"):
            z, q, steps = item
            if any(isinstance(v, (bool, str, bytes)) or type(v).__name__ == "bool_"
                   for v in (z, q)):  # true and "1" were read as 1.0
                raise ValueError(f"history[{i}]: noise_multiplier and sample_rate must be "
                                 f"numbers, got {item!r}")
            try:
                z, q = float(z), float(q)
            except (TypeError, ValueError):
                raise ValueError(f"history[{i}]: noise_multiplier and sample_rate must be "
                                 f"numbers, got {item!r}") from None
            if not (z > 0 and z < float("inf")):
                raise ValueError(f"history[{i}]: noise_multiplier must be a finite number > 0 "
                                 f"(0 is no privacy), got {z!r}")
            if not 0 < q <= 1:
                raise ValueError(f"history[{i}]: sample_rate must lie in (0, 1], got {q!r}")
            steps = check_int(f"history[{i}] num_steps", steps, minimum=1, maximum=MAX_COUNT)
            entries.append((SubsampledGaussianMechanism(
                z, q, 1.0, Sampling.POISSON, Neighbouring.ADD_REMOVE, per_example_sum=True),
                steps))
        return cls(Neighbouring.ADD_REMOVE, entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyLedger):
            return NotImplemented
        return self.neighbouring is other.neighbouring and self._entries == other._entries

    __hash__ = None  # type: ignore[assignment]  # mutable

    @property
    def entries(self) -> tuple[tuple[Mechanism, int], ...]:
        """What was spent, in order."""
        return tuple(self._entries)

    def record(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of ``mechanism`` (at most ``MAX_COUNT`` = 10^15 per entry)."""
        if self._frozen:
            raise ValueError("this ledger is frozen (a finished run's record); copy() it first")
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a Mechanism, got {mechanism!r}")
        count = check_int("count", count, minimum=0, maximum=MAX_COUNT)
        if count:
            if self._entries and self._entries[-1][0] == mechanism:
                last, n = self._entries[-1]
                check_int("count", n + count, maximum=MAX_COUNT)  # the merged entry too
                self._entries[-1] = (last, n + count)
            else:
                self._entries.append((mechanism, count))

    def accountant(self, accountant: Any = "rdp", **options: Any) -> Accountant:
        """A fresh accountant (name, instance or factory) with every entry composed."""
        if isinstance(accountant, str):
            acc = make_accountant(accountant, self.neighbouring, **options)
        else:
            acc = make_accountant(accountant)
        for mechanism, count in self._entries:
            acc.compose(mechanism, count)
        return acc

    def epsilon(self, delta: float | None, accountant: Any = "rdp", **options: Any) -> float:
        """ε spent so far at ``delta`` (``delta`` is ignored by the pure-DP accountant)."""
        acc = self.accountant(accountant, **options)
        return acc.get_epsilon(delta) if acc.name != "pure" else acc.get_epsilon(None)

    def delta(self, epsilon: float, accountant: Any = "rdp", **options: Any) -> float:
        """δ spent so far at ``epsilon``."""
        return self.accountant(accountant, **options).get_delta(epsilon)

    def _pld_pair(self, **options: Any) -> tuple[Accountant, Accountant]:
        """(pessimistic, optimistic) PLD accountants with every entry composed."""
        options.pop("pessimistic", None)
        return (self.accountant("pld", pessimistic=True, **options),
                self.accountant("pld", pessimistic=False, **options))

    def delta_curve(self, eps_grid: Any, **options: Any) -> dict[str, Any]:
        r""":math:`\delta(\varepsilon)` on ``eps_grid`` from the PLD accountant, bracketed.

        Returns ``{"epsilon": grid, "pessimistic": upper, "optimistic": lower}`` (float
        arrays): ``pessimistic`` is the guarantee (dp_accounting's pessimistic
        discretisation, an upper bound on the exact profile), ``optimistic`` its optimistic
        twin (a lower bound on the exact profile of the discretised mechanisms); the Gaussian
        parts are computed alike in both (within ~1e-9 of themselves of the exact profile,
        either side: the optimistic end is not a lower bound to better than that). ``options``
        go to the PLD accountant.
        """
        grid = _grid("eps_grid", eps_grid)
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
            raise ValueError(f"eps_grid must hold finite epsilons >= 0, got {eps_grid!r}")
        hi, lo = self._pld_pair(**options)
        upper = np.array([hi.get_delta(float(e)) for e in grid])
        lower = np.array([lo.get_delta(float(e)) for e in grid])
        return {"epsilon": grid, "pessimistic": upper, "optimistic": np.minimum(lower, upper)}

    def epsilon_curve(self, delta_grid: Any, **options: Any) -> dict[str, Any]:
        r""":math:`\varepsilon(\delta)` on ``delta_grid`` from the PLD accountant, bracketed
        as :meth:`delta_curve` (``{"delta", "pessimistic", "optimistic"}``)."""
        grid = _grid("delta_grid", delta_grid)
        if grid.size == 0 or not np.all((grid > 0) & (grid < 1)):
            raise ValueError(f"delta_grid must hold deltas in (0, 1), got {delta_grid!r}")
        hi, lo = self._pld_pair(**options)
        upper = np.array([hi.get_epsilon(float(d)) for d in grid])
        lower = np.array([lo.get_epsilon(float(d)) for d in grid])
        return {"delta": grid, "pessimistic": upper, "optimistic": np.minimum(lower, upper)}

    def tradeoff(self, fpr_grid: Any, **options: Any) -> dict[str, Any]:
        r"""The best membership attack's TPR at each FPR of ``fpr_grid``, from the PLD pair,
        bracketed, in both directions.

        DERIVED (Neyman-Pearson; the duality of Dong, Roth & Su 2022, Prop. 2.12): the TPR at
        FPR :math:`\alpha` is :math:`\min_{\varepsilon\in\mathbb R}e^\varepsilon\alpha +
        \delta(\varepsilon)` with the hockey-stick divergence at every real
        :math:`\varepsilon`, i.e. the concave curve through the likelihood-ratio tests'
        (FPR, TPR) points of the discretised PLD (:func:`~dpbounds.privacy._pld.tradeoff_tpr`).

        Returns ``{"fpr", "pessimistic", "optimistic", "fnr_pessimistic", "fnr_optimistic",
        "remove": {...}, "add": {...}}``: ``pessimistic`` is an upper bound on the TPR (the
        guarantee: no attack does better), from the pessimistic discretisation; ``optimistic``
        a lower bound on the exact curve of these mechanisms (optimistic discretisation); the
        top-level values are the worse of the two directions (``remove``: the attack that
        tells D from D minus a record, ``add`` the other way; equal for symmetric
        mechanisms), ``fnr_*`` one minus them (the trade-off function :math:`f(\alpha)`).
        ``options`` go to the PLD accountant.
        """
        grid = _grid("fpr_grid", fpr_grid)
        if grid.size == 0 or not np.all((grid >= 0) & (grid <= 1)):
            raise ValueError(f"fpr_grid must hold false-positive rates in [0, 1], got "
                             f"{fpr_grid!r}")
        hi, lo = self._pld_pair(**options)
        hi_r, hi_a = hi.tradeoff(grid)  # type: ignore[attr-defined]
        lo_r, lo_a = lo.tradeoff(grid)  # type: ignore[attr-defined]
        pess = np.maximum(hi_r, hi_a)
        opt = np.minimum(np.maximum(lo_r, lo_a), pess)
        return {"fpr": grid, "pessimistic": pess, "optimistic": opt,
                "fnr_pessimistic": 1.0 - pess, "fnr_optimistic": 1.0 - opt,
                "remove": {"pessimistic": hi_r, "optimistic": np.minimum(lo_r, hi_r)},
                "add": {"pessimistic": hi_a, "optimistic": np.minimum(lo_a, hi_a)}}

    def gdp(self, min_fpr: float = GDP_MIN_FPR, **options: Any) -> dict[str, float]:
        r"""The smallest :math:`\mu` whose Gaussian trade-off curve lies above the ledger's
        attack curve (pessimistic, worse direction), and its regret.

        :math:`\mu`-GDP means TPR :math:`\le\Phi(\Phi^{-1}(\alpha)+\mu)` at every FPR
        :math:`\alpha` (Dong, Roth & Su 2022, Def. 2.7). The ledger's curve is piecewise
        linear (:meth:`tradeoff`) and the GDP curve concave, so it suffices to hold at the
        vertices: :math:`\mu = \max_j \Phi^{-1}(\beta_j) - \Phi^{-1}(\alpha_j)` over the
        vertices with FPR and FNR at least ``min_fpr`` (beyond, the PLD's truncation masses,
        ~1e-15, and its grid would dominate the normal quantiles; DERIVED). ``regret`` is the
        largest excess TPR the GDP summary grants an attack over the ledger's curve (on those
        vertices and a grid of 400 FPRs): how much the single number overstates.

        Where the ledger's attack reaches an FNR below ``min_fpr`` at an FPR whose
        resolution limit :math:`\Phi^{-1}(1-\texttt{min\_fpr})-\Phi^{-1}(\alpha)` is not
        below that :math:`\mu` (a composition beyond :math:`\mu\approx12.7` at the default
        1e-10), the true :math:`\mu` is not resolved and ``mu`` is ``inf``.

        Returns ``{"mu", "regret", "regret_fpr", "min_fpr"}``.
        """
        from scipy import stats

        from dpbounds.privacy import _pld

        min_fpr = float(min_fpr)
        if not 0.0 < min_fpr < 0.5:
            raise ValueError(f"min_fpr must lie in (0, 0.5), got {min_fpr!r}")
        hi, _ = self._pld_pair(**options)
        pair = hi._composed_pld()  # type: ignore[attr-defined]
        mu = 0.0
        grid = np.concatenate((np.geomspace(min_fpr, 0.5, 200), 1.0 - np.geomspace(0.5, min_fpr,
                                                                                   200)))
        points = [grid]
        for pmf in pair:
            alpha, beta = _pld.tradeoff_vertices(pmf)
            keep = (alpha >= min_fpr) & (beta <= 1.0 - min_fpr)
            if np.any(keep):
                mu = max(mu, float(np.max(stats.norm.ppf(beta[keep])
                                          - stats.norm.ppf(alpha[keep]))))
            points.append(alpha[keep])
        fpr = np.unique(np.concatenate(points))
        ledger_tpr = np.maximum(*(_pld.tradeoff_tpr(pmf, fpr) for pmf in pair))
        beyond = ledger_tpr > 1.0 - min_fpr  # FNR below the resolution there
        if np.any(beyond):
            # at those FPRs mu must reach at least ppf(1 - min_fpr) - ppf(FPR); where that
            # resolution limit is not below the vertices' mu, the true mu is not resolved:
            # mu stayed 0, "perfect privacy", for a ledger of eps 162, when no vertex
            # qualified (fuzz round 15). Unresolved is reported as inf, never as a number
            # that may understate it
            limit = float(np.max(stats.norm.ppf(1.0 - min_fpr) - stats.norm.ppf(fpr[beyond])))
            if limit >= mu:
                mu = float("inf")
        gap = stats.norm.cdf(stats.norm.ppf(fpr) + mu) - ledger_tpr
        k = int(np.argmax(gap))
        return {"mu": mu, "regret": float(max(gap[k], 0.0)), "regret_fpr": float(fpr[k]),
                "min_fpr": min_fpr}

    def report(self, delta: float, accountants: Any = tuple(ACCOUNTANTS)) -> LedgerReport:
        """ε under each accountant by name; ``None`` where it does not support an entry (or
        cannot represent the composition, e.g. the PLD grid); never raises for that. A
        ``delta`` outside [0, 1) or an unknown accountant is a ``ValueError`` (they read as
        ``None`` everywhere before); a single name is read as that name.

        Returns a :class:`LedgerReport`: a ``dict`` whose ``reasons`` attribute (and
        ``repr``) says why each ``None`` is one.

        Examples
        --------
        >>> from dpbounds.privacy.mechanisms import GaussianMechanism
        >>> ledger = PrivacyLedger()          # add/remove, the default
        >>> ledger.record(GaussianMechanism(sigma=4.0, neighbouring="replace_one"))
        >>> report = ledger.report(1e-5, ["rdp"])
        >>> report["rdp"] is None, "replace-one" in report.reasons["rdp"]
        (True, True)
        """
        # None, a string ("1e-5") and a bool were read on (fuzz round 14: None gave a None per
        # accountant "delta must be finite"; "1e-5" was accepted)
        if isinstance(delta, numbers.Real) and not isinstance(delta, bool) and delta == 0:
            delta = 0.0  # a pure-DP target (the pure accountant reads it)
        else:
            try:
                if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
                    raise ValueError
                delta = check_probability("delta", delta)
            except ValueError:
                raise ValueError(f"delta must lie in [0, 1) (0: a pure-DP target), a number, "
                                 f"got {delta!r}") from None
        if isinstance(accountants, str):  # 'rdp' was walked letter by letter
            accountants = (accountants,)
        if accountants is None or not isinstance(accountants, Iterable):
            # report(1e-5, None) raised TypeError (fuzz round 14)
            raise ValueError(f"accountants must be a name or a list of some of "
                             f"{', '.join(ACCOUNTANTS)}, got {accountants!r}")
        accountants = tuple(accountants)
        unknown = [a for a in accountants if a not in ACCOUNTANTS]
        if unknown or not accountants:
            raise ValueError(f"accountants must name some of {', '.join(ACCOUNTANTS)}, got "
                             f"{unknown[0] if unknown else accountants!r}")
        out: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        for name in accountants:
            try:
                out[name] = float(self.epsilon(delta, name))
            except (UnsupportedMechanismError, ValueError) as err:
                out[name] = None
                reasons[name] = _reason(err, self.neighbouring)
        return LedgerReport(out, reasons)

    def __len__(self) -> int:
        return sum(n for _, n in self._entries)

    def __repr__(self) -> str:
        return f"PrivacyLedger(neighbouring={self.neighbouring.value!r}, " \
               f"entries={len(self._entries)}, runs={len(self)})"
