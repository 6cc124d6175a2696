"""`lvu import`: another harness's saved responses as a stored run (lvu.runs.importer; docs/migrating.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from lvu.cli.common import RESULTS_DIR_HELP

if TYPE_CHECKING:
    from lvu.errors import LvuError

_DATA_FLAG = re.compile(r"(?<![\w-])--data(?![\w-])")


def with_root_flag(error: LvuError) -> LvuError:
    """The error as `lvu import` says it: benchmark loaders name the release folder `--data DIR`
    (`lvu run`'s flag); here that flag is --root (--data also works), the one --help shows."""
    text = _DATA_FLAG.sub("--root", str(error))
    try:
        return type(error)(text)
    except TypeError:  # an error class with its own arguments: keep it as it is
        return error


def import_results(
    file: Annotated[Path, typer.Argument(help="Saved responses: an lmms-eval --log_samples JSONL, a VLMEvalKit "
                                              "prediction sheet (.xlsx/.tsv/.csv), or the benchmark's official "
                                              "output file (what `lvu score` reads).")],
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name (`lvu list`), e.g. videomme.")],
    root: Annotated[Optional[Path], typer.Option("--root", "--data", help="The release the predictions were made on "
                                                 "(joins each row to its question; not needed for Video-MME's "
                                                 "official results JSON).")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the benchmark's videos.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="auto | lmms-eval | vlmevalkit | official.")] = "auto",
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model name; the run's model is imported:NAME "
                                                 "(default: lmms-eval's model_name from the results JSON beside "
                                                 "the log, VLMEvalKit's model folder, else the file name).")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (repeatable): e.g. "
                                               "compat=lmms-eval to score as that harness does, frames=64 to "
                                               "record the frames the harness used (else frames are what the "
                                               "file states, or unknown).")] = [],
    results_dir: Annotated[Optional[Path], typer.Option("--results-dir", help=RESULTS_DIR_HELP)] = None,
) -> None:
    """Store saved responses from lmms-eval, VLMEvalKit or the official format as a run.

    Every response is re-extracted and re-scored under lvu's protocol (official unless --set compat=),
    as `lvu score` scores the same file; then `lvu results show`, `lvu report`, `lvu compare --paper`
    and `lvu view` work on the run. Importing the same file again replaces its run.
    """
    from rich.markup import escape

    from lvu.api.scoring import import_results as import_file
    from lvu.cli.common import console, err_console, parse_kv, print_tables  # the CLI's consoles (one output style)
    from lvu.errors import LvuError

    settings = {"data": str(root) if root else None, "video_dir": str(video_dir) if video_dir else None,
                **parse_kv(setting, "--set")}
    try:
        run = import_file(file, benchmark, settings=settings, format=format, model=model, results_dir=results_dir)
    except LvuError as e:
        raise with_root_flag(e) from None
    for line in run.problems:
        err_console.print(line, markup=False, highlight=False)
    saved = run.saved
    print_tables(run.tables, f"{benchmark} × {run.spec.model}")
    failed = f", {run.n_failed} failed" if run.n_failed else ""
    console.print(f"run [bold]{run.run_id}[/]: imported {len(saved.rows)} of {saved.n_rows} rows "
                  f"({saved.format}) for {len(saved.rows)} of {run.n_total} samples{failed}"
                  + (f" · {escape(run.headline.describe())}" if run.headline else ""))
    where = f" --results-dir {results_dir}" if results_dir else ""
    console.print(f"next: lvu results show {run.run_id}{where} · lvu report {run.run_id}{where} · "
                  f"lvu compare {run.run_id} --paper{where}", markup=False, highlight=False)
