r"""Bounds that are computed, not written down: a recursion, a horizon search, an LMI certificate.

Some results are not closed sympy expressions: Kuru et al.'s DP-NAG bound is the minimum over
the horizon of an unrolled recursion with an optimal noise allocation, and the heavy-ball bound
for all of :math:`\mathcal S_{\mu,L}` needs a semidefinite certificate. A :class:`NumericBound`
carries such a computation with the interface the registry and the CLI use for a
:class:`~dpbounds.bounds.theorem.Bound` — ``evaluate`` (broadcasting arrays),
``evaluate_hyperparameters``, ``optimize``, ``sources``, ``provenance``, ``assumptions``,
``latex``, ``audit`` — instead of faking a sympy form. Where part of the result has a closed
form (e.g. Remark 4.1's bound at a fixed horizon) it is attached as ``closed_form`` and shown by
``latex()`` and ``audit()``.

Example
-------
>>> from dpbounds.bounds.numeric import NumericBound
>>> from dpbounds.provenance import Provenance, Source, weakest
>>> toy = NumericBound(
...     name="toy", quantity="q", parameters=("x",), method="min over t of x/t + t",
...     evaluator=lambda p: (2 * p["x"] ** 0.5, {"t": p["x"] ** 0.5}),
...     sources=(Source("a toy", "eq. (1)", Provenance.DERIVED),))
>>> float(toy.evaluate(x=4.0)), toy.evaluate_hyperparameters(x=4.0)
(4.0, {'t': 2.0})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds.bounds.theorem import Assumption, Bound, Tuned
from dpbounds.notation import did_you_mean
from dpbounds.provenance import Provenance, Source, weakest

__all__ = ["NumericBound"]

#: params -> (value, the hyper-parameters the computation chose)
Evaluator = Callable[[Mapping[str, float]], tuple[float, dict[str, float]]]


@dataclass(frozen=True, eq=False)
class NumericBound:
    """A bound computed by a numerical procedure, with the interface of a theorem object.

    Parameters
    ----------
    name:
        Readable identifier.
    quantity:
        What is bounded (words or LaTeX).
    parameters:
        The problem symbols the computation reads (the ``evaluate`` keywords).
    method:
        How it is computed, in words (shown by ``dpbounds bound --list``).
    evaluator:
        ``params -> (value, chosen hyper-parameters)`` at the closed-form choices; raises
        ``ValueError`` in words where the bound does not apply.
    sources:
        Citations (paper, result number, provenance).
    assumptions:
        Stated assumptions (text, or sympy relations over ``parameters``).
    tuner:
        Optional ``params -> (value, tuned hyper-parameters)``: the hyper-parameters optimised
        numerically (never worse than the closed-form choice).
    closed_form:
        The sympy part of the result, if any (rendered by :meth:`latex` and :meth:`audit`).
    description:
        Free text (what is ours).
    inputs:
        Hyper-parameters the evaluator reads when they are given (``evaluate(c=0.1)``) and
        chooses itself otherwise: what :func:`~dpbounds.tuning.bound_search.search_bound`
        searches. (The step factor ``c`` of DP-NAG / DP-MASG was declared tunable but
        dropped as an unknown keyword: ``tune bound strongly_convex.nag --range c ...``
        printed the ``c = 1`` bound beside every ``c``, 24x too small at ``c = 1e-3``.)
    """

    name: str
    quantity: str
    parameters: tuple[str, ...]
    method: str
    evaluator: Evaluator
    sources: tuple[Source, ...]
    assumptions: tuple[Assumption, ...] = ()
    tuner: Evaluator | None = None
    closed_form: Bound | None = None
    description: str = ""
    inputs: tuple[str, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError(f"bound {self.name!r} needs at least one Source")

    @property
    def provenance(self) -> Provenance:
        """The weakest label among the sources (DERIVED beats RECONSTRUCTED beats VERBATIM)."""
        return weakest(self.sources)

    @property
    def hyperparameters(self) -> tuple[str, ...]:
        """Names of the hyper-parameters the computation chooses (cached after one call)."""
        # kept per evaluator that chose them (with it: an id may be reused): a
        # dataclasses.replace copy with another evaluator shares this cache dict
        hit = self._cache.get("hyperparameter_names", {}).get(id(self.evaluator))
        return hit[1] if hit is not None and hit[0] is self.evaluator else ()

    def _params(self, params: Mapping[str, Any], ignore_extra: bool) -> dict[str, Any]:
        missing = [k for k in self.parameters if k not in params]
        if missing:
            hint = did_you_mean(params, self.parameters)
            raise ValueError(f"{self.name}: missing parameters {missing}"
                             + (f"; {hint}" if hint else ""))
        if not ignore_extra:
            extra = sorted(set(params) - set(self.parameters) - set(self.inputs))
            if extra:
                raise ValueError(f"{self.name}: {did_you_mean(extra, self.parameters)}")
        return {k: params[k] for k in (*self.parameters, *self.inputs) if k in params}

    def _point(self, params: Mapping[str, Any]) -> tuple[float, dict[str, float]]:
        value, chosen = self.evaluator(params)
        names = self._cache.setdefault("hyperparameter_names", {})  # one slot per evaluator
        hit = names.get(id(self.evaluator))
        if hit is None or hit[0] is not self.evaluator:
            names[id(self.evaluator)] = (self.evaluator, tuple(chosen))
        return float(value), chosen

    def evaluate(self, *, ignore_extra: bool = False, invalid: str = "raise",
                 **params: Any) -> Any:
        """The bound at the closed-form choices; arrays broadcast (one computation per point).

        ``invalid="nan"`` gives NaN where the computation raises ``ValueError`` (the bound does
        not apply there); ``"raise"`` re-raises it.
        """
        if invalid not in ("raise", "nan"):
            raise ValueError(f"invalid must be 'raise' or 'nan', got {invalid!r}")
        p = self._params(params, ignore_extra)
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in p.values()))
        shape = arrays[0].shape if arrays else ()
        out = np.empty(shape)
        for idx in np.ndindex(shape):
            point = {k: float(a[idx]) for k, a in zip(p, arrays)}
            try:
                out[idx] = self._point(point)[0]
            except ValueError:
                if invalid == "raise":
                    raise
                out[idx] = np.nan
        return float(out) if out.ndim == 0 else out

    def evaluate_hyperparameters(self, *, ignore_extra: bool = True,
                                 **params: Any) -> dict[str, float]:
        """The hyper-parameters the computation chooses at one problem."""
        p = self._params(params, ignore_extra)
        return {k: float(v) for k, v in self._point(p)[1].items()}

    def optimize(self, names: Any = None, *, bounds: Any = None, **params: Any) -> Tuned:
        """The hyper-parameters tuned by ``tuner`` beside the closed-form choice (``names`` and
        ``bounds`` are fixed by the tuner; accepted for the :class:`Bound` interface)."""
        if self.tuner is None:
            raise ValueError(f"{self.name} has no numeric tuner")
        p = self._params(params, True)
        closed_value, closed = self._point(p)
        value, tuned = self.tuner(p)
        if not value <= closed_value:  # never report a tuned value worse than the closed form
            value, tuned = closed_value, dict(closed)
        return Tuned({k: float(v) for k, v in tuned.items()}, float(value),
                     {k: float(v) for k, v in closed.items()}, float(closed_value), True)

    # ------------------------------------------------------------------ rendering
    def latex(self) -> str:
        """The closed-form part in LaTeX if there is one, else the quantity and the method."""
        if self.closed_form is not None:
            return self.closed_form.latex()
        return rf"{self.quantity} \le \text{{{self.method}}}"

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.quantity} <= [numeric: {self.method}]"]
        lines += [f"  assuming {a.text}" for a in self.assumptions]
        lines += [f"  source: {s}" for s in self.sources]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<NumericBound {self.name!r} [{self.provenance}] params={self.parameters}>"

    def audit(self) -> str:
        """The method, the sources and, if any, the closed-form part's lemma chain."""
        out = [f"- {self.name}", f"    {self.quantity} <= [numeric: {self.method}]"]
        out += [f"    source: {s}" for s in self.sources]
        if self.description:
            out.append(f"    note: {self.description}")
        if self.closed_form is not None:
            out += ["    closed-form part:"] + ["    " + x for x in
                                                  self.closed_form.audit().splitlines()]
        return "\n".join(out)
