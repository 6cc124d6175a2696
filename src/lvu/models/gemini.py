"""gemini: Google's Gemini models through the `google-genai` SDK (`pip install 'lvu[gemini]'`).

The prompt becomes one user turn whose parts follow the prompt's order: frames as inline JPEG
image parts, audio clips as inline `audio/wav` parts (16-bit PCM), text and subtitle cues as text
parts; the system prompt is the system instruction;
temperature / max tokens / seed (and log-probabilities when asked) go in the generation config.
With `video_upload=true` the prompt's frames are replaced by the video file itself (uploaded
once per process through the Files API) at the place of the first frame, with the frame rate
the protocol's frame plan implies (`video_fps` overrides); Gemini then samples the frames.

The API key comes from the environment (GEMINI_API_KEY, else GOOGLE_API_KEY, or the variable
named by `api_key_env`); it is never a model argument, so it is never in the run's spec,
identity, cache keys or errors. `vertexai=true` (+ `project`, `location`) uses Vertex AI and
application-default credentials instead.

429 / 5xx / timeouts / connection errors are retried with exponential backoff and jitter,
waiting what the server asks (Retry-After, or Google's RetryInfo `retryDelay`). Successful
responses are cached on disk keyed by a hash of the request (pixels included), so an identical
request is never paid for twice (`--fresh` reads none of it). Concurrency is the run's
`--concurrency`. Before a run, `preflight()` checks that the API host answers at all.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from lvu import args as _args
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.models.response_cache import ResponseCache, resolve_cache_dir
from lvu.models.retry import (
    PREFLIGHT_TIMEOUT,
    check_reachable,
    parse_retry_after,
    retry_after_from_headers,
    retryable_status,
    with_retries,
)
from lvu.types import Audio, Frame, Prompt, Response, as_rgb

KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
GEMINI_URL = "https://generativelanguage.googleapis.com"
PREFIX_MODES = ("user", "model")
MEDIA_RESOLUTIONS = ("low", "medium", "high")
DEFAULTS: dict[str, Any] = {
    "api_key_env": None, "base_url": None, "vertexai": False, "project": None, "location": None,
    "temperature": None, "max_tokens": None, "seed": None, "logprobs": None, "thinking_budget": None,
    "media_resolution": None, "quality": 90, "prefix": "user", "video_upload": False, "video_fps": None,
    "audio_format": "wav",
    "timeout": 120.0, "max_retries": 6, "backoff": 1.0, "backoff_max": 60.0, "cache": True,
}
"""Every argument but `model` (required), with its default."""
MAX_FPS = 24.0
"""Gemini accepts video_metadata.fps in (0, 24]."""


def _install_hint() -> LvuError:
    return LvuError("the gemini backend needs google-genai: pip install 'lvu[gemini]'")


def _types() -> Any:
    try:
        from google.genai import types
    except ImportError:
        raise _install_hint() from None
    return types


def encode_jpeg(image: Any, quality: int = 90) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(as_rgb(image)).save(buf, format="JPEG", quality=int(quality))
    return buf.getvalue()


_JPEGS: OrderedDict[tuple[int, int], tuple[Any, bytes]] = OrderedDict()
_JPEGS_LOCK = threading.Lock()
JPEG_MEMO = 512
"""Encoded frames remembered. Samples of one video share the engine's decoded frame arrays, so
their frames are encoded once. Entries hold a weak reference to their array: a recycled id of a
freed array never matches, and no frame is kept alive by this memo."""


def jpeg_of(image: Any, quality: int = 90) -> bytes:
    """`encode_jpeg`, remembered per array object (questions about one video share frames)."""
    key = (id(image), int(quality))
    with _JPEGS_LOCK:
        hit = _JPEGS.get(key)
        if hit is not None and hit[0]() is image:
            _JPEGS.move_to_end(key)
            return hit[1]
    data = encode_jpeg(image, quality)
    try:
        ref = weakref.ref(image)
    except TypeError:  # not weak-referenceable (e.g. a list): just don't remember it
        return data
    with _JPEGS_LOCK:
        _JPEGS[key] = (ref, data)
        while len(_JPEGS) > JPEG_MEMO:
            _JPEGS.popitem(last=False)
    return data


def plan_fps(prompt: Prompt) -> float:
    """The sampling rate the prompt's frames imply: frames per second of the span they cover
    (1 / the mean gap), clamped to Gemini's (0, 24]; 1.0 (Gemini's default) for < 2 frames."""
    times = sorted(f.timestamp for f in prompt.frames)
    if len(times) < 2 or times[-1] <= times[0]:
        return 1.0
    return min(MAX_FPS, (len(times) - 1) / (times[-1] - times[0]))


def build_contents(prompt: Prompt, *, quality: int = 90, prefix: str = "user",
                   video: Any = None, audio_format: str = "wav") -> list[Any]:
    """The `contents` for a prompt: one user Content with one Part per prompt part, in order
    (frames as inline image/jpeg bytes, text and cues as text). With `video` (a
    `types.Part` holding the uploaded file), it stands where the first frame was and the other
    frames are left out. The assistant prefix is a last text part (`prefix="user"`) or a
    trailing model turn for Gemini to continue (`prefix="model"`)."""
    types = _types()
    parts: list[Any] = []
    placed = False
    for part in prompt.parts:
        if isinstance(part, Frame):
            if video is None:
                parts.append(types.Part.from_bytes(data=jpeg_of(part.image, quality), mime_type="image/jpeg"))
            elif not placed:
                parts.append(video)
                placed = True
        elif isinstance(part, Audio):  # inline audio: the clip as WAV (16-bit PCM), FLAC or MP3 bytes
            from lvu.media.audio import FORMATS, encode

            parts.append(types.Part.from_bytes(data=encode(part, audio_format), mime_type=FORMATS[audio_format]))
        else:
            parts.append(types.Part.from_text(text=part.text))
    if video is not None and not placed:
        parts.insert(0, video)
    if prompt.assistant_prefix and prefix == "user":
        parts.append(types.Part.from_text(text=prompt.assistant_prefix))
    contents = [types.Content(role="user", parts=parts)]
    if prompt.assistant_prefix and prefix == "model":
        contents.append(types.Content(role="model", parts=[types.Part.from_text(text=prompt.assistant_prefix)]))
    return contents


def build_config(prompt: Prompt, *, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None, logprobs: int | None = None, thinking_budget: int | None = None,
                 media_resolution: str | None = None) -> Any:
    """The GenerateContentConfig: the prompt's settings, overridden by the model args given."""
    types = _types()
    config: dict[str, Any] = {
        "temperature": prompt.temperature if temperature is None else temperature,
        "max_output_tokens": prompt.max_tokens if max_tokens is None else max_tokens,
        "candidate_count": 1,
    }
    if prompt.system:
        config["system_instruction"] = prompt.system
    if seed is not None:
        config["seed"] = seed
    if logprobs is not None:
        config["response_logprobs"] = True
        config["logprobs"] = logprobs
    if thinking_budget is not None:
        config["thinking_config"] = types.ThinkingConfig(thinking_budget=thinking_budget)
    if media_resolution:
        config["media_resolution"] = getattr(types.MediaResolution, f"MEDIA_RESOLUTION_{media_resolution.upper()}")
    return types.GenerateContentConfig(**config)


# ---- errors -----------------------------------------------------------------------------------------

_TRANSIENT = {"TimeoutException", "TransportError", "NetworkError", "ConnectError", "RemoteProtocolError",
              "ClientConnectionError", "ServerTimeoutError", "ServerDisconnectedError", "TimeoutError"}


def is_retryable(e: BaseException) -> bool:
    """429, 408 and 5xx API errors, timeouts and connection errors (of httpx or aiohttp)."""
    code = getattr(e, "code", None)
    if isinstance(code, int) and type(e).__module__.startswith("google.genai"):
        return retryable_status(code)
    return any(c.__name__ in _TRANSIENT for c in type(e).__mro__)


_UNREACHABLE = {"ConnectError", "ConnectTimeout", "RemoteProtocolError", "ClientConnectorError",
                "ServerDisconnectedError", "ConnectionTimeoutError", "ConnectionError"}


def is_unreachable(e: BaseException) -> bool:
    """A connection-level failure (refused, dropped, unknown host, connect timeout; httpx or
    aiohttp), not an API error nor a slow answer."""
    return any(c.__name__ in _UNREACHABLE for c in type(e).__mro__)


def retry_after(e: BaseException) -> float | None:
    """What the server asks to wait: `retry-after-ms` / `Retry-After` headers, else the
    RetryInfo `retryDelay` ('30s') in a Google error body."""
    if (wait := retry_after_from_headers(getattr(getattr(e, "response", None), "headers", None))) is not None:
        return wait
    details = getattr(e, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) if isinstance(error, dict) else []:
        if isinstance(item, dict) and "retryDelay" in item:
            return parse_retry_after(item["retryDelay"])
    return None


def describe_error(e: BaseException) -> str:
    """One line for Response.error (the SDK's messages never contain the key)."""
    code = getattr(e, "code", None)
    message = getattr(e, "message", None) or str(e)
    text = f"{code} {message}" if isinstance(code, int) else f"{type(e).__name__}: {message}"
    return " ".join(text.split())[:400]


def parse_response(resp: Any) -> Response:
    """Text (thoughts left out), usage, top log-probabilities; refusals and empty replies as errors."""
    candidates = resp.candidates or []
    usage_meta = resp.usage_metadata
    usage = {}
    if usage_meta is not None:
        for ours, theirs in (("prompt_tokens", "prompt_token_count"), ("completion_tokens", "candidates_token_count"),
                             ("thinking_tokens", "thoughts_token_count"), ("total_tokens", "total_token_count")):
            if (v := getattr(usage_meta, theirs, None)) is not None:
                usage[ours] = int(v)
    if not candidates:
        feedback = getattr(resp, "prompt_feedback", None)
        reason = getattr(feedback, "block_reason", None)
        return Response(usage=usage, error=f"refused: prompt blocked ({getattr(reason, 'value', reason)})"
                        if reason else "empty response: no candidates")
    cand = candidates[0]
    parts = cand.content.parts if cand.content and cand.content.parts else []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    finish = getattr(cand.finish_reason, "value", cand.finish_reason)
    if not text:
        if finish in ("STOP", None):
            return Response(usage=usage, error="empty response")
        hint = " (thinking may have used the budget: raise max_tokens or set thinking_budget=0)" \
            if finish == "MAX_TOKENS" else ""
        return Response(usage=usage, error=f"empty response: finish_reason={finish}{hint}")
    logprobs = None
    if cand.logprobs_result is not None and cand.logprobs_result.top_candidates:
        logprobs = [{c.token: float(c.log_probability) for c in (top.candidates or [])}
                    for top in cand.logprobs_result.top_candidates]
    return Response(text=text, usage=usage, logprobs=logprobs)


# ---- the model ----------------------------------------------------------------------------------------


def _number(name: str, value: Any, kind: type = float, low: float | None = None) -> Any:
    """The shared converters of lvu.args (one-line errors naming the argument)."""
    if kind is int:
        return _args.as_int("gemini", name, value, None if low is None else int(low))
    return _args.as_float("gemini", name, value, low)


def _flag(name: str, value: Any) -> bool:
    return _args.as_bool("gemini", name, value)


@register_model("gemini")
class Gemini(Model):
    """Google Gemini (google-genai SDK): inline frames or an uploaded video, retries, response cache.

    Args (`--model-arg k=v`): `model` (required, e.g. gemini-2.5-flash) and DEFAULTS; see
    docs/models/gemini.md."""

    run_neutral_args = ("timeout", "max_retries", "backoff", "backoff_max", "cache")
    accepts_audio = True  # inline audio/wav parts (with video_upload the uploaded file carries its own sound too)

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        if "api_key" in args:
            raise LvuError("gemini: do not pass api_key as a model argument (it would be stored with the run) — "
                           "set GEMINI_API_KEY, or api_key_env=NAME to read another variable")
        _args.check_known("gemini", args, {"model", *DEFAULTS})
        if not args.get("model"):
            raise LvuError("gemini needs the model name: --model-arg model=NAME (e.g. gemini-2.5-flash)")
        _types()  # fail now, with the install hint, when the SDK is missing
        a = {**DEFAULTS, **args}
        self.model = str(a["model"])
        self.vertexai = _flag("vertexai", a["vertexai"])
        envs = (str(a["api_key_env"]),) if a["api_key_env"] else KEY_ENVS
        self._key = next((os.environ[e] for e in envs if os.environ.get(e)), None)
        if not self._key and not self.vertexai:
            raise LvuError(f"gemini: no API key — set the environment variable {' or '.join(envs)}")
        self.temperature = None if a["temperature"] is None else _number("temperature", a["temperature"], low=0)
        self.max_tokens = None if a["max_tokens"] is None else _number("max_tokens", a["max_tokens"], int, 1)
        self.seed = None if a["seed"] is None else _number("seed", a["seed"], int)
        self.logprobs = None if a["logprobs"] in (None, False) else _number("logprobs", a["logprobs"], int, 0)
        self.thinking_budget = (None if a["thinking_budget"] is None
                                else _number("thinking_budget", a["thinking_budget"], int, -1))
        if a["media_resolution"] is not None and a["media_resolution"] not in MEDIA_RESOLUTIONS:
            raise LvuError(f"gemini: media_resolution={a['media_resolution']!r} — use one of "
                           + ", ".join(MEDIA_RESOLUTIONS))
        self.media_resolution = a["media_resolution"]
        self.quality = _number("quality", a["quality"], int, 1)
        if self.quality > 100:
            raise LvuError(f"gemini: quality={self.quality} — JPEG quality goes from 1 to 100")
        if a["prefix"] not in PREFIX_MODES:
            raise LvuError(f"gemini: prefix={a['prefix']!r} — use one of {', '.join(PREFIX_MODES)}")
        self.prefix = a["prefix"]
        if a["audio_format"] not in ("wav", "flac", "mp3"):
            raise LvuError(f"gemini: audio_format={a['audio_format']!r} — use wav, flac or mp3")
        self.audio_format = a["audio_format"]
        self.video_upload = _flag("video_upload", a["video_upload"])
        self.video_fps = None if a["video_fps"] is None else _number("video_fps", a["video_fps"], low=0.0001)
        if self.video_fps is not None and self.video_fps > MAX_FPS:
            raise LvuError(f"gemini: video_fps={self.video_fps} — Gemini takes at most {MAX_FPS:g} fps")
        self.timeout = _number("timeout", a["timeout"], low=0.001)
        self.max_retries = _number("max_retries", a["max_retries"], int, 0)
        self.backoff = _number("backoff", a["backoff"], low=0)
        self.backoff_max = _number("backoff_max", a["backoff_max"], low=0)
        self.project, self.location = a["project"], a["location"]
        self.cache = ResponseCache(resolve_cache_dir(a["cache"], "responses", owner="gemini"))
        self._sleep = asyncio.sleep  # tests replace it to see the waits
        self.base_url = a["base_url"]
        self._httpx_client_factory: Any = None
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uploads: dict[tuple, Any] = {}
        self._upload_locks: dict[tuple, asyncio.Lock] = {}

    def __repr__(self) -> str:  # never the key
        return f"Gemini(model={self.model!r})"

    @property
    def identity(self) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            sdk = f"google-genai {version('google-genai')}"
        except PackageNotFoundError:
            sdk = "google-genai unknown"
        return {"backend": self.name, **self.args, "model": self.model, "prefix": self.prefix,
                "vertexai": self.vertexai, "sdk": sdk}

    # ---- requests ------------------------------------------------------------------------------------

    def request(self, prompt: Prompt, video: Any = None) -> tuple[list[Any], Any]:
        """(contents, config) for a prompt — exactly what is sent."""
        contents = build_contents(prompt, quality=self.quality, prefix=self.prefix, video=video,
                                  audio_format=self.audio_format)
        config = build_config(prompt, temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
                              logprobs=self.logprobs, thinking_budget=self.thinking_budget,
                              media_resolution=self.media_resolution)
        return contents, config

    def _prepare(self, prompt: Prompt, video: Any, stand_in: Any) -> tuple[list[Any], Any, str]:
        contents, config = self.request(prompt, video)
        keyed = contents if video is None else self.request(prompt, stand_in)[0]
        key = self.cache.key({"backend": "gemini", "model": self.model, "vertexai": self.vertexai,
                              "base_url": self.base_url, "contents": keyed, "config": config})
        return contents, config, key

    def video_part(self, file_uri: str, mime_type: str, fps: float) -> Any:
        types = _types()
        return types.Part(file_data=types.FileData(file_uri=file_uri, mime_type=mime_type),
                          video_metadata=types.VideoMetadata(fps=fps))

    def _client_for_loop(self) -> Any:
        """The SDK's async client, one per event loop (its connections belong to the loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            from google import genai
            from google.genai import types

            http: dict[str, Any] = {"timeout": int(self.timeout * 1000)}  # no retry_options: ours retry
            if self.base_url:
                http["base_url"] = self.base_url
            if self._httpx_client_factory is not None:  # tests: an httpx client with a mock transport
                http["httpx_async_client"] = self._httpx_client_factory()
            options = types.HttpOptions(**http)
            if self.vertexai:
                self._client = genai.Client(vertexai=True, project=self.project, location=self.location,
                                            http_options=options)
            else:
                self._client = genai.Client(api_key=self._key, http_options=options)
            self._loop = loop
            self._uploads.clear()  # locks and uploads were made on the old loop's client
            self._upload_locks.clear()
        return self._client.aio

    async def _upload(self, path: str) -> tuple[str, str, tuple]:
        """Upload a video once per process; wait until Gemini has processed it."""
        p = Path(path)
        stat = p.stat()
        ident = (str(p.resolve()), stat.st_size, stat.st_mtime_ns)
        aio = self._client_for_loop()  # first: a new loop's client resets the uploads and locks
        lock = self._upload_locks.setdefault(ident, asyncio.Lock())
        async with lock:
            if ident not in self._uploads:
                f = await aio.files.upload(file=str(p))
                deadline = time.monotonic() + 600
                while getattr(f.state, "value", f.state) == "PROCESSING":
                    if time.monotonic() > deadline:
                        raise LvuError(f"{path}: Gemini still processing the upload after 600 s")
                    await self._sleep(2.0)
                    f = await aio.files.get(name=f.name)
                if getattr(f.state, "value", f.state) == "FAILED":
                    raise LvuError(f"{path}: Gemini could not process the uploaded video ({f.error})")
                self._uploads[ident] = (f.uri, f.mime_type or "video/mp4")
        uri, mime = self._uploads[ident]
        return uri, mime, ident

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        try:
            video = stand_in = None
            if self.video_upload:
                path = getattr(prompt, "video", None)
                if not path:
                    return Response(error="gemini video_upload: the prompt carries no video path")
                fps = self.video_fps or plan_fps(prompt)
                uri, mime, ident = await self._upload(str(path))
                video = self.video_part(uri, mime, fps)
                # the cache key names the file by content identity, not by its per-upload URI
                stand_in = self.video_part(f"lvu-video:{ident}", mime, fps)
            # JPEG encoding and hashing off the event loop, so other requests keep flowing
            contents, config, key = await asyncio.to_thread(self._prepare, prompt, video, stand_in)
            if not self.refresh and (hit := self.cache.get(key)) is not None:
                return hit.model_copy(update={"latency": time.perf_counter() - t0})
            aio = self._client_for_loop()
            resp = await with_retries(
                lambda: aio.models.generate_content(model=self.model, contents=contents, config=config),
                max_retries=self.max_retries, is_retryable=is_retryable, retry_after=retry_after,
                base_delay=self.backoff, max_delay=self.backoff_max, sleep=self._sleep)
        except LvuError as e:
            return Response(error=str(e), latency=time.perf_counter() - t0)
        except Exception as e:  # exhausted retries or a non-retryable API error: this sample fails
            return Response(error=f"gemini: {describe_error(e)}", latency=time.perf_counter() - t0,
                            unreachable=is_unreachable(e))
        response = parse_response(resp)
        response.latency = time.perf_counter() - t0
        self.cache.put(key, response)
        return response

    async def preflight(self) -> None:
        """One GET of the API host (no key sent; any HTTP answer will do). Vertex AI is not
        checked: its host depends on the location and credentials."""
        if self.vertexai:
            return
        client = self._httpx_client_factory() if self._httpx_client_factory is not None else None
        await check_reachable(self.base_url or GEMINI_URL, "/", who="gemini", client=client,
                              timeout=min(self.timeout, PREFLIGHT_TIMEOUT), hint="check the network, or base_url")

    async def close(self) -> None:
        if self._client is not None:
            try:
                await self._client.aio.aclose()
            except Exception:
                pass
            self._client = None
