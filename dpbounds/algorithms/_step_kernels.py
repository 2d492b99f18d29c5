r"""Compiled per-step loops of the first-order DP algorithms (optional: the ``fast`` extra).

On the verification problems (:class:`~dpbounds.objectives.HuberWell` and
:class:`~dpbounds.objectives.QuadraticObjective`, NumPy backend, float64) a step of 4 batched
trials at :math:`d\le16` is some hundred floating-point operations, and the array-API loop
spends 40-150 us of CPU per step on Python and NumPy call overhead. The loops here run a whole
block of steps in one compiled call (0.5-1 us per step of 4 trials at d = 4, 1.5-3 us at
d = 16, about half of it drawing the noise with NumPy: ``bench/bench_step_loop.py``):

* :func:`tree_nsgd_steps`: Tran & Cutkosky Algorithm 1 (tree-aggregated momentum, normalized
  step) and the reconstructed Algorithm 2 (lag-S sensitivity-reduced query, two noise levels);
* :func:`noisy_sgd_steps`: DP-SGD (per-sample clipping) and DP-NSGD (normalisation
  :math:`g/(\lVert g\rVert+r)`), sampling without replacement;
* :func:`projected_sgd_steps`: noisy projected SGD (Kamath's Algorithm 3).

What they do not do: draw random numbers. Mini-batches and noise are drawn by the caller, in
blocks, from the trials' own :class:`~dpbounds.backend.TrialRandom` streams (so trial ``k``
depends only on ``(seed, k)`` and :func:`dpbounds.audit.scaled_noise` still reaches every noise
draw), and the NumPy path of each algorithm consumes the very same blocks. Each loop repeats the
NumPy path's arithmetic in the same order (the tree's binary counter with its incremental release
and periodic resync included), so the two agree to round-off (fused multiply-adds and the order
of the norms' sums differ); trials are processed one after another, so a trial's bits do not
depend on the number of trials. :func:`active` says whether the compiled path applies to a run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.objectives._logistic_kernel import _identity_decorator, numba
from dpbounds.objectives._step_kernel import (
    ProblemData,
    problem_data,
    sample_direction,
    shared_term,
)

__all__ = []

# Any: numba's stubs do not list the private ``_nrt`` option the loops pass
_jit: Any = numba.njit if numba is not None else _identity_decorator
_FAST = {"contract"}  # fused multiply-adds, no reordering
#: The loops run without numba's reference counting (``_nrt=False``): every call of a helper
#: that takes arrays would otherwise count references atomically, which cost more than the
#: arithmetic of a step (measured 0.6 against 0.08 us per step of 4 trials at d = 4). They
#: allocate nothing: their scratch rows (``work``, :data:`WORK_ROWS` x d) come from the caller.
_LOOP = dict(fastmath=_FAST, boundscheck=False, cache=True, _nrt=False)
#: Rows of scratch the loops take.
WORK_ROWS = 10


def active(objective: ObjectiveProtocol, x: Any) -> ProblemData | None:
    """The objective's data for the compiled loops, or ``None`` to take the NumPy path (numba
    missing, ``DPBOUNDS_KERNELS=numpy``, another objective or backend, a non-float64 state)."""
    data = problem_data(objective)  # None unless a NumPy objective: x is then an ndarray
    return data if data is not None and x.dtype == np.float64 else None


def step_limit(objective: ObjectiveProtocol) -> int:
    """Most steps a run on ``objective`` accepts: :data:`~dpbounds.algorithms._common.
    MAX_COMPILED_STEPS` when it runs on a compiled loop, else ``MAX_STEPS``."""
    from dpbounds.algorithms._common import MAX_COMPILED_STEPS, MAX_STEPS

    return MAX_COMPILED_STEPS if problem_data(objective) is not None else MAX_STEPS


def tree_levels(n_steps: int, alpha: float) -> tuple[np.ndarray, float, float]:
    """``(w, 1 - alpha, log1p(-alpha))`` with ``w[j] = (1 - alpha)^(2^j)``, the weight of a
    merged node of length ``2^j`` (as :class:`~dpbounds.algorithms.tree_aggregation.TreeAggregator`
    computes it)."""
    from dpbounds.algorithms.tree_aggregation import _decay_pow, _log1m

    log_decay = _log1m(alpha)
    levels = n_steps.bit_length() + 1
    w = np.array([_decay_pow(log_decay, 1 << j) for j in range(levels)])
    return w, 1.0 - alpha, log_decay


@_jit(**_LOOP, inline="always")
def _resync(t, q, ss, sz, rel, log_decay):  # pragma: no cover - compiled
    """``rel[q]`` recomputed from the live nodes of step ``t`` (slot ``lev`` is live where bit
    ``lev`` of ``t`` is set), longest first, as :meth:`TreeAggregator._recompute` does."""
    d = rel.shape[1]
    for j in range(d):
        rel[q, j] = 0.0
    for lev in range(ss.shape[1] - 1, -1, -1):
        if (t >> lev) & 1:
            age = t & ((1 << lev) - 1)
            if age == 0:
                w = 1.0
            elif log_decay == -math.inf:
                w = 0.0
            else:
                w = math.exp(age * log_decay)
            for j in range(d):
                rel[q, j] = rel[q, j] + w * (ss[q, lev, j] + sz[q, lev, j])


# The loops run the steps in the outer loop and the trials in the inner one: a step is one
# long dependency chain (norms, square roots, divisions), and the trials' independent chains
# overlap in the CPU. Each trial's arithmetic is the same whatever the number of trials.
@_jit(**_LOOP)
def tree_nsgd_steps(kind, E, Q, qd, b, G, delta,
                    batches, j0, S, B, noise, t0, nsteps, lag,
                    clip, diff_clip, gamma, alpha, eta, wlev, decay, log_decay, resync,
                    x, ss, sz, rel, m_exact, tau, out, x_prev, m_last, past_x, past_m, work,
                    record, norms):  # pragma: no cover - compiled
    r"""Steps ``t0 + 1 .. t0 + nsteps`` of Algorithm 1 (``lag = False``) or 2 (``lag = True``).

    ``batches[k, e, :]`` is trial ``k``'s permutation of epoch ``e`` of the block (Algorithm 2:
    one epoch, the run's single permutation); the block's step ``j0 + s`` uses epoch
    ``(j0 + s) // S``, position ``(j0 + s) % S`` (Algorithm 2: ``(t - 1) % S``). ``noise[k, s]``
    is the node noise of step ``t0 + s + 1``, already scaled (zeros without noise). On return
    ``x_prev`` and ``m_last`` hold the last step's ``x_{t-1}`` and :math:`\hat m_t` (for the
    diagnostics), ``out[k]`` the iterate at ``tau[k]`` if it was reached. With ``record``,
    ``norms[k, s]`` gets step ``s``'s largest per-sample gradient norm and largest
    contribution norm (clipped, or Algorithm 2's mixed query term) for the run's transcript.
    """
    trials, d = x.shape
    g, gi, gp, raw, sh, sh2, ns = work[0], work[1], work[2], work[3], work[4], work[5], work[6]
    xo = work[8:9]
    one_minus = 1.0 - gamma
    for s in range(nsteps):
        t = t0 + s + 1
        k = 0
        while (t >> k) & 1 == 0:
            k += 1
        resync_now = t % resync == 0
        if lag:
            e = 0
            i = (t - 1) % S
        else:
            e = (j0 + s) // S
            i = (j0 + s) % S
        later = lag and t > S
        for q in range(trials):
            if tau[q] == t:
                for j in range(d):
                    out[q, j] = x[q, j]
            shared_term(kind, Q, qd, b, x, q, sh)
            if later:
                for j in range(d):
                    xo[0, j] = past_x[q, i, j]
                shared_term(kind, Q, qd, b, xo, 0, sh2)
            # the query p_t (into g) and the mean raw gradient, one pass per sample
            top_raw = 0.0
            top_map = 0.0
            for r in range(B):
                idx = batches[q, e, i * B + r]
                scale, nrm = sample_direction(kind, E, G, delta, x, q, sh, idx, gi)
                c = scale * (clip / max(nrm, clip))
                top_raw = max(top_raw, nrm)
                if later:
                    scale2, _ = sample_direction(kind, E, G, delta, xo, 0, sh2, idx, gp)
                    s2 = 0.0
                    for j in range(d):
                        v = gi[j] * scale - gp[j] * scale2
                        gp[j] = v
                        s2 += v * v
                    fd = diff_clip / max(math.sqrt(s2), diff_clip)
                    mv = 0.0
                    for j in range(d):
                        v = gamma * (gi[j] * c) + one_minus * (gp[j] * fd)
                        if record:  # the transcript's norm only (off the step's path)
                            mv += v * v
                        g[j] = v if r == 0 else g[j] + v
                        raw[j] = gi[j] * scale if r == 0 else raw[j] + gi[j] * scale
                    if record:
                        top_map = max(top_map, math.sqrt(mv))
                else:
                    top_map = max(top_map, nrm * (clip / max(nrm, clip)))
                    for j in range(d):
                        g[j] = gi[j] * c if r == 0 else g[j] + gi[j] * c
                        raw[j] = gi[j] * scale if r == 0 else raw[j] + gi[j] * scale
            if record:
                norms[q, s, 0] = top_raw
                norms[q, s, 1] = top_map
            # the tree step: new node (with the k merged ones), release, estimate, in one pass
            # (when the release is resynchronised, it is recomputed from the slots first)
            if resync_now:
                for j in range(d):
                    ns[j] = alpha * (g[j] / B)
                    for lev in range(k):
                        ns[j] = ns[j] + wlev[lev] * ss[q, lev, j]
                    ss[q, k, j] = ns[j]
                    sz[q, k, j] = noise[q, s, j]
                _resync(t, q, ss, sz, rel, log_decay)
            s2 = 0.0
            for j in range(d):
                gj = g[j] / B
                if not resync_now:
                    nsj = alpha * gj
                    remj = 0.0
                    for lev in range(k):
                        w = wlev[lev]
                        sv = ss[q, lev, j]
                        nsj = nsj + w * sv
                        cv = w * (sv + sz[q, lev, j])
                        remj = cv if lev == 0 else remj + cv
                    ss[q, k, j] = nsj
                    z = noise[q, s, j]
                    sz[q, k, j] = z
                    v = decay * rel[q, j] + (nsj + z)
                    rel[q, j] = v - remj if k > 0 else v
                m = rel[q, j] + one_minus * past_m[q, i, j] if later else rel[q, j]
                m_last[q, j] = m
                s2 += m * m
                if lag:
                    past_m[q, i, j] = m
                    past_x[q, i, j] = x[q, j]
                    m_exact[q, j] = (1.0 - alpha) * m_exact[q, j] + alpha * (raw[j] / B)
                else:
                    m_exact[q, j] = (1.0 - alpha) * m_exact[q, j] + alpha * gj
            nrm = math.sqrt(s2)
            safe = nrm if nrm > 0 else 1.0
            for j in range(d):
                x_prev[q, j] = x[q, j]
                x[q, j] = x[q, j] - eta * m_last[q, j] / safe


@_jit(**_LOOP)
def noisy_sgd_steps(kind, E, Q, qd, b, G, delta, batches, j0, noise, noisy, nsteps,
                    normalize, param, eta, x, work, record, norms):  # pragma: no cover
    """Steps of DP-SGD (clip to ``param``) or DP-NSGD (``g/(||g|| + param)``): step ``s`` uses
    ``batches[k, j0 + s, :]`` and, when ``noisy``, ``noise[k, s]`` (already scaled). With
    ``record``, ``norms[k, s]`` gets the step's largest per-sample gradient norm and largest
    mapped contribution norm (for the run's transcript).
    A sample's scaling is fused into the pass that adds it (a pass per sample and one for the
    step: the small loops' overhead, not the arithmetic, is what a step costs at small d)."""
    trials, d = x.shape
    B = batches.shape[2]
    g, gi, sh = work[0], work[1], work[2]
    for s in range(nsteps):
        for q in range(trials):
            shared_term(kind, Q, qd, b, x, q, sh)
            top_raw = 0.0
            top_map = 0.0
            for r in range(B):
                scale, nrm = sample_direction(kind, E, G, delta, x, q, sh,
                                              batches[q, j0 + s, r], gi)
                f = 1.0 / (nrm + param) if normalize else param / max(nrm, param)
                c = scale * f
                top_raw = max(top_raw, nrm)
                top_map = max(top_map, nrm * f)
                if r == 0:
                    for j in range(d):
                        g[j] = gi[j] * c
                else:
                    for j in range(d):
                        g[j] += gi[j] * c
            if record:
                norms[q, s, 0] = top_raw
                norms[q, s, 1] = top_map
            for j in range(d):
                v = g[j] / B
                if noisy:
                    v = v + noise[q, s, j]
                x[q, j] = x[q, j] - eta * v


@_jit(**_LOOP)
def projected_sgd_steps(kind, E, Q, qd, b, G, delta, batches, j0, noise, noisy, t0, nsteps,
                        n, diameter, Gc, radius, x, work):  # pragma: no cover - compiled
    """Steps ``t0 + 1 ..`` of noisy projected SGD: ``x <- P(x - D/(G' sqrt t) (n g_i + b_t))``
    with ``i = batches[k, j0 + s]`` and, when ``noisy``, ``b_t = noise[k, s]``."""
    trials, d = x.shape
    gi, sh, y = work[0], work[1], work[2]
    for s in range(nsteps):
        t = t0 + s + 1
        c = diameter / (Gc * math.sqrt(t))
        for q in range(trials):
            shared_term(kind, Q, qd, b, x, q, sh)
            scale, _ = sample_direction(kind, E, G, delta, x, q, sh, batches[q, j0 + s], gi)
            s2 = 0.0
            for j in range(d):
                v = n * (gi[j] * scale)
                if noisy:
                    v = v + noise[q, s, j]
                u = x[q, j] - c * v
                y[j] = u
                s2 += u * u
            f = min(1.0, radius / max(math.sqrt(s2), 1e-300))
            for j in range(d):
                x[q, j] = y[j] * f

#: Most steps of noise drawn at once (and run in one compiled call). 1024: at d = 16 and 4
#: trials a block is 512 KiB and stays in L2 between the draw, its scaling and the loop
#: (4096 steps, 2 MiB, did not: Algorithm 2 at d = 16 1.85 against 2.14 us per step, best of 3
#: alternating runs of ``bench/bench_step_loop.py``'s measure(); Algorithm 1 1.63 / 1.64).
MAX_BLOCK = 1024


def block_steps(d: int) -> int:
    """Steps per noise block at dimension ``d`` (any length gives the same bits)."""
    return max(1, min(MAX_BLOCK, (1 << 18) // max(1, d)))


def chunks(start: int, stop: int, size: int, every: int = 0, offset: int = 0):
    """Ranges ``(a, b)`` covering the steps ``start + 1 .. stop``, each at most ``size`` steps
    long and ending at every step ``t`` with ``(t - offset) % every == 0`` (a record point;
    ``every = 0``: none), so a compiled call never runs past a step that must be recorded."""
    a = start
    while a < stop:
        b = min(stop, a + size)
        if every:
            first = a + 1 + (offset - a - 1) % every
            b = min(b, first)
        yield a, b
        a = b


def sample_block(m: int) -> int:
    """Steps per block of mini-batches of ``m`` indices (``TrialRandom.subsample_steps`` /
    ``integers``). A function of ``m`` only, never of the trials or of the path taken: the
    index stream depends on the block length, and both paths must read the same one."""
    return max(1, min(1024, (1 << 16) // max(1, m)))


_NO_NOISE = np.zeros((1, 1, 1))


def noise_or_none(noise: Any) -> np.ndarray:
    """The block's noise for a compiled loop (a placeholder when the run adds none)."""
    return _NO_NOISE if noise is None else np.ascontiguousarray(noise)
