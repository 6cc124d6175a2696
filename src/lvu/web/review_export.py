"""`lvu review export OUT -o FINAL`: the verified benchmark, from the stored decisions.

Each question's outcome is `final_decision` (the examiner's decision, else the raters' majority
over their latest submitted versions). FINAL gets:
- `benchmark.jsonl`: the accepted questions as lvu JSONL — the answer (as corrected), the chosen
  decoys as options (shuffled by a seed from the question id: Neptune's rule), the modality in
  `labels.modality`, where the decision came from in `extra.review`; `lvu run -b jsonl` runs it;
- `neptune_full.json`: the accepted 5-way questions in Neptune's released schema (key, video_id,
  question, answer, answer_choice_0..4, answer_id, "question type") plus `modality`; with
  `videos/` and `asr/` beside it `lvu run -b neptune --data FINAL` runs it;
- `mmh_candidates.jsonl`: the accepted questions raters did not mark audio-only (Neptune-MMH's
  rater test; MMH = these after `lvu build filter --rule neptune-qad`);
- `decisions.jsonl`: every question's outcome and the decisions counted (accepted, rejected,
  unresolved with why, incomplete);
- `versions.jsonl`: the whole audit trail, every version ever saved;
- `videos/`, `asr/`: links to the videos and transcripts (copies where links are impossible);
- `export.json`: which review this folder is the export of.

FINAL is written only when it is new, empty, or an earlier export of the same review, and never
when it holds any of the review's own inputs (the questions, the decisions, the media): an export
replaces files of its own kind and nothing else. Every name taken from the data (a video id, a
file name) must be a plain file name, and every path written or unlinked resolves inside FINAL.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.benchmarks.jsonl import write_samples
from lvu.benchmarks.neptune_release import _shuffled as shuffled_options  # Neptune's seeded option order
from lvu.construct.review_labels import MODALITY_LABEL, REFERENCE_FIELD, REVIEW_FIELD, mmh_candidates
from lvu.errors import LvuError
from lvu.paths import inside
from lvu.types import Sample, SubtitleRef, VideoRef
from lvu.web.review_chain import REFERRED_MOMENTS_FIELD, REFERRING_QUERY_FIELD, ChainOutcome, chain_outcome
from lvu.web.review_data import ReviewItem, ReviewSource, default_db, load_source, video_id
from lvu.web.review_protocols import ReviewProtocol
from lvu.web.review_rules import Final, agreement, final_decision
from lvu.web.review_store import EXAMINER, RATERS, ReviewStore


def outcomes(source: ReviewSource, store: ReviewStore, min_ratings: int | None = None) -> list[tuple[ReviewItem, Final]]:
    """Every question with its outcome; `min_ratings` (default: raters per question) submitted
    decisions are needed before a majority counts."""
    digests = {i.id: i.digest for i in source.items}
    rated = store.latest(RATERS, digests, submitted=True)
    examined = store.latest(EXAMINER, digests, submitted=True)
    need = min_ratings if min_ratings is not None else store.per_question()
    out = []
    for item in source.items:
        examiner = max(examined.get(item.id, {}).values(), key=lambda v: v.created, default=None)
        out.append((item, final_decision(item, rated.get(item.id, {}).values(), examiner, need)))
    return out


def agreement_of(source: ReviewSource, store: ReviewStore) -> list[dict[str, Any]]:
    """Agreement per field (lvu.web.review_rules.agreement) over the raters' latest submitted decisions."""
    digests = {i.id: i.digest for i in source.items}
    by_id = source.by_id()
    rated = store.latest(RATERS, digests, submitted=True)
    return agreement((by_id[sid], [v.decision for v in per.values()]) for sid, per in rated.items() if sid in by_id)


def _link(source: str, target: Path, links: dict[Path, str]) -> Path:
    """`target` pointing at `source` (a copy where links are impossible); one source per name."""
    if links.setdefault(target, source) != source:
        raise LvuError(f"{target.name}: two different files have this name ({links[target]} and {source}) — "
                       "rename one so FINAL/videos can hold both")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():  # an earlier export's link (target is inside FINAL)
        target.unlink()
    try:
        target.symlink_to(os.path.abspath(source))
    except OSError:
        shutil.copy2(source, target)
    return target


def media_targets(item: ReviewItem, out: Path) -> tuple[Path, Path | None]:
    """Where FINAL holds the question's video and transcript (checked: plain names, inside `out`)."""
    what = f"question {item.id}"
    video = inside(out, "videos", Path(item.sample.video.path).name, what=what)
    subs = item.sample.subtitles
    if subs is None or not os.path.isfile(subs.path):
        return video, None
    name = f"{video_id(item.sample)}{Path(subs.path).suffix}"
    return video, inside(out, "asr", name, what=f"{what} (extra.video_id)")


def decided_sample(item: ReviewItem, final: Final) -> Sample:
    """The question as a Neptune-rule decision leaves it (its media where the question file has them)."""
    sample = item.sample.model_copy(deep=True)
    if item.decoys:
        sample.options, sample.answer = shuffled_options(final.answer, final.decoys, item.id)
    else:
        sample.answer = final.answer
    sample.labels[MODALITY_LABEL] = final.modality or ""
    sample.extra[REFERENCE_FIELD] = final.answer
    sample.extra[REVIEW_FIELD] = {"source": final.source, "raters": final.raters}
    return sample


def linked(item: ReviewItem, sample: Sample, out: Path, links: dict[Path, str]) -> Sample:
    """`sample` with its video and transcript linked under `out`."""
    video_target, asr_target = media_targets(item, out)
    video = _link(item.sample.video.path, video_target, links)
    sample.video = VideoRef(path=str(video), duration=item.sample.video.duration)
    subs = item.sample.subtitles
    if subs is not None and asr_target is not None:
        asr = _link(subs.path, asr_target, links)
        sample.subtitles = SubtitleRef(path=str(asr), offset=subs.offset)
    return sample


def neptune_record(item: ReviewItem, final: Final, sample: Sample) -> dict[str, Any]:
    """Neptune's released schema (neptune_release.record_to_sample reads it) plus the modality and,
    as `lvu build neptune` writes them, `mcq_decoys` (the chosen ones' places among the decoys the
    raters saw) and `written_decoys` (the ones raters wrote)."""
    record = {"key": item.id, "video_id": video_id(sample), "question": sample.question,
              "answer": sample.extra[REFERENCE_FIELD],
              **{f"answer_choice_{i}": o for i, o in enumerate(sample.options)}, "answer_id": sample.answer,
              "question type": sample.labels.get("question_type") or "Other",
              MODALITY_LABEL: sample.labels[MODALITY_LABEL], "video_path": Path(sample.video.path).name}
    for name in ("capability", "decoys_6", "qad_filter"):  # a Neptune build's own fields travel on
        if name in item.sample.extra:
            record[name] = item.sample.extra[name]
    record["mcq_decoys"] = [item.decoys.index(d) for d in final.decoys if d in item.decoys]
    record["written_decoys"] = [d for d in final.decoys if d not in item.decoys]
    record[REVIEW_FIELD] = sample.extra[REVIEW_FIELD]
    return record


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


EXPORT_RECORD = "export.json"


def check_target(source: ReviewSource, store: ReviewStore, out: Path) -> tuple[int, str] | None:
    """Refuse a FINAL that holds the review's inputs, or files no export of this review wrote;
    the decision-log head an earlier export into it verified, if any."""
    inputs = [source.path, Path(store.path)] + [Path(p) for i in source.items
                                                for p in (i.sample.video.path, i.sample.subtitles and i.sample.subtitles.path)
                                                if p]
    for path in inputs:
        if Path(os.path.abspath(path)).is_relative_to(out) or path.resolve().is_relative_to(out):
            raise LvuError(f"{out}: holds the review's own input {path} — export to a new folder, "
                           f"e.g. -o {out.name}-final")
    if not out.is_dir() or not any(out.iterdir()):
        return None
    record = out / EXPORT_RECORD
    try:
        earlier = json.loads(record.read_text())
        recorded, head = earlier.get("source"), earlier.get("log", {}).get("head")
    except (OSError, ValueError, AttributeError):
        raise LvuError(f"{out}: not empty and not an export of a review (no readable {EXPORT_RECORD}) — "
                       "export to a new or empty folder") from None
    if recorded != str(source.path.resolve()):
        raise LvuError(f"{out}: holds the export of another review ({recorded}) — export to a new folder, "
                       "or delete that one first")
    return (int(head[0]), str(head[1])) if isinstance(head, list) and len(head) == 2 else None


def export(source: ReviewSource, store: ReviewStore, out: str | Path, *, min_ratings: int | None = None) -> dict[str, Any]:
    """Write FINAL (module docstring); the counts and paths for the closing lines."""
    out = Path(out).resolve()  # media paths in benchmark.jsonl are then written relative to it
    earlier_head = check_target(source, store, out)
    log = store.verify_log(earlier_head)
    protocol = store.protocol()
    chain = reviewed(source, store, protocol) if protocol.rule == "chain" else []
    decided = [] if chain else outcomes(source, store, min_ratings)
    for item, final in decided:  # every name checked before anything is written
        if final.status == "accepted":
            media_targets(item, out)
    for r in chain:
        if r.status == "accepted":
            media_targets(r.item, out)
    out.mkdir(parents=True, exist_ok=True)
    record = {"source": str(source.path.resolve()), "decisions": str(Path(store.path).resolve()),
              "log": {"head": list(earlier_head) if earlier_head else None, "broken": log.broken}}
    if chain:
        record["protocol"] = {"name": protocol.name, "digest": protocol.digest()}
    _write(out / EXPORT_RECORD, json.dumps(record, indent=1) + "\n")  # first: a killed export is still ours
    links: dict[Path, str] = {}
    samples, neptune, lines = [], [], []
    for item, final in decided:
        lines.append({"id": item.id, "status": final.status, "source": final.source, "why": final.why,
                      "answer": final.answer, "modality": final.modality, "decoys": final.decoys,
                      "reasons": final.reasons, "raters": final.raters})
        if final.status != "accepted":
            continue
        sample = linked(item, decided_sample(item, final), out, links)
        samples.append(sample)
        if len(sample.options) == 5:
            neptune.append(neptune_record(item, final, sample))
    released: dict[str, Any] = {}
    if chain:
        from lvu.web.review_release import write_release

        for r in chain:
            lines.append({"id": r.item.id, "status": r.status, "why": r.why, "reason": r.reason,
                          "raters": r.sample.extra[REVIEW_FIELD]["raters"] if r.sample else {}})
        samples = [linked(r.item, r.sample, out, links) for r in chain if r.sample is not None]
        write_samples(out / "benchmark.jsonl", samples)
        released = write_release(protocol, out, samples)
    else:
        write_samples(out / "benchmark.jsonl", samples)
        write_samples(out / "mmh_candidates.jsonl", mmh_candidates(samples))
        _write(out / "neptune_full.json", json.dumps(neptune, indent=1, ensure_ascii=False) + "\n")
    from lvu.construct.runner import audit_benchmark

    warnings: list[str] = []  # the verified benchmark is audited like every build (options-only leaks)
    audit_benchmark(out / "benchmark.jsonl", out, say=warnings.append)
    _write(out / "decisions.jsonl", "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    versions = store.versions()
    _write(out / "versions.jsonl", "".join(json.dumps(v.to_json(), ensure_ascii=False) + "\n" for v in versions))
    if log.broken is None:  # a broken log never moves the verified head: later exports keep reporting it
        record["log"] = {"rows": log.rows, "head": list(log.head), "broken": None, "unchained": log.unchained}
    _write(out / EXPORT_RECORD, json.dumps(record, indent=1) + "\n")
    counts = Counter(x["status"] for x in lines)
    return {"log": log, **{k: counts.get(k, 0) for k in ("accepted", "rejected", "unresolved", "incomplete", "pending")},
            "neptune schema": len(neptune), "versions": len(versions), "out": str(out), "protocol": protocol.name,
            "release": released, "leak_warnings": warnings}


# ---- any protocol: the reviewed questions as lvu samples ------------------------------------------------


def chain_outcomes(source: ReviewSource, store: ReviewStore, protocol: ReviewProtocol) -> list[tuple[ReviewItem, ChainOutcome]]:
    """A chain protocol's outcome per question (lvu.web.review_chain.chain_outcome)."""
    digests = {i.id: i.digest for i in source.items}
    rounds = {n: store.latest(n, digests, submitted=True) for n in range(1, len(protocol.roles) + 1)}
    out = []
    for item in source.items:
        latest = {n: max(per[item.id].values(), key=lambda v: (v.created, v.version))
                  for n, per in rounds.items() if per.get(item.id)}
        out.append((item, chain_outcome(item, protocol, latest)))
    return out


def chain_sample(item: ReviewItem, outcome: ChainOutcome, protocol: ReviewProtocol) -> Sample:
    """The question as a chain's decisions leave it: question, options, answer, category (and its
    level), the referring query and the referred moments."""
    a = outcome.annotation
    sample = item.sample.model_copy(deep=True)
    sample.question, sample.options, sample.answer = a.question, list(a.options), a.answer_index()
    if a.category:
        sample.labels[protocol.category_label] = a.category
        if a.category in protocol.levels:
            sample.labels["level"] = protocol.levels[a.category]
    if REFERENCE_FIELD in sample.extra or not a.options:
        sample.extra[REFERENCE_FIELD] = a.answer
    if a.referring_query is not None:
        sample.extra[REFERRING_QUERY_FIELD] = list(a.referring_query)
        sample.extra["question_wo_referring_query"] = a.without_query()
    if a.referred_moments:
        sample.extra[REFERRED_MOMENTS_FIELD] = [list(m) for m in a.referred_moments]
    sample.extra[REVIEW_FIELD] = {"protocol": protocol.name, "source": list(outcome.by)[-1] if outcome.by else "",
                                  "raters": outcome.counted()}
    return sample


@dataclass(frozen=True)
class Reviewed:
    """One question's outcome under any protocol: `sample` when accepted, `reason` when rejected,
    `why` it waits otherwise."""

    item: ReviewItem
    status: str
    """accepted, rejected or pending."""
    sample: Sample | None = None
    reason: str = ""
    why: str = ""


def reviewed(source: ReviewSource, store: ReviewStore, protocol: ReviewProtocol,
             min_ratings: int | None = None) -> list[Reviewed]:
    """Every question's outcome under the review's protocol."""
    out = []
    if protocol.rule == "majority":
        for item, final in outcomes(source, store, min_ratings):
            if final.status == "accepted":
                out.append(Reviewed(item, "accepted", decided_sample(item, final)))
            elif final.status == "rejected":
                out.append(Reviewed(item, "rejected", reason="; ".join(dict.fromkeys(r for r in final.reasons if r))))
            else:
                out.append(Reviewed(item, "pending", why=f"{final.status}: {final.why}" if final.why else final.status))
        return out
    for item, outcome in chain_outcomes(source, store, protocol):
        if outcome.status == "accepted":
            out.append(Reviewed(item, "accepted", chain_sample(item, outcome, protocol)))
        elif outcome.status == "rejected":
            out.append(Reviewed(item, "rejected", reason=outcome.reason))
        else:
            out.append(Reviewed(item, "pending", why=f"waiting for the {outcome.waiting}"))
    return out


@dataclass(frozen=True)
class ReviewedSamples:
    """What a review has decided so far (`reviewed_samples`)."""

    accepted: list[dict]
    """lvu JSONL records (docs/jsonl-format.md) with the reviewers' edits applied; ids unchanged."""
    rejected: dict[str, str]
    """id -> the reason given."""
    pending: list[str]
    """ids with no final decision yet."""


def reviewed_samples(question_file: str | Path, db: str | Path | None = None) -> ReviewedSamples:
    """The reviewed questions of `question_file` (a JSONL file, or a folder as `lvu review` takes)
    under the protocol stored in the review file `db` (default: `<file>.review.sqlite` beside it).
    Reads only: a review never started has every question pending, and no file is made. Media paths
    are absolute (as loaded)."""
    source = load_source(question_file)
    path = Path(db) if db is not None else default_db(question_file)
    if not path.is_file():
        return ReviewedSamples([], {}, [i.id for i in source.items])
    store = ReviewStore(path)
    accepted, rejected, pending = [], {}, []
    for r in reviewed(source, store, store.protocol()):
        if r.status == "accepted" and r.sample is not None:
            accepted.append(r.sample.model_dump(mode="json"))
        elif r.status == "rejected":
            rejected[r.item.id] = r.reason
        else:
            pending.append(r.item.id)
    return ReviewedSamples(accepted, rejected, pending)
