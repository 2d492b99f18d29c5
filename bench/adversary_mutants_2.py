"""Second round of adversary mutants for ``dpbounds verify`` / ``dpbounds audit`` (issue 34:
"Other mutants, not named here, will be tried").

None of these is in :data:`dpbounds.audit.mutation.MUTANTS`, :data:`dpbounds.verify.mutants.
MUTATIONS` or ``bench/adversary_mutants.py``. Each is applied from OUTSIDE the package by
monkeypatching; the claimed (eps, delta), the ledger (unless said) and the studies' bounds are
untouched. Usage (same harness and output as ``bench/adversary_mutants.py``)::

    PYTHONPATH=$PWD python bench/adversary_mutants_2.py MUTANT -- verify yang.sgd --vary d --quick
    PYTHONPATH=$PWD python bench/adversary_mutants_2.py none -- audit dp_sgd_batched   # control
    python bench/adversary_mutants_2.py --table FILE.jsonl ...

Mutants (privacy effect in brackets; mu = the Gaussian-DP parameter)
-------------------------------------------------------------------
none_numpy        control: the correct algorithms with the compiled loops switched off (the
                  NumPy path the mutants marked "NumPy path" below run on).
clip_after_mean   DP-SGD clips (DP-NSGD normalises) the mini-batch MEAN instead of each
                  per-example gradient; noise still for a per-example bound C. The mean's
                  replace-one sensitivity is 2C, not 2C/B [mu x B].
last_step_clean   DP-SGD/NSGD: the last step's noise is drawn but not added (``if t < T - 1``)
                  [the T-th release is exact: eps = inf for the per-step transcript the
                  ledger composes].
noise_over_n      DP-SGD/NSGD: the noise on the mini-batch mean is sigma / n instead of
                  sigma / B (the sum's noise divided by the data set size); ledger and
                  noise multiplier unchanged [mu x n / B].
fixed_as_poisson  Poisson DP-SGD/NSGD draws a FIXED-size batch of B out of the PRIVATE n and is
                  accounted as Poisson at q = B / public_n [add/remove: the batch size is not
                  random and the inclusion rate is B / n_private; on the add/remove audit
                  pair (n = 4 vs 5, B = 2, q = 1/2) the canary is in the batch w.p. 2/5 every
                  step, the clipped sum moves by C plus the displaced record].
hb_momentum_clean DP heavy ball: the momentum buffer accumulates the CLEAN gradient and the
                  Laplace noise only enters the step (v = beta v - a g; x += v - a xi). The
                  release x_t is the correct HB's with noise xi_t - beta xi_{t-1}; it
                  post-processes to releases of sum_k beta^k g_{t-k} + xi_t: the per-step
                  sensitivity grows to (1 - beta^(t+1)) / (1 - beta) [pure eps x ~1/(1-beta)].
laplace_l2        DP heavy ball calibrated with the L2 sensitivity S_2 instead of Kuru's L1
                  S_1 (``sensitivity=f.l2_sensitivity``; ledger agrees) [eps x S_1/S_2, up to
                  sqrt(d); 1 at d = 1].
agd_clean_max     DP-AGD's step-size selection takes argmax of the CLEAN scores (the
                  NoisyMax noise is drawn, then not used); its budget still charged [the
                  selection is a non-private function of the data: eps = inf in principle].
tree_level_reuse  Tree aggregation (Tran & Cutkosky Alg. 1 / 2): every node of a level gets
                  the noise of the first node formed at that level (stale noise reused for
                  later releases) [differences of same-level nodes are exact: eps = inf].
float32_noise     Every Gaussian / Laplace draw rounded to float32 before it is added (the
                  sum stays float64) [right law to 2^-24; the release's low bits are the
                  gradient's: the floating-point channel of Mironov 2012, eps = inf in
                  principle; no effect on any moment a statistic of the values sees].
noise_norm_sigma  Gaussian noise vectors of norm ~sigma instead of per-coordinate sigma
                  (per-coordinate std sigma / sqrt(d), e.g. ``z / ||z|| * sigma`` in spirit)
                  [mu x sqrt(d); no effect at d = 1].
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adversary_mutants as am  # noqa: E402  (the first round's harness: run_one, table)

MUTANTS = ("none", "none_numpy", "clip_after_mean", "last_step_clean", "noise_over_n",
           "fixed_as_poisson", "hb_momentum_clean", "laplace_l2", "agd_clean_max",
           "tree_level_reuse", "float32_noise", "noise_norm_sigma")

_patch = am._patch


def _sgd_modules() -> tuple[Any, Any]:
    sgd = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function
    kernels = importlib.import_module("dpbounds.algorithms._step_kernels")
    return sgd, kernels


def _no_kernels(stack: contextlib.ExitStack) -> None:
    """The compiled DP-SGD loop clips and adds noise inside numba: take the NumPy path."""
    _, kernels = _sgd_modules()
    stack.enter_context(_patch(kernels, "active", lambda *a, **k: None))


# ----------------------------------------------------------------------------------------
def _clip_after_mean() -> Any:
    from dpbounds.objectives._base import Objective

    sgd, _ = _sgd_modules()
    stack = contextlib.ExitStack()
    _no_kernels(stack)
    inner_map = sgd._per_sample_map

    def batch_map(xp: Any, g: Any, kind: str, param: float) -> Any:
        # map the batch mean, then hand every row the mapped mean: mean over rows = map(mean)
        if g.ndim < 3:
            return inner_map(xp, g, kind, param)
        mean = xp.mean(g, axis=-2, keepdims=True)
        return xp.broadcast_to(inner_map(xp, mean, kind, param), g.shape) * 1.0

    def clipped(self: Any, x: Any, idx: Any, clip_norm: float,
                include_regularizer: bool = False) -> Any:
        return batch_map(self.xp, self.sample_grads(x, idx), "clip", clip_norm)[:, 0, :]

    def normalized(self: Any, x: Any, idx: Any, r: float) -> Any:
        return batch_map(self.xp, self.sample_grads(x, idx), "normalize", r)[:, 0, :]

    stack.enter_context(_patch(sgd, "_per_sample_map", batch_map))
    stack.enter_context(_patch(Objective, "clipped_mean_grad", clipped))
    stack.enter_context(_patch(Objective, "normalized_mean_grad", normalized))
    return stack


def _capture_sgd_call(stack: contextlib.ExitStack, seen: dict[str, Any]) -> None:
    """Record the steps and batch size of each DP-SGD/NSGD run (``noisy_sgd_noise`` is called
    once per run, before any noise is drawn) and reset the per-run state."""
    sgd, _ = _sgd_modules()
    inner = sgd.noisy_sgd_noise

    def noise(*a: Any, steps: int, batch_size: int, n: int, **k: Any) -> Any:
        seen.clear()
        seen.update(steps=int(steps), batch_size=int(batch_size), n=int(n), drawn={})
        return inner(*a, steps=steps, batch_size=batch_size, n=n, **k)

    stack.enter_context(_patch(sgd, "noisy_sgd_noise", noise))


def _last_step_clean() -> Any:
    from dpbounds.backend import TrialRandom

    stack = contextlib.ExitStack()
    _no_kernels(stack)
    seen: dict[str, Any] = {}
    _capture_sgd_call(stack, seen)
    inner = TrialRandom.normal_steps

    def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0) -> Any:
        out = inner(self, steps, shape, scale)  # drawn (a tap sees it) ...
        if "steps" not in seen:
            return out
        done = seen["drawn"].get(id(self), 0)
        seen["drawn"][id(self)] = done + steps
        last = seen["steps"] - 1 - done  # ... the run's last step not noised
        if 0 <= last < steps:
            out = out * 1.0
            out[:, last] = 0.0
        return out

    stack.enter_context(_patch(TrialRandom, "normal_steps", normal_steps))
    return stack


def _noise_over_n() -> Any:
    sgd, _ = _sgd_modules()
    stack = contextlib.ExitStack()
    inner = sgd.noisy_sgd_noise

    def noise(*a: Any, batch_size: int, n: int, **k: Any) -> Any:
        out = inner(*a, batch_size=batch_size, n=n, **k)
        # the run divides the sum's std by B: sigma * B / n / B = sigma / n on the mean
        return replace(out, noise_std=tuple(s * batch_size / n for s in out.noise_std))

    stack.enter_context(_patch(sgd, "noisy_sgd_noise", noise))
    return stack


def _fixed_as_poisson() -> Any:
    sgd, _ = _sgd_modules()
    stack = contextlib.ExitStack()
    seen: dict[str, Any] = {}
    _capture_sgd_call(stack, seen)

    def poisson_members(objective: Any, sampler: Any, q: float) -> tuple[Any, Any]:
        xp = objective.xp
        u = sampler.uniform((objective.n,))  # the same draws as the correct sampler
        width = min(int(seen.get("batch_size", 1)), int(objective.n))
        idx = xp.argsort(u, axis=1, stable=True)[:, :width]
        counts = xp.full((idx.shape[0],), width, dtype=xp.int64)
        return idx, counts

    stack.enter_context(_patch(sgd, "poisson_members", poisson_members))
    return stack


# ----------------------------------------------------------------------------------------
def _momentum_module() -> Any:
    return importlib.import_module("dpbounds.algorithms.momentum")


def _hb_momentum_clean() -> Any:
    from dpbounds.backend import TrialRandom

    mom = _momentum_module()
    stack = contextlib.ExitStack()
    inner = mom.laplace_momentum_method
    state: dict[str, Any] = {}

    def method(objective: Any, *, kind: str, momenta: Any, **kw: Any) -> Any:
        state.clear()
        if kind == "hb":
            state["beta"] = float(np.asarray(momenta)[0])
            state["prev"] = {}
        try:
            return inner(objective, kind=kind, momenta=momenta, **kw)
        finally:
            state.clear()

    lap = TrialRandom.laplace

    def laplace(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
        xi = lap(self, shape, scale, **kw)
        if "beta" not in state:
            return xi
        prev = state["prev"].get(id(self))
        state["prev"][id(self)] = (self, xi)
        # x_{t+1} = x_t + v_{t+1} - a xi_t, v_{t+1} = beta v_t - a g_t: the correct heavy
        # ball's recursion with noise xi_t - beta xi_{t-1}
        return xi if prev is None else xi - state["beta"] * prev[1]

    stack.enter_context(_patch(mom, "laplace_momentum_method", method))
    stack.enter_context(_patch(TrialRandom, "laplace", laplace))
    return stack


def _laplace_l2() -> Any:
    mom = _momentum_module()
    stack = contextlib.ExitStack()
    inner = mom.laplace_momentum_method

    def method(objective: Any, *, kind: str, sensitivity: Any = None, **kw: Any) -> Any:
        if kind == "hb" and sensitivity is None:
            sensitivity = float(objective.l2_sensitivity)  # the L2 bound where L1 is needed
        return inner(objective, kind=kind, sensitivity=sensitivity, **kw)

    stack.enter_context(_patch(mom, "laplace_momentum_method", method))
    return stack


def _agd_clean_max() -> Any:
    agd = importlib.import_module("dpbounds.algorithms.dp_agd")
    stack = contextlib.ExitStack()
    inner = agd.noisy_max

    def noisy_max(scores: Any, sensitivity: float, epsilon: float, noise: Any,
                  kind: str = "laplace", where: Any = None) -> Any:
        noisy = inner(scores, sensitivity, epsilon, noise, kind, where)  # noise drawn ...
        xp = noise.xp
        clean = xp.argmax(scores, axis=1)  # ... and the clean argmax used
        return clean if where is None else xp.where(xp.asarray(where), clean, noisy)

    stack.enter_context(_patch(agd, "noisy_max", noisy_max))
    return stack


def _tree_level_reuse() -> Any:
    from dpbounds.algorithms.tree_aggregation import TreeAggregator, _trailing_zeros

    stack = contextlib.ExitStack()
    _no_kernels(stack)  # the compiled tree loop keeps its own node noises
    inner = TreeAggregator.step
    first: dict[int, tuple[Any, dict[int, Any]]] = {}

    def step(self: Any, value: Any, node_noise: Any = None, node_release: Any = None) -> Any:
        if node_noise is not None:
            cache = first.setdefault(id(self), (self, {}))[1]
            k = _trailing_zeros(self.t + 1)
            if k in cache:
                node_noise = cache[k]  # the level's first noise, reused
            else:
                cache[k] = node_noise
        return inner(self, value, node_noise, node_release)

    stack.enter_context(_patch(TreeAggregator, "step", step))
    return stack


def _float32_noise() -> Any:
    from dpbounds.backend import TrialRandom

    stack = contextlib.ExitStack()
    _no_kernels(stack)
    inner = TrialRandom._scaled

    def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
        out = inner(self, base, scale, ndim_extra)
        return np.asarray(out, dtype=np.float32).astype(np.float64) if isinstance(
            out, np.ndarray) else out

    stack.enter_context(_patch(TrialRandom, "_scaled", _scaled))
    return stack


def _noise_norm_sigma() -> Any:
    from dpbounds.backend import TrialRandom

    stack = contextlib.ExitStack()
    n_inner, s_inner = TrialRandom.normal, TrialRandom.normal_steps

    def normal(self: TrialRandom, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
        out = n_inner(self, shape, scale, **kw)
        d = self._shape(shape)[-1] if self._shape(shape) else 1
        return out / math.sqrt(d) if d > 1 else out

    def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0) -> Any:
        out = s_inner(self, steps, shape, scale)
        d = self._shape(shape)[-1] if self._shape(shape) else 1
        return out / math.sqrt(d) if d > 1 else out

    stack.enter_context(_patch(TrialRandom, "normal", normal))
    stack.enter_context(_patch(TrialRandom, "normal_steps", normal_steps))
    return stack


def _none_numpy() -> Any:
    """The correct algorithms on the NumPy path (the control of the mutants that switch the
    compiled loops off)."""
    stack = contextlib.ExitStack()
    _no_kernels(stack)
    return stack


_MAKERS = {"none_numpy": _none_numpy, "clip_after_mean": _clip_after_mean,
           "last_step_clean": _last_step_clean,
           "noise_over_n": _noise_over_n, "fixed_as_poisson": _fixed_as_poisson,
           "hb_momentum_clean": _hb_momentum_clean, "laplace_l2": _laplace_l2,
           "agd_clean_max": _agd_clean_max, "tree_level_reuse": _tree_level_reuse,
           "float32_noise": _float32_noise, "noise_norm_sigma": _noise_norm_sigma}


@contextlib.contextmanager
def mutant(name: str) -> Iterator[None]:
    """The context manager that applies mutant ``name``."""
    if name == "none":
        yield
        return
    with _MAKERS[name]():
        yield


def main(argv: list[str]) -> int:
    """``MUTANT -- ARGS [-- ARGS ...]``: one JSON line per CLI invocation;
    ``--table FILE.jsonl ...``: the markdown table of such lines."""
    if argv[:1] == ["--table"]:
        print(am.table(argv[1:]))
        return 0
    if len(argv) < 3 or argv[0] not in MUTANTS or argv[1] != "--":
        raise SystemExit(f"usage: adversary_mutants_2.py {{{','.join(MUTANTS)}}} -- CLI ARGS "
                         "[-- CLI ARGS ...]")
    am.mutant = mutant  # the harness applies this round's mutants
    runs: list[list[str]] = [[]]
    for a in argv[2:]:
        if a == "--":
            runs.append([])
        else:
            runs[-1].append(a)
    for cli in runs:
        print(json.dumps(am.run_one(argv[0], cli)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
