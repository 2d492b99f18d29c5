r"""DP-AGD: Lee & Kifer's zCDP gradient descent with adaptive per-iteration budget
(Algorithm 2), batched over independent trials.

Each outer iteration (``lee_kifer.md`` §4):

1. measure the clipped gradient **sum**
   :math:`g_t=\sum_i\mathrm{clip}_{C_{grad}}(\nabla\ell_i(w_t))` with
   :math:`N(0, C_{grad}^2/(2\rho_{ng}))` noise (:math:`\rho_{ng}`-zCDP, Lemma 3.6) and
   normalise it to the unit direction :math:`\tilde g_t`;
2. pick a step from :math:`\Phi=\{0,\alpha_1,\dots,\alpha_k\}` with NoisyMin over the clipped
   loss sums :math:`\Omega=\{\sum_i\min(\ell_i(w_t-\alpha\tilde g_t),C_{obj})\}` (Algorithm 1 with
   :math:`\epsilon=\sqrt{2\rho_{nmax}}`, Laplace noise of scale :math:`C_{obj}/\epsilon`:
   :math:`\rho_{nmax}`-zCDP by Lemma 3.7);
3. if the chosen index is :math:`i>0` and budget remains, release
   :math:`w_{t+1}=w_t-\alpha_i\tilde g_t`; if :math:`i=0` ("not a descent direction"),
   raise :math:`\rho_{ng}\leftarrow(1+\gamma)\rho_{ng}`, measure the gradient again with the
   increment :math:`\rho_{ng}^{new}-\rho_{ng}^{old}` and average (§4, GradAvg), then repeat 2.

The budget starts at :math:`\rho` from eq. (5) for :math:`(\epsilon_{tot},\delta_{tot})`;
:math:`\rho_{nmax}=\epsilon_{nmax}^2/2` and :math:`\rho_{ng}=\epsilon_{ng}^2/(4\ln(1.25/\delta))`
with :math:`\epsilon_{nmax}=\epsilon_{ng}=\epsilon_{tot}/(2\cdot\mathrm{splits})` (§6.2; the
:math:`\rho_{ng}` conversion is the code's Thm-3.3-then-Lemma-3.6 reading). A step is released
only while the remaining budget is positive (line 13), so the spent budget — the charges up to
the last release — never exceeds :math:`\rho` (Thm 5.1). Neighbouring relation: add/remove.
The step-size grid adapts every ``tau`` iterations:
:math:`\alpha_{max}=(1+\eta)\max(\alpha_t,\dots,\alpha_{t-\tau+1})` (§4, footnote values
``k = 20``, ``tau = 10``, ``eta = 0.1``, initial :math:`\alpha_{max}=2`).

Where we read the paper, and where the public code ``ppmlguy/DP-AGD`` differs
(``lee_kifer.md`` §9):

* **Regulariser.** We put the (public) regulariser inside every per-example loss,
  :math:`\ell_i+R`, so it is clipped with the data term both in the gradient and in the
  NoisyMax scores; the sensitivities stay :math:`C_{grad}` and :math:`C_{obj}`. The code adds
  :math:`\lambda w` to the *normalised* noisy direction and leaves it out of the scores (item 5).
* **GradAvg.** Line 18 of the box passes the already normalised :math:`\tilde g_t`; we follow
  §4, which averages the two *raw* measurements with weights :math:`\rho_{old}/\rho_{new}` and
  :math:`(\rho_{new}-\rho_{old})/\rho_{new}`, keep the averaged raw estimate (its precision is
  exactly the current :math:`\rho_{ng}`, so repeated failures stay correctly weighted) and
  normalise it. The code averages its *first* raw measurement every time (item 4).
* **Charges.** Exactly those of Algorithm 2; the code charges :math:`\rho_{ng}` once more after
  each successful step (item 1) and applies :math:`\alpha_{i-1}` instead of :math:`\alpha_i`
  (item 2); the code caps :math:`\alpha_{max}` at 2 (item 3: ``alpha_cap=2.0`` reproduces it,
  default ``None``); the code releases when the remainder is :math:`\ge0` (item 6), we when
  :math:`>0` as the paper.
* **NoisyMax noise.** Laplace (Algorithm 1) by default; ``noisy_max="exponential"`` uses
  one-sided exponential noise, added with the sign that keeps it private: the step with the
  largest score - loss + Exp is chosen, i.e. argmin(loss - Exp). The public code's
  ``noisy_max(..., bmin=True)`` negates scores *and* noise, i.e. argmin(loss + Exp), which is
  **not** epsilon-DP: a Monte Carlo check (21 candidates, epsilon = 1, one added record) moved
  the probability of one outcome by a factor of at least 2e5, against e^epsilon = 2.72 for the
  version here. That sharper, non-private step selection likely explains much of the paper's
  advantage of DP-AGD at small epsilon; dpbounds does not reproduce it.

**NoisyMax in the ledger** (``noisy_max_ledger``). The paper: "NoisyMax satisfies
:math:`(\epsilon,0)`-DP (pure) and :math:`\frac{\epsilon^2}{2}`-zCDP" (§5 "Composition", VERBATIM;
the pure guarantee needs monotone scores for the scale :math:`C_{obj}/\epsilon`: under
add/remove a record adds :math:`\min(\ell_i, C_{obj})\in[0, C_{obj}]` to every candidate's
loss sum, since the losses are non-negative). By default the ledger records the zCDP
charge, which only the zCDP and RDP accountants read, so no exact accountant applies to
the run. ``"pure"`` records the :math:`\epsilon`-DP mechanism instead (DERIVED: the same
call, the guarantee the zCDP charge was derived from; Bun & Steinke 2016, Prop. 3.3 gives
back :math:`\epsilon^2/2=\rho_{nmax}`, so the budget and ``ledger.epsilon`` do not move);
an :math:`\epsilon`-DP mechanism's privacy profile is dominated by randomized response's
(Kairouz, Oh & Viswanath 2015, Thm 2.1; Zhu, Dong & Wang 2022, PLD of pure DP), which the
PLD accountant composes exactly with the Gaussian measurements. Not used: the
bounded-range reading :math:`\epsilon^2/8`-zCDP (Cesar & Rogers 2021; Dong, Durfee &
Rogers 2020) holds for the exponential mechanism (Gumbel noise), not for Laplace (or
one-sided exponential) report-noisy-max, which is what Algorithm 1 runs.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive, check_probability
from dpbounds.algorithms._common import (
    MAX_STEPS,
    SimulationResult,
    TraceRecorder,
    check_epsilon,
    check_own_record_losses,
    check_steps,
    check_trials,
    make_streams,
    progress,
)
from dpbounds.algorithms._grid import check_noise
from dpbounds.backend import backend_name, to_numpy
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.privacy.accountants import ZcdpAccountant
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    Neighbouring,
    PureDpMechanism,
    ZcdpMechanism,
)
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import LEE_KIFER, Provenance, Source

__all__ = ["DP_AGD_SOURCE", "dp_agd", "noisy_max"]

#: Largest step grid: each NoisyMax call scores ``trials x (grid_size + 1)`` candidates.
MAX_GRID: int = 10**4

DP_AGD_SOURCE = Source(LEE_KIFER, "Algorithm 2, Theorem 5.1, §4, §6.2", Provenance.VERBATIM,
                       "regulariser inside each per-example loss; GradAvg as in §4")


def noisy_max(scores: Any, sensitivity: float, epsilon: float, noise: Any,
              kind: str = "laplace", where: Any = None) -> Any:
    r"""Report-noisy-max (Lee & Kifer Algorithm 1), batched: ``argmax_j scores[:, j] + noise``.

    ``scores`` is a ``(trials, k)`` array; Laplace noise of scale ``sensitivity/epsilon``
    (``kind="laplace"``) or exponential noise with that mean (``kind="exponential"``, valid
    when the scores are monotone in the data set). ``noise`` is a
    :class:`~dpbounds.backend.TrialRandom`; ``where`` (boolean ``(trials,)``) restricts the
    draws to those trials (the others' streams do not advance and their index is
    meaningless). Returns the ``(trials,)`` indices (``xp`` ints).
    """
    xp = noise.xp
    k = scores.shape[1]
    scale = sensitivity / epsilon
    draw = noise.laplace if kind == "laplace" else noise.exponential
    z = draw((k,), scale) if where is None else draw((k,), scale, where=where)
    return xp.argmax(scores + z, axis=1)


def _explicit_clipped_sum(f: Any, w: Any, clip: float) -> Any:
    """``sum_i clip(∇ℓ_i(w) + ∇R(w))`` from the per-example vectors themselves.

    The grid rounds this sum, so it must be a float sum of terms of norm at most ``clip``
    (:func:`~dpbounds.algorithms._grid.float_sum_factor`); a GLM's fused
    ``clipped_mean_grad`` forms it as ``sum c_i w_i a_i + (sum c_i) r``, two parts whose
    rounding scales with ``||r||`` and may cancel (review of issue 35: 1 + 7e-13 of the
    clip against the factor's 1 + 1.9e-14).
    """
    xp = f.xp
    g = f.sample_grads(w) + f.regularizer_grad(w)[:, None, :]
    norms = xp.linalg.vector_norm(g, axis=-1)
    factor = clip / xp.maximum(norms, xp.asarray(clip, dtype=norms.dtype))
    return xp.sum(g * factor[..., None], axis=1)


class _AgdGrid:
    r"""DP-AGD's release-safe noise (``noise="grid"``): the gradient measurements and the
    NoisyMax scores on grids, per trial, from a :class:`~dpbounds.privacy.discrete.RawPool`
    of the trials' generators (trial ``k``'s draws depend on ``(seed, k)`` only).

    Gradient (DERIVED as :mod:`dpbounds.algorithms._grid`): the clipped gradient sum moves by
    at most :math:`C_{grad}` (add/remove), so its grid index by at most
    :math:`u = 2^jC_{grad} + \sqrt d` in L2; a measurement charged :math:`\rho` draws the
    discrete Gaussian with :math:`\sigma_u^2 = tm \ge u^2/(2\rho)`
    (:func:`~dpbounds.algorithms._grid.discrete_gaussian_parameters`), which is
    :math:`u^2/(2tm) \le \rho`-zCDP (Canonne, Kamath & Steinke 2020). The grid is the
    coarsest with :math:`2^jC_{grad} \ge 2^{16}\sqrt d`, coarsened for the largest noise
    (the smallest charge, ``min_rho``).

    NoisyMax (DERIVED): scores rounded to :math:`2^{-j'}` with :math:`2^{j'}C_{obj}\ge2^{16}`;
    each per-example loss is clipped to :math:`[0, C_{obj}]`
    (``clipped_loss``), so adding a record lowers every exact
    score by :math:`[0, C_{obj}]`; the computed scores differ from the exact ones by float
    rounding (:func:`~dpbounds.algorithms._grid.float_sum_factor`: at most
    :math:`\eta C_{obj}` for a sum of ``n`` clipped losses, either way; a score whose exact
    change is 0 moves by up to that), so every rounded score changes by an integer in
    :math:`[-\lfloor 2^{j'}C_{obj}(1+\eta)\rfloor - 1, \lceil 2^{j'}C_{obj}\eta\rceil + 1]`,
    an interval of width :math:`u' = \lfloor 2^{j'}C_{obj}(1+\eta)\rfloor +
    \lceil 2^{j'}C_{obj}\eta\rceil + 2` units. Report
    noisy max with discrete Laplace noise of scale :math:`b` (a multiple of 1/64 with
    :math:`u'/b \le \epsilon`) and ties broken by the lowest index is :math:`(u'/b)`-DP: Dwork
    & Roth (2014) Claim 3.9's argument (changes within an interval of width :math:`u'` move
    the winning threshold by at most :math:`u'`), whose only property of the noise is
    :math:`P[Z \ge a + u'] \ge e^{-u'/b} P[Z \ge a]`, true of the discrete Laplace for integer
    :math:`a` (its pmf ratio), and whose win events are up-sets in the noise for a fixed tie
    rule.
    """

    def __init__(self, stream: Any, grad_clip: float, obj_clip: float, d: int,
                 min_rho: float, nmax_epsilon: float, xp: Any, n: int) -> None:
        from fractions import Fraction

        from dpbounds.algorithms._grid import (
            _sqrt_up,
            float_sum_factor,
            float_up,
            grid_bits_for,
        )
        from dpbounds.privacy.discrete import RawPool

        self.pool = RawPool(stream.generators())
        self.d, self.xp = d, xp
        self.bits = grid_bits_for(grad_clip, math.sqrt(d),
                                  max_noise=grad_clip / math.sqrt(2.0 * min_rho) * 1.01)
        # the clipped gradients' float sum over n records (float_sum_factor), then rounded
        units = (Fraction(grad_clip) * float_sum_factor(n, d) * Fraction(2) ** self.bits
                 + _sqrt_up(d))
        self._units2 = units**2
        self._unit_value = float_up(units * Fraction(2) ** -self.bits)  # u in value units
        self.nmax_bits = grid_bits_for(obj_clip, 1.0)
        # the width of the rounded scores' change (class docstring): the largest exact
        # change C and its float error eta C, the float error the other way (a score whose
        # exact change is 0 moves by up to eta C, its sum of n terms), + 1 for each rounding
        eta = float_sum_factor(n, 1) - 1
        scaled = Fraction(obj_clip) * Fraction(2) ** self.nmax_bits
        self._nmax_units = math.floor(scaled * (1 + eta)) + math.ceil(scaled * eta) + 2
        self._scale = Fraction(math.ceil(Fraction(self._nmax_units) / Fraction(nmax_epsilon)
                                         * 64), 64)
        self.nmax_epsilon = float_up(self._nmax_units / self._scale)

    def _params(self, rho: float) -> tuple[int, int]:
        from dpbounds.algorithms._grid import discrete_gaussian_parameters

        return discrete_gaussian_parameters(self._unit_value / math.sqrt(2.0 * rho)
                                            * (1.0 + 1e-12), self.bits)

    def sigmas(self, rho: Any) -> np.ndarray:
        """The noise std (value units) of a measurement charged ``rho``, per trial."""
        out = []
        for r in np.asarray(rho, dtype=float):
            t, m = self._params(float(r)) if math.isfinite(r) and r > 0 else (0, 0)
            out.append(math.sqrt(t * m) * 2.0 ** -self.bits)
        return np.array(out)

    def rho_of(self, sigma: float) -> float:
        """The zCDP cost of the measurement whose std :meth:`sigmas` returned."""
        from dpbounds.algorithms._grid import float_up

        tm = round((sigma * 2.0**self.bits) ** 2)  # sigma^2 2^(2j) = t m, an integer
        return float_up(self._units2 / (2 * tm))

    def measure(self, value: Any, rho: Any, where: np.ndarray) -> Any:
        """``value`` released on the grid for the trials ``where`` (others: ``value``)."""
        from dpbounds.privacy.discrete import MAX_INDEX, _dgauss_pooled

        v = np.array(to_numpy(value), dtype=np.float64, copy=True)
        rows = np.flatnonzero(where)
        k = np.rint(np.ldexp(v[rows], self.bits))
        params = [self._params(float(r)) for r in np.asarray(rho, dtype=float)[rows]]
        for tm in sorted(set(params)):
            sel = np.array([p == tm for p in params])
            owner = np.repeat(rows[sel], self.d)  # ascending: rows is sorted
            self.pool.reserve(32 * self.d)
            z = _dgauss_pooled(tm[0], tm[1], owner, self.pool, lambda i: self.pool.gens[i])
            k[sel] += z.reshape(-1, self.d)
        if np.any(np.abs(k) > MAX_INDEX):
            raise ValueError(f"a gradient sum is too large for the grid 2^-{self.bits}")
        v[rows] = np.ldexp(k, -self.bits)
        return self.xp.asarray(v)

    def noisy_max(self, scores: Any, where: np.ndarray) -> np.ndarray:
        """Report noisy max on the rounded scores with discrete Laplace noise, for the trials
        ``where`` (others: index 0, unused); ties go to the lowest index (``argmax``)."""
        from dpbounds.privacy.discrete import _dlap_pooled

        sc = np.asarray(to_numpy(scores), dtype=np.float64)
        idx = np.zeros(sc.shape[0], dtype=np.int64)
        rows = np.flatnonzero(where)
        if rows.size:
            k = np.rint(np.ldexp(sc[rows], self.nmax_bits))
            owner = np.repeat(rows, sc.shape[1])
            self.pool.reserve(16 * sc.shape[1])
            z = _dlap_pooled(self._scale.numerator, self._scale.denominator, owner, self.pool)
            idx[rows] = np.argmax(k + z.reshape(rows.size, -1), axis=1)
        return idx


def _sigma_for_charge(clip: float, rho: Any) -> np.ndarray:
    r"""Gaussian std whose zCDP cost :math:`C^2/(2\sigma^2)` is at most the charge ``rho``
    (Lemma 3.6, rounded up by 1e-12 relative so the recorded mechanism never costs more than
    was charged)."""
    return clip / np.sqrt(2.0 * np.asarray(rho, dtype=float)) * (1.0 + 1e-12)


def gradient_average(rho_old: Any, rho_new: Any, first: Any, second: Any) -> Any:
    r"""§4 GradAvg: :math:`(\rho_{old}S+(\rho_{new}-\rho_{old})S')/\rho_{new}`.

    ``first`` was measured at precision ``rho_old`` (variance :math:`\Delta^2/(2\rho_{old})`),
    ``second`` at ``rho_new - rho_old``; the average has variance
    :math:`\Delta^2/(2\rho_{new})`. ``rho_*`` are ``(trials,)`` arrays or scalars.
    """
    if not hasattr(rho_new, "ndim") and not 0 < float(rho_old) < float(rho_new) < math.inf:
        # arrays come from dp_agd itself (rho_new > rho_old by construction); scalars from users
        raise ValueError("gradient_average needs 0 < rho_old < rho_new (finite); got "
                         f"rho_old={rho_old!r}, rho_new={rho_new!r}")
    elif hasattr(rho_new, "ndim"):
        # per trial; dp_agd passes rho_old = rho_new = 1 for the trials it does not average
        lo, hi = to_numpy(rho_old), to_numpy(rho_new)
        if not bool(np.all((lo > 0) & (hi >= lo) & np.isfinite(hi))):
            raise ValueError("gradient_average needs 0 < rho_old <= rho_new (finite) in every "
                             "trial")
    if not (np.all(np.isfinite(to_numpy(first))) and np.all(np.isfinite(to_numpy(second)))):
        raise ValueError("gradient_average needs finite gradient estimates first and second")
    if hasattr(rho_old, "ndim") and rho_old.ndim == 1:
        rho_old, rho_new = rho_old[:, None], rho_new[:, None]
    return (rho_old * first + (rho_new - rho_old) * second) / rho_new


@notation_keywords()
def dp_agd(objective: ObjectiveProtocol, *, epsilon: float, delta: float, splits: int = 60,
           gamma: float = 0.1, grad_clip: float = 3.0, obj_clip: float = 3.0,
           grid_size: int = 20, initial_max_step: float = 2.0, tau: int = 10,
           eta: float = 0.1, alpha_cap: float | None = None, noisy_max_noise: str = "laplace",
           rho_nmax: float | None = None, rho_ng: float | None = None,
           noisy_max_ledger: str = "zcdp", max_iterations: int = 100_000, trials: int = 1,
           seed: Any = None, x0: Any = None,
           trace: str | None = "auto", noise: str = "float") -> SimulationResult:
    r"""Run DP-AGD (Lee & Kifer Algorithm 2) on ``trials`` independent copies.

    Parameters
    ----------
    objective:
        Finite-sum objective (average form; the algorithm works with the sums
        :math:`n\cdot` mean) whose per-example loss depends on its own record (and public
        parameters) only. The centred objectives
        (:class:`~dpbounds.objectives.QuadraticObjective`,
        :class:`~dpbounds.objectives.HuberWell`,
        :class:`~dpbounds.objectives.CoshCosineObjective`) qualify: their centre is a public
        parameter fixed at construction (``centre``; a neighbouring data set is built with
        ``centre=f.centre``). An objective that declares ``centred_records`` (a centre
        recomputed from each data set) is refused (ValueError) for a private run: adding
        one record :math:`z` would shift every centred offset by :math:`(e_z-\bar e)/(n+1)`,
        so the clipped gradient sum would move by up to :math:`C_{grad}+n\lVert e_z-\bar
        e\rVert/(n+1)` (clipping is 1-Lipschitz; DERIVED), not :math:`C_{grad}`, and the
        NoisyMax scores lose their one-term monotone change. The NoisyMax scores clip each
        per-example loss to
        :math:`[0,C_{obj}]` (Lee & Kifer assume losses >= 0, as the logistic and Huber-SVM
        losses and regularisers are; a loss that can be negative is clipped at 0 too, so the
        scores' sensitivity holds for every objective).
    epsilon, delta:
        Target :math:`(\epsilon_{tot},\delta_{tot})`, converted to :math:`\rho` by eq. (5).
        ``epsilon = inf`` runs the noiseless method for ``max_iterations`` iterations.
    splits, gamma, grad_clip, obj_clip:
        §6.2 settings (defaults: 60, 0.1, :math:`C_{grad}=C_{obj}=3`).
    grid_size, initial_max_step, tau, eta, alpha_cap:
        Step grid :math:`\Phi` (``grid_size`` non-zero points in :math:`[0,\alpha_{max}]`)
        and its adaptation; ``alpha_cap`` caps :math:`\alpha_{max}` (code: 2.0).
    noisy_max_noise:
        ``"laplace"`` (Algorithm 1) or ``"exponential"`` (one-sided, with the private sign;
        the public code's sign is not private, see the module notes).
    rho_nmax, rho_ng:
        Override the initial per-call budgets.
    noisy_max_ledger:
        How the ledger records each NoisyMax call: ``"zcdp"`` (default, as the paper
        charges it: a :math:`\rho_{nmax}`-zCDP entry) or ``"pure"``: the
        :math:`\epsilon=\sqrt{2\rho_{nmax}}`-DP mechanism it is (a ``PureDpMechanism``
        with the very :math:`\epsilon` NoisyMax is called with). The run, its budget and
        the zCDP accountant's reading (:math:`\epsilon^2/2=\rho_{nmax}`) are the same
        either way; ``"pure"`` lets the PLD accountant compose the calls exactly with the
        Gaussian measurements (see the module notes, "NoisyMax in the ledger").
    max_iterations:
        Cap on released iterations (the budget normally stops the run first).
    trials, seed, x0, trace:
        As elsewhere; the trace has one column per released iterate, each trial's last value
        repeated after it stops.
    noise:
        ``"float"`` (float64 noise, for simulation) or ``"grid"`` (safe to release; needs
        ``noisy_max_noise="laplace"``): every gradient measurement is released as
        :math:`2^{-j}(\operatorname{round}(2^j g) + Z)` with an exact discrete Gaussian
        :math:`Z` whose zCDP cost :math:`u^2/(2\sigma_u^2)`, :math:`u = 2^j C_{grad} + \sqrt d`
        (Canonne, Kamath & Steinke 2020), is at most the charge the float run makes, and
        NoisyMax adds exact discrete Laplace noise to the scores rounded to a grid
        (:func:`grid_noisy_max`), pure :math:`u_{obj}/b`-DP with
        :math:`u_{obj}/b \le \sqrt{2\rho_{nmax}}`. The budget logic is unchanged (each step
        costs at most what is charged); the ledger records the grid mechanisms' own costs.

    Returns
    -------
    SimulationResult
        ``params["iterations"]`` (releases per trial), ``params["rounds"]``;
        ``ledger.rho`` is the per-trial spent zCDP budget, ``ledger.epsilon`` the largest
        converted :math:`\epsilon` (Lemma 3.8).

    Example
    -------
    >>> from dpbounds.data import kuru_synthetic
    >>> from dpbounds.objectives import LogisticRegression
    >>> A, y = kuru_synthetic(n=2000, d=5, seed=0)
    >>> f = LogisticRegression(A, y, l2=1e-3, l1_radius=5.0)
    >>> r = dp_agd(f, epsilon=1.0, delta=1e-8, trials=3, seed=0)
    >>> r.ledger.epsilon <= 1.0, r.ledger.neighbouring.value
    (True, 'add_remove')
    """
    f = objective
    xp = f.xp
    n, d = f.n, f.d
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(f, "dp_agd", epsilon)
    delta = check_probability("delta", delta)
    splits = check_int("splits", splits, maximum=MAX_STEPS)
    gamma = check_positive("gamma", gamma)
    grad_clip = check_positive("grad_clip", grad_clip)
    obj_clip = check_positive("obj_clip", obj_clip)
    K = check_int("grid_size", grid_size, maximum=MAX_GRID)
    alpha_max0 = check_positive("initial_max_step", initial_max_step)
    tau = check_int("tau", tau, maximum=MAX_STEPS)
    eta = check_positive("eta", eta)
    kind = check_choice("noisy_max_noise", noisy_max_noise, ("laplace", "exponential"))
    noise_kind = check_noise(noise, xp)
    if noise_kind == "grid" and kind != "laplace":
        raise ValueError("noise='grid' needs noisy_max_noise='laplace' (the grid NoisyMax "
                         "draws discrete Laplace noise)")
    nmax_entry = check_choice("noisy_max_ledger", noisy_max_ledger, ("zcdp", "pure"))
    max_iterations = check_steps(max_iterations, "max_iterations")
    trials = check_trials(trials)
    if alpha_cap is not None:
        alpha_cap = check_positive("alpha_cap", alpha_cap)
    private = math.isfinite(epsilon)

    ar = Neighbouring.ADD_REMOVE
    accountant = ZcdpAccountant(ar, "standard")
    if private:
        rho_total = accountant.budget(epsilon, delta)  # eq. (5)
        eps_split = epsilon / (2.0 * splits)
        # NoisyMax at eps_split is eps_split^2 / 2-zCDP (Lemma 3.7)
        r_nmax = (accountant.mechanism_rho(PureDpMechanism(eps_split, ar)) if rho_nmax is None
                  else check_positive("rho_nmax", rho_nmax))
        r_ng0 = (eps_split**2 / (4.0 * math.log(1.25 / delta)) if rho_ng is None
                 else check_positive("rho_ng", rho_ng))
    else:
        rho_total, r_nmax, r_ng0 = math.inf, math.inf, math.inf

    _, stream = make_streams(seed, trials, xp)
    grid = (_AgdGrid(stream, grad_clip, obj_clip, d, min(r_ng0, gamma * r_ng0),
                     math.sqrt(2.0 * r_nmax), xp, objective.n)
            if noise_kind == "grid" and private else None)
    rec = TraceRecorder(f, trace)
    w = f.initial_state(trials, x0)

    # host-side bookkeeping (scalars per trial)
    remaining = np.full(trials, rho_total)
    spent_at_release = np.zeros(trials)
    r_ng = np.full(trials, r_ng0)
    active = np.ones(trials, dtype=bool)
    need_grad = np.ones(trials, dtype=bool)
    iters = np.zeros(trials, dtype=int)
    alpha_max = np.full(trials, alpha_max0)
    chosen: list[list[float]] = [[] for _ in range(trials)]
    charges: list[list[float]] = [[] for _ in range(trials)]
    n_grad = np.zeros(trials, dtype=int)
    n_nmax = np.zeros(trials, dtype=int)
    sigmas: list[list[float]] = [[] for _ in range(trials)]
    at_release = np.zeros((trials, 2), dtype=int)  # (#gradient measurements, #NoisyMax) used

    values = [to_numpy(rec.value(w))] if rec.kind else []
    trace_rows: list[list[float]] = [[float(v)] for v in values[0]] if rec.kind else []
    g_raw = xp.zeros((trials, d), dtype=xp.float64)  # noise-free clipped gradient sum
    est = xp.zeros((trials, d), dtype=xp.float64)    # current raw noisy estimate
    grid01 = xp.reshape(xp.linspace(0.0, 1.0, K + 1, dtype=xp.float64), (1, K + 1))
    rounds = 0
    bar = progress(None, desc="DP-AGD (rounds)")
    while np.any(active) and rounds < 10 * max_iterations + 10:
        rounds += 1
        bar.update()
        # -- 1. fresh gradient measurement where needed (line 4-7)
        # Every draw is restricted to the trials that use it (``where=``), so a trial's
        # stream, hence its run, depends only on (seed, k) and not on the other trials.
        if np.any(need_grad & active):
            g_new = (_explicit_clipped_sum(f, w, grad_clip) if grid is not None else
                     n * f.clipped_mean_grad(w, None, grad_clip, include_regularizer=True))
            mask = xp.asarray((need_grad & active)[:, None])
            g_raw = xp.where(mask, g_new, g_raw)
            if private:
                if grid is not None:
                    sig = grid.sigmas(r_ng)
                    est = xp.where(mask, grid.measure(g_new, r_ng, need_grad & active), est)
                else:
                    sig = _sigma_for_charge(grad_clip, r_ng)
                    z = stream.normal((d,), xp.asarray(sig), where=need_grad & active)
                    est = xp.where(mask, g_new + z, est)
                for k in np.flatnonzero(need_grad & active):
                    remaining[k] -= r_ng[k]
                    charges[k].append(r_ng[k])
                    sigmas[k].append(float(sig[k]))
                    n_grad[k] += 1
            else:
                est = xp.where(mask, g_new, est)
            need_grad[:] = False
            # a trial whose budget is gone can never release again (line 13): stop it
            active &= remaining > 0
        norm = xp.linalg.vector_norm(est, axis=1)
        direction = est / xp.maximum(norm, xp.asarray(1e-300, dtype=norm.dtype))[:, None]
        # -- 2. NoisyMin over the step grid (lines 9-11)
        phi = xp.asarray(alpha_max[:, None]) * grid01                     # (trials, K+1)
        cand = w[:, None, :] - phi[:, :, None] * direction[:, None, :]   # (trials, K+1, d)
        scores = n * f.clipped_loss(xp.reshape(cand, (trials * (K + 1), d)), obj_clip,
                                    include_regularizer=True)
        scores = -xp.reshape(scores, (trials, K + 1))
        if private:
            idx = (grid.noisy_max(scores, active) if grid is not None
                   else noisy_max(scores, obj_clip, math.sqrt(2.0 * r_nmax), stream, kind,
                                  where=active))
            remaining[active] -= r_nmax
            for k in np.flatnonzero(active):
                charges[k].append(r_nmax)
                n_nmax[k] += 1
        else:
            idx = xp.argmax(scores, axis=1)
        idx_h = to_numpy(idx).astype(int)
        onehot = xp.asarray((idx_h[:, None] == np.arange(K + 1)[None, :]).astype(float))
        alpha = xp.sum(phi * onehot, axis=1)
        success = active & (idx_h > 0)
        release = success & (remaining > 0)
        # -- 3a. release (lines 12-13)
        if np.any(release):
            w = xp.where(xp.asarray(release[:, None]), w - alpha[:, None] * direction, w)
            spent_at_release[release] = rho_total - remaining[release] if private else 0.0
            iters[release] += 1
            alpha_h = to_numpy(alpha)
            for k in np.flatnonzero(release):
                at_release[k] = (len(sigmas[k]), n_nmax[k])
                chosen[k].append(float(alpha_h[k]))
                if iters[k] % tau == 0:  # adapt Φ (§4)
                    alpha_max[k] = (1.0 + eta) * max(chosen[k][-tau:])
                    if alpha_cap is not None:
                        alpha_max[k] = min(alpha_max[k], alpha_cap)
            need_grad |= release
        active &= ~(success & ~release)  # success without budget: the run is over
        active &= iters < max_iterations
        # -- 3b. failure: raise the gradient budget and average (lines 15-19)
        fail = active & (idx_h == 0)
        if np.any(fail) and private:
            r_old = r_ng.copy()
            r_ng[fail] = (1.0 + gamma) * r_ng[fail]
            inc = np.where(fail, r_ng - r_old, 1.0)
            if grid is not None:  # the second measurement on the grid, then averaged
                sig2 = grid.sigmas(inc)
                second = grid.measure(g_raw, inc, fail)
            else:
                sig2 = _sigma_for_charge(grad_clip, inc)
                second = g_raw + stream.normal((d,), xp.asarray(sig2), where=fail)
            avg = gradient_average(xp.asarray(np.where(fail, r_old, 1.0)),
                                   xp.asarray(np.where(fail, r_ng, 1.0)), est, second)
            est = xp.where(xp.asarray(fail[:, None]), avg, est)
            for k in np.flatnonzero(fail):
                remaining[k] -= inc[k]
                charges[k].append(inc[k])
                sigmas[k].append(float(sig2[k]))
                n_grad[k] += 1
            active &= remaining > 0
        elif np.any(fail):
            active &= ~fail  # noiseless: no descent step on the grid, converged
        if rec.kind and np.any(release):
            vals = to_numpy(rec.value(w))
            for k in np.flatnonzero(release):
                trace_rows[k].append(float(vals[k]))

    bar.close()
    if rec.kind:
        width = max(len(r) for r in trace_rows)
        tr = np.array([r + [r[-1]] * (width - len(r)) for r in trace_rows])
    else:
        tr = np.zeros((trials, 0))
    # the record: per trial, the Gaussian measurements and NoisyMax calls up to its last
    # release (what it published; later charges bought nothing that was released)
    trial_ledgers = []
    for trial in range(trials):
        led = PrivacyLedger(ar)
        if grid is not None:
            for sig_k in sigmas[trial][:at_release[trial, 0]]:
                led.record(ZcdpMechanism(grid.rho_of(sig_k), ar))
            eps_nm = grid.nmax_epsilon
            led.record(ZcdpMechanism(eps_nm**2 / 2.0, ar) if nmax_entry == "zcdp"
                       else PureDpMechanism(eps_nm, ar), int(at_release[trial, 1]))
        elif private:
            for sig_k in sigmas[trial][:at_release[trial, 0]]:
                led.record(GaussianMechanism(sig_k, grad_clip, ar))
            led.record(ZcdpMechanism(r_nmax, ar) if nmax_entry == "zcdp"
                       else PureDpMechanism(math.sqrt(2.0 * r_nmax), ar),
                       int(at_release[trial, 1]))
        trial_ledgers.append(led)
    if private:
        worst = int(np.argmax([cast(ZcdpAccountant, led.accountant("zcdp")).rho
                               for led in trial_ledgers]))
    else:
        worst, trial_ledgers = 0, trial_ledgers[:1]
    privacy = RunPrivacy(trial_ledgers[worst], epsilon, delta, "zcdp", grad_clip,
                         {"conversion": "standard"},
                         trial_ledgers=tuple(trial_ledgers) if private else (),
                         description="zCDP composition (Lemma 3.5) of the charges up to the "
                                     "last release, eq. (5) / Lemma 3.8 conversion")
    params = dict(rho_total=rho_total, rho_nmax=r_nmax, rho_ng_initial=r_ng0,
                  rho_ng_final=r_ng, iterations=iters, rounds=rounds, step_sizes=chosen,
                  gradient_sigmas=sigmas, gradient_measurements=n_grad,
                  released_gradient_sigmas=[sig[:a] for sig, a in zip(sigmas, at_release[:, 0])],
                  released_noisy_max_calls=at_release[:, 1],
                  noisy_max_calls=n_nmax, splits=splits, gamma=gamma, grad_clip=grad_clip,
                  obj_clip=obj_clip, seed=seed, noise=noise_kind,
                  **({"grid_bits": grid.bits, "noisy_max_grid_bits": grid.nmax_bits}
                     if grid is not None else {}))
    return SimulationResult("dp_agd", w, tr, rec.kind or "none", privacy, params,
                            DP_AGD_SOURCE, backend_name(xp))
