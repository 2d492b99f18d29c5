r"""Per-sample gradients of the verification problems for compiled loops (the ``fast`` extra).

The compiled per-step loops of :mod:`dpbounds.algorithms._step_kernels` evaluate one sample's
gradient at a time, inside the loop, for the two objectives the verification problems are built
on (:mod:`dpbounds.verify.problems`):

* :class:`~dpbounds.objectives.HuberWell`: :math:`\nabla\ell_i(x)=G\,(x-e_i)/\max(\lVert
  x-e_i\rVert,\delta)`, as :meth:`HuberWell.sample_grads`;
* :class:`~dpbounds.objectives.QuadraticObjective`: :math:`\nabla\ell_i(x)=Qx-b+e_i` with ``Q``
  diagonal or dense, as :meth:`QuadraticObjective.sample_grads` (``Qx - b`` computed once per
  step and trial, shared by the batch).

Both have no regulariser (``regularizer_grad`` is zero), which the loops rely on.
:func:`problem_data` packs an objective into the arrays the loops take, or returns ``None``
when the compiled path does not apply (another objective or subclass, a non-NumPy backend,
numba missing, or ``DPBOUNDS_KERNELS=numpy``, as for :mod:`._logistic_kernel`).

The helpers are inlined into the loops, which numba caches by *their* source file: after an
edit here, touch ``dpbounds/algorithms/_step_kernels.py`` (or clear its ``__pycache__``) so
that the cached loops are rebuilt.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from dpbounds.backend import is_numpy
from dpbounds.objectives._logistic_kernel import _identity_decorator, enabled, numba

__all__ = []

#: Objective kinds understood by :func:`sample_direction`.
HUBER, DIAGONAL, DENSE = 0, 1, 2

# Any: numba's stubs do not list the private ``_nrt`` option the loops pass
_jit: Any = numba.njit if numba is not None else _identity_decorator


class ProblemData(NamedTuple):
    """The arrays and constants of one objective, as the compiled loops take them."""

    kind: int
    E: np.ndarray      # (n, d) centres (Huber) or offsets (quadratic), C-contiguous
    Q: np.ndarray      # (d, d) dense Hessian, else (1, 1)
    qd: np.ndarray     # (d,) diagonal Hessian, else (1,)
    b: np.ndarray      # (d,) linear term (quadratic), else (1,)
    G: float           # Huber: gradient bound
    delta: float       # Huber: G / L


def problem_data(objective: Any) -> ProblemData | None:
    """The compiled loops' view of ``objective``, or ``None`` when they do not apply."""
    from dpbounds.objectives.huber_well import HuberWell
    from dpbounds.objectives.quadratic import QuadraticObjective

    if type(objective) not in (HuberWell, QuadraticObjective) or not (
            is_numpy(objective.xp) and enabled()):
        return None
    one, one_by_one = np.ones(1), np.ones((1, 1))
    E = np.ascontiguousarray(objective.offsets_np, dtype=np.float64)
    if type(objective) is HuberWell:
        return ProblemData(HUBER, E, one_by_one, one, one, float(objective.G),
                           float(objective.delta))
    if type(objective) is QuadraticObjective:
        b = np.ascontiguousarray(objective.b_np, dtype=np.float64)
        if objective.basis is None:
            return ProblemData(DIAGONAL, E, one_by_one,
                               np.ascontiguousarray(objective.eigenvalues, dtype=np.float64), b,
                               math.nan, math.nan)
        return ProblemData(DENSE, E, np.ascontiguousarray(objective.hessian), one, b,
                           math.nan, math.nan)
    return None


@_jit(fastmath={"contract"}, boundscheck=False, cache=True, inline="always", _nrt=False)
def shared_term(kind, Q, qd, b, X, q, out):  # pragma: no cover - compiled
    """``out = Q x - b`` at ``x = X[q]`` (quadratic: the part of the gradient every sample
    shares; nothing for the Huber well)."""
    d = X.shape[1]
    if kind == DIAGONAL:
        for j in range(d):
            out[j] = X[q, j] * qd[j] - b[j]
    elif kind == DENSE:
        for j in range(d):
            s = 0.0
            for k in range(d):
                s += X[q, k] * Q[k, j]
            out[j] = s - b[j]


@_jit(fastmath={"contract"}, boundscheck=False, cache=True, inline="always", _nrt=False)
def sample_direction(kind, E, G, delta, X, q, shared, i, out):  # pragma: no cover - compiled
    """``∇ℓ_i(x) = scale * out`` at ``x = X[q]`` in one pass: writes ``out`` and returns
    ``(scale, ||∇ℓ_i(x)||)``, so that a loop can fuse the scaling into its own pass (the
    Huber well: ``out = x - e_i``, ``scale = G / max(||out||, delta)``; the quadratic:
    ``out = Qx - b + e_i``, ``scale = 1``)."""
    d = X.shape[1]
    s2 = 0.0
    if kind == HUBER:
        for j in range(d):
            z = X[q, j] - E[i, j]
            out[j] = z
            s2 += z * z
        s = math.sqrt(s2)
        scale = G / max(s, delta)
        return scale, s * scale
    for j in range(d):
        z = shared[j] + E[i, j]
        out[j] = z
        s2 += z * z
    return 1.0, math.sqrt(s2)


@_jit(boundscheck=False, cache=True)
def _huber_mean_grad(X, E, G, delta, out):  # pragma: no cover - compiled
    # the NumPy path's arithmetic in its order (no fastmath): z = x - e_i, s = sqrt(sum z^2)
    # summed left to right, scale = G / max(s, delta), a running sum over i, then / n
    trials, d = X.shape
    n = E.shape[0]
    z = np.empty(d)
    for k in range(trials):
        for j in range(d):
            out[k, j] = 0.0
        for i in range(n):
            ss = 0.0
            for j in range(d):
                z[j] = X[k, j] - E[i, j]
                ss += z[j] * z[j]
            s = math.sqrt(ss)
            scale = G / (s if s > delta else delta)
            for j in range(d):
                out[k, j] += z[j] * scale
        for j in range(d):
            out[k, j] /= n


def huber_mean_grad(X: np.ndarray, E: np.ndarray, G: float, delta: float) -> np.ndarray:
    """Full-data gradient of the Huber well, ``(trials, d)``, compiled (no ``(trials, n, d)``
    intermediate; the recorders of the verification studies call it once per trace point)."""
    out = np.empty((X.shape[0], E.shape[1]))
    _huber_mean_grad(np.ascontiguousarray(X, dtype=np.float64),
                     np.ascontiguousarray(E, dtype=np.float64), float(G), float(delta), out)
    return out


def full_grad(objective: Any, x: Any) -> Any:
    """``objective.grad(x)`` through :func:`huber_mean_grad` where the compiled path applies
    (the Huber well on NumPy with numba; equal to the NumPy pass to ~1e-12 relative, the
    summation order differs), else ``objective.grad(x)`` itself."""
    data = problem_data(objective)
    if data is None or data.kind != HUBER:
        return objective.grad(x)
    objective.check_state(x)
    return huber_mean_grad(np.asarray(x), data.E, data.G, data.delta)
