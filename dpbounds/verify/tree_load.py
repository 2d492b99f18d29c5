r"""Node loads of Algorithms 1 and 2's trees, computed independently of
:mod:`dpbounds.privacy.tree`.

The ledger of Tran & Cutkosky's Algorithm 1 charges ``K`` formed nodes per sample
(:func:`~dpbounds.algorithms.tree_momentum.algorithm_1_node_count`, ``K_f`` of
:func:`~dpbounds.privacy.tree.max_formed_node_load`). A study that recomputes its expected sigma
with the same helper cannot see a wrong count there, so the tree studies check the count with
the oracles of this module, which share no code with the package's counters:

* :func:`formed_load_brute_force` — the worst case over every placement of one sample's
  occurrences (one step per epoch) of the number of formed nodes
  :math:`F_b=[b-\mathrm{lowbit}(b)+1,b]` holding an occurrence, by enumeration of the nodes
  as intervals (tiny cases only: :math:`N^E` placements);
* :func:`formed_load_exact` — the same worst case by a dynamic programme over epochs whose
  transition is the closed form below, with segment maxima by ``np.maximum.reduceat``
  (:math:`O(E N \log T)`);
* :func:`all_load_brute_force` and :func:`all_load_exact` — the same two for *all* complete
  dyadic nodes (formed or not): the count :math:`K` Algorithm 2 charges
  (:func:`~dpbounds.privacy.tree.max_nodes_per_sample`), so that a defect in that shared
  helper (a count without its :math:`\log T` levels) fails Algorithm 2's ledger check;
* :class:`RealisedLoad` — the load each sample actually had in a run, from the permutations
  the run drew (fed epoch by epoch; :math:`O(\text{trials}\,N)` NumPy work per epoch);
* :func:`node_sensitivity_series` and :func:`node_sensitivity_brute_force` — a node's L2
  sensitivity :math:`\Delta`, which both algorithms' ledgers take from
  :func:`~dpbounds.privacy.tree.momentum_node_sensitivity` (its closed form): a study that
  recomputed its expected sigma with that helper passed a sensitivity halved there (both
  sigmas halve together; measured on Algorithm 2's quick study, stop 71).

**Closed form [DERIVED].** With 0-based step positions :math:`y<T`, the level-:math:`j` node
holding :math:`y` is :math:`[i2^j, (i+1)2^j)` with :math:`i=y\gg j`; it is *formed* iff
:math:`i` is even (bit :math:`j` of :math:`y` is 0) and *complete* iff
:math:`(i+1)2^j\le T`, i.e. iff :math:`j<\mathrm{bitlen}(y\oplus T)`. So the formed complete
nodes holding :math:`y` are the zero bits of :math:`y` below :math:`\mathrm{bitlen}(y\oplus T)`,
and all complete nodes holding it are the :math:`\mathrm{bitlen}(y\oplus T)` levels below it.
Two positions :math:`x<y` share exactly the levels :math:`j\ge\mathrm{bitlen}(x\oplus y)`, and
a node holding an occurrence and an earlier one also holds every occurrence between, so the
nodes an occurrence at :math:`y` adds after the previous one at :math:`x` are the zero bits of
:math:`y` below :math:`\min(\mathrm{bitlen}(x\oplus y), \mathrm{bitlen}(y\oplus T))` (all
nodes: that many levels).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from dpbounds._validation import check_finite, check_int, check_nonnegative

__all__ = ["RealisedLoad", "all_load_brute_force", "all_load_exact", "formed_load_brute_force",
           "formed_load_exact", "node_sensitivity_brute_force", "node_sensitivity_series"]

#: largest number of placements :func:`formed_load_brute_force` enumerates
MAX_BRUTE_FORCE = 1 << 16


def _bitlen(v: np.ndarray) -> np.ndarray:
    """``bit_length`` of non-negative integers below 2^53 (``frexp``'s exponent)."""
    return np.frexp(np.asarray(v, dtype=np.float64))[1].astype(np.int64)


def _popcount(v: np.ndarray) -> np.ndarray:
    """Set bits of non-negative int64s: ``np.bitwise_count`` (NumPy >= 2.0), else the SWAR
    count (the package supports NumPy 1.26)."""
    v = np.asarray(v, dtype=np.int64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(v).astype(np.int64)
    u = v.astype(np.uint64)
    u = u - ((u >> np.uint64(1)) & np.uint64(0x5555555555555555))
    u = (u & np.uint64(0x3333333333333333)) + ((u >> np.uint64(2)) & np.uint64(0x3333333333333333))
    u = (u + (u >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((u * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def _added(y: np.ndarray, h: np.ndarray, T: int) -> np.ndarray:
    """Formed complete nodes holding position ``y`` below level ``h`` (see the module)."""
    top = np.minimum(h, _bitlen(y ^ T))
    mask = (np.int64(1) << top) - 1
    return _popcount(~y & mask)


def _added_all(y: np.ndarray, h: np.ndarray, T: int) -> np.ndarray:
    """Complete nodes (formed or not) holding position ``y`` below level ``h``."""
    return np.minimum(h, _bitlen(y ^ T))


def formed_load_brute_force(steps_per_epoch: int, epochs: int) -> int:
    """Worst-case formed-node load by enumerating every placement and listing the nodes."""
    return _brute_force(steps_per_epoch, epochs, formed=True)


def all_load_brute_force(steps_per_epoch: int, epochs: int) -> int:
    """Worst-case load of all complete dyadic nodes ``[i 2^j + 1, (i + 1) 2^j]`` in
    ``[1, T]``, by enumerating every placement and listing the nodes."""
    return _brute_force(steps_per_epoch, epochs, formed=False)


def _brute_force(steps_per_epoch: int, epochs: int, formed: bool) -> int:
    n = check_int("steps_per_epoch", steps_per_epoch, minimum=1)
    e = check_int("epochs", epochs, minimum=1)
    if n**e > MAX_BRUTE_FORCE:
        raise ValueError(f"steps_per_epoch ** epochs must be <= {MAX_BRUTE_FORCE} for the brute "
                         f"force, got {n}**{e}")
    T = n * e
    if formed:
        nodes = [(b - (b & -b) + 1, b) for b in range(1, T + 1)]  # F_b, 1-based inclusive
    else:  # every complete dyadic interval, listed level by level
        nodes = [(i * (1 << j) + 1, (i + 1) * (1 << j)) for j in range(T.bit_length())
                 for i in range(T >> j)]
    best = 0
    for occ in itertools.product(*(range(k * n + 1, (k + 1) * n + 1) for k in range(e))):
        best = max(best, sum(1 for a, b in nodes if any(a <= s <= b for s in occ)))
    return best


def formed_load_exact(steps_per_epoch: int, epochs: int) -> int:
    """Worst-case formed-node load by the dynamic programme over epochs (module docstring)."""
    return _load_exact(steps_per_epoch, epochs, _added)


def all_load_exact(steps_per_epoch: int, epochs: int) -> int:
    """Worst-case load of all complete nodes by the same dynamic programme (module
    docstring): Algorithm 2's ``K``."""
    return _load_exact(steps_per_epoch, epochs, _added_all)


def _load_exact(steps_per_epoch: int, epochs: int, added: Any) -> int:
    n = check_int("steps_per_epoch", steps_per_epoch, minimum=1)
    e = check_int("epochs", epochs, minimum=1)
    T = n * e
    if T >= 1 << 52:
        raise ValueError(f"steps_per_epoch * epochs must be < 2^52, got {T}")
    levels = T.bit_length()
    value = added(np.arange(n, dtype=np.int64), np.full(n, levels + 1), T).astype(float)
    for k in range(1, e):
        xs = np.arange((k - 1) * n, k * n, dtype=np.int64)
        ys = xs + n
        best = np.full(n, -np.inf)
        for lev in range(levels):  # x in y's sibling block at level lev: bitlen(x ^ y) = lev+1
            keys = xs >> lev
            starts = np.concatenate(([0], np.flatnonzero(np.diff(keys)) + 1))
            block_max = np.maximum.reduceat(value, starts)
            want = (ys >> lev) ^ 1
            pos = np.searchsorted(keys[starts], want)
            hit = (pos < starts.size) & (keys[starts][np.minimum(pos, starts.size - 1)] == want)
            if not hit.any():
                continue
            cand = np.full(n, -np.inf)
            cand[hit] = block_max[pos[hit]] + added(ys[hit], np.full(int(hit.sum()), lev + 1),
                                                    T)
            best = np.maximum(best, cand)
        value = best
    return int(np.max(value))


class RealisedLoad:
    """Per trial and sample, the formed nodes holding one of its occurrences in a run.

    Feed every epoch's permutation (``(trials, n)``, sample at each position) with
    :meth:`add_epoch`; ``batch_size`` consecutive positions form a step, and positions past
    ``steps_per_epoch * batch_size`` are left out of the epoch (as the algorithm does).
    """

    def __init__(self, n: int, steps_per_epoch: int, batch_size: int, total_steps: int) -> None:
        self.n, self.S, self.B, self.T = int(n), int(steps_per_epoch), int(batch_size), \
            int(total_steps)
        self.levels = self.T.bit_length()
        self.last: np.ndarray | None = None
        self.load: np.ndarray | None = None
        self.t0 = 0

    def add_epoch(self, perm: Any) -> None:
        p = np.asarray(perm, dtype=np.int64)
        if p.ndim != 2 or p.shape[1] != self.n:
            raise ValueError(f"perm must have shape (trials, {self.n}), got {p.shape}")
        trials, n = p.shape
        if self.last is None:
            # a "previous occurrence" above every position: bitlen(last ^ y) > levels
            self.last = np.full((trials, n), 1 << self.levels, dtype=np.int64)
            self.load = np.zeros((trials, n), dtype=np.int64)
        assert self.load is not None
        used = self.S * self.B
        steps = self.t0 + np.arange(used, dtype=np.int64) // self.B
        for k in range(trials):  # one trial at a time: the temporaries stay in cache
            # step position of each sample this epoch (the inverse permutation)
            y = np.full(n, -1, dtype=np.int64) if used < n else np.empty(n, np.int64)
            y[p[k, :used]] = steps
            last = self.last[k]
            # added nodes: zero bits of y below min(bitlen(last ^ y), bitlen(y ^ T))
            top = _bitlen(np.minimum(last ^ y, y ^ self.T))
            add = _popcount(~y & ((np.int64(1) << top) - 1))
            if used < n:
                seen = y >= 0
                self.load[k] += np.where(seen, add, 0)
                last[seen] = y[seen]
            else:
                self.load[k] += add
                last[:] = y
        self.t0 += self.S

    def max_per_trial(self) -> np.ndarray:
        """The largest realised load of any sample, per trial."""
        if self.load is None:
            raise ValueError("no epoch was added")
        return self.load.max(axis=1)


def realised_rho(load: np.ndarray, sensitivity: float, sigma: float) -> np.ndarray:
    r"""zCDP :math:`\rho=K\Delta^2/(2\sigma^2)` of a realised load (Thm 10's composition)."""
    if sigma <= 0:
        return np.full(np.shape(load), math.inf)
    return np.asarray(load, dtype=float) * sensitivity**2 / (2.0 * sigma**2)


def _lipschitz_alpha(lipschitz: Any, alpha: Any) -> tuple[float, float]:
    """``(G, alpha)`` as floats: ``G`` finite and >= 0, ``alpha`` in (0, 1] (``ValueError``
    naming the parameter; a bool, a string or NaN refused)."""
    G = float(check_nonnegative("lipschitz", lipschitz))
    a = float(check_finite("alpha", alpha))
    if not 0.0 < a <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    return G, a


def node_sensitivity_series(lipschitz: float, alpha: float, steps_per_epoch: int) -> float:
    r"""A momentum node's L2 sensitivity under replace-one, summed as a series (not the closed
    form of :func:`~dpbounds.privacy.tree.momentum_node_sensitivity`) **[DERIVED]**.

    The node :math:`\sum_{j=a}^b\alpha(1-\alpha)^{b-j}\nabla f(x_j, z_j)` holds the changed
    sample at most once per epoch of :math:`N` steps, each occurrence changing its gradient
    by at most :math:`2G`. The latest occurrence is at most at step :math:`b` (weight
    :math:`\le\alpha`); the previous one is in an earlier epoch, at least one step older, and
    each one before that a whole epoch older again: the one :math:`k\ge1` epochs back has
    weight :math:`\le\alpha(1-\alpha)^{(k-1)N+1}` (:func:`node_sensitivity_brute_force`
    checks that no placement does better). So

    .. math:: \Delta = 2G\Big(\alpha + \alpha(1-\alpha)\sum_{k\ge0} r^k\Big),
              \quad r = (1-\alpha)^N,

    the geometric sum taken as the product :math:`\prod_{i\ge0}(1 + r^{2^i})` (which equals
    :math:`\sum_{k<2^m}r^k` after :math:`m` factors) until a factor is 1 in floating point:
    a second method for the same number, sharing no code with the package's helper.

    >>> round(node_sensitivity_series(1.0, 0.5, 1), 12)  # r = 1/2: 2 (1/2 + 1/4 * 2)
    2.0
    """
    G, a = _lipschitz_alpha(lipschitz, alpha)
    n = check_int("steps_per_epoch", steps_per_epoch, minimum=1)
    if a == 1.0:  # every earlier occurrence has weight 0
        return 2.0 * G
    log_r = n * math.log1p(-a)
    total = 1.0
    for i in range(1100):  # r^(2^i) underflows by i ~ 1100 even at r = 1 - 1e-300
        # each power from the logarithm (squaring r^(2^i) doubled its relative error a step)
        power = math.exp(math.ldexp(log_r, i))
        if 1.0 + power == 1.0:
            break
        total *= 1.0 + power
    return 2.0 * G * (a + a * (1.0 - a) * total)


def node_sensitivity_brute_force(lipschitz: float, alpha: float, steps_per_epoch: int,
                                 epochs: int) -> float:
    r"""The largest :math:`2G\sum_{\text{occurrences}}\alpha(1-\alpha)^{b-j}` over every
    placement of one sample's occurrences (one step per epoch, any of the :math:`N`) and every
    node :math:`[a, b]` of a run of ``epochs`` epochs: enumeration (tiny cases only,
    :math:`N^E \le` :data:`MAX_BRUTE_FORCE` placements). Bounded by
    :func:`node_sensitivity_series` (its infinite sum) for every run length."""
    n, e = check_int("steps_per_epoch", steps_per_epoch, minimum=1), check_int(
        "epochs", epochs, minimum=1)
    if n**e > MAX_BRUTE_FORCE:
        raise ValueError(f"{n}^{e} placements exceed {MAX_BRUTE_FORCE}")
    G, a = _lipschitz_alpha(lipschitz, alpha)
    best = 0.0
    for place in itertools.product(range(n), repeat=e):
        steps = [k * n + p for k, p in enumerate(place)]  # 0-based step of each occurrence
        for b in range(n * e):  # the node ends at b; a node starting at 0 holds the most
            w = sum(a * (1.0 - a) ** (b - j) for j in steps if j <= b)
            best = max(best, w)
    return 2.0 * G * best
