"""Neptune's release formats, read into Samples (the protocol is in neptune.py).

Release layout (`--data DIR`): `neptune_full.json`, `neptune_mma.json`, `neptune_mmh.json` (the
names on the official GCS bucket), videos in `DIR/videos/<youtube id>.mp4` (or `--video-dir`),
optional transcripts in `DIR/asr/<youtube id>.srt|.vtt|.json` (or `--set asr_dir=`). A file:
`--data neptune_mma.json` (its name sets the subset). `--data hf:` (or no `--data` while
LVU_OFFLINE is unset) reads the lmms-eval copy HF_DATASET at the pinned HF_REVISION, its videos
from `$HF_HOME/neptune` (where lmms-eval unpacks them) unless `--video-dir` is given.

Records, both schemas, mapped by `record_to_sample` (hub rows too):
- repo README: key, video_id, question, answer (free form), answer_choice_0..4 (the five options,
  answer included), answer_id (0-4), "question type" (lmms-eval's copy: question_type, video_path);
- datasheet (paper Q8): video_id, url, question, answer, decoys (4). The options are the answer
  and the decoys shuffled by a seeded RNG (seed: sha256 of the id), the id `<video_id>/<n>` (n-th
  question of the video in file order, the repo's key shape) when a record has no `key`.
`video_id` may be a bare id or a YouTube URL. A record that cannot be read is a BadRecord naming
file, record number and the fix. With subset=full, sibling mma/mmh files label each question with
the subsets it belongs to (by `key`), so one full run also reports MMA and MMH like Table 3.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from lvu.benchmarks.base import BadRecord
from lvu.benchmarks.loading import (
    RecordError, collect_samples, hf_home, json_error, load_hub, read_text, use_hub,
)
from lvu.errors import DataError, LvuError
from lvu.types import Sample, SubtitleRef, VideoRef
from lvu.textlines import text_lines

SUBSETS = ("full", "mma", "mmh")
RELEASE_URL = "https://storage.mtls.cloud.google.com/neptunedata/neptune_{subset}.json"
HF_DATASET = "lmms-lab/GoogleDeepMind-NEPTUNE"
HF_REVISION = "7bdf8457b8f39ebdb6feab139a823a43c1f71778"
"""Last commit touching the full/mma/mmh parquet files; later commits only add video zips."""
VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".MP4", ".MKV")
ASR_EXTS = (".srt", ".vtt", ".json")


# ---- one record ----------------------------------------------------------------------------------


def youtube_id(value: str) -> str:
    """A bare YouTube id from an id or any watch / youtu.be / shorts / embed URL."""
    value = value.strip()
    if "/" not in value:
        return value
    url = urlparse(value if "://" in value else "https://" + value)
    if vid := parse_qs(url.query).get("v"):
        return vid[0]
    return url.path.rstrip("/").rsplit("/", 1)[-1]


def _shuffled(answer: str, decoys: list[str], key: str) -> tuple[list[str], int]:
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    order = list(range(len(decoys) + 1))
    random.Random(seed).shuffle(order)
    options = [([answer] + decoys)[i] for i in order]
    return options, order.index(0)


def _video_field(record: dict) -> Any:
    return record.get("video_id") or record.get("url") or Path(str(record.get("video_path") or "")).stem


def _text(record: dict, field: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{field!r} is missing or empty — every Neptune record needs a {field}")
    return value.strip()


def record_to_sample(record: Any, *, benchmark: str, ordinal: int, video_dir: Path,
                     asr_dir: Path | None) -> Sample:
    """One release record (either schema, or an lmms-eval hub row) as a Sample; RecordError if bad.
    `ordinal`: 1-based position of this question among its video's questions (ids without `key`)."""
    if not isinstance(record, dict):
        raise RecordError(f"a JSON {type(record).__name__}, not an object — records are objects")
    raw_video = _video_field(record)
    if not isinstance(raw_video, str) or not (vid := youtube_id(raw_video)):
        raise RecordError("no video_id (or url / video_path) — the record must name its YouTube video")
    key = str(record.get("key") or f"{vid}/{ordinal}")
    question = _text(record, "question")
    if all(f"answer_choice_{i}" in record for i in range(5)):
        options = [str(record[f"answer_choice_{i}"] or "").strip() for i in range(5)]
        if "" in options:
            raise RecordError(f"answer_choice_{options.index('')} is empty — all five options need text")
        answer = record.get("answer_id")
        if isinstance(answer, str) and answer.strip().isdigit():
            answer = int(answer)
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < 5:
            raise RecordError(f"answer_id {answer!r} is not 0-4 — it must index answer_choice_0..4")
        reference = record["answer"].strip() if isinstance(record.get("answer"), str) else options[answer]
    elif isinstance(record.get("decoys"), list):
        reference = _text(record, "answer")
        decoys = [str(d).strip() for d in record["decoys"]]
        if len(decoys) != 4:
            raise RecordError(f"{len(decoys)} decoys — Neptune questions have exactly 4")
        options, answer = _shuffled(reference, decoys, key)
    else:
        raise RecordError("no options — expected answer_choice_0..4 + answer_id (repo) or answer + decoys (datasheet)")
    qtype = record.get("question type", record.get("question_type"))
    hint = record.get("video_path")
    names = [Path(str(hint)), Path(Path(str(hint)).name)] if hint else []
    names += [Path(vid + ext) for ext in VIDEO_EXTS]
    video = next((video_dir / n for n in names if (video_dir / n).is_file()), video_dir / f"{vid}.mp4")
    subtitles = None
    if asr_dir is not None:
        asr = next((asr_dir / (vid + e) for e in ASR_EXTS if (asr_dir / (vid + e)).is_file()), asr_dir / f"{vid}.srt")
        subtitles = SubtitleRef(path=str(asr))
    return Sample(
        id=key, benchmark=benchmark, video=VideoRef(path=str(video)), question=question.strip(),
        options=options, answer=answer, subtitles=subtitles,
        labels={"question_type": str(qtype).strip() if qtype else "Unknown"},
        extra={"video_id": vid, "url": f"https://www.youtube.com/watch?v={vid}", "reference": reference},
    )


# ---- release files and the hub -------------------------------------------------------------------


def read_records(path: Path) -> list[Any]:
    """Records of a release file: a JSON list (the release), {"data": [...]}, {key: record} or JSONL."""
    url = RELEASE_URL.format(subset=subset_of(path.name) or "full")
    text = read_text(path, missing=f"download it from {url}", unreadable="it must be the UTF-8 JSON release file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        try:
            return [json.loads(line) for line in text_lines(text) if line.strip()]
        except json.JSONDecodeError:
            raise json_error(path, e, "download the file again") from None
    if isinstance(data, dict):
        inner = data.get("data", data.get("annotations"))
        if isinstance(inner, list):
            return inner
        return [{"key": k, **v} if isinstance(v, dict) and "key" not in v else v for k, v in data.items()]
    if not isinstance(data, list):
        raise DataError(f"{path}: a JSON {type(data).__name__} — the release is a list of question records")
    return data


def subset_of(name: str) -> str | None:
    """The subset an official file name stands for (neptune_mma.json -> mma)."""
    m = re.fullmatch(r"neptune_(full|mma|mmh)\.jsonl?", name)
    return m.group(1) if m else None


def release_rows(data: Any, *, benchmark: str, subset: str) -> tuple[list[tuple[str, Any]], Path, Path | None]:
    """(where, record) pairs, the default video dir and the release folder (None on the hub)."""
    if use_hub(data, benchmark=benchmark, holding=f"neptune_{subset}.json"):
        rows = load_hub(HF_DATASET, subset, split="test", revision=HF_REVISION, what="Neptune",
                        instead="pass --data DIR with the release JSON files",
                        shown=f"{HF_DATASET} [{subset}] @ {HF_REVISION[:8]}",
                        fix="pass --data DIR with the release files")
        return [(f"{HF_DATASET}[{subset}] row {i}", r) for i, r in enumerate(rows, 1)], hf_home() / "neptune", None
    path = Path(data).expanduser()
    root = path if path.is_dir() else path.parent
    if path.is_dir():
        path = path / f"neptune_{subset}.json"
        if not path.exists():
            raise LvuError(f"{root}: no neptune_{subset}.json — download {RELEASE_URL.format(subset=subset)} "
                           "into it (layout: neptune_{full,mma,mmh}.json, videos/, asr/)")
    return [(f"{path.name} record {i}", r) for i, r in enumerate(read_records(path), 1)], root / "videos", root


def memberships(root: Path) -> dict[str, set[str]]:
    """Keys of the mma / mmh files next to the full one (questions carry the subsets they are in)."""
    out: dict[str, set[str]] = {}
    for subset in SUBSETS[1:]:
        path = root / f"neptune_{subset}.json"
        if path.is_file():
            out[subset] = {str(r["key"]) for r in read_records(path) if isinstance(r, dict) and r.get("key")}
    return out


def load_release(data: Any, *, benchmark: str, subset: str, video_dir: str | None = None,
                 asr_dir: str | None = None, with_asr: bool = False) -> tuple[list[Sample], list[BadRecord]]:
    """The subset's Samples, each labelled with the subsets it is in; transcripts (`with_asr`) from
    `asr_dir`, else the release folder's asr/."""
    pairs, default_videos, root = release_rows(data, benchmark=benchmark, subset=subset)
    videos = Path(video_dir or default_videos).expanduser()
    asr = None
    if with_asr:
        asr_base = asr_dir or (root / "asr" if root else None)
        if not asr_base:
            raise LvuError(f"{benchmark}: Neptune ships no ASR — pass --set asr_dir=DIR holding "
                           "<video_id>.srt|.vtt|.json (with --asr, Whisper transcribes the ones missing)")
        asr = Path(asr_base).expanduser()
    members = memberships(root) if subset == "full" and root else {}
    per_video: dict[Any, int] = {}

    def to_sample(where: str, record: Any) -> Sample:
        vid = _video_field(record) if isinstance(record, dict) else None
        per_video[vid] = ordinal = per_video.get(vid, 0) + 1
        sample = record_to_sample(record, benchmark=benchmark, ordinal=ordinal, video_dir=videos, asr_dir=asr)
        sample.labels["subset"] = [subset] + [s for s in SUBSETS[1:] if sample.id in members.get(s, ())]
        return sample

    return collect_samples(pairs, to_sample,
                           repeated=lambda key, first: f"key {key!r} repeats {first} — keys must be unique")
