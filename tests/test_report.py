"""Reports (HTML and Markdown) and the report / compare / analyse commands, on fixture runs."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from analysis_runs import haystack_runs, result, store_run, videomme_results
from lvu.analysis import report as report_module
from lvu.analysis.report import build_report, write, write_report
from lvu.analysis.runs import load_runs
from lvu.analysis.stats import bootstrap_tables
from lvu.runs.store import Store
from lvu.types import SampleResult

pytest.importorskip("rapidocr")
pytest.importorskip("matplotlib")
B = 200
CI = re.compile(r"-?\d+\.\d+ \[-?\d+\.\d+, -?\d+\.\d+\]")
PNG = b"\x89PNG\r\n\x1a\n"


def lvu(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "250"}  # wide enough that rich does not cut names
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def hay(tmp_path_factory):
    return haystack_runs(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def reports(hay, tmp_path_factory):
    """One report of the frame sweep and the blind probe, as HTML and as Markdown."""
    out = tmp_path_factory.mktemp("out")
    runs = load_runs(Store(hay.results_dir), [*hay.by_frames.values(), hay.blind])
    built = build_report(runs, n_boot=B)
    html = write(built, out / "r.html", "html").read_text()
    md_path = write(built, out / "r.md", "md")
    return runs, html, md_path


@pytest.mark.slow
def test_html_report_has_official_tables_cis_plots_and_sample_links(reports):
    runs, html, _ = reports
    for run in runs:
        cis = bootstrap_tables(run.results, run.aggregate, n_boot=B)
        overall = cis[("overall", "all")]
        assert overall.has_ci and f"<td class=num>{overall.fmt()}</td>" in html  # the official cell, with its CI
        for r in run.results:  # every sample has its anchor, and the id links to it
            assert f"id='{run.run_id}-s-{r.sample_id}'" in html and f"href='#{run.run_id}-s-{r.sample_id}'" in html
        assert f"data-run='{run.run_id}' data-filter='read'" in html  # group names filter the samples
    for title in ("Modality ablation", "Answer letters", "Accuracy vs referred-context depth"):
        assert title in html, title
    assert re.search(r"Frame sweep: haystack\([^)]+\) × ocr-match", html)  # runs named by data and model
    images = re.findall(r"src='data:image/png;base64,([^']+)'", html)
    assert len(images) >= 6 and all(base64.b64decode(i).startswith(PNG) for i in images)
    assert html.count("<tr class=ok") == sum(1 for run in runs for r in run.results if r.correct)


@pytest.mark.slow
def test_markdown_report_has_the_same_numbers(reports):
    _, html, md_path = reports
    md = md_path.read_text()
    assert Counter(CI.findall(md)) == Counter(CI.findall(html)) and len(CI.findall(md)) > 20
    figures = re.findall(r"!\[[^\]]*\]\((r_files/fig\d+\.png)\)", md)
    assert len(figures) == html.count("data:image/png") and all(
        (md_path.parent / f).read_bytes().startswith(PNG) for f in figures)


def test_report_without_matplotlib_says_why(hay, tmp_path, monkeypatch):
    monkeypatch.setattr(report_module, "missing_matplotlib", lambda: "plots are off: matplotlib is not installed "
                                                                   "(pip install 'lvu[report]')")
    runs = load_runs(Store(hay.results_dir), [hay.by_frames[4]])
    html = write(build_report(runs, n_boot=50), tmp_path / "r.html").read_text()
    assert "data:image" not in html and "plots are off: matplotlib is not installed" in html
    assert CI.search(html)  # the numbers are all there


def test_post_run_report_is_the_full_report(hay, tmp_path):
    info = Store(hay.results_dir).run(hay.by_frames[8])
    results = Store(hay.results_dir).results(info.run_id)
    path = write_report(info, results, load_runs(Store(hay.results_dir), [info.run_id])[0].tables, tmp_path, n_boot=50)
    assert path == tmp_path / "reports" / f"{info.run_id}.html"
    html = path.read_text()
    assert "Answer letters" in html and "data:image/png" in html and CI.search(html)


@pytest.mark.slow
def test_videomme_table4_with_and_without_subtitles(tmp_path):
    flips = {"001-2": "right", "002-1": "right"}
    without, with_subs = videomme_results("videomme"), videomme_results("videomme-sub", flips)
    for r in without + with_subs:
        r.prompt = {"n_frames": 10, "n_subtitles": 0}  # frames were given (subtitles go in the text)
    ids = [store_run(tmp_path, "videomme", "random", without, settings={"frames": 10}),
           store_run(tmp_path, "videomme-sub", "random", with_subs, settings={"frames": 10})]
    runs = load_runs(Store(tmp_path), ids)
    assert [r.modality for r in runs] == ["frames", "frames + subtitles"]
    built = build_report(runs, n_boot=B)
    (section,) = [s for s in built.sections if s.anchor == "videomme-table4"]
    rows = {row[0]: row for row in section.tables[0].rows}
    a, b = ({n: v for n, _, v in r.tables[0].rows} for r in runs)
    assert list(rows) == list(a) and list(rows)[-1] == "overall"  # Table 4's shape: durations, then overall
    for name, (_, wo, w, delta, _) in rows.items():
        assert (wo, w) == (pytest.approx(a[name]), pytest.approx(b[name]))
        assert delta.value == pytest.approx(b[name] - a[name])
    assert rows["overall"][3].value > 0  # the flipped answers were wrong before
    assert "Beside the paper" in [s.title for s in built.sections]  # Table 4 rows with 10 frames


@pytest.mark.slow
def test_commands(hay, tmp_path):
    res = str(hay.results_dir)
    out = lvu("report", "--results-dir", res, "--bootstrap", "50", "-o", str(tmp_path / "latest.html"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "latest.html").read_text().count("<table>") > 3
    out = lvu("report", hay.by_frames[1], "--results-dir", res, "-f", "md", "--bootstrap", "50", "--no-plots")
    path = Path(out.stdout.strip().split("report: ")[-1])
    assert out.returncode == 0 and path.suffix == ".md" and path.exists() and "![" not in path.read_text()

    out = lvu("compare", hay.by_frames[1], hay.by_frames[8], "--results-dir", res, "--bootstrap", "100")
    assert out.returncode == 0, out.stderr
    assert "B − A per breakdown" in out.stdout and "exact McNemar" in out.stdout

    out = lvu("analyse", "frames-curve", hay.by_frames[4], "--results-dir", res, "--bootstrap", "50",
              "--plot", str(tmp_path / "curve.png"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "curve.png").read_bytes().startswith(PNG)
    assert all(f"│ {f} " in out.stdout for f in hay.by_frames)  # the stored sweep was found from one run

    out = lvu("analyse", "letters", hay.by_frames[8], "--results-dir", res, "--bootstrap", "50")
    assert out.returncode == 0 and "answers outside the options" in out.stdout
    out = lvu("analyse", "clue-length", hay.by_frames[8], "--results-dir", res)
    errors = [line for line in out.stderr.splitlines() if not line.startswith("results: ")]  # where it read
    assert out.returncode == 2 and len(errors) == 1 and "clue_length" in errors[0]
    out = lvu("analyse", "nonsense", "--results-dir", res)
    assert out.returncode == 2 and "unknown analysis 'nonsense'" in out.stderr
    out = lvu("compare", hay.by_frames[8], "--paper", "--results-dir", res)
    assert out.returncode == 2 and "no paper reference numbers" in out.stderr


@pytest.mark.slow
def test_compare_paper_command_shows_errata(tmp_path):
    from lvu.benchmarks.longvideobench import LEVELS
    from lvu.benchmarks.longvideobench_ref import CATEGORIES, DURATIONS

    rs = [result(f"q{i}", i % 2 == 0, {"duration_group": DURATIONS[i % 4], "question_category": CATEGORIES[i % 17],
                                       "level": LEVELS[i % 2]}) for i in range(68)]
    run_id = store_run(tmp_path, "longvideobench", "random", rs, settings={"frames": 16})
    out = lvu("compare", run_id, "--paper", "--results-dir", str(tmp_path), "--table", "Table 5", "--bootstrap", "50")
    assert out.returncode == 0, out.stderr
    assert "Gemini-1.5-Flash (0514)" in out.stdout and "erratum:" in out.stdout
    assert "group cells weighted by val group sizes give 51.9" in out.stdout  # the row's own note


def test_neptune_table3_row_joins_mcq_and_open_ended_runs(tmp_path):
    subsets = [["full", "mma"], ["full", "mmh"], ["full"], ["full", "mma", "mmh"]] * 3
    mcq = [result(f"n{i}", i % 3 == 0, {"question_type": "Temporal Ordering", "subset": s}, n_options=5)
           for i, s in enumerate(subsets)]
    gem = [SampleResult(sample_id=f"n{i}", labels={"question_type": "Temporal Ordering", "subset": s},
                        answer="the reference answer", response="an answer", score=float(i % 2 == 0),
                        correct=i % 2 == 0, judge={"kind": "gem", "value": float(i % 2 == 0), "judge": "test"})
           for i, s in enumerate(subsets)]
    settings = {"data": str(tmp_path / "neptune.json")}
    ids = [store_run(tmp_path, "neptune", "random", mcq, settings=settings),
           store_run(tmp_path, "neptune-open", "random", gem, settings=settings)]
    runs = load_runs(Store(tmp_path), ids)
    (section,) = [s for s in build_report(runs, n_boot=0, plots=False).sections if s.anchor == "neptune-table3"]
    (row,) = section.tables[0].rows
    acc, gem_cells = ({n: v for n, _, v in r.tables[0].rows} for r in runs)
    assert section.tables[0].columns[1:] == ["FULL Acc", "FULL GEM", "MMA Acc", "MMA GEM", "MMH Acc", "MMH GEM"]
    assert row[1:] == [acc["full"], gem_cells["full"], acc["mma"], gem_cells["mma"], acc["mmh"], gem_cells["mmh"]]
    assert row[2] == pytest.approx(50.0)  # every other open-ended answer judged equivalent
