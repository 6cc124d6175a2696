"""`lvu data check` and `lvu data stats` (registered on `lvu data` by lvu.cli): what a benchmark's
data holds and what is wrong with it, and the papers' data tables — for a benchmark's release, any
lvu JSONL or a `lvu build` output. Thin: the work is in lvu.analysis.data_check / data_stats.

Both name their data the same way (`benchmark_and_data`): a benchmark name with --data/--root, or
the path of a .jsonl file (or of a folder holding one) in the benchmark's place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from lvu.cli.common import console, parse_kv
from lvu.errors import LvuError

BENCHMARK_HELP = ("Benchmark name (`lvu list`), or the path of an lvu JSONL file (or of a folder holding one, "
                  "e.g. a `lvu build` output): `lvu data check q.jsonl` = `lvu data check jsonl --data q.jsonl`.")


def benchmark_and_data(benchmark: str, data: Path | None) -> tuple[str, Path | None]:
    """(benchmark name, data path) from what the user typed. A registered benchmark name (or a
    plugin's `module:Class`) is a name, even where a folder of that name exists; otherwise a path
    ending in .jsonl, or an existing file or folder, is lvu JSONL data (`jsonl` with that --data).
    An existing file that is not .jsonl, or a folder without exactly one .jsonl file, is a
    one-line LvuError saying how to name its benchmark."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    path = Path(benchmark).expanduser()
    if benchmark in BENCHMARKS.names() or ":" in benchmark or not (benchmark.endswith(".jsonl") or path.exists()):
        return benchmark, data  # a name (an unknown one gets the registry's error, with suggestions)
    if data is not None:
        raise LvuError(f"{benchmark} is the data already — drop --data {data}, or name the benchmark: "
                       f"lvu data ... BENCHMARK --data {data}")
    if path.is_dir():
        found = sorted(path.glob("*.jsonl"))
        if len(found) != 1:
            some = f" ({', '.join(f.name for f in found[:4])}{', ...' if len(found) > 4 else ''})" if found else ""
            raise LvuError(f"{path}: a folder holding {len(found)} .jsonl files{some} — pass the sample file "
                           f"itself, or name the benchmark whose release it is: BENCHMARK --data {path}")
    elif path.exists() and path.suffix != ".jsonl":
        raise LvuError(f"{path}: not an lvu .jsonl file — name the benchmark whose release file it is: "
                       f"BENCHMARK --data {path} (`lvu list` names them)")
    return "jsonl", path


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
    from lvu.analysis.data_check import check_data
    from lvu.runs.grading import make_benchmark

    name, root = benchmark_and_data(benchmark, root)
    settings = {"data": str(root) if root else None, "video_dir": str(video_dir) if video_dir else None,
                **parse_kv(setting, "--set")}
    bench = make_benchmark(name, {k: v for k, v in settings.items() if v is not None})
    checked = check_data(bench, benchmark)
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
    from lvu.analysis.data_stats import data_stats as compute
    from lvu.cli.analysis import print_table
    from lvu.runs.grading import make_benchmark

    settings = {"video_dir": str(video_dir) if video_dir else None, **parse_kv(setting, "--set")}
    name, root = benchmark_and_data(benchmark, root)
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
