"""Judging a labelled dev set on the ledger and the stage runner (issue 21): the judgements equal
the in-memory path's, a rerun asks the judge nothing, an interrupted calibration resumes with only
the rows left, an edited row is the only one judged again, and `lvu judge calibrate` says so."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.models.base import Model, register_model
from lvu.runs.dev_judging import JOB_KIND, judge_dev_set
from lvu.runs.ledger import JobLedger
from lvu.scoring.judges import Judge, judge_rows, read_dev_set
from lvu.types import Prompt, Response, Text


@register_model("dev-judge-fake")
class FakeJudgeModel(Model):
    """P(TRUE) from a hash of the prompt text; logs every call (row id) to `log`; after `interrupt_after`
    calls it sends this process a SIGINT, as a Ctrl-C would."""

    run_neutral_args = ("log", "interrupt_after")

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        text = "".join(p.text for p in prompt.parts if isinstance(p, Text))
        p = 0.05 + 0.9 * int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 0xFFFF
        log = Path(self.args["log"])
        with log.open("a") as f:
            f.write(sample_id + "\n")
        if len(log.read_text().split()) == self.args.get("interrupt_after"):
            os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(0.01)
        return Response(text=" TRUE", logprobs=[{" TRUE": math.log(p), " FALSE": math.log(1 - p)}])


ROWS = [("salt", 1), ("salty", 1), ("sea salt", 1), ("pepper", 0), ("sugar", 0), ("nothing", 0)]


def write_dev(path: Path, rows=ROWS) -> Path:
    path.write_text("".join(json.dumps({"question": "What is added?", "reference": "salt", "candidate": c,
                                        "label": y, "id": f"r{i}"}) + "\n" for i, (c, y) in enumerate(rows)))
    return path


def judge(log: Path, **args) -> Judge:
    return Judge(FakeJudgeModel(log=str(log), **args), threshold=0.5)


def calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))  # stored calibrations


def test_ledger_judgements_equal_the_in_memory_path_and_a_rerun_asks_nothing(tmp_path):
    dev, log, results = write_dev(tmp_path / "dev.jsonl"), tmp_path / "calls.txt", tmp_path / "results"
    rows = read_dev_set(dev)
    heard: list[int] = []
    in_memory = asyncio.run(judge_rows(judge(tmp_path / "mem.txt"), rows, show_progress=False,
                                       on_done=lambda i, j: heard.append(i)))
    assert sorted(heard) == list(range(6))
    done = asyncio.run(judge_dev_set(judge(log), rows, dev, results_dir=results, concurrency=3, show_progress=False))
    assert [j.model_dump() for j in done.judgements] == [j.model_dump() for j in in_memory]
    assert sorted(calls(log)) == [f"r{i}" for i in range(6)] and done.n_reused == 0
    with JobLedger(results) as ledger:
        (info,) = ledger.jobs(JOB_KIND)
        assert info.spec == {"judge": judge(log).identity} and info.status == "done"
        assert len(list(ledger.entries(info.job_id))) == 6

    again = asyncio.run(judge_dev_set(judge(log), rows, dev, results_dir=results, show_progress=False))
    assert len(calls(log)) == 6 and again.n_reused == 6 and again.job_id == done.job_id
    assert [j.model_dump() for j in again.judgements] == [j.model_dump() for j in in_memory]
    other = Judge(FakeJudgeModel(log=str(log)), threshold=0.7)  # another threshold: another judge
    asyncio.run(judge_dev_set(other, rows, dev, results_dir=results, show_progress=False))
    assert len(calls(log)) == 12


def test_an_interrupted_calibration_resumes_with_the_rows_left(tmp_path):
    dev, log, results = write_dev(tmp_path / "dev.jsonl"), tmp_path / "calls.txt", tmp_path / "results"
    rows = read_dev_set(dev)
    stopped = asyncio.run(judge_dev_set(judge(log, interrupt_after=3), rows, dev, results_dir=results,
                                        concurrency=1, show_progress=False))
    assert stopped.interrupted and [j is not None for j in stopped.judgements] == [True] * 3 + [False] * 3
    resumed = asyncio.run(judge_dev_set(judge(log), rows, dev, results_dir=results, show_progress=False))
    assert not resumed.interrupted and resumed.n_reused == 3
    assert calls(log) == [f"r{i}" for i in range(6)]  # each row asked once
    in_memory = asyncio.run(judge_rows(judge(tmp_path / "mem.txt"), rows, show_progress=False))
    assert [j.model_dump() for j in resumed.judgements] == [j.model_dump() for j in in_memory]


def test_an_edited_row_is_the_only_one_judged_again(tmp_path):
    dev, log, results = write_dev(tmp_path / "dev.jsonl"), tmp_path / "calls.txt", tmp_path / "results"
    first = asyncio.run(judge_dev_set(judge(log), read_dev_set(dev), dev, results_dir=results, show_progress=False))
    write_dev(dev, [*ROWS[:4], ("brown sugar", 0), ROWS[5]])
    edited = asyncio.run(judge_dev_set(judge(log), read_dev_set(dev), dev, results_dir=results, show_progress=False))
    assert calls(log)[6:] == ["r4"] and edited.n_reused == 5 and edited.job_id != first.job_id
    assert edited.judgements[4] != first.judgements[4]
    assert [j.model_dump() for k, j in enumerate(edited.judgements) if k != 4] == \
        [j.model_dump() for k, j in enumerate(first.judgements) if k != 4]


def test_calibrate_command_resumes_from_the_ledger(tmp_path):
    from lvu.cli import app

    dev, log, results = write_dev(tmp_path / "dev.jsonl"), tmp_path / "calls.txt", tmp_path / "results"
    args = ["judge", "calibrate", "--dev", str(dev), "--judge", "dev-judge-fake", "-J", f"log={log}",
            "--results-dir", str(results), "--out"]
    first = CliRunner().invoke(app, [*args, str(tmp_path / "first.json")])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*args, str(tmp_path / "again.json")])
    assert again.exit_code == 0, again.output
    assert "6 of 6 dev rows were judged before by this judge" in again.output and len(calls(log)) == 6
    strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "created"}  # noqa: E731
    assert strip(tmp_path / "first.json") == strip(tmp_path / "again.json")
    fresh = CliRunner().invoke(app, [*args, str(tmp_path / "fresh.json"), "--fresh"])
    assert fresh.exit_code == 0, fresh.output
    assert len(calls(log)) == 12
