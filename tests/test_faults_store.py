"""Issue 22: a store that cannot be written (a full disk) ends a run at once with one line; the
read-only commands still read it; one process per run (the run lock)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and models)
from lvu.api import run
from lvu.errors import LvuError
from lvu.runs.engine import Engine, make_spec
from lvu.runs.store import Store
from test_crash_safety import HERE, _run_status, _start, _wait_for, stored

FULL = "database or disk is full"


class FillingDisk:
    """A store connection whose writes fail once `room` samples are stored, as SQLite's do on a
    full disk (reads keep working); `error`: the message, `all_writes`: every write fails then
    (a full disk), else only storing samples does."""

    def __init__(self, db: sqlite3.Connection, room: int, error: str = FULL, all_writes: bool = True) -> None:
        self.db, self.room, self.error, self.all_writes = db, room, error, all_writes
        self.refused = 0

    def execute(self, sql: str, *args):
        statement = sql.lstrip().upper()
        sample = statement.startswith("INSERT INTO SAMPLES")
        if self.room <= 0 and (sample or self.all_writes and statement.startswith(("INSERT", "UPDATE", "DELETE"))):
            self.refused += sample
            raise sqlite3.OperationalError(self.error)
        self.room -= sample
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exc):
        return self.db.__exit__(*exc)


def test_a_full_disk_ends_the_run_at_once_with_one_line_and_status_interrupted(tmp_path):
    spec, bench, model = make_spec("fake", "fake-follow", settings={"n": 200}, model_args={"delay": 0.001})
    store = Store(tmp_path / "results")
    engine = Engine(bench, model, store, concurrency=16)
    store.db = FillingDisk(store.db, room=30)  # after begin_run's writes: 30 samples fit
    with pytest.raises(LvuError) as stop:
        asyncio.run(engine.run(spec, show_progress=False))
    message = str(stop.value)
    assert "\n" not in message
    assert message.startswith(f"results disk full: 30 of 200 samples of run {spec.run_id} stored in ")
    assert message.endswith("free space and run the same command to resume")
    store.db = store.db.db
    info = store.run(spec.run_id)
    assert info.status == "interrupted"  # its final status could not be written: the free lock says so
    assert info.n_samples == 30
    store.close()
    # Room again: the same run resumes and asks only for the rest.
    summary = run("fake", "fake-follow", settings={"n": 200}, model_args={"delay": 0.001},
                  results_dir=tmp_path / "results", report=False, show_progress=False)
    assert summary.n_done_before == 30 and summary.n_failed == 0
    assert Store(tmp_path / "results").run(spec.run_id).status == "done"


def test_a_store_error_other_than_a_full_disk_also_stops_at_once(tmp_path):
    spec, bench, model = make_spec("fake", "fake-follow", settings={"n": 50})
    store = Store(tmp_path)
    engine = Engine(bench, model, store, concurrency=2)
    store.db = FillingDisk(store.db, room=0, error="database is locked", all_writes=False)
    with pytest.raises(LvuError, match=r"^cannot store results: 0 of 50 samples of run \w+ stored "
                                       r"\(.*database is locked\)\); fix that and run the same command to resume$"):
        asyncio.run(engine.run(spec, show_progress=False))
    assert store.db.refused <= 2  # the samples in flight at most: none after the first failure
    store.db = store.db.db
    assert store.run(spec.run_id).status == "interrupted"
    store.close()


READ_WITH_NO_ROOM = textwrap.dedent(
    """
    import resource, signal, sys
    sys.path.insert(0, {here!r})
    import fakes
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: the WAL index cannot be made
    from lvu.cli import main
    sys.argv = ["lvu", *sys.argv[1:]]
    main()
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="POSIX file-size limits")
def test_read_only_commands_and_the_viewer_open_a_store_on_a_full_disk(tmp_path):
    results = tmp_path / "results"
    summary = run("fake", "fake-follow", settings={"n": 5, "bad_records": 1}, results_dir=results, report=False,
                  show_progress=False)
    assert not (results / "lvu.sqlite-shm").exists()  # closed cleanly: reading must create it anew
    script = READ_WITH_NO_ROOM.format(here=str(HERE))
    for command in (["results", "list"], ["results", "show", summary.run_id], ["results", "export"]):
        done = subprocess.run([sys.executable, "-c", script, *command, "--results-dir", str(results)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1), (command, done.stderr)  # 1: results show of a run with a failure
        assert summary.run_id in done.stdout or "q004" in done.stdout, (command, done.stdout, done.stderr)
    viewer = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        from lvu.web.catalog import Catalog
        print([r.run_id for r in Catalog({str(results)!r}).runs()])
    """)
    done = subprocess.run([sys.executable, "-c", viewer], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and summary.run_id in done.stdout, done.stderr


def test_results_show_starts_every_failure_line_with_the_sample_id(tmp_path):
    from typer.testing import CliRunner

    from lvu.cli import app

    run("fake", "fake-follow", settings={"n": 6, "bad_records": 1}, model_args={"error": ["q002"]},
        results_dir=tmp_path, report=False, show_progress=False)
    shown = CliRunner().invoke(app, ["results", "show", "--results-dir", str(tmp_path)])
    lines = shown.output.splitlines()
    assert "q002: model error: HTTP 500 from server" in lines and "bad0: fake.jsonl:1: not JSON" in lines
    assert not any(line.startswith("failed:") for line in lines)


# ---- one process per run ---------------------------------------------------------------------------------


def test_a_second_store_cannot_begin_a_run_another_holds(tmp_path):
    spec, _, _ = make_spec("fake", "fake-follow", settings={"n": 3})
    first, second = Store(tmp_path), Store(tmp_path)
    run_id = first.begin_run(spec, {})
    assert first.begin_run(spec, {}) == run_id  # the holder may reopen it
    with pytest.raises(LvuError, match=rf"^run {run_id} is in progress \(pid {os.getpid()}\) — wait"):
        second.begin_run(spec, {})
    assert second.run(run_id).status == "running"  # held: really running
    first.finish_run(run_id, "interrupted")
    second.begin_run(spec, {})  # free again
    second.close()
    first.close()


LONG_RUN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.cli import main
    sys.argv = ["lvu", "run", "-b", "fake", "-m", "fake-follow-neutral", "--set", "n=12", "-a", "gate={gate}",
                "-a", "log={log}", "--concurrency", "2", "--results-dir", {results!r}, "--no-report", *sys.argv[1:]]
    main()
    """
)


@pytest.mark.slow
def test_the_same_run_started_twice_is_refused_and_a_limit_run_never_marks_it_done(tmp_path):
    results, log, gate = tmp_path / "results", tmp_path / "calls.txt", tmp_path / "gate"
    db = results / "lvu.sqlite"
    script = LONG_RUN.format(here=str(HERE), log=str(log), results=str(results), gate=str(gate))
    first = _start(script)  # its model answers only once `gate` exists
    _wait_for(lambda: _run_status(db) == "running", first)
    for extra in ([], ["--limit", "3"]):
        second = subprocess.run([sys.executable, "-c", script, *extra], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is in progress (pid {first.pid})" in second.stderr and len(second.stderr.splitlines()) == 1
        assert _run_status(db) == "running"  # the refused --limit run did not touch the status
    gate.touch()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    calls = log.read_text().split()
    assert len(calls) == len(set(calls)) == 12  # every sample asked once: no doubled bill
    assert _run_status(db) == "done"


@pytest.mark.slow
def test_a_killed_run_lists_as_interrupted(tmp_path):
    results, log = tmp_path / "results", tmp_path / "calls.txt"
    db = results / "lvu.sqlite"
    proc = _start(LONG_RUN.format(here=str(HERE), log=str(log), results=str(results), gate=str(tmp_path / "gate")))
    _wait_for(lambda: _run_status(db) == "running", proc)  # and waiting for the gate that never opens
    proc.kill()
    proc.communicate(timeout=60)
    assert _run_status(db) == "running"  # what it stored last; no process holds the run now
    store = Store(results, read_only=True)
    assert [r.status for r in store.runs()] == ["interrupted"]
    store.close()
