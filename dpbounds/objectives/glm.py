r"""Margin-loss linear models: logistic regression, Huber-smoothed linear SVM, and a
non-convex regularised logistic regression.

Every data term has the form :math:`\ell_i(x)=\psi(y_i\,a_i^\top x)` with features
:math:`a_i\in\mathbb R^d` and labels :math:`y_i\in\{-1,+1\}`. The per-sample gradient is
:math:`\psi'(z_i)\,y_ia_i`, so its norm is :math:`|\psi'(z_i)|\,\lVert a_i\rVert` and clipping
or normalising only rescales the scalar weights :math:`\psi'(z_i)`: the fused
``clipped_mean_grad`` and ``normalized_mean_grad`` never build the ``(trials, m, d)`` tensor
of per-sample gradients (only the ``(trials, m, d)`` gather of the mini-batch rows, which
any mini-batch method needs).

Data domain and sensitivity
---------------------------
The sensitivities must hold for *any* neighbouring data set, so they are computed from a
declared public bound on the features: ``l1_radius`` (sup of ``||a||_1``) and
``l2_radius`` (sup of ``||a||_2``). When not given they default to the maximum over the
data at hand, which is what Kuru et al. do in Section 5 (``S_1 = 2·20``, where 20 is the
L1 clipping radius of the rows); pass the radius of your data universe for a formal
guarantee.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_nonnegative, check_positive
from dpbounds.backend import get_namespace, is_cupy, is_numpy, rowwise_matmul, to_numpy
from dpbounds.objectives import _logistic_kernel, _wide_kernel
from dpbounds.objectives._base import Objective, Optimum, finite_array
from dpbounds.provenance import KURU, LEE_KIFER, TRAN_CUTKOSKY, Provenance, Source

__all__ = [
    "HuberSVM",
    "LogisticRegression",
    "MarginLossObjective",
    "NonconvexLogisticRegression",
]


def _softplus(xp: Any, t: Any) -> Any:
    """log(1 + exp(t)) without overflow."""
    if is_numpy(xp):  # the same operations in place: fewer temporaries, the same bits
        a = np.abs(t)
        np.negative(a, out=a)
        np.exp(a, out=a)
        np.log1p(a, out=a)
        a += np.maximum(t, 0.0)
        return a
    return xp.maximum(t, 0.0) + xp.log1p(xp.exp(-xp.abs(t)))


def _sigmoid_neg(xp: Any, z: Any) -> Any:
    """1/(1 + exp(z)) without overflow."""
    if is_numpy(xp):  # in place: the full-data pass is bound by such temporaries
        e = np.abs(z)
        np.negative(e, out=e)
        np.exp(e, out=e)
        return _sigmoid_neg_from(z, e)
    e = xp.exp(-xp.abs(z))
    inv = 1.0 / (1.0 + e)
    return xp.where(z >= 0, e * inv, inv)


def _sigmoid_neg_from(z: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``sigmoid(-z)`` from ``e = exp(-|z|)`` on NumPy, without a branch per element.

    ``e`` is overwritten (with ``1/(1 + e)``): pass a temporary.

    ``where(z >= 0, e / (1 + e), 1 / (1 + e))`` written as ``exp(-max(z, 0)) * (1 / (1 + e))``:
    for ``z >= 0`` the first factor is ``e`` itself, for ``z < 0`` it is exactly 1, so the bits
    are the same, and a second ``exp`` (about 0.8 ns per element here) is much cheaper than the
    mispredicted branches of ``np.where`` on random signs (about 5 ns per element).
    """
    inv = e
    inv += 1.0
    np.reciprocal(inv, out=inv)
    num = np.maximum(z, 0.0)
    np.negative(num, out=num)
    np.exp(num, out=num)
    num *= inv
    return num


def _row_norms(A: np.ndarray) -> tuple[np.ndarray, float]:
    """``(||a_i||_2 for each row, max_i ||a_i||_1)``, a few MB of rows at a time.

    ``np.linalg.norm(A, axis=1)`` and ``np.abs(A)`` would each hold an n x d temporary (the
    peak of the constructor at large d); every row's reduction is the same on a chunk of
    rows, so the bits are those of the one-shot calls.
    """
    n, d = A.shape
    norms = np.empty(n)
    l1 = 0.0
    step = max(1, (1 << 16) // max(1, d))  # 512 KiB of temporaries
    for a in range(0, n, step):
        block = A[a:a + step]
        norms[a:a + step] = np.linalg.norm(block, axis=1)
        if block.size:
            l1 = max(l1, float(np.max(np.sum(np.abs(block), axis=1))))
    return norms, l1


class MarginLossObjective(Objective):
    r"""Base class: :math:`F(x)=\frac1n\sum_i\psi(y_ia_i^\top x)+R(x)`.

    Subclasses define ``_psi``, ``_dpsi`` (derivative in the margin), ``_d2psi``,
    ``psi_curvature`` (:math:`\sup\psi''`), ``psi_slope`` (:math:`\sup|\psi'|`), and the
    regulariser.
    """

    #: constants that default to the data's own values unless declared (``radius_declared``
    #: records which were): a private selection refuses a run that reads an undeclared one
    DATA_RADII: tuple[str, ...] = ("l1_radius", "l2_radius")
    #: the radius each calibration constant is computed from (a run calibrated to one whose
    #: radius was not declared warns: :func:`dpbounds.algorithms._common.calibration_constant`)
    CALIBRATION_RADII: dict[str, str] = {
        "l1_sensitivity": "l1_radius", "l2_sensitivity": "l2_radius",
        "gradient_bound": "l2_radius", "lipschitz": "l2_radius", "l2_radius": "l2_radius",
        # L: sup psi'' lambda_max(A^T A / n) unless declared
        "l1_radius": "l1_radius", "smoothness": "smoothness"}
    #: read from the data always (the Gram matrix): a private selection refuses any read
    DATA_ONLY: tuple[str, ...] = ("data_curvature", "smoothness_conservative")

    psi_curvature: float = 0.25
    #: where a declared ``smoothness`` that is not a public bound came from (a paper's formula
    #: on the same records: ``LogisticRegression.kuru(paper_smoothness=True)``), for warnings
    smoothness_origin: str | None = None
    psi_slope: float = 1.0

    def __init__(
        self,
        features: Any,
        labels: Any,
        *,
        backend: Any = None,
        l1_radius: float | None = None,
        l2_radius: float | None = None,
        smoothness: float | None = None,
    ) -> None:
        A = np.ascontiguousarray(finite_array("features", features))
        y = finite_array("labels", labels).reshape(-1)
        if A.ndim != 2:
            raise ValueError(f"features must be a 2-D array (n, d), got shape {A.shape}")
        if y.shape[0] != A.shape[0]:
            raise ValueError(
                f"labels must have length n={A.shape[0]} (one per row of features), "
                f"got {y.shape[0]}"
            )
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("labels must be in {-1, +1}")
        super().__init__(A.shape[0], A.shape[1], backend)
        self.features_np = A
        self.labels_np = y
        self._norms_np, data_l1 = _row_norms(A)
        data_l2 = float(np.max(self._norms_np))
        self.l1_radius = data_l1 if l1_radius is None else check_positive("l1_radius", l1_radius)
        self.l2_radius = data_l2 if l2_radius is None else check_positive("l2_radius", l2_radius)
        # which radius is a public declaration and which the data's own largest row norm (a
        # private selection refuses a run that reads the latter: mutant hunt 14, a sensitivity
        # taken from the data let a selection claim eps 1.8 where its runs spent >= 3.9)
        self.radius_declared = {"l1_radius": l1_radius is not None,
                                "l2_radius": l2_radius is not None}
        if self.l1_radius < data_l1 * (1 - 1e-12) or self.l2_radius < data_l2 * (1 - 1e-12):
            raise ValueError("l1_radius/l2_radius must bound the norms of every feature row")
        # a radius declared within the 1e-12 tolerance below the rows' norms (a rounded value)
        # is raised to them: every sensitivity derived from it must bound the actual rows
        self.l1_radius = max(self.l1_radius, data_l1)
        self.l2_radius = max(self.l2_radius, data_l2)
        # the values as built: a private selection reads a declared radius only while it
        # still holds them (a subclass that sets another one afterwards is refused)
        self.radius_values = {"l1_radius": self.l1_radius, "l2_radius": self.l2_radius}
        xp = self.xp
        self._rows_np, self._signs_np = self._row_layout(A, y)
        self._rows = xp.asarray(self._rows_np)
        self._signs = None if self._signs_np is None else xp.asarray(self._signs_np)
        self._norms = xp.asarray(self._norms_np)
        self._declared_L = None if smoothness is None else check_positive("smoothness",
                                                                          smoothness)
        # L is computed from the data's Gram matrix unless declared (a default step c/L then
        # depends on the data: a researcher's walkthrough of stop 81)
        self.constants_declared = {"smoothness": smoothness is not None}

    # -- per-loss pieces (overridden) ----------------------------------------------------
    def _psi(self, xp: Any, z: Any) -> Any:
        raise NotImplementedError

    def _dpsi(self, xp: Any, z: Any) -> Any:
        raise NotImplementedError

    def _d2psi(self, xp: Any, z: Any) -> Any:
        raise NotImplementedError

    #: Largest data (n·d elements) for which the objective keeps the signed rows ``y_i a_i``
    #: as a copy (8 MiB): above it, one copy of the data (the caller's array, no copy when it
    #: is C-contiguous float64), the labels' signs applied to the margins and the gradient
    #: weights instead. The bits are the same either way (y_i = ±1: y_i (a_i·x) = (y_i a_i)·x
    #: and (w_i y_i) a_i = w_i (y_i a_i) exactly, rounding being symmetric in the sign); the
    #: copy only saves those multiplications, which cost 10-25% of a small mini-batch step
    #: (measured at d = 16) and nothing that matters at large d, where memory does.
    signed_copy_elements: int = 1 << 20

    def _row_layout(self, A: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(rows, signs)``: ``(y * A, None)`` for small data, else ``(A, y)``."""
        if A.size <= self.signed_copy_elements:
            return A * y[:, None], None
        return A, y

    @staticmethod
    def _signed(v: Any, signs: Any) -> Any:
        """``v * signs`` (the labels, broadcast over the last axis), or ``v`` when the rows are
        stored signed (``signs`` None)."""
        return v if signs is None else v * signs

    # -- products with the data ----------------------------------------------------------
    def _wide(self, v: Any) -> bool:
        """Whether the full-data products with ``v`` (``(trials, ·)``) take the compiled
        column-blocked kernels of :mod:`._wide_kernel` (NumPy, float64, numba installed,
        ``d >= _wide_kernel.WIDE_MIN_D``, a CPU without AVX-512: :func:`_wide_kernel.chosen`):
        above ~4096 features they read the data once per product where BLAS's 8-row GEMMs pack
        it (``bench/bench_compiled_vs_blas.md``). The choice depends on ``d`` and the CPU,
        never on the trials."""
        return (is_numpy(self.xp) and v.dtype == np.float64 and self._rows_np.dtype == np.float64
                and _wide_kernel.chosen(self.d))

    def _data_t_product(self, x: Any, a: int, b: int) -> Any:
        """``x @ rows[a:b].T`` (``(trials, b - a)``), row ``t`` a function of ``x[t]`` alone."""
        if self._wide(x):
            return _wide_kernel.margins(x, self._rows_np, a, b)
        return rowwise_matmul(self.xp, x, self.xp.matrix_transpose(self._rows[a:b, :]))

    # -- margins -------------------------------------------------------------------------
    def _margins(self, x: Any, idx: Any) -> tuple[Any, Any, Any, Any]:
        """Return (margins (trials, m), rows (trials, m, d) or None, norms (trials, m), signs
        of the rows (trials, m) or None: see :attr:`signed_copy_elements`)."""
        xp = self.xp
        if idx is None:
            return self._signed(self._data_t_product(x, 0, self.n), self._signs), None, None, None
        trials, m = idx.shape
        flat = xp.reshape(idx, (-1,))
        rows = xp.reshape(xp.take(self._rows, flat, axis=0), (trials, m, self.d))
        signs = (None if self._signs is None
                 else xp.reshape(xp.take(self._signs, flat, axis=0), (trials, m)))
        margins = self._signed((rows @ x[:, :, None])[:, :, 0], signs)
        norms = xp.reshape(xp.take(self._norms, flat, axis=0), (trials, m))
        return margins, rows, norms, signs

    def _weighted_mean(self, w: Any, rows: Any, signs: Any) -> Any:
        """mean_i w_i y_i a_i for full data (rows None) or a gathered mini-batch."""
        if rows is None:
            return rowwise_matmul(self.xp, self._signed(w, self._signs), self._rows) / self.n
        return (self._signed(w, signs)[:, None, :] @ rows)[:, 0, :] / w.shape[1]

    def _psi_dpsi(self, xp: Any, z: Any) -> tuple[Any, Any]:
        """``(ψ(z), ψ'(z))``; subclasses may share work between the two."""
        return self._psi(xp, z), self._dpsi(xp, z)

    #: Samples per block of the full-data pass. Fixed, whatever the number of trials: the
    #: block boundaries set the order of each trial's sum over the samples, so a block size
    #: scaled with the trials would change a trial's last bits with the number of trials.
    block_samples: int = 2048
    #: Target size (array elements) of a block's temporaries: on the host the trials are
    #: processed in chunks of ``block_elements // block_samples`` rows (every operation is row
    #: by row, so the chunking changes no trial's result); CuPy takes all trials at once.
    block_elements: int = 1 << 16

    def _blocks(self, trials: int):
        """``(trial slice, sample start, sample end)`` of the blocked full-data pass."""
        chunk = trials if is_cupy(self.xp) else max(1, self.block_elements // self.block_samples)
        for t0 in range(0, trials, chunk):
            rows = slice(t0, min(trials, t0 + chunk))
            for start in range(0, self.n, self.block_samples):
                yield rows, start, min(self.n, start + self.block_samples)

    #: Name of a compiled full-data pass for this loss (``_logistic_kernel``), or None.
    _compiled_pass: str | None = None
    #: Both full-data passes work row by row (the compiled one gives trial ``k`` the same bits
    #: whatever the rows beside it; the blocked NumPy one chunks rows freely): several states
    #: may share one ``loss`` call (:attr:`Objective.rowwise_states`).
    rowwise_states: bool = True

    def _use_compiled(self, x: Any, grad: str | None, reg_vec: Any,
                      loss_clip: float | None, *, full: bool = True) -> bool:
        """Whether the compiled pass computes this plain loss / gradient pass (NumPy, float64,
        numba installed, ``DPBOUNDS_KERNELS`` not ``numpy``; for the full-data pass also
        ``d <= COMPILED_MAX_D`` under ``auto``: :func:`_logistic_kernel.full_pass_chosen`)."""
        if self._compiled_pass is None:
            return False
        # a subclass that redefines the loss does not inherit the compiled pass
        owner: type[MarginLossObjective] = next(
            c for c in type(self).__mro__ if "_compiled_pass" in vars(c))
        if owner._psi is not type(self)._psi or owner._dpsi is not type(self)._dpsi:
            return False
        return (grad in (None, "plain") and reg_vec is None and loss_clip is None
                and is_numpy(self.xp) and x.dtype == np.float64
                and (_logistic_kernel.full_pass_chosen(self.d) if full
                     else _logistic_kernel.enabled()))

    @property
    def _features_t(self) -> np.ndarray:
        """``(d, n)`` C-contiguous signed rows ``y_i a_i`` as columns, the compiled pass's
        layout, built on first use a few MB at a time: the one second copy of the data, which
        is why ``auto`` takes the compiled pass only up to ``_logistic_kernel.COMPILED_MAX_D``
        features. Signed here, so the pass needs no per-sample sign (at d = 4 applying it in
        the loop cost 20% of the pass)."""
        if not hasattr(self, "_features_t_np") and self._signs_np is None:
            self._features_t_np = np.ascontiguousarray(self._rows_np.T)
        elif not hasattr(self, "_features_t_np"):
            A, y = self.features_np, self.labels_np
            Zt = np.empty((self.d, self.n))
            step = max(1, (1 << 16) // max(1, self.d))
            for a in range(0, self.n, step):
                Zt[:, a:a + step] = (A[a:a + step] * y[a:a + step, None]).T
            self._features_t_np = Zt
        return self._features_t_np

    def _full_pass(self, x: Any, *, loss: bool, grad: str | None, param: float = 0.0,
                   reg_vec: Any = None, loss_clip: float | None = None,
                   loss_shift: Any = None, grad_at: Any = None) -> tuple[Any, Any]:
        """One blocked pass over all n samples: (sum of ψ, mean weighted gradient).

        With ``grad_at`` (``(trials, d)``, plain gradient only) the gradient is taken there and
        the loss at ``x``: Nesterov's look-ahead gradient and the recorded ``F(x_t)`` share the
        pass (each block of the data is read once, both margins come from one matmul call).

        ``grad`` is None, ``"plain"``, ``"clip"`` (param = C) or ``"normalize"`` (param = r).
        With ``reg_vec`` (``(trials, d)``, the regulariser gradient) ``"clip"`` clips
        ``∇ℓ_i + reg_vec``; with ``loss_clip`` the summed losses are
        ``ψ + loss_shift`` clipped to ``[0, loss_clip]``.
        """
        if self._use_compiled(x, grad, reg_vec, loss_clip):
            k_total, k_g = _logistic_kernel.logistic_pass(self._features_t, x, grad_at,
                                                          loss=loss, grad=bool(grad))
            return (k_total if loss else None), (k_g / self.n if grad else None)
        xp = self.xp
        trials = x.shape[0]
        totals: list[Any] = []
        grads: list[Any] = []
        for rows, a, b in self._blocks(trials):
            if a == 0:  # a new chunk of trials
                xr = x[rows, :]
                r = xr.shape[0]
                if grad_at is not None:  # margins at x and at grad_at from one stacked product
                    xr = xp.concat([xr, grad_at[rows, :]], axis=0)
                rv = None if reg_vec is None else reg_vec[rows, :]
                shift = None if loss_shift is None else loss_shift[rows]
                total = xp.zeros((r,), dtype=x.dtype) if loss else None
                g = xp.zeros((r, self.d), dtype=x.dtype) if grad else None
                csum: Any = xp.zeros((r,), dtype=x.dtype) if rv is not None else None
                if rv is not None:
                    rr = xp.sum(rv * rv, axis=1)[:, None]
            Ab = self._rows[a:b, :]
            yb = None if self._signs is None else self._signs[a:b]
            z = self._signed(self._data_t_product(xr, a, b), yb)
            if grad_at is not None:
                psi, w = self._psi(xp, z[:r, :]), self._dpsi(xp, z[r:, :])
            elif loss and grad:
                psi, w = self._psi_dpsi(xp, z)
            elif loss:
                psi, w = self._psi(xp, z), None
            else:
                psi, w = None, self._dpsi(xp, z)
            if loss:
                if loss_clip is not None:
                    shifted = psi if shift is None else psi + shift[:, None]
                    # to [0, C]: the NoisyMax scores' sensitivity needs every clipped loss
                    # in [0, C] (adding a record then moves every score down by at most C);
                    # a no-op for the GLM losses and regularisers, which are >= 0
                    psi = xp.minimum(xp.maximum(shifted, xp.asarray(0.0, dtype=psi.dtype)),
                                     xp.asarray(loss_clip, dtype=psi.dtype))
                total = total + xp.sum(psi, axis=1)
            if grad:
                if rv is not None:
                    zr = self._signed(self._data_t_product(rv, a, b), yb)
                    c = self._clip_factor(xp, w, self._norms[None, a:b], zr, rr, param,
                                          self.d)
                    csum = csum + xp.sum(c, axis=1)
                    w = w * c
                elif grad != "plain":
                    w = self._rescale(xp, w, self._norms[None, a:b], grad, param)
                if self._wide(w):
                    assert g is not None  # allocated when the chunk began (grad is set)
                    _wide_kernel.add_weighted_rows(self._signed(w, yb), self._rows_np, a, b, g)
                elif is_numpy(xp):  # in place: at large d every (trials, d) temporary counts
                    g += rowwise_matmul(xp, self._signed(w, yb), Ab)
                else:
                    g = g + rowwise_matmul(xp, self._signed(w, yb), Ab)
            if b == self.n:  # the chunk is complete
                if grad and rv is not None:
                    g = g + csum[:, None] * rv
                totals.append(total)
                grads.append(g)
        total = xp.concat(totals, axis=0) if loss else None
        if not grad:
            g = None
        elif len(grads) == 1 and is_numpy(xp):  # one chunk of trials: no concatenated copy
            g = grads[0]
            g /= self.n
        else:
            g = xp.concat(grads, axis=0) / self.n
        return total, g

    @staticmethod
    def _clip_factor(xp: Any, w: Any, norms: Any, zr: Any, rr: Any, C: float, d: int) -> Any:
        r"""``min(1, C/||w z_i + r||)`` from ``||w z||² + 2 w z·r + ||r||²``, with the norm
        taken from above: the expansion cancels when ``w z_i ≈ -r`` (a term whose computed
        norm read C clipped to up to 1.8 C at C = 1e-8, review of issue 35), so its rounding
        error, at most :math:`(d+4)u(|w|\,\|z_i\| + \|r\|)^2` (the dot product's
        :math:`\gamma_d`, the squares' few units), is added before the square root
        (:math:`u = 2^{-53}`; 2d + 16 units below, twice that); the clipped term's norm is
        then at most C."""
        sq = (w * norms) ** 2 + 2.0 * w * zr + rr
        scale = (xp.abs(w) * norms + xp.sqrt(rr)) ** 2
        bound = xp.maximum(sq, xp.zeros_like(sq)) + (2 * d + 16) * 2.0**-53 * scale
        gnorm = xp.sqrt(bound)
        return C / xp.maximum(gnorm, xp.asarray(C, dtype=gnorm.dtype))

    def _rescale(self, xp: Any, w: Any, norms: Any, kind: str, param: float) -> Any:
        gnorm = xp.abs(w) * norms
        if kind == "clip":
            return w * (param / xp.maximum(gnorm, xp.asarray(param, dtype=gnorm.dtype)))
        return w / (gnorm + param)

    # -- Objective API -------------------------------------------------------------------
    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        z, _, _, _ = self._margins(x, idx)
        return self._psi(self.xp, z)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        z, rows, _, signs = self._margins(x, idx)
        if rows is None:
            rows, signs = self._rows[None, :, :], self._signs
        return self._signed(self._dpsi(self.xp, z), signs)[:, :, None] * rows

    def loss(self, x: Any) -> Any:
        self.check_state(x)
        total, _ = self._full_pass(x, loss=True, grad=None)
        return total / self.n + self.regularizer(x)

    def _data_grad(self, x: Any, idx: Any) -> Any:
        if idx is None:
            return self._full_pass(x, loss=False, grad="plain")[1]
        if self._use_compiled(x, "plain", None, None, full=False):
            return _logistic_kernel.minibatch_gradient(
                self._rows_np, x, idx, signs=self._signs_np, check_signs=False) / idx.shape[1]
        z, rows, _, signs = self._margins(x, idx)
        return self._weighted_mean(self._dpsi(self.xp, z), rows, signs)

    def _data_weights(self, x: Any, idx: Any, kind: str, param: float) -> Any:
        if idx is None:
            return self._full_pass(x, loss=False, grad=kind, param=param)[1]
        z, rows, norms, signs = self._margins(x, idx)
        w = self._rescale(self.xp, self._dpsi(self.xp, z), norms, kind, param)
        return self._weighted_mean(w, rows, signs)

    def _clipped_with_regularizer(self, x: Any, idx: Any, clip_norm: float) -> Any:
        xp = self.xp
        r = self.regularizer_grad(x)
        if idx is None:
            return self._full_pass(x, loss=False, grad="clip", param=clip_norm, reg_vec=r)[1]
        z, rows, norms, signs = self._margins(x, idx)
        w = self._dpsi(xp, z)
        zr = self._signed((rows @ r[:, :, None])[:, :, 0], signs)
        c = self._clip_factor(xp, w, norms, zr, xp.sum(r * r, axis=1)[:, None], clip_norm,
                              self.d)
        return self._weighted_mean(w * c, rows, signs) + xp.mean(c, axis=1)[:, None] * r

    def clipped_loss(self, x: Any, clip_value: float, include_regularizer: bool = False) -> Any:
        self.check_state(x)
        clip_value = check_positive("clip_value", clip_value)
        shift = self.regularizer(x) if include_regularizer else None
        total, _ = self._full_pass(x, loss=True, grad=None, loss_clip=clip_value,
                                   loss_shift=shift)
        return total / self.n

    def loss_and_grad(self, x: Any, idx: Any = None, *, grad_at: Any = None
                      ) -> tuple[Any, Any]:
        """``(F(x), grad(x, idx))``, or ``(F(x), grad(grad_at, idx))``; one blocked pass over
        the data when ``idx is None``."""
        if idx is not None:
            return self.loss(x), self.grad(x if grad_at is None else grad_at, idx)
        self.check_state(x)
        if grad_at is None:
            total, g = self._full_pass(x, loss=True, grad="plain")
            return total / self.n + self.regularizer(x), g + self.regularizer_grad(x)
        self.check_state(grad_at, "grad_at")
        total, g = self._full_pass(x, loss=True, grad="plain", grad_at=grad_at)
        return total / self.n + self.regularizer(x), g + self.regularizer_grad(grad_at)

    # -- constants -----------------------------------------------------------------------
    @property
    def data_curvature(self) -> float:
        r""":math:`\lambda_{\max}(A^\top A/n)` (largest eigenvalue of the feature Gram matrix)."""
        if not hasattr(self, "_gram_max"):
            A = self.features_np
            if self.d <= 4000:
                self._gram_max = float(np.linalg.eigvalsh(A.T @ A / self.n)[-1])
            elif self.n <= 4000:  # large d: AᵀA and AAᵀ share their nonzero eigenvalues
                self._gram_max = float(np.linalg.eigvalsh(A @ A.T / self.n)[-1])
            else:  # pragma: no cover - both large (seconds): Lanczos on v -> Aᵀ(Av)/n, no
                # copy of A (``svds(A)`` made one: its adjoint ``A.T.conj()`` is a new n x d
                # array even for real A)
                import scipy.sparse.linalg as sla

                n, d = A.shape
                gram = sla.LinearOperator((d, d), matvec=lambda v: A.T @ (A @ v) / n,
                                          dtype=np.float64)
                v0 = np.random.default_rng(0).standard_normal(d)  # fixed: a reproducible L
                self._gram_max = float(sla.eigsh(gram, k=1, which="LA", v0=v0,
                                                 return_eigenvectors=False)[0])
        return self._gram_max

    @property
    def gradient_bound(self) -> float:
        """``sup ||∇ℓ_i(x)||_2 <= sup|ψ'| · l2_radius`` (state-independent)."""
        return self.psi_slope * self.l2_radius

    @property
    def l1_sensitivity(self) -> float:
        """Kuru et al. eq. (36): ``S_1 = 2 sup|ψ'| sup ||u||_1`` (``2 sup||u||_1``, logistic)."""
        return 2.0 * self.psi_slope * self.l1_radius

    @property
    def l2_sensitivity(self) -> float:
        """``sup ||∇ℓ(x;y) - ∇ℓ(x;y')||_2 <= 2 sup|ψ'| l2_radius`` (replace-one)."""
        return 2.0 * self.psi_slope * self.l2_radius

    @property
    def smoothness(self) -> float:
        """``L = sup ψ'' · λ_max(AᵀA/n) + sup R''`` (tight for the data term's bound), or the
        larger value declared with ``smoothness=`` at construction (e.g. a paper's L)."""
        tight = self.psi_curvature * self.data_curvature + self._reg_curvature()[1]
        declared = getattr(self, "_declared_L", None)
        if declared is not None:
            if declared < tight * (1 - 1e-12):
                raise ValueError(f"smoothness must be >= the computed L = {tight:.6g}, "
                                 f"got {declared}")
            return declared
        return tight

    @property
    def strong_convexity(self) -> float:
        """``μ = inf R''`` (the data term is only convex); negative when non-convex."""
        return self._reg_curvature()[0]

    def _reg_curvature(self) -> tuple[float, float]:
        return 0.0, 0.0

    # -- host-side solver ----------------------------------------------------------------
    def _host_fgh(self, w: np.ndarray, need_hess: bool = True):
        xp = get_namespace("numpy")
        A, y = self.features_np, self.labels_np
        z = (A @ w) * y
        f = float(np.mean(self._psi(xp, z)) + self._reg_host(w)[0])
        g = A.T @ (self._dpsi(xp, z) * y) / self.n + self._reg_host(w)[1]
        if not need_hess:
            return f, g, None
        # y_i^2 = 1: the Hessian's data term needs no signs
        h = (A.T * self._d2psi(xp, z)) @ A / self.n + np.diag(self._reg_host(w)[2])
        return f, g, h

    def _reg_host(self, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        return 0.0, np.zeros_like(w), np.zeros_like(w)

    def _solve(self) -> Optimum:
        import scipy.optimize  # on first use: 0.1-0.4 CPU-s of import most runs never need

        w0 = np.zeros(self.d)
        if self.d <= 2000:
            res = scipy.optimize.minimize(
                lambda w: self._host_fgh(w, False)[0], w0,
                jac=lambda w: self._host_fgh(w, False)[1],
                hess=lambda w: self._host_fgh(w)[2],
                method="trust-exact", options={"gtol": 1e-13, "maxiter": 2000},
            )
            method = "trust-exact (scipy), x0 = 0"
        else:  # pragma: no cover - large d
            res = scipy.optimize.minimize(
                lambda w: self._host_fgh(w, False)[:2], w0, jac=True, method="L-BFGS-B",
                options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 20000},
            )
            method = "L-BFGS-B (scipy), x0 = 0"
        w = np.asarray(res.x, dtype=float)
        if self.d <= 2000:
            # Newton polish to machine precision (the solver stops at ~1e-11).
            for _ in range(4):
                f, g, h = self._host_fgh(w)
                try:
                    step = np.linalg.solve(h, g)
                except np.linalg.LinAlgError:  # pragma: no cover
                    break
                f_new, g_new, _ = self._host_fgh(w - step, False)
                if np.linalg.norm(g_new) >= np.linalg.norm(g) or not np.isfinite(f_new):
                    break
                w = w - step
        f, g, _ = self._host_fgh(w, False)
        return Optimum(w, f, float(np.linalg.norm(g)), method, is_global=self.convex)

    def to_backend(self, backend: Any) -> MarginLossObjective:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("optimum", None)
        new.xp = get_namespace(backend)
        new._rows = new.xp.asarray(self._rows_np)
        new._signs = None if self._signs_np is None else new.xp.asarray(self._signs_np)
        new._norms = new.xp.asarray(self._norms_np)
        if "optimum" in self.__dict__:
            new.__dict__["optimum"] = self.__dict__["optimum"]
        return new


class LogisticRegression(MarginLossObjective):
    r"""L2-regularised logistic regression :math:`\frac1n\sum_i\log(1+e^{-y_ia_i^\top x})
    + \frac{\ell_2}{2}\lVert x\rVert^2`.

    * Kuru et al. (35) with the sign typo corrected (``kuru_et_al.md`` §11 item 6):
      their :math:`\lambda\lVert x\rVert^2` is ``l2 = 2λ``; use
      :meth:`LogisticRegression.kuru` (λ = 0.01 gives μ = 0.02).
    * Lee & Kifer §6: :math:`\frac{\lambda}{2}\lVert x\rVert^2`, i.e. ``l2 = λ``.

    Constants: ``μ = l2``; ``L = λ_max(AᵀA)/(4n) + l2`` (tight: ψ'' <= 1/4).
    :attr:`smoothness_conservative` is Kuru et al.'s Section-5 value
    ``λ_max(AᵀA/n + l2 I)`` (4× looser on the data term), which reproductions of their
    figures must use for ``α = c/L``. ``S_1 = 2 l1_radius`` (eq. (36)).

    Example
    -------
    >>> import numpy as np
    >>> from dpbounds.objectives import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> A = rng.uniform(size=(200, 3)); y = np.sign(A @ [1.0, -1.0, 0.5])
    >>> f = LogisticRegression(A, y, l2=0.02)
    >>> x = f.initial_state(trials=2)
    >>> f.loss(x).shape, round(float(f.loss(x)[0]), 5)   # log 2 at x = 0
    ((2,), 0.69315)
    """

    name = "logistic"
    _compiled_pass = "logistic"
    psi_curvature = 0.25
    psi_slope = 1.0
    source = Source(KURU, "Section 5, eqs. (35)-(36)", Provenance.VERBATIM,
                    "sign typo of (35) corrected: minimise -log p + λ||x||^2")

    def __init__(self, features: Any, labels: Any, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(features, labels, **kwargs)
        self.l2 = check_nonnegative("l2", l2)

    @classmethod
    def kuru(cls, features: Any, labels: Any, lam: float = 0.01, *,
             paper_smoothness: bool = False, **kwargs: Any) -> LogisticRegression:
        """Kuru et al. (35): ``mean log(1+exp(-y aᵀx)) + lam ||x||^2`` (so ``μ = 2 lam``).

        ``paper_smoothness=True`` takes Section 5's ``L = λ_max(AᵀA/n + 2 lam I)`` (the
        step sizes ``c/L``, κ and the weights then match the paper's experiments). That
        ``L`` is the data's own eigenvalue, not a public bound: a private run whose default
        step ``c/L`` reads it warns with
        :class:`~dpbounds.privacy.limits.DataDerivedCalibrationWarning`, as for an ``L``
        computed from the Gram matrix (a private selection refuses the read).
        """
        lam = check_nonnegative("lam", lam)
        if paper_smoothness and kwargs.get("smoothness") is not None:
            # the paper's L replaced the declared one, which the warning then asked for
            # (review of stop 83)
            raise ValueError("paper_smoothness=True takes Section 5's L from the data; give "
                             "either it or smoothness= (a public bound), not both")
        if paper_smoothness:
            A = np.asarray(to_numpy(features), dtype=float)
            kwargs["smoothness"] = float(np.linalg.eigvalsh(A.T @ A / A.shape[0])[-1]
                                         + 2.0 * lam)
        obj = cls(features, labels, l2=2.0 * lam, **kwargs)
        if paper_smoothness:
            # computed from the records like the tight L, so not a declaration: the default
            # step c/L of a private run depends on the data (it moved 2.108 -> 1.994 with one
            # row changed within the declared domain: review of stop 82)
            obj.constants_declared["smoothness"] = False
            obj.smoothness_origin = "Section 5's lambda_max(A^T A / n) + 2 lam"
        return obj

    def _psi(self, xp: Any, z: Any) -> Any:
        return _softplus(xp, -z)

    def _dpsi(self, xp: Any, z: Any) -> Any:
        return -_sigmoid_neg(xp, z)

    def _d2psi(self, xp: Any, z: Any) -> Any:
        s = _sigmoid_neg(xp, z)
        return s * (1.0 - s)

    def _psi_dpsi(self, xp: Any, z: Any) -> tuple[Any, Any]:
        e = xp.exp(-xp.abs(z))  # shared by softplus(-z) and sigmoid(-z)
        psi = xp.maximum(-z, 0.0) + xp.log1p(e)
        if is_numpy(xp):
            w = _sigmoid_neg_from(z, e)
            np.negative(w, out=w)
            return psi, w
        inv = 1.0 / (1.0 + e)
        return psi, -xp.where(z >= 0, e * inv, inv)

    def regularizer(self, x: Any) -> Any:
        return 0.5 * self.l2 * self.xp.sum(x * x, axis=1)

    def regularizer_grad(self, x: Any) -> Any:
        return self.l2 * x

    def _reg_host(self, w):
        return 0.5 * self.l2 * float(w @ w), self.l2 * w, np.full_like(w, self.l2)

    def _reg_curvature(self):
        return self.l2, self.l2

    def _reg_lipschitz(self, radius: float) -> float:
        return self.l2 * radius if self.l2 > 0 else 0.0

    @property
    def smoothness_conservative(self) -> float:
        """Kuru et al. Section 5: ``L = λ_max(AᵀA/n + l2 I)`` (ψ'' bounded by 1, not 1/4)."""
        return self.data_curvature + self.l2


class HuberSVM(MarginLossObjective):
    r"""Linear SVM with the Huber-smoothed hinge, :math:`\frac1n\sum_i\psi_h(y_ia_i^\top x)
    + \frac{\ell_2}{2}\lVert x\rVert^2`.

    Lee & Kifer §6 print the plain hinge :math:`\max\{1-z,0\}`, which is not
    differentiable at ``z = 1``. Gradient methods and objective perturbation need a smooth
    loss, so we use the Huber hinge of Chaudhuri, Monteleoni & Sarwate (2011), which
    objective perturbation requires (their eq. for :math:`\ell_{\text{Huber}}`; bandwidth
    ``h``, default 0.5)::

        ψ_h(z) = 0                     if z > 1 + h
               = (1 + h - z)^2 / (4h)  if |1 - z| <= h
               = 1 - z                 if z < 1 - h

    ``ψ_h`` is 1-Lipschitz and ``1/(2h)``-smooth and differs from the hinge by at most
    ``h/4``. Set ``h`` small to approach the hinge (L grows as ``1/(2h)``).
    """

    name = "huber_svm"
    psi_slope = 1.0
    source = Source(LEE_KIFER, "Section 6 (linear SVM)", Provenance.DERIVED,
                    "hinge replaced by the Huber hinge (Chaudhuri et al. 2011), bandwidth h")

    def __init__(self, features: Any, labels: Any, l2: float = 0.0, h: float = 0.5,
                 **kwargs: Any) -> None:
        super().__init__(features, labels, **kwargs)
        self.l2 = check_nonnegative("l2", l2)
        self.h = check_positive("h", h)

    @property
    def psi_curvature(self) -> float:  # type: ignore[override]
        """``sup psi''`` = 1/(2h), of the public bandwidth: a property, so that a private
        selection reads the class's own answer (as an instance attribute, a subclass's
        pinned run read the margin losses' 0.25: review 3 of stop 80)."""
        return 1.0 / (2.0 * self.h)

    def _u(self, xp: Any, z: Any) -> Any:
        return xp.clip((1.0 + self.h - z) / (2.0 * self.h), 0.0, 1.0)

    def _psi(self, xp: Any, z: Any) -> Any:
        u = self._u(xp, z)
        return xp.where(z < 1.0 - self.h, 1.0 - z, self.h * u * u)

    def _dpsi(self, xp: Any, z: Any) -> Any:
        return -self._u(xp, z)

    def _d2psi(self, xp: Any, z: Any) -> Any:
        inside = xp.abs(1.0 - z) <= self.h
        return xp.where(inside, 1.0 / (2.0 * self.h), 0.0)

    def regularizer(self, x: Any) -> Any:
        return 0.5 * self.l2 * self.xp.sum(x * x, axis=1)

    def regularizer_grad(self, x: Any) -> Any:
        return self.l2 * x

    def _reg_host(self, w):
        return 0.5 * self.l2 * float(w @ w), self.l2 * w, np.full_like(w, self.l2)

    def _reg_curvature(self):
        return self.l2, self.l2

    def _reg_lipschitz(self, radius: float) -> float:
        return self.l2 * radius if self.l2 > 0 else 0.0


class NonconvexLogisticRegression(MarginLossObjective):
    r"""Logistic loss with the non-convex regulariser
    :math:`\lambda\sum_j x_j^2/(1+x_j^2)`.

    A standard smooth non-convex ERM test bed (cf. the non-convex rigs of
    ``tran_cutkosky.md`` §12, which use the same regulariser). The regulariser's second
    derivative ``λ (2 - 6t²)/(1+t²)³`` lies in ``[-λ/2, 2λ]``, so

    * ``L = λ_max(AᵀA)/(4n) + 2λ``;
    * :attr:`strong_convexity` is ``-λ/2`` (F is ``λ/2``-weakly convex);
    * the regulariser is bounded (``0 <= R < λ d``) and its gradient by
      ``λ · 3√3/8`` per coordinate, so F is globally Lipschitz:
      ``G_F <= l2_radius + λ (3√3/8) √d``;
    * ``F >= 0``, so ``F(x0) - inf F <= F(x0)``.

    :attr:`optimum` is a local minimiser found by a trust-region Newton method from
    ``x0 = 0`` (``is_global = False``); non-convex bounds use ``||∇F||`` instead.
    """

    name = "nonconvex_logistic"
    convex = False
    psi_curvature = 0.25
    psi_slope = 1.0
    source = Source(TRAN_CUTKOSKY, "simulation test bed (sheet §12)", Provenance.DERIVED,
                    "logistic loss + λ Σ x²/(1+x²); constants ours")

    def __init__(self, features: Any, labels: Any, lam: float = 0.1, **kwargs: Any) -> None:
        super().__init__(features, labels, **kwargs)
        self.lam = check_nonnegative("lam", lam)

    _psi = LogisticRegression._psi
    _dpsi = LogisticRegression._dpsi
    _compiled_pass = "logistic"
    _d2psi = LogisticRegression._d2psi
    _psi_dpsi = LogisticRegression._psi_dpsi

    def regularizer(self, x: Any) -> Any:
        x2 = x * x
        return self.lam * self.xp.sum(x2 / (1.0 + x2), axis=1)

    def regularizer_grad(self, x: Any) -> Any:
        q = 1.0 + x * x
        return self.lam * 2.0 * x / (q * q)

    def _reg_host(self, w):
        q = 1.0 + w * w
        return (self.lam * float(np.sum(w * w / q)), self.lam * 2 * w / q**2,
                self.lam * (2 - 6 * w * w) / q**3)

    def _reg_curvature(self):
        return -0.5 * self.lam, 2.0 * self.lam

    def _reg_lipschitz(self, radius: float) -> float:
        return self.lam * (3.0 * math.sqrt(3.0) / 8.0) * math.sqrt(self.d)

