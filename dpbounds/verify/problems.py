r"""Verification problems with declared constants :math:`(G, L)` and a run-level :math:`R`.

Every problem is built on :class:`~dpbounds.objectives.HuberWell` (per-sample gradients of norm
:math:`\le G`, per-sample :math:`L`-smooth, **exactly**; minimiser :math:`x^*=0` and
:math:`F^*` in closed form), so every constant a bound assumes is known and true:

* ``"huber_well"`` — centres spread over radius ``spread`` (data noise), start at distance
  ``start`` along :math:`\mathbf 1/\sqrt d` (inside the quadratic zone by default, so the
  algorithms visibly reduce :math:`\lVert\nabla F\rVert` from :math:`L\cdot` ``start``);
  :math:`R=F(x_0)-F^*` of the run (same for every ``d``).
* ``"far"`` — the same well started far outside (``start = 5``): :math:`\lVert\nabla F\rVert
  \approx G` until the iterate enters the zone of radius :math:`\delta=G/L`.
* ``"noise_floor"`` — start **at the minimiser** (:math:`R=0`): whatever the algorithm reports
  is set by its noise (privacy noise, sampling noise, momentum lag), not by optimisation. The
  hyper-parameters are tuned for ``tune_R`` (the ``huber_well`` start's :math:`R`, as a user
  who does not know where the minimiser is would), the bound is evaluated at the run's
  :math:`R=0` (a tiny positive number: the bounds' symbols are positive).
* ``"hard"`` — a single well (no spread) started at distance ``start`` (5 by default): a
  lower-bound instance. Any method whose iterates move at most :math:`\eta` per step (every
  normalized method) has :math:`\lVert x_t\rVert\ge D-\eta t`, so
  :math:`\lVert\nabla F(x_t)\rVert=G` while :math:`t\le(D-\delta)/\eta`, hence
  :math:`\frac1T\sum_t\lVert\nabla F(x_t)\rVert\ge G\min(1,(D-\delta)/(\eta T))` and, with
  :math:`R=G(D-\delta/2)`, this is :math:`\ge R/(\eta T)-G\delta/(2\eta T)`:
  **Lemma 5's** :math:`3R/(\eta T)` **term cannot be improved beyond its constant 3** (what the
  instance proves; it says nothing about the privacy terms). :meth:`Instance.lower_bound`
  returns this bound for a run.
* ``"quadratic"`` — for the strongly convex bounds (Kuru et al.): a
  :class:`~dpbounds.objectives.QuadraticObjective` with spectrum log-spaced in
  :math:`[\mu, L]`, a random basis and per-sample offsets of scale ``spread`` (their L1
  sensitivity :math:`S_1` is the objective's), started at distance ``start`` from the minimiser;
  ``G`` is not used (a quadratic has no gradient bound) and the trivial bound of
  :math:`\mathbb E F(x_T)-F^*` is the start's :math:`R` (what an algorithm that does not move
  achieves).

A plug-in declares a problem of its own (its objective, data, start and :math:`F^*`) with
:func:`dpbounds.extend.verify_problem`, which registers a :class:`ProblemKind` here
(:func:`register_kind`): its name is then a kind like the five above (:func:`kinds`,
``dpbounds verify --problem NAME``), built by the plug-in's function. :data:`PROBLEMS` stays
the built-in five.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dpbounds._discovery import Registry
from dpbounds._validation import check_choice, check_int, check_nonnegative, check_positive
from dpbounds.bounds.problem import CLASSES
from dpbounds.objectives import HuberWell, Objective, Optimum, QuadraticObjective

__all__ = ["PROBLEMS", "Instance", "ProblemKind", "VerifyProblem", "kinds", "problem",
           "register_kind"]

#: problem kinds (see the module docstring)
PROBLEMS: tuple[str, ...] = ("huber_well", "far", "noise_floor", "hard", "quadratic")

#: each built-in kind's problem class (a Huber well is convex, not strongly:
#: :attr:`dpbounds.objectives.Objective.problem_class`) and one line of description
BUILTIN: dict[str, tuple[str, str]] = {
    "huber_well": ("convex", "Huber well, centres spread, start inside the quadratic zone"),
    "far": ("convex", "the Huber well started far outside (distance 5)"),
    "noise_floor": ("convex", "the Huber well started at the minimiser (R = 0)"),
    "hard": ("convex", "one Huber well started at distance 5: a lower-bound instance"),
    "quadratic": ("quadratic", "quadratic, spectrum log-spaced in [mu, L], per-sample offsets"),
}


@dataclass(frozen=True)
class ProblemKind:
    r"""A verification problem declared by a plug-in (:func:`dpbounds.extend.verify_problem`).

    Attributes
    ----------
    name:
        The kind (``--problem NAME``); not one of :data:`PROBLEMS`.
    build:
        ``build(N, d, seed, spec) -> (objective, x0)``: the instance with ``N`` samples in
        dimension ``d``, data drawn from ``seed``, ``spec`` the :class:`VerifyProblem` (its
        ``G, L, mu, spread, start`` are the problem's parameters).
    problem_class:
        Canonical class (:data:`dpbounds.bounds.problem.CLASSES`): the problem fits a theorem
        of this class or a more general one; its objective must declare this class or a more
        specific one.
    f_star:
        :math:`F^*` of the instance, a number or ``f_star(objective) -> float``; ``None``: the
        objective's own ``optimum.value``. :math:`R=F(x_0)-F^*` and every measured
        :math:`F(x_T)-F^*` use it.
    defaults:
        Fields of the :class:`VerifyProblem` (``G, L, mu, spread, start, tune_R``) the
        problem sets; ``G`` and ``L`` are what the bounds receive.
    description:
        One line (``dpbounds verify --list``).
    """

    name: str
    build: Callable[..., Any]
    problem_class: str
    f_star: float | Callable[[Any], float] | None = None
    defaults: Mapping[str, float] = field(default_factory=dict)
    description: str = ""


#: the declared kinds (plug-ins); built-in kinds are :data:`PROBLEMS`
KIND_REGISTRY: Registry[ProblemKind] = Registry("verification problem",
                                                 "dpbounds.verify.problems")


def register_kind(kind: ProblemKind, *, module: str) -> ProblemKind:
    """Register a declared problem (``ValueError`` for a built-in name or a name another
    module registered)."""
    if kind.name in PROBLEMS:
        raise ValueError(f"problem {kind.name!r} is built in; a declared problem needs "
                         f"another name (built in: {', '.join(PROBLEMS)})")
    return KIND_REGISTRY.register(kind.name, kind, rank=0, module=module)


def kinds() -> tuple[str, ...]:
    """Every problem kind: the built-in :data:`PROBLEMS`, then the declared ones."""
    return PROBLEMS + tuple(KIND_REGISTRY.entries)


def describe(kind: str) -> tuple[str, str]:
    """``(problem class, one line)`` of a kind, built in or declared."""
    decl = KIND_REGISTRY.entries.get(kind)
    return (decl.problem_class, decl.description) if decl is not None else BUILTIN[kind]


@dataclass(frozen=True)
class VerifyProblem:
    """A family of verification problems indexed by ``(N, d)``; JSON-able (a sweep parameter).

    Attributes
    ----------
    kind:
        One of :data:`PROBLEMS` or a declared kind (:func:`kinds`).
    G, L:
        Declared per-sample gradient bound and smoothness (exact for the Huber well).
    spread:
        Radius of the centres (data noise), ``< G/L``.
    start:
        Distance of :math:`x_0` from the minimiser, along :math:`\\mathbf 1/\\sqrt d`.
    tune_R:
        :math:`R` used to tune the hyper-parameters (``None``: the run's own
        :math:`R=F(x_0)-F^*`).
    """

    kind: str = "huber_well"
    G: float = 1.0
    L: float = 1.0
    spread: float = 0.3
    start: float = 0.6
    tune_R: float | None = None
    mu: float = 0.1

    def __post_init__(self) -> None:
        check_choice("problem", self.kind, kinds())
        check_positive("G", self.G)
        check_positive("L", self.L)
        check_nonnegative("spread", self.spread)
        check_nonnegative("start", self.start)
        check_positive("mu", self.mu)
        if self.kind == "quadratic":
            if self.mu > self.L:
                raise ValueError(f"mu must lie in (0, L] = (0, {self.L:g}], got {self.mu!r}")
        elif self.kind in PROBLEMS and self.spread >= self.G / self.L:  # a declared
            # problem's own builder reads (and checks) spread
            raise ValueError(f"spread must lie in [0, G/L) = [0, {self.G / self.L:g}), "
                             f"got {self.spread!r}")
        if self.tune_R is not None:
            check_positive("tune_R", self.tune_R)
        if self.kind == "noise_floor" and self.tune_R is None:
            raise ValueError("the noise_floor problem needs tune_R > 0 (R = 0 at its start)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def build(self, N: int, d: int, seed: Any = 0) -> Instance:
        """The instance with ``N`` samples in dimension ``d`` (centres drawn from ``seed``)."""
        N = check_int("N", N, minimum=2)
        d = check_int("d", d, minimum=1)
        if self.kind in KIND_REGISTRY.entries:
            return self._build_declared(KIND_REGISTRY.entries[self.kind], N, d, seed)
        if self.kind == "quadratic":
            q = QuadraticObjective.random(d, self.mu, self.L, n=N, offset_scale=self.spread,
                                          seed=seed)
            # a synthetic instance: its offsets are drawn from a public seed, so their largest
            # norms are public and declared as the data's domain (the same numbers: the runs'
            # noise is unchanged; undeclared, every run said its noise was the data's)
            q = QuadraticObjective.random(d, self.mu, self.L, n=N, offset_scale=self.spread,
                                          seed=seed, offset_l1_radius=q.offset_l1_radius,
                                          offset_l2_radius=q.offset_l2_radius)
            x0 = q.optimum.x + self.start / math.sqrt(d)
            # F(x0) - F* >= 0; at start = 0 its round-off read -8.9e-16 ("initial_error must
            # be >= 0"), as the Huber well's below
            R = max(float(q.suboptimality(q.initial_state(1, x0))[0]), 0.0)
            return Instance(self, q, x0, R, self.tune_R if self.tune_R is not None else R)
        f = HuberWell.random(N, d, G=self.G, L=self.L, spread=self.spread, seed=seed)
        x0 = np.full(d, self.start / math.sqrt(d))
        R = float(f.suboptimality(f.initial_state(1, x0))[0])
        R = max(R, 0.0)
        return Instance(self, f, x0, R, self.tune_R if self.tune_R is not None else R)

    def _build_declared(self, decl: ProblemKind, N: int, d: int, seed: Any) -> Instance:
        """A declared problem's instance: the plug-in's objective and start, its declared
        :math:`F^*` installed as the objective's optimum, its constants checked against the
        objective's own declarations."""
        built = decl.build(N, d, seed, self)
        if not (isinstance(built, tuple) and len(built) == 2):
            raise ValueError(f"problem {decl.name}: build(N, d, seed, spec) must return "
                             f"(objective, x0), got {type(built).__name__}")
        f, x0 = built
        if int(getattr(f, "n", -1)) != N or int(getattr(f, "d", -1)) != d:
            raise ValueError(f"problem {decl.name}: build({N}, {d}, ...) returned an objective "
                             f"with n = {getattr(f, 'n', None)}, d = {getattr(f, 'd', None)}: "
                             "build must return N records in dimension d for every N and d the "
                             "study asks (it plans and prices its runs at smaller N too, 32 to "
                             "4,096); from a fixed data set, take N of its records (the first "
                             "N, or a seeded subsample), and refuse a d it does not have")
        x0 = np.asarray(x0, dtype=float).reshape(-1)
        if x0.shape != (d,) or not np.all(np.isfinite(x0)):
            raise ValueError(f"problem {decl.name}: x0 must be {d} finite numbers")
        own = str(getattr(f, "problem_class", "nonconvex"))
        if own not in CLASSES or CLASSES.index(own) < CLASSES.index(decl.problem_class):
            raise ValueError(f"problem {decl.name} declares class {decl.problem_class}, but "
                             f"its objective {type(f).__name__} is {own}")
        for key, attr in (("L", "smoothness"), ("G", "gradient_bound")):
            try:
                own_c = float(getattr(f, attr))
            except NotImplementedError:
                continue
            if math.isfinite(own_c) and own_c > getattr(self, key) * (1 + 1e-9):
                raise ValueError(f"problem {decl.name}: its objective's {attr} {own_c:.6g} "
                                 f"exceeds the declared {key} = {getattr(self, key):.6g} "
                                 "(the bounds would be handed a constant that is not true)")
        if decl.f_star is not None:
            value = float(decl.f_star(f) if callable(decl.f_star) else decl.f_star)
            if not math.isfinite(value):
                raise ValueError(f"problem {decl.name}: F* must be finite, got {value!r}")
            if not isinstance(f, Objective):
                raise ValueError(f"problem {decl.name}: a declared F* needs an objective "
                                 "derived from dpbounds.objectives.Objective")
            old = f.__dict__.get("optimum")  # the objective's own, if it was computed
            f.__dict__["optimum"] = Optimum(
                np.full(d, np.nan) if old is None else old.x, value, math.nan,
                f"declared by the problem {decl.name}", True)
        R = float(np.asarray(f.suboptimality(f.initial_state(1, x0)), dtype=float)[0])
        if R < -1e-9 * max(1.0, abs(f.optimum.value)):  # F(x0) < F*: F* cannot be the minimum
            raise ValueError(f"problem {decl.name}: F(x0) - F* = {R:.6g} < 0, so F* = "
                             f"{f.optimum.value:.10g} is not the minimum (a wrong F*)")
        return Instance(self, f, x0, max(R, 0.0),
                        self.tune_R if self.tune_R is not None else max(R, 0.0))


@dataclass(frozen=True)
class Instance:
    """One built problem: the objective, the start, :math:`R` of the run and of the tuning."""

    spec: VerifyProblem
    objective: HuberWell | QuadraticObjective
    x0: np.ndarray
    R: float
    R_tune: float

    @property
    def G(self) -> float:
        return self.spec.G

    @property
    def L(self) -> float:
        return self.spec.L

    @property
    def R_bound(self) -> float:
        """:math:`R` handed to a bound: the run's, floored at a tiny positive number (the
        bounds' symbols are positive; a larger :math:`R` only loosens an upper bound)."""
        return max(self.R, 1e-12 * self.G * self.G / self.L)

    @property
    def start_grad_norm(self) -> float:
        r""":math:`\lVert\nabla F(x_0)\rVert`: what an algorithm that does not move reports
        (a gradient-norm bound says something only below it)."""
        f = self.objective
        return float(np.asarray(f.grad_norm(f.initial_state(1, self.x0)), dtype=float)[0])

    def lower_bound(self, step_size: float, steps: int) -> float:
        r"""Lower bound on :math:`\frac1T\sum_{t<T}\lVert\nabla F(x_t)\rVert` for any method
        moving at most ``step_size`` per step, on the ``hard`` instance (0 elsewhere)."""
        if self.spec.kind != "hard":
            return 0.0
        delta = self.G / self.L
        reach = (self.spec.start - delta) / step_size  # steps before the zone can be entered
        return self.G * min(1.0, max(0.0, math.floor(reach) + 1) / steps)


def problem(kind: str = "huber_well", **overrides: Any) -> VerifyProblem:
    """A preset problem by name, with optional overrides of its fields.

    ``"far"`` and ``"hard"`` start at distance 5; ``"hard"`` has no spread; ``"noise_floor"``
    starts at the minimiser and tunes for the ``huber_well`` start's :math:`R=L\\,0.6^2/2`.
    """
    kind = check_choice("problem", kind, kinds())
    base: dict[str, Any] = {"kind": kind}
    if kind in KIND_REGISTRY.entries:
        base.update(KIND_REGISTRY.entries[kind].defaults)
    L = float(overrides.get("L", 1.0))
    if kind == "far":
        base.update(start=5.0)
    elif kind == "hard":
        base.update(start=5.0, spread=0.0)
    elif kind == "quadratic":
        base.update(start=3.0, spread=0.1)
    elif kind == "noise_floor":
        base.update(start=0.0, tune_R=L * 0.6**2 / 2)
    base.update(overrides)
    return VerifyProblem(**base)
