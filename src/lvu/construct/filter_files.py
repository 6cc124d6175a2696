"""A blind filter's output folder (docs/build.md, "Blind filters"):

- `kept.jsonl`: the kept samples as an lvu JSONL benchmark — every field and label as loaded, so
  `lvu run -b jsonl --data OUT/kept.jsonl` runs them and keeps the breakdowns; media paths are
  absolute, or relative to OUT when the media lie inside it (lvu.benchmarks.jsonl.write_samples);
- `removed.jsonl`: the removed samples in the same format, each with its evidence under
  `extra.blind_filter` (rule, reason, and per call: model, seed, option order, prompt, raw reply,
  parsed ranking, correct) — also a runnable benchmark;
- `decisions.jsonl`: one line per loaded sample: id, labels, status (removed / kept / skipped /
  failed), reason and the votes' short form (model, seed, reply, ranking, correct).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lvu.benchmarks.jsonl import write_samples
from lvu.construct.filtering import FilterOutcome
from lvu.types import Sample

EVIDENCE_KEY = "blind_filter"
"""Where removed.jsonl keeps a removal's evidence: sample.extra[EVIDENCE_KEY]."""


def _absolute(sample: Sample) -> Sample:
    """A copy with absolute media paths (a loader's relative path is relative to the working folder)."""
    copy = sample.model_copy(deep=True)
    copy.video.path = os.path.abspath(copy.video.path)
    if copy.subtitles is not None:
        copy.subtitles.path = os.path.abspath(copy.subtitles.path)
    return copy


def _short_vote(vote: dict[str, Any]) -> dict[str, Any]:
    model = vote["model"]
    return {"model": model.get("model") or model.get("backend"), "seed": vote["seed"], "reply": vote["reply"],
            "ranking": vote["ranking"], "correct": vote["correct"]}


def write_outputs(outcome: FilterOutcome, out: str | Path) -> dict[str, Path]:
    """Write kept.jsonl, removed.jsonl and decisions.jsonl into `out`; their paths by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    removed = []
    for checked in outcome.removed:
        sample = _absolute(checked.sample)
        sample.extra[EVIDENCE_KEY] = checked.decision.to_json()
        removed.append(sample)
    paths = {"kept": write_samples(out / "kept.jsonl", [_absolute(s) for s in outcome.kept]),
             "removed": write_samples(out / "removed.jsonl", removed)}
    status: dict[str, dict[str, Any]] = {}
    for c in outcome.checked:
        d = c.decision
        status[c.sample.id] = {"status": "removed" if d.removed else "kept", "rule": d.rule, "reason": d.reason,
                               "votes": [_short_vote(asdict(v)) for v in d.votes]}
    for s, why in outcome.skipped:
        status[s.id] = {"status": "skipped", "reason": why}
    for s, why in outcome.failed:
        status[s.id] = {"status": "failed", "reason": why}
    lines = [json.dumps({"id": s.id, "labels": s.labels, **status[s.id]}, ensure_ascii=False)
             for s in outcome.samples if s.id in status]
    paths["decisions"] = out / "decisions.jsonl"
    tmp = out / f".decisions.jsonl.{os.getpid()}.tmp"
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, paths["decisions"])
    return paths
