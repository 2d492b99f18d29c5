"""Your own smooth loss on your own arrays: run DP heavy ball on it and tune it privately.

    python examples/own_loss.py

A ridge pseudo-Huber regression, sqrt(1 + (a^T x - b)^2) - 1 + lam/2 ||x||^2, written as a
:class:`dpbounds.objectives.Objective`: the per-sample losses and gradients (``idx`` picks a
mini-batch per trial), the regulariser, and the constants the algorithms calibrate by. Every
constant is computed from the **declared domain** of the data (rows of L2 norm at most
``row_radius``, enforced by clipping the rows when the objective is built: a rule fixed
before the data are seen) and from ``lam``, never from the records themselves, and the class
says so in ``PUBLIC_CONSTANTS``: a private selection refuses a run that reads a constant a
class of one's own computes unless it is listed there (or the runs are given a public
``sensitivity=``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.objectives import Objective, Optimum
from dpbounds.tuning import select_privately


class PseudoHuberRidge(Objective):
    """``mean_i sqrt(1 + (a_i^T x - b_i)^2) - 1 + lam/2 ||x||^2``, rows clipped to
    ``row_radius`` (the declared domain)."""

    name = "pseudo_huber_ridge"
    # computed from row_radius, lam and d only (public): the author's word, which a private
    # selection takes (a property of one's own class is otherwise refused there)
    PUBLIC_CONSTANTS = ("smoothness", "strong_convexity", "gradient_bound", "l1_sensitivity",
                        "l2_sensitivity")

    def __init__(self, features, targets, lam: float = 0.05, row_radius: float = 1.0):
        a = np.asarray(features, dtype=float)
        norms = np.linalg.norm(a, axis=1, keepdims=True)
        a = a * np.minimum(1.0, row_radius / np.maximum(norms, 1e-300))  # the domain, enforced
        super().__init__(a.shape[0], a.shape[1], np)
        self.a, self.b = a, np.asarray(targets, dtype=float)
        self.lam, self.row_radius = float(lam), float(row_radius)

    def _residuals(self, x, idx):
        if idx is None:  # x: (trials, d); all samples: (trials, n)
            return x @ self.a.T - self.b[None, :], self.a[None]
        a = self.a[idx]  # idx: (trials, m) -> (trials, m, d)
        return np.einsum("tmd,td->tm", a, x) - self.b[idx], a

    def sample_losses(self, x, idx=None):
        r, _ = self._residuals(x, idx)
        return np.sqrt(1.0 + r * r) - 1.0

    def sample_grads(self, x, idx=None):
        r, a = self._residuals(x, idx)
        return (r / np.sqrt(1.0 + r * r))[..., None] * a  # |psi'| <= 1

    def regularizer(self, x):
        return 0.5 * self.lam * np.sum(x * x, axis=1)

    def regularizer_grad(self, x):
        return self.lam * x

    @property
    def smoothness(self) -> float:  # psi'' <= 1, ||a|| <= row_radius
        return self.row_radius**2 + self.lam

    @property
    def strong_convexity(self) -> float:
        return self.lam

    @property
    def gradient_bound(self) -> float:  # of one sample's data gradient
        return self.row_radius

    @property
    def l1_sensitivity(self) -> float:  # Kuru et al. eq. (10): 2 sup ||grad||_1
        return 2.0 * math.sqrt(self.d) * self.row_radius

    @property
    def l2_sensitivity(self) -> float:
        return 2.0 * self.row_radius

    def _solve(self) -> Optimum:
        def f(x):
            return float(self.loss(x[None])[0])

        def g(x):
            return self.grad(x[None])[0]

        r = minimize(f, np.zeros(self.d), jac=g, method="L-BFGS-B",
                     options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
        return Optimum(r.x, float(r.fun), float(np.linalg.norm(g(r.x))), "L-BFGS-B")


def main(n: int = 2000, d: int = 5, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, d)) / math.sqrt(d)
    b = a @ rng.standard_normal(d) + 0.3 * rng.standard_t(3, size=n)
    f = PseudoHuberRidge(a, b)
    run = dp_heavy_ball(f, epsilon=1.0, steps=20, step_size=0.5, momentum=0.3, trials=8,
                        seed=1)
    gap = f.suboptimality(run.x)
    print(f"DP heavy ball at eps = 1: F(x_T) - F* = {gap.mean():.4g} (8 runs)")
    # tuned on the private data itself: each run at eps 0.5, the whole selection's eps printed
    sel = select_privately(dp_heavy_ball, f, {"step_size": [0.25, 0.5, 1.0], "steps": [10, 20]},
                           epsilon=0.5, score_epsilon=0.1, loss_bound=5.0, momentum=0.3,
                           seed=None)
    print(f"selected privately: {sel.best}, the whole selection eps = {sel.epsilon:.3g}, "
          f"delta = {sel.delta:.2g}")


if __name__ == "__main__":
    main()
