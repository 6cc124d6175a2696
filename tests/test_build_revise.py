"""`lvu build filter --rule text-only --revise` (Video-MME's revise-and-recheck loop) on a scripted
fake model and a scripted reviser: flagged questions wait in OUT/revision/questions.jsonl; the same
command run again filters the revisions (kept, or back for the next round), drops the rejected ones
and the ones still flagged after --max-rounds; every step is on the ledger, so a crash between
steps, or the same command again, changes nothing and asks no model twice."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lvu.cli.build_filter as build_filter_cli
import lvu.construct.revise as revise
from lvu.benchmarks.jsonl import read_samples, write_samples
from lvu.cli import app
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import LETTERS, Sample, VideoRef

pytestmark = pytest.mark.slow  # real build and revise rounds: docs/testing.md

OPTIONS = ["Paris", "Rome", "Oslo", "Lima"]


def question(i: int, text: str) -> str:
    return f"Q{i}: {text}"


def answer_index(i: int) -> int:
    return i % 4


def blind_model(body: dict) -> str:
    """Right without the video exactly when the question gives itself away ("famous")."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    i = int(re.search(r"Q(\d+):", text).group(1))
    right = answer_index(i)
    return LETTERS[right] if "famous" in text else LETTERS[(right + 1) % 4]


class Reviser:
    """A scripted reviser: (id, round) -> ("accept", new question text) or ("reject", reason)."""

    def __init__(self) -> None:
        self.plan: dict[tuple[str, int], tuple[str, str]] = {}
        self.reads = 0

    def __call__(self, queue: Path) -> tuple[dict[str, dict], dict[str, str]]:
        self.reads += 1
        accepted, rejected = {}, {}
        for s in read_samples(queue)[0]:
            what, text = self.plan.get((s.id, s.extra["revision"]["round"]), ("", ""))
            if what == "accept":  # an lvu JSONL record with the edit applied, same id
                accepted[s.id] = {**s.model_dump(mode="json"), "question": text}
            elif what == "reject":
                rejected[s.id] = text
        return accepted, rejected


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    for name, value in {"LVU_CACHE_DIR": tmp_path / "cache", "LVU_RESULTS_DIR": tmp_path / "results",
                        "LVU_OFFLINE": "1", "LVU_PROGRESS_INTERVAL": "0", "OPENAI_API_KEY": "x",
                        "COLUMNS": "200"}.items():
        monkeypatch.setenv(name, str(value))
    reviser = Reviser()
    monkeypatch.setattr(build_filter_cli, "review_app_reviews", reviser)
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    texts = ["Which famous city is the capital of France?", "Which famous city hosts the Colosseum?",
             "Which famous city has the Munch museum?", "Which famous city is Peru's capital?",
             "Which famous city is on the Seine?", "Which city is on the sign at 12:30?"]
    samples = [Sample(id=f"q{i}", benchmark="t", video=VideoRef(path=str(video), duration=60.0),
                      question=question(i, t), options=OPTIONS, answer=answer_index(i), labels={"task": "place"})
               for i, t in enumerate(texts)]
    data = write_samples(tmp_path / "data.jsonl", samples)
    with FakeOpenAIServer(answer=blind_model) as server:
        def run(out: str, *extra: str) -> tuple[int, str]:
            before = server.n_requests
            done = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "openai",
                                            "-a", "model=gemini", "-a", f"base_url={server.base_url}", "-a",
                                            "cache=false", "--revise", "--max-rounds", "2", "-o",
                                            str(tmp_path / out), *extra])
            assert done.exit_code == 0, done.output
            return server.n_requests - before, done.output
        (tmp_path / "server").write_text(server.base_url)
        yield run, reviser, tmp_path


def review_steps(tmp: Path) -> int:
    """The reviewer decisions on the ledger (the build-revision job of OUT's queue)."""
    from lvu.runs.ledger import JobLedger

    with JobLedger(tmp / "results") as ledger:
        jobs = ledger.jobs(revise.LOG_KIND)
        return sum(1 for job in jobs for _ in ledger.entries(job.job_id))


def server_url(tmp: Path) -> str:
    return (tmp / "server").read_text()


def files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("kept.jsonl", "removed.jsonl", "decisions.jsonl",
                                                "revision/questions.jsonl")}


def ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def queued(out: Path) -> dict[str, int]:
    return {s.id: s.extra["revision"]["round"] for s in read_samples(out / "revision" / "questions.jsonl")[0]}


def test_the_revise_loop_keeps_drops_and_requeues_with_every_step_on_the_ledger(setup):
    run, reviser, tmp = setup
    out = tmp / "o"
    calls, said = run("o")
    assert calls == 6 and reviser.reads == 0  # no queue yet: nothing to read
    assert ids(out / "kept.jsonl") == ["q5"] and ids(out / "removed.jsonl") == []
    assert queued(out) == {"q0": 1, "q1": 1, "q2": 1, "q3": 1, "q4": 1}
    assert "5 waiting for revision (round 1: 5)" in said and "lvu review" in said
    first = read_samples(out / "revision" / "questions.jsonl")[0][0]
    assert first.extra["blind_filter"]["reason"] == "1 of 1 model(s) correct without the video"  # why it came back

    reviser.plan = {("q0", 1): ("accept", question(0, "Which city is shown at 03:10?")),
                    ("q1", 1): ("reject", "The answer is common knowledge."),
                    ("q2", 1): ("accept", question(2, "Which famous city is in the final shot?")),
                    ("q4", 1): ("accept", question(4, "Which famous city is on the Seine?"))}  # unchanged
    calls, said = run("o")
    assert calls == 2  # q0's and q2's revisions: nothing else is asked again
    assert ids(out / "kept.jsonl") == ["q0", "q5"]  # the revision, in the question's place
    assert ids(out / "removed.jsonl") == ["q1"]
    assert queued(out) == {"q2": 2, "q3": 1, "q4": 1}
    assert "q4: accepted without a change" in said
    kept = {s.id: s for s in read_samples(out / "kept.jsonl")[0]}
    assert kept["q0"].question == question(0, "Which city is shown at 03:10?")
    history = kept["q0"].extra["revision"]["history"]
    assert [(h["round"], h["filter"], (h["review"] or {}).get("status")) for h in history] == \
        [(0, "flagged", "accepted"), (1, "kept", None)]
    dropped = read_samples(out / "removed.jsonl")[0][0]
    assert dropped.extra["revision"]["reason"] == "rejected by the reviewer: The answer is common knowledge."
    assert dropped.extra["revision"]["round"] == 1
    assert review_steps(tmp) == 3  # q0, q1, q2's first-round reviews (q4's unchanged one is no step)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["revision"]["kept_after_revision"] == 1 and summary["revision"]["dropped_by_reviewer"] == 1
    assert summary["revision"]["waiting_by_round"] == {"1": 2, "2": 1} and summary["removed"] == 1
    assert summary["flagged"] == 5 and summary["kept"] == 2
    decisions = {d["id"]: d for d in map(json.loads, (out / "decisions.jsonl").read_text().splitlines())}
    assert decisions["q2"]["status"] == "revising" and decisions["q2"]["revision"]["round"] == 2

    reviser.plan[("q2", 2)] = ("accept", question(2, "Which famous city is on the poster?"))
    calls, said = run("o")
    assert calls == 1  # q2's second revision, still flagged: --max-rounds 2 ends it
    assert ids(out / "removed.jsonl") == ["q1", "q2"] and queued(out) == {"q3": 1, "q4": 1}
    q2 = read_samples(out / "removed.jsonl")[0][1]
    assert q2.extra["revision"]["reason"] == "still answered without the video after 2 revision(s)"
    assert q2.extra["blind_filter"]["rule"] == "text-only"  # the evidence of the last check
    summary = json.loads((out / "summary.json").read_text())
    assert summary["revision"]["dropped_after_max_rounds"] == 1 and summary["revision"]["revisions_checked"] == 3
    assert review_steps(tmp) == 4

    done = files(out)
    reviser.plan = {}  # the reviews acted on are on the ledger: the queue no longer holds them
    assert run("o")[0] == 0 and files(out) == done


def test_a_crash_after_the_ledger_steps_resumes_to_the_same_files(setup, monkeypatch):
    run, reviser, tmp = setup
    assert run("o")[0] == 6
    assert run("ref")[0] == 0  # the same questions into another folder: decisions are content-keyed
    plan = {("q0", 1): ("accept", question(0, "Which city is shown at 03:10?")),
            ("q1", 1): ("reject", "Not fixable."),
            ("q2", 1): ("accept", question(2, "Which famous city is in the final shot?"))}
    reviser.plan = dict(plan)
    from lvu.construct import filter_files

    def killed(*args, **kwargs):
        raise RuntimeError("killed")  # after the reviews and the revisions' decisions are on the ledger

    with monkeypatch.context() as m:
        m.setattr(filter_files, "write_outputs", killed)
        crashed = CliRunner().invoke(app, ["build", "filter", str(tmp / "data.jsonl"), "--rule", "text-only",
                                           "-m", "openai", "-a", "model=gemini", "-a", "cache=false", "-a",
                                           f"base_url={server_url(tmp)}", "--revise", "--max-rounds", "2",
                                           "-o", str(tmp / "o")])
    assert isinstance(crashed.exception, RuntimeError)
    assert queued(tmp / "o") == {"q0": 1, "q1": 1, "q2": 1, "q3": 1, "q4": 1}  # no file was touched
    reviser.plan[("q1", 1)] = ("accept", question(1, "Which city is on the sign?"))  # a change of mind, too late
    assert run("o")[0] == 0  # resumed: the revisions were decided before the crash
    reviser.plan = dict(plan)
    assert run("ref")[0] == 0  # the same reviews into the reference folder: no call either
    assert files(tmp / "o") == files(tmp / "ref")
    assert ids(tmp / "o" / "removed.jsonl") == ["q1"]  # the rejection acted on stays final


def test_bad_uses_are_one_line_errors(setup):
    run, reviser, tmp = setup
    data = tmp / "data.jsonl"
    result = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "random",
                                      "--max-rounds", "2", "-o", str(tmp / "x")])
    assert result.exit_code != 0 and "--revise" in str(result.exception)
    result = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "random",
                                      "--revise", "--max-rounds", "0", "-o", str(tmp / "x")])
    assert result.exit_code != 0 and "at least 1 round" in str(result.exception)
    run("o")
    result = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "openai", "-a",
                                      "model=gemini", "-o", str(tmp / "o")])
    assert result.exit_code != 0 and "revision loop" in str(result.exception)  # would forget the revisions
