"""What `lvu review` reviews: the questions of a build output or of any lvu JSONL benchmark, with
what a rater needs beside each (decoys, dense captions, transcript, evidence times; the fields are
named in lvu.construct.review_labels), and the only videos the review server may send.

`load_source(PATH)`: PATH is a JSONL file, or a folder holding `benchmark.jsonl` (what `lvu build
neptune` writes), `kept.jsonl` (what `lvu build filter` writes) or exactly one `*.jsonl`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.construct.review_labels import (
    ASR_FIELD, DECOY_FIELDS, DENSE_CAPTIONS_FIELD, EVIDENCE_FIELD, REFERENCE_FIELD,
)
from lvu.errors import LvuError
from lvu.types import Sample
from lvu.web.media import VideoFiles

SOURCE_FILES = ("benchmark.jsonl", "kept.jsonl")
MCQ_DECOYS = 4
"""Decoys a reviewed multiple-choice question keeps (Neptune: 4 of the 6, a 5-way MCQ); fewer when
the question came with fewer."""
_CLOCK = re.compile(r"(?<![\d:.])(?:(\d{1,2}):)?([0-5]?\d):([0-5]\d)(?![\d:])")


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text}


@dataclass
class ReviewItem:
    """One question under review. `ordinal` (its place in the file) names it in URLs."""

    ordinal: int
    sample: Sample
    answer: str
    decoys: list[str]
    captions: list[Cue]
    evidence: list[tuple[float, float]]
    digest: str
    video_key: str = ""
    _asr: list[Cue] | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return self.sample.id

    @property
    def needed_decoys(self) -> int:
        return min(MCQ_DECOYS, len(self.decoys))

    def asr(self) -> tuple[list[Cue], str | None]:
        """The transcript (the sample's subtitle file, else `extra.asr`) and why it is missing, if
        it could not be read. Read on first use."""
        if self._asr is not None:
            return self._asr, None
        if self.sample.subtitles is not None:
            from lvu.media.subtitles import load_cues

            try:
                cues = load_cues(self.sample.subtitles.path, offset=self.sample.subtitles.offset)
            except LvuError as e:  # said on the page: the file's name, not where the files live
                path = self.sample.subtitles.path
                return cues_of(self.sample.extra.get(ASR_FIELD)), str(e).replace(path, Path(path).name)
            self._asr = [Cue(c.start, c.end, c.text) for c in cues]
        else:
            self._asr = cues_of(self.sample.extra.get(ASR_FIELD))
        return self._asr, None

    def shown(self) -> dict[str, Any]:
        """What raters were shown, as stored with the review (the snapshot behind `digest`)."""
        return {"id": self.id, "question": self.sample.question, "answer": self.answer, "decoys": self.decoys,
                "video": Path(self.sample.video.path).name}


def answer_text(sample: Sample) -> str:
    reference = sample.extra.get(REFERENCE_FIELD)
    if isinstance(reference, str) and reference.strip():
        return reference
    if sample.options and isinstance(sample.answer, int) and 0 <= sample.answer < len(sample.options):
        return sample.options[sample.answer]
    return sample.answer if isinstance(sample.answer, str) else ""


def decoys_of(sample: Sample) -> list[str]:
    for name in DECOY_FIELDS:
        value = sample.extra.get(name)
        if isinstance(value, list) and value and all(isinstance(d, str) for d in value):
            return list(value)
    if sample.options and isinstance(sample.answer, int):
        return [o for i, o in enumerate(sample.options) if i != sample.answer]
    return []


def cues_of(value: Any) -> list[Cue]:
    """Timed texts from [{"start", "end", "text" | "caption"}] or [[start, end, text]]; others skipped."""
    out = []
    for c in value if isinstance(value, list) else []:
        if isinstance(c, dict):
            start, end, text = c.get("start"), c.get("end"), c.get("text", c.get("caption"))
        elif isinstance(c, (list, tuple)) and len(c) == 3:
            start, end, text = c
        else:
            continue
        if isinstance(start, (int, float)) and isinstance(end, (int, float)) and isinstance(text, str):
            out.append(Cue(float(start), float(end), text))
    return sorted(out, key=lambda c: c.start)


def clock_times(text: str) -> list[float]:
    """Times written as m:ss or h:mm:ss in a text, in seconds ("at 01:41" -> 101)."""
    return [int(h or 0) * 3600 + int(m) * 60 + int(s) for h, m, s in _CLOCK.findall(text)]


def evidence_of(sample: Sample, answer: str) -> list[tuple[float, float]]:
    """Where the answer is: `extra.evidence`, the haystack's needles and `time`, and times written
    in the question or answer; sorted, without repeats."""
    spans: list[tuple[float, float]] = []
    raw = sample.extra.get(EVIDENCE_FIELD)
    if isinstance(raw, (int, float, dict)) or (isinstance(raw, list) and len(raw) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw)):
        raw = [raw]  # one span [start, end] (MLVU's evidence), or one moment / {"start", "end"}
    for x in raw if isinstance(raw, list) else []:
        if isinstance(x, dict) and isinstance(x.get("start"), (int, float)):
            end = x.get("end")
            spans.append((float(x["start"]), float(end if isinstance(end, (int, float)) else x["start"])))
        elif isinstance(x, (list, tuple)) and len(x) == 2 and all(isinstance(v, (int, float)) for v in x):
            spans.append((float(x[0]), float(x[1])))
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            spans.append((float(x), float(x)))
    for needle in sample.extra.get("needles") or []:
        if isinstance(needle, dict) and isinstance(needle.get("start"), (int, float)):
            spans.append((float(needle["start"]), float(needle["end"] if "end" in needle else needle["start"])))
    if isinstance(sample.extra.get("time"), (int, float)):
        spans.append((float(sample.extra["time"]),) * 2)
    spans += [(t, t) for text in (sample.question, answer) for t in clock_times(text)]
    spans = sorted({(round(float(a), 3), round(float(b), 3)) for a, b in spans if a >= 0 and b >= a})
    # a moment inside a listed span (the question's "at 00:05" where the evidence is 5-12 s) adds nothing
    return [(a, b) for a, b in spans if a < b or not any(x <= a <= y and x < y for x, y in spans)]


def video_id(sample: Sample) -> str:
    """The question's video name in an export: `extra.video_id`, else the video file's stem."""
    value = sample.extra.get("video_id")
    return value if isinstance(value, str) and value else Path(sample.video.path).stem


def item_of(ordinal: int, sample: Sample) -> ReviewItem:
    answer = answer_text(sample)
    decoys = decoys_of(sample)
    shown = {"question": sample.question, "options": sample.options, "answer": sample.answer,
             "reference": answer, "decoys": decoys, "video": Path(sample.video.path).name}
    digest = hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return ReviewItem(ordinal, sample, answer, decoys, cues_of(sample.extra.get(DENSE_CAPTIONS_FIELD)),
                      evidence_of(sample, answer), digest, VideoFiles.key(sample.video.path))


@dataclass
class ReviewSource:
    """The loaded questions: `items` in file order, and the videos they may show."""

    path: Path
    """The JSONL file read."""
    items: list[ReviewItem]
    n_bad: int
    videos: VideoFiles

    def item(self, ordinal: int) -> ReviewItem | None:
        return self.items[ordinal] if 0 <= ordinal < len(self.items) else None

    def by_id(self) -> dict[str, ReviewItem]:
        return {i.id: i for i in self.items}


def source_file(path: str | Path) -> Path:
    """The JSONL file `lvu review PATH` reads (module docstring)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise LvuError(f"{path}: no such file or folder — pass a build output folder or a JSONL benchmark")
    for name in SOURCE_FILES:
        if (path / name).is_file():
            return path / name
    found = sorted(path.glob("*.jsonl"))
    if len(found) == 1:
        return found[0]
    raise LvuError(f"{path}: no {' or '.join(SOURCE_FILES)} here and {len(found)} other .jsonl files — "
                   "pass the JSONL file to review itself")


def load_source(path: str | Path) -> ReviewSource:
    """The questions of `path` (module docstring). Lines that do not load are counted, not reviewed."""
    from lvu.benchmarks.jsonl import read_samples

    file = source_file(path)
    samples, bad = read_samples(file)
    if not samples:
        raise LvuError(f"{file}: no question loaded ({len(bad)} bad line(s)) — check it with `lvu data check`")
    items = [item_of(i, s) for i, s in enumerate(samples)]
    return ReviewSource(file, items, len(bad), VideoFiles(s.video.path for s in samples))


def default_db(path: str | Path) -> Path:
    """Where decisions live unless --db says: `review.sqlite` beside the reviewed file."""
    file = source_file(path)
    return file.with_name(f"{file.stem}.review.sqlite")
