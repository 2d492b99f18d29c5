r"""How each algorithm of :mod:`dpbounds.algorithms` is audited.

For every algorithm and every neighbouring relation it declares, an :class:`AuditSpec`
says which worst-case pair to run it on (:mod:`dpbounds.audit.neighbours`), with which
public settings, and which features of the released transcript the statistic sees
(:mod:`dpbounds.audit.transcript`). The settings are chosen so that the audit is as tight
as the algorithm's own accounting allows: full batches (no subsampling amplification the
test cannot exploit), a single record (it is in every step), few steps, clipping active,
and, where steps are normalised, enough dimensions for the direction to carry the noisy
momentum.

=============================  ==============  ============================================
audit name                     relations       statistic's features
=============================  ==============  ============================================
``dp_gd_laplace``              replace-one     released noisy gradients (Laplace LR)
``dp_gd_gaussian``             both            released noisy gradients
``dp_sgd``, ``dp_nsgd``        both            released noisy gradients (w/o replacement:
                                               replace-one; Poisson: add/remove)
``dp_heavy_ball``              replace-one     noisy gradients, heavy-ball update inverted
``dp_nag``, ``dp_nag_opt``     replace-one     noisy gradients, Nesterov update inverted
``dp_masg``, ``dp_masg_opt``   replace-one     as DP-NAG, with the stage restarts
``dp_agd``                     add/remove      final iterate's direction
``noisy_projected_sgd``        replace-one     directions of the projected iterates
``output_perturbation``        replace-one     the output
``objective_perturbation``     replace-one     the output (Huber SVM, one record)
``tree_momentum_nsgd``         replace-one     per-step directions (noisy momentum)
``sensitivity_reduced_nsgd``   replace-one     per-step directions (gamma = 1)
``tree_momentum_nsgd_T3``,     replace-one     white-box: the tree's noisy nodes (T = 3, 8)
``tree_momentum_nsgd_T8``
=============================  ==============  ============================================

**White-box audits** (Nasr et al. 2023's threat model: the auditor sees every released
intermediate). The iterative Gaussian algorithms release their iterates, from which the
per-step noisy gradients are recovered exactly (:mod:`dpbounds.audit.transcript`); the
likelihood ratio of the whole transcript under Gaussian noise is linear in them, which the
``linear`` statistic (Fisher's discriminant) estimates. For tree momentum the
``_T3``/``_T8`` audits tap the nodes the tree forms (each a sum plus its Gaussian; the
releases are an invertible linear map of them). Measured (20 000 runs per data set,
seed 0): the GDP estimate is within its interval of the transcript's exact
:math:`\mu` (noise-free node signals over :math:`\sigma`: 0.879 at T = 3, 0.741 at T = 8),
which is :math:`\sqrt{T/K}` of the charged :math:`\mu` (:math:`K` = 4 and 15 nodes charged,
:math:`T` formed that hold the record): the accountant's node count, not the auditor, limits
the ratio to the claim there.

**Claims audited.** An audit can only certify :math:`\varepsilon` up to roughly
:math:`\log(\mathrm{TPR}/\mathrm{FPR})` with enough false positives among the runs, so the
claims are chosen where a copy with its noise halved (Laplace scale divided by
:math:`\sqrt2`) is caught at the default number of runs: pure DP at
:math:`\varepsilon = 2` over 3 steps; :math:`(\varepsilon,\delta) = (3, 0.05)` for the
Gaussian mechanisms (the gap between a halved σ and the claim is widest there for the
zCDP/RDP conversions: at :math:`\delta = 10^{-5}` a halved σ under Lee & Kifer's zCDP
conversion is not certifiable at :math:`10^4` runs); :math:`(4, 0.05)` for objective
perturbation, whose calibration is the loosest. The defaults, the run counts and the
margins were measured (see ``tests/audit/test_mutation.py``); any other claim may be passed.
Since the tight claims of :func:`dpbounds.audit.runner.tight_claim` (the default), the
Gaussian targets are what the run's ledger claims under its tightest accountant (exact GDP
for full-batch Gaussian noise), and the algorithm is asked for the larger ε that its own
(zCDP / RDP) calibration needs to add exactly that noise.

**Limits (measured).**

* Tree aggregation (Algorithm 1) charges every node that holds the record, :math:`2T-1`
  for one record over :math:`T` steps, while one node per step is released: at
  :math:`T\ge2` a halved σ gives at most :math:`4T/(2T-1)` times the charged
  :math:`\rho`, below what :math:`2\times10^4` runs certify (epochs 2 and 4: bounds
  2.3-2.9 against the claim 3). The audit therefore runs one epoch of one record; the
  white-box ``_T3``/``_T8`` audits measure the node count's slack instead (the transcript's
  μ is :math:`\sqrt{T/K}` of the charged one, K = 4 and 15).
  Algorithm 2's first-epoch group is charged exactly what it releases at :math:`T=2`, so
  it is audited there, with ``noise_split = 0.99``.
* In one dimension a normalised step releases a sign: the final iterate of tree-momentum
  NSGD takes a handful of values and a halved σ certifies only 1.6-2.0 against 3; the
  audit uses :math:`d = 32` and the direction of every step.
* Algorithm 2's lag-S mixing (:math:`\gamma<1`) is charged for gradient differences of
  size :math:`L\eta S`; a fixed record cannot make its gradient move that much along the
  noisy path, so the audit runs :math:`\gamma = 1` (the two noise levels are exercised).
* DP-AGD is audited with one release (``rho_ng``, ``rho_nmax`` set so that one gradient
  measurement and one NoisyMax fit the budget): its adaptive multi-round path is charged
  by zCDP composition, which a threshold test on a few runs cannot probe tightly.
* Noisy projected SGD is audited with ``calibration="rdp"``: the lecture's calibration
  over-noises this pair so much that a halved σ is still within the claim (no audit can
  flag it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.audit.neighbours import add_remove_pair, replace_one_pair
from dpbounds.audit.transcript import direction_statistics, noisy_gradients, output_features
from dpbounds.backend import to_numpy

__all__ = ["AUDITS", "AuditSpec", "audit_names"]

REPLACE_ONE = "replace-one"
ADD_REMOVE = "add/remove"

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
    tap: Callable[[], Any] | None = None


@dataclass(frozen=True)
class AuditSpec:
    """An algorithm under audit: its function, relations and default claim."""

    name: str
    function: Callable[..., Any]
    relations: tuple[str, ...]
    build: Callable[[str, float, float], Setting]
    epsilon: float
    delta: float
    description: str
    trials: int = 10_000
    mutant_factor: float = 0.5


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


def _pair(relation: str, **kw: Any) -> tuple[Any, Any]:
    return (replace_one_pair if relation == REPLACE_ONE else add_remove_pair)(**kw)


LAPLACE_STEPS = 3
#: Grid 2^-GRID_BITS of the floating-point-safe DP-GD (far below its noise, about 4).
GRID_BITS = 10
LAPLACE_L2 = 0.5  # strong convexity for the defaults of NAG / MASG (public regulariser)


def _laplace_setting(kind: str, extra: dict[str, Any]) -> Callable[[str, float, float], Setting]:
    def build(relation: str, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=1.0, l2=LAPLACE_L2, smoothness=1.0)
        kwargs = dict(epsilon=epsilon, steps=LAPLACE_STEPS, trace=None, **extra)
        return Setting(pair, kwargs, _momentum_features(kind, LAPLACE_L2),
                       "released noisy gradients (one per step)",
                       _PAIR_TEXT[relation] + ", r = 1, d = 1, full batch",
                       ("laplace-lr", "linear"))
    return build


GAUSS_STEPS = 5
#: Public normaliser of the add/remove audits (the size of the smaller data set): under
#: add/remove the dataset size is private, so both neighbours are run with this one.
PUBLIC_N = 1


def _gd_gaussian(relation: str, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=1, radius=RECORD_NORM)
    kwargs = dict(epsilon=epsilon, delta=delta, steps=GAUSS_STEPS, step_size=1.0,
                  mechanism="gaussian", clip_norm=CLIP, neighbouring=relation, trace=None)
    if relation == ADD_REMOVE:
        kwargs["public_n"] = PUBLIC_N  # the same public normaliser for both data sets
    return Setting(pair, kwargs, _gd_features, "released noisy gradients (one per step)",
                   _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, d = 1",
                   ("linear", "gaussian-lr"))


def _sgd_setting(**extra: Any) -> Callable[[str, float, float], Setting]:
    def build(relation: str, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=RECORD_NORM)
        sampling = "without_replacement" if relation == REPLACE_ONE else "poisson"
        kwargs = dict(epsilon=epsilon, delta=delta, steps=GAUSS_STEPS, step_size=1.0,
                      batch_size=1, sampling=sampling, trace=None, **extra)
        if relation == ADD_REMOVE:
            kwargs["public_n"] = PUBLIC_N
        return Setting(pair, kwargs, _gd_features,
                       "released noisy gradients (one per step)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g}, batch 1, d = 1 "
                       f"({sampling.replace('_', ' ')} sampling)", ("linear", "gaussian-lr"))
    return build


TREE_DIM = 32


def _tree_setting(epochs: int, **extra: Any) -> Callable[[str, float, float], Setting]:
    def build(relation: str, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=TREE_DIM, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_norm=CLIP, neighbouring="replace_one", trace=None, **extra)
        return Setting(pair, kwargs, _direction_features,
                       "step directions (the noisy momentum up to scale, one per step)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, "
                       f"d = {TREE_DIM}, one record (in every step)",
                       ("linear", "gaussian-lr"))
    return build


def _tree_node_tap() -> Any:
    """Record the signal coordinate of every noisy node Algorithm 1's tree forms (node sum
    plus its Gaussian; the releases are fixed linear combinations of them)."""
    from dpbounds.algorithms.tree_aggregation import TreeAggregator
    from dpbounds.audit.mutation import patched_method

    releases: list[np.ndarray] = []

    def make(original: Any) -> Any:
        def step(self: Any, value: Any, node_noise: Any = None) -> Any:
            out = original(self, value, node_noise)
            # the node formed at step t sits in slot trailing_zeros(t)
            _, _, node_sum, noise = self._slots[(self.t & -self.t).bit_length() - 1]
            node = node_sum if noise is None else node_sum + noise
            releases.append(np.array(to_numpy(node)[:, 0], dtype=float, copy=True))
            return out
        return step

    return patched_method(TreeAggregator, "step", make, releases)


def _tree_release_features(res: Any, releases: list) -> np.ndarray:
    return np.stack(releases, axis=1)  # (trials, T): the e1 coordinate of each node


def _tree_white_box(epochs: int) -> Callable[[str, float, float], Setting]:
    def build(relation: str, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_norm=CLIP, neighbouring="replace_one", trace=None)
        return Setting(pair, kwargs, _tree_release_features,
                       f"the tree's {epochs} noisy nodes (white-box; the signal coordinate)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, d = 1, "
                       f"one record, T = {epochs}", ("linear",), tap=_tree_node_tap)
    return build


PROJ_DIM = 32
PROJ_STEPS = 1


def _projected(relation: str, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=PROJ_DIM, radius=1.0)
    kwargs = dict(epsilon=epsilon, delta=delta, radius=1.0, steps=PROJ_STEPS,
                  calibration="rdp", trace=None)
    return Setting(pair, kwargs, _projected_features,
                   "directions of the projected iterates",
                   _PAIR_TEXT[relation] + f", r = 1, d = {PROJ_DIM}, n = 1 (q = 1)",
                   ("linear", "gaussian-lr"))


def _output_perturbation(relation: str, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=1, radius=1.0, l2=1.0)
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser", _PAIR_TEXT[relation] + ", r = 1, l2 = 1, d = 1")


HUBER_H = 0.02  # a narrow Huber knee: the hinge's linear part covers where the output lies


def _objective_perturbation(relation: str, epsilon: float, delta: float) -> Setting:
    from dpbounds.objectives import HuberSVM

    a = np.ones((1, 1))
    pair = (HuberSVM(a, np.array([1.0]), l2=0.0, h=HUBER_H),
            HuberSVM(a, np.array([-1.0]), l2=0.0, h=HUBER_H))
    return Setting(pair, dict(epsilon=epsilon, delta=delta, trace=None), _output,
                   "the released minimiser",
                   f"Huber SVM (h = {HUBER_H:g}), one record a = 1, label +1 vs -1: gradients "
                   "-1 vs +1 wherever |theta| < 1 - h (where the output lies)")


AGD_DIM = 64
AGD_RECORD_NORM = 4.0  # above DP-AGD's default grad_clip = 3


def _dp_agd(relation: str, epsilon: float, delta: float) -> Setting:
    from dpbounds.objectives import HuberSVM
    from dpbounds.privacy.zcdp import dp_to_zcdp_rho

    a = np.zeros((1, AGD_DIM))
    a[0, 0] = AGD_RECORD_NORM
    pair = (HuberSVM(a, np.array([1.0]), l2=0.0, h=HUBER_H),
            HuberSVM(np.vstack([a, a]), np.array([1.0, -1.0]), l2=0.0, h=HUBER_H))
    rho = float(dp_to_zcdp_rho(epsilon, delta))
    # one gradient measurement and one NoisyMax fit the budget: a single release
    kwargs = dict(epsilon=epsilon, delta=delta, rho_ng=0.98 * rho, rho_nmax=0.01 * rho,
                  trace=None)
    return Setting(pair, kwargs, _displacement,
                   "direction of the released step (noisy gradient up to scale)",
                   f"Huber SVM (h = {HUBER_H:g}), D = {{(a, +1)}}, D' = D + {{(a, -1)}}, "
                   f"||a|| = {AGD_RECORD_NORM:g} > grad_clip = 3, d = {AGD_DIM}; "
                   "rho_ng = 0.98 rho, rho_nmax = 0.01 rho (one release)")


AUDITS: dict[str, AuditSpec] = {}


def _register(spec: AuditSpec) -> None:
    AUDITS[spec.name] = spec


LAPLACE_EPS = 2.0
LAPLACE_MUTANT = 1.0 / math.sqrt(2.0)
#: Claim of the (eps, delta) audits: where a halved sigma is most catchable (see module doc).
GAUSS_EPS, GAUSS_DELTA = 3.0, 0.05

_register(AuditSpec("dp_gd_laplace", alg.dp_gd, (REPLACE_ONE,),
                    _laplace_setting("hb", dict(mechanism="laplace", step_size=1.0)),
                    LAPLACE_EPS, 0.0, "Laplace DP-GD (Kuru et al.), pure DP",
                    mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_heavy_ball", alg.dp_heavy_ball, (REPLACE_ONE,),
                    _laplace_setting("hb", {}), LAPLACE_EPS, 0.0,
                    "DP heavy ball (Kuru et al. (9))", mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_nag", alg.dp_nag, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-NAG (Kuru et al. (27)), uniform budgets",
                    mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_nag_opt", alg.dp_nag_opt, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-NAG-opt: optimal budgets, horizon re-selection",
                    mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_masg", alg.dp_masg, (REPLACE_ONE,), _laplace_setting("nag", {}),
                    LAPLACE_EPS, 0.0, "DP-MASG (Kuru et al. (33))",
                    mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_masg_opt", alg.dp_masg_opt, (REPLACE_ONE,),
                    _laplace_setting("nag", {}), LAPLACE_EPS, 0.0,
                    "DP-MASG-opt: optimal budgets, horizon re-selection",
                    mutant_factor=LAPLACE_MUTANT))
_register(AuditSpec("dp_gd_gaussian", alg.dp_gd, (REPLACE_ONE, ADD_REMOVE), _gd_gaussian,
                    GAUSS_EPS, GAUSS_DELTA,
                    "Gaussian DP-GD with clipping (Lee & Kifer Table 1), zCDP", trials=20_000))
_register(AuditSpec("dp_sgd", alg.dp_sgd, (REPLACE_ONE, ADD_REMOVE),
                    _sgd_setting(clip_norm=CLIP), GAUSS_EPS, GAUSS_DELTA,
                    "DP-SGD with clipping, RDP", trials=20_000))
_register(AuditSpec("dp_nsgd", alg.dp_nsgd, (REPLACE_ONE, ADD_REMOVE),
                    _sgd_setting(r=1e-3), GAUSS_EPS, GAUSS_DELTA, "DP-NSGD g/(||g|| + r), RDP",
                    trials=20_000))
_register(AuditSpec("dp_agd", alg.dp_agd, (ADD_REMOVE,), _dp_agd, GAUSS_EPS, GAUSS_DELTA,
                    "DP-AGD (Lee & Kifer Alg. 2), zCDP, adaptive", trials=40_000))
_register(AuditSpec("noisy_projected_sgd", alg.noisy_projected_sgd, (REPLACE_ONE,),
                    _projected, GAUSS_EPS, GAUSS_DELTA,
                    "noisy projected SGD (BST14), RDP calibration", trials=40_000))
_register(AuditSpec("output_perturbation", alg.output_perturbation, (REPLACE_ONE,),
                    _output_perturbation, GAUSS_EPS, GAUSS_DELTA,
                    "output perturbation, analytic Gaussian", trials=40_000))
# KST's calibration is the loosest: with a halved sigma the best threshold test on an exact
# Gaussian certifies only ~0.4 above eps = 4 at 10^4 runs per set, ~0.6 at 1.6 x 10^4
_register(AuditSpec("objective_perturbation", alg.objective_perturbation, (REPLACE_ONE,),
                    _objective_perturbation, 4.0, GAUSS_DELTA,
                    "objective perturbation (KST 2012)", trials=16_000))
# a normalised step releases a direction: more runs make up for the noisy norm
_register(AuditSpec("tree_momentum_nsgd", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=1), GAUSS_EPS, GAUSS_DELTA,
                    "tree-momentum NSGD (Tran & Cutkosky Alg. 1)", trials=40_000))
_register(AuditSpec("sensitivity_reduced_nsgd", alg.sensitivity_reduced_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=2, gamma=1.0, noise_split=0.99), GAUSS_EPS, GAUSS_DELTA,
                    "sensitivity-reduced NSGD (Tran & Cutkosky Alg. 2, reconstructed)",
                    trials=40_000))

def grid_dp_gd(objective: Any, *, epsilon: float, steps: int, step_size: float, trials: int,
               seed: Any, grid_bits: int = GRID_BITS, trace: Any = None) -> Any:
    """Full-batch DP-GD whose noisy gradient is released by
    :class:`~dpbounds.privacy.discrete.GridLaplace` (ε/T per step, basic composition): the
    release recipe of ``docs/audit.md`` for a run that may be published. Trial ``k`` draws
    from the ``k``-th child of ``seed``. For the audit's linear pair (constant gradients)."""
    from dpbounds.algorithms._common import SimulationResult
    from dpbounds.privacy import Neighbouring, PrivacyLedger, PureDpMechanism, RunPrivacy
    from dpbounds.privacy.discrete import GridLaplace

    mech = GridLaplace(objective.l1_sensitivity / objective.n, epsilon / steps, grid_bits,
                       objective.d)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    rngs = [np.random.default_rng(c) for c in seq.spawn(trials)]
    grad = np.asarray(objective.gradients, dtype=float).mean(axis=0)
    x = np.zeros((trials, objective.d))
    for _ in range(steps):
        reg = np.asarray(objective.regularizer_grad(x))  # also records the released iterate
        noisy = np.stack([mech.release(grad, rng) for rng in rngs])
        x = x - step_size * (noisy + reg)
    ledger = PrivacyLedger(Neighbouring.REPLACE_ONE)
    ledger.record(PureDpMechanism(mech.epsilon_spent, Neighbouring.REPLACE_ONE), steps)
    privacy = RunPrivacy(ledger.freeze(), epsilon, 0.0, "pure", mech.sensitivity,
                         description="discrete Laplace on a grid, basic composition")
    return SimulationResult("dp_gd_laplace_grid", x, np.zeros((trials, 1)), "none", privacy,
                            dict(steps=steps, grid_bits=grid_bits))


def _grid_features(res: Any, queries: list) -> np.ndarray:
    return noisy_gradients(queries, res.x_numpy(), step_sizes=np.ones(LAPLACE_STEPS),
                           l2=LAPLACE_L2)


def _grid_setting(relation: str, epsilon: float, delta: float) -> Setting:
    pair = _pair(relation, dim=1, radius=1.0, l2=LAPLACE_L2, smoothness=1.0)
    return Setting(pair, dict(epsilon=epsilon, steps=LAPLACE_STEPS, step_size=1.0),
                   _grid_features, "released noisy gradients (one per step)",
                   _PAIR_TEXT[relation] + f", r = 1, d = 1, full batch, grid 2^-{GRID_BITS}",
                   ("laplace-lr", "linear"))


#: Audits of release recipes that are not algorithms of :mod:`dpbounds.algorithms` (not
#: part of ``audit all``; :func:`dpbounds.audit.audit` accepts their names too).
RELEASE_AUDITS: dict[str, AuditSpec] = {
    "dp_gd_laplace_grid": AuditSpec(
        "dp_gd_laplace_grid", grid_dp_gd, (REPLACE_ONE,), _grid_setting, LAPLACE_EPS, 0.0,
        "DP-GD with discrete Laplace on a 2^-10 grid (floating-point safe; "
        "dpbounds.privacy.discrete)", trials=4000),
}

# white-box: the auditor sees the tree's noisy nodes (Nasr et al. 2023's threat model)
for _T in (3, 8):
    _register(AuditSpec(f"tree_momentum_nsgd_T{_T}", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                        _tree_white_box(_T), GAUSS_EPS, GAUSS_DELTA,
                        f"tree-momentum NSGD, T = {_T}, white-box (the tree's nodes)",
                        trials=50_000))


def audit_names() -> tuple[str, ...]:
    """Names :func:`dpbounds.audit.audit` accepts."""
    return tuple(AUDITS)
