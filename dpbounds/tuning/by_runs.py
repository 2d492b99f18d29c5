r"""Tuning by runs: the hyper-parameters whose simulated runs end lowest on *this* objective.

:func:`~dpbounds.tuning.tune_heavy_ball` and :func:`~dpbounds.tuning.tune_nesterov` pick the
hyper-parameters with the least error on the **worst** problem of the class (every quadratic,
or every smooth strongly convex function, with the given :math:`\mu, L, E_0`). That choice
holds for every such problem, but a researcher with one objective in hand wants its best run:
on a ridge logistic regression whose curvature near the start is far below :math:`L` and whose
start is closer to the optimum than the worst case allows, the worst-case pick ran 4.5x worse
than a plain grid (stop 76's walkthrough). :func:`tune_by_runs` is that grid, done so that it
can be trusted:

* every grid point runs the **real algorithm** (the package's or a plug-in's: any callable
  ``algorithm(objective, epsilon=..., trials=..., seed=..., **hyper)`` that returns a
  :class:`~dpbounds.algorithms.SimulationResult` with a ``"suboptimality"`` trace) with the
  same seed, so the comparison between points is paired (common random numbers);
* the pick is **re-measured on fresh seeds** (a disjoint family of trial streams): the score
  a grid's minimum reports on its own draws is biased low (the winner's curse), the fresh one
  is not; it comes with a 95% confidence interval (Student's t), as does every choice in
  ``compare`` measured on those same fresh seeds, with the interval of its difference to the
  pick run by run (the same trial streams: paired; e.g. the worst-case tuner's pick);
* the **privacy the tuning spends** is reported, not hidden: each run reads the objective's
  data, so publishing the pick (or the run made with it) costs the composition of every run
  made (``spent``: one ledger of all of them, accounted by the accountant that calibrated
  the runs). Tune on a public or synthetic proxy of the data to spend nothing of the private
  data's budget; on the private data itself this is the honest price of a non-private
  selection (a private selection costs a constant multiple of one run's budget instead:
  :func:`~dpbounds.tuning.select_privately`, Liu & Talwar's random stopping).

**Resumable, and on any executor.** Each grid point's runs are one cell of a
:func:`~dpbounds.sweep.run_sweep`: with ``store=`` every finished point is written at once,
so a killed tuning loses only the points in flight and a second call with the same arguments
reuses what is stored (bit-identical: trial ``k`` of a point depends only on the seed, the
stream and ``k``); ``executor=`` runs the points on local processes or a Dask cluster. A
stored point's key holds the algorithm's name and the code it reaches (its source, the
functions of its module it calls, its package's files or its script's bytes; for
:func:`dpbounds.extend.run_method`, the registered method's definition), the objective (its
:class:`ObjectiveRecipe` with its factory's code, or a fingerprint of its public data, its
constants and its losses at probe points), the hyper-parameters, the fixed arguments, epsilon
and the statistic. Code the key cannot see (a compiled extension's, a data file the factory
reads) is the caller's to vary in the recipe's params. Any executor other than this process
and its threads (:class:`~dpbounds.sweep.InProcess`, a ``ThreadPoolExecutor``) builds the
objective itself, so it needs an :class:`ObjectiveRecipe` and a module-level algorithm (a
plug-in's method: :func:`dpbounds.extend.run_method` with ``method=NAME``).

Which error is minimised: the mean over trials of :math:`F(x_T)-F^\ast` at the run's last
iterate (``statistic="final"``) or of the best iterate of the trace (``"best"``: not
attainable without reading :math:`F`, shown for comparison only). Provenance: DERIVED (a
procedure of this package, no paper's result).

Example
-------
>>> from dpbounds.algorithms import dp_heavy_ball
>>> from dpbounds.objectives import QuadraticObjective
>>> f = QuadraticObjective.random(d=4, mu=0.1, L=1.0, n=200, offset_scale=1.0, seed=0)
>>> res = tune_by_runs(dp_heavy_ball, f, {"step_size": [0.5, 1.0], "momentum": [0.0, 0.5],
...                                       "steps": [5, 10]}, epsilon=1.0, trials=8, seed=0)
>>> sorted(res.best)
['momentum', 'step_size', 'steps']
"""

from __future__ import annotations

import contextvars
import itertools
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive

__all__ = ["ObjectiveRecipe", "RunScore", "RunTuning", "tune_by_runs"]

#: the trial streams of the fresh evaluation: seed ``(seed, EVAL_STREAM)`` where the selection
#: uses ``(seed, SELECT_STREAM)`` (disjoint SeedSequence families: no run is shared). Not 0:
#: NumPy's ``SeedSequence((s, 0))`` is ``SeedSequence(s)``, so a run made afterwards with the
#: plain seed s reused the selection's draws (review of stop 76)
SELECT_STREAM, EVAL_STREAM = 1, 2
#: most grid points a call runs (each costs ``trials`` runs)
MAX_POINTS = 10_000
#: objectives a worker process keeps built (by recipe), so that its next point reuses one
_BUILT_MAX = 1


@dataclass(frozen=True)
class ObjectiveRecipe:
    """How to build an objective: ``factory(**params)``.

    Give :func:`tune_by_runs` a recipe instead of the objective when its points run in other
    processes (``executor=`` local processes or Dask): each worker builds the objective once
    and keeps it. ``factory`` must be a module-level function (workers import it by name) and
    ``params`` plain values (numbers, strings, lists, dicts: they are part of the stored key).

    Examples
    --------
    >>> from dpbounds.objectives import QuadraticObjective
    >>> recipe = ObjectiveRecipe(QuadraticObjective.random,
    ...                          {"d": 4, "mu": 0.1, "L": 1.0, "n": 200, "seed": 0})
    >>> recipe.build().d
    4
    """

    factory: Callable[..., Any]
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from dpbounds.sweep.cells import canonical, function_name

        if not callable(self.factory):
            raise ValueError(f"factory must be a callable, got {self.factory!r}")
        function_name(self.factory)  # a lambda or nested function: refused here
        if not isinstance(self.params, Mapping):
            raise ValueError(f"params must be a mapping of keyword arguments, got "
                             f"{type(self.params).__name__}")
        canonical(dict(self.params), "params")

    def build(self) -> Any:
        """The objective: ``factory(**params)``, built once per process (the points run
        here reuse the one built for the caller; the most recent recipe is kept, keyed by its
        factory's code too: a redefined factory builds anew)."""
        import json

        text = json.dumps(self.key(), sort_keys=True)
        if text not in _BUILT:
            if len(_BUILT) >= _BUILT_MAX:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[text] = self.factory(**self.params)
        return _BUILT[text]

    def key(self) -> dict[str, Any]:
        """The recipe as plain JSON values (part of a stored point's key)."""
        from dpbounds.sweep.cells import canonical, function_name

        return {"factory": function_name(self.factory), "params": canonical(dict(self.params)),
                # its code, and the functions of its module it calls: an edited factory
                # must not be served the old objective (review of stop 77)
                "source": _source_digest(self.factory)}


@dataclass(frozen=True)
class RunScore:
    """One choice's measured error: the mean of the statistic over ``n`` runs and its 95%
    interval (Student's t: ``mean +- t(0.975, n - 1) sd / sqrt(n)``); ``failure`` says why a
    point did not run (its mean is then ``inf``)."""

    hyperparameters: dict[str, Any]
    mean: float
    low: float
    high: float
    n: int
    failure: str | None = None

    def row(self) -> dict[str, Any]:
        return {**self.hyperparameters, "mean": self.mean, "low": self.low, "high": self.high,
                "runs": self.n, "failure": self.failure}


@dataclass(frozen=True)
class RunTuning:
    """What :func:`tune_by_runs` measured.

    Attributes
    ----------
    best:
        The hyper-parameters with the least selection score.
    selection:
        Every grid point's score on the selection seeds (``trials`` runs each, paired).
    evaluation:
        ``label -> RunScore`` on the fresh seeds (``"tuned by runs"`` and each ``compare``
        choice), comparable with each other (the same trial streams).
    spent:
        One :class:`~dpbounds.privacy.PrivacyLedger` of every run made (selection and
        evaluation); ``spent_epsilon`` its epsilon at ``delta`` (``spent_delta``) by
        ``accountant`` (the one the runs were calibrated with): what the data paid for this
        tuning.
    """

    algorithm: str
    statistic: str
    best: dict[str, Any]
    selection: tuple[RunScore, ...]
    evaluation: dict[str, RunScore]
    spent: Any
    spent_epsilon: float
    delta: float
    accountant: str
    runs: int
    notes: tuple[str, ...] = field(default=())
    trials: int = 0  # runs per grid point on the selection seeds

    def rows(self) -> list[dict[str, Any]]:
        """One dict per evaluated choice (label, hyper-parameters, mean, interval)."""
        return [{"label": k, **v.row()} for k, v in self.evaluation.items()]

    def table(self) -> str:
        from dpbounds._numfmt import shown

        names = sorted({k for v in self.evaluation.values() for k in v.hyperparameters})
        head = ["choice", *names, f"mean {self.statistic} F - F*", "95% interval", "runs"]
        body = []
        for label, s in self.evaluation.items():
            body.append([label, *(_shown_value(s.hyperparameters[k])
                                  if k in s.hyperparameters else "-" for k in names),
                         shown(s.mean), f"[{shown(s.low)}, {shown(s.high)}]", str(s.n)])
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                 for r in [head, ["-" * w for w in widths], *body]]
        failed = sum(s.failure is not None for s in self.selection)
        lines += ["", f"{self.algorithm}: {len(self.selection)} grid points x "
                      f"{self.trials} runs on the selection "
                      "seeds; every row above re-measured on fresh seeds (the pick's own "
                      "score on its selection draws is biased low)"
                  + (f"; {failed} point(s) failed (refused, or diverged: scored inf)"
                     if failed else ""),
                  f"privacy spent by the tuning ({self.runs} runs on the objective's data): "
                  f"eps = {self.spent_epsilon:.6g} at delta = {shown(self.delta)} "
                  f"({self.accountant}); nothing of the private data's budget if the "
                  "objective is a public or synthetic proxy", *self.notes]
        return "\n".join(lines)


def _shown_value(value: Any) -> str:
    """A hyper-parameter in the table: a number in the package's format, a short array by
    its entries, anything else by its text (a string choice such as ``"optimal"``)."""
    from dpbounds._numfmt import shown

    if isinstance(value, bool | str) or value is None:
        return str(value)
    arr = np.asarray(value) if isinstance(value, list | tuple | np.ndarray) else None
    if arr is not None and arr.dtype.kind in "biuf":
        if arr.size > 4:
            return f"[{shown(float(arr.flat[0]))} .. {shown(float(arr.flat[-1]))}] ({arr.size})"
        return "[" + ", ".join(shown(float(v)) for v in arr.ravel()) + "]"
    try:
        return shown(float(value))
    except (TypeError, ValueError):
        text = str(value)
        return text if len(text) <= 24 else text[:21] + "..."


def _shown_choice(hyper: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {_shown_value(v)}" for k, v in hyper.items())


def _at_floor(axis: str, value: Any) -> bool:
    """A grid edge nothing lies beyond: one step, no momentum."""
    try:
        return (axis == "steps" and float(value) == 1.0) or \
            (axis == "momentum" and float(value) == 0.0)
    except (TypeError, ValueError):
        return False


def _statistic(result: Any, statistic: str) -> np.ndarray:
    kind = getattr(result, "trace_kind", None)
    if kind != "suboptimality":
        raise ValueError(f"tune_by_runs needs runs traced as F(x_t) - F* ('suboptimality'), "
                         f"got {kind!r}: give an objective with a known optimum")
    trace = np.asarray(result.trace, dtype=float)
    return trace[:, -1] if statistic == "final" else np.min(trace, axis=1)


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean and Student's t 95% interval (a normal z covered ~70% at two runs)."""
    from scipy import stats

    n = int(values.size)
    mean = float(np.mean(values))
    if n < 2:
        return mean, -math.inf, math.inf
    half = float(stats.t.ppf(0.975, n - 1)) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def check_grid(grid: Any, fixed: Mapping[str, Any], limit: int, why: str = "") -> int:
    """The number of points of ``grid`` (``name -> values``), or ``ValueError`` naming what
    is wrong: not a mapping, an empty or string axis, a name also fixed, a value listed twice
    (run and charged twice: fuzz round 11), more than ``limit`` points (checked before any
    point is built: 10^9 of them ate the memory)."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError("grid must map at least one hyper-parameter name to its values")
    size = 1
    for k, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray) \
                or len(values) == 0:
            raise ValueError(f"grid[{k!r}] must be a non-empty sequence of values, got "
                             f"{values!r}")
        if k in fixed:
            raise ValueError(f"{k!r} is both searched (grid) and fixed")
        size *= len(values)
        if size > limit:
            raise ValueError(f"grid has more than {limit:,} points; at most {limit:,}{why}")
        twice = _repeated(values)
        if twice is not None:
            raise ValueError(f"grid[{k!r}] lists {twice!r} more than once")
        for v in values:
            # a NaN or an infinity runs nowhere: its every trial failed, silently, after
            # running on the data (fuzz round 14)
            if isinstance(v, numbers.Real) and not isinstance(v, bool) \
                    and not math.isfinite(float(v)):
                raise ValueError(f"grid[{k!r}] holds {v!r}: every value must be finite")
    return size


#: keywords a grid or a compare choice must not set: what every run is given (epsilon,
#: trials, seed), and what would lower the noise a run reports as private (a searched
#: sensitivity picks the smallest: less noise at the same reported eps) or replace it
RESERVED = ("epsilon", "trials", "seed", "sensitivity", "lipschitz", "smoothness", "noise",
            "transcript")
#: declared bounds a run calibrates by without enforcing them (noisy projected SGD's
#: ``lipschitz``, the sensitivity-reduced NSGD's ``smoothness``): a fixed one is the caller's
#: public bound, a searched one picks the smallest, the least noise (review 2 of stop 80:
#: ``lipschitz`` in a grid chose 1e-4 where the loss's own was 1.54)
DECLARED_BOUNDS = ("sensitivity", "lipschitz", "smoothness")


def check_names(algorithm: Any, names: Mapping[str, str]) -> None:
    """Refuse (``ValueError``) a name in ``names`` (``name -> where it was given``) that is
    reserved (:data:`RESERVED`; ``sensitivity`` may be a fixed argument, a public bound, not a
    searched one), or that ``algorithm`` does not take where its signature is
    closed (no ``**kwargs``): before any run (a misspelt compare choice failed after the whole
    grid had run: fuzz round 11)."""
    import inspect

    from dpbounds._suggest import did_you_mean

    for name, where in names.items():
        # a fixed sensitivity is a public bound declared once (what the watch's refusal of a
        # data-derived one advises: walkthrough of stop 80); searched, it would buy less noise
        if name in RESERVED and not (name in DECLARED_BOUNDS and where.startswith("fixed")):
            raise ValueError(f"{where}: {name!r} is not a hyper-parameter to search or compare "
                             "(every run is given epsilon, trials and seed; a searched "
                             "sensitivity or noise would lower the noise the runs report)")
    try:
        params = inspect.signature(algorithm).parameters
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    takes = [p for p in params if p != "objective"]
    for name, where in names.items():
        if name not in params:
            label = getattr(algorithm, "__name__", type(algorithm).__name__)
            raise ValueError(f"{where}: {label} takes no {name!r}"
                             f"{did_you_mean(name, takes)} (it takes {', '.join(takes)})")


def display_name(algorithm: Any, fixed: Mapping[str, Any]) -> str:
    """The algorithm's name in a result: its ``__name__``, or the method's name for
    :func:`dpbounds.extend.run_method` given ``method=NAME``."""
    if getattr(algorithm, "__name__", None) == "run_method" and "method" in fixed:
        return str(fixed["method"])
    return str(getattr(algorithm, "__name__", type(algorithm).__name__))


def _repeated(values: Any) -> Any:
    """A value listed twice in ``values`` (numbers by value: 1 and 1.0 are one), else None."""
    try:
        keys = [v if isinstance(v, str) else float(v) for v in values]
    except (TypeError, ValueError):  # arrays, dicts: compared pairwise
        for i, v in enumerate(values):
            for u in list(values)[:i]:
                try:
                    if np.array_equal(np.asarray(u, dtype=object), np.asarray(v, dtype=object)):
                        return v
                except Exception:  # noqa: BLE001 - values that do not compare differ
                    continue
        return None
    seen: set[Any] = set()
    for v, key in zip(values, keys):
        if key in seen:
            return v
        seen.add(key)
    return None


def _score(values: np.ndarray, hyper: dict[str, Any]) -> RunScore:
    n = int(values.size)
    if not np.all(np.isfinite(values)):
        return RunScore(hyper, math.inf, math.inf, math.inf, n, "a run diverged (inf or nan)")
    mean, low, high = _interval(values)
    if np.all(values >= 0):  # F - F* >= 0: so is its mean (fuzz round 12 read [-0.056, 0.13])
        low = max(low, 0.0)
    return RunScore(hyper, mean, low, high, n)


# ---- the grid point as a sweep cell ------------------------------------------------------
# What a cell cannot carry as plain values (a closure, an objective without a recipe) stays in
# this process, under a token: such a tuning runs here only and is not stored.
_LIVE: dict[str, Any] = {}
_LIVE_REFS: dict[str, int] = {}  # calls holding each token (two tunings may share one)
_BUILT: dict[str, Any] = {}  # a recipe's JSON -> its objective, in this (worker) process
#: the tokens the current tuning call holds (per thread and task: two overlapping calls each
#: drop only their own holds)
_CALL_TOKENS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "dpbounds_tune_tokens", default=None)


class _NotPortable(ValueError):
    """A value that a store or another process cannot receive."""


def _hold(token: str, value: Any) -> None:
    """Put ``value`` in the process table under ``token`` for the current call."""
    _LIVE[token] = value
    _LIVE_REFS[token] = _LIVE_REFS.get(token, 0) + 1
    _call_tokens().append(token)


def _call_tokens() -> list[str]:
    held = _CALL_TOKENS.get()
    if held is None:  # outside a tuning call: a list of its own
        held = []
        _CALL_TOKENS.set(held)
    return held


def _release(tokens: list[str]) -> None:
    """Drop this call's hold on ``tokens`` (another call's hold on the same one stays)."""
    for token in tokens:
        left = _LIVE_REFS.get(token, 1) - 1
        if left <= 0:
            _LIVE.pop(token, None)
            _LIVE_REFS.pop(token, None)
        else:
            _LIVE_REFS[token] = left


def _live(value: Any) -> dict[str, str]:
    import uuid

    # unique per call: an id alone is reused once its object is gone (review of stop 77)
    token = f"{type(value).__name__}-{id(value):x}-{uuid.uuid4().hex[:12]}"
    _hold(token, value)
    return {"__live__": token}


def _source_digest(fn: Any) -> str | None:
    """SHA-256 of ``fn``'s code: its source text, the source of every function of its own
    module it reaches through its globals (a helper edited in a notebook or a script changed
    the runs and kept the key: review of stop 77), and its package's files (a script run as
    ``__main__``: the script's bytes). ``None``: nothing could be read."""
    import hashlib
    import inspect
    import sys
    import types

    from dpbounds.sweep.cells import module_digest

    parts: list[str] = []
    seen: set[int] = set()

    def walk(f: Any, depth: int) -> None:
        if id(f) in seen or depth > 20 or len(seen) > 200:
            return
        seen.add(id(f))
        try:
            parts.append(inspect.getsource(f))
        except (OSError, TypeError):
            code = getattr(f, "__code__", None)
            if code is not None:  # no source: the bytecode and constants
                parts.append(repr((code.co_code, code.co_consts, code.co_names)))
        code = getattr(f, "__code__", None)
        if code is None:
            return
        names: set[str] = set()
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        module = getattr(f, "__module__", None)
        for name in sorted(names):
            g = getattr(f, "__globals__", {}).get(name)
            if isinstance(g, types.FunctionType) and g.__module__ == module:
                walk(g, depth + 1)

    walk(fn, 0)
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and module not in ("__main__", "__mp_main__"):
        digest = module_digest(module)
        if digest is not None:
            parts.append(digest)
    elif isinstance(module, str):
        path = getattr(sys.modules.get(module), "__file__", None)
        if path:
            try:
                with open(path, "rb") as fh:
                    parts.append(hashlib.sha256(fh.read()).hexdigest())
            except OSError:
                pass
    if not parts:
        return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _algorithm_ref(algorithm: Callable[..., Any], portable: bool,
                   fixed: Mapping[str, Any]) -> dict[str, Any]:
    import inspect

    from dpbounds.sweep.cells import function_name

    if inspect.isfunction(algorithm):  # not a bound method, a partial or a callable object
        try:
            ref = {"name": function_name(algorithm), "source": _source_digest(algorithm)}
        except ValueError:  # a lambda or a nested function
            ref = None
        if ref is not None:
            # what the function runs beyond its own code (dpbounds.extend.run_method: the
            # registered method's definition, which a notebook can redefine under one name)
            key_of = getattr(algorithm, "__sweep_key__", None)
            if key_of is not None:
                ref["runs"] = key_of(fixed)
            return ref
    if portable:
        raise _NotPortable(
            f"algorithm {algorithm!r} is not a module-level function: a store or a worker "
            "process finds the algorithm by its name (define it at a module's top level; a "
            "plug-in's method: dpbounds.extend.run_method with method=NAME)")
    return _live(algorithm)


def objective_fingerprint(objective: Any) -> str:
    """32 hex digits identifying an objective by its data and behaviour.

    SHA-256 over its class, the arrays and numbers among its public attributes (cached
    properties such as ``optimum`` left out: computing one must not change the key), its size,
    dimension and declared constants, and its losses at two probe points (zero and a fixed
    pseudo-random point) and its per-sample losses at the second (where it has
    ``sample_losses``), so that data held in private attributes count too; an object whose
    data change leaves all of these unchanged keeps its key (give it an :class:`ObjectiveRecipe`
    instead).
    """
    import functools
    import hashlib

    h = hashlib.sha256()
    cls = type(objective)
    h.update(f"{cls.__module__}.{cls.__qualname__}".encode())

    def feed(name: str, value: Any) -> None:
        if isinstance(value, np.ndarray) and value.dtype != object:
            h.update(f"\0{name}:{value.dtype.str}:{value.shape}\0".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, bool | int | float | str | np.integer | np.floating) \
                or value is None:
            h.update(f"\0{name}={value!r}".encode())

    for name in sorted(vars(objective)):
        if name.startswith("_") or isinstance(getattr(cls, name, None),
                                              functools.cached_property | property):
            continue
        value = vars(objective)[name]
        if isinstance(value, tuple | list) and len(value) < 64:
            for i, v in enumerate(value):
                feed(f"{name}[{i}]", v)
        else:
            feed(name, value)
    for name in ("n", "d", "smoothness", "strong_convexity", "gradient_bound",
                 "l2_sensitivity", "l1_sensitivity"):
        try:
            feed(name, getattr(objective, name))
        except Exception:  # noqa: BLE001 - a constant it does not declare is not part of it
            h.update(f"\0{name}: none".encode())
    d = int(objective.d)
    probes = np.stack([np.zeros(d), np.random.default_rng(20261207).standard_normal(d)])
    loss = objective.loss(probes)
    loss = np.asarray(loss.get() if hasattr(loss, "get") else loss, dtype=float)
    feed("loss at the probes", loss)
    per_sample = getattr(objective, "sample_losses", None)
    if callable(per_sample):
        try:
            each = per_sample(probes[1:2])
            feed("sample losses at the probe",
                 np.asarray(each.get() if hasattr(each, "get") else each, dtype=float))
        except NotImplementedError:
            pass
    return h.hexdigest()[:32]


def _objective_ref(objective: Any, portable: bool, stored: bool) -> dict[str, Any]:
    if isinstance(objective, ObjectiveRecipe):
        return {"recipe": objective.key()}
    if portable:
        raise _NotPortable(
            "objective: worker processes cannot receive an objective object; give an "
            "ObjectiveRecipe(factory, params) that builds it (factory a module-level "
            "function) or run the points in this process")
    if stored:  # the key is the fingerprint (a token of this process would differ next time)
        fingerprint = objective_fingerprint(objective)
        _hold(f"objective-{fingerprint}", objective)  # one token per data: two tunings of
        # the same objective share it (each call drops its own hold)
        return {"__live__": f"objective-{fingerprint}", "fingerprint": fingerprint}
    return _live(objective)


def _encode(value: Any, where: str, portable: bool, stored: bool) -> Any:
    """``value`` as a cell parameter: plain values as they are, arrays as tagged lists,
    anything else (a callable schedule ...) by a token (this process only, never stored)."""
    from dpbounds.sweep.cells import canonical

    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
    try:
        return canonical(value, where)
    except ValueError:
        if portable or stored:
            raise _NotPortable(f"{where}: {type(value).__name__} cannot be stored or sent "
                               "to a worker (use numbers, strings, arrays, lists)") from None
        return _live(value)


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"__ndarray__", "dtype"}:
        return np.asarray(value["__ndarray__"], dtype=np.dtype(value["dtype"]))
    if isinstance(value, dict) and "__live__" in value:
        try:
            return _LIVE[value["__live__"]]
        except KeyError:
            raise ValueError("a value of this tuning lives in the calling process only (an "
                             "objective object, a closure): run the points there, or give "
                             "an ObjectiveRecipe and a module-level algorithm") from None
    return value


def _build(ref: dict[str, Any]) -> Any:
    if "recipe" in ref:
        from dpbounds.sweep.engine import _load

        recipe = ref["recipe"]
        return ObjectiveRecipe(_load(recipe["factory"]), recipe["params"]).build()
    return _decode(ref)


def run_grid_point(*, algorithm: dict[str, Any], objective: dict[str, Any],
                   hyper: dict[str, Any], fixed: dict[str, Any], epsilon: float,
                   statistic: str, trials: int, seed: tuple[int, ...]) -> dict[str, Any]:
    """One grid point's runs, as a sweep cell (:func:`tune_by_runs` builds its arguments).

    Returns the per-run statistic (``values``), the runs' ledger, accountant and target
    delta, or why the point did not run (``failure``: the algorithm refused or overflowed;
    ``type_error``: a name it does not take).
    """
    from dpbounds.sweep.engine import _load

    alg = _load(algorithm["name"]) if "name" in algorithm else _decode(algorithm)
    f = _build(objective)
    kw = {k: _decode(v) for k, v in fixed.items()}
    hyp = {k: _decode(v) for k, v in hyper.items()}
    empty = {"values": np.empty(0), "ledger": None, "accountant": None, "target_delta": None,
             "failure": None, "type_error": None, "bug": False}
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging point scores inf
            res = alg(f, epsilon=epsilon, trials=trials, seed=tuple(seed), **kw, **hyp)
            values = _statistic(res, statistic)
    except TypeError as exc:
        text = str(exc)
        if any(w in text for w in ("keyword argument", "positional argument",
                                   "unknown parameter", "unexpected")):
            # a name the algorithm does not take: the grid or the fixed names are wrong
            return {**empty, "type_error": text}
        # the algorithm's own bug (a plug-in step's TypeError): not the grid's names
        return {**empty, "type_error": f"the run raised TypeError: {text}", "bug": True}
    except (ValueError, FloatingPointError, OverflowError) as exc:
        return {**empty, "failure": str(exc)}
    target = getattr(res.privacy, "target_delta", None)
    # searched names this point's runs never read (judged over the whole grid: a name read
    # at some points only, e.g. beta after a first step or under one schedule, is used)
    unread = [k for k in (getattr(res, "params", None) or {}).get("unread_hyperparameters", ())
              if k in hyper]
    return {**empty, "unread": unread, "values": np.asarray(values, dtype=float),
            "ledger": res.privacy.ledger.to_dict(), "accountant": str(res.privacy.accountant),
            "target_delta": None if target is None else float(target)}


def tune_by_runs(algorithm: Callable[..., Any], objective: Any,
                 grid: Mapping[str, Sequence[Any]], *, epsilon: float, trials: int = 32,
                 eval_trials: int | None = None, seed: int = 0,
                 compare: Mapping[str, Mapping[str, Any]] | None = None,
                 statistic: str = "final", spent_delta: float = 1e-5,
                 progress: bool | str = False, store: Any = None, executor: Any = None,
                 fresh: bool = False, name: str | None = None, **fixed: Any) -> RunTuning:
    r"""Grid-search an algorithm's hyper-parameters by the mean error of its simulated runs.

    Parameters
    ----------
    algorithm:
        ``algorithm(objective, epsilon=, trials=, seed=, **hyper, **fixed)`` returning a
        :class:`~dpbounds.algorithms.SimulationResult` traced as :math:`F(x_t)-F^\ast` (e.g.
        :func:`~dpbounds.algorithms.dp_heavy_ball`, :func:`~dpbounds.algorithms.dp_nag`; a
        plug-in's method: :func:`dpbounds.extend.run_method` with ``method=NAME``).
    objective:
        The problem the runs are made on (its optimum known), or an :class:`ObjectiveRecipe`
        that builds it (needed when ``executor`` runs the points in other processes).
    grid:
        ``name -> values``; every combination is run (at most :data:`MAX_POINTS`).
    epsilon:
        The privacy target of each run (> 0).
    trials:
        Runs per grid point on the selection seeds (>= 2).
    eval_trials:
        Runs of the pick (and of each ``compare`` choice) on the fresh seeds (>= 2; default
        ``4 * trials``).
    seed:
        A non-negative integer: the selection draws its trials from seed ``(seed, 1)``, the
        evaluation from ``(seed, 2)`` (:data:`SELECT_STREAM`, :data:`EVAL_STREAM`: disjoint
        SeedSequence families, neither the plain seed's).
    compare:
        ``label -> hyper-parameters`` measured on the fresh seeds beside the pick (e.g. the
        worst-case tuner's choice, the paper's).
    statistic:
        ``"final"`` (the last iterate's error, default) or ``"best"`` (the trace's minimum).
    spent_delta:
        Where ``spent_epsilon`` is read (in (0, 1)).
    progress:
        Progress output of the points (``False``, ``True``/``"auto"``, ``"bar"``, ``"lines"``).
    store:
        A :class:`~dpbounds.sweep.ResultStore` or its folder: every finished point is kept
        there, and a call with the same arguments reuses it (a killed tuning resumes). The
        algorithm must be a module-level function and the fixed arguments plain values or
        arrays.
    executor:
        Where the points run (:class:`~dpbounds.sweep.InProcess`, default;
        :class:`~dpbounds.sweep.LocalProcesses`, :class:`~dpbounds.sweep.DaskDistributed` or
        another ``concurrent.futures`` executor): the same numbers wherever they run; any but
        this process and its threads needs an :class:`ObjectiveRecipe`.
    fresh:
        Recompute the points and overwrite what ``store`` holds.
    name:
        The algorithm's name in the result (default: the function's ``__name__``, or
        ``method`` for :func:`dpbounds.extend.run_method`).
    fixed:
        Passed to every run (``x0=``, ``batch_size=``, a Gaussian run's ``delta=``, ...).

    Returns
    -------
    RunTuning
    """
    eps = check_positive("epsilon", epsilon)
    trials = check_int("trials", trials, minimum=2, maximum=1_000_000)
    eval_trials = check_int("eval_trials", 4 * trials if eval_trials is None else eval_trials,
                            minimum=2, maximum=1_000_000)
    seed = check_int("seed", seed, minimum=0)
    check_choice("statistic", statistic, ("final", "best"))
    if isinstance(spent_delta, bool) or not isinstance(spent_delta, int | float | np.number) \
            or not 0.0 < float(spent_delta) < 1.0:
        raise ValueError(f"spent_delta must be a number in (0, 1), got {spent_delta!r}")
    if objective is None:
        raise ValueError("objective must be an objective (or an ObjectiveRecipe), got None")
    check_grid(grid, fixed, MAX_POINTS, f" (each costs {trials} runs): search fewer values")
    points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]
    if compare is not None and not isinstance(compare, Mapping):
        raise ValueError(f"compare must map labels to hyper-parameter dicts, got "
                         f"{type(compare).__name__}")
    for label, hyper in (compare or {}).items():
        if not isinstance(hyper, Mapping):
            raise ValueError(f"compare[{label!r}] must be a dict of hyper-parameters, got "
                             f"{hyper!r}")
    if compare is not None and "tuned by runs" in compare:
        raise ValueError("compare: 'tuned by runs' is the pick's own label; name the choice "
                         "otherwise")
    check_names(algorithm, {**{k: f"fixed argument {k!r}" for k in fixed},
                            **{k: f"grid[{k!r}]" for k in grid},
                            **{k: f"compare[{label!r}]" for label, hyper in (compare or {}).items()
                               for k in hyper}})
    name = display_name(algorithm, fixed) if name is None else name

    # worker processes import what they run by name; a store keys it by name (never by a
    # token of this process). Only this process and its threads share its table: any other
    # executor (a user's process pool included) needs portable values (review of stop 77: a
    # reused forked pool ran a new objective whose id matched an old one on the old data)
    import concurrent.futures as cf

    from dpbounds.sweep.executors import InProcess

    inner = getattr(executor, "inner", executor)
    portable = not (executor is None or isinstance(executor, InProcess)
                    or isinstance(inner, cf.ThreadPoolExecutor))
    stored = store is not None
    token = _CALL_TOKENS.set([])
    try:
        return _tune_points(algorithm, objective, grid, points, portable, stored, store,
                            executor, fresh, progress, name, eps, trials, eval_trials, seed,
                            compare, statistic, spent_delta, fixed)
    finally:  # this call's holds on the process table (objectives, closures)
        _release(_call_tokens())
        _CALL_TOKENS.reset(token)


def _tune_points(algorithm: Callable[..., Any], objective: Any,
                 grid: Mapping[str, Sequence[Any]], points: list[dict[str, Any]],
                 portable: bool, stored: bool, store: Any, executor: Any, fresh: bool,
                 progress: bool | str, name: str, eps: float, trials: int, eval_trials: int,
                 seed: int, compare: Mapping[str, Mapping[str, Any]] | None, statistic: str,
                 spent_delta: float, fixed: dict[str, Any]) -> RunTuning:
    """:func:`tune_by_runs` after its checks: the two sweeps and what they measured."""
    from dpbounds.privacy import PrivacyLedger
    from dpbounds.sweep import Cell, run_sweep

    choices_given = {str(k): dict(v) for k, v in (compare or {}).items()}
    try:
        alg_ref = _algorithm_ref(algorithm, portable or stored, fixed)
        obj_ref = _objective_ref(objective, portable, stored)
        fixed_enc = {k: _encode(v, f"fixed argument {k!r}", portable, stored)
                     for k, v in fixed.items()}
        encoded = [{k: _encode(v, f"grid[{k!r}]", portable, stored) for k, v in p.items()}
                   for p in points]
        for label, hyper in choices_given.items():  # checked before any run
            for k, v in hyper.items():
                _encode(v, f"compare[{label!r}][{k!r}]", portable, stored)
    except _NotPortable as exc:
        why = f"executor={executor!r}" if portable else "store="
        raise ValueError(f"{why}: {exc}") from None
    common = {"algorithm": alg_ref, "objective": obj_ref, "fixed": fixed_enc,
              "epsilon": eps, "statistic": statistic}
    shown_progress: bool | str = progress if progress else "off"

    def sweep(hypers: list[dict[str, Any]], n: int, stream: int, desc: str
              ) -> list[dict[str, Any]]:
        cells = [Cell(run_grid_point, {**common, "hyper": h}, trials=n, seed=(seed, stream))
                 for h in hypers]
        return list(run_sweep(cells, store=store, executor=executor, progress=shown_progress,
                              desc=desc, fresh=fresh))

    ledgers: list[tuple[Any, int]] = []  # (one run's ledger, runs)
    accountants: list[str] = []
    failed: list[tuple[int, float | None]] = []  # (runs, their own delta) that raised
    # a failed run's delta, where it gives none: the target the completed runs report (an
    # algorithm's own default delta is not in `fixed`), else the one given
    run_deltas = [float(fixed.get("delta") or 0.0)]

    def read(record: dict[str, Any], hyper: dict[str, Any], n: int
             ) -> tuple[RunScore, np.ndarray]:
        if record["type_error"] is not None:
            raise ValueError(f"{name}: {record['type_error']}" + (
                "" if record.get("bug") else " (check the grid's and the fixed names)"))
        if record["failure"] is not None:
            # counted at its target below: it may have read the data before it stopped; at
            # its own delta where the point or the fixed arguments give one (a failed point
            # was charged the completed runs' delta: fuzz round 11)
            own = hyper.get("delta", fixed.get("delta"))
            failed.append((n, None if own is None else float(own)))
            return (RunScore(hyper, math.inf, math.inf, math.inf, 0, record["failure"]),
                    np.empty(0))
        ledger = PrivacyLedger.from_dict(record["ledger"])
        if ledgers and ledger.neighbouring is not ledgers[0][0].neighbouring:
            # one ledger holds one relation (a grid over neighbouring folded add/remove runs
            # into a replace-one ledger, or failed after every run: review of stop 76)
            raise ValueError("the grid's runs hold different neighbouring relations "
                             f"({ledgers[0][0].neighbouring.value}, "
                             f"{ledger.neighbouring.value}): tune one relation at a time")
        ledgers.append((ledger, n))
        accountants.append(record["accountant"])
        target = record["target_delta"]
        if target is not None and math.isfinite(target):
            run_deltas.append(float(target))
        values = np.asarray(record["values"], dtype=float)
        return _score(values, hyper), values

    records = sweep(encoded, trials, SELECT_STREAM, "tune by runs")
    selection = tuple(read(r, p, trials)[0] for r, p in zip(records, points))
    ran = [r for r in records if r["failure"] is None and r["type_error"] is None]
    never = [k for k in grid if ran and all(k in r.get("unread", ()) for r in ran)]
    if never:  # a searched name no run read: every value ran the same point, and the "pick"
        # among them was noise (walkthrough of stop 77: cc searched where the step reads c)
        raise ValueError(f"{name}: no run read {', '.join(never)} (searched): not a "
                         "hyper-parameter the method uses")
    order = sorted(range(len(points)), key=lambda i: selection[i].mean)
    if not math.isfinite(selection[order[0]].mean):
        reasons = sorted({s.failure or "" for s in selection})
        raise ValueError(f"no grid point ran: {'; '.join(reasons)[:500]}")
    best = dict(points[order[0]])
    choices = {"tuned by runs": best, **choices_given}
    evaluated = sweep([{k: _encode(v, k, portable, stored) for k, v in h.items()}
                       for h in choices.values()], eval_trials, EVAL_STREAM, "fresh runs")
    evaluation: dict[str, RunScore] = {}
    kept: dict[str, np.ndarray] = {}  # evaluation label -> its per-run values (paired)
    for (label, hyper), record in zip(choices.items(), evaluated):
        evaluation[label], kept[label] = read(record, hyper, eval_trials)
    notes = []
    for label in choices_given:
        a, b = kept[label], kept["tuned by runs"]
        if a.size == b.size and a.size > 1 and np.all(np.isfinite(a - b)):
            # the same trial streams: the difference run by run is paired
            mean, low, high = _interval(a - b)
            notes.append(f"{label} - tuned by runs (paired, same seeds): {mean:.4g} "
                         f"[{low:.4g}, {high:.4g}] (95%)")
    pick = selection[order[0]]
    ties = [i for i in order[1:] if selection[i].mean <= pick.high]
    if ties:  # the argmin among statistical ties: its fresh score is the one to quote
        runner = points[ties[0]]
        notes.append(f"{len(ties)} other point(s) scored within the pick's selection interval "
                     f"(statistical ties; the next: {_shown_choice(runner)}): pass it in "
                     "compare= to measure the difference on fresh seeds")
    for axis, values in grid.items():  # a pick on the grid's edge may lie beyond it
        if len(values) > 2 and best[axis] in (values[0], values[-1]) \
                and not _at_floor(axis, best[axis]):
            notes.append(f"the pick's {axis} = {best[axis]} is at the grid's edge: widen it")
    reasons = sorted({s.failure for s in selection if s.failure is not None})
    if reasons:  # why points did not run (the validator's own words: fuzz round 11)
        notes.append("failed point(s): " + "; ".join(r[:160] for r in reasons[:3])
                     + (f" (and {len(reasons) - 3} more reasons)" if len(reasons) > 3 else ""))
    spent = PrivacyLedger(ledgers[0][0].neighbouring)
    for ledger, n in ledgers:
        for mechanism, count in ledger.entries:
            spent.record(mechanism, count * n)
    n_failed = sum(n for n, _ in failed)
    runs = sum(n for _, n in ledgers) + n_failed
    acc = accountants[0] if len(set(accountants)) == 1 else "rdp"
    if len(set(accountants)) > 1:  # e.g. Laplace and Gaussian points: pure DP reads no
        # Gaussian (the first run's accountant failed after every run: fuzz round 11)
        notes.append(f"the runs were calibrated by {', '.join(sorted(set(accountants)))}: "
                     "the privacy spent is read by rdp, which composes them all")
    spent_eps = float(spent.epsilon(float(spent_delta), accountant=acc))
    # pure runs compose to pure DP: their epsilon holds at delta 0 (it was printed "at delta
    # = 1e-05": review of stop 77)
    delta_total = 0.0 if acc == "pure" else float(spent_delta)
    if failed:
        # a run that raised spent at most its target (eps, delta) before it stopped: basic
        # composition with the accounted part (Dwork & Roth Thm 3.16)
        default_delta = max(run_deltas)
        spent_eps += n_failed * eps
        delta_total += sum(n * (default_delta if d is None else d) for n, d in failed)
        shown_deltas = sorted({default_delta if d is None else d for _, d in failed})
        notes.append(f"{n_failed} run(s) failed (refused or stopped; they may have read the "
                     f"data): each counted at its target (eps = {eps:g}, delta = "
                     f"{', '.join(f'{d:g}' for d in shown_deltas)}), by basic composition")
    return RunTuning(algorithm=name, statistic=statistic, best=best, selection=selection,
                     evaluation=evaluation, spent=spent, spent_epsilon=spent_eps,
                     delta=delta_total, accountant=acc, runs=runs, notes=tuple(notes),
                     trials=trials)
