"""A blind filter's output folder (docs/build.md, "Blind filters"):

- `kept.jsonl`: the kept samples as an lvu JSONL benchmark — every field and label as loaded, so
  `lvu run -b jsonl --data OUT/kept.jsonl` runs them and keeps the breakdowns; media paths are
  absolute, or relative to OUT when the media lie inside it (lvu.benchmarks.jsonl.write_samples);
- `removed.jsonl`: the removed samples in the same format, each with its evidence under
  `extra.blind_filter` (rule, reason, and per call: model, seed, option order, prompt, raw reply,
  parsed ranking, correct) — also a runnable benchmark;
- `decisions.jsonl`: one line per loaded sample: id, labels, status (removed / kept / unchecked /
  skipped / failed), reason and the votes' short form (model, seed, reply, ranking, correct).
  `unchecked`: kept because the replies named no option (blind.Decision.unchecked) — not a pass.
With --revise (lvu.construct.revise) a removed question is sent for revision instead: kept.jsonl
also holds the revisions that passed (in the question's place, history under `extra.revision`),
removed.jsonl only the questions dropped (by a reviewer, or still flagged after the last round),
and the ones waiting are in revision/questions.jsonl (status `revising` in decisions.jsonl).
`summary.json` (counts and removed % per group with intervals) is lvu.analysis.blind's. Also where
a filter's samples come from (`source_benchmark`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lvu.benchmarks.jsonl import write_samples
from lvu.construct.blind import Decision
from lvu.errors import LvuError
from lvu.types import Sample

if TYPE_CHECKING:
    from lvu.benchmarks.base import BadRecord, Benchmark

class Revisions(Protocol):
    """What the files need of a revision loop's outcome (lvu.construct.revise.RevisionOutcome,
    which builds on this module)."""

    chains: list[Any]

    def kept_versions(self) -> dict[str, Sample]: ...

    def having(self, status: str) -> list[Any]: ...


@dataclass
class Checked:
    """One checked question and the rule's decision."""

    sample: Sample
    decision: Decision


@dataclass
class FilterOutcome:
    """What `filter_samples` did, samples in load order."""

    checked: list[Checked]
    skipped: list[tuple[Sample, str]]
    """Not checkable (open-ended, no answer): kept, never asked."""
    failed: list[tuple[Sample, str]]
    """Undecided: a model call failed (or the filter was interrupted before them); re-run to retry."""
    bad: list[BadRecord]
    job_id: str
    results_dir: Path
    calls: int = 0
    """Model calls made by this invocation (decisions taken from the ledger make none)."""
    n_reused: int = 0
    interrupted: bool = False
    wall: float = 0.0
    notes: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    """Every loaded sample, in load order."""
    revision: Revisions | None = None
    """--revise: where the questions this pass removed stand in their revision."""

    @property
    def kept(self) -> list[Sample]:
        """Samples for the kept file: checked and not removed, plus the unchecked ones; with
        --revise, the revisions kept too, each in its question's place."""
        removed = {c.sample.id for c in self.checked if c.decision.removed}
        undecided = {s.id for s, _ in self.failed}
        revised = {} if self.revision is None else self.revision.kept_versions()
        return [revised.get(s.id, s) for s in self.samples
                if s.id in revised or (s.id not in removed and s.id not in undecided)]

    @property
    def removed(self) -> list[Checked]:
        """The questions this pass removed (with --revise: the ones it sent for revision)."""
        return [c for c in self.checked if c.decision.removed]

    def removed_samples(self) -> list[Sample]:
        """Samples for the removed file, each with its evidence (--revise: the questions dropped)."""
        if self.revision is not None:
            return [c.final_sample() for c in self.revision.having("dropped")]
        removed = []
        for checked in self.removed:
            sample = checked.sample.model_copy(deep=True)
            sample.extra[EVIDENCE_KEY] = checked.decision.to_json()
            removed.append(sample)
        return removed

    @property
    def decided(self) -> list[Checked]:
        """The questions the rule could judge (removed, or kept on readable replies)."""
        return [c for c in self.checked if not c.decision.unchecked]

    @property
    def unchecked(self) -> list[Checked]:
        """Kept because the replies named no option: asked, but not checked."""
        return [c for c in self.checked if c.decision.unchecked]

    def replies(self) -> tuple[int, list[str]]:
        """(replies received, the ones that named no option) over every checked question."""
        votes = [v for c in self.checked for v in c.decision.votes if not v.error]
        return len(votes), [v.reply for v in votes if v.ranking is None]


def checkable(sample: Sample) -> str | None:
    """Why a sample cannot be checked, or None when it can (multiple choice with an answer index)."""
    if len(sample.options) < 2:
        return "not multiple choice"
    if not isinstance(sample.answer, int) or isinstance(sample.answer, bool) \
            or not 0 <= sample.answer < len(sample.options):
        return "no answer index"
    return None


EVIDENCE_KEY = "blind_filter"
"""Where removed.jsonl keeps a removal's evidence: sample.extra[EVIDENCE_KEY]."""


def _absolute(sample: Sample) -> Sample:
    """A copy with absolute media paths (a loader's relative path is relative to the working folder)."""
    copy = sample.model_copy(deep=True)
    copy.video.path = os.path.abspath(copy.video.path)
    if copy.subtitles is not None:
        copy.subtitles.path = os.path.abspath(copy.subtitles.path)
    return copy


SHORT_REPLY = 300
"""Characters of a reply decisions.jsonl keeps: the whole reply is stored once, in the ledger
(`lvu build show OUT ID --prompts`), and in removed.jsonl for a removed question's evidence."""


def _short_vote(vote: dict[str, Any]) -> dict[str, Any]:
    model, reply = vote["model"], vote["reply"]
    if len(reply) > SHORT_REPLY:
        reply = f"{reply[:SHORT_REPLY]}… ({len(reply)} characters; the whole reply: lvu build show)"
    return {"model": model.get("model") or model.get("backend"), "seed": vote["seed"], "reply": reply,
            "ranking": vote["ranking"], "correct": vote["correct"]}


def write_outputs(outcome: FilterOutcome, out: str | Path) -> dict[str, Path]:
    """Write kept.jsonl, removed.jsonl and decisions.jsonl into `out`; their paths by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"kept": write_samples(out / "kept.jsonl", [_absolute(s) for s in outcome.kept]),
             "removed": write_samples(out / "removed.jsonl", [_absolute(s) for s in outcome.removed_samples()])}
    status: dict[str, dict[str, Any]] = {}
    for c in outcome.checked:
        d = c.decision
        kind = "removed" if d.removed else "unchecked" if d.unchecked else "kept"
        reason = f"no decision: {len(d.unread)} of {len(d.votes)} replies named no option" if d.unchecked else d.reason
        status[c.sample.id] = {"status": kind, "rule": d.rule, "reason": reason,
                               "votes": [_short_vote(asdict(v)) for v in d.votes]}
    for s, why in outcome.skipped:
        status[s.id] = {"status": "skipped", "reason": why}
    for s, why in outcome.failed:
        status[s.id] = {"status": "failed", "reason": why}
    for chain in outcome.revision.chains if outcome.revision is not None else []:
        line, last = status[chain.id], chain.last
        line["status"] = {"waiting": "revising", "dropped": "removed"}.get(chain.status, chain.status)
        line["revision"] = {"status": chain.status, "round": chain.round, "reason": chain.why}
        if last.decision is not None and last.round:  # the votes on the revision the status is about
            line["reason"], line["votes"] = last.decision.reason, [_short_vote(asdict(v)) for v in last.decision.votes]
    lines = [json.dumps({"id": s.id, "labels": s.labels, **status[s.id]}, ensure_ascii=False)
             for s in outcome.samples if s.id in status]
    paths["decisions"] = out / "decisions.jsonl"
    tmp = out / f".decisions.jsonl.{os.getpid()}.tmp"
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, paths["decisions"])
    return paths


def source_benchmark(source: str, settings: dict[str, Any]) -> Benchmark:
    """The benchmark to filter: a registered name (with --data...), or a JSONL file of samples."""
    from lvu.runs.grading import make_benchmark

    if source.endswith(".jsonl") or Path(source).is_file():
        if settings.get("data"):
            raise LvuError(f"{source} is a sample file: pass it alone, without --data")
        return make_benchmark("jsonl", {**settings, "data": source})
    return make_benchmark(source, settings)

