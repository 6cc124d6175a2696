"""Video-MME's release formats, read into Samples (the protocol is in videomme.py).

Release layout (`--data DIR`, the HF dataset lmms-lab/Video-MME unpacked): `videomme/test-*.parquet`
(flat rows: video_id, duration, domain, sub_category, url, videoID, question_id, task_type,
question, options ["A. ..", ..], answer "A"), videos `data/<videoID>.mp4|.MP4|.mkv` (VLMEvalKit's
`video/` also found; or `--video-dir`), subtitles `subtitle/<videoID>.srt` (744 files; all long
videos have one). Also read: the official grouped JSON (a list of videos, each with `questions[]`;
current keys duration/domain/sub_category/options or the 2024-06 keys duration_category/
video_category/video_subcategory/choices; trailing commas tolerated), a JSON list or JSONL of flat
rows, and `--data hf:` (or no --data while LVU_OFFLINE is unset): HF_DATASET at HF_REVISION, videos
in `$HF_HOME/videomme/data` as lmms-eval unpacks them. All go through `row_to_sample`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from lvu.benchmarks.base import BadRecord
from lvu.benchmarks.loading import (
    RecordError, collect_samples, hf_home, json_lines, load_hub, parse_json, read_text, use_hub,
)
from lvu.errors import DataError, LvuError
from lvu.types import LETTERS, Sample, SubtitleRef, VideoRef

HF_DATASET = "lmms-eval/Video-MME"
HF_CONFIG = "videomme"
HF_REVISION = "ead1408f75b618502df9a1d8e0950166bf0a2a0b"
"""lmms-eval/Video-MME (formerly lmms-lab/Video-MME) as pinned by the Video-MME harbor notes."""
DURATIONS = ("short", "medium", "long")
"""The release's duration groups, in the paper's (Table 4's) order."""
VIDEO_EXTS = (".mp4", ".MP4", ".mkv")


# ---- one record ----------------------------------------------------------------------------------


def youtube_id(url: str) -> str:
    parsed = urlparse(url if "://" in url else "https://" + url)
    return (parse_qs(parsed.query).get("v") or [parsed.path.rstrip("/").rsplit("/", 1)[-1]])[0]


def _field(row: dict, *names: str) -> Any:
    """The first of `names` present and non-empty (key aliases of the two schemas)."""
    return next((v for n in names if (v := row.get(n)) is not None and not (isinstance(v, str) and not v)), None)


def row_to_sample(row: Any, *, benchmark: str, video_dir: Path, subtitle_dir: Path) -> Sample:
    """One question (a hub/parquet row, or a grouped-JSON video merged with one of its questions)."""
    if not isinstance(row, dict):
        raise RecordError(f"a JSON {type(row).__name__}, not an object — each record must be an object")
    qid = _field(row, "question_id")
    question = _field(row, "question")
    if not isinstance(qid, str) or not isinstance(question, str) or not question.strip():
        raise RecordError("question_id or question is missing — every question needs both")
    lines = _field(row, "options", "choices")
    if not isinstance(lines, (list, tuple)) and hasattr(lines, "tolist"):
        lines = lines.tolist()  # numpy arrays from pandas-read parquet
    if not isinstance(lines, (list, tuple)) or len(lines) < 2 or not all(isinstance(o, str) for o in lines):
        raise RecordError("options (or choices) is not a list of 'A. ...' strings — give the four options")
    options = [o[2:].lstrip() if o.startswith(f"{LETTERS[i]}.") else o for i, o in enumerate(lines)]
    answer = _field(row, "answer")
    if not isinstance(answer, str) or answer.strip() not in LETTERS[:len(lines)]:
        raise RecordError(f"answer {answer!r} is not one of {', '.join(LETTERS[:len(lines)])} — give the letter")
    duration = _field(row, "duration", "duration_category")
    if duration not in DURATIONS:
        raise RecordError(f"duration {duration!r} is not short, medium or long")
    url = _field(row, "url")
    name = str(_field(row, "videoID") or (youtube_id(url) if isinstance(url, str) else None)
               or _field(row, "video_id") or qid.split("-")[0])
    video = next((video_dir / (name + e) for e in VIDEO_EXTS if (video_dir / (name + e)).is_file()),
                 video_dir / f"{name}.mp4")
    srt = subtitle_dir / f"{name}.srt"
    return Sample(
        id=qid, benchmark=benchmark, video=VideoRef(path=str(video)), question=question, options=options,
        answer=LETTERS.index(answer.strip()), subtitles=SubtitleRef(path=str(srt)) if srt.is_file() else None,
        labels={"duration": duration,
                "domain": str(_field(row, "domain", "video_category") or "Unknown"),
                "sub_category": str(_field(row, "sub_category", "video_subcategory", "video_sub_category") or "Unknown"),
                "task_type": str(_field(row, "task_type") or "Unknown")},
        extra={"video_id": str(_field(row, "video_id") or name), "videoID": name, "url": url,
               "option_lines": list(lines),
               **({"missing": True} if row.get("missing") is True else {})},
    )


# ---- release files and the hub -------------------------------------------------------------------


def read_json(path: Path) -> Any:
    """A JSON file, tolerating trailing commas (the official template has them); DataError names the line."""
    text = read_text(path, missing="", unreadable="it must be a UTF-8 JSON file")
    return parse_json(text, path, fix="fix that line", trailing_commas=True)


def pairs_from_json(data: Any, name: str) -> list[tuple[str, Any]]:
    """(where, flat row) pairs from grouped videos ({..., "questions": [...]}) or flat rows."""
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise DataError(f"{name}: a JSON {type(data).__name__} — expected a list of videos or question rows")
    pairs: list[tuple[str, Any]] = []
    for i, item in enumerate(data, 1):
        if isinstance(item, dict) and "questions" in item:
            questions = item["questions"]
            if not isinstance(questions, list):
                pairs.append((f"{name} video {i}", "questions is not a list"))
                continue
            video = {k: v for k, v in item.items() if k != "questions"}
            pairs += [(f"{name} video {i} question {j}", {**video, **q} if isinstance(q, dict) else q)
                      for j, q in enumerate(questions, 1)]
        else:
            pairs.append((f"{name} row {i}", item))
    return pairs


def _read_rows(path: Path) -> list[tuple[str, Any]]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise LvuError(f"{path}: reading parquet needs pyarrow: pip install pyarrow (or 'lvu[hub]')") from None
        return [(f"{path.name} row {i}", r) for i, r in enumerate(pq.read_table(path).to_pylist(), 1)]
    if path.suffix == ".jsonl":
        return json_lines(path.read_text(encoding="utf-8-sig"), path.name)
    return pairs_from_json(read_json(path), path.name)


def release_rows(data: Any, *, benchmark: str) -> tuple[list[tuple[str, Any]], Path]:
    """(where, row) pairs and the release root (videos in data/, subtitles in subtitle/)."""
    if use_hub(data, benchmark=benchmark, holding="videomme/test-*.parquet"):
        rows = load_hub(HF_DATASET, HF_CONFIG, split="test", revision=HF_REVISION, what="Video-MME",
                        instead="pass --data DIR with videomme/test-*.parquet",
                        shown=f"{HF_DATASET} @ {HF_REVISION[:8]}", fix="pass --data DIR with the release files")
        return [(f"{HF_DATASET} row {i}", r) for i, r in enumerate(rows, 1)], hf_home() / "videomme"
    path = Path(data).expanduser()
    if path.is_dir():
        root = path
        found = sorted((path / "videomme").glob("test-*.parquet")) or sorted(path.glob("*.parquet"))
        if not found:
            found = sorted(path.glob("*.json")) + sorted(path.glob("*.jsonl"))
            if len(found) != 1:
                raise LvuError(f"{path}: no videomme/test-*.parquet and {len(found)} .json/.jsonl files — "
                               "pass the release folder (lmms-lab/Video-MME layout) or one annotation file")
        return [p for f in found for p in _read_rows(f)], root
    if not path.exists():
        raise LvuError(f"{path}: not found — pass the Video-MME release folder or an annotation file")
    root = path.parent.parent if path.parent.name == "videomme" else path.parent
    return _read_rows(path), root


def release_samples(pairs: list[tuple[str, Any]], root: Path | None, *, benchmark: str,
                    video_dir: str | None = None, subtitle_dir: str | None = None,
                    ) -> tuple[list[Sample], list[BadRecord]]:
    """Samples of (where, row) pairs; a str row is that record's error. Media come from the given
    folders, else from under `root` (data/, or VLMEvalKit's video/; subtitle/)."""
    videos, subtitles = Path(video_dir or ""), Path(subtitle_dir or "")
    if root is not None:
        if not video_dir:
            videos = root / "video" if (root / "video").is_dir() and not (root / "data").is_dir() else root / "data"
        if not subtitle_dir:
            subtitles = root / "subtitle"

    def to_sample(where: str, row: Any) -> Sample:
        if isinstance(row, str):
            raise RecordError(row)
        return row_to_sample(row, benchmark=benchmark, video_dir=videos.expanduser(),
                             subtitle_dir=subtitles.expanduser())

    return collect_samples(pairs, to_sample,
                           repeated=lambda sid, first: f"question_id {sid!r} repeats {first} — ids must be unique")
