"""`lvu review`: rater verification in the browser (docs/review.md).

    lvu review OUT [--raters a,b,c] [--examiners d] [--per-question 3]   serve the review app
    lvu review OUT --protocol longvideobench [--role writer=a ...]       another protocol (docs/review.md)
    lvu review export OUT -o FINAL                                      the verified benchmark
    lvu review stats OUT                                                agreement and outcomes

`lvu review OUT` is `lvu review serve OUT`. Thin: the work is lvu.api.review (open_review,
serve_review, review_stats, export_review), which also serves `lvu view` (the results viewer,
registered by root.py from here). typer + rich only at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from lvu.cli.common import ResultsDir, console, err_console


class _ServeByDefault(TyperGroup):
    """`lvu review OUT ...` runs `serve`; `lvu review export ...` and `stats` run themselves."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["serve", *args]
        return super().parse_args(ctx, args)


review_app = typer.Typer(cls=_ServeByDefault, no_args_is_help=True,
                         help="Verify built questions in the browser: raters, examiner, agreement, export.")

Db = Annotated[Optional[Path], typer.Option("--db", help="The review's SQLite file (default: <file>.review.sqlite "
                                                         "beside the reviewed JSONL).")]


@review_app.command("serve")
def serve(
    out: Annotated[Path, typer.Argument(help="A build output folder (benchmark.jsonl) or an lvu JSONL benchmark.")],
    raters: Annotated[Optional[str], typer.Option(help="Comma-separated rater names (default: the stored ones, "
                                                       "first time rater1..rater3).")] = None,
    examiners: Annotated[Optional[str], typer.Option(help="Comma-separated examiner names (second round).")] = None,
    per_question: Annotated[Optional[int], typer.Option(
        "--per-question", min=1, help="Raters per question (default: stored, first time 3).")] = None,
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8766,
    host: Annotated[str, typer.Option(help="Address to bind; the default serves this machine only.")] = "127.0.0.1",
    db: Db = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the first rater's queue in a browser.")] = False,
    protocol: Annotated[Optional[str], typer.Option(
        "--protocol", help="How questions are reviewed: neptune (default), videomme, videomme-revise, lvbench, "
                           "longvideobench, or a YAML/JSON protocol file (docs/review.md \"Protocols\"). Stored in "
                           "the review file on first start; a later start with another one is refused.")] = None,
    role: Annotated[Optional[list[str]], typer.Option(
        "--role", help="ROLE=name,name: who takes a role of a chain protocol (e.g. --role writer=ann --role "
                       "examiner=eve); default: the stored people, first time one per role named ROLE1. "
                       "--raters / --examiners name the first / second role.")] = None,
) -> None:
    """Serve the review app and print each person's link (it carries their token)."""
    from lvu.api.review import open_review, serve_review

    session = open_review(out, db=db, protocol=protocol, raters=raters, examiners=examiners,
                          per_question=per_question, roles=role)

    def print_links(url: str) -> None:
        source, bad = session.source, f", {session.source.n_bad} bad line(s) skipped" if session.source.n_bad else ""
        print(f"lvu review of {source.path} ({len(source.items)} questions{bad}, {session.each}; "
              f"decisions in {session.store.path}) at {url} — Ctrl-C to stop", flush=True)
        for link in session.links(url):
            p = link.person
            print(f"  {p.name} ({p.roles}{f', {link.n_questions} questions' if p.rater else ''}): {link.url}",
                  flush=True)

    serve_review(session, host=host, port=port, open_browser=open_browser, on_listening=print_links)


@review_app.command("export")
def export_command(
    out: Annotated[Path, typer.Argument(help="The reviewed build folder or JSONL (as given to lvu review).")],
    final: Annotated[Path, typer.Option("-o", "--output", help="Folder for the verified benchmark.")],
    db: Db = None,
    min_ratings: Annotated[Optional[int], typer.Option(
        "--min-ratings", min=1, help="Submitted decisions a majority needs (default: raters per question).")] = None,
) -> None:
    """Write the verified benchmark under the review's protocol: benchmark.jsonl, decisions.jsonl,
    versions.jsonl; Neptune's neptune_full.json and mmh_candidates.jsonl (neptune), or
    LongVideoBench's lvb_val.json with videos/ and subtitles/ (longvideobench)."""
    from lvu.api.review import export_review

    summary = export_review(out, final, db=db, min_ratings=min_ratings).summary
    if summary["protocol"] == "neptune" or summary["neptune schema"]:
        console.print(f"{summary['accepted']} accepted, {summary['rejected']} rejected, {summary['unresolved']} "
                      f"unresolved (examiner needed), {summary['incomplete']} incomplete; {summary['neptune schema']} in "
                      f"Neptune's schema; {summary['versions']} decision versions -> {summary['out']}",
                      markup=False, highlight=False)
    else:
        console.print(f"{summary['protocol']} protocol: {summary['accepted']} accepted, {summary['rejected']} rejected, "
                      f"{summary['pending']} pending; {summary['versions']} decision versions -> {summary['out']}",
                      markup=False, highlight=False)
    for line in summary["leak_warnings"]:  # never silenced (as in every build)
        err_console.print(line, markup=False, highlight=False)
    console.print(f"options-only leak audit: {Path(summary['out']) / 'leak.json'}", markup=False, highlight=False)
    console.print(summary["log"].line(), markup=False, highlight=False)
    if summary["log"].broken:
        raise typer.Exit(1)
    console.print(f"run it: lvu run -b jsonl --data {Path(summary['out']) / 'benchmark.jsonl'} -m MODEL",
                  markup=False, highlight=False)
    if release := summary["release"]:
        left = f" ({release['left out']} left out: see the warnings)" if release["left out"] else ""
        console.print(f"{release['file']}: {release['questions']} questions{left}; run it: {release['run']}",
                      markup=False, highlight=False)


@review_app.command("stats")
def stats_command(
    out: Annotated[Path, typer.Argument(help="The reviewed build folder or JSONL.")],
    db: Db = None,
) -> None:
    """Agreement per field (percent agreement, Fleiss' kappa) and the questions' outcomes."""
    from rich.table import Table

    from lvu.api.review import review_stats

    stats = review_stats(out, db=db)
    if stats.protocol.rule == "chain":  # one decision per round: no agreement to measure
        console.print(f"{stats.protocol.name} protocol: " + ", ".join(f"{n} {k}" for k, n in stats.outcomes.items()),
                      markup=False, highlight=False)
        console.print(stats.log_line, markup=False, highlight=False)
        return
    table = Table("field", "items", "agreement %", "unanimous %", "chance %", "Fleiss' kappa")
    for f in stats.agreement:
        cells = [f["agreement_pct"], f["unanimous_pct"], f["chance_pct"]]
        table.add_row(f["field"], str(f["items"]), *("" if x is None else f"{x:.1f}" for x in cells),
                      "" if f["kappa"] is None else f"{f['kappa']:.3f}")
    console.print(table)
    console.print(", ".join(f"{n} {k}" for k, n in stats.outcomes.items()), markup=False, highlight=False)
    console.print(stats.log_line, markup=False, highlight=False)


def view(
    results_dir: ResultsDir = None,
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[str, typer.Option(help="Address to bind; the default serves this machine only.")] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the viewer in a web browser.")] = False,
) -> None:
    """Browse stored runs in a local web viewer: runs, breakdown tables, and every sample's frames,
    subtitle cues, exact prompt, raw response, prediction and score."""
    from lvu.api.review import view as serve_viewer

    serve_viewer(results_dir, port=port, host=host, open_browser=open_browser)
