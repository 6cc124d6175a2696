"""`lvu build convert ucf-crime|ego4d-nlq`: MLVU's two converted tasks (Anomaly Recognition from
UCF-Crime, Ego Reasoning from Ego4D NLQ) as lvu JSONL (docs/build.md, "MLVU's converted tasks").
Thin: lvu.api.build_convert runs the `convert-ucf-crime` and `convert-ego4d-nlq` build pipelines
(resumable, `lvu build status OUT` opens them); like every
command module this one imports only typer and rich at module level."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from lvu.cli.common import KV_HELP, Replace, console, err_console

convert_app = typer.Typer(help="Convert a dataset's labels into a multiple-choice benchmark, as MLVU did.",
                          no_args_is_help=True)

Annotations = Annotated[list[Path], typer.Argument(help="The annotation file(s), then the videos folder (last).",
                                                   metavar="ANNOTATIONS... VIDEOS", show_default=False)]
Out = Annotated[Path, typer.Option("--out", "-o", help="Output folder: the JSONL benchmark, summary.json, the build store.")]
Seed = Annotated[int, typer.Option(help="All randomness (decoys, answer positions) comes from it.")]
Llm = Annotated[Optional[str], typer.Option("--llm", help="Let this model (any lvu model: openai, gemini, ...) choose "
                                                           "the decoys among the candidates.")]
LlmArg = Annotated[Optional[list[str]], typer.Option("--llm-arg", help=f"--llm's arguments: {KV_HELP}")]
Concurrency = Annotated[int, typer.Option(help="LLM calls in flight.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
SHOWN = 20
"""Problem lines printed per kind; summary.json lists every one."""


@convert_app.command("ucf-crime")
def ucf_crime_command(
    inputs: Annotations,
    out: Out,
    min_seconds: Annotated[float, typer.Option("--min-seconds", help="Skip shorter videos (MLVU: longer than three minutes).")] = 180.0,
    seed: Seed = 0,
    llm: Llm = None,
    llm_arg: LlmArg = None,
    concurrency: Concurrency = 4,
    replace: Replace = False,
    quiet: Quiet = False,
) -> None:
    """Anomaly Recognition (MLVU AR) from UCF-Crime labels.

    One 4-option question per video, its class among three others. Files: Temporal_Anomaly_Annotation_for_Testing_Videos.txt and/or
    Anomaly_Train.txt / Anomaly_Test.txt; videos flat or in class folders.

        lvu build convert ucf-crime Temporal_Anomaly_Annotation_for_Testing_Videos.txt Anomaly_Train.txt UCF_Crimes/Videos -o ar
    """
    _convert("ucf-crime", {"min_seconds": min_seconds, "seed": seed}, inputs, out, llm, llm_arg, concurrency,
             replace, quiet)


@convert_app.command("ego4d-nlq")
def ego4d_nlq_command(
    inputs: Annotations,
    out: Out,
    seed: Seed = 0,
    llm: Llm = None,
    llm_arg: LlmArg = None,
    concurrency: Concurrency = 4,
    replace: Replace = False,
    quiet: Quiet = False,
) -> None:
    """Ego Reasoning (MLVU ER) from Ego4D NLQ queries.

    One 4-option question per language query: which time span of the video answers it. Files: nlq_train.json / nlq_val.json; videos named
    <clip_uid>.mp4 (clip times) or <video_uid>.mp4 (video times).

        lvu build convert ego4d-nlq ego4d_data/v2/annotations/nlq_val.json ego4d_data/v2/clips -o er
    """
    _convert("ego4d-nlq", {"seed": seed}, inputs, out, llm, llm_arg, concurrency, replace, quiet)


def _convert(dataset: Literal["ucf-crime", "ego4d-nlq"], options: dict[str, Any], inputs: list[Path], out: Path,
             llm: str | None, llm_arg: list[str] | None, concurrency: int, replace: bool, quiet: bool) -> None:
    from lvu.api.building_shortcuts import build_convert
    from lvu.cli.build_run import print_problems
    from lvu.cli.common import parse_kv

    done = build_convert(dataset, inputs, out, options=options,
                         llm=(llm, parse_kv(llm_arg or [], "--llm-arg")) if llm else None, concurrency=concurrency,
                         show_progress=not quiet, replace=replace, arg_flags={"llm": "--llm-arg "},
                         on_problems=lambda problems, n_items: _print_problems(
                             problems, options.get("min_seconds"), out if len(problems) < n_items else None))
    state, written = done.state, done.written
    if not written:
        print_problems(state, limit=SHOWN)
        console.print("not complete: run the same command again to resume (failed units are asked again); "
                      f"lvu build status {out} says what is missing", highlight=False)
        raise typer.Exit(130 if state.interrupted else 1)
    import json

    summary = json.loads(Path(written["summary"]).read_text(encoding="utf-8"))
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(summary["skipped"].items()))
    decoys = ", ".join(f"{n} {k}" for k, n in sorted(summary["decoys"].items()))
    console.print(f"{written['samples']} question(s) → {written['jsonl']}"
                  f"{f' (skipped: {skipped})' if skipped else ''}; decoys: {decoys or 'none'}",
                  markup=False, highlight=False)
    audit = summary.get("time_span_rules") or {}
    if audit:
        rules = ", ".join(f"{name} {acc:g} %" for name, acc in audit["accuracy"].items())
        console.print(f"time-span rules on the options alone (chance {audit['chance']:g} %): {rules}", markup=False,
                      highlight=False)
    if written.get("leak.json"):
        console.print(f"options-only audit: {written['leak.json']}", markup=False, highlight=False)
    console.print(f"run it: lvu run -b jsonl --data {written['jsonl']} -m MODEL --frames 32", markup=False,
                  highlight=False)


def _print_problems(problems: list[Any], min_seconds: float | None, out: Path | None) -> None:
    """One line per problem (the same missing video once, with how many records it held), at
    most SHOWN per kind; too-short videos as one count (`out`: where summary.json lists them all;
    None: nothing will be written, so every line is printed)."""
    by_kind: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for p in problems:
        by_kind[p.kind][p.reason if p.kind == "missing" else p.source + p.record].append(p)
    for kind, groups in by_kind.items():
        if kind == "short" and out is not None:
            err_console.print(f"skipped {len(groups)} video(s) shorter than --min-seconds {min_seconds:g} "
                              f"({out / 'summary.json'} lists them)", markup=False, highlight=False)
            continue
        for group in list(groups.values())[:SHOWN if out is not None else None]:
            more = f" ({len(group)} records)" if len(group) > 1 else ""
            err_console.print(f"{kind}: {group[0].line()}{more}", markup=False, highlight=False)
        if out is not None and len(groups) > SHOWN:
            err_console.print(f"{kind}: ... and {len(groups) - SHOWN} more ({out / 'summary.json'} lists every one)",
                              markup=False, highlight=False)
