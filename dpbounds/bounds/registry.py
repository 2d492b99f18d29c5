"""Names of the bounds (as used by the ``dpbounds bound`` / ``dpbounds compare`` commands).

Each :class:`Entry` ties a name to a theorem object (with its closed-form hyper-parameter
choices), the family it belongs to, how the shared problem description
``(d, N, eps, delta, G, L, R)`` maps to the theorem's own symbols, and which hyper-parameters
the numeric tuner may move (with their admissible ranges).

Example
-------
>>> from dpbounds.bounds.registry import get, names
>>> "tran_cutkosky.alg1" in names()
True
>>> e = get("tran_cutkosky.alg2")
>>> print(e.scaling())
d^(1/3) N^(-2/3) eps^(-2/3)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from dpbounds._validation import check_nonnegative, check_open_interval, check_positive
from dpbounds.bounds.convex import noisy_projected_sgd
from dpbounds.bounds.nonconvex import (
    clipped_sgd,
    generalized_smoothness,
    normalized_sgd,
    sensitivity_reduced,
    tree_momentum,
)
from dpbounds.bounds.theorem import Bound, Scaling, Tuned

__all__ = ["DEFAULT_PROBLEM", "Entry", "check_problem", "get", "names", "register"]

#: Defaults of the shared problem description (``dpbounds compare`` with no options).
DEFAULT_PROBLEM: dict[str, float] = {
    "d": 100.0, "N": 1e5, "eps": 1.0, "delta": 1e-5, "G": 1.0, "L": 1.0, "R": 1.0,
}


#: optional family-specific inputs: name -> smallest admissible value (inclusive for 0)
OPTIONAL_PROBLEM: dict[str, float] = {"tau0": 0.0, "L1": 0.0, "c2": 0.0, "diam": 0.0}


def check_problem(problem: Mapping[str, Any], *, prefix: str = "") -> dict[str, float]:
    """The shared problem with every value checked (ValueError naming ``prefix + key``).

    ``d, N, eps, G, L, R`` and ``tau0, c2, diam`` must be finite and > 0, ``delta`` in (0, 1),
    ``L1`` finite and >= 0; unknown keys pass through unchanged (a theorem may use them).
    """
    out = dict(problem)
    for k, v in problem.items():
        name = prefix + k
        if k == "delta":
            out[k] = float(check_open_interval(name, v, 0.0, 1.0))
        elif k == "L1":
            out[k] = float(check_nonnegative(name, v))
        elif k in DEFAULT_PROBLEM or k in OPTIONAL_PROBLEM:
            out[k] = float(check_positive(name, v))
    return out


@functools.lru_cache(maxsize=64)
def _c2(eps: float, delta: float) -> float:
    """Lemma 3.1 constant fitted with the without-replacement RDP accountant (replace-one).

    Fitted at q = 0.01, T = 10^4 (100 epochs); cached per (eps, delta).
    """
    return generalized_smoothness.lemma31_constant(eps, delta, sampling_rate=0.01, steps=10_000)


def _yang_map(p: Mapping[str, float]) -> dict[str, float]:
    # TC's setting maps to Yang's: ||grad f(x;z)|| <= G gives tau0 = 2G, L0 = L, D_f = R.
    out = {"d": p["d"], "N": p["N"], "eps": p["eps"], "delta": p["delta"],
           "L0": p.get("L0", p["L"]), "L1": p.get("L1", 0.0), "D_f": p.get("D_f", p["R"]),
           "tau0": p.get("tau0", 2.0 * p["G"])}
    out["c2"] = p["c2"] if "c2" in p else _c2(float(p["eps"]), float(p["delta"]))
    return out


@dataclass(frozen=True)
class Entry:
    """A registered bound.

    Attributes
    ----------
    name:
        Registry key, e.g. ``"tran_cutkosky.alg1"``.
    title:
        One line for tables.
    family:
        ``"non-convex"`` or ``"convex"``.
    theorem:
        The bound with its free hyper-parameters (and closed-form choices).
    tuned:
        The bound with the closed-form choices substituted.
    to_params:
        Maps the shared problem dictionary to the theorem's symbols.
    tunable:
        Hyper-parameter name -> (low, high) for the numeric tuner (callables of the problem
        parameters allowed for problem-dependent ranges).
    gradient_count:
        Optional bound whose value is the number of gradient evaluations.
    notes:
        Shown under tables.
    problem_names:
        Theorem symbol -> the problem quantity it comes from, where they differ (Yang et al.'s
        ``tau0`` is ``2 G``; the ERM bound's Lipschitz ``L`` is the problem's ``G``); used to
        say which inputs make an assumption fail.
    """

    name: str
    title: str
    family: str
    theorem: Bound
    tuned: Bound
    to_params: Callable[[Mapping[str, float]], dict[str, float]]
    tunable: Mapping[str, Any] = field(default_factory=dict)
    gradient_count: Bound | None = None
    notes: str = ""
    scaling_variables: tuple[str, ...] = ("d", "N", "eps")
    scaling_bound: Bound | None = None
    scaling_label: str = ""
    problem_names: Mapping[str, str] = field(default_factory=dict)

    def params(self, problem: Mapping[str, float] | None = None, **overrides: float) -> dict:
        """The theorem's parameters for a problem (defaults: :data:`DEFAULT_PROBLEM`)."""
        p = dict(DEFAULT_PROBLEM)
        p.update(problem or {})
        p.update(overrides)
        return self.to_params(p)

    def value(self, problem: Mapping[str, float] | None = None, *, invalid: str = "raise",
              **overrides: Any) -> Any:
        """The bound at the closed-form hyper-parameter choice (broadcasts arrays).

        ``invalid="nan"`` returns NaN where an assumption fails (e.g. fewer than one epoch);
        with ``"raise"`` the ValueError names the assumption in words and the problem inputs
        it involves.
        """
        try:
            return self.tuned.evaluate(ignore_extra=True, invalid=invalid,
                                       **self.params(problem, **overrides))
        except ValueError as exc:
            p = dict(DEFAULT_PROBLEM)
            p.update(problem or {})
            p.update(overrides)
            for a in self.tuned.assumptions:  # say which one in words, not as an expression
                if f"assumption violated: {a.text}" in str(exc):
                    raise ValueError(f"{self.name} does not apply to this problem: "
                                     f"{self._failed(a, p)}") from None
            raise

    def applicability(self, problem: Mapping[str, float] | None = None,
                      **overrides: float) -> str | None:
        """``None`` when every stated assumption of the bound holds at the problem, otherwise
        why not, in the problem's own terms (the assumption in words and the inputs it involves;
        no internal expressions)."""
        p = dict(DEFAULT_PROBLEM)
        p.update(problem or {})
        p.update(overrides)
        params = self.to_params(p)
        for a in self.tuned.assumptions:
            rel = a.relation
            if rel is None or rel is sp.true:
                continue
            names = sorted(str(x) for x in rel.free_symbols)
            if rel is not sp.false:
                if not all(k in params for k in names):
                    continue
                try:
                    holds = rel.subs({x: float(params[str(x)]) for x in rel.free_symbols})
                except TypeError:  # not a real comparison here (e.g. log of N < 1): fails
                    holds = sp.false
                if holds is not sp.false:  # true, or undecidable (then the value check decides)
                    continue
            return self._failed(a, p)
        return None

    def _failed(self, assumption: Any, problem: Mapping[str, float]) -> str:
        """'assumption ... fails at <the problem inputs it involves>' (no internal expressions)."""
        rel = assumption.relation
        names = [str(x) for x in rel.free_symbols] if isinstance(rel, sp.Basic) else []
        keys = sorted({self.problem_names.get(k, k) for k in names}, key=str.lower)
        where = ", ".join(f"{k}={problem[k]:g}" for k in keys if k in problem)
        return f"assumption '{assumption.text}' fails" + (f" at {where}" if where else "")

    def hyperparameters(self, problem: Mapping[str, float] | None = None,
                        **overrides: float) -> dict[str, float]:
        """The closed-form hyper-parameter choices at a problem."""
        vals = self.theorem.evaluate_hyperparameters(**self.params(problem, **overrides))
        return {k: float(v) for k, v in vals.items()}

    def optimize(self, problem: Mapping[str, float] | None = None,
                 **overrides: float) -> Tuned:
        """Numerically tuned hyper-parameters (log-space, from the closed-form choice).

        Every range is widened to contain the closed-form choice (so the tuned bound is never
        worse than it: e.g. ``E`` beyond 1e12 epochs at N = 1e16) and clipped to
        ``[1e-300, 1e300]``: the search runs in log-space and an unbounded step (``exp(800)``)
        would overflow instead of being rejected.
        """
        p = self.params(problem, **overrides)
        closed = self.theorem.evaluate_hyperparameters(**p) if self.theorem.hyperparameters else {}
        bounds = {}
        for k, v in self.tunable.items():
            lo, hi = v(p) if callable(v) else v
            if k in closed:  # the closed-form choice satisfies the theorem: always admissible
                lo, hi = min(lo, float(closed[k])), max(hi, float(closed[k]))
            bounds[k] = (min(max(lo, _TUNE_LIMIT[0]), _TUNE_LIMIT[1]),
                         max(min(hi, _TUNE_LIMIT[1]), _TUNE_LIMIT[0]))
        try:
            return self.theorem.optimize(list(self.tunable), bounds=bounds, **p)
        except OverflowError:
            raise ValueError(f"{self.name}: the numeric tuning found no finite value of the bound "
                             "at this problem") from None

    @staticmethod
    def _exponents(bound: Bound, variables: tuple[str, ...]) -> Scaling:
        cache = bound._cache
        key = ("scaling", variables)
        if key not in cache:
            cache[key] = bound.exponents(variables)
        return cache[key]

    def scaling(self) -> Scaling:
        """Leading-order scaling of the quantity the paper's headline rate is about (cached).

        That is the tuned bound, or ``scaling_bound`` where the headline describes one part of
        it (Yang et al.'s DP-NSGD: the decaying part at fixed ``r``, ``scaling_label``); the
        whole bound's scaling is :meth:`whole_scaling`.
        """
        return self._exponents(self.scaling_bound or self.tuned, self.scaling_variables)

    def whole_scaling(self) -> Scaling:
        """Leading-order scaling of the whole bound with the closed-form choices (cached)."""
        return self._exponents(self.tuned, self.scaling_variables)

    def scaling_text(self) -> str:
        """The scaling for tables, both parts named when :meth:`scaling` is of one part only.

        Both are computed by :meth:`~dpbounds.bounds.theorem.Bound.exponents`.
        """
        if self.scaling_bound is None:
            return str(self.scaling())
        hp = ", ".join(self.theorem.hyperparameters) or "closed-form choices"
        return (f"{self.scaling_label or 'part'}: {self.scaling()}; "
                f"whole bound with {hp} tuned to the problem: "
                f"{self.whole_scaling()}")

    def gradients(self, problem: Mapping[str, float] | None = None, *, invalid: str = "raise",
                  **overrides: Any) -> Any:
        """Gradient evaluations under the closed-form choice, if known (broadcasts arrays
        like :meth:`value`; a scalar problem gives a float)."""
        if self.gradient_count is None:
            return None
        out = self.gradient_count.evaluate(ignore_extra=True, invalid=invalid,
                                           **self.params(problem, **overrides))
        return float(out) if np.ndim(out) == 0 else out


#: the numeric tuner's range for every hyper-parameter (log-space, finite)
_TUNE_LIMIT = (1e-300, 1e300)

_REGISTRY: dict[str, Entry] = {}


def register(entry: Entry) -> None:
    """Add an entry (used by other bound modules, e.g. heavy ball / Nesterov)."""
    _REGISTRY[entry.name] = entry


def names(family: str | None = None) -> list[str]:
    """Registered names, optionally of one family."""
    return [k for k, e in _REGISTRY.items() if family is None or e.family == family]


def get(name: str) -> Entry:
    """The entry of ``name`` (ValueError listing the valid names otherwise)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown bound {name!r}; valid names: {names()}") from None


def _tc_params(p: Mapping[str, float]) -> dict[str, float]:
    return {k: p[k] for k in ("d", "N", "eps", "delta", "G", "L", "R")}


register(Entry(
    name="tran_cutkosky.alg1",
    title="Tran & Cutkosky Alg. 1 (tree-aggregated momentum NSGD), Thm 6",
    family="non-convex",
    theorem=tree_momentum.theorem6,
    tuned=tree_momentum.theorem6_tuned,
    to_params=_tc_params,
    tunable={"eta": (1e-300, math.inf), "E": (1.0, 1e12), "alpha": (1e-300, 1.0)},
    gradient_count=tree_momentum.gradient_count,
    notes="constants DERIVED by dpbounds; exponents d^(1/4)/sqrt(eps N) VERBATIM",
))

register(Entry(
    name="tran_cutkosky.alg2",
    title="Tran & Cutkosky Alg. 2 (sensitivity-reduced NSGD), Thm 9",
    family="non-convex",
    theorem=sensitivity_reduced.theorem9,
    tuned=sensitivity_reduced.theorem9_tuned,
    to_params=_tc_params,
    tunable={"eta": (1e-300, math.inf), "E": (1.0, 1e12), "gamma": (1e-300, 1.0)},
    gradient_count=sensitivity_reduced.gradient_count,
    notes="constants DERIVED by dpbounds; exponents d^(1/3)/(eps N)^(2/3) VERBATIM",
))

_YANG_NAMES = {"L0": "L", "D_f": "R"}

register(Entry(
    name="yang.nsgd",
    title="Yang et al. DP-NSGD, Cor 3.3 (T -> oo)",
    family="non-convex",
    theorem=normalized_sgd.nsgd_corollary,
    tuned=normalized_sgd.nsgd_corollary.tuned("normalized_sgd.nsgd_corollary (tuned r)"),
    to_params=_yang_map,
    tunable={"r": lambda p: (p["tau0"] * (1 + 1e-9), math.inf)},
    notes="tau0 = 2G, L0 = L, L1 = 0, D_f = R unless given; c2 fitted with the "
          "without-replacement RDP accountant; at fixed r the bound keeps the floor "
          "2 tau0^2/(r - tau0), so the paper's headline rate is that of the decaying part; "
          "r tuned to the problem trades the floor against it (DERIVED)",
    scaling_bound=normalized_sgd.nsgd_decaying,
    scaling_label="decaying part at fixed r",
    problem_names=_YANG_NAMES,
))

register(Entry(
    name="yang.sgd",
    title="Yang et al. DP-SGD (clipping), Cor 3.5 (T -> oo)",
    family="non-convex",
    theorem=clipped_sgd.sgd_corollary,
    tuned=clipped_sgd.sgd_corollary.tuned("clipped_sgd.sgd_corollary (C = 3 tau0)"),
    to_params=_yang_map,
    tunable={"C": lambda p: (3 * p["tau0"], math.inf)},
    notes="tau0 = 2G, L0 = L, L1 = 0, D_f = R unless given; c2 fitted with the "
          "without-replacement RDP accountant",
    problem_names=_YANG_NAMES,
))


def _erm_params(p: Mapping[str, float]) -> dict[str, float]:
    return {"d": p["d"], "n": p.get("n", p["N"]), "eps": p["eps"], "delta": p["delta"],
            "L": p["G"], "diam": p.get("diam", p["R"])}


register(Entry(
    name="kamath.bst14",
    title="Kamath lecture / BST14 noisy projected SGD (average loss)",
    family="convex",
    theorem=noisy_projected_sgd.bst14_excess_risk_average,
    tuned=noisy_projected_sgd.bst14_excess_risk_average,
    to_params=_erm_params,
    notes="Lipschitz constant L := G, diameter := R unless given; T = n^2 (VERBATIM)",
    scaling_variables=("d", "n", "eps"),
    problem_names={"n": "N", "L": "G"},
))
