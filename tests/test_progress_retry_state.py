"""What the progress says while it waits (issue 30, items 3 and 9): calls waiting to be retried show
in the model row and in the plain log lines (`retrying 3 calls (connection refused, next try in
4 s)`), and a finished stage is logged once, not again at every later stage's end."""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from lvu.media.testing import make_video
from lvu.models.retry import RETRY_WATCH, RetryWatch, with_retries
from lvu.models.testing_server import FakeOpenAIServer
from lvu.progress import LoggedProgress, PipelineProgress, stage_columns
from lvu.types import Sample, VideoRef


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_retry_watch_sees_each_wait_and_whether_attempts_reach_the_endpoint():
    clock, watch, seen = Clock(), RetryWatch(), []
    watch.clock = clock
    failures = [ConnectionRefusedError(111, "Connection refused"), ConnectionRefusedError(111, "Connection refused")]

    async def call() -> str:
        if failures:
            raise failures.pop()
        return "answer"

    async def sleep(delay: float) -> None:
        seen.append((watch.summary(), round(watch.unreachable_for())))
        clock.now += delay

    async def main() -> str:
        token = RETRY_WATCH.set(watch)
        try:
            return await with_retries(call, max_retries=5, is_retryable=lambda e: True, base_delay=4.0,
                                      min_fraction=1.0, sleep=sleep, is_unreachable=lambda e: True)
        finally:
            RETRY_WATCH.reset(token)

    assert asyncio.run(main()) == "answer"
    assert seen == [("retrying 1 call (connection refused, next try in 4 s)", 0),
                    ("retrying 1 call (connection refused, next try in 8 s)", 4)]  # refused for 4 s by then
    assert watch.summary() is None and watch.unreachable_for() == 0.0  # answered: nothing retrying, reachable


def test_retry_summary_counts_calls_and_says_when_the_next_try_is():
    clock = Clock()
    watch = RetryWatch(clock)
    a, b, c = watch.new_call(), watch.new_call(), watch.new_call()
    watch.waiting(a, "connection refused", 12.0)
    watch.waiting(b, "connection refused", 3.2)
    watch.waiting(c, "HTTP 503", 30.0)
    assert watch.summary() == "retrying 3 calls (connection refused, next try in 4 s)"
    watch.trying(b)
    clock.now += 2
    assert watch.summary() == "retrying 3 calls (connection refused, next try in 10 s)"
    watch.done(a), watch.done(c)
    assert watch.summary() == "retrying 1 call (connection refused, trying again now)"
    watch.done(b)
    assert watch.summary() is None


def test_pipeline_progress_shows_the_model_rows_note_in_plain_lines_and_on_a_terminal():
    state = ["retrying 3 calls (connection refused, next try in 4 s)"]
    out = io.StringIO()
    progress = PipelineProgress(5, console=Console(file=out, width=200, force_terminal=False, color_system=None))
    progress.describe("model", lambda: state[0])
    with progress:
        lines = progress.display.plain_lines()
        assert progress.stage_note("model") == state[0] and progress.stage_note("decode") is None
    model, = [line for line in lines if line.startswith("model ")]
    assert re.fullmatch(r"model 0/5, failed 0 \(0/s, ETA -, 0:00 elapsed\) — retrying 3 calls \(connection refused, "
                        r"next try in 4 s\)", model), model
    assert not any("retrying" in line for line in lines if not line.startswith("model "))

    tty = io.StringIO()
    live = PipelineProgress(5, console=Console(file=tty, width=200, force_terminal=True, color_system=None))
    live.describe("model", lambda: state[0])
    live.display.console.print(live.display.get_renderable())
    row, = [line for line in tty.getvalue().splitlines() if line.strip().startswith("model")]
    assert row.rstrip().endswith(state[0])
    state[0] = None  # nothing retrying: nothing shown
    live.display.console.print(live.display.get_renderable())
    assert "retrying" not in tty.getvalue().splitlines()[-2]


@pytest.mark.slow
def test_lvu_run_log_shows_calls_waiting_to_be_retried(tmp_path):
    make_video(tmp_path / "v.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
    lines = [Sample(id=f"q{i}", benchmark="jsonl", video=VideoRef(path="v.mp4"), question=f"Question {i}?",
                    options=["a", "b"], answer=0).model_dump_json() for i in range(4)]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_PROGRESS_INTERVAL": "0.1",
           "OPENAI_API_KEY": "sk-test"}
    with FakeOpenAIServer(answer="(A)") as server:
        server.script(*["503"] * 8)  # every call fails twice, then is answered
        log = tmp_path / "run.log"
        with open(log, "w") as out:  # as under nohup / SLURM: stdout is a file
            done = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "jsonl", "--data",
                                   str(tmp_path / "d.jsonl"), "-m", "openai", "-a", "model=m", "-a",
                                   f"base_url={server.base_url}", "-a", "backoff=2", "--frames", "2",
                                   "--concurrency", "4", "--results-dir", str(tmp_path / "res"), "--no-report"],
                                  stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    waiting = re.findall(r"^model \d/4, failed 0 \(.*elapsed\) — retrying (\d) calls? \(HTTP 503, "
                         r"(?:next try in \d+ s|trying again now)\)$", text, re.M)
    assert waiting and max(int(n) for n in waiting) >= 2, text
    assert re.search(r"^model 4/4, failed 0 complete in", text, re.M)


def test_a_finished_stage_is_logged_once_in_plain_mode():
    """lvu build's stages are tasks of one LoggedProgress: the first stage's end is said when it
    ends, not again at every later tick nor at the end of the build."""
    out = io.StringIO()
    progress = LoggedProgress(*stage_columns(6), console=Console(file=out, width=200, force_terminal=False),
                              interval=0, title="lvu build toy")  # no ticker thread: tick() below is its tick

    def tick() -> None:
        """What the ticker prints every interval, here at chosen moments (not by sleeping and hoping)."""
        for line in progress.plain_lines():
            progress.say(line)

    with progress:
        first = progress.add_task("select", total=2, failed=0)
        progress.update(first, advance=2)
        tick()  # ticks after the first stage ended
        tick()
        second = progress.add_task("shots", total=3, failed=0)
        progress.update(second, advance=1)
        tick()
        progress.update(second, advance=2)
        tick()
        third = progress.add_task("speech", total=2, failed=0)
        progress.update(third, advance=1)
        tick()
    lines = out.getvalue().splitlines()
    assert lines[0] == "lvu build toy"
    for stage, ended in (("select 2/2", "complete"), ("shots 3/3", "complete"), ("speech 1/2", "stopped")):
        said = [line for line in lines if line.startswith(stage) and f" {ended} in " in line]
        assert len(said) == 1, (stage, lines)
    assert lines[-1].startswith("speech 1/2, failed 0 stopped in")
