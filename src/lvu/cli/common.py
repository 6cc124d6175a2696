"""What every command module shares: the two consoles (one output style), the --results-dir
option and opening the runs it names (`open_results`), KEY=VALUE parsing, the --limit and --tag
checks, and the tables of a run's scores.

cli.py registers the commands; the command modules (cli/run.py, cli/results.py, cli/judge.py,
cli/analysis.py, cli/importing.py, cli/review.py) import these from here, never from root.py,
so no command module and root.py import each other. `lvu --help` loads this module: its help texts
come from lvu.api.location, as light as lvu.runs.location (the store loads when a command opens runs).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

# The rule for where runs are, in words: every command's --results-dir help says it (re-exported).
from lvu.api.location import RESULTS_DIR_HELP as RESULTS_DIR_HELP
from lvu.api.location import RESULTS_DIR_RULE as RESULTS_DIR_RULE
from lvu.args import check_tags as check_tags  # the tag rule lives with the other argument checks (the store applies it too)
from lvu.console_output import fold_cells, make_console
from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.api.location import Store

console = make_console()
err_console = make_console(stderr=True)

ResultsDir = Annotated[Optional[Path], typer.Option("--results-dir", help=RESULTS_DIR_HELP)]


def open_results(results_dir: Path | None, *, read_only: bool = True, quiet: bool = False) -> Store:
    """The store of runs for a command that needs runs already stored (every read command, and
    `results tag/delete`, `judge score`): found by `results_location`, its place printed to stderr
    in one line (`quiet`: not, e.g. beside --json), and a one-line LvuError saying where lvu
    looked when there is none there — creating nothing."""
    from lvu.api.location import Store, existing_results, location_line

    directory, why = existing_results(results_dir)
    if not quiet:
        err_console.print(location_line(directory, why), markup=False, highlight=False)
    return Store(directory, read_only=read_only)


_KV_PIECE = re.compile(r"[A-Za-z_][\w.]*=")
KV_HELP = ("KEY=VALUE (repeatable); K1=V1,K2=V2 is several pairs when every comma piece is KEY=VALUE "
           "— quote a value with commas as JSON: K='\"a,b=c\"'")


def split_pairs(item: str, what: str) -> list[str]:
    """`k1=v1,k2=v2` (the lmms-eval habit) as ["k1=v1", "k2=v2"]: split at commas only when the
    value is not JSON and every comma piece is KEY=VALUE with an identifier key. A value with
    commas and no KEY= piece (`prompt=a,b`) stays whole; one where only some pieces look like
    KEY=VALUE is ambiguous and refused, since guessing either way silently misreads the run."""
    value = item.split("=", 1)[1]
    if "," not in value:
        return [item]
    try:
        json.loads(value)
        return [item]  # a JSON list, object or string keeps its commas
    except json.JSONDecodeError:
        pass
    pieces = item.split(",")
    keyed = [bool(_KV_PIECE.match(p)) for p in pieces[1:]]
    if not any(keyed):
        return [item]
    if all(keyed) and _KV_PIECE.match(pieces[0]):
        return pieces
    raise LvuError(f"{what} {item!r} mixes KEY=VALUE pieces with other comma-separated text — pass one "
                   f"{what} per pair, or quote a value with commas as JSON: {what} 'KEY=\"a,b\"'")


def parse_kv(items: list[str], what: str) -> dict[str, object]:
    """`k=v` pairs (`k1=v1,k2=v2` too: `split_pairs`); values parsed as JSON when they look like it
    (numbers, true/false, lists, objects, "quoted strings"), else kept as text. Each backend or
    benchmark converts its values with lvu.args (so `False` and `no` are false there too)."""
    out: dict[str, object] = {}
    for item in items:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise LvuError(f"{what} {item!r} is not KEY=VALUE — e.g. {what} temperature=0")
        for pair in split_pairs(item, what):
            key, value = pair.split("=", 1)
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value
    return out


REPLACE_HELP = ("Rebuild an -o folder that holds this build of other inputs or settings (it says what "
                "changes; what is no longer built leaves the outputs). Default: refuse, and resume the same build.")
EXECUTOR_HELP = "local (default) | ray: the units on a Ray cluster (the ray extra; docs/build.md, Scale-out)."
RAY_ADDRESS_HELP = "Ray cluster to join: ray://HOST:10001, HOST:6379 or auto (default: $RAY_ADDRESS, else a local Ray)."
RAY_ARG_HELP = "Ray executor setting, KEY=VALUE (repeatable): num_replicas, num_gpus, num_cpus, decode_cpus, ..."

# The options every build command shares (one definition; ResultsDir is the same for runs).
Replace = Annotated[bool, typer.Option("--replace", help=REPLACE_HELP)]
Executor = Annotated[str, typer.Option("--executor", help=EXECUTOR_HELP)]
RayAddress = Annotated[Optional[str], typer.Option("--ray-address", help=RAY_ADDRESS_HELP)]
RayArgs = Annotated[Optional[list[str]], typer.Option("--ray-arg", help=RAY_ARG_HELP)]


def check_limit(limit: int | None) -> None:
    """`--limit 0` would store an empty run whose score is nan: refuse it before anything runs."""
    if limit is not None and limit < 1:
        raise LvuError(f"--limit {limit}: must be at least 1 (the first K samples) — leave --limit out to run them all")


def print_tables(tables, title: str) -> None:
    for t in tables:
        table = Table(title=f"{title} — {t.title}" if t.title != "overall" else title, title_justify="left")
        table.add_column(t.title if t.title != "overall" else "")
        table.add_column("n", justify="right")
        table.add_column("score %", justify="right")
        for name, n, score in t.rows:
            table.add_row(name, str(n), f"{score:.1f}")
        console.print(fold_cells(table))


def frames_setting(text: str | None) -> int | str | None:
    """`--frames`: a whole number becomes an int (the frame count); anything else (Neptune's
    `1fps`, `center`, `first`; LongVideoBench's `1fps`) goes to the benchmark as text, which accepts
    it or refuses it in one line naming what it takes."""
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.lstrip("-").isdigit() else text
