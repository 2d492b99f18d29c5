r"""How each algorithm of :mod:`dpbounds.algorithms` is audited.

For every algorithm and every neighbouring relation it declares, an :class:`AuditSpec`
says which worst-case pair to run it on (:mod:`dpbounds.audit.neighbours`), with which
public settings, and which features of the released transcript the statistic sees
(:mod:`dpbounds.audit.transcript`). The settings are chosen so that the audit is as tight
as the algorithm's own accounting allows: full batches (no subsampling amplification the
test cannot exploit), a single record (it is in every step), few steps, clipping active,
and, where steps are normalised, enough dimensions for the direction to carry the noisy
momentum.

Each setting lives in a module of :mod:`dpbounds.audit.settings` (one per algorithm family)
that registers itself; :data:`AUDITS` is filled by importing every module of that package
(:class:`dpbounds._discovery.Registry`), so this module keeps no list. The table and the
limits below are documented here once for all of them.

================================  ==============  ============================================
audit name                        relations       statistic's features
================================  ==============  ============================================
``dp_gd_laplace``                 replace-one     released noisy gradients (Laplace LR)
``dp_gd_gaussian``                both            released noisy gradients
``dp_sgd``, ``dp_nsgd``           both            released noisy gradients (w/o replacement:
                                                  replace-one; Poisson: add/remove)
``dp_sgd_d4``                     replace-one     released noisy gradients, d = 4 (full batch)
``dp_gd_gaussian_d4``,            replace-one     as ``dp_sgd_d4``: the same pair, for Gaussian
``dp_nsgd_d4``                                    DP-GD and DP-NSGD (d = 1 pairs before)
``dp_heavy_ball``                 replace-one     noisy gradients, heavy-ball update inverted
``dp_heavy_ball_momentum``        replace-one     as ``dp_heavy_ball``, momentum 0.8
``dp_heavy_ball_d4``              replace-one     as ``dp_heavy_ball``, d = 4 (every coordinate)
``dp_nag``, ``dp_nag_opt``        replace-one     noisy gradients, Nesterov update inverted
``dp_masg``, ``dp_masg_opt``      replace-one     as DP-NAG, with the stage restarts
``dp_agd``                        add/remove      final iterate's direction
``noisy_projected_sgd``           replace-one     directions of the projected iterates
``output_perturbation``           replace-one     the output
``output_perturbation_d4``        replace-one     the output, d = 4, n = 2 (noise read off d or n)
``objective_perturbation``        replace-one     the output (Huber SVM, one record)
``objective_perturbation_n8``     replace-one     the output (Huber SVM, eight records in d = 4:
                                                  a noise scale read off n or d)
``tree_momentum_nsgd``            replace-one     per-step directions (noisy momentum)
``sensitivity_reduced_nsgd``      replace-one     per-step directions (gamma = 1)
``tree_momentum_nsgd_T3``,        replace-one     white-box: the tree's noisy nodes (T = 3, 8)
``tree_momentum_nsgd_T8``
``tree_momentum_nsgd_T3_signs``   replace-one     white-box nodes, the gradient's sign changing
                                                  between steps (a public clock, d = 2)
``tree_momentum_nsgd_T3_d4``      replace-one     white-box nodes, every coordinate, d = 4
                                                  (canary in every coordinate)
================================  ==============  ============================================

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

from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    ADD_REMOVE,
    AUDIT_REGISTRY,
    CLIP,
    GAUSS_DELTA,
    GAUSS_EPS,
    GAUSS_STEPS,
    GRID_BITS,
    HUBER_H,
    LAPLACE_EPS,
    LAPLACE_L2,
    LAPLACE_MUTANT,
    LAPLACE_STEPS,
    PUBLIC_N,
    RECORD_NORM,
    RELEASE_REGISTRY,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _direction_features,
    _displacement,
    _gd_features,
    _momentum_features,
    _output,
    _pair,
    _projected_features,
    register_audit,
)
from dpbounds.audit.settings.laplace_grid import grid_dp_gd

__all__ = ["ADD_REMOVE", "AUDITS", "CLIP", "GAUSS_DELTA", "GAUSS_EPS", "GAUSS_STEPS",
           "GRID_BITS", "HUBER_H", "LAPLACE_EPS", "LAPLACE_L2", "LAPLACE_MUTANT",
           "LAPLACE_STEPS", "PUBLIC_N", "RECORD_NORM", "RELEASE_AUDITS", "REPLACE_ONE",
           "NOISE_OPTIONS", "AuditSpec", "Setting", "audit_names", "grid_audit_names",
           "grid_dp_gd", "register_audit"]
# re-exported for code that imported them from here before the split into settings modules
_REEXPORTED = (grid_dp_gd, _PAIR_TEXT, _direction_features, _displacement, _gd_features,
               _momentum_features, _output, _pair, _projected_features)

#: Audit name -> spec, in ``rank`` order; every module of :mod:`dpbounds.audit.settings`
#: registers its own (no list here).
AUDITS: dict[str, AuditSpec] = AUDIT_REGISTRY.discover()


#: Release audits (recipes that are not algorithms; not in ``audit all``), registered by their
#: own modules of :mod:`dpbounds.audit.settings` (``laplace_grid``) in the same walk.
RELEASE_AUDITS: dict[str, AuditSpec] = RELEASE_REGISTRY.discover()


def audit_names() -> tuple[str, ...]:
    """Names :func:`dpbounds.audit.audit` accepts."""
    return tuple(AUDITS)


#: The noise options an audit may ask of an algorithm (``noise=`` of the algorithms).
NOISE_OPTIONS: tuple[str, ...] = ("float", "grid")


def grid_audit_names() -> tuple[str, ...]:
    """Audits whose algorithm takes ``noise="grid"`` (a ``noise`` keyword whose options, the
    function's ``noise_options`` where it declares them, include ``"grid"``: objective
    perturbation takes ``noise`` and refuses the grid; the ``*_opt`` wrappers forward it to
    the function they call)."""
    import inspect

    out = []
    for name, spec in AUDITS.items():
        fn = inspect.unwrap(spec.function)
        params = inspect.signature(fn).parameters
        offered = getattr(spec.function, "noise_options", NOISE_OPTIONS)
        if ("noise" in params and "grid" in offered) or (name.endswith("_opt")
                                                         and name[:-4] in out):
            out.append(name)
    return tuple(out)
