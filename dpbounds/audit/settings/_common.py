"""What every audit setting shares: :class:`Setting`, :class:`AuditSpec`, the registry,
the worst-case pairs, the transcript features and the default claims.

Why the settings and claims are what they are: :mod:`dpbounds.audit.registry`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._discovery import Registry
from dpbounds.audit.neighbours import add_remove_pair, offset_pair, replace_one_pair
from dpbounds.audit.transcript import direction_statistics, noisy_gradients, output_features
from dpbounds.privacy import Neighbouring

#: The relations as the audits use them (the enum members; shown by their value, ``replace_one``).
REPLACE_ONE = Neighbouring.REPLACE_ONE
ADD_REMOVE = Neighbouring.ADD_REMOVE

#: Gradient norm of the audit records and the clipping norm (clipping is active).
RECORD_NORM = 2.0
CLIP = 1.0


@dataclass(frozen=True)
class Setting:
    """One audit configuration: the pair, the call, and the features of a run.

    ``features(result, queries)`` maps a run (its result and the tapped query points) to a
    ``(trials, k)`` array.
    """

    pair: tuple[Any, Any]
    kwargs: dict[str, Any]
    features: Callable[[Any, list[np.ndarray]], np.ndarray]
    statistic: str
    pair_description: str
    scorers: tuple[str, ...] | None = None
    #: White-box tap: a factory of a context manager that yields a list the run fills with
    #: internal releases; when set, ``features`` receives that list instead of the queries.
    #: The list holds the releases as the run computed them (float64 copies, bits intact):
    #: a low-bits audit reads them raw.
    tap: Callable[[], Any] | None = None
    #: The audit's model of the released features' law: ``model(setting, result)`` (a probe
    #: run's result, for the noise its ledger records) gives a
    #: :class:`~dpbounds.audit.statistics.SampledGaussianModel`, or ``None`` where it cannot
    #: (another noise, a ledger it does not read); its exact likelihood ratio
    #: (:func:`~dpbounds.audit.statistics.mixture_lr`, ``"mixture-lr"``) is then offered
    #: beside ``scorers``. Built from the setting's declared sampling and pair, never from the
    #: algorithm's code.
    model: Callable[[Setting, Any], Any] | None = None


@dataclass(frozen=True)
class AuditSpec:
    """An algorithm under audit: its function, relations and default claim.

    ``relations`` are :class:`~dpbounds.privacy.mechanisms.Neighbouring` members (a spelling
    that :meth:`~dpbounds.privacy.mechanisms.Neighbouring.coerce` accepts is converted here,
    once); ``build(relation, epsilon, delta)`` receives one of them."""

    name: str
    function: Callable[..., Any]
    relations: tuple[Neighbouring, ...]
    build: Callable[[Neighbouring, float, float], Setting]
    epsilon: float
    delta: float
    description: str
    trials: int = 10_000
    mutant_factor: float = 0.5
    #: whether ``audit all`` adds this audit's float-vs-grid low-bits pair (False for a second
    #: pair of an algorithm whose release path another audit's side channel already covers)
    side_channel: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.relations, (str, Neighbouring)):
            raise ValueError(f"relations must be a tuple of relations, got {self.relations!r}")
        relations = tuple(Neighbouring.coerce(r, "relations") for r in self.relations)
        if not relations:
            raise ValueError(f"relations of {self.name} must name at least one relation")
        object.__setattr__(self, "relations", relations)


# ----------------------------------------------------------------------------------------
# features
# ----------------------------------------------------------------------------------------
def _momentum_features(kind: str, l2: float) -> Callable[[Any, list], np.ndarray]:
    def features(res: Any, queries: list) -> np.ndarray:
        p = res.params
        steps = np.asarray(p["step_sizes"], dtype=float)
        restarts = None
        if "stages" in p and p.get("restart"):
            stages = np.asarray(p["stages"])
            restarts = np.zeros(steps.size, dtype=bool)
            restarts[1:] = stages[1:] != stages[:-1]
        return noisy_gradients(queries, res.x_numpy(), step_sizes=steps,
                               momenta=p["momenta"], kind=kind, restarts=restarts, l2=l2)
    return features


def _gd_features(res: Any, queries: list) -> np.ndarray:
    T = int(res.params["steps"])
    return noisy_gradients(queries, res.x_numpy(),
                           step_sizes=np.full(T, float(res.params["step_size"])))


def _direction_features(res: Any, queries: list) -> np.ndarray:
    return direction_statistics(queries, res.x_numpy(), steps=int(res.params["steps"]))


def _projected_features(res: Any, queries: list) -> np.ndarray:
    # x_1 .. x_T: each released iterate's direction (x_0 = 0 carries nothing)
    pts = [*queries[1:], res.x_numpy()]
    return np.concatenate([output_features(x, direction=True) for x in pts], axis=1)


def _output(res: Any, queries: list) -> np.ndarray:
    return output_features(res.x_numpy())


def _displacement(res: Any, queries: list) -> np.ndarray:
    return output_features(-res.x_numpy(), direction=True)  # x_0 = 0


# ----------------------------------------------------------------------------------------
# the specs
# ----------------------------------------------------------------------------------------
_PAIR_TEXT = {
    REPLACE_ONE: "D = {+r e1}, D' = {-r e1} (one record, its gradient flipped)",
    ADD_REMOVE: "D = {+r e1}, D' = D + {-r e1} (the added record pulls the other way)",
}


def _pair(relation: Neighbouring, **kw: Any) -> tuple[Any, Any]:
    return (replace_one_pair if relation is REPLACE_ONE else add_remove_pair)(**kw)


#: The full-batch Gaussian audits' replace-one pair (DP-GD, DP-SGD and DP-NSGD with the
#: batch the whole data set): the one-record pair plus an offset record C e1
#: (:func:`~dpbounds.audit.neighbours.offset_pair`). On D = {+r e1}, D' = {-r e1} both clipped
#: sums have norm C, so a noise scale read from the data (``data_dependent``) was the same
#: on both and the bug was bit for bit the correct run; with the offset the clipped sums
#: are 2C and 0. The correct mechanism is unchanged: full batch, the same change 2C of the
#: sum, both releases moved by the same constant C e1 / n.
OFFSET_TEXT = ("D = {+r e1, C e1}, D' = {-r e1, C e1} (one record flipped beside an offset "
               "record of norm C: the clipped sums are 2C and 0)")


def _gauss_pair(relation: Neighbouring, **kw: Any) -> tuple[Any, Any]:
    """:func:`offset_pair` (offset ``CLIP``) under replace-one, the one-record
    :func:`add_remove_pair` under add/remove (where the clipped sums already differ in norm:
    C against 0)."""
    if relation is REPLACE_ONE:
        return offset_pair(offset=CLIP, **kw)
    return add_remove_pair(**kw)


LAPLACE_STEPS = 3
#: Grid 2^-GRID_BITS of the floating-point-safe DP-GD (far below its noise, about 4).
GRID_BITS = 10
LAPLACE_L2 = 0.5  # strong convexity for the defaults of NAG / MASG (public regulariser)


GAUSS_STEPS = 5
#: Public normaliser of the add/remove audits (the size of the smaller data set): under
#: add/remove the dataset size is private, so both neighbours are run with this one.
PUBLIC_N = 1

HUBER_H = 0.02  # a narrow Huber knee: the hinge's linear part covers where the output lies

LAPLACE_EPS = 2.0
LAPLACE_MUTANT = 1.0 / math.sqrt(2.0)
#: the runs per data set an audit takes (half select the test, half evaluate it)
MIN_TRIALS, MAX_TRIALS = 200, 10_000_000
#: Claim of the (eps, delta) audits: where a halved sigma is most catchable (see module doc).
GAUSS_EPS, GAUSS_DELTA = 3.0, 0.05


#: The built-in audits' names, declared here (checked against the discovered registry by
#: ``tests/test_edges_stop74.py``): a plug-in's ``audit_setting`` refuses one without
#: importing every setting (the registry imports them lazily since stop 74, and a clash found
#: at the next discovery broke every audit of the process; review of stop 74)
BUILTIN_AUDITS: frozenset[str] = frozenset({
    "dp_agd", "dp_gd_gaussian", "dp_gd_gaussian_d4", "dp_gd_laplace", "dp_heavy_ball",
    "dp_heavy_ball_batched", "dp_heavy_ball_d4", "dp_heavy_ball_momentum", "dp_masg",
    "dp_masg_opt", "dp_nag", "dp_nag_opt", "dp_nsgd", "dp_nsgd_batched", "dp_nsgd_d4",
    "dp_nsgd_full_batch", "dp_sgd", "dp_sgd_batched", "dp_sgd_batched_attaining", "dp_sgd_d4",
    "dp_sgd_full_batch", "noisy_projected_sgd", "objective_perturbation",
    "objective_perturbation_n8", "output_perturbation", "output_perturbation_d4",
    "sensitivity_reduced_nsgd", "tree_momentum_nsgd", "tree_momentum_nsgd_T3",
    "tree_momentum_nsgd_T3_d4", "tree_momentum_nsgd_T3_signs", "tree_momentum_nsgd_T8",
})


#: The audits, filled by the modules of :mod:`dpbounds.audit.settings` (one per concept) when
#: :meth:`~dpbounds._discovery.Registry.discover` imports them.
AUDIT_REGISTRY: Registry[AuditSpec] = Registry("audit", "dpbounds.audit.settings")


def register_audit(spec: AuditSpec, *, rank: float) -> AuditSpec:
    """Register ``spec`` under its name; ``rank`` orders ``dpbounds audit --list`` and
    ``audit all`` (a second module registering the same name is a ``ValueError`` naming
    both)."""
    if not isinstance(spec, AuditSpec):
        raise ValueError(f"spec must be an AuditSpec, got {type(spec).__name__}")
    return AUDIT_REGISTRY.register(spec.name, spec, rank=rank, stacklevel=2)


#: Audits of release recipes that are not algorithms of :mod:`dpbounds.algorithms` (not part
#: of ``audit all`` or ``audit --list``; :func:`dpbounds.audit.audit` accepts their names),
#: filled by the same walk of :mod:`dpbounds.audit.settings`.
RELEASE_REGISTRY: Registry[AuditSpec] = Registry("release audit", "dpbounds.audit.settings")


def register_release_audit(spec: AuditSpec, *, rank: float) -> AuditSpec:
    """Register a release audit (as :func:`register_audit`, in :data:`RELEASE_REGISTRY`)."""
    if not isinstance(spec, AuditSpec):
        raise ValueError(f"spec must be an AuditSpec, got {type(spec).__name__}")
    return RELEASE_REGISTRY.register(spec.name, spec, rank=rank, stacklevel=2)
