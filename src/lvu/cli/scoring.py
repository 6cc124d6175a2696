"""`lvu score`: saved model responses scored under the official protocol, nothing stored
(lvu.api.score; `lvu import` stores the same scores as a run). Registered in lvu/cli/root.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from lvu.cli.common import console, err_console, parse_kv, print_tables


def score(
    benchmark: Annotated[str, typer.Argument(help="Benchmark name.")],
    predictions: Annotated[Path, typer.Argument(help="Predictions file: the benchmark's official output format, an lmms-eval --log_samples JSONL or a VLMEvalKit prediction sheet.")],
    root: Annotated[Optional[Path], typer.Option("--root", "--data", help="Release files, when the predictions file lacks the questions.")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (e.g. compat=lmms-eval).")] = [],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write per-sample results as JSONL.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="auto | lmms-eval | vlmevalkit | official (as `lvu import`).")] = "auto",
) -> None:
    """Score saved model responses with the official extraction and aggregation (no model is run, nothing
    is stored: `lvu import` stores the same scores as a run)."""
    from lvu.api.scoring import score as score_file

    settings = {"data": str(root) if root else None, **parse_kv(setting, "--set")}
    result = score_file(benchmark, predictions, settings=settings, format=format)
    for line in result.problems:
        err_console.print(line, markup=False, highlight=False)
    print_tables(result.tables, f"{benchmark} — {predictions.name}")
    if out:
        console.print(f"wrote {result.write_jsonl(out)} rows to {out}")
