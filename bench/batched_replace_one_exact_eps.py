"""Exact epsilon of the replace-one batched audit pair (``dp_sgd_batched``, sampling without
replacement, n = 40, B = 20, q = 1/2, T = 5) against its RDP claim (issue 34, ``noise_over_n``).

The pair's transcript law is the audit's declared model (:func:`dpbounds.audit.settings.sgd.
sampled_model`): every release is (1 - q) N(m_out, s^2 I) + q N(m_in, s^2 I), all means on
u = (1, -1, 1, -1) / 2, so the privacy loss is that of the projections on u. delta(eps) =
E_P[(1 - exp(eps - L))_+] of the composed loss L is estimated by Monte Carlo (both orders of
the pair; the larger eps at delta is printed) for the correct noise s, for s / 2
(``noise_over_n``: mu x n / B = 2) and s / 4 (the pair's ``mutant_factor``). For comparison:
dp_accounting's Poisson subsampled-Gaussian PLD under REPLACE_ONE (sensitivity C = 1 in its
convention: |x - x'| <= 2) at the same q, noise and steps. That PLD is for Poisson sampling;
whether it bounds sampling without replacement is not settled here.

Usage: ``PYTHONPATH=$PWD python bench/batched_replace_one_exact_eps.py`` (about 30 CPU-s).
"""

from __future__ import annotations

import time

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_module
from scipy.optimize import brentq
from scipy.special import logsumexp

from dpbounds.audit.registry import AUDITS, REPLACE_ONE
from dpbounds.audit.settings.sgd import sampled_model

DELTA, RUNS = 0.05, 2_000_000


def main() -> None:
    t0 = time.process_time()
    spec = AUDITS["dp_sgd_batched"]
    setting = spec.build(REPLACE_ONE, spec.epsilon, spec.delta)
    res = spec.function(setting.pair[0], **{**setting.kwargs, "trials": 1, "seed": 0})
    model = sampled_model(setting, res)
    assert model is not None
    sigma = float(res.privacy.ledger.entries[0][0].sigma)
    u = np.array([1.0, -1.0, 1.0, -1.0]) / 2.0
    a = [float(np.asarray(m) @ u) for m in model.means_d]
    b = [float(np.asarray(m) @ u) for m in model.means_dprime]
    q, steps = model.q, model.steps

    def exact(s: float, seed: int = 1) -> float:
        rng = np.random.default_rng(seed)

        def logpdf(y: np.ndarray, means: list[float]) -> np.ndarray:
            return logsumexp(np.stack([np.log1p(-q) - (y - means[0]) ** 2 / (2 * s * s),
                                       np.log(q) - (y - means[1]) ** 2 / (2 * s * s)]), axis=0)

        out = []
        for p, r in ((a, b), (b, a)):
            loss = np.zeros(RUNS)
            for _ in range(steps):
                y = np.where(rng.random(RUNS) < q, p[1], p[0]) + s * rng.standard_normal(RUNS)
                loss += logpdf(y, p) - logpdf(y, r)
            def excess(e: float, loss: np.ndarray = loss) -> float:
                return float(np.mean(np.clip(-np.expm1(e - loss), 0, None))) - DELTA

            out.append(brentq(excess, 0.0, 30.0))
        return max(out)

    print(f"dp_sgd_batched replace-one: q = {q}, sigma (sum) = {sigma:.4f}, s (mean) = "
          f"{model.s:.4f}, means on u: D {a}, D' {b}; claim (RDP) {spec.epsilon:g}")
    for label, factor in (("correct", 1.0), ("noise_over_n (s / 2)", 0.5),
                          ("mutant_factor (s / 4)", 0.25)):
        pld = pld_module.from_gaussian_mechanism(
            standard_deviation=sigma * factor, sensitivity=1.0, sampling_prob=q,
            value_discretization_interval=1e-4,
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        ).self_compose(steps)
        print(f"{label}: exact eps at delta {DELTA:g} (Monte Carlo, {RUNS} runs) "
              f"{exact(model.s * factor):.3f}; Poisson REPLACE_ONE PLD "
              f"{pld.get_epsilon_for_delta(DELTA):.3f}")
    print(f"CPU {time.process_time() - t0:.1f} s")


if __name__ == "__main__":
    main()
