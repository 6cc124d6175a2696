"""LVBench's release format, read into Samples (the protocol is in lvbench.py).

Release (HF `THUDM/LVBench`, now `zai-org/LVBench`; code `THUDM/LVBench` f998d955): one file,
`video_info.meta.jsonl`, one video per line:

    {"key": "Cm73ma6Ibcs", "type": "cartoon",
     "video_info": {"duration_minutes": 71.4, "fps": 30.0, "resolution": {"width": 640, "height": 360}},
     "qa": [
      {"uid": "55", "answer": "D", "question_type": ["key information retrieval"], "time_reference": "00:15-00:19",
      "question": "What year appears in the opening caption of the video?\\n(A) 1636\\n(B) 1366\\n(C) 1363\\n(D) 1633"}
     ]}

Videos are the user's YouTube downloads named `<key>.mp4` (also .mkv/.webm/.mov) in `video_dir`
(default: `videos/` or the repo's `scripts/videos/` beside the release file); the official
`scripts/download.sh` (video2dataset) layout `videos/00000/000000000.mp4` + `.json` sidecar is
found through the sidecars' YouTube URLs. A missing video fails only its own questions.
`data` is the release folder, the file itself, or `hf:` / `hf:ID[@REV]` (default when `data` is
absent and LVU_OFFLINE is unset): `THUDM/LVBench` at HUB_REVISION, loaded with `datasets`; rows of
lmms-eval's flat mirror (`lmms-eval/LVBench`: one question per row) map through the same mapper.

Sample: id = str(uid) (the official scorer's key); `question` = the stem and `options` = the
four texts, parsed out of the question string exactly (stem before the last "\\n(A) ", one space
after each "(X)" removed, nothing else touched); the raw string is kept in extra["question_raw"].
labels: `question_type` = capability codes (multi-label list, duplicates kept as the scorer
counts them), `video_type` = the paper's category name, `clue_length` (CLUE_BINS of the
time_reference length) and `video_length` (LENGTH_BINS) for Sec. 4.5's analyses (`lvu analyse
clue-length` / `video-length`). extra: key, uid, answer_letter,
time_reference (raw) with clue_spans / clue_seconds parsed from it, duration_s and fps from
video_info (analysis only: frame plans use the user's own copy of the video).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord
from lvu.benchmarks.loading import RecordError, Unparsed, json_lines, load_hub, read_text
from lvu.errors import DataError, LvuError
from lvu.types import LETTERS, Sample, VideoRef

META_FILE = "video_info.meta.jsonl"
HUB_ID = "THUDM/LVBench"
HUB_REVISION = "5059bb7a722f6ab14b3636d53ad93bd0559bcbf8"  # "Upload video_info.meta.jsonl"; unchanged on main since
CHOICES = "ABCD"
VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".mov")

# scripts/test_acc.py's name_map, in Table 2's column order.
CAPABILITIES = {"entity recognition": "ER", "event understanding": "EU", "key information retrieval": "KIR",
                "temporal grounding": "TG", "reasoning": "Rea", "summarization": "Sum"}
# Raw `type` -> the paper's category names. Only "cartoon" is confirmed in quoted records; the
# others follow the per-type files of a public LVBench mirror (sport, documentary, live,
# selfmedia, tv) and the paper's names; anything else is shown as written.
VIDEO_TYPES = {"sport": "Sports", "sports": "Sports", "documentary": "Documentary", "live": "Event Record",
               "event record": "Event Record", "selfmedia": "Lifestyle", "self-media": "Lifestyle",
               "lifestyle": "Lifestyle", "tv": "TV Show", "tv show": "TV Show", "tvshow": "TV Show",
               "cartoon": "Cartoon", "animation": "Cartoon"}
CLUE_BINS = ("0-10 s", "10-60 s", ">60 s")
"""Sec. 4.5's clue-duration ranges (the time_reference span length): label `clue_length`."""
LENGTH_BINS = ("<30 min", "30-60 min", "60-90 min", "90-120 min", ">120 min")
"""Video-length bins for Sec. 4.5 / Fig. 5 (its threshold: 90 minutes): label `video_length`."""


def clue_bin(seconds: float) -> str:
    return CLUE_BINS[0] if seconds <= 10 else CLUE_BINS[1] if seconds <= 60 else CLUE_BINS[2]


def length_bin(seconds: float) -> str:
    return LENGTH_BINS[min(len(LENGTH_BINS) - 1, int(seconds // 1800))]


_OPTIONS = re.compile(r"^(?P<stem>.*)\n\(A\) ?(?P<A>.*?)\n\(B\) ?(?P<B>.*?)\n\(C\) ?(?P<C>.*?)\n\(D\) ?(?P<D>.*)$",
                      re.DOTALL)
_CLOCK = r"\d+(?::\d{1,2}){1,2}(?:\.\d+)?"
_SPAN = re.compile(rf"({_CLOCK})\s*[-–~]\s*({_CLOCK})")


# ---- release records -> Samples ----------------------------------------------------------------


def parse_question(raw: str) -> tuple[str, list[str]]:
    """(stem, [A, B, C, D]) from a released question string; RecordError if it has no option lines."""
    m = _OPTIONS.match(raw)
    if not m:
        raise RecordError("question has no '\\n(A) …\\n(B) …\\n(C) …\\n(D) …' option lines — "
                           "LVBench questions carry their four options inline")
    return m["stem"], [m[c] for c in CHOICES]


def parse_time_reference(text: Any) -> list[tuple[float, float]]:
    """Clue spans in seconds from 'MM:SS-MM:SS' / 'H:MM:SS-H:MM:SS' (several allowed); [] if none."""
    def seconds(clock: str) -> float:
        total = 0.0
        for part in clock.split(":"):
            total = total * 60 + float(part)
        return total

    return [(seconds(a), seconds(b)) for a, b in _SPAN.findall(str(text or ""))]


def _rows(qa: Any) -> list[dict]:
    """`qa` as a list of dicts; `datasets` may hand a list of structs over column-wise."""
    if isinstance(qa, dict):
        lengths = {k: len(v) for k, v in qa.items() if isinstance(v, list)}
        if len(set(lengths.values())) > 1:  # which question would get which answer? none: say so
            shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise RecordError(f"'qa' is column-wise with lists of unequal length ({shown}) — every column needs "
                              "one entry per question")
        n = max(lengths.values(), default=0)
        return [{k: (v[i] if isinstance(v, list) else v) for k, v in qa.items()} for i in range(n)]
    if not isinstance(qa, list):
        raise RecordError(f"'qa' is a {type(qa).__name__}, not a list — each line needs its list of questions")
    return qa


VideoPath = Callable[[str, "str | None"], str]
"""(YouTube key, a row's own relative video_path or None) -> the video file's path."""


def map_record(record: Any, where: str, video_path: VideoPath) -> tuple[list[Sample], list[BadRecord]]:
    """One release line (a video with its `qa` list) or one flat hub row (a question with its
    video's `key`/`type`) -> Samples; per-question problems become BadRecords naming `where`."""
    if not isinstance(record, dict):
        return [], [BadRecord(id=where, error=f"{where}: a JSON {type(record).__name__}, not a video object — "
                                              f"each line of {META_FILE} is one video")]
    key = record.get("key")
    if not isinstance(key, str) or not key:
        return [], [BadRecord(id=where, error=f"{where}: no 'key' (the YouTube id naming <key>.mp4) — fix the line")]
    try:
        questions = _rows(record["qa"]) if "qa" in record else [record]
    except RecordError as e:
        return [], [BadRecord(id=where, error=f"{where}: video {key}: {e}")]
    raw_info = record.get("video_info")
    info: dict = raw_info if isinstance(raw_info, dict) else {}
    vtype = str(record.get("type") or "")
    samples, bad = [], []
    for i, qa in enumerate(questions):
        uid = qa.get("uid") if isinstance(qa, dict) else None
        label = f"{where} qa[{i}]" if uid is None else f"uid {uid}"
        try:
            samples.append(_sample(qa, key, vtype, info, video_path))
        except RecordError as e:
            bad.append(BadRecord(id=str(uid) if uid is not None else f"{where} qa[{i}]",
                                 error=f"{where}: {label} (video {key}): {e}"))
    return samples, bad


def _sample(qa: Any, key: str, vtype: str, info: dict, video_path: VideoPath) -> Sample:
    if not isinstance(qa, dict):
        raise RecordError(f"a {type(qa).__name__}, not a question object — fix the 'qa' entry")
    missing = [f for f in ("uid", "question", "answer") if qa.get(f) in (None, "")]
    if missing:
        raise RecordError(f"no {', '.join(missing)} — every question needs uid, question and answer")
    raw, answer = qa["question"], qa["answer"]
    if isinstance(qa.get("options"), list) and qa["options"]:  # a mirror with an options field
        stem, options = str(raw), [str(o) for o in qa["options"]]
        raw = stem + "".join(f"\n({LETTERS[j]}) {o}" for j, o in enumerate(options))
    else:
        stem, options = parse_question(str(raw))
    if not isinstance(answer, str) or answer not in CHOICES[: len(options)]:
        raise RecordError(f"answer {answer!r} is not one of {', '.join(CHOICES[: len(options)])} — "
                           "the answer must be the correct option's letter")
    types = qa.get("question_type") or []
    types = [types] if isinstance(types, str) else [str(t) for t in types]
    spans = parse_time_reference(qa.get("time_reference"))
    minutes = info.get("duration_minutes")
    clue_seconds = sum(b - a for a, b in spans) if spans else None
    labels: dict[str, str | list[str]] = {
        "question_type": [CAPABILITIES.get(t.strip().lower(), t) for t in types],
        "video_type": VIDEO_TYPES.get(vtype.strip().lower(), vtype or "unknown")}
    if clue_seconds is not None:  # for lvu analyse clue-length / video-length (aggregate ignores them)
        labels["clue_length"] = clue_bin(clue_seconds)
    if isinstance(minutes, (int, float)):
        labels["video_length"] = length_bin(float(minutes) * 60)
    return Sample(
        id=str(qa["uid"]), benchmark="lvbench",
        video=VideoRef(path=video_path(key, qa.get("video_path") or None)),
        question=stem, options=options, answer=CHOICES.index(answer),
        labels=labels,
        extra={"key": key, "uid": qa["uid"], "question_raw": str(raw), "answer_letter": answer,
               "question_type_raw": types, "type_raw": vtype, "time_reference": qa.get("time_reference"),
               "clue_spans": [list(s) for s in spans],
               "clue_seconds": clue_seconds,
               "duration_s": float(minutes) * 60 if isinstance(minutes, (int, float)) else None,
               "fps": info.get("fps")},
    )


class VideoIndex:
    """<key>.<ext> in the video folder; else video2dataset's `NNNNN/NNNNNNNNN.mp4` found through
    its `.json` sidecars' YouTube URLs (scanned once, only when a key is not found directly)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sidecars: dict[str, Path] | None = None

    def __call__(self, key: str, rel: str | None = None) -> str:
        if rel:
            return str((self.root / rel).resolve())
        for ext in VIDEO_EXTS:
            if (p := self.root / f"{key}{ext}").exists():
                return str(p.resolve())
        if self._sidecars is None:
            self._sidecars = self._scan()
        return str(self._sidecars.get(key) or (self.root / f"{key}.mp4").resolve())

    def _scan(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        if not self.root.is_dir():
            return found
        for side in self.root.rglob("*.json"):
            try:
                meta = json.loads(side.read_text(encoding="utf-8"))
                m = re.search(r"(?:v=|youtu\.be/|shorts/)([\w-]{6,})", str(meta.get("url", "")))
            except (OSError, ValueError, AttributeError):
                continue
            video = next((v for ext in VIDEO_EXTS if (v := side.with_suffix(ext)).exists()), None)
            if m and video is not None:
                found.setdefault(m.group(1), video.resolve())
        return found


# ---- the release file and the hub ----------------------------------------------------------------


def load_release(data: Any, video_dir: str | None = None) -> tuple[list[Sample], list[BadRecord], dict[str, Any]]:
    """(samples, bad records, {"videos": lines per key, "questions": n}) of the release file (a
    folder holding it, the file, or `hf:` / `hf:ID[@REV]` / None for the hub)."""
    if data is None or str(data).startswith("hf:"):
        records, index = _hub_records(str(data or "hf:"), video_dir)
    else:
        records, index = _file_records(Path(data).expanduser(), video_dir)
    return _map_all(records, index)


def _file_records(path: Path, video_dir: str | None) -> tuple[list[tuple[str, Any]], VideoIndex]:
    if path.is_dir():
        found = [p for p in (path / META_FILE, path / "data" / META_FILE) if p.is_file()]
        if not found:
            raise DataError(f"{path}: no {META_FILE} (looked in the folder and its data/) — pass the "
                            "LVBench release folder or the file itself with --data")
        path = found[0]
    text = read_text(path, missing=f"pass LVBench's {META_FILE} or its folder with --data",
                     unreadable=f"it must be the UTF-8 JSONL {META_FILE}")
    return json_lines(text, path), VideoIndex(_video_dir(path.parent, video_dir))


def _video_dir(base: Path, video_dir: str | None) -> Path:
    if video_dir:
        return Path(video_dir).expanduser()
    candidates = [base / "videos", base / "scripts" / "videos", base.parent / "videos",
                  base.parent / "scripts" / "videos"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def _hub_records(spec: str, video_dir: str | None) -> tuple[list[tuple[str, Any]], VideoIndex]:
    if os.environ.get("LVU_OFFLINE"):
        raise LvuError(f"LVU_OFFLINE is set: pass --data with a local LVBench folder ({META_FILE})")
    repo, _, rev = spec[3:].partition("@")
    repo = repo or HUB_ID
    kwargs: dict[str, Any] = {"split": "train", "revision": rev or (HUB_REVISION if repo == HUB_ID else None)}
    if repo == HUB_ID:
        kwargs["data_files"] = META_FILE  # the repo also holds images; read the release file only
    rows = load_hub(repo, what="LVBench", instead=f"pass --data with a local {META_FILE}",
                    shown=f"{repo} @ {kwargs['revision'] or 'main'}", error=DataError,
                    fix=f"check the id and your connection, or pass --data with a local {META_FILE}", **kwargs)
    index = VideoIndex(Path(video_dir or "videos").expanduser())
    return [(f"{repo} row {i}", row) for i, row in enumerate(rows)], index


def _map_all(records: list[tuple[str, Any]], index: VideoIndex) -> tuple[list[Sample], list[BadRecord], dict]:
    samples: list[Sample] = []
    bad: list[BadRecord] = []
    keys: Counter[str] = Counter()
    n_questions = 0
    for where, record in records:
        if isinstance(record, Unparsed):
            bad.append(BadRecord(id=where, error=f"{where}: {record} — each line must be one video object"))
            continue
        got, failed = map_record(record, where, index)
        samples += got
        bad += failed
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            keys[record["key"]] += "qa" in record  # lines per video; flat hub rows add 0
            n_questions += len(got) + len(failed)
    return samples, bad, {"videos": keys, "questions": n_questions}
