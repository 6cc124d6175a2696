"""Saved responses from the harnesses people already ran, joined with a benchmark's samples.

Formats (`lvu import` and `lvu score`, docs/migrating.md):
- "lmms-eval": `--log_samples` JSONL (`<date>_samples_<task>.jsonl`). lmms-eval 0.7.3 writes no
  `doc` (evaluation_tracker pops it): the question id then comes from the task's metric payload
  (videomme_perception_score.question_id, lvb_acc.id, neptune_acc.key) and, where the task logs no
  id (lvbench, mlvu), from the question text (`input`, mlvu's payload question_id, which is the
  question). Older logs with `doc` (and `{"logs": [...]}` files) are read the same way. The reply is
  `filtered_resps`, scored as it is (`LoggedReply.filtered`: lmms-eval's evaluator already cut the
  reasoning tags, and cutting twice can change the letter), else `resps` (cut as a run's reply is).
  LongVideoBench's `lvb_acc.parsed_pred` is kept as the letter lmms-eval drew for a reply without one.
- "vlmevalkit": the per-dataset prediction sheet `<model>_<dataset>.xlsx|tsv|csv|json` (the
  dataset's TSV columns plus `prediction`); joined by an id column when the dataset has one
  (LongVideoBench `id`), else by `video` + `question` (Video-MME, MLVU: their `index` is a row
  number of VLMEvalKit's own TSV, not a question id). A `prediction` of VLMEvalKit's API failure
  message is stored as a failed sample, except under a `compat=vlmevalkit` mode, whose harness
  scores it as VLMEvalKit does.
- "official": what `lvu score` always read — the benchmark's official output file
  (`Benchmark.read_predictions`) or lvu's own export lines {sample_id, response}.

Rows that match no sample are counted (`SavedFile.unmatched`), never a traceback; samples without
a row are simply absent.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import Benchmark, json_id_map, lmms_log_response
from lvu.errors import DataError, LvuError
from lvu.runs.vlmevalkit_sheets import read_table
from lvu.scoring.vlmevalkit import FAIL_MSG, is_api_failure, is_vlmevalkit
from lvu.types import LETTERS, LoggedReply, Sample
from lvu.textlines import text_lines

FORMATS = ("auto", "lmms-eval", "vlmevalkit", "official")
TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv")
VLMEVALKIT_FAIL = FAIL_MSG
"""VLMEvalKit's FAIL_MSG: the model call failed; lvu stores such a row as a failed sample (outside
the `compat=vlmevalkit` modes)."""

ID_FIELDS = {"videomme": "question_id", "longvideobench": "id", "lvbench": "uid", "neptune": "key",
             "mlvu": "question_id"}
"""Per benchmark family: the field of lmms-eval's doc / metric payload (and of a VLMEvalKit sheet)
holding lvu's sample id. lvu's own export always has `sample_id`."""
VIDEO_FIELDS = {"videomme": ("videoID", "video"), "longvideobench": ("video_id", "video", "video_path"),
                "lvbench": ("key", "video"), "mlvu": ("video_name", "video"), "neptune": ("video_id", "video")}
"""Fields naming the video: they tell apart rows whose question text is the same."""


@dataclass
class SavedRow:
    """One saved response, joined with the sample it answers."""

    sample: Sample
    response: str
    error: str | None = None
    prompt_text: str | None = None
    """The harness's own prompt text when the file has it (lmms-eval's `input`)."""
    logged: LoggedReply | None = None
    """What the harness's log says it did with the reply (scored as the log says)."""


@dataclass
class SavedFile:
    path: Path
    format: str
    rows: list[SavedRow]
    n_rows: int
    """Rows read from the file (matched or not)."""
    unmatched: list[str] = field(default_factory=list)
    """A short description of each row that matched no sample."""
    duplicates: int = 0
    """Rows for a sample an earlier row already answered (the first one is kept)."""
    model_name: str | None = None
    """The model the harness ran, when the file (or lmms-eval's results JSON beside it) names it."""
    self_contained: bool = False
    """The samples came from the file itself (Video-MME's official results JSON holds the questions)."""

    def problems(self, benchmark: str) -> list[str]:
        """One line each for unmatched and duplicate rows (empty when every row was used)."""
        lines = []
        if self.unmatched:
            shown = ", ".join(self.unmatched[:3]) + (", ..." if len(self.unmatched) > 3 else "")
            lines.append(f"{len(self.unmatched)} of {self.n_rows} rows of {self.path.name} matched no {benchmark} "
                         f"sample ({shown}) and were left out — pass --root with the release the predictions "
                         "were made on (and the same --set split=/subset=)")
        if self.duplicates:
            lines.append(f"{self.duplicates} rows of {self.path.name} repeat a sample an earlier row answered; "
                         "the first was kept")
        return lines


def family(benchmark: Benchmark) -> str:
    return benchmark.name.split("-")[0]


def read_saved(bench: Benchmark, path: Path, fmt: str = "auto") -> SavedFile:
    """Read `path` in format `fmt` (auto-detected by default) and join its rows with `bench`'s samples."""
    path = Path(path)
    if fmt not in FORMATS:
        raise LvuError(f"--format {fmt!r} is unknown — use one of {', '.join(FORMATS)}")
    if not path.is_file():
        raise LvuError(f"{path}: file not found — pass the path of a saved predictions file")
    text = None if path.suffix.lower() == ".xlsx" else _read_text(path)
    if fmt == "auto":
        fmt = detect_format(path, text)
    if fmt == "vlmevalkit":
        rows = read_table(path, text)  # lvu.runs.vlmevalkit_sheets
        # under a vlmevalkit mode the harness scores the API failure message as VLMEvalKit does
        failed_rows = not is_vlmevalkit(str(bench.settings.get("compat", "")))
        return _join(bench, path, fmt, [_vlmevalkit_row(r, failed_rows) for r in rows],
                     model_name=vlmevalkit_model_name(path))
    if text is None:
        raise DataError(f"{path}: an .xlsx sheet is a VLMEvalKit file — pass --format vlmevalkit (or auto)")
    if fmt == "lmms-eval":
        return _join(bench, path, fmt, [_lmms_row(r, family(bench)) for r in _json_rows(path, text, lmms=True)],
                     model_name=lmms_model_name(path))
    return _read_official(bench, path, text)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e}) — pass a JSON, JSONL, TSV, CSV or XLSX "
                        "predictions file") from None


def detect_format(path: Path, text: str | None) -> str:
    """lmms-eval log lines carry doc_id / resps / filtered_resps; VLMEvalKit sheets are tables (or
    JSON records with `prediction`); everything else is the benchmark's official format."""
    if path.suffix.lower() in TABLE_SUFFIXES or text is None:
        return "vlmevalkit"
    whole = _whole_json(text)
    if isinstance(whole, dict) and isinstance(whole.get("logs"), list):
        return "lmms-eval"
    if isinstance(whole, list) and whole and isinstance(whole[0], dict) and "prediction" in whole[0]:
        return "vlmevalkit"
    first = whole if isinstance(whole, dict) else _first_line(text)
    if isinstance(first, dict) and ({"doc_id", "resps", "filtered_resps"} & set(first)):
        return "lmms-eval"
    return "official"


def _whole_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _first_line(text: str) -> Any:
    line = next((ln for ln in text_lines(text) if ln.strip()), "")
    return _whole_json(line)


def _json_rows(path: Path, text: str, *, lmms: bool = False) -> list[tuple[str, dict]]:
    """(where, row) for each JSON line (or each item of an lmms-eval `{"logs": [...]}` file)."""
    whole = _whole_json(text)
    if lmms and isinstance(whole, dict) and isinstance(whole.get("logs"), list):
        items = [(f"{path}: logs[{i}]", row) for i, row in enumerate(whole["logs"])]
    else:
        items = []
        for lineno, line in enumerate(text_lines(text), 1):
            if not line.strip():
                continue
            try:
                items.append((f"{path}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not a JSON line ({e}) — pass the file unchanged") from None
    for where, row in items:
        if not isinstance(row, dict):
            raise DataError(f"{where}: a JSON {type(row).__name__}, not an object — each line must be one object")
    return items


# ---- rows: what each format says about the question, and the reply -------------------------------


@dataclass
class _Row:
    where: str
    """Where the row is, for error messages (file:line)."""
    label: str
    """A short name for the row in the unmatched-rows line ("line 7", "row 12")."""
    response: str
    ids: list[str] = field(default_factory=list)
    """Candidate sample ids, most specific first."""
    texts: list[str] = field(default_factory=list)
    """Question texts (possibly followed by options and instructions) to match when no id does."""
    videos: list[str] = field(default_factory=list)
    answer: str | None = None
    order: float = 0.0
    error: str | None = None
    prompt_text: str | None = None
    logged: LoggedReply | None = None


def _lmms_row(item: tuple[str, dict], fam: str) -> _Row:
    where, row = item
    try:
        response = lmms_log_response(row)
    except (KeyError, TypeError, IndexError):
        raise DataError(f"{where}: an lmms-eval sample line without resps or filtered_resps — pass the "
                        "--log_samples file (<date>_samples_<task>.jsonl) unchanged") from None
    doc = raw if isinstance(raw := row.get("doc"), dict) else {}
    payloads = [v for v in row.values() if isinstance(v, dict) and v is not doc]
    key = ID_FIELDS.get(fam)
    # mlvu's payload question_id is the question text, not an id
    id_sources = (doc,) if fam == "mlvu" else (doc, *payloads)
    ids = [row.get("sample_id")] + ([d.get(key) for d in id_sources] if key else [])
    texts = [doc.get("question")]
    if fam == "mlvu":  # mlvu logs the question text (options included) as its question_id
        texts += [d.get("question_id") for d in payloads]
    texts.append(row.get("input"))
    videos = [doc.get(f) for f in VIDEO_FIELDS.get(fam, ())]
    picks = [d.get("parsed_pred") for d in payloads] if fam == "longvideobench" else []
    logged = LoggedReply(filtered=row.get("filtered_resps") is not None,
                         pick=next((p for p in picks if isinstance(p, str) and p), None))
    answer = next((d.get("answer") for d in payloads if isinstance(d.get("answer"), str)), None) or row.get("target")
    doc_id = row.get("doc_id")
    return _Row(where=where, label=_label(where), response=str(response or ""), ids=_strings(ids),
                texts=_strings(texts), videos=_strings(videos), answer=answer if isinstance(answer, str) else None,
                order=float(doc_id) if isinstance(doc_id, (int, float)) else 0.0,
                prompt_text=row["input"] if isinstance(row.get("input"), str) else None, logged=logged)


def _vlmevalkit_row(item: tuple[str, dict], failed_rows: bool = True) -> _Row:
    where, row = item
    if "prediction" not in row:
        raise DataError(f"{where}: no 'prediction' column — pass VLMEvalKit's <model>_<dataset> prediction "
                        "file (not the _score / _rating / _acc files)")
    prediction = row.get("prediction")
    text = "" if prediction is None or (isinstance(prediction, float) and prediction != prediction) else str(prediction)
    ids = [row.get(k) for k in ("sample_id", "question_id", "id", "uid", "key")]
    videos = [row.get(k) for k in ("video", "video_id", "video_path", "videoID")]
    index = row.get("index")
    return _Row(where=where, label=_label(where), response=text, ids=_strings(ids),
                texts=_strings([row.get("question")]), videos=_strings(videos),
                answer=str(row["answer"]) if row.get("answer") not in (None, "") else None,
                order=_number(index), error=f"VLMEvalKit: {FAIL_MSG}" if failed_rows and is_api_failure(text) else None)


def _label(where: str) -> str:
    """'<path>:7' -> 'line 7'; '<path>: row 12' -> 'row 12'."""
    tail = where.rsplit(": ", 1)[-1] if ": " in where else where
    return f"line {tail.rsplit(':', 1)[-1]}" if tail == where else tail


def _strings(values: list[Any]) -> list[str]:
    """Non-empty scalar values as text (a whole float from a spreadsheet cell as an integer: 55.0 -> '55')."""
    out = []
    for v in values:
        if isinstance(v, float) and (v != v or v.is_integer()):  # NaN: an empty cell
            v = int(v) if v == v else None
        if v is not None and not isinstance(v, (dict, list, bool)) and str(v).strip():
            out.append(str(v))
    return out


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


# ---- joining rows with samples -------------------------------------------------------------------


def _norm(text: str) -> str:
    """Whitespace-insensitive text: lines stripped, runs of blanks as one space, blank lines dropped."""
    lines = (re.sub(r"[ \t]+", " ", ln).strip() for ln in str(text).strip().splitlines())
    return "\n".join(ln for ln in lines if ln)


def _question_variants(sample: Sample) -> set[str]:
    """The ways harnesses write a sample's question: bare, as released (LVBench's inline options),
    with '(A) …' or 'A. …' option lines."""
    out = {sample.question, str(sample.extra.get("question_raw") or "")}
    if sample.options:
        out.add(sample.question + "\n" + "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(sample.options)))
        out.add(sample.question + "\n" + "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(sample.options)))
    return {_norm(t) for t in out if _norm(t)}


def _video_names(sample: Sample) -> set[str]:
    path = Path(sample.video.path)
    named = {str(sample.extra[k]) for k in ("videoID", "video_id", "key") if sample.extra.get(k)}
    return {path.name, path.stem} | named


def _answer_forms(sample: Sample) -> set[str]:
    if isinstance(sample.answer, int) and 0 <= sample.answer < len(sample.options):
        return {LETTERS[sample.answer], sample.options[sample.answer]}
    return {str(sample.answer)} if sample.answer is not None else set()


class _Index:
    """Samples by id and by normalised question text; hands each sample out once."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples
        self.by_id = {s.id: i for i, s in enumerate(samples)}
        self.by_text: dict[str, list[int]] = {}
        for i, s in enumerate(samples):
            for variant in _question_variants(s):
                self.by_text.setdefault(variant, []).append(i)
        self.used: set[int] = set()

    def match(self, row: _Row) -> tuple[int | None, bool]:
        """(sample index or None, whether the row only repeats an already answered sample)."""
        for rid in row.ids:
            if rid in self.by_id:
                i = self.by_id[rid]
                return (None, True) if i in self.used else (self._take(i), False)
        for text in row.texts:
            found = self._by_text(text)
            if found:
                found = self._narrow(found, row)
                free = [i for i in found if i not in self.used]
                return (self._take(free[0]), False) if free else (None, True)
        return None, False

    def _by_text(self, text: str) -> list[int]:
        """Samples whose question is the text, or the text's first lines (the rest: options, instructions)."""
        lines = _norm(text).split("\n")
        for k in range(len(lines), 0, -1):
            hits = self.by_text.get("\n".join(lines[:k]))
            if hits:
                return sorted(set(hits))
        return []

    def _narrow(self, found: list[int], row: _Row) -> list[int]:
        """Among samples with the same question text, those on the row's video, then those with its
        answer (each hint applied only while it leaves some); the rest keep load order, which pairs
        the n-th repeat of a question in the file with its n-th sample."""
        if len(found) > 1 and row.videos:
            want = {form for v in row.videos for form in (v, Path(v).name, Path(v).stem)}
            found = [i for i in found if want & _video_names(self.samples[i])] or found
        if len(found) > 1 and row.answer:
            found = [i for i in found if row.answer.strip() in _answer_forms(self.samples[i])] or found
        return found

    def _take(self, i: int) -> int:
        self.used.add(i)
        return i


def _join(bench: Benchmark, path: Path, fmt: str, rows: list[_Row], *, model_name: str | None) -> SavedFile:
    samples, _ = bench.loaded()
    index = _Index(samples)
    out = SavedFile(path=path, format=fmt, rows=[], n_rows=len(rows), model_name=model_name)
    for row in sorted(rows, key=lambda r: r.order):  # stable: file order among equal doc ids
        i, repeated = index.match(row)
        if i is not None:
            out.rows.append(SavedRow(samples[i], row.response, row.error, row.prompt_text, row.logged))
        elif repeated:
            out.duplicates += 1
        else:
            out.unmatched.append(row.ids[0] if row.ids else row.label)
    return out


# ---- the official formats: the benchmark's own reader --------------------------------------------


def _read_official(bench: Benchmark, path: Path, text: str) -> SavedFile:
    """`Benchmark.read_predictions`, with unknown ids of an {id: response} file counted instead of
    refused, and lvu's export lines ({sample_id, response}) joined here (unknown ids counted)."""
    whole = _whole_json(text)
    export_lines = isinstance(_first_line(text), dict) if whole is None else (
        isinstance(whole, dict) and "sample_id" in whole)
    if export_lines:
        rows = [_Row(where=w, label=_label(w), response=str(r.get("response") or ""),
                     ids=_strings([r.get("sample_id")])) for w, r in _json_rows(path, text)]
        if any(not r.ids for r in rows):
            bad = next(r for r in rows if not r.ids)
            raise DataError(f"{bad.where}: no sample_id — the official format here is lvu's export "
                            "(sample_id, response); for lmms-eval or VLMEvalKit files pass --format")
        return _join(bench, path, "official", rows, model_name=None)
    id_map = json_id_map(text)
    if id_map is not None:
        known_ids = {s.id for s in bench.loaded()[0]}
        known = {k: v for k, v in id_map.items() if str(k) in known_ids}
        unknown = [str(k) for k in id_map if str(k) not in known_ids]
        if id_map and not known:
            raise DataError(f"{path}: none of its {len(id_map)} ids is a {bench.name} question in this data "
                            "— pass --root with the release the predictions were made on")
        pairs = _read_filtered(bench, path, known) if unknown else bench.read_predictions(path)
        out = _from_pairs(path, pairs, n_rows=len(id_map))
        out.unmatched = unknown
        return out
    contained = family(bench) == "videomme" and text.lstrip().startswith("[")  # read leniently there
    out = _from_pairs(path, bench.read_predictions(path), n_rows=None)
    out.self_contained = contained
    return out


def _read_filtered(bench: Benchmark, path: Path, known: dict) -> list[tuple[Sample, str]]:
    """The benchmark's reader on the file's known ids only (it refuses, or skips silently, the rest)."""
    with tempfile.TemporaryDirectory() as tmp:
        filtered = Path(tmp) / path.name
        filtered.write_text(json.dumps(known), encoding="utf-8")
        return bench.read_predictions(filtered)


def _from_pairs(path: Path, pairs: list[tuple[Sample, str]], n_rows: int | None) -> SavedFile:
    out = SavedFile(path=path, format="official", rows=[], n_rows=len(pairs) if n_rows is None else n_rows)
    seen: set[str] = set()
    for sample, text in pairs:
        if sample.id in seen:
            out.duplicates += 1
            continue
        seen.add(sample.id)
        out.rows.append(SavedRow(sample, text))
    return out


# ---- model names -----------------------------------------------------------------------------------


def lmms_results(path: Path) -> Iterator[dict[str, Any]]:
    """The `<date>_results.json` documents beside an lmms-eval samples file, the one of the same
    date first (unreadable ones skipped)."""
    date = path.name.split("_samples_")[0] if "_samples_" in path.name else None
    candidates = sorted(path.parent.glob("*_results.json"))
    if date is not None:
        candidates.sort(key=lambda p: not p.name.startswith(date))
    for results in candidates:
        doc = _whole_json(_safe_text(results) or "")
        if isinstance(doc, dict):
            yield doc


def lmms_model_name(path: Path) -> str | None:
    """The model of an lmms-eval run: `model_name` (or the pretrained= argument, or the model type)
    in the `<date>_results.json` beside the samples file, the one of the same date first."""
    for doc in lmms_results(path):
        config = raw if isinstance(raw := doc.get("config"), dict) else {}
        args = str(config.get("model_args") or "")
        pretrained = re.search(r"(?:^|,)\s*(?:pretrained|model|model_version|model_name)=([^,]+)", args)
        name = doc.get("model_name") or (pretrained.group(1) if pretrained else None) or config.get("model")
        if name:
            return str(name)
    return None


def vlmevalkit_model_name(path: Path) -> str | None:
    """VLMEvalKit writes outputs/<model>/[<eval id>/]<model>_<dataset>.<ext>: the folder name that
    prefixes the file name."""
    for folder in (path.parent, path.parent.parent):
        if folder.name and path.stem.startswith(folder.name + "_"):
            return folder.name
    return None


def _safe_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
