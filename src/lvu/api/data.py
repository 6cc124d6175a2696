"""A benchmark's data, without running anything: what it holds and what is wrong with it
(`check_data`, `lvu data check`) and the papers' data tables (`data_stats`, `lvu data stats`),
for a benchmark's release, any lvu JSONL or a `lvu build` output. Both name their data the same
way (`benchmark_and_data`): a benchmark name with its data path, or the path of a .jsonl file
(or of a folder holding one) in the benchmark's place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.analysis.data_check import DataCheck
from lvu.analysis.data_stats import DataStats
from lvu.errors import LvuError

__all__ = ["DataCheck", "DataStats", "StatsResult", "benchmark_and_data", "check_data", "data_stats"]


def benchmark_and_data(benchmark: str, data: str | Path | None) -> tuple[str, Path | None]:
    """(benchmark name, data path) from what the user typed. A registered benchmark name (or a
    plugin's `module:Class`) is a name, even where a folder of that name exists; otherwise a path
    ending in .jsonl, or an existing file or folder, is lvu JSONL data (`jsonl` with that --data).
    An existing file that is not .jsonl, or a folder without exactly one .jsonl file, is a
    one-line LvuError saying how to name its benchmark."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    data = Path(data) if data is not None else None
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


def _benchmark(benchmark: str, data: str | Path | None, video_dir: str | Path | None,
               settings: dict[str, Any] | None, *, data_wins: bool) -> Any:
    """The benchmark object `benchmark` (a name or a data path) with its data, videos and settings;
    `data_wins`: the data path over a `data` key in `settings` (`lvu data stats`), else the other
    way round (`lvu data check`), as the two commands always had it."""
    from lvu.runs.grading import make_benchmark

    name, path = benchmark_and_data(benchmark, data)
    merged: dict[str, Any] = {"data": None if data_wins or path is None else str(path),
                              "video_dir": str(video_dir) if video_dir else None, **(settings or {})}
    if data_wins and path is not None:
        merged["data"] = str(path)
    return make_benchmark(name, {k: v for k, v in merged.items() if v is not None})


def check_data(benchmark: str, *, data: str | Path | None = None, video_dir: str | Path | None = None,
               settings: dict[str, Any] | None = None, label: str | None = None) -> DataCheck:
    """Validate a benchmark's data: counts (questions, videos found / missing, options per question,
    labels, subtitle files) and every problem (unreadable records, repeated ids, answers outside
    the options, missing videos naming every path tried, counts against the paper). `benchmark`
    is a name (its release at `data`) or the path of lvu JSONL data; `label` names it in the
    result (default: as given). `DataCheck.lines()` is what `lvu data check` prints."""
    from lvu.analysis.data_check import check_data as check

    return check(_benchmark(benchmark, data, video_dir, settings, data_wins=False), label or benchmark)


@dataclass
class StatsResult:
    """The data tables of one benchmark's data (`data_stats`)."""

    benchmark: str
    """The benchmark's name (`jsonl` for lvu JSONL data)."""
    stats: DataStats
    """Its title, tables, charts and notes."""

    def write_plots(self, folder: str | Path) -> list[Path]:
        """The charts as PNGs, `<folder>/<benchmark>-<chart>.png` (the folder is created); their paths."""
        from lvu.analysis.plots import plot_bars, save

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for chart in self.stats.charts:
            path = folder / f"{self.benchmark}-{chart.name}.png"
            save(plot_bars(chart.title, chart.names, chart.series, chart.y_label), path)
            paths.append(path)
        return paths


def data_stats(benchmark: str, *, data: str | Path | None = None, video_dir: str | Path | None = None,
               settings: dict[str, Any] | None = None, paper: bool | None = None, probe: bool = True) -> StatsResult:
    """The paper's data tables of a benchmark's data: counts per label, words per duration group,
    answer letters, video lengths in the paper's buckets, subtitle / audio availability, ... with
    the paper's values beside (`paper`: None shows them when the release has the paper's question
    count). `probe` opens video files for lengths the release lacks and for audio tracks."""
    from lvu.analysis.data_stats import data_stats as compute

    bench = _benchmark(benchmark, data, video_dir, settings, data_wins=True)
    return StatsResult(bench.name, compute(bench, paper=paper, probe=probe))
