"""Progress for long computations, the one module: tqdm bars on stderr, off unless asked for.

Two shapes:

* :func:`progress_bar` / :func:`progress_iter` — the bar of a library loop. Library functions
  take ``progress: bool = False`` and show nothing by default (no I/O side effects); the CLI
  passes ``progress=True`` unless ``--quiet``. Even then the bar appears only on a terminal
  (tqdm's ``disable=None``) and only once the work has run for :data:`DELAY_S` seconds, so
  quick calls and piped output stay clean. A loop that can run for minutes asks for
  ``lines=True``: with ``progress=True`` and standard error *not* a terminal (logs, CI, a
  pipe) it then gets a :class:`LineBar`, one plain line every :data:`PIPE_LINE_INTERVAL_S`
  seconds (``"DP-MASG: worst-case horizon search: 53 horizons solved, 36 s"``) and a last one
  when it ends, only if it lasted that long.
* :class:`Progress` with :func:`resolve_mode` — the progress of a sweep
  (``progress=`` of :func:`~dpbounds.sweep.run_sweep`), in one of these modes:

  - ``"auto"`` (default): ``"bar"`` when standard error is a terminal (with a width),
    ``"lines"`` otherwise;
  - ``"bar"``: a tqdm bar (cells done / total, rate, ETA), drawn only once the sweep has run
    for :data:`BAR_DELAY_S` seconds, so short sweeps print nothing;
  - ``"lines"``: for logs and CI, where carriage-return bars turn into garbage — one plain
    line every :data:`LINE_INTERVAL_S` seconds
    (``"kuru_fig3: 12/24 cells (4 reused), 35 s, ETA 40 s"``) and a last line when the sweep
    ends, only if the sweep lasted that long;
  - ``"off"`` (also ``False`` / ``"quiet"``): nothing.

  Cells found in the store count as done from the start; the ETA uses only the cells
  computed in this run.

tqdm is imported when a bar is made, not with this module (``dpbounds --help`` stays light).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["BAR_DELAY_S", "DELAY_S", "LINE_INTERVAL_S", "PIPE_LINE_INTERVAL_S", "LineBar",
           "Progress", "duration", "progress_bar", "progress_iter", "resolve_mode"]

#: seconds before a bar appears (a library loop's and a sweep's)
DELAY_S = 2.0
BAR_DELAY_S = DELAY_S
#: Seconds between two plain progress lines of a sweep.
LINE_INTERVAL_S = 30.0
#: Seconds between two plain progress lines of a library loop (``lines=True``) in a log or pipe.
PIPE_LINE_INTERVAL_S = 10.0


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):
        return False


def _columns(stream: Any) -> int | None:
    """The terminal's reported width (``None``: not known)."""
    try:
        return int(os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        return None


def _count(n: float) -> str:
    """A count for a progress line: whole numbers in full with thousands separators
    (``3,948,540``, not ``3.94854e+06``), others as ``:g``."""
    return f"{int(n):,}" if float(n).is_integer() and abs(n) < 1e15 else f"{n:g}"


class LineBar:
    """The part of tqdm's interface the library uses, as plain lines (for logs and pipes).

    ``update``, ``set_description``, ``set_postfix_str``, ``close``, iteration and ``with``. A
    line (``"desc: 12/40 horizons, 35 s"``; without a total ``"desc: 12 horizons, 35 s"``) is
    printed when one of them is called at least ``interval`` seconds after the last line (or
    the start), and a last one by ``close`` if any was printed: a quick loop prints nothing.
    """

    def __init__(self, iterable: Any = None, *, desc: str = "", total: float | None = None,
                 unit: str = "", stream: Any = None, interval: float | None = None,
                 **_tqdm_only: Any) -> None:
        self.iterable, self.desc, self.total, self.unit = iterable, desc or "", total, unit
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            self.total = len(iterable)
        self.stream = sys.stderr if stream is None else stream
        self.interval = PIPE_LINE_INTERVAL_S if interval is None else float(interval)
        self.n: float = 0
        self.postfix = ""
        self.start = self._last = time.monotonic()
        self._printed = self._closed = False
        self._lock = threading.Lock()

    def _line(self, now: float, last: bool = False) -> None:
        unit = f" {self.unit}" if self.unit and self.unit != "it" else ""
        done = (f"{_count(self.n)}/{_count(self.total)}{unit}" if self.total
                else f"{_count(self.n)}{unit}" if unit else f"{_count(self.n)} done")
        post = f", {self.postfix}" if self.postfix else ""
        end = ", finished" if last else ""
        print(f"{self.desc}: {done}, {duration(now - self.start)}{post}{end}", file=self.stream,
              flush=True)
        self._last, self._printed = now, True

    def _tick(self) -> None:
        with self._lock:
            now = time.monotonic()
            if not self._closed and now - self._last >= self.interval:
                self._line(now)

    def update(self, n: float = 1) -> None:
        self.n += n
        self._tick()

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc
        self._tick()

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def close(self) -> None:
        with self._lock:
            if not self._closed and self._printed:
                self._line(time.monotonic(), last=True)
            self._closed = True

    def __iter__(self) -> Any:
        for item in self.iterable:
            yield item
            self.update()
        self.close()

    def __enter__(self) -> LineBar:
        # a heartbeat where the bar is a context (closed by __exit__ whatever happens): one
        # step can run for minutes (a PEP solve). Not for a bar closed by hand: after an
        # exception it would stay open, and speak for ever into a notebook (review of
        # stop 75)
        if self.interval >= 1.0 and not self._closed:
            threading.Thread(target=_heartbeat, args=(weakref.ref(self), self.interval / 4),
                             daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _heartbeat(ref: weakref.ReferenceType[LineBar], pause: float) -> None:
    """A line of ``ref``'s bar (a ``with`` context) at its interval while it is open,
    between its updates too:
    ``rate hb --steps 20`` spent 232 CPU-s in one bar step with nothing printed to a pipe
    (fuzz round 9). Ends when the bar is closed or dropped."""
    while True:
        time.sleep(pause)
        bar = ref()
        if bar is None or bar._closed:
            return
        bar._tick()
        del bar


def progress_bar(enabled: bool | None, iterable: Any = None, *, lines: bool = False,
                 **kwargs: Any) -> tqdm | LineBar:
    """The one tqdm bar of dpbounds: on stderr, after :data:`DELAY_S` seconds, not left behind.

    ``enabled``: ``True`` or ``None`` show it when stderr is a terminal (tqdm's
    ``disable=None``: no bar in logs and pipes), ``False`` never. Every long loop of the
    library (algorithms, audits, LMI rate maps, horizon searches, accountants) and of the CLI
    uses this, so they all look and behave alike. ``lines=True`` (loops that can run for
    minutes): with ``enabled=True`` and stderr not a terminal, a :class:`LineBar` instead
    (plain lines every :data:`PIPE_LINE_INTERVAL_S` seconds).
    """
    terminal = _is_terminal(sys.stderr)
    zero_width = terminal and _columns(sys.stderr) == 0
    if lines and enabled is True and (not terminal or zero_width):
        return LineBar(iterable, stream=sys.stderr, **kwargs)
    from tqdm.auto import tqdm

    if zero_width:  # a pseudo-terminal that reports no width (`script` without `stty cols`):
        # tqdm's dynamic width drew nothing at all (walkthrough of stop 77)
        kwargs.setdefault("ncols", 80)
        kwargs["dynamic_ncols"] = False
    kwargs.setdefault("delay", DELAY_S)
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("mininterval", 0.5)
    return tqdm(iterable, file=sys.stderr, disable=None if enabled in (True, None) else True,
                **kwargs)


def progress_iter(iterable: Any, enabled: bool | None = None, **kwargs: Any) -> Any:
    """``iterable`` wrapped in :func:`progress_bar` (shown on a terminal by default)."""
    return progress_bar(enabled, iterable, **kwargs)


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


def duration(s: float) -> str:
    """``s`` seconds in words: ``"35 s"``, ``"2.5 min"``, ``"1.3 h"``."""
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
            self._bar.set_postfix_str("" if eta is None else f"ETA {duration(eta)}",
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
        line += f", {duration(now - self.start)}"
        eta = self.eta(now)
        if eta is not None:
            line += f", ETA {duration(eta)}"
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
