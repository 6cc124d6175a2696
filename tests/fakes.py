"""A tiny in-memory benchmark and a slow model, for engine tests that need no video."""

from __future__ import annotations

import asyncio
import os
import re

from lvu.args import as_float
from lvu.benchmarks.base import BadRecord, Benchmark, register_benchmark
from lvu.models.base import Model, register_model
from lvu.scoring.choice import extract_letter
from lvu.types import InputPlan, Prediction, Prompt, Response, Sample, Score, Text, VideoRef


@register_benchmark("fake")
class FakeBenchmark(Benchmark):
    """n text-only questions; the question says which letter is right."""

    defaults = {"n": 10, "bad_records": 0}

    def load(self):
        samples = [
            Sample(id=f"q{i:03d}", benchmark="fake", video=VideoRef(path="none.mp4", duration=60.0),
                   question=f"question {i}: pick {'ABCD'[i % 4]}", options=["a", "b", "c", "d"], answer=i % 4,
                   labels={"parity": "even" if i % 2 == 0 else "odd"})
            for i in range(self.settings["n"])
        ]
        bad = [BadRecord(id=f"bad{i}", error=f"fake.jsonl:{i + 1}: not JSON") for i in range(self.settings["bad_records"])]
        return samples, bad

    def plan(self, sample, video):
        return InputPlan(timestamps=[])

    def build_prompt(self, sample, frames, cues):
        return Prompt(parts=[Text(text=sample.question)], choices=sample.options, question=sample.question)

    def extract(self, sample, response):
        return Prediction(value=extract_letter(response.text, len(sample.options)))

    def score(self, sample, prediction):
        ok = prediction.value == sample.answer
        return Score(value=float(ok), correct=ok)


@register_model("fake-follow")
class FollowModel(Model):
    """Answers the letter the question names, after `delay` seconds (and once the file `gate`
    names exists, when given); fails on ids in `fail`; appends every sample id it is called for to
    `log` (a file) so tests can count calls, and to `started` when the call begins (so a test can
    wait for calls in flight instead of sleeping)."""

    def __init__(self, **args) -> None:
        super().__init__(**args)
        self.delay = as_float(self.name, "delay", args.get("delay", 0), 0)

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        if started := self.args.get("started"):
            with open(started, "a") as f:
                f.write(sample_id + "\n")
        await asyncio.sleep(self.delay)
        while (gate := self.args.get("gate")) and not os.path.exists(gate):
            await asyncio.sleep(0.02)
        if log := self.args.get("log"):
            with open(log, "a") as f:
                f.write(sample_id + "\n")
        if sample_id in self.args.get("fail", []):
            raise RuntimeError("backend exploded")
        if sample_id in self.args.get("error", []):
            return Response(error="HTTP 500 from server")
        letter = re.search(r"pick ([A-D])", prompt.question or "").group(1)
        return Response(text=f"({letter})")


@register_model("fake-follow-neutral")
class NeutralFollowModel(FollowModel):
    """fake-follow whose `delay` and `log` cannot change answers, so they stay out of the run id."""

    run_neutral_args = ("delay", "log", "gate", "started")
