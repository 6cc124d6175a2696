"""Per-stage progress of a run: one display, one row per pipeline stage (decode / model / scored).

Each row shows samples done of total, failed, rate and ETA. The same object counts how busy each
stage was (slot-seconds with work in hand over slots x wall time), which is how
`benchmarks/engine_pipeline.py` reports decoder and model idle time. With `enabled=False` nothing
is drawn but everything is still counted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

STAGES = ("decode", "model", "scored")
"""decode: plan + frames + cues + prompt; model: the model call; scored: extracted, scored, stored."""


@dataclass
class StageStats:
    """Counters of one stage."""

    name: str
    slots: int
    """How many samples the stage can work on at once (decode workers, model concurrency, 1)."""
    expected: int
    """Samples that will pass through this stage."""
    done: int = 0
    failed: int = 0
    in_flight: int = 0
    busy: float = 0.0
    """Slot-seconds during which a sample was in this stage."""
    last_change: float = field(default_factory=time.perf_counter)

    def _account(self, now: float) -> None:
        self.busy += self.in_flight * (now - self.last_change)
        self.last_change = now


@dataclass
class Outcome:
    """Handed out by `PipelineProgress.stage`: set `failed` before the block ends."""

    failed: bool = False


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        elapsed = (task.finished_time if task.finished else task.elapsed) or 0.0
        rate = task.completed / elapsed if elapsed > 0 else 0.0
        return Text(f"{rate:6.2f}/s", style="progress.data.speed")


class _FailedColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        failed = int(task.fields.get("failed", 0))
        return Text(f"failed {failed}", style="red" if failed else "dim")


class _TitledProgress(Progress):
    """A rich Progress with a title line above its rows."""

    title: str = ""

    def get_renderables(self):
        if self.title:
            yield Text(self.title, style="bold")
        yield from super().get_renderables()


class PipelineProgress:
    """Counts and (when enabled) draws the stages of one run. Use as a context manager around the
    run; wrap each stage's work in `with progress.stage(name) as outcome: ...`."""

    def __init__(self, total: int, *, slots: dict[str, int] | None = None, title: str = "",
                 enabled: bool = True, console: Console | None = None) -> None:
        slots = slots or {}
        self.total = total
        self.stats = {name: StageStats(name, max(1, slots.get(name, 1)), total) for name in STAGES}
        self.started: float | None = None
        self.stopped: float | None = None
        self.display = _TitledProgress(
            TextColumn("  {task.description:<7}"), BarColumn(), MofNCompleteColumn(), _FailedColumn(),
            _RateColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            disable=not enabled, console=console,
        )
        self.display.title = title
        self.tasks = {name: self.display.add_task(name, total=total, failed=0, start=False) for name in STAGES}

    def __enter__(self) -> PipelineProgress:
        self.started = time.perf_counter()
        for name, stats in self.stats.items():
            stats.last_change = self.started
            self.display.start_task(self.tasks[name])
        self.display.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped = time.perf_counter()
        for stats in self.stats.values():
            stats._account(self.stopped)
        self.display.__exit__(None, None, None)

    @contextmanager
    def stage(self, name: str) -> Iterator[Outcome]:
        """Count one sample through stage `name`; an exception escaping the block counts as failed
        (and propagates); a cancelled sample (interrupt) is not counted as done."""
        stats, outcome = self.stats[name], Outcome()
        now = time.perf_counter()
        stats._account(now)
        stats.in_flight += 1
        finished = False
        try:
            yield outcome
            finished = True
        except Exception:
            outcome.failed = finished = True
            raise
        finally:
            stats._account(time.perf_counter())
            stats.in_flight -= 1
            if finished:
                stats.done += 1
                stats.failed += outcome.failed
                self.display.update(self.tasks[name], advance=1, failed=stats.failed)

    def skip(self, name: str) -> None:
        """One sample will not pass through stage `name` (it failed before): one fewer to expect."""
        stats = self.stats[name]
        stats.expected = max(0, stats.expected - 1)
        self.display.update(self.tasks[name], total=stats.expected)

    def note(self, message: str) -> None:
        """A line printed above the bars (or on the console when the display is off)."""
        self.display.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.stopped or time.perf_counter()) - self.started

    def utilisation(self, name: str) -> float:
        """Fraction of the stage's slot-time spent on samples (0..1); idle is 1 minus this."""
        stats, wall = self.stats[name], self.elapsed()
        if wall <= 0:
            return 0.0
        stats._account(self.stopped or time.perf_counter())
        return min(1.0, stats.busy / (stats.slots * wall))
