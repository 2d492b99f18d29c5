"""Registered bounds: ids, aliases, problem classes (used by ``dpbounds bound`` / ``compare``).

Each :class:`Entry` ties an id to a theorem object (a sympy
:class:`~dpbounds.bounds.theorem.Bound` with its closed-form hyper-parameter choices, or a
:class:`~dpbounds.bounds.numeric.NumericBound` where the result is computed), the problem class
it is stated for, the problem keys it needs, how the shared problem description
(:mod:`dpbounds.bounds.problem`) maps to the theorem's own symbols, and which hyper-parameters
the numeric tuner may move.

**No central list.** Every bound module registers its own entries (``register(Entry(...))`` at
its end); :func:`discover` imports every module of the :mod:`dpbounds.bounds` package
(``pkgutil``), and the few :data:`PROVIDERS` of a higher layer, the first time the registry is
listed: the walk of :class:`dpbounds._discovery.Registry` (:data:`BOUND_REGISTRY`), the same as
the verify studies' and the audit settings'. Adding a bound is adding a module. A lookup by
name (:func:`get`) stops at the module that registers the name.

**Ids by concept.** An id is ``<problem class>.<method>`` (``nonconvex.tree_momentum_nsgd``,
``strongly_convex.nag`` ...); the paper is in the entry's sources. The ids of dpbounds 0.1
(``tran_cutkosky.alg1``, ``yang.nsgd``, ``kamath.bst14`` ...) are aliases: :func:`get`, the
CLI and :func:`~dpbounds.bounds.compare.compare` accept them.

Example
-------
>>> from dpbounds.bounds.registry import get, names
>>> "nonconvex.sensitivity_reduced_nsgd" in names()
True
>>> e = get("tran_cutkosky.alg2")  # an alias
>>> e.name, e.kind
('nonconvex.sensitivity_reduced_nsgd', 'symbolic')
>>> print(e.scaling())
d^(1/3) N^(-2/3) eps^(-2/3)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import sympy as sp

from dpbounds._discovery import Registry, unknown_name
from dpbounds.bounds.numeric import NumericBound
from dpbounds.bounds.problem import (
    CLASSES,
    DEFAULT_PROBLEM,
    OPTIONAL_PROBLEM,
    check_problem,
    describe_key,
)
from dpbounds.bounds.theorem import Bound, Scaling, Tuned

__all__ = ["DEFAULT_PROBLEM", "Entry", "aliases", "canonical_class", "check_problem", "entries",
           "get", "names", "register"]

#: Each problem class in words, with the quantity its bounds bound.
CLASS_WORDS: dict[str, str] = {
    "nonconvex": "smooth non-convex",
    "convex": "convex (DP-ERM)",
    "strongly_convex": "smooth strongly convex",
    "quadratic": "strongly convex quadratic",
}
_QUANTITY_WORDS = {
    "nonconvex": "E||grad F|| (stationarity)",
    "convex": "the excess empirical risk",
    "strongly_convex": "E F(x_T) - F*",
    "quadratic": "E F(x_T) - F*",
}
#: how to state a problem of each class on the command line
_CLASS_HINT = {"nonconvex": "", "convex": "give --problem-class convex",
               "strongly_convex": "give the strong convexity --mu and the sensitivity "
                                  "--sensitivity",
               "quadratic": "give --problem-class quadratic, --mu and --sensitivity"}
#: dpbounds 0.1's family names, accepted wherever a class is asked for
_FAMILY_ALIASES = {"non-convex": "nonconvex", "strongly convex": "strongly_convex",
                   "strongly-convex": "strongly_convex"}


def canonical_class(name: str) -> str:
    """The canonical problem class of ``name`` (one of :data:`CLASSES`, or an accepted alias
    such as dpbounds 0.1's ``"non-convex"``).

    Raises
    ------
    ValueError
        If ``name`` is neither a class nor an alias (the message lists the classes).
    """
    c = _FAMILY_ALIASES.get(name, name)
    if c not in CLASSES:
        raise ValueError(f"unknown problem class {name!r}; valid: {', '.join(CLASSES)}")
    return c


def _check_given(given: Mapping[str, Any]) -> None:
    """A scalar ``delta`` the caller gave, in (0, 1) (``check_problem``'s words): the pure-DP
    strongly convex bounds, which do not read it, accepted ``delta = -1`` or ``2``, and
    output perturbation read it as "(0, inf)" (fuzz round 8). Only delta: the other keys are
    read by the bounds that take them, which say more (``R = 0``: "the start is the
    minimiser"). Arrays (vectorised evaluation) are left to the bound."""
    import warnings

    scalars = {k: v for k, v in given.items() if k == "delta"
               and isinstance(v, (int, float)) and not isinstance(v, bool)}
    if scalars:
        with warnings.catch_warnings():  # the no-privacy warning is the caller's to give
            warnings.simplefilter("ignore")
            check_problem(scalars)


@dataclass(frozen=True)
class Entry:
    """A registered bound.

    Attributes
    ----------
    name:
        Canonical id, ``<problem class>.<method>``, e.g. ``"nonconvex.tree_momentum_nsgd"`` (a
        bound for quadratics may be filed under ``strongly_convex.``).
    title:
        One line for tables (the method and the paper result).
    problem_class:
        The class the bound is stated for (:data:`dpbounds.bounds.problem.CLASSES`); it applies
        to every problem of that class or a more specific one.
    theorem:
        The bound with its free hyper-parameters (and closed-form choices), or a
        :class:`~dpbounds.bounds.numeric.NumericBound`.
    tuned:
        The bound with the closed-form choices substituted (the same object for a numeric one).
    to_params:
        Maps the shared problem dictionary to the theorem's symbols (lives next to the
        theorem, in the module that registers the entry).
    aliases:
        Other ids that resolve to this entry (dpbounds 0.1's ids).
    requires:
        Optional problem keys the bound needs (e.g. ``("mu", "S1")``); without them it does
        not apply and the reason names the flags.
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
    crossovers:
        Whether :func:`~dpbounds.bounds.compare.crossover` scans this bound (off for
        expensive numeric bounds).
    algorithm, figure, test:
        Where the algorithm that runs it, the figure that draws it and its test live (for the
        results table of the docs).
    """

    name: str
    title: str
    problem_class: str
    theorem: Bound | NumericBound
    tuned: Bound | NumericBound
    to_params: Callable[[Mapping[str, float]], dict[str, float]]
    aliases: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    tunable: Mapping[str, Any] = field(default_factory=dict)
    gradient_count: Bound | None = None
    notes: str = ""
    scaling_variables: tuple[str, ...] = ("d", "N", "eps")
    scaling_bound: Bound | None = None
    scaling_label: str = ""
    problem_names: Mapping[str, str] = field(default_factory=dict)
    crossovers: bool = True
    algorithm: str = ""
    figure: str = ""
    test: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "problem_class", canonical_class(self.problem_class))
        prefixes = {self.problem_class} | ({"strongly_convex"}
                                           if self.problem_class == "quadratic" else set())
        if "." not in self.name or self.name.split(".", 1)[0] not in prefixes:
            raise ValueError(f"registry id {self.name!r} must start with its problem class "
                             f"{self.problem_class!r} and a dot")
        for k in self.requires:
            if k not in OPTIONAL_PROBLEM:
                raise ValueError(f"{self.name}: required key {k!r} is not a problem key "
                                 f"({sorted(OPTIONAL_PROBLEM)})")
        # a registered bound bounds an error (>= 0): a provably negative expression is refused
        # here, and a negative value is outside its range when evaluated (a plug-in's
        # -sqrt(d) T / (N eps) won `compare` at -10 and tuned to -100)
        for th in {id(b): b for b in (self.theorem, self.tuned)}.values():
            if isinstance(th, Bound):
                if th.expr.is_nonnegative is False:
                    raise ValueError(f"bound {self.name!r}: its expression is negative, but it "
                                     f"bounds an error, which is >= 0: {sp.sstr(th.expr)}")
                object.__setattr__(th, "nonnegative", True)

    # ------------------------------------------------------------------ description
    @property
    def family(self) -> str:
        """dpbounds 0.1's family name (``"non-convex"``, ``"convex"``, ...)."""
        return {"nonconvex": "non-convex"}.get(self.problem_class,
                                               self.problem_class.replace("_", " "))

    @property
    def numeric(self) -> bool:
        """Whether the bound is computed (recursion, search, LMI) rather than a sympy form."""
        return isinstance(self.tuned, NumericBound)

    @property
    def kind(self) -> str:
        """``"symbolic"`` or ``"numeric: <method>"``."""
        return f"numeric: {cast(NumericBound, self.tuned).method}" if self.numeric else "symbolic"

    @property
    def quantity_words(self) -> str:
        """What the bound bounds, in words."""
        return _QUANTITY_WORDS[self.problem_class]

    def _problem(self, problem: Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> dict:
        p = dict(DEFAULT_PROBLEM)
        p.update(problem or {})
        p.update(overrides)
        for key, v in p.items():  # a NaN was read on as another parameter's failure:
            # S1 = nan said "epsilon=1.0 is too small", G = nan "L must be finite" (fuzz 8)
            if isinstance(v, float) and math.isnan(v) or (
                    isinstance(v, np.ndarray) and v.dtype.kind == "f" and np.isnan(v).any()):
                raise ValueError(f"{key} must be a number, got nan")
        _check_given({**(problem or {}), **overrides})
        return p

    def params(self, problem: Mapping[str, float] | None = None, **overrides: float) -> dict:
        """The theorem's parameters for a problem (defaults: :data:`DEFAULT_PROBLEM`)."""
        p = self._problem(problem, overrides)
        missing = self.mismatch(p)
        if missing:
            raise ValueError(f"{self.name} does not apply to this problem: {missing}")
        return self.to_params(p)

    def unread(self, problem: Mapping[str, Any] | None, keys: Sequence[str]) -> list[str]:
        """The problem keys among ``keys`` that this bound's parameters do not read: moved to
        another valid value, :attr:`to_params` returns the same parameters. A key whose move
        changes them, or fails (a value the bound checks), is read. Cheap (``to_params``
        only); the CLI refuses a typed flag this returns (``--m`` was ignored by the
        non-convex bounds and a plug-in's theorem without a word)."""
        p = self._problem(problem, {})
        try:
            base = self.to_params(p)
        except Exception:  # noqa: BLE001 -- the evaluation says why, in its own words
            return []
        out = []
        for k in keys:
            v = p.get(k)
            if k == "problem_class" or not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            if k in ("N", "d", "m", "max_horizon"):  # integers
                moved: float = int(v) // 2 if v >= 2 else int(v) + 1
            else:
                moved = 0.5 * float(v) if v != 0 else 1.0
            try:
                alt = self.to_params(dict(p, **{k: moved}))
            except Exception:  # noqa: BLE001 -- refused at the moved value: the key is read
                continue
            if _same_params(alt, base):
                out.append(k)
        return out

    # ------------------------------------------------------------------ applicability
    def mismatch(self, p: Mapping[str, Any], given: str | None = None) -> str | None:
        """Why the problem's class or keys do not fit this bound (None when they do).

        The class is checked against ``given`` or the problem's stated ``problem_class``; a
        problem that states none is taken to be of the bound's class (asking for one bound by
        name says so), but must have the keys it requires.
        """
        given = given or p.get("problem_class")
        if given is not None and CLASSES.index(given) < CLASSES.index(self.problem_class):
            hint = _CLASS_HINT[self.problem_class]
            return (f"a bound for {CLASS_WORDS[self.problem_class]} problems; this problem is "
                    f"{CLASS_WORDS[given]} ({hint})")
        absent = [k for k in self.requires if p.get(k) is None]
        if absent:
            return "needs " + " and ".join(describe_key(k) for k in absent)
        return None

    def value(self, problem: Mapping[str, Any] | None = None, *, invalid: str = "raise",
              **overrides: Any) -> Any:
        """The bound at the closed-form hyper-parameter choice (broadcasts arrays).

        ``invalid="nan"`` returns NaN where an assumption fails (e.g. fewer than one epoch);
        with ``"raise"`` the ValueError names the assumption in words and the problem inputs
        it involves.
        """
        p = self._problem(problem, overrides)
        try:
            value = self.tuned.evaluate(ignore_extra=True, invalid=invalid,
                                        **self.params(problem, **overrides))
            tiny = [f"{k} = {v:.3g}" for k, v in p.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)
                    and 0 < abs(v) < 1e-150]
            if tiny and np.ndim(value) == 0 and float(value) == 0.0:
                # an L^2 under a square root at G = 1e-200 read 0 (fuzz round 16): not a value
                raise ValueError(f"{self.name}: the bound underflows to 0 at this problem "
                                 f"({', '.join(tiny)} is beyond what float64 arithmetic of "
                                 "the formula holds; rescale the problem)")
            return value
        except ValueError as exc:
            for a in self.tuned.assumptions:  # say which one in words, not as an expression
                if f"assumption violated: {a.text}" in str(exc):
                    raise ValueError(f"{self.name} does not apply to this problem: "
                                     f"{self._failed(a, p)}") from None
            if str(exc).startswith(f"{self.tuned.name}: bound is not finite"):
                # it named the theorem object ('kamath.algorithm3_utility (BST14, average
                # form)'), not the bound asked for, and no input (fuzz round 9: --diam 1e300)
                extreme = [f"{k} = {v:.3g}" for k, v in p.items()
                           if isinstance(v, (int, float)) and not isinstance(v, bool)
                           and v != 0 and not 1e-150 < abs(v) < 1e150]
                raise ValueError(f"{self.name}: the bound overflows at this problem"
                                 + (f" ({', '.join(extreme)} is beyond what float64 "
                                    "arithmetic of the formula holds)" if extreme else
                                    " (an input outside the formula's valid range)")) from None
            raise

    def applicability(self, problem: Mapping[str, float] | None = None,
                      **overrides: float) -> str | None:
        """``None`` when the bound applies at the problem, otherwise why not, in the problem's
        own terms: its class, a missing key (with the flag), or a stated assumption that fails
        (in words, with the inputs it involves; no internal expressions)."""
        p = self._problem(problem, overrides)
        missing = self.mismatch(p)
        if missing:
            return missing
        params = self.to_params(p)
        # the compiled check evaluate() uses answers where an assumption holds (the common
        # case); sympy's exact reading decides only what it rejects (a notebook's first draw
        # spent ~0.3 CPU-s in sympy's subs here)
        compiled = getattr(self.tuned, "_assumption_holds_at", None)
        for i, a in enumerate(self.tuned.assumptions):
            rel = a.relation
            if rel is None or rel is sp.true:
                continue
            names = sorted(str(x) for x in rel.free_symbols)
            if rel is not sp.false:
                if not all(k in params for k in names):
                    continue
                if compiled is not None and compiled(i, params):
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

    # ------------------------------------------------------------------ hyper-parameters
    def hyperparameters(self, problem: Mapping[str, float] | None = None,
                        **overrides: float) -> dict[str, float]:
        """The closed-form hyper-parameter choices at a problem (for a numeric bound: the
        choices its computation makes, e.g. the selected horizon)."""
        vals = self.theorem.evaluate_hyperparameters(**self.params(problem, **overrides))
        return {k: float(v) for k, v in vals.items()}

    def _check_optimize_keys(self, given: Mapping[str, Any]) -> None:
        """A key :meth:`optimize` would drop: a hyper-parameter it tunes (``E=3.0`` returned
        E = 73), or a name that is neither a problem key nor one of the bound's parameters
        (``bounds=``, ``foo=1``: fuzz round 14)."""
        from dpbounds._suggest import did_you_mean
        from dpbounds.bounds.problem import PROBLEM_QUANTITIES

        params = set(getattr(self.theorem, "parameters", ()) or ())
        hyper = set(self.tunable) | set(getattr(self.theorem, "hyperparameters", ()) or ())
        for key in given:
            if key in hyper:
                raise ValueError(f"{self.name}: {key!r} is a hyper-parameter optimize tunes, not "
                                 "a problem key (evaluate the bound at a value of it with the "
                                 "theorem's evaluate)")
            if key not in PROBLEM_QUANTITIES and key not in params:
                raise ValueError(f"{self.name}: unknown problem key {key!r}"
                                 f"{did_you_mean(key, PROBLEM_QUANTITIES)} (problem keys: "
                                 f"{', '.join(PROBLEM_QUANTITIES)})")

    def optimize(self, problem: Mapping[str, float] | None = None,
                 **overrides: float) -> Tuned:
        """Numerically tuned hyper-parameters (log-space, from the closed-form choice).

        Every range is widened to contain the closed-form choice (so the tuned bound is never
        worse than it: e.g. ``E`` beyond 1e12 epochs at N = 1e16) and clipped to
        ``[1e-300, 1e300]``: the search runs in log-space and an unbounded step (``exp(800)``)
        would overflow instead of being rejected. A numeric bound uses its own tuner.
        """
        self._check_optimize_keys({**(problem or {}), **overrides})
        p = self.params(problem, **overrides)
        if self.numeric:
            return self.theorem.optimize(**p)
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

    # ------------------------------------------------------------------ scaling
    @staticmethod
    def _exponents_why(bound: Bound, variables: tuple[str, ...]
                       ) -> tuple[Scaling | None, str | None]:
        """The scaling and ``None``, or ``None`` and why the structural walk could not order
        the bound (cached)."""
        cache: dict[Any, Any] = bound._cache
        key = ("scaling", variables)
        hit = cache.get(key)
        # kept with what it depends on: a replace() copy shares the cache
        if hit is None or hit[0] is not bound.expr or hit[1] != dict(bound.regime):
            try:
                found, why = bound.exponents(variables), None
            except ValueError as err:  # a diagnostic: it must not stop bound, verify, compare
                found, why = None, " ".join(str(err).split())
                # the walk's advice names an API option the CLI does not have (walkthrough
                # of stop 75): say where it is
                why = why.replace("use method='limit'", "the Python API's "
                                  "Bound.exponents(..., method='limit') may order it (sympy "
                                  "limits; no CLI option)")
            hit = cache[key] = (bound.expr, dict(bound.regime), found, why)
        return hit[2], hit[3]

    @classmethod
    def _exponents(cls, bound: Bound, variables: tuple[str, ...]) -> Scaling | None:
        return cls._exponents_why(bound, variables)[0]

    def scaling_failure(self) -> str | None:
        """Why :meth:`scaling` is ``None`` for a symbolic bound (the structural walk could
        not order it: a plug-in's bound that stopped ``bound`` and ``verify`` with its
        ValueError before stop 74); ``None`` where it is not."""
        if self.numeric and self.scaling_bound is None:
            return None
        return self._exponents_why(cast(Bound, self.scaling_bound or self.tuned),
                                   self.scaling_variables)[1]

    def scaling(self) -> Scaling | None:
        """Leading-order scaling of the quantity the paper's headline rate is about (cached;
        ``None`` for a numeric bound).

        That is the tuned bound, or ``scaling_bound`` where the headline describes one part of
        it (Yang et al.'s DP-NSGD: the decaying part at fixed ``r``, ``scaling_label``); the
        whole bound's scaling is :meth:`whole_scaling`.
        """
        if self.numeric and self.scaling_bound is None:
            return None
        return self._exponents(cast(Bound, self.scaling_bound or self.tuned),
                               self.scaling_variables)

    def whole_scaling(self) -> Scaling | None:
        """Leading-order scaling of the whole bound with the closed-form choices (cached;
        ``None`` for a numeric bound)."""
        if self.numeric:
            return None
        return self._exponents(cast(Bound, self.tuned), self.scaling_variables)

    def scaling_text(self) -> str:
        """The scaling for tables, both parts named when :meth:`scaling` is of one part only.

        Both are computed by :meth:`~dpbounds.bounds.theorem.Bound.exponents`.
        """
        if self.numeric:
            return "- (numeric)"
        why = self.scaling_failure()
        if why is not None:
            return f"n/a ({why})"
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

#: Modules outside :mod:`dpbounds.bounds` that register bounds: they sit in a higher layer
#: (``dpbounds._layers``: the LMI bound needs this package's closed forms), so the registry
#: names them instead of importing them, and :func:`discover` loads them by name.
PROVIDERS: tuple[str, ...] = ("dpbounds.lmi.heavy_ball_bound",)

#: Id -> entry, filled by the bound modules (and :data:`PROVIDERS`) when :func:`discover`
#: walks the package; ranked by the class in the id (:data:`CLASSES` order), then by id.
BOUND_REGISTRY: Registry[Entry] = Registry("bound", __name__.rpartition(".")[0], PROVIDERS)
_ALIASES: dict[str, str] = {}


def _same_params(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two parameter dicts hold the same keys and values (arrays compared whole)."""
    if set(a) != set(b):
        return False
    for k in a:
        try:
            if not bool(np.all(np.asarray(a[k]) == np.asarray(b[k]))):
                return False
        except (TypeError, ValueError):
            if a[k] is not b[k]:
                return False
    return True


def register(entry: Entry) -> Entry:
    """Add an entry (called by the bound modules themselves); returns it.

    Re-registering the same id from the same module replaces the entry (a module imported
    twice, e.g. by ``importlib.reload``); another module registering it is a ``ValueError``
    naming both; an alias may not name another entry or an id.
    """
    _discover_before_foreign(sys._getframe(1).f_globals.get("__name__", "?"))
    reg = BOUND_REGISTRY.entries
    old = reg.get(entry.name)
    if entry.name in _ALIASES:
        raise ValueError(f"id {entry.name!r} is already an alias of {_ALIASES[entry.name]!r}")
    for a in entry.aliases:
        if a in reg or _ALIASES.get(a, entry.name) != entry.name:
            raise ValueError(f"alias {a!r} of {entry.name!r} is already taken")
    # ranked by the id's class (a quadratic-only bound files under strongly_convex.*)
    BOUND_REGISTRY.register(entry.name, entry, rank=CLASSES.index(entry.name.split(".")[0]),
                            stacklevel=2)
    if old is not None:
        for a in old.aliases:
            _ALIASES.pop(a, None)
    _ALIASES.update({a: entry.name for a in entry.aliases})
    return entry


def _discover_before_foreign(module: str) -> None:
    """Discover every bound before a registration from outside the package and its
    :data:`PROVIDERS` (a plug-in's): a lookup by name no longer imports every module, and a
    plug-in reusing the id of a bound not imported yet must still be refused when it
    registers."""
    if not module.startswith(BOUND_REGISTRY.package + ".") and module not in PROVIDERS:
        discover()


def discover() -> None:
    """Import every module of :mod:`dpbounds.bounds` once, so each registers its entries,
    then the :data:`PROVIDERS` registering from a higher layer
    (:meth:`dpbounds._discovery.Registry.discover`: ``pkgutil`` walks the package,
    sub-packages included; no other module list is kept)."""
    BOUND_REGISTRY.discover()


def names(family: str | None = None) -> list[str]:
    """Registered ids (canonical), optionally of one problem class (``"nonconvex"``; dpbounds
    0.1's ``"non-convex"`` is accepted), by the class in the id, then alphabetically."""
    discover()
    wanted = None if family is None else canonical_class(family)
    # the registry keeps (class in the id, id) order: the rank is the class's place in CLASSES
    return [k for k, e in BOUND_REGISTRY.entries.items()
            if wanted is None or e.problem_class == wanted]


def aliases() -> dict[str, str]:
    """Alias -> canonical id."""
    discover()
    return dict(_ALIASES)


def entries(family: str | None = None) -> list[Entry]:
    """The registered entries (see :func:`names`)."""
    return [BOUND_REGISTRY.entries[k] for k in names(family)]


def get(name: str) -> Entry:
    """The entry of ``name``, an id or an alias (ValueError listing the valid names otherwise).

    Imports the modules of :mod:`dpbounds.bounds` only until one registers ``name``
    (:meth:`~dpbounds._discovery.Registry.find`), not all of them."""
    def registered() -> str | None:
        key = _ALIASES.get(name, name)
        return key if key in BOUND_REGISTRY.entries else None

    if isinstance(name, str):
        BOUND_REGISTRY.find(registered, hint=name)
    else:
        discover()
    key = _ALIASES.get(name, name)
    try:
        return BOUND_REGISTRY.entries[key]
    except KeyError:
        # another thread's registration reorders ``entries`` (cleared, then refilled): look
        # again after a full discovery, which waits for the imports under way
        discover()
        key = _ALIASES.get(name, name)
        if key in BOUND_REGISTRY.entries:
            return BOUND_REGISTRY.entries[key]
        raise ValueError(unknown_name("bound", name, [*names(), *_ALIASES],
                                      "dpbounds bound --list")) from None

