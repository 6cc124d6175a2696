"""Crash safety: SIGKILL at random points then resume, API faults at a 30 % rate, clean Ctrl-C.

The killed and interrupted runs are real `python` subprocesses running the real engine on generated
videos (decode, frame cache, store); the fake model answers the letter its question names."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.benchmarks.jsonl import write_samples
from lvu.media.testing import make_video
from lvu.api import run
from lvu.runs.store import Store
from lvu.types import Sample, VideoRef

HERE = Path(__file__).parent
LETTERS = "ABCD"


def make_dataset(root: Path, n_videos: int, per_video: int) -> Path:
    """Small generated videos, `per_video` questions each; question i names its answer letter."""
    samples = []
    for v in range(n_videos):
        video = make_video(root / f"v{v:02d}.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
        for q in range(per_video):
            i = v * per_video + q
            samples.append(Sample(id=f"s{i:03d}", benchmark="jsonl", video=VideoRef(path=str(video.path)),
                                  question=f"Question {i}: pick {LETTERS[i % 4]}", options=["a", "b", "c", "d"],
                                  answer=i % 4))
    return write_samples(root / "data.jsonl", samples)


def stored(db: Path) -> dict[str, tuple[float, str]]:
    """sample_id -> (completed time, record JSON), read with plain sqlite like any other reader."""
    if not db.exists():
        return {}
    con = sqlite3.connect(db)
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("SELECT sample_id, completed, record FROM samples")}
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}
    finally:
        con.close()


def comparable(records) -> list[tuple]:
    return sorted((r.sample_id, r.prediction, r.score, r.correct, r.error, tuple(r.frame_timestamps),
                   json.dumps(r.prompt, sort_keys=True), r.response) for r in records)


KILLED_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.api import run
    run("jsonl", "fake-follow-neutral", settings={{"data": {data!r}, "frames": 4}},
        model_args={{"delay": 0.15, "log": {log!r}}}, results_dir={results!r}, concurrency=2,
        decode=sys.argv[1], show_progress=False, report=False)
    """
)


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path):
    data = make_dataset(tmp_path, n_videos=12, per_video=4)
    results, log = tmp_path / "results", tmp_path / "calls.txt"
    script = KILLED_RUN.format(here=str(HERE), data=str(data), log=str(log), results=str(results))
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache")}  # frame-cache writes get killed too
    db = results / "lvu.sqlite"
    rng = random.Random(7)
    before: dict[str, tuple[float, str]] = {}
    kills = 0
    for attempt in range(4):
        decode = "processes" if attempt % 2 else "threads"  # the decode mode is not part of the run
        proc = subprocess.Popen([sys.executable, "-c", script, decode], env=env)
        deadline = time.time() + 120
        while len(stored(db)) <= len(before) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)  # this attempt has stored something new: now kill it somewhere random
        time.sleep(rng.uniform(0.0, 0.6))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        rows = stored(db)
        assert all(rows[k] == v for k, v in before.items())  # nothing stored was lost or rewritten
        assert len(rows) > len(before)
        before = rows
    assert kills >= 3
    subprocess.run([sys.executable, "-c", script, "threads"], env=env, check=True)

    store = Store(results)
    resumed = store.results(store.run().run_id)
    assert [r.sample_id for r in resumed] == [f"s{i:03d}" for i in range(48)]  # every sample exactly once
    assert all(stored(db)[k] == v for k, v in before.items())  # and none of the stored ones recomputed
    calls = log.read_text().split()
    assert set(calls) == {f"s{i:03d}" for i in range(48)}
    assert len(calls) - 48 <= 2 * kills  # only samples in the model (2 at a time) at a kill are asked again
    clean = run("jsonl", "fake-follow-neutral", settings={"data": str(data), "frames": 4},
                model_args={"delay": 0}, results_dir=tmp_path / "clean", show_progress=False, report=False)
    assert clean.run_id == store.run().run_id
    assert comparable(resumed) == comparable(Store(tmp_path / "clean").results(clean.run_id))
    assert all(r.correct and len(r.frame_timestamps) == 4 for r in resumed)


def test_api_faults_at_30_percent_cost_no_sample(tmp_path):
    """429s, 500s, timeouts and dropped connections on ~30 % of requests: every sample is scored."""
    from lvu.models.testing_server import FakeOpenAIServer

    data = make_dataset(tmp_path, n_videos=6, per_video=5)

    def answer(body: dict) -> str:  # the letter the question names, as a chatty model writes it
        text = json.dumps(body["messages"])
        return f"The answer is ({re.search(r'pick ([A-D])', text).group(1)})."

    kw = {"settings": {"data": str(data), "frames": 2}, "show_progress": False, "report": False, "concurrency": 6}
    with FakeOpenAIServer(answer=answer, fault_rate=0.3, faults=("429", "500", "timeout", "drop"), hang=5.0,
                          seed=3) as server:
        args = {"model": "fake-vlm", "base_url": server.base_url, "max_retries": 12, "backoff": 0.001,
                "timeout": 0.5, "cache": False}
        summary = run("jsonl", "openai", model_args=args, results_dir=tmp_path / "flaky", **kw)
        faults = [r.fault for r in server.chat_requests()]
        server.fault_rate = 0.0
        calm = run("jsonl", "openai", model_args=args, results_dir=tmp_path / "calm", **kw)
    assert {"429", "500", "timeout", "drop"} <= set(faults)
    assert 0.15 < sum(f is not None for f in faults) / len(faults) < 0.45
    assert summary.n_failed == 0 and summary.n_total == 30
    results = Store(tmp_path / "flaky").results(summary.run_id)
    assert [r.sample_id for r in results] == [f"s{i:03d}" for i in range(30)]
    assert all(r.correct and r.error is None for r in results)
    assert comparable(results) == comparable(Store(tmp_path / "calm").results(calm.run_id))


INTERRUPTED_CLI = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.cli import main
    sys.argv = ["lvu", "run", "-b", "fake", "-m", "fake-follow-neutral", "--set", "n=40", "-a", "delay={delay}",
                "-a", "log={log}",{extra} "--concurrency", "4", "--results-dir", {results!r}, "--no-report"]
    main()
    """
)


def _start(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not predicate() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, proc.communicate()


def _run_status(db: Path) -> str | None:
    if not db.exists():
        return None
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT status FROM runs").fetchone()
        return row[0] if row else None
    except sqlite3.OperationalError:
        return None
    finally:
        con.close()


@pytest.mark.slow
def test_ctrl_c_lets_samples_in_flight_finish_and_resume_recomputes_nothing(tmp_path):
    results, log = tmp_path / "results", tmp_path / "calls.txt"
    script = INTERRUPTED_CLI.format(here=str(HERE), delay=0.2, log=str(log), results=str(results), extra="")
    db = results / "lvu.sqlite"
    proc = _start(script)
    _wait_for(lambda: len(stored(db)) >= 6, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    n = len(stored(db))
    assert f"{n} of 40 samples of run" in err and "run the same command again to resume" in err
    assert "stopping: waiting up to" in out + err
    assert _run_status(db) == "interrupted"
    calls = log.read_text().split()
    assert sorted(calls) == sorted(stored(db))  # every call that was in flight finished and was stored
    assert n < 40

    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert sorted(stored(db)) == [f"q{i:03d}" for i in range(40)] and _run_status(db) == "done"
    calls = log.read_text().split()
    assert len(calls) == 40 == len(set(calls))  # nothing asked twice: no work was lost to the interrupt


@pytest.mark.slow
def test_second_ctrl_c_abandons_samples_in_flight_and_writes_nothing_half(tmp_path):
    results, log, started = tmp_path / "results", tmp_path / "calls.txt", tmp_path / "started.txt"
    # the model calls wait on a gate that never opens: in flight until abandoned, however slow the box
    never = tmp_path / "never"
    extra = f' "-a", "started={started}", "-a", "gate={never}",'
    script = INTERRUPTED_CLI.format(here=str(HERE), delay=0, log=str(log), results=str(results), extra=extra)
    db = results / "lvu.sqlite"
    said = tmp_path / "out.txt"
    with open(said, "w") as out:  # unbuffered, so the test reads each line as it is written
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _wait_for(lambda: started.exists() and len(started.read_text().split()) >= 4, proc)  # 4 calls under way
    proc.send_signal(signal.SIGINT)
    _wait_for(lambda: "stopping: waiting up to" in said.read_text(), proc)  # the first Ctrl-C was handled
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    text = said.read_text()
    assert proc.returncode == 130, text
    assert "abandoning the samples in flight" in text
    assert stored(db) == {} and not log.exists()  # the abandoned calls never finished; nothing was stored
    assert _run_status(db) == "interrupted"
