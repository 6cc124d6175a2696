"""`lvu build neptune` end to end, offline: generated videos (tests/neptune_example.py), the real
filters, PySceneDetect, Whisper tiny.en and RapidOCR; the models are the README's scripted stand-in
(an lvu plugin model) and, through the `openai` backend, the fake OpenAI-compatible server, both
answering every prompt in the paper's format (tests/neptune_replies.py). The built benchmark runs
in `lvu run`; a build killed with SIGKILL resumes to the uninterrupted build's files."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.construct.neptune_parse import RETRY_MARKER
from lvu.construct.runner import open_build
from lvu.cli import app
from lvu.models.testing_server import FakeOpenAIServer
from neptune_example import write_videos
from neptune_replies import ScriptedReplies

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """The README example's videos: harbor (3 shots, speech: Whisper), valley (3 shots, a topic that
    comes back, no audio, a title sidecar), slide (static: dropped), presenter (talking head: dropped)."""
    return write_videos(tmp_path_factory.mktemp("neptune-videos"))


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_PROGRESS_INTERVAL", "0")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # this venv's lvu first
    return {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_PROGRESS_INTERVAL": "0", "PATH": path}


def model_args(role: str, server: FakeOpenAIServer) -> list[str]:
    return [f"--{role}", "openai", f"--{role}-arg", "model=fake", f"--{role}-arg", f"base_url={server.base_url}",
            f"--{role}-arg", "cache=false"]


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def readme_example() -> str:
    section = (ROOT / "README.md").read_text().split("\n## Build a benchmark", 1)[1].split("\n## ", 1)[0]
    return next(b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if "neptune_example.py neptune-videos" in b)


@pytest.mark.slow
def test_the_readme_example_builds_a_benchmark_lvu_run_evaluates(tmp_path, env):
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the example runs from a checkout's root
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_example()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out, videos = tmp_path / "neptune-build", tmp_path / "neptune-videos"
    kept = json.loads((out / "neptune_full.json").read_text())
    removed = json.loads((out / "removed.json").read_text())
    assert done.stdout.count(f"{len(kept)} samples, 0 failed") == 2  # lvu run -b neptune, and -b jsonl
    assert "skipped (2):" in done.stdout and "slide at neptune.shots: dropped by the static filter" in done.stdout
    assert {r["video_id"] for r in kept + removed} == {"harbor", "valley"}  # slide and presenter were dropped
    assert len(kept) + len(removed) == 10 and kept  # 5 questions per kept video
    for record in kept:
        options = [record[f"answer_choice_{i}"] for i in range(5)]
        assert options[record["answer_id"]] == record["answer"] and len(set(options)) == 5
        assert len(record["decoys_6"]) == 6 and set(options) - {record["answer"]} == set(record["decoys_6"][:4])
        assert record["decoys"] == record["decoys_6"][:4] and record["url"] is None  # no info.json: no page known
        assert record["qad_filter"]["seeds"] == 3 and record["qad_filter"]["correct_votes"] < 2
    assert all(r["qad_filter"]["correct_votes"] >= 2 for r in removed)
    assert (out / "videos" / "harbor.mp4").resolve() == (videos / "harbor.mp4").resolve()
    assert "harbor" in (out / "asr" / "harbor.srt").read_text().lower()  # Whisper heard the speech
    lines = [json.loads(line) for line in (out / "benchmark.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [r["key"] for r in kept]
    assert all(len(line["extra"]["decoys_6"]) == 6 and line["extra"]["dense_captions"] for line in lines)

    again = invoke("build", "neptune", str(videos), "-o", str(out), "--captioner", "ocr",
                   "--llm", "neptune_example:ScriptedLLM")
    assert again.output.count("all done before") == 13  # a finished build computes nothing again
    status = invoke("build", "status", str(out)).output
    # 55 calls: 6 shot captions, 1 topics, 2 clusterings, 6 + 6 segment captions and visual supports,
    # 2 question sets, 2 decoy calls (one per video with its 5 questions), 30 QAD-filter rankings
    assert "neptune.qad-filter" in status and "total: 55 model call(s)" in status
    slide = invoke("build", "show", str(out), "slide").output
    assert "dropped by the static filter" in slide and "neptune.shots (none): skipped" in slide
    assert "dropped by the talking_head filter" in invoke("build", "show", str(out), "presenter").output
    harbor = json.loads(invoke("build", "show", str(out), "harbor", "--json").output)
    topics = next(s for s in harbor if s["stage"] == "neptune.topics")["units"][0]
    assert topics["output"] and "harbor" in topics["calls"][0]["prompt"].lower()
    valley = json.loads(invoke("build", "show", str(out), "valley", "--json").output)
    clusters = next(s for s in valley if s["stage"] == "neptune.clusters")["units"][0]
    assert "Title: Valley days" in clusters["calls"][0]["prompt"]  # the sidecar is the context
    segments = next(s for s in valley if s["stage"] == "neptune.segment-captions")["units"]
    assert len(segments) == 3  # SUNNY FIELD comes back after NIGHT MARKET: two segments of one topic


def _committed(db: Path, stage: str) -> int:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM ledger_items WHERE error IS NULL AND result LIKE ?",
                               (f'%"stage":"{stage}"%',)).fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.slow
def test_kill_9_during_captioning_then_resume_gives_the_uninterrupted_build(videos, tmp_path, env):
    """The VLM captioner path (one caption call per frame at 1 fps, 2 kept videos x 18 s) through the
    openai backend and the fake server, whose first reply to each QA and clustering prompt is malformed."""
    kept = tmp_path / "kept-videos"
    kept.mkdir()
    for name in ("harbor", "valley"):
        (kept / f"{name}.mp4").symlink_to(videos / f"{name}.mp4")
    (kept / "valley.json").write_text((videos / "valley.json").read_text())
    replies = ScriptedReplies(malformed_first={"qa", "clustering"})
    with FakeOpenAIServer(answer=replies, latency=0.15) as server:
        def command(out: Path) -> list[str]:
            return [sys.executable, "-m", "lvu.cli", "build", "neptune", str(kept), "-o", str(out),
                    *model_args("llm", server), *model_args("vlm", server), "--concurrency", "2", "--quiet"]

        out, db = tmp_path / "out", tmp_path / "out" / "lvu.sqlite"
        child = subprocess.Popen(command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        try:
            while _committed(db, "neptune.frame-captions") < 6 and time.monotonic() < deadline:
                assert child.poll() is None, "the build ended before it was killed"
                time.sleep(0.05)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        committed = _committed(db, "neptune.frame-captions")
        assert 6 <= committed < 36, "killed in the middle of the frame captions"
        assert _committed(db, "neptune.shot-captions") == 0

        while server.in_flight:  # the killed child's last requests are still being answered (and counted)
            time.sleep(0.05)
        before = replies.calls["frame_caption"]
        resumed = subprocess.run(command(out), env=env, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert replies.calls["frame_caption"] - before == 36 - committed  # nothing committed is asked again

        fresh = tmp_path / "fresh"
        done = subprocess.run(command(fresh), env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    for name in ("neptune_full.json", "removed.json", "benchmark.jsonl"):
        assert (out / name).read_text() == (fresh / name).read_text(), name
    assert json.loads((out / "neptune_full.json").read_text())
    _, _, state = open_build(out)  # the malformed replies were asked again once, with the parse error
    for stage in ("neptune.questions", "neptune.clusters"):
        calls = state.units[stage]["harbor"][0].entry.result["calls"]
        assert len(calls) == 2 and RETRY_MARKER in calls[1]["prompt"] and RETRY_MARKER not in calls[0]["prompt"]


def test_one_line_errors(videos, tmp_path, env):
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, message in (
        (["build", "neptune", str(empty), "-o", str(tmp_path / "o"), "--llm", "openai", "--captioner", "ocr"],
         "no videos"),
        (["build", "neptune", str(videos), "-o", str(tmp_path / "o"), "--llm", "openai"], "needs --vlm MODEL"),
        (["build", "status", str(empty)], "not a build folder"),
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code != 0 and message in str(result.exception), (args, result.output)


def test_a_model_hint_names_this_commands_flag(videos, tmp_path, env):
    """#27: `lvu build neptune --llm openai` without a model said `--model-arg model=NAME`, a flag it lacks."""
    result = CliRunner().invoke(app, ["build", "neptune", str(videos), "-o", str(tmp_path / "o"), "--llm", "openai",
                                      "--captioner", "ocr"])
    assert "--llm-arg model=NAME" in str(result.exception) and "--model-arg" not in str(result.exception)
    result = CliRunner().invoke(app, ["build", "run", "neptune", str(videos), "-o", str(tmp_path / "p"), "--opt",
                                      "captioner=ocr", "--model", "llm=openai"])
    assert "-a llm.model=NAME" in str(result.exception), result.output
