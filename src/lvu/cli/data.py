"""`lvu data check` and `lvu data stats` (registered on `lvu data` by lvu.cli): what a benchmark's
data holds and what is wrong with it, and the papers' data tables — for a benchmark's release, any
lvu JSONL or a `lvu build` output. Thin: the work is in lvu.api.data (check_data, data_stats).

Both name their data the same way (lvu.api.benchmark_and_data): a benchmark name with --data/--root,
or the path of a .jsonl file (or of a folder holding one) in the benchmark's place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from lvu.cli.common import console, parse_kv

BENCHMARK_HELP = ("Benchmark name (`lvu list`), or the path of an lvu JSONL file (or of a folder holding one, "
                  "e.g. a `lvu build` output): `lvu data check q.jsonl` = `lvu data check jsonl --data q.jsonl`.")


def data_check(
    benchmark: Annotated[str, typer.Argument(help=BENCHMARK_HELP)],
    root: Annotated[Optional[Path], typer.Option("--root", "--data", help="Release files (official layout), or the JSONL file.")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the videos, looked in as `lvu run` does (a JSONL's videos: here first, then beside the file).")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (e.g. split=val).")] = [],
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts and problems as one JSON object.")] = False,
) -> None:
    """Validate a benchmark's data: counts (questions, videos found / missing, options per question,
    labels, subtitle files), then every problem one per line — unreadable records, repeated ids,
    answers outside the options, missing videos (naming every path tried) and subtitle files, counts
    against the paper — then `OK` or `N problem(s)` (exit 1)."""
    from lvu.api.data import benchmark_and_data, check_data

    name, root = benchmark_and_data(benchmark, root)
    checked = check_data(name, data=root, video_dir=video_dir, settings=parse_kv(setting, "--set"), label=benchmark)
    if as_json:
        print(json.dumps(checked.as_json(), ensure_ascii=False, indent=1))
    else:
        for line in checked.lines():
            console.print(line, markup=False, highlight=False)
    raise typer.Exit(1 if checked.problems else 0)


def data_stats(
    benchmark: Annotated[str, typer.Argument(help=BENCHMARK_HELP)],
    root: Annotated[Optional[Path], typer.Option("--data", "--root", help="Release files (official layout) or the JSONL file.")] = None,
    video_dir: Annotated[Optional[Path], typer.Option(help="Directory holding the videos (lengths and audio tracks are read from them).")] = None,
    setting: Annotated[list[str], typer.Option("--set", help="Benchmark setting, KEY=VALUE (e.g. split=val, subset=mmh).")] = [],
    paper: Annotated[Optional[bool], typer.Option("--paper/--no-paper", help="Show the paper's values beside (default: when the release has the paper's question count).")] = None,
    probe: Annotated[bool, typer.Option("--probe/--no-probe", help="Open video files for lengths the release lacks and for audio tracks.")] = True,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Also write the charts as PNGs into this directory.")] = None,
) -> None:
    """The paper's data tables: counts per label, words per duration group (Video-MME Table 2), answer
    letters, video lengths in the paper's buckets, subtitle/audio availability, LVBench's capability
    combinations, Neptune's question types and QAD lengths — with the paper's values beside."""
    from lvu.api.data import data_stats as compute
    from lvu.cli.analysis import print_table

    result = compute(benchmark, data=root, video_dir=video_dir, settings=parse_kv(setting, "--set"), paper=paper,
                     probe=probe)
    stats = result.stats
    console.print(f"[bold]{stats.title}[/]", highlight=False)
    for table in stats.tables:
        print_table(table)
    for note in stats.notes:
        console.print(note, markup=False, highlight=False, style="dim")
    if plot is not None:
        for path in result.write_plots(plot):
            console.print(f"plot: {path}", markup=False, highlight=False)
