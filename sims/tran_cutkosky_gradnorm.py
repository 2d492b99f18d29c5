r"""Tran & Cutkosky Algorithms 1 and 2 at the theorems' tuned hyper-parameters: progress, lemma
components, the vacuous range of the DERIVED bounds, and Algorithm 1 vs 2 at equal gradient
budget from a start in the well and from the minimiser.

Replaces the 0.1 study that ran both algorithms at a fixed step 0.01 from :math:`3\cdot\mathbf 1`
(its measured :math:`\mathbb E\lVert\nabla F(\hat x)\rVert` equalled :math:`\lVert\nabla
F(x_0)\rVert`: nothing moved, and its "<= bound" verdicts against bounds of 50-78, far above
:math:`G\approx1.1`, would have held for an algorithm that returns :math:`x_0`).

Test bed: :class:`dpbounds.objectives.HuberWell` (exactly :math:`G=1`-Lipschitz and
:math:`L=1`-smooth per sample, centres spread 0.3, minimiser 0), :math:`d=4`,
:math:`\varepsilon=8`, :math:`\delta=10^{-5}`, batch 1. Hyper-parameters: the DERIVED closed
forms of Theorem 6 / Theorem 9 with the rounding policy of :mod:`dpbounds.verify.theorems`
(nearest integer epoch count, at least 1 / 2, step re-evaluated at it).

Verdicts (all can fail):

* **progress** — from :math:`\lVert x_0\rVert=0.6` (:math:`\lVert\nabla F(x_0)\rVert=0.6`) the
  time-averaged :math:`\lVert\nabla F(x_t)\rVert` must be at most 90 % of the start's (an
  algorithm that does not move fails);
* **components** — tree noise :math:`\overline{\lVert\hat m_t-m_t\rVert}` under Lemma 12 /
  Lemma 7 **with the theorems' own noise** (Theorem 4 / 8), bias
  :math:`\overline{\lVert m_t-\nabla F(x_t)\rVert}` under Lemma 11 (averaged);
* **theorems** — :math:`\mathbb E\lVert\nabla F(\hat x)\rVert` under Theorem 6 / 9 at the run's
  own parameters; a bound :math:`\ge G` is reported **vacuous** (no claim), and the first
  :math:`N` at which the tuned bound drops below :math:`G` is computed (``== exact`` row: the
  bound equals :math:`G` there);
* **equal budget** — Algorithm 2 at its tuned :math:`E_2` uses :math:`N(2E_2-1)` gradients;
  Algorithm 1 gets the same budget (:math:`E_1=2E_2-1` epochs, its step re-evaluated at
  :math:`E_1`). From the start in the well and from the minimiser (the noise floor) the rows
  record which algorithm reaches the smaller time-averaged gradient (the finding, as a
  regression check that can fail).

Why the winner differs (reported, not hidden): Algorithm 2's momentum estimate carries the
lag-:math:`N` STORM recursion :math:`\hat m_t=\hat P_t+(1-\gamma)\hat m_{t-N}`, so its tree
noise is re-injected every epoch with weight :math:`1-\gamma\approx1`: the noise persists at
low frequency (the lemmas bound only its norm), which the normalized step follows for many
steps. The row "noise persistence" measures it: the norm of the one-epoch mean of
:math:`\hat m_t-m_t` over the mean instantaneous norm (:func:`dpbounds.verify.persistence.
tree_noise_persistence`, the noise process simulated on its own at the runs' noise levels; the
algorithms expose only its norm).
"""

from __future__ import annotations

import math

from dpbounds.bounds.registry import get
from dpbounds.verify import first_nonvacuous_n, get_study, problem
from dpbounds.verify.persistence import tree_noise_persistence
from sims._verdict import Verdict, equal, format_table, mean_se, upper

NAME = "Tran-Cutkosky Alg. 1/2"
D, EPS, DELTA = 4, 8.0, 1e-5


def _point(n: int, E: int | None = None) -> dict:
    p = dict(d=D, N=n, eps=EPS, delta=DELTA)
    if E is not None:
        p["E"] = E
    return p


def run(quick: bool = True, seed: int = 0) -> list[Verdict]:
    n, trials = (250, 6) if quick else (1000, 24)
    rows: list[Verdict] = []
    a1 = get_study("tran_cutkosky.alg1")
    a2 = get_study("tran_cutkosky.alg2")
    well = problem("huber_well").build(n, D, seed=seed)
    floor = problem("noise_floor").build(n, D, seed=seed)
    g0 = 0.6  # ||grad F(x0)|| = L ||x0|| inside the quadratic zone

    out = {}
    for key, study, inst, E in (("alg1", a1, well, None), ("alg2", a2, well, None)):
        out[key] = study.run_point(_point(n, E), inst, trials, (seed, len(out)))
    # equal gradient budget: Algorithm 1 gets Algorithm 2's N (2 E2 - 1) gradients
    e2 = int(out["alg2"]["params"]["E"])
    budget = int(out["alg2"]["params"]["gradient_evaluations"])
    e1 = 2 * e2 - 1
    out["alg1_eq"] = a1.run_point(_point(n, e1), well, trials, (seed, 10))
    out["alg1_floor"] = a1.run_point(_point(n, e1), floor, trials, (seed, 11))
    out["alg2_floor"] = a2.run_point(_point(n), floor, trials, (seed, 12))

    for key, label, thm in (("alg1", "Alg. 1", "Theorem 6"), ("alg2", "Alg. 2", "Theorem 9")):
        o = out[key]
        p = o["params"]
        m, se = mean_se(o["measured"]["grad_avg"])
        rows.append(upper(NAME, f"{label} E={p['E']}, start ||x0||=0.6: avg_t ||∇F(x_t)||",
                          m, se, 0.9 * g0, "progress: <= 90% of ||∇F(x0)|| = 0.6"))
        m, se = mean_se(o["measured"]["grad_output"])
        rows.append(upper(NAME, f"{label} E={p['E']}: E||∇F(x^)||", m, se,
                          o["bound"]["grad_output"], f"{thm} (DERIVED) at the run's E, η",
                          trivial=o["trivial"]))
        m, se = mean_se(o["measured"]["noise"])
        rows.append(upper(NAME, f"{label}: avg_t ||m^_t - m_t||", m, se, o["bound"]["noise"],
                          "Lemma 12 + Thm 4 σ" if key == "alg1" else "Lemma 7 + Thm 8 σ's"))
        m, se = mean_se(o["measured"]["bias"])
        rows.append(upper(NAME, f"{label}: avg_t ||m_t - ∇F(x_t)||", m, se,
                          o["bound"]["bias"], "Lemma 11 averaged (DERIVED)"))

    for theorem, label in (("tran_cutkosky.alg1", "Theorem 6"),
                           ("tran_cutkosky.alg2", "Theorem 9")):
        n_star = first_nonvacuous_n(theorem, dict(d=D, eps=EPS, delta=DELTA, G=1.0, L=1.0,
                                                  R=well.R))
        v = float(get(theorem).value(dict(d=D, N=n_star, eps=EPS, delta=DELTA, G=1.0, L=1.0,
                                          R=well.R)))
        rows.append(equal(NAME, f"{label} tuned: first N with bound < G is N*={n_star:.3g} "
                                f"(d={D}, ε={EPS:g}, R={well.R:.3g})", v, 0.0, 1.0,
                          "bound(N*) = G (bisection)", rtol=1e-6))

    # equal budget comparisons: the finding (Algorithm 2 wins from the start in the well,
    # Algorithm 1 at the minimiser, where Algorithm 2's re-injected tree noise sets the floor)
    # as claims that fail if the order flips beyond 5 standard errors
    for start, k1, k2, alg2_wins in (("start in the well", "alg1_eq", "alg2", True),
                                     ("start at the minimiser", "alg1_floor", "alg2_floor",
                                      False)):
        m1, s1 = mean_se(out[k1]["measured"]["grad_avg"])
        m2, s2 = mean_se(out[k2]["measured"]["grad_avg"])
        se = math.hypot(s1, s2)
        win, lose = (m2, m1) if alg2_wins else (m1, m2)
        rows.append(upper(
            NAME, f"equal budget {budget} grads, {start}: avg_t ||∇F|| Alg.1 (E={e1}) "
                  f"{m1:.3g} vs Alg.2 (E={e2}) {m2:.3g}", win, se, lose,
            "Alg. 2 <= Alg. 1" if alg2_wins else "Alg. 1 <= Alg. 2"))
    # noise persistence (low-frequency part of m^_t - m_t, one-epoch windows) at the runs'
    # own noise levels: Algorithm 2's lag-N recursion keeps its noise for many epochs
    p1, p2 = out["alg1_floor"]["params"], out["alg2_floor"]["params"]
    per1 = tree_noise_persistence(n=n, epochs=int(p1["E"]), d=D, alpha=p1["alpha"],
                                  sigma=p1["sigma"], trials=trials, seed=(seed, 20))
    per2 = tree_noise_persistence(n=n, epochs=int(p2["E"]), d=D, alpha=1.0 / n,
                                  sigma_1=p2["sigma_1"], sigma_2=p2["sigma_2"],
                                  gamma=p2["gamma"], trials=trials, seed=(seed, 21))
    rows.append(upper(NAME, f"noise persistence ||mean over an epoch||/||m^_t - m_t||: Alg. 1 "
                            f"{per1['persistence']:.3g} vs Alg. 2 {per2['persistence']:.3g} "
                            f"(white {per1['white']:.3g})", per1["persistence"], 0.0,
                      per2["persistence"], "Alg. 1 <= Alg. 2 (the finding)"))
    m, se = mean_se(out["alg1_floor"]["measured"]["grad_avg"])
    rows.append(upper(NAME, "Alg. 1 from the minimiser: avg_t ||∇F(x_t)|| (noise floor)", m, se,
                      out["alg1_floor"]["bound"]["grad_avg"], "Theorem 6 at R = 0",
                      trivial=1.0))
    return rows


def main(quick: bool = True) -> list[Verdict]:
    rows = run(quick)
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
