"""The calibrated noise of a run, as one frozen record.

The helpers that calibrate an algorithm's noise before it runs
(:func:`~dpbounds.algorithms.dp_sgd.noisy_sgd_noise`,
:func:`~dpbounds.algorithms.tree_momentum.tree_momentum_privacy`,
:func:`~dpbounds.algorithms.tree_momentum.sensitivity_reduced_privacy`) all return a
:class:`NoiseCalibration`: the noise groups (one for DP-SGD and tree momentum, two for the
sensitivity-reduced tree), their sensitivities under the stated neighbouring relation, the
mechanisms the run executes (the ledger's entries) and the epsilon the accountant charges them.

Example
-------
>>> from dpbounds.privacy.mechanisms import GaussianMechanism, Neighbouring
>>> m = GaussianMechanism(2.0, 1.0)
>>> c = NoiseCalibration(noise_std=(2.0,), sensitivity=(1.0,), mechanisms=((m, 3),),
...                      epsilon_spent=1.5, delta=1e-5, neighbouring=Neighbouring.ADD_REMOVE,
...                      accountant="rdp")
>>> c.sigma, c.groups
(2.0, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpbounds.privacy.mechanisms import Neighbouring

__all__ = ["NoiseCalibration"]


@dataclass(frozen=True)
class NoiseCalibration:
    """Calibrated noise of one run (frozen).

    Attributes
    ----------
    noise_std : tuple of float
        Standard deviation of the Gaussian noise of each group: on the summed gradient for
        DP-SGD / DP-NSGD, per tree node for tree momentum. ``0.0`` for a non-private run
        (``epsilon = inf``).
    sensitivity : tuple of float
        L2 sensitivity of each group's noised quantity under :attr:`neighbouring`.
    mechanisms : tuple of (Mechanism, int)
        What the run executes, as ``(mechanism, count)`` entries of its ledger; empty for a
        non-private run.
    epsilon_spent : float
        The epsilon the accountant charges :attr:`mechanisms` at :attr:`delta` (never above the
        target; ``inf`` for a non-private run).
    delta : float
        The delta of the target.
    neighbouring : Neighbouring
        The neighbouring relation of the sensitivities and of the charge.
    accountant : str
        The accountant that calibrated the noise (``'rdp'``, ``'pld'``, ``'zcdp'``).
    node_count : tuple of int
        Tree nodes one record enters, per group (empty for DP-SGD).
    noise_multiplier : float or None
        ``noise_std / sensitivity`` of a single-group calibration (DP-SGD's z).
    sampling_rate : float or None
        Sampling rate ``q = B/n`` of a subsampled run.
    rho : float or None
        zCDP parameter of the run (tree methods).
    noise_split : float or None
        Share of the zCDP budget given to the first group (sensitivity-reduced tree).
    """

    noise_std: tuple[float, ...]
    sensitivity: tuple[float, ...]
    mechanisms: tuple[tuple[Any, int], ...]
    epsilon_spent: float
    delta: float
    neighbouring: Neighbouring
    accountant: str
    node_count: tuple[int, ...] = ()
    noise_multiplier: float | None = None
    sampling_rate: float | None = None
    rho: float | None = None
    noise_split: float | None = None

    def __post_init__(self) -> None:
        if len(self.noise_std) != len(self.sensitivity) or not self.noise_std:
            raise ValueError("noise_std and sensitivity must have one entry per noise group, "
                             f"got {len(self.noise_std)} and {len(self.sensitivity)}")
        if self.node_count and len(self.node_count) != len(self.noise_std):
            raise ValueError("node_count must be empty or have one entry per noise group")
        if not isinstance(self.neighbouring, Neighbouring):
            raise TypeError("neighbouring must be a Neighbouring member, got "
                            f"{self.neighbouring!r}")
        if any(not (s >= 0.0) or math.isnan(s) for s in self.noise_std):
            raise ValueError(f"noise_std must be >= 0, got {self.noise_std}")

    @property
    def groups(self) -> int:
        """Number of noise groups."""
        return len(self.noise_std)

    @property
    def sigma(self) -> float:
        """The noise std of a single-group calibration (``ValueError`` for two groups)."""
        if self.groups != 1:
            raise ValueError(f"this calibration has {self.groups} noise groups; "
                             "read noise_std[i]")
        return self.noise_std[0]

    @property
    def private(self) -> bool:
        """Whether the run adds noise (a finite epsilon was targeted)."""
        return bool(self.mechanisms)
