r"""Tree aggregation of Tran & Cutkosky (NeurIPS 2022): dyadic nodes, COMPOSE, node count K,
node sensitivity of exponentially weighted momentum, and the Gaussian noise for (ε, δ).

The seed of Tran & Cutkosky lost its formulas, so apart from the structure every constant here
is **DERIVED** (see ``tran_cutkosky.md`` §3, §5, §6):

* nodes are the dyadic intervals :math:`[i2^j+1, (i+1)2^j] \subseteq [1, T]`;
* COMPOSE(a, b) is the greedy dyadic cover of :math:`[a, b]`;
* Theorem 10 (RECONSTRUCTED): Gaussian noise of std :math:`\sigma` on every node makes the
  aggregation :math:`(\lambda, \lambda K\Delta^2/(2\sigma^2))`-RDP for all :math:`\lambda > 1`,
  where :math:`\Delta` bounds every node's sensitivity and :math:`K` is the maximum number of
  nodes containing one sample.

The RDP curve is linear in :math:`\lambda`, i.e. :math:`\rho`-zCDP with
:math:`\rho = K\Delta^2/(2\sigma^2)`; it is converted to :math:`(\varepsilon,\delta)` with the
optimal order.

Examples
--------
>>> from dpbounds.privacy.tree import compose, max_nodes_per_sample
>>> compose(1, 7)
[(1, 4), (5, 6), (7, 7)]
>>> max_nodes_per_sample(8, 1)  # one epoch: a leaf and its ancestors
4
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpbounds._validation import (
    MAX_COUNT,
    check_choice,
    check_finite,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_scalar,
)
from dpbounds.privacy._util import as_output, guard_module, nudge_up
from dpbounds.provenance import TRAN_CUTKOSKY, Provenance, Source

__all__ = [
    "SOURCE_K",
    "SOURCE_NODE_SENSITIVITY",
    "SOURCE_SIGMA",
    "SOURCE_THEOREM_10",
    "compose",
    "dyadic_nodes",
    "max_nodes_per_sample",
    "max_formed_node_load",
    "max_nodes_per_sample_bound",
    "momentum_node_sensitivity",
    "nodes_ending_at",
    "tree_aggregation_epsilon",
    "tree_aggregation_sigma",
    "tree_momentum_sigma_closed_form",
]

SOURCE_THEOREM_10 = Source(
    TRAN_CUTKOSKY, "Theorem 10 (App. C)", Provenance.RECONSTRUCTED,
    "(lambda, lambda K Delta^2/(2 sigma^2))-RDP; RDP->DP with the optimal order",
)
SOURCE_K = Source(
    TRAN_CUTKOSKY, "Theorem 4 proof, node count K", Provenance.DERIVED,
    "K <= E(floor(log2 N)+3); exact value by dynamic programming (ours)",
)
SOURCE_NODE_SENSITIVITY = Source(
    TRAN_CUTKOSKY, "Theorem 4 proof, node sensitivity", Provenance.DERIVED,
    "exponentially weighted momentum, one occurrence per epoch",
)
SOURCE_SIGMA = Source(
    TRAN_CUTKOSKY, "Theorem 4", Provenance.DERIVED,
    "sigma = 2 Delta sqrt(K log(1/delta))/eps for eps <= log(1/delta); statement MISSING",
)

#: Largest tree :func:`dyadic_nodes` lists (2T - popcount(T) tuples, ~250 MB at 2^20).
MAX_LISTED_STEPS = 2**20
#: Largest N * E for ``max_nodes_per_sample(method="exact")`` (a few seconds, ~100 MB).
MAX_EXACT_STEPS = 2**22
#: Largest E for ``max_nodes_per_sample(method="exact")`` (~0.3 ms of overhead per epoch).
MAX_EXACT_EPOCHS = 2**12


def dyadic_nodes(T: int) -> list[tuple[int, int]]:
    r"""All tree nodes over steps :math:`1..T`: :math:`[i2^j+1, (i+1)2^j]` with
    :math:`(i+1)2^j \le T`, ordered by level then position.

    The list has :math:`2T - \mathrm{popcount}(T)` entries, so ``T`` is at most
    ``MAX_LISTED_STEPS`` = :math:`2^{20}` (``ValueError`` beyond; use :func:`nodes_ending_at`
    or :func:`compose` for longer runs)."""
    T = check_int("T", T, minimum=1, maximum=MAX_LISTED_STEPS)
    out: list[tuple[int, int]] = []
    j = 0
    while (1 << j) <= T:
        size = 1 << j
        out.extend((i * size + 1, (i + 1) * size) for i in range(T // size))
        j += 1
    return out


def compose(a: int, b: int) -> list[tuple[int, int]]:
    r"""COMPOSE(a, b): the disjoint dyadic nodes whose union is :math:`[a, b]` (greedy cover).

    :math:`|\mathrm{COMPOSE}(1,b)| = \mathrm{popcount}(b)` and in general
    :math:`|\mathrm{COMPOSE}(a,b)| \le 2\lfloor\log_2(b-a+1)\rfloor + 1` (DERIVED, checked in
    tests by brute force).
    """
    a = check_int("a", a, minimum=1, maximum=MAX_COUNT)
    b = check_int("b", b, minimum=a, maximum=MAX_COUNT)
    out = []
    while a <= b:
        start = a - 1
        # largest power of two dividing start (any power when start == 0) that still fits
        j = (start & -start).bit_length() - 1 if start else (b - a + 1).bit_length() - 1
        while start + (1 << j) > b:
            j -= 1
        out.append((a, start + (1 << j)))
        a = start + (1 << j) + 1
    return out


def nodes_ending_at(t: int) -> list[tuple[int, int]]:
    r"""Nodes :math:`[a, t]` that end at step ``t``: the nodes formed (and noised) at step t.

    They are :math:`[t-2^j+1, t]` for :math:`2^j \mid t`, from the leaf up.
    """
    t = check_int("t", t, minimum=1, maximum=MAX_COUNT)
    out = []
    j = 0
    while t % (1 << j) == 0:
        out.append((t - (1 << j) + 1, t))
        j += 1
    return out


def max_nodes_per_sample_bound(n: int, epochs: int) -> int:
    r"""Closed-form bound :math:`K \le E(\lfloor\log_2 N\rfloor + 3)` **[DERIVED]**.

    Levels with :math:`2^j \le N` give one node per occurrence, at most
    :math:`E(\lfloor\log_2N\rfloor+1)`; the levels with :math:`2^j > N` hold fewer than
    :math:`2E` nodes in total. Capped at the tree's own count of complete nodes,
    :math:`\sum_j\lfloor T/2^j\rfloor \le 2T-1` (:math:`T = NE`): at :math:`N = 1` the
    formula gave :math:`3E`, more nodes than the tree has (fuzz round 8).
    """
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    epochs = check_int("epochs", epochs, minimum=1, maximum=MAX_COUNT)
    T = n * epochs
    nodes = sum(T >> j for j in range(T.bit_length()))
    return min(epochs * (int(n).bit_length() - 1 + 3), nodes)


@functools.lru_cache(maxsize=256)
def _exact_k(n: int, epochs: int, formed: bool = False) -> int:
    """Exact worst case K by dynamic programming over epochs (see max_nodes_per_sample).

    Memoised (a pure function of three integers): the programme costs O(E N log T), about a
    second at T = N E = 4e5, which every run of Algorithm 1 or 2 with the same ``(N, E)``
    would otherwise pay again (issue 36: it was most of the "per-step" cost that
    ``bench/bench_step_loop.py`` measures by differencing runs of T and 3T steps).

    ``formed=True`` counts only the formed nodes [b - lowbit(b) + 1, b] (max_formed_node_load):
    the level-j node holding position y (0-based) is formed iff ``(y >> j)`` is even."""
    T = n * epochs
    levels = T.bit_length()  # levels j = 0..levels-1 can hold complete nodes
    if epochs == 1:  # the first leaf lies in a complete (and formed) node on every level
        return levels
    seg = np.arange(n, dtype=np.int64)

    def prefix(y: np.ndarray) -> np.ndarray:
        # prefix[l, i] = number of levels j < l whose node at y[i] is complete (inside [1, T]);
        # int8 suffices (levels <= 63) and keeps the table at (levels + 1) bytes per sample
        complete = np.stack([((((y >> j) + 1) << j) <= T) & (not formed or ((y >> j) & 1) == 0)
                             for j in range(levels)])
        return np.vstack([np.zeros((1, y.size), dtype=np.int8),
                          np.cumsum(complete, axis=0, dtype=np.int8)])

    value = prefix(seg)[levels].astype(float)  # first epoch: every ancestor is new
    neg = -np.inf
    for e in range(1, epochs):
        s_prev, s_cur = (e - 1) * n, e * n
        y = s_cur + seg
        pre = prefix(y)
        best = np.full(n, neg)
        base, blocks = s_prev, value  # block maxima of the previous epoch's values
        for k in range(levels + 1):
            # x in the sibling block of y at level k shares exactly the levels >= k + 1
            idx = ((y >> k) ^ 1) - base
            ok = (idx >= 0) & (idx < blocks.size)
            if np.any(ok):
                cand = np.full(n, neg)
                cand[ok] = blocks[idx[ok]] + pre[min(k + 1, levels)][ok]
                best = np.maximum(best, cand)
            # maxima over aligned pairs (2j, 2j+1) of positions: pad to even alignment, reshape
            arr = blocks
            if base & 1:
                arr = np.concatenate(([neg], arr))
            if arr.size & 1:
                arr = np.concatenate((arr, [neg]))
            blocks, base = arr.reshape(-1, 2).max(axis=1), base >> 1
        value = best
    return int(np.max(value))


def max_nodes_per_sample(n: int, epochs: int, *, method: str = "auto") -> int:
    r"""K: the maximum number of tree nodes containing one sample over ``epochs`` epochs.

    The tree spans :math:`T = NE` steps; in each epoch the sample sits at any position of a
    fresh permutation, and :math:`K` is the worst case over samples and permutations of the
    number of nodes (complete dyadic intervals in :math:`[1,T]`) containing at least one of its
    occurrences **[DERIVED]**.

    ``method="exact"`` computes it exactly: since later occurrences come later, a node holding
    occurrence :math:`e` and an earlier one also holds occurrence :math:`e-1`, so the count is a
    sum of pairwise terms and a dynamic programme over epochs with block maxima costs
    :math:`O(E\,N\log T)`. ``method="bound"`` returns :math:`E(\lfloor\log_2N\rfloor+3)`
    (:func:`max_nodes_per_sample_bound`). ``"auto"`` is exact for :math:`T \le 2^{20}` and the
    bound beyond (both are valid for privacy; the bound is conservative). Memory is
    :math:`O(N\log T)` bytes. ``n`` and ``epochs`` are at most ``MAX_COUNT`` = 10^15, and
    ``method="exact"`` needs :math:`NE \le` ``MAX_EXACT_STEPS`` = :math:`2^{22}` and
    :math:`E \le` ``MAX_EXACT_EPOCHS`` = :math:`2^{12}` (a few seconds at most) unless
    ``epochs == 1`` (then :math:`K` is the number of levels, instantly); ``"auto"`` falls back
    to the bound for :math:`E > 2^{12}` too.
    """
    return _node_count(n, epochs, method, formed=False)


def _node_count(n: Any, epochs: Any, method: str, formed: bool) -> int:
    """The shared checks and exact-or-bound dispatch of :func:`max_nodes_per_sample` and
    :func:`max_formed_node_load` (the bound is valid for both: K_formed <= K <= bound)."""
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    epochs = check_int("epochs", epochs, minimum=1, maximum=MAX_COUNT)
    method = check_choice("method", method, ("auto", "exact", "bound"))
    if epochs == 1 and method != "bound":
        return _exact_k(n, epochs, formed=formed)
    too_big = n * epochs > MAX_EXACT_STEPS or epochs > MAX_EXACT_EPOCHS
    if method == "bound" or (method == "auto" and (n * epochs > 1 << 20 or too_big)):
        return max_nodes_per_sample_bound(n, epochs)
    if too_big:
        raise ValueError(
            f"n * epochs must be <= {MAX_EXACT_STEPS} and epochs <= {MAX_EXACT_EPOCHS} for "
            f"method='exact' (its cost grows as epochs * n * log2(n * epochs)), got n={n}, "
            f"epochs={epochs}; use method='bound' (conservative) or 'auto'")
    return _exact_k(n, epochs, formed=formed)


def max_formed_node_load(n: int, epochs: int, *, method: str = "auto") -> int:
    r"""K_formed: the most *formed* tree nodes that hold an occurrence of one sample.

    **Statement [DERIVED, ours].** Let Algorithm 1 (:func:`~dpbounds.algorithms.tree_momentum.
    tree_momentum_nsgd`) run :math:`T = NE` steps (``n`` = :math:`N` steps per epoch, a fresh
    permutation per epoch, each sample in at most one batch per epoch), adding independent
    :math:`N(0,\sigma^2 I)` noise to the node :math:`F_b = [b-\mathrm{lowbit}(b)+1, b]` formed
    at step :math:`b` only, and let :math:`\Delta` bound every node's sensitivity
    (:func:`momentum_node_sensitivity`, which sums the weights of *all* the sample's
    occurrences in a node, one per epoch). Then for replace-one neighbours the run is
    :math:`\sqrt{K_f}\,\Delta/\sigma`-GDP and :math:`K_f\Delta^2/(2\sigma^2)`-zCDP, where
    :math:`K_f` is the maximum over samples and over the occurrence steps the permutations
    can produce (one step per epoch, any of the :math:`N`) of
    :math:`|\{b : F_b \text{ holds an occurrence}\}|`. This is Theorem 10 of Tran & Cutkosky
    (RECONSTRUCTED, ``tran_cutkosky.md``) with :math:`K` replaced by :math:`K_f\le K`.

    **Proof.** (i) *Releases are functions of formed nodes.* :math:`\hat m_t` sums the noisy
    nodes of COMPOSE(1, t), the binary decomposition of :math:`t`; each is
    :math:`[c+1, c+2^j]` with :math:`2^j` the lowest set bit of :math:`c+2^j`, i.e. the formed
    node :math:`F_{c+2^j}`. The regulariser momentum is public and the output is a uniform
    iterate drawn with independent randomness: post-processing. (ii) *Condition on the
    permutations* (the same law under replace-one neighbours, which keep the indices); a
    mixture over them of mechanisms that are each :math:`\mu`-GDP (resp. :math:`\rho`-zCDP) is
    again so (each :math:`(\varepsilon,\delta_\mu(\varepsilon))` bound, resp. each Rényi
    divergence, is preserved by mixing both sides with the same weights). (iii) *Adaptive
    composition.* The noisy :math:`F_b` is released at step :math:`b`; its exact sum
    :math:`\sum_{j\in F_b}\alpha(1-\alpha)^{b-j}g_j(x_j)` depends on :math:`x_a..x_b`, which
    are functions of the noisy nodes released before step :math:`b`. Given those, the sum
    differs between neighbours only through the batches holding the changed sample, by at most
    :math:`\Delta_b\le\Delta` (the node sensitivity bound covers every occurrence in the node),
    and by 0 when :math:`F_b` holds none. So step :math:`b` is a Gaussian mechanism with
    sensitivity :math:`\Delta_b`, and Dong-Roth-Su's composition gives
    :math:`\sqrt{\sum_b\Delta_b^2}/\sigma\le\sqrt{K_f}\Delta/\sigma`-GDP (the zCDP sum is the
    same, :math:`\rho = \sum_b\Delta_b^2/(2\sigma^2)`). (iv) The count depends on the
    permutations only, so its maximum over the orders they can produce bounds every run.

    Per level :math:`j` at most one formed node holds a position (the level-:math:`j` node
    :math:`[i2^j+1,(i+1)2^j]` is formed iff :math:`i` is even), so in one epoch
    :math:`K_f = K` (position 1: the nodes :math:`[1, 2^j]`), and with one record in every
    step :math:`K_f = T` (every formed node) against :math:`K = 2T-\mathrm{popcount}(T)`.
    The weighted refinement :math:`\sum_b(\Delta_b/\Delta)^2` is not used.

    **Computation.** As :func:`max_nodes_per_sample` (the same argument: a formed node
    holding occurrence :math:`e` and an earlier one holds occurrence :math:`e-1`, so the
    count is a sum of pairwise terms), with the level indicator restricted to formed nodes.
    ``method="exact"`` has the same limits; ``"auto"`` falls back to
    :func:`max_nodes_per_sample_bound` (valid: :math:`K_f\le K\le` the bound) where the exact
    programme is too costly; ``"bound"`` returns that bound.

    >>> max_formed_node_load(1, 8), max_nodes_per_sample(1, 8)  # one record, T = 8
    (8, 15)
    """
    return _node_count(n, epochs, method, formed=True)


def momentum_node_sensitivity(
    lipschitz: float,
    alpha: float,
    n: int,
    neighbouring: str = "replace_one",
    *,
    form: str = "tight",
) -> float:
    r"""L2 sensitivity :math:`\Delta` of a node :math:`s_{[a,b]}=\sum_{j=a}^b\alpha(1-\alpha)^{b-j}
    \nabla f(x_j,z_j)` of exponentially weighted momentum **[DERIVED]**.

    The changed sample occurs once per epoch of ``n`` steps. Its latest occurrence in the node
    has weight :math:`\le\alpha`; the one :math:`k\ge1` epochs earlier is at least
    :math:`(k-1)N+1` steps older. Each gradient difference is at most :math:`2G` (replace-one).
    Hence

    * ``form="tight"``: :math:`\Delta = 2G\alpha\big(1 + \frac{1-\alpha}{1-(1-\alpha)^N}\big)`;
    * ``form="sheet"``: :math:`2G\alpha\big(1 + \frac{1}{1-(1-\alpha)^N}\big)` (theory sheet §6);
    * ``form="simple"``: :math:`2G(2\alpha + 1/N)` (the sheet's simplification; largest).

    ``tight <= sheet <= simple`` always.

    Only ``neighbouring="replace_one"``: with random reshuffling over a fixed ``n``, adding or
    removing a record changes the epoch length and shifts every later position, so this
    per-node analysis does not hold under add/remove (``ValueError``).
    """
    G = check_nonnegative("lipschitz", lipschitz)
    alpha = check_finite("alpha", alpha)  # a number (not True, not a list), then its range
    if np.ndim(alpha) != 0 or not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha!r}")
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    from dpbounds.privacy.mechanisms import Neighbouring

    neighbouring = Neighbouring.coerce(neighbouring).value  # legacy spellings accepted
    if neighbouring != "replace_one":
        raise ValueError(
            "neighbouring must be 'replace_one' for the momentum node sensitivity, got "
            f"{neighbouring!r}: with random reshuffling, adding or removing a record shifts "
            "every later position, which the per-node analysis does not cover"
        )
    form = check_choice("form", form, ("tight", "sheet", "simple"))
    diff = 2.0 * G  # replace-one: one per-sample gradient changes by at most 2G
    # 1 - (1-alpha)^N computed without cancellation
    tail = -math.expm1(n * math.log1p(-alpha)) if alpha < 1.0 else 1.0
    if form == "tight":
        return diff * alpha * (1.0 + (1.0 - alpha) / tail)
    if form == "sheet":
        return diff * alpha * (1.0 + 1.0 / tail)
    return diff * (2.0 * alpha + 1.0 / n)


def _linear_rdp_epsilon(rho: Any, delta: float, method: str) -> Any:
    """eps of an RDP curve lambda * rho (rho-zCDP) at delta, optimal order."""
    from dpbounds.privacy.zcdp import zcdp_to_dp_epsilon

    return zcdp_to_dp_epsilon(rho, delta, method=method)


def tree_aggregation_epsilon(
    sigma: Any,
    delta: float,
    sensitivity: float,
    node_count: int,
    *,
    method: str = "standard",
) -> Any:
    r"""ε of tree aggregation with Gaussian node noise ``sigma`` (Theorem 10 + RDP→DP).

    Theorem 10 gives :math:`(\lambda, \lambda\rho)`-RDP with :math:`\rho = K\Delta^2/(2\sigma^2)`.
    ``method="standard"`` uses Mironov's conversion at the optimal order,
    :math:`\varepsilon = \rho + 2\sqrt{\rho\ln(1/\delta)}` (the sheet's §6 step 4);
    ``method="tight"`` the improved conversion (Canonne-Kamath-Steinke 2020), optimal order.
    """
    sigma = check_positive("sigma", sigma)
    delta = check_probability("delta", delta)
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    node_count = check_int("node_count", node_count, minimum=1, maximum=MAX_COUNT)
    sig = np.asarray(sigma)
    if 1e-150 < sensitivity < 1e150 and np.all((sig > 1e-150) & (sig < 1e150)):
        rho = node_count * sensitivity**2 / (2.0 * sig**2)
    else:  # a square would leave the float range: the ratio first (rho reads s/sigma only)
        rho = node_count * (sensitivity / sig) ** 2 / 2.0
    if sensitivity > 0 and np.any(rho < np.finfo(float).tiny):  # flushed to 0 or subnormal:
        raise OverflowError("rho underflows")  # refused, as the accountants refuse it
    return _linear_rdp_epsilon(rho, delta, method)


def tree_aggregation_sigma(
    epsilon: float,
    delta: float,
    sensitivity: float,
    node_count: int,
    *,
    method: str = "standard",
) -> float:
    r"""Smallest node noise std :math:`\sigma` with :func:`tree_aggregation_epsilon` :math:`\le`
    ``epsilon`` (conservative: never overshoots).

    :math:`\sigma = \Delta\sqrt{K/(2\rho)}` with :math:`\rho` the largest zCDP budget meeting
    :math:`(\varepsilon,\delta)` under the chosen conversion.
    """
    from dpbounds.privacy.zcdp import dp_to_zcdp_rho

    epsilon = check_positive("epsilon", check_scalar("epsilon", epsilon))
    delta = check_probability("delta", check_scalar("delta", delta))
    sensitivity = check_nonnegative("sensitivity", check_scalar("sensitivity", sensitivity))
    node_count = check_int("node_count", node_count, minimum=1, maximum=MAX_COUNT)
    rho = dp_to_zcdp_rho(epsilon, delta, method=method)
    sigma = float(nudge_up(sensitivity * math.sqrt(node_count / (2.0 * rho))))
    if sensitivity > 0:
        while tree_aggregation_epsilon(sigma, delta, sensitivity, node_count, method=method) > (
            epsilon
        ):
            sigma = float(nudge_up(sigma * (1.0 + 1e-12)))
    return sigma


def tree_momentum_sigma_closed_form(
    epsilon: float,
    delta: float,
    lipschitz: float,
    alpha: float,
    n: int,
    epochs: int,
    neighbouring: str = "replace_one",
) -> float:
    r"""Closed-form node noise of Algorithm 1 (Tran & Cutkosky Thm 4) **[DERIVED]**.

    .. math:: \sigma = \frac{2\Delta\sqrt{K\log(1/\delta)}}{\varepsilon}
       = \frac{4G(2\alpha+1/N)\sqrt{E(\lfloor\log_2N\rfloor+3)\log(1/\delta)}}{\varepsilon},

    with the simple :math:`\Delta` and the closed-form :math:`K`. Valid for
    :math:`\varepsilon\le\log(1/\delta)` (raises ``ValueError`` otherwise); it is at least
    :func:`tree_aggregation_sigma` with the same :math:`\Delta, K`. The paper's constants are
    MISSING; only the shape :math:`\Theta(G\max(\alpha,1/N)\sqrt{E\,\mathrm{polylog}\,
    \log(1/\delta)}/\varepsilon)` is supported by its text.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    log_inv_delta = -math.log(delta)
    if epsilon > log_inv_delta:
        raise ValueError(
            f"epsilon must be <= log(1/delta)={log_inv_delta:.4g} for the closed form, got "
            f"{epsilon!r}; use tree_aggregation_sigma instead"
        )
    delta_node = momentum_node_sensitivity(lipschitz, alpha, n, neighbouring, form="simple")
    k = max_nodes_per_sample_bound(n, epochs)
    return as_output(2.0 * delta_node * math.sqrt(k * log_inv_delta) / epsilon)


guard_module(globals(), __all__)
