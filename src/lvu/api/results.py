"""Managing stored runs (`lvu results ...`): list runs with filters,
view one run (its tables, headline, notes), read a failed sample's traceback, tag, delete, write a
submission file and export one row per sample. Every function returns what the command prints, so
a script gets the same answers without opening lvu.runs.store.Store itself."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from lvu.api.records import RunRecord
from lvu.errors import LvuError
from lvu.runs.headline import Headline
from lvu.runs.location import existing_results
from lvu.runs.store import RunInfo, Store
from lvu.types import Breakdown, SampleResult


def iso_time(stamp: float) -> str:
    """'2025-03-01T14:05:09+01:00': local time with its offset (the --json timestamps)."""
    return datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


def local_time(stamp: float) -> str:
    """'2025-03-01 14:05' in local time (the date column of `lvu results list`)."""
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _since(text: str | None) -> float | None:
    """`since` YYYY-MM-DD as a timestamp (local midnight), or a one-line error."""
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").timestamp()
    except ValueError:
        raise LvuError(f"--since {text!r}: not a date — use YYYY-MM-DD, e.g. --since 2025-01-31") from None


def _score_json(top: Headline | None, empty: bool) -> dict[str, Any] | None:
    return None if top is None or empty else {"value": top.value, "row": top.row, "n": top.n}


@dataclass(frozen=True)
class ListedRun:
    """One row of `lvu results list`: the run's stored row, its tags and what the columns show."""

    info: RunInfo
    tags: list[str]
    data: str
    """The data's shown name, e.g. 'jsonl(q.jsonl)'."""
    model: str
    """The model's shown name, e.g. 'openai(fake-smart)'."""
    settings: dict[str, Any]
    """The run's settings that are set (None values left out)."""
    unreadable: int
    """Replies with no readable answer."""
    headline: Headline | None
    no_answers: bool
    """True when every sample failed: the score column says so instead of a 0."""
    score: str
    """The score column's text."""

    def to_json(self) -> dict[str, Any]:
        """The row `lvu results list --json` prints."""
        r = self.info
        return {"run_id": r.run_id, "benchmark": r.benchmark, "data": self.data, "model": self.model,
                "backend": r.model, "settings": self.settings, "coverage": {"n_ok": r.n_ok, "n_total": r.n_total},
                "errors": r.n_errors, "unreadable": self.unreadable, "score": _score_json(self.headline, self.no_answers),
                "no_answers": self.no_answers, "status": r.status, "tags": self.tags, "created": iso_time(r.created),
                "updated": iso_time(r.updated)}


@dataclass(frozen=True)
class RunList:
    """`lvu results list`: the runs kept by the filters, newest first."""

    store_path: Path
    """The run store's file (the table's title)."""
    runs: list[ListedRun]
    nothing: str | None = None
    """When filters kept no run: one line saying which filter matched nothing and what is stored."""


def _settings(info: RunInfo) -> dict[str, Any]:
    return {k: v for k, v in info.spec.settings.items() if v is not None}


def _stored_values(flag: str, runs: list[tuple[RunInfo, list[str]]]) -> str:
    """What the stored runs hold for `flag`, to pick a value that matches: 'models stored: openai(fake), ...'."""
    from lvu.runs.run_names import data_name, model_identity

    if flag == "--since":
        return f"the newest run was updated {local_time(max(info.updated for info, _ in runs))}"
    if flag == "--tag":
        names = sorted({t for _, run_tags in runs for t in run_tags})
        return f"tags stored: {', '.join(names)}" if names else "no run has a tag (`lvu results tag RUN NAME` adds one)"
    if flag == "--model":
        return "models stored: " + ", ".join(sorted({model_identity(info.spec) for info, _ in runs}))
    return "benchmarks stored: " + ", ".join(sorted({data_name(info.spec) for info, _ in runs}))


def _filtered(store: Store, benchmark: str | None, model: str | None, tag: str | None,
              since: str | None) -> tuple[list[tuple[RunInfo, list[str]]], str | None]:
    """Stored runs, newest first, with their tags, kept by every filter given; and, when the
    filters kept none, one line saying which filter matched nothing and what is stored instead."""
    from lvu.runs.run_names import matches_benchmark, matches_model

    after = _since(since)
    tags = store.tags()
    runs = [(info, tags.get(info.run_id, [])) for info in store.runs()]
    tests: dict[str, tuple[str | None, Callable[[RunInfo, list[str]], bool]]] = {  # flag -> (value, test)
        "--benchmark": (benchmark, lambda info, run_tags: matches_benchmark(info.spec, benchmark or "")),
        "--model": (model, lambda info, run_tags: matches_model(info.spec, model or "")),
        "--tag": (tag, lambda info, run_tags: tag in run_tags),
        "--since": (since, lambda info, run_tags: after is not None and info.updated >= after),
    }
    active = {flag: (value, test) for flag, (value, test) in tests.items() if value is not None}
    kept = [(info, run_tags) for info, run_tags in runs if all(test(info, run_tags) for _, test in active.values())]
    if kept or not active:
        return kept, None
    if not runs:
        return kept, f"no runs stored in {store.path} yet — start one with `lvu run`"
    for flag, (value, test) in active.items():
        if not any(test(info, run_tags) for info, run_tags in runs):
            return kept, f"no run matches {flag} {value}; {_stored_values(flag, runs)}"
    given = " ".join(f"{flag} {value}" for flag, (value, _) in active.items())
    return kept, f"no run matches {given} together (each alone matches some of the {len(runs)} stored runs)"


def list_runs(results_dir: str | Path | None = None, *, benchmark: str | None = None, model: str | None = None,
              tag: str | None = None, since: str | None = None) -> RunList:
    """Stored runs, newest first, kept by every filter given: `benchmark` (its name, data file or
    shown name), `model` (backend, served model or shown name), `tag`, `since` (YYYY-MM-DD, local).
    Read-only (works on a full disk; creates nothing).

        for row in list_runs(tag="paper").runs:
            print(row.info.run_id, row.data, row.model, row.score)
    """
    from lvu.runs.headline import score_cell
    from lvu.runs.run_names import data_name, model_identity, no_answers
    from lvu.runs.summaries import run_listing

    store = Store(results_dir, read_only=True)
    try:
        kept, nothing = _filtered(store, benchmark, model, tag, since)
        listing = run_listing(store, [r for r, _ in kept])  # cached per run: O(runs) unless samples changed
    finally:
        store.close()
    rows = [ListedRun(info=r, tags=run_tags, data=data_name(r.spec), model=model_identity(r.spec),
                      settings=_settings(r), unreadable=listing[r.run_id].unreadable,
                      headline=listing[r.run_id].headline, no_answers=no_answers(r.n_ok, r.n_errors) is not None,
                      score=score_cell(listing[r.run_id].headline, r.n_ok, r.n_errors))
            for r, run_tags in kept]
    return RunList(store_path=Path(store.path), runs=rows, nothing=nothing)


@dataclass(frozen=True)
class RunView:
    """`lvu results show RUN`: a stored run with its tables, headline and the notes printed beside."""

    record: RunRecord
    data: str
    model: str
    tables: list[Breakdown]
    headline: Headline | None
    no_answers: str | None
    """Why there is no score (every sample failed), or None."""
    summary: str | None
    """The headline in words (the end of the run line), or None."""
    predates_fingerprints: bool
    """The run's id does not follow its data's content (an old run)."""
    n_stale: int
    """Scores computed by other lvu scoring code than this one (regrade by running the same `lvu run`)."""
    unreadable: int
    unreadable_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """What `lvu results show RUN --json` prints."""
        info, results = self.record.info, self.record.samples
        return {
            "run_id": info.run_id, "data": self.data, "model": self.model,
            "spec": info.spec.model_dump(mode="json"), "env": info.env,
            "tags": self.record.tags, "status": info.status,
            "coverage": {"n_ok": info.n_ok, "n_total": info.n_total}, "errors": info.n_errors,
            "unreadable": self.unreadable,
            "score": _score_json(self.headline, self.no_answers is not None),
            "no_answers": self.no_answers is not None,
            "tables": [{"title": t.title, "rows": [{"name": str(name), "n": n, "score": None if s != s else s}
                                                   for name, n, s in t.rows]} for t in self.tables],
            "failures": [{"sample_id": r.sample_id, "error": r.error, "traceback": r.traceback}
                         for r in results if r.error],
        }


def view_run(record: RunRecord) -> RunView:
    """A stored run (`read_run`) with the benchmark's tables, its headline and its notes, as `lvu
    results show` prints them; needs the run's benchmark installed here."""
    from lvu.runs.grading import benchmark_of, grading_stamp
    from lvu.runs.headline import describe_run, headline_of_tables
    from lvu.runs.identity import predates_fingerprints
    from lvu.runs.run_names import data_name, model_identity, no_answers, unreadable, unreadable_note

    info, results = record.info, record.samples
    bench = benchmark_of(info.spec)
    tables = bench.aggregate(results)
    top = headline_of_tables(tables, bench.settings.get("subset"))
    stamp = grading_stamp(bench)
    return RunView(record=record, data=data_name(info.spec), model=model_identity(info.spec), tables=tables,
                   headline=top, no_answers=no_answers(info.n_ok, info.n_errors),
                   summary=describe_run(top, info.n_ok, info.n_errors),
                   predates_fingerprints=predates_fingerprints(info.spec.settings),
                   n_stale=sum(1 for r in results if r.error is None and r.judge is None and r.graded_by != stamp),
                   unreadable=len(unreadable(results)), unreadable_note=unreadable_note(results))


def sample_of(record: RunRecord, sample_id: str) -> SampleResult:
    """The stored sample `sample_id` of a run (e.g. to read its traceback), or a one-line LvuError
    naming the run's failed samples."""
    found = next((r for r in record.samples if r.sample_id == sample_id), None)
    if found is None:
        failed = [r.sample_id for r in record.samples if r.error]
        shown = ", ".join(failed[:10]) + (f" (+{len(failed) - 10} more)" if len(failed) > 10 else "")
        raise LvuError(f"sample {sample_id} not found in run {record.run_id}; its failed samples: {shown or 'none'}")
    return found


@dataclass(frozen=True)
class TagChange:
    run_id: str
    tag: str
    removed: bool
    """True: the tag was removed (`untag`); False: added."""


def set_run_tag(run_id: str, tag: str, *, untag: bool = False, results_dir: str | Path | None = None) -> TagChange:
    """Tag a stored run (an id or unique prefix), or remove the tag with `untag` (a one-line
    LvuError when the run has no such tag). Needs a stored run: creates no store."""
    store = Store(existing_results(results_dir)[0], read_only=False)
    try:
        info = store.run(run_id)
        if untag:
            if not store.remove_tag(info.run_id, tag):
                raise LvuError(f"run {info.run_id} has no tag {tag!r} — its tags: "
                               f"{', '.join(store.tags().get(info.run_id, [])) or 'none'}")
        else:
            store.add_tag(info.run_id, tag)
    finally:
        store.close()
    return TagChange(run_id=info.run_id, tag=tag, removed=untag)


@dataclass(frozen=True)
class RunDeletion:
    run_id: str
    what: str
    """'run ID (benchmark × model, N stored samples, K report file(s))'."""
    reports: list[Path] = field(default_factory=list)
    deleted: bool = True
    """False when `confirm` said no: nothing was deleted."""


def delete_run(run_id: str, *, results_dir: str | Path | None = None,
               confirm: Callable[[str], bool] | None = None) -> RunDeletion:
    """Delete a stored run: its row, samples and tags, and its reports (reports/<run_id>*.html).
    `confirm` is asked with what will go (e.g. a yes/no prompt); None deletes without asking."""
    store = Store(existing_results(results_dir)[0], read_only=False)
    try:
        info = store.run(run_id)
        reports = sorted((store.dir / "reports").glob(f"{info.run_id}*.html"))
        what = (f"run {info.run_id} ({info.benchmark} × {info.model}, {info.n_samples} stored samples"
                + (f", {len(reports)} report file(s)" if reports else "") + ")")
        if confirm is not None and not confirm(what):
            return RunDeletion(run_id=info.run_id, what=what, reports=reports, deleted=False)
        store.delete_run(info.run_id)
    finally:
        store.close()
    for path in reports:
        path.unlink(missing_ok=True)
    return RunDeletion(run_id=info.run_id, what=what, reports=reports)


def submit_run(run_id: str | None, out: str | Path, *, results_dir: str | Path | None = None) -> Path:
    """Write a stored run's predictions in its benchmark's official submission format (the
    hidden-answer splits); returns the file written."""
    from lvu.runs.grading import benchmark_of

    store = Store(results_dir, read_only=True)
    try:
        info = store.run(run_id)
        return Path(benchmark_of(info.spec).write_submission(store.results(info.run_id), Path(out)))
    finally:
        store.close()


EXPORT_FIELDS = ["run_id", "model", "data", "sample_id", "question", "options", "answer", "prediction", "score",
                 "correct", "counted", "error", "latency", "response", "labels", "frame_timestamps", "judge", "traceback"]
"""One row per sample; `model` and `data` are the run's names as `results list` shows them
(lvu.runs.run_names: 'openai(fake-smart)', 'jsonl(q.jsonl)'), so rows of several runs stay apart."""
EXPORT_FORMATS = ("jsonl", "csv")


def check_export_format(format: str) -> None:
    if format not in EXPORT_FORMATS:
        raise LvuError(f"--format {format!r} is not supported — use jsonl or csv")


def export_rows(run_id: str | None, *, results_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """One dict per stored sample of the run, with the keys of EXPORT_FIELDS."""
    from lvu.runs.run_names import data_name, model_identity

    store = Store(results_dir, read_only=True)
    try:
        info = store.run(run_id)
        names = {"run_id": info.run_id, "model": model_identity(info.spec), "data": data_name(info.spec)}
        rows = []
        for r in store.iter_results(info.run_id):
            row = {**r.model_dump(mode="json"), **names}
            rows.append({k: row.get(k) for k in EXPORT_FIELDS})
    finally:
        store.close()
    return rows


def write_export(rows: list[dict[str, Any]], handle: TextIO, format: str = "jsonl") -> None:
    """`export_rows` as JSON lines, or as CSV (lists and dicts as JSON text in their cells)."""
    check_export_format(format)
    if format == "jsonl":
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(handle, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
