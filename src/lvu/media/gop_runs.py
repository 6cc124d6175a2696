"""Parallel GOP runs: one read cut into contiguous runs of whole GOPs of about equal work, each run
decoded by its own single-threaded decoder (a "twin" of the reader) on its own thread.

FFmpeg's frame threads gain little on seek-heavy reads (each seek drains their pipeline); separate
decoders over disjoint GOPs scale with the cores. Used by VideoReader._fetch/_fetch_keyframes.

(Split out of lvu.media.video, which re-exports the constants.)
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, wait
from itertools import pairwise
from typing import TYPE_CHECKING, Any  # readers are lvu.media.video.VideoReader (which imports this module)

import numpy as np

if TYPE_CHECKING:
    from lvu.media.frame_index import _Index
    from lvu.media.av_io import Resize

SEEK_COST_FRAMES = 8
"""A seek (demuxer jump + decoder flush and refill) costs about this many decoded frames."""
MAX_DECODERS = 4
"""Most decoders one call runs side by side (each single-threaded, each on its own GOPs)."""
PARALLEL_MIN_FRAMES = 60
"""Below about this many frames to decode, one call uses one decoder."""


def decoder_count(threads: int) -> int:
    """Decoders a reader with `threads` (0 = one per core) runs side by side."""
    n = threads or (os.cpu_count() or 1)
    return max(1, min(n, MAX_DECODERS))


def split_runs(index: _Index, targets: list[int], *, keyframes: bool, decoders: int) -> list[list[int]]:
    """Cut sorted target pts into runs of whole GOPs of about equal decoding work (frames from each
    GOP's keyframe to its last target; one frame per keyframe when `keyframes`). One run when the
    work is small, the decoders few, or frames must be counted (no trustworthy pts to split on)."""
    n = decoders
    if n < 2 or len(targets) < 2 or index.counted or not index.timed:
        return [targets]
    keys, pts = np.asarray(index.keys), index.pts
    ts = np.asarray(targets)
    gop = np.maximum(np.searchsorted(keys, ts, side="right") - 1, 0)  # each target's keyframe
    cuts = np.flatnonzero(np.diff(gop)) + 1  # where a new GOP starts in `targets`
    if len(cuts) == 0:
        return [targets]
    firsts, lasts = np.r_[0, cuts], np.r_[cuts - 1, len(ts) - 1]
    if keyframes:
        work = np.full(len(firsts), 1 + SEEK_COST_FRAMES)
    else:  # frames from each GOP's keyframe to its last target
        work = np.searchsorted(pts, ts[lasts]) - np.searchsorted(pts, keys[gop[firsts]]) + 1 + SEEK_COST_FRAMES
    total = int(work.sum())
    if total < PARALLEL_MIN_FRAMES:
        return [targets]
    starts = np.r_[firsts[balanced_cuts(work, n)], len(ts)]
    return [targets[a:b] for a, b in pairwise(starts.tolist()) if b > a]


def balanced_cuts(work, parts: int) -> list[int]:
    """Where to cut a sequence of items with these costs into at most `parts` contiguous runs of
    about equal cost: the first item of each run (0 first). Each cut goes to the item boundary
    nearest to its share k * total / parts of the cumulative cost."""
    cum = np.cumsum(np.asarray(work, dtype=float))
    if len(cum) == 0:
        return [0]
    total, cuts = cum[-1], [0]
    for k in range(1, min(parts, len(cum))):
        share = k * total / parts
        i = int(np.searchsorted(cum, share))  # items 0..i reach the share
        cut = i + 1 if i + 1 < len(cum) and cum[i] - share < share - (cum[i - 1] if i else 0) else i
        if cuts[-1] < cut < len(cum):
            cuts.append(cut)
    return cuts


def decode_in_parallel(reader: Any, parts: list[list[int]], rs: Resize | None, *,
                       keyframes: bool) -> dict:
    """Decode each run on its own twin decoder (opened lazily in its own thread, so the files open
    side by side, and kept for later calls); target pts -> (array, pts shown), merged. Every
    decoder is idle again before an error propagates."""
    twins = reader._twins
    twins.extend([None] * (len(parts) - len(twins)))
    if reader._pool is None:
        reader._pool = ThreadPoolExecutor(decoder_count(reader._threads), thread_name_prefix="lvu-decode")

    def work(i: int, part: list[int]) -> dict:
        if twins[i] is None:
            twins[i] = reader._twin()
        twin = twins[i]
        try:
            return twin._decode_keyframes(part, rs) if keyframes else twin._decode(part, rs)
        except BaseException:
            twin._cursor = None
            raise

    jobs = [reader._pool.submit(work, i, part) for i, part in enumerate(parts)]
    wait(jobs)
    out: dict = {}
    for job in jobs:
        out.update(job.result())
    return out
