"""Video tools of the library: a plan's frames written to a folder (`lvu frames`), a video's speech
as SRT (`lvu asr`), the shared frame cache — its size, pruning, warming it for a benchmark
(`lvu cache info / prune / warm`) — and the decode-speed benchmark (`lvu bench decode`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.errors import LvuError
from lvu.media.cache import CacheInfo

__all__ = ["CacheInfo", "FramesResult", "PruneResult", "WarmResult", "bench_decode", "cache_info", "extract_frames",
           "prune_cache", "transcribe_to_srt", "warm_cache"]


@dataclass(frozen=True)
class FramesResult:
    """The frames `extract_frames` wrote: frames.json (index, pts seconds, frame number, file) and how many."""

    index: Path
    n_frames: int


def extract_frames(video: str | Path, out: str | Path, plan: str = "uniform:32", *, approximate: bool = False,
                   resize: int | None = None, fmt: str = "jpg") -> FramesResult:
    """Write the frames `plan` samples from `video` into `out` (uniform:N, fps:F[:max=M], lvb:N,
    lmms:N, vlmevalkit:N, center, first, all1fps), as jpg (quality 95) or png, plus frames.json.
    `approximate`: the nearest keyframe at or before each time (fast, inexact); `resize`: the
    shorter side in pixels (never upscales)."""
    from lvu.args import as_int
    from lvu.media.extract import extract_frames as extract

    if resize is not None:
        as_int("", "--resize", resize, 1, hint="the shorter side in pixels; leave it out for full size")
    index = extract(video, plan, out, approximate=approximate, resize=resize, fmt=fmt)
    return FramesResult(index, len(json.loads(index.read_text())["frames"]))


def transcribe_to_srt(video: str | Path, out: str | Path, *, model: str | Path | None = None,
                      language: str | None = None, progress: bool = False) -> int:
    """Transcribe `video`'s speech with a local Whisper model (lvu[asr]; offline, cached per video)
    into the SRT file `out`; returns the number of cues written. `model`: a CTranslate2 Whisper
    model folder (default: $LVU_WHISPER_MODEL or the one lvu[asr] ships)."""
    from lvu.media.asr import transcribe, write_srt

    cues = transcribe(video, model=model, language=language, progress=progress)
    write_srt(cues, out)
    return len(cues)


def cache_info(cache_dir: str | Path | None = None) -> CacheInfo:
    """Where the frame cache is, how many entries it holds, how big it is and may grow."""
    from lvu.media.cache import FrameCache

    return FrameCache(cache_dir).info()


@dataclass(frozen=True)
class PruneResult:
    """What `prune_cache` removed."""

    removed: int
    """Entries removed."""
    freed: int
    """Bytes freed."""


def prune_cache(cache_dir: str | Path | None = None, *, max_bytes: int | None = None,
                older_than: float | None = None) -> PruneResult:
    """Remove entries not used for `older_than` seconds, then least-recently-used ones until at most
    `max_bytes` remain (None: the cache's limit; 0 empties it)."""
    from lvu.media.cache import FrameCache

    removed, freed = FrameCache(cache_dir).prune(max_bytes=max_bytes, older_than=older_than)
    return PruneResult(removed, freed)


@dataclass
class WarmResult:
    """What `warm_cache` did."""

    cache_root: Path
    videos: int = 0
    """Videos whose frames are all in the cache now."""
    frames: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    """One line per sample that could not be planned or video that failed (repeats possible)."""
    interrupted: bool = False
    """Ctrl-C stopped it: what is cached stays, the same call warms the rest."""


def warm_cache(benchmark: str, *, settings: dict[str, Any] | None = None, workers: int = 2,
               cache_dir: str | Path | None = None, progress: bool = True) -> WarmResult:
    """Decode every frame a run of `benchmark` (with `settings`) will ask for into the frame cache,
    in `workers` processes, so runs then hit the cache. Each sample is planned as the run plans it
    (each video probed once, when needed); a sample that cannot be planned or a video that fails is
    an error line and the others go on."""
    from lvu.media.cache import FrameCache
    from lvu.runs.engine import video_meta
    from lvu.runs.grading import make_benchmark
    from lvu.runs.warming import warm

    bench = make_benchmark(benchmark, settings)
    samples, _ = bench.load()
    by_resize: dict[Any, list[tuple[str | Path, Sequence[float]]]] = {}
    errors: list[str] = []
    for s in samples:
        try:
            plan = bench.plan(s, video_meta(s))
        except LvuError as e:
            errors.append(str(e))
            continue
        if plan.timestamps:
            by_resize.setdefault(plan.resize, []).append((s.video.path, plan.timestamps))
    cache = FrameCache(cache_dir)
    out = WarmResult(cache.root, errors=errors)
    for resize, items in by_resize.items():
        summary = warm(items, workers=workers, resize=resize, cache=cache, progress=progress)
        out.videos += summary.videos
        out.frames += summary.frames
        out.seconds += summary.seconds
        out.errors.extend(summary.errors)
        if summary.interrupted:
            out.interrupted = True
            break
    return out


def bench_decode(args: Sequence[str]) -> int:
    """Decode speed, lvu against its peers (`lvu bench decode`; its own options, e.g. ["--quick"]):
    the exit code, with the tables printed."""
    from lvu.media.bench import main

    return main(list(args))
