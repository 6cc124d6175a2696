"""The keyed ledger and the stage runner (issue 21): commit per item, resume skips committed keys,
a changed input is a new key, kill -9 loses only the items in flight, Ctrl-C stops cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lvu.runs.ledger import JobLedger, item_key, job_id
from lvu.runs.stage_runner import StageRunner, run_each


def test_keys_follow_content():
    assert item_key("q1", {"a": 1, "b": 2}) == item_key("q1", {"b": 2, "a": 1})  # canonical JSON
    assert item_key("q1", {"a": 1}) != item_key("q1", {"a": 2})
    assert job_id("cert", {"m": "x"}, "fp1") != job_id("cert", {"m": "x"}, "fp2")


def test_commit_resume_fresh_and_changed_inputs(tmp_path):
    calls: list[str] = []

    async def work(item: str) -> str:
        calls.append(item)
        if item == "bad":
            raise ValueError("boom")
        return item.upper()

    def job(items: list[str], *, fresh: bool = False) -> JobLedger:
        ledger = JobLedger(tmp_path)
        jid = ledger.open_job("upper", {"v": 1}, "fp", fresh=fresh)
        done = ledger.done_keys(jid)
        todo = [(i, x) for i, x in enumerate(items) if item_key(x) not in done]

        async def safe(pair):
            try:
                return await work(pair[1]), None
            except ValueError as e:
                return None, str(e)

        def commit(pair, outcome):
            ledger.commit(jid, item_key(pair[1]), ordinal=pair[0], result=outcome[0], error=outcome[1])

        asyncio.run(run_each(todo, safe, commit, concurrency=3))
        ledger.finish_job(jid)
        return ledger

    ledger = job(["a", "b", "bad", "c"])
    jid = ledger.jobs("upper")[0].job_id
    assert sorted(calls) == ["a", "b", "bad", "c"]
    assert [(e.result, e.error) for e in ledger.entries(jid)] == [("A", None), ("B", None), (None, "boom"), ("C", None)]
    ledger.close()
    calls.clear()
    job(["a", "b", "bad", "c"]).close()
    assert calls == ["bad"]  # committed keys skipped; the failed item retried
    calls.clear()
    job(["a", "B2", "bad", "c"]).close()
    assert sorted(calls) == ["B2", "bad"]  # a changed input is a new key
    calls.clear()
    job(["a"], fresh=True).close()
    assert calls == ["a"]


def test_runner_keeps_order_of_groups_bounds_the_queue_and_stops_on_a_commit_error():
    seen: list[tuple[str, int]] = []
    in_queue_max = 0
    prepared = consumed = 0

    async def produce(group):
        nonlocal prepared, in_queue_max
        for x in group:
            prepared += 1
            in_queue_max = max(in_queue_max, prepared - consumed)
            yield x

    async def consume(x):
        nonlocal consumed
        await asyncio.sleep(0.001)
        consumed += 1
        return x * 10

    def commit(x, y):
        seen.append((x, y))
        return RuntimeError("enough") if len(seen) == 5 else None

    runner = StageRunner(consumers=[consume, consume], commit=commit, produce=produce, producers=1)
    with pytest.raises(RuntimeError, match="enough"):
        asyncio.run(runner.run([[1, 2, 3], [4, 5, 6], [7, 8, 9, 10, 11, 12]]))
    assert len(seen) >= 5 and all(y == 10 * x for x, y in seen)
    assert in_queue_max <= 2 + 2 + 1  # queue (2 slots) + the two consumers' items + the one being put
    assert len(seen) < 12  # stopped early


def test_a_bug_in_a_stage_function_is_raised_not_swallowed():
    async def consume(x):
        raise KeyError("bug")

    with pytest.raises(KeyError):
        asyncio.run(run_each([1, 2], consume, lambda x, y: None, concurrency=2))


def test_retries_go_through_the_shared_policy():
    attempts: list[int] = []

    async def flaky(x):
        attempts.append(x)
        if len(attempts) < 3:
            raise ConnectionError("again")
        return x

    out: list[int] = []
    asyncio.run(run_each([7], flaky, lambda x, y: out.append(y), concurrency=1,
                         retry={"max_retries": 5, "is_retryable": lambda e: isinstance(e, ConnectionError),
                                "base_delay": 0.0}))
    assert attempts == [7, 7, 7] and out == [7]


JOB = textwrap.dedent("""
    import asyncio, sys, time
    from lvu.runs.ledger import JobLedger, item_key
    from lvu.runs.stage_runner import run_each

    ledger = JobLedger(sys.argv[1])
    jid = ledger.open_job("slow", {}, "fp")
    done = ledger.done_keys(jid)
    todo = [i for i in range(40) if item_key(i) not in done]
    log = open(sys.argv[2], "a")

    async def work(i):
        await asyncio.sleep(0.05)
        log.write(f"{i}\\n"); log.flush()
        return i * i

    asyncio.run(run_each(todo, work, lambda i, r: ledger.commit(jid, item_key(i), ordinal=i, result=r),
                         concurrency=4, what="square"))
    print("finished", len(todo))
""")


@pytest.mark.slow
def test_kill_9_loses_only_items_in_flight_and_resume_completes_once(tmp_path):
    script, gate = tmp_path / "job.py", tmp_path / "open"
    # items from 12 on wait for the gate: the kill always comes with items in flight and items left
    script.write_text(JOB.replace("import asyncio, sys, time", "import asyncio, os, sys, time").replace(
        "await asyncio.sleep(0.05)\n",
        f"await asyncio.sleep(0.05)\n    while i >= 12 and not os.path.exists({str(gate)!r}):\n"
        "        await asyncio.sleep(0.02)\n"))
    log = tmp_path / "calls.log"
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "res"), str(log)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 10):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gate.touch()  # the resumed run does them all
    with JobLedger(tmp_path / "res") as ledger:
        jid = ledger.jobs("slow")[0].job_id
        committed = {e.ordinal for e in ledger.entries(jid)}
    assert 0 < len(committed) < 40
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "res"), str(log)], capture_output=True,
                         text=True, check=True)
    assert f"finished {40 - len(committed)}" in out.stdout  # committed items were not redone
    with JobLedger(tmp_path / "res") as ledger:
        entries = list(ledger.entries(jid))
    assert [e.ordinal for e in entries] == list(range(40)) and all(e.result == e.ordinal ** 2 for e in entries)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_first_ctrl_c_finishes_in_flight_items_and_stops(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB.replace("await asyncio.sleep(0.05)", "await asyncio.sleep(0.5)"))
    log = tmp_path / "calls.log"
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "res"), str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 4):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    done = log.read_text().split()
    with JobLedger(tmp_path / "res") as ledger:
        jid = ledger.jobs("slow")[0].job_id
        committed = sorted(e.ordinal for e in ledger.entries(jid))
    assert sorted(map(int, done)) == committed  # every item that finished was committed, none half
    assert len(committed) < 40


def test_reuse_copies_only_clean_items_of_jobs_with_the_same_kind_and_spec(tmp_path):
    with JobLedger(tmp_path) as ledger:
        old = ledger.open_job("cert", {"m": "x"}, "fp-old")
        ledger.commit(old, "k1", ordinal=0, result={"v": 1}, raw="one")
        ledger.commit(old, "k2", ordinal=1, error="boom")  # failed: never reused
        other_spec = ledger.open_job("cert", {"m": "y"}, "fp-old")
        ledger.commit(other_spec, "k3", ordinal=0, result={"v": 3})
        other_kind = ledger.open_job("judge-dev", {"m": "x"}, "fp-old")
        ledger.commit(other_kind, "k3", ordinal=0, result={"v": 3})
        new = ledger.open_job("cert", {"m": "x"}, "fp-new")  # the same work on edited input
        assert ledger.reuse(new, {"k1": 5, "k2": 6, "k3": 7}) == 1
        (entry,) = ledger.entries(new)
        assert (entry.key, entry.ordinal, entry.result, entry.raw) == ("k1", 5, {"v": 1}, "one")
        assert ledger.reuse(new, {"k1": 5}) == 0  # already there
