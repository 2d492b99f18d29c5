r"""DP-NAG and DP-MASG on a quadratic against Theorem 4.1's recursion (28) and the exact error.

Kuru et al. Theorem 4.1 (VERBATIM): :math:`E_t\le(1-\sqrt{\mu\alpha})E_{t-1}+\alpha(1+\alpha L)
(b_t^2d+\sigma_s^2/2)` with :math:`E_t=\mathbb E F(x_t)-F^\ast`; Theorem 4.3 adds a factor 2 at
each MASG stage change. We run the real algorithms (:func:`~dpbounds.algorithms.dp_nag`,
:func:`~dpbounds.algorithms.dp_nag_opt` with Prop. 4.2's budgets,
:func:`~dpbounds.algorithms.dp_masg`
without momentum restart) on :math:`F=\frac12\sum_i\lambda_ix_i^2`, full batch
(:math:`\sigma_s=0`), and compare the Monte Carlo :math:`\mathbb E[F(x_T)]-F^\ast` with

* the recursion (28)/(34) iterated with the run's own Laplace scales
  (:func:`dpbounds.bounds.strongly_convex.nesterov.nesterov_recursion`) — an upper bound;
* the exact value from propagating the 2x2 covariance per eigenvalue
  (:func:`dpbounds.bounds.strongly_convex.nesterov.nesterov_expected_error_quadratic`,
  DERIVED) — equality.
"""

from __future__ import annotations

import numpy as np

from dpbounds.algorithms import dp_masg, dp_nag, dp_nag_opt
from dpbounds.bounds.strongly_convex.nesterov import (
    Schedule,
    nesterov_expected_error_quadratic,
    nesterov_momentum,
    nesterov_recursion,
)
from dpbounds.objectives import QuadraticObjective
from sims._verdict import Verdict, equal, format_table, mean_se, upper

NAME = "DP-NAG vs Thm 4.1"
MU, L, D = 0.1, 1.0, 4


def run(quick: bool = True, seed: int = 0) -> list[Verdict]:
    eigs = np.linspace(MU, L, D)
    f = QuadraticObjective(eigs)
    x0 = np.ones(D)
    E0 = float(0.5 * np.sum(eigs * x0**2))
    trials = 3000 if quick else 30000
    T = 60
    S1 = 0.02  # Laplace scale b_t = S1 / eps_t (n = m = 1)
    alpha = 1.0 / L
    runs = {
        "DP-NAG uniform": dp_nag(f, epsilon=1.0, steps=T, step_size=alpha,
                                 momentum=float(nesterov_momentum(alpha, MU)), sensitivity=S1,
                                 trials=trials, seed=(seed, 0), x0=x0),
        "DP-NAG-opt (Prop. 4.2)": dp_nag_opt(f, epsilon=1.0, steps=T, step_size=alpha,
                                             momentum=float(nesterov_momentum(alpha, MU)),
                                             sensitivity=S1, horizon_reselection=False,
                                             trials=trials, seed=(seed, 1), x0=x0),
        "DP-MASG (no restart)": dp_masg(f, epsilon=1.0, steps=2 * T, sensitivity=S1,
                                        restart=False, trials=trials, seed=(seed, 2), x0=x0),
    }
    rows: list[Verdict] = []
    for label, r in runs.items():
        steps = np.asarray(r.params["step_sizes"], dtype=float)
        stages = np.asarray(r.params.get("stages", np.ones(steps.size, dtype=np.int64)))
        lengths = tuple(int(np.sum(stages == s)) for s in np.unique(stages))
        sched = Schedule(steps, stages, lengths, "MASG" if "MASG" in label else "NAG")
        if not np.allclose(r.params["momenta"], sched.momenta(MU)):
            raise RuntimeError(f"{label}: the run's momenta differ from Nesterov's")
        b = np.asarray(r.params["laplace_scales"], dtype=float)
        bound = nesterov_recursion(sched, MU, L, E0, b, D)[-1]
        exact = nesterov_expected_error_quadratic(sched, MU, eigs, 2 * b**2, x0)[-1]
        m, se = mean_se(r.final)
        case = f"{label}, T={r.steps}"
        rows.append(upper(NAME, case, m, se, bound, "recursion (28)/(34)"))
        rows.append(equal(NAME, case, m, se, exact, "exact covariance propagation"))
    return rows


def main(quick: bool = True) -> list[Verdict]:
    rows = run(quick)
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
