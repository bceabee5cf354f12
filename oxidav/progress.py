"""Progress and interruption of long operator commands (``blobs migrate``, ``gc``, ``fsck``).

``Meter`` shows one line per phase while a command runs on a terminal (items and bytes done
out of the total when known, rate and time left; drawn by rich on stderr), and prints one
summary line per phase on stderr when stderr is not a terminal (logs stay short).

``StopFlag`` turns SIGINT and SIGTERM into a request to stop: the command looks at it between
pages (``check`` raises ``Interrupted``), so work stops at a page boundary with its saved state
consistent. A second signal raises ``Interrupted`` at once, wherever the main thread is.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # rich is imported when a bar is drawn: a server never draws one
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text


class Interrupted(Exception):
    """The operator asked the command to stop (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopFlag:
    """While entered, SIGINT / SIGTERM set the flag (the second one raises at once)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._saved: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is not None:
            raise Interrupted(signum)
        self.signum = signum

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved.clear()

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def check(self) -> None:
        """Raise ``Interrupted`` if a stop was requested."""
        if self.signum is not None:
            raise Interrupted(self.signum)


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}:{seconds % 60:02d}"


@dataclass
class Phase:
    """One counted step of a command."""

    meter: Meter
    name: str
    unit: str
    total: int | None
    total_bytes: int | None
    task: TaskID | None
    items: int = 0
    nbytes: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    def advance(self, items: int = 1, nbytes: int = 0) -> None:
        self.items += items
        self.nbytes += nbytes
        self.meter._update(self)

    def done(self) -> None:
        if self.ended is None:
            self.ended = time.monotonic()
            self.meter._finish(self)

    @property
    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def summary(self) -> str:
        seconds = max(self.elapsed, 1e-6)
        text = f"{self.meter.title}: {self.name} {self.items} {self.unit}"
        rates = f"{self.items / seconds:.0f} {self.unit}/s"
        if self.nbytes:
            text += f", {human_bytes(self.nbytes)}"
            rates = f"{human_bytes(self.nbytes / seconds)}/s, " + rates
        return f"{text} in {self.elapsed:.1f} s ({rates})"


def _figures(task: Task) -> Text:
    """``done/total unit · bytes · rate · ETA`` of a phase."""
    from rich.text import Text

    phase: Phase = task.fields["phase"]
    count = f"{phase.items}" + (f"/{phase.total}" if phase.total is not None else "")
    parts = [f"{count} {phase.unit}"]
    if phase.total_bytes or phase.nbytes:
        done = human_bytes(phase.nbytes)
        parts.append(done + (f"/{human_bytes(phase.total_bytes)}" if phase.total_bytes else ""))
    seconds = phase.elapsed
    if seconds > 0.5:
        if phase.nbytes:
            parts.append(f"{human_bytes(phase.nbytes / seconds)}/s")
        else:
            parts.append(f"{phase.items / seconds:.0f} {phase.unit}/s")
    remaining = task.time_remaining
    if remaining is not None and phase.ended is None:
        parts.append(f"ETA {_duration(remaining)}")
    return Text(" · ".join(parts))


def _live_progress(stream: TextIO) -> Progress:
    """rich's bar on ``stream``: description, bar, ``_figures``."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn

    class Figures(ProgressColumn):
        def render(self, task: Task) -> Text:
            return _figures(task)

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        Figures(),
        console=Console(file=stream),
        transient=False,
    )


class Meter:
    """The progress display of one command (see the module docstring)."""

    def __init__(
        self,
        title: str,
        stream: TextIO | None = None,
        live: bool | None = None,
        quiet: bool = False,
    ) -> None:
        self.title = title
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = not quiet and (self.stream.isatty() if live is None else live)
        self._progress: Progress | None = None
        self._phases: list[Phase] = []
        if self.live:
            self._progress = _live_progress(self.stream)
            self._progress.start()

    def phase(
        self, name: str, total: int | None = None, total_bytes: int | None = None, unit: str = ""
    ) -> Phase:
        phase = Phase(self, name, unit or "items", total, total_bytes, None)
        self._phases.append(phase)
        if self._progress is not None:
            size = total_bytes if total_bytes else total
            phase.task = self._progress.add_task(f"{self.title} {name}", total=size, phase=phase)
        return phase

    def _update(self, phase: Phase) -> None:
        if self._progress is not None and phase.task is not None:
            done = phase.nbytes if phase.total_bytes else phase.items
            self._progress.update(phase.task, completed=done)

    def _finish(self, phase: Phase) -> None:
        if self._progress is not None and phase.task is not None:
            self._progress.update(phase.task, total=self._progress.tasks[phase.task].completed)
        elif not self.quiet:
            print(phase.summary(), file=self.stream, flush=True)

    def close(self) -> None:
        """Finish every phase (an interrupted one reports what it did) and stop drawing."""
        for phase in self._phases:
            phase.done()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def metered(title: str) -> Iterator[tuple[Meter, StopFlag]]:
    """A command's meter and stop flag. The meter stops before anything leaves the block, so
    the one line a caller prints for an error or an interruption is not drawn over."""
    meter = Meter(title)
    try:
        with StopFlag() as stop:
            yield meter, stop
    finally:
        meter.close()


#: A callable that is told about work done: ``(items, bytes)``.
Advance = Callable[[int, int], None]

__all__ = ["Advance", "Interrupted", "Meter", "Phase", "StopFlag", "human_bytes", "metered"]
