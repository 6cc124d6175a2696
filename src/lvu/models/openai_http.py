"""The HTTP side of lvu's OpenAI-compatible client that the SDK leaves open: a reply body read
with a cap (an httpx response hook, for both of the SDK's transports), the total deadline of
one attempt (a server trickling bytes never trips an idle read timeout), and the pre-run check
that the chat-completions route exists at the base URL (`check_chat_route`)."""

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


async def check_chat_route(base_url: str, *, headers: dict[str, str], timeout: float) -> None:
    """After `GET {base_url}/models` answered 404: is `{base_url}/chat/completions` there at all?
    A POST of an empty JSON object (no model, no messages: nothing is generated or billed) gets
    a validation error (400/422) or 401 from a server that has the route, 404 from one that has
    not. On 404, a one-line LvuError naming the URL, with the base URL that does answer when
    there is one (`…/v1` added, or a pasted `/chat/completions` removed); any other answer, or
    none, lets the run go on (its first calls say the rest)."""
    import httpx

    from lvu.errors import LvuError

    url = base_url + "/chat/completions"
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            if (await http.post(url, json={}, headers=headers)).status_code != 404:
                return
        except (httpx.HTTPError, OSError):
            return  # /models answered a moment ago: not ours to judge here
        for other in _other_bases(base_url):
            try:
                answer = await http.get(other + "/models", headers=headers)
            except (httpx.HTTPError, OSError):
                continue
            if answer.status_code != 404:
                raise LvuError(f"openai: {url} answered 404 Not Found — did you mean base_url={other}? "
                               f"({other}/models answers {answer.status_code})")
    raise LvuError(f"openai: {url} answered 404 Not Found — base_url is the part of the URL before "
                   "/chat/completions, for most servers http://HOST:PORT/v1")


def _other_bases(base_url: str) -> list[str]:
    """Base URLs a user may have meant: a pasted `/chat/completions` cut off, `/v1` added."""
    bases = []
    if base_url.endswith("/chat/completions"):
        bases.append(base_url.removesuffix("/chat/completions"))
    elif not base_url.endswith("/v1"):
        bases.append(base_url + "/v1")
    return bases
