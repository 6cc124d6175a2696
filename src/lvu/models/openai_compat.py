"""The `openai` backend: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM `serve`,
SGLang, Ollama, LM Studio...) through the official `openai` SDK's async client.

    lvu run -b videomme -m openai -a model=Qwen/Qwen2.5-VL-7B-Instruct -a base_url=http://localhost:8000/v1

A prompt becomes one user message whose content parts follow the prompt's parts in order: each
frame a base64 JPEG `image_url` part, each audio clip an `input_audio` part (base64 16-bit PCM
WAV), each text or subtitle part a `text` part (`to_messages`).
The API key comes from the environment only (`OPENAI_API_KEY`, or the variable `api_key_env`
names) and is never part of the model's identity, the run spec, the response cache or an error.

Retries are ours (the SDK's own are off), through the shared `lvu.models.retry.with_retries`:
429 (but not insufficient_quota), 5xx, 408/409, timeouts, connection errors and HTTP 200 answers
that are no completion (malformed JSON, an empty `choices` list: `MalformedReply`) are retried with
exponential backoff and jitter, waiting what `Retry-After` / `retry-after-ms` asks for when the
server says (at most `max_wait`). Other failures (context length, other 4xx, refusals, content
filter, empty replies) come back at once as a one-line `Response.error`. Successful responses are
cached on disk by the shared `lvu.models.response_cache.ResponseCache` (`cache_dir("responses")`),
keyed by a hash of the base URL and the exact request body, so an identical request is never paid
for twice; `--fresh` (`bypass_cache()`) reads none of it. Before a run, `preflight()` sends one
GET {base_url}/models, so a dead endpoint — or a base_url without its /v1 — is one line at once.
See docs/models/openai.md.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import concurrent.futures
import io
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from lvu import args as _args
from lvu.errors import LvuError
from lvu.media.audio import encode as encode_audio
from lvu.models import response_cache
from lvu.models.base import Model, register_model
from lvu.models.openai_http import AttemptTimedOut, ReplyTooLarge, cap_reply, check_chat_route
from lvu.models.openai_reply import NO_CHOICES, parse_completion
from lvu.models.openai_reply import one_line as _one_line
from lvu.models.response_cache import ResponseCache, resolve_cache_dir
from lvu.models.retry import (
    PREFLIGHT_TIMEOUT,
    check_reachable,
    error_chain,
    retry_after_from_headers,
    retryable_status,
    with_retries,
)
from lvu.types import Audio, Frame, Prompt, Response, as_rgb

OPENAI_URL = "https://api.openai.com/v1"
PREFIX_MODES = ("auto", "continue", "message", "user")
HTTP_TRANSPORTS = ("auto", "aiohttp", "httpx")
DETAILS = ("auto", "low", "high")
DEFAULTS: dict[str, Any] = {
    "base_url": None, "api_key_env": "OPENAI_API_KEY", "temperature": None, "max_tokens": None,
    "max_tokens_field": "max_tokens", "seed": None, "logprobs": False, "top_logprobs": 5,
    "quality": 90, "detail": None, "max_side": None, "prefix": "auto", "timeout": 120.0,
    "max_retries": 6, "backoff": 1.0, "backoff_max": 60.0, "max_wait": 300.0, "cache": True,
    "max_concurrency": None, "extra_body": None, "http": "auto", "audio_format": "wav",
}
"""Every argument but `model` (required), with its default."""
CLOSE_TIMEOUT = 2.0
"""Seconds closing the HTTP client may take."""
_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "prompt is too long",
                  "too long for the model", "exceeds the model")


# ---- request building (pure) ------------------------------------------------------------------------


def encode_jpeg(image: Any, *, quality: int = 90, max_side: int | None = None) -> str:
    """An RGB image as base64 JPEG text; `max_side` shrinks it (aspect kept) so its longer side fits."""
    from PIL import Image

    img = Image.fromarray(as_rgb(image))
    if max_side and max(img.size) > max_side:
        scale = max_side / max(img.size)
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=int(quality))
    return base64.b64encode(buf.getvalue()).decode("ascii")


class _EncodedFrames:
    """Base64 JPEGs of frames seen recently, by array identity: the engine hands the samples of one
    video the same frame arrays, so each distinct frame is encoded once. Entries hold a weak
    reference and only count while it still points at the same array (ids are reused after an
    array is freed). Frames are never modified in place in lvu; bounded to `max_bytes` of text."""

    def __init__(self, quality: int, max_side: int | None, max_bytes: int = 64 << 20) -> None:
        self.quality, self.max_side, self.max_bytes = quality, max_side, max_bytes
        self.items: collections.OrderedDict[int, tuple[weakref.ref, str]] = collections.OrderedDict()
        self.size = 0
        self.lock = threading.Lock()
        self.pending: dict[int, threading.Event] = {}

    def has(self, image: Any) -> bool:
        """Whether this exact array's JPEG is memoised (encoding it would be a lookup)."""
        with self.lock:
            hit = self.items.get(id(image))
            return hit is not None and hit[0]() is image

    def __call__(self, image: Any) -> str:
        if not isinstance(image, np.ndarray):
            return encode_jpeg(image, quality=self.quality, max_side=self.max_side)
        key = id(image)
        while True:
            with self.lock:
                hit = self.items.get(key)
                if hit is not None and hit[0]() is image:
                    self.items.move_to_end(key)
                    return hit[1]
                busy = self.pending.get(key)
                if busy is None:  # ours to encode; prompts built at once in other threads wait for it
                    busy = self.pending[key] = threading.Event()
                    break
            busy.wait()
        try:
            text = encode_jpeg(image, quality=self.quality, max_side=self.max_side)
            with self.lock:
                old = self.items.pop(key, None)
                self.size += len(text) - (len(old[1]) if old else 0)
                self.items[key] = (weakref.ref(image), text)
                while self.size > self.max_bytes and self.items:
                    self.size -= len(self.items.popitem(last=False)[1][1])
            return text
        finally:
            with self.lock:
                self.pending.pop(key, None)
            busy.set()


_ENCODE_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def _encode_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads for JPEG encoding, one per core: the work is CPU-bound (Pillow releases the GIL while
    encoding), so more threads only contend (measured: 2 threads beat asyncio's default 6 here)."""
    global _ENCODE_POOL
    if _ENCODE_POOL is None:
        _ENCODE_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2,
                                                             thread_name_prefix="lvu-jpeg")
    return _ENCODE_POOL


def to_messages(prompt: Prompt, *, quality: int = 90, detail: str | None = None, max_side: int | None = None,
                prefix: str = "message", encode: Callable[[Any], str] | None = None,
                audio_format: str = "wav") -> list[dict[str, Any]]:
    """The chat messages for a prompt: [system], one user message with one content part per prompt
    part in the prompt's order (frames as `image_url` data URLs of base64 JPEGs, text and subtitle
    parts as `text`), then the assistant prefix — as a final assistant message (`prefix` "message"
    or "continue") or as a last text part of the user message (`prefix` "user"). `encode` replaces
    `encode_jpeg(image, quality=..., max_side=...)` (the backend passes its memoised encoder)."""
    messages: list[dict[str, Any]] = []
    if prompt.system:
        messages.append({"role": "system", "content": prompt.system})
    content: list[dict[str, Any]] = []
    for part in prompt.parts:
        if isinstance(part, Frame):
            data = encode(part.image) if encode else encode_jpeg(part.image, quality=quality, max_side=max_side)
            url: dict[str, Any] = {"url": "data:image/jpeg;base64," + data}
            if detail:
                url["detail"] = detail
            content.append({"type": "image_url", "image_url": url})
        elif isinstance(part, Audio):  # OpenAI's audio input part: base64 WAV (16-bit PCM) or MP3
            data = base64.b64encode(encode_audio(part, audio_format)).decode("ascii")
            content.append({"type": "input_audio", "input_audio": {"data": data, "format": audio_format}})
        else:
            content.append({"type": "text", "text": part.text})
    if prompt.assistant_prefix and prefix == "user":
        content.append({"type": "text", "text": prompt.assistant_prefix})
    messages.append({"role": "user", "content": content})
    if prompt.assistant_prefix and prefix != "user":
        messages.append({"role": "assistant", "content": prompt.assistant_prefix})
    return messages


def request_key(base_url: str, body: dict[str, Any]) -> str:
    """Cache key of a request: the shared `response_cache.request_key` (sha256) of the base URL and
    the exact JSON body (no key, no headers)."""
    return response_cache.request_key({"backend": "openai", "base_url": base_url, "body": body})


retry_after = retry_after_from_headers
"""Seconds the server asks us to wait (`retry-after-ms`, or `Retry-After` in seconds or as a date)."""


class MalformedReply(Exception):
    """An HTTP 200 that holds no completion: JSON cut off or garbled, or no `choices`. A proxy or
    an overloaded server's glitch, so it is retried like a 5xx."""


def is_retryable(e: BaseException) -> bool:
    """429 (not insufficient_quota), 408, 409 and 5xx API errors; timeouts and connection errors;
    malformed 200 answers (MalformedReply)."""
    import openai

    if isinstance(e, (MalformedReply, AttemptTimedOut)):
        return True
    if isinstance(_root_cause(e), ReplyTooLarge):
        return False
    if isinstance(e, openai.APIStatusError):
        return retryable_status(e.status_code, e.code, also=(409,))
    return isinstance(e, openai.APIConnectionError)  # includes APITimeoutError


def is_unreachable(e: BaseException) -> bool:
    """A connection-level failure (refused, dropped, unknown host, connect timeout), not an HTTP
    error nor a slow answer (a read timeout): the endpoint itself is not answering."""
    import openai

    if not isinstance(e, openai.APIConnectionError) or isinstance(_root_cause(e), ReplyTooLarge):
        return False
    if not isinstance(e, openai.APITimeoutError):
        return True
    # the aiohttp transport reports refused / dropped connections as (connect) timeouts
    return any("Connect" in type(x).__name__ or "Disconnect" in type(x).__name__ for x in error_chain(e)[1:])


def _hinted_wait(e: BaseException) -> float | None:
    response = getattr(e, "response", None)
    return retry_after(response.headers) if response is not None else None


def _root_cause(e: BaseException) -> BaseException:
    while e.__cause__ is not None:
        e = e.__cause__
    return e


def _timed_out(e: BaseException) -> bool:
    """Whether a timeout error really is one: the aiohttp transport reports a refused or dropped
    connection as a connect timeout, so look at what it wraps."""
    root = _root_cause(e)
    return root is e.__cause__ or root is e or isinstance(root, TimeoutError) or "Timeout" in type(root).__name__


def _as_bool(name: str, value: Any) -> bool:
    return _args.as_bool("openai", name, value)


def _as_number(name: str, value: Any, kind: type = float, low: float | None = None) -> Any:
    """The shared converters of lvu.args (one-line errors naming the argument)."""
    if kind is int:
        return _args.as_int("openai", name, value, None if low is None else int(low))
    return _args.as_float("openai", name, value, low)


# ---- the backend -----------------------------------------------------------------------------------


@register_model("openai")
class OpenAICompat(Model):
    """OpenAI-compatible chat-completions endpoint (OpenAI, vLLM serve, SGLang, ...): `model=NAME`.

    Arguments (`--model-arg k=v`): DEFAULTS below and docs/models/openai.md. `model` is required; the API key is read from the environment."""

    run_neutral_args = ("timeout", "max_retries", "backoff", "backoff_max", "max_wait", "cache", "max_concurrency",
                        "http")
    accepts_audio = True  # `input_audio` parts: the server's model must take audio (else it answers 400)

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        if "api_key" in args:
            raise LvuError("openai: do not pass api_key as a model argument (it would be stored with the run) — "
                           "set OPENAI_API_KEY, or api_key_env=NAME to read another variable")
        _args.check_known("openai", args, {"model", *DEFAULTS})
        if not args.get("model"):
            raise LvuError("openai needs the model name: --model-arg model=NAME (e.g. gpt-4o, or the id vLLM serves)")
        a = {**DEFAULTS, **args}
        self.model = str(a["model"])
        self.base_url = str(a["base_url"] or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        self.key_env = str(a["api_key_env"])
        key = os.environ.get(self.key_env)
        if not key:
            if "api_key_env" in args or self.base_url == OPENAI_URL:
                raise LvuError(f"openai: no API key — set the environment variable {self.key_env}")
            key = "EMPTY"  # local servers (vLLM, SGLang, Ollama) take any key
        self._key = key
        self.temperature = None if a["temperature"] is None else _as_number("temperature", a["temperature"], low=0)
        self.max_tokens = None if a["max_tokens"] is None else _as_number("max_tokens", a["max_tokens"], int, 1)
        if a["max_tokens_field"] not in ("max_tokens", "max_completion_tokens"):
            raise LvuError(f"openai: max_tokens_field={a['max_tokens_field']!r} — use max_tokens or max_completion_tokens")
        self.max_tokens_field = a["max_tokens_field"]
        self.seed = None if a["seed"] is None else _as_number("seed", a["seed"], int)
        self.logprobs = _as_bool("logprobs", a["logprobs"])
        self.top_logprobs = _as_number("top_logprobs", a["top_logprobs"], int, 0)
        self.quality = _as_number("quality", a["quality"], int, 1)
        if self.quality > 100:
            raise LvuError(f"openai: quality={self.quality} — JPEG quality goes from 1 to 100")
        if a["detail"] is not None and a["detail"] not in DETAILS:
            raise LvuError(f"openai: detail={a['detail']!r} — use one of {', '.join(DETAILS)}")
        self.detail = a["detail"]
        if a["audio_format"] not in ("wav", "mp3"):  # what OpenAI's input_audio takes
            raise LvuError(f"openai: audio_format={a['audio_format']!r} — use wav or mp3")
        self.audio_format = a["audio_format"]
        self.max_side = None if a["max_side"] is None else _as_number("max_side", a["max_side"], int, 1)
        if a["prefix"] not in PREFIX_MODES:
            raise LvuError(f"openai: prefix={a['prefix']!r} — use one of {', '.join(PREFIX_MODES)}")
        self.prefix = a["prefix"] if a["prefix"] != "auto" else ("message" if self.base_url == OPENAI_URL
                                                                 else "continue")
        self.timeout = _as_number("timeout", a["timeout"], low=0.001)
        self.max_retries = _as_number("max_retries", a["max_retries"], int, 0)
        self.backoff = _as_number("backoff", a["backoff"], low=0)
        self.backoff_max = _as_number("backoff_max", a["backoff_max"], low=0)
        self.max_wait = _as_number("max_wait", a["max_wait"], low=0)
        self.cache = _as_bool("cache", a["cache"])
        self.responses = ResponseCache(resolve_cache_dir(self.cache, "responses"))
        self.max_concurrency = (None if a["max_concurrency"] is None
                                else _as_number("max_concurrency", a["max_concurrency"], int, 1))
        if a["extra_body"] is not None and not isinstance(a["extra_body"], dict):
            raise LvuError('openai: extra_body must be a JSON object, e.g. extra_body=\'{"top_k": 1}\'')
        self.extra_body = dict(a["extra_body"] or {})
        if a["http"] not in HTTP_TRANSPORTS:
            raise LvuError(f"openai: http={a['http']!r} — use one of {', '.join(HTTP_TRANSPORTS)}")
        self.http = a["http"]
        self._encode = _EncodedFrames(self.quality, self.max_side)
        self._sleep = asyncio.sleep  # tests replace it to see the waits
        self._rng = random.Random()
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompat(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def identity(self) -> dict[str, Any]:
        import openai

        return {"backend": self.name, **self.args, "model": self.model, "base_url": self.base_url,
                "prefix": self.prefix, "sdk": f"openai {openai.__version__}"}

    # ---- client ------------------------------------------------------------------------------------

    def _ensure_client(self) -> Any:
        """One AsyncOpenAI per event loop (its connection pool belongs to the loop that made it)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            import openai

            self._client = openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url, timeout=self.timeout,
                                              max_retries=0, **self._http_client())
            self._loop = loop
            self._sem = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None
        return self._client

    def _http_client(self) -> dict[str, Any]:
        """The SDK's aiohttp transport (`openai[aiohttp]`, the SDK's documented choice "for improved
        concurrency performance": measured in benchmarks/api_throughput.py) when installed and `http`
        is auto or aiohttp, else the SDK's default httpx client."""
        from openai import DefaultAsyncHttpxClient

        hooks = {"response": [cap_reply]}  # every reply body read with a cap (MAX_REPLY_BYTES)
        if self.http == "httpx":
            return {"http_client": DefaultAsyncHttpxClient(timeout=self.timeout, event_hooks=hooks)}
        try:
            from openai import DefaultAioHttpClient

            return {"http_client": DefaultAioHttpClient(timeout=self.timeout, event_hooks=hooks)}
        except (ImportError, RuntimeError):  # an older SDK, or the extra is not installed
            if self.http == "aiohttp":
                raise LvuError("openai: http=aiohttp needs the SDK's aiohttp extra — pip install 'openai[aiohttp]'") from None
            return {"http_client": DefaultAsyncHttpxClient(timeout=self.timeout, event_hooks=hooks)}

    async def preflight(self) -> None:
        """GET {base_url}/models once: a connection that fails or stays silent is an error; any
        HTTP answer but 404 will do (401/403: a server that wants a key there); a 404 has the
        chat-completions route itself checked (`check_chat_route`: a base_url without its /v1
        is refused, naming the one that answers)."""
        auth = {"Authorization": f"Bearer {self._key}"} if self._key != "EMPTY" else {}
        timeout = min(self.timeout, PREFLIGHT_TIMEOUT)
        if await check_reachable(self.base_url, "/models", who="openai", headers=auth, timeout=timeout) == 404:
            await check_chat_route(self.base_url, headers=auth, timeout=timeout)

    async def close(self) -> None:
        """Close the client without waiting on requests that hang (a stopped run's exit is bounded)."""
        if self._client is not None:
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await self._client.close()
            except (RuntimeError, TimeoutError):  # its loop is gone already; or closing hangs
                pass
            self._client = self._loop = None

    # ---- request -----------------------------------------------------------------------------------

    def build_body(self, prompt: Prompt) -> dict[str, Any]:
        """The exact JSON body sent for a prompt (what the cache key hashes)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_messages(prompt, detail=self.detail, prefix=self.prefix, encode=self._encode,
                                    audio_format=self.audio_format),
            "temperature": self.temperature if self.temperature is not None else prompt.temperature,
            self.max_tokens_field: self.max_tokens if self.max_tokens is not None else prompt.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.logprobs:
            body["logprobs"] = True
            if self.top_logprobs:
                body["top_logprobs"] = self.top_logprobs
        if prompt.assistant_prefix and self.prefix == "continue":  # vLLM / SGLang chat-template switches
            body["continue_final_message"], body["add_generation_prompt"] = True, False
        body.update(self.extra_body)
        return body

    def _prepare(self, prompt: Prompt) -> tuple[dict[str, Any], str | None, Response | None]:
        """The body, its cache key and the cached response, if any (None, None without a cache)."""
        body = self.build_body(prompt)
        key = request_key(self.base_url, body) if self.responses.root is not None else None
        return body, key, (self.responses.get(key) if key and not self.refresh else None)

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        try:
            # JPEG encoding, hashing the body (~0.2 ms) and reading the cache off the event loop,
            # unless there is nothing to do but build the body (frames encoded already, no cache):
            # then a thread hop would cost more than the build.
            if all(self._encode.has(f.image) for f in prompt.frames):
                body, key, hit = (self._prepare(prompt) if self.responses.root is None else
                                  await loop.run_in_executor(None, self._prepare, prompt))
            else:
                body, key, hit = await loop.run_in_executor(_encode_pool(), self._prepare, prompt)
        except Exception as e:  # a frame that cannot be encoded fails its sample only
            return Response(error=f"openai: cannot encode the prompt: {type(e).__name__}: {e}")
        if hit is not None:
            return hit
        client = self._ensure_client()
        if self._sem is not None:
            async with self._sem:
                response = await self._call(client, body)
        else:
            response = await self._call(client, body)
        response.latency = time.perf_counter() - t0
        if key and response.error is None:  # successes only; file writes (~0.4 ms) off the loop
            await loop.run_in_executor(None, self.responses.put, key, response)
        return response

    async def _call(self, client: Any, body: dict[str, Any]) -> Response:
        import openai

        async def once() -> Response:
            # The SDK's generic POST (its documented way to send a body as is): the exact body the
            # cache key hashes goes out, and the SDK's per-field transform of `create()` (several ms
            # for a prompt of many image parts, under the event loop) is skipped. Errors and auth
            # headers are the SDK's; the reply comes back as its JSON (cast_to=object): see openai_reply.
            try:
                async with asyncio.timeout(self.timeout):  # the whole attempt, not each idle read
                    reply = await client.post("/chat/completions", body=body, cast_to=object)
            except TimeoutError:
                raise AttemptTimedOut() from None
            except ValueError as e:  # the SDK's json.JSONDecodeError: a 200 whose body is not JSON
                raise MalformedReply(f"malformed JSON in the reply ({_one_line(str(e), 120)})") from None
            response = parse_completion(reply, logprobs=self.logprobs)
            if response.error == NO_CHOICES:
                raise MalformedReply(NO_CHOICES.removeprefix("openai: "))
            return response

        retries = 0

        def count(n: int, e: BaseException, delay: float) -> None:
            nonlocal retries
            retries = n

        try:
            # backoff: backoff·2^attempt capped at backoff_max, times U(0.5, 1); Retry-After capped at max_wait
            return await with_retries(once, max_retries=self.max_retries, is_retryable=is_retryable,
                                      retry_after=_hinted_wait, base_delay=self.backoff, max_delay=self.backoff_max,
                                      max_wait=self.max_wait, min_fraction=0.5, rng=self._rng, sleep=self._sleep,
                                      on_retry=count, is_unreachable=is_unreachable)
        except (openai.APIStatusError, openai.APIConnectionError) as e:  # not retryable, or retries exhausted
            return Response(error=self._describe(e, retries), unreachable=is_unreachable(e),
                            permanent=isinstance(e, openai.APIStatusError) and not is_retryable(e))
        except MalformedReply as e:  # retries exhausted
            tries = f" (after {retries + 1} attempts)" if retries else ""
            return Response(error=self._scrub(f"openai: {e}{tries}"))
        except ReplyTooLarge as e:
            return Response(error=f"openai: {e} — check the server at {self.base_url}, or lower max_tokens")
        except AttemptTimedOut:
            tries = f" (after {retries + 1} attempts)" if retries else ""
            return Response(error=f"openai: timed out after {self.timeout:g} s{tries} — raise timeout= or lower "
                                  "the concurrency")  # as the SDK's own read timeout says it
        except Exception as e:  # malformed responses and the like: this sample only
            return Response(error=self._scrub(f"openai: {type(e).__name__}: {_one_line(str(e))}"))

    def _scrub(self, text: str) -> str:
        """`text` with the API key masked where it stands as a token of its own (a placeholder key
        such as `x` must not mask the x of every word in the message)."""
        if not self._key or self._key == "EMPTY":
            return text
        return re.sub(rf"(?<![\w-]){re.escape(self._key)}(?![\w-])", "***", text)

    def _describe(self, e: Exception, attempt: int) -> str:
        import openai

        tries = f" (after {attempt + 1} attempts)" if attempt else ""
        if isinstance(e, openai.APIStatusError):
            body = e.body if isinstance(e.body, dict) else {}
            message = _one_line(body.get("message") or e.message)
            status = e.status_code
            if status == 400 and (e.code == "context_length_exceeded"
                                  or any(h in message.lower() for h in _CONTEXT_HINTS)):
                what = (f"context length exceeded (HTTP 400): {message} — use fewer frames, a smaller "
                        "max_side or detail=low")
            elif status in (401, 403):
                what = f"authentication failed (HTTP {status}): {message} — check {self.key_env}"
            elif status == 404:
                what = f"not found (HTTP 404) at {self.base_url}: {message} — check model={self.model!r} and base_url"
            elif e.code == "insufficient_quota":
                what = f"quota exhausted (HTTP 429): {message}"
            else:
                what = f"HTTP {status}{tries}: {message}"
        elif isinstance(e, openai.APITimeoutError) and _timed_out(e):
            what = f"timed out after {self.timeout:g} s{tries} — raise timeout= or lower the concurrency"
        elif isinstance(_root_cause(e), ReplyTooLarge):
            what = f"{_root_cause(e)} — check the server at {self.base_url}, or lower max_tokens"
        else:
            cause = _root_cause(e)
            what = f"cannot reach {self.base_url}{tries}: {_one_line(str(cause) or type(cause).__name__)}"
        return self._scrub(f"openai: {what}")
