r"""DP-NSGD: per-sample normalisation :math:`g/(\lVert g\rVert + r)` (Yang et al. eq. (3)).

.. math::

    h_{t,i} = \frac{\nabla\ell_i(x_t)}{\lVert\nabla\ell_i(x_t)\rVert + r},\qquad
    x_{t+1} = x_t - \eta\Big(\frac1B\Big(\sum_{i\in S_t}h_{t,i} + \sigma_{\text{sum}}\xi_t\Big)
    + \nabla R(x_t)\Big),\qquad r > 0,

Yang et al.'s Algorithm 1 / eq. (3), RECONSTRUCTED (the seed lost the formulas; the prose
says the clipping factor is replaced by the normalisation and ":math:`C` in the noise is
replaced by 1"). Every :math:`h_{t,i}` has norm :math:`< 1` **whatever r is**, so the noise
on the sum is :math:`\sigma_{\text{sum}} = z\cdot 2` (replace-one, sampling without
replacement) or :math:`z\cdot 1` (add/remove, Poisson) — **independent of r**. Scaling the
noise by ``r`` (as a third-party Opacus fork does, ``yang_et_al.md`` §12) would under-noise
for ``r < 1``; this module never does.

The loop, sampling schemes, accountant and streams are those of
:func:`dpbounds.algorithms.dp_sgd.dp_sgd`.

Example
-------
>>> import numpy as np
>>> from dpbounds.objectives import LogisticRegression
>>> from dpbounds.algorithms.nsgd import dp_nsgd
>>> rng = np.random.default_rng(0)
>>> A = rng.uniform(size=(500, 4)); y = np.sign(A @ np.array([1., -1, 1, -1]) + 1e-3)
>>> f = LogisticRegression(A, y, l2=1e-2)
>>> a = dp_nsgd(f, epsilon=1.0, delta=1e-5, steps=100, batch_size=50, step_size=0.5,
...             regulariser=0.01, seed=0)
>>> b = dp_nsgd(f, epsilon=1.0, delta=1e-5, steps=100, batch_size=50, step_size=0.5,
...             regulariser=10.0, seed=0)
>>> a.params["noise_std_sum"] == b.params["noise_std_sum"]   # noise does not depend on r
True
"""

from __future__ import annotations

from typing import Any

from dpbounds._validation import check_choice, check_positive
from dpbounds.algorithms._common import SimulationResult
from dpbounds.algorithms._transcript import Transcript
from dpbounds.algorithms.dp_sgd import SAMPLING, _noisy_sgd
from dpbounds.notation import notation_keywords
from dpbounds.objectives._base import ObjectiveProtocol
from dpbounds.provenance import YANG, Provenance, Source

__all__ = ["DP_NSGD_SOURCE", "dp_nsgd"]

DP_NSGD_SOURCE = Source(
    YANG,
    "eq. (3), Algorithm 1 (DP-NSGD) and Lemma 3.1",
    Provenance.RECONSTRUCTED,
    "per-sample g/(||g||+r), Gaussian noise sigma*1 on the sum (independent of r); sigma "
    "calibrated by an RDP accountant (Lemma 3.1's constants are existential)",
)


@notation_keywords(r="regulariser")
def dp_nsgd(
    objective: ObjectiveProtocol,
    *,
    epsilon: float,
    delta: float,
    steps: int,
    batch_size: int,
    step_size: float,
    regulariser: float,
    trials: int = 1,
    seed: Any = None,
    x0: Any = None,
    sampling: str = "without_replacement",
    accountant: str = "rdp",
    trace: str | None = "auto",
    trace_every: int = 1,
    public_n: int | None = None,
    noise: str = "float",
    transcript: Transcript | None = None,
) -> SimulationResult:
    r"""DP-NSGD with per-sample normalisation :math:`g/(\lVert g\rVert+r)` (Yang et al.).

    Parameters
    ----------
    regulariser:
        Regulariser :math:`r > 0` of the normalisation (``r`` is a deprecated alias). It
        trades the non-vanishing bias floor against the decaying term; it does **not** change
        the noise.
    public_n:
        Required with ``sampling="poisson"`` (add/remove): the public dataset size of the
        sampling rate, as in :func:`~dpbounds.algorithms.dp_sgd.dp_sgd`.
    noise:
        ``"float"`` (float64 noise, for simulation; the released floats' last bits leak) or
        ``"grid"`` (safe to release), as in :func:`~dpbounds.algorithms.dp_sgd.dp_sgd`: the
        noisy mean of the normalised gradients (replace-one sensitivity :math:`2/B`) is
        released on a grid with exact discrete Gaussian noise (Canonne, Kamath & Steinke
        2020), accounted as a :class:`~dpbounds.privacy.SubsampledZcdpMechanism` per step
        (Wang, Balle & Kasiviswanathan 2019, Theorem 9).
    transcript:
        ``None`` or a fresh :class:`~dpbounds.algorithms._transcript.Transcript`, as in
        :func:`~dpbounds.algorithms.dp_sgd.dp_sgd`.

    Notes
    -----
    All other parameters and the result are as in :func:`dpbounds.algorithms.dp_sgd.dp_sgd`
    (``params["regulariser"]`` instead of ``clip_threshold``; ``sigma_over_clip`` is the
    noise std on the sum, the per-sample bound being 1).
    """
    r = check_positive("regulariser", regulariser)
    sampling = check_choice("sampling", sampling, SAMPLING)
    return _noisy_sgd(
        objective, kind="normalize", param=r, contribution_bound=1.0,
        epsilon=epsilon, delta=delta, steps=steps, batch_size=batch_size,
        step_size=step_size, trials=trials, seed=seed, x0=x0, sampling=sampling,
        accountant=accountant, trace=trace, trace_every=trace_every, name="dp_nsgd",
        source=DP_NSGD_SOURCE, public_n=public_n, noise_option=noise, transcript=transcript,
    )
