"""``dpbounds verify``: a scaling study that puts a theorem against its algorithm.

Examples::

    dpbounds verify --list
    dpbounds verify tran_cutkosky.alg1 --vary d --quick        # vacuous grid: exit 3
    dpbounds verify strongly_convex.nag --vary N --quick                     # passes: exit 0
    dpbounds verify strongly_convex.heavy_ball --vary N                      # informative grid
    dpbounds verify tran_cutkosky.alg2 --vary N --values 250 500 1000 --trials 8 --json
    dpbounds verify yang.sgd --vary N --path --allow-expensive               # the paper's path
    dpbounds verify tran_cutkosky.alg1 --vary d --quick --mutation noise_sqrt2   # exit 1

The study tunes the algorithm with the theorem's closed-form hyper-parameters (integers
rounded by the documented policy of :mod:`dpbounds.verify.theorems`), runs it at every grid
value, evaluates the bound at each run's own parameters, measures the components the lemma
chain bounds and checks two-sided exact values (the noise the run declares against the
accountant's for the claimed eps, the noise it drew, the tree noise covariance, the exact
E[F - F*] of DP-NAG and DP-SHB). Where the algorithm records a transcript (DP-SGD, DP-NSGD,
Tran & Cutkosky's Algorithms 1 and 2), the run is also re-accounted from it alone through
dp_accounting (rows reaccount, contribution, sampling) and replayed on neighbouring data with
one seed (rows 'replay ...'). Slopes are shape diagnostics (reported, never failing). A
bound is informative only below both the trivial bound and the start's value (what a run
that does not move achieves); elsewhere its verdict is flagged vacuous (never a pass).

Grid: a full study without --values runs where the bound is informative (the grid is chosen
from the bound, and its estimated CPU cost; a grid over --max-seconds is narrowed and, unless
--trials is given, run with fewer trials (8 or 4), then its most expensive points are skipped,
with their estimates, unless --allow-expensive), --path along the theorem's headline path, and
--quick or --grid small today's small grids (labelled). Before running, the estimated cost
(CPU seconds: those spent on imports and planning plus the runs' estimate) and memory are
printed to stderr; a study above --max-memory-gb is refused unless --allow-large; progress
lines (CPU used against that estimate, wall time beside it) go to stderr every few seconds
when it is not a terminal.

Output paths (--plot, --store) are checked before any work; the result is printed before the
figure is written, so a figure that cannot be written loses nothing (exit status 2, or the
study's own 1 or 3); a standard output that cannot take it (a full disk) leaves it in a file of
the temporary folder, named in the error, and the figure is still written.

Exit status: 0 PASS, 1 FAIL (a ratio or exact verdict fails), 2 bad input, 3 INCONCLUSIVE (no
verdict fails, but nothing about the theorem was shown: every utility point vacuous, a
noise-energy exact check that cannot resolve a 10% change, or a sampling test with power below
0.8 against its named defect; the output says what would decide),
4 on an internal error (a bug).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from typing import TYPE_CHECKING, Any

from dpbounds._discovery import unknown_name
from dpbounds._progress import duration as _duration
from dpbounds.cli import (
    EXIT_USAGE,
    _catalog,
    add_quantity,
    flag_used,
    integer,
    progress_enabled,
    real,
    strict_json,
)
from dpbounds.cli._paths import check_figure_path, check_store_dir

if TYPE_CHECKING:
    from dpbounds.verify import ScalingResult

__all__ = ["EXIT_STATUS", "draw_result", "plot_result", "register", "run"]

#: exit status of each study status (2 is bad input, as everywhere in the CLI)
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``verify`` sub-command (no import of the studies: :mod:`._catalog`)."""
    VARIABLES, MUTATIONS = (tuple(_catalog.constant(f"verify_{k}"))
                            for k in ("variables", "mutations"))
    # the built-in problems and a loaded plug-in's (plug-ins load before the parser is built)
    PROBLEMS = tuple(r["name"] for r in _catalog.rows("problem"))
    p = sub.add_parser(
        "verify",
        help="scaling study: run a theorem's algorithm over d, N or eps against its bound",
        description=__doc__.replace("``", "").replace("Examples::", "Examples:")
        .replace(":mod:`dpbounds.verify.theorems`", "dpbounds.verify.theorems"),
    )
    p.add_argument("theorem", nargs="?", metavar="THEOREM",
                   help="registered bound id or alias (see --list)")
    p.add_argument("--list", action="store_true", help="list the theorems that can be verified")
    add_quantity(p, "scaling_variable", default="d", choices=VARIABLES,
                 help="the variable to sweep")
    p.add_argument("--values", type=real, nargs="+", default=None, metavar="V",
                   help="grid values (default: the study's grid; --quick: the short one)")
    add_quantity(p, "trials", help="runs per grid value (default: the study's, e.g. 16 and "
                                   "--quick 6 for Yang et al.'s, 150 for the tree methods)")
    add_quantity(p, "seed", default=0)
    p.add_argument("--quick", action="store_true",
                   help="short grid and the study's quick trials (under a minute on two cores)")
    p.add_argument("--problem", choices=PROBLEMS, default=None,
                   help="verification problem (default: the study's first, quadratic for "
                        "the strongly convex bounds, else huber_well; a plug-in may declare "
                        "its own: see --list)")
    add_quantity(p, "start_distance", help="distance of the start from the minimiser "
                                           "(default: the problem's)")
    p.add_argument("--mutation", choices=MUTATIONS, default=None,
                   help="negative control (must exit 1): noise_d runs with eps/sqrt(d), "
                        "noise_sqrt2 draws noise sqrt(2) too small (ledger unchanged), frozen "
                        "multiplies the step by 1e-9, nsgd_noise_r gives DP-NSGD noise sigma*r, "
                        "node_count_minus_1 charges Algorithm 1 one tree node too few, "
                        "skip_clipping runs DP-SGD without clipping, shared_node_count_no_log "
                        "drops log T from the shared privacy helper's node count, "
                        "shared_node_sensitivity_half halves its node sensitivity, "
                        "steps_off_by_one calibrates DP-SGD/NSGD for T - 1 steps, "
                        "scaled_contribution doubles DP-SGD's clipped contributions, "
                        "laplace_half_sensitivity halves the Laplace methods' scales in the "
                        "shared helper (their ledger agrees), masg_no_restart keeps DP-MASG's "
                        "momentum across its stage changes")
    p.add_argument("--grid", choices=("auto", "informative", "path", "small"), default="auto",
                   help="auto (default): the informative grid of a full study when affordable, "
                        "else the default grid, labelled; small: today's default grids")
    p.add_argument("--path", action="store_const", const="path", dest="grid",
                   help="same as --grid path: where the bound's local slope is the headline "
                        "exponent")
    p.add_argument("--max-seconds", type=real, default=None, metavar="S",
                   help="CPU budget of a planned grid (default 900; not with --quick, "
                        "--values or --grid small, whose grids are not planned)")
    p.add_argument("--allow-expensive", action="store_true",
                   help="run every planned point, whatever its estimated cost")
    p.add_argument("--max-memory-gb", type=real, default=4.0, metavar="GB",
                   help="refuse a study above this estimated memory (default 4)")
    p.add_argument("--allow-large", action="store_true",
                   help="run a study above the memory budget")
    fixed = p.add_argument_group("fixed parameters (over the study's defaults)")
    add_quantity(fixed, "dimension")
    add_quantity(fixed, "dataset_size")
    add_quantity(fixed, "epsilon")
    add_quantity(fixed, "delta")
    add_quantity(fixed, "steps", help="iterations T (Yang et al.'s studies)")
    add_quantity(fixed, "batch_size", help="batch size B (Yang et al.'s studies)")
    p.add_argument("--cost-cache", default=None, metavar="FILE",
                   help="keep the planner's measured cost model in FILE and reuse it on this "
                        "host (skips the probe runs of a study planned before); 'off' keeps "
                        "none (default: $DPBOUNDS_COST_CACHE, else "
                        "$XDG_CACHE_HOME/dpbounds/verify-costs.json)")
    p.add_argument("--store", default=None, metavar="DIR",
                   help="keep finished grid points here and resume from them")
    p.add_argument("--workers", type=integer, default=None, metavar="N",
                   help="run the grid points on N local worker processes (spawned; each loads "
                        "the --plugin files and entry points first); 1 (default) runs them in "
                        "this process; the result is the same")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="write a log-log figure (bound, measurement, components) to FILE")
    p.set_defaults(func=run)


def _list(as_json: bool) -> int:
    rows = _catalog.rows("verify")
    if as_json:  # the studies and the problems they run on (a plug-in's with its origin)
        print(strict_json({"studies": rows, "problems": _catalog.rows("problem")}, indent=2))
        return 0
    for r in rows:
        alias = f"  (alias: {', '.join(r['aliases'])})" if r["aliases"] else ""
        where = f"  [from {r['origin']}]" if r.get("origin", "dpbounds") != "dpbounds" else ""
        print(f"{r['theorem']}{alias}{where}\n    components: {', '.join(r['components'])}\n"
              f"    {r['notes']}")
    print("\nverification problems (--problem):")
    for r in _catalog.rows("problem"):
        where = f"  [from {r['origin']}]" if r.get("origin", "dpbounds") != "dpbounds" else ""
        print(f"  {r['name']:<12} {r['problem_class']:<16} {r['description']}{where}")
    return 0


def _fixed(args: argparse.Namespace) -> dict[str, float]:
    out = {}
    for name, key in (("dimension", "d"), ("dataset_size", "N"), ("epsilon", "eps"),
                      ("delta", "delta"), ("steps", "T"), ("batch_size", "B")):
        v = getattr(args, name, None)
        if v is not None:
            out[key] = v
    return out


def _short(s: float) -> str:
    """A part of an estimate: tenths below 10 s (a quick study's analysis read "0 s")."""
    return f"{s:.1f} s" if s < 9.95 else _duration(s)


def _regime_lines(reg: dict[str, Any], spent: float | None = None) -> list[str]:
    """The regime's lines; ``spent``: CPU seconds this process has used so far (imports,
    planning), added to the runs' estimate for the command's whole cost."""
    lines = [f"regime: {reg.get('name')} ({reg.get('why')})"]
    if "estimated_total_seconds" in reg:
        runs = float(reg["estimated_total_seconds"])
        # the bootstrap after the runs, part of the total (stop 65), said apart
        after = float(reg.get("estimated_analysis_seconds", 0.0))
        parts = (f"{_short(runs - after)} for the runs"
                 + (f", {_short(after)} for the analysis" if after > 0 else ""))
        # the runs alone read "1 s CPU" for a quick study whose command cost 11.5 CPU-s
        cost = (f"{_duration(runs)} CPU" + (f" ({parts})" if after > 0 else "")
                if spent is None else
                f"{_duration(spent + runs)} CPU in all ({_duration(spent)} spent on imports "
                f"and planning, {parts})")
        lines.append(f"estimated cost: {cost}"
                     + (f", memory {reg['estimated_memory_bytes'] / 2**20:.3g} MiB"
                        if "estimated_memory_bytes" in reg else ""))
    fits = reg.get("cost_fits")
    if fits and (fits.get("remembered") or fits.get("probed")):
        lines.append(f"cost model: {fits.get('remembered', 0)} fit(s) from the cost cache, "
                     f"{fits.get('probed', 0)} probed now")
    for sk in reg.get("skipped", []):
        lines.append(f"skipped (over the budget): {sk}")
    un = reg.get("unaffordable")
    if un:
        lines.append("informative grid not run: " + ", ".join(
            f"{v:g} ({_duration(c)})" for v, c in zip(un.get("full_values", []),
                                                      un.get("full_estimated_seconds", []))))
    return lines


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (worker processes)."""
    import resource
    import time

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


class _Heartbeat:
    """A progress line on stderr every ``every`` seconds while a study runs (logs: when
    stderr is not a terminal, where the sweep's bar does not show)."""

    def __init__(self, label: str, every: float = 5.0) -> None:
        import threading

        self.label, self.every = label, every
        self.total: float | None = None
        self.planned = False
        self.cpu0 = _cpu_seconds()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def plan_done(self, runs: float | None) -> None:
        """The grid is planned and its runs estimated at ``runs`` CPU seconds: the total the
        count is compared with is the CPU used since ``cpu0`` (planning) plus ``runs``, so
        count and estimate both start at ``cpu0`` (the runs' estimate alone was compared
        with a count that included the planning)."""
        self.total = None if runs is None else _cpu_seconds() - self.cpu0 + float(runs)
        self.planned = True

    def _run(self) -> None:
        import time

        t0, cpu0 = time.monotonic(), self.cpu0
        while not self._stop.wait(self.every):
            # like with like: the estimate is CPU time, so is the count it is compared with
            # (wall time is shown beside it: 14.6 min wall was compared with 6.6 min CPU)
            used = f"{_duration(_cpu_seconds() - cpu0)} CPU"
            est = f" of an estimated {_duration(self.total)} CPU" if self.total else ""
            what = "running" if self.planned else "planning the grid"
            print(f"{self.label}: {what}, {used}{est} ({_duration(time.monotonic() - t0)} "
                  "wall)", file=sys.stderr, flush=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _fmt(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else str(x)


def _text(res: ScalingResult) -> str:
    from dpbounds.verify.verdicts import format_table

    u = res.utility[0]
    lines = [f"{res.theorem}: scaling over {res.vary} on the {res.problem.kind} problem "
             f"(G={res.problem.G:g}, L={res.problem.L:g}, start {res.problem.start:g}); "
             f"fixed {res.fixed}" + (f"; MUTANT {res.mutation}" if res.mutation else ""),
             f"regime: {res.regime.get('label', res.regime.get('name', '-'))}",
             "", f"{res.vary:>8}  {'bound':>10}  {'inform.':>7}  " +
             "  ".join(f"{c + ' [95% CI]':>26}" for c in res.components) + "  run"]
    for j, v in enumerate(res.values):
        meas = "  ".join(f"{m.mean:>9.4g} [{m.ci_low:.3g}, {m.ci_high:.3g}]".rjust(26)
                         for m in (res.measured[c][j] for c in res.components))
        run = ", ".join(f"{k}={_fmt(res.params[j][k])}" for k in ("E", "T", "eta", "r", "C")
                        if k in res.params[j])
        extra = "; ".join(res.notes[j] + res.violations[j])
        lines.append(f"{v:>8g}  {res.bound[u][j]:>10.4g}  "
                     f"{'yes' if res.informative[j] else 'no':>7}"
                     f"  {meas}  {run}" + (f"  [{extra}]" if extra else ""))
    lines += ["", f"{'component':>12}  {'slope [95% CI]':>26}  {'bound slope':>11}  "
              f"{'path exp.':>9}  {'meas/bound range':>18}"]
    for c in res.components:
        s = res.slopes[c]
        lo, hi = res.ratio_range(c)
        pe = res.path_exponents.get(c)
        lines.append(f"{c:>12}  {s.slope:>8.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}]".ljust(42)
                     + f"  {_fmt(res.bound_slope[c]):>11}  "
                     f"{'-' if pe is None else f'{pe:.3g}':>9}  {lo:.3g} .. {hi:.3g}")
    from dpbounds.provenance import exponent_label
    from dpbounds.verify.theorems import get_study

    entry = get_study(res.theorem).entry
    if res.headline_exponent is None:
        # no exponent to label: "(paper, VERBATIM): - (None)" read as a quoted value for a
        # numeric bound that results.md labels DERIVED (walkthrough of stop 75)
        why = entry.scaling_failure() or ("a numeric bound (recursion, horizon search or "
                                          "LMI): no closed form to take a power law from"
                                          if entry.numeric else "no power law of "
                                          f"{res.vary} along d ~ N -> oo")
        lines.append(f"headline exponent of {res.vary}: none ({why})")
    else:
        label = exponent_label((entry.scaling_bound or entry.tuned).sources)
        lines.append(f"headline exponent of {res.vary} ({label}): "
                     f"{res.headline_exponent:.4g}   ({res.exponents()})")
    n_vac = len(res.values) - sum(res.informative)
    if n_vac:
        lines.append(f"the bound is not informative (>= the trivial bound {res.trivial[0]:g} or "
                     f"the start's value {res.do_nothing[0]:.3g}) at {n_vac} of "
                     f"{len(res.values)} points: a run that does not move satisfies it there")
    lines += ["", format_table(list(res.verdicts)),
              "", f"{len(res.values)} points x {res.trials[u].shape[1]} trials in "
                  f"{res.seconds:.1f} s; " +
              ("no ratio or exact verdict failed (slopes are shape diagnostics)" if res.holds
               else "SOME VERDICTS FAIL")]
    slack = res.undetected_factor
    if res.holds and slack > 1.0:  # a PASS does not say how loose the bound may be (at
        # 1.38x, only in --json, a bound broken by 1.22x passed: walkthrough of stop 79)
        by = "any factor" if math.isinf(slack) else f"up to {slack:.3g}x"
        lines.append(f"resolution: a bound of {res.utility[0]} smaller than this one by {by} "
                     "would also pass here (the largest lower 95% end of measured/bound is "
                     + ("at or below 0" if math.isinf(slack) else f"{1.0 / slack:.3g}")
                     + "): the constants are shown right only within that factor")
    if res.holds and res.inconclusive:
        lines += ["INCONCLUSIVE (exit 3): nothing failed, but not everything was shown:"]
        lines += [f"  - {why}" for why in res.inconclusive]
    from dpbounds import extend

    name = extend._METHOD_THEOREM.get(res.theorem)
    if name is not None:  # a plug-in: what this PASS does not cover (walkthrough, stop 74)
        from dpbounds.audit.settings._common import AUDIT_REGISTRY

        how = (f"'dpbounds audit {name}' tests it on a worst-case pair"
               if name in AUDIT_REGISTRY.entries else
               "an audit tests it (declare extend.audit_setting(method), then "
               f"'dpbounds audit {name}')")
        lines.append(f"note: the ledger row checks the noise against the sensitivity {name} "
                     "declares; the sensitivity row tests the declaration against neighbours "
                     f"within the data set only; {how}")
    return "\n".join(lines)


#: what the utility component of each study measures (the figure's y-label)
_YLABEL = {"grad_output": r"$\Vert\nabla F\Vert$ at the output; noise, bias norms",
           "grad_min": r"$\min_t\Vert\nabla F(x_t)\Vert$, time average",
           "excess_risk": r"excess risk $F(\theta_T)-F^*$",
           "subopt": r"$F(x_T)-F^*$"}


def draw_result(res: ScalingResult, ax: Any) -> None:
    """Bound, achieved utility and components of a study on one log-log axis ``ax``."""
    import numpy as np

    x = np.asarray(res.values)
    u = res.utility[0]
    for i, c in enumerate(res.components):
        col = f"C{i}"
        m = np.array([v.mean for v in res.measured[c]])
        lo = m - np.array([v.ci_low for v in res.measured[c]])
        hi = np.array([v.ci_high for v in res.measured[c]]) - m
        s = res.slopes[c]
        ax.errorbar(x, m, yerr=[lo, hi], marker="o", ms=4, color=col, capsize=2,
                    label=f"{c} (slope {s.slope:.2f} [{s.ci_low:.2f}, {s.ci_high:.2f}])")
        if c == u or c not in res.utility:
            ax.plot(x, res.bound[c], ls="--", color=col if c != u else "k",
                    label=f"bound: {'theorem' if c == u else c} "
                          f"(grid slope {res.bound_slope[c]:.2f})")
    ax.plot(x, res.trivial, color="grey", ls=":", label="trivial bound")
    if np.all(np.isfinite(res.do_nothing)) and res.do_nothing[0] < res.trivial[0]:
        ax.plot(x, res.do_nothing, color="grey", ls="-.", lw=1,
                label="start's value (a run that does not move)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(res.vary)
    ax.set_ylabel(_YLABEL.get(u, u) + "\n(mean, 95% CI); bounds dashed")  # two lines: fits
    ax.set_title(f"{res.theorem}" + (f" [mutant {res.mutation}]" if res.mutation else "")
                 + f"\nregime: {res.regime.get('label', res.regime.get('name', '-'))}",
                 fontsize=9)
    # outside the axes: the legend never covers the theorem's line
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def plot_result(res: ScalingResult, path: str) -> None:
    """Write :func:`draw_result`'s figure to ``path`` (matplotlib, at the edge only)."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")  # a file is written; no window from the command line
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.6, 4.4))
    draw_result(res, ax)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _executor(workers: int | None) -> Any:
    """The sweep executor of ``--workers``: ``None`` (this process) for none or 1, else a pool
    of local spawned processes (:class:`dpbounds.sweep.LocalProcesses`, which checks the
    count: an int in [1, 1024]); the sweep starts and closes it."""
    if workers is None:
        return None
    from dpbounds.sweep import LocalProcesses

    pool = LocalProcesses(workers)  # ValueError naming workers and its range
    return None if workers == 1 else pool


def _nothing() -> Any:
    return contextlib.nullcontext()


class _Keeper:
    """Saves the cost memo to the cache file when it changed; after one failed save (a note on
    stderr) it tries no more (the same note would follow each later save)."""

    def __init__(self, costs: Any, cache: Any) -> None:
        self.costs, self.cache, self.failed = costs, cache, False

    def save(self) -> None:
        if self.cache is None or self.costs is None or self.failed or not self.costs.changed:
            return
        from dpbounds.cli import _cost_cache

        note = _cost_cache.save(self.costs, self.cache)
        if note:
            self.failed = True
            print(f"dpbounds: note: {note}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _kept(keeper: _Keeper) -> Any:
    """Fits probed by a study that then stops (refused for memory, interrupted) are kept too:
    its rerun (``--allow-large``, say) need not probe again."""
    try:
        yield
    finally:
        keeper.save()


def _refuse_not_taken(args: argparse.Namespace, fixed: dict[str, Any], takes: set[str],
                      unread: Any = ()) -> None:
    """A ``ValueError`` for the first flag setting a value the study does not take (or
    takes and never reads: a pure-DP study's delta)."""
    dests = {"d": "dimension", "N": "dataset_size", "eps": "epsilon", "delta": "delta",
             "T": "steps", "B": "batch_size"}
    for key in sorted(set(fixed) & set(unread)):
        # `verify strongly_convex.nag --delta 1e-9` ran and said nothing (fuzz round 13)
        raise ValueError(f"{flag_used(args, dests[key])} does not apply to {args.theorem}: its "
                         f"runs are pure eps-DP, so {key} changes nothing; leave it out")
    for key in sorted(set(fixed) - takes):
        dest = dests[key]
        raise ValueError(f"{flag_used(args, dest)} does not apply to {args.theorem}: it sets "
                         f"{key}, which this study does not take (it takes "
                         f"{', '.join(sorted(takes))})")


#: studies whose runs refuse a start at the minimiser (their noise allocation weighs the start's
#: error; ``dpbounds.verify.studies.nag`` / ``masg`` say it after planning: 2.8 CPU-s)
_START_WEIGHED = {"strongly_convex.nag": "DP-NAG", "strongly_convex.masg": "DP-MASG"}


def _refuse_mutation(mutation: str | None, algorithms: tuple[str, ...]) -> None:
    """dpbounds.verify.mutants.mutation_refusal from the catalog, in its words: 4.2 CPU-s of
    imports and planning came before the first run raised them (fuzz round 8)."""
    fits = _catalog.constant("verify_mutation_algorithms").get(mutation or "")
    if fits is not None and algorithms and not any(a in fits for a in algorithms):
        raise ValueError(f"mutation {mutation!r} does not apply to {' or '.join(algorithms)} "
                         f"(it patches {', '.join(fits)})")


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args.json)
    if not args.theorem:
        raise ValueError("THEOREM is required (see dpbounds verify --list)")
    known = _catalog.names("verify")
    if known is not None and args.theorem not in known:  # before seconds of imports
        raise ValueError(unknown_name("verify study", args.theorem, known,
                                      "dpbounds verify --list", label="covered"))
    if args.quick and args.grid in ("informative", "path"):  # --quick won: the grid was ignored
        raise ValueError(f"--quick runs today's small grid; it cannot be combined with --grid "
                         f"{args.grid}" + (" (--path)" if args.grid == "path" else ""))
    fixed = _fixed(args)
    if args.scaling_variable in fixed:  # a flag the sweep overrides is refused, not ignored
        flag = {"d": "--d", "N": "--N", "eps": "--eps"}[args.scaling_variable]
        raise ValueError(f"{flag} is swept by --vary {args.scaling_variable} (give its grid "
                         f"with --values), got {flag} {fixed[args.scaling_variable]:.6g}")
    # a budget of a grid that is not planned was ignored without a word (--quick
    # --max-seconds 1 ran its whole grid)
    fixed_grid = ("--quick" if args.quick else "--values" if args.values is not None
                  else "--grid small" if args.grid == "small" else None)
    for flag, typed in (("--max-seconds", args.max_seconds is not None),
                        ("--allow-expensive", args.allow_expensive)):
        if typed and fixed_grid:
            raise ValueError(f"{flag} budgets a planned grid; {fixed_grid} runs a grid that is "
                             "not planned, so it would be ignored")
    if args.max_seconds is None:
        args.max_seconds = 900.0
    if args.values is not None:  # as scaling_study's _grid, before its 1 CPU-s of imports
        if len(args.values) < 2:
            raise ValueError("values must hold at least two grid values for a slope")
        if len(set(args.values)) != len(args.values):
            raise ValueError("values must be distinct")
    row = next((r for r in _catalog.rows("verify") if r["theorem"] == known.get(args.theorem)),
               None) if known is not None else None
    if row is not None:  # the study's fixed keys from the catalog, before its imports
        _refuse_not_taken(args, fixed, set(row["fixed"]), row.get("unread", ()))
        if args.problem is not None and args.problem not in row["problems"]:
            # scaling_study's words (1.0-1.1 CPU-s of imports before; fuzz round 7)
            raise ValueError(f"problem {args.problem!r} does not fit {row['theorem']}; valid: "
                             f"{', '.join(row['problems'])}")
        _refuse_mutation(args.mutation, tuple(row.get("algorithms", ())))
    for name, v in (("max_seconds", args.max_seconds), ("max_memory_gb", args.max_memory_gb)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"--{name.replace('_', '-')} must be positive and finite, "
                             f"got {v:.6g}")
    if args.plot is not None:  # before the study: a bad path must not cost its minutes
        check_figure_path(args.plot)
    if args.store is not None:
        check_store_dir(args.store)
    method = _START_WEIGHED.get(known.get(args.theorem, "")) if known is not None else None
    if method is not None and args.start_distance == 0:  # the runs' refusal, after planning
        raise ValueError(f"the start is the minimiser (F(x0) - F* = 0, --start 0): {method}'s "
                         "noise allocation weighs the start's error, F(x0) - F* > 0; give a "
                         "start > 0")
    executor = _executor(args.workers)
    from dpbounds.cli import _cost_cache, freeze_heap
    from dpbounds.verify import problem, scaling_study
    from dpbounds.verify.theorems import get_study

    # its modules imported (then kept out of the collector's scans); a flag the study does
    # not take is refused in the user's words (a plug-in's study: here, from its registry)
    study_def = get_study(args.theorem)
    _refuse_not_taken(args, fixed, set(study_def.fixed), study_def.unread)
    freeze_heap()
    spec = problem(args.problem) if args.problem else None
    show = progress_enabled(args)
    beat = _Heartbeat(f"verify {args.theorem}")
    cache = _cost_cache.resolve(args.cost_cache)
    costs = None
    if cache is not None:
        costs, note = _cost_cache.load(cache)
        if note:
            print(f"dpbounds: note: {note}", file=sys.stderr, flush=True)

    planned: dict[str, Any] = {}
    keeper = _Keeper(costs, cache)

    def on_plan(reg: dict[str, Any]) -> None:
        keeper.save()  # before the runs: a study stopped during its runs keeps its fits
        freeze_heap()  # what the planning imported (the accountants' modules) too
        planned.update(estimate=reg.get("estimated_total_seconds"), cpu=_cpu_seconds())
        beat.plan_done(reg.get("estimated_total_seconds"))
        if show:
            for line in _regime_lines(reg, spent=_cpu_seconds()):
                print(line, file=sys.stderr, flush=True)

    with beat if show and not sys.stderr.isatty() else _nothing(), \
            _kept(keeper):
        res = scaling_study(args.theorem, spec, vary={args.scaling_variable: args.values},
                            fixed=fixed, start=args.start_distance, trials=args.trials,
                            seed=args.seed, quick=args.quick, mutation=args.mutation,
                            store=args.store, progress=show, grid=args.grid,
                            max_seconds=args.max_seconds,
                            allow_expensive=args.allow_expensive,
                            max_memory=args.max_memory_gb * 1e9,
                            allow_large=args.allow_large, estimate=True, on_plan=on_plan,
                            executor=executor, costs=costs)
    if (cache is not None and costs is not None and "cpu" in planned and not args.store
            and (args.workers or 1) == 1):
        # a plan from remembered fits far off its runs drops them (not with --store: points
        # resumed from it did not run; nor with workers, whose CPU is counted as they exit)
        note = _cost_cache.settle(costs, planned["estimate"], _cpu_seconds() - planned["cpu"])
        if note:
            print(f"dpbounds: note: {note}", file=sys.stderr, flush=True)
            keeper.save()
    status = EXIT_STATUS[res.status]
    # the result first: a late I/O error (disk full, folder removed) must not lose it; if
    # standard output itself fails, the text goes to a file named in the error and the
    # figure is still written
    from dpbounds.cli._paths import ResultWriter

    out = ResultWriter("verify")
    out.print(strict_json(res.to_json()) if args.json else _text(res))
    lost = out.error
    if args.plot:
        try:
            plot_result(res, args.plot)
        except OSError as exc:
            where = "the result above is complete" if lost is None else str(lost)
            print(f"dpbounds: error: the figure could not be written to {args.plot!r} "
                  f"({exc.strerror or exc}); {where}", file=sys.stderr)
            # the verdict outranks the I/O error: FAIL (1) and INCONCLUSIVE (3) are kept
            return status if status else EXIT_USAGE
        if lost is not None:
            print(f"dpbounds: figure written to {args.plot}", file=sys.stderr)
        elif not args.json:
            print(f"figure written to {args.plot}")
    if lost is not None:
        print(f"dpbounds: error: {lost}", file=sys.stderr)
        return status if status else EXIT_USAGE
    return status
