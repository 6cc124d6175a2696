"""Neptune's two hard subsets, made from a build the way the paper made them (Sec. 5.1; the Fig. 9
caption agrees, App. C.4 swaps the names — research/seed_neptune.md §2.3):

- MMA (multimodal, automatic): questions the ASR filter (the QAD filter with the video's transcript
  as context) does not remove and the QAD filter does not remove;
- MMH (multimodal, human): questions whose raters' required modality is not `audio-only`, and that
  the QAD filter — repeated after the raters' corrections — does not remove.

Both filters are `lvu build filter`'s neptune-qad rule (lvu.construct.filtering's `Decide` stage: 3
seeds, removed at >= 2, every vote kept), the two stages of one pipeline on the build store in the
source folder (its lvu.sqlite): resumable, a question decided once is never asked again. The subsets are written as `neptune_mma.json` /
`neptune_mmh.json` beside the source's `neptune_full.json` records, the release's layout, so
`lvu run -b neptune --data DIR --set subset=mma` runs one and a full run reports both columns.
The source is a build's folder, or a `lvu review export` folder (it carries the raters' modality
labels and corrected answers); MMH needs those labels and is skipped, with the reason, without them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.construct.filtering import Decide, FilterOutcome, decide_samples, outcome_of
from lvu.construct.pipeline import register_stage
from lvu.construct.review_labels import MODALITY_LABEL
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.models.base import Model

FULL_FILE = "neptune_full.json"


@dataclass
class SubsetsOutcome:
    """What `build_subsets` decided and wrote."""

    n_full: int
    qad_removed: list[str]
    asr_removed: list[str]
    mma: list[str]
    mmh: list[str] | None
    """None: not built (`mmh_skipped` says why)."""
    mmh_skipped: str | None = None
    audio_only: list[str] = field(default_factory=list)
    written: dict[str, Path] = field(default_factory=dict)
    calls: int = 0
    undecided: list[str] = field(default_factory=list)
    """Questions a filter could not decide (a failed call): in neither subset; run again to retry."""
    interrupted: bool = False


def read_full(source: Path) -> list[dict[str, Any]]:
    """The source folder's neptune_full.json records (a list of objects)."""
    path = source / FULL_FILE
    if not path.is_file():
        raise LvuError(f"{source}: no {FULL_FILE} — pass a `lvu build neptune` output folder or a "
                       "`lvu review export` folder")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LvuError(f"{path}: cannot be read as JSON ({e}) — rebuild it with `lvu build neptune`") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) and r.get("key") for r in records):
        raise LvuError(f"{path}: not a list of Neptune records with a `key` each — rebuild it with `lvu build neptune`")
    return records


def modality_of(record: dict[str, Any]) -> str | None:
    value = record.get(MODALITY_LABEL)
    return str(value) if value else None


async def build_subsets(source: str | Path, models: list[Model], *, seeds: int = 3, threshold: int = 2,
                        concurrency: int = 8, show_progress: bool = True) -> SubsetsOutcome:
    """Run the QAD and ASR filters over `source`'s full set and write the MMA (and, with the raters'
    modality labels, MMH) files beside its neptune_full.json."""
    from lvu.construct.store import build_lock

    source = Path(source).expanduser().resolve()
    read_full(source)  # a folder without neptune_full.json is refused before a lock file is made there
    with build_lock(source):
        return await _build_subsets(source, models, seeds=seeds, threshold=threshold, concurrency=concurrency,
                                    show_progress=show_progress)


async def _build_subsets(source: Path, models: list[Model], *, seeds: int, threshold: int, concurrency: int,
                         show_progress: bool) -> SubsetsOutcome:
    from lvu.runs.grading import make_benchmark

    records = read_full(source)
    # subtitles on: each sample carries its asr/<video>.srt, the ASR filter's transcript
    bench = make_benchmark("neptune", {"data": str(source), "subset": "full", "subtitles": "all"})
    samples, bad = bench.loaded()
    if bad:
        raise LvuError(f"{source / FULL_FILE}: {len(bad)} record(s) cannot be read, e.g. {bad[0].error}")
    if not samples:
        raise LvuError(f"{source / FULL_FILE}: no questions — nothing to filter")
    stages = subset_stages(seeds, threshold)
    state, job, store_dir = await decide_samples(SUBSETS, stages, samples, models, results_dir=source,
                                                 concurrency=concurrency, show_progress=show_progress)
    qad, asr = (outcome_of(state, samples, stage.filter, [], job_id=job, results_dir=store_dir, stage_index=i)
                for i, stage in enumerate(stages))
    outcome = SubsetsOutcome(n_full=len(samples), qad_removed=_removed(qad), asr_removed=_removed(asr), mma=[],
                             mmh=None, calls=sum(s.ran_calls for s in state.stages),
                             interrupted=state.interrupted or state.stopped is not None)
    if outcome.interrupted:
        return outcome
    undecided = {s.id for s, _ in qad.failed} | {s.id for s, _ in asr.failed}
    outcome.undecided = sorted(undecided)
    keys = [str(r["key"]) for r in records]
    # A sample's id is its record's key (neptune_release.record_to_sample): match on it.
    ids = {s.id for s in samples}
    if set(keys) != ids:
        raise LvuError(f"{source / FULL_FILE}: keys and loaded questions differ — rebuild it with `lvu build neptune`")
    qad_out, asr_out = set(outcome.qad_removed), set(outcome.asr_removed)
    outcome.mma = [k for k in keys if k not in qad_out | asr_out | undecided]
    labelled = [r for r in records if modality_of(r)]
    if not labelled:
        outcome.mmh_skipped = ("no rater modality labels (`modality`) in the source — verify the questions with "
                               "`lvu review` and pass its export folder")
    else:
        outcome.audio_only = [str(r["key"]) for r in labelled if modality_of(r) == "audio-only"]
        unlabelled = len(records) - len(labelled)
        outcome.mmh = [str(r["key"]) for r in records if modality_of(r) and modality_of(r) != "audio-only"
                       and str(r["key"]) not in qad_out | undecided]
        if unlabelled:
            outcome.mmh_skipped = f"{unlabelled} question(s) without a rater modality label are left out of MMH"
    by_key = {str(r["key"]): r for r in records}
    outcome.written["mma"] = _write(source / "neptune_mma.json", [by_key[k] for k in outcome.mma])
    if outcome.mmh is not None:
        outcome.written["mmh"] = _write(source / "neptune_mmh.json", [by_key[k] for k in outcome.mmh])
    return outcome


SUBSETS = "neptune-subsets"


@register_stage("subsets.qad-filter")
class QadFilter(Decide):
    """Neptune's QAD filter over the full set (the question and its five options, no video)."""

    output = "qad"


@register_stage("subsets.asr-filter")
class AsrFilter(Decide):
    """Neptune's ASR filter: the QAD filter with the video's transcript as context."""

    output = "asr"


def subset_stages(seeds: int, threshold: int) -> list[Decide]:
    """The two filters MMA and MMH are made from (one pipeline of two stages on the build store)."""
    base = {"rule": "neptune-qad", "seeds": seeds, "threshold": threshold}
    return [QadFilter({**base, "asr": False}), AsrFilter({**base, "asr": True})]


def _removed(outcome: FilterOutcome) -> list[str]:
    return [c.sample.id for c in outcome.removed]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    """Atomically (a killed build never leaves half a file)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
