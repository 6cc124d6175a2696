"""Temporal certificates on the ledger and the stage runner (issue 21): each certificate is
committed as it completes, a rerun computes nothing, an edited sample is the only one certified
again, samples run concurrently without mixing their clips, and kill -9 then resume ends with every
sample certified once, as an uninterrupted job would."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger_reading import committed
import fakes  # noqa: F401  (registers fake-follow-neutral)
from fakes import FollowModel
from lvu.analysis.certificate import JOB_KIND, certificate_job, schedule
from lvu.benchmarks.jsonl import write_samples
from lvu.media.testing import make_video
from lvu.models.base import register_model
from lvu.runs.ledger import JobLedger
from lvu.types import Prompt, Response, Sample, VideoRef

HERE = Path(__file__).parent
LETTERS = "ABCD"


@register_model("cert-needs-frames")
class NeedsFramesModel(FollowModel):
    """Answers right only when the prompt has at least the frames its question says it needs."""

    run_neutral_args = ("delay", "log")

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        await asyncio.sleep(self.delay)
        need = int(re.search(r"needs (\d+)", prompt.question or "").group(1))
        letter = re.search(r"pick ([A-D])", prompt.question or "").group(1)
        if len(prompt.frames) < need:
            letter = LETTERS[(LETTERS.index(letter) + 1) % 4]
        return Response(text=f"({letter})")


def make_data(root: Path, n: int, *, seconds: float = 2, needs: list[int] | None = None,
              edit: dict[int, str] | None = None) -> Path:
    """`n` questions on two small videos; question i names its answer (or `edit[i]`'s letter)."""
    videos = [make_video(root / f"v{v}.mp4", seconds=seconds, fps=4, gop=4, size=(32, 24)).path for v in range(2)]
    samples = []
    for i in range(n):
        letter = (edit or {}).get(i, LETTERS[i % 4])
        need = f" (needs {needs[i]} frames)" if needs else ""
        samples.append(Sample(id=f"s{i:02d}", benchmark="jsonl", video=VideoRef(path=str(videos[i % 2])),
                              question=f"Question {i}{need}: pick {letter}", options=["a", "b", "c", "d"],
                              answer=LETTERS.index(letter)))
    return write_samples(root / "data.jsonl", samples)


def job(data: Path, results: Path, log: Path | None = None, model: str = "fake-follow-neutral", **kw):
    args = {"delay": kw.pop("delay", 0), **({"log": str(log)} if log else {})}
    kw = {"fps": (1.0,), "min_clip": 1.0, **kw}
    return certificate_job("jsonl", model, settings={"data": str(data)}, model_args=args, results_dir=results,
                           show_progress=False, **kw)


def calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def plain(certs) -> list[tuple]:
    return [(c.sample_id, c.frames, c.seconds, c.max_incorrect_frames, c.queries, c.error, list(map(list, c.trail)))
            for c in certs]


def test_certificates_land_in_the_ledger_and_a_rerun_computes_nothing(tmp_path):
    data, results, log = make_data(tmp_path, 6), tmp_path / "results", tmp_path / "calls.txt"
    first = job(data, results, log, concurrency=3)
    assert sorted(calls(log)) == [f"s{i:02d}" for i in range(6)] and first.n_reused == 0
    assert [c.sample_id for c in first.certificates] == [f"s{i:02d}" for i in range(6)]
    assert all(c.frames == 1 and not c.error for c in first.certificates)
    with JobLedger(results) as ledger:
        (info,) = ledger.jobs(JOB_KIND)
        assert info.job_id == first.job_id and info.status == "done"
        assert info.spec["schedule"] == {"fps": [1.0], "min_clip": 1.0, "max_frames": 256, "verify": 0}
        assert "log" not in info.spec["model_args"] and "data_fingerprint" not in info.spec["settings"]
        entries = list(ledger.entries(first.job_id))
        assert [e.result["sample_id"] for e in entries] == [f"s{i:02d}" for i in range(6)]

    again = job(data, results, log, delay=0.01)  # a run-neutral argument changed: the same job
    assert len(calls(log)) == 6 and again.n_reused == 6 and again.job_id == first.job_id
    assert plain(again.certificates) == plain(first.certificates)
    fresh = job(data, results, log, fresh=True)
    assert len(calls(log)) == 12 and fresh.n_reused == 0


def test_an_edited_sample_is_the_only_one_certified_again(tmp_path):
    data, results, log = make_data(tmp_path, 6), tmp_path / "results", tmp_path / "calls.txt"
    first = job(data, results, log)
    make_data(tmp_path, 6, edit={2: "D"})  # s02's question and answer change
    edited = job(data, results, log)
    assert calls(log)[6:] == ["s02"] and edited.n_reused == 5
    assert edited.job_id != first.job_id  # other data: another job, which took the unchanged certificates
    assert plain(edited.certificates) == plain(first.certificates)
    with JobLedger(results) as ledger:
        assert len(list(ledger.entries(edited.job_id))) == 6 and len(ledger.jobs(JOB_KIND)) == 2
    job(data, results, log, min_clip=0.5)  # another schedule: every sample again
    assert len(calls(log)) == 7 + 6


def test_concurrent_samples_each_get_their_own_clips(tmp_path):
    """Samples needing different frame counts, certified four at a time with a slow model: each
    certificate is the first clip with enough frames (a clip plan shared between samples would not be)."""
    needs = [1, 8, 2, 6, 3, 7, 4, 5]
    data = make_data(tmp_path, 8, seconds=8, needs=needs)
    certs = job(data, tmp_path / "results", model="cert-needs-frames", delay=0.02, concurrency=4).certificates
    steps = schedule(8.0, fps=(1.0,), min_clip=1.0)
    assert [s.frames for s in steps] == [1, 2, 4, 8]
    for cert, need in zip(certs, needs):
        assert not cert.error, cert.error
        assert cert.frames == next(s.frames for s in steps if s.frames >= need), (cert.sample_id, need, cert.trail)


def test_the_command_writes_every_certificate_of_a_resumed_job(tmp_path):
    from lvu.cli import app

    data, results, out = make_data(tmp_path, 4), tmp_path / "results", tmp_path / "certs.jsonl"
    args = ["certificate", "-b", "jsonl", "-m", "fake-follow-neutral", "--data", str(data), "--fps", "1",
            "--min-clip", "1", "--results-dir", str(results), "-o", str(out)]
    first = CliRunner().invoke(app, [*args, "--limit", "2"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "2 computed, 2 from the ledger" in again.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["sample_id"] for r in rows] == ["s00", "s01", "s02", "s03"] and all(r["frames"] == 1 for r in rows)


KILLED_JOB = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import fakes
    from lvu.analysis.certificate import certificate_job
    certificate_job("jsonl", "fake-follow-neutral", settings={{"data": {data!r}}},
                    model_args={{"delay": 0.1, "log": {log!r}}}, results_dir={results!r}, fps=(1.0,),
                    min_clip=1.0, concurrency=2, show_progress=False)
    """
)


@pytest.mark.slow
def test_kill_9_then_resume_certifies_every_sample_once(tmp_path):
    n = 16
    data, results, log = make_data(tmp_path, n), tmp_path / "results", tmp_path / "calls.txt"
    script = KILLED_JOB.format(here=str(HERE), data=str(data), log=str(log), results=str(results))
    db = results / "lvu.sqlite"
    before: dict[str, tuple] = {}
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
        deadline = time.time() + 120
        while len(committed(db)) < len(before) + 2 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)  # this attempt has committed something new: kill it mid-job
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        rows = committed(db)
        assert all(rows[k] == v for k, v in before.items())  # nothing committed was lost or rewritten
        before = rows
    assert kills >= 2 and len(before) < n
    subprocess.run([sys.executable, "-c", script], env=dict(os.environ), check=True)

    with JobLedger(results) as ledger:
        (info,) = ledger.jobs(JOB_KIND)
        resumed = [e.result for e in ledger.entries(info.job_id)]
    assert [r["sample_id"] for r in resumed] == [f"s{i:02d}" for i in range(n)]  # every sample exactly once
    assert all(committed(db)[k] == v for k, v in before.items())  # and none committed before recomputed
    assert set(calls(log)) == {f"s{i:02d}" for i in range(n)}
    assert len(calls(log)) - n <= 2 * kills  # only the samples in flight (2 at a time) at a kill are asked again
    clean = job(data, tmp_path / "clean", concurrency=1)
    assert clean.job_id == info.job_id
    assert plain(clean.certificates) == plain(certificate_job(
        "jsonl", "fake-follow-neutral", settings={"data": str(data)}, model_args={}, results_dir=results,
        fps=(1.0,), min_clip=1.0, show_progress=False).certificates)
