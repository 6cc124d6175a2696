"""A model that never answers is not scored silently (issue 30, item 10): after a run whose replies
held no readable answer, `lvu run` says how many, shows two and names the likely causes. What
counts as unreadable follows each benchmark's own extraction: whatever its official rule makes of
a letterless reply (None, the text it kept, LongVideoBench's random pick), never open-ended text."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.cli import app
from lvu.models.testing_server import FakeOpenAIServer
from lvu.runs.grading import grade, make_benchmark
from lvu.runs.run_names import is_unreadable, unreadable, unreadable_note
from lvu.runs.store import Store
from lvu.runs.unreadable import stored_unreadable
from lvu.types import Response, RunSpec, Sample, SampleResult, VideoRef

NUMBERS = "(1)\n(2)\n(3)"
"""What a text-only base model behind llama.cpp's server answered (issue 30): no option letter."""


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """One frame cache (the haystack is generated once for this module); a results dir per test."""
    return {"LVU_CACHE_DIR": str(tmp_path_factory.mktemp("cache")), "OPENAI_API_KEY": "sk-test"}


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch, env):
    monkeypatch.setenv("COLUMNS", "250")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def run_haystack(server: FakeOpenAIServer, results: Path):
    return CliRunner().invoke(app, ["run", "-b", "haystack", "-m", "openai", "-a", f"base_url={server.base_url}",
                                    "-a", "model=x", "--limit", "6", "--results-dir", str(results), "--no-report"])


@pytest.mark.slow
def test_lvu_run_says_when_replies_held_no_readable_answer_and_not_when_they_were_read(tmp_path):
    with FakeOpenAIServer(answer=NUMBERS) as server:
        ran = run_haystack(server, tmp_path / "numbers")
    assert ran.exit_code == 0, ran.output  # no sample failed: every reply came back
    end = ran.output.index("6 of 60 samples (--limit 6), 0 failed")
    note = ran.output.index("warning: 6 of 6 replies held no readable answer (scored wrong):")
    assert end < note  # after the run's tables and its end line
    examples = ran.stderr.split("warning:")[1].splitlines()[1:3]
    assert all(line.strip().endswith(repr(NUMBERS)) for line in examples), examples
    assert examples[0].strip().startswith("hay-") and examples[0] != examples[1]
    assert "likely causes: a chat template" in ran.stderr and "text-only model" in ran.stderr
    assert "max_tokens" in ran.stderr

    with FakeOpenAIServer(answer="B") as server:  # a model that answers: no note
        ran = run_haystack(server, tmp_path / "letters")
    assert ran.exit_code == 0, ran.output
    assert "0 failed · score" in ran.output and "readable" not in ran.output


# ---- what counts as unreadable, benchmark by benchmark -----------------------------------------------


def graded(benchmark: str, text: str, **extra) -> SampleResult:
    """`text` graded as a reply to a 4-option question (answer B) by `benchmark`'s own extraction."""
    bench = make_benchmark(benchmark, {})
    sample = Sample(id="q1", benchmark=benchmark, video=VideoRef(path="v.mp4"), question="Which one?",
                    options=["red", "green", "blue", "grey"], answer=1, extra=extra)
    result = SampleResult(sample_id="q1", answer=1, n_options=4, options=sample.options, response=text)
    return grade(bench, sample, Response(text=text), result)


def test_a_reply_without_an_option_is_unreadable_under_every_benchmark():
    for benchmark, extra in [("haystack", {}), ("jsonl", {}), ("videomme", {}), ("neptune", {}), ("lvbench", {}),
                             ("mlvu", {"answer_letter": "B"}), ("longvideobench", {})]:
        letterless = graded(benchmark, NUMBERS, **extra)
        assert is_unreadable(letterless), (benchmark, letterless.prediction, letterless.explanation)
        assert not is_unreadable(graded(benchmark, "(B) green", **extra)), benchmark

    # Open-ended replies (their text is the answer), failed samples and samples with no reply never are.
    open_ended = SampleResult(sample_id="o", response="(1)\n(2)", prediction="(1)\n(2)")
    failed = SampleResult(sample_id="f", n_options=4, error="model error: HTTP 500")
    no_reply = SampleResult(sample_id="n", n_options=4)
    assert unreadable([open_ended, failed, no_reply]) == []
    assert unreadable_note([open_ended, failed, no_reply]) is None


def test_what_the_official_rules_store_for_a_letterless_reply():
    """Not only None: MLVU and LVBench keep the text before ')' ("1"), LongVideoBench picks a
    seeded random letter, Video-MME leaves it out of its answered-only accuracy."""
    assert graded("mlvu", NUMBERS, answer_letter="B").prediction == "1"
    assert graded("lvbench", NUMBERS).prediction == "1"
    pick = graded("longvideobench", NUMBERS)
    assert isinstance(pick.prediction, int) and "random pick" in pick.explanation
    assert graded("videomme", NUMBERS).counted is False
    note = unreadable_note([graded("videomme", NUMBERS)])
    assert note.startswith("1 of 1 replies held no readable answer (1 left out of the score):")


def test_the_stored_query_finds_what_the_rule_finds(tmp_path):
    """`stored_unreadable` lets SQLite pick candidates without parsing every record: it must agree
    with `is_unreadable` on every kind of record."""
    records = [
        graded("haystack", NUMBERS), graded("haystack", "(B)"), graded("lvbench", NUMBERS),
        graded("longvideobench", NUMBERS), graded("longvideobench", "B"), graded("videomme", NUMBERS),
        SampleResult(sample_id="x", n_options=4, response="E", prediction=4),
        SampleResult(sample_id="x", response="(1)", prediction="(1)"),  # open-ended
        SampleResult(sample_id="x", n_options=4, error="boom", response=NUMBERS),
        SampleResult(sample_id="x", options=["a", "b"], response=NUMBERS),  # an older record: options, no n_options
    ]
    for i, record in enumerate(records):
        record.sample_id = f"s{i}"
    store = Store(tmp_path)
    spec = RunSpec(benchmark="haystack", model="openai")
    run_id = store.begin_run(spec, {})
    for i, record in enumerate(records):
        store.put(run_id, record, i)
    expected = [r.sample_id for r in records if is_unreadable(r)]
    assert expected == ["s0", "s2", "s3", "s5", "s6", "s9"]
    bad, answered = stored_unreadable(store, run_id)
    assert [r.sample_id for r in bad] == expected and answered == len(records) - 1
    bad, answered = stored_unreadable(store, run_id, keep={"s0", "s1", "s8"})
    assert [r.sample_id for r in bad] == ["s0"] and answered == 2


def test_resuming_a_finished_run_whose_replies_were_read_reads_no_record_for_the_note(tmp_path, monkeypatch):
    import fakes  # noqa: F401  (the fake benchmark and the fake-follow model)
    import lvu.runs.unreadable as module
    from lvu.api import run

    kw = dict(settings={"n": 4}, results_dir=tmp_path, show_progress=False, report=False)
    assert run("fake", "fake-follow", **kw).unreadable_note is None
    asked = []
    monkeypatch.setattr(module, "stored_unreadable", lambda *a, **k: asked.append(a) or ([], 0))
    again = run("fake", "fake-follow", **kw)  # nothing to do: the cached summary counts no unreadable reply
    assert again.n_done_before == 4 and again.unreadable_note is None and asked == []
