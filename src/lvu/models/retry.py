"""Retries for API backends: exponential backoff with full jitter, honouring the server's
Retry-After when it gives one. Shared by the openai and gemini backends."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def backoff_delay(attempt: int, *, base_delay: float = 1.0, max_delay: float = 60.0,
                  rng: random.Random | None = None) -> float:
    """Full-jitter backoff for retry number `attempt` (0-based): uniform in [0, base * 2**attempt],
    capped at `max_delay`. Jitter spreads out clients that were throttled together."""
    cap = min(max_delay, base_delay * (2 ** attempt))
    return (rng or random).uniform(0.0, cap)


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


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    is_retryable: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None] = lambda e: None,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    on_retry: Callable[[int, BaseException, float], Any] | None = None,
) -> T:
    """Await `call()`; when it raises a retryable error, wait and call again, at most
    `max_retries` more times. The wait is the server's `retry_after(error)` when it names one
    (capped at `max_delay`), else full-jitter exponential backoff. Non-retryable errors and the
    last retryable one propagate unchanged, so the caller turns them into Response.error."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as e:
            if attempt >= max_retries or not is_retryable(e):
                raise
            hinted = retry_after(e)
            delay = min(max_delay, hinted) if hinted is not None else backoff_delay(
                attempt, base_delay=base_delay, max_delay=max_delay)
            if on_retry is not None:
                on_retry(attempt + 1, e, delay)
            await sleep(delay)
            attempt += 1
