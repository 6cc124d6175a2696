"""A chain protocol's export in its benchmark's release format, beside FINAL/benchmark.jsonl.

- `longvideobench`: `lvb_val.json` — the release's validation schema, the fields lvu's loader
  (lvu.benchmarks.longvideobench_release) reads: id, video_id, video_path, subtitle_path,
  question, question_wo_referring_query, candidates, correct_choice, question_category, level,
  topic_category, duration_group, duration, starting_timestamp_for_subtitles, position (referred
  frame indices: the middle frame of each referred moment, at the video's frame rate) — plus
  lvu's `referring_query` (character span) and `referred_moments` (seconds). Videos are linked
  under `videos/`, transcripts written under `subtitles/` as LongVideoBench's JSON
  ({"timestamp": [start, end], "text"}). `lvu run -b longvideobench --data FINAL` runs it.
- `videomme`, `lvbench`, `jsonl`: benchmark.jsonl is the export (`lvu run -b jsonl`); their
  release formats hold fields a review does not produce (Video-MME's domain and URL).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lvu.errors import LvuError
from lvu.paths import inside
from lvu.types import Sample
from lvu.web.review_chain import REFERRED_MOMENTS_FIELD, REFERRING_QUERY_FIELD
from lvu.web.review_protocols import ReviewProtocol

LVB_GROUPS = (15, 60, 600, 3600)
"""LongVideoBench's duration_group values: (8,15], (15,60], (180,600], (900,3600] seconds; a
video between groups (or past 3600 s) goes to the nearest group above (the last one)."""


def duration_group(seconds: float) -> int:
    return next((g for g in LVB_GROUPS if seconds <= g), LVB_GROUPS[-1])


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _lvb_subtitles(sample: Sample, out: Path, video_id: str) -> tuple[str | None, float]:
    """The sample's transcript as LongVideoBench JSON under out/subtitles (name, offset)."""
    if sample.subtitles is None or not os.path.isfile(sample.subtitles.path):
        return None, 0.0
    from lvu.media.subtitles import load_cues

    cues = load_cues(sample.subtitles.path, offset=0.0)
    name = f"{video_id}_en.json"
    target = inside(out, "subtitles", name, what=f"question {sample.id} (extra.video_id)")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_symlink():
        _write_json(target, [{"timestamp": [float(c.start), float(c.end)], "text": c.text} for c in cues])
    return name, float(sample.subtitles.offset)


def lvb_record(sample: Sample, out: Path, protocol: ReviewProtocol) -> dict[str, Any]:
    from lvu.media.video import probe_frames
    from lvu.web.review_data import video_id as video_id_of

    vid = video_id_of(sample)
    duration = sample.video.duration
    moments = sample.extra.get(REFERRED_MOMENTS_FIELD) or []
    position: list[int] = []
    if moments:
        fps, _ = probe_frames(sample.video.path)
        position = [round((a + b) / 2 * fps) for a, b in moments]
    if duration is None:
        from lvu.media.video import probe_cached

        duration = probe_cached(sample.video.path).duration
    subtitle, offset = _lvb_subtitles(sample, out, vid)
    record = {"id": sample.id, "video_id": vid, "video_path": Path(sample.video.path).name, "question": sample.question,
              "question_wo_referring_query": sample.extra.get("question_wo_referring_query", sample.question),
              "candidates": sample.options, "correct_choice": sample.answer,
              "question_category": sample.labels.get(protocol.category_label),
              "level": sample.labels.get("level"), "topic_category": sample.labels.get("topic_category"),
              "duration_group": duration_group(float(duration)), "duration": float(duration),
              "starting_timestamp_for_subtitles": offset, "position": position,
              REFERRING_QUERY_FIELD: sample.extra.get(REFERRING_QUERY_FIELD), REFERRED_MOMENTS_FIELD: moments}
    if subtitle is not None:
        record["subtitle_path"] = subtitle
    return record


def write_release(protocol: ReviewProtocol, out: Path, samples: list[Sample]) -> dict[str, Any]:
    """Write `protocol.export`'s release files (module docstring); what was written."""
    if protocol.export != "longvideobench":
        return {}
    records, skipped = [], 0
    for s in samples:
        if not (2 <= len(s.options) <= 5 and isinstance(s.answer, int)):
            skipped += 1  # LongVideoBench questions have 4-5 candidates; the JSONL keeps the others
            continue
        try:
            records.append(lvb_record(s, out, protocol))
        except LvuError as e:  # one unreadable video or transcript never stops the export
            skipped += 1
            print(f"warning: {s.id}: left out of lvb_val.json: {e}", flush=True)
    _write_json(out / "lvb_val.json", records)
    return {"file": "lvb_val.json", "questions": len(records), "left out": skipped,
            "run": f"lvu run -b longvideobench --data {out} -m MODEL"}
