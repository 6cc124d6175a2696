"""The papers' probing baselines, as wrappers around any registered backend.

Each wrapper rewrites the Prompt and hands it to a wrapped model, keeping the order of the parts
it keeps and every setting (system, assistant prefix, choices, max_tokens, temperature):

- `blind`: text only — question and options, no frames, no subtitles (Neptune's QAD baseline,
  the "no visual" probes);
- `blind-asr`: no frames, subtitle/ASR cues kept (Neptune's QAD+ASR);
- `single-frame`: only the centre (`which=center`, default) or first (`which=first`) frame of
  the prompt (Neptune's and LongVideoBench's 1-frame settings);
- `socratic`: every frame replaced by a caption from a captioner backend (any VLM, or `ocr`),
  written as a timed line "[mm:ss] caption" in place, for a text `answerer` (Neptune's JCEF).

The wrapped backend is named by `base=NAME`; its own arguments come as `base.KEY=VALUE` model
args or as one JSON object `base_args='{"KEY": VALUE}'` (dotted keys win). socratic does the
same for `captioner` and `answerer`. Example:

    lvu run -b neptune -m blind -a base=openai -a base.model=gpt-4o-mini
    lvu run -b neptune -m socratic -a captioner=hf -a captioner.model=/ckpt/qwen2-vl \\
        -a answerer=openai -a 'answerer_args={"model": "gpt-4o-mini"}'
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lvu.args import as_int
from lvu.errors import LvuError
from lvu.models.base import MODELS, Model, register_model
from lvu.types import Frame, Part, Prompt, Response, Text, as_rgb


def split_role_args(args: dict[str, Any], role: str, *, required: bool = True) -> tuple[str | None, dict[str, Any]]:
    """(`args[role]`, that role's args) from `role_args` (a dict or a JSON string) and
    `role.KEY` entries, the dotted ones taking precedence."""
    name = args.get(role)
    nested = args.get(f"{role}_args") or {}
    if isinstance(nested, str):
        try:
            nested = json.loads(nested)
        except json.JSONDecodeError:
            nested = None
    if not isinstance(nested, dict):
        raise LvuError(f"{role}_args must be a JSON object, e.g. -a '{role}_args={{\"model\": \"x\"}}'")
    sub = {**nested, **{k[len(role) + 1:]: v for k, v in args.items() if k.startswith(f"{role}.")}}
    if required and not name:
        raise LvuError(f"this model wraps another: pass -a {role}=NAME (any of `lvu list`'s models)")
    if not name and sub:
        raise LvuError(f"{role} arguments given without -a {role}=NAME")
    return (str(name) if name else None), sub


def _check_args(model: str, args: dict[str, Any], own: set[str], roles: tuple[str, ...]) -> None:
    unknown = [k for k in args if k not in own and not any(
        k == r or k == f"{r}_args" or k.startswith(f"{r}.") for r in roles)]
    if unknown:
        known = sorted(own | {f"{r}, {r}.KEY, {r}_args" for r in roles})
        raise LvuError(f"{model} has no argument(s) {', '.join(sorted(unknown))}; known: {', '.join(known)}")


def build_model(name: str, args: dict[str, Any]) -> Model:
    """Instantiate a registered model by name (loading the registry if needed)."""
    from lvu.models import load_all

    load_all()
    return MODELS.get(name)(**args)


class PromptProbe(Model):
    """A wrapper that rewrites the prompt and asks `base`."""

    own_args: ClassVar[set[str]] = set()
    accepts_audio = True  # when the wrapped model does (takes_audio)

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        _check_args(self.name, args, self.own_args, ("base",))
        base, base_args = split_role_args(args, "base")
        self.base = build_model(base, base_args)  # type: ignore[arg-type]

    def takes_audio(self) -> bool:
        return self.base.takes_audio()

    @property
    def identity(self) -> dict[str, Any]:
        own = {k: v for k, v in self.args.items() if k in self.own_args}
        return {"backend": self.name, **own, "base": self.base.identity}

    def rewrite(self, prompt: Prompt) -> Prompt:
        raise NotImplementedError

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        try:
            probe = self.rewrite(prompt)
        except LvuError as e:
            return Response(error=str(e))
        return await self.base.generate(probe, sample_id=sample_id)

    async def close(self) -> None:
        await self.base.close()


@register_model("blind")
class Blind(PromptProbe):
    """Text-only probe of `base=NAME`: frames and subtitles removed (Neptune's QAD baseline).

    Question, options and all other text stay, in order — the 'no visual' probes. Audio clips go
    too (the question alone): a blind probe of an `--audio` run is the run's blind row."""

    def takes_audio(self) -> bool:
        return True  # it removes the audio by design, whatever the base takes

    def rewrite(self, prompt: Prompt) -> Prompt:
        return prompt.model_copy(update={"parts": [p for p in prompt.parts if isinstance(p, Text)]})


@register_model("blind-asr")
class BlindAsr(PromptProbe):
    """No-visual probe of `base=NAME`: frames removed, subtitle/ASR cues kept (Neptune's QAD+ASR).

    Text, cues and audio clips keep their order."""

    def rewrite(self, prompt: Prompt) -> Prompt:
        return prompt.model_copy(update={"parts": [p for p in prompt.parts if not isinstance(p, Frame)]})


@register_model("single-frame")
class SingleFrame(PromptProbe):
    """1-frame probe of `base=NAME`: only the centre (`which=center`) or first frame is kept.

    `which=center` (default) keeps the middle frame — the earlier of the two middle ones for an
    even count; other frames are removed, text and cues stay in order. For a frame at the exact middle of the video, run the benchmark with an
    odd frame count (e.g. `--frames 1`)."""

    own_args: ClassVar[set[str]] = {"which"}

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        self.which = args.get("which", "center")
        if self.which not in ("center", "first"):
            raise LvuError(f"single-frame which={self.which!r} is unknown — use center or first")

    def rewrite(self, prompt: Prompt) -> Prompt:
        frames = [i for i, p in enumerate(prompt.parts) if isinstance(p, Frame)]
        if not frames:
            raise LvuError("single-frame: the prompt has no frames")
        keep = frames[0] if self.which == "first" else frames[(len(frames) - 1) // 2]
        parts = [p for i, p in enumerate(prompt.parts) if not isinstance(p, Frame) or i == keep]
        return prompt.model_copy(update={"parts": parts})


# ---- socratic ------------------------------------------------------------------------------------

CAPTION_PROMPT = ("Describe this video frame in one or two sentences: the scene, the people and "
                  "objects, what is happening, and any text shown on screen.")
"""What the captioner is asked for each frame (override with `caption_prompt=...`)."""
MEMORY_CAPTIONS = 100_000
"""Captions kept in memory (least recently used dropped first; the disk cache keeps them all)."""


def clock(seconds: float) -> str:
    """'mm:ss', or 'h:mm:ss' from one hour on."""
    s = round(max(0.0, seconds))
    h, rem = divmod(s, 3600)
    return f"{h}:{rem // 60:02d}:{rem % 60:02d}" if h else f"{rem // 60:02d}:{rem % 60:02d}"


class _OcrCaptioner:
    """Captions a frame with the text lvu's OCR reader (rapidocr, cached on disk) finds on it."""

    def __init__(self, args: dict[str, Any]) -> None:
        from lvu.models.ocr_match import OcrMatch

        self.ocr = OcrMatch(**args)

    @property
    def identity(self) -> dict[str, Any]:
        return self.ocr.identity

    async def caption(self, image: np.ndarray) -> str:
        from lvu.models.ocr_match import MIN_SCORE

        lines = await asyncio.to_thread(self.ocr.reader.read, image)
        text = " | ".join(ln.text for ln in lines if ln.score >= MIN_SCORE)
        return f"on-screen text: {text}" if text else "no on-screen text"


@register_model("socratic")
class Socratic(Model):
    """Socratic baseline (Neptune's JCEF): frame captions from `captioner`, timed, to a text `answerer`.

    Each frame becomes the text part "[mm:ss] <caption>" in its place; subtitle cues and text stay as they are, in order.

    Args: `captioner=NAME` (any registered VLM backend, with `captioner.KEY=VALUE` /
    `captioner_args`; or `captioner=ocr`, lvu's rapidocr reader, taking ocr-match's args);
    `answerer=NAME` (a text backend, `answerer.KEY=VALUE` / `answerer_args`); `caption_prompt`;
    `caption_max_tokens` (default 96); `caption_concurrency` (captioner calls in flight, default 8);
    `cache` (captions on disk per frame content + captioner + prompt: True = <cache>/captions,
    False, or a directory)."""

    own_args: ClassVar[set[str]] = {"caption_prompt", "caption_max_tokens", "caption_concurrency", "cache"}

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        _check_args(self.name, args, self.own_args, ("captioner", "answerer"))
        cap_name, cap_args = split_role_args(args, "captioner")
        ans_name, ans_args = split_role_args(args, "answerer")
        self.caption_prompt = str(args.get("caption_prompt") or CAPTION_PROMPT)
        self.caption_max_tokens = as_int("socratic", "caption_max_tokens", args.get("caption_max_tokens", 96), 1)
        self.caption_concurrency = as_int("socratic", "caption_concurrency", args.get("caption_concurrency", 8), 1)
        self.captioner: Any = _OcrCaptioner(cap_args) if cap_name == "ocr" else build_model(cap_name, cap_args)  # type: ignore[arg-type]
        self.answerer = build_model(ans_name, ans_args)  # type: ignore[arg-type]
        from lvu.models.response_cache import resolve_cache_dir

        self.cache_root: Path | None = resolve_cache_dir(args.get("cache", True), "captions", owner="socratic")
        if cap_name == "ocr":
            self.cache_root = None  # the OCR reader keeps its own cache
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.memory: OrderedDict[str, str] = OrderedDict()
        self.pending: dict[str, asyncio.Future] = {}
        self.caption_calls = 0
        self.tag = json.dumps([self.captioner.identity, self.caption_prompt, self.caption_max_tokens],
                              sort_keys=True, default=str).encode()

    @property
    def identity(self) -> dict[str, Any]:
        own = {k: v for k, v in self.args.items() if k in self.own_args and k != "cache"}
        return {"backend": self.name, **own, "captioner": self.captioner.identity,
                "answerer": self.answerer.identity}

    # -- captions, cached per frame content

    def _key(self, image: np.ndarray) -> str:
        h = hashlib.blake2b(self.tag, digest_size=16)
        h.update(repr(image.shape).encode())
        h.update(np.ascontiguousarray(image).data)
        return h.hexdigest()

    def _disk(self, key: str) -> Path | None:
        return None if self.cache_root is None else self.cache_root / key[:2] / f"{key}.txt"

    def _load(self, key: str) -> str | None:
        if key in self.memory:
            self.memory.move_to_end(key)
            return self.memory[key]
        path = None if self.refresh else self._disk(key)  # --fresh: captions made in this run only
        if path is not None:
            try:
                self.memory[key] = path.read_text()
                return self.memory[key]
            except OSError:
                pass
        return None

    def _save(self, key: str, text: str) -> None:
        self.memory[key] = text
        while len(self.memory) > MEMORY_CAPTIONS:
            self.memory.popitem(last=False)
        path = self._disk(key)
        if path is None:
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)

    def bypass_cache(self) -> None:
        super().bypass_cache()
        self.memory.clear()

    async def caption(self, frame: Frame) -> str:
        """One frame's caption (an identical frame already captioned, or in flight, is reused)."""
        image = as_rgb(frame.image)
        key = self._key(image)
        if (cached := self._load(key)) is not None:
            return cached
        if key in self.pending:
            return await asyncio.shield(self.pending[key])
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[key] = future
        try:
            loop = asyncio.get_running_loop()
            if loop not in self._semaphores:  # a semaphore belongs to one event loop
                self._semaphores = {loop: asyncio.Semaphore(self.caption_concurrency)}
            async with self._semaphores[loop]:
                text = await self._ask_captioner(image, frame.timestamp)
            self._save(key, text)
            future.set_result(text)
            return text
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self.pending.pop(key, None)

    async def _ask_captioner(self, image: np.ndarray, timestamp: float) -> str:
        self.caption_calls += 1
        if isinstance(self.captioner, _OcrCaptioner):
            return await self.captioner.caption(image)
        prompt = Prompt(parts=[Frame(image=image, timestamp=timestamp), Text(text=self.caption_prompt)],
                        max_tokens=self.caption_max_tokens, temperature=0.0)
        response = await self.captioner.generate(prompt)
        if response.error:
            raise LvuError(f"captioner error: {response.error}")
        return " ".join(response.text.split())

    async def rewrite(self, prompt: Prompt) -> Prompt:
        """The prompt with every frame replaced by its timed caption line."""
        frames = [p for p in prompt.parts if isinstance(p, Frame)]
        captions = iter(await asyncio.gather(*(self.caption(f) for f in frames)))
        parts: list[Part] = []
        for p in prompt.parts:
            if isinstance(p, Frame):
                parts.append(Text(text=f"[{clock(p.timestamp)}] {next(captions)}"))
            else:
                parts.append(p)
        return prompt.model_copy(update={"parts": parts})

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        try:
            text_prompt = await self.rewrite(prompt)
        except LvuError as e:
            return Response(error=str(e), latency=time.perf_counter() - t0)
        except Exception as e:  # a captioner that raises fails this sample only
            return Response(error=f"captioner: {type(e).__name__}: {e}", latency=time.perf_counter() - t0)
        response = await self.answerer.generate(text_prompt, sample_id=sample_id)
        return response.model_copy(update={"latency": time.perf_counter() - t0})

    async def close(self) -> None:
        if not isinstance(self.captioner, _OcrCaptioner):
            await self.captioner.close()
        await self.answerer.close()
