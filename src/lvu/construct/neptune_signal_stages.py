"""Neptune's pipeline, stages i and ii (paper §4.1, App. C.1-C.2.1): which videos to keep and the
signals the captioning reads — shots, speech, title/description, frame captions (the paper's prompt
through a VLM, or on-screen text with --captioner ocr). Also the Neptune stages' shared base and
options (DEFAULTS); stages iii-iv and the pipeline are lvu.construct.neptune.
"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import date
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import Field, model_validator

from lvu.construct import neptune_parse as parse
from lvu.construct import neptune_prompts as prompts
from lvu.construct.pipeline import PipelineOptions, Skip, Stage, Unit, Video, register_stage
from lvu.construct.select_rules import AsOfDate
from lvu.types import Frame

ASR_MODES = ("auto", "subtitles", "none")
CAPTIONERS = ("vlm", "ocr")


class NeptuneOptions(PipelineOptions):
    """Neptune's options; where the paper gives no number the default is lvu's (docs/build.md)."""

    min_seconds: Optional[float] = Field(default=None, ge=0, description="shortest video kept; None: no minimum (the "
                                         "paper's 16 s is its shortest video, not a rule)")
    max_seconds: Optional[float] = Field(default=None, gt=0, description="longest video kept; None: none (longer videos "
                                         "are truncated, truncate_seconds)")
    truncate_seconds: Optional[float] = Field(default=900.0, gt=0, description="only the first this many seconds of a "
                                              "longer video are analysed (paper §3: truncated at 15 min); None: all")
    metadata_rules: bool = Field(default=True, description="judge <stem>.info.json's view count, upload age and safety "
                                 "labels by App. C.1's rules (lvu.construct.select_rules) when the file exists")
    as_of: AsOfDate = Field(default=None, validate_default=True, json_schema_extra={"recorded": True}, description="the date upload ages count to (YYYY-MM-DD; default today, "
                                 "recorded in build.json)")
    static_threshold: Optional[float] = Field(default=None, gt=0, lt=1, description="static filter's clustering cut "
                                              "(largest cell difference 0..1); None: lvu.construct.selection's 0.08")
    min_face_height: float = Field(default=0.20, gt=0, le=1, description="talking-head frame: a frontal face taller than "
                                   "this fraction of the frame")
    max_talking_fraction: float = Field(default=0.30, ge=0, le=1, description="drop a video when more than this fraction "
                                        "of its frames are talking-head frames")
    shot_threshold: Optional[float] = Field(default=None, gt=0, description="PySceneDetect ContentDetector threshold; "
                                            "None: its default 27")
    asr: Literal["auto", "subtitles", "none"] = Field(default="auto", description="auto: the subtitle file beside a "
                                                      "video, else Whisper; subtitles: files only; none: no speech")
    captioner: Literal["vlm", "ocr"] = Field(default="vlm", description="vlm: the paper's caption prompt per frame (vlm "
                                             "model); ocr: each frame's on-screen text, offline")
    fps: float = Field(default=1.0, gt=0, description="frames per second for the filters and frame captions (paper: 1)")
    questions: int = Field(default=5, ge=1, description="questions generated per video ({target_number}; the paper "
                           "made ~4.6 per kept video)")
    decoys: int = Field(default=prompts.DECOY_NUMBER, ge=4, description="wrong answers asked for per question, and "
                        "exactly that many required (the paper: 6; at least 4 for the 5-option MCQ)")
    scenes_per_part: int = Field(default=40, ge=1, description="scenes per clustering call (a part of the video script)")
    clustering_max_chars: int = Field(default=prompts.CLUSTERING_MAX_CHARS, ge=1, description="{max output characters} "
                                      "of the clustering prompt")
    segment_max_chars: int = Field(default=prompts.SEGMENT_MAX_CHARS, ge=1, description="{max_output_characters} of "
                                   "the segment prompt")
    filter_seeds: int = Field(default=3, ge=1, description="QAD filter rankings per question, options shuffled per seed")
    filter_threshold: int = Field(default=2, ge=1, description="remove a QAD when the answer is top-ranked in at least "
                                  "this many seeds")


    @model_validator(mode="after")
    def _consistent(self) -> NeptuneOptions:
        if self.max_seconds is not None and self.min_seconds is not None and self.max_seconds < self.min_seconds:
            raise ValueError(f"max_seconds {self.max_seconds:g} is below min_seconds {self.min_seconds:g} — "
                             "no video could be kept")
        if self.filter_threshold > self.filter_seeds:
            raise ValueError(f"filter_threshold {self.filter_threshold} must be from 1 to filter_seeds "
                             f"({self.filter_seeds}) — the paper: 2 of 3")
        return self


DEFAULTS: dict[str, Any] = NeptuneOptions().model_dump()
"""Every option's default (NeptuneOptions; as_of is the date this process started)."""


def _digest(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path is not None and path.is_file() else None


def _kept(inputs: dict[str, Any]) -> bool:
    return bool(inputs["selection"]["keep"])


def timed_speech(speech: dict[str, Any], start: float | None = None, end: float | None = None) -> list[list]:
    """The transcript's (start, end, text) cues, those whose midpoint is in [start, end) when given
    (the first part of a video starts at -inf and the last ends at +inf, so every cue is in one)."""
    cues = speech.get("cues") or []
    if start is None:
        return cues
    return [c for c in cues if start <= (c[0] + c[1]) / 2 < end]


class NeptuneStage(Stage):
    """Replies are read by neptune_parse; a malformed one is retried with its retry_prompt."""

    parse_errors = (parse.ReplyParseError,)

    def retry_prompt(self, prompt: str, reply: str, error: BaseException) -> str:
        return parse.retry_prompt(prompt, reply, error if isinstance(error, parse.ReplyParseError) else str(error))

    def opt(self, name: str) -> Any:
        value = self.options.get(name)
        return DEFAULTS[name] if value is None else value


# ---- i. selection and ii. signals (no model) -------------------------------------------------------


@register_stage("neptune.select")
class Select(NeptuneStage):
    """Duration range, info.json metadata (views, upload age, safety), static-video removal,
    talking-head removal, in that order (a video is dropped at the first filter that rejects it;
    each decision and its evidence is recorded). A video longer than `truncate_seconds` is kept and
    only its first `truncate_seconds` are analysed, here and by every later stage (`analysed_s`)."""

    output = "selection"
    max_concurrency = 2

    def settings(self) -> Any:
        return {k: self.options.get(k, DEFAULTS[k]) for k in (
            "min_seconds", "max_seconds", "static_threshold", "min_face_height", "max_talking_fraction", "fps",
            "truncate_seconds", "metadata_rules", "as_of")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        info = Path(video.path).with_name(Path(video.path).stem + ".info.json")
        return [Unit(video.id, "video", {"video": video.fingerprint,
                                         **({"info": _digest(info)} if info.is_file() else {})})]

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        return await asyncio.to_thread(self._select, ctx.video.path)

    def _select(self, path: str) -> dict[str, Any]:
        from lvu.construct import selection
        from lvu.construct.signals import probe_video

        duration = probe_video(path).duration
        truncate = self.options.get("truncate_seconds", DEFAULTS["truncate_seconds"])
        analysed = min(duration, truncate) if truncate is not None else duration
        results = [selection.duration_filter(duration, self.options.get("min_seconds"), self.options.get("max_seconds"))]
        if results[-1].keep and self.opt("metadata_rules"):
            results.append(metadata_filter(path, self.opt("as_of")))
        if results[-1].keep:
            extra = {} if self.opt("static_threshold") is None else {"threshold": self.opt("static_threshold")}
            results.append(selection.static_filter(path, self.opt("fps"), until=analysed, **extra))
        if results[-1].keep:
            results.append(selection.talking_head_filter(path, self.opt("fps"), self.opt("min_face_height"),
                                                         self.opt("max_talking_fraction"), until=analysed))
        decision = "kept" if results[-1].keep else f"dropped by the {results[-1].name} filter: {results[-1].reason}"
        return {"decision": decision, "keep": results[-1].keep, "duration": round(duration, 3),
                "analysed_s": round(analysed, 3), "filters": [r.to_dict() for r in results]}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results["video"]


def metadata_filter(path: str, as_of: str) -> Any:
    """App. C.1's safety and content rules over `<stem>.info.json` (the rules `lvu build select
    --rules neptune` applies, one implementation: lvu.construct.select_rules.metadata_checks)."""
    import json

    from lvu.construct.select_rules import NEPTUNE_METADATA, metadata_checks
    from lvu.construct.selection import FilterResult

    info_path = Path(path).with_name(Path(path).stem + ".info.json")
    if not info_path.is_file():
        return FilterResult("metadata", True, "no <stem>.info.json: views, upload age and safety not checked", {})
    try:
        doc = json.loads(info_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return FilterResult("metadata", True, f"{info_path.name} is not valid JSON ({type(e).__name__}): views, "
                            "upload age and safety not checked", {})
    checks = metadata_checks(NEPTUNE_METADATA, doc if isinstance(doc, dict) else {}, date.fromisoformat(as_of))
    failed = [c for c in checks if c["ok"] is False]
    reason = "; ".join(c["reason"] for c in (failed or checks))
    return FilterResult("metadata", not failed, reason, {"checks": checks, "as_of": as_of})


def analysed_until(selection: dict[str, Any]) -> float | None:
    """The end of the part of a truncated video its stages analyse; None for a video used whole."""
    analysed = selection.get("analysed_s")
    return analysed if analysed is not None and analysed < selection.get("duration", analysed) else None


class PerKeptVideo(NeptuneStage):
    inputs = ("selection",)

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit] | Skip | None:
        if not _kept(inputs):
            return Skip(inputs["selection"]["decision"])
        until = analysed_until(inputs["selection"])
        return [Unit(video.id, "video", {"video": video.fingerprint, **self.payload(video),
                                         **({"until": until} if until is not None else {})})]

    def payload(self, video: Video) -> dict[str, Any]:
        return {}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results["video"]


@register_stage("neptune.shots")
class Shots(PerKeptVideo):
    """Shot boundaries (PySceneDetect's ContentDetector): [[start, end], ...] covering the video."""

    output = "shots"
    max_concurrency = 2

    def settings(self) -> Any:
        return {"threshold": self.opt("shot_threshold")}

    async def run(self, unit: Unit, ctx) -> list[list[float]]:
        from lvu.construct.signals import detect_shots

        extra = {} if self.opt("shot_threshold") is None else {"threshold": self.opt("shot_threshold")}
        shots = await asyncio.to_thread(detect_shots, ctx.video.path, until=unit.payload.get("until"), **extra)
        return [[s.start, s.end] for s in shots]


@register_stage("neptune.speech")
class Speech(PerKeptVideo):
    """The transcript: the subtitle file beside the video, else Whisper (asr=auto); cues [[s, e, text]]."""

    output = "speech"
    max_concurrency = 1

    def settings(self) -> Any:
        return {"asr": self.opt("asr")}

    def payload(self, video: Video) -> dict[str, Any]:
        from lvu.construct.signals import find_subtitles

        return {"subtitles": _digest(find_subtitles(video.path))}

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        from lvu.construct.signals import find_subtitles, transcribe

        path, mode = ctx.video.path, self.opt("asr")
        if mode == "none" or (mode == "subtitles" and find_subtitles(path) is None):
            return {"source": "none", "origin": None, "cues": []}
        t = await asyncio.to_thread(transcribe, path)
        until = unit.payload.get("until")  # a truncated video: the speech of its analysed part
        cues = [[c.start, c.end if until is None else min(c.end, until), c.text] for c in t.cues
                if until is None or c.start < until]
        return {"source": t.source, "origin": t.origin, "cues": cues}


@register_stage("neptune.sidecar")
class Sidecar(PerKeptVideo):
    """Title and description from `<stem>.json` / `<stem>.info.json` beside the video (may be empty)."""

    output = "metadata"

    def payload(self, video: Video) -> dict[str, Any]:
        path = Path(video.path)
        return {"sidecar": [_digest(path.with_suffix(s)) for s in (".json", ".info.json")]}

    async def run(self, unit: Unit, ctx) -> dict[str, str]:
        from lvu.construct.signals import read_sidecar

        found = read_sidecar(ctx.video.path)
        return {"title": found.title, "description": found.description} if found else {"title": "", "description": ""}


@register_stage("neptune.frame-captions")
class FrameCaptions(NeptuneStage):
    """One caption per frame at 1 fps: the paper's captioning prompt with the frame, through --vlm."""

    output = "frame_captions"
    inputs = ("selection",)
    role = "vlm"
    unit = "frame"
    prompt = prompts.FRAME_CAPTION_PROMPT
    partial = True
    max_tokens = 512

    def settings(self) -> Any:
        return {"fps": self.opt("fps")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit] | Skip | None:
        from lvu.construct.signals import probe_video
        from lvu.media.sampling import Fps

        if not _kept(inputs):
            return Skip(inputs["selection"]["decision"])
        info = probe_video(video.path)
        until = analysed_until(inputs["selection"])
        times = Fps(fps=self.opt("fps")).timestamps(info.duration if until is None else min(info.duration, until),
                                                    info.fps)
        return [Unit(video.id, f"t{t:09.3f}", {"video": video.fingerprint, "t": round(t, 3)}) for t in times]

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        image = await asyncio.to_thread(_frame_at, ctx.video.path, unit.payload["t"])
        caption = await ctx.ask(prompts.format_frame_caption_prompt(), parse.parse_frame_caption,
                                frames=[Frame(image=image, timestamp=unit.payload["t"])])
        return {"t": unit.payload["t"], "caption": caption}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return sorted(results.values(), key=lambda c: c["t"])


def _frame_at(path: str, t: float) -> Any:
    from lvu.construct.signals import CAPTION_LONG_SIDE
    from lvu.media.av_io import Resize
    from lvu.media.video import VideoReader

    with VideoReader(path) as reader:
        return reader.get_frames_played_at([t], resize=Resize(long=CAPTION_LONG_SIDE)).data[0]


def ocr_caption(text: str) -> str:
    """The text-only frame caption of `--captioner ocr`."""
    text = " ".join(text.split())
    return f'On-screen text: "{text}".' if text else "No on-screen text."


@register_stage("neptune.frame-captions-ocr")
class OcrFrameCaptions(PerKeptVideo):
    """--captioner ocr: each 1 fps frame's on-screen text (RapidOCR) as its caption; no model."""

    output = "frame_captions"
    max_concurrency = 1

    def settings(self) -> Any:
        return {"fps": self.opt("fps"), "caption": ocr_caption("{}")}

    async def run(self, unit: Unit, ctx) -> list[dict[str, Any]]:
        from lvu.construct.signals import ocr_frame_captions

        found = await asyncio.to_thread(ocr_frame_captions, ctx.video.path, self.opt("fps"),
                                        until=unit.payload.get("until"))
        return [{"t": f.t, "caption": ocr_caption(f.text)} for f in found]
