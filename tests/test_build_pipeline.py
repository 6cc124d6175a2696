"""The build mechanism (lvu.construct.pipeline / runner) on a tiny synthetic pipeline (tests/build_toy.py):
resume after kill -9, recompute-on-prompt-change of that stage and its successors only, one failed
unit never stops the build, a malformed reply is retried once with the parse error."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import build_toy
from lvu.construct.runner import find_videos, open_build, run_build
from lvu.errors import LvuError

HERE = Path(__file__).resolve().parent


@pytest.fixture
def videos(tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name, size in (("alpha", 10), ("beta", 20), ("drop-me", 30)):
        (folder / f"{name}.mp4").write_bytes(os.urandom(size))
    (folder / "notes.txt").write_text("not a video")
    return folder


def build(videos_dir, out, log, **model_args):
    found = find_videos(videos_dir)
    pipeline = build_toy.Toy()
    args = {"log": str(log), **model_args}
    return asyncio.run(run_build(pipeline, found, out, {"llm": ("toy-llm", args)}, show_progress=False))


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def stage(state, name):
    return next(s for s in state.stages if s.name == name)


def test_a_build_runs_every_stage_and_a_rerun_asks_nothing(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    state, written = build(videos, out, log)
    assert written == {"joined": 2}
    assert sorted(state.outputs["join"]) == ["alpha", "beta"]
    assert state.states["toy.words"]["drop-me"] == "skipped" and state.states["toy.join"]["drop-me"] == "skipped"
    words = stage(state, "toy.words")
    assert (words.units, words.done, words.failed, words.pending, words.calls) == (6, 6, 0, 0, 6)
    assert words.tokens > 0 and len(calls(log)) == 8  # 2 videos x (3 words + 1 join)
    first = (out / "joined.txt").read_text()

    state, _ = build(videos, out, log)
    assert len(calls(log)) == 8 and stage(state, "toy.words").ran == 0
    assert (out / "joined.txt").read_text() == first


def test_the_store_keeps_prompt_reply_model_and_timing(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    build(videos, out, log)
    _, _, state = open_build(out)  # no model: replanned from the store
    view = state.units["toy.words"]["alpha"][0]
    record = view.entry.result
    assert record["calls"][0]["prompt"] == "Say one word about chunk 0 of alpha (10 bytes)."
    reply = record["calls"][0]["reply"]  # stored once, in the calls (#27: the raw column held a second copy)
    assert reply.startswith("WORD: w") and record["output"] == reply[6:] and view.entry.raw is None
    assert record["model"] == {"model": "toy-llm", "args": {}}  # `log` cannot change answers: not in the key
    assert record["calls"][0]["tokens"]["completion_tokens"] == 2
    assert view.entry.finished >= view.entry.started
    assert (stage(state, "toy.join").done, stage(state, "toy.join").pending) == (2, 0)


def test_a_changed_prompt_recomputes_that_stage_and_its_successors_only(videos, tmp_path, monkeypatch):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    build(videos, out, log)
    monkeypatch.setattr(build_toy.Join, "prompt", "Join these: {words}")  # the last stage: 2 calls again
    state, _ = build(videos, out, log)
    assert calls(log)[8:] == ["toy.join/alpha/video", "toy.join/beta/video"]
    assert stage(state, "toy.keep").ran == stage(state, "toy.words").ran == 0

    monkeypatch.setattr(build_toy.Words, "prompt", "Give one word about chunk {chunk} of {video} ({size} bytes).")
    state, _ = build(videos, out, log)  # the words change, so the join's inputs change: 6 + 2 calls
    assert len(calls(log)) == 10 + 8 and stage(state, "toy.keep").ran == 0
    assert all(c.startswith(("toy.words/", "toy.join/")) for c in calls(log)[10:])


def test_a_failed_unit_is_recorded_and_the_rest_of_the_build_goes_on(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    state, written = build(videos, out, log, error=["chunk 1 of beta"])
    words = stage(state, "toy.words")
    assert (words.done, words.failed) == (5, 1)
    assert state.states["toy.words"]["beta"] == "failed" and "HTTP 500" in state.notes["toy.words"]["beta"]
    assert state.states["toy.join"] == {"alpha": "done", "beta": "blocked", "drop-me": "skipped"}
    assert written == {"joined": 1}
    _, _, reopened = open_build(out)
    assert stage(reopened, "toy.words").failed == 1 and stage(reopened, "toy.join").pending == 0

    n = len(calls(log))
    state, written = build(videos, out, log)  # the endpoint is fixed: the failed unit and its successor only
    assert calls(log)[n:] == ["toy.words/beta/chunk1", "toy.join/beta/video"]
    assert written == {"joined": 2}


def test_a_malformed_reply_is_retried_once_with_the_parse_error(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    state, _ = build(videos, out, log, bad_once=["chunk 0 of alpha"], bad=["chunk 2 of beta"])
    _, _, state = open_build(out)
    fixed = state.units["toy.words"]["alpha"][0].entry
    assert fixed.error is None and [c["reply"] for c in fixed.result["calls"]][0] == "I would rather not say."
    retry = fixed.result["calls"][1]["prompt"]
    assert retry.startswith("Say one word about chunk 0 of alpha") and build_toy.RETRY_MARK in retry
    assert "expected 'WORD: <word>'" in retry and "I would rather not say." in retry
    broken = state.units["toy.words"]["beta"][2].entry
    assert len(broken.result["calls"]) == 2 and broken.result["calls"][-1]["reply"] == "I would rather not say."
    assert broken.error.startswith("malformed reply, also after one retry") and "expected 'WORD" in broken.error
    assert state.states["toy.join"]["beta"] == "blocked" and state.states["toy.join"]["alpha"] == "done"


@pytest.mark.slow
def test_kill_9_then_rerun_loses_and_repeats_nothing_committed(videos, tmp_path):
    out, log = tmp_path / "out", tmp_path / "calls.log"
    child = subprocess.Popen([sys.executable, str(HERE / "build_toy.py"), str(videos), str(out), str(log), "0.3"],
                             cwd=HERE, env={**os.environ, "PYTHONPATH": str(HERE)})
    db = out / "lvu.sqlite"
    deadline = time.monotonic() + 120
    committed = 0
    try:
        while committed < 3 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
            if db.exists():
                try:
                    with sqlite3.connect(db) as con:
                        committed = con.execute("SELECT COUNT(*) FROM ledger_items WHERE error IS NULL "
                                                "AND result LIKE '%toy.words%'").fetchone()[0]
                except sqlite3.OperationalError:  # the tables are being created
                    pass
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert 3 <= committed < 6, "the child should have been killed in the middle of the words stage"
    with sqlite3.connect(db) as con:
        committed = con.execute("SELECT COUNT(*) FROM ledger_items WHERE error IS NULL "
                                "AND result LIKE '%toy.words%'").fetchone()[0]
    before = len(calls(log))
    state, _ = build(videos, out, log)
    again = calls(log)[before:]
    assert len([c for c in again if c.startswith("toy.words/")]) == 6 - committed  # only the uncommitted
    assert stage(state, "toy.words").ran == 6 - committed
    fresh_out, fresh_log = tmp_path / "fresh", tmp_path / "fresh.log"
    build(videos, fresh_out, fresh_log)
    assert (out / "joined.txt").read_text() == (fresh_out / "joined.txt").read_text()


def test_an_unreachable_endpoint_stops_the_build_in_one_line(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(5):
        (folder / f"v{i}.mp4").write_bytes(os.urandom(10 + i))
    log = tmp_path / "calls.log"
    with pytest.raises(LvuError, match="8 units in a row could not reach the model .*Connection refused"):
        build(folder, tmp_path / "out", log, down=True)
    assert 8 <= len(calls(log)) < 15  # it stopped instead of failing all 15 units
    _, _, state = open_build(tmp_path / "out")
    assert stage(state, "toy.keep").done == 5 and stage(state, "toy.words").failed >= 8


def test_clear_errors_for_a_folder_without_videos_and_a_missing_model(tmp_path, videos):
    (tmp_path / "empty").mkdir()
    with pytest.raises(LvuError, match="no videos"):
        find_videos(tmp_path / "empty")
    found = find_videos(videos)
    with pytest.raises(LvuError, match="pass --llm MODEL"):
        asyncio.run(run_build(build_toy.Toy({}), found, tmp_path / "out", {}, show_progress=False))
    with pytest.raises(LvuError, match="not a build folder"):
        open_build(tmp_path / "empty")


def test_a_stage_of_fewer_units_than_the_stop_count_stops_when_all_are_unreachable(tmp_path):
    """#27: 5 units against a dead server each waited out their retries, then the build called
    itself done; a stage of fewer than 8 units now stops when all of them could not reach the model."""
    folder = tmp_path / "few"
    folder.mkdir()
    for i in range(2):
        (folder / f"v{i}.mp4").write_bytes(os.urandom(10 + i))
    with pytest.raises(LvuError, match=r"(\d) units in a row could not reach the model .*run the same command to resume"):
        build(folder, tmp_path / "out", tmp_path / "calls.log", down=True)
