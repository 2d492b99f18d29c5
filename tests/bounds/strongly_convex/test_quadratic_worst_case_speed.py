"""Issue 36: the constant-parameter recursion of the quadratic worst case runs in place, and
long passes show a bar.

Oracle: the step-by-step loop (``_responses_loop``, the code before the change, which reads
every parameter at every step): the in-place path must give the same floats bit for bit,
overflow (an unstable method: inf, nan) included. The loop itself is checked against
independent impulse responses in ``test_quadratic_worst_case.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpbounds._progress as progress_module
import dpbounds.bounds.strongly_convex.quadratic_worst_case as qwc


def _loop(lam, a_t, b_t, g_t, lap, smp):
    track_s = bool(np.any(smp > 0))
    return qwc._responses_loop(lam, a_t, b_t, g_t, lap, smp, track_s, False,
                               lambda c, v: c * v, qwc._NoBar())


@pytest.mark.parametrize("T", [1, 2, 3, 1025, 3000])
@pytest.mark.parametrize("smp", [0.0, 0.7])
@pytest.mark.parametrize("al, be, ga, mu, L", [
    (0.5, 0.3, 0.0, 1.0, 2.0),        # heavy ball, stable
    (0.01, 0.99, 0.99, 0.001, 1.0),   # Nesterov, momentum near 1
    (0.5, 0.3, 0.0, 1.0, 10.0),       # unstable at the top of the spectrum: overflow
])
def test_constant_path_is_the_loop_bit_for_bit(T, smp, al, be, ga, mu, L) -> None:
    lam = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(np.linspace(0.0, np.pi, 257))
    args = [np.full(T, v) for v in (al, be, ga, 2.0, smp)]
    fast = qwc._responses(lam, *args)
    slow = _loop(lam, *args)
    for f, s in zip(fast, slow):
        assert np.array_equal(f, s, equal_nan=True)


def test_changing_parameters_take_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # control: a schedule that changes is not read as constant
    called = []
    monkeypatch.setattr(qwc, "_responses_constant", lambda *a: called.append(a))
    lam = np.linspace(1.0, 2.0, 9)
    a_t = np.array([0.5, 0.4, 0.5])
    out = qwc._responses(lam, a_t, np.full(3, 0.3), np.zeros(3), np.full(3, 2.0), np.zeros(3))
    assert called == [] and len(out) == 3


class _Recorder:
    def __init__(self, total: int) -> None:
        self.total, self.n = total, 0

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        self.n += n


@pytest.mark.parametrize("progress", [True, None, False])
def test_a_long_pass_shows_a_bar_over_its_steps(monkeypatch, progress) -> None:
    bars: list[_Recorder] = []

    def recorder(enabled, total=None, **kwargs):  # noqa: ANN001, ANN202
        bars.append(_Recorder(total))
        return bars[-1]

    monkeypatch.setattr(progress_module, "progress_bar", recorder)
    T = 3000  # 48,008 points x 6,000 steps: well above the bar's threshold
    qwc.quadratic_worst_case(1.0, 2.0, 1, alpha=0.5, beta=0.3, steps=T, laplace_var=1.0,
                             initial_gap=1.0, progress=progress)
    if progress is False:
        assert bars == []
    else:
        assert bars and bars[0].total == 2 * T  # the state's pass and the privacy noise's
        assert 0 < bars[0].n <= bars[0].total
