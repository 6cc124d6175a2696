"""The HTTP side of lvu's OpenAI-compatible client that the SDK leaves open: a reply body read
with a cap (an httpx response hook, for both of the SDK's transports) and the total deadline of
one attempt (a server trickling bytes never trips an idle read timeout)."""

from __future__ import annotations

from typing import Any

MAX_REPLY_BYTES = 16 << 20
"""The largest reply body read (a completion of thousands of tokens with logprobs is ~1 MB): a
server sending more is cut off there, not held whole in memory (its sample fails in one line)."""


class ReplyTooLarge(Exception):
    """A reply body past MAX_REPLY_BYTES (not retried: the same server would send it again)."""


class AttemptTimedOut(Exception):
    """An attempt ran past `timeout` seconds in all (a server trickling bytes never trips an idle
    read timeout); retried like the SDK's timeouts."""


async def cap_reply(response: Any) -> None:
    """httpx response hook (runs before the body is read): refuse a declared length past
    MAX_REPLY_BYTES, else read the body in chunks, stopping at the cap, and keep it as the body the
    SDK then parses (httpx's `aread` returns `_content` when it is set)."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        await response.aclose()
        raise ReplyTooLarge(f"the reply declares {int(declared) >> 20} MB, more than {MAX_REPLY_BYTES >> 20} MB")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_REPLY_BYTES:
            await response.aclose()
            raise ReplyTooLarge(f"the reply was cut at {MAX_REPLY_BYTES >> 20} MB (the server kept sending)")
    response._content = bytes(body)
