"""A small OpenAI-compatible chat-completions server for tests and benchmarks (stdlib only).

    with FakeOpenAIServer(answer="B", latency=0.3) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="x")
        ...
        server.requests[-1].body["messages"]      # what the client sent

It records every request it receives (body, headers, the fault it answered with) and can inject
faults: scripted ones for the next requests in order (`server.script("429", "500")`) and random
ones at a configurable rate (`fault_rate`, drawn from `faults` with a seeded RNG).

Faults: "429" (with `Retry-After: retry_after` seconds), "500", "503", "401", "404", "context"
(400 context_length_exceeded), "timeout" (answers only after `hang` seconds), "drop" (closes the
connection without answering), "refusal" (200 with message.refusal set), "empty" (200, empty
content), "filter" (200, finish_reason=content_filter), "bad_json" (200 whose body is cut-off JSON),
"no_choices" (200 with an empty `choices` list).

Runs on its own event loop in a daemon thread (`start`/`stop`, or as a context manager), or as
a separate process for benchmarks: `python -m lvu.models.testing_server --latency 0.3` prints
`PORT <n>` and serves until killed. Only imports the standard library: lvu.models.load_all imports
this module on every run.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FAULTS = ("429", "500", "503", "401", "404", "context", "timeout", "drop", "refusal", "empty", "filter", "bad_json",
          "no_choices", "trickle", "huge")
"""trickle: a normal answer sent one byte every 0.2 s; huge: a 20 MB answer, chunked (no length)."""
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: dict[str, Any] | None
    fault: str | None = None
    """The fault this request was answered with, None for a normal answer."""
    at: float = field(default_factory=time.monotonic)


class FakeOpenAIServer:
    """OpenAI-compatible `/v1/chat/completions` (and `/v1/models`) on 127.0.0.1.

    `answer` is the reply text, or a function of the request body returning it; `latency` is added
    to every answer; `logprobs` in a request gets one entry per character of the reply, unless
    `token_logprobs` (a list, or a function of the request body returning one) gives the generated
    tokens' top alternatives, {token: logprob} per token with the generated token first (each cut
    to the request's `top_logprobs`, highest first, as the API does; None: the default)."""

    def __init__(self, *, answer: str | Callable[[dict[str, Any]], str] = "A", latency: float = 0.0,
                 fault_rate: float = 0.0, faults: tuple[str, ...] = ("429", "500", "drop"),
                 retry_after: float | None = 0.0, hang: float = 30.0, seed: int = 0,
                 host: str = "127.0.0.1", port: int = 0, record: bool = True, prefix: str | None = None,
                 token_logprobs: list[dict[str, float]] | Callable[[dict[str, Any]], list[dict[str, float]]]
                 | None = None) -> None:
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {FAULTS}")
        self.answer, self.latency, self.fault_rate, self.faults = answer, latency, fault_rate, faults
        self.retry_after, self.hang, self.host, self.port, self.record = retry_after, hang, host, port, record
        self.token_logprobs = token_logprobs
        self.prefix = prefix
        """Serve only PREFIX/models and PREFIX/chat/completions ("/v1": 404 anywhere else, as vLLM
        and api.openai.com do); None: any path that ends in them."""
        self.rng = random.Random(seed)
        self.requests: list[Received] = []
        self.n_requests = 0
        self.in_flight = self.max_in_flight = 0
        """Chat requests being answered now, and the most there ever were at once."""
        self._script: collections.deque[str | None] = collections.deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- control ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *faults: str | None) -> None:
        """Answer the next requests with these faults, in order (None = a normal answer)."""
        for f in faults:
            if f is not None and f not in FAULTS:
                raise ValueError(f"unknown fault {f!r}; known: {FAULTS}")
        with self._lock:
            self._script.extend(faults)

    def chat_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> FakeOpenAIServer:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            for task in asyncio.all_tasks(self._loop):  # hanging answers ("timeout" faults)
                task.cancel()
            self._server.close()
            self._loop.run_until_complete(self._server.wait_closed())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name="fake-openai-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- HTTP ------------------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                raw = await reader.readexactly(int(headers.get("content-length", 0)))
                body = json.loads(raw) if raw else None
                keep = await self._respond(writer, method, path, headers, body)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _next_fault(self) -> str | None:
        with self._lock:
            self.n_requests += 1
            if self._script:
                return self._script.popleft()
            if self.fault_rate and self.rng.random() < self.fault_rate:
                return self.rng.choice(self.faults)
        return None

    async def _respond(self, writer: asyncio.StreamWriter, method: str, path: str,
                       headers: dict[str, str], body: dict[str, Any] | None) -> bool:
        """Write one answer; False closes the connection."""
        routes = {self.prefix.rstrip("/") + r for r in ("/models", "/chat/completions")} if self.prefix is not None else ()
        if self.prefix is not None and path.rstrip("/") not in routes:
            await self._send(writer, 404, {"detail": "Not Found"})  # what vLLM's FastAPI answers
            return True
        if method == "GET" and path.rstrip("/").endswith("/models"):
            await self._send(writer, 200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
            return True
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            await self._send(writer, 404, _error(f"no route {method} {path}", "not_found"))
            return True
        fault = self._next_fault()
        with self._lock:
            if self.record:
                self.requests.append(Received(method, path, headers, body, fault))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(writer, body, fault)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, writer: asyncio.StreamWriter, body: dict[str, Any] | None, fault: str | None) -> bool:
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault == "drop":
            writer.transport.abort()
            return False
        if fault == "timeout":
            await asyncio.sleep(self.hang)
        if fault == "429":
            extra = {} if self.retry_after is None else {"Retry-After": f"{self.retry_after:g}"}
            await self._send(writer, 429, _error("Rate limit reached, slow down", "rate_limit_exceeded"), extra)
        elif fault in ("500", "503"):
            await self._send(writer, int(fault), _error("The server had an error", "server_error"))
        elif fault == "401":
            await self._send(writer, 401, _error("Incorrect API key provided", "invalid_api_key"))
        elif fault == "404":
            await self._send(writer, 404, _error(f"The model {body and body.get('model')!r} does not exist",
                                                 "model_not_found"))
        elif fault == "bad_json":  # a proxy that cut the body, or a server that wrote half of it
            await self._send(writer, 200, self._completion(body or {}, None), cut=True)
        elif fault == "trickle":
            data = json.dumps(self._completion(body or {}, None)).encode()
            writer.write((f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                          "Connection: close\r\n\r\n").encode())
            for k in range(len(data)):
                writer.write(data[k:k + 1])
                await writer.drain()
                await asyncio.sleep(0.2)
            return False
        elif fault == "huge":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                         b"Connection: close\r\n\r\n")
            piece = b" " * (1 << 20)
            try:
                for _ in range(20):
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
            except ConnectionError:
                pass  # the client stopped reading
            return False
        elif fault == "context":
            await self._send(writer, 400, _error(
                "This model's maximum context length is 128000 tokens. However, your messages resulted "
                "in 201345 tokens. Please reduce the length of the messages.", "context_length_exceeded"))
        else:
            await self._send(writer, 200, self._completion(body or {}, fault))
        return True

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        text: str | None = self.answer(body) if callable(self.answer) else self.answer
        finish, refusal = "stop", None
        if fault == "empty":
            text = ""
        elif fault == "refusal":
            text, refusal = None, "I'm sorry, I can't help with that."
        elif fault == "filter":
            text, finish = None, "content_filter"
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish,
                                  "message": {"role": "assistant", "content": text, "refusal": refusal}}
        steps = None
        if body.get("logprobs") and text and self.token_logprobs is not None:
            steps = self.token_logprobs(body) if callable(self.token_logprobs) else self.token_logprobs
        if steps is not None:
            k = int(body.get("top_logprobs") or 0)
            choice["logprobs"] = {"content": [_token_entry(step, k) for step in steps]}
        elif body.get("logprobs") and text:
            k = int(body.get("top_logprobs") or 0)
            choice["logprobs"] = {"content": [
                {"token": ch, "logprob": -0.1, "bytes": list(ch.encode()),
                 "top_logprobs": [{"token": ch, "logprob": -0.1, "bytes": list(ch.encode())}]
                 + [{"token": f"<alt{j}>", "logprob": -2.0 - j, "bytes": None} for j in range(max(0, k - 1))]}
                for ch in text]}
        n_prompt = len(json.dumps(body.get("messages", []))) // 4
        n_out = len(text or "")
        return {"id": f"chatcmpl-{self.n_requests}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "fake"), "choices": [] if fault == "no_choices" else [choice],
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out}}

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any],
                    extra: dict[str, str] | None = None, cut: bool = False) -> None:
        data = json.dumps(payload).encode()
        if cut:  # a complete HTTP answer whose JSON stops halfway
            data = data[: len(data) // 2]
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Content-Type: application/json",
                f"Content-Length: {len(data)}", "Connection: keep-alive"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()


def content_parts(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The last user message's content parts as (kind, detail), in order: ("text", text),
    ("image", data URL length), ("audio", seconds of the WAV clip) or ("audio:mp3", bytes) — what a
    test checks arrived,
    and what an `answer` function that listens reads (`wav_samples`)."""
    out: list[tuple[str, Any]] = []
    user = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    content = user[-1].get("content") if user else None
    parts: list[dict[str, Any]] = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    for part in parts:
        kind = part.get("type")
        if kind == "input_audio" and part["input_audio"].get("format", "wav") == "wav":
            rate, samples = wav_samples(part["input_audio"]["data"])
            out.append(("audio", len(samples) / 2 / rate))
        elif kind == "input_audio":  # another encoding (mp3): its size in bytes, for the test to decode
            import base64

            out.append((f"audio:{part['input_audio']['format']}", len(base64.b64decode(part["input_audio"]["data"]))))
        elif kind == "image_url":
            out.append(("image", len(part["image_url"]["url"])))
        else:
            out.append(("text", part.get("text", "")))
    return out


def wav_samples(data: str) -> tuple[int, bytes]:
    """(sample rate, 16-bit little-endian mono PCM bytes) of a base64 WAV `input_audio` part."""
    import base64
    import io
    import wave

    with wave.open(io.BytesIO(base64.b64decode(data)), "rb") as w:
        if (w.getnchannels(), w.getsampwidth()) != (1, 2):
            raise ValueError("expected 16-bit mono WAV")
        return w.getframerate(), w.readframes(w.getnframes())


def _token_entry(alternatives: dict[str, float], k: int) -> dict[str, Any]:
    """One `logprobs.content` item: the first alternative is the generated token."""
    token, logprob = next(iter(alternatives.items()))
    top = sorted(alternatives.items(), key=lambda kv: -kv[1])[:k]
    return {"token": token, "logprob": logprob, "bytes": list(token.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top]}


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--answer", default="A")
    ap.add_argument("--prefix", default=None, help="serve only under this path, e.g. /v1 (404 elsewhere, as vLLM)")
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--token-logprobs", type=json.loads, default=None,
                    help='top alternatives per generated token, JSON: [{" TRUE": -0.1, " FALSE": -2.4}]')
    args = ap.parse_args(argv)
    server = FakeOpenAIServer(answer=args.answer, latency=args.latency, fault_rate=args.fault_rate,
                              port=args.port, record=False, token_logprobs=args.token_logprobs,
                              prefix=args.prefix).start()
    print(f"PORT {server.port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
