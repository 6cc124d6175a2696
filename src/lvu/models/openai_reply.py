"""Reading an OpenAI-compatible chat-completions reply (the `openai` backend's half that needs no
SDK): the JSON the server sent becomes a `Response`, or a one-line `Response.error`. The backend
reads the JSON as is rather than through the SDK's ChatCompletion model, whose construction costs
about 0.2 ms of event-loop time per request (benchmarks/api_throughput.py)."""

from __future__ import annotations

import re
from typing import Any

from lvu.types import Response


NO_CHOICES = "openai: empty response (no choices)"


def one_line(text: str, limit: int = 400) -> str:
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_completion(completion: Any, *, logprobs: bool = False) -> Response:
    """A chat.completion reply as JSON (anything but an object reads as no choices); `logprobs`:
    keep each generated token's top alternatives, {token: logprob} with the generated one included."""
    data = completion if isinstance(completion, dict) else {}
    usage_in = data.get("usage") or {}
    usage = {k: int(v) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if isinstance(v := usage_in.get(k), int)}
    choices = data.get("choices") or []
    if not choices:
        return Response(usage=usage, error=NO_CHOICES)
    choice = choices[0]
    message = choice.get("message") or {}
    if message.get("refusal"):
        return Response(usage=usage, error=f"openai: the model refused: {one_line(message['refusal'], 200)}")
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        return Response(text=message.get("content") or "", usage=usage,
                        error="openai: blocked by the provider's content filter")
    text = message.get("content") or ""
    if not text.strip():
        return Response(usage=usage, error=f"openai: empty response (finish_reason={finish})"
                        + (" — raise max_tokens" if finish == "length" else ""))
    steps = None
    if logprobs and (choice.get("logprobs") or {}).get("content"):
        steps = []
        for tok in choice["logprobs"]["content"]:
            alts = {t["token"]: float(t["logprob"]) for t in (tok.get("top_logprobs") or [])}
            alts.setdefault(tok["token"], float(tok["logprob"]))
            steps.append(alts)
    return Response(text=text, logprobs=steps, usage=usage)
