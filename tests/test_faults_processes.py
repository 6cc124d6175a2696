"""Issue 22: a killed run leaves no decode worker behind, and SIGTERM stops a run like Ctrl-C.

Real `python` subprocesses run the real engine; the fake model answers the letter its question names."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import process_watch
from test_crash_safety import HERE, _run_status, _start, _wait_for, make_dataset, stored

pytestmark = pytest.mark.skipif(not process_watch.AVAILABLE, reason="reads /proc (Linux)")

DECODING_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.api import run
    run("jsonl", "fake-follow", settings={{"data": {data!r}, "frames": 4}}, model_args={{"delay": 2.0}},
        results_dir={results!r}, concurrency=1, decode="processes", show_progress=False, report=False)
    """
)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                text = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2:].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _workers(pid: int) -> list[int]:
    return [p for p in _children_of(pid) if "spawn_main" in process_watch.command_line(p)]


def _alive(pid: int) -> bool:
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_decode_workers_exit_when_the_run_is_killed(tmp_path, monkeypatch, how):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    data = make_dataset(tmp_path, n_videos=6, per_video=2)
    proc = _start(DECODING_RUN.format(here=str(HERE), data=str(data), results=str(tmp_path / "results")))
    _wait_for(lambda: len(_workers(proc.pid)) >= 2, proc)  # both decode workers are up
    workers = _workers(proc.pid)
    proc.send_signal(how)
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 20  # a bound, not a timing: the workers go when their parent does
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [f"{p}: {process_watch.command_line(p)}" for p in workers if _alive(p)]
    assert not left, f"decode workers outlived the killed run: {left}"


TERMINATED_CLI = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.cli import main
    sys.argv = ["lvu", "run", "-b", "fake", "-m", "fake-follow-neutral", "--set", "n=40", "-a", "delay=0.3",
                "-a", "log={log}", "--concurrency", "4", "--results-dir", {results!r}, "--no-report"]
    main()
    """
)


@pytest.mark.slow
def test_sigterm_finishes_samples_in_flight_marks_the_run_interrupted_and_says_how_to_resume(tmp_path):
    results, log = tmp_path / "results", tmp_path / "calls.txt"
    db = results / "lvu.sqlite"
    proc = _start(TERMINATED_CLI.format(here=str(HERE), log=str(log), results=str(results)))
    _wait_for(lambda: len(stored(db)) >= 4, proc)
    proc.send_signal(signal.SIGTERM)  # what `kill PID`, `timeout` and SLURM send
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    n = len(stored(db))
    assert f"interrupted — {n} of 40 samples of run" in err and "run the same command again to resume" in err
    assert "stopping: waiting up to" in out + err
    assert _run_status(db) == "interrupted"
    assert sorted(log.read_text().split()) == sorted(stored(db))  # the calls in flight finished and were stored
    assert n < 40
