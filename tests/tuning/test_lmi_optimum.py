"""The LMI-class heavy-ball tuner against an independent brute-force oracle (issue 19, item 2).

The objective is f(alpha, beta) = ``_lmi_best(...)[0]`` (the derived Prop. 3.4 bound at its best
horizon and certified rate; no certificate = inf), the function ``tune_heavy_ball(...,
function_class="smooth_strongly_convex")`` minimises over its box: log alpha in
[log(0.001/L), log(1.5/L)], y = -log(1 - beta) in [0, log 200]. The oracle below is this
file's own search (a grid over the box, then nested zoom grids around its best local minima);
it shares with the tuner only the objective and the box. Evaluations are memoised (one point
costs ~10-50 ms of SDPs), so the tuner runs at several ``grid`` sizes cost little more than
one; for speed the tuner runs on a coarser lattice (``_LMI_LATTICE = 256``: its last step is
~0.03 in log alpha instead of ~0.001), the same search otherwise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpbounds.tuning.heavy_ball as hb
from dpbounds.bounds.strongly_convex.gradient_noise import dp_noise_level
from dpbounds.lmi.heavy_ball_lmi import HeavyBallLMI
from dpbounds.tuning import tune_heavy_ball

# (kappa, eps, d, n, S1, E0, max_horizon): kappa 1..1e3, small horizons
PROBLEMS = [(2.0, 10.0, 5, 10**4, 1.0, 1.0, 60), (1e3, 10.0, 10, 10**5, 1.0, 1.0, 100)]
ORACLE_GRID, ZOOM, LEVELS, STARTS = 9, 5, 3, 2
X0, WX, WY = hb._lmi_box(1.0)  # the tuner's box (L = 1): its only input from the tuner
REL = 1e-3  # the tolerance: tuned within 0.1% of the oracle

_ORIGINAL = hb._lmi_best
_MEMO: dict[tuple, object] = {}


def _memo_lmi_best(mu, L, a, b, noise, Tmax, dist_sq, gap0, lmi):
    """The objective, memoised (the noise function is keyed by its values)."""
    key = (mu, L, a, b, Tmax, dist_sq, gap0, float(noise(1)), float(noise(Tmax)))
    if lmi.solves:  # a solver carrying state from earlier solves: not the function f
        raise AssertionError("the tuner must evaluate each point with a fresh solver")
    if key not in _MEMO:
        _MEMO[key] = _ORIGINAL(mu, L, a, b, noise, Tmax, dist_sq, gap0, lmi)
    return _MEMO[key]


@pytest.fixture(scope="module", autouse=True)
def _memoised():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hb, "_lmi_best", _memo_lmi_best)
        mp.setattr(hb, "_LMI_LATTICE", 256)
        yield


def _objective(p):
    kappa, eps, d, n, S, E0, Tmax = p
    mu, L = 1.0 / kappa, 1.0

    def noise(T):
        return dp_noise_level(S, d, n, n, eps, T)

    def f(alpha, beta):
        r = hb._lmi_best(mu, L, alpha, beta, noise, Tmax, 2.0 * E0 / mu, E0,
                         HeavyBallLMI(backend="clarabel"))
        return math.inf if r is None else r[0]

    return f


def _tune(p, grid):
    kappa, eps, d, n, S, E0, Tmax = p
    return tune_heavy_ball(1.0 / kappa, 1.0, d=d, n=n, epsilon=eps, sensitivity=S,
                           initial_gap=E0, max_horizon=Tmax, grid=grid,
                           function_class="smooth_strongly_convex")


def _oracle(f):
    """Brute force over the box: a grid, then zooms (spacing halved each level) around the
    best local minima of the grid; the smallest value seen and all the points evaluated."""
    xr, yr = (X0, X0 + WX), (0.0, WY)
    seen = {}

    def F(x, y):
        x, y = float(np.clip(x, *xr)), float(np.clip(y, *yr))
        if (x, y) not in seen:
            seen[(x, y)] = f(math.exp(x), -math.expm1(-y))
        return seen[(x, y)], x, y

    # the grid by the tuner's arithmetic, so that the memo shares its points with the tuner's
    xs = [X0 + WX * i / (ORACLE_GRID - 1) for i in range(ORACLE_GRID)]
    ys = [WY * i / (ORACLE_GRID - 1) for i in range(ORACLE_GRID)]
    G = np.array([[F(x, y)[0] for y in ys] for x in xs])
    pad = np.pad(G, 1, constant_values=np.inf)
    local = sorted((G[i, j], i, j) for i in range(ORACLE_GRID) for j in range(ORACLE_GRID)
                   if np.isfinite(G[i, j]) and G[i, j] <= pad[i:i + 3, j:j + 3].min())
    for _, i, j in local[:STARTS]:
        cx, cy, hx, hy = xs[i], ys[j], xs[1] - xs[0], ys[1] - ys[0]
        for _ in range(LEVELS):
            _, cx, cy = min(F(cx + u, cy + v) for u in np.linspace(-hx, hx, ZOOM)
                            for v in np.linspace(-hy, hy, ZOOM))
            hx, hy = hx / 2, hy / 2
    return min(seen.values()), seen


#: the grids compared per problem: every size on the small problem; on the kappa = 1e3 one, whose
#: fresh SDPs dominate the suite's CPU, the coarsest and the default-like 12 (CI time)
GRIDS = {PROBLEMS[0]: (6, 9, 12, 17), PROBLEMS[1]: (6, 12)}


@pytest.mark.parametrize("p", PROBLEMS)
def test_tuner_matches_the_oracle_and_a_finer_grid_is_never_worse(p):
    """One test per problem (the memo then serves the oracle, the four grids and the control
    in one process: CI time). The tuner at ``grid=12`` is within 0.1% of the oracle and its
    value is f at its point; finer grids (``GRIDS``) never get worse; negative control: a crippled
    tuner (the best point of its grid, no local search) is caught where recorded in
    ``CRIPPLED_CAUGHT`` (both problems, measured)."""
    best, _ = _oracle(_objective(p))
    assert math.isfinite(best)
    values = {g: _tune(p, grid=g) for g in GRIDS[p]}
    res = values[12]
    assert res.tuned.bound <= best * (1 + REL)
    # not below what it can certify: f re-evaluated (no memo) at the reported point
    kappa, eps, d, n, S, E0, Tmax = p
    again = _ORIGINAL(1.0 / kappa, 1.0, res.tuned.alpha, res.tuned.beta,
                      lambda T: dp_noise_level(S, d, n, n, eps, T), Tmax, 2.0 * E0 * kappa,
                      E0, HeavyBallLMI(backend="clarabel"))
    assert again is not None
    assert again[0] == pytest.approx(res.tuned.bound, rel=1e-9)
    assert (again[1], again[2]) == (res.tuned.horizon, pytest.approx(res.tuned.rate, rel=1e-12))
    bounds = [values[g].tuned.bound for g in GRIDS[p]]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(bounds, bounds[1:])), bounds
    # the negative control's crippled tuner: the best point of its grid, no local search
    f = _objective(p)
    N = hb._LMI_LATTICE
    step = N // (hb._lmi_grid_size(12) - 1)
    crippled = min(f(math.exp(X0 + WX * i / N), -math.expm1(-WY * j / N))
                   for i in range(0, N + 1, step) for j in range(0, N + 1, step))
    assert (crippled > best * (1 + REL)) == CRIPPLED_CAUGHT[p], (crippled, best)


#: whether the crippled tuner is caught, per problem (measured: 1.16x and 1.37x the oracle);
#: the per-problem test above asserts it, so the control fails if the crippled tuner stops
#: being caught (or the oracle gets as coarse as it)
CRIPPLED_CAUGHT = {PROBLEMS[0]: True, PROBLEMS[1]: True}
