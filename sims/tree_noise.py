r"""Tree-aggregation noise of Tran & Cutkosky's Algorithm 1 against Lemma 12.

DERIVED Lemma 12: :math:`\hat m_t-m_t=\sum_{[a,b]\in\mathrm{COMPOSE}(1,t)}(1-\alpha)^{t-b}
\zeta_{[a,b]}` is Gaussian with per-coordinate variance
:math:`\sigma^2\sum(1-\alpha)^{2(t-b)}\le(\lfloor\log_2t\rfloor+1)\sigma^2`, hence
:math:`\mathbb E\lVert\hat m_t-m_t\rVert\le\sigma\sqrt{d(1+\log_2T)}`.

We drive the online aggregator :class:`dpbounds.algorithms.tree_aggregation.TreeAggregator`
with zero inputs (so :math:`m_t=0` and the release *is* the noise) and i.i.d. node noise, and
compare at several :math:`t`:

* the per-coordinate sample variance (over trials × coordinates) with the exact variance
  computed **here, independently**, from the binary expansion of :math:`t` (COMPOSE(1, t) is
  the set of dyadic blocks of :math:`t`'s set bits, so its right ends are the partial sums of
  those bits) — equality within 5 standard errors (s.e. :math:`v\sqrt{2/(k-1)}`);
* :math:`\mathbb E\lVert\hat m_t-m_t\rVert` with the Lemma 12 bound
  (:data:`dpbounds.bounds.nonconvex.tree_momentum.lemma12`) — upper bound.
"""

from __future__ import annotations

import math

import numpy as np

from dpbounds.algorithms.tree_aggregation import TreeAggregator
from dpbounds.bounds.nonconvex import tree_momentum as tc
from sims._verdict import Verdict, equal, format_table, mean_se, upper

NAME = "tree noise vs Lemma 12"


def compose_variance(t: int, alpha: float, sigma: float) -> float:
    """sigma^2 * sum over COMPOSE(1, t) of (1-alpha)^(2(t-b)), from t's binary expansion."""
    total, end = 0.0, 0
    for bit in range(t.bit_length() - 1, -1, -1):  # blocks from the most significant bit
        if t >> bit & 1:
            end += 1 << bit
            total += (1.0 - alpha) ** (2 * (t - end))
    return sigma**2 * total


def run(quick: bool = True, seed: int = 0) -> list[Verdict]:
    trials, d = (400, 50) if quick else (4000, 50)
    T = 300
    sigma = 0.7
    rng = np.random.default_rng(seed)
    rows: list[Verdict] = []
    for alpha in (0.0, 0.05):
        tree = TreeAggregator((trials, d), alpha)
        zero = np.zeros((trials, d))
        checkpoints = {1, 2, 3, 7, 8, 100, 255, 256, T}
        for t in range(1, T + 1):
            release = tree.step(zero, rng.normal(scale=sigma, size=(trials, d)))
            if t not in checkpoints:
                continue
            v = float(np.var(release))
            k = release.size
            exact = compose_variance(t, alpha, sigma)
            case = f"α={alpha}, t={t} (popcount {bin(t).count('1')})"
            rows.append(equal(NAME, case + ": per-coord variance", v, v * math.sqrt(2 / (k - 1)),
                              exact, "binary expansion of t (independent)"))
            norms = np.linalg.norm(release, axis=1)
            m, se = mean_se(norms)
            bound = float(tc.lemma12.evaluate(sigma=sigma, d=d, T=T))
            rows.append(upper(NAME, case + ": E||m^-m||", m, se, bound,
                              "Lemma 12 σ√(d(1+log₂T))"))
    return rows


def main(quick: bool = True) -> list[Verdict]:
    rows = run(quick)
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
