r"""A run's transcript: what each step used and released, for checks that share nothing with it.

Issue 34 item 1 (dp-recorder's record-and-replay idea): a :class:`Transcript` passed as
``transcript=`` to an algorithm records, per step and trial, the sample indices used, the
largest per-sample contribution norm before and after clipping (or normalisation), and per
*release* (a noisy quantity the run publishes: one per step for DP-SGD and DP-GD, one per
tree node for tree aggregation) its noise standard deviation (or Laplace scale ``b``) and the
weights with which each step's per-sample contributions enter it; where the run records what
it drew (:meth:`Transcript.drawn`: the Laplace momentum methods, the Gaussian DP-GD, DP-SGD,
DP-NSGD and Tran & Cutkosky's Algorithms 1 and 2, one release per formed tree node, whose
noise block both the compiled loop and the NumPy path add; with ``noise="grid"`` the same
methods, whose integer draws are recorded in grid units), also
each release's drawn noise, as :math:`\lVert\xi_r\rVert_1` (Laplace) or
:math:`\lVert\xi_r\rVert_2^2` (Gaussian) per trial (a grid Gaussian run also
:math:`|\xi_{r,1}|`, its first coordinate's draw), which
:mod:`dpbounds.verify.drawn_noise` tests against the recorded scale:

.. math::

    \text{release}_r = \sum_t w_{r,t}\sum_{i\in S_t} c_{i,t} + \xi_r,\qquad
    \xi_r\sim N(0, s_r^2 I_d)\ \text{or}\ \mathrm{Lap}(s_r)^d,

with :math:`c_{i,t}` the mapped (clipped / normalised) per-sample gradient of step ``t``
(public terms such as a regulariser are left out: they carry no sample). A re-accounting
(:mod:`dpbounds.verify.reaccount`) reads only :meth:`Transcript.as_dict`.

Cost: arrays allocated once per run (indices ``(trials, T, B)`` as ``int32``, two
``(trials, T)`` norm arrays, the drawn statistics ``(trials, R)``, filled in place) and the
releases' weights (the tree's node weights ``~ T log2(T) / 2`` COO entries) in one array per
block of steps, joined once by :meth:`Transcript.as_dict`, which keeps the joined array in
their place: each number is held once. The compiled loops (:mod:`dpbounds.algorithms._step_kernels`:
Tran & Cutkosky's Algorithms 1 and 2, DP-SGD / DP-NSGD without replacement) fill the norms
themselves; Poisson DP-SGD and DP-GD record on their NumPy path, and every algorithm falls
back to its NumPy path with ``queries=True`` (``bench/bench_transcript.py`` measures both).
Off unless ``transcript=`` is given.

Example
-------
>>> import numpy as np
>>> from dpbounds.algorithms import dp_sgd
>>> from dpbounds.algorithms._transcript import Transcript
>>> from dpbounds.objectives import LogisticRegression
>>> rng = np.random.default_rng(0)
>>> A = rng.uniform(size=(20, 3)); y = np.sign(A @ np.array([1.0, -1.0, 1.0]) + 1e-3)
>>> tr = Transcript()
>>> _ = dp_sgd(LogisticRegression(A, y), epsilon=1.0, delta=1e-5, steps=5, batch_size=4,
...            step_size=0.1, clip_threshold=0.2, seed=0, transcript=tr)
>>> d = tr.as_dict()
>>> d["indices"].shape, bool((d["max_norm"] <= 0.2 + 1e-12).all())
((1, 5, 4), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds.backend import to_numpy

__all__ = ["Transcript"]

#: sampling schemes a transcript names
SCHEMES: tuple[str, ...] = ("without_replacement", "poisson", "full", "shuffle",
                             "shuffle_once")


def tree_node_weights(steps: int, alpha: float, scale: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""COO weights of the noised tree nodes of a run of ``steps`` steps: release ``t - 1``
    is the node formed at step ``t``, :math:`[t-2^{\nu_2(t)}+1, t]`, whose sum is
    :math:`\sum_j w(1-\alpha)^{t-j} v_j` (:mod:`dpbounds.algorithms.tree_aggregation`, DERIVED
    there; ``w = alpha``, or 1 when ``alpha = 0``) with ``v_j`` the step's mean, so a
    per-sample contribution enters with ``scale * w (1-alpha)^(t-j)`` (``scale = 1/B``).
    Returns ``(release, step, weight)`` with 0-based steps."""
    t = np.arange(1, steps + 1, dtype=np.int64)
    length = t & -t
    release = np.repeat(t - 1, length)
    start = np.repeat(t - length, length)  # 0-based first step of each node
    offset = np.arange(release.size) - np.repeat(np.cumsum(length) - length, length)
    step = start + offset
    w = alpha if alpha > 0 else 1.0
    return release, step, scale * w * (1.0 - alpha) ** (release - step).astype(float)


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (the transcript keeps writing ``a`` itself)."""
    v = a.view()
    v.flags.writeable = False
    return v


class Transcript:
    """Recorder of a run's sample use and releases (module docstring); filled by the algorithm.

    Attributes after the run (also in :meth:`as_dict`): ``algorithm``, ``trials``, ``steps``,
    ``n``, ``batch_size``, ``sampling`` (``"without_replacement"``: a uniform ``B``-subset per
    step; ``"poisson"``: each sample with probability ``sampling_rate``; ``"full"``: every
    sample every step; ``"shuffle"``: consecutive batches of a fresh permutation per epoch),
    ``sampling_rate``, ``neighbouring``, ``noise`` (``"gaussian"`` or ``"laplace"``).
    """

    def __init__(self, queries: bool = False) -> None:
        #: also record each step's noiseless query, the sum of its contributions
        #: ``(trials, T, d)`` (for the replay on neighbouring data; off: it is ``T d`` numbers
        #: per trial)
        self.queries = bool(queries)
        self._query: list[tuple[int, np.ndarray]] = []
        self.algorithm = ""
        self.trials = self.steps = self.n = self.batch_size = 0
        self.sampling = "full"
        self.sampling_rate = 1.0
        self.neighbouring = "replace_one"
        self.noise = "gaussian"
        self.grid_bits: int | None = None
        self._indices: np.ndarray | None = None
        self._ragged: list[np.ndarray] = []
        self._bound = np.zeros(0)
        self._raw = np.zeros((0, 0))
        self._mapped = np.zeros((0, 0))
        self._rel_step: list[np.ndarray] = []
        self._rel_std: list[np.ndarray] = []
        # the releases' COO weights, as blocks until as_dict joins them
        self._w_release: list[np.ndarray] = []
        self._w_step: list[np.ndarray] = []
        self._w: list[np.ndarray] = []
        self._released = 0
        # the drawn noise's statistic per (trial, release), NaN where none was recorded: one
        # array filled in place (at first as wide as the steps, grown where a run releases
        # more), not blocks concatenated at the end, which held each number twice (a full
        # study of DP-NSGD at T = 1e7 peaked 32 bytes a step above this)
        self._drawn: np.ndarray | None = None  # (trials, capacity)
        self._first: np.ndarray | None = None  # grid Gaussian: |first coordinate|
        self._drawn_end = 0  # one past the last release recorded
        self._noise_dim = 0

    def begin(self, algorithm: str, *, trials: int, steps: int, n: int, batch_size: int,
              sampling: str, sampling_rate: float, neighbouring: str, bound: Any,
              noise: str = "gaussian", grid_bits: int | None = None) -> None:
        """Start a run (allocates the per-step arrays; a transcript records one run).

        ``bound`` is the declared bound on one sample's contribution norm, a number or one
        per step (the clip the noise is calibrated for). ``grid_bits``: ``j`` of a run that
        releases on the grid :math:`2^{-j}` with integer noise (``noise="grid"``: the
        Laplace momentum methods' discrete Laplace, the Gaussian methods' discrete Gaussian):
        its draws are integers in grid units and its scales in value units; ``None`` for
        float noise."""
        if self.algorithm:
            raise ValueError("transcript already holds a run of "
                             f"{self.algorithm!r}; pass a fresh Transcript() per run")
        if sampling not in SCHEMES:
            raise ValueError(f"sampling must be one of {SCHEMES}, got {sampling!r}")
        self.algorithm, self.trials, self.steps, self.n = algorithm, trials, steps, n
        self.batch_size, self.sampling, self.sampling_rate = batch_size, sampling, sampling_rate
        self.neighbouring = str(neighbouring).replace("-", "_").replace("/", "_")
        self.noise = noise
        self.grid_bits = None if grid_bits is None else int(grid_bits)
        self._bound = np.broadcast_to(np.asarray(bound, dtype=float), (steps,)).copy()
        if sampling in ("without_replacement", "shuffle", "shuffle_once"):
            self._indices = np.full((trials, steps, batch_size), -1, dtype=np.int32)
        self._raw = np.full((trials, steps), np.nan)
        self._mapped = np.full((trials, steps), np.nan)

    def batches(self, t0: int, idx: Any) -> None:
        """Steps ``t0 ..`` used the fixed-size batches ``idx``, ``(trials, k, B)`` (or
        ``(trials, B)`` for one step)."""
        a = np.asarray(to_numpy(idx))
        if a.ndim == 2:
            a = a[:, None, :]
        assert self._indices is not None, "batches() needs sampling with a fixed batch size"
        self._indices[:, t0:t0 + a.shape[1], :] = a

    def members(self, t: int, idx: Any, counts: Any) -> None:
        """Step ``t`` (Poisson) used ``idx[k, :counts[k]]`` in trial ``k``."""
        a = np.asarray(to_numpy(idx)).astype(np.int32)
        c = np.asarray(to_numpy(counts))
        keep = np.arange(a.shape[1])[None, :] < c[:, None]
        self._ragged.append(np.where(keep, a, -1))
        assert len(self._ragged) == t + 1, "members() must be called once per step, in order"

    def norms(self, t: int, raw: Any, mapped: Any) -> None:
        """Per-sample contribution norms of step ``t``, ``(trials, m)`` before and after the
        clip (``m`` the batch; padded entries may be 0): the largest per trial is kept."""
        r = np.asarray(to_numpy(raw), dtype=float)
        m = np.asarray(to_numpy(mapped), dtype=float)
        self._raw[:, t] = r.max(axis=1) if r.shape[1] else 0.0
        self._mapped[:, t] = m.max(axis=1) if m.shape[1] else 0.0

    def norm_block(self, t0: int, raw: np.ndarray, mapped: np.ndarray) -> None:
        """Steps ``t0 ..``'s largest norms at once, ``(trials, k)`` each (a compiled loop's
        record)."""
        k = raw.shape[1]
        self._raw[:, t0:t0 + k] = raw
        self._mapped[:, t0:t0 + k] = mapped

    def query(self, t: int, total: Any) -> None:
        """Step ``t``'s noiseless query, the sum of its mapped contributions ``(trials, d)``."""
        self._query.append((t, np.asarray(to_numpy(total), dtype=float)))

    def releases(self, steps: Any, std: Any, weights: tuple[Any, Any, Any]) -> None:
        """Releases made at ``steps`` (0-based step after which each is published) with noise
        ``std`` (or Laplace scale), and ``weights = (release, step, w)`` (COO, ``release``
        counted from 0 within this call): step ``step``'s contributions enter release
        ``release`` with weight ``w``."""
        s = np.array(steps, dtype=np.int64, ndmin=1)  # a copy: as_dict may return it
        sd = np.broadcast_to(np.asarray(std, dtype=float), s.shape).copy()
        r, t, w = (np.atleast_1d(np.asarray(v)) for v in weights)
        self._rel_step.append(s)
        self._rel_std.append(sd)
        self._w_release.append(r.astype(np.int64) + self._released)
        self._w_step.append(t.astype(np.int64))
        self._w.append(np.broadcast_to(np.asarray(w, dtype=float), r.shape).copy())
        self._released += s.size

    def drawn(self, release: int, noise: Any) -> None:
        r"""Release ``release`` (0-based, over the run) drew ``noise``, ``(trials, d)``: the
        noise actually added. Kept per trial as one number, the sufficient statistic of its
        scale: :math:`\sum_j|\xi_j|` for Laplace noise, :math:`\sum_j\xi_j^2` for Gaussian
        (what a check of the draws against ``release_std`` reads; ``d`` is kept once). A
        grid Gaussian run (``grid_bits`` set, ``noise="gaussian"``) also keeps
        :math:`|\xi_1|`, one coordinate's draw, whose law (the discrete Gaussian's folded)
        is tested exactly; the sum of squares of ``d > 1`` integer draws has no tractable
        exact law at the grid scales."""
        a = np.asarray(to_numpy(noise), dtype=float)
        self.drawn_block(release, a.reshape(a.shape[0], 1, -1))

    def drawn_block(self, release: int, noise: Any) -> None:
        """Releases ``release ..`` drew ``noise``, ``(trials, k, d)`` (one block of ``k``
        steps' draws at once; as :meth:`drawn` per release)."""
        a = np.asarray(to_numpy(noise), dtype=float)
        stat = np.abs(a).sum(axis=2) if self.noise == "laplace" else np.einsum("tkd,tkd->tk",
                                                                              a, a)
        self._noise_dim = int(a.shape[2])
        r0, k = int(release), stat.shape[1]
        rows = self.trials or stat.shape[0]  # a block of one row broadcasts, as it did
        self._drawn = self._room(self._drawn, rows, r0 + k)
        self._drawn[:, r0:r0 + k] = stat
        if self.grid_bits is not None and self.noise == "gaussian":
            self._first = self._room(self._first, rows, r0 + k)
            self._first[:, r0:r0 + k] = np.abs(a[:, :, 0])
        if k:  # an empty block records nothing (and names no release)
            self._drawn_end = max(self._drawn_end, r0 + k)

    def _room(self, rec: np.ndarray | None, trials: int, end: int) -> np.ndarray:
        """``rec`` (a per-release record, NaN where unrecorded) with room for ``end``
        releases: allocated as wide as the run's steps, doubled where a run releases more."""
        if rec is not None and rec.shape[1] >= end:
            return rec
        width = max(end, self.steps, 2 * (0 if rec is None else rec.shape[1]))
        out = np.full((trials, width), np.nan)
        if rec is not None:
            out[:, :rec.shape[1]] = rec
        return out

    @property
    def nbytes(self) -> int:
        """Bytes the recorded arrays hold."""
        return sum(int(v.nbytes) for v in self.as_dict().values() if isinstance(v, np.ndarray))

    def as_dict(self) -> dict[str, Any]:
        r"""Everything recorded, as NumPy arrays and plain scalars (what a check reads).

        ``indices`` ``(trials, T, width)`` (``-1`` pads a Poisson step; ``None`` for the full
        batch), ``max_norm_raw`` / ``max_norm`` ``(trials, T)``, ``bound`` ``(T,)`` (declared),
        ``release_step`` / ``release_std`` ``(R,)``, ``weight_release`` / ``weight_step`` /
        ``weight`` (COO); with ``queries=True`` also ``query`` ``(trials, T, d)``; where the
        run recorded its draws (:meth:`drawn`: the Laplace momentum methods, the Gaussian
        DP-GD, DP-SGD, DP-NSGD and the tree methods' formed nodes) also ``noise_drawn``
        ``(trials, R)`` (``nan`` for a release not recorded) and ``noise_dim`` (``d``); a
        grid run (``noise="grid"``) also ``grid_bits`` (``j``: its ``noise_drawn`` is the
        integer noise's L1 norm (discrete Laplace) or sum of squares (discrete Gaussian) in
        grid units :math:`2^{-j}`, its ``release_std`` the discrete Laplace scale or the
        discrete Gaussian's :math:`\sigma` (:math:`\sqrt{tm}\,2^{-j}`, its variance
        parameter's root) in value units); a grid Gaussian run also ``noise_drawn_first``
        ``(trials, R)``, each release's first-coordinate draw :math:`|Z_{r,1}|` in grid units.

        The drawn records and the releases' arrays are read-only views of what the transcript
        holds (each number is held once: a full study of DP-NSGD at T = 1e7 held 0.7 GB
        more when each call copied them); a release or draw recorded after a call shows in
        the next call's arrays. A draw recorded for a release the run did not make is an
        error here (before: an error for a block of draws, dropped silently for one).
        """
        if self._ragged:
            width = max(1, max(a.shape[1] for a in self._ragged))
            idx: np.ndarray | None = np.full((self.trials, len(self._ragged), width), -1,
                                             dtype=np.int32)
            assert idx is not None
            for t, a in enumerate(self._ragged):
                idx[:, t, :a.shape[1]] = a
        else:
            idx = self._indices

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            # one array, kept in place of the parts (they are not held twice, and a second
            # call copies nothing)
            if not parts:
                return np.zeros(0, dtype)
            out = np.concatenate(parts).astype(dtype, copy=False) if len(parts) > 1 else \
                parts[0].astype(dtype, copy=False)
            parts[:] = [out]
            return _read_only(out)

        extra: dict[str, Any] = {}
        if self._drawn_end > self._released:
            raise ValueError(f"noise was recorded for release {self._drawn_end - 1}, but the "
                             f"run made {self._released} releases")
        if self._drawn is not None:
            self._drawn = self._room(self._drawn, self._drawn.shape[0], self._released)
            extra["noise_drawn"] = _read_only(self._drawn[:, :self._released])
            extra["noise_dim"] = self._noise_dim
        if self._first is not None:
            self._first = self._room(self._first, self._first.shape[0], self._released)
            extra["noise_drawn_first"] = _read_only(self._first[:, :self._released])
        if self.grid_bits is not None:
            extra["grid_bits"] = self.grid_bits
        if self.queries:
            q = np.full((self.trials, self.steps, self._query[0][1].shape[-1] if self._query
                         else 0), np.nan)
            for t, v in self._query:
                q[:, t] = v
            extra["query"] = q
        return dict(extra, algorithm=self.algorithm, trials=self.trials, steps=self.steps, n=self.n,
                    batch_size=self.batch_size, sampling=self.sampling,
                    sampling_rate=self.sampling_rate, neighbouring=self.neighbouring,
                    noise=self.noise, indices=idx, bound=self._bound, max_norm_raw=self._raw,
                    max_norm=self._mapped, release_step=cat(self._rel_step, np.int64),
                    release_std=cat(self._rel_std, float),
                    weight_release=cat(self._w_release, np.int64),
                    weight_step=cat(self._w_step, np.int64), weight=cat(self._w, float))
