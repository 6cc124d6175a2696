"""Probing baselines (blind, blind-asr, single-frame, socratic): exactly which parts reach the wrapped
model, in which order, with which settings — checked with a recording backend, with real OCR
captions, and through `lvu run` on a tiny JSONL benchmark."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.base import MODELS, Model, register_model
from lvu.models.probes import clock, split_role_args
from lvu.runs.store import Store
from lvu.types import (
    Frame,
    Prompt,
    Response,
    Sample,
    Subtitle,
    SubtitleRef,
    Text,
    VideoRef,
)


@register_model("test-recorder")
class Recorder(Model):
    """Records every prompt it is asked; answers `answer` (default 'A'), or fails on request."""

    def __init__(self, **args):
        super().__init__(**args)
        self.prompts: list[Prompt] = []
        self.closed = False

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        self.prompts.append(prompt)
        await asyncio.sleep(float(self.args.get("delay", 0)))
        if self.args.get("fail"):
            return Response(error="recorder failed")
        if self.args.get("echo_frame"):  # a captioner: describes the frame by its first pixel
            image = prompt.frames[0].image
            return Response(text=f"frame with red {int(image[0, 0, 0])}\n")
        return Response(text=str(self.args.get("answer", "A")))

    async def close(self) -> None:
        self.closed = True


def image(value: int) -> np.ndarray:
    return np.full((8, 8, 3), value, np.uint8)


def prompt() -> Prompt:
    """Text, frames and cues interleaved as a benchmark builds them."""
    return Prompt(
        parts=[Text(text="Watch the video."), Frame(image=image(10), timestamp=1.0),
               Subtitle(text="hello", start=1.5, end=2.0), Frame(image=image(20), timestamp=3.0),
               Frame(image=image(30), timestamp=65.0), Subtitle(text="bye", start=66.0, end=67.0),
               Frame(image=image(40), timestamp=3725.0), Text(text="Q? (A) x (B) y")],
        system="sys", assistant_prefix="Best option: (", choices=["x", "y"], question="Q?", max_tokens=7,
        temperature=0.3,
    )


def seen(p: Prompt) -> list:
    """A prompt's parts as comparable tuples (frames by their pixel value)."""
    out = []
    for part in p.parts:
        if isinstance(part, Frame):
            out.append(("F", int(part.image[0, 0, 0]), part.timestamp))
        elif isinstance(part, Subtitle):
            out.append(("S", part.text, part.start))
        else:
            out.append(("T", part.text))
    return out


def ask(model: Model, p: Prompt, sample_id: str = "s1") -> Response:
    return asyncio.run(model.generate(p, sample_id=sample_id))


def settings_of(p: Prompt) -> tuple:
    return p.system, p.assistant_prefix, p.choices, p.question, p.max_tokens, p.temperature


def test_blind_sends_only_text_in_order():
    model = MODELS.get("blind")(base="test-recorder", **{"base.answer": "B"})
    response = ask(model, prompt())
    assert response.text == "B"
    (sent,) = model.base.prompts
    assert seen(sent) == [("T", "Watch the video."), ("T", "Q? (A) x (B) y")]
    assert settings_of(sent) == settings_of(prompt())


def test_blind_asr_keeps_cues_in_place():
    model = MODELS.get("blind-asr")(base="test-recorder")
    ask(model, prompt())
    assert seen(model.base.prompts[0]) == [("T", "Watch the video."), ("S", "hello", 1.5), ("S", "bye", 66.0),
                                           ("T", "Q? (A) x (B) y")]


@pytest.mark.parametrize("which,kept", [("center", 20), ("first", 10)])
def test_single_frame_keeps_one_frame_where_it_was(which, kept):
    model = MODELS.get("single-frame")(base="test-recorder", which=which)
    ask(model, prompt())
    sent = seen(model.base.prompts[0])
    assert [s for s in sent if s[0] == "F"] == [("F", kept, {10: 1.0, 20: 3.0}[kept])]
    assert [s for s in sent if s[0] != "F"] == [s for s in seen(prompt()) if s[0] != "F"]
    assert sent.index(("S", "hello", 1.5)) == (2 if which == "first" else 1)  # order preserved


def test_single_frame_centre_of_an_odd_count_and_no_frames():
    model = MODELS.get("single-frame")(base="test-recorder")
    odd = Prompt(parts=[Frame(image=image(v), timestamp=v) for v in (1, 2, 3)] + [Text(text="q")])
    ask(model, odd)
    assert seen(model.base.prompts[0]) == [("F", 2, 2.0), ("T", "q")]
    response = ask(model, Prompt(parts=[Text(text="q")]))
    assert response.error and "no frames" in response.error
    with pytest.raises(LvuError, match="which='middle'"):
        MODELS.get("single-frame")(base="test-recorder", which="middle")


def test_role_args_from_json_and_dotted_keys_and_identity():
    name, args = split_role_args({"base": "openai", "base_args": '{"model": "a", "seed": 1}', "base.model": "b"}, "base")
    assert (name, args) == ("openai", {"model": "b", "seed": 1})
    model = MODELS.get("blind")(base="test-recorder", base_args={"answer": "C"})
    assert ask(model, prompt()).text == "C"
    assert model.identity == {"backend": "blind", "base": {"backend": "test-recorder", "answer": "C"}}
    single = MODELS.get("single-frame")(base="random", which="first", **{"base.seed": 3})
    assert single.identity == {"backend": "single-frame", "which": "first", "base": {"backend": "random", "seed": 3}}
    with pytest.raises(LvuError, match="-a base=NAME"):
        MODELS.get("blind")()
    with pytest.raises(LvuError, match="no argument.*wich"):
        MODELS.get("single-frame")(base="random", wich="first")
    with pytest.raises(LvuError, match="unknown model 'nope'"):
        MODELS.get("blind")(base="nope")
    with pytest.raises(LvuError, match="base_args must be a JSON object"):
        MODELS.get("blind")(base="random", base_args="[1, 2]")


def test_wrapped_errors_and_close_pass_through():
    model = MODELS.get("blind")(base="test-recorder", **{"base.fail": True})
    assert ask(model, prompt()).error == "recorder failed"
    asyncio.run(model.close())
    assert model.base.closed


def test_clock():
    assert [clock(t) for t in (0, 1.4, 65.0, 599.6, 3725.0)] == ["00:00", "00:01", "01:05", "10:00", "1:02:05"]


def test_socratic_replaces_frames_with_timed_captions(tmp_path):
    model = MODELS.get("socratic")(captioner="test-recorder", answerer="test-recorder", cache=str(tmp_path),
                                   **{"captioner.echo_frame": True, "answerer.answer": "B"})
    assert ask(model, prompt()).text == "B"
    (sent,) = model.answerer.prompts
    assert seen(sent) == [
        ("T", "Watch the video."), ("T", "[00:01] frame with red 10"), ("S", "hello", 1.5),
        ("T", "[00:03] frame with red 20"), ("T", "[01:05] frame with red 30"), ("S", "bye", 66.0),
        ("T", "[1:02:05] frame with red 40"), ("T", "Q? (A) x (B) y")]
    assert settings_of(sent) == settings_of(prompt())
    captions = model.captioner.prompts
    assert len(captions) == 4 and all(len(p.frames) == 1 and p.parts[1].text == model.caption_prompt for p in captions)

    # Same pixels at other times: captions come from the cache, timestamps are the new ones.
    again = Prompt(parts=[Frame(image=image(30), timestamp=5.0), Frame(image=image(30), timestamp=9.0),
                          Frame(image=image(50), timestamp=12.0), Text(text="q")])
    ask(model, again)
    assert len(model.captioner.prompts) == 5  # only the new frame was captioned, once
    assert seen(model.answerer.prompts[-1])[:3] == [("T", "[00:05] frame with red 30"), ("T", "[00:09] frame with red 30"),
                                                    ("T", "[00:12] frame with red 50")]
    # A new process (fresh model) reads the captions from disk.
    fresh = MODELS.get("socratic")(captioner="test-recorder", answerer="test-recorder", cache=str(tmp_path),
                                   **{"captioner.echo_frame": True})
    ask(fresh, prompt())
    assert fresh.captioner.prompts == []
    assert fresh.identity["captioner"] == {"backend": "test-recorder", "echo_frame": True}
    assert fresh.identity["answerer"] == {"backend": "test-recorder"}


def test_socratic_captions_identical_frames_in_flight_once():
    model = MODELS.get("socratic")(captioner="test-recorder", answerer="test-recorder", cache=False,
                                   caption_concurrency=2, **{"captioner.echo_frame": True, "captioner.delay": 0.05})
    frames = [Frame(image=image(v), timestamp=float(t)) for t, v in enumerate([77, 78, 77, 79, 77])]

    async def two_samples():
        p = Prompt(parts=[*frames, Text(text="q")])
        return await asyncio.gather(model.generate(p, sample_id="a"), model.generate(p, sample_id="b"))

    assert [r.error for r in asyncio.run(two_samples())] == [None, None]
    assert sorted(int(p.frames[0].image[0, 0, 0]) for p in model.captioner.prompts) == [77, 78, 79]
    assert [p.text for p in model.answerer.prompts[0].parts[:3]] == [
        "[00:00] frame with red 77", "[00:01] frame with red 78", "[00:02] frame with red 77"]


def test_socratic_captioner_failure_fails_the_sample(tmp_path):
    model = MODELS.get("socratic")(captioner="test-recorder", answerer="test-recorder", cache=False,
                                   captioner_args={"fail": True})
    response = ask(model, prompt())
    assert response.error == "captioner error: recorder failed"
    assert model.answerer.prompts == []


@pytest.mark.slow
def test_socratic_with_ocr_captions_reads_the_frame(tmp_path):
    pytest.importorskip("rapidocr")
    from test_ocr_match import word_frame

    model = MODELS.get("socratic")(captioner="ocr", answerer="test-recorder", **{"captioner.cache": str(tmp_path)})
    p = Prompt(parts=[Frame(image=word_frame("LANTERN"), timestamp=5.0), Frame(image=word_frame(None, 1), timestamp=70.0),
                      Text(text="Which word?")], choices=["LANTERN", "MAGNET"])
    ask(model, p)
    assert seen(model.answerer.prompts[0]) == [("T", "[00:05] on-screen text: LANTERN"),
                                               ("T", "[01:10] no on-screen text"), ("T", "Which word?")]
    assert model.identity["captioner"]["backend"] == "ocr-match"


# ---- real runs through the CLI --------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("probes")
    make_video(root / "v.mp4", seconds=4, fps=10, gop=10)
    (root / "v.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nhello there\n")
    lines = [Sample(id=f"s{i}", benchmark="jsonl", video=VideoRef(path="v.mp4"), question=f"Question {i}?",
                    options=["red", "green", "blue", "yellow"], answer=i % 4,
                    subtitles=SubtitleRef(path="v.srt")).model_dump_json() for i in range(3)]
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    return root / "data.jsonl"


def lvu(*args: str, env_extra: dict) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "lvu.cli", *args], check=False, capture_output=True,
                          text=True, env={**os.environ, **env_extra})


@pytest.mark.slow
@pytest.mark.parametrize("model,args", [
    ("blind", ["-a", "base=random", "-a", "base.seed=2"]),
    ("blind-asr", ["-a", "base=random", "-a", 'base_args={"seed": 2}']),
    ("single-frame", ["-a", "base=ocr-match", "-a", "which=center"]),
])
def test_probe_runs_end_to_end(tiny_data, tmp_path, model, args):
    if model == "single-frame":
        pytest.importorskip("rapidocr")
    res = tmp_path / "res"
    out = lvu("run", "-b", "jsonl", "--data", str(tiny_data), "-m", model, *args, "--frames", "4",
              "--results-dir", str(res), env_extra={"LVU_CACHE_DIR": str(tmp_path / "c")})
    assert out.returncode == 0, out.stderr
    assert "3 samples" in out.stdout and "0 failed" in out.stdout
    store = Store(res)
    try:
        (run,) = store.runs()
        results = store.results(run.run_id)
    finally:
        store.close()
    assert len(results) == 3 and all(r.error is None and r.prediction in range(4) for r in results)
    # the stored prompt is the benchmark's (before the probe rewrote it): 4 frames and the cue
    assert all(r.prompt["n_frames"] == 4 and r.prompt["n_subtitles"] == 1 for r in results)
    assert run.env["model"]["backend"] == model
    assert run.env["model"]["base"]["backend"] == args[1].split("=")[1]
    if model != "single-frame":
        assert run.env["model"]["base"]["seed"] == 2
