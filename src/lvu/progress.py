"""Progress displays: per-stage rows of a run (`PipelineProgress`) and `LoggedProgress`, a rich
Progress that logs plain lines when its console is not a terminal.

Each row shows samples done of total, failed, rate and ETA. Rate and ETA come from the recent past
(`RecentRate`), not the mean since the start: the mean hides a slowdown. Under SLURM, nohup or
`| tee` rich draws nothing until the end, so there `LoggedProgress` prints one plain line per task
every LVU_PROGRESS_INTERVAL seconds (default 10) and a final line per task at the end.

`PipelineProgress` also counts how busy each stage was (slot-seconds with work in hand over slots x
wall time), which is how `benchmarks/engine_pipeline.py` reports decoder and model idle time. With
`enabled=False` nothing is drawn or printed but everything is still counted.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.errors import MarkupError
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

INTERVAL_ENV = "LVU_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0
"""Seconds between plain progress lines when the console is not a terminal."""

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


class RecentRate:
    """Completions per second over the recent past, for rates and ETAs.

    The window reaches back at least `window` seconds and at least `min_count` completions,
    whichever is further: a slowdown shows within about a window, and a slow stage still averages
    several completions instead of one burst. Until that much history exists it is the overall rate
    since `start`. The time since the last completion counts, so a stall lowers the rate (and
    lengthens the ETA) instead of freezing it. Times come from the caller (`now`): tests feed a clock.
    """

    def __init__(self, *, window: float = 60.0, min_count: int = 10) -> None:
        self.window, self.min_count = window, min_count
        self.resolution = window / 200  # points closer than this are merged: memory stays bounded
        self._points: deque[tuple[float, float]] = deque()  # (time, completed), oldest first
        self._lock = threading.Lock()  # the display thread reads while the workers count

    def start(self, now: float, completed: float = 0) -> None:
        with self._lock:
            self._points = deque([(now, completed)])

    def observe(self, now: float, completed: float) -> None:
        """`completed` is the running total at `now` (a decrease restarts the estimate)."""
        with self._lock:
            points = self._points
            if not points or completed < points[-1][1]:
                self._points = deque([(now, completed)])
                return
            if completed == points[-1][1]:
                return
            if len(points) >= 2 and now - points[-2][0] < self.resolution:
                points[-1] = (now, completed)
            else:
                points.append((now, completed))
            self._prune(now)

    def _prune(self, now: float) -> None:
        """Drop points older than the anchor: the anchor only moves forward (now and the count grow)."""
        points, current = self._points, self._points[-1][1]
        while len(points) >= 2 and points[1][0] <= now - self.window and points[1][1] <= current - self.min_count:
            points.popleft()

    def rate(self, now: float) -> float:
        """Completions per second: from the oldest kept point (the start, early on) to `now`."""
        with self._lock:
            if not self._points:
                return 0.0
            self._prune(now)
            (t0, c0), current = self._points[0], self._points[-1][1]
        return (current - c0) / (now - t0) if now > t0 else 0.0

    def eta(self, remaining: float, now: float) -> float | None:
        """Seconds until `remaining` more are done at the recent rate; None when nothing moves."""
        if remaining <= 0:
            return 0.0
        rate = self.rate(now)
        return remaining / rate if rate > 0 else None


def format_duration(seconds: float | None) -> str:
    """3:10, 1:02:03; '-' when unknown."""
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_rate(per_second: float) -> str:
    """7.8/s, 0.45/s, 2.4/min, 3.0/h: always a few significant digits, even for slow models."""
    if per_second <= 0:
        return "0/s"
    for unit, scale in (("s", 1), ("min", 60), ("h", 3600)):
        value = per_second * scale
        if value >= 0.1 or unit == "h":
            return f"{value:.0f}/{unit}" if value >= 100 else f"{value:.2g}/{unit}" if value < 1 else f"{value:.1f}/{unit}"
    raise AssertionError("unreachable")


def _complete(task: Task) -> bool:
    """Done with everything (rich's `finished` misses a task whose total drops to, or starts at, its count)."""
    return task.total is not None and task.completed >= task.total


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


class _RateColumn(ProgressColumn):
    """The recent rate while running, the mean over the task once finished (LoggedProgress only)."""

    progress: LoggedProgress  # set by LoggedProgress

    def render(self, task: Task) -> Text:
        return Text(f"{format_rate(self.progress.rate(task)):>8}", style="progress.data.speed")


class _EtaColumn(ProgressColumn):
    """Time left at the recent rate (rich's TimeRemainingColumn uses a 30 s window of completions that
    leaves out the wait since the last one, so bursty or slowing stages looked 2-3x faster)."""

    progress: LoggedProgress  # set by LoggedProgress

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        return Text(f"{format_duration(self.progress.eta(task)):>7}", style="progress.remaining")


class _NoteColumn(ProgressColumn):
    """What a task is waiting on now (e.g. 'retrying 3 calls (connection refused, next try in 4 s)'),
    empty when nothing: read live from the task's note function (LoggedProgress.set_note)."""

    progress: LoggedProgress  # set by LoggedProgress

    def render(self, task: Task) -> Text:
        note = self.progress.note_of(task)
        return Text(note or "", style="yellow")


class _FailedColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        failed = int(task.fields.get("failed", 0))
        return Text(f"failed {failed}", style="red" if failed else "dim")


def stage_columns(width: int = 7) -> tuple[ProgressColumn, ...]:
    """The columns of one stage row (name, bar, done/total, failed, recent rate, elapsed, ETA) for a
    LoggedProgress whose tasks carry a `failed` field (PipelineProgress's rows; lvu build's stages)."""
    return (TextColumn(f"  {{task.description:<{width}}}"), BarColumn(), MofNCompleteColumn(), _FailedColumn(),
            _RateColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), _NoteColumn())


def progress_interval() -> tuple[float, str | None]:
    """Seconds between plain lines from LVU_PROGRESS_INTERVAL (0: final lines only), and a warning
    when the variable is not a number."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL, None
    try:
        return max(0.0, float(raw)), None
    except ValueError:
        return DEFAULT_INTERVAL, (f"{INTERVAL_ENV}={raw!r} is not a number of seconds; "
                                  f"printing progress every {DEFAULT_INTERVAL:g} s")


def is_live(console: Console) -> bool:
    """Whether rich can redraw a display in place on `console` (else it prints nothing until the end)."""
    return console.is_jupyter or (console.is_terminal and not console.is_dumb_terminal)


class LoggedProgress(Progress):
    """A rich Progress whose rates and ETAs follow the recent rate, and which prints plain lines
    (`decode 120/1549 (7.8/s, ETA 3:10, 0:15 elapsed)`) every `interval` seconds (default:
    LVU_PROGRESS_INTERVAL) plus a final line per task when its console is not a terminal. A
    TimeRemainingColumn passed in is replaced by the recent-rate ETA column. `label` names tasks
    whose description is empty; `title` is a line above the rows (printed once in plain mode)."""

    def __init__(self, *columns: str | ProgressColumn, label: str = "", title: str = "",
                 interval: float | None = None, **kwargs: Any) -> None:
        columns = tuple(_EtaColumn() if isinstance(c, TimeRemainingColumn) else c for c in columns)
        for column in columns:
            if isinstance(column, (_RateColumn, _EtaColumn, _NoteColumn)):
                column.progress = self
        self.label, self.title, self._interval = label, title, interval  # before rich, which may render
        super().__init__(*columns, **kwargs)
        self.plain = not self.disable and not is_live(self.console)
        if self.plain:
            self.disable = True  # rich would only print its final frame; the plain lines replace it
        self._rates: dict[TaskID, RecentRate] = {}
        self._reported: set[TaskID] = set()  # tasks whose completion a plain line already said
        self._notes: dict[TaskID, Callable[[], str | None]] = {}
        self._ticker: threading.Thread | None = None
        self._stop_ticker = threading.Event()
        self.print_lock = threading.Lock()

    def get_renderables(self):
        if self.title:
            yield Text(self.title, style="bold")
        yield from super().get_renderables()

    # ---- counting: every change of a task's count also feeds its RecentRate ------------------------

    def _observe(self, task_id: TaskID) -> None:
        with self._lock:
            task = self._tasks[task_id]
            if task.start_time is None:
                return
            rate = self._rates.setdefault(task_id, RecentRate())
            rate.observe(self.get_time(), task.completed)

    def start_task(self, task_id: TaskID) -> None:
        with self._lock:
            super().start_task(task_id)
            task = self._tasks[task_id]
            assert task.start_time is not None  # set by start_task
            self._rates.setdefault(task_id, RecentRate()).start(task.start_time, task.completed)

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        self._observe(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._observe(task_id)

    def reset(self, task_id: TaskID, **kwargs: Any) -> None:
        self._rates.pop(task_id, None)
        self._reported.discard(task_id)
        super().reset(task_id, **kwargs)
        with self._lock:
            task = self._tasks[task_id]
            if task.start_time is not None:
                self._rates[task_id] = RecentRate()
                self._rates[task_id].start(task.start_time, task.completed)

    def rate(self, task: Task) -> float:
        """Completions per second: recent while running, the mean once finished."""
        if _complete(task):
            elapsed = task.finished_time or task.elapsed
            return task.completed / elapsed if elapsed else 0.0
        rate = self._rates.get(task.id)
        return rate.rate(self.get_time()) if rate is not None else 0.0

    def eta(self, task: Task) -> float | None:
        if task.total is None:
            return None
        if _complete(task):
            return 0.0
        rate = self._rates.get(task.id)
        return rate.eta(task.total - task.completed, self.get_time()) if rate is not None else None

    def set_note(self, task_id: TaskID, note: Callable[[], str | None] | None) -> None:
        """Show `note()` (read at each refresh and each plain line; None or '' shows nothing) after
        the task's row: what it is waiting on now. None removes it."""
        if note is None:
            self._notes.pop(task_id, None)
        else:
            self._notes[task_id] = note

    def note_of(self, task: Task) -> str | None:
        note = self._notes.get(task.id)
        return note() if note is not None and not _complete(task) else None

    # ---- plain lines ----------------------------------------------------------------------------

    def _name(self, task: Task) -> str:
        try:
            name = Text.from_markup(task.description).plain.strip()
        except MarkupError:
            name = task.description
        return name or self.label or f"task {task.id}"

    def _head(self, task: Task) -> str:
        done = _count(task.completed) + (f"/{_count(task.total)}" if task.total is not None else "")
        failed = next((task.fields[k] for k in ("failed", "errors") if k in task.fields), None)
        return f"{self._name(task)} {done}" + (f", failed {failed}" if failed is not None else "")

    def plain_lines(self, *, final: bool = False) -> list[str]:
        """One line per started task: progress with ETA (and its note), or how it ended — once per
        task, when first seen complete; `final` adds how each task not said so yet ended."""
        lines = []
        with self._lock:
            tasks = [t for t in self._tasks.values() if t.start_time is not None and t.visible]
        for task in tasks:
            complete = _complete(task)
            if task.id in self._reported:
                continue  # its end was said: a build's finished stages are not repeated
            if complete or final:
                if complete:
                    self._reported.add(task.id)
                elapsed = task.finished_time or task.elapsed or 0.0
                ended = "complete" if complete or task.total is None else "stopped"
                lines.append(f"{self._head(task)} {ended} in {format_duration(elapsed)} "
                             f"({format_rate(task.completed / elapsed if elapsed else 0.0)})")
            else:
                eta = "" if task.total is None else f", ETA {format_duration(self.eta(task))}"
                note = self.note_of(task)
                lines.append(f"{self._head(task)} ({format_rate(self.rate(task))}{eta}, "
                             f"{format_duration(task.elapsed)} elapsed)" + (f" — {note}" if note else ""))
        return lines

    def say(self, message: str) -> None:
        """Print a line on the console (rich flushes it), never inside a block of plain lines."""
        with self.print_lock:
            self.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def _print_lines(self, lines: list[str]) -> None:
        with self.print_lock:
            for line in lines:
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def _tick(self, interval: float) -> None:
        while not self._stop_ticker.wait(interval):
            self._print_lines(self.plain_lines())

    def start(self) -> None:
        super().start()
        if not self.plain or self._ticker is not None:
            return
        interval, warning = (self._interval, None) if self._interval is not None else progress_interval()
        self._print_lines([line for line in (warning, self.title) if line])
        if interval > 0:
            self._stop_ticker.clear()
            self._ticker = threading.Thread(target=self._tick, args=(interval,), name="lvu-progress", daemon=True)
            self._ticker.start()

    def stop(self) -> None:
        super().stop()
        if not self.plain:
            return
        if self._ticker is not None:
            self._stop_ticker.set()
            self._ticker.join()
            self._ticker = None
        self._print_lines(self.plain_lines(final=True))


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
        self.display = LoggedProgress(
            *stage_columns(), title=title, disable=not enabled, console=console,
        )
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
        self.display.say(message)

    def describe(self, name: str, note: Callable[[], str | None] | None) -> None:
        """Show what stage `name` waits on now, read live from `note()` (e.g. the model's retries:
        'retrying 3 calls (connection refused, next try in 4 s)'), in its row and its plain lines."""
        self.display.set_note(self.tasks[name], note)

    def stage_note(self, name: str) -> str | None:
        """What stage `name` shows it waits on now (None: nothing)."""
        task = next(t for t in self.display.tasks if t.id == self.tasks[name])
        return self.display.note_of(task)

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
