"""MLVU's release formats, read into Samples (the protocol is in mlvu.py).

Data: nine JSON lists `json/1_plotQA.json … 9_summary.json`, videos in `video/<file stem>/`
(hub snapshot MLVU/MVLU: both under `MLVU/`); records {video, duration, question, candidates,
answer (option TEXT), question_type} (+ scoring_points for SSC; VS/SSC have no candidates). Videos
are also found in `video/<question_type>/` (the repo's older layout) and flat in `video/`. Dev ids
are `<task>_<n>` by record position; the test set (`test_question.json`, or the later
`test_mcq_gt.json` with answers; 6 options, 11 tasks) keeps its question_id. Without `data` and
with LVU_OFFLINE unset the JSON comes from the hub (HUB_DATASETS @ HUB_REVISION) through the same
record mapper; videos always come from disk.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord
from lvu.benchmarks.loading import RecordError, collect_samples, load_hub, use_hub
from lvu.errors import LvuError
from lvu.types import LETTERS, Sample, VideoRef

HUB_DATASETS = {"dev": "MLVU/MVLU", "test": "MLVU/MLVU_Test"}
HUB_REVISION = "main"
"""Hub revision read. TODO(lead): pin the commit sha of MLVU/MVLU once verified online."""
TEST_FILES = ("test_mcq_gt.json", "test_question.json")
"""Test annotation files, first found wins: the ground-truth release, then the question file."""


@dataclass(frozen=True)
class Task:
    code: str
    file: str | None
    """Dev file stem (video folder name); None for test-only tasks."""
    types: tuple[str, ...]
    """question_type values (first = dev/repo key), aliases from the test set and harnesses."""
    group: str
    generation: bool = False


TASKS = {t.code: t for t in (
    Task("TR", "7_topic_reasoning", ("topic_reasoning",), "Holistic"),
    Task("AR", "6_anomaly_reco", ("anomaly_reco",), "Holistic"),
    Task("VS", "9_summary", ("summary",), "Holistic", True),
    Task("NQA", "2_needle", ("findNeedle", "needle", "needleQA"), "Single Detail"),
    Task("ER", "3_ego", ("ego",), "Single Detail"),
    Task("PQA", "1_plotQA", ("plotQA",), "Single Detail"),
    Task("SQA", None, ("sportsQA",), "Single Detail"),
    Task("SSC", "8_sub_scene", ("subPlot", "sub_scene"), "Single Detail", True),
    Task("AO", "5_order", ("order",), "Multi Detail"),
    Task("AC", "4_count", ("count",), "Multi Detail"),
    Task("TQA", None, ("tutorialQA",), "Multi Detail"),
)}
"""Paper Table 1 column order (SQA/TQA: test set only)."""
BY_TYPE = {qt: t for t in TASKS.values() for qt in t.types}
FOLDERS = {"NQA": "needle", "SSC": "subPlot"}
"""Video folder names of the repo's older MLVU_all layout, where they differ from question_type."""
EVIDENCE_KEYS = ("evidence", "needle_position", "segment")
"""Record keys read as the evidence span ([start, end] seconds, or a list of them) into
extra["evidence"]. The MLVU release has none (no record carries timestamps); a copy that adds them
lets `lvu build ladder` cut its videos (lvu.construct.ladder)."""


# ---- one record -----------------------------------------------------------------------------------


def answer_letter(candidates: list[str], answer: str) -> str:
    """The letter check_ans compares with: the LAST equal candidate, '@' when none is equal."""
    idx = -1
    for i, c in enumerate(candidates):
        if c == answer:
            idx = i
    return chr(ord("A") + idx)


def _task_of(record: dict, hint: Task | None) -> Task:
    if hint is not None:
        return hint
    qt = record.get("question_type")
    if not isinstance(qt, str) or qt not in BY_TYPE:  # a list or an object is no task name either
        shown = qt if len(repr(qt)) <= 80 else f"a {type(qt).__name__}"
        raise RecordError(f"question_type {shown!r} is not an MLVU task — expected one of {', '.join(sorted(BY_TYPE))}")
    return BY_TYPE[qt]


def to_sample(record: Any, *, task: Task | None, ident: str | None, split: str, video_root: Path) -> Sample:
    """One release record (local JSON or hub row: same fields) as a Sample. RecordError if bad."""
    if not isinstance(record, dict):
        raise RecordError(f"a JSON {type(record).__name__}, not an object — each record must be an object")
    task = _task_of(record, task)
    for key in ("video", "question"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise RecordError(f"{key!r} is missing or empty — every MLVU record has video and question")
    qt = str(record.get("question_type") or task.types[0])
    answer, has_answer = record.get("answer"), record.get("answer") is not None
    if split == "dev" and not has_answer:
        raise RecordError("'answer' is missing — every MLVU dev record carries its answer")
    labels: dict[str, str | list[str]] = {"task": task.code, "question_type": qt, "group": task.group}
    extra: dict[str, Any] = {"question_type": qt, "split": split}
    evidence = next((record[k] for k in EVIDENCE_KEYS if record.get(k) is not None), None)
    if evidence is not None:
        extra["evidence"] = evidence
    options: list[str] = []
    if task.generation:
        if has_answer and not isinstance(answer, str):
            raise RecordError(f"answer is a {type(answer).__name__} — a generation answer is reference text")
        if task.code == "SSC":
            points = record.get("scoring_points")
            if split == "dev" and not (isinstance(points, list) and points and all(isinstance(p, str) for p in points)):
                raise RecordError("scoring_points must be a non-empty list of strings — the SSC judge scores them")
            extra["scoring_points"] = points or []
        gold: int | str | None = answer
    else:
        cands = record.get("candidates")
        if not isinstance(cands, list) or len(cands) < 2:
            raise RecordError("candidates must be a list of at least 2 options — MLVU MCQ records list them")
        options = [str(c) for c in cands]
        gold = None
        if has_answer:
            letter = answer_letter(options, str(answer))
            extra.update(answer_text=str(answer), answer_letter=letter,
                         answer_first=next((LETTERS[i] for i, c in enumerate(options) if c == str(answer)), None))
            gold = LETTERS.index(letter) if letter != "@" else None
        else:
            extra["hidden"] = True
    duration = record.get("duration")
    try:
        duration = float(duration) if duration is not None else None
    except (TypeError, ValueError):
        raise RecordError(f"duration {duration!r} is not a number — give the video length in seconds") from None
    name = record["video"]
    folders = [task.file, task.types[0], FOLDERS.get(task.code)] if split == "dev" else [None]
    paths = [video_root / f / name if f else video_root / name for f in dict.fromkeys(folders)]
    paths.append(video_root / name)
    path = next((p for p in paths if p.exists()), paths[0])
    sid = str(record.get("question_id") or ident)
    return Sample(id=sid, benchmark="mlvu", video=VideoRef(path=str(path), duration=duration),
                  question=record["question"], options=options, answer=gold, labels=labels, extra=extra)


def _hub_rows(split: str, revision: str) -> list[tuple[str, Task | None, list[dict]]]:
    """(where, task, rows) per file from the hub at `revision` (MLVU/json/*.json on MLVU/MVLU)."""
    name = HUB_DATASETS[split]
    if split == "dev":
        files = {f: f"MLVU/json/{f}.json" for f in sorted(t.file for t in TASKS.values() if t.file)}
    else:
        files = {"test": f"**/{TEST_FILES[1]}"}
    ds = load_hub(name, data_files=files, revision=revision, rows=False, what="MLVU",
                  instead="pass --data DIR with the release JSON files", shown=f"{name} @ {revision}",
                  fix="pass --data DIR with the release JSON files")
    by_file = {t.file: t for t in TASKS.values() if t.file}
    return [(f"{name}:{key}", by_file.get(key), [dict(r) for r in ds[key]]) for key in files]


def _local_files(split: str, data: Path) -> tuple[list[tuple[Path, Task | None]], Path, list[tuple[Path, Task]]]:
    """(file, task) pairs present, the default video root, and the (file, task) pairs missing."""
    if data.is_file():
        home = data.parent.parent if data.parent.name in ("json", "leaderboard") else data.parent
        return [(data, None)], home / "video", []
    if not data.is_dir():
        raise LvuError(f"{data}: not found — pass --data with the MLVU release folder or one of its JSON files")
    if split == "test":
        for folder in (data, data / "leaderboard", data / "MLVU_Test", data / "MLVU_Test" / "leaderboard"):
            for name in TEST_FILES:
                if (folder / name).exists():
                    root = folder.parent if folder.name == "leaderboard" else folder
                    return [(folder / name, None)], root / "video", []
        raise LvuError(f"{data}: no {' or '.join(TEST_FILES)} — pass the MLVU-Test folder (or the file) with --data")
    for json_dir, video in ((data / "MLVU" / "json", data / "MLVU" / "video"), (data / "json", data / "video"),
                            (data, data.parent / "video" if data.name == "json" else data / "video")):
        files = sorted(((json_dir / f"{t.file}.json", t) for t in TASKS.values() if t.file), key=lambda x: x[0].name)
        if any(f.exists() for f, _ in files):
            return [(f, t) for f, t in files if f.exists()], video, [(f, t) for f, t in files if not f.exists()]
    raise LvuError(f"{data}: no MLVU annotation files (json/1_plotQA.json … 9_summary.json) — "
                   f"pass the release folder with --data")


def _read_sources(split: str, data: Path, tasks: list[str], bad: list[BadRecord],
                  ) -> tuple[list[tuple[str, Task | None, Any]], Path]:
    """(where, task, records) per local file of the chosen tasks and the default video root; a
    missing or unreadable file is a BadRecord in `bad`."""
    files, video_root, missing = _local_files(split, data)
    bad += [BadRecord(id=f.name, error=f"{f}: not found — the MLVU dev release has all nine task files")
            for f, t in missing if t.code in tasks]
    sources = []
    for path, task in files:
        if task is not None and task.code not in tasks:
            continue
        try:
            rows = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            bad.append(BadRecord(id=path.name, error=f"{path}: not a readable JSON file ({e}) — "
                                                     f"restore it from the release"))
            continue
        if not isinstance(rows, list):
            bad.append(BadRecord(id=path.name, error=f"{path}: a JSON {type(rows).__name__}, not a list "
                                                     f"of records — restore it from the release"))
            continue
        sources.append((path.name, task, rows))
    return sources, video_root


def load_release(split: str, data: Any, tasks: list[str], *, video_dir: str | None = None,
                 hub_revision: str = HUB_REVISION) -> tuple[list[Sample], list[BadRecord]]:
    """The Samples of the chosen task codes: local release files, or the hub's when `data` asks."""
    bad: list[BadRecord] = []
    if use_hub(data, benchmark="mlvu", holding="json/1_plotQA.json …"):
        sources = _hub_rows(split, hub_revision)
        video_root = Path(video_dir or ".").expanduser().resolve()
    else:
        sources, video_root = _read_sources(split, Path(str(data)).expanduser().resolve(), tasks, bad)
        if video_dir:
            video_root = Path(video_dir).expanduser().resolve()
    counters: dict[str, int] = defaultdict(int)

    def sample_of(where: str, item: tuple[Task | None, Any]) -> Sample | None:
        task, record = item
        t = _task_of(record, task) if isinstance(record, dict) else task
        if t is not None and t.code not in tasks:
            return None
        ident = None
        if t is not None:  # ids count every record of the task, so fixing one never renames others
            ident, counters[t.code] = f"{t.code}_{counters[t.code]}", counters[t.code] + 1
        return to_sample(record, task=task, ident=ident, split=split, video_root=video_root)

    records = [(f"{where} record {i}", (task, record)) for where, task, rows in sources
               for i, record in enumerate(rows, 1)]
    samples, more = collect_samples(records, sample_of)
    return samples, bad + more
