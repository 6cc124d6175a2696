"""`lvu analyse niah` on a real run: text needles read by the real `ocr-match` model. With frames
every second it reads every needle (all cells 100 %); with three frames it reads only the needles
a frame lands on (the 50 % depth, where the middle frame falls) and guesses elsewhere — and the
depth × length heatmap shows exactly that. Plus the Time-ladder table's M-Avg and depth binning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lvu.analysis.niah import ALL, applies, ladder_table, niah, plot_niah
from lvu.analysis.report import build_report
from lvu.analysis.runs import RunData, load_runs
from lvu.api import run
from lvu.construct.needle_media import load_needles
from lvu.construct.needle_pipeline import run_build
from lvu.construct.needles import NeedleSettings, find_backgrounds, plan_build
from lvu.runs.store import Store
from lvu.types import SampleResult
from analysis_runs import store_run
from needle_videos import barcode_background

pytest.importorskip("rapidocr")
WORDS = ("MANGO", "CEDAR", "LOTUS", "VELVET", "QUARTZ", "FALCON")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, dict[int, str]]:
    root = tmp_path_factory.mktemp("niah")
    (root / "bg").mkdir()
    barcode_background(root / "bg" / "plain.mp4", seconds=40, size=(320, 180), audio=False, cues=None)
    (root / "needles.jsonl").write_text("".join(json.dumps({"text": w, "seconds": 1.5}) + "\n" for w in WORDS))
    s = NeedleSettings(depths=(0.0, 50.0, 100.0), lengths=(20.0, 40.0), per_cell=2)
    built = run_build(plan_build(find_backgrounds(root / "bg"), load_needles(root / "needles.jsonl"), s), root / "out", s)
    common = {"results_dir": root / "results", "show_progress": False, "report": False, "frame_cache": False}
    ids = {f: run("jsonl", "ocr-match", settings={"data": str(built.jsonl), "frames": f},
                  model_args={"cache": str(root / "ocr")}, **common).run_id for f in (3, 40)}
    return root / "results", ids


@pytest.mark.slow
def test_the_heatmap_shows_accuracy_where_frames_cover_the_needles(runs, tmp_path):
    results, ids = runs
    data = load_runs(Store(results), [ids[3], ids[40]])
    result = niah(data, n_boot=0)
    assert result.depths == ["0%", "50%", "100%"] and result.lengths == ["20s", "40s"]
    few, many = result.grids  # sorted by frames
    assert "3 frames" in few.name and "40 frames" in many.name
    for d in result.depths:  # 40 frames (one per second at 40 s): every 1.5 s needle is read
        for x in result.lengths:
            assert many.cells[(d, x)].value == 100.0 and many.cells[(d, x)].n == 2
    for x in result.lengths:  # 3 frames sit at 1/6, 3/6, 5/6 of the video: only the middle needle is seen
        assert few.cells[("50%", x)].value == 100.0
    assert few.cells[(ALL, ALL)].value <= 60.0 < many.cells[(ALL, ALL)].value
    edges = [few.cells[(d, x)].value for d in ("0%", "100%") for x in result.lengths]
    assert sum(edges) / len(edges) < 60  # guesses: about chance (25 %)
    tables = result.tables()
    assert tables[0].rows[1] == ["50%", "100.0 (2)", "100.0 (2)", "100.0 (4)"]
    assert "Time-ladder" in tables[-1].title and tables[-1].columns == ["length", "Needle QA", "M-Avg"]
    fig = plot_niah(result)
    assert len(fig.axes) == 4  # two heatmaps, the curve, the colour bar
    fig.savefig(tmp_path / "niah.png")
    assert (tmp_path / "niah.png").stat().st_size > 10_000


@pytest.mark.slow
def test_report_and_cli_include_the_heatmap(runs, tmp_path):
    results, ids = runs
    data = load_runs(Store(results), [ids[3], ids[40]])
    report = build_report(data, n_boot=0)
    sections = [s for s in report.sections if s.title.startswith("Needle in a haystack")]
    assert [s.title.endswith("× frames") for s in sections] == [True, False, False]  # the sweep, then each run
    assert all(s.figures for s in sections)
    from typer.testing import CliRunner

    from lvu.cli import app

    done = CliRunner().invoke(app, ["analyse", "niah", ids[40], "--results-dir", str(results), "--bootstrap", "0",
                                    "--plot", str(tmp_path / "grid.png")], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "ocr-match, 3 frames" in done.output and "ocr-match, 40 frames" in done.output  # its sweep came along
    assert (tmp_path / "grid.png").is_file()


def result(sid: str, score: float, **labels: str) -> SampleResult:
    return SampleResult(sample_id=sid, labels=labels, prediction=0, answer=0 if score else 1, score=score,
                        n_options=4)


def test_ladder_table_m_avg_and_random_depths_binned(tmp_path):
    rs = [result(f"a{i}", float(i % 2), task="nqa", length="180s", depth=f"{i * 7.5:g}%") for i in range(14)]
    rs += [result(f"b{i}", 1.0, task="order", length="180s", depth="40%") for i in range(2)]
    rs += [result(f"c{i}", 0.0, task="count", length="360s", depth="60%") for i in range(3)]
    run_id = store_run(tmp_path, "jsonl", "random", rs, settings={"data": str(tmp_path / "x.jsonl"), "frames": 8})
    data = load_runs(Store(tmp_path), [run_id])
    assert applies(data[0])
    table = ladder_table(data[0], ["180s", "360s"])
    assert table.columns == ["length", "Needle QA", "Action Or.", "Action Co.", "M-Avg"]
    assert table.rows[0] == ["180s", "50.0 (14)", "100.0 (2)", "–", "75.0"]  # the mean of the tasks, not samples
    assert table.rows[1] == ["360s", "–", "–", "0.0 (3)", "0.0"]
    binned = niah(data, n_boot=0)
    assert binned.depths[:3] == ["0-10%", "10-20%", "20-30%"] and "binned into tenths" in " ".join(binned.notes)
    assert RunData(data[0].info, []).run_id == run_id and not applies(RunData(data[0].info, []))
