"""The noise each step *used*, read off its iterates (stop 72; ``dpbounds audit ALG --replay``).

The drawn-noise rows read what the generator returned (``noise_drawn``). A step that adds the
right draws at the wrong place -- the same draw at two steps, or none at every other step --
draws correctly and passed every check (the adversary's DP-SGD use-site pair reuse, rounds 4
and 5). :func:`dpbounds.verify.replay.used_noise_verdicts` reads the noise off the iterates of
a plain step on a linear loss, ``(x_t - x_{t+1}) / eta`` minus the noiseless query, and holds it
to the declared law.

Oracles: for correct code the used noise *is* the drawn noise (its sufficient statistic equal
to the transcript's record to rounding: two-sided and exact); under the null the rows' false
failures are binomial at their level (Monte Carlo over seeds); mutants written here at the use
site fail them while the draws' own record still passes (negative controls).
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from dpbounds.algorithms._transcript import Transcript
from dpbounds.verify.drawn_noise import drawn_noise_verdicts
from dpbounds.verify.replay import USED_NOISE, _noisy_run, _pair, replay, used_noise_verdicts


@pytest.mark.parametrize("algorithm", USED_NOISE)
@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_the_used_noise_is_the_drawn_noise_for_correct_code(algorithm, relation):
    data = _pair(8, 3, 1.0, 0, relation)[0]
    tr, iterates = _noisy_run(algorithm, data, steps=24, batch_size=2, clip=1.0, epsilon=1.0,
                              delta=1e-5, trials=5, seed=3, relation=relation)
    assert iterates.shape == (5, 25, 3)
    rows = used_noise_verdicts(tr, iterates, name="t")
    assert len(rows) == 4 and all(v.holds for v in rows)
    # the exact oracle: the same statistic as the draws' record, release by release
    released = (iterates[:, :-1] - iterates[:, 1:]) / 0.5
    w = np.asarray(tr["weight"])
    q = np.asarray(tr["query"])[:, np.asarray(tr["weight_step"])] * w[None, :, None]
    xi = released[:, np.asarray(tr["release_step"])] - q
    np.testing.assert_allclose(np.einsum("trd,trd->tr", xi, xi), tr["noise_drawn"],
                               rtol=1e-9, atol=1e-12)


def _reuse(self, release, noise):  # the record as drawn; the use: odd steps reuse the last
    _DRAWN(self, release, noise)
    k = noise.shape[1] // 2 * 2
    noise[:, 1:k:2] = noise[:, 0:k:2]


def _drop(self, release, noise):  # the record as drawn; the use: no noise at odd steps
    _DRAWN(self, release, noise)
    noise[:, 1::2] = 0.0


def _reuse_one(self, release, noise):  # DP-GD records one release at a time
    _ONE(self, release, noise)
    if release % 2:
        noise[...] = self._last
    self._last = np.array(noise, copy=True)


def _drop_one(self, release, noise):
    _ONE(self, release, noise)
    if release % 2:
        noise[...] = 0.0


_DRAWN, _ONE = Transcript.drawn_block, Transcript.drawn
#: where each algorithm hands its draws to the transcript (and then adds them)
_SITE = {"dp_sgd": "drawn_block", "dp_nsgd": "drawn_block", "dp_gd_gaussian": "drawn"}
_MUTANTS = {"reuse": {"drawn_block": _reuse, "drawn": _reuse_one},
            "drop": {"drawn_block": _drop, "drawn": _drop_one}}


@pytest.mark.parametrize("algorithm", USED_NOISE)
@pytest.mark.parametrize(("mutant", "rows"), [("reuse", {"independence"}),
                                              ("drop", {"scale", "law", "independence"})])
def test_noise_used_at_the_wrong_place_fails_while_its_draws_pass(algorithm, mutant, rows):
    data = _pair(8, 3, 1.0, 0)[0]
    site = _SITE[algorithm]
    with mock.patch.object(Transcript, site, _MUTANTS[mutant][site]):
        tr, iterates = _noisy_run(algorithm, data, steps=24, batch_size=2, clip=1.0,
                                  epsilon=1.0, delta=1e-5, trials=16, seed=1,
                                  relation="replace_one")
    # the draws' own record passes: what the generator returned was right
    assert all(v.holds for v in drawn_noise_verdicts(tr, name="drawn"))
    failed = {v.case.split(":")[0].split()[-1] for v in used_noise_verdicts(tr, iterates)
              if not v.holds}
    assert rows <= failed, failed
    # and the replay says so (exit 1 from `dpbounds audit ALG --replay`)
    with mock.patch.object(Transcript, site, _MUTANTS[mutant][site]):
        assert not all(v.holds for v in replay(algorithm, seed=1))


def test_the_used_noise_rows_fail_correct_code_at_their_level():
    # 4 rows Bonferroni at 1e-3: a correct replay fails them with probability <= 1e-3; over
    # 200 seeds more than 2 failures has probability < 2e-3 at that rate (binomial)
    fails = sum(any(not v.holds for v in replay("dp_sgd", seed=s) if "used noise" in v.case)
                for s in range(100, 300))
    assert fails <= 2


def test_bad_input_is_named():
    data = _pair(8, 3, 1.0, 0)[0]
    tr, iterates = _noisy_run("dp_sgd", data, steps=4, batch_size=2, clip=1.0, epsilon=1.0,
                              delta=1e-5, trials=2, seed=0, relation="replace_one")
    with pytest.raises(ValueError, match=r"iterates must have shape \(trials, steps \+ 1, d\)"):
        used_noise_verdicts(tr, iterates[:, :-1])
    with pytest.raises(ValueError, match="iterates must be finite"):
        used_noise_verdicts(tr, np.where(iterates == iterates[0, 1, 0], np.nan, iterates))
    with pytest.raises(ValueError, match="recorded its queries"):
        used_noise_verdicts({k: v for k, v in tr.items() if k != "query"}, iterates)
