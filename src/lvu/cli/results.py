"""`lvu results ...`: list, show, tag, delete, submit and export stored runs. Registered in lvu/cli/root.py.

    lvu results list --benchmark videomme --model fake-smart --tag paper --since 2025-01-01 [--json]
    lvu results show RUN [--json] [--trace SAMPLE_ID]
    lvu results tag RUN NAME [--untag]
    lvu results delete RUN [--yes]

Imports only typer and rich at module level (`lvu --help` stays fast); docs/runs.md has the details.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from lvu.cli.common import ResultsDir, check_tags
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.runs.store import RunInfo, Store
    from lvu.types import SampleResult

results_app = typer.Typer(help="Inspect, tag, delete and export stored runs.", no_args_is_help=True)
RunRef = Annotated[Optional[str], typer.Argument(help="Run id or prefix (default: the latest run).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]


def local_time(stamp: float) -> str:
    """'2025-03-01 14:05' in local time (the date column of `lvu results list`)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def iso_time(stamp: float) -> str:
    """'2025-03-01T14:05:09+01:00': local time with its offset (the --json timestamps)."""
    return datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


def _since(text: str | None) -> float | None:
    """--since YYYY-MM-DD as a timestamp (local midnight), or a one-line error."""
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").timestamp()
    except ValueError:
        raise LvuError(f"--since {text!r}: not a date — use YYYY-MM-DD, e.g. --since 2025-01-31") from None


def _settings(info: RunInfo) -> dict[str, Any]:
    return {k: v for k, v in info.spec.settings.items() if v is not None}


def _filtered(store: Store, benchmark: str | None, model: str | None, tag: str | None,
              since: str | None) -> tuple[list[tuple[RunInfo, list[str]]], str | None]:
    """Stored runs, newest first, with their tags, kept by every filter given; and, when the
    filters kept none, one line saying which filter matched nothing and what is stored instead."""
    from lvu.runs.run_names import matches_benchmark, matches_model

    after = _since(since)
    tags = store.tags()
    runs = [(info, tags.get(info.run_id, [])) for info in store.runs()]
    tests = {  # flag -> (the value given, whether a run passes it)
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


@results_app.command("list")
def results_list(
    benchmark: Annotated[Optional[str], typer.Option("--benchmark", "-b", help="Only runs of this benchmark: its name (jsonl), its data file's name (q.jsonl) or path, or the shown name (jsonl(q.jsonl)).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Only runs of this model: the backend (openai), the served model (fake-smart) or the shown name (openai(fake-smart)).")] = None,
    tag: Annotated[Optional[str], typer.Option("--tag", help="Only runs with this tag (`lvu results tag`).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only runs updated on or after this day, YYYY-MM-DD (local time).")] = None,
    as_json: AsJson = False,
    results_dir: ResultsDir = None,
) -> None:
    """List stored runs, newest first: the data (benchmark and data file), the model (backend and
    served model), samples stored without error / the benchmark's samples, failed samples, replies
    with no readable answer, the headline score (the benchmark's own overall row; `no answers (N of
    N failed)` when every sample failed), the status, tags and when the run was last updated. When
    the filters keep no run, one line says which filter matched nothing and what is stored (exit 0)."""
    from lvu.cli.common import console, err_console, open_results
    from lvu.runs.headline import score_cell
    from lvu.runs.run_names import data_name, model_identity, no_answers
    from lvu.runs.summaries import run_listing

    store = open_results(results_dir, quiet=as_json)  # read-only: works on a full disk too; creates nothing
    kept, nothing = _filtered(store, benchmark, model, tag, since)
    listing = run_listing(store, [r for r, _ in kept])  # cached per run: O(runs) unless samples changed
    if as_json:
        rows = []
        for r, run_tags in kept:
            top, empty = listing[r.run_id].headline, no_answers(r.n_ok, r.n_errors) is not None
            rows.append({"run_id": r.run_id, "benchmark": r.benchmark, "data": data_name(r.spec),
                         "model": model_identity(r.spec), "backend": r.model, "settings": _settings(r),
                         "coverage": {"n_ok": r.n_ok, "n_total": r.n_total}, "errors": r.n_errors,
                         "unreadable": listing[r.run_id].unreadable,
                         "score": None if top is None or empty else {"value": top.value, "row": top.row, "n": top.n},
                         "no_answers": empty, "status": r.status, "tags": run_tags, "created": iso_time(r.created),
                         "updated": iso_time(r.updated)})
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        if nothing:
            err_console.print(nothing, markup=False, highlight=False)
        return
    if nothing:  # one line that says why, not an empty table
        console.print(nothing, markup=False, highlight=False)
        return
    from lvu.console_output import add_id_column, fold_cells

    table = Table(title=f"runs in {store.path}", title_justify="left")
    add_id_column(table)
    for col in ("benchmark", "model", "settings", "samples", "errors", "unreadable", "score %", "status", "tags"):
        table.add_column(col)
    table.add_column("updated", no_wrap=True)
    for r, run_tags in kept:
        settings = ", ".join(f"{k}={v}" for k, v in _settings(r).items())
        listed = listing[r.run_id]
        table.add_row(r.run_id, data_name(r.spec), model_identity(r.spec), settings, r.coverage, str(r.n_errors),
                      str(listed.unreadable), score_cell(listed.headline, r.n_ok, r.n_errors), r.status,
                      ",".join(run_tags), local_time(r.updated))
    console.print(fold_cells(table))


@results_app.command("show")
def results_show(
    run_id: RunRef = None,
    as_json: AsJson = False,
    trace: Annotated[Optional[str], typer.Option("--trace", metavar="SAMPLE_ID", help="Print the Python traceback stored with this failed sample (a plugin's exception), instead of the run.")] = None,
    results_dir: ResultsDir = None,
) -> None:
    """Show a run's spec, environment, breakdown tables and failed samples (`--trace ID`: one
    failed sample's stored traceback)."""
    from lvu.api.records import read_run
    from lvu.cli.common import console, err_console, print_tables
    from lvu.console_output import failure_line
    from lvu.runs.engine import benchmark_of
    from lvu.runs.headline import describe_run, headline_of_tables
    from lvu.runs.identity import predates_fingerprints
    from lvu.runs.location import existing_results, location_line
    from lvu.runs.run_names import data_name, model_identity, no_answers, unreadable, unreadable_note

    directory, why = existing_results(results_dir)  # as open_results: one line saying where (not beside --json)
    if not as_json:
        err_console.print(location_line(directory, why), markup=False, highlight=False)
    record = read_run(run_id, directory)
    info, results = record.info, record.samples
    if trace is not None:
        return _print_trace(info.run_id, results, trace, as_json)
    bench = benchmark_of(info.spec)
    tables = bench.aggregate(results)
    top = headline_of_tables(tables, bench.settings.get("subset"))
    empty = no_answers(info.n_ok, info.n_errors)
    if as_json:
        print(json.dumps({
            "run_id": info.run_id, "data": data_name(info.spec), "model": model_identity(info.spec),
            "spec": info.spec.model_dump(mode="json"), "env": info.env,
            "tags": record.tags, "status": info.status,
            "coverage": {"n_ok": info.n_ok, "n_total": info.n_total}, "errors": info.n_errors,
            "unreadable": len(unreadable(results)),
            "score": None if top is None or empty else {"value": top.value, "row": top.row, "n": top.n},
            "no_answers": empty is not None,
            "tables": [{"title": t.title, "rows": [{"name": str(name), "n": n, "score": None if s != s else s}
                                                   for name, n, s in t.rows]} for t in tables],
            "failures": [{"sample_id": r.sample_id, "error": r.error, "traceback": r.traceback}
                         for r in results if r.error],
        }, ensure_ascii=False, indent=1, default=str))
        return
    console.print_json(json.dumps({"run_id": info.run_id, "spec": info.spec.model_dump(mode="json"), "env": info.env}))
    if predates_fingerprints(info.spec.settings):
        err_console.print(f"note: run {info.run_id} predates data fingerprints — its id does not follow the data's "
                          "content, so it cannot tell whether the data changed since; `lvu run` with the same "
                          "arguments now makes a new, fingerprinted run (docs/runs.md, Run identity)",
                          markup=False, highlight=False)
    from lvu.runs.grading import grading_stamp

    stamp = grading_stamp(bench)
    stale = sum(1 for r in results if r.error is None and r.judge is None and r.graded_by != stamp)
    if stale:
        err_console.print(f"note: {stale} of run {info.run_id}'s scores were computed by other lvu scoring code "
                          "(an upgrade, or an edited benchmark) — run the same `lvu run` command to grade them "
                          "again from the stored responses (no model call; docs/runs.md, Regrading)",
                          markup=False, highlight=False)
    print_tables(tables, f"{data_name(info.spec)} × {model_identity(info.spec)}")
    headline = describe_run(top, info.n_ok, info.n_errors)
    console.print(f"run {info.run_id}: {info.coverage} samples stored without error, {info.n_errors} failed, "
                  f"status {info.status}" + (f" · {headline}" if headline else ""), markup=False, highlight=False)
    for r in results:
        if r.error:
            hint = f" (traceback: lvu results show {info.run_id} --trace {r.sample_id})" if r.traceback else ""
            console.print(failure_line(r.sample_id, r.error) + hint, markup=False, highlight=False)
    note = unreadable_note(results)
    if note:
        err_console.print(note, markup=False, highlight=False)


def _print_trace(run_id: str, results: list[SampleResult], sample_id: str, as_json: bool) -> None:
    """`results show RUN --trace ID`: the sample's stored traceback, or one line saying why there is none."""
    from lvu.cli.common import console
    from lvu.console_output import failure_line

    found = next((r for r in results if r.sample_id == sample_id), None)
    if found is None:
        failed = [r.sample_id for r in results if r.error]
        shown = ", ".join(failed[:10]) + (f" (+{len(failed) - 10} more)" if len(failed) > 10 else "")
        raise LvuError(f"sample {sample_id} not found in run {run_id}; its failed samples: {shown or 'none'}")
    if as_json:
        print(json.dumps({"run_id": run_id, "sample_id": sample_id, "error": found.error,
                          "traceback": found.traceback}, ensure_ascii=False, indent=1))
    elif found.traceback:
        console.print(f"{failure_line(sample_id, found.error or '')}\n{found.traceback.rstrip()}", markup=False,
                      highlight=False)
    elif found.error:
        console.print(f"no traceback stored for {sample_id}: it failed with a message, not an exception "
                      f"({found.error})", markup=False, highlight=False)
    else:
        console.print(f"no traceback stored for {sample_id}: it did not fail", markup=False, highlight=False)


@results_app.command("tag")
def results_tag(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix.")],
    name: Annotated[str, typer.Argument(help="The tag, e.g. paper-v2.")],
    untag: Annotated[bool, typer.Option("--untag", help="Remove the tag instead.")] = False,
    results_dir: ResultsDir = None,
) -> None:
    """Tag a run (or remove a tag with --untag); `lvu results list --tag NAME` lists the tagged runs."""
    from lvu.cli.common import console, open_results

    check_tags([name])
    store = open_results(results_dir, read_only=False)  # a tag needs a stored run: creates no store
    info = store.run(run_id)
    if untag:
        if not store.remove_tag(info.run_id, name):
            raise LvuError(f"run {info.run_id} has no tag {name!r} — its tags: "
                           f"{', '.join(store.tags().get(info.run_id, [])) or 'none'}")
        console.print(f"run {info.run_id}: removed tag {name}", markup=False, highlight=False)
    else:
        store.add_tag(info.run_id, name)
        console.print(f"run {info.run_id}: tagged {name}", markup=False, highlight=False)


@results_app.command("delete")
def results_delete(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix (no default: name the run to delete).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    results_dir: ResultsDir = None,
) -> None:
    """Delete a run: its row, stored samples and tags, and its reports (reports/<run_id>*.html)."""
    from lvu.cli.common import console, open_results

    store = open_results(results_dir, read_only=False)  # creates no store
    info = store.run(run_id)
    reports = sorted((store.dir / "reports").glob(f"{info.run_id}*.html"))
    what = (f"run {info.run_id} ({info.benchmark} × {info.model}, {info.n_samples} stored samples"
            + (f", {len(reports)} report file(s)" if reports else "") + ")")
    if not yes and not typer.confirm(f"delete {what}?", default=False):
        console.print("nothing deleted", markup=False, highlight=False)
        raise typer.Exit(1)
    store.delete_run(info.run_id)
    for path in reports:
        path.unlink(missing_ok=True)
    console.print(f"deleted {what}", markup=False, highlight=False)


@results_app.command("submit")
def results_submit(
    run_id: RunRef = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Submission file to write.")] = Path("submission.json"),
    results_dir: ResultsDir = None,
) -> None:
    """Write a run's predictions in the benchmark's official submission format (hidden-answer splits)."""
    from lvu.cli.common import console, open_results
    from lvu.runs.engine import benchmark_of

    store = open_results(results_dir)
    info = store.run(run_id)
    path = benchmark_of(info.spec).write_submission(store.results(info.run_id), out)
    console.print(f"wrote {path}")


EXPORT_FIELDS = ["run_id", "model", "data", "sample_id", "question", "options", "answer", "prediction", "score",
                 "correct", "counted", "error", "latency", "response", "labels", "frame_timestamps", "judge", "traceback"]
"""One row per sample; `model` and `data` are the run's names as `results list` shows them
(lvu.runs.run_names: 'openai(fake-smart)', 'jsonl(q.jsonl)'), so rows of several runs stay apart."""


@results_app.command("export")
def results_export(
    run_id: RunRef = None,
    format: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default: stdout).")] = None,
    results_dir: ResultsDir = None,
) -> None:
    """Export one row per sample (run_id, model, data, sample_id, prediction, score, correct, error, ...)."""
    from lvu.cli.common import err_console, open_results
    from lvu.runs.run_names import data_name, model_identity

    if format not in ("jsonl", "csv"):
        raise LvuError(f"--format {format!r} is not supported — use jsonl or csv")
    store = open_results(results_dir)  # its one line goes to stderr: stdout stays the rows
    info = store.run(run_id)
    names = {"run_id": info.run_id, "model": model_identity(info.spec), "data": data_name(info.spec)}
    rows = []
    for r in store.iter_results(info.run_id):
        row = {**r.model_dump(mode="json"), **names}
        rows.append({k: row.get(k) for k in EXPORT_FIELDS})
    handle = open(out, "w", newline="", encoding="utf-8") if out else sys.stdout
    try:
        if format == "jsonl":
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            writer = csv.DictWriter(handle, fieldnames=EXPORT_FIELDS)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in row.items()})
    finally:
        if out:
            handle.close()
    if out:
        err_console.print(f"wrote {len(rows)} rows to {out}")
