"""`lvu data stats`: the papers' data tables for a benchmark's release, any lvu JSONL or a `lvu build`
output (registered on `lvu data` by lvu.cli). Thin: the work is in lvu.analysis.data_stats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from lvu.cli_common import console, parse_kv


def data_stats(
    benchmark: Annotated[str, typer.Argument(help="Benchmark name (`lvu list`), or the path of an lvu JSONL file (a `lvu build` output).")],
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
    from lvu.analysis.data_stats import data_stats as compute
    from lvu.analysis_cli import print_table
    from lvu.runs.grading import make_benchmark

    settings = {"video_dir": str(video_dir) if video_dir else None, **parse_kv(setting, "--set")}
    name = benchmark
    if benchmark.endswith(".jsonl") or Path(benchmark).is_file():  # a file: lvu JSONL (what `lvu build` writes)
        name, root = "jsonl", Path(benchmark)
    if root is not None:
        settings["data"] = str(root)
    bench = make_benchmark(name, {k: v for k, v in settings.items() if v is not None})
    stats = compute(bench, paper=paper, probe=probe)
    console.print(f"[bold]{stats.title}[/]", highlight=False)
    for table in stats.tables:
        print_table(table)
    for note in stats.notes:
        console.print(note, markup=False, highlight=False, style="dim")
    if plot is not None:
        from lvu.analysis.plots import plot_bars, save

        plot.mkdir(parents=True, exist_ok=True)
        for chart in stats.charts:
            path = plot / f"{bench.name}-{chart.name}.png"
            save(plot_bars(chart.title, chart.names, chart.series, chart.y_label), path)
            console.print(f"plot: {path}", markup=False, highlight=False)
