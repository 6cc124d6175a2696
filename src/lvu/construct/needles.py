"""`lvu build needle`: needle-in-a-haystack benchmarks on your own videos (docs/build.md, "Needles
and the time ladder"), after MLVU's Needle QA / Action Order / Action Count construction.

    plan = plan_build(backgrounds, needles, settings)     # every video and question, all randomness here
    result = needle_pipeline.run_build(plan, out_dir, settings, workers=2)  # splices (resumable), needle.jsonl

For every background, length and depth (nqa) or every background and length (order, count) it
makes `per_cell` videos: the background trimmed or looped to the length, the needles inserted at
frame-exact positions (lvu.construct.splice), its subtitle cues shifted past the inserted spans. Each
sample is labelled `task`, `depth`, `length`, `needle_duration` and carries the exact inserted
spans in `extra.needles` (seconds and frames). Same seed and inputs → the same plan, the same
JSONL bytes, the same video bytes. lvu.construct.needle_pipeline.run_build runs the `needle` build
pipeline: every video is committed to OUT's build store as it is made, so an
interrupted build (also kill -9) resumes, and a video whose content key (background, needles,
positions, encoder settings) is already on disk is not made again.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from fractions import Fraction
from pathlib import Path
from typing import Any

from lvu.benchmarks.haystack import AnswerBalancer
from lvu.construct import needle_questions as questions
from lvu.construct.needle_media import VIDEO_SUFFIXES, Needle, frame_count, needle_audio, needle_frames
from lvu.construct.splice import CRF, Background, Insert, Piece, probe_background, timeline
from lvu.construct.splice_audio import AudioFormat
from lvu.errors import DataError, LvuError
from lvu.types import Sample, SubtitleRef, VideoRef

VERSION = 1
"""Part of every video's content key: bump when the same plan would give different pixels."""
TASKS = ("nqa", "order", "count")
JSONL_NAME = "needle.jsonl"
SUBTITLE_SUFFIXES = (".srt", ".vtt")
MIN_CUE = 0.1
"""Seconds: a cue cut by an insertion keeps pieces at least this long."""


@dataclass(frozen=True)
class NeedleSettings:
    task: str = "nqa"
    depths: tuple[float, ...] | None = (0.0, 25.0, 50.0, 75.0, 100.0)
    """Percent of the way through the video where a needle starts (nqa); None: random (MLVU)."""
    lengths: tuple[float, ...] | None = None
    """Output lengths in seconds; None: each background's own length."""
    seed: int = 0
    per_cell: int = 1
    order_size: int = 4
    max_count: int = 4
    crf: int = CRF
    reencode: bool = False
    exact_audio: bool = False
    """Re-encode all sound sample-exactly instead of copying the background's AAC packets."""


@dataclass
class BackgroundFile:
    path: Path
    subtitles: Path | None
    info: Background


@dataclass
class Job:
    """One output video and its question."""

    id: str
    background: BackgroundFile
    length: float
    n_frames: int
    placed: list[tuple[Needle, int]]
    """(needle, background frames before it), in time order."""
    question: questions.Question
    depth: float
    key: str = ""
    pieces: list[Piece] = field(default_factory=list)

    @property
    def video_name(self) -> str:
        return f"videos/{self.id}-{self.key[:10]}.mp4"


def find_backgrounds(source: str | Path) -> list[BackgroundFile]:
    """A background video, or every video in a folder (sorted), each with its .srt/.vtt beside it."""
    source = Path(source)
    if not source.exists():
        raise DataError(f"{source}: not found — pass a background video or a folder of them")
    files = sorted(p for p in source.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES) if source.is_dir() else [source]
    if not files:
        raise DataError(f"{source}: no video files ({', '.join(VIDEO_SUFFIXES)}) — put the background videos there")
    out = []
    for path in files:
        subs = next((path.with_suffix(s) for s in SUBTITLE_SUFFIXES if path.with_suffix(s).is_file()), None)
        out.append(BackgroundFile(path, subs, probe_cached(path)))
    return out


_probed: dict[tuple[str, int, int], Background] = {}


def probe_cached(path: str | Path) -> Background:
    """probe_background, memoised per (real path, size, mtime) in this process: a build's units and
    its export read the same backgrounds again (a long video's packet scan takes seconds)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return probe_background(path)  # its one-line error
    memo = (real, st.st_size, st.st_mtime_ns)
    if memo not in _probed:
        _probed[memo] = probe_background(path)
    return _probed[memo]


# ---- planning ------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{round(x, 1):g}%"


def plan_build(backgrounds: list[BackgroundFile], needles: list[Needle], s: NeedleSettings) -> list[Job]:
    """Every video and its question. All randomness happens here, in a fixed order, from the seed."""
    if s.task not in TASKS:
        raise LvuError(f"--task {s.task!r} is not one of {', '.join(TASKS)}")
    for d in s.depths or ():
        if not 0 <= d <= 100:
            raise LvuError(f"depth {d:g} is outside 0-100 — depths are percent of the video, e.g. 0,25,50,75,100")
    segments = any(n.group for n in needles)
    if segments and s.task != "order":
        raise LvuError(f"--segments makes Action Order questions (--task order), not --task {s.task}")
    groups = _groups(needles, s.order_size) if segments else {}
    if segments and not groups:
        raise LvuError(f"--task order with --segments needs a video with {s.order_size} segments or more "
                       "(none has) — lower --order-size or check the segments file")
    if s.task == "order" and not segments and len({n.label for n in needles}) < max(2, s.order_size):
        raise LvuError(f"--task order needs {max(2, s.order_size)} needles with different labels "
                       f"(got {len({n.label for n in needles})}) — add needles or lower --order-size")
    if s.task == "count" and s.max_count < questions.N_OPTIONS:
        raise LvuError(f"--max-count {s.max_count}: a count question offers {questions.N_OPTIONS} consecutive counts "
                       f"from 1, each equally likely to be right — use --max-count {questions.N_OPTIONS} or more")
    for bg in backgrounds:
        for n in needles:
            if n.duration >= bg.info.duration:
                raise DataError(f"needle {n.where} ({n.duration:.2f} s) is longer than background {bg.path} "
                                f"({bg.info.duration:.2f} s) — use a shorter needle or a longer background")
    rng = random.Random(f"lvu-needle-{VERSION}-{s.seed}-{s.task}")
    balance = AnswerBalancer(rng)
    deck: list[Any] = []
    pool: list[Any] = sorted(groups) if segments else sorted({n.label for n in needles}) if s.task == "count" \
        else needles  # what each video takes one of: a segmented video, a counted label, a needle

    def next_needle() -> Any:  # every one once (shuffled) before any repeats
        if not deck:
            deck.extend(rng.sample(pool, len(pool)))
        return deck.pop()

    jobs: list[Job] = []
    labels = [n.label for n in needles]
    for bg in backgrounds:
        rate = bg.info.rate
        for length in s.lengths or (bg.info.duration,):
            n_frames = round(length * rate)
            cells = [(d, k) for d in (s.depths if s.task == "nqa" and s.depths else (None,)) for k in range(s.per_cell)]
            for depth, k in cells:
                job = _plan_one(s, bg, length, n_frames, depth, k, rng, balance, next_needle, needles, labels,
                                groups)
                jobs.append(job)
    return jobs


def _groups(needles: list[Needle], size: int) -> dict[str, list[Needle]]:
    """Segmented source videos with at least `size` segments: id -> its segments in time order."""
    out: dict[str, list[Needle]] = {}
    for n in needles:
        out.setdefault(n.group, []).append(n)
    return {g: sorted(segs, key=lambda n: n.index) for g, segs in out.items() if g and len(segs) >= size}


def _plan_one(s: NeedleSettings, bg: BackgroundFile, length: float, n_frames: int, depth: float | None, k: int,
              rng: random.Random, balance: AnswerBalancer, next_needle: Callable[[], Any], needles: list[Needle],
              labels: list[str], groups: dict[str, list[Needle]]) -> Job:
    rate = bg.info.rate
    if s.task == "nqa":
        chosen = [next_needle()]
    elif s.task == "order" and groups:  # consecutive segments of one video, in their order
        segs = groups[next_needle()]
        first = rng.randint(0, len(segs) - s.order_size)
        chosen = segs[first:first + s.order_size]
    elif s.task == "order":
        by_label = {n.label: n for n in rng.sample(needles, len(needles))}  # one needle per label
        chosen = [by_label[lb] for lb in rng.sample(sorted(by_label), s.order_size)]
    else:  # several clips of one label (MLVU: several probe clips of the action); the count within its window
        position = balance.take(questions.N_OPTIONS)
        low, times = questions.count_window(position, s.max_count, rng)
        chosen = questions.clips_of(next_needle(), needles, times, rng)
    sizes = [frame_count(n, rate) for n in chosen]
    used = n_frames - sum(sizes)
    if used < 1:
        raise DataError(f"{len(chosen)} needle(s) of {sum(sizes) / float(rate):.2f} s do not fit a {length:g} s video "
                        "— use longer --lengths or shorter needles")
    if depth is not None:
        ats = [round(depth / 100 * used)]
    else:  # MLVU: random positions; several needles each in its own equal share of the video
        shares = len(chosen)
        ats = [rng.randint(used * i // shares, max(used * i // shares, used * (i + 1) // shares - 1))
               for i in range(shares)]
    placed = list(zip(chosen, ats))
    if s.task == "nqa":
        n = chosen[0]
        own = questions.Question(n.question, n.options, n.answer) if n.question else None
        try:
            q = questions.nqa(n.label, own, labels, rng, balance)
        except ValueError:
            raise LvuError(f"needle {n.where} has no question and there is no other label to ask about — give it "
                           "question/options/answer in a needle JSONL file, or add needles") from None
    elif s.task == "order" and groups:
        q = questions.order_events([n.label for n in chosen], rng, balance)
    elif s.task == "order":
        q = questions.order([n.label for n in chosen], rng, balance)
    else:
        q = questions.count(chosen[0].label, low, position)
    starts = _starts(placed, sizes)
    if depth is not None:
        where = depth
    elif len(chosen) == 1:  # a random position, as a depth: where it starts in the room it has
        where = starts[0] / max(1, n_frames - sizes[0]) * 100
    else:  # several needles: the centre of them, in percent of the video
        where = sum(a + z / 2 for a, z in zip(starts, sizes)) / len(sizes) / n_frames * 100
    cell = f"d{depth:g}" if depth is not None else f"r{k}"
    suffix = f"-{k}" if depth is not None and s.per_cell > 1 else ""
    name = chosen[0].name if s.task == "nqa" else _slug(chosen[0].label) if s.task == "count" else \
        chosen[0].name if groups else f"{len(chosen)}"
    job = Job(f"{s.task}-{_slug(bg.path.stem)}-{length:g}s-{cell}-{name}{suffix}", bg, length, n_frames, placed, q,
              where)
    return job


def _starts(placed: list[tuple[Needle, int]], sizes: list[int]) -> list[int]:
    """Output frame where each needle starts (earlier needles push later ones back)."""
    out, before = [], 0
    for (_, at), size in zip(placed, sizes):
        out.append(at + before)
        before += size
    return out


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "video"


# ---- building ------------------------------------------------------------------------------------


def _inserts(job: Job) -> list[Insert]:
    info = job.background.info
    out = []
    for needle, at in job.placed:
        n = frame_count(needle, info.rate)
        out.append(Insert(at, n, frames=partial(needle_frames, needle, info.width, info.height, info.rate),
                          audio=partial(needle_audio, needle), label=needle.where))
    return out


def audio_format(job: Job) -> AudioFormat | None:
    """The background's audio format; 48 kHz stereo when only needles have sound; None when nothing has."""
    if job.background.info.audio is not None:
        return job.background.info.audio.plain()
    return AudioFormat(48000, "stereo") if any(n.has_audio for n, _ in job.placed) else None


def pieces_of(job: Job) -> list[Piece]:
    """The job's output timeline: background spans (trimmed or looped) and its needles."""
    info = job.background.info
    return timeline(info.n_frames, job.n_frames - sum(frame_count(n, info.rate) for n, _ in job.placed),
                    _inserts(job))


def _keyed(job: Job, s: NeedleSettings) -> Job:
    from lvu.media.identity import video_fingerprint

    job.pieces = pieces_of(job)
    fmt = audio_format(job)
    what = {"v": VERSION, "background": video_fingerprint(job.background.path), "crf": s.crf, "reencode": s.reencode,
            "exact_audio": s.exact_audio,
            "audio": [fmt.rate, fmt.layout] if fmt else None, "frames": job.n_frames,
            # each needle's frame count too: an image from a folder once lasted one frame under the same
            # identity, and a folder built then must not be resumed with its one-frame videos
            "needles": [[n.identity(), at, frame_count(n, job.background.info.rate)] for n, at in job.placed]}
    job.key = hashlib.blake2b(json.dumps(what, sort_keys=True).encode(), digest_size=16).hexdigest()
    return job


@dataclass
class BuildResult:
    jsonl: Path
    samples: list[Sample]
    made: int
    reused: int
    modes: dict[str, int]
    """Videos per splice mode (copy / re-encode) made in this call."""
    reasons: dict[str, str]
    """Background -> why its packets could not be copied."""
    frames: dict[str, int] = field(default_factory=dict)
    """Frames of the videos made in this call: copied (packets) and encoded."""
    audio: dict[str, int] = field(default_factory=dict)
    """Videos made per way their sound was written ("copied between splice points", "re-encoded: why")."""


def _remove_stale(out: Path, keep: set[str]) -> None:
    """Videos of earlier builds into this folder that this plan no longer has, and the temporary
    file of a splice a kill -9 cut short."""
    for p in (out / "videos").glob("*.mp4"):
        if f"videos/{p.name}" not in keep:
            p.unlink(missing_ok=True)
    remove_partial(out)


def remove_partial(out: Path, *, dead_only: bool = False) -> None:
    """The temporary files of splices a kill -9 cut short (lvu.construct.splice writes `.NAME.PID.tmp`
    and renames it when done); `dead_only`: only those whose process is gone (a build starting, before
    it holds the folder's lock, leaves a live writer's file alone)."""
    for p in (out / "videos").glob(".*.tmp"):
        pid = p.name.rsplit(".", 2)[-2]
        if dead_only and pid.isdigit() and _alive(int(pid)):
            continue
        p.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def shifted_cues(cues: list[Any], pieces: list[Piece], rate: Fraction) -> list[tuple[float, float, str]]:
    """The background's cues on the output's clock: each background span's cues clipped to it and
    moved by the frames inserted (and looped) before it; a cue cut by an insertion is split around
    it (pieces shorter than MIN_CUE dropped)."""
    out = []
    for piece in pieces:
        if piece.bg_start is None:
            continue
        lo, hi = piece.bg_start / rate, (piece.bg_start + piece.length) / rate
        shift = (piece.out_start - piece.bg_start) / rate
        for c in cues:
            a, b = max(c.start, float(lo)), min(c.end, float(hi))
            if b - a >= MIN_CUE:
                out.append((round(a + float(shift), 3), round(b + float(shift), 3), c.text))
    return sorted(out)


def _sample(job: Job, out: Path) -> Sample:
    from lvu.media.subtitles import load_cues, srt_text

    info = job.background.info
    rate = info.rate
    sizes = [frame_count(n, rate) for n, _ in job.placed]
    starts = _starts(job.placed, sizes)
    subtitles = None
    if job.background.subtitles is not None:
        cues = shifted_cues(load_cues(job.background.subtitles), job.pieces, rate)
        srt = out / "subtitles" / f"{job.id}.srt"
        srt.parent.mkdir(exist_ok=True)
        srt.write_text(srt_text(cues), encoding="utf-8")
        subtitles = SubtitleRef(path=str(srt.resolve()))
    spans = [{"label": n.label, "kind": n.kind, "source": n.source if n.kind == "text" else Path(n.source).name,
              "start": round(a / float(rate), 4), "end": round((a + z) / float(rate), 4), "start_frame": a,
              "end_frame": a + z, "depth": round(a / max(1, job.n_frames - z) * 100, 2)}
             for (n, _), a, z in zip(job.placed, starts, sizes)]
    durations = sorted({round(z / float(rate), 1) for z in sizes})
    return Sample(
        id=job.id, benchmark="needle", video=VideoRef(path=str((out / job.video_name).resolve()), duration=job.n_frames / float(rate)),
        question=job.question.text, options=list(job.question.options), answer=job.question.answer,
        labels={"task": job.id.split("-")[0], "depth": _pct(job.depth), "length": f"{job.length:g}s",
                "needle_duration": "/".join(f"{d:g}s" for d in durations)},
        subtitles=subtitles,
        extra={"needles": spans, "inserted": [[sp["start"], sp["end"]] for sp in spans],
               "background": {"path": job.background.path.name, "seconds_used": round(
                   (job.n_frames - sum(sizes)) / float(rate), 4), "fps": str(rate)}},
    )
