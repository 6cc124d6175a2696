"""Issue 22: an HTTP 200 that holds no completion (malformed JSON, empty `choices`) is retried like
the other API faults, bounded by max_retries; and every failure line of `lvu run` names its sample."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and models)
from test_openai_backend import _env, generate, model, prompt, server  # noqa: F401  (fixtures)

from lvu.models.testing_server import FakeOpenAIServer


@pytest.mark.parametrize("fault", ["bad_json", "no_choices"])
def test_a_200_without_a_completion_is_retried(server, fault):  # noqa: F811
    server.script(fault, fault)
    m = model(server, max_retries=3)
    [r] = generate(m, prompt(1))
    assert r.error is None and r.text == "B"
    assert [q.fault for q in server.chat_requests()] == [fault, fault, None] and len(m.waits) == 2


@pytest.mark.parametrize("fault,expected", [
    ("bad_json", r"openai: malformed JSON in the reply \(.+\) \(after 3 attempts\)"),
    ("no_choices", r"openai: empty response \(no choices\) \(after 3 attempts\)"),
])
def test_a_200_without_a_completion_is_retried_a_bounded_number_of_times(server, fault, expected):  # noqa: F811
    server.script(*[fault] * 5)
    m = model(server, max_retries=2)
    [r] = generate(m, prompt(1))
    assert re.fullmatch(expected, r.error), r.error
    assert len(server.chat_requests()) == 3 and len(m.waits) == 2


@pytest.mark.slow
def test_a_run_at_30_percent_malformed_answers_loses_no_sample(tmp_path, monkeypatch):
    from lvu.api import run

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(answer=lambda body: f"({re.search(r'pick ([A-D])', str(body)).group(1)})",
                          fault_rate=0.3, faults=("bad_json", "no_choices", "500"), seed=5) as fake:
        args = {"model": "fake-vlm", "base_url": fake.base_url, "max_retries": 10, "backoff": 0.001, "cache": False}
        summary = run("fake", "openai", settings={"n": 40}, model_args=args, results_dir=tmp_path, report=False,
                      show_progress=False, concurrency=8)
        faults = [r.fault for r in fake.chat_requests()]
    assert {"bad_json", "no_choices"} <= set(faults)
    assert summary.n_failed == 0 and summary.n_total == 40


def test_every_failure_line_of_lvu_run_starts_with_the_sample_id(tmp_path, monkeypatch):
    from lvu.cli import app

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer(answer="(A)") as fake:
        fake.script(*["500"] * 200)
        result = CliRunner().invoke(app, [
            "run", "-b", "fake", "--set", "n=3", "--set", "bad_records=1", "-m", "openai", "-a", "model=x",
            "-a", f"base_url={fake.base_url}", "-a", "max_retries=0", "-a", "cache=false", "--concurrency", "1",
            "--results-dir", str(tmp_path), "--no-report"])
    lines = [line for line in result.output.splitlines() if "HTTP 500" in line or "not JSON" in line]
    assert sorted(lines) == ["bad0: fake.jsonl:1: not JSON",
                             "q000: model error: openai: HTTP 500: The server had an error",
                             "q001: model error: openai: HTTP 500: The server had an error",
                             "q002: model error: openai: HTTP 500: The server had an error"]
