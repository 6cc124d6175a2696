"""Run identity by content (issue 12, defect 1): changed data is a new run, never a stale reuse.

Each test here failed on the code before runs/identity.py: the run id hashed `--data` as typed, so
the same relative path in another directory, or an answer key edited in place, resumed the old run
and reported its answers.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers fake-follow)
from lvu.cli import app
from lvu.errors import DataError
from lvu.runs import identity
from lvu.api import run
from lvu.runs.engine import resolve_spec
from lvu.runs.store import Store
from lvu.types import RunSpec, SampleResult
from test_bench_lvbench import release  # noqa: F401  (the LVBench release fixture)


def write_questions(path: Path, answers: list[int], video: str = "v.mp4") -> Path:
    """Questions that say which letter to pick (fake-follow picks it); `answers` is the key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"q{i}", "benchmark": "mine", "video": {"path": video, "duration": 30.0},
                         "question": f"question {i}: pick A", "options": ["x", "y", "z", "w"], "answer": a})
             for i, a in enumerate(answers)]
    path.write_text("\n".join(lines) + "\n")
    return path


def overall(summary) -> float:
    return summary.tables[0].rows[0][2]


def run_here(results: Path, **kw):
    return run("jsonl", "fake-follow", settings={"data": "q.jsonl", "frames": 0}, results_dir=results,
               show_progress=False, report=False, **kw)


def test_same_relative_data_path_in_two_directories_is_two_runs(tmp_path, monkeypatch):
    write_questions(tmp_path / "d1" / "q.jsonl", [0, 0, 0, 0])  # fake-follow answers A: all right
    write_questions(tmp_path / "d2" / "q.jsonl", [1, 1, 1, 1])  # all wrong
    monkeypatch.chdir(tmp_path / "d1")
    first = run_here(tmp_path / "res")
    monkeypatch.chdir(tmp_path / "d2")
    second = run_here(tmp_path / "res")
    assert overall(first) == 100.0
    assert second.run_id != first.run_id and second.n_done_before == 0
    assert overall(second) == 0.0
    stored = Store(tmp_path / "res").run(second.run_id).spec.settings
    assert stored["data"] == str(tmp_path / "d2" / "q.jsonl")  # resolved before it entered the spec


def test_answer_key_edited_in_place_is_a_new_run_and_unchanged_data_resumes(tmp_path, monkeypatch):
    data = write_questions(tmp_path / "q.jsonl", [0, 0, 0, 0])
    monkeypatch.chdir(tmp_path)
    first = run_here(tmp_path / "res")
    again = run_here(tmp_path / "res")
    assert again.run_id == first.run_id and again.n_done_before == 4  # same data: resumed
    write_questions(data, [0, 1, 1, 1])
    edited = run_here(tmp_path / "res")
    assert edited.run_id != first.run_id and edited.n_done_before == 0
    assert overall(edited) == 25.0


def test_a_replaced_video_or_subtitle_changes_the_fingerprint(tmp_path, tmp_video):
    video = tmp_path / "v.mp4"
    shutil.copy(tmp_video(seconds=1).path, video)
    data = write_questions(tmp_path / "q.jsonl", [0], video="v.mp4")
    spec1 = resolve_spec("jsonl", "random", settings={"data": str(data)})[0]
    shutil.copy(tmp_video(seconds=2).path, video)
    spec2 = resolve_spec("jsonl", "random", settings={"data": str(data)})[0]
    assert spec1.run_id != spec2.run_id
    # a copy of the same bytes under the same name keeps the id (stamps are by content, not mtime)
    os.utime(video, (1, 1))
    assert resolve_spec("jsonl", "random", settings={"data": str(data)})[0].run_id == spec2.run_id
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n")
    line = json.loads(data.read_text())
    line["subtitles"] = {"path": "s.srt"}
    data.write_text(json.dumps(line) + "\n")
    spec3 = resolve_spec("jsonl", "random", settings={"data": str(data)})[0]
    srt.write_text("1\n00:00:00,000 --> 00:00:01,000\ngoodbye\n")
    assert resolve_spec("jsonl", "random", settings={"data": str(data)})[0].run_id != spec3.run_id


def test_a_stored_answer_to_a_changed_question_is_never_reused(tmp_path, monkeypatch):
    """Even when the run id stays the same (here forced), a record whose sample changed is redone."""
    monkeypatch.setattr("lvu.runs.engine.data_fingerprint", lambda samples, bad, digests=None: "pinned")
    data = write_questions(tmp_path / "q.jsonl", [0, 0, 0, 0])
    log = tmp_path / "calls.log"
    settings = {"data": str(data), "frames": 0}
    first = run("jsonl", "fake-follow-neutral", settings=settings, model_args={"log": str(log)},
                results_dir=tmp_path / "res", show_progress=False, report=False)
    write_questions(data, [0, 0, 2, 0])  # q2's answer changed
    second = run("jsonl", "fake-follow-neutral", settings=settings, model_args={"log": str(log)},
                 results_dir=tmp_path / "res", show_progress=False, report=False)
    assert second.run_id == first.run_id and second.n_done_before == 3
    assert log.read_text().split() == ["q0", "q1", "q2", "q3", "q2"]
    assert overall(second) == 75.0


def test_path_settings_of_an_official_benchmark_are_absolute_in_the_spec(release, monkeypatch):  # noqa: F811
    monkeypatch.chdir(release.parent)
    spec = resolve_spec("lvbench", "random", settings={"data": release.name, "video_dir": f"{release.name}/videos"})[0]
    assert spec.settings["data"] == str(release) and spec.settings["video_dir"] == str(release / "videos")
    meta = release / "data" / "video_info.meta.jsonl"
    meta.write_text(meta.read_text().replace('"answer": "D"', '"answer": "A"'))
    again = resolve_spec("lvbench", "random", settings={"data": str(release), "video_dir": str(release / "videos")})[0]
    assert again.run_id != spec.run_id


def test_remote_references_stay_as_typed():
    assert identity.resolve_paths({"data": "hf:org/name", "video_dir": "~/v", "frames": 8}) == \
        {"data": "hf:org/name", "video_dir": os.path.expanduser("~/v"), "frames": 8}


def test_runs_stored_before_fingerprints_are_readable_and_say_so(tmp_path):
    store = Store(tmp_path)
    old = RunSpec(benchmark="fake", model="fake-follow", settings={"n": 2})
    store.begin_run(old, {"lvu": "0.1.0"})
    store.put(old.run_id, SampleResult(sample_id="q000", score=1.0, correct=True, answer=0), 0)
    store.finish_run(old.run_id)
    store.close()
    out = CliRunner().invoke(app, ["results", "show", old.run_id, "--results-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "predates data fingerprints" in out.output


def test_judging_a_run_whose_data_changed_is_refused(tmp_path, monkeypatch):
    data = write_questions(tmp_path / "q.jsonl", [0, 0])
    spec, bench, _ = resolve_spec("jsonl", "random", settings={"data": str(data)})
    identity.require_same_data("r1", spec.settings, bench)  # unchanged: fine
    write_questions(data, [1, 1])
    _, fresh_bench, _ = resolve_spec("jsonl", "random", settings={"data": str(data)})
    with pytest.raises(DataError, match="its data changed since it ran"):
        identity.require_same_data("r1", spec.settings, fresh_bench)
