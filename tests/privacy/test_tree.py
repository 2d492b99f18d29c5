"""Tree aggregation (Tran & Cutkosky): COMPOSE, K, node sensitivity, Theorem 10 noise.

Oracles: brute force over the explicit dyadic node list (all permutations for tiny N, all
position choices for small N and E), direct weighted-sum simulation of node sensitivity,
dp_accounting's SingleEpochTreeAggregationDpEvent (E = 1 special case) and RdpAccountant's
zCDP conversion, and the sheet's closed forms.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy import tree


def _brute_k(n, epochs):
    T = n * epochs
    nodes = tree.dyadic_nodes(T)
    best = 0
    for pos in itertools.product(range(1, n + 1), repeat=epochs):
        occ = [e * n + p for e, p in enumerate(pos)]
        best = max(best, sum(1 for a, b in nodes if any(a <= o <= b for o in occ)))
    return best


def test_dyadic_nodes_small():
    assert tree.dyadic_nodes(5) == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (1, 2), (3, 4), (1, 4)]
    T = 37
    nodes = tree.dyadic_nodes(T)
    assert len(nodes) == sum(T // 2**j for j in range(6))
    assert all(((b - a + 1) & (b - a)) == 0 and (a - 1) % (b - a + 1) == 0 for a, b in nodes)


def test_compose_is_disjoint_dyadic_cover_exhaustive():
    nodes = set(tree.dyadic_nodes(130))
    worst = 0
    for a in range(1, 129):
        for b in range(a, 129):
            cover = tree.compose(a, b)
            assert all(node in nodes for node in cover)
            flat = [t for lo, hi in cover for t in range(lo, hi + 1)]
            assert flat == list(range(a, b + 1))  # disjoint, ordered, covering
            bound = 2 * int(math.floor(math.log2(b - a + 1))) + 1
            assert len(cover) <= bound
            worst = max(worst, len(cover) - bound)
            if a == 1:
                assert len(cover) == bin(b).count("1")
    assert worst == 0  # the bound is attained


def test_compose_is_minimal_by_brute_force():
    # greedy cover uses the fewest dyadic nodes (shortest path over node set)
    T = 40
    nodes = tree.dyadic_nodes(T)
    for a in range(1, T + 1):
        dist = {a - 1: 0}
        for t in range(a, T + 1):
            dist[t] = min(dist[lo - 1] + 1 for lo, hi in nodes if hi == t and lo - 1 in dist)
            assert len(tree.compose(a, t)) == dist[t]


def test_nodes_ending_at():
    for t in range(1, 200):
        expected = [(a, b) for a, b in tree.dyadic_nodes(t) if b == t]
        assert sorted(tree.nodes_ending_at(t)) == sorted(expected)
    assert tree.nodes_ending_at(12) == [(12, 12), (11, 12), (9, 12)]


@pytest.mark.parametrize("n,epochs", [(n, e) for n in range(1, 9) for e in range(1, 5)
                                      if n**e <= 4096])
def test_k_exact_matches_brute_force(n, epochs):
    k = tree.max_nodes_per_sample(n, epochs, method="exact")
    assert k == _brute_k(n, epochs)
    assert k <= tree.max_nodes_per_sample_bound(n, epochs)


def test_k_exhaustive_over_permutations_tiny():
    # simulate the algorithm: per-epoch permutations, count nodes holding each sample
    for n, epochs in [(3, 2), (4, 2), (3, 3)]:
        T = n * epochs
        nodes = tree.dyadic_nodes(T)
        best = 0
        perms = list(itertools.permutations(range(n)))
        for combo in itertools.product(perms, repeat=epochs):
            order = [s for perm in combo for s in perm]  # order[t-1] = sample at step t
            for s in range(n):
                occ = [t + 1 for t, v in enumerate(order) if v == s]
                best = max(best, sum(1 for a, b in nodes if any(a <= o <= b for o in occ)))
        assert best == tree.max_nodes_per_sample(n, epochs)


def test_k_bound_holds_and_auto_switch():
    for n in [1, 2, 3, 7, 100, 1000, 1023, 1024, 1025]:
        for e in [1, 2, 5, 16]:
            assert tree.max_nodes_per_sample(n, e) <= tree.max_nodes_per_sample_bound(n, e)
    assert tree.max_nodes_per_sample(2**19, 4) == tree.max_nodes_per_sample_bound(2**19, 4)
    assert tree.max_nodes_per_sample(10**7, 1) == (10**7).bit_length()


def _brute_node_sensitivity(G, alpha, n, epochs, replace_one=True):
    """max over node [a,b], positions of one sample, of 2G * sum of its weights in the node."""
    T = n * epochs
    diff = 2 * G if replace_one else G
    best = 0.0
    for pos in itertools.product(range(1, n + 1), repeat=epochs):
        occ = np.array([e * n + p for e, p in enumerate(pos)])
        for a, b in tree.dyadic_nodes(T):
            inside = occ[(occ >= a) & (occ <= b)]
            best = max(best, diff * float(np.sum(alpha * (1 - alpha) ** (b - inside))))
    return best


@pytest.mark.parametrize("alpha", [0.05, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("n,epochs", [(3, 3), (4, 3), (5, 2)])
def test_node_sensitivity_dominates_brute_force(alpha, n, epochs):
    G = 1.7
    brute = _brute_node_sensitivity(G, alpha, n, epochs)
    tight = tree.momentum_node_sensitivity(G, alpha, n)
    assert brute <= tight * (1 + 1e-12)
    assert tight <= tree.momentum_node_sensitivity(G, alpha, n, form="sheet") * (1 + 1e-15)
    assert tree.momentum_node_sensitivity(G, alpha, n, form="sheet") <= (
        tree.momentum_node_sensitivity(G, alpha, n, form="simple") * (1 + 1e-15)
    )
    # add/remove shifts every later position under reshuffling: refused, not halved
    with pytest.raises(ValueError, match="neighbouring must be 'replace_one'"):
        tree.momentum_node_sensitivity(G, alpha, n, "add_remove")
    with pytest.raises(ValueError, match="neighbouring must be 'replace_one'"):
        tree.tree_momentum_sigma_closed_form(1.0, 1e-5, G, alpha, n, epochs, "add_remove")
    # alpha = 1: plain gradients, one occurrence per node -> 2G exactly
    if alpha == 1.0:
        assert tight == pytest.approx(2 * G) and brute == pytest.approx(2 * G)


def test_tree_epsilon_matches_dp_accounting_single_epoch():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_acc

    # E = 1, alpha = 1: dp_accounting counts ceil(log2(T+1)) nodes per record
    T, sigma, delta = 1023, 7.0, 1e-6
    k_ref = math.ceil(math.log2(T + 1))
    assert tree.max_nodes_per_sample(T, 1) == k_ref  # T = 2^10 - 1: 10 levels
    orders = np.concatenate([np.linspace(1.01, 10, 500), np.arange(11, 2000)])
    acc = rdp_acc.RdpAccountant(list(orders), dpa.NeighboringRelation.REPLACE_SPECIAL)
    acc.compose(dpa.SingleEpochTreeAggregationDpEvent(sigma, T))
    ref = acc.get_epsilon(delta)
    ours_tight = tree.tree_aggregation_epsilon(sigma, delta, 1.0, k_ref, method="tight")
    assert ours_tight == pytest.approx(ref, rel=2e-3)
    assert ours_tight <= ref * (1 + 1e-9)  # continuous order is at least as good as a grid
    ours_std = tree.tree_aggregation_epsilon(sigma, delta, 1.0, k_ref)
    rho = k_ref / (2 * sigma**2)
    assert ours_std == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-14)


@settings(max_examples=60, deadline=None)
@given(
    eps=st.floats(1e-3, 50.0),
    log10_delta=st.floats(-12.0, -2.0),
    K=st.integers(1, 10**4),
    sens=st.floats(1e-3, 1e3),
    method=st.sampled_from(["standard", "tight"]),
)
def test_tree_sigma_never_overshoots(eps, log10_delta, K, sens, method):
    delta = 10.0**log10_delta
    s = tree.tree_aggregation_sigma(eps, delta, sens, K, method=method)
    e = tree.tree_aggregation_epsilon(s, delta, sens, K, method=method)
    assert np.isfinite(s) and e <= eps
    assert e == pytest.approx(eps, rel=1e-6)


def test_closed_form_sigma_is_conservative_and_matches_sheet():
    eps, delta, G, alpha, n, E = 1.0, 1e-6, 1.0, 0.01, 1000, 4
    s = tree.tree_momentum_sigma_closed_form(eps, delta, G, alpha, n, E)
    sheet = 4 * G * (2 * alpha + 1 / n) * math.sqrt(
        E * (math.floor(math.log2(n)) + 3) * math.log(1 / delta)) / eps
    assert s == pytest.approx(sheet, rel=1e-14)
    d = tree.momentum_node_sensitivity(G, alpha, n, form="simple")
    k = tree.max_nodes_per_sample_bound(n, E)
    assert tree.tree_aggregation_epsilon(s, delta, d, k) <= eps
    assert s >= tree.tree_aggregation_sigma(eps, delta, d, k)
    with pytest.raises(ValueError, match="epsilon"):
        tree.tree_momentum_sigma_closed_form(20.0, 1e-6, G, alpha, n, E)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: tree.dyadic_nodes(0), "T"),
        (lambda: tree.compose(3, 2), "b"),
        (lambda: tree.compose(0, 2), "a"),
        (lambda: tree.nodes_ending_at(1.5), "t"),
        (lambda: tree.max_nodes_per_sample(10, 0), "epochs"),
        (lambda: tree.max_nodes_per_sample(10, 2, method="x"), "method"),
        (lambda: tree.momentum_node_sensitivity(1.0, 0.0, 10), "alpha"),
        (lambda: tree.momentum_node_sensitivity(-1.0, 0.5, 10), "lipschitz"),
        (lambda: tree.momentum_node_sensitivity(1.0, 0.5, 10, "bad"), "neighbouring"),
        (lambda: tree.tree_aggregation_sigma(0.0, 1e-5, 1.0, 3), "epsilon"),
        (lambda: tree.tree_aggregation_sigma(1.0, 1.0, 1.0, 3), "delta"),
        (lambda: tree.tree_aggregation_epsilon(1.0, 1e-5, -1.0, 3), "sensitivity"),
        (lambda: tree.tree_aggregation_epsilon(1.0, 1e-5, 1.0, 0), "node_count"),
    ],
)
def test_invalid_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()
