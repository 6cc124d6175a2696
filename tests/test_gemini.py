"""gemini backend: requests built against the real google-genai types and sent through the real SDK
to a mock HTTP transport (order of parts, inline JPEGs, config, retries, cache, refusals, key
hygiene). Live calls only when GEMINI_API_KEY / GOOGLE_API_KEY is set."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os

import numpy as np
import pytest
from PIL import Image

genai_types = pytest.importorskip("google.genai.types", reason="google-genai not installed (pip install 'lvu[gemini]')")
httpx = pytest.importorskip("httpx")

from lvu.errors import LvuError
from lvu.models.base import MODELS
from lvu.models.gemini import Gemini, build_contents, plan_fps, retry_after
from lvu.types import Frame, Prompt, Subtitle, Text

KEY = "AIza-test-key-do-not-leak"


def image(value: int) -> np.ndarray:
    return np.full((16, 16, 3), value, np.uint8)


def prompt(**kw) -> Prompt:
    return Prompt(parts=[Text(text="Watch."), Frame(image=image(40), timestamp=1.0),
                         Subtitle(text="hello", start=1.0, end=2.0), Frame(image=image(200), timestamp=3.0),
                         Text(text="Q? (A) x (B) y")],
                  system="You are careful.", choices=["x", "y"], max_tokens=9, temperature=0.2, **kw)


def jpeg_value(data: bytes) -> int:
    return int(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).mean().round())


def reply(text: str = "B", **extra) -> dict:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 1, "totalTokenCount": 101}}
    body.update(extra)
    return body


class FakeServer:
    """Answers queued (status, json, headers) replies, then `default`; records requests."""

    def __init__(self, *replies, default=None):
        self.replies, self.default, self.requests = list(replies), default or (200, reply(), {}), []

    def __call__(self, request):
        self.requests.append(request)
        status, body, headers = self.replies.pop(0) if self.replies else self.default
        return httpx.Response(status, json=body, headers=headers)

    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


@pytest.fixture()
def model_with(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)

    def make(server: FakeServer, **args) -> Gemini:
        model = MODELS.get("gemini")(**{"model": "gemini-test", "cache": str(tmp_path / "responses"), **args})
        model._httpx_client_factory = lambda: httpx.AsyncClient(transport=httpx.MockTransport(server))
        model.sleeps = []

        async def sleep(seconds):
            model.sleeps.append(seconds)

        model._sleep = sleep
        return model

    return make


def ask(model, p):
    return asyncio.run(model.generate(p, sample_id="s"))


def test_contents_follow_the_prompt_order_with_inline_jpegs(model_with):
    model = model_with(FakeServer(), seed=7)
    contents, config = model.request(prompt())
    assert len(contents) == 1 and contents[0].role == "user"
    parts = contents[0].parts
    assert all(isinstance(p, genai_types.Part) for p in parts)
    assert [p.text for p in parts] == ["Watch.", None, "hello", None, "Q? (A) x (B) y"]
    assert [p.inline_data.mime_type for p in parts if p.inline_data] == ["image/jpeg"] * 2
    assert [abs(jpeg_value(p.inline_data.data) - v) <= 2 for p, v in zip(parts[1::2], (40, 200))] == [True, True]
    assert isinstance(config, genai_types.GenerateContentConfig)
    assert (config.system_instruction, config.temperature, config.max_output_tokens, config.seed) == (
        "You are careful.", 0.2, 9, 7)
    assert config.response_logprobs is None and config.thinking_config is None


def test_assistant_prefix_modes_and_overrides(model_with):
    p = prompt(assistant_prefix="Best option: (")
    contents, config = model_with(FakeServer(), temperature=0, max_tokens=3, logprobs=5, thinking_budget=0,
                                  media_resolution="low").request(p)
    assert contents[0].parts[-1].text == "Best option: (" and len(contents) == 1
    assert (config.temperature, config.max_output_tokens, config.logprobs, config.response_logprobs) == (0, 3, 5, True)
    assert config.thinking_config.thinking_budget == 0
    assert config.media_resolution == genai_types.MediaResolution.MEDIA_RESOLUTION_LOW
    contents, _ = model_with(FakeServer(), prefix="model").request(p)
    assert [c.role for c in contents] == ["user", "model"] and contents[1].parts[0].text == "Best option: ("
    assert contents[0].parts[-1].text == "Q? (A) x (B) y"


def test_video_upload_request_puts_the_video_where_the_frames_were(model_with):
    model = model_with(FakeServer(), video_upload=True)
    p = prompt()
    fps = plan_fps(p)
    assert fps == pytest.approx(0.5)  # 2 frames, 2 s apart
    video = model.video_part("https://files/abc", "video/mp4", fps)
    parts = build_contents(p, video=video)[0].parts
    assert [p.text for p in parts] == ["Watch.", None, "hello", "Q? (A) x (B) y"]
    assert parts[1].file_data.file_uri == "https://files/abc" and parts[1].video_metadata.fps == 0.5
    assert not any(q.inline_data for q in parts)
    many = Prompt(parts=[Frame(image=image(0), timestamp=t / 100) for t in range(200)])
    assert plan_fps(many) == 24.0  # Gemini's ceiling
    response = ask(model, p)  # lvu's Prompt does not carry the video path yet
    assert response.error == "gemini video_upload: the prompt carries no video path"


def test_wire_request_response_usage_and_key_hygiene(model_with):
    server = FakeServer()
    model = model_with(server, seed=3)
    response = ask(model, prompt())
    assert response.error is None and response.text == "B"
    assert response.usage == {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}
    (req,) = server.requests
    assert req.url.path.endswith("/models/gemini-test:generateContent")
    assert req.headers["x-goog-api-key"] == KEY  # the key travels only in the header
    body = server.bodies()[0]
    parts = body["contents"][0]["parts"]
    assert [("text" if "text" in q else "image") for q in parts] == ["text", "image", "text", "image", "text"]
    inline = parts[1]["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "image/jpeg"  # the SDK writes mime_type
    raw = base64.urlsafe_b64decode(parts[3]["inlineData"]["data"] + "==")
    assert abs(jpeg_value(raw) - 200) <= 2
    assert body["systemInstruction"]["parts"][0]["text"] == "You are careful."
    assert body["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 9, "seed": 3, "candidateCount": 1}
    text = json.dumps(model.identity) + repr(model)
    assert KEY not in text and model.identity["model"] == "gemini-test" and "google-genai" in model.identity["sdk"]


def test_identical_requests_are_served_from_the_cache(model_with):
    server = FakeServer()
    model = model_with(server)
    first, second = ask(model, prompt()), ask(model, prompt())
    assert first.text == second.text == "B" and len(server.requests) == 1
    other = prompt()
    other.parts[1] = Frame(image=image(41), timestamp=1.0)  # one grey level: a different request
    ask(model, other)
    assert len(server.requests) == 2
    fresh = model_with(server)  # another process, same cache directory
    ask(fresh, prompt())
    assert len(server.requests) == 2
    assert model.cache.root is not None and KEY not in "".join(p.read_text() for p in model.cache.root.rglob("*.json"))


def test_retries_429_and_5xx_honouring_retry_after(model_with):
    retry_info = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "slow down",
                            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]}}
    server = FakeServer(
        (429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}, {"Retry-After": "7"}),
        (429, retry_info, {}),
        (503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}, {}),
    )
    model = model_with(server, backoff=0.5)
    response = ask(model, prompt())
    assert response.error is None and response.text == "B"
    assert len(server.requests) == 4
    assert model.sleeps[:2] == [7.0, 12.0] and 0 <= model.sleeps[2] <= 0.5 * 4


def test_non_retryable_and_exhausted_errors_are_one_line(model_with):
    bad = (400, {"error": {"code": 400, "message": "Request contains an invalid argument.\nmore",
                           "status": "INVALID_ARGUMENT"}}, {})
    server = FakeServer(bad)
    model = model_with(server)
    response = ask(model, prompt())
    assert len(server.requests) == 1 and model.sleeps == []
    assert response.error.startswith("gemini: 400 Request contains an invalid argument.") and "\n" not in response.error
    assert KEY not in response.error
    down = FakeServer(default=(500, {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}, {}))
    model = model_with(down, max_retries=2)
    response = ask(model, prompt())
    assert len(down.requests) == 3 and len(model.sleeps) == 2 and response.error == "gemini: 500 internal"
    assert not model.cache.root.exists() or not list(model.cache.root.rglob("*.json"))  # errors are not cached


def test_connection_errors_are_retried(model_with):
    calls = []

    def flaky(request):
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        if len(calls) == 2:
            raise httpx.ReadTimeout("timed out", request=request)
        return httpx.Response(200, json=reply("A"))

    model = model_with(flaky)
    assert ask(model, prompt()).text == "A" and len(calls) == 3 and len(model.sleeps) == 2


def test_refusals_empty_replies_and_logprobs(model_with):
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}}
    assert ask(model_with(FakeServer((200, blocked, {}))), prompt()).error == "refused: prompt blocked (SAFETY)"
    thinking = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hmm", "thought": True}]},
                                "finishReason": "MAX_TOKENS"}]}
    error = ask(model_with(FakeServer((200, thinking, {}))), prompt()).error
    assert error.startswith("empty response: finish_reason=MAX_TOKENS") and "thinking_budget=0" in error
    empty = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}]}
    assert ask(model_with(FakeServer((200, empty, {}))), prompt()).error == "empty response"
    with_lp = reply("B", candidates=[{
        "content": {"role": "model", "parts": [{"text": "B"}]}, "finishReason": "STOP",
        "logprobsResult": {"topCandidates": [{"candidates": [{"token": "B", "logProbability": -0.1},
                                                              {"token": "A", "logProbability": -2.5}]}]}}])
    response = ask(model_with(FakeServer((200, with_lp, {})), logprobs=2), prompt())
    assert response.logprobs == [{"B": -0.1, "A": -2.5}]


def test_argument_errors(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(LvuError, match="no API key — set the environment variable GEMINI_API_KEY or GOOGLE_API_KEY"):
        Gemini(model="gemini-2.5-flash")
    monkeypatch.setenv("MY_KEY", KEY)
    assert Gemini(model="m", api_key_env="MY_KEY")._key == KEY
    with pytest.raises(LvuError, match="do not pass api_key"):
        Gemini(model="m", api_key=KEY)
    with pytest.raises(LvuError, match="needs the model name"):
        Gemini(api_key_env="MY_KEY")
    with pytest.raises(LvuError, match="no argument.*temprature"):
        Gemini(model="m", api_key_env="MY_KEY", temprature=0)
    with pytest.raises(LvuError, match="video_fps=30"):
        Gemini(model="m", api_key_env="MY_KEY", video_fps=30)


def test_retry_after_parsing():
    class E(Exception):
        def __init__(self, headers=None, details=None):
            self.response = type("R", (), {"headers": headers})() if headers is not None else None
            self.details = details

    assert retry_after(E({"retry-after-ms": "1500"})) == 1.5
    assert retry_after(E({"retry-after": "3"})) == 3.0
    assert retry_after(E({}, {"error": {"details": [{"retryDelay": "2.5s"}]}})) == 2.5
    assert retry_after(E()) is None


@pytest.mark.skipif(not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")),
                    reason="live Gemini call: set GEMINI_API_KEY or GOOGLE_API_KEY to run it")
def test_live_call(tmp_path):
    model = Gemini(model=os.environ.get("LVU_GEMINI_MODEL", "gemini-2.5-flash"), cache=False, thinking_budget=0)
    p = Prompt(parts=[Frame(image=image(230), timestamp=0.0), Text(text="Is this image mostly white or black? "
                                                                      "Answer with one word.")], max_tokens=5)
    response = asyncio.run(model.generate(p))
    assert response.error is None and "white" in response.text.lower()


def test_frames_shared_by_questions_are_encoded_once(model_with, monkeypatch):
    from lvu.models import gemini

    calls = []
    real = gemini.encode_jpeg
    monkeypatch.setattr(gemini, "encode_jpeg", lambda img, q=90: calls.append(1) or real(img, q))
    shared = [image(1), image(2)]
    model = model_with(FakeServer())
    for question in ("Q1", "Q2", "Q3"):  # the engine hands one video's questions the same arrays
        model.request(Prompt(parts=[Frame(image=shared[0], timestamp=0), Frame(image=shared[1], timestamp=1),
                                    Text(text=question)]))
    assert len(calls) == 2
    model.request(Prompt(parts=[Frame(image=image(1), timestamp=0)]))  # equal pixels, new array: encoded
    assert len(calls) == 3
