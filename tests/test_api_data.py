"""lvu.api's data entries: `benchmark_and_data` (a name, or a data path in the benchmark's place),
`check_data` (`lvu data check`) and `data_stats` (`lvu data stats`), returning what the commands print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.api import StatsResult, benchmark_and_data, check_data, data_stats
from lvu.api.data import DataCheck
from lvu.cli import app
from lvu.errors import LvuError
from lvu.media.testing import make_video


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """q.jsonl: six questions on two videos, then one whose video is nowhere."""
    root = tmp_path_factory.mktemp("data")
    for name in ("a.mp4", "b.mp4"):
        make_video(root / name, seconds=2, fps=4, gop=4, size=(64, 48))
    lines = [{"id": f"q{i}", "video": "a.mp4" if i % 2 else "b.mp4", "question": f"Question {i}?",
              "options": ["w", "x", "y", "z"], "answer": i % 4, "labels": {"kind": "odd" if i % 2 else "even"}}
             for i in range(6)]
    lines.append({"id": "gone", "video": "gone.mp4", "question": "?", "options": ["w", "x"], "answer": 0})
    (root / "q.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_benchmark_and_data_tells_a_name_from_a_data_path(folder):
    assert benchmark_and_data("haystack", None) == ("haystack", None)
    assert benchmark_and_data("jsonl", folder / "q.jsonl") == ("jsonl", folder / "q.jsonl")
    assert benchmark_and_data(str(folder / "q.jsonl"), None) == ("jsonl", folder / "q.jsonl")
    assert benchmark_and_data(str(folder), None) == ("jsonl", folder)  # a folder holding one .jsonl
    with pytest.raises(LvuError, match="is the data already"):
        benchmark_and_data(str(folder / "q.jsonl"), folder / "q.jsonl")
    with pytest.raises(LvuError, match=r"not an lvu \.jsonl file .* BENCHMARK --data"):
        benchmark_and_data(str(folder / "a.mp4"), None)


def test_check_data_returns_the_lines_lvu_data_check_prints(folder):
    cli = CliRunner().invoke(app, ["data", "check", str(folder / "q.jsonl")], terminal_width=400)
    assert cli.exit_code == 1, cli.output

    checked = check_data(str(folder / "q.jsonl"))
    assert isinstance(checked, DataCheck)
    assert (checked.questions, checked.videos_found, checked.videos_missing) == (7, 2, 1)
    assert len(checked.problems) == 1 and "gone" in checked.problems[0]
    assert cli.output.splitlines() == checked.lines()
    named = check_data("jsonl", data=folder / "q.jsonl")  # the same data, named the other way
    assert named.lines()[:-1] == checked.lines()[:-1] and named.lines()[-1] == "jsonl: 1 problem(s)"


@pytest.mark.slow  # matplotlib's charts
def test_data_stats_returns_the_tables_and_plots_lvu_data_stats_prints(folder, tmp_path):
    cli = CliRunner().invoke(app, ["data", "stats", str(folder / "q.jsonl"), "--no-probe", "--plot",
                                   str(tmp_path / "cli")], terminal_width=400)
    assert cli.exit_code == 0, cli.output

    result = data_stats("jsonl", data=folder / "q.jsonl", probe=False)
    assert isinstance(result, StatsResult) and result.benchmark == "jsonl"
    assert cli.output.splitlines()[0] == result.stats.title == "jsonl: data statistics"
    assert all(table.title in cli.output for table in result.stats.tables if table.title)
    paths = result.write_plots(tmp_path / "api")
    assert [p.name for p in paths] == [f"jsonl-{chart.name}.png" for chart in result.stats.charts] != []
    assert all(p.is_file() for p in paths)
    assert [line for line in cli.output.splitlines() if line.startswith("plot: ")] == \
        [f"plot: {tmp_path / 'cli' / p.name}" for p in paths]
