"""Retries for API backends: exponential backoff with jitter, honouring the server's
Retry-After when it gives one. The one retry policy of the openai and gemini backends. Also
their pre-run reachability check (`check_reachable`), and `RetryWatch`: which calls are waiting
to be retried right now, and why (a run's progress line shows it; it also tells how long the
endpoint has refused every attempt)."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import email.utils
import math
import random
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
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


@dataclass
class _Retrying:
    reason: str
    """Why its last attempt failed, in a few words (`retry_reason`)."""
    next_try: float | None
    """When its next attempt starts (the watch's clock); None while that attempt is under way."""


class RetryWatch:
    """The calls that failed and are being retried right now (from their first retryable failure
    until they succeed or give up), and since when every attempt has failed to reach the endpoint.

    `with_retries` reports to the watch in `RETRY_WATCH`, a context variable: a run sets it around
    its pipeline, so the tasks it starts report to it and no other run's do. The progress display
    reads `summary()` from its own thread, hence the lock. `clock`: tests pass a settable one."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._calls: dict[int, _Retrying] = {}
        self._lock = threading.Lock()
        self._ids = iter(range(1 << 62))
        self.unreachable_since: float | None = None
        """When attempts began to fail at the connection level, every one since; None after any answer."""
        self.unreachable_attempts = 0
        """Attempts that failed at the connection level since then (0 after any answer)."""
        self.last_unreachable = ""
        """The last connection-level failure, in a few words."""

    def new_call(self) -> int:
        with self._lock:
            return next(self._ids)

    def attempt_ended(self, reached: bool, reason: str = "") -> None:
        """An attempt ended: `reached` when the endpoint answered (anything, an HTTP error too)."""
        with self._lock:
            if reached:
                self.unreachable_since, self.unreachable_attempts = None, 0
            else:
                self.last_unreachable = reason
                self.unreachable_attempts += 1
                if self.unreachable_since is None:
                    self.unreachable_since = self.clock()

    def waiting(self, call: int, reason: str, delay: float) -> None:
        """Call `call` failed (`reason`) and tries again in `delay` seconds."""
        with self._lock:
            self._calls[call] = _Retrying(reason, self.clock() + delay)

    def trying(self, call: int) -> None:
        with self._lock:
            if call in self._calls:
                self._calls[call].next_try = None

    def done(self, call: int) -> None:
        """Call `call` succeeded or gave up: no longer retrying."""
        with self._lock:
            self._calls.pop(call, None)

    def unreachable_for(self) -> float:
        """Seconds since every attempt began failing to reach the endpoint (0: it answers)."""
        with self._lock:
            since = self.unreachable_since
        return 0.0 if since is None else max(0.0, self.clock() - since)

    def summary(self) -> str | None:
        """'retrying 3 calls (connection refused, next try in 4 s)', or None when none is."""
        with self._lock:
            calls = list(self._calls.values())
        if not calls:
            return None
        now = self.clock()
        reasons = collections.Counter(c.reason for c in calls)
        reason = reasons.most_common(1)[0][0]
        waits = [c.next_try - now for c in calls if c.next_try is not None]
        when = f"next try in {max(0, math.ceil(min(waits)))} s" if waits else "trying again now"
        return f"retrying {len(calls)} call{'s' if len(calls) != 1 else ''} ({reason}, {when})"


RETRY_WATCH: contextvars.ContextVar[RetryWatch | None] = contextvars.ContextVar("lvu_retry_watch", default=None)
"""The watch `with_retries` reports to (set by a run around its pipeline; None: nobody watches)."""


def retry_reason(e: BaseException) -> str:
    """Why an attempt failed, in a few words: 'HTTP 503', 'connection refused', 'timed out'."""
    for status in (getattr(e, "status_code", None), getattr(e, "code", None)):
        if isinstance(status, int) and not isinstance(status, bool):
            return f"HTTP {status}"
    if any("TimedOut" in type(x).__name__ for x in error_chain(e)):
        return "timed out"
    reason = connection_failure_reason(e)
    return "timed out" if reason.startswith("no answer") else reason[:60] or type(e).__name__


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
    is_unreachable: Callable[[BaseException], bool] | None = None,
) -> T:
    """Await `call()`; when it raises a retryable error, wait and call again, at most
    `max_retries` more times. The wait is the server's `retry_after(error)` when it names one
    (capped at `max_wait`, which defaults to `max_delay`), else jittered exponential backoff
    (`backoff_delay`). `on_retry(n, error, delay)` sees retry number n (1-based) before its wait.
    Non-retryable errors and the last retryable one propagate unchanged, so the caller turns
    them into Response.error. The run's `RETRY_WATCH` (if any) sees each wait and, through
    `is_unreachable` (errors where the endpoint never answered), whether attempts reach it."""
    hint_cap = max_delay if max_wait is None else max_wait
    watch = RETRY_WATCH.get()
    me = watch.new_call() if watch is not None else 0
    attempt = 0
    try:
        while True:
            try:
                result = await call()
            except Exception as e:
                if watch is not None:
                    lost = is_unreachable is not None and is_unreachable(e)
                    watch.attempt_ended(not lost, retry_reason(e) if lost else "")
                if attempt >= max_retries or not is_retryable(e):
                    raise
                hinted = retry_after(e)
                delay = min(hint_cap, hinted) if hinted is not None else backoff_delay(
                    attempt, base_delay=base_delay, max_delay=max_delay, min_fraction=min_fraction, rng=rng)
                if on_retry is not None:
                    on_retry(attempt + 1, e, delay)
                if watch is not None:
                    watch.waiting(me, retry_reason(e), delay)
                await sleep(delay)
                if watch is not None:
                    watch.trying(me)
                attempt += 1
            else:
                if watch is not None:
                    watch.attempt_ended(True)
                return result
    finally:
        if watch is not None:
            watch.done(me)


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
                          hint: str = "is the server running? check base_url") -> int:
    """One GET of `base_url + path` before a run. Any HTTP answer (even 401 or 404) means a server
    is there, and its status is returned (the caller may look closer: the openai backend checks a
    404 further); a refused connection, an unknown host or no answer within `timeout` raises a
    one-line LvuError naming `base_url`. `client`: an httpx.AsyncClient to use (and close)."""
    import httpx

    from lvu.errors import LvuError

    try:
        async with client or httpx.AsyncClient() as http:
            answer = await http.get(base_url.rstrip("/") + path, headers=headers or {}, timeout=timeout)
    except (httpx.TransportError, httpx.InvalidURL, OSError) as e:
        raise LvuError(f"{who}: cannot reach {base_url}: {connection_failure_reason(e, timeout)} — {hint}") from None
    return answer.status_code
