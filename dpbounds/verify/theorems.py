r"""How each registered theorem is run, bounded and measured in a scaling study.

One :class:`TheoremStudy` per registry id. Its :meth:`~TheoremStudy.run_point` builds the
problem at one grid point, **tunes** the algorithm with the theorem's closed-form
hyper-parameters, applies the **rounding policy**, re-checks the theorem's assumptions at the
rounded values, runs the algorithm (imported from the top-level :mod:`dpbounds.algorithms`),
and returns per-trial measurements of every component the lemma chain bounds together with the
bound of each component **at the run's own parameters**.

Each study and its runner live in a module of :mod:`dpbounds.verify.studies` (one per concept)
that registers itself; :data:`STUDIES` is filled by importing every module of that package
(:class:`dpbounds._discovery.Registry`), so this module keeps no list. The policy below holds
for all of them.

Rounding policy (integer quantities)
------------------------------------
* **epochs** ``E`` (Tran & Cutkosky): the real-valued choice is rounded to the nearest integer,
  then raised to the theorem's minimum (Theorem 6: ``E >= 1``; Theorem 9: ``E >= 2``); every
  continuous choice that depends on ``E`` (Theorem 6: ``u``, ``eta``) is **re-evaluated at the
  rounded** ``E`` (the theorem's best choice given ``E``); the bound is evaluated at the rounded
  values. A raised ``E`` is reported (``notes``).
* a point may **force** ``E`` (``point["E"]``, e.g. to give two algorithms the same gradient
  budget); the continuous choices are then re-evaluated at it in the same way;
* **steps** ``T`` and **batch** ``B`` (Yang et al.): not tuned (the corollaries take
  :math:`T\to\infty`); they are fixed integers of the study (``fixed={"T": ..., "B": ...}``).
* continuous choices outside the theorem's range (``gamma > 1``) are clipped into it and
  reported; the theorem's assumptions with a relation are re-checked at the run's parameters
  and each violated one is listed in ``violations`` (the bound is then still reported, but a
  verdict on it is not a test of the theorem).

Components
----------
Tree methods (Algorithms 1 and 2): ``grad_output`` :math:`\lVert\nabla F(\hat x)\rVert` (the
theorem's quantity), ``grad_avg`` its lower-variance time average
:math:`\frac1T\sum_t\lVert\nabla F(x_t)\rVert` (Lemma 5 bounds this too; on a grid of
``trace_points`` steps), ``noise`` :math:`\frac1T\sum_t\lVert\hat m_t-m_t\rVert` (Lemma 12 /
Lemma 7 with the theorem's noise, Theorem 4 / 8) and ``bias``
:math:`\frac1T\sum_t\lVert m_t-\nabla F(x_t)\rVert` (Lemma 11, averaged). DP-ERM (Kamath
Algorithm 3): ``excess_risk`` :math:`F(\theta_T)-F^*` and its time average. Yang et al.:
``grad_min`` :math:`\min_{t\ge1}\lVert\nabla F(x_t)\rVert` and ``grad_avg`` (the Jensen
inversion bounds the time average, hence the minimum); their bounds use the noise a correct run
adds for the claimed :math:`(\varepsilon,\delta)` (the accountant's), which equals the run's
own unless the algorithm is mutated.

Exact checks (two-sided)
------------------------
Besides the bounds, every run returns ``checks``: quantities with an **exact** value, each
compared two-sided (:mod:`dpbounds.verify.exact`):

* ``ledger`` — the noise the run declares (its calibration) equals the noise the accountant
  requires for the **claimed** :math:`(\varepsilon,\delta)`, recomputed here independently of
  the run (relative tolerance ``rtol``);
* ``drawn`` — the energy :math:`\sum\xi^2` of the noise the run drew
  (:func:`~dpbounds.verify.mutants.noise_tap`) equals what its declared noise implies (exact
  mean and standard deviation of a sum of squared Gaussian / Laplace draws);
* ``noise_exact`` (tree methods) — :math:`\sum_{\text{traced }t}\lVert\hat m_t-m_t\rVert^2`
  against :math:`d\,\mathrm{tr}\,C` with the tree covariance :math:`C` at the claimed
  :math:`\sigma` (Algorithm 2's re-injection included), exact standard deviation
  :math:`\sqrt{2d\sum C^2}`;
* ``subopt_exact`` (DP-NAG, DP-SHB) — :math:`F(x_T)-F^*` against the linear recursion's
  :math:`\mathbb E[F(x_T)-F^*]` with the claimed Laplace scales and the tuned
  :math:`(\alpha,\beta,T)` (the sample's standard error).

Mutation (negative control)
---------------------------
:mod:`dpbounds.verify.mutants`: ``noise_d`` (run with :math:`\varepsilon/\sqrt d`),
``noise_sqrt2`` (draws :math:`\sqrt2` too small, ledger unchanged), ``frozen`` (step
:math:`\times10^{-9}`), ``nsgd_noise_r`` (DP-NSGD's noise :math:`\sigma r`). The bounds and
exact values keep the claimed :math:`\varepsilon` and the tuned hyper-parameters.
"""

from __future__ import annotations

from dpbounds._discovery import unknown_name
from dpbounds.bounds import registry
from dpbounds.verify.mutants import MUTATIONS
from dpbounds.verify.studies._common import STUDY_REGISTRY, TheoremStudy

__all__ = ["MUTATIONS", "STUDIES", "TheoremStudy", "get_study"]

#: Registry id -> study, in ``rank`` order; every module of :mod:`dpbounds.verify.studies`
#: registers its own (no list here).
STUDIES: dict[str, TheoremStudy] = STUDY_REGISTRY.discover()


def get_study(theorem: str) -> TheoremStudy:
    """The study of a registry id or alias (``ValueError`` listing the covered ids)."""
    try:
        name = registry.get(theorem).name
    except (KeyError, ValueError):
        name = theorem
    if name not in STUDIES:
        covered = [*STUDIES, *(a for s in STUDIES.values() for a in s.entry.aliases)]
        raise ValueError(unknown_name("verify study", theorem, covered,
                                      "dpbounds verify --list", label="covered"))
    return STUDIES[name]
