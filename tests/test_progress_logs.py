"""Progress in logs: plain lines when stdout is not a terminal, and ETAs from the recent rate."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console
from rich.progress import MofNCompleteColumn, TextColumn, TimeRemainingColumn

from lvu.progress import LoggedProgress, RecentRate, progress_interval


class Clock:
    """A settable clock for rich's get_time and the estimator (no sleeping, no wall time)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.slow
def test_lvu_run_logs_plain_progress_lines_when_stdout_is_a_file(tmp_path):
    from lvu.benchmarks.haystack import generate

    data = generate(tmp_path / "hay", seed=0, n_videos=2, scale=0.25, progress=False).parent
    log = tmp_path / "run.log"
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_PROGRESS_INTERVAL": "0.005"}
    with open(log, "w") as out:  # as under nohup / SLURM: stdout is a file
        done = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "haystack", "-m", "random",
                               "--data", str(data), "--results-dir", str(tmp_path / "res"), "--no-report"],
                              stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0].startswith("haystack × random  (")  # the title, once
    for stage in ("decode", "model", "scored"):
        running = [re.fullmatch(rf"{stage} (\d+)/20, failed 0 \((\S+), ETA (\S+), \d+:\d\d elapsed\)", line)
                   for line in lines]
        counts = [int(m.group(1)) for m in running if m]
        assert counts, (stage, lines)  # periodic lines while the run goes on
        assert counts == sorted(counts), (stage, counts)
        final = [line for line in lines if re.fullmatch(rf"{stage} 20/20, failed 0 complete in \d+:\d\d \(\S+/\w+\)", line)]
        assert len(final) == 1, (stage, lines)  # each stage's end is said once (issue 30, item 9)
    # the end of the last stage comes after every periodic line, before the results tables
    last = lines.index(next(line for line in lines if line.startswith("scored 20/20") and "complete" in line))
    assert not any(re.match(r"(decode|model|scored) \d+/20.*elapsed\)$", line) for line in lines[last:])


def test_recent_rate_follows_a_slowdown_not_the_overall_mean():
    rate = RecentRate(window=60, min_count=10)
    rate.start(0.0)
    for t in range(1, 4):
        rate.observe(float(t), t)
    assert rate.rate(4.0) == pytest.approx(3 / 4)  # early on: the overall rate since the start
    for t in range(4, 101):  # 1/s for 100 s ...
        rate.observe(float(t), t)
    for i in range(1, 51):  # ... then one every 4 s for 200 s
        rate.observe(100.0 + 4 * i, 100 + i)
    overall_eta = 100 / (150 / 300)  # 200 s: what the mean since the start says
    eta = rate.eta(100, 300.0)
    assert eta == pytest.approx(400, rel=0.1) and eta > 1.8 * overall_eta
    # a stall (nothing done for 100 s) lowers the rate further instead of freezing the ETA
    assert rate.eta(100, 400.0) > 2 * eta
    assert rate.eta(0, 400.0) == 0.0
    stalled = RecentRate()
    stalled.start(0.0)
    assert stalled.eta(5, 30.0) is None  # nothing done yet: no ETA rather than a made-up one


def slowing_progress(terminal: bool) -> tuple[LoggedProgress, io.StringIO, Clock]:
    """A task of 250 whose first 100 took 100 s and the next 50 took 200 s (now = 300 s)."""
    clock, out = Clock(), io.StringIO()
    console = Console(file=out, width=120, force_terminal=terminal, color_system=None)
    progress = LoggedProgress(TextColumn("{task.description}"), MofNCompleteColumn(), TimeRemainingColumn(),
                              console=console, get_time=clock, auto_refresh=False, interval=0)
    task = progress.add_task("judging", total=250, failed=0)
    for t in range(1, 101):
        clock.now = float(t)
        progress.advance(task)
    for i in range(1, 51):
        clock.now = 100.0 + 4 * i
        progress.update(task, advance=1, failed=i // 25)
    return progress, out, clock


def test_plain_lines_and_rich_rows_show_the_eta_of_the_recent_rate():
    progress, out, _ = slowing_progress(terminal=False)
    assert progress.plain
    line, = progress.plain_lines()
    # 100 left at 0.25/s: 6:40 (the overall mean of 0.5/s would say 3:20)
    assert line == "judging 150/250, failed 2 (0.25/s, ETA 6:40, 5:00 elapsed)"
    with progress:
        pass
    assert out.getvalue().splitlines()[-1] == "judging 150/250, failed 2 stopped in 5:00 (0.5/s)"

    progress, out, _ = slowing_progress(terminal=True)
    assert not progress.plain
    progress.console.print(progress.get_renderable())
    assert "judging 150/250    6:40" in out.getvalue()


def test_plain_mode_says_when_a_task_completes_once_and_ends_with_a_final_line():
    clock, out = Clock(), io.StringIO()
    progress = LoggedProgress(console=Console(file=out, force_terminal=False), get_time=clock, interval=0,
                              label="certificates")
    first = progress.add_task("", total=2)
    second = progress.add_task("embed", total=4)
    with progress:
        clock.now = 2.0
        progress.advance(first, 2)
        progress.advance(second, 1)
        assert progress.plain_lines() == ["certificates 2/2 complete in 0:02 (1.0/s)",
                                          "embed 1/4 (0.5/s, ETA 0:06, 0:02 elapsed)"]
        assert progress.plain_lines() == ["embed 1/4 (0.5/s, ETA 0:06, 0:02 elapsed)"]
    # certificates' end was said (by the first plain_lines above): the final lines do not repeat it
    assert out.getvalue().splitlines() == ["embed 1/4 stopped in 0:02 (0.5/s)"]


def test_progress_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("LVU_PROGRESS_INTERVAL", raising=False)
    assert progress_interval() == (10.0, None)
    monkeypatch.setenv("LVU_PROGRESS_INTERVAL", "2.5")
    assert progress_interval() == (2.5, None)
    monkeypatch.setenv("LVU_PROGRESS_INTERVAL", "often")
    interval, warning = progress_interval()
    assert interval == 10.0 and "LVU_PROGRESS_INTERVAL='often' is not a number of seconds" in warning
