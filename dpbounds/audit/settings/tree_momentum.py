"""Audit settings of tree-momentum NSGD and sensitivity-reduced NSGD (Tran & Cutkosky),
black-box and white-box (the tree's nodes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbounds import algorithms as alg
from dpbounds.audit.neighbours import LinearObjective
from dpbounds.audit.settings._common import (
    _PAIR_TEXT,
    CLIP,
    GAUSS_DELTA,
    GAUSS_EPS,
    RECORD_NORM,
    REPLACE_ONE,
    AuditSpec,
    Setting,
    _direction_features,
    _pair,
    register_audit,
)
from dpbounds.backend import to_numpy
from dpbounds.privacy import Neighbouring

TREE_DIM = 32


def _tree_setting(epochs: int, **extra: Any) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=TREE_DIM, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None, **extra)
        return Setting(pair, kwargs, _direction_features,
                       "step directions (the noisy momentum up to scale, one per step)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, "
                       f"d = {TREE_DIM}, one record (in every step)",
                       ("linear", "gaussian-lr"))
    return build


def _tree_node_tap(all_coordinates: bool = False) -> Any:
    """Record every noisy node Algorithm 1's tree forms (node sum plus its Gaussian; the
    releases are fixed linear combinations of them): its signal coordinate (column 0, a
    ``(trials,)`` copy), or with ``all_coordinates`` every coordinate (a ``(trials, d)``
    copy: a node noise that is not i.i.d. per coordinate enters the statistic)."""
    from dpbounds.algorithms.tree_aggregation import TreeAggregator
    from dpbounds.audit.mutation import patched_method

    releases: list[np.ndarray] = []

    def make(original: Any) -> Any:
        def step(self: Any, value: Any, node_noise: Any = None,
                 node_release: Any = None) -> Any:
            out = original(self, value, node_noise, node_release)
            # the node formed at step t sits in slot trailing_zeros(t); its released value
            node = to_numpy(self._slots[(self.t & -self.t).bit_length() - 1][4])
            releases.append(np.array(node if all_coordinates else node[:, 0], dtype=float,
                                     copy=True))
            return out
        return step

    return patched_method(TreeAggregator, "step", make, releases)


def _tree_node_tap_all() -> Any:
    """:func:`_tree_node_tap` recording every coordinate of every node."""
    return _tree_node_tap(all_coordinates=True)


def _tree_release_features(res: Any, releases: list) -> np.ndarray:
    # (trials, T): the e1 coordinate of each node; with every coordinate tapped (trials, T d),
    # node by node (node 1's d coordinates first)
    out = np.stack(releases, axis=1)
    return out.reshape(out.shape[0], -1)


def _tree_white_box(epochs: int) -> Callable[[Neighbouring, float, float], Setting]:
    def build(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
        pair = _pair(relation, dim=1, radius=RECORD_NORM)
        kwargs = dict(epsilon=epsilon, delta=delta, epochs=epochs, step_size=1.0,
                      clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None)
        return Setting(pair, kwargs, _tree_release_features,
                       f"the tree's {epochs} noisy nodes (white-box; the signal coordinate)",
                       _PAIR_TEXT[relation] + f", r = {RECORD_NORM:g} > C = {CLIP:g}, d = 1, "
                       f"one record, T = {epochs}", ("linear",), tap=_tree_node_tap)
    return build


# ----------------------------------------------------------------------------------------
# white-box, a record whose gradient changes sign between steps (issue 34 item 5, round-2
# adversary: noise reused across the nodes of a tree level)
# ----------------------------------------------------------------------------------------
#: The public drift of the sign-clock pair: its regulariser ``-DRIFT x_2`` has the constant
#: gradient ``-DRIFT e2``, far above the tree's noise (sigma ~ 2.6), so every normalised step
#: moves ``x_2`` by the step size to ~1e-11 and ``round(x_2 / eta)`` counts the steps taken.
DRIFT = float(2 ** 20)


class SignClockObjective(LinearObjective):
    r"""Audit records whose gradient changes sign between steps, by a public clock.

    In ``d = 2``: the public regulariser :math:`-\Lambda x_2` (:data:`DRIFT`) pushes every
    normalised step along :math:`+e_2`, so at the query point of step :math:`t` (1-based,
    :math:`x_0 = 0`) :math:`k = \mathrm{round}(x_2/\eta) = t - 1`, whatever the noise; the
    record :math:`c_i` contributes :math:`s(t) c_i` with the signs
    :math:`s = +, +, -, -, +, \dots` (period 4: ``k mod 4 < 2``). Its gradient norm is
    :math:`\lVert c_i\rVert` at every step, so clipping and the sensitivity :math:`2C` are
    those of the constant record; only the sign pattern differs. With the tree's momentum
    weight 1 (one record: :math:`\alpha = 1/n = 1`) the node formed at step :math:`t` holds
    :math:`s(t) \bar c` plus its noise: leaves 1 and 3 (the same level) hold opposite signs,
    so a noise shared by the nodes of a level leaves their difference exact
    (``tree_level_reuse``), while the correct run's transcript is the constant pair's up to the
    signs (the same GDP mu). DERIVED (here).

    The losses are :math:`s(x)\langle c_i, x\rangle` (piecewise; the audit evaluates none).
    ``step_size`` must be the run's :math:`\eta`."""

    name = "sign clock (audit)"

    def __init__(self, gradients: Any, *, step_size: float, **kwargs: Any) -> None:
        super().__init__(gradients, **kwargs)
        if self.d < 2:
            raise ValueError(f"the clock needs d >= 2 (x_2 counts the steps), got d = {self.d}")
        self.step_size = float(step_size)

    def _signs(self, x: Any) -> Any:
        xp = self.xp
        k = xp.round(x[:, 1] / self.step_size)
        return xp.where(xp.remainder(k, 4.0) < 2.0, 1.0, -1.0)

    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        return self._signs(x)[:, None] * super().sample_losses(x, idx)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        return self._signs(x)[:, None, None] * super().sample_grads(x, idx)

    def _data_grad(self, x: Any, idx: Any) -> Any:
        return self._signs(x)[:, None] * super()._data_grad(x, idx)

    def regularizer(self, x: Any) -> Any:
        return -DRIFT * x[:, 1]

    def regularizer_grad(self, x: Any) -> Any:
        super().regularizer_grad(x)  # the tap's copy of the query point
        xp = self.xp
        e2 = xp.asarray([0.0, -DRIFT] + [0.0] * (self.d - 2), dtype=x.dtype)
        return xp.broadcast_to(e2[None, :], x.shape) * 1.0

    def _solve(self) -> Any:
        raise ValueError("the sign-clock audit objective has no minimum (a linear drift)")


def sign_clock_pair(step_size: float = 1.0) -> tuple[SignClockObjective, SignClockObjective]:
    """``D = {+r e1}``, ``D' = {-r e1}`` in ``d = 2`` as :class:`SignClockObjective` records
    (one record, its gradient ``s(t) r e1`` flipped)."""
    e = np.array([[RECORD_NORM, 0.0]])
    return (SignClockObjective(e, step_size=step_size, l2_radius=RECORD_NORM),
            SignClockObjective(-e, step_size=step_size, l2_radius=RECORD_NORM))


#: Steps of the sign-clock audit: 3 (nodes [1,1], [1,2], [3,3]: leaves 1 and 3 share a level
#: and hold opposite signs).
SIGN_CLOCK_T = 3


def _tree_sign_clock(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    kwargs = dict(epsilon=epsilon, delta=delta, epochs=SIGN_CLOCK_T, step_size=1.0,
                  clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None)
    return Setting(sign_clock_pair(1.0), kwargs, _tree_release_features,
                   f"the tree's {SIGN_CLOCK_T} noisy nodes (white-box; the signal coordinate)",
                   f"D = {{+r e1}}, D' = {{-r e1}} with the gradient's sign s(t) = +, +, - "
                   f"set by a public clock (x_2, pushed one step size per step by the "
                   f"regulariser -{DRIFT:g} x_2), r = {RECORD_NORM:g} > C = {CLIP:g}, d = 2, "
                   f"one record, T = {SIGN_CLOCK_T}", ("linear",), tap=_tree_node_tap)


# a normalised step releases a direction: more runs make up for the noisy norm
register_audit(AuditSpec("tree_momentum_nsgd", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=1), GAUSS_EPS, GAUSS_DELTA,
                    "tree-momentum NSGD (Tran & Cutkosky Alg. 1)", trials=40_000), rank=140)
register_audit(AuditSpec("sensitivity_reduced_nsgd", alg.sensitivity_reduced_nsgd, (REPLACE_ONE,),
                    _tree_setting(epochs=2, mixing=1.0, noise_split=0.99), GAUSS_EPS, GAUSS_DELTA,
                    "sensitivity-reduced NSGD (Tran & Cutkosky Alg. 2, reconstructed)",
                    trials=40_000), rank=150)

# white-box: the auditor sees the tree's noisy nodes (Nasr et al. 2023's threat model)
for _rank, _T in ((160, 3), (170, 8)):
    register_audit(AuditSpec(f"tree_momentum_nsgd_T{_T}", alg.tree_momentum_nsgd, (REPLACE_ONE,),
                        _tree_white_box(_T), GAUSS_EPS, GAUSS_DELTA,
                        f"tree-momentum NSGD, T = {_T}, white-box (the tree's nodes)",
                        trials=50_000), rank=_rank)
register_audit(AuditSpec(f"tree_momentum_nsgd_T{SIGN_CLOCK_T}_signs", alg.tree_momentum_nsgd,
                         (REPLACE_ONE,), _tree_sign_clock, GAUSS_EPS, GAUSS_DELTA,
                         f"tree-momentum NSGD, T = {SIGN_CLOCK_T}, white-box, the record's "
                         "gradient changing sign between steps", trials=50_000,
                         side_channel=False), rank=165)



# ----------------------------------------------------------------------------------------
# white-box in d = 4 (issue 34 item 5: a canary in several coordinates, so that the node
# noise's independence across coordinates enters the statistic)
# ----------------------------------------------------------------------------------------
#: Dimension and steps of the multi-coordinate white-box tree audit. The one record is
#: ``r u``, ``u = (1, -1, 1, -1) / 2`` (unit, orthogonal to ``(1, 1, 1, 1)``; ``r u`` and its
#: clipped ``C u`` exact in binary): with one record the momentum weight is 1 and the node
#: formed at step t holds ``+-C u`` plus its Gaussian, the d = 1 pair's release rotated onto
#: ``u`` (the change 2C along u, i.i.d. noise in every direction: the same GDP mu). A node
#: noise scaled by ``1 / sqrt(d)`` (per-coordinate sigma / 2: mu x 2) or one draw shared by
#: a node's coordinates (on the diagonal, orthogonal to u: the change is noise free) is
#: refuted; on the d = 1 pairs (``_T3``, ``_T8``) neither bug changes a bit.
TREE_D4_DIM, TREE_D4_T = 4, 3


def tree_d4_pair(dim: int = TREE_D4_DIM) -> tuple[LinearObjective, LinearObjective]:
    """``D = {r u}``, ``D' = {-r u}``, ``u = (1, -1, ...) / sqrt(d)`` (``dim`` even, one
    record, its gradient flipped)."""
    if dim < 2 or dim % 2:
        raise ValueError(f"dim must be even and >= 2 (u orthogonal to (1, ..., 1)), got {dim}")
    u = np.array([(-1.0) ** i for i in range(dim)]) / np.sqrt(dim)
    return (LinearObjective((RECORD_NORM * u)[None, :], l2_radius=RECORD_NORM),
            LinearObjective((-RECORD_NORM * u)[None, :], l2_radius=RECORD_NORM))


def _tree_white_box_d4(relation: Neighbouring, epsilon: float, delta: float) -> Setting:
    kwargs = dict(epsilon=epsilon, delta=delta, epochs=TREE_D4_T, step_size=1.0,
                  clip_threshold=CLIP, neighbouring=REPLACE_ONE, trace=None)
    return Setting(tree_d4_pair(), kwargs, _tree_release_features,
                   f"the tree's {TREE_D4_T} noisy nodes (white-box; every coordinate)",
                   f"D = {{r u}}, D' = {{-r u}}, u = (1, -1, 1, -1) / 2 (one record, its "
                   f"gradient flipped; the nodes hold +-C u), r = {RECORD_NORM:g} > "
                   f"C = {CLIP:g}, d = {TREE_D4_DIM}, T = {TREE_D4_T}", ("linear",),
                   tap=_tree_node_tap_all)


register_audit(AuditSpec(f"tree_momentum_nsgd_T{TREE_D4_T}_d4", alg.tree_momentum_nsgd,
                         (REPLACE_ONE,), _tree_white_box_d4, GAUSS_EPS, GAUSS_DELTA,
                         f"tree-momentum NSGD, T = {TREE_D4_T}, white-box, d = {TREE_D4_DIM} "
                         "(canary in every coordinate)", trials=50_000, side_channel=False),
               rank=162)
