"""Bring-your-own-data edges: `lvu data check PATH`, data errors left out of the score, and the
missing-video line that names every path lvu tried (issue 30, item 6)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.api import run as run_engine
from lvu.media.testing import make_video
from lvu.runs.data_errors import count_data_errors, data_error_note, stored_data_errors
from lvu.runs.store import Store

from test_bench_videomme import GROUPED, release, videos  # noqa: F401  (the Video-MME release fixture)

import fakes  # noqa: F401  (registers the fake benchmark and models)


def lvu(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """q.jsonl: 8 good questions on two videos (one with subtitles), then 3 bad: an answer out of
    range, a repeated id and a video that is nowhere."""
    root = tmp_path_factory.mktemp("byod")
    for name in ("a.mp4", "b.mp4"):
        make_video(root / name, seconds=2, fps=4, gop=4, size=(64, 48))
    (root / "a.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n")
    lines = [{"id": f"q{i}", "video": "a.mp4" if i % 2 else "b.mp4", "question": f"Question {i}?",
              "options": ["w", "x", "y", "z"], "answer": i % 4, "labels": {"kind": "odd" if i % 2 else "even"},
              **({"subtitles": "a.srt"} if i % 2 else {})} for i in range(8)]
    lines += [{"id": "bad-answer", "video": "a.mp4", "question": "?", "options": ["w", "x"], "answer": 5},
              {"id": "q1", "video": "a.mp4", "question": "again?", "options": ["w", "x"], "answer": 0},
              {"id": "gone", "video": "clips/gone.mp4", "question": "?", "options": ["w", "x"], "answer": 0}]
    (root / "q.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


@pytest.mark.slow
def test_data_check_takes_the_jsonl_path_and_prints_counts_then_problems(folder):
    out = lvu("data", "check", "q.jsonl", cwd=folder)
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["questions  11 (2 bad record(s): not loaded)",
                         "videos     3 distinct: 2 found, 1 missing",
                         "options    2 options: 1 · 4 options: 8"]
    assert "label      kind: even 4, odd 4" in lines
    assert "subtitles  1 file(s): 1 found, 0 missing; 5 of 9 questions have none" in lines
    problems = lines[lines.index("subtitles  1 file(s): 1 found, 0 missing; 5 of 9 questions have none") + 1:-1]
    assert [p.split(": ", 1)[0] for p in problems] == [f"{folder / 'q.jsonl'}:9", f"{folder / 'q.jsonl'}:10", "gone"]
    assert lines[-1] == "q.jsonl: 3 problem(s)"

    as_json = json.loads(lvu("data", "check", "q.jsonl", "--json", cwd=folder).stdout)
    assert as_json["questions"] == 11 and as_json["videos_missing"] == 1 and as_json["options"] == {"2": 1, "4": 8}
    assert as_json["labels"] == {"kind": {"even": 4, "odd": 4}} and as_json["problems"] == problems
    named = lvu("data", "check", "jsonl", "--data", "q.jsonl", cwd=folder)  # the same data named the other way
    assert named.stdout.splitlines()[:-1] == lines[:-1] and named.stdout.splitlines()[-1] == "jsonl: 3 problem(s)"
    assert lvu("data", "check", ".", cwd=folder).stdout.splitlines()[:-1] == lines[:-1]  # a folder holding one
    assert lvu("data", "stats", "q.jsonl", cwd=folder).returncode == 0  # one resolver for both commands

    video = lvu("data", "check", "a.mp4", cwd=folder)  # a file that is no JSONL: how to name its benchmark
    assert video.returncode == 2 and video.stderr.count("\n") == 1 and "BENCHMARK --data" in video.stderr


@pytest.mark.slow
def test_data_errors_are_reported_and_left_out_of_the_score(folder, tmp_path, monkeypatch):
    out = lvu("run", "-b", "jsonl", "--data", "q.jsonl", "-m", "random", "--frames", "2",
              "--results-dir", str(tmp_path / "res"), "--no-report", cwd=folder)
    assert "11 samples" in out.stdout and "(all, n=8)" in out.stdout, out.stdout + out.stderr
    run_id = re.search(r"^run (\w+):", out.stdout, flags=re.M).group(1)
    store = Store(tmp_path / "res")
    stored = {r.sample_id: r for r in store.results(run_id)}
    spec = store.run(run_id).spec
    store.close()
    data_errors = {k for k, r in stored.items() if r.data_error}
    assert data_errors == {f"{folder / 'q.jsonl'}:9", f"{folder / 'q.jsonl'}:10", "gone"}
    assert all(not stored[k].counted and stored[k].error for k in data_errors)
    scored = [r for k, r in stored.items() if k not in data_errors]
    assert len(scored) == 8 and all(r.counted and r.error is None for r in scored)
    score = 100 * sum(r.correct for r in scored) / 8
    assert f"score {score:.1f} % (all, n=8)" in out.stdout
    monkeypatch.chdir(folder)
    note = "3 data errors left out of the score (fix the data: lvu data check q.jsonl)"
    assert data_error_note(count_data_errors(stored.values()), spec) == note
    store = Store(tmp_path / "res")
    assert data_error_note(stored_data_errors(store, run_id), spec) == note
    assert stored_data_errors(store, run_id, keep={"gone", "q0"}) == 1
    store.close()
    assert data_error_note(count_data_errors(scored), spec) is None

    (folder / "clips").mkdir()  # the data fixed: another run (its fingerprint), the question now scored
    make_video(folder / "clips" / "gone.mp4", seconds=2, fps=4, gop=4, size=(64, 48))
    try:
        fixed = run_engine("jsonl", "random", settings={"data": str(folder / "q.jsonl"), "frames": 2},
                           results_dir=tmp_path / "res", show_progress=False, report=False)
    finally:
        (folder / "clips" / "gone.mp4").unlink()
        (folder / "clips").rmdir()
    assert fixed.run_id != run_id and fixed.tables[0].rows[0][1] == 9


def test_a_model_error_is_still_counted_wrong(tmp_path):
    summary = run_engine("fake", "fake-follow", settings={"n": 4, "bad_records": 1}, model_args={"error": ["q002"]},
                         results_dir=tmp_path, show_progress=False, report=False)
    stored = {r.sample_id: r for r in Store(tmp_path).results(summary.run_id)}
    assert stored["q002"].error and stored["q002"].counted and not stored["q002"].data_error
    assert stored["bad0"].data_error and not stored["bad0"].counted
    assert summary.tables[0].rows[0][1:] == (4, 75.0)  # q002 wrong among 4; the bad record left out


@pytest.mark.slow
def test_missing_video_line_names_every_path_tried(folder, tmp_path):
    elsewhere = tmp_path / "vids"
    elsewhere.mkdir()
    tried = (f"gone: video clips/gone.mp4 not found — tried {elsewhere / 'clips' / 'gone.mp4'} (--video-dir), "
             f"{folder / 'clips' / 'gone.mp4'} (beside q.jsonl) — pass --video-dir DIR holding clips/gone.mp4")
    check = lvu("data", "check", "q.jsonl", "--video-dir", str(elsewhere), cwd=folder)
    assert tried in check.stdout.splitlines()
    assert "videos     3 distinct: 2 found, 1 missing" in check.stdout  # a.mp4, b.mp4: found beside the file
    summary = run_engine("jsonl", "random", settings={"data": str(folder / "q.jsonl"), "frames": 2,
                                                      "video_dir": str(elsewhere)},
                         results_dir=tmp_path / "res", show_progress=False, report=False)
    assert dict(summary.errors)["gone"] == tried


@pytest.mark.slow
def test_an_absolute_video_path_is_also_looked_for_in_video_dir(tmp_path):
    vids = tmp_path / "vids"
    vids.mkdir()
    make_video(vids / "moved.mp4", seconds=2, fps=4, gop=4, size=(64, 48))
    data = tmp_path / "abs.jsonl"
    data.write_text(json.dumps({"id": "m", "video": "/nowhere/at/all/moved.mp4", "question": "?",
                                "options": ["a", "b"], "answer": 0}) + "\n")
    assert lvu("data", "check", str(data), cwd=tmp_path).stdout.splitlines()[-2].startswith(
        "m: video moved.mp4 not found — tried /nowhere/at/all/moved.mp4 (as written) — pass --video-dir")
    moved = lvu("data", "check", str(data), "--video-dir", str(vids), cwd=tmp_path)
    assert moved.returncode == 0 and moved.stdout.splitlines()[-1] == f"{data}: OK", moved.stdout


def test_a_release_loaders_bad_record_and_missing_video_are_left_out_too(tmp_path, videos):  # noqa: F811
    records = json.loads(json.dumps(GROUPED))
    records[0]["questions"].append({"question": "no id?", "task_type": "OCR Problems",
                                    "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "A"})
    root = release(tmp_path / "r", videos, records)
    summary = run_engine("videomme", "random", settings={"data": str(root), "frames": 2}, results_dir=tmp_path / "res",
                         show_progress=False, report=False, frame_cache=False)
    stored = Store(tmp_path / "res").results(summary.run_id)
    data_errors = [r for r in stored if r.data_error]
    assert len(stored) == 10 and len(data_errors) == 4  # the id-less question and the missing video's three
    assert all(not r.counted for r in data_errors)
    assert summary.tables[0].rows[-1][:2] == ("overall", 6)


@pytest.mark.slow
def test_run_takes_the_jsonl_path_as_its_benchmark(folder, tmp_path):
    """`lvu run -b q.jsonl` is `lvu run -b jsonl --data q.jsonl`: the same run, resumed."""
    results = ["--results-dir", str(tmp_path / "res"), "--no-report", "-m", "random", "--frames", "1"]
    first = lvu("run", "-b", "q.jsonl", *results, cwd=folder)
    second = lvu("run", "-b", "jsonl", "--data", "q.jsonl", *results, cwd=folder)
    run_ids = [re.search(r"run (\w{12}):", out.stdout).group(1) for out in (first, second)]
    assert run_ids[0] == run_ids[1] and "8 reused from the store" in second.stdout, first.stdout + second.stdout
    assert "(all, n=8)" in first.stdout
    refused = lvu("run", "-b", "q.jsonl", "--data", "q.jsonl", *results, cwd=folder)
    assert refused.returncode == 2 and "is the data already" in refused.stderr
