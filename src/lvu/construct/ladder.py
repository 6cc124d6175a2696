"""`lvu build ladder`: MLVU's Time-ladder (paper §4.3, App. D, Tables 7–9): the same questions on
videos cut to fixed lengths (180 / 360 / 600 s), keeping a question at a length only when its
evidence lies wholly inside the cut, so accuracy can be read against video length. Its M-Avg is
the mean of the five multiple-choice tasks (NQA, ER, PQA, AO, AC); AR and TR are global and left out.

Sources: the MLVU release (the five tasks; `--data`-style folder) or lvu JSONL files — `lvu build
needle` outputs (their `extra.inserted` spans) or any samples with `extra.evidence`. The MLVU
release gives no evidence position for any of the five tasks (its records are video, duration,
question, candidates, answer, question_type; the paper generated NQA/AO/AC ladder videos
directly, and its PQA/ER segments are not published), so a release without added spans
(lvu.benchmarks.mlvu_release.EVIDENCE_KEYS) is refused with that explanation; build the ladder
from `lvu build needle --lengths 180,360,600` outputs instead.

Each video is cut once per length (the first L seconds; lvu.construct.splice copies whole GOPs and
re-encodes only the last partial one), its subtitles clipped; samples get `length` = "180s" and
ids `<id>@180s`. The `ladder` build pipeline: its items are the planned cuts (plan_ladder), one
`ladder.cut` unit each, committed to OUT's build store (a re-run cuts only what is missing, a cut
whose file was deleted is made again); the export writes ladder.jsonl and subtitles/.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from lvu.benchmarks.jsonl import read_samples, write_samples
from lvu.construct.needle_pipeline import FileStage
from lvu.construct.pipeline import Item, Pipeline, PipelineOptions, Stage, Unit, register_pipeline, register_stage
from lvu.construct.splice import splice, timeline
from lvu.errors import LvuError
from lvu.types import Sample, SubtitleRef, VideoRef

JSONL_NAME = "ladder.jsonl"
LENGTHS = (180.0, 360.0, 600.0)
MLVU_TASKS = ("NQA", "ER", "PQA", "AO", "AC")
"""The five multiple-choice tasks of the Time-ladder's M-Avg (Tables 7–9)."""
TASK_NAMES = {"NQA": "Needle QA", "ER": "Ego Rea.", "PQA": "Plot QA", "AO": "Action Or.", "AC": "Action Co.",
              "nqa": "Needle QA", "order": "Action Or.", "count": "Action Co."}
"""Column names of MLVU's Time-ladder tables, for MLVU task codes and `lvu build needle` tasks."""


@dataclass
class LadderResult:
    jsonl: Path
    samples: list[Sample]
    kept: dict[tuple[str, float], int] = field(default_factory=dict)
    """(task, length) -> questions kept."""
    outside: dict[tuple[str, float], int] = field(default_factory=dict)
    """(task, length) -> questions dropped: evidence past the cut, or a video shorter than the length."""
    no_evidence: dict[str, int] = field(default_factory=dict)
    """task -> questions without an evidence span (never cut)."""


def load_sources(sources: list[Path]) -> list[Sample]:
    """Samples of JSONL files, or of the MLVU release's five ladder tasks (a folder)."""
    samples: list[Sample] = []
    for src in sources:
        if src.is_dir():
            from lvu.benchmarks.mlvu_release import load_release

            got, _ = load_release("dev", str(src), list(MLVU_TASKS))
            if not got:
                raise LvuError(f"{src}: no MLVU NQA/ER/PQA/AO/AC records — pass the MLVU release folder or JSONL files")
        else:
            got, bad = read_samples(src)
            if not got:
                raise LvuError(f"{src}: no readable samples ({bad[0].error if bad else 'empty'})")
        samples += got
    return samples


def evidence(sample: Sample) -> list[tuple[float, float]] | None:
    """The sample's evidence spans in seconds: `extra.inserted` (lvu build needle) or
    `extra.evidence` ([start, end] or a list of them); None when it has none."""
    raw: Any = sample.extra.get("inserted") or sample.extra.get("evidence")
    if not raw:
        return None
    if isinstance(raw[0], (int, float)):
        raw = [raw]
    try:
        return [(float(a), float(b)) for a, b in raw]
    except (TypeError, ValueError):
        raise LvuError(f"{sample.id}: evidence {raw!r} is not [start, end] seconds or a list of them") from None


def task_of(sample: Sample) -> str:
    task = sample.labels.get("task")
    return str(task[0] if isinstance(task, list) else task) if task else "all"


def build_ladder(samples: list[Sample], out_dir: str | Path, lengths: tuple[float, ...] = LENGTHS, *,
                 workers: int = 2, replace: bool = False) -> LadderResult:
    """Cut every video that has kept questions to each length and write the ladder JSONL: the
    `ladder` build pipeline over the planned cuts (each committed to OUT's build store, so a re-run
    cuts only what is missing; one build per folder at a time: lvu.construct.runner.build_lock)."""
    from lvu.construct.needle_pipeline import BuildInterrupted
    from lvu.construct.runner import run_build

    plan = plan_ladder(samples, lengths)
    pipeline = Ladder({"lengths": list(lengths)})
    state, written = asyncio.run(run_build(pipeline, plan.items, out_dir, {}, concurrency=workers,
                                           show_progress=False, note=lambda message: None, replace=replace))
    if not written:
        done = len(state.outputs.get("cuts", {}))
        raise BuildInterrupted(f"interrupted: {done} of {len(plan.items)} ladder cuts made (committed) — run the "
                               "same command again to resume")
    plan.result.jsonl, plan.result.samples = Path(out_dir) / JSONL_NAME, pipeline.samples
    return plan.result


@dataclass
class LadderPlan:
    items: list[Item]
    """One per cut (video x length with kept questions), in the order the JSONL lists them."""
    result: LadderResult
    """The counts (kept, dropped, without evidence); samples once built."""


def plan_ladder(samples: list[Sample], lengths: tuple[float, ...] | list[float]) -> LadderPlan:
    """Which questions each (video, length) cut keeps, as build items: each item's `data` holds the
    source video (its fingerprint, frame rate and frames), the cut's length, frames and file name,
    and the kept samples (the export needs nothing else)."""
    from lvu.construct.needles import probe_cached
    from lvu.media.identity import video_fingerprint

    result = LadderResult(Path(JSONL_NAME), [])
    spans = {s.id: evidence(s) for s in samples}
    for s in samples:
        if spans[s.id] is None:
            result.no_evidence[task_of(s)] = result.no_evidence.get(task_of(s), 0) + 1
    if not any(v is not None for v in spans.values()):
        counts = ", ".join(f"{t} {n}" for t, n in sorted(result.no_evidence.items()))
        raise LvuError(f"no question has an evidence position ({counts}) — the MLVU release does not give one for "
                       "NQA/AO/AC (synthetic: the paper generated each ladder length directly) or ER/PQA; build the "
                       "ladder from `lvu build needle ... --lengths 180,360,600` outputs (pass their needle.jsonl)")
    known = {sid: v for sid, v in spans.items() if v is not None}
    by_video: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        if s.id in known:
            by_video[s.video.path].append(s)
    items: list[Item] = []
    seen: set[str] = set()
    for video, group in sorted(by_video.items()):
        bg = probe_cached(video)
        for length in lengths:
            keep = [s for s in group if bg.duration >= length - 1e-6 and max(b for _, b in known[s.id]) <= length + 1e-6]
            kept_ids = {s.id for s in keep}
            for s in group:
                key = (task_of(s), length)
                bucket = result.kept if s.id in kept_ids else result.outside
                bucket[key] = bucket.get(key, 0) + 1
            if not keep:
                continue
            fingerprint, n = video_fingerprint(bg.path), round(length * bg.rate)
            digest = hashlib.blake2b(f"{fingerprint}|{n}".encode(), digest_size=6).hexdigest()
            stem = f"{Path(bg.path).stem}-{length:g}s-{digest}"
            item_id = stem if stem not in seen else f"{stem}~{len(items)}"  # the same video twice: one file
            seen.add(item_id)
            items.append(Item(item_id, str(video), {
                "video": str(Path(bg.path).resolve()), "fingerprint": fingerprint, "rate": str(bg.rate),
                "video_frames": bg.n_frames, "length": length, "frames": n, "file": f"videos/{stem}.mp4",
                "samples": [s.model_dump(mode="json") for s in keep]}))
    if not items:
        raise LvuError(f"no question's evidence fits within {', '.join(f'{x:g}' for x in lengths)} s — use longer --lengths")
    return LadderPlan(items, result)


class LadderOptions(PipelineOptions):
    lengths: list[float] = Field(list(LENGTHS), description="ladder lengths in seconds (MLVU: 180,360,600)")

    @field_validator("lengths", mode="before")
    @classmethod
    def _lengths(cls, value: Any) -> Any:
        from lvu.construct.needle_pipeline import numbers

        return numbers(value, example="180,360,600", low=0, what="lengths are seconds")


@register_stage("ladder.cut")
class Cut(FileStage):
    """One cut: the first L seconds of a video (whole GOPs copied, the last partial one re-encoded)."""

    output = "cuts"
    unit = "cut"

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        return [Unit(video.id, "video", {"video": video.data["fingerprint"], "frames": video.data["frames"]})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        from lvu.construct.needles import probe_cached

        d = ctx.video.data

        def cut(path: Path) -> Any:
            bg = probe_cached(d["video"])
            return splice(bg, timeline(bg.n_frames, d["frames"], []), path, audio=bg.audio.plain() if bg.audio else None)

        return await self.write(d["file"], cut)


@register_pipeline("ladder")
class Ladder(Pipeline):
    """MLVU's Time-ladder (`lvu build ladder`): videos cut to each length, keeping the questions whose
    evidence stays inside. INPUTS = lvu JSONL files (e.g. needle.jsonl) or the MLVU release folder."""

    Options = LadderOptions
    config: LadderOptions

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.samples: list[Sample] = []
        """The samples the export wrote (this process)."""

    def stages(self) -> list[Stage]:
        return [Cut(self.options)]

    def items(self, inputs: Sequence[str]) -> list[Item]:
        return plan_ladder(load_sources([Path(i) for i in inputs]), self.config.lengths).items

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        from lvu.construct.needles import remove_partial

        cuts = state.outputs.get("cuts", {})
        if any(v.id not in cuts for v in videos):
            return {}  # not every cut is there: no ladder file yet (`lvu build status` says what is missing)
        remove_partial(out)
        self.samples = []
        for item in videos:
            d = item.data
            video = (out / d["file"]).resolve()
            keep = [Sample.model_validate(s) for s in d["samples"]]
            subtitles = _cut_subtitles(keep[0], d["video_frames"], Fraction(d["rate"]), d["length"], out, video.stem)
            for s in keep:
                spans = evidence(s)
                assert spans is not None  # (plan_ladder keeps questions with evidence only)
                self.samples.append(_rung(s, d["length"], video, subtitles, spans))
        write_samples(out / JSONL_NAME, self.samples)
        return {"ladder.jsonl": out / JSONL_NAME, "samples": len(self.samples)}


def _cut_subtitles(sample: Sample, n_frames: int, rate: Fraction, length: float, out: Path, stem: str) -> Path | None:
    if sample.subtitles is None or not Path(sample.subtitles.path).is_file():
        return None
    from lvu.construct.needles import shifted_cues
    from lvu.media.subtitles import load_cues, srt_text

    cues = load_cues(sample.subtitles.path, offset=sample.subtitles.offset)
    path = (out / "subtitles" / f"{stem}.srt").resolve()
    path.parent.mkdir(exist_ok=True)
    path.write_text(srt_text(shifted_cues(cues, timeline(n_frames, round(length * rate), []), rate)),
                    encoding="utf-8")
    return path


def _rung(s: Sample, length: float, video: Path, subtitles: Path | None, spans: list[tuple[float, float]]) -> Sample:
    labels = {**s.labels, "length": f"{length:g}s"}
    if len(spans) == 1 and "depth" in labels:  # where the evidence sits in the cut video
        a, b = spans[0]
        labels["depth"] = f"{round(a / max(1e-9, length - (b - a)) * 100, 1):g}%"
    return s.model_copy(update={
        "id": f"{s.id}@{length:g}s", "labels": labels,
        "video": VideoRef(path=str(video), duration=length),
        "subtitles": SubtitleRef(path=str(subtitles)) if subtitles else None,
        "extra": {**s.extra, "ladder": {"from": s.id, "length": length}},
    })
