"""The fields rater review (`lvu review`, docs/review.md) reads from a built question and writes
back, named once here so the builders that make questions and the ones that read the raters'
labels (Neptune's MMH subset) agree with the review app.

Read from a sample (lvu JSONL, `extra`), all optional:
- `decoys_6` (a Neptune build's export) or `decoys`: the LLM decoys the raters choose from; without
  them a multiple-choice sample's wrong options are its decoys;
- `reference`: the answer text (else the correct option's text, or an open-ended answer);
- `dense_captions`: [{"start", "end", "text"}] (seconds) shown beside the video; `asr` the same for
  speech when the sample has no subtitle file (a subtitle file is read as the transcript);
- `evidence`: where the answer is: [start, end] (MLVU's), {"start", "end"}, seconds, or a list
  of those; the haystack's `needles` and `time` count too, and so do times written in the
  question or answer ("at 01:41").

Written by `lvu review export` into each accepted question:
- `labels[MODALITY_LABEL]`: the raters' required modality, one of MODALITIES (the Neptune-schema
  record's field of the same name);
- `extra[REVIEW_FIELD]`: where the decision came from (majority or examiner, raters, versions).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MODALITIES: tuple[str, ...] = ("audio+video", "video-only", "audio-only")
"""The paper's choices (§4.5): what a viewer needs to answer the question."""
MODALITY_LABEL = "modality"
DECOY_FIELDS: tuple[str, ...] = ("decoys_6", "decoys")
REFERENCE_FIELD = "reference"
DENSE_CAPTIONS_FIELD = "dense_captions"
ASR_FIELD = "asr"
EVIDENCE_FIELD = "evidence"
REVIEW_FIELD = "review"


def rater_modality(sample: Any) -> str | None:
    """The modality raters gave a reviewed sample (a Sample or a Neptune-schema record), or None."""
    labels = (sample.get("labels") or {}) if isinstance(sample, dict) else sample.labels
    value = labels.get(MODALITY_LABEL) if isinstance(labels, dict) else None
    if value is None and isinstance(sample, dict):
        value = sample.get(MODALITY_LABEL)
    return value if value in MODALITIES else None


def mmh_candidates(samples: Iterable[Any]) -> list[Any]:
    """Neptune-MMH's rater test (paper §5.1): the reviewed questions raters did not mark
    audio-only. MMH is these after the QAD filter (`lvu build filter --rule neptune-qad`).
    A sample without a rater modality is not a candidate (it was never reviewed)."""
    return [s for s in samples if rater_modality(s) not in (None, "audio-only")]
