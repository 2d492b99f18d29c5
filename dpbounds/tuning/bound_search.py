r"""Search a registered bound's declared hyper-parameters: a dense grid, then a bounded refine.

Any registered bound (the package's own or a plug-in's, :mod:`dpbounds.extend`) declares the
hyper-parameters it may be tuned over and their ranges (``tunable``: name -> ``(low, high)``).
:func:`search_bound` minimises the bound over them at one problem:

1. a log-spaced grid of ``grid`` points per hyper-parameter over its range (a count such as
   ``T`` is searched over integers only: the run needs one), evaluated at once (the bound is
   vectorised); the product grid is capped at :data:`MAX_GRID_POINTS`;
2. a bounded refine from the best grid point, inside its neighbouring grid cells (scipy's
   bounded scalar search for one hyper-parameter, L-BFGS-B in log space for several); a count
   is then rounded to the better of its two neighbouring integers.

The tuned row is never worse than the best grid point (the refine is kept only where it
improves). The result (:class:`BoundSearch`) has ``rows()`` and ``table()`` beside the
closed-form choice of the theorem. Unlike ``Entry.optimize`` (a local search from the closed
form, what ``dpbounds bound`` prints as *tuned*), this search is global over the declared box.

Example
-------
>>> import sympy as sp
>>> from dpbounds.bounds.registry import Entry
>>> from dpbounds.bounds.theorem import Theorem, sym
>>> from dpbounds.provenance import Source, Provenance
>>> T, a = sym("T"), sym("a")
>>> th = Theorem(name="nonconvex.toy", quantity="q", expr=a / T + T,
...              sources=(Source("me", "1", Provenance.DERIVED),))
>>> e = Entry(name="nonconvex.toy", title="toy", problem_class="nonconvex", theorem=th, tuned=th,
...           to_params=lambda p: dict(p), tunable={"T": (1.0, 1e4)})
>>> res = search_bound(e, {"a": 100.0})
>>> res.tuned.hyperparameters, round(res.tuned.bound, 9)
({'T': 10.0}, 20.0)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._validation import check_int, real_scalar
from dpbounds.bounds.theorem import COUNT_SYMBOLS

__all__ = ["MAX_GRID_POINTS", "BoundSearch", "SearchRow", "search_bound"]

#: largest product grid evaluated (grid ** number of hyper-parameters)
MAX_GRID_POINTS = 2_000_000
#: a declared range whose low end is below this (or whose high end is infinite) is open: the
#: search then covers the closed-form choice times / divided by _WINDOW, inside the range
_OPEN_LOW = 1e-200
_WINDOW = 1e4


@dataclass(frozen=True)
class SearchRow:
    """One choice of hyper-parameters: ``label``, the values, the bound there, and extra
    columns (e.g. the noise a method calibrates at that horizon)."""

    label: str
    hyperparameters: dict[str, float]
    bound: float
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class BoundSearch:
    """What :func:`search_bound` found: the closed-form row (when the theorem has one), the
    best grid point and the tuned (refined) row."""

    name: str
    problem: dict[str, float]
    over: tuple[str, ...]
    ranges: dict[str, tuple[float, float]]
    grid_points: int
    choices: tuple[SearchRow, ...]
    provenance: str = ""
    #: what the rows alone do not say: a closed form that is not finite here, a tuned value at
    #: the edge of its range (the optimum may lie beyond it)
    notes: tuple[str, ...] = ()

    @property
    def tuned(self) -> SearchRow:
        """The tuned row (the last one)."""
        return self.choices[-1]

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-able dict per row."""
        return [dict(label=r.label, bound=r.bound, **r.hyperparameters, **r.extra)
                for r in self.choices]

    def table(self) -> str:
        """The rows as a text table, with the search's box and grid size."""
        extra = list(dict.fromkeys(k for r in self.choices for k in r.extra))
        cols = ["choice", "bound", *self.over, *extra]
        body = [[r.label, _fmt(r.bound), *(_fmt(r.hyperparameters.get(k, math.nan))
                                           for k in self.over),
                 *(_fmt(r.extra.get(k, math.nan)) for k in extra)] for r in self.choices]
        width = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
        lines = [f"{self.name}: search over "
                 + ", ".join(f"{k} in [{_fmt(lo)}, {_fmt(hi)}]"
                             for k, (lo, hi) in self.ranges.items())
                 + f" ({self.grid_points} grid points, then a bounded refine)"]
        # every value the bound read, the defaults too (G = 1 and delta = 1e-5 were used
        # without a word when not given: walkthrough of stop 75)
        fixed = {k: v for k, v in self.problem.items() if k not in self.over}
        if fixed:
            lines.append("  at " + ", ".join(f"{k}={_fmt(v)}" for k, v in fixed.items()))
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cols, width)))
        lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(b, width)) for b in body]
        if self.provenance:
            lines.append(f"  label: {self.provenance} (the bound's; the search adds no "
                         "formula)")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _fmt(v: float) -> str:
    if not math.isfinite(v):  # a bound the search maps to inf is not a value: n/a (notes)
        return "-" if math.isnan(v) else "n/a"
    return f"{v:.4e}" if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3) else f"{v:.6g}"


def _axis(name: str, lo: float, hi: float, n: int) -> np.ndarray:
    pts = np.geomspace(lo, hi, n)
    if name in COUNT_SYMBOLS:  # a count: integers only (the run needs one)
        pts = np.unique(np.clip(np.rint(pts), math.ceil(lo), math.floor(hi)))
    return pts


def _refuse_negative_beside(entry: Any, th: Any, params: Mapping[str, Any],
                            fixed: Mapping[str, float], names: Sequence[str],
                            axes: Sequence[np.ndarray], vals: np.ndarray,
                            idx: tuple[int, ...]) -> None:
    """A ``ValueError`` where the grid's best point borders one at which the bound's formula
    is negative: a bound on an error is >= 0, so the formula is outside its valid range
    there, and its smallest value is where it crosses 0, not an optimum (a plug-in's
    ``1/T - 1/10 + d/(N eps)`` "tuned" to T = 10). Points where a declared assumption fails
    are not negative: they are the bound's declared edge."""
    for axis in range(len(idx)):
        for step in (-1, 1):
            j = list(idx)
            j[axis] += step
            if not 0 <= j[axis] < vals.shape[axis] or np.isfinite(vals[tuple(j)]):
                continue
            at = {k: float(a[i]) for k, a, i in zip(names, axes, j)}
            try:
                th.evaluate(ignore_extra=True, invalid="raise", **dict(params, **fixed, **at))
            except (TypeError, ValueError) as exc:
                if "negative" not in str(exc):
                    continue
                where = ", ".join(f"{k}={v:.4g}" for k, v in at.items())
                raise ValueError(
                    f"{entry.name}: the bound is negative at {where}, beside the grid's "
                    "smallest value: it bounds an error (>= 0), so its formula is outside "
                    "its valid range there and the search would tune to where it crosses 0; "
                    "declare the assumption that keeps it valid, or narrow the range "
                    "(--range)") from None


def search_bound(entry: Any, problem: Mapping[str, Any] | None = None, *,
                 over: Sequence[str] | None = None,
                 ranges: Mapping[str, tuple[float, float]] | None = None,
                 grid: int | None = None, refine: bool = True) -> BoundSearch:
    """Minimise a registered bound over its declared hyper-parameters at one problem.

    Parameters
    ----------
    entry:
        The :class:`~dpbounds.bounds.registry.Entry` (a registered bound, e.g. a plug-in's).
    problem:
        The problem (``d, N, eps, delta, G, L, R`` and the theorem's own constants).
    over:
        Hyper-parameters searched (default: every one ``entry.tunable`` declares, and those
        ``ranges`` names).
    ranges:
        ``name -> (low, high)`` overriding the declared ranges (``0 < low < high``, finite).
    grid:
        Points per hyper-parameter in ``[2, 100000]`` (log-spaced; integers for a count);
        default 257, fewer for several hyper-parameters (the product stays within
        :data:`MAX_GRID_POINTS`).
    refine:
        Refine the best grid point inside its neighbouring cells (default ``True``).

    Returns
    -------
    BoundSearch
        Its rows: ``closed form`` (where the theorem gives one), ``grid`` and ``tuned``.
    """
    from scipy.optimize import minimize, minimize_scalar

    params = entry.params(problem)
    th = entry.theorem
    # the names first: they read no value (the CLI checks them before its imports)
    names = (tuple(over) if over is not None
             else tuple(dict.fromkeys([*entry.tunable, *(ranges or {})])))
    if len(set(names)) < len(names):  # `--over C C` searched and printed C twice
        twice = sorted({k for k in names if names.count(k) > 1})
        raise ValueError(f"over names {', '.join(twice)} more than once")
    # a computed bound's own choices (heavy ball's alpha, beta, T: learnt at its first
    # evaluation) are not inputs it takes: searching one moved nothing, and it was accepted
    # only after an evaluation in the same process
    chosen = () if entry.numeric else (getattr(th, "hyperparameters", None) or {})
    known = {*entry.tunable, *chosen,
             *(getattr(th, "parameters", None) or ())} - set(params)
    for k in dict.fromkeys([*names, *(ranges or {})]):
        if known and k not in known:
            # `--range X 1 2` searched a parameter the bound does not have (66,049 points)
            raise ValueError(f"{k!r} is not a hyper-parameter of {entry.name} (its "
                             f"hyper-parameters: {', '.join(sorted(known)) or 'none'})")
    closed = entry.hyperparameters(problem) if getattr(th, "hyperparameters", None) else {}
    box: dict[str, tuple[float, float]] = {}
    for k, rng in entry.tunable.items():  # a declared range may depend on the problem
        low, high = rng(params) if callable(rng) else rng
        if k in closed and not (low > _OPEN_LOW and high < math.inf):
            # an open declared range (e.g. (1e-300, inf)): a window around the closed form
            c = float(closed[k])
            low, high = max(float(low), c / _WINDOW), min(float(high), c * _WINDOW)
        box[k] = (float(low), float(high))
    for k, rng in (ranges or {}).items():  # given ranges win
        box[k] = (float(rng[0]), float(rng[1]))
    if not names:
        raise ValueError(f"{entry.name} declares no tunable hyper-parameters: give a name "
                         "and its range (ranges={name: (low, high)}; on the command line "
                         "--range NAME LOW HIGH), or declare tunable= on the theorem")
    if grid is None:  # as fine as the cap allows, at most 257 points per hyper-parameter
        grid = max(2, min(257, int(MAX_GRID_POINTS ** (1 / len(names)))))
    grid = check_int("grid", grid, minimum=2, maximum=100_000)
    for k in names:
        if k not in box:
            raise ValueError(f"over: {k!r} has no range (declared: "
                             f"{', '.join(box) or 'none'}): give one (ranges={{{k!r}: (low, "
                             f"high)}}; on the command line --range {k} LOW HIGH)")
        lo, hi = box[k]
        if not (0 < lo < hi < math.inf):
            raise ValueError(f"range of {k} must satisfy 0 < low < high < inf, got "
                             f"({lo!r}, {hi!r})")
        if k in COUNT_SYMBOLS and math.floor(hi) < max(1, math.ceil(lo)):
            raise ValueError(f"range of {k} (a count) holds no integer >= 1: ({lo!r}, {hi!r})")
    axes = [_axis(k, box[k][0], box[k][1], grid) for k in names]
    size = math.prod(len(a) for a in axes)
    if size > MAX_GRID_POINTS:
        raise ValueError(f"grid: {grid} points per hyper-parameter give {size:,} points for "
                         f"{len(names)} hyper-parameters (at most {MAX_GRID_POINTS:,}; use a "
                         "smaller grid)")
    fixed = {k: float(v) for k, v in closed.items() if k not in names}

    def value(**hp: Any) -> np.ndarray:
        args = dict(params, **fixed, **hp)
        try:
            out = th.evaluate(ignore_extra=True, invalid="nan", **args)
            arr = np.asarray(out, dtype=float)
        except (TypeError, ValueError):  # a bound that takes scalars only: one by one
            shape = np.broadcast(*[np.asarray(v) for v in hp.values()]).shape
            flat = {k: np.broadcast_to(np.asarray(v, dtype=float), shape).ravel()
                    for k, v in hp.items()}
            vals = []
            for i in range(int(np.prod(shape))):
                try:
                    vals.append(float(th.evaluate(ignore_extra=True, invalid="nan",
                                                  **dict(args, **{k: float(flat[k][i])
                                                                  for k in flat}))))
                except ValueError:
                    vals.append(math.nan)
            arr = np.asarray(vals).reshape(shape)
        return np.where(np.isfinite(arr), arr, np.inf)

    mesh = np.meshgrid(*axes, indexing="ij")
    with np.errstate(all="ignore"):
        vals = np.broadcast_to(value(**dict(zip(names, mesh))), mesh[0].shape)
    if not np.isfinite(vals).any():
        # which assumption fails, in the bound's words, at the grid's middle point (it said
        # "check the problem" where `bound` names "eps <= log(1/delta)")
        mid = {k: float(a[len(a) // 2]) for k, a in zip(names, axes)}
        why = ""
        try:
            th.evaluate(ignore_extra=True, invalid="raise", **dict(params, **fixed, **mid))
        except (TypeError, ValueError) as exc:
            why = (f"; at {', '.join(f'{k}={v:.4g}' for k, v in mid.items())}: "
                   + str(exc).split("\n")[0])
        raise ValueError(f"{entry.name}: the bound is not finite anywhere on the grid "
                         f"(ranges {box}){why or '; check the problem or widen the ranges'}")
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmin(vals)), vals.shape))
    _refuse_negative_beside(entry, th, params, fixed, names, axes, vals, idx)
    best = {k: float(a[i]) for k, a, i in zip(names, axes, idx)}
    best_val = float(vals[idx])
    rows = []
    if all(k in closed for k in names):
        cv = float(value(**{k: np.asarray(closed[k]) for k in names}))
        rows.append(SearchRow("closed form", {k: float(closed[k]) for k in names}, cv))
    rows.append(SearchRow("grid", dict(best), best_val))
    tuned, tuned_val = dict(best), best_val
    if refine:
        cells = []  # the neighbouring grid cells of the best point, in log space
        for a, i in zip(axes, idx):
            cells.append((math.log(a[max(i - 1, 0)]), math.log(a[min(i + 1, len(a) - 1)])))

        def f(z: Any) -> float:
            with np.errstate(all="ignore"):
                v = float(value(**{k: np.asarray(math.exp(x))
                                   for k, x in zip(names, np.atleast_1d(z))}))
            return v if math.isfinite(v) else 1e300

        if len(names) == 1:
            lo, hi = cells[0]
            r = minimize_scalar(f, bounds=(lo, hi), method="bounded",
                                options={"xatol": 1e-10}) if hi > lo else None
            z = None if r is None else np.atleast_1d(r.x)
        else:
            z = minimize(f, np.log([best[k] for k in names]), method="L-BFGS-B",
                         bounds=cells).x
        if z is not None:
            cand = {k: math.exp(x) for k, x in zip(names, z)}
            counts = [k for k in names if k in COUNT_SYMBOLS]
            options = [dict(cand)]
            if counts:  # a count: the better integer neighbour (inside the box)
                options = []
                for combo in itertools.product(*[(math.floor(cand[k]), math.ceil(cand[k]))
                                                 for k in counts]):
                    o = dict(cand, **dict(zip(counts, (float(c) for c in combo))))
                    if all(box[k][0] <= o[k] <= box[k][1] and o[k] >= 1 for k in counts):
                        options.append(o)
            for o in options:
                at = float(value(**{k: np.asarray(x) for k, x in o.items()}))
                if at < tuned_val:
                    tuned, tuned_val = o, at
    rows.append(SearchRow("tuned", tuned, tuned_val))
    notes = []
    if rows[0].label == "closed form" and not math.isfinite(rows[0].bound):
        notes.append("closed form n/a: the bound is not finite at the theorem's own choices "
                     "here (they leave its assumptions, e.g. a count below 1, or overflow; "
                     f"'dpbounds bound {entry.name}' says which)")
    low = {k for k in names if tuned[k] <= box[k][0] * (1 + 1e-9)}
    high = {k for k in names if tuned[k] >= box[k][1] * (1 - 1e-9)} - low

    def beyond_defined(k: str) -> bool:
        """Whether the bound is defined just past ``k``'s edge (an edge where it is not, as
        DP-NAG's c <= 1, is the domain's, not the search's)."""
        step = box[k][0] * (1 - 1e-6) if k in low else box[k][1] * (1 + 1e-6)
        with np.errstate(all="ignore"):
            return bool(np.isfinite(value(**dict(tuned, **{k: np.asarray(step)}))).all())

    domain = {k for k in low | high if not beyond_defined(k)}
    for k in sorted(domain):
        notes.append(f"{k} = {_fmt(tuned[k])} is at the {'lower' if k in low else 'upper'} "
                     f"end of where the bound is defined")
    edges = [f"{k} = {_fmt(tuned[k])} at the {'lower' if k in low else 'upper'} end of "
             f"[{_fmt(box[k][0])}, {_fmt(box[k][1])}]" for k in names
             if k in (low | high) - domain]
    if edges:
        notes.append("tuned at the edge of the search range: " + "; ".join(edges)
                     + " (the optimum may lie beyond: widen it with --range NAME LOW HIGH)")
    prov = getattr(getattr(entry, "tuned", None), "provenance", "")
    # a NumPy scalar or 0-d array is a number too (np.int64 d, np.float32 N and np.array(1.0)
    # eps were dropped from the record while the bound read them)
    return BoundSearch(entry.name, {k: float(v) for k, v in params.items()
                                    if real_scalar(v)}, names,
                       {k: box[k] for k in names}, size, tuple(rows), str(prov), tuple(notes))
