r"""Convex DP-ERM baselines of Kamath's lecture: noisy projected SGD (Bassily, Smith &
Thakurta 2014), output perturbation and objective perturbation.

Normalisation. The lecture writes the **sum** :math:`\mathcal L(\theta)=\sum_i\ell_i(\theta)`;
dpbounds objectives are averages :math:`F=\frac1n\sum_i\ell_i+R`, so
:math:`\mathcal L=nF` (the regulariser :math:`R` inside every example). Traces report the
average form :math:`F(\theta_t)-F^*` (multiply by ``n`` for the lecture's excess risk).

* :func:`noisy_projected_sgd` — Algorithm 3: one uniformly random example per step,
  :math:`\theta_t=\Pi_{\mathcal C}(\theta_{t-1}-\eta(t)(n\nabla\ell_i(\theta_{t-1})+b_t))`,
  :math:`b_t\sim N(0,\sigma^2I)`, :math:`\eta(t)=\lVert\mathcal C\rVert_2/(G\sqrt t)`,
  :math:`G^2=n^2L^2+d\sigma^2` (§6), :math:`\mathcal C` the L2 ball of radius ``radius``
  (diameter :math:`\lVert\mathcal C\rVert_2=2R`), last iterate returned.
  ``calibration="lecture"`` uses :math:`\sigma^2=32L^2n^2\log(n/\delta)\log(1/\delta)/\varepsilon^2`
  with :math:`T=n^2` (VERBATIM; a sufficient calibration from an approximate argument);
  ``calibration="rdp"`` calibrates :math:`\sigma` for the actual ``steps`` with the RDP
  accountant of the sampled Gaussian without replacement (batch 1, replace-one, L2
  sensitivity :math:`2nL` of the noised term) from :mod:`dpbounds.privacy.rdp`.
* :func:`output_perturbation` — exact minimiser plus Gaussian noise. Sensitivity
  ``"derived"``: :math:`2G/(n\mu)` for the average form with a :math:`\mu`-strongly convex
  regulariser and :math:`G`-Lipschitz losses (replace-one; DERIVED, ``kamath_lecture.md`` §2
  caution); ``"lecture"``: Lemma 1's :math:`2n/\lambda` read with :math:`\lambda=n\mu` and
  :math:`G`-Lipschitz losses, :math:`2G/\mu` (VERBATIM, conservative by the factor ``n``).
* :func:`objective_perturbation` — :math:`\arg\min_\theta \sum_i\ell_i+nR+\frac\Delta2\lVert
  \theta\rVert^2+b^\top\theta` with :math:`b\sim N(0,\sigma^2I)`,
  :math:`\sigma^2=\zeta^2(8\log(2/\delta)+4\varepsilon)/\varepsilon^2`, :math:`\Delta=2\lambda_H/
  \varepsilon` (Kifer, Smith & Thakurta 2012; the constants of Lee & Kifer's ObjPert baseline,
  ``lee_kifer.md`` §9 item 11 — the lecture gives none). :math:`\zeta` bounds
  :math:`\lVert\nabla\ell_i\rVert`, :math:`\lambda_H` the eigenvalues of the rank-one per-example
  Hessians (GLMs: :math:`\sup\psi''\cdot\sup\lVert a\rVert^2`). The minimiser is computed
  exactly (trust-region Newton, gradient norm below 1e-10).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_positive, check_probability
from dpbounds.algorithms import _step_kernels as _kernels
from dpbounds.algorithms._common import (
    SimulationResult,
    TraceRecorder,
    calibration_constant,
    check_epsilon,
    check_own_record_losses,
    check_steps,
    check_trials,
    make_streams,
    progress,
)
from dpbounds.algorithms._grid import GridStream, check_noise, gaussian_grid
from dpbounds.backend import backend_name, get_namespace, to_numpy
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol

if TYPE_CHECKING:
    from dpbounds.objectives.glm import MarginLossObjective
from dpbounds.privacy.calibrate import calibrate
from dpbounds.privacy.gaussian import classic_gaussian_sigma
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import (
    ApproxDpMechanism,
    GaussianMechanism,
    Neighbouring,
    Sampling,
    SubsampledGaussianMechanism,
)
from dpbounds.privacy.run import RunPrivacy
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = ["NOISY_SGD_SOURCE", "OUTPUT_PERTURBATION_LECTURE_SOURCE", "OUTPUT_PERTURBATION_SOURCE",
           "bst14_sigma", "noisy_projected_sgd", "objective_perturbation", "output_perturbation"]

NOISY_SGD_SOURCE = Source(KAMATH, "Algorithm 3 (Bassily, Smith, Thakurta 2014), Theorem 2",
                          Provenance.VERBATIM)
#: ``sensitivity_rule="derived"`` (default): the tight minimiser sensitivity 2G/(n mu) of the
#: average form is ours (``kamath_lecture.md`` §2 caution), so the result is DERIVED.
OUTPUT_PERTURBATION_SOURCE = Source(
    KAMATH, "Lemma 1 + Gaussian mechanism", Provenance.DERIVED,
    "sensitivity 2G/(n mu) (replace-one, average form) derived in kamath_lecture.md §2 "
    "caution, not the lecture's printed 2n/lambda",
)
#: ``sensitivity_rule="lecture"``: Lemma 1's printed 2n/lambda, read with lambda = n mu and
#: G-Lipschitz losses (2G/mu; conservative by the factor n).
OUTPUT_PERTURBATION_LECTURE_SOURCE = Source(
    KAMATH, "Lemma 1 (as printed, 2n/lambda) + Gaussian mechanism", Provenance.VERBATIM,
    "read with lambda = n mu and G-Lipschitz losses: 2G/mu",
)
OBJECTIVE_PERTURBATION_SOURCE = Source(
    "Kifer, Smith & Thakurta, Private Convex ERM and High-dimensional Regression, COLT 2012",
    "Theorem 2 (Gaussian objective perturbation)", Provenance.RECONSTRUCTED,
    "constants as used by Lee & Kifer's ObjPert baseline; the lecture gives none",
)


def bst14_sigma(lipschitz: float, n: int, epsilon: float, delta: float) -> float:
    r"""Algorithm 3's noise :math:`\sqrt{32L^2n^2\log(n/\delta)\log(1/\delta)}/\varepsilon`."""
    L = check_positive("lipschitz", lipschitz)
    n = check_int("n", n)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    # L n outside the root: squaring a large L would overflow before the root brings it back
    return float(L) * n * math.sqrt(32.0 * math.log(n / delta) * math.log(1.0 / delta)) / epsilon


def _project(xp: Any, x: Any, radius: float) -> Any:
    norm = xp.linalg.vector_norm(x, axis=1)
    return x * xp.minimum(1.0, radius / xp.maximum(norm, xp.asarray(1e-300)))[:, None]


@notation_keywords()
def noisy_projected_sgd(objective: ObjectiveProtocol, *, epsilon: float, delta: float,
                        radius: float, steps: int | None = None, calibration: str = "lecture",
                        lipschitz: float | None = None, trials: int = 1, seed: Any = None,
                        x0: Any = None, trace: str | None = "auto",
                        trace_every: int = 1, noise: str = "float") -> SimulationResult:
    r"""Noisy projected SGD, Kamath's Algorithm 3 (see the module docstring).

    Parameters
    ----------
    objective:
        Convex objective; its per-example gradients (regulariser included) must be bounded
        by ``lipschitz`` on the ball (default ``objective.lipschitz(radius)``).
    epsilon, delta:
        Target; ``epsilon = inf`` runs noiseless projected SGD.
    radius:
        Radius :math:`R` of the constraint ball :math:`\mathcal C`.
    steps:
        :math:`T` (default :math:`n^2`, the lecture's choice; ``calibration="lecture"``
        requires :math:`T\le n^2`).
    calibration:
        ``"lecture"`` or ``"rdp"`` (see module docstring).
    trace_every:
        Record the trace every this many steps (the default ``T = n²`` is long).
    noise:
        ``"float"`` (float64 noise, for simulation; the released floats' last bits leak,
        Mironov 2012) or ``"grid"`` (safe to release; needs ``calibration="rdp"``): each
        noisy gradient is released as :math:`2^{-j}(\operatorname{round}(2^j n\nabla\ell_i)
        + Z)` with exact discrete Gaussian :math:`Z` (:mod:`dpbounds.algorithms._grid`), and
        every iterate is post-processing of those releases. It is accounted as what it is
        proved to be: per step :math:`\rho = u^2/(2\sigma_u^2)`-zCDP on integer L2
        sensitivity :math:`u = 2^j\cdot2nL + \sqrt d` (Canonne, Kamath & Steinke 2020),
        amplified by the without-replacement sample of one example (Wang, Balle &
        Kasiviswanathan 2019, Theorem 9, any mechanism of known RDP; a
        :class:`~dpbounds.privacy.SubsampledZcdpMechanism` per step, RDP accountant; a plain
        :class:`~dpbounds.privacy.ZcdpMechanism` when ``n = 1``), recalibrated so the
        ledger meets the target. The lecture's calibration is a theorem about the continuous
        Gaussian (advanced composition of its exact guarantee), so it is not used for the
        grid. The step size's :math:`G` uses the grid noise's std; the NumPy loop runs (not
        the compiled one).
    """
    f = objective
    xp = f.xp
    n, d = f.n, f.d
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(f, "noisy_projected_sgd", epsilon)
    delta = check_probability("delta", delta)
    radius = check_positive("radius", radius)
    limit = _kernels.step_limit(f)
    if steps is None and n * n > limit:
        raise ValueError(f"steps defaults to n^2 = {n * n}, above the {limit} steps a "
                         "simulation accepts: pass steps= (with calibration='rdp')")
    T = n * n if steps is None else check_steps(steps, maximum=limit)
    trials = check_trials(trials)
    calibration = check_choice("calibration", calibration, ("lecture", "rdp"))
    trace_every = check_int("trace_every", trace_every)
    if lipschitz is not None:
        L = check_positive("lipschitz", lipschitz)
    elif math.isfinite(epsilon):  # said where the objective took it from the data
        L = calibration_constant(f, "lipschitz", "noisy_projected_sgd", radius)
    else:
        L = f.lipschitz(radius)
    if not math.isfinite(L):
        raise ValueError("lipschitz must be finite on the ball: pass lipschitz=")
    noise_kind = check_noise(noise, xp)
    private = math.isfinite(epsilon)
    if noise_kind == "grid" and private and calibration != "rdp":
        raise ValueError("noise='grid' needs calibration='rdp': the lecture's calibration is "
                         "a theorem about the continuous Gaussian; the grid's discrete Gaussian "
                         "is accounted by its zCDP cost, amplified by subsampling (RDP)")
    if private and calibration == "lecture":
        if T > n * n:
            raise ValueError(f"steps must be <= n^2 = {n * n} for calibration='lecture'")
        sigma = bst14_sigma(L, n, epsilon, delta)
    elif private:
        # one step: n * grad of one uniformly drawn example (replace-one sensitivity 2nL)
        sigma = calibrate(lambda s: _step_mechanism(s, n, L), epsilon, delta, "rdp", T,
                          neighbouring=Neighbouring.REPLACE_ONE, initial=2.0 * n * L,
                          round_up=True)
    else:
        sigma = 0.0
    if not math.isfinite(sigma) or not math.isfinite(sigma * math.sqrt(d)):
        raise ValueError(f"epsilon={epsilon!r} is too small for noisy projected SGD: the noise "
                         "scale overflows")
    sampler, noise_rng = make_streams(seed, trials, xp)
    ro = Neighbouring.REPLACE_ONE
    grid: GridStream | None = None
    step: Any = _step_mechanism(sigma, n, L) if sigma > 0 else None
    if noise_kind == "grid" and sigma > 0:
        # the released n * grad of one example drawn of n moves by 2nL (replace-one); n = 1:
        # the whole data set every step, no amplification
        grid, step, sigma = gaussian_grid(
            noise_rng, 2.0 * n * L, sigma, d, T, epsilon, delta, ro, xp,
            sampling_rate=1.0 / n if n > 1 else None, sampling="without_replacement",
            summands=1)
    G = math.hypot(n * L, math.sqrt(d) * sigma)  # sqrt(n^2 L^2 + d sigma^2), no overflow
    diameter = 2.0 * radius
    rec = TraceRecorder(f, trace)
    x = _project(xp, f.initial_state(trials, x0), radius)
    rec.record(x)
    kern = _kernels.active(f, x) if grid is None else None  # the grid release: NumPy loop
    if kern is not None:  # the compiled loop updates x in place
        x = np.array(x, dtype=np.float64, order="C", copy=True)
    block = _kernels.sample_block(1)
    for c0 in progress(range(0, T, block), desc="noisy projected SGD"):
        c1 = min(T, c0 + block)
        batches = sampler.integers(n, (c1 - c0,))  # the block's examples (both paths)
        for a, b in _kernels.chunks(c0, c1, _kernels.block_steps(d),
                                    trace_every if rec.kind is not None else 0):
            noises = (noise_rng.normal_steps(b - a, (d,), sigma)
                      if sigma > 0 and grid is None else None)
            if kern is not None:
                _kernels.projected_sgd_steps(*kern, batches, a - c0,
                                             _kernels.noise_or_none(noises), sigma > 0, a,
                                             b - a, n, diameter, G, radius, x,
                                             np.empty((_kernels.WORK_ROWS, d)))
            for s, t in enumerate(range(a + 1, b + 1) if kern is None else ()):
                idx = batches[:, t - c0 - 1:t - c0]
                g = n * (f.grad(x, idx))  # n (∇ℓ_i + ∇R): unbiased for ∇(nF)
                if grid is not None:
                    g = grid.release(t - 1, g)
                elif noises is not None:
                    g = g + noises[:, s, :]
                x = _project(xp, x - (diameter / (G * math.sqrt(t))) * g, radius)
            if b % trace_every == 0 or b == T:
                rec.record(x)
    ledger = PrivacyLedger(ro)
    options: dict[str, Any] = {}
    if grid is not None:
        ledger.record(step, T)
        accountant, how = "rdp", ("discrete Gaussian on a grid (zCDP), sampled without "
                                  "replacement (q = 1/n, WBK Thm 9)")
        if n == 1:
            accountant, how = "zcdp", "discrete Gaussian on a grid (zCDP), full data set"
            options = {"conversion": "standard"}
    elif private and calibration == "rdp":
        ledger.record(step, T)
        accountant, how = "rdp", "RDP of the sampled Gaussian without replacement (q = 1/n)"
    elif private:
        # the lecture's sufficient calibration is a theorem about the whole run
        ledger.record(ApproxDpMechanism(epsilon, delta, ro, "BST14 / Kamath Lecture 13 "
                                        "Algorithm 3 (T <= n^2, advanced composition)"))
        accountant, how = "basic", "the lecture's sufficient calibration (Algorithm 3)"
    else:
        accountant, how = "rdp", ""
    privacy = RunPrivacy(ledger, epsilon, delta, accountant, 2.0 * n * L, options,
                         description=how)
    params = dict(sigma=sigma, lipschitz=L, radius=radius, steps=T, G=G,
                  calibration=calibration, trace_every=trace_every, seed=seed,
                  noise=noise_kind, **({"grid_bits": grid.grid_bits} if grid is not None
                                       else {}))
    return SimulationResult("noisy_projected_sgd", x, rec.result(trials), rec.kind or "none",
                            privacy, params, NOISY_SGD_SOURCE, backend_name(xp))


def _step_mechanism(sigma: float, n: int, L: float) -> SubsampledGaussianMechanism:
    """One noisy projected SGD step: Gaussian ``sigma`` on ``n * grad`` of one example drawn
    uniformly (a without-replacement sample of 1 of ``n``; replace-one sensitivity 2nL)."""
    return SubsampledGaussianMechanism(sigma, 1.0 / n, 2.0 * n * L,
                                       Sampling.WITHOUT_REPLACEMENT, Neighbouring.REPLACE_ONE)


#: The grid output perturbation's public solver tolerance, relative to mu * Delta / 2.
SOLVER_TOLERANCE = 1e-3


def _solver_tolerant_sensitivity(f: Any, sens: float) -> float:
    """``Delta (1 + SOLVER_TOLERANCE)`` after checking that the solver's minimiser is within
    the public tolerance (``output_perturbation``'s docstring), else ``ValueError``."""
    mu = float(f.strong_convexity)
    tau = SOLVER_TOLERANCE * mu * sens / 2.0
    g = float(f.optimum.grad_norm) + f.n * 2.0**-53 * float(f.gradient_bound)
    if not g <= tau:
        raise ValueError(f"noise='grid': the solver's minimiser has ||grad F|| <= {g:.3g} "
                         f"(with its float error), above the public tolerance {tau:.3g} "
                         "(1e-3 mu Delta / 2) the release's sensitivity covers")
    return sens * (1.0 + SOLVER_TOLERANCE)


def output_perturbation_sensitivity(objective: ObjectiveProtocol, rule: str = "derived") -> float:
    r"""L2 sensitivity of :math:`\arg\min F` (replace-one): ``"derived"`` :math:`2G/(n\mu)`,
    ``"lecture"`` :math:`2G/\mu` (Lemma 1 with :math:`\lambda=n\mu`)."""
    rule = check_choice("rule", rule, ("derived", "lecture"))
    mu = objective.strong_convexity
    G = objective.gradient_bound
    if not mu > 0:
        raise ValueError("output perturbation needs strong_convexity > 0 (an L2 regulariser)")
    if not math.isfinite(G):
        raise ValueError("output perturbation needs a finite gradient_bound")
    return 2.0 * G / (objective.n * mu) if rule == "derived" else 2.0 * G / mu


def output_perturbation_source(rule: str = "derived") -> Source:
    """The citation of an output-perturbation result for its sensitivity ``rule``:
    :data:`OUTPUT_PERTURBATION_SOURCE` (DERIVED) or
    :data:`OUTPUT_PERTURBATION_LECTURE_SOURCE` (VERBATIM)."""
    rule = check_choice("rule", rule, ("derived", "lecture"))
    return OUTPUT_PERTURBATION_SOURCE if rule == "derived" else OUTPUT_PERTURBATION_LECTURE_SOURCE


@notation_keywords()
def output_perturbation(objective: ObjectiveProtocol, *, epsilon: float, delta: float,
                        sensitivity_rule: str = "derived", mechanism: str = "analytic",
                        trials: int = 1, seed: Any = None,
                        trace: str | None = "auto", noise: str = "float") -> SimulationResult:
    r"""Output perturbation (Kamath Lemma 1): :math:`\hat\theta=\arg\min F+N(0,\sigma^2I)`.

    ``mechanism="analytic"`` (Balle & Wang) or ``"classic"``
    (:math:`\sigma=\Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`, requires
    :math:`\varepsilon<1`). The trace has one column: the suboptimality of the output.
    The result's ``source`` follows ``sensitivity_rule``: DERIVED for ``"derived"``
    (:math:`2G/(n\mu)`, ours), VERBATIM for ``"lecture"`` (Lemma 1's printed
    :math:`2n/\lambda`); see :func:`output_perturbation_source`.

    ``noise="grid"`` releases :math:`2^{-j}(\operatorname{round}(2^j\theta^*) + Z)` with
    exact discrete Gaussian :math:`Z` (:mod:`dpbounds.algorithms._grid`; the float release's
    last bits leak :math:`\theta^*`, Mironov 2012). It is accounted as what it is proved to
    be: :math:`u^2/(2\sigma_u^2)`-zCDP, :math:`u = 2^j\Delta + \sqrt d` grid units (Canonne,
    Kamath & Steinke 2020), converted by the tight RDP conversion (their Proposition 12), not
    as a continuous Gaussian's PLD, so its :math:`\sigma` is larger than the float one's.

    Both options release the solver's minimiser :math:`\hat\theta` (``f.optimum``), and
    :math:`\Delta` is the exact minimiser's sensitivity: :math:`\hat\theta` is within
    :math:`\|\nabla F(\hat\theta)\|/\mu` of it (strong convexity). The grid option
    covers that (DERIVED): it requires :math:`\|\nabla F(\hat\theta)\|\le\tau =
    10^{-3}\mu\Delta/2` (a public tolerance; ``ValueError`` otherwise), checked on the
    computed norm plus its float error :math:`nuG` (``f.optimum.grad_norm``; at machine
    precision for the package's solvers, 1e-17 at n = 10^4), so neighbours' minimisers differ
    by at most :math:`\Delta(1+10^{-3})`, the sensitivity its noise is calibrated for. The
    guarantee is conditional on the solver meeting the tolerance on every data set (the
    refusal itself depends on the data), and since :math:`nuG\le\tau` needs
    :math:`n\lesssim 3\cdot10^6`, larger data sets are refused. The float option does not
    add it (a simulation release; its last bits leak anyway).
    """
    f = objective
    xp = f.xp
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(f, "output_perturbation", epsilon)
    trials = check_trials(trials)
    delta = check_probability("delta", delta)
    mechanism = check_choice("mechanism", mechanism, ("analytic", "classic"))
    sens = output_perturbation_sensitivity(f, sensitivity_rule)
    private = math.isfinite(epsilon)
    if private:  # said where the objective took its G (and so the noise) from the data
        calibration_constant(f, "gradient_bound", "output_perturbation")
    ro = Neighbouring.REPLACE_ONE
    ledger = PrivacyLedger(ro)
    if private:
        # exact Gaussian accounting (PLD's closed form); the analytic sigma is its fast path,
        # the classic one a looser closed form the accountant verifies
        closed = (None if mechanism == "analytic"
                  else float(classic_gaussian_sigma(epsilon, delta, sens)))
        sigma = calibrate(lambda s: GaussianMechanism(s, sens, ro), epsilon, delta, "pld",
                          neighbouring=ro, closed_form=closed)
        ledger.record(GaussianMechanism(sigma, sens, ro))
    else:
        sigma = 0.0
    noise = check_noise(noise, xp)
    _, stream = make_streams(seed, trials, xp)
    grid = None
    if noise == "grid" and sigma > 0:
        grid_sens = _solver_tolerant_sensitivity(f, sens)
        grid, entry, sigma = gaussian_grid(stream, grid_sens, sigma, f.d, 1, epsilon, delta,
                                           ro, xp, conversion="tight", summands=f.n)
        ledger = PrivacyLedger(ro)
        ledger.record(entry)
        privacy = RunPrivacy(ledger, epsilon, delta, "zcdp", sens, {"conversion": "tight"},
                             description="discrete Gaussian on a grid (zCDP, tight conversion)"
                                         f" ({sensitivity_rule})")
    else:
        privacy = RunPrivacy(ledger, epsilon, delta, "pld", sens,
                             description=f"{mechanism} Gaussian mechanism ({sensitivity_rule})")
    theta = f.initial_state(trials, f.optimum.x)
    if grid is not None:
        theta = grid.release(0, theta)
    elif sigma > 0:
        theta = theta + stream.normal((f.d,), sigma)
    rec = TraceRecorder(f, trace)
    rec.record(theta)
    params: dict[str, Any] = dict(sigma=sigma, sensitivity=sens, rule=sensitivity_rule,
                                  noise=noise)
    if grid is not None:
        params.update(grid_bits=grid.grid_bits)
    return SimulationResult("output_perturbation", theta, rec.result(trials),
                            rec.kind or "none", privacy, params,
                            output_perturbation_source(sensitivity_rule), backend_name(xp))


#: Gradient norm at which a perturbed problem counts as solved (scipy's ``gtol`` before).
_OP_GTOL = 1e-12
#: Newton iterations before a trial is handed to scipy's trust-region solver.
_OP_NEWTON_ITERATIONS = 60
#: Target size (array elements) of one chunk's (trials x samples) temporaries.
_OP_CHUNK_ELEMENTS = 1 << 18


def _scipy_minimiser(f: Any, Delta: float, b_k: np.ndarray) -> np.ndarray:
    """One perturbed problem by scipy's exact trust region (the fallback)."""
    import scipy.optimize  # here, not at the top: 0.1-0.4 CPU-s of import
    n = f.n

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        val, g, _ = f._host_fgh(w, need_hess=False)
        return (val + Delta / (2 * n) * float(w @ w) + float(b_k @ w) / n,
                g + Delta / n * w + b_k / n)

    def hess(w: np.ndarray) -> np.ndarray:
        return f._host_fgh(w)[2] + (Delta / n) * np.eye(f.d)

    res = scipy.optimize.minimize(fun, np.zeros(f.d), jac=True, hess=hess,
                                  method="trust-exact", options={"gtol": _OP_GTOL})
    return np.asarray(res.x, dtype=float)


def _perturbed_minimisers(f: Any, Delta: float, b: np.ndarray) -> np.ndarray:
    r"""Minimisers of :math:`F(\theta) + \frac{\Delta}{2n}\|\theta\|^2 + b_k^T\theta / n`
    for every trial ``k`` (the average form of the perturbed objective).

    Damped Newton on all trials of a chunk at once (Armijo backtracking per trial; strongly
    convex for ``Delta > 0`` or an ``l2`` term), to the gradient norm ``1e-12`` (scipy's
    ``gtol`` of the per-trial solver used before, which it replaces: ~20x less CPU on the
    audit's Huber SVM). A trial that has not converged after 60 iterations, or whose Newton
    systems are singular, is solved by scipy's exact trust region as before. Every operation
    is row by row (``einsum``, no BLAS blocking), and a converged trial is frozen, so trial
    ``k``'s result does not depend on the other trials or on how many there are.
    """
    npx = get_namespace("numpy")
    A = np.asarray(f.features_np, dtype=float)
    y = np.asarray(f.labels_np, dtype=float)
    n, d = A.shape
    K = b.shape[0]
    c = Delta / n
    out = np.zeros((K, d))
    chunk = max(1, _OP_CHUNK_ELEMENTS // max(n * d, d * d))
    fallback: list[int] = []

    def value_grad(W: np.ndarray, bn: np.ndarray, hess: bool
                   ) -> tuple[np.ndarray, np.ndarray, Any]:
        Z = np.einsum("kj,nj->kn", W, A) * y
        reg = [f._reg_host(w) for w in W]
        val = (np.mean(f._psi(npx, Z), axis=1) + np.array([r[0] for r in reg])
               + 0.5 * c * np.einsum("kj,kj->k", W, W) + np.einsum("kj,kj->k", bn, W))
        G = (np.einsum("kn,nj->kj", f._dpsi(npx, Z) * y, A) / n
             + np.array([r[1] for r in reg]).reshape(W.shape) + c * W + bn)
        if not hess:
            return val, G, None
        H = np.einsum("kn,ni,nj->kij", f._d2psi(npx, Z), A, A) / n
        diag = np.array([r[2] for r in reg]).reshape(W.shape) + c
        H[:, np.arange(d), np.arange(d)] += diag
        return val, G, H

    for c0 in progress(range(0, K, chunk), desc="objective perturbation"):
        idx = np.arange(c0, min(K, c0 + chunk))
        W = np.zeros((idx.size, d))
        bn = b[idx] / n
        active = np.ones(idx.size, dtype=bool)
        for _ in range(_OP_NEWTON_ITERATIONS):
            rows = np.flatnonzero(active)
            if rows.size == 0:
                break
            val, G, H = value_grad(W[rows], bn[rows], True)
            solved = np.linalg.norm(G, axis=1) < _OP_GTOL
            active[rows[solved]] = False
            keep = ~solved
            rows, val, G, H = rows[keep], val[keep], G[keep], H[keep]
            if rows.size == 0:
                break
            try:
                step = np.linalg.solve(H, G[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                break  # a singular system: these trials go to scipy
            slope = np.einsum("kj,kj->k", G, step)
            t = np.ones(rows.size)
            pending = np.ones(rows.size, dtype=bool)
            for _ in range(40):
                p = np.flatnonzero(pending)
                if p.size == 0:
                    break
                trial_w = W[rows[p]] - t[p, None] * step[p]
                v_new = value_grad(trial_w, bn[rows[p]], False)[0]
                # Armijo, with a rounding slack: near the minimum the decrease is below the
                # objective's own rounding, and the full Newton step is then the right one
                ok = v_new <= val[p] - 1e-4 * t[p] * slope[p] + 1e-14 * np.maximum(
                    1.0, np.abs(val[p]))
                W[rows[p[ok]]] = trial_w[ok]
                pending[p[ok]] = False
                t[p[~ok]] *= 0.5
            stuck = rows[pending]
            active[stuck] = False
            fallback.extend(int(idx[r]) for r in stuck)
        fallback.extend(int(idx[r]) for r in np.flatnonzero(active))
        out[idx] = W
    for k in fallback:
        out[k] = _scipy_minimiser(f, Delta, b[k])
    return out


#: The noise options :func:`objective_perturbation` offers (``noise="grid"`` is refused, see
#: its docstring); read by :func:`dpbounds.audit.registry.grid_audit_names`.
OBJECTIVE_PERTURBATION_NOISE: tuple[str, ...] = ("float",)


@notation_keywords()
def objective_perturbation(objective: MarginLossObjective, *, epsilon: float, delta: float,
                           trials: int = 1, seed: Any = None,
                           trace: str | None = "auto", noise: str = "float") -> SimulationResult:
    r"""Gaussian objective perturbation (see the module docstring) for margin-loss GLMs.

    Needs ``objective.psi_curvature`` and ``objective.l2_radius`` (``λ_H``) and a finite
    ``gradient_bound`` (``ζ``); the perturbed problems are solved on the host.

    ``noise``: ``"float"`` only (a simulation of the real-valued mechanism). What is
    released is the minimiser :math:`\theta` itself, and the noise :math:`b` enters the
    objective, not the output. ``noise="grid"`` is refused (ValueError), because no sound
    accounting of a grid :math:`b` exists (DERIVED here): in the sum form the minimiser
    satisfies :math:`b = -\nabla\mathcal L_D(\theta) - \Delta\theta` with
    :math:`\mathcal L_D=\sum_i\ell_i+nR`, so :math:`\theta` determines :math:`b` for a
    given :math:`D`. Kifer, Smith & Thakurta's proof is a change of variables from
    :math:`b`'s *density* to :math:`\theta`'s (Jacobian bounded via :math:`\lambda_H` and
    :math:`\Delta`); with :math:`b` on a grid :math:`\gamma\mathbb Z^d` the output is
    supported on :math:`S_D=\{\theta:\nabla\mathcal L_D(\theta)+\Delta\theta\in
    \gamma\mathbb Z^d\}`, and for a neighbour :math:`D'` (record :math:`z` replaced by
    :math:`z'`) :math:`\theta\in S_{D'}` needs :math:`\nabla\ell(\theta;z)-
    \nabla\ell(\theta;z')\in\gamma\mathbb Z^d`, which fails for generic data: the
    output then names the data set with probability 1 (no :math:`(\varepsilon,\delta)`
    with :math:`\delta<1`). Snapping the computed minimiser to a grid afterwards would be
    post-processing only of the exact real-valued minimiser; the solver's residual and the
    float :math:`b`'s own discreteness make the computed one differ, with no bound on how
    often that changes the rounding, so it is not offered either. For a release-safe
    minimiser use :func:`output_perturbation` with ``noise="grid"``.
    """
    f = objective
    xp = f.xp
    if check_noise(noise, xp) == "grid":
        raise ValueError("noise='grid' is not available for objective_perturbation: the noise "
                         "enters the objective and the released minimiser determines it "
                         "(b = -grad L_D(theta) - Delta theta), so a grid b puts the output on "
                         "a data-dependent countable set (neighbours' sets generally disjoint: "
                         "no (eps, delta < 1) guarantee); use output_perturbation(..., "
                         "noise='grid') for a release-safe minimiser")
    epsilon = check_epsilon(epsilon)
    check_own_record_losses(f, "objective_perturbation", epsilon)
    trials = check_trials(trials)
    delta = check_probability("delta", delta)
    if not f.convex:
        raise ValueError("objective perturbation needs a convex objective")
    if not hasattr(f, "psi_curvature"):
        raise ValueError("objective perturbation needs a margin-loss GLM (rank-one Hessians)")
    private = math.isfinite(epsilon)
    # said where the objective took zeta and the radius (its noise) from the data
    zeta = (calibration_constant(f, "gradient_bound", "objective_perturbation") if private
            else f.gradient_bound)
    lam_h = f.psi_curvature * f.l2_radius**2
    sigma = zeta * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon \
        if private else 0.0
    Delta = 2.0 * lam_h / epsilon if private else 0.0
    _, stream = make_streams(seed, trials, xp)
    b = to_numpy(stream.normal((f.d,), sigma)) if sigma > 0 else np.zeros((trials, f.d))
    theta_np = _perturbed_minimisers(f, Delta, b)
    theta = xp.asarray(theta_np)
    rec = TraceRecorder(f, trace)
    rec.record(theta)
    ledger = PrivacyLedger(Neighbouring.REPLACE_ONE)
    if private:  # a guarantee by theorem: no finer accountant applies
        ledger.record(ApproxDpMechanism(epsilon, delta, Neighbouring.REPLACE_ONE,
                                        "Kifer-Smith-Thakurta 2012 Theorem 2"))
    privacy = RunPrivacy(ledger, epsilon, delta, "basic", 2.0 * zeta,
                         description="Kifer-Smith-Thakurta 2012 Theorem 2")
    return SimulationResult("objective_perturbation", theta, rec.result(trials),
                            rec.kind or "none", privacy,
                            dict(sigma=sigma, Delta=Delta, zeta=zeta, lambda_H=lam_h,
                                 noise="float"),
                            OBJECTIVE_PERTURBATION_SOURCE, backend_name(xp))


# the audits list it among the algorithms with a grid option only if it offers one
objective_perturbation.noise_options = OBJECTIVE_PERTURBATION_NOISE  # type: ignore[attr-defined]
