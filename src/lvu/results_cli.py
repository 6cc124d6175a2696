"""`lvu results ...`: list, show, tag, delete, submit and export stored runs. Registered in lvu/cli.py.

    lvu results list --benchmark videomme --tag paper --since 2025-01-01 [--json]
    lvu results show RUN [--json]
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

from lvu.cli_common import check_tags
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.runs.store import RunInfo, Store

results_app = typer.Typer(help="Inspect, tag, delete and export stored runs.", no_args_is_help=True)

ResultsDir = Annotated[
    Optional[Path],
    typer.Option("--results-dir", help="Where runs are stored (default: $LVU_RESULTS_DIR or ./lvu-results)."),
]
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
              since: str | None) -> list[tuple[RunInfo, list[str]]]:
    """Stored runs, newest first, with their tags, kept by every filter given."""
    after = _since(since)
    tags = store.tags()
    out = []
    for info in store.runs():
        run_tags = tags.get(info.run_id, [])
        if benchmark is not None and info.benchmark != benchmark:
            continue
        if model is not None and info.model != model:
            continue
        if tag is not None and tag not in run_tags:
            continue
        if after is not None and info.updated < after:
            continue
        out.append((info, run_tags))
    return out


@results_app.command("list")
def results_list(
    benchmark: Annotated[Optional[str], typer.Option("--benchmark", "-b", help="Only runs of this benchmark.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Only runs of this model backend.")] = None,
    tag: Annotated[Optional[str], typer.Option("--tag", help="Only runs with this tag (`lvu results tag`).")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only runs updated on or after this day, YYYY-MM-DD (local time).")] = None,
    as_json: AsJson = False,
    results_dir: ResultsDir = None,
) -> None:
    """List stored runs, newest first: samples stored without error / the benchmark's samples,
    failed samples, the headline score (the benchmark's own overall row), the status, tags and
    when the run was last updated."""
    from lvu.cli_common import console
    from lvu.runs.summaries import run_headlines
    from lvu.runs.store import Store

    store = Store(results_dir, read_only=True)  # read-only: works on a full disk too
    kept = _filtered(store, benchmark, model, tag, since)
    scores = run_headlines(store, [r for r, _ in kept])  # cached per run: O(runs) unless samples changed
    if as_json:
        rows = []
        for r, run_tags in kept:
            top = scores[r.run_id]
            rows.append({"run_id": r.run_id, "benchmark": r.benchmark, "model": r.model, "settings": _settings(r),
                         "coverage": {"n_ok": r.n_ok, "n_total": r.n_total}, "errors": r.n_errors,
                         "score": None if top is None else {"value": top.value, "row": top.row, "n": top.n},
                         "status": r.status, "tags": run_tags, "created": iso_time(r.created),
                         "updated": iso_time(r.updated)})
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    from lvu.console_output import add_id_column, fold_cells

    table = Table(title=f"runs in {store.path}", title_justify="left")
    add_id_column(table)
    for col in ("benchmark", "model", "settings", "samples", "errors", "score %", "status", "tags"):
        table.add_column(col)
    table.add_column("updated", no_wrap=True)
    for r, run_tags in kept:
        settings = ", ".join(f"{k}={v}" for k, v in _settings(r).items())
        top = scores[r.run_id]
        table.add_row(r.run_id, r.benchmark, r.model, settings, r.coverage, str(r.n_errors),
                      top.text() if top else "", r.status, ",".join(run_tags), local_time(r.updated))
    console.print(fold_cells(table))


@results_app.command("show")
def results_show(run_id: RunRef = None, as_json: AsJson = False, results_dir: ResultsDir = None) -> None:
    """Show a run's spec, environment, breakdown tables and failed samples."""
    from lvu.cli_common import console, err_console, print_tables
    from lvu.console_output import failure_line
    from lvu.runs.engine import benchmark_of
    from lvu.runs.headline import headline_of_tables
    from lvu.runs.identity import predates_fingerprints
    from lvu.runs.store import Store

    store = Store(results_dir, read_only=True)
    info = store.run(run_id)
    results = store.results(info.run_id)
    bench = benchmark_of(info.spec)
    tables = bench.aggregate(results)
    top = headline_of_tables(tables, bench.settings.get("subset"))
    if as_json:
        print(json.dumps({
            "run_id": info.run_id, "spec": info.spec.model_dump(mode="json"), "env": info.env,
            "tags": store.tags().get(info.run_id, []), "status": info.status,
            "coverage": {"n_ok": info.n_ok, "n_total": info.n_total}, "errors": info.n_errors,
            "score": None if top is None else {"value": top.value, "row": top.row, "n": top.n},
            "tables": [{"title": t.title, "rows": [{"name": str(name), "n": n, "score": None if s != s else s}
                                                   for name, n, s in t.rows]} for t in tables],
            "failures": [{"sample_id": r.sample_id, "error": r.error} for r in results if r.error],
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
    print_tables(tables, f"{info.benchmark} × {info.model}")
    console.print(f"run {info.run_id}: {info.coverage} samples stored without error, {info.n_errors} failed, "
                  f"status {info.status}" + (f" · {top.describe()}" if top else ""), markup=False, highlight=False)
    for r in results:
        if r.error:
            console.print(failure_line(r.sample_id, r.error), markup=False, highlight=False)


@results_app.command("tag")
def results_tag(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix.")],
    name: Annotated[str, typer.Argument(help="The tag, e.g. paper-v2.")],
    untag: Annotated[bool, typer.Option("--untag", help="Remove the tag instead.")] = False,
    results_dir: ResultsDir = None,
) -> None:
    """Tag a run (or remove a tag with --untag); `lvu results list --tag NAME` lists the tagged runs."""
    from lvu.cli_common import console
    from lvu.runs.store import Store

    check_tags([name])
    store = Store(results_dir)
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
    from lvu.cli_common import console
    from lvu.runs.store import Store

    store = Store(results_dir)
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
    from lvu.cli_common import console
    from lvu.runs.engine import benchmark_of
    from lvu.runs.store import Store

    store = Store(results_dir)
    info = store.run(run_id)
    path = benchmark_of(info.spec).write_submission(store.results(info.run_id), out)
    console.print(f"wrote {path}")


EXPORT_FIELDS = ["run_id", "sample_id", "question", "options", "answer", "prediction", "score", "correct", "counted", "error",
                 "latency", "response", "labels", "frame_timestamps", "judge"]


@results_app.command("export")
def results_export(
    run_id: RunRef = None,
    format: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default: stdout).")] = None,
    results_dir: ResultsDir = None,
) -> None:
    """Export one row per sample (run_id, sample_id, prediction, score, correct, error, ...)."""
    from lvu.cli_common import err_console
    from lvu.runs.store import Store

    if format not in ("jsonl", "csv"):
        raise LvuError(f"--format {format!r} is not supported — use jsonl or csv")
    store = Store(results_dir, read_only=True)
    info = store.run(run_id)
    rows = []
    for r in store.iter_results(info.run_id):
        row = {"run_id": info.run_id, **r.model_dump(mode="json")}
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
