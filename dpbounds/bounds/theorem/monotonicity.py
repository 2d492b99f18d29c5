r"""Checked composition: is the outer bound non-decreasing in the placeholder it substitutes?

:meth:`Bound.compose` plugs a bound :math:`q\le B` into a placeholder :math:`q` of an outer bound
:math:`F(q,\dots)`. The result :math:`F(B,\dots)` bounds the same quantity as :math:`F(q,\dots)`
only if :math:`F` is non-decreasing in :math:`q`; that :math:`B` bounds :math:`q` stays the
lemma author's statement. Like cvxpy's curvature rules, the check works on the derivative
:math:`\partial F/\partial q` and establishes its sign in three tiers:

1. **proven** — sympy shows :math:`\partial F/\partial q\ge0` for every value the symbols may
   take: their declarations (positive, or nonnegative), the stated assumptions' relations and
   ``domain=``, and counts (:data:`~dpbounds.bounds.theorem.symbols.COUNT_SYMBOLS`) being at
   least 1. A relation that bounds one symbol is used by rewriting that symbol in positive
   terms (``r > tau0`` becomes :math:`r=\tau_0+p`, ``delta < 1`` becomes
   :math:`\delta=1/(1+p)`, with :math:`p>0`), so that the derivative is a sum of products of
   positive terms; the sign analysis also tries ``together``, ``factor`` and ``expand``.
   Principal even roots (``sqrt``) count as nonnegative: wherever the bound is real they are.
2. **checked on a grid** — otherwise the derivative is evaluated on a log-spaced grid over the
   symbols' ranges (:func:`grid_ranges`: ``(1e-6, 1e6)``, counts ``(1, 1e9)``, scaling-path
   variables up to ``1e12``, 0 included for nonnegative symbols, ``domain=`` overrides; a
   tensor grid with every corner plus 4096 Halton points), keeping the points where the
   assumptions hold and the bound is real. No decrease found: the composed theorem records
   "checked on a grid (N points, ranges)" — evidence, not a proof.
3. **refused** — a point where the derivative is negative (relative tolerance
   :data:`TOLERANCE`) raises :class:`ValueError` naming the placeholder, the outer bound and
   the point. A bound that increases only on part of the domain composes once an
   :class:`Assumption` relation (or ``domain=``) restricts it to that part.

The checks are cached (per process) on the expression, placeholder, relations and ranges. The
package's own compositions also ship their results (``monotone_checks.json``, keyed by the
exact ``srepr`` of the expression, placeholder, relations and ranges; written by ``python -m
dpbounds.bounds.theorem.monotonicity --write``), so importing a theorem does not re-run sympy's
sign analysis (1-2 CPU-s at import before): a key matches only the very same check, the table is
ignored unless it was written by the same checker (:func:`checker_fingerprint`: its code,
sympy's version, the ranges and count symbols), any other composition (a user's, or a changed
bound) is checked as above, and a test re-runs every shipped check and compares.

Example
-------
>>> import sympy as sp
>>> from dpbounds.bounds.theorem import check_monotone, sym
>>> x, r, tau0 = sym("x"), sym("r"), sym("tau0")
>>> print(check_monotone(x / (1 - tau0 / r), "x", outer_name="F", relations=(r > tau0,)).label)
proven (d/dx = 1/(1 - tau0/r) >= 0 by sign analysis, with r = p_r + tau0)
>>> check_monotone(1 / x, "x", outer_name="F")
Traceback (most recent call last):
    ...
ValueError: compose: 'F' is not non-decreasing in 'x': d/dx = -1e+12 < 0 at x=1e-06; ...
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from sympy.core.relational import Relational

from dpbounds.bounds.theorem.symbols import COUNT_SYMBOLS, sym

__all__ = ["Monotonicity", "check_monotone"]

#: Largest tensor grid (points per axis ** symbols) checked besides the Halton points.
GRID_TENSOR_BUDGET = 4096
#: Halton points (deterministic, low discrepancy) added to the tensor grid.
GRID_LOW_DISCREPANCY_POINTS = 4096
#: A derivative below ``-TOLERANCE * sum(|terms|)`` at a grid point is a decrease.
TOLERANCE = 1e-9
#: Default ranges of the grid (log-spaced): real symbols, counts, upper end on the scaling path.
DEFAULT_RANGE = (1e-6, 1e6)
COUNT_RANGE = (1.0, 1e9)
REGIME_UPPER = 1e12
#: Above this size (``count_ops``) the prover skips ``factor`` and ``simplify`` (slow).
_SIMPLIFY_LIMIT = 150
#: The shipped results of the package's own checks (module docstring).
SHIPPED_CHECKS = Path(__file__).with_name("monotone_checks.json")
_shipped: dict[str, Any] | None = None
#: While ``--write`` runs (``DPBOUNDS_RECORD_MONOTONE=1``): every check computed, by key.
_recorded: dict[str, list[str]] | None = (
    {} if os.environ.get("DPBOUNDS_RECORD_MONOTONE") == "1" else None)


@dataclass(frozen=True)
class Monotonicity:
    """How one composition step was shown valid: the outer bound is non-decreasing.

    Attributes
    ----------
    outer:
        Name of the outer bound.
    placeholder:
        The substituted symbol.
    status:
        ``"proven"`` (sympy), ``"grid"`` (no decrease on a grid: evidence, not proof) or
        ``"exact"`` (an identity substituted, declared with ``exact=``: nothing to check).
    how:
        The argument: the derivative and the rewriting used, or the grid's size and ranges.
    derivative:
        :math:`\\partial\\,\\mathrm{outer}/\\partial\\,\\mathrm{placeholder}` (``None`` if exact).
    """

    outer: str
    placeholder: str
    status: str
    how: str
    derivative: sp.Expr | None = None

    @property
    def label(self) -> str:
        """``"proven (...)"``, ``"checked on a grid (...)"`` or ``"exact substitution ..."``."""
        head = {"grid": "checked on a grid", "exact": "exact substitution"}
        return f"{head.get(self.status, self.status)} ({self.how})"

    def __str__(self) -> str:
        return f"{self.outer} is non-decreasing in {self.placeholder}: {self.label}"


def check_monotone(
    outer: sp.Expr,
    placeholder: str,
    *,
    outer_name: str = "bound",
    relations: Iterable[sp.Basic] = (),
    domain: Mapping[str, tuple[float, float]] | None = None,
    regime: Iterable[str] = (),
) -> Monotonicity:
    r"""Establish that ``outer`` is non-decreasing in ``placeholder`` (or raise).

    Parameters
    ----------
    outer:
        The outer bound's expression.
    placeholder:
        Name of the substituted symbol.
    outer_name:
        Name of the outer bound (for the record and the error message).
    relations:
        Sympy relations that hold wherever the composed bound is claimed (the assumptions);
        other items (``None``, text, ``True``) are ignored.
    domain:
        Optional ranges ``name -> (low, high)`` with ``0 <= low < high <= inf``: extra
        relations for the proof, and the grid's range of that symbol.
    regime:
        Variables of the scaling path: their grid range extends to ``1e12``.

    Returns
    -------
    Monotonicity
        Status ``"proven"`` or ``"grid"`` with the argument.

    Raises
    ------
    ValueError
        A grid point where the derivative is negative (named), no grid point satisfying the
        assumptions, or a malformed ``domain``.
    """
    domain_items = _domain_items(domain)
    rels = tuple(r for r in relations if isinstance(r, Relational)
                 and not isinstance(r, sp.Eq | sp.Ne))
    outer, x, regime_t = sp.sympify(outer), sym(placeholder), tuple(sorted(set(regime)))
    # a symbol of the placeholder's name but other assumptions would differentiate to 0
    clash = [s for s in outer.free_symbols if s.name == placeholder and s != x]
    if clash:
        raise ValueError(f"compose: {outer_name!r} holds a symbol {placeholder!r} that is not "
                         f"dpbounds' sym({placeholder!r}) (other assumptions: "
                         f"{clash[0].assumptions0}); build bounds with "
                         "dpbounds.bounds.theorem.sym")
    key = check_key(outer, x, rels, domain_items, regime_t)
    hit = _shipped_checks().get(key) if _recorded is None else None
    result: tuple[str, str, sp.Expr] | str
    if hit is not None:  # the very same check, run when the table was written (and tested)
        result = (hit[0], hit[1], sp.diff(outer, x))
    else:
        result = _check(outer, x, rels, domain_items, regime_t)
        if _recorded is not None and not isinstance(result, str):
            _recorded[key] = [result[0], result[1]]
    if isinstance(result, str):
        raise ValueError(f"compose: {outer_name!r} is not non-decreasing in {placeholder!r}: "
                         f"{result}")
    return Monotonicity(outer=outer_name, placeholder=placeholder, status=result[0],
                        how=result[1], derivative=result[2])


def grid_ranges(
    symbols: Sequence[sp.Symbol],
    domain: Mapping[str, tuple[float, float]] | None = None,
    regime: Iterable[str] = (),
) -> dict[str, tuple[float, float]]:
    """The grid's (log-spaced) range of each symbol; see the module docstring."""
    box = dict(_domain_items(domain))
    regime = set(regime)
    out = {}
    for s in symbols:
        lo, hi = COUNT_RANGE if s.name in COUNT_SYMBOLS else DEFAULT_RANGE
        if s.name in regime:
            hi = REGIME_UPPER
        if s.name in box:
            blo, bhi = box[s.name]
            lo = blo if blo > 0 else min(lo, bhi / 1e6)
            hi = bhi if math.isfinite(bhi) else max(hi, lo * 1e12)
        out[s.name] = (lo, hi)
    return out


def check_key(outer: sp.Expr, x: sp.Symbol, relations: Sequence[Relational],
              domain: Sequence[tuple[str, tuple[float, float]]], regime: Sequence[str]) -> str:
    """The key of one check in :data:`SHIPPED_CHECKS`: every input, exactly (``srepr`` keeps
    the symbols' assumptions; floats as ``repr``)."""
    return json.dumps([sp.srepr(outer), x.name, [sp.srepr(r) for r in relations],
                       [[name, [repr(lo), repr(hi)]] for name, (lo, hi) in domain],
                       list(regime)])


def parse_key(key: str) -> tuple[Any, ...]:
    """The inputs of :func:`_check` back from a :func:`check_key` (for the test that re-runs
    the shipped checks)."""
    outer, name, rels, domain, regime = json.loads(key)
    return (sp.sympify(outer), sym(name), tuple(sp.sympify(r) for r in rels),
            tuple((n, (float(lo), float(hi))) for n, (lo, hi) in domain), tuple(regime))


@functools.cache
def _source_digest() -> str:
    """SHA-256 of the checker's code (this module and the symbols' declarations)."""
    import hashlib

    h = hashlib.sha256()
    for name in ("monotonicity.py", "symbols.py"):
        h.update(Path(__file__).with_name(name).read_bytes())
    return h.hexdigest()


def checker_fingerprint() -> str:
    """What a shipped result depends on besides its key: the checker's code, sympy's version
    and the module constants as they are now (a table written under any other is ignored)."""
    return json.dumps([_source_digest(), sp.__version__, sorted(COUNT_SYMBOLS),
                       DEFAULT_RANGE, COUNT_RANGE, REGIME_UPPER, TOLERANCE,
                       GRID_TENSOR_BUDGET, GRID_LOW_DISCREPANCY_POINTS, _SIMPLIFY_LIMIT])


def _shipped_checks() -> dict[str, list[str]]:
    global _shipped
    if _shipped is None:
        try:
            doc = json.loads(SHIPPED_CHECKS.read_text(encoding="utf-8"))
            _shipped = {"fingerprint": doc["fingerprint"], "checks": dict(doc["checks"])}
        except (OSError, ValueError, KeyError, TypeError):  # missing or damaged: every
            _shipped = {"fingerprint": None, "checks": {}}  # check runs (slower, same)
    if _shipped["fingerprint"] != checker_fingerprint():  # another checker wrote it
        return {}
    return _shipped["checks"]


#: The generator's child process: import every bound module, print the checks run.
_RECORD_SCRIPT = """
import importlib, json, pkgutil
import dpbounds.bounds as b
from dpbounds.bounds.theorem import monotonicity as m
for info in pkgutil.walk_packages(b.__path__, "dpbounds.bounds."):
    importlib.import_module(info.name)
print(json.dumps(m._recorded))
"""


def _write_shipped() -> int:
    """Import every module of :mod:`dpbounds.bounds` in a fresh process with recording on
    (``DPBOUNDS_RECORD_MONOTONE=1``: from the first import, nothing read from the table) and
    write the checks they ran to :data:`SHIPPED_CHECKS`; returns their number."""
    import subprocess
    import sys

    env = {**os.environ, "DPBOUNDS_RECORD_MONOTONE": "1"}
    out = subprocess.run([sys.executable, "-c", _RECORD_SCRIPT], env=env, check=True,
                         capture_output=True, text=True).stdout
    table = dict(sorted(json.loads(out.strip().splitlines()[-1]).items()))
    doc = {"fingerprint": checker_fingerprint(), "checks": table}
    SHIPPED_CHECKS.write_text(json.dumps(doc, indent=0) + "\n", encoding="utf-8")
    return len(table)


# ---------------------------------------------------------------------------- internals
def _domain_items(domain: Mapping[str, tuple[float, float]] | None
                  ) -> tuple[tuple[str, tuple[float, float]], ...]:
    items = []
    for name, rng in sorted((domain or {}).items()):
        try:
            lo, hi = (float(v) for v in rng)
        except (TypeError, ValueError):
            raise ValueError(f"domain[{name!r}] must be a pair (low, high), got {rng!r}") from None
        if not (0 <= lo < hi) or math.isnan(hi):
            raise ValueError(f"domain[{name!r}] must satisfy 0 <= low < high <= inf, got "
                             f"{(lo, hi)}")
        items.append((name, (lo, hi)))
    return tuple(items)


def _relevant(deriv: sp.Expr, outer: sp.Expr, relations: Sequence[Relational]
              ) -> tuple[set[sp.Symbol], list[Relational]]:
    """The symbols that matter and the relations connected to them (to a fixed point)."""
    syms = set(outer.free_symbols) | set(deriv.free_symbols)
    keep: list[Relational] = []
    changed = True
    while changed:
        changed = False
        for rel in relations:
            if rel not in keep and rel.free_symbols & syms:
                keep.append(rel)
                syms |= rel.free_symbols
                changed = True
    return syms, [r for r in relations if r in keep]


@functools.lru_cache(maxsize=512)
def _check(outer: sp.Expr, x: sp.Symbol, relations: tuple[Relational, ...],
           domain: tuple[tuple[str, tuple[float, float]], ...], regime: tuple[str, ...]
           ) -> tuple[str, str, sp.Expr] | str:
    deriv = sp.diff(outer, x)
    box = []
    for name, (lo, hi) in domain:
        if lo > 0:
            box.append(sym(name) >= sp.Rational(repr(lo)))
        if math.isfinite(hi):
            box.append(sym(name) <= sp.Rational(repr(hi)))
    syms, rels = _relevant(deriv, outer, list(relations) + box)
    shown = sp.sstr(deriv)
    shown = f"d/d{x.name} = {shown}" if len(shown) <= 60 else f"d/d{x.name}"
    if deriv == 0:
        return "proven", f"{shown}: the bound does not depend on it", deriv
    if _nonnegative(deriv, expensive=False):
        return "proven", f"{shown} >= 0 by sign analysis", deriv
    counts = sorted((s for s in syms if s.name in COUNT_SYMBOLS), key=lambda s: s.name)
    rewritten, notes = _reparametrise(deriv, rels, counts)
    with_notes = ", ".join(note for s, note in notes if s in deriv.free_symbols)
    # cheap rewritings first, on the derivative in positive terms, then the expensive ones
    for form, expensive in ((rewritten, False), (deriv, True), (rewritten, True)):
        if (form is deriv or rewritten != deriv) and _nonnegative(form, expensive):
            how = f"{shown} >= 0 by sign analysis" + (
                f", with {with_notes}" if form is rewritten and with_notes else "")
            return "proven", how, deriv
    return _grid(outer, deriv, x, sorted(syms, key=lambda s: s.name), rels,
                 grid_ranges(sorted(syms, key=lambda s: s.name), dict(domain), regime))


# ------------------------------------------------------------------ tier 1: sign analysis
def _nonnegative(expr: sp.Expr, expensive: bool) -> bool:
    """Whether sympy can show ``expr >= 0``: the expression and a few rewritings of it.

    Cheap: the expression, ``together`` and ``expand``; expensive: ``factor`` and
    ``simplify`` (skipped above :data:`_SIMPLIFY_LIMIT` operations).
    """
    if not expensive and _sign_nonnegative(expr):
        return True
    if expensive:
        if sp.count_ops(expr) > _SIMPLIFY_LIMIT:
            return False
        forms = [sp.factor, sp.simplify]
    else:
        forms = [sp.together, sp.expand]
    for form in forms:
        try:
            other = form(expr)
        except (sp.PolynomialError, NotImplementedError, TypeError):
            continue
        if other != expr and _sign_nonnegative(other):
            return True
    return False


def _sign_nonnegative(e: sp.Expr) -> bool:
    """Sign analysis: sums and products of nonnegative terms, even roots, exp, log(>= 1)."""
    if e.is_nonnegative:
        return True
    if e.is_number:
        return bool(e.is_nonnegative)
    if isinstance(e, sp.Add):
        return all(_sign_nonnegative(a) for a in e.args)
    if isinstance(e, sp.Mul):
        coeff, rest = e.as_coeff_Mul()
        return coeff >= 0 and all(_sign_nonnegative(f) for f in sp.Mul.make_args(rest))
    if isinstance(e, sp.Pow):
        base, k = e.args
        if k.is_Rational and (k.q % 2 == 0 or (k.q == 1 and k.p % 2 == 0)):
            return True  # even power, or principal even root (>= 0 wherever it is real)
        return _sign_nonnegative(base)
    if isinstance(e, sp.exp | sp.Abs):
        return True
    if isinstance(e, sp.log):
        return _sign_nonnegative(sp.together(e.args[0] - 1))
    if isinstance(e, sp.Max):
        return any(_sign_nonnegative(a) for a in e.args)
    if isinstance(e, sp.Min):
        return all(_sign_nonnegative(a) for a in e.args)
    return False


def _reparametrise(expr: sp.Expr, relations: Sequence[Relational],
                   counts: Sequence[sp.Symbol] = ()) -> tuple[sp.Expr, list[tuple[sp.Symbol, str]]]:
    """Rewrite symbols bounded by a relation in positive terms (a map onto the region).

    ``x <= U`` becomes ``x = U/(1 + p)`` and ``x >= D`` becomes ``x = D + p`` with a fresh
    ``p >= 0`` (``p > 0`` for strict relations). Every point of the region is the image of
    some ``p``, so a sign proved for all ``p`` holds on the region (the rewriting may cover
    more than the region; that only makes the proof harder). Relations applied one after
    another, each on the previous ones' result, then ``c >= 1`` for each count ``c``; a
    relation that bounds no single symbol is skipped (the region grows: still sound).
    """
    mapping: dict[sp.Symbol, sp.Expr] = {}
    notes: list[tuple[sp.Symbol, str]] = []
    shown: dict[sp.Symbol, sp.Symbol] = {}  # the fresh symbols, printed without "_"
    for i, rel in enumerate([*relations, *(c >= 1 for c in counts)]):
        solved = _solve(rel.xreplace(mapping))
        if solved is None:
            continue
        x, bound, upper, strict = solved
        p = sp.Dummy(f"p_{x.name}", positive=True) if strict else sp.Dummy(
            f"p_{x.name}", nonnegative=True)
        shown[p] = sp.Symbol(p.name)
        value = bound / (1 + p) if upper else bound + p
        mapping = {k: v.xreplace({x: value}) for k, v in mapping.items()}
        mapping[x] = value
        text = sp.sstr(value.xreplace(shown))
        if len(text) > 40:
            text = f"(its upper bound)/(1 + p_{x.name})" if upper else (
                f"(its lower bound) + p_{x.name}")
        notes.append((x, f"{x.name} = {text}" + (" (a count)" if i >= len(relations) else "")))
    return expr.xreplace(mapping), notes


def _solve(rel: Relational) -> tuple[sp.Symbol, sp.Expr, bool, bool] | None:
    """``(x, bound, is_upper, strict)`` when ``rel`` bounds one symbol ``x`` by the rest."""
    if not isinstance(rel, Relational):
        return None
    strict = isinstance(rel, sp.StrictLessThan | sp.StrictGreaterThan)
    less = isinstance(rel, sp.StrictLessThan | sp.LessThan)
    for side, other, upper in ((rel.lhs, rel.rhs, less), (rel.rhs, rel.lhs, not less)):
        for x in sorted(side.free_symbols, key=lambda s: s.name):
            if x in other.free_symbols or not (x.is_positive or x.is_nonnegative):
                continue
            rest = side / x
            if x in rest.free_symbols or not rest.is_positive:
                continue
            return x, other / rest, upper, strict
    return None


# ------------------------------------------------------------------ tier 2: the grid
def _axis(lo: float, hi: float, k: int, nonneg: bool) -> np.ndarray:
    vals = np.geomspace(lo, hi, k)
    return np.concatenate(([0.0], vals)) if nonneg else vals


def _grid(outer: sp.Expr, deriv: sp.Expr, x: sp.Symbol, syms: list[sp.Symbol],
          rels: list[Relational], ranges: dict[str, tuple[float, float]]
          ) -> tuple[str, str, sp.Expr] | str:
    n = len(syms)
    k = max(2, min(9, int(math.floor(GRID_TENSOR_BUDGET ** (1 / n) + 1e-9))))
    axes = [_axis(*ranges[s.name], k, bool(s.is_nonnegative and not s.is_positive))
            for s in syms]
    sizes = [len(a) for a in axes]
    if math.prod(sizes) <= 4 * GRID_TENSOR_BUDGET:
        mesh = np.meshgrid(*axes, indexing="ij")
        tensor = np.stack([m.ravel() for m in mesh], axis=1)
    else:  # too many corners for every combination: a seeded sample of them
        rng = np.random.default_rng(0)
        pick = rng.integers(0, 2, size=(GRID_TENSOR_BUDGET, n))
        tensor = np.array([[axes[j][0], axes[j][-1]] for j in range(n)])[np.arange(n), pick.T].T
    unit = _halton(GRID_LOW_DISCREPANCY_POINTS, n)
    lo = np.array([math.log(ranges[s.name][0]) for s in syms])
    hi = np.array([math.log(ranges[s.name][1]) for s in syms])
    points = np.concatenate([tensor, np.exp(lo + unit * (hi - lo))])
    cols = [points[:, j] for j in range(n)]
    with np.errstate(all="ignore"):
        ok = np.ones(len(points), dtype=bool)
        for rel in rels:
            ok &= np.broadcast_to(np.asarray(sp.lambdify(syms, rel, "numpy")(*cols), dtype=bool),
                                  ok.shape)
        value = _numeric(outer, syms, cols)
        slope = _numeric(deriv, syms, cols)
        scale = sum(np.abs(_numeric(t, syms, cols)) for t in sp.Add.make_args(deriv))
        ok &= np.isfinite(value) & np.isfinite(slope) & np.isfinite(scale)
        rel_slope = np.where(ok, slope / np.maximum(scale, np.finfo(float).tiny), np.inf)
    if not ok.any():
        return (f"not proven by sympy, and none of the {len(points)} grid points satisfies the "
                "assumptions with a real, finite bound; pass domain= to give the ranges")
    worst = int(np.argmin(rel_slope))
    if rel_slope[worst] < -TOLERANCE:
        at = ", ".join(f"{s.name}={points[worst, j]:.6g}" for j, s in enumerate(syms))
        return (f"d/d{x.name} = {slope[worst]:.6g} < 0 at {at}; restrict it with an Assumption "
                "relation (or domain=) if the bound is only used where it increases")
    spans = ", ".join(f"{s.name} in [{ranges[s.name][0]:.3g}, {ranges[s.name][1]:.3g}]"
                      + (" and 0" if s.is_positive is not True else "") for s in syms)
    how = (f"{int(ok.sum())} of {len(points)} points satisfy the assumptions: "
           f"log-spaced tensor grid of {'x'.join(map(str, sizes))} points with its corners + "
           f"{GRID_LOW_DISCREPANCY_POINTS} Halton points; {spans}; no decrease beyond relative "
           f"tolerance {TOLERANCE:g}")
    return "grid", how, deriv


def _halton(count: int, dim: int) -> np.ndarray:
    """The first ``count`` points of the Halton sequence in ``[0, 1)^dim`` (deterministic)."""
    primes: list[int] = []
    candidate = 2
    while len(primes) < dim:
        if all(candidate % q for q in primes):
            primes.append(candidate)
        candidate += 1
    index = np.arange(1, count + 1)
    out = np.zeros((count, dim))
    for j, base in enumerate(primes):
        i, scale = index.copy(), 1.0
        while np.any(i > 0):
            scale /= base
            out[:, j] += scale * (i % base)
            i //= base
    return out


def _numeric(expr: sp.Expr, syms: list[sp.Symbol], cols: list[np.ndarray]) -> np.ndarray:
    """``expr`` at the grid points; NaN where it is not real."""
    out = np.asarray(sp.lambdify(syms, expr, "numpy")(*cols))
    if np.iscomplexobj(out):
        out = np.where(np.abs(out.imag) <= 1e-12 * np.abs(out.real), out.real, np.nan)
    return np.broadcast_to(out.astype(float), cols[0].shape)


if __name__ == "__main__":  # pragma: no cover - the generator of monotone_checks.json
    import sys as _sys

    if _sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m dpbounds.bounds.theorem.monotonicity --write")
    print(f"{_write_shipped()} checks written to {SHIPPED_CHECKS}")
