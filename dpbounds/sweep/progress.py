"""Progress of a sweep: a tqdm bar on a terminal, plain lines in logs, nothing when quiet.

Modes (``progress=`` of :func:`~dpbounds.sweep.run_sweep`):

* ``"auto"`` (default): ``"bar"`` when standard error is a terminal (with a width),
  ``"lines"`` otherwise;
* ``"bar"``: a tqdm bar (cells done / total, rate, ETA), drawn only once the sweep has run
  for :data:`BAR_DELAY_S` seconds, so short sweeps print nothing;
* ``"lines"``: for logs and CI, where carriage-return bars turn into garbage — one plain line
  every :data:`LINE_INTERVAL_S` seconds (``"kuru_fig3: 12/24 cells (4 reused), 35 s, ETA 40 s"``)
  and a last line when the sweep ends, only if the sweep lasted that long;
* ``"off"`` (also ``False`` / ``"quiet"``): nothing.

Cells found in the store count as done from the start; the ETA uses only the cells computed
in this run.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["Progress"]

#: Seconds before the bar appears.
BAR_DELAY_S = 2.0
#: Seconds between two plain progress lines.
LINE_INTERVAL_S = 30.0


def resolve_mode(progress: bool | str, stream: Any = None) -> str:
    """``"bar"``, ``"lines"`` or ``"off"`` for a ``progress`` argument."""
    if progress is False or progress in ("off", "quiet"):
        return "off"
    if progress is True or progress == "auto":
        stream = sys.stderr if stream is None else stream
        isatty = getattr(stream, "isatty", None)
        if isatty is None or not isatty():
            return "lines"
        try:  # a terminal that reports no width (some CI pseudo-terminals) shows no bar
            return "bar" if os.get_terminal_size(stream.fileno()).columns > 0 else "lines"
        except (AttributeError, OSError, ValueError):
            return "bar"
    if progress in ("bar", "lines"):
        return str(progress)
    raise ValueError(f"progress must be 'auto', 'bar', 'lines', 'off' or a bool, got "
                     f"{progress!r}")


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


class Progress:
    """Counts finished cells of one sweep and reports them in the chosen mode.

    The ETA weighs the cells by their ``cost`` hints (elapsed time x cost still to compute /
    cost computed): the engine starts the most expensive cells first, so a plain count would
    overstate the time left early in the sweep. Equal costs give the usual count-based ETA.
    """

    def __init__(self, total: int, done: int, desc: str, mode: str, stream: Any = None,
                 interval: float = LINE_INTERVAL_S, cost: float | None = None) -> None:
        self.total, self.done, self.reused, self.desc = total, done, done, desc
        self.mode = mode
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.cost_left = float(total - done) if cost is None else float(cost)
        self.cost_done = 0.0
        self.start = self._last = time.monotonic()
        self._printed = self._closed = False
        self._bar = None
        if mode == "bar" and done < total:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=done, desc=desc, unit="cell", delay=BAR_DELAY_S,
                             file=self.stream, dynamic_ncols=True, leave=True,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                        "cells [{elapsed}{postfix}]")

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left, or ``None`` before the first computed cell (or once done)."""
        if self.cost_done <= 0 or self.done >= self.total:
            return None
        elapsed = (time.monotonic() if now is None else now) - self.start
        return elapsed * max(self.cost_left, 0.0) / self.cost_done

    def update(self, n: int = 1, cost: float = 1.0) -> None:
        """``n`` more cells finished, together of relative cost ``cost``."""
        self.done += n
        self.cost_done += cost
        self.cost_left -= cost
        if self._bar is not None:
            eta = self.eta()
            self._bar.set_postfix_str("" if eta is None else f"ETA {_duration(eta)}",
                                      refresh=False)
            self._bar.update(n)
        elif self.mode == "lines":
            now = time.monotonic()
            if now - self._last >= self.interval:
                self._last = now
                self._line(now)

    def _line(self, now: float) -> None:
        line = f"{self.desc}: {self.done}/{self.total} cells"
        if self.reused:
            line += f" ({self.reused} reused)"
        line += f", {_duration(now - self.start)}"
        eta = self.eta(now)
        if eta is not None:
            line += f", ETA {_duration(eta)}"
        print(line, file=self.stream, flush=True)
        self._printed = True

    def close(self) -> None:
        """Finish the bar, or print the last line if lines were printed (once)."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "lines" and (self._printed or
                                       time.monotonic() - self.start >= self.interval):
            self._line(time.monotonic())
