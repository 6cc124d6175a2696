"""Issue #30 item 9, the build and review paper cuts: group labels in natural order in the blind
filter's table, summary.json and plot; review pages opened without their token answer a page that
says what to open (the JSON API keeps JSON); `lvu import` errors name its --root flag; an imported
run records frames only when the file or --set states them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.analysis.blind import write_filter_summary
from lvu.analysis.table import natural_key, ordered
from lvu.construct.blind import Decision
from lvu.construct.blind_rules import FilterSettings
from lvu.construct.filter_files import Checked, FilterOutcome
from lvu.runs.grading import make_benchmark
from lvu.runs.importer import import_file, recorded_settings, stated_frames
from lvu.runs.store import Store
from lvu.types import Sample, VideoRef

FIXTURES = Path(__file__).parent / "fixtures"
DEPTHS = ["100%", "25%", "0%", "75%", "50%"]  # needle depths as lvu build needle labels them
LENGTHS = ["900-3600s", "8-15s", "180-600s", "15-60s"]  # LongVideoBench's duration groups (select rules)


def lvu(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


# ---- group labels in natural order -------------------------------------------------------------------


def test_natural_order_and_a_declared_order_wins():
    assert ordered(set(DEPTHS)) == ["0%", "25%", "50%", "75%", "100%"]
    assert ordered(set(LENGTHS)) == ["8-15s", "15-60s", "180-600s", "900-3600s"]
    assert sorted(["frames 16", "frames 8", "long", "2.5s", "10s"], key=natural_key) == \
        ["2.5s", "10s", "frames 8", "frames 16", "long"]
    # a benchmark's own order (lvu.analysis.analyses.label_order) still comes first
    assert ordered({"long", "short", "medium"}, ("short", "medium", "long")) == ["short", "medium", "long"]


def _outcome(tmp_path: Path) -> FilterOutcome:
    checked = []
    for i in range(20):
        sample = Sample(id=f"q{i}", benchmark="jsonl", video=VideoRef(path=str(tmp_path / "v.mp4")),
                        question="?", options=["a", "b", "c", "d"], answer=0,
                        labels={"depth": DEPTHS[i % 5], "length": LENGTHS[i % 4], "duration": ["long", "short"][i % 2]})
        checked.append(Checked(sample, Decision(removed=i % 3 == 0, rule="text-only", votes=[], reason="")))
    return FilterOutcome(checked=checked, skipped=[], failed=[], bad=[], job_id="j", results_dir=tmp_path,
                         samples=[c.sample for c in checked])


def test_filter_table_summary_and_plot_list_groups_in_natural_order(tmp_path):
    settings = FilterSettings("text-only", 1, 1, 0, False, False)
    analysis = write_filter_summary(_outcome(tmp_path), tmp_path, settings, ["m"], bootstrap=0)
    depth = [f"depth: {d}" for d in ("0%", "25%", "50%", "75%", "100%")]
    length = [f"length: {x}" for x in ("8-15s", "15-60s", "180-600s", "900-3600s")]
    expected = ["all", *depth, "duration: short", "duration: long", *length]  # keys sorted; duration: the declared order
    assert analysis.x == expected
    assert [row[0] for row in analysis.table().rows] == expected  # the table `lvu build filter` prints
    assert list(json.loads((tmp_path / "summary.json").read_text())["groups"]) == expected
    from lvu.analysis.plots import plot_analysis

    ticks = [t.get_text() for t in plot_analysis(analysis).axes[0].get_xticklabels()]  # --plot FILE
    assert ticks == expected


# ---- review pages without a token ------------------------------------------------------------------


HINT = "it carries the access token"


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    pytest.importorskip("fastapi", reason="the review app needs fastapi")
    from review_toy import build, open_review

    root = tmp_path_factory.mktemp("review")
    return open_review(build(root).data, root / "r.sqlite", ["alice", "bob"], ["dana"], per_question=2)


def test_review_pages_without_a_token_say_which_link_to_open(review):
    for url in ("/queue", "/item/0", "/examine", "/stats", "/?t=" + "x" * 24):  # a link with its token cut off
        page = review.client.get(url, follow_redirects=False)
        assert page.status_code == 403 and page.headers["content-type"].startswith("text/html"), url
        assert HINT in page.text and "<code>lvu review</code>" in page.text and '"detail"' not in page.text, url
    front = review.client.get("/")  # the address `lvu review` prints first
    assert front.status_code == 200 and front.headers["content-type"].startswith("text/html") and HINT in front.text
    missing = review.get("alice", "/item/99")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "no question &#x27;99&#x27;" in missing.text
    api = review.client.get("/api/queue")  # the pages' script reads JSON: it stays JSON
    assert api.status_code == 403 and HINT in api.json()["detail"]


def test_the_chain_app_answers_pages_the_same_way(tmp_path):
    pytest.importorskip("fastapi", reason="the review app needs fastapi")
    from fastapi.testclient import TestClient
    from review_toy import build

    from lvu.web.review_app import create_review_app
    from lvu.web.review_data import load_source
    from lvu.web.review_protocols import load_protocol
    from lvu.web.review_store import ReviewStore

    source, store = load_source(build(tmp_path).data), ReviewStore(tmp_path / "c.sqlite")
    store.setup_chain(source, store.protocol(load_protocol("longvideobench"), record=True), {})
    client = TestClient(create_review_app(source, store), base_url="http://127.0.0.1:8766")
    page = client.get("/queue")
    assert page.status_code == 403 and page.headers["content-type"].startswith("text/html") and HINT in page.text
    assert client.get("/api/queue").headers["content-type"] == "application/json"


# ---- lvu import ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_import_errors_name_the_flags_import_has(tmp_path):
    log = tmp_path / "20260801_120000_samples_lvbench.jsonl"  # fine as a log; no release given
    log.write_text(json.dumps({"doc_id": 0, "target": "A", "filtered_resps": "A", "input": "Q?\n(A) x\n(B) y"}) + "\n")
    shown = lvu("import", "--help").stdout
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", shown))
    offline = {"LVU_OFFLINE": "1"}
    for args in (["-b", "lvbench"], ["-b", "videomme"], ["-b", "lvbench", "--root", str(tmp_path / "nowhere")]):
        out = lvu("import", str(log), *args, "--results-dir", str(tmp_path / "res"), env=offline)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", out.stderr))
        assert "--root" in named and "--data" not in named, out.stderr
        assert named <= flags, (named - flags, out.stderr)
    assert not (tmp_path / "res").exists()  # a refused import stores nothing


@pytest.mark.slow
def test_an_imported_run_records_no_frames_it_was_not_told(tmp_path):
    results = tmp_path / "res"
    official = FIXTURES / "videomme_output_test_template.json"  # answers only: nothing about frames
    summary = import_file(official, "videomme", results_dir=results)
    info = Store(results).run(summary.run_id)
    assert info.spec.settings["frames"] is None  # not the benchmark's default 32
    assert "frames" in info.env["imported"]["unknown_settings"]
    assert import_file(official, "videomme", results_dir=results).run_id == summary.run_id  # same file, same run
    shown = lvu("results", "show", summary.run_id, "--results-dir", str(results))
    assert shown.returncode == 0 and '"frames": null' in shown.stdout and '"unknown_settings"' in shown.stdout
    listed = lvu("results", "list", "--results-dir", str(results))
    assert listed.returncode == 0 and summary.run_id in listed.stdout and "frames=" not in listed.stdout
    # --set frames=N records what the harness used: another run, nothing unknown
    told = import_file(official, "videomme", settings={"frames": 64}, results_dir=results)
    told_info = Store(results).run(told.run_id)
    assert told.run_id != summary.run_id and told_info.spec.settings["frames"] == 64
    assert told_info.env["imported"]["unknown_settings"] == {}
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    viewer = TestClient(create_app(results))
    assert viewer.get("/").status_code == 200 and "frames=32" not in viewer.get("/").text
    assert viewer.get(f"/runs/{summary.run_id}").status_code == 200


def test_frames_are_read_from_what_the_file_states(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "20260801_120000_samples_videomme.jsonl"
    assert stated_frames(log, "lmms-eval") == {}  # no results JSON beside it
    (logs / "20260801_120000_results.json").write_text(json.dumps(
        {"config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,max_num_frames=48"}}))
    assert stated_frames(log, "lmms-eval") == {"frames": 48}
    sheets = tmp_path / "outputs" / "Qwen2-VL-7B-Instruct"
    assert stated_frames(sheets / "Qwen2-VL-7B-Instruct_Video-MME_8frame.xlsx", "vlmevalkit") == {"frames": 8}
    assert stated_frames(sheets / "Qwen2-VL-7B-Instruct_MLVU_1fps.tsv", "vlmevalkit") == {"fps": 1.0}
    assert stated_frames(sheets / "Qwen2-VL-7B-Instruct_Video-MME.tsv", "vlmevalkit") == {}
    bench = make_benchmark("videomme", {})
    assert recorded_settings(bench, {}, {"frames": 8})[0]["frames"] == 8
    settings, unknown = recorded_settings(bench, {}, {"fps": 1.0})  # Video-MME has no fps setting
    assert settings["frames"] is None and "fps" not in settings and unknown == ["frames"]
    assert recorded_settings(make_benchmark("videomme", {"frames": 64}), {"frames": 64}, {"frames": 8})[0]["frames"] == 64


def test_run_tables_and_their_intervals_list_groups_in_natural_order():
    """`lvu run`'s per-label tables (jsonl, haystack, built benchmarks) order groups as the
    filter tables do: 0%, 25%, 100%, not the string order 0%, 100%, 25%."""
    from lvu.analysis.stats import label_cells
    from lvu.scoring.choice import breakdowns_by_label
    from lvu.types import SampleResult

    results = [SampleResult(sample_id=f"s{i}", labels={"depth": d}, score=float(i % 2))
               for i, d in enumerate(["100%", "0%", "25%", "100%", "8-15s"])]
    depth = next(t for t in breakdowns_by_label(results) if t.title == "depth")
    assert [row[0] for row in depth.rows] == ["0%", "8-15s", "25%", "100%"]
    _, cells = label_cells(results)
    assert [group for key, group in cells if key == "depth"] == ["0%", "8-15s", "25%", "100%"]
