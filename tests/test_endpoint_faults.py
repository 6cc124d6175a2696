"""Endpoint faults through the run engine (issue 12): `--fresh` recomputes answers instead of reading
the response cache (model and judge), a dead endpoint is one line before the run starts, and an
endpoint that dies mid-run stops the run after a few failed calls instead of failing every sample
after its retries. Against the local OpenAI-compatible server (lvu.models.testing_server)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys

import pytest

from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.openai_compat import OpenAICompat
from lvu.models.testing_server import FakeOpenAIServer
from lvu.api import run
from lvu.runs.engine import benchmark_of
from lvu.runs.judging import judge_stored
from lvu.runs.pipeline import DEAD_ENDPOINT_CALLS, EndpointDown, EndpointWatch
from lvu.runs.store import Store
from lvu.scoring.judges import make_judge
from lvu.types import Prompt, Sample, Text, VideoRef

CHOICE_PROMPT = "Decide which option the response chooses"
"""In the judge's choice-extraction prompt (LLM choice extraction)."""


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))  # the response cache is on (the default)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def write_data(tmp_path, n: int) -> str:
    make_video(tmp_path / "v.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
    lines = [Sample(id=f"q{i:02d}", benchmark="jsonl", video=VideoRef(path="v.mp4"), question=f"Question {i}?",
                    options=["red", "green", "blue"], answer=i % 3).model_dump_json() for i in range(n)]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def kwargs(tmp_path, data: str, server_url: str, **model_args) -> dict:
    return {"settings": {"data": data, "frames": 2}, "results_dir": tmp_path / "res", "show_progress": False,
            "report": False, "concurrency": 2,
            "model_args": {"model": "vlm", "base_url": server_url, "backoff": 0.001, **model_args}}


def closed_port() -> int:
    """A port nothing listens on: bound (so it was free), then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stored(tmp_path, run_id: str) -> dict:
    store = Store(tmp_path / "res")
    try:
        return {r.sample_id: r for r in store.results(run_id)}
    finally:
        store.close()


def questions_asked(server: FakeOpenAIServer) -> set[str]:
    """The samples the server was asked about (their question text)."""
    asked = set()
    for r in server.chat_requests():
        text = " ".join(p.get("text", "") for m in r.body["messages"] if isinstance(m["content"], list)
                        for p in m["content"])
        asked.update(re.findall(r"Question \d+\?", text))
    return asked


# ---- --fresh recomputes: no answer read from the response cache ----------------------------------------


@pytest.mark.slow
def test_fresh_run_asks_the_model_again_instead_of_reading_the_cache(tmp_path):
    data = write_data(tmp_path, 4)
    with FakeOpenAIServer(answer="The answer is (A).") as server:
        kw = kwargs(tmp_path, data, server.base_url)
        first = run("jsonl", "openai", **kw)
        assert {r.response for r in stored(tmp_path, first.run_id).values()} == {"The answer is (A)."}
        assert len(server.chat_requests()) == 4

        server.answer = "The answer is (B)."  # another model now serves the same name and URL
        again = run("jsonl", "openai", **kw, fresh=True)
        assert again.run_id == first.run_id and again.n_done_before == 0
        assert len(server.chat_requests()) == 8  # every sample asked again
        assert {r.response for r in stored(tmp_path, again.run_id).values()} == {"The answer is (B)."}
        assert {r.prediction for r in stored(tmp_path, again.run_id).values()} == {1}

        # the fresh answers were written to the cache: a run elsewhere is served from it
        elsewhere = run("jsonl", "openai", **{**kw, "results_dir": tmp_path / "other"})
        assert len(server.chat_requests()) == 8
        store = Store(tmp_path / "other")
        try:
            assert {r.response for r in store.results(elsewhere.run_id)} == {"The answer is (B)."}
        finally:
            store.close()


def test_fresh_judge_asks_again_in_the_run_and_in_judge_score(tmp_path):
    data = write_data(tmp_path, 3)
    judge_says = ["C"]

    def answer(body: dict) -> str:
        text = " ".join(p.get("text", "") for m in body["messages"] if isinstance(m["content"], list)
                        for p in m["content"])
        return judge_says[0] if CHOICE_PROMPT in text else "I'd say the third one."  # no option letter

    with FakeOpenAIServer(answer=answer) as server:
        judge_args = {"model": "judge", "base_url": server.base_url}
        kw = {**kwargs(tmp_path, data, server.base_url), "judge": "openai", "judge_args": judge_args,
              "llm_extract": True}
        first = run("jsonl", "openai", **kw)
        assert {r.prediction for r in stored(tmp_path, first.run_id).values()} == {2}  # the judge read "C"

        judge_says[0] = "A"  # another judge model behind the same name and URL
        again = run("jsonl", "openai", **kw, fresh=True)
        assert {r.prediction for r in stored(tmp_path, again.run_id).values()} == {0}

        judge_says[0] = "B"
        store = Store(tmp_path / "res")
        try:
            bench = benchmark_of(store.run(again.run_id).spec)
            done = asyncio.run(judge_stored(store, again.run_id, bench, make_judge("openai", judge_args),
                                            llm_extract=True, fresh=True, show_progress=False))
            assert done.n_judged == 3 and done.n_failed == 0
            assert {r.prediction for r in store.results(again.run_id)} == {1}
        finally:
            store.close()


def test_bypass_cache_reaches_wrapped_models():
    from lvu.models.probes import Blind

    probe = Blind(base="openai", **{"base.model": "m", "base.base_url": "http://127.0.0.1:9/v1"})
    assert not probe.base.refresh
    probe.bypass_cache()
    assert probe.refresh and probe.base.refresh


# ---- a dead endpoint: one line before the run ------------------------------------------------------------


@pytest.mark.slow
def test_cli_run_against_a_dead_endpoint_is_one_line_and_exit_2(tmp_path):
    data = write_data(tmp_path, 12)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {**os.environ, "LVU_OFFLINE": "1", "COLUMNS": "300"}
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "jsonl", "--data", data, "-m", "openai",
                          "-a", "model=m", "-a", f"base_url={url}", "--results-dir", str(tmp_path / "res")],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines == [f"error: openai: cannot reach {url}: connection refused — is the server running? check base_url"]


def test_fresh_against_a_dead_endpoint_keeps_the_stored_run(tmp_path):
    data = write_data(tmp_path, 3)
    with FakeOpenAIServer(answer="(A)") as server:
        kw = kwargs(tmp_path, data, server.base_url)
        first = run("jsonl", "openai", **kw)
    with pytest.raises(LvuError, match=r"^openai: cannot reach http://127\.0\.0\.1:\d+/v1: connection refused"):
        run("jsonl", "openai", **kw, fresh=True)  # the same URL, now closed
    kept = stored(tmp_path, first.run_id)
    assert len(kept) == 3 and all(r.response == "(A)" and r.error is None for r in kept.values())


def test_a_judge_endpoint_is_checked_too(tmp_path):
    data = write_data(tmp_path, 2)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with FakeOpenAIServer(answer="(A)") as server:
        with pytest.raises(LvuError, match=f"cannot reach {re.escape(dead)}"):
            run("jsonl", "openai", **kwargs(tmp_path, data, server.base_url), judge="openai",
                judge_args={"model": "j", "base_url": dead})
        assert server.chat_requests() == []


def test_preflight_takes_any_http_answer_as_reachable():
    with FakeOpenAIServer() as server:
        asyncio.run(OpenAICompat(model="m", base_url=server.base_url).preflight())  # GET /models: 200
        asyncio.run(OpenAICompat(model="m", base_url=server.base_url + "/nowhere").preflight())  # a 404 is fine


# ---- an endpoint that dies mid-run: stop after a few failed calls ---------------------------------------


def test_run_stops_when_every_call_is_dropped(tmp_path):
    data = write_data(tmp_path, 30)
    # /models answers (preflight passes), every chat request's connection is dropped
    with FakeOpenAIServer(fault_rate=1.0, faults=("drop",)) as server:
        kw = kwargs(tmp_path, data, server.base_url, max_retries=1)
        with pytest.raises(EndpointDown) as stop:
            run("jsonl", "openai", **kw)
        asked = questions_asked(server)
    message = str(stop.value)
    assert "\n" not in message and "endpoint is gone" in message and "run the same command again" in message
    assert f"cannot reach {server.base_url}" in message
    assert DEAD_ENDPOINT_CALLS <= len(asked) <= DEAD_ENDPOINT_CALLS + kw["concurrency"]  # not all 30
    store = Store(tmp_path / "res")
    try:
        info = store.runs()[0]
        assert info.status == "failed"
        assert len(store.results(info.run_id)) <= DEAD_ENDPOINT_CALLS + kw["concurrency"]
    finally:
        store.close()


def test_an_endpoint_dying_after_some_answers_stops_and_resumes(tmp_path):
    data = write_data(tmp_path, 30)
    with FakeOpenAIServer(answer="(B)", fault_rate=1.0, faults=("drop",)) as server:
        server.script(*[None] * 5)  # five answers, then every connection dropped
        kw = {**kwargs(tmp_path, data, server.base_url, max_retries=0), "concurrency": 1}
        with pytest.raises(EndpointDown):
            run("jsonl", "openai", **kw)
        assert len(server.chat_requests()) == 5 + DEAD_ENDPOINT_CALLS
        kept = stored(tmp_path, Store(tmp_path / "res").runs()[0].run_id)
        assert sum(r.error is None for r in kept.values()) == 5

        server.fault_rate = 0.0  # the endpoint is back: the same command resumes
        resumed = run("jsonl", "openai", **kw)
        assert resumed.n_done_before == 5 and resumed.n_failed == 0


def test_endpoint_watch_counts_failures_in_a_row():
    watch = EndpointWatch(n_calls=100, limit=3)
    assert not watch.saw(True, "a") and not watch.saw(True, "b")
    assert not watch.saw(False, None)  # an answer in between: the endpoint is alive
    assert not watch.saw(False, "HTTP 400: context length")  # an HTTP error is an answer too
    assert not watch.saw(True, "c") and not watch.saw(True, "d") and watch.saw(True, "e")
    assert "(e)" in str(watch.error())
    small = EndpointWatch(n_calls=2)  # a run of fewer calls: all of them
    assert not small.saw(True, "x") and small.saw(True, "x")


@pytest.mark.slow
def test_unreachable_is_set_for_connection_failures_only():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    prompt = Prompt(parts=[Text(text="hi")])

    async def ask(model: OpenAICompat):
        try:
            return await model.generate(prompt)
        finally:
            await model.close()

    for http in ("httpx", "aiohttp"):
        refused = asyncio.run(ask(OpenAICompat(model="m", base_url=url, max_retries=0, http=http)))
        assert refused.unreachable and "cannot reach" in refused.error
    with FakeOpenAIServer(hang=5) as server:
        for http in ("httpx", "aiohttp"):
            m = OpenAICompat(model="m", base_url=server.base_url, max_retries=0, timeout=2.0, cache=False, http=http)
            server.script("500", "timeout", "drop")
            answers = [asyncio.run(ask(m)) for _ in range(3)]
            assert [a.unreachable for a in answers] == [False, False, True], [a.error for a in answers]


# ---- gemini: the same three behaviours, through a mock transport ----------------------------------------


def test_gemini_fresh_preflight_and_unreachable(monkeypatch, tmp_path):
    pytest.importorskip("google.genai.types", reason="google-genai not installed")
    import httpx

    from lvu.models.gemini import Gemini

    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test")
    replies, calls = ["A"], []

    def server(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if request.method == "GET":
            return httpx.Response(404)  # the host answers: reachable
        return httpx.Response(200, json={"candidates": [{"content": {"role": "model", "parts": [{"text": replies[0]}]},
                                                         "finishReason": "STOP"}]})

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    def model(handler) -> Gemini:
        m = Gemini(model="gemini-test", cache=str(tmp_path / "responses"), max_retries=0)
        m._httpx_client_factory = lambda: httpx.AsyncClient(transport=httpx.MockTransport(handler))
        return m

    prompt = Prompt(parts=[Text(text="Q?")])
    asyncio.run(model(server).preflight())
    assert asyncio.run(model(server).generate(prompt)).text == "A"
    replies[0] = "B"
    assert asyncio.run(model(server).generate(prompt)).text == "A"  # cached
    fresh = model(server)
    fresh.bypass_cache()
    assert asyncio.run(fresh.generate(prompt)).text == "B"
    assert asyncio.run(model(server).generate(prompt)).text == "B"  # the fresh answer was written back

    with pytest.raises(LvuError, match="^gemini: cannot reach https://generativelanguage.googleapis.com: "):
        asyncio.run(model(refused).preflight())
    failed = asyncio.run(model(refused).generate(Prompt(parts=[Text(text="not cached?")])))
    assert failed.error and failed.unreachable
