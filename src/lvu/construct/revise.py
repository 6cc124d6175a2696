"""Video-MME's revise-and-recheck loop around a blind filter (`lvu build filter --revise`;
docs/build.md, "Revising flagged questions").

Video-MME (Sec. 3.2) returns a question its text-only model answers "to the original annotators for
revision", then checks it again. Here a flagged question goes into a revision queue,
OUT/revision/questions.jsonl, that people open with `lvu review OUT/revision --protocol
videomme-revise`; the same filter command, run again, reads their decisions
(lvu.web.review_export.reviewed_samples) and moves every question on:

- accepted with a changed question, options or answer: the revision is filtered again — a new unit
  of the same `blind.decide` stage, keyed by its content — kept (kept.jsonl, its history under
  `extra.revision`), or flagged again: back in the queue for the next round;
- rejected: dropped with the reviewer's reason (removed.jsonl);
- flagged after `max_rounds` revisions: dropped;
- accepted unchanged (or changed into something the filter cannot check): not a revision; it
  waits in the queue with a note.

Every step is on the build store's ledger: the filter's decisions as `blind.decide` units, and each
reviewer decision lvu acted on as one item of a `build-revision` job (per queue file), keyed by the
question's id, round and content. Where a question stands is worked out again on every run from
those two and the queue's current reviews, so kill -9 at any point, or the same command run twice,
gives the same files and asks no model twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.construct.blind import Decision
from lvu.construct.blind_rules import FilterSettings
from lvu.construct.filter_files import EVIDENCE_KEY, FilterOutcome, checkable
from lvu.construct.filtering import PIPELINE, BlindFilter, decide_samples, pipeline_options
from lvu.construct.pipeline import STAGES, Item
from lvu.errors import LvuError
from lvu.types import Sample

if TYPE_CHECKING:
    from lvu.construct.runner import BuildState
    from lvu.models.base import Model

REVISION_DIR = "revision"
QUEUE_FILE = "questions.jsonl"
REVISION_KEY = "revision"
"""Where a revised question keeps its history: sample.extra[REVISION_KEY]."""
REVIEW_PROTOCOL = "videomme-revise"
DEFAULT_MAX_ROUNDS = 3
"""Video-MME gives no bound. Three rewrites let an annotator try a couple of wordings; a question a
model still answers blind after three is most likely answerable by its nature (the answer is
common knowledge), not by its wording — and the loop must end."""
LOG_KIND = "build-revision"

Reviews = Callable[[Path], "tuple[dict[str, dict[str, Any]], dict[str, str]]"]
"""A queue file -> (accepted records by id, edits applied; rejection reasons by id). The CLI passes
the review app's reader (lvu.cli.build_filter.review_app_reviews): construct sits below web."""


def qa_digest(sample: Sample) -> str:
    """What the filter decides on — question, options, answer — as a short hash."""
    text = json.dumps([sample.question, list(sample.options), sample.answer], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def version_item_id(sample: Sample) -> str:
    """A revision's item in the blind.decide stage: the question's id and its content."""
    return f"{sample.id}@rev-{qa_digest(sample)}"


@dataclass(frozen=True)
class Review:
    """One reviewer decision lvu acted on."""

    status: str
    """accepted | rejected"""
    reason: str = ""
    record: dict[str, Any] | None = None
    """The revised question (accepted)."""


@dataclass
class Version:
    """One version of a flagged question: 0 as loaded, k its k-th revision."""

    sample: Sample
    round: int
    decision: Decision | None
    review: Review | None = None
    """The review of this version, once it was sent for revision and decided."""


@dataclass
class Chain:
    """One flagged question's way through revision."""

    versions: list[Version]
    status: str = "waiting"
    """waiting (in the queue) | kept | dropped | failed (a revision's model call failed: next run)"""
    why: str = ""
    by_reviewer: bool = False

    @property
    def id(self) -> str:
        return self.versions[0].sample.id

    @property
    def last(self) -> Version:
        return self.versions[-1]

    @property
    def round(self) -> int:
        """The round the question is in, or ended in: round k reviews the version the filter
        flagged k-th (0: as loaded) and filters its revision, revision k."""
        return len(self.versions) - (0 if self.status == "waiting" or self.by_reviewer else 1)

    def history(self) -> list[dict[str, Any]]:
        return [{"round": v.round, "question": v.sample.question, "options": list(v.sample.options),
                 "answer": v.sample.answer,
                 "filter": None if v.decision is None else "flagged" if v.decision.removed else "kept",
                 "reason": None if v.decision is None else v.decision.reason,
                 "review": None if v.review is None else {"status": v.review.status, "reason": v.review.reason}}
                for v in self.versions]

    def final_sample(self) -> Sample:
        """The last version, with its history (and, flagged, the filter's evidence) in extra."""
        sample = self.last.sample.model_copy(deep=True)
        sample.extra[REVISION_KEY] = {"status": self.status, "round": self.round, "reason": self.why,
                                      "history": self.history()}
        if self.last.decision is not None and self.last.decision.removed:
            sample.extra[EVIDENCE_KEY] = self.last.decision.to_json()
        return sample


@dataclass
class RevisionOutcome:
    """Where every question the first pass flagged stands."""

    chains: list[Chain]
    max_rounds: int
    queue: Path
    notes: list[str] = field(default_factory=list)
    """Reviews that are no revision (accepted unchanged, not checkable), a line each."""
    calls: int = 0
    interrupted: bool = False
    stopped: str | None = None

    def having(self, status: str) -> list[Chain]:
        return [c for c in self.chains if c.status == status]

    def kept_versions(self) -> dict[str, Sample]:
        return {c.id: c.final_sample() for c in self.having("kept")}

    def counts(self) -> dict[str, Any]:
        dropped = self.having("dropped")
        waiting: dict[str, int] = {}
        for c in self.having("waiting"):
            waiting[str(c.round)] = waiting.get(str(c.round), 0) + 1
        return {"max_rounds": self.max_rounds, "flagged": len(self.chains),
                "revised": sum(len(c.versions) > 1 for c in self.chains),
                "revisions_checked": sum(1 for c in self.chains for v in c.versions[1:] if v.decision is not None),
                "kept_after_revision": len(self.having("kept")),
                "dropped_by_reviewer": sum(c.by_reviewer for c in dropped),
                "dropped_after_max_rounds": sum(not c.by_reviewer for c in dropped),
                "waiting": len(self.having("waiting")), "waiting_by_round": dict(sorted(waiting.items())),
                "undecided": len(self.having("failed")), "queue": str(self.queue)}


class ReviewLog:
    """The reviewer decisions lvu acted on, on the ledger: one job per queue file, one item per
    (question id, round, content of the version reviewed). A step on it is final."""

    def __init__(self, store_dir: Path, queue: Path) -> None:
        from lvu.runs.ledger import JobLedger

        self.ledger = JobLedger(store_dir)
        self.job = self.ledger.open_job(LOG_KIND, {"pipeline": PIPELINE, "queue": str(queue.resolve())}, "")

    def close(self) -> None:
        self.ledger.close()

    @staticmethod
    def key(version: Version, round: int) -> str:
        from lvu.runs.ledger import item_key

        return item_key(LOG_KIND, version.sample.id, round, qa_digest(version.sample))

    def get(self, version: Version, round: int) -> Review | None:
        key = self.key(version, round)
        entry = next(iter(self.ledger.entries_for(self.job, [key])), None)
        return None if entry is None else Review(**entry.result)

    def record(self, version: Version, round: int, review: Review) -> None:
        self.ledger.commit(self.job, self.key(version, round), ordinal=round,
                           result={"status": review.status, "reason": review.reason, "record": review.record})


def queued_reviews(queue: Path, reviews: Reviews, notes: list[str]) -> dict[tuple[str, int, str], Review]:
    """The decided reviews of the queue's questions, by (id, round, content of the version sent).
    An acceptance that changes nothing the filter reads, or makes the question uncheckable, is not a
    revision: left out, with a note."""
    from lvu.benchmarks.jsonl import read_samples

    if not queue.is_file():
        return {}
    sent, _ = read_samples(queue)
    if not sent:
        return {}
    accepted, rejected = reviews(queue)
    out: dict[tuple[str, int, str], Review] = {}
    for s in sent:
        where = (s.id, int((s.extra.get(REVISION_KEY) or {}).get("round", 1)), qa_digest(s))
        if s.id in rejected:
            out[where] = Review("rejected", rejected[s.id] or "no reason given")
        elif s.id in accepted:
            revised = revised_sample(accepted[s.id], queue.parent)
            if isinstance(revised, str):
                notes.append(f"{s.id}: {revised}")
            elif qa_digest(revised) == where[2]:
                notes.append(f"{s.id}: accepted without a change to its question, options or answer — the filter "
                             "would flag it again: revise it, or reject it")
            else:
                out[where] = Review("accepted", "", revised.model_dump(mode="json"))
    return out


def revised_sample(record: dict[str, Any], base: Path) -> Sample | str:
    """The accepted record as a Sample (media paths relative to the queue's folder made absolute),
    without the previous version's history and evidence; or why it cannot be checked."""
    try:
        sample = Sample.model_validate(record)
    except ValueError as e:
        return f"the revision is not a valid question ({str(e).splitlines()[0]}) — fix it in the review app"
    sample.video.path = os.path.join(base, sample.video.path)
    if sample.subtitles is not None:
        sample.subtitles.path = os.path.join(base, sample.subtitles.path)
    for key in (REVISION_KEY, EVIDENCE_KEY):
        sample.extra.pop(key, None)
    if (why := checkable(sample)) is not None:
        return f"the revision cannot be checked ({why}) — give it options and the answer's index"
    return sample


def advance(chain: Chain, log: ReviewLog, queued: dict[tuple[str, int, str], Review], max_rounds: int,
            decided: dict[str, Decision], failed: dict[str, str]) -> Sample | None:
    """Walk `chain` as far as the ledger and the reviews take it; the revision still to be
    filtered, if that is where it stops."""
    while chain.status == "waiting":
        last = chain.last
        if last.decision is None:  # a revision: filtered again
            item = version_item_id(last.sample)
            if item in failed:
                chain.status, chain.why = "failed", failed[item]
                return None
            if item not in decided:
                return last.sample
            last.decision = decided[item]
        if not last.decision.removed:
            chain.status, chain.why = "kept", f"kept after {last.round} revision(s)"
            return None
        round = last.round + 1
        if round > max_rounds:
            chain.status, chain.why = "dropped", f"still answered without the video after {max_rounds} revision(s)"
            return None
        review = log.get(last, round)
        if review is None and (review := queued.get((last.sample.id, round, qa_digest(last.sample)))) is not None:
            log.record(last, round, review)
        if review is None:  # waiting for its reviser
            chain.why = f"waiting for its revision in round {round}"
            return None
        last.review = review
        if review.status == "rejected":
            chain.status, chain.why, chain.by_reviewer = "dropped", f"rejected by the reviewer: {review.reason}", True
            return None
        chain.versions.append(Version(Sample.model_validate(review.record), round, None))
    return None


async def revise_flagged(outcome: FilterOutcome, models: list[Model], settings: FilterSettings, out: Path, *,
                         max_rounds: int = DEFAULT_MAX_ROUNDS, reviews: Reviews, concurrency: int = 8,
                         fresh: bool = False, show_progress: bool = True) -> RevisionOutcome:
    """Move every question the first pass flagged on (module docstring); filters the revisions
    that need it with `models`, on the ledger in outcome.results_dir."""

    if max_rounds < 1:
        raise LvuError(f"--max-rounds {max_rounds} — give at least 1 round of revision (default {DEFAULT_MAX_ROUNDS})")
    queue = Path(out) / REVISION_DIR / QUEUE_FILE
    result = RevisionOutcome([Chain([Version(c.sample, 0, c.decision)]) for c in outcome.removed], max_rounds, queue)
    queued = queued_reviews(queue, reviews, result.notes)
    decided: dict[str, Decision] = {}
    failed: dict[str, str] = {}
    log = ReviewLog(outcome.results_dir, queue)
    try:
        while True:
            todo = [s for c in result.chains if (s := advance(c, log, queued, max_rounds, decided, failed)) is not None]
            if not todo:
                return result
            state, got, errors = await decide_revisions(todo, models, settings,
                                                        results_dir=outcome.results_dir, concurrency=concurrency,
                                                        fresh=fresh, show_progress=show_progress)
            result.calls += state.stages[0].ran_calls
            if state.interrupted or state.stopped:
                result.interrupted, result.stopped = state.interrupted and not state.stopped, state.stopped
                return result
            decided.update(got)
            failed.update(errors)
    finally:
        log.close()


def write_queue(revision: RevisionOutcome) -> Path | None:
    """OUT/revision/questions.jsonl: the questions waiting for revision, each with its round,
    history and the filter's evidence (atomically); None when there is none and never was."""
    from lvu.benchmarks.jsonl import write_samples

    waiting = [c.final_sample() for c in revision.having("waiting")]
    if not waiting and not revision.queue.exists():
        return None
    return write_samples(revision.queue, waiting)  # an emptied queue stays, empty: its review file is beside it


async def decide_revisions(samples: Sequence[Sample], models: list[Model], settings: FilterSettings, *,
                           results_dir: Path, concurrency: int = 8, fresh: bool = False,
                           show_progress: bool = True) -> tuple[BuildState, dict[str, Decision], dict[str, str]]:
    """Decide revised questions  in the blind-filter's own job, each as an item
    named by its id and content (version_item_id), so a revision is never confused with the
    question it revises and the same revision is never asked twice; (state, decisions, errors) by
    item id."""
    ids = [version_item_id(s) for s in samples]
    stages = BlindFilter(pipeline_options(settings, len(models))).stages()
    items = [Item(i, s.video.path, s.model_dump(mode="json")) for i, s in zip(ids, samples)]
    state, _, _ = await decide_samples(PIPELINE, stages, samples, models, results_dir=results_dir, items=items,
                                       concurrency=concurrency, fresh=fresh, show_progress=show_progress)
    decided = state.outputs.get(STAGES.get(state.stages[0].name).output_name(), {})
    views = state.units.get(state.stages[0].name, {})
    decisions = {i: Decision.from_json(decided[i]) for i in ids if i in decided}
    errors = {}
    for i in ids:
        entry = next((v.entry for v in views.get(i, []) if v.entry is not None), None)
        if i not in decided and entry is not None and entry.error:
            errors[i] = entry.error
    return state, decisions, errors
