r"""The structure of a bound: :class:`Bound`, :class:`Lemma`, :class:`Theorem`, :class:`Assumption`.

A :class:`Bound` is ``quantity <= expr`` under ``assumptions``, cited by ``sources``; this module
holds its data and the operations that build new bounds from old ones:
:meth:`Bound.compose` (plug bounds into placeholders, each step checked by
:mod:`.monotonicity`) and :meth:`Bound.tuned` (substitute the closed-form hyper-parameter
choices). Evaluation, scaling, tuning and rendering are mixed in from :mod:`.evaluation`,
:mod:`.scaling`, :mod:`.optimization` and :mod:`.rendering`.

Example
-------
>>> from dpbounds.bounds.theorem import Lemma, sym
>>> from dpbounds.provenance import Provenance, Source
>>> x, N, eps = sym("x"), sym("N"), sym("eps")
>>> src = (Source("toy", "eq. (1)", Provenance.DERIVED),)
>>> outer = Lemma(name="outer", quantity="q", expr=1 / N + 2 * x, sources=src)
>>> noise = Lemma(name="noise", quantity="x", expr=1 / (N * eps), sources=src)
>>> thm = outer.compose("composed", {"x": noise})
>>> thm.expr
1/N + 2/(N*eps)
>>> print(thm.monotonicity[0])
outer is non-decreasing in x: proven (d/dx = 2 >= 0 by sign analysis)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

import sympy as sp

from dpbounds.bounds.theorem.evaluation import EvaluationMixin
from dpbounds.bounds.theorem.monotonicity import Monotonicity, check_monotone
from dpbounds.bounds.theorem.optimization import OptimizationMixin
from dpbounds.bounds.theorem.rendering import RenderingMixin
from dpbounds.bounds.theorem.scaling import ScalingMixin
from dpbounds.bounds.theorem.symbols import names as _names
from dpbounds.bounds.theorem.symbols import sym
from dpbounds.provenance import Provenance, Source

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Assumption", "Bound", "Lemma", "Theorem"]


@dataclass(frozen=True)
class Assumption:
    """A stated assumption of a bound.

    Parameters
    ----------
    text:
        The assumption in words (always shown).
    relation:
        Optional sympy relation (e.g. ``sym("delta") < 1``) over the bound's symbols. When all
        its symbols are given to :meth:`Bound.evaluate`, it is checked elementwise and a
        violation raises :class:`ValueError` naming the relation.
    """

    text: str
    relation: sp.Basic | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():  # Assumption(5): built,
            # then str() raised TypeError (fuzz round 7)
            raise ValueError(f"assumption text must be a non-empty string, got {self.text!r}")
        # Assumption("x", d): a symbol where a relation belongs was taken and never checked
        r = self.relation
        if r is not None and not isinstance(r, (sp.core.relational.Relational,
                                                sp.logic.boolalg.BooleanFunction,
                                                sp.logic.boolalg.BooleanAtom)) \
                or isinstance(r, sp.Symbol):
            raise ValueError(f"assumption {self.text!r}: relation must be a sympy relation "
                             f"such as sym('eps') < 1 (or None), got {r!r}")

    def __str__(self) -> str:
        return self.text




def _as_expr(value: Any) -> sp.Expr:
    if isinstance(value, Bound):
        return value.expr
    return sp.sympify(value)


def _not_a_bound(expr: sp.Expr) -> str:
    """Why ``expr`` cannot be a bound (``''`` when nothing is known against it): sympy's
    complex infinity (``1/(T - T)``), an undefined value or the imaginary unit (``sqrt(-d T)``
    of positive symbols). A plug-in's bound like these tuned to 0 or stopped four commands
    with an internal error (``KeyError: 'ComplexInfinity'``). (A lemma may be negative: an
    inner product's bound; a registered theorem may not, :mod:`dpbounds.bounds.registry`.)"""
    if expr.has(sp.zoo):
        return "is complex infinity somewhere (a division by zero)"
    if expr.has(sp.nan):
        return "is undefined (nan)"
    if expr.has(sp.oo, -sp.oo):  # sp.oo read "its expression is negative" (is_nonnegative
        return "is infinite (oo)"  # is False for an infinity)
    if expr.has(sp.I):
        return "is complex (e.g. the square root of a negative quantity)"
    return ""


@dataclass(frozen=True, eq=False, repr=False)
class Bound(EvaluationMixin, OptimizationMixin, ScalingMixin, RenderingMixin):
    r"""A utility bound: ``quantity <= expr`` under ``assumptions``, cited by ``sources``.

    Parameters
    ----------
    name:
        Readable identifier, e.g. ``"tran_cutkosky.lemma5"``.
    quantity:
        What is bounded, in words or LaTeX (e.g. ``r"\mathbb E\lVert\nabla F(\hat x)\rVert"``).
    expr:
        The bound, a sympy expression over symbols made by :func:`sym`.
    sources:
        Citations (paper, result number, provenance). A composed theorem carries the union of
        its lemmas' sources after its own.
    assumptions:
        :class:`Assumption` objects (positivity of every symbol is implicit).
    definitions:
        Identities substituted before anything else, e.g. ``{"T": N*E}``.
    hyperparameters:
        Closed-form choices ``name -> expression``; a choice may use other choices, they are
        resolved by repeated substitution. :meth:`tuned` substitutes them.
    steps:
        The bounds this one was composed from, as ``(placeholder, bound)`` pairs
        (placeholder ``None`` for the base lemma).
    regime:
        Default scaling path of :meth:`exponents`: variable -> exponent ``a`` with ``v = s**a``.
    description:
        Free text shown by :meth:`audit` (derivation notes, what is ours).
    monotonicity:
        For a composed theorem, how the outer bound was shown non-decreasing in each
        placeholder (:class:`~dpbounds.bounds.theorem.Monotonicity`, set by :meth:`compose`).
    """

    name: str
    quantity: str
    expr: sp.Expr
    sources: tuple[Source, ...]
    assumptions: tuple[Assumption, ...] = ()
    definitions: Mapping[str, sp.Expr] = field(default_factory=dict)
    hyperparameters: Mapping[str, sp.Expr] = field(default_factory=dict)
    steps: tuple[tuple[str | None, Bound], ...] = ()
    regime: Mapping[str, float] = field(default_factory=lambda: {"d": 1, "N": 1})
    description: str = ""
    monotonicity: tuple[Monotonicity, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: whether a negative value is outside the bound's range: set on the theorems of a
    #: registered entry (:class:`~dpbounds.bounds.registry.Entry`: they bound an error, a
    #: suboptimality or a gradient norm, >= 0); a lemma, or a theorem composed from signed
    #: lemmas, may bound a signed quantity (an inner product)
    nonnegative: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "expr", _as_expr(self.expr))
        object.__setattr__(
            self, "definitions", {k: _as_expr(v) for k, v in dict(self.definitions).items()}
        )
        object.__setattr__(
            self,
            "hyperparameters",
            {k: _as_expr(v) for k, v in dict(self.hyperparameters).items()},
        )
        if not self.sources:
            raise ValueError(f"bound {self.name!r} needs at least one Source")
        if self.definitions:
            object.__setattr__(self, "expr", self._apply(self.expr, self.definitions))
        why = _not_a_bound(self.expr)
        if why:
            raise ValueError(f"bound {self.name!r}: its expression {why}: {sp.sstr(self.expr)}")

    def __getstate__(self) -> dict[str, Any]:
        # the cache holds compiled functions (lambdify's, not picklable) and is rebuilt on use
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    # ------------------------------------------------------------------ structure
    @property
    def parameters(self) -> tuple[str, ...]:
        """Names of the free symbols of the bound (the ``evaluate`` keywords), sorted."""
        # kept with the compiled functions (sympy walks the tree on every call; evaluate asks
        # for these each time), with the expression itself: an id may be reused
        hit = self._cache.get("parameters")
        if hit is None or hit[0] is not self.expr:
            hit = self._cache["parameters"] = (self.expr, _names(self.expr.free_symbols))
        return hit[1]

    @property
    def assumption_parameters(self) -> tuple[str, ...]:
        """Symbols that appear only in the assumptions' relations (accepted by ``evaluate`` and
        checked against the relations, e.g. ``tau0`` in ``C >= 3 tau0``)."""
        hit = self._cache.get("assumption_parameters")
        if hit is None or hit[0] is not self.expr or hit[1] is not self.assumptions:
            syms = set()
            for a in self.assumptions:
                if a.relation is not None:
                    syms |= a.relation.free_symbols
            hit = self._cache["assumption_parameters"] = (
                self.expr, self.assumptions, _names(syms - self.expr.free_symbols))
        return hit[2]

    @property
    def provenance(self) -> Provenance:
        """The weakest label among the sources (DERIVED beats RECONSTRUCTED beats VERBATIM)."""
        order = [Provenance.MISSING, Provenance.DERIVED, Provenance.RECONSTRUCTED,
                 Provenance.VERBATIM]
        return min((s.provenance for s in self.sources), key=order.index)

    @staticmethod
    def _apply(expr: sp.Expr, subs: Mapping[str, sp.Expr], max_rounds: int = 20) -> sp.Expr:
        mapping = {sym(k): v for k, v in subs.items()}
        for _ in range(max_rounds):
            new = expr.xreplace(mapping)
            if new == expr:
                return new
            expr = new
        raise ValueError("hyper-parameter choices refer to each other circularly")

    def resolved_hyperparameters(self) -> dict[str, sp.Expr]:
        """Closed-form choices with every reference to another choice substituted."""
        return {k: self._apply(self._apply(v, self.hyperparameters), self.definitions)
                for k, v in self.hyperparameters.items()}

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (the cache is not copied)."""
        changes.setdefault("_cache", {})
        return dataclasses.replace(self, **changes)

    def tuned(self, name: str | None = None, **overrides: Any) -> Theorem:
        """The bound with its closed-form hyper-parameter choices substituted.

        ``overrides`` replace individual choices (expressions or numbers).
        """
        choices = dict(self.hyperparameters)
        choices.update({k: _as_expr(v) for k, v in overrides.items()})
        expr = self._apply(self.expr, choices)
        # assumptions on hyper-parameters become conditions on the problem parameters
        assumptions = tuple(
            a if a.relation is None else
            Assumption(a.text, self._apply(self._apply(a.relation, self.definitions), choices))
            for a in self.assumptions)
        return Theorem(
            name=name or f"{self.name} (tuned)",
            quantity=self.quantity,
            expr=expr,
            sources=self.sources,
            assumptions=assumptions,
            definitions={},
            hyperparameters=choices,
            steps=((None, self),),
            regime=self.regime,
            description=self.description,
        )

    def compose(
        self,
        name: str,
        substitutions: Mapping[str, Bound | sp.Expr | float],
        *,
        quantity: str | None = None,
        sources: Sequence[Source] = (),
        assumptions: Sequence[Assumption] = (),
        hyperparameters: Mapping[str, sp.Expr] | None = None,
        description: str = "",
        regime: Mapping[str, float] | None = None,
        exact: Iterable[str] = (),
        domain: Mapping[str, tuple[float, float]] | None = None,
    ) -> Theorem:
        r"""Plug bounds (or expressions) into placeholder symbols of this bound.

        Each ``substitutions[name]`` replaces the symbol ``name``; a :class:`Bound` value
        contributes its expression, sources and assumptions, and is recorded in ``steps`` so
        :meth:`audit` can show the chain. The composed bound is valid when each substituted
        value upper-bounds the placeholder's quantity (the lemma author's statement) and this
        bound is non-decreasing in the placeholder: that is **checked** here
        (:func:`~dpbounds.bounds.theorem.check_monotone`: proven by sympy, else checked on a
        grid, else refused) under every assumption of the composed theorem, and recorded in
        :attr:`monotonicity`.

        Parameters
        ----------
        name, quantity, sources, assumptions, hyperparameters, description, regime:
            Of the composed theorem (``quantity`` and ``regime`` default to this bound's;
            ``sources`` and ``assumptions`` are added to the lemmas').
        exact:
            Placeholders whose substitution is an identity (the placeholder *equals* the
            value, e.g. a definition), not an upper bound: no monotonicity is needed, and the
            record says so.
        domain:
            Ranges ``name -> (low, high)`` the composed theorem is meant for: used by the
            check (the proof and the grid), not enforced by :meth:`evaluate`; prefer an
            :class:`Assumption` with a relation, which is both.

        Raises
        ------
        ValueError
            A substitution names no symbol of this bound, or this bound decreases in a
            placeholder somewhere under the assumptions (the message names the placeholder,
            this bound and the point).
        """
        unknown = [k for k in substitutions if sym(k) not in self.expr.free_symbols]
        if unknown:
            raise ValueError(f"compose: {unknown} are not symbols of {self.name!r} "
                             f"(its symbols: {self.parameters})")
        exact = set(exact)
        stray = sorted(exact - set(substitutions))
        if stray:
            raise ValueError(f"compose: exact={stray} are not substituted placeholders "
                             f"(substituted: {sorted(substitutions)})")
        expr = self.expr.xreplace({sym(k): _as_expr(v) for k, v in substitutions.items()})
        steps: list[tuple[str | None, Bound]] = [(None, self)]
        all_sources = list(sources) + list(self.sources)
        all_assumptions = list(self.assumptions)
        hyper = dict(self.hyperparameters)
        for k, v in substitutions.items():
            if isinstance(v, Bound):
                steps.append((k, v))
                all_sources += v.sources
                all_assumptions += v.assumptions
                hyper.update(v.hyperparameters)
        all_assumptions += list(assumptions)
        if hyperparameters:
            hyper.update({k: _as_expr(v) for k, v in hyperparameters.items()})
        regime = dict(regime) if regime is not None else dict(self.regime)
        relations = [a.relation for a in all_assumptions]
        checks = tuple(
            Monotonicity(self.name, k, "exact", "an identity, not an upper bound: "
                         "no monotonicity needed") if k in exact else
            check_monotone(self.expr, k, outer_name=self.name, relations=relations,
                           domain=domain, regime=regime)
            for k in substitutions)
        return Theorem(
            name=name,
            quantity=quantity or self.quantity,
            expr=expr,
            sources=tuple(dict.fromkeys(all_sources)),
            assumptions=tuple(dict.fromkeys(all_assumptions)),
            hyperparameters=hyper,
            steps=tuple(steps),
            regime=regime,
            description=description,
            monotonicity=checks,
        )


class Lemma(Bound):
    """A building block: a bound that may still contain hyper-parameters and placeholders."""


class Theorem(Bound):
    """A composed or tuned bound (see :meth:`Bound.compose` and :meth:`Bound.tuned`)."""


class _BoundLike(Protocol):
    """The self-type of the :class:`Bound` mixins (what their methods read from ``self``).

    A protocol, not ``Bound`` itself: mypy accepts a protocol as a mixin's self-type, while
    ``self: Bound`` in a base class of ``Bound`` is refused (the mixin is not a ``Bound``).
    """

    @property
    def name(self) -> str: ...
    @property
    def quantity(self) -> str: ...
    @property
    def expr(self) -> sp.Expr: ...
    @property
    def sources(self) -> tuple[Source, ...]: ...
    @property
    def assumptions(self) -> tuple[Assumption, ...]: ...
    @property
    def definitions(self) -> Mapping[str, sp.Expr]: ...
    @property
    def hyperparameters(self) -> Mapping[str, sp.Expr]: ...
    @property
    def steps(self) -> tuple[tuple[str | None, Bound], ...]: ...
    @property
    def regime(self) -> Mapping[str, float]: ...
    @property
    def description(self) -> str: ...
    @property
    def monotonicity(self) -> tuple[Monotonicity, ...]: ...
    @property
    def nonnegative(self) -> bool: ...
    @property
    def _cache(self) -> dict[str, Any]: ...
    @property
    def parameters(self) -> tuple[str, ...]: ...
    @property
    def assumption_parameters(self) -> tuple[str, ...]: ...
    @property
    def provenance(self) -> Provenance: ...
    def resolved_hyperparameters(self) -> dict[str, sp.Expr]: ...
    def latex(self) -> str: ...
    def _function(self, expr_key: str, expr: sp.Expr,
                  names: tuple[str, ...], *, cse: bool = True) -> Callable[..., Any]: ...
    def _needed(self, index: int, rel: Any) -> tuple[str, ...]: ...
    def _check_params(self, names: Sequence[str], params: Mapping[str, Any],
                      ignore_extra: bool) -> dict[str, np.ndarray]: ...
    def _check_assumptions(self, values: Mapping[str, np.ndarray],
                           invalid: str = "raise") -> np.ndarray | bool: ...
    def evaluate(self, *, ignore_extra: bool = False, invalid: str = "raise",
                 **params: Any) -> np.ndarray | float: ...
    def evaluate_hyperparameters(self, *, ignore_extra: bool = True,
                                 **params: Any) -> dict[str, np.ndarray | float]: ...
