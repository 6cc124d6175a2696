"""`lvu results ...`: list, show, tag, delete, submit and export stored runs. Registered in lvu/cli/root.py.

    lvu results list --benchmark videomme --model fake-smart --tag paper --since 2025-01-01 [--json]
    lvu results show RUN [--json] [--trace SAMPLE_ID]
    lvu results tag RUN NAME [--untag]
    lvu results delete RUN [--yes]

Imports only typer and rich at module level (`lvu --help` stays fast); docs/runs.md has the details.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from lvu.cli.common import ResultsDir, check_tags

if TYPE_CHECKING:
    from lvu.api.records import RunRecord

results_app = typer.Typer(help="Inspect, tag, delete and export stored runs.", no_args_is_help=True)
RunRef = Annotated[Optional[str], typer.Argument(help="Run id or prefix (default: the latest run).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]


def located(results_dir: Path | None, *, quiet: bool = False) -> Path:
    """The results directory holding the runs (a one-line error when none is there), its place
    printed to stderr in one line (`quiet`: not, e.g. beside --json)."""
    from lvu.api.location import existing_results, location_line
    from lvu.cli.common import err_console

    directory, why = existing_results(results_dir)
    if not quiet:
        err_console.print(location_line(directory, why), markup=False, highlight=False)
    return directory


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
    from lvu.api.results import list_runs
    from lvu.cli.common import console, err_console

    where = located(results_dir, quiet=as_json)  # read-only: works on a full disk too; creates nothing
    listed = list_runs(where, benchmark=benchmark, model=model, tag=tag, since=since)
    if as_json:
        print(json.dumps([row.to_json() for row in listed.runs], ensure_ascii=False, indent=1))
        if listed.nothing:
            err_console.print(listed.nothing, markup=False, highlight=False)
        return
    if listed.nothing:  # one line that says why, not an empty table
        console.print(listed.nothing, markup=False, highlight=False)
        return
    from lvu.console_output import add_id_column, fold_cells

    table = Table(title=f"runs in {listed.store_path}", title_justify="left")
    add_id_column(table)
    for col in ("benchmark", "model", "settings", "samples", "errors", "unreadable", "score %", "status", "tags"):
        table.add_column(col)
    table.add_column("updated", no_wrap=True)
    for row in listed.runs:
        r = row.info
        settings = ", ".join(f"{k}={v}" for k, v in row.settings.items())
        table.add_row(r.run_id, row.data, row.model, settings, r.coverage, str(r.n_errors), str(row.unreadable),
                      row.score, r.status, ",".join(row.tags), local_time(r.updated))
    console.print(fold_cells(table))


def local_time(stamp: float) -> str:
    """'2025-03-01 14:05' in local time (the date column of `lvu results list`)."""
    from lvu.api.results import local_time as as_local

    return as_local(stamp)


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
    from lvu.api.results import view_run
    from lvu.cli.common import console, err_console, print_tables
    from lvu.console_output import failure_line

    record = read_run(run_id, located(results_dir, quiet=as_json))
    info, results = record.info, record.samples
    if trace is not None:
        return _print_trace(record, trace, as_json)
    shown = view_run(record)
    if as_json:
        print(json.dumps(shown.to_json(), ensure_ascii=False, indent=1, default=str))
        return
    console.print_json(json.dumps({"run_id": info.run_id, "spec": info.spec.model_dump(mode="json"), "env": info.env}))
    if shown.predates_fingerprints:
        err_console.print(f"note: run {info.run_id} predates data fingerprints — its id does not follow the data's "
                          "content, so it cannot tell whether the data changed since; `lvu run` with the same "
                          "arguments now makes a new, fingerprinted run (docs/runs.md, Run identity)",
                          markup=False, highlight=False)
    if shown.n_stale:
        err_console.print(f"note: {shown.n_stale} of run {info.run_id}'s scores were computed by other lvu scoring "
                          "code (an upgrade, or an edited benchmark) — run the same `lvu run` command to grade them "
                          "again from the stored responses (no model call; docs/runs.md, Regrading)",
                          markup=False, highlight=False)
    print_tables(shown.tables, f"{shown.data} × {shown.model}")
    headline = shown.summary
    console.print(f"run {info.run_id}: {info.coverage} samples stored without error, {info.n_errors} failed, "
                  f"status {info.status}" + (f" · {headline}" if headline else ""), markup=False, highlight=False)
    for r in results:
        if r.error:
            hint = f" (traceback: lvu results show {info.run_id} --trace {r.sample_id})" if r.traceback else ""
            console.print(failure_line(r.sample_id, r.error) + hint, markup=False, highlight=False)
    if shown.unreadable_note:
        err_console.print(shown.unreadable_note, markup=False, highlight=False)


def _print_trace(record: RunRecord, sample_id: str, as_json: bool) -> None:
    """`results show RUN --trace ID`: the sample's stored traceback, or one line saying why there is none."""
    from lvu.api.results import sample_of
    from lvu.cli.common import console
    from lvu.console_output import failure_line

    found = sample_of(record, sample_id)
    if as_json:
        print(json.dumps({"run_id": record.run_id, "sample_id": sample_id, "error": found.error,
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
    from lvu.api.results import set_run_tag
    from lvu.cli.common import console

    check_tags([name])
    changed = set_run_tag(run_id, name, untag=untag, results_dir=located(results_dir))  # creates no store
    done = f"removed tag {name}" if changed.removed else f"tagged {name}"
    console.print(f"run {changed.run_id}: {done}", markup=False, highlight=False)


@results_app.command("delete")
def results_delete(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix (no default: name the run to delete).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    results_dir: ResultsDir = None,
) -> None:
    """Delete a run: its row, stored samples and tags, and its reports (reports/<run_id>*.html)."""
    from lvu.api.results import delete_run
    from lvu.cli.common import console

    deletion = delete_run(run_id, results_dir=located(results_dir),  # creates no store
                          confirm=None if yes else lambda what: typer.confirm(f"delete {what}?", default=False))
    if not deletion.deleted:
        console.print("nothing deleted", markup=False, highlight=False)
        raise typer.Exit(1)
    console.print(f"deleted {deletion.what}", markup=False, highlight=False)


@results_app.command("submit")
def results_submit(
    run_id: RunRef = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Submission file to write.")] = Path("submission.json"),
    results_dir: ResultsDir = None,
) -> None:
    """Write a run's predictions in the benchmark's official submission format (hidden-answer splits)."""
    from lvu.api.results import submit_run
    from lvu.cli.common import console

    console.print(f"wrote {submit_run(run_id, out, results_dir=located(results_dir))}")


@results_app.command("export")
def results_export(
    run_id: RunRef = None,
    format: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default: stdout).")] = None,
    results_dir: ResultsDir = None,
) -> None:
    """Export one row per sample (run_id, model, data, sample_id, prediction, score, correct, error, ...)."""
    from lvu.api.results import check_export_format, export_rows, write_export
    from lvu.cli.common import err_console

    check_export_format(format)
    rows = export_rows(run_id, results_dir=located(results_dir))  # its one line goes to stderr
    handle = open(out, "w", newline="", encoding="utf-8") if out else sys.stdout
    try:
        write_export(rows, handle, format)
    finally:
        if out:
            handle.close()
    if out:
        err_console.print(f"wrote {len(rows)} rows to {out}")
