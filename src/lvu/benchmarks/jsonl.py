"""lvu's native sample format (JSONL) and the generic `jsonl` benchmark for your own data.

One JSON object per line, exactly `Sample.model_dump()` (docs/jsonl-format.md has a full example):

    {"id": "q1", "benchmark": "mine", "video": {"path": "videos/a.mp4", "duration": 120.0},
     "question": "What is shown at 01:23?", "options": ["a cat", "a dog"], "answer": 1, ...}

Relative video and subtitle paths are resolved against the JSONL file's directory, so a folder
holding the file and its media can be moved as a whole. A malformed line becomes a BadRecord
naming `file:line`; it never stops the other lines from loading.

The `jsonl` benchmark's protocol (also the haystack's):
- frames: N uniform segment centres, t_i = (i + 0.5) * duration / N (`frames`, default 32;
  lvu.media.sampling's `uniform:N`);
- subtitles: cues selected by `subtitles` mode (default "interleave", LongVideoBench's rule) and
  interleaved with the frames by time;
- audio (`audio`, default none): the video's sound as 16 kHz PCM clips, `whole` after the frames
  or `interleave`d, each frame with the sound around it (lvu.media.audio);
- text: the question, options as "(A) ..." lines, then PROMPT_INSTRUCTION;
- extraction: the first option letter in the reply (lvu.scoring.choice.extract_letter);
- scoring: 1.0 / 0.0. Open-ended samples (no options) are scored by exact match of normalised
  text (lower case, punctuation and the articles a/an/the removed, whitespace collapsed).
Settings: `JsonlSettings` (`lvu list --settings jsonl`); it has no peer harnesses.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from pydantic import Field, ValidationError, field_validator

from lvu.benchmarks.base import BadRecord, Benchmark, missing_video_line, register_benchmark
from lvu.benchmarks.loading import RecordError, Unparsed, collect_samples, iter_json_lines, read_text
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.errors import LvuError
from lvu.media.sampling import Uniform
from lvu.media.subtitles import MODES, interleave
from lvu.scoring.choice import extract_letter, format_options
from lvu.types import (LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, Score, Subtitle, Text,
                       VideoMeta)

PROMPT_INSTRUCTION = "Answer with the option's letter from the given choices directly."
OPEN_INSTRUCTION = "Answer the question briefly."
FORMAT_DOC = "see docs/jsonl-format.md"


# ---- reading and writing ----------------------------------------------------------------------


def read_samples(path: str | Path, *, video_dir: str | Path | None = None,
                 written: dict[str, str] | None = None) -> tuple[list[Sample], list[BadRecord]]:
    """Samples of a JSONL file, with relative media paths made absolute.

    Video paths: a relative one resolves against `video_dir` when given, then the file's
    directory; an absolute one is taken as written, then by its file name in `video_dir`. The
    first place that holds the file wins (the first place when none does: the run then reports
    the sample as a data error naming every place, `JsonlBenchmark.missing_video`). `written`, when
    given, gets each chosen video path -> the path as the file gives it. Relative subtitle paths resolve against
    the file's directory. Blank lines are skipped. Each bad line (not JSON, missing or ill-typed
    fields, answer out of range, repeated id) becomes a BadRecord(id="file:line"). A missing or
    unreadable file raises DataError.
    """
    path = Path(path)
    text = read_text(path, missing=f"pass the path of a .jsonl sample file ({FORMAT_DOC})",
                     unreadable="it must be a UTF-8 text file, one JSON object per line")
    base = path.parent
    videos: dict[str, VideoLookup] = {}  # many samples share a video: look for each path once
    resolved: dict[tuple[str, Path], str] = {}

    def to_sample(where: str, record: Any) -> Sample:
        sample = _record_sample(record, default_benchmark=path.stem)
        raw = sample.video.path
        if raw not in videos:
            videos[raw] = find_video(raw, base, Path(video_dir) if video_dir is not None else None, path.name)
            if written is not None:
                written[videos[raw].path] = raw
        sample.video.path = videos[raw].path
        if sample.subtitles is not None:
            sample.subtitles.path = _resolve(sample.subtitles.path, base, resolved)
        return sample

    return collect_samples(  # where = "<path>:<line>"
        iter_json_lines(text, path), to_sample,
        repeated=lambda sid, first: f"id {sid!r} repeats line {first.rpartition(':')[2]} — give every sample a unique id")


class VideoLookup(NamedTuple):
    """Where a JSONL record's video was looked for: the path as the record gives it, the one
    chosen, and every (place, why) tried in order."""

    written: str
    path: str
    tried: list[tuple[str, str]]


def find_video(written: str, base: Path, video_dir: Path | None, file_name: str) -> VideoLookup:
    """The places a record's video path can mean (read_samples' rule), the first that exists
    chosen; with one place nothing is read from disk (the run fails the sample if it is absent)."""
    p = Path(written).expanduser()
    if p.is_absolute():
        places = [(str(p), "as written")]
        if video_dir is not None:
            places.append((str((video_dir / p.name).resolve()), "--video-dir"))
    else:
        places = [(str((video_dir / p).resolve()), "--video-dir")] if video_dir is not None else []
        places.append((str((base / p).resolve()), f"beside {file_name}"))
    chosen = places[0][0] if len(places) == 1 else next((q for q, _ in places if Path(q).exists()), places[0][0])
    return VideoLookup(written, chosen, places)


def _record_sample(record: Any, *, default_benchmark: str) -> Sample:
    """One line's record (or why it is not JSON) as a Sample; RecordError says what to fix."""
    if isinstance(record, Unparsed):
        raise RecordError(f"{record} — each line must be one JSON object")
    if not isinstance(record, dict):
        raise RecordError(f"a JSON {type(record).__name__}, not an object — "
                         f"each line must be one sample object ({FORMAT_DOC})")
    record.setdefault("benchmark", default_benchmark)
    if isinstance(record.get("video"), str):  # shorthand: "video": "path.mp4"
        record["video"] = {"path": record["video"]}
    if isinstance(record.get("subtitles"), str):
        record["subtitles"] = {"path": record["subtitles"]}
    try:
        sample = Sample.model_validate(record)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "record"
        more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise RecordError(f"{field}: {err['msg'].lower()}{more} — fix the field ({FORMAT_DOC})") from None
    n = len(sample.options)
    if n and sample.answer is not None and (not isinstance(sample.answer, int) or not 0 <= sample.answer < n):
        raise RecordError(
            f"answer {sample.answer!r} is not an index into {n} options — "
            f"use the 0-based index of the correct option (0..{n - 1}) or null"
        )
    return sample


def _resolve(p: str, base: Path, memo: dict[tuple[str, Path], str]) -> str:
    if (p, base) not in memo:
        path = Path(p).expanduser()
        memo[p, base] = str(path if path.is_absolute() else (base / path).resolve())
    return memo[p, base]


def write_samples(path: str | Path, samples: list[Sample]) -> Path:
    """Write samples as JSONL (atomically: a reader never sees half a file).

    Absolute media paths inside the file's directory are written relative to it (so the folder
    can move); other paths are written as given.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    base = path.parent.resolve()
    lines = []
    for s in samples:
        record = s.model_dump(mode="json")
        record["video"]["path"] = _relative(record["video"]["path"], base)
        if record.get("subtitles"):
            record["subtitles"]["path"] = _relative(record["subtitles"]["path"], base)
        lines.append(json.dumps(record, ensure_ascii=False))
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{time.monotonic_ns()}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="\n") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _relative(p: str, base: Path) -> str:
    path = Path(p)
    if path.is_absolute() and path.is_relative_to(base):
        return path.relative_to(base).as_posix()
    return p


# ---- the generic benchmark --------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (open-ended matching)."""
    text = re.sub(r"[^\w\s]", " ", text.lower())
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


class JsonlSettings(BenchmarkSettings):
    """The plain protocol's settings (also the haystack's)."""

    frames: int = Field(32, description="uniform segment centres, t_i = (i + 0.5) * duration / N; "
                                        "0: no frames (a text-only run)")
    subtitles: str = Field("interleave", description="cues of the sample's subtitle file (or --asr's transcript): "
                                                     "none, all, covering or interleave (with the frames by time)")
    resize: int | None = Field(None, description="shorter side of frames in pixels; unset: full size")

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LvuError(f"frames={value!r} is not a frame count — use a whole number such as 32")
        return value

    @field_validator("subtitles", mode="before")
    @classmethod
    def _subtitles(cls, value: Any) -> Any:
        if value not in MODES:
            raise LvuError(f"subtitles={value!r} is unknown — use one of {', '.join(MODES)}")
        return value


@register_benchmark("jsonl")
class JsonlBenchmark(Benchmark):
    """Your own data in lvu's JSONL format (`--data FILE.jsonl`), run under a plain protocol."""

    Settings: ClassVar[type[BenchmarkSettings]] = JsonlSettings
    config: JsonlSettings
    audio_modes: ClassVar[tuple[str, ...]] = ("whole", "interleave")
    """`--audio whole`: the track after the frames; `interleave`: each frame with the sound around it."""

    def data_path(self) -> Path:
        """The `data` setting: a .jsonl file, or a folder holding exactly one."""
        data = self.settings.get("data")
        if not data:
            raise LvuError(f"benchmark {self.name!r} needs its sample file: --data FILE.jsonl ({FORMAT_DOC})")
        path = Path(data)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if len(found) != 1:
                raise LvuError(f"{path}: holds {len(found)} .jsonl files — pass the sample file itself with --data")
            path = found[0]
        return path

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        self._written: dict[str, str] = {}  # video path -> as the file gives it (for missing_video)
        return read_samples(self.data_path(), video_dir=self.settings.get("video_dir"), written=self._written)

    def missing_video(self, sample: Sample) -> str | None:
        """The missing-video line naming every place `read_samples` looked (--video-dir, beside the file)."""
        if Path(sample.video.path).exists():
            return None
        if getattr(self, "_written", None) is None:  # e.g. a Ray decode task: its benchmark never loaded
            self.loaded()
        raw = self._written.get(sample.video.path)
        if raw is None:
            return super().missing_video(sample)
        data, video_dir = self.data_path(), self.settings.get("video_dir")
        found = find_video(raw, data.parent, Path(video_dir) if video_dir else None, data.name)
        name = Path(raw).name if Path(raw).expanduser().is_absolute() else raw  # what --video-dir must hold
        return missing_video_line(sample.id, found.tried, name=name)

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        return InputPlan(
            timestamps=Uniform(n=n).timestamps(video.duration, 0.0) if (n := self.settings["frames"]) else [],
            subtitle_mode=self.settings["subtitles"],  # cues: the sample's subtitle file, else --asr's transcript
            resize=self.settings["resize"],
        )

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        lines = [sample.question]
        if sample.options:
            lines += format_options(sample.options)
            lines.append(PROMPT_INSTRUCTION)
        else:
            lines.append(OPEN_INSTRUCTION)
        return Prompt(
            parts=[*interleave(frames, cues), Text(text="\n".join(lines))],
            choices=list(sample.options),
            question=sample.question,
        )

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if sample.options:
            return Prediction(value=extract_letter(response.text, len(sample.options)))
        return Prediction(value=response.text.strip())

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="no answer in the data: left out")
        if sample.options:
            answer = LETTERS[sample.answer]  # type: ignore[index]
            if prediction.value is None:
                return Score(value=0.0, correct=False, explanation=f"no option letter in the reply; answer {answer}")
            got = LETTERS[prediction.value]  # type: ignore[index]
            ok = prediction.value == sample.answer
            return Score(value=float(ok), correct=ok, explanation=f"predicted {got}, answer {answer}")
        ok = normalize_answer(str(prediction.value or "")) == normalize_answer(str(sample.answer))
        return Score(value=float(ok), correct=ok, explanation="normalised exact match" + ("" if ok else " failed"))
