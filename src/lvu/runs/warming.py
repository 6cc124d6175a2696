"""`lvu cache warm`: decode the frames of many videos into the frame cache, on the stage runner.

One item per video (`lvu.media.extract.warm_video`, run in a worker process). The ledger is the
content-addressed frame cache itself: an entry that is there is committed (its key holds the
video's content fingerprint, the frames, resize and decoder, so a changed video is a new key and
is decoded again), and a warm that is stopped resumes by finding what is there. Ctrl-C as in runs:
the first lets the videos being decoded finish (`grace` seconds), the second abandons them.
This module drives the loop; what runs per video stays in lvu.media (below runs).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from lvu.media.cache import FrameCache
from lvu.media.extract import WarmSummary, warm_video
from lvu.media.video import Resize
from lvu.progress import LoggedProgress
from lvu.runs.stage_runner import run_each

Plan = tuple[float, ...] | str


def warm(items: Iterable[tuple[str | Path, Sequence[float] | str]], *, workers: int = 2,
         resize: int | Resize | None = None, approximate: bool = False, progress: bool = True,
         cache: FrameCache | None = None, grace: float = 10.0) -> WarmSummary:
    """Decode and cache the frames of many (video, timestamps) items in `workers` processes, with a
    progress bar. The second item of a pair is a list of seconds (`get_or_decode` entries) or a
    plan string (`get_or_sample` entries): warm with what the run will ask for. Items are grouped
    per video (duplicates dropped); a video that fails is one error line, the rest continue.
    `workers <= 1` decodes in this process (in a thread)."""
    cache = cache if cache is not None else FrameCache()
    groups: dict[str, list[Plan]] = {}
    for path, what in items:
        plans = groups.setdefault(str(path), [])
        what = what if isinstance(what, str) else tuple(float(t) for t in what)
        if what not in plans:
            plans.append(what)
    return asyncio.run(_warm(groups, max(1, min(workers, len(groups))), resize, approximate, progress, cache, grace))


async def _warm(groups: dict[str, list[Plan]], workers: int, resize: int | Resize | None, approximate: bool,
                show_progress: bool, cache: FrameCache, grace: float) -> WarmSummary:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    summary = WarmSummary(videos=0, frames=0, seconds=0.0)
    start = time.perf_counter()
    bar = LoggedProgress(
        TextColumn("[bold]warming frame cache"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[frames]} frames, {task.fields[rate]}"), TextColumn("errors {task.fields[errors]}"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), disable=not show_progress,
    )
    task = bar.add_task("warming frame cache", total=len(groups), frames=0, rate="", errors=0)
    order = {path: i for i, path in enumerate(groups)}
    failed: list[tuple[int, str]] = []
    pool = _pool(workers)
    threads = max(1, (os.cpu_count() or 1) // workers) if pool is not None else 0
    loop = asyncio.get_running_loop()

    async def decode(path: str) -> tuple[int, int, int, str | None]:
        try:
            return await loop.run_in_executor(pool, warm_video, cache, path, groups[path], resize, approximate,
                                              threads)
        except Exception as e:  # a worker died (e.g. the decoder crashed)
            return 0, 0, 0, f"{path}: worker failed: {type(e).__name__}: {e}"

    def commit(path: str, result: tuple[int, int, int, str | None]) -> None:
        entries, frames, hits, error = result  # the entries themselves are in the cache already
        summary.entries += entries
        summary.hits += hits
        if error:
            failed.append((order[path], error))
        else:
            summary.videos += 1
            summary.frames += frames
        rate = summary.frames / max(1e-9, time.perf_counter() - start)
        bar.update(task, advance=1, frames=summary.frames, rate=f"{rate:.1f} frames/s", errors=len(failed))

    stop = asyncio.Event()
    try:
        with bar:
            await run_each(groups, decode, commit, concurrency=workers, stop=stop, grace=grace, note=bar.say,
                           what="video", where="being decoded")
    finally:
        if pool is not None:
            pool.shutdown(wait=not stop.is_set(), cancel_futures=True)
    summary.errors = [line for _, line in sorted(failed)]  # in input order, not completion order
    summary.seconds = time.perf_counter() - start
    summary.interrupted = stop.is_set()
    return summary


def _pool(workers: int) -> Executor | None:
    """Worker processes (spawned: no forked decoder state), which leave Ctrl-C to the runner; None
    for one worker (the default thread pool of this process)."""
    if workers <= 1:
        return None
    from lvu.runs.worker_processes import decode_pool

    return decode_pool(workers)
