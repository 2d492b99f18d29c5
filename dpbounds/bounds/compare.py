"""Side-by-side comparison of the registered bounds that fit one problem.

:func:`compare` evaluates every registered bound of the problem's class at one problem
(:mod:`dpbounds.bounds.problem`: ``d, N, eps, delta, G, L, R`` and the optional keys) — with the
closed-form hyper-parameter choice and, optionally, numerically tuned hyper-parameters —, names
the best, and finds where one bound overtakes another along a variable (:func:`crossover`; by
default the dataset size ``N``). The problem's class is ``nonconvex`` unless the strong
convexity ``mu`` is given (``strongly_convex``) or ``problem_class`` says otherwise; the bounds
of the other classes are listed as not applicable, with the reason in words (a strongly convex
bound needs ``mu`` and the sensitivity ``S1``; a non-convex bound bounds a different quantity).

All Tran & Cutkosky and Yang et al. constants are DERIVED by dpbounds (see the modules); the
comparison is between *our* derived bounds, whose exponents match the papers' abstracts.
Yang et al. assume :math:`(L_0,L_1)`-smoothness and a gradient-noise level :math:`\\tau_0`
instead of a gradient bound; the shared problem is mapped as :math:`\\tau_0=2G`, :math:`L_0=L`,
:math:`L_1=0`, :math:`D_f=R` unless given.

Example
-------
>>> from dpbounds.bounds.compare import compare
>>> table = compare(tune=False, crossovers=False)
>>> table.best in {row.name for row in table.rows}
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dpbounds.bounds import registry
from dpbounds.bounds.problem import DEFAULT_PROBLEM, problem_class

__all__ = ["Comparison", "Regime", "compare", "compare_table", "crossover", "regime",
           "trivial_bounds", "vacuous_reason"]


@dataclass(frozen=True)
class TrivialBound:
    """A value the bounded quantity never exceeds (or that doing nothing achieves): a bound at
    or above it says nothing at this problem."""

    value: float
    reason: str

    def __str__(self) -> str:
        return f"{self.value:.4g} ({self.reason})"


def trivial_bounds(name: str | registry.Entry, problem: Mapping[str, Any]) -> list[TrivialBound]:
    r"""What a bound must beat to say anything at ``problem`` (DERIVED, elementary facts).

    * non-convex (:math:`\mathbb E\lVert\nabla F\rVert`): :math:`G`, since every sample loss is
      :math:`G`-Lipschitz; and the do-nothing output :math:`x_0`, whose gradient is at most
      :math:`\sqrt{2LR}` for an :math:`L`-smooth :math:`F` on :math:`\mathbb R^d` with
      :math:`F(x_0)-\inf F\le R` (one gradient step of length :math:`1/L` lowers :math:`F` by
      :math:`\lVert\nabla F(x_0)\rVert^2/(2L)`); not used when Yang et al.'s ``L1 > 0``;
    * convex (excess empirical risk over a set of diameter ``diam``, default ``R``): any point of
      the set, :math:`x_0` included, has excess at most :math:`G\cdot\mathrm{diam}`;
    * strongly convex / quadratic (:math:`\mathbb E F(x_T)-F^*`): doing nothing keeps
      :math:`F(x_0)-F^*\le R`.
    """
    e = registry.get(name) if isinstance(name, str) else name
    p = {**DEFAULT_PROBLEM, **problem}
    out: list[TrivialBound] = []
    if e.problem_class == "nonconvex":
        out.append(TrivialBound(float(p["G"]), "G: ||grad F|| <= G always"))
        if not p.get("L1"):
            out.append(TrivialBound(math.sqrt(2.0 * p["L"] * p["R"]),
                                    "sqrt(2 L R): ||grad F(x0)|| of doing nothing"))
    elif e.problem_class == "convex":
        diam = float(p.get("diam") or p["R"])
        out.append(TrivialBound(float(p["G"]) * diam,
                                "G diam: excess risk of any point of the set, x0 included"))
    else:
        out.append(TrivialBound(float(p["R"]), "R: F(x0) - F* of doing nothing"))
    return sorted(out, key=lambda b: b.value)


def vacuous_reason(name: str | registry.Entry, problem: Mapping[str, Any],
                   value: float) -> str | None:
    """Why ``value`` of bound ``name`` says nothing at ``problem`` (``None`` if informative):
    it is not finite, or at or above the smallest of :func:`trivial_bounds`."""
    if not math.isfinite(value):
        return f"bound {value} is not finite"
    low = trivial_bounds(name, problem)[0]
    if value >= low.value:
        return f"bound {value:.4g} >= {low}"
    return None


@dataclass(frozen=True)
class Row:
    """One bound at one problem."""

    name: str
    title: str
    provenance: str
    value: float
    tuned_value: float | None
    hyperparameters: dict[str, float]
    tuned_hyperparameters: dict[str, float] | None
    gradients: float | None
    scaling: str
    notes: str = ""
    #: why the bound does not apply at this problem ("" when it does; then ``value`` is nan)
    not_applicable: str = ""
    #: "symbolic" or "numeric: <method>"
    kind: str = "symbolic"

    @property
    def applicable(self) -> bool:
        return not self.not_applicable


@dataclass(frozen=True)
class Crossover:
    """``better`` beats ``worse`` for ``variable`` above (or below) ``value``."""

    better: str
    worse: str
    variable: str
    value: float
    side: str  # "above" or "below"
    #: the common value of the two bounds at the crossing (nan when not computed)
    bound_value: float = math.nan
    #: why the crossing says nothing ("" when at least one bound is informative there)
    vacuous: str = ""

    @property
    def informative(self) -> bool:
        return not self.vacuous

    def __str__(self) -> str:
        text = (f"{self.better} beats {self.worse} for {self.variable} {self.side} "
                f"{self.value:.4g}")
        return text + (f" (both vacuous there: {self.vacuous})" if self.vacuous else "")


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`."""

    problem: dict[str, float]
    rows: list[Row]
    best: str | None
    best_tuned: str | None
    crossovers: list[Crossover] = field(default_factory=list)
    #: registered bounds that are not compared at this problem, with the reason in words
    excluded: dict[str, str] = field(default_factory=dict)
    #: the problem's class (the bounds of this class are the rows)
    problem_class: str = "nonconvex"

    @property
    def not_applicable(self) -> dict[str, str]:
        """Bounds whose assumptions fail at this problem, with the reason."""
        return {r.name: r.not_applicable for r in self.rows if not r.applicable}

    #: crossings found where both bounds are vacuous (not reported as crossovers)
    vacuous_crossovers: list[Crossover] = field(default_factory=list)

    @property
    def vacuous_reasons(self) -> dict[str, str]:
        """Bounds that say nothing at this problem, with why (:func:`vacuous_reason` of the
        better of the closed-form and tuned values)."""
        out = {}
        for r in self.rows:
            if r.applicable:
                why = vacuous_reason(r.name, self.problem,
                                     min(v for v in (r.value, r.tuned_value) if v is not None))
                if why is not None:
                    out[r.name] = why
        return out

    @property
    def vacuous(self) -> list[str]:
        """Bounds that say nothing at this problem (see :func:`trivial_bounds`)."""
        return list(self.vacuous_reasons)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-serialisable)."""
        return {
            "problem_class": self.problem_class,
            "vacuous": self.vacuous,
            "vacuous_reasons": self.vacuous_reasons,
            "trivial_bounds": {r.name: [asdict(b) for b in trivial_bounds(r.name, self.problem)]
                               for r in self.rows},
            "not_applicable": self.not_applicable,
            "excluded": dict(self.excluded),
            "problem": dict(self.problem),
            "rows": [{**asdict(r), "value": r.value if r.applicable else None}
                     for r in self.rows],
            "best": self.best,
            "best_tuned": self.best_tuned,
            "crossovers": [asdict(c) for c in self.crossovers],
            "vacuous_crossovers": [asdict(c) for c in self.vacuous_crossovers],
        }

    def to_text(self) -> str:
        """A plain-text table (what ``dpbounds compare`` prints)."""
        p = ", ".join(f"{k}={_fmt(v)}" for k, v in self.problem.items()
                      if k != "problem_class")
        lines = [f"problem: {p}", f"problem class: {self.problem_class} "
                 f"({registry.CLASS_WORDS[self.problem_class]})", ""]
        head = ("bound", "closed form", "tuned", "gradients", "scaling (up to logs)", "label")
        body = []
        for r in self.rows:
            if not r.applicable:
                body.append((r.name, "n/a", "-", "-", r.scaling, r.provenance))
                continue
            body.append((
                r.name,
                _fmt(r.value),
                _fmt(r.tuned_value) if r.tuned_value is not None else "-",
                _fmt(r.gradients) if r.gradients is not None else "-",
                r.scaling,
                r.provenance,
            ))
        widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines.append(fmt.format(*head))
        lines.append(fmt.format(*("-" * w for w in widths)))
        lines += [fmt.format(*b) for b in body]
        lines.append("")
        for name, why in self.not_applicable.items():
            lines.append(f"not applicable here: {name}: {why}")
        for name, why in self.excluded.items():
            lines.append(f"not applicable: {name}: {why}")
        for name, why in self.vacuous_reasons.items():
            lines.append(f"vacuous here: {name}: {why}")
        informative = "none (every bound that applies is vacuous here)" if any(
            r.applicable for r in self.rows) else "none (no bound applies)"
        lines.append(f"best (closed-form choices): {self.best or informative}")
        if self.best_tuned:
            lines.append(f"best (tuned hyper-parameters): {self.best_tuned}")
        for c in self.crossovers:
            lines.append(f"crossover: {c}")
        if self.vacuous_crossovers:
            lines.append(f"not reported: {len(self.vacuous_crossovers)} crossing(s) where both "
                         "bounds are vacuous (--json: vacuous_crossovers)")
        lines.append("")
        lines.append("hyper-parameters (closed form -> tuned):")
        for r in self.rows:
            if not r.applicable:
                continue
            # 'none' where the bound has no hyper-parameter to choose ("convex.x: " read as
            # a line cut off: fuzz round 9)
            hp = ", ".join(f"{k}={_fmt(v)}" for k, v in r.hyperparameters.items()) or "none"
            lines.append(f"  {r.name}: {hp}")
            if r.tuned_hyperparameters:
                tp = ", ".join(f"{k}={_fmt(v)}" for k, v in r.tuned_hyperparameters.items())
                lines.append(f"  {' ' * len(r.name)}  tuned: {tp}")
        lines.append("")
        lines.append("notes:")
        for r in self.rows:
            if r.notes:
                lines.append(f"  {r.name}: {r.notes}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    v = float(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3e}"
    return f"{v:.4g}"


def _problem(problem: Mapping[str, float] | None, overrides: Mapping[str, float]) -> dict:
    p = dict(DEFAULT_PROBLEM)
    p.update(problem or {})
    p.update(overrides)
    return p


_RANGES = {"N": (2.0, 1e16), "d": (1.0, 1e12), "eps": (1e-4, None)}
#: grid points a crossover scan evaluates at once (the progress bar's step)
_SCAN_CHUNK = 20
#: grid points of :func:`compare`'s scans: :func:`crossover`'s default 400, and 100 along eps
#: (20 a decade from 1e-4 to log(1/delta)), where Yang et al.'s bounds fit their constant c2
#: by an RDP calibration at every eps (0.05-2 CPU-s each; 0.5-2 below eps = 1e-3)
_SCAN_POINTS = {"N": 400, "d": 400, "eps": 100}


def crossover(
    a: str,
    b: str,
    variable: str = "N",
    problem: Mapping[str, float] | None = None,
    *,
    low: float | None = None,
    high: float | None = None,
    points: int = 400,
    progress: Callable[[int], None] | None = None,
    **overrides: float,
) -> list[Crossover]:
    """Where bound ``a`` and bound ``b`` (closed-form choices) cross along ``variable``.

    Scans a log-spaced grid (vectorised evaluation, :data:`_SCAN_CHUNK` points at a time,
    each chunk reported to ``progress`` with its size), then refines each sign change of
    ``log(a/b)`` with Brent's method in log-space. Each crossing carries the bounds' common
    value there and, when both are vacuous there (:func:`vacuous_reason`), why: such a crossing
    orders two statements that say nothing (:func:`compare` does not report it).
    """
    p = _problem(problem, overrides)
    ea, eb = registry.get(a), registry.get(b)  # ids or aliases; reported as given
    lo_default, hi_default = _RANGES.get(variable, (1e-6, 1e6))
    if hi_default is None:  # eps (the one open range): log(1/delta)
        hi_default = math.log(1.0 / p["delta"])
    lo = low if low is not None else lo_default
    hi = high if high is not None else hi_default
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < low < high for the {variable} scan, got ({lo}, {hi})")
    grid = np.geomspace(lo, hi, points)

    def logratio(x: Any) -> Any:
        q = dict(p)
        q[variable] = x
        return np.log(ea.value(q, invalid="nan")) - np.log(eb.value(q, invalid="nan"))

    from scipy.optimize import brentq  # on first use: ~0.2 CPU-s of imports

    parts = []
    for k in range(0, grid.size, _SCAN_CHUNK):  # Yang et al.'s bounds fit a constant per
        parts.append(np.asarray(logratio(grid[k:k + _SCAN_CHUNK])))  # eps: seconds a chunk
        if progress is not None:
            progress(min(_SCAN_CHUNK, grid.size - k))
    vals = np.concatenate(parts)
    out: list[Crossover] = []
    finite = np.isfinite(vals[:-1]) & np.isfinite(vals[1:])
    for i in np.flatnonzero(finite & (np.sign(vals[:-1]) != np.sign(vals[1:]))):
        root = math.exp(brentq(lambda z: float(logratio(math.exp(z))),
                               math.log(grid[i]), math.log(grid[i + 1]), xtol=1e-12))
        better, worse = (a, b) if vals[i + 1] < 0 else (b, a)
        q = dict(p)
        q[variable] = root
        value = max(float(ea.value(q, invalid="nan")), float(eb.value(q, invalid="nan")))
        # the two agree at the root; vacuous only if neither says anything there
        why_a, why_b = vacuous_reason(ea, q, value), vacuous_reason(eb, q, value)
        vacuous = why_a if (why_a and why_b) else ""
        out.append(Crossover(better, worse, variable, root, "above", value, vacuous))
    return out


#: the classes whose bounds are compared (as rows) for a problem of each class: one quantity
#: per comparison (a quadratic problem is also strongly convex)
_COMPARED = {"nonconvex": ("nonconvex",), "convex": ("convex",),
             "strongly_convex": ("strongly_convex",),
             "quadratic": ("strongly_convex", "quadratic")}


def _excluded_reason(e: registry.Entry, p: Mapping[str, Any], cls: str) -> str:
    why = e.mismatch(p, cls)
    if why is not None:
        return why
    return (f"applies (a {registry.CLASS_WORDS[cls]} problem is also "
            f"{registry.CLASS_WORDS[e.problem_class]}), but bounds {e.quantity_words}; "
            f"compare it with --problem-class {e.problem_class}")


def compare(
    problem: Mapping[str, float] | None = None,
    names: Sequence[str] | None = None,
    *,
    family: str | None = None,
    tune: bool = True,
    crossovers: bool = True,
    crossover_variable: str = "N",
    progress: bool | None = False,
    **overrides: float,
) -> Comparison:
    """Evaluate the bounds that fit one problem side by side.

    Parameters
    ----------
    problem, **overrides:
        The shared problem ``d, N, eps, delta, G, L, R`` (defaults :data:`DEFAULT_PROBLEM`)
        and optional keys (``tau0``, ``L1``, ``c2``, ``diam``; ``mu``, ``S1``, ``m``,
        ``max_horizon`` for strongly convex problems; ``problem_class``).
    names:
        Registry ids or aliases to compare (default: every bound of the problem's class; the
        others are reported in ``excluded``).
    family:
        Compare the bounds of this class instead of the problem's (``"nonconvex"``; dpbounds
        0.1's ``"non-convex"`` is accepted).
    tune:
        Also tune the hyper-parameters numerically (slower).
    crossovers:
        Find every pairwise crossing along ``crossover_variable`` (between the symbolic bounds).
    progress:
        A bar over the crossover scans (:func:`~dpbounds._progress.progress_bar`: ``None``
        or ``True`` on a terminal): along ``eps`` a bound with a fitted constant per eps
        (Yang et al.'s) costs seconds to minutes the first time.
    """
    p = registry.check_problem(_problem(problem, overrides))
    cls = problem_class(p) if family is None else registry.canonical_class(family)
    if names is not None:  # ids or aliases, reported as given (each bound once)
        given: dict[str, str] = {}
        for n in names:
            given.setdefault(registry.get(n).name, n)
        chosen = list(given.values())
    else:
        chosen = [n for n in registry.names() if registry.get(n).problem_class in _COMPARED[cls]]
    if not chosen:
        raise ValueError(f"no bounds to compare (problem class {cls!r})")
    excluded = {} if names is not None else {
        n: _excluded_reason(registry.get(n), p, cls) for n in registry.names() if n not in chosen}
    rows: list[Row] = []
    for name in chosen:
        e = registry.get(name)
        why = e.mismatch(p, cls) or e.applicability(p)
        if why is None:
            try:
                value = float(e.value(p))
            except (ValueError, OverflowError) as exc:  # e.g. not finite at this problem
                why = str(exc).removeprefix(f"{name} does not apply to this problem: ")
        if why is not None:  # one bound that does not apply must not hide the others
            rows.append(Row(name=name, title=e.title, provenance=str(e.tuned.provenance),
                            value=math.nan, tuned_value=None, hyperparameters={},
                            tuned_hyperparameters=None, gradients=None,
                            scaling=e.scaling_text(), notes=e.notes, not_applicable=why,
                            kind=e.kind))
            continue
        tuned = e.optimize(p) if (tune and e.tunable) else None
        rows.append(Row(
            name=name,
            title=e.title,
            provenance=str(e.tuned.provenance),
            value=value,
            tuned_value=tuned.value if tuned else None,
            hyperparameters=e.hyperparameters(p),
            tuned_hyperparameters=tuned.hyperparameters if tuned else None,
            gradients=e.gradients(p),
            scaling=e.scaling_text(),
            notes=e.notes,
            kind=e.kind,
        ))
    # the best says something: a vacuous bound (>= its trivial bound) is never crowned, even
    # as the smallest (fuzz round 12: compare named a bound of 16.48 >= 1 "best" twice)
    valid = [r for r in rows if r.applicable and vacuous_reason(r.name, p, r.value) is None]
    best = min(valid, key=lambda r: r.value).name if valid else None

    def tuned_or_value(r: Row) -> float:
        return r.tuned_value if r.tuned_value is not None else r.value

    valid_tuned = [r for r in rows if r.applicable
                   and vacuous_reason(r.name, p, tuned_or_value(r)) is None]
    best_tuned = (min(valid_tuned, key=tuned_or_value).name if tune and valid_tuned
                  else None)
    found: list[Crossover] = []
    if crossovers:
        from dpbounds._progress import progress_bar

        # a bound that does not apply here has no values to cross (it raised in the scan)
        applicable = {r.name for r in rows if r.applicable}
        scanned = [n for n in chosen if n in applicable and registry.get(n).crossovers]
        pairs = [(a, b) for i, a in enumerate(scanned) for b in scanned[i + 1:]]
        points = _SCAN_POINTS.get(crossover_variable, 400)
        with progress_bar(progress, total=len(pairs) * points, lines=True,
                          desc=f"crossovers along {crossover_variable}",
                          unit="point") as bar:
            for a, b in pairs:
                bar.set_postfix_str(f"{a} / {b}", refresh=False)
                found += crossover(a, b, crossover_variable, p, points=points,
                                   progress=bar.update)
    return Comparison(problem=p, rows=rows, best=best, best_tuned=best_tuned,
                      crossovers=[c for c in found if c.informative],
                      vacuous_crossovers=[c for c in found if not c.informative],
                      excluded=excluded, problem_class=cls)


def compare_table(problem: Mapping[str, float] | None = None, **overrides: Any) -> dict:
    """The comparison as plain data (for ``dpbounds demo`` and notebooks)."""
    return compare(problem, **overrides).to_dict()


# ----------------------------------------------------------------------------- regime query
#: the side of the answer by default: more data or budget helps (the bound falls), a larger
#: dimension hurts (it rises). Declared here, checked on the bound by :func:`regime`.
_SIDE = {"N": "smallest", "eps": "smallest", "d": "largest"}


@dataclass(frozen=True)
class Regime:
    """Answer of :func:`regime`: where the bound is at most ``target`` along ``variable``.

    ``side="smallest"``: the bound is non-increasing in ``variable`` on the searched range
    (checked) and is ``<= target`` exactly for ``variable >= value``; ``"largest"``: it is
    non-decreasing and ``<= target`` for ``variable <= value``. ``at_edge`` marks answers at
    the end of the range (the target is already met there: the regime extends beyond it).
    ``value`` and ``at_edge`` have the broadcast shape of ``target`` and the problem's arrays
    (floats for scalars); ``nan`` where no value in range meets the target (``missing="nan"``).
    """

    name: str
    variable: str
    side: str
    target: Any
    value: Any
    at_edge: Any
    low: float
    high: float
    checked: str

    def __str__(self) -> str:
        word = "from" if self.side == "smallest" else "up to"
        return (f"{self.name} <= {_fmt(self.target)} {word} {self.variable} = "
                f"{_fmt(self.value)}" if np.ndim(self.value) == 0 else
                f"{self.name}: regimes along {self.variable} for {np.size(self.value)} targets")


def regime(
    name: str,
    variable: str,
    target: Any = None,
    problem: Mapping[str, Any] | None = None,
    *,
    side: str | None = None,
    low: float | None = None,
    high: float | None = None,
    points: int | None = None,
    rtol: float = 1e-10,
    missing: str = "raise",
    progress: bool | None = False,
    **overrides: Any,
) -> Regime:
    """From which ``variable`` (or up to which) is bound ``name`` at most ``target``?

    E.g. ``regime("tran_cutkosky.alg2", "N", 1.0, d=4, eps=8)``: the smallest dataset size
    from which Theorem 9 (closed-form choices) is ``<= 1``; ``regime(..., "d", ...)`` the
    largest dimension.

    Parameters
    ----------
    name:
        Registry id or alias (:func:`dpbounds.bounds.registry.get`).
    variable:
        A problem key (``"N"``, ``"d"``, ``"eps"``, ...).
    target:
        Value(s) to reach; arrays broadcast with the problem's arrays. Default: the smallest
        of :func:`trivial_bounds` (the regime where the bound says anything).
    problem, **overrides:
        The other problem keys (:data:`DEFAULT_PROBLEM` for the missing ones); arrays broadcast.
    side:
        ``"smallest"`` (the bound must be non-increasing in ``variable``) or ``"largest"``
        (non-decreasing); default ``"smallest"`` for ``N`` and ``eps``, ``"largest"`` for ``d``.
        The direction is declared, not assumed: the bound is evaluated on ``points`` log-spaced
        values of ``[low, high]`` and any step against it (relative 1e-9) raises
        :class:`ValueError`, as does a set ``{bound <= target}`` that is not one interval at
        the declared end (points where an assumption of the bound fails count as not meeting
        the target).
    low, high:
        Search range (defaults: ``N`` in ``[2, 1e16]``, ``d`` in ``[1, 1e12]``, ``eps`` in
        ``[1e-4, log(1/delta)]``, else ``[1e-6, 1e6]``).
    rtol:
        Relative precision of the answer (bisection in log-space, vectorised over targets,
        after the scan brackets each answer between two grid points).
    missing:
        ``"raise"`` (:class:`ValueError` when a target is met nowhere in range, with the best
        value the bound reaches there) or ``"nan"`` (that target's answer is NaN). A bound
        that does not apply to the problem at all (a required key missing, another class)
        raises either way.
    points:
        Grid points of the scan (>= 3; default 256, and 100 along ``eps``, where Yang et
        al.'s bounds fit their constant by an RDP calibration at every eps: 0.05-2 CPU-s each).
    progress:
        A bar over the scan (:func:`~dpbounds._progress.progress_bar`; ``None`` or ``True``
        on a terminal).
    """
    e = registry.get(name)
    p: dict[str, Any] = {**DEFAULT_PROBLEM, **(problem or {}), **overrides}
    if variable not in p and variable not in ("N", "d", "eps"):
        raise ValueError(f"variable must be a problem key such as 'N', 'd' or 'eps', got "
                         f"{variable!r}")
    side = side or _SIDE.get(variable, "smallest")
    if side not in ("smallest", "largest"):
        raise ValueError(f"side must be 'smallest' or 'largest', got {side!r}")
    if missing not in ("raise", "nan"):
        raise ValueError(f"missing must be 'raise' or 'nan', got {missing!r}")
    if points is None:  # 100 along eps (Yang et al.'s fits), as compare's scans
        points = _SCAN_POINTS["eps"] if variable == "eps" else 256
    points = int(points)
    if points < 3:
        raise ValueError(f"points must be >= 3, got {points}")
    if not (0.0 < rtol < 1.0):
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    why = e.mismatch(p)
    if why is not None:  # every point of the scan would be NaN: "the smallest value is nan"
        raise ValueError(f"{e.name} does not apply to this problem: {why}")
    lo_default, hi_default = _RANGES.get(variable, (1e-6, 1e6))
    if hi_default is None:  # eps (the one open range): log(1/delta)
        hi_default = math.log(1.0 / float(np.min(p["delta"])))
    lo = float(low if low is not None else lo_default)
    hi = float(high if high is not None else hi_default)
    if high is None and e.numeric and variable == "N":
        hi = min(hi, 1e15)  # the numeric bounds' largest dataset size
    if not (0.0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < low < high < inf for the {variable} range, got "
                         f"({lo}, {hi})")
    if target is None:
        target = trivial_bounds(e, {k: v for k, v in p.items() if np.ndim(v) == 0})[0].value
    target = np.asarray(target, dtype=float)
    if not np.all(target > 0):
        raise ValueError("target must be > 0 (a bound is positive)")
    shape = np.broadcast_shapes(target.shape, *(np.shape(v) for v in p.values()))
    tgt = np.broadcast_to(target, shape)

    integral = e.numeric and variable == "N"  # numeric bounds take a whole dataset size
    if e.numeric and any(np.ndim(v) for v in p.values()):
        raise ValueError(f"{e.name} is a numeric bound: give a scalar problem (arrays of "
                         f"targets are fine)")

    def one(x: float) -> float:
        if integral:  # rounded towards the inside of the regime: the answer meets the target
            x = max(1, math.ceil(x) if side == "smallest" else math.floor(x))
        try:
            return float(e.value({**p, variable: x}, invalid="nan"))
        except ValueError:  # a numeric bound that does not apply there
            return math.nan

    def bound(x: np.ndarray) -> np.ndarray:
        full = np.broadcast_shapes(np.shape(x), shape)
        if e.numeric:  # no vectorised path: point by point
            xs = np.broadcast_to(x, full)
            return np.array([one(float(v)) for v in xs.ravel()]).reshape(full)
        return np.broadcast_to(np.asarray(e.value({**p, variable: x}, invalid="nan"),
                                          dtype=float), full)

    grid = np.geomspace(lo, hi, points).reshape((points,) + (1,) * len(shape))
    from dpbounds._progress import progress_bar

    parts = []
    with progress_bar(progress, total=points, lines=True, desc=f"{e.name} along {variable}",
                      unit="point") as bar:
        for k in range(0, points, _SCAN_CHUNK):
            parts.append(bound(grid[k:k + _SCAN_CHUNK]))
            bar.update(min(_SCAN_CHUNK, points - k))
    vals = np.concatenate(parts)
    sign = 1.0 if side == "smallest" else -1.0  # the declared direction of the bound
    both = np.isfinite(vals[1:]) & np.isfinite(vals[:-1])
    with np.errstate(invalid="ignore"):  # inf - inf where the bound is vacuous: masked
        against = both & (sign * (vals[1:] - vals[:-1]) > 1e-9 * np.abs(vals[:-1]))
    if against.any():
        i = np.argwhere(against)[0]
        x0, x1 = float(grid[i[0]].item()), float(grid[i[0] + 1].item())
        raise ValueError(
            f"{e.name} is not {'non-increasing' if sign > 0 else 'non-decreasing'} in "
            f"{variable} on [{_fmt(lo)}, {_fmt(hi)}] at this problem: "
            f"{_fmt(vals[tuple(i)])} at {variable}={_fmt(x0)}, "
            f"{_fmt(vals[(i[0] + 1, *i[1:])])} at {_fmt(x1)}; give another side or a range")
    ok = np.isfinite(vals) & (vals <= tgt)
    if side == "largest":  # walk from the top: the answer is the last point meeting the target
        ok, grid, vals = ok[::-1], grid[::-1], vals[::-1]
    # one interval at the declared end: once met, met for every later grid point
    if np.any(ok[:-1] & ~ok[1:]):
        raise ValueError(f"{e.name} <= target is not one interval at the "
                         f"{'upper' if side == 'smallest' else 'lower'} end of {variable} in "
                         f"[{_fmt(lo)}, {_fmt(hi)}] (an assumption of the bound fails inside "
                         f"it): give a narrower range")
    never = ~ok[-1]
    if never.any() and missing == "raise":
        head = (f"no {variable} in [{_fmt(lo)}, {_fmt(hi)}] brings {e.name} to the target "
                f"{_fmt(float(np.max(tgt[never])))}")
        finite = np.where(np.isfinite(vals), vals, np.inf).min(axis=0)
        smallest = float(np.min(np.where(never, finite, np.inf)))
        if not math.isfinite(smallest) and np.isinf(vals).any():  # a vacuous (infinite) bound
            where = ("wherever it is defined" if np.isnan(vals).any() else "at every point")
            raise ValueError(f"{head}: the bound is infinite there (vacuous: it says nothing "
                             f"{where} of the range)")
        if not math.isfinite(smallest):  # NaN everywhere: an assumption fails at every point
            mid = math.sqrt(lo * hi)  # which one, in the bound's own words, at one point
            mid = float(math.ceil(mid)) if integral else mid
            try:
                e.value({**p, variable: mid})
                which = ""
            except ValueError as exc:
                which = f"; at {variable}={_fmt(mid)}: " + str(exc).removeprefix(
                    f"{e.name} does not apply to this problem: ")
            raise ValueError(f"{head}: the bound is not defined anywhere there{which}")
        raise ValueError(f"{head}: the smallest value there is {_fmt(smallest)}")
    first = np.argmax(ok, axis=0)  # index of the first point meeting the target
    at_edge = ok[0] & ~never
    # bracket (bad, good) in log-space, then bisect all answers at once
    idx = np.maximum(first, 1)
    good = np.log(np.take_along_axis(np.broadcast_to(grid, ok.shape), idx[None], 0)[0])
    bad = np.log(np.take_along_axis(np.broadcast_to(grid, ok.shape), idx[None] - 1, 0)[0])
    active = ~at_edge & ~never
    while active.any() and np.max(np.abs(good - bad)[active]) > rtol:
        mid = 0.5 * (good + bad)
        v = bound(np.exp(mid))
        meet = np.isfinite(v) & (v <= tgt)
        good = np.where(active & meet, mid, good)
        bad = np.where(active & ~meet, mid, bad)
    value = np.where(never, np.nan, np.where(at_edge, float(grid[0].item()), np.exp(good)))
    if integral:
        value = np.where(np.isfinite(value), np.maximum(1.0, np.ceil(value) if side ==
                                                        "smallest" else np.floor(value)), value)
    checked = (f"{'non-increasing' if sign > 0 else 'non-decreasing'} in {variable} at "
               f"{points} log-spaced points of [{_fmt(lo)}, {_fmt(hi)}]")
    if shape == ():
        return Regime(e.name, variable, side, float(target), float(value), bool(at_edge), lo,
                      hi, checked)
    return Regime(e.name, variable, side, tgt, value, at_edge, lo, hi, checked)
