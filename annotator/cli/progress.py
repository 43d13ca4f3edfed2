"""Progress of the CLI's long jobs on a terminal: one ``rich.progress`` line per phase, with
its units, rate and time left, written to stderr only when stderr is a terminal.

Why rich and not a bar of our own (issue 38, item 4): the hand-made bar showed raw byte
counts without units, rate or ETA, and nothing at all while a blocking step ran (a 200 MB
corpus import: a full bar, then 15 s of silence while the documents were written and
indexed). Rich redraws on its own thread, so a phase that is one long database statement
still shows its elapsed time ticking; it formats bytes and times as people read them.

Library code never imports this: it calls the callback of ``golden_store.core.progress``
(``progress(done, total[, phase])``). Scripts, pipes and ``--json`` runs see nothing, since
their stderr is not a terminal; rich is imported only when a bar is first drawn, so a
command that shows none does not pay for it.
"""

from __future__ import annotations

import atexit
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from golden_store.core.progress import BYTES, Phase

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID

_REFRESH_PER_SECOND = 4
_live: set[TerminalProgress] = set()
_live_guard = threading.Lock()


def _rate(task: Task) -> float | None:
    """Units per second: rich's recent-window speed while the phase runs, else the phase's
    average (a phase reported only at its start and end, one blocking step, has no window)."""
    speed = task.finished_speed or task.speed
    if speed:
        return float(speed)
    elapsed = task.finished_time if task.finished_time is not None else task.elapsed
    if elapsed and task.completed:
        return float(task.completed) / float(elapsed)
    return None


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _columns(unit: str) -> tuple[Any, ...]:
    """The columns of one phase's line: description, bar, amount in ``unit``, rate, elapsed, ETA."""
    from rich.filesize import decimal
    from rich.progress import BarColumn, DownloadColumn, ProgressColumn, TextColumn
    from rich.text import Text

    class Amount(ProgressColumn):
        def render(self, task: Task) -> Text:
            total = int(task.total or 0)
            return Text(f"{int(task.completed):,}/{total:,} {unit}", style="progress.download")

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            r = _rate(task)
            if r is None:
                return Text(f"? {'B' if unit == BYTES else unit}/s", style="progress.data.speed")
            shown = f"{decimal(int(r))}/s" if unit == BYTES else f"{r:,.{0 if r >= 10 else 1}f} {unit}/s"
            return Text(shown, style="progress.data.speed")

    class Times(ProgressColumn):
        def render(self, task: Task) -> Text:
            if task.finished:
                return Text(f"done in {_clock(task.finished_time)}", style="progress.elapsed")
            r = _rate(task)
            left = (float(task.total or 0) - float(task.completed)) / r if r else None
            return Text(f"{_clock(task.elapsed)} elapsed, eta {_clock(left)}", style="progress.remaining")

    amount = DownloadColumn() if unit == BYTES else Amount()
    return (TextColumn("[progress.description]{task.description}"), BarColumn(bar_width=24), amount,
            Rate(), Times())


class TerminalProgress:
    """A ``progress(done, total[, phase])`` callback drawing each phase of one job as a line
    on stderr (``label: phase``), only when stderr is a terminal. A phase's line stays on
    screen when it ends (``done >= total``) or when the next :class:`Phase` begins; a
    ``str`` phase is a note shown beside the label. ``unit`` is what plain
    ``(done, total)`` calls count."""

    def __init__(self, label: str, unit: str = "items", *, stream: TextIO | None = None) -> None:
        self.label = label
        self.unit = unit
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self._stream)
        self._lock = threading.RLock()
        self._bars: Progress | None = None
        self._task: TaskID | None = None
        self._phase: Phase | None = None

    def __call__(self, done: int, total: int, phase: Phase | str | None = None) -> None:
        if not self.enabled or total <= 0:
            return
        with self._lock:
            step = phase if isinstance(phase, Phase) else None
            if self._bars is None or (step is not None and step != self._phase):
                self._begin(step or self._phase or Phase(self.label, self.unit), total)
            assert self._bars is not None and self._task is not None
            current = self._phase or Phase(self.label, self.unit)
            description = self._describe(current, phase if isinstance(phase, str) else None)
            task = self._bars.tasks[0]
            self._bars.update(self._task, completed=min(done, total), description=description,
                              total=total if total != task.total else None)
            if done >= total:
                self.close()

    def _describe(self, phase: Phase, note: str | None) -> str:
        from rich.markup import escape

        text = self.label if phase.name == self.label else f"{self.label}: {phase.name}"
        return escape(f"{text} ({note})" if note else text)

    def _begin(self, phase: Phase, total: int) -> None:
        """Close the current phase's line (as it stands) and start one for ``phase``."""
        from rich.console import Console
        from rich.progress import Progress

        self.close()
        self._phase = phase
        console = Console(file=self._stream, force_terminal=True)
        # stderr written while a line is drawn (an error) is printed above it, never into it;
        # stdout is left alone: it may be a pipe, and rich would send its text to stderr
        self._bars = Progress(*_columns(phase.unit), console=console, refresh_per_second=_REFRESH_PER_SECOND,
                              redirect_stdout=False, redirect_stderr=True)
        self._task = self._bars.add_task(self._describe(phase, None), total=total)
        self._bars.start()
        with _live_guard:
            _live.add(self)

    def close(self, *, erase: bool = False) -> None:
        """Stop drawing and show the cursor again: the current line is left as it stands (a
        phase that ended), or ``erase``d (a job that stopped mid-phase: its error is the last
        word, not a bar that will never move)."""
        with self._lock:
            if self._bars is not None:
                self._bars.live.transient = erase
                self._bars.stop()
                self._bars = None
                self._task = None
            with _live_guard:
                _live.discard(self)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def close_all() -> None:
    """Erase every bar still drawn (a job that raised mid-phase) and give the terminal its
    cursor back; run at exit."""
    with _live_guard:
        live = list(_live)
    for bar in live:
        bar.close(erase=True)


atexit.register(close_all)
