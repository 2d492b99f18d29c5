r"""Online tree aggregation of exponentially weighted sums (the binary mechanism).

Tran & Cutkosky's Algorithm 1 releases the momentum

.. math::

    m_t = (1-\alpha) m_{t-1} + \alpha g_t = \sum_{j=1}^{t} \alpha (1-\alpha)^{t-j} g_j

through the dyadic tree of ``tran_cutkosky.md`` §3–4. Every node :math:`[a, b]` of the
tree (:math:`[i2^j+1, (i+1)2^j]`) holds the weighted node sum

.. math::

    s_{[a,b]} = \sum_{j=a}^{b} w\,(1-\alpha)^{b-j} v_j

(:math:`v_j = g_j` and :math:`w = \alpha` for the momentum; :math:`\alpha = 0, w = 1` gives
the classical prefix-sum tree) and one Gaussian :math:`\zeta_{[a,b]}` drawn once when the
node is formed. The release at step :math:`t` is

.. math::

    \hat m_t = \sum_{[a,b] \in \mathrm{COMPOSE}(1,t)} (1-\alpha)^{t-b}\,
    \big(s_{[a,b]} + \zeta_{[a,b]}\big),

and :math:`\mathrm{COMPOSE}(1,t)` is the set of nodes of the set bits of :math:`t`
(:math:`|\mathrm{COMPOSE}(1,t)| = \mathrm{popcount}(t)`).

:class:`TreeAggregator` is a binary counter: slot :math:`j` holds the live node of length
:math:`2^j` (the nodes of the live slots are exactly :math:`\mathrm{COMPOSE}(1,t)`). Step
:math:`t` merges the :math:`k = \nu_2(t)` lowest slots into the new node
:math:`[t-2^k+1, t]` (a carry), so the work is :math:`O(d)` amortised per step (the
average carry length is below 1) and the memory is :math:`O(d \log T)`. The release is
updated incrementally: :math:`\hat m_t = (1-\alpha)\hat m_{t-1} + (\text{new node}) -
(\text{merged nodes, with their current weights})`, and recomputed exactly from the live
nodes every ``resync_every`` steps (cost ``popcount(t)`` vector operations, i.e. at most
:math:`\log_2 T / 64 < 1` extra vector operation per step on average) so that round-off
cannot drift, whatever :math:`\alpha`. Nothing is ever recomputed over the whole tree.

Only the node formed last at each step, :math:`[t - 2^{\nu_2(t)} + 1, t]`, can appear in a
later :math:`\mathrm{COMPOSE}(1, t')`; the shorter nodes ending at :math:`t` are merged at
once and never released, so they need no noise. The privacy accounting
(:func:`dpbounds.privacy.tree.max_nodes_per_sample`) counts every node of the tree, which
is conservative for this release.

Provenance: the dyadic node set, COMPOSE and the node identities are DERIVED in
``tran_cutkosky.md`` §3–4 (the paper's Algorithm 3 box is lost); the binary-counter
implementation is ours.

Everything here is array-API code: pass ``xp`` (``numpy``, ``cupy``, ``array_api_strict``
or any array-api-compat namespace); no NumPy-only call is made on the arrays.

Example
-------
>>> import numpy as np
>>> from dpbounds.algorithms.tree_aggregation import TreeAggregator
>>> rng = np.random.default_rng(0)
>>> tree = TreeAggregator((1, 3), alpha=0.1, xp=np)
>>> m = np.zeros((1, 3))
>>> for t in range(1, 101):
...     g = rng.standard_normal((1, 3))
...     m = 0.9 * m + 0.1 * g
...     m_hat = tree.step(g)          # no node noise: the exact momentum
>>> bool(np.allclose(m_hat, m, rtol=0, atol=1e-13))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dpbounds._validation import check_closed_interval, check_int, check_nonnegative
from dpbounds.provenance import TRAN_CUTKOSKY, Provenance, Source

__all__ = ["TREE_AGGREGATION_SOURCE", "TreeAggregator"]

#: Citation of the tree identities implemented here.
TREE_AGGREGATION_SOURCE = Source(
    TRAN_CUTKOSKY,
    "Algorithm 1 and Algorithm 3 (COMPOSE), §3 and App. A, D.1",
    Provenance.DERIVED,
    "dyadic node set, COMPOSE and m_t = sum_COMPOSE (1-alpha)^(t-b) s_[a,b] derived in "
    "tran_cutkosky.md §3-4; the online binary-counter implementation is ours",
)


def _namespace(xp: Any, like: Any = None) -> Any:
    if xp is not None:
        return xp
    if like is not None:
        import array_api_compat

        return array_api_compat.array_namespace(like)
    import array_api_compat.numpy as np_compat

    return np_compat


# The dyadic node set and COMPOSE are *defined* in dpbounds.privacy.tree (dyadic_nodes,
# compose, nodes_ending_at); the accounting uses those. The two bit tricks below are the O(1)
# forms the online binary counter needs at every step (a carry of length ν₂(t)), not a second
# definition: tests/algorithms/test_tree_aggregation.py checks node_formed_at(t) ==
# nodes_ending_at(t)[-1] and the counter's live nodes == compose(1, t) for every t.
def _trailing_zeros(t: int) -> int:
    return (t & -t).bit_length() - 1


def node_formed_at(t: int) -> tuple[int, int]:
    """The released node formed at step ``t``: ``[t - 2^k + 1, t]`` with ``k = ν₂(t)``.

    It is the longest dyadic node ending at ``t``, and the only node ending at ``t`` that
    any later ``COMPOSE(1, t')`` uses. Algorithms use it to give the node its noise level
    (Algorithm 2 has two). Equal to ``dpbounds.privacy.tree.nodes_ending_at(t)[-1]`` (the
    definition), computed in O(1) for the per-step loop.

    >>> node_formed_at(12)
    (9, 12)
    """
    t = check_int("t", t, minimum=1)
    return t - (1 << _trailing_zeros(t)) + 1, t


def compose_noise_variance(t: int, alpha: float, sigma: float = 1.0) -> float:
    r"""Per-coordinate variance of :math:`\hat m_t - m_t` for node noise :math:`N(0,\sigma^2)`.

    .. math:: \sigma^2 \sum_{[a,b] \in \mathrm{COMPOSE}(1,t)} (1-\alpha)^{2(t-b)}
              \le \sigma^2\,\mathrm{popcount}(t)

    (``tran_cutkosky.md`` Lemma 12, DERIVED). The nodes are
    :func:`dpbounds.privacy.tree.compose` ``(1, t)`` (the single definition of COMPOSE).

    >>> compose_noise_variance(6, 0.0)    # two nodes, [1,4] and [5,6]
    2.0
    """
    from dpbounds.privacy.tree import compose

    t = check_int("t", t, minimum=1)
    alpha = check_closed_interval("alpha", alpha, 0.0, 1.0)
    sigma = check_nonnegative("sigma", sigma)
    log_decay = _log1m(alpha)
    total = math.fsum(_decay_pow(log_decay, 2 * (t - b)) for _, b in compose(1, t))
    if sigma > math.sqrt(_FLOAT_MAX / max(total, 1.0)):
        raise ValueError(f"sigma = {sigma!r} gives a variance beyond the float64 range")
    return sigma**2 * total


_FLOAT_MAX = 1.7976931348623157e308


def _log1m(alpha: float) -> float:
    return -math.inf if alpha >= 1.0 else math.log1p(-alpha)


def _decay_pow(log_decay: float, n: int) -> float:
    """(1-alpha)^n from log1p(-alpha); exact 1 at n = 0, underflows to 0, never overflows."""
    if n == 0:
        return 1.0
    return math.exp(n * log_decay) if log_decay != -math.inf else 0.0


@dataclass(frozen=True)
class LiveNode:
    """A node of COMPOSE(1, t): interval ``[start, end]``, exact sum and its noise."""

    start: int
    end: int
    node_sum: Any
    noise: Any
    #: the released (noisy) node value: ``node_sum + noise``, or a grid release of node_sum
    noisy: Any = None


class TreeAggregator:
    r"""Online tree aggregation of :math:`s_t = \sum_{j\le t} w(1-\alpha)^{t-j} v_j`.

    Batched: every array has shape ``shape`` (``(trials, d)`` in the algorithms); each
    trial's node noise is whatever the caller passes, normally drawn from that trial's own
    stream.

    Parameters
    ----------
    shape:
        Shape of one input vector, e.g. ``(trials, d)``.
    alpha:
        Momentum weight in ``[0, 1]``; the decay per step is ``1 - alpha``.
    xp:
        Array namespace. Default: NumPy through array-api-compat.
    dtype:
        Floating dtype of the state (default ``xp.float64``).
    input_weight:
        ``w`` above. Default ``alpha`` (momentum) or ``1`` when ``alpha == 0`` (prefix sums).
    resync_every:
        Recompute the release exactly from the live nodes every this many steps.

    Notes
    -----
    Work per step: the carry merges ``ν₂(t)`` nodes (amortised < 1), plus O(1) vector
    operations for the incremental release; memory: ``bit_length(t)`` node sums and noises.
    """

    def __init__(
        self,
        shape: Sequence[int],
        alpha: float,
        *,
        xp: Any = None,
        dtype: Any = None,
        input_weight: float | None = None,
        resync_every: int = 64,
    ) -> None:
        self.alpha = check_closed_interval("alpha", alpha, 0.0, 1.0)
        self.shape = tuple(check_int("shape", s, minimum=1) for s in shape)
        self.resync_every = check_int("resync_every", resync_every, minimum=1)
        self.xp = _namespace(xp)
        self.dtype = self.xp.float64 if dtype is None else dtype
        if input_weight is None:
            input_weight = self.alpha if self.alpha > 0 else 1.0
        self.input_weight = float(input_weight)
        self._log_decay = _log1m(self.alpha)
        self._decay = 1.0 - self.alpha
        self.t = 0
        # slot j: (start, end, exact node sum, node noise, released node value) of the live
        # node of length 2^j; the release is computed from the released values only
        self._slots: list[tuple[int, int, Any, Any, Any] | None] = []
        self._release = self.xp.zeros(self.shape, dtype=self.dtype)

    # -- state ---------------------------------------------------------------------------
    @property
    def release(self) -> Any:
        r"""The current release :math:`\hat m_t` (zeros before the first step)."""
        return self._release

    def live_nodes(self) -> list[LiveNode]:
        """The nodes of COMPOSE(1, t), longest (oldest) first."""
        return [
            LiveNode(*slot) for slot in reversed(self._slots) if slot is not None
        ]

    def next_node(self) -> tuple[int, int]:
        """The node the next :meth:`step` forms (for choosing its noise level)."""
        return node_formed_at(self.t + 1)

    def exact_sum(self) -> Any:
        r"""The noise-free :math:`s_t = \sum_{\mathrm{COMPOSE}(1,t)}(1-\alpha)^{t-b}s_{[a,b]}`."""
        out = self.xp.zeros(self.shape, dtype=self.dtype)
        for node in self.live_nodes():
            out = out + _decay_pow(self._log_decay, self.t - node.end) * node.node_sum
        return out

    # -- update --------------------------------------------------------------------------
    def step(self, value: Any, node_noise: Any = None,
             node_release: Callable[[Any], Any] | None = None) -> Any:
        r"""Add :math:`v_t` and return :math:`\hat m_t`.

        Parameters
        ----------
        value:
            The input :math:`v_t` (e.g. the gradient :math:`g_t`), of shape ``shape``.
        node_noise:
            The Gaussian :math:`\zeta` of the node formed now (:meth:`next_node`), already
            scaled by its standard deviation; ``None`` for no noise.
        node_release:
            Instead of ``node_noise``: a function of the exact node sum returning its released
            value (a grid release, :mod:`dpbounds.algorithms._grid`); the release
            :math:`\hat m_t` is then computed from the released values alone (adding the
            difference as a float noise would let the sum's rounding into it).
        """
        if tuple(value.shape) != self.shape:
            raise ValueError(f"value must have shape {self.shape}, got {tuple(value.shape)}")
        if node_noise is not None and tuple(node_noise.shape) != self.shape:
            raise ValueError(
                f"node_noise must have shape {self.shape}, got {tuple(node_noise.shape)}"
            )
        t = self.t + 1
        k = _trailing_zeros(t)
        node_sum = self.input_weight * value
        removed = None  # merged nodes' current contribution to the release
        if node_noise is not None and node_release is not None:
            raise ValueError("pass node_noise or node_release, not both")
        for j in range(k):
            start, end, s, z, released = self._slots[j]  # type: ignore[misc]
            w = _decay_pow(self._log_decay, t - end)  # = (1-alpha)^(2^j)
            node_sum = node_sum + w * s
            contrib = w * released
            removed = contrib if removed is None else removed + contrib
            self._slots[j] = None
        if len(self._slots) <= k:
            self._slots.extend([None] * (k + 1 - len(self._slots)))
        if node_release is not None:
            new = node_release(node_sum)
        else:
            new = node_sum if node_noise is None else node_sum + node_noise
        self._slots[k] = (t - (1 << k) + 1, t, node_sum, node_noise, new)
        self.t = t
        if t % self.resync_every == 0:
            self._release = self._recompute()
        else:
            rel = self._decay * self._release + new
            if removed is not None:
                rel = rel - removed
            self._release = rel
        return self._release

    def _recompute(self) -> Any:
        out = self.xp.zeros(self.shape, dtype=self.dtype)
        for node in self.live_nodes():
            out = out + _decay_pow(self._log_decay, self.t - node.end) * node.noisy
        return out


class ComposeAndSumAggregator(TreeAggregator):
    """The same mechanism, released by summing COMPOSE(1, t) at every step.

    Node sums are formed once (binary counter) but the release is recomputed from the
    ``popcount(t)`` live nodes at every step: O(d log T) work per step. This is the natural
    direct implementation; it exists for the benchmark and as a second oracle.
    """

    def step(self, value: Any, node_noise: Any = None,  # noqa: D102
             node_release: Callable[[Any], Any] | None = None) -> Any:
        super().step(value, node_noise, node_release)
        self._release = self._recompute()
        return self._release


def tree_momentum_reference(
    values: Any,
    alpha: float,
    node_noises: Any = None,
    *,
    xp: Any = None,
    compose: Callable[[int, int], Sequence[tuple[int, int]]] | None = None,
    input_weight: float | None = None,
) -> Any:
    r"""Direct (slow) tree aggregation: COMPOSE(1, t) and node sums from scratch each step.

    .. math:: \hat m_t = \sum_{[a,b]\in\mathrm{COMPOSE}(1,t)} (1-\alpha)^{t-b}
              \Big(\sum_{j=a}^{b} w(1-\alpha)^{b-j} v_j + \zeta_{[a,b]}\Big)

    :math:`O(T^2 d)` work in total. A test and benchmark oracle for :class:`TreeAggregator`.

    Parameters
    ----------
    values:
        Array of shape ``(T, *shape)``: ``values[t-1]`` is :math:`v_t`.
    alpha:
        Momentum weight in ``[0, 1]``.
    node_noises:
        ``None`` or an array of shape ``(T, *shape)``: ``node_noises[b-1]`` is the noise of the
        released node ending at ``b`` (the one :func:`node_formed_at` ``(b)`` returns); a
        COMPOSE node that is not of this form raises ``KeyError``.
    compose:
        ``compose(a, b) -> [(a1, b1), ...]``; default
        :func:`dpbounds.privacy.tree.compose` (an independent implementation of COMPOSE).
    input_weight:
        As in :class:`TreeAggregator`.

    Returns
    -------
    Array of shape ``(T, *shape)`` with :math:`\hat m_1, \dots, \hat m_T`.
    """
    xp = _namespace(xp, values)
    alpha = check_closed_interval("alpha", alpha, 0.0, 1.0)
    if compose is None:
        from dpbounds.privacy.tree import compose as _compose

        compose = _compose
    if input_weight is None:
        input_weight = alpha if alpha > 0 else 1.0
    log_decay = _log1m(alpha)
    if not bool(xp.all(xp.isfinite(values))):
        raise ValueError("values must be finite")
    n_steps = values.shape[0]
    noise_of = {}
    if node_noises is not None:
        if tuple(node_noises.shape) != tuple(values.shape):
            raise ValueError(
                f"node_noises must have shape {tuple(values.shape)}, "
                f"got {tuple(node_noises.shape)}"
            )
        noise_of = {node_formed_at(b): b - 1 for b in range(1, n_steps + 1)}
    out = []
    for t in range(1, n_steps + 1):
        m = xp.zeros(values.shape[1:], dtype=values.dtype)
        for a, b in compose(1, t):
            a, b = int(a), int(b)
            # weights w(1-alpha)^(b-j), j = a..b, as one vector: one weighted sum per node
            weights = xp.asarray(
                [input_weight * _decay_pow(log_decay, b - j) for j in range(a, b + 1)],
                dtype=values.dtype,
            )
            block = values[a - 1 : b, ...]
            s = xp.tensordot(weights, block, axes=1)
            if node_noises is not None:
                s = s + node_noises[noise_of[(a, b)], ...]
            m = m + _decay_pow(log_decay, t - b) * s
        out.append(m)
    return xp.stack(out, axis=0)
