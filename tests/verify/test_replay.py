"""Replay on neighbouring data (issue 34 item 3), DP-SGD: the same seed on D and D', the
noiseless releases' difference against the declared sensitivity."""

from __future__ import annotations

import pytest

from dpbounds.verify import scaling_study
from dpbounds.verify.replay import replay_dp_sgd


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correct_dp_sgd_meets_its_sensitivity_exactly(seed: int) -> None:
    """Oracle [DERIVED]: the changed record (norm 2C, negated in D') clips to C in opposite
    directions, so the largest release difference is exactly 2C, the declared replace-one
    sensitivity: ratio 1 to rounding."""
    v = replay_dp_sgd(seed=seed)
    assert v.holds and v.measured == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("mutation, ratio", [("scaled_contribution", 2.0),
                                             ("skip_clipping", 2.0)])
def test_contribution_beyond_the_clip_is_caught(mutation: str, ratio: float) -> None:
    """Negative controls: a contribution scaled by 2 after clipping (noise for norm C) and
    no clipping at all (the record of norm 2C enters whole: 4C against 2C) both measure 2."""
    v = replay_dp_sgd(mutation=mutation)
    assert v.failed and v.measured == pytest.approx(ratio, rel=1e-9)


def test_replay_is_blind_to_the_noise_level() -> None:
    """Scope: an under-noised run has the right sensitivity (the drawn check catches it)."""
    assert replay_dp_sgd(mutation="noise_sqrt2").holds


def test_scaled_contribution_in_the_sgd_study() -> None:
    """The issue: the scaled contribution made the utility better and passed verify; the
    quick study's clip_exact check (the clipped mean, computed independently) now names it."""
    res = scaling_study("yang.sgd", vary={"d": [2, 8]}, trials=3, replicates=50,
                        mutation="scaled_contribution")
    assert res.status == "FAIL"
    assert any(v.case.startswith("clip_exact") for v in res.verdicts if v.failed)


def test_bad_input_names_the_parameter() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        replay_dp_sgd(n=4, batch_size=5)
