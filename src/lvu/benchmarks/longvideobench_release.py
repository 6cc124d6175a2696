"""LongVideoBench's release formats, read into Samples, and its leaderboard files (the protocol is in
longvideobench.py).

Release layout (`--data DIR`, the HF repo unpacked): `lvb_val.json`, `lvb_test_wo_gt.json`,
`videos/<video_path>`, `subtitles/<subtitle_path>` (`--video-dir`, `--set subtitle_dir=` move them).
`--data FILE.json` reads one annotation file (its name sets the split). `--data hf:` (or no `--data`
while LVU_OFFLINE is unset) reads HF_DATASET's parquet splits with `datasets`, media from
`$HF_HOME/longvideobench/{videos,subtitles}` (where lmms-eval unpacks them). Both schemas go through
`record_to_sample`: JSON `candidates` (4-5 options) or parquet `option0..option4` ("N/A" padding).
Records keep `position` (annotated referred-frame indices), `question_wo_referring_query`,
`view_count`, `type` in `extra` for depth analyses; labels: duration_group (as "(180,600]"),
question_category (17 codes), level, topic_category.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord, json_id_map, read_prediction_lines
from lvu.benchmarks.loading import (
    RecordError, collect_samples, hf_home, json_error, load_hub, read_text, use_hub,
)
from lvu.benchmarks.longvideobench_ref import DURATIONS
from lvu.errors import DataError, LvuError
from lvu.types import Sample, SampleResult, SubtitleRef, VideoRef
from lvu.textlines import text_lines

HF_DATASET = "longvideobench/LongVideoBench"
HF_REVISION = "main"
"""NOT a commit pin yet: the repo's full commit sha could not be read offline (the card's last
commit is 60d1c89). Replace with `HfApi().dataset_info(HF_DATASET).sha` when online."""
HF_SPLITS = {"val": "validation", "test": "test"}
SPLIT_FILES = {"val": "lvb_val.json", "test": "lvb_test_wo_gt.json"}
GROUPS = dict(zip((15, 60, 600, 3600), DURATIONS))
"""duration_group field -> the paper's column name."""
SUBMISSION_NAME = "longvideobench_test_for_submission.json"


# ---- one record ----------------------------------------------------------------------------------


def _options(record: dict) -> list[str]:
    if "candidates" in record:
        cands = record["candidates"]
        if isinstance(cands, str):  # a CSV/TSV round trip leaves the list's repr
            try:
                cands = json.loads(cands)
            except json.JSONDecodeError:
                raise RecordError("candidates is a string, not a list — use the release JSON") from None
    else:  # parquet: option0..option4, "N/A" for a missing fifth option
        cands = [record[f"option{i}"] for i in range(5) if record.get(f"option{i}") not in (None, "N/A")]
    if not isinstance(cands, list) or not all(isinstance(c, str) for c in cands):
        raise RecordError("candidates must be a list of option strings — use the release JSON")
    if not 2 <= len(cands) <= 5:
        raise RecordError(f"{len(cands)} candidates — LongVideoBench questions have 4 or 5 (letters A-E)")
    return cands


def _number(record: dict, key: str, default: Any = RecordError) -> float:
    value = record.get(key)
    if value is None:
        if default is RecordError:
            raise RecordError(f"no {key} — every record needs it (the loader samples frames by it)")
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{key}={value!r} is not a number — give seconds as a number")
    return float(value)


def record_to_sample(record: Any, *, benchmark: str, split: str, video_dir: Path, subtitle_dir: Path) -> Sample:
    """One release record (JSON or hub parquet row) as a Sample; RecordError names what is wrong."""
    if not isinstance(record, dict):
        raise RecordError(f"a JSON {type(record).__name__}, not an object — each question is one object")
    rid = record.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == "":
        raise RecordError("no id — each question needs its id (e.g. '86CxyhFV9MI_0')")
    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RecordError("no question text — every record needs its question")
    options = _options(record)
    answer = None
    if split == "val":  # the test files hide answers ("@" in the official loader); ignore any value there
        choice = record.get("correct_choice")
        if isinstance(choice, bool) or not isinstance(choice, int) or not 0 <= choice < len(options):
            raise RecordError(f"correct_choice={choice!r} is not an index into {len(options)} candidates — "
                               "use the 0-based index of the right candidate")
        answer = choice
    video = record.get("video_path") or (f"{record['video_id']}.mp4" if record.get("video_id") else None)
    if not isinstance(video, str):
        raise RecordError("no video_path (or video_id) — cannot find the video")
    duration = _number(record, "duration")
    if duration <= 0:
        raise RecordError(f"duration={duration} — must be positive seconds")
    offset = _number(record, "starting_timestamp_for_subtitles", 0.0)
    subtitle = record.get("subtitle_path")
    group = record.get("duration_group")
    labels: dict[str, str | list[str]] = {}
    if group is not None:
        labels["duration_group"] = GROUPS.get(int(group), str(group)) if isinstance(group, (int, float)) else str(group)
    for key in ("question_category", "level", "topic_category"):
        if record.get(key) is not None:
            labels[key] = str(record[key])
    extra = {k: record[k] for k in ("video_id", "position", "question_wo_referring_query", "view_count", "type",
                                    "duration_group") if record.get(k) is not None}
    if isinstance(extra.get("position"), tuple):
        extra["position"] = list(extra["position"])
    return Sample(
        id=str(rid), benchmark=benchmark, question=question, options=options, answer=answer, labels=labels,
        video=VideoRef(path=str(video_dir / video), duration=duration), extra=extra,
        subtitles=SubtitleRef(path=str(subtitle_dir / subtitle), offset=offset) if isinstance(subtitle, str) else None,
    )


# ---- release files and the hub -------------------------------------------------------------------


def read_records(path: Path) -> list[Any]:
    """The records of an annotation file (a JSON list; JSONL also read); DataError if unreadable."""
    if path.suffix == ".parquet":
        raise DataError(f"{path}: parquet is read from the hub only (--data hf:) — pass lvb_val.json or "
                        "lvb_test_wo_gt.json from the same release")
    text = read_text(path, missing="pass the release folder or lvb_val.json with --data",
                     unreadable="it must be the UTF-8 release JSON")
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text_lines(text) if line.strip()]
        records = json.loads(text)
    except json.JSONDecodeError as e:
        raise json_error(path, e, "download it again") from None
    if not isinstance(records, list):
        raise DataError(f"{path}: a JSON {type(records).__name__}, not a list of questions — is it the release file?")
    return records


def split_of(path: Path) -> str | None:
    """The split an annotation file's name stands for (lvb_val.json -> val), or None."""
    name = path.name.lower()
    return "test" if "test" in name else "val" if ("val" in name or "validation" in name) else None


def release_rows(data: Any, *, benchmark: str, split: str) -> tuple[list[tuple[str, Any]], Path]:
    """(where, record) pairs and the release root (media folders live under it)."""
    if use_hub(data, benchmark=benchmark, holding=SPLIT_FILES[split]):
        rows = load_hub(HF_DATASET, split=HF_SPLITS[split], revision=HF_REVISION, what="LongVideoBench",
                        instead="pass --data DIR with lvb_val.json / lvb_test_wo_gt.json",
                        shown=f"{HF_DATASET} [{HF_SPLITS[split]}]",
                        fix="accept the dataset's terms and set HF_TOKEN, or pass --data DIR with the release files")
        return [(f"{HF_DATASET}[{HF_SPLITS[split]}] row {i}", r) for i, r in enumerate(rows, 1)], \
            hf_home() / "longvideobench"
    path = Path(data).expanduser()
    if path.is_dir():
        root, path = path, path / SPLIT_FILES[split]
        if not path.exists():
            raise LvuError(f"{root}: no {SPLIT_FILES[split]} — download {HF_DATASET} (huggingface-cli download "
                           f"{HF_DATASET} --repo-type dataset) and pass its folder")
    else:
        root = path.parent
    return [(f"{path.name} record {i}", r) for i, r in enumerate(read_records(path), 1)], root


def load_release(data: Any, *, benchmark: str, split: str, video_dir: str | None = None,
                 subtitle_dir: str | None = None) -> tuple[list[Sample], list[BadRecord]]:
    """The split's Samples; media from the given folders, else the release root's videos/, subtitles/."""
    pairs, root = release_rows(data, benchmark=benchmark, split=split)
    videos = Path(video_dir or root / "videos").expanduser()
    subtitles = Path(subtitle_dir or root / "subtitles").expanduser()
    return collect_samples(pairs, lambda where, record: record_to_sample(
        record, benchmark=benchmark, split=split, video_dir=videos, subtitle_dir=subtitles))


# ---- saved predictions and the leaderboard file -----------------------------------------------------


def read_prediction_file(path: Path, samples: dict[str, Sample], split: str) -> list[tuple[Sample, str]]:
    """Responses from: the leaderboard / lmms-eval submission JSON {id: response}; lvu's export
    JSONL (sample_id, response); lmms-eval `--log_samples` JSONL (doc.id, resps)."""
    text = Path(path).read_text(encoding="utf-8")
    if (whole := json_id_map(text)) is not None:
        unknown = [k for k in whole if k not in samples]
        if unknown:
            raise DataError(f"{path}: id {unknown[0]!r} is not a {split} question "
                            f"({len(unknown)} unknown) — check --set split=")
        return [(samples[k], "" if v is None else str(v)) for k, v in whole.items()]
    return read_prediction_lines(
        path, samples, text, key_of=lambda row: row.get("sample_id") or (row.get("doc") or {}).get("id"),
        what="LongVideoBench id",
        expected="expected {id: response} JSON, lvu's sample_id/response or lmms-eval's doc.id/resps")


def write_submission_file(results: list[SampleResult], path: Path) -> Path:
    """The leaderboard file lmms-eval writes: one JSON object {question id: raw response}
    (longvideobench_test_for_submission.json); failed samples get "". A folder gets that name."""
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = path / SUBMISSION_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {r.sample_id: r.response or "" for r in results}
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{time.monotonic_ns()}.tmp")
    try:
        tmp.write_text(json.dumps(payload), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
