"""A tiny three-stage build pipeline and a scripted text model, for the mechanism's tests.

    toy.keep   (none, per video)   drops videos whose name starts with "drop"
    toy.words  (llm, 3 per video)  one word per chunk: "WORD: <w>"
    toy.join   (llm, per video)    joins the words: "JOINED: <text>"

`toy-llm` answers from the prompt; its `log` file gets one line per call; `bad` (substrings):
malformed replies always, `bad_once`: malformed unless the prompt is the retry, `error`: a backend
error, `delay`: seconds per call, `down`: every call unreachable. Those arguments cannot change a good answer, so they stay out of
the model's identity (a fixed model resumes the same build). Also runnable as a script:
`python build_toy.py VIDEOS OUT LOG DELAY` runs the toy build (the kill -9 test).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from pathlib import Path

from lvu.construct.pipeline import Pipeline, Stage, StageFailure, Unit, register_pipeline, register_stage
from lvu.models.base import Model, register_model
from lvu.types import Prompt, Response

RETRY_MARK = "Your previous reply could not be read"


def parse_word(reply: str) -> str:
    if not reply.startswith("WORD: "):
        raise ValueError(f"expected 'WORD: <word>', got {reply[:30]!r}")
    return reply[len("WORD: "):].strip()


def parse_joined(reply: str) -> str:
    if not reply.startswith("JOINED: "):
        raise ValueError(f"expected 'JOINED: <text>', got {reply[:30]!r}")
    return reply[len("JOINED: "):].strip()


@register_model("toy-llm")
class ToyLLM(Model):
    """The build mechanism tests' scripted text model (answers from the prompt; see the module)."""

    run_neutral_args = ("log", "bad", "bad_once", "error", "delay", "down")

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        text = prompt.text
        if delay := float(self.args.get("delay", 0)):
            await asyncio.sleep(delay)
        if log := self.args.get("log"):
            with open(log, "a") as f:
                f.write(sample_id + "\n")
        if self.args.get("down"):
            return Response(error="openai: APIConnectionError: Connection refused", unreachable=True)
        if any(s in text for s in self.args.get("error", [])):
            return Response(error="HTTP 500 from the toy server")
        first = text.splitlines()[0]
        if any(s in first for s in self.args.get("bad", [])) or (
                any(s in first for s in self.args.get("bad_once", [])) and RETRY_MARK not in text):
            return Response(text="I would rather not say.", usage={"prompt_tokens": 5, "completion_tokens": 5})
        tokens = {"prompt_tokens": len(text.split()), "completion_tokens": 2}
        if first.startswith("Join"):
            return Response(text="JOINED: " + first.split(":", 1)[1].strip(), usage=tokens)
        return Response(text="WORD: w" + hashlib.sha256(first.encode()).hexdigest()[:6], usage=tokens)


@register_stage("toy.keep")
class Keep(Stage):
    output = "kept"

    async def run(self, unit: Unit, ctx) -> dict:
        return {"keep": not unit.video.startswith("drop"), "size": Path(ctx.video.path).stat().st_size}


@register_stage("toy.words")
class Words(Stage):
    output = "words"
    inputs = ("kept",)
    role = "llm"
    unit = "chunk"
    prompt = "Say one word about chunk {chunk} of {video} ({size} bytes)."

    def plan(self, video, inputs):
        if not inputs["kept"]["video"]["keep"]:
            return None
        return [Unit(video.id, f"chunk{i}", {"chunk": i, "size": inputs["kept"]["video"]["size"]}) for i in range(3)]

    async def run(self, unit: Unit, ctx) -> str:
        text = self.prompt.format(chunk=unit.payload["chunk"], video=unit.video, size=unit.payload["size"])
        return await ctx.ask(text, parse_word)

    def collect(self, video, results):
        return [results[f"chunk{i}"] for i in range(3)]


@register_stage("toy.join")
class Join(Stage):
    output = "join"
    inputs = ("words",)
    role = "llm"
    prompt = "Join: {words}"

    def plan(self, video, inputs):
        return [Unit(video.id, "video", {"words": inputs["words"]})]

    async def run(self, unit: Unit, ctx) -> str:
        if not unit.payload["words"]:
            raise StageFailure("no words")
        return await ctx.ask(self.prompt.format(words=" ".join(unit.payload["words"])), parse_joined)

    def collect(self, video, results):
        return results["video"]


@register_pipeline("toy")
class Toy(Pipeline):
    def stages(self) -> list[Stage]:
        return [Keep(self.options), Words(self.options), Join(self.options)]

    def export(self, state, videos, out):
        joined = state.outputs.get("join", {})
        (out / "joined.txt").write_text("".join(f"{v.id}\t{joined[v.id]}\n" for v in videos if v.id in joined))
        return {"joined": len(joined)}


if __name__ == "__main__":  # the kill -9 test's child: run the toy build, slowly
    from lvu.construct.runner import find_videos, run_build

    videos_dir, out, log, delay = sys.argv[1:5]
    videos = find_videos(videos_dir)
    pipeline = Toy()
    asyncio.run(run_build(pipeline, videos, out, {"llm": ("toy-llm", {"log": log, "delay": float(delay)})},
                          concurrency=2, show_progress=False))
