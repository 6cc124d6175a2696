"""Shared API-backend helpers: retries with backoff / Retry-After, and the request-hash response cache."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time

import pytest

from lvu.models.response_cache import ResponseCache, request_key, resolve_cache_dir
from lvu.models.retry import backoff_delay, parse_retry_after, with_retries
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
