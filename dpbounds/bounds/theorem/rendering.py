r"""Rendering of a bound: LaTeX, text, and the :meth:`Bound.audit` of its composition chain.

Example
-------
>>> from dpbounds.bounds.nonconvex import tree_momentum
>>> steps = [s.strip() for s in tree_momentum.theorem6.audit().splitlines() if "monoton" in s]
>>> print(steps[0].replace(" by sign", "\n  by sign"))
monotonicity: tran_cutkosky.lemma5 is non-decreasing in noise_err: proven (d/dnoise_err = 8 >= 0
  by sign analysis) [checked by audit(): this theorem was assembled by hand]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import sympy as sp

from dpbounds.bounds.theorem.monotonicity import check_monotone
from dpbounds.bounds.theorem.symbols import SYMBOL_LATEX, sym

if TYPE_CHECKING:
    from dpbounds.bounds.theorem.structure import Bound, _BoundLike

__all__ = []


class RenderingMixin:
    """The rendering methods of :class:`~dpbounds.bounds.theorem.Bound`."""

    def latex(self: _BoundLike) -> str:
        """``quantity \\le expr`` in LaTeX with readable symbol names."""
        names = {sym(k): v for k, v in SYMBOL_LATEX.items()}
        body = sp.latex(self.expr, symbol_names=names)
        return rf"{self.quantity} \le {body}"

    def _repr_latex_(self: _BoundLike) -> str:
        src = "; ".join(f"{s.result} [{s.provenance}]" for s in self.sources)
        return rf"$\displaystyle {self.latex()}$ \quad ({self.name}: {src})"

    def __str__(self: _BoundLike) -> str:
        lines = [f"{self.name}: {self.quantity} <= {sp.sstr(self.expr)}"]
        for a in self.assumptions:
            lines.append(f"  assuming {a.text}")
        for k, v in self.hyperparameters.items():
            lines.append(f"  choice {k} = {sp.sstr(v)}")
        for src in self.sources:
            lines.append(f"  source: {src}")
        return "\n".join(lines)

    def __repr__(self: _BoundLike) -> str:
        return (f"<{type(self).__name__} {self.name!r} [{self.provenance}] "
                f"params={self.parameters}>")

    def audit(self: _BoundLike) -> str:
        """The full composition chain, one block per lemma, for a reader to check each step.

        A lemma plugged into a placeholder shows how the outer bound was shown non-decreasing
        in it (:class:`~dpbounds.bounds.theorem.Monotonicity`: proven, checked on a grid, or
        exact); a theorem assembled by hand (``steps`` given, not made by
        :meth:`~dpbounds.bounds.theorem.Bound.compose`) is checked when audited.
        """
        out: list[str] = []

        def walk(b: Bound, placeholder: str | None, depth: int, how: str | None) -> None:
            pad = "  " * depth
            head = f"{pad}- {b.name}" + (f"  [plugged in for {placeholder}]" if placeholder
                                        else "")
            out.append(head)
            out.append(f"{pad}    {b.quantity} <= {sp.sstr(b.expr)}")
            if how is not None:
                out.append(f"{pad}    monotonicity: {how}")
            for src in b.sources[:1]:
                out.append(f"{pad}    source: {src}")
            if b.description:
                out.append(f"{pad}    note: {b.description}")
            for ph, sub in b.steps:
                walk(sub, ph, depth + 1, None if ph is None else _step_monotonicity(b, ph))

        walk(cast("Bound", self), None, 0, None)
        return "\n".join(out)


def _step_monotonicity(bound: Bound, placeholder: str) -> str:
    """How ``bound``'s base is non-decreasing in ``placeholder``: recorded, or checked now."""
    for m in bound.monotonicity:
        if m.placeholder == placeholder:
            return str(m)
    base = next((b for ph, b in bound.steps if ph is None), None)
    if base is None or sym(placeholder) not in base.expr.free_symbols:
        return f"not checked ({placeholder} is not a symbol of a base bound of {bound.name})"
    relations = [a.relation for a in bound.assumptions + base.assumptions]
    try:
        m = check_monotone(base.expr, placeholder, outer_name=base.name, relations=relations,
                           regime=bound.regime)
    except ValueError as err:
        return f"NOT established: {err}"
    return f"{m} [checked by audit(): this theorem was assembled by hand]"
