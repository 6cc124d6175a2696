"""Retries for API backends: exponential backoff with jitter, honouring the server's
Retry-After when it gives one. The one retry policy of the openai and gemini backends. Also
their pre-run reachability check (`check_reachable`)."""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

PREFLIGHT_TIMEOUT = 10.0
"""Seconds the pre-run reachability check waits (at most: a refused connection fails at once)."""

NO_RETRY_CODES = frozenset({"insufficient_quota"})
"""Error codes that come with a retryable status (429) but will not get better by waiting."""


def backoff_delay(attempt: int, *, base_delay: float = 1.0, max_delay: float = 60.0, min_fraction: float = 0.0,
                  rng: random.Random | None = None) -> float:
    """Jittered backoff for retry number `attempt` (0-based): uniform in
    [min_fraction * cap, cap] with cap = min(max_delay, base * 2**attempt). The default
    `min_fraction=0` is full jitter; 0.5 is "equal jitter" (never less than half the cap).
    Jitter spreads out clients that were throttled together."""
    cap = min(max_delay, base_delay * (2 ** attempt))
    return (rng or random).uniform(min_fraction * cap, cap)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from an HTTP Retry-After header (delta-seconds or an HTTP date), or from a
    duration like Google's RetryInfo '30s' / '1.5s'; None when absent or unreadable."""
    if value is None:
        return None
    value = str(value).strip()
    if not value:
        return None
    try:
        return max(0.0, float(value.removesuffix("s")))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_after_from_headers(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds the server asks us to wait from response headers: `retry-after-ms` (OpenAI and
    others) first, else `Retry-After` (seconds or an HTTP date); None when neither is readable."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except (TypeError, ValueError):
            pass
    return parse_retry_after(headers.get("retry-after"))


def retryable_status(status: int, code: str | None = None, *, also: Collection[int] = ()) -> bool:
    """An HTTP error worth retrying: 408, 429, 5xx (and the statuses in `also`), unless its error
    `code` says waiting cannot help (NO_RETRY_CODES, e.g. OpenAI's 429 insufficient_quota)."""
    return (status in (408, 429) or status in also or status >= 500) and code not in NO_RETRY_CODES


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    is_retryable: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None] = lambda e: None,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    max_wait: float | None = None,
    min_fraction: float = 0.0,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    on_retry: Callable[[int, BaseException, float], Any] | None = None,
) -> T:
    """Await `call()`; when it raises a retryable error, wait and call again, at most
    `max_retries` more times. The wait is the server's `retry_after(error)` when it names one
    (capped at `max_wait`, which defaults to `max_delay`), else jittered exponential backoff
    (`backoff_delay`). `on_retry(n, error, delay)` sees retry number n (1-based) before its wait.
    Non-retryable errors and the last retryable one propagate unchanged, so the caller turns
    them into Response.error."""
    hint_cap = max_delay if max_wait is None else max_wait
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as e:
            if attempt >= max_retries or not is_retryable(e):
                raise
            hinted = retry_after(e)
            delay = min(hint_cap, hinted) if hinted is not None else backoff_delay(
                attempt, base_delay=base_delay, max_delay=max_delay, min_fraction=min_fraction, rng=rng)
            if on_retry is not None:
                on_retry(attempt + 1, e, delay)
            await sleep(delay)
            attempt += 1


def error_chain(e: BaseException) -> list[BaseException]:
    """The error and what caused it, outermost first."""
    chain: list[BaseException] = []
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return chain


def connection_failure_reason(e: BaseException, timeout: float | None = None) -> str:
    """Why a connection failed, in a few words ('connection refused', 'unknown host', ...)."""
    chain = error_chain(e)
    for x in chain:
        if isinstance(x, ConnectionRefusedError):
            return "connection refused"
        if isinstance(x, socket.gaierror):
            return "unknown host"
        if isinstance(x, ConnectionResetError):
            return "connection reset"
    if any(isinstance(x, TimeoutError) or "Timeout" in type(x).__name__ for x in chain):
        return f"no answer within {timeout:g} s" if timeout else "no answer in time"
    root = chain[-1]
    return re.sub(r"\s+", " ", str(root) or type(root).__name__).strip()[:200]


async def check_reachable(base_url: str, path: str, *, who: str, timeout: float = PREFLIGHT_TIMEOUT,
                          headers: dict[str, str] | None = None, client: Any = None,
                          hint: str = "is the server running? check base_url") -> None:
    """One GET of `base_url + path` before a run. Any HTTP answer (even 401 or 404) means a server
    is there; a refused connection, an unknown host or no answer within `timeout` raises a
    one-line LvuError naming `base_url`. `client`: an httpx.AsyncClient to use (and close)."""
    import httpx

    from lvu.errors import LvuError

    try:
        async with client or httpx.AsyncClient() as http:
            await http.get(base_url.rstrip("/") + path, headers=headers or {}, timeout=timeout)
    except (httpx.TransportError, httpx.InvalidURL, OSError) as e:
        raise LvuError(f"{who}: cannot reach {base_url}: {connection_failure_reason(e, timeout)} — {hint}") from None
