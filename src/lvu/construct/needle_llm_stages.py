"""The stages of `lvu build needle --questions llm` on the `needle` pipeline (lvu.construct.needle_pipeline;
docs/build.md, "Needles and the time ladder"), before `needle.splice`:

- `needle.caption` (one unit per needle, no model): the caption its questions are written from —
  the given one (lvu.construct.needle_llm.given_caption), else with `--captioner ocr` each 1 fps
  frame's on-screen text (lvu.construct.signals' OCR); `needle.caption-vlm` (`--captioner vlm`) the
  same with Neptune's frame caption prompt (App. C.2.1) per 1 fps frame through the vlm model;
- `needle.question` (one unit per needle, the llm model): MLVU Figure 7's prompt on the caption,
  the reply parsed by needle_llm.parse_nqa (a malformed one asked once more with the reason).

A needle's units belong to the first planned video that shows it (`item.data["nqa"]["owner"]`, set
while planning), so a needle in several videos is captioned and asked once; their keys hold the
caption (not the video's content key), and the splice's keys hold no question: asking again never
re-encodes a video, and a changed caption asks only its needle again. `questions_by_needle` and
`llm_samples` turn the stage outputs into samples for the export (a question a sample).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from lvu.construct import neptune_parse
from lvu.construct.needle_llm import NQA_PROMPT, arrange, format_nqa_prompt, parse_nqa
from lvu.construct.neptune_prompts import FRAME_CAPTION_PROMPT, format_frame_caption_prompt
from lvu.construct.pipeline import Item, Stage, StageFailure, Unit, register_stage
from lvu.errors import LvuError
from lvu.types import Frame, Sample

CAPTION_STAGE, QUESTION_STAGE = "needle.caption", "needle.question"
CAPTION_FPS = 1.0
"""Frames per second captioned (Neptune's frame captions: 1 fps)."""
CAPTIONERS = ("none", "ocr", "vlm")


class QuestionsIncomplete(LvuError):
    """Some needles have no questions yet (their unit failed): the benchmark is not written; `lines`
    says which and why, one line each."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(f"{len(lines)} unit(s) failed — {lines[0] if lines else ''}")
        self.lines = lines


class _PerNeedle(Stage):
    """One unit per needle, in the video that owns it; a malformed reply is retried as Neptune's are."""

    unit = "needle"
    parse_errors = (neptune_parse.ReplyParseError,)

    def retry_prompt(self, prompt: str, reply: str, error: BaseException) -> str:
        return neptune_parse.retry_prompt(prompt, reply, error if isinstance(error, neptune_parse.ReplyParseError)
                                          else str(error))

    @staticmethod
    def mark(video: Item) -> dict[str, Any] | None:
        found = video.data.get("nqa")
        return found if isinstance(found, dict) and found.get("owner") else None

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        mark = self.mark(video)
        return {**results[mark["name"]], "needle": mark["needle"]} if mark else {}


@register_stage(CAPTION_STAGE)
class NeedleCaption(_PerNeedle):
    """The caption each needle's questions are written from: given, else its on-screen text (ocr)."""

    output = "captions"
    max_concurrency: int | None = 1
    """OCR is CPU-bound (given captions take no time)."""

    def settings(self) -> Any:
        return {"captioner": self.options.get("captioner") or "none", "fps": CAPTION_FPS}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        mark = self.mark(video)
        if mark is None:
            return []
        if mark["caption"] is not None:
            return [Unit(video.id, mark["name"], {"caption": mark["caption"]})]
        return [Unit(video.id, mark["name"], {"needle": mark["needle"]})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        mark = ctx.video.data["nqa"]
        if mark["caption"] is not None:
            return {"caption": mark["caption"], "from": mark["caption_from"]}
        if (self.options.get("captioner") or "none") == "none":
            raise StageFailure(f"needle {mark['file']} has no caption — write {mark['caption_from']}, or pass "
                               "--captioner ocr or --vlm MODEL")
        pictures = await asyncio.to_thread(needle_pictures, ctx.video.data["needles"][0])
        return {"caption": await self.describe(pictures, ctx, mark), "from": self.made_by()}

    def made_by(self) -> str:
        return f"--captioner ocr (on-screen text at {CAPTION_FPS:g} fps)"

    async def describe(self, pictures: list[tuple[float, Any]], ctx: Any, mark: dict[str, Any]) -> str:
        from lvu.construct.neptune_signal_stages import ocr_caption

        texts = await asyncio.to_thread(ocr_texts, [image for _, image in pictures])
        if not any(texts):
            raise StageFailure(f"needle {mark['file']}: no on-screen text for --captioner ocr to caption it with — "
                               f"write {mark['caption_from']} or caption it with --vlm MODEL, then run the same "
                               "command with --replace (no video is made again)")
        return joined([ocr_caption(t) for t in texts if t])


@register_stage("needle.caption-vlm")
class NeedleCaptionVlm(NeedleCaption):
    """--captioner vlm: Neptune's frame caption prompt (App. C.2.1) on each 1 fps frame of a needle
    without a caption, through the vlm model; its caption is the frames' captions in time order."""

    role = "vlm"
    max_concurrency = None
    max_tokens = 512

    prompt = FRAME_CAPTION_PROMPT

    def made_by(self) -> str:
        return f"--captioner vlm (Neptune's frame caption prompt at {CAPTION_FPS:g} fps)"

    async def describe(self, pictures: list[tuple[float, Any]], ctx: Any, mark: dict[str, Any]) -> str:
        captions = await asyncio.gather(*(ctx.ask(format_frame_caption_prompt(), neptune_parse.parse_frame_caption,
                                                  frames=[Frame(image=image, timestamp=t)]) for t, image in pictures))
        return joined(captions)


@register_stage(QUESTION_STAGE)
class NeedleQuestion(_PerNeedle):
    """MLVU Figure 7's prompt on a needle's caption: 1-3 multiple-choice questions (needle_llm.parse_nqa)."""

    output = "nqa_questions"
    inputs = ("captions",)
    role = "llm"
    prompt = NQA_PROMPT

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        mark, caption = self.mark(video), inputs["captions"]
        if mark is None or not caption:
            return []
        return [Unit(video.id, mark["name"], {"caption": caption["caption"]})]

    async def run(self, unit: Unit, ctx: Any) -> list[dict[str, Any]]:
        return await ctx.ask(format_nqa_prompt(unit.payload["caption"]), parse_nqa)

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        mark = self.mark(video)
        return {"needle": mark["needle"], "questions": results[mark["name"]]} if mark else {}


def question_stages(options: dict[str, Any]) -> list[Stage]:
    """The stages `--questions llm` adds before the splice."""
    caption = NeedleCaptionVlm if options.get("captioner") == "vlm" else NeedleCaption
    return [caption(options), NeedleQuestion(options)]


# ---- pictures and captions -------------------------------------------------------------------------


def needle_pictures(needle: dict[str, Any]) -> list[tuple[float, Any]]:
    """(seconds into the needle, RGB frame) at CAPTION_FPS (an image: itself), long side at most
    Neptune's CAPTION_LONG_SIDE."""
    import numpy as np

    from lvu.construct.signals import CAPTION_LONG_SIDE
    from lvu.media.av_io import Resize

    if needle["kind"] == "image":
        from PIL import Image

        with Image.open(needle["source"]) as opened:
            img = opened.convert("RGB")
            img.thumbnail((CAPTION_LONG_SIDE, CAPTION_LONG_SIDE))
            return [(0.0, np.asarray(img))]
    from lvu.media.video import VideoReader

    start = float(needle.get("offset") or 0.0)
    with VideoReader(needle["source"]) as reader:
        end = min(reader.duration, start + needle["seconds"]) if needle.get("seconds") else reader.duration
        times = [start + k / CAPTION_FPS for k in range(max(1, int((end - start) * CAPTION_FPS + 0.999)))]
        batch = reader.get_frames_played_at(times, resize=Resize(long=CAPTION_LONG_SIDE))
        return [(round(t - start, 3), image) for t, image in zip(times, batch.data)]


def ocr_texts(images: list[Any]) -> list[str]:
    """Each picture's on-screen text (RapidOCR through ocr-match's reader, as `--captioner ocr` of Neptune)."""
    from lvu.models.ocr_match import MIN_SCORE, OcrReader
    from lvu.paths import cache_dir

    reader = OcrReader(cache_dir("ocr"), min(4, os.cpu_count() or 1))
    out = []
    for image in images:
        lines = sorted((ln for ln in reader.read(image) if ln.score >= MIN_SCORE), key=lambda ln: (ln.box[1], ln.box[0]))
        out.append(" ".join(" ".join(ln.text for ln in lines).split()))
    return out


def joined(captions: list[str]) -> str:
    """Frame captions in time order as one description, a caption repeated by the next frame dropped."""
    out: list[str] = []
    for c in captions:
        c = " ".join(c.split())
        if c and (not out or out[-1] != c):
            out.append(c)
    return " ".join(out)


# ---- into the benchmark ------------------------------------------------------------------------------


def questions_by_needle(state: Any) -> dict[str, dict[str, Any]]:
    """needle digest -> {questions, caption, from}: what the caption and question stages made."""
    captions = {o["needle"]: o for o in state.outputs.get("captions", {}).values() if o}
    out = {}
    for o in state.outputs.get("nqa_questions", {}).values():
        if o:
            cap = captions.get(o["needle"], {})
            out[o["needle"]] = {"questions": o["questions"], "caption": cap.get("caption"), "from": cap.get("from")}
    return out


def missing_questions(videos: list[Item], asked: dict[str, dict[str, Any]]) -> list[str]:
    """The needle files of planned videos whose needle has no questions yet."""
    return sorted({v.data["nqa"]["file"] for v in videos if v.data.get("nqa") and v.data["nqa"]["needle"] not in asked})


def llm_samples(videos: list[Item], samples: list[Sample], asked: dict[str, dict[str, Any]]) -> list[Sample]:
    """Each video's sample, or for a video whose needle's questions a model wrote, one sample per
    question over the same video: id `<video id>-q<k>`, the answer at the planned position."""
    out: list[Sample] = []
    for item, base in zip(videos, samples):
        mark = item.data.get("nqa")
        if not mark:
            out.append(base)
            continue
        made = asked[mark["needle"]]
        for k, q in enumerate(made["questions"]):
            options, answer = arrange(q, mark["positions"][k])
            extra = {**base.extra, "nqa_question": {"source": "llm", "number": k + 1, "of": len(made["questions"]),
                                                    "caption": made["caption"], "caption_from": made["from"]}}
            out.append(base.model_copy(update={"id": f"{base.id}-q{k + 1}", "question": q["question"],
                                               "options": options, "answer": answer, "extra": extra}))
    return out


def failure_lines(state: Any) -> list[str]:
    """One line per failed unit (stage, item, error), as `lvu build status` prints them."""
    return [f"{stage} {item}" + (f" {unit}" if unit != "-" else "") + f": {error}"
            for stage, item, unit, error in state.failures()]
