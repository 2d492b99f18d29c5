"""Result, ledger and trace types shared by every simulated DP algorithm.

Every algorithm in :mod:`dpbounds.algorithms` returns a :class:`SimulationResult`:

* ``x``: the final states, an ``xp`` array of shape ``(trials, d)`` (it stays on the device);
* ``trace``: a NumPy array of shape ``(trials, steps + 1)`` with the quantity named by
  ``trace_kind`` at every iterate ``x_0, ..., x_T`` — ``"suboptimality"`` (``F(x_t) - F*``),
  ``"loss"`` (``F(x_t)``) or ``"grad_norm"`` (``||∇F(x_t)||``);
* ``privacy``: a :class:`~dpbounds.privacy.run.RunPrivacy`, the run's privacy record: the
  :class:`~dpbounds.privacy.ledger.PrivacyLedger` of the mechanisms it executed, the target,
  the accountant that calibrated the noise, the sensitivity and the neighbouring relation
  (``privacy.report(delta)`` gives every accountant's ε side by side);
* ``ledger``: a :class:`SpentBudget`, a summary view derived from ``privacy`` (in one place,
  :meth:`SpentBudget.from_privacy`): the budget spent (per step and in total), the notion,
  the target and the relation;
* ``params``: the hyper-parameters used (step sizes, momentum, batch size, noise scales ...),
  keyed by the keyword names of :mod:`dpbounds.notation` (keys renamed with their keywords
  stay readable for one release: :data:`RENAMED_PARAMS`);
* ``source``: the :class:`~dpbounds.provenance.Source` of the algorithm.

Helpers for algorithm authors: :func:`make_streams` (separate sampling and noise streams, so
``epsilon = inf`` reproduces the non-private run batch for batch), :class:`TraceRecorder`
(collects ``xp`` values and converts once at the end — no device sync per step), the
validators :func:`check_batch_size`, :func:`check_epsilon`, :func:`check_steps`,
:func:`check_trials`, and :func:`public_normaliser` (the dataset size an algorithm may use
under a neighbouring relation).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, cast

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive
from dpbounds.backend import MAX_TRIALS, TrialRandom, to_numpy
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import Neighbouring
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import Source

if TYPE_CHECKING:  # casts only: the accountants' import (PLD, scipy.special) waits for a run
    from dpbounds.privacy.accountants import BasicAccountant, PureDpAccountant, ZcdpAccountant

__all__ = ["RunPrivacy", "SpentBudget", "SimulationResult", "make_streams", "progress"]

#: Neighbouring relations a ledger may name (the enum's values).
NEIGHBOURING: tuple[str, ...] = tuple(nb.value for nb in Neighbouring)
#: What a trace may hold.
TRACE_KINDS: tuple[str, ...] = ("suboptimality", "loss", "grad_norm")
#: Largest number of iterations a simulation accepts (a Python loop of 10^7 steps already
#: takes minutes; larger values are refused before anything is allocated).
MAX_STEPS: int = 10**7
#: Largest number of iterations of a run on a compiled per-step loop
#: (:mod:`dpbounds.algorithms._step_kernels`: a few microseconds per step for 4 trials, so
#: 10^8 steps take minutes and 10^9 about an hour).
MAX_COMPILED_STEPS: int = 10**9


@dataclass(frozen=True)
class SpentBudget:
    """The privacy budget a run spent, as computed by its accountant.

    Attributes
    ----------
    notion:
        ``"pure-DP"``, ``"zCDP"``, ``"(eps,delta)-DP"`` or ``"non-private"``.
    neighbouring:
        The relation, a :class:`~dpbounds.privacy.mechanisms.Neighbouring` member (legacy
        spellings such as ``"replace-one"`` are converted on construction).
    epsilon:
        The spent ``ε`` (for zCDP: converted from ``rho`` by ``conversion``). For per-trial
        adaptive spending (DP-AGD) the maximum over trials.
    delta:
        The spent ``δ``.
    target_epsilon:
        What the caller asked for; ``epsilon <= target_epsilon`` always holds.
    target_delta:
        The caller's ``δ``.
    per_step:
        NumPy array of per-step costs (``ε_t`` for pure DP, ``ρ_t`` for zCDP), shape
        ``(steps,)`` or ``(trials, steps)`` when the spending is adaptive.
    rho:
        Total zCDP budget spent (``None`` unless ``notion == "zCDP"``); per trial for
        adaptive runs (array) — ``epsilon`` is computed from its maximum.
    accountant:
        How the total was obtained (e.g. ``"basic composition of eq. (11)"``).
    events:
        Human-readable list of mechanism invocations (name, count, cost each).
    """

    notion: str
    neighbouring: Neighbouring
    epsilon: float
    delta: float
    target_epsilon: float
    target_delta: float
    per_step: np.ndarray
    accountant: str
    rho: Any = None
    events: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "neighbouring", Neighbouring.coerce(self.neighbouring))

    def __getattr__(self, name: str) -> Any:
        # only for names the summary lacks: the exportable ledger is another object
        # (walkthrough of stop 78: r.ledger.report(1e-5) was a bare AttributeError)
        from dpbounds.privacy.ledger import PrivacyLedger

        if not name.startswith("_") and hasattr(PrivacyLedger, name):
            raise AttributeError(f"SpentBudget has no attribute {name!r}: result.ledger is the "
                                 f"run's spend summary; the PrivacyLedger (report, "
                                 f"to_dict, accountant, ...) is result.privacy.ledger")
        raise AttributeError(f"SpentBudget has no attribute {name!r}")

    @property
    def within_target(self) -> bool:
        """``epsilon <= target_epsilon`` and ``delta <= target_delta`` (with no slack)."""
        return self.epsilon <= self.target_epsilon and self.delta <= self.target_delta

    def __str__(self) -> str:
        rho = "" if self.rho is None else f", rho={float(np.max(self.rho)):.4g}"
        return (f"{self.notion} ({self.neighbouring}): spent eps={self.epsilon:.6g}, "
                f"delta={self.delta:.3g}{rho} <= target ({self.target_epsilon:.6g}, "
                f"{self.target_delta:.3g}) [{self.accountant}]")

    @classmethod
    def non_private(cls, steps: int,
                    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE) -> SpentBudget:
        """Ledger of a run with ``epsilon = inf`` (no noise)."""
        return cls("non-private", Neighbouring.coerce(neighbouring), math.inf, 0.0,
                   math.inf, 0.0, np.full(steps, math.inf), "none (epsilon = inf)")

    @classmethod
    def from_privacy(cls, privacy: RunPrivacy, steps: int = 0) -> SpentBudget:
        """The summary view of a run's :class:`~dpbounds.privacy.run.RunPrivacy` — the one
        place a :class:`SpentBudget` is built: ε by the run's accountant at the target δ,
        ``per_step`` the per-run cost of every recorded mechanism (ε for pure DP, ρ for zCDP;
        empty for RDP/PLD, whose cost is a curve), ``rho`` the composed zCDP budget."""
        nb = privacy.neighbouring
        if not privacy.private:
            return cls.non_private(steps, nb)
        name = privacy.accountant
        ledgers = privacy.trial_ledgers or (privacy.ledger,)
        costs = [_entry_costs(privacy, led) for led in ledgers]
        width = max(len(c) for c in costs)
        per_step = np.array([c + [0.0] * (width - len(c)) for c in costs])
        rho = None
        if name == "zcdp":
            rhos = np.array([cast("ZcdpAccountant", privacy.make_accountant(led)).rho
                             for led in ledgers])
            rho = rhos if privacy.trial_ledgers else float(rhos[0])
        if not privacy.trial_ledgers:
            per_step = per_step[0]
        opts = ", ".join(f"{k}={v}" for k, v in privacy.accountant_options.items())
        how = f"{name} accountant{f' ({opts})' if opts else ''} over the recorded mechanisms"
        return cls(_NOTIONS[name], nb, privacy.epsilon, privacy.delta,
                   privacy.target_epsilon, privacy.target_delta if name != "pure" else 0.0,
                   per_step, how + (f"; {privacy.description}" if privacy.description else ""),
                   rho=rho, events=_events(privacy.ledger))


#: The notion a SpentBudget names for each accountant.
_NOTIONS = {"pure": "pure-DP", "zcdp": "zCDP", "rdp": "(eps,delta)-DP",
            "pld": "(eps,delta)-DP", "basic": "(eps,delta)-DP"}


def _entry_costs(privacy: RunPrivacy, ledger: Any) -> list[float]:
    """Per-run cost of every recorded mechanism, repeated by its count (ε for pure / basic,
    ρ for zCDP, nothing for RDP / PLD)."""
    acc = privacy.make_accountant(PrivacyLedger(ledger.neighbouring))
    cost: Callable[[Any], float]
    if privacy.accountant == "pure":
        cost = cast("PureDpAccountant", acc).mechanism_epsilon
    elif privacy.accountant == "zcdp":
        cost = cast("ZcdpAccountant", acc).mechanism_rho
    elif privacy.accountant == "basic":
        def cost(m: Any) -> float:
            return cast("BasicAccountant", acc.spawn().compose(m, 1)).epsilon
    else:
        return []
    out: list[float] = []
    for mechanism, count in ledger.entries:
        out.extend([float(cost(mechanism))] * count)
    return out


def _events(ledger: Any) -> tuple[str, ...]:
    """Readable list of the recorded mechanisms (runs of one type merged past 8 entries)."""
    entries = ledger.entries
    if len(entries) <= 8:
        return tuple(f"{n} x {m!r}" for m, n in entries)
    out: dict[str, int] = {}
    for m, n in entries:
        out[type(m).__name__] = out.get(type(m).__name__, 0) + n
    return tuple(f"{n} x {name} (varying parameters)" for name, n in out.items())


#: ``params`` keys renamed with their algorithm keywords (old -> new; the keyword renames of
#: ``notation_keywords`` in ``tree_momentum_nsgd``, ``sensitivity_reduced_nsgd``, ``dp_nsgd``,
#: ``dp_sgd`` and ``dp_gd``). Reading an old key still works for one release, with a
#: ``DeprecationWarning`` naming the new key.
RENAMED_PARAMS: Mapping[str, str] = {"alpha": "momentum_weight", "gamma": "mixing",
                                     "clip_norm": "clip_threshold", "r": "regulariser"}
_OLD_PARAMS = {new: old for old, new in RENAMED_PARAMS.items()}


class FrozenParams(dict):
    """A read-only ``dict`` (picklable, unlike :class:`types.MappingProxyType`): the
    parameters a :class:`SimulationResult` records.

    A key of :data:`RENAMED_PARAMS` that the record lacks reads its new key (with a
    ``DeprecationWarning`` naming it), and a new key reads the old one in a record made
    before the rename (a pickled or cached result); iteration, ``in`` and ``len`` see only
    the stored keys.
    """

    def _alias(self, key: Any) -> Any:
        """The stored key that answers ``key`` (``key`` itself when none does)."""
        if not isinstance(key, str) or dict.__contains__(self, key):
            return key
        new = RENAMED_PARAMS.get(key)
        if new is not None and dict.__contains__(self, new):
            warnings.warn(f"params key {key!r} is deprecated, use {new!r}", DeprecationWarning,
                          stacklevel=3)
            return new
        old = _OLD_PARAMS.get(key)
        return old if old is not None and dict.__contains__(self, old) else key

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self, self._alias(key))

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self, self._alias(key), default)

    @staticmethod
    def _refuse() -> NoReturn:
        raise TypeError("a SimulationResult's params are read-only; "
                        "use dataclasses.replace(result, params=...) for a changed copy")

    def __setitem__(self, key: str, value: Any) -> None:
        self._refuse()

    def __delitem__(self, key: str) -> None:
        self._refuse()

    # mypy: dict types __ior__ and __or__ together; refusing in-place | needs its own signature
    def __ior__(self, other: Any) -> FrozenParams:  # type: ignore[misc]
        self._refuse()

    def clear(self) -> None:
        self._refuse()

    def pop(self, key: str, default: Any = None) -> Any:
        self._refuse()

    def popitem(self) -> tuple[str, Any]:
        self._refuse()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._refuse()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()

    def __reduce__(self) -> tuple:
        return (FrozenParams, (dict(self),))


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """What a simulated DP algorithm returns (see the module docstring).

    Frozen: a result is a record of one run, so its attributes cannot be reassigned and
    ``params`` is a read-only mapping (:func:`dataclasses.replace` makes a changed copy).
    ``algorithm`` is the stable id of the run: the name of the public function that produced
    it (``"dp_nag_opt"``, ``"tree_momentum_nsgd"``), the same in every release.
    """

    algorithm: str
    x: Any
    trace: np.ndarray
    trace_kind: str
    privacy: RunPrivacy
    params: Mapping[str, Any] = field(default_factory=dict)
    source: Source | None = None
    backend: str = "numpy"

    def __post_init__(self) -> None:
        # a read-only private copy: the caller's dict cannot change the record
        object.__setattr__(self, "params", FrozenParams(self.params))

    @property
    def ledger(self) -> SpentBudget:
        """Summary view of :attr:`privacy` (:meth:`SpentBudget.from_privacy`)."""
        cached = self.__dict__.get("_ledger")
        if cached is None:
            cached = self.__dict__["_ledger"] = SpentBudget.from_privacy(self.privacy,
                                                                         self.steps)
        return cached

    @property
    def trials(self) -> int:
        return int(self.x.shape[0])

    @property
    def steps(self) -> int:
        """Iterations run (``params["steps"]`` when recorded, else from the trace)."""
        if "steps" in self.params:
            return int(self.params["steps"])
        return max(0, int(self.trace.shape[1] - 1))

    @property
    def final(self) -> np.ndarray:
        """Trace value at the last iterate, shape ``(trials,)``."""
        return self.trace[:, -1]

    def mean_trace(self) -> np.ndarray:
        """Mean over trials at each step, shape ``(steps + 1,)``."""
        return np.mean(self.trace, axis=0)

    def confidence_band(self, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
        """Mean ± ``z`` standard errors over trials at each step."""
        mean = self.mean_trace()
        if self.trials < 2:
            return mean, mean
        se = np.std(self.trace, axis=0, ddof=1) / math.sqrt(self.trials)
        return mean - z * se, mean + z * se

    def x_numpy(self) -> np.ndarray:
        return to_numpy(self.x)

    def summary(self) -> str:
        lo, hi = self.confidence_band()
        return (f"{self.algorithm}: {self.trials} trials x {self.steps} steps, final "
                f"{self.trace_kind} {self.mean_trace()[-1]:.4g} "
                f"(95% CI [{lo[-1]:.4g}, {hi[-1]:.4g}]); {self.ledger}")


class TraceRecorder:
    """Collect ``(trials,)`` values per step in the backend, convert once at the end.

    ``kind`` is one of :data:`TRACE_KINDS`, ``"auto"`` (the default of every algorithm:
    ``"suboptimality"`` on a convex objective, ``"grad_norm"`` otherwise) or ``None`` (no
    recording). For ``"suboptimality"`` the objective's cached optimum is subtracted. The one
    recorder of the package: tree momentum's records the error components beside it
    (a subclass).
    """

    def __init__(self, objective: ObjectiveProtocol, kind: str | None = "auto") -> None:
        self.objective = objective
        if kind == "auto":
            kind = "suboptimality" if objective.convex else "grad_norm"
        if kind is None:
            self.kind = None
        else:
            self.kind = check_choice("trace", kind, TRACE_KINDS)
            if (self.kind == "suboptimality" and not objective.convex
                    and not objective.optimum.is_global):
                raise ValueError("trace='suboptimality' needs a known global minimum (a convex "
                                 "objective); use trace='loss' or 'grad_norm'")
        self.offset = objective.optimum.value if self.kind == "suboptimality" else 0.0
        self._values: list[Any] = []
        self._pending: list[Any] = []  # states recorded by record_later, not yet evaluated
        self._slots: list[int] = []  # their indices in _values

    def value(self, x: Any, loss: Any = None) -> Any:
        """Trace value at ``x``; pass ``loss = F(x)`` if already computed."""
        if self.kind == "grad_norm":
            return self.objective.grad_norm(x)
        if loss is None:
            loss = self.objective.loss(x)
        return loss - self.offset if self.offset else loss

    def record(self, x: Any, loss: Any = None) -> None:
        if self.kind is not None:
            self._values.append(self.value(x, loss))

    #: Most state rows (pending states x trials) x features evaluated in one call by
    #: :meth:`record_later` (2 MiB of float64 states).
    later_elements: int = 1 << 18

    def record_later(self, x: Any) -> None:
        """Record the trace value at ``x`` (``(trials, d)``, not modified afterwards by the
        caller), evaluated later together with other pending states: their rows stacked into
        one objective call, so a full-data pass reads the data once for several states (a
        mini-batch run records ``F(x_t)`` at every step, which its updates never use).

        The same values as :meth:`record` when the objective's values are row by row
        (``objective.rowwise_states``: the compiled logistic pass gives every row the same
        bits whatever the rows beside it); other objectives are evaluated at once."""
        if self.kind is None:
            return
        if not getattr(self.objective, "rowwise_states", False):
            self.record(x)
            return
        self._pending.append(x)
        self._slots.append(len(self._values))
        self._values.append(None)  # its slot, filled by _flush
        elements = len(self._pending) * int(x.shape[0]) * max(1, int(x.shape[1]))
        if elements >= self.later_elements:
            self._flush()

    def _flush(self) -> None:
        """Evaluate the pending states in one call and fill their slots."""
        if not self._pending:
            return
        xp = self.objective.xp
        trials = int(self._pending[0].shape[0])
        stacked = (self._pending[0] if len(self._pending) == 1
                   else xp.concat(self._pending, axis=0))
        vals = self.value(stacked)
        for k, slot in enumerate(self._slots):
            self._values[slot] = vals[k * trials:(k + 1) * trials]
        self._pending, self._slots = [], []

    @property
    def needs_loss(self) -> bool:
        return self.kind in ("suboptimality", "loss")

    def result(self, trials: int) -> np.ndarray:
        self._flush()
        if self.kind is None or not self._values:
            return np.zeros((trials, 0))
        xp = self.objective.xp
        return np.ascontiguousarray(to_numpy(xp.stack(self._values, axis=1)))


def gradient_parts(f: ObjectiveProtocol, x: Any, idx: Any = None) -> tuple[Any, Any]:
    """``f.grad(x, idx)`` as ``(records' part, the rest)``: what a release-safe (grid) release
    rounds, and what is added after it (post-processing: no record changes it).

    The grid's sensitivity covers the float error of a sum of per-record terms each bounded
    by the sensitivity (``float_sum_factor``); a part every record shares (the regulariser's
    gradient, a quadratic's ``Qx - b``) added before the rounding brings an error that
    scales with its own size instead (independent reviews of issue 35: 1 + 1.7e-13 of the
    sensitivity with ``grad R``, an integer shift one unit over the bound with ``Qx - b``
    at large x). Package objectives split it themselves (``_gradient_parts``; a GLM's data
    gradient is all per-record terms); another objective's is ``f.grad - regularizer_grad``
    with its regulariser, exact only when that is zero (its rounding is then its author's).
    """
    reg = f.regularizer_grad(x)
    parts = getattr(f, "_gradient_parts", None)
    if parts is not None:
        records, shared = parts(x, idx)
        return records, shared + reg
    own = getattr(f, "_data_grad", None)
    if own is not None:
        return own(x, idx), reg
    return f.grad(x, idx) - reg, reg


def progress(iterable: Any, *, total: int | None = None, desc: str = "") -> Any:
    """``iterable`` with the shared bar (:func:`dpbounds._progress.progress_bar`): it appears
    only once a run has lasted 2 s, on a terminal; short runs print nothing."""
    from dpbounds._progress import progress_iter

    return progress_iter(iterable, total=total, desc=desc)


def make_streams(seed: Any, trials: int, xp: Any) -> tuple[TrialRandom, TrialRandom]:
    """``(sampler, noise)``: independent per-trial streams for mini-batches and noise.

    Every algorithm draws its mini-batches from ``sampler`` and its privacy noise from
    ``noise``, so runs that differ only in the noise level see the same batches.
    """
    sampler, noise = TrialRandom(seed, trials, xp).split(2)
    return sampler, noise


def sensitivity_override(given: Any, objective: Any, what: str) -> float:
    """A ``sensitivity=`` override: > 0 (0 or -0.0 ran a Laplace DP-GD with no noise while
    every accountant read eps = 0: fuzz round 9), with a ``UserWarning`` where it is below the
    objective's own bound (its ``what``): the run is then private only if that smaller bound
    holds, which dpbounds cannot check. The objective's bound is read as advice only
    (:mod:`dpbounds._advisory`: a private selection does not count the read)."""
    from dpbounds._advisory import advisory_read

    value = float(check_positive("sensitivity", given))
    with advisory_read():
        own = float(getattr(objective, what))
    if math.isfinite(own) and value < own:
        warnings.warn(f"sensitivity={value:g} is below the objective's own {what} {own:g}: "
                      "the noise is calibrated to the smaller bound, and the run is private "
                      "only if it holds", UserWarning, stacklevel=3)
    return value


def calibration_constant(objective: Any, what: str, run: str, *args: Any) -> float:
    """``objective.<what>`` (a property, or a method called with ``args``: ``lipschitz``), the
    constant a run calibrates its noise (or its clip) to, with a
    :class:`~dpbounds.privacy.limits.DataDerivedCalibrationWarning` where the objective took
    it from the private data: a radius it lists in ``CALIBRATION_RADII`` that was not
    declared (a margin loss's ``l1_radius`` defaults to the data's largest row norm), or a
    constant it lists in ``DATA_ONLY``. Such a run's noise depends on the data, and its
    privacy holds only if that value is a public bound (a researcher's walkthrough of stop
    81: runs on one's own arrays calibrated to the data's largest norm without a word).

    The value is read first, so a private selection's watch refuses the read as before."""
    value = getattr(objective, what)
    if args:
        value = value(*args)
    source = _data_source(objective, what)
    if source is not None:
        warn_data_calibrated(objective, what, source, run, f" = {float(value):.6g}")
    return float(value)


def _data_source(objective: Any, what: str) -> str | None:
    """What ``objective.<what>`` is taken from the data through: itself (a ``DATA_ONLY``
    constant), an undeclared radius (``CALIBRATION_RADII``), or ``None`` (public)."""
    cls = type(objective)
    if what in tuple(getattr(cls, "DATA_ONLY", ())):
        return what
    radius = dict(getattr(cls, "CALIBRATION_RADII", {}) or {}).get(what)
    own = vars(objective) if hasattr(objective, "__dict__") else {}
    # the radii's declarations, and other constants' (a margin loss's smoothness)
    declared = {**(own.get("radius_declared") or {}), **(own.get("constants_declared") or {})}
    return radius if radius is not None and not declared.get(radius, False) else None


def warn_data_calibrated(objective: Any, what: str, source: str, run: str,
                         value: str = "", step: bool = True) -> None:
    """The :class:`~dpbounds.privacy.limits.DataDerivedCalibrationWarning` of a run whose
    noise is calibrated to ``objective.<what>``, taken from the data through ``source``
    (``step``: a smoothness read is the default step size's, as in the package's runs)."""
    from dpbounds.privacy.limits import DataDerivedCalibrationWarning

    name = type(objective).__name__
    # where L came from: the Gram matrix, or a paper's formula on the same records
    origin = getattr(objective, "smoothness_origin", None)
    gram = ("the largest eigenvalue of its Gram matrix; smoothness= was not declared"
            if origin is None else f"{origin}, paper_smoothness=True")
    if source == "smoothness" and step:  # a default step size c / L, not the noise
        warnings.warn(DataDerivedCalibrationWarning(
            f"{run}: the default step size c / L reads the objective's smoothness L{value}, "
            f"which {name} computed from the private data ({gram}): the run is private only "
            "if that value is public; pass step_size= (e.g. c / (r^2/4 + lambda) for a "
            "logistic loss with a declared radius r) or declare smoothness="),
            stacklevel=_caller_level())
        return
    # a radius (read directly or through a sensitivity) can be declared; L too; a DATA_ONLY
    # constant only replaced by a public bound
    if source.endswith("radius"):
        how = f"{source} was not declared, so {name} took the data's largest norm"
        fix = f"declare {source}= (a public bound on every record) when building the objective"
    elif source == "smoothness":
        how = (f"{name} computed L from its Gram matrix; smoothness= was not declared"
               if origin is None else f"{name} computed L from the records ({gram})")
        fix = "declare smoothness= (a public bound), or pass a public sensitivity"
    else:
        how = f"{name} computes it from the records"
        fix = "pass a public bound (sensitivity=, or a clip)"
    warnings.warn(DataDerivedCalibrationWarning(
        f"{run}: the noise is calibrated to the objective's {what}{value}, taken from the "
        f"private data ({how}): the run is private only if that value is a public bound; "
        f"{fix}"), stacklevel=_caller_level())


#: held while :func:`data_derived_reads` has an objective's class swapped
_SWAP_LOCK = threading.RLock()


@contextmanager
def data_derived_reads(objective: Any) -> Iterator[list[tuple[str, str]]]:
    """Record, as ``(what, source)``, the reads of the objective's constants that it takes
    from the data (:func:`_data_source`) while the block runs: a plug-in's sensitivity
    function reads ``f.l1_sensitivity`` where the package's algorithms call
    :func:`calibration_constant`. The instance's class is swapped, for the block only, to a
    subclass whose such attributes record and answer as before; a class that cannot be
    subclassed, or that has attribute hooks of its own, is not watched (nothing recorded)."""
    cls = type(objective)
    keys = [k for k in (*tuple(getattr(cls, "DATA_ONLY", ())),
                        *dict(getattr(cls, "CALIBRATION_RADII", {}) or {}))
            if _data_source(objective, k) is not None]
    reads: list[tuple[str, str]] = []
    hooks = any(h in c.__dict__ for c in cls.__mro__[:-1]
                for h in ("__getattr__", "__getattribute__", "__setattr__"))
    if not keys or hooks or not hasattr(objective, "__dict__"):
        yield reads
        return

    def recorded(key: str) -> property:
        def get(self: Any) -> Any:
            reads.append((key, str(_data_source(objective, key))))
            # Python's own lookup below this class: a data descriptor of the class (a
            # property; a private selection's watch, which must still refuse) before the
            # instance's attribute (a radius), before a method or a class attribute
            for c in cls.__mro__:
                if key in c.__dict__:
                    attr = c.__dict__[key]
                    if hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__"):
                        return attr.__get__(self, cls)
                    break
            if key in self.__dict__:
                return self.__dict__[key]
            return getattr(super(watched, self), key)

        def put(self: Any, value: Any) -> None:
            self.__dict__[key] = value

        return property(get, put)

    # one swap at a time (re-entrant: a sensitivity function may run another plug-in): two
    # threads sharing an objective restored each other's subclass, which then stayed (review
    # of stop 82: tune_by_runs on a thread pool)
    with _SWAP_LOCK:
        cls = type(objective)
        try:
            watched = type(cls.__name__, (cls,), {
                "__module__": cls.__module__,
                **{k: recorded(k) for k in dict.fromkeys(keys)}})
            object.__setattr__(objective, "__class__", watched)
        except Exception:  # an __init_subclass__ of one's own, __slots__: not watched
            yield reads
            return
        try:
            yield reads
        finally:
            object.__setattr__(objective, "__class__", cls)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the package, as seen from the function
    that calls this one: a warning is then attributed to (and shown once per line of) the
    caller's own code, not to the wrapper that happened to run the algorithm."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame: Any = sys._getframe(1)  # the warning function's frame: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
        level += 1
    return level


def check_batch_size(batch_size: Any, n: int) -> int:
    """``1 <= batch_size <= n`` (``None`` means the full batch ``n``)."""
    if batch_size is None:
        return int(n)
    return check_int("batch_size", batch_size, minimum=1, maximum=int(n))


def check_steps(steps: Any, name: str = "steps", maximum: int = MAX_STEPS) -> int:
    """An iteration count in ``[1, maximum]`` (:data:`MAX_STEPS`, or
    :data:`MAX_COMPILED_STEPS` for a run on a compiled loop)."""
    return check_int(name, steps, minimum=1, maximum=maximum)


def check_trials(trials: Any) -> int:
    """A number of trials in ``[1, MAX_TRIALS]``."""
    return check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)


def public_normaliser(public_n: Any, n: int, neighbouring: Neighbouring | str) -> int:
    """The dataset size an algorithm may divide by or calibrate its noise with.

    Under ``"replace-one"`` the size ``n`` of the data set is public (neighbours have the
    same size), so it is used, and ``public_n`` may only repeat it. Under ``"add/remove"``
    the size is private: a mean over the actual data moves by up to ``2G/(n+1)`` when one
    record is added (twice the ``G/n`` a public denominator gives), and a noise scale or
    sampling rate computed from ``n`` differs between the neighbours. The caller must then
    declare a public normaliser ``public_n`` (a known size, or a public bound on it); the
    algorithms release the noisy **sum** divided by it, and their noise depends only on it.
    This is what Opacus does with its expected batch size.

    Raises
    ------
    ValueError
        Under add/remove without ``public_n``, or under replace-one with a ``public_n``
        other than ``n``.
    """
    if Neighbouring.coerce(neighbouring) is Neighbouring.ADD_REMOVE:
        if public_n is None:
            raise ValueError(
                "public_n must be given for neighbouring='add/remove': the dataset size is "
                "private under add/remove, so the released sum is divided by (and the noise "
                "calibrated with) a public normaliser; pass public_n=<a public dataset size>")
        return check_int("public_n", public_n, minimum=1)
    if public_n is not None and check_int("public_n", public_n, minimum=1) != n:
        raise ValueError(f"public_n must be omitted or equal n={n} under replace-one (the "
                         f"dataset size is public there), got {public_n!r}")
    return int(n)


def check_own_record_losses(objective: ObjectiveProtocol, algorithm: str, epsilon: float
                            ) -> None:
    """Refuse a private run on an objective whose per-example losses depend on other records.

    The sensitivities of the clipped (or normalised, or bounded) gradient sums count one
    record's own term: adding, removing or replacing a record changes that term only. An
    objective that declares ``centred_records`` (each loss uses a centre recomputed from the
    data set it is built from) moves every term instead, so the calibrated noise would not
    cover the change. The bundled centred objectives fix their centre as a public
    parameter (``centre``) and do not declare it.
    """
    if getattr(objective, "centred_records", False) and math.isfinite(epsilon):
        raise ValueError(
            f"{algorithm} does not accept {type(objective).__name__} "
            f"({getattr(objective, 'name', '?')!r}): it declares centred_records (its "
            "per-example losses use a centre recomputed from the whole data set), so adding, "
            "removing or replacing one record moves every term of the clipped gradient sum, "
            "not one: the sensitivity the noise is calibrated to would not hold and the "
            "privacy claim would fail; fix the centre as a public parameter of the objective "
            "(as QuadraticObjective, HuberWell and CoshCosineObjective do with centre=)")


def check_epsilon(epsilon: Any) -> float:
    """``epsilon > 0``; ``math.inf`` is allowed and means "non-private"."""
    return check_positive("epsilon", epsilon, allow_inf=True)


def check_step_size(name: str, value: Any) -> float:
    """A positive, finite step size."""
    return check_positive(name, value)


#: Largest noise std x step size a simulation accepts: beyond it ``F(x) ~ ||x||^2`` overflows
#: float64 (1e308) within a few steps and the trace would be inf/NaN.
MAX_NOISE_STEP: float = 1e100


def check_noise_step(noise_scale: Any, step_size: Any, epsilon: float) -> None:
    """``ValueError`` naming ``epsilon`` when the noise moves the iterate by more than
    :data:`MAX_NOISE_STEP` per step (a tiny ``epsilon``): the run would only produce inf/NaN."""
    move = float(np.max(np.abs(np.asarray(noise_scale, dtype=float))
                        * np.max(np.abs(np.asarray(step_size, dtype=float)))))
    if not move <= MAX_NOISE_STEP:
        raise ValueError(f"epsilon={epsilon!r} is too small to simulate at these settings: the "
                         f"noise (scale up to {float(np.max(np.abs(noise_scale))):.3g}) times the "
                         f"step size (up to {float(np.max(np.abs(step_size))):.3g}) moves the "
                         f"iterate by ~{move:.3g} per step, beyond float64 (limit "
                         f"{MAX_NOISE_STEP:g}); use a larger epsilon, a smaller step size or a "
                         "smaller sensitivity")


def default_step_size(objective: ObjectiveProtocol, step_size: Any, c: Any,
                      run: str | None = None) -> float:
    """``step_size`` if given, else ``c / L`` (``L = objective.smoothness``, finite and > 0);
    ``run`` names a private run, which warns where ``L`` is the data's
    (:func:`calibration_constant`)."""
    if step_size is not None:
        return check_positive("step_size", step_size)
    c = check_positive("c", c)
    L = (float(objective.smoothness) if run is None
         else calibration_constant(objective, "smoothness", run))
    if not (math.isfinite(L) and L > 0):
        raise ValueError(f"step_size must be given: the objective's smoothness L = {L} gives "
                         "no default c / L")
    return c / L
