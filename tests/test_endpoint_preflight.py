"""A wrong endpoint costs one line, not a benchmark (issue 30, item 3): the preflight checks the
chat-completions route it will call and names the base URL that answers; a run whose first calls
all fail with one error that retrying cannot change stops early; an endpoint whose every attempt
fails stops after DEAD_ENDPOINT_SECONDS whatever the concurrency. Against the local
OpenAI-compatible server (lvu.models.testing_server), strict about its /v1 prefix like vLLM."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from lvu.api import run
from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.openai_compat import OpenAICompat
from lvu.models.testing_server import FakeOpenAIServer
from lvu.runs import pipeline
from lvu.models.retry import RetryWatch
from lvu.runs.pipeline import EndpointDown, FirstCallsWatch, WrongSetup, watch_endpoint
from lvu.runs.store import Store
from lvu.types import Sample, VideoRef

from test_endpoint_faults import kwargs  # the run arguments those tests use


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def write_data(tmp_path, n_videos: int, per_video: int) -> str:
    lines = []
    for v in range(n_videos):
        make_video(tmp_path / f"v{v}.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
        for q in range(per_video):
            i = v * per_video + q
            lines.append(Sample(id=f"q{i:02d}", benchmark="jsonl", video=VideoRef(path=f"v{v}.mp4"),
                                question=f"Question {i}?", options=["red", "green", "blue"],
                                answer=i % 3).model_dump_json())
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def only_run(tmp_path):
    store = Store(tmp_path / "res")
    try:
        info, = store.runs()
        return info, store.results(info.run_id)
    finally:
        store.close()


# ---- the preflight checks the route it will call ----------------------------------------------------------


@pytest.mark.slow
def test_preflight_refuses_a_base_url_without_v1_and_names_the_one_that_answers(monkeypatch):
    with FakeOpenAIServer(prefix="/v1") as server:
        root = f"http://127.0.0.1:{server.port}"
        with pytest.raises(LvuError) as refused:
            asyncio.run(OpenAICompat(model="m", base_url=root).preflight())
        assert str(refused.value).startswith(f"openai: {root}/chat/completions answered 404 Not Found — "
                                             f"did you mean base_url={root}/v1? ")
        with pytest.raises(LvuError, match=re.escape(f"did you mean base_url={root}/v1?")):  # the full URL pasted
            asyncio.run(OpenAICompat(model="m", base_url=f"{root}/v1/chat/completions/").preflight())
        with pytest.raises(LvuError, match="base_url is the part of the URL before /chat/completions"):
            asyncio.run(OpenAICompat(model="m", base_url=f"{root}/api").preflight())  # nothing answers: no guess
        asyncio.run(OpenAICompat(model="m", base_url=server.base_url).preflight())  # the /v1 form passes
        assert server.chat_requests() == []  # nothing was asked of the model

    # a server that answers 404 to GET /models but has the chat route (it answers the empty probe
    # with a validation error) is not refused; one that answers 401 to GET /models neither
    with FakeOpenAIServer() as server:
        original, models_status = server._respond, [404]

        async def no_models(writer, method, path, headers, body):
            if method == "GET":
                await server._send(writer, models_status[0], {"detail": "Not Found"})
                return True
            if not body:  # the probe's empty object: what a server with the route answers
                await server._send(writer, 400, {"error": {"message": "messages: field required"}})
                return True
            return await original(writer, method, path, headers, body)

        monkeypatch.setattr(server, "_respond", no_models)
        asyncio.run(OpenAICompat(model="m", base_url=server.base_url).preflight())
        models_status[0] = 401
        asyncio.run(OpenAICompat(model="m", base_url=server.base_url).preflight())


@pytest.mark.slow
def test_cli_run_with_a_base_url_without_v1_is_one_line_and_stores_nothing(tmp_path):
    data = write_data(tmp_path, 2, 3)
    with FakeOpenAIServer(prefix="/v1") as server:
        root = f"http://127.0.0.1:{server.port}"
        env = {**os.environ, "LVU_OFFLINE": "1", "COLUMNS": "300"}
        out = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "jsonl", "--data", data, "-m", "openai",
                              "-a", "model=m", "-a", f"base_url={root}", "--results-dir", str(tmp_path / "res")],
                             capture_output=True, text=True, env=env, check=False, timeout=120)
        assert server.chat_requests() == []
    assert out.returncode == 2, out.stdout + out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip() and not ln.startswith("results:")]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith(f"error: openai: {root}/chat/completions answered 404 Not Found — did you mean "
                               f"base_url={root}/v1?")
    assert not (tmp_path / "res" / "lvu.sqlite").exists() or Store(tmp_path / "res").runs() == []


# ---- a run whose first calls all fail the same way stops ---------------------------------------------------


@pytest.mark.slow
def test_run_whose_first_calls_all_fail_with_the_same_404_stops_and_resumes(tmp_path):
    data = write_data(tmp_path, 3, 10)
    with FakeOpenAIServer(answer="(B)", fault_rate=1.0, faults=("404",)) as server:  # model not found, every call
        kw = kwargs(tmp_path, data, server.base_url)
        with pytest.raises(WrongSetup) as stop:
            run("jsonl", "openai", **kw)
        asked = len(server.chat_requests())
        message = str(stop.value)
        assert "\n" not in message
        assert re.match(r"stopped: the first (\d+) model calls all failed with the same error \(openai: not found "
                        r"\(HTTP 404\) at .*\) — fix that and run the same command again", message), message
        assert asked < 30  # not the whole benchmark
        info, results = only_run(tmp_path)
        assert info.status == "failed"
        assert 0 < len(results) <= asked and all("HTTP 404" in r.error for r in results)  # what was asked is stored

        server.fault_rate = 0.0  # fixed: the same command resumes and asks every sample again
        again = run("jsonl", "openai", **kw)
        assert again.run_id == info.run_id and again.n_failed == 0
        assert only_run(tmp_path)[0].status == "done"

    # a run where one of the first calls is answered is never stopped by this, however many fail after
    with FakeOpenAIServer(answer="(B)", fault_rate=1.0, faults=("404",)) as server:
        server.script(*["404"] * 6, None)  # six failures, one answer, then nothing but failures
        mixed = run("jsonl", "openai", **{**kwargs(tmp_path, data, server.base_url), "concurrency": 1,
                                          "results_dir": tmp_path / "mixed"})
        assert len(server.chat_requests()) == 30 and mixed.n_failed == 29


def test_first_calls_watch():
    watch = FirstCallsWatch(n_calls=100, n_videos=3, limit=3)
    assert not watch.saw("e404", True, "a") and not watch.saw("e404", True, "a")
    assert not watch.saw("e404", True, "a")  # three failures, but all on one video: wait for another
    assert watch.saw("e404", True, "b")
    assert "the first 4 model calls all failed with the same error (e404)" in str(watch.stop())

    for disarm in [("other", True), (None, False), ("e500 (after 7 attempts)", False)]:
        watch = FirstCallsWatch(n_calls=100, n_videos=1, limit=3)
        assert not watch.saw("e404", True) and not watch.saw(*disarm)
        assert not any(watch.saw("e404", True) for _ in range(10))  # disarmed for good
    small = FirstCallsWatch(n_calls=2, n_videos=1)  # a run of fewer calls: all of them
    assert not small.saw("e401", True) and small.saw("e401", True)


# ---- an endpoint whose every attempt fails stops after DEAD_ENDPOINT_SECONDS -----------------------------


@pytest.mark.slow
def test_run_stops_after_dead_endpoint_seconds_while_calls_still_retry(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "DEAD_ENDPOINT_SECONDS", 1.5)
    data = write_data(tmp_path, 2, 10)
    with FakeOpenAIServer(answer="(B)", fault_rate=1.0, faults=("drop",)) as server:
        server.script(None, None)  # two answers, then every connection dropped
        kw = kwargs(tmp_path, data, server.base_url, max_retries=100, backoff=0.05, backoff_max=0.1)
        with pytest.raises(EndpointDown, match=r"no attempt has reached it for 1\.5 s \(") as stop:
            run("jsonl", "openai", **kw)
    assert "run the same command again to resume" in str(stop.value)
    info, results = only_run(tmp_path)
    assert info.status == "failed" and [r.error for r in results] == [None, None]  # the calls in retry: not stored


def test_watch_endpoint_stops_only_while_attempts_keep_failing():
    now = [0.0]
    retries = RetryWatch(lambda: now[0])
    stopped: list[BaseException] = []
    runner = SimpleNamespace(fail=stopped.append)

    async def scenario() -> None:
        watcher = asyncio.create_task(watch_endpoint(retries, runner, seconds=60, every=0.01))
        for _ in range(20):  # a blip: twenty refused attempts ...
            retries.attempt_ended(False, "connection refused")
        now[0] += 30
        await asyncio.sleep(0.05)
        assert stopped == []  # ... for 30 s only
        now[0] += 40  # then nothing ends for 40 s (long answers in flight): not a dead endpoint
        await asyncio.sleep(0.05)
        assert stopped == []
        retries.attempt_ended(False, "connection refused")  # still refused, 70 s on: gone
        await asyncio.sleep(0.05)
        assert len(stopped) == 1 and watcher.done()
        assert "no attempt has reached it for 60 s (connection refused)" in str(stopped[0])

    asyncio.run(scenario())
    retries.attempt_ended(True)  # any answer: reachable again
    assert retries.unreachable_for() == 0.0 and retries.unreachable_attempts == 0
