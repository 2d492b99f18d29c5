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
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_nonnegative, check_positive
from dpbounds.objectives import HuberWell, QuadraticObjective

__all__ = ["PROBLEMS", "Instance", "VerifyProblem", "problem"]

#: problem kinds (see the module docstring)
PROBLEMS: tuple[str, ...] = ("huber_well", "far", "noise_floor", "hard", "quadratic")


@dataclass(frozen=True)
class VerifyProblem:
    """A family of verification problems indexed by ``(N, d)``; JSON-able (a sweep parameter).

    Attributes
    ----------
    kind:
        One of :data:`PROBLEMS`.
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
        check_choice("problem", self.kind, PROBLEMS)
        check_positive("G", self.G)
        check_positive("L", self.L)
        check_nonnegative("spread", self.spread)
        check_nonnegative("start", self.start)
        check_positive("mu", self.mu)
        if self.kind == "quadratic":
            if self.mu > self.L:
                raise ValueError(f"mu must lie in (0, L] = (0, {self.L:g}], got {self.mu!r}")
        elif self.spread >= self.G / self.L:
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
        if self.kind == "quadratic":
            q = QuadraticObjective.random(d, self.mu, self.L, n=N, offset_scale=self.spread,
                                          seed=seed)
            x0 = q.optimum.x + self.start / math.sqrt(d)
            R = float(q.suboptimality(q.initial_state(1, x0))[0])
            return Instance(self, q, x0, R, self.tune_R if self.tune_R is not None else R)
        f = HuberWell.random(N, d, G=self.G, L=self.L, spread=self.spread, seed=seed)
        x0 = np.full(d, self.start / math.sqrt(d))
        R = float(f.suboptimality(f.initial_state(1, x0))[0])
        R = max(R, 0.0)
        return Instance(self, f, x0, R, self.tune_R if self.tune_R is not None else R)


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
    kind = check_choice("problem", kind, PROBLEMS)
    base: dict[str, Any] = {"kind": kind}
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
