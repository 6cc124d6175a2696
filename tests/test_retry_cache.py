"""Shared API-backend helpers: retries with backoff / Retry-After, and the request-hash response cache."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time

import pytest

from lvu.models.response_cache import ResponseCache, request_key, resolve_cache_dir
from lvu.models.retry import (
    backoff_delay,
    parse_retry_after,
    retry_after_from_headers,
    retryable_status,
    with_retries,
)
from lvu.types import Response


class Flaky(Exception):
    def __init__(self, wait=None):
        self.wait = wait


def run(call, **kw):
    sleeps = []

    async def sleep(s):
        sleeps.append(s)

    async def go():
        return await with_retries(call, is_retryable=lambda e: isinstance(e, Flaky),
                                  retry_after=lambda e: getattr(e, "wait", None), sleep=sleep, **kw)

    return asyncio.run(go()), sleeps


def failing(errors):
    calls = []

    async def call():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return "ok"

    return call, calls


def test_retries_then_succeeds_with_hinted_and_jittered_waits():
    call, calls = failing([Flaky(wait=3.0), Flaky(), Flaky(wait=500.0)])
    result, sleeps = run(call, max_retries=5, base_delay=2.0, max_delay=60.0)
    assert result == "ok" and len(calls) == 4
    assert sleeps[0] == 3.0 and 0 <= sleeps[1] <= 4.0 and sleeps[2] == 60.0  # hints are capped too


def test_non_retryable_and_exhausted_errors_propagate():
    call, calls = failing([ValueError("bad request")])
    with pytest.raises(ValueError):
        run(call, max_retries=5)
    assert len(calls) == 1
    call, calls = failing([Flaky(), Flaky(), Flaky()])
    with pytest.raises(Flaky):
        run(call, max_retries=2)
    assert len(calls) == 3


def test_backoff_grows_and_is_capped():
    rng = random.Random(0)
    caps = [max(backoff_delay(a, base_delay=1.0, max_delay=10.0, rng=rng) for _ in range(200)) for a in range(6)]
    assert caps[0] <= 1.0 and 1.0 < caps[2] <= 4.0 and all(c <= 10.0 for c in caps) and caps[5] > 8.0


def test_parse_retry_after():
    assert parse_retry_after("5") == 5.0 and parse_retry_after("30s") == 30.0 and parse_retry_after("1.5s") == 1.5
    date = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 15 <= parse_retry_after(date) <= 21
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None and parse_retry_after("-3") == 0.0


def test_response_cache(tmp_path):
    cache = ResponseCache(tmp_path)
    k1 = request_key({"model": "m", "image": b"\x00\x01", "n": 1})
    assert k1 == request_key({"n": 1, "image": b"\x00\x01", "model": "m"})  # key order does not matter
    assert k1 != request_key({"model": "m", "image": b"\x00\x02", "n": 1})  # one byte does
    assert cache.get(k1) is None
    cache.put(k1, Response(text="A", usage={"total_tokens": 3}))
    assert ResponseCache(tmp_path).get(k1).text == "A"
    k2 = request_key({"model": "other"})
    cache.put(k2, Response(error="HTTP 500"))
    assert cache.get(k2) is None  # errors are never cached
    (tmp_path / k1[:2] / f"{k1}.json").write_text("{broken")
    assert cache.get(k1) is None  # a broken entry is a miss
    assert ResponseCache(None).get(k1) is None
    assert resolve_cache_dir(False, "x") is None and resolve_cache_dir(str(tmp_path), "x") == tmp_path


def test_equal_jitter_and_separate_cap_for_server_hints():
    rng = random.Random(1)
    waits = [backoff_delay(3, base_delay=1.0, max_delay=60.0, min_fraction=0.5, rng=rng) for _ in range(200)]
    assert all(4.0 <= w <= 8.0 for w in waits)  # never less than half the cap
    call, calls = failing([Flaky(wait=500.0), Flaky(wait=500.0), Flaky()])
    retries = []
    result, sleeps = run(call, max_retries=5, base_delay=1.0, max_delay=10.0, max_wait=300.0,
                         on_retry=lambda n, e, d: retries.append((n, d)))
    assert result == "ok" and len(calls) == 4 and sleeps[:2] == [300.0, 300.0] and sleeps[2] <= 4.0  # max_wait caps hints
    assert [n for n, _ in retries] == [1, 2, 3] and [d for _, d in retries] == sleeps


def test_retry_after_from_headers_and_retryable_status():
    assert retry_after_from_headers({"retry-after": "2"}) == 2.0
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_from_headers({"retry-after-ms": "", "retry-after": "9"}) == 9.0
    assert retry_after_from_headers({"retry-after-ms": "x", "retry-after": "soon"}) is None
    assert retry_after_from_headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_from_headers(None) is None and retry_after_from_headers({}) is None
    assert all(retryable_status(s) for s in (408, 429, 500, 503)) and not retryable_status(409)
    assert retryable_status(409, also=(409,)) and not any(retryable_status(s) for s in (400, 401, 404))
    assert not retryable_status(429, "insufficient_quota") and retryable_status(429, "rate_limit_exceeded")
