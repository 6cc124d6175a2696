"""`lvu review`: rater verification in the browser (docs/review.md).

    lvu review OUT [--raters a,b,c] [--examiners d] [--per-question 3]   serve the review app
    lvu review OUT --protocol longvideobench [--role writer=a ...]       another protocol (docs/review.md)
    lvu review export OUT -o FINAL                                      the verified benchmark
    lvu review stats OUT                                                agreement and outcomes

`lvu review OUT` is `lvu review serve OUT`. Thin: the app is lvu.web.review_app, the decisions
lvu.web.review_store, the export lvu.web.review_export. typer + rich only at module level.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from lvu.cli.common import console, err_console


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


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def _open(source_path: Path, db: Path | None) -> tuple[Any, Any]:
    from lvu.web.review_data import default_db, load_source
    from lvu.web.review_store import ReviewStore

    source = load_source(source_path)
    return source, ReviewStore(db if db is not None else default_db(source_path))


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
    from lvu.errors import LvuError
    from lvu.web.review_app import create_review_app
    from lvu.web.review_protocols import load_protocol
    from lvu.web.serve import allowed_hosts, listen, serve_forever, warn_if_exposed

    source, store = _open(out, db)
    chosen = store.protocol(load_protocol(protocol) if protocol is not None else None, record=True)
    if chosen.rule == "chain":
        wanted: dict[str, list[str] | None] = {}
        for spec in role or []:
            name, sep, names = spec.partition("=")
            if not sep or not _names(names):
                raise LvuError(f"--role {spec}: write ROLE=name[,name...], e.g. --role {chosen.roles[0].name}=alice")
            wanted[name.strip()] = _names(names)
        for given, r in ((raters, chosen.roles[0]), (examiners, chosen.roles[1] if len(chosen.roles) > 1 else None)):
            if given is not None and r is not None:
                wanted.setdefault(r.name, _names(given))
        people = store.setup_chain(source, chosen, wanted)
    else:
        if role:
            raise LvuError(f"--role is for chain protocols; the {chosen.name} protocol takes --raters / --examiners")
        people = store.setup(source, _names(raters), _names(examiners), per_question)
    app = create_review_app(source, store, allowed_hosts=allowed_hosts(host))
    sock, url = listen(host, port)
    bad = f", {source.n_bad} bad line(s) skipped" if source.n_bad else ""
    each = f"{store.per_question()} raters each" if chosen.rule == "majority" else \
        " -> ".join(r.name for r in chosen.roles)
    if chosen.name != "neptune":
        each = f"{chosen.name} protocol: {each}"
    print(f"lvu review of {source.path} ({len(source.items)} questions{bad}, {each}; "
          f"decisions in {store.path}) at {url} — Ctrl-C to stop", flush=True)
    assigned = store.assignments()
    for p in people:
        page = "examine" if p.examiner and not p.rater and chosen.rule == "majority" else "queue"
        n = sum(p.name in r for r in assigned.values())
        print(f"  {p.name} ({p.roles}{f', {n} questions' if p.rater else ''}): {url}{page}?t={p.token}", flush=True)
    warn_if_exposed(host, "and has a rater link can read and change these decisions (plain HTTP)")
    first = next((p for p in people if p.rater), None)
    serve_forever(app, sock, open_url=f"{url}queue?t={first.token}" if open_browser and first else None)


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
    from lvu.web.review_export import export

    source, store = _open(out, db)
    summary = export(source, store, final, min_ratings=min_ratings)
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

    from lvu.web.review_export import agreement_of, outcomes

    source, store = _open(out, db)
    protocol = store.protocol()
    if protocol.rule == "chain":  # one decision per round: no agreement to measure
        from lvu.web.review_export import reviewed

        statuses = Counter(r.status for r in reviewed(source, store, protocol))
        console.print(f"{protocol.name} protocol: " + ", ".join(f"{statuses.get(k, 0)} {k}" for k in
                                                                 ("accepted", "rejected", "pending")),
                      markup=False, highlight=False)
        console.print(store.verify_log().line(), markup=False, highlight=False)
        return
    table = Table("field", "items", "agreement %", "unanimous %", "chance %", "Fleiss' kappa")
    for f in agreement_of(source, store):
        cells = [f["agreement_pct"], f["unanimous_pct"], f["chance_pct"]]
        table.add_row(f["field"], str(f["items"]), *("" if x is None else f"{x:.1f}" for x in cells),
                      "" if f["kappa"] is None else f"{f['kappa']:.3f}")
    console.print(table)
    counts: dict[str, int] = {}
    for _, final in outcomes(source, store):
        counts[final.status] = counts.get(final.status, 0) + 1
    console.print(", ".join(f"{n} {k}" for k, n in counts.items()), markup=False, highlight=False)
    console.print(store.verify_log().line(), markup=False, highlight=False)
