"""The one stage runner: every "process items concurrently, commit each, resume" loop of lvu runs on it.

Items arrive in groups (a group shares expensive work: the samples of one video share its decoded
frames). `producers` tasks take groups in turn and turn each item into a prepared item (the decode
stage of a run; a plain pass-through for one-stage loops); a bounded queue holds at most as many
prepared items as there are consumers, so memory stays flat and the consumers never wait on the
producers; each consumer (`consume`, one per slot: model concurrency, a Ray replica's slots) does
the expensive call; `commit` stores the outcome the moment it is there (one commit per item, so a
kill -9 loses only the items in flight and a rerun skips what is committed — lvu.runs.ledger).

Ctrl-C: the first stops taking new items and lets those being consumed finish for `grace` seconds;
the second abandons them. SIGTERM (`kill PID`, `timeout`, SLURM, supervisors) is the same stop.
In the `lvu` command (`exit_bound` set) the first stop also bounds the whole exit: the process is
gone `grace + exit_bound` seconds after it, whatever still runs (`hard_exit_after`).
`commit` may return an exception to stop the whole run early (e.g. the model endpoint is gone, the
store cannot be written), and so may anyone holding the runner (`fail`); it is raised once the
tasks are down. Progress is the caller's (lvu.progress.PipelineProgress: one row per stage, plain
lines in logs).

Callers: the run engine (decode → model → store), the Ray executor (decode tasks → replicas →
store), judging stored runs, judging a dev set, temporal certificates and cache warming.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from lvu.models.retry import with_retries

Item = TypeVar("Item")
Ready = TypeVar("Ready")
Done = TypeVar("Done")

Note = Callable[[str], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What stops a run gracefully: Ctrl-C, and SIGTERM (what `kill`, `timeout` and job schedulers send)."""
last_stop_signal: int | None = None
"""The signal that last stopped a runner (the CLI exits with 128 + it, as an unhandled one would)."""
EXIT_MARGIN = 5.0
"""Seconds past the grace that closing the store, the clients and the worker processes may take."""
exit_bound: float | None = None
"""Set by the `lvu` command (to EXIT_MARGIN): the first stop signal then bounds the whole exit to
`grace + exit_bound` seconds. None (the library's default): a stop never ends the caller's
process, which may go on after `RunInterrupted`."""


def hard_exit_after(seconds: float, signum: int) -> threading.Thread:
    """End this process `seconds` from now with exit code 128 + `signum` unless it has ended by
    then: a daemon thread, so it dies with a process that exits in time. Whatever it cuts short
    is resumable: every item is its own commit, and a run left `running` that no process holds
    is listed as `interrupted` (lvu.runs.run_lock)."""

    def watchdog() -> None:
        time.sleep(seconds)
        try:
            sys.stderr.write(f"lvu: not stopped {seconds:g} s after the signal — exiting now; what was committed "
                             "is kept: run the same command again to resume\n")
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            os._exit(128 + signum)

    thread = threading.Thread(target=watchdog, name="lvu-exit-bound", daemon=True)
    thread.start()
    return thread


async def _pass_through(group: list[Any]) -> AsyncIterator[Any]:
    for item in group:
        yield item


class StageRunner(Generic[Item, Ready, Done]):
    """Drive `groups` through `produce` (per group: an async iterator of prepared items) and the
    `consumers` (one coroutine function per slot), committing each outcome with `commit`.
    `stop`: set to stop taking items (also set by Ctrl-C); `note`: where to say what happens."""

    def __init__(self, *, consumers: Sequence[Callable[[Ready], Awaitable[Done]]],
                 commit: Callable[[Ready, Done], BaseException | None],
                 produce: Callable[[list[Item]], AsyncIterator[Ready]] = _pass_through,
                 producers: int = 1, grace: float = 10.0, stop: asyncio.Event | None = None,
                 note: Note = lambda message: None, retry: dict[str, Any] | None = None,
                 what: str = "item", where: str = "in flight",
                 slot_open: Sequence[Callable[[], bool]] | None = None) -> None:
        if not consumers:
            raise ValueError("a stage runner needs at least one consumer slot")
        if slot_open is not None and len(slot_open) != len(consumers):
            raise ValueError("slot_open needs one predicate per consumer slot")
        self.slot_open = list(slot_open) if slot_open is not None else [lambda: True] * len(consumers)
        """Per slot: whether it still takes items. A closed slot (its Ray replica died for good)
        hands the item it took back to the queue for the other slots, and ends; when every slot
        has closed the run returns with the remaining items uncommitted (the caller says why)."""
        self.consumers, self.commit, self.produce = list(consumers), commit, produce
        self.producers, self.grace = max(1, producers), grace
        self.stop = stop or asyncio.Event()
        self.note = note
        self.retry = retry
        """with_retries keywords (max_retries, is_retryable, ...): a consumer call that raises a
        retryable error is retried through the shared policy (lvu.models.retry)."""
        self.what, self.where = what, where
        """How the Ctrl-C notes name the items and their stage ("sample", "in the model")."""
        self.consuming: set[asyncio.Task] = set()
        self._stopped_by: list[BaseException] = []
        self._consumers: list[asyncio.Task] = []

    def fail(self, error: BaseException) -> None:
        """Stop the run now with `error` (raised by `run` once the tasks are down), as a `commit`
        that returns it does: the items being consumed are abandoned (e.g. the endpoint is gone)."""
        self._stopped_by.append(error)
        self.stop.set()
        for t in self._consumers:
            if t is not asyncio.current_task():
                t.cancel()

    async def _consume(self, consume: Callable[[Ready], Awaitable[Done]], item: Ready) -> Done:
        if self.retry is None:
            return await consume(item)
        return await with_retries(lambda: consume(item), **self.retry)

    async def run(self, groups: Iterable[list[Item]]) -> None:
        """Run to the end (or to a stop). Exceptions of `produce`/`consume`/`commit` propagate
        (the caller's stage functions turn per-item failures into failed records instead)."""
        pending = iter(groups)
        ready: asyncio.Queue[Ready | None] = asyncio.Queue(maxsize=len(self.consumers))
        stopped_by = self._stopped_by

        async def producer() -> None:
            for group in pending:  # shared by the producers; the loop runs one at a time
                if self.stop.is_set():
                    return
                async for item in self.produce(group):
                    if self.stop.is_set():
                        return
                    await ready.put(item)

        handed_back: deque[Ready] = deque()  # items a closed slot took: the open slots take them first

        async def consumer(consume: Callable[[Ready], Awaitable[Done]], is_open: Callable[[], bool]) -> None:
            at_end = False
            while not self.stop.is_set():
                if handed_back:
                    item = handed_back.popleft()
                elif at_end:  # every item left the queue before the first end marker: none is left
                    return
                elif (taken := await ready.get()) is None:
                    at_end = True  # what a closed slot handed back is still to do
                    continue
                else:
                    item = taken
                if not is_open():
                    handed_back.append(item)
                    return
                me = asyncio.current_task()
                assert me is not None  # (a consumer runs as a task)
                self.consuming.add(me)
                try:
                    done = await self._consume(consume, item)
                finally:
                    self.consuming.discard(me)
                if (error := self.commit(item, done)) is not None:
                    self.fail(error)  # the items still being consumed would fail the same way: abandon them
                    return

        async def end_of_input() -> None:
            try:
                await asyncio.gather(*producing)
            except asyncio.CancelledError:
                raise  # the run is ending (every slot closed, or a stop): no one would take the markers
            except Exception:
                pass  # a bug in a producer: still end the consumers (the bug is raised below)
            if not self.stop.is_set():  # after a stop the consumers end without markers (and may be
                for _ in consumers:     # gone: a full queue would then block here forever)
                    await ready.put(None)

        consumers = self._consumers = [asyncio.create_task(consumer(c, o))
                                       for c, o in zip(self.consumers, self.slot_open)]
        producing = [asyncio.create_task(producer()) for _ in range(self.producers)]
        feeder = asyncio.create_task(end_of_input())
        loop = asyncio.get_running_loop()
        timers: list[asyncio.TimerHandle] = []

        def abandon() -> None:
            for t in consumers:
                t.cancel()

        def on_interrupt(signum: int = signal.SIGINT) -> None:
            global last_stop_signal
            last_stop_signal = signum
            if self.stop.is_set():  # the second Ctrl-C: abandon what is still being consumed
                self.note(f"abandoning the {self.what}s in flight")
                abandon()
                return
            self.stop.set()
            for t in (feeder, *producing, *(c for c in consumers if c not in self.consuming)):
                t.cancel()
            self.note(f"stopping: waiting up to {self.grace:g} s for {len(self.consuming)} {self.what}(s) "
                      f"{self.where} — Ctrl-C again to abandon them")
            timers.append(loop.call_later(self.grace, abandon))
            if exit_bound is not None:
                hard_exit_after(self.grace + exit_bound, signum)

        handled = {}  # signal -> the handler it had (restored after: asyncio would reset SIGTERM to the default)
        for signum in STOP_SIGNALS:
            try:
                previous = signal.getsignal(signum)
                loop.add_signal_handler(signum, on_interrupt, signum)
                handled[signum] = previous
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
                pass
        try:
            await asyncio.wait(consumers)
        finally:
            for signum, previous in handled.items():
                loop.remove_signal_handler(signum)
                if previous is not None:
                    signal.signal(signum, previous)
            for timer in timers:
                timer.cancel()
            for t in (feeder, *producing, *consumers):
                t.cancel()
            await asyncio.gather(feeder, *producing, *consumers, return_exceptions=True)
        for t in (feeder, *producing, *consumers):  # a bug in a stage function is not swallowed
            if not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]
        if stopped_by:
            raise stopped_by[0]


async def run_each(items: Iterable[Item], work: Callable[[Item], Awaitable[Done]],
                   commit: Callable[[Item, Done], BaseException | None], *, concurrency: int,
                   stop: asyncio.Event | None = None, grace: float = 10.0, note: Note = lambda m: None,
                   retry: dict[str, Any] | None = None, what: str = "item", where: str = "in flight") -> None:
    """The one-stage form: `work` on every item with `concurrency` slots, `commit` each outcome."""
    runner: StageRunner[Item, Item, Done] = StageRunner(
        consumers=[work] * max(1, concurrency), commit=commit, stop=stop, grace=grace, note=note, retry=retry,
        what=what, where=where)
    await runner.run([item] for item in items)
