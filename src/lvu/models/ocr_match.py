"""ocr-match: a real, offline model that answers multiple-choice prompts from the text it reads.

It reads every frame of the prompt with rapidocr (PP-OCR ONNX models that ship inside the PyPI
package; `pip install 'lvu[ocr]'`), takes the subtitle cues with their spans, hears the audio
clips of an `--audio` run (Whisper tiny.en through lvu.media.asr, `lvu[asr]`: each clip's
transcript becomes timed cues), and picks the option best supported by that *timed* text evidence. It only sees the Prompt — never a sample's
answer — and knows no benchmark. The question (`prompt.question`, else the prompt text) is parsed
for what it asks:

- "how many ..." + a quoted phrase: count separate runs of frames showing the phrase and pick
  the option with that number;
- options like '"X" appears before "Y"' (before / after / then): check both first sightings;
- a time ("at 01:23", "1:02:03") or a quoted subtitle: the option seen closest to that moment
  (within half a frame gap, at least 3 s); options seen only elsewhere are ruled out;
- otherwise: the option seen on most frames.

Without evidence it guesses among the options not ruled out, by a hash of the question, so it
has no letter bias. OCR results are cached on disk per frame (keyed by a hash of the pixels), so
a frame shared by several questions or runs is read once.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import importlib.util
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from lvu.args import as_cache, as_int, check_known
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.paths import cache_dir as default_cache_dir
from lvu.types import LETTERS, Audio, Frame, Prompt, Response, Subtitle, Text, as_rgb

MIN_SCORE = 0.5
"""OCR lines recognised with less confidence are ignored."""
MATCH_RATIO = 0.8
"""Fuzzy match threshold between an option and OCR text (absorbs one misread letter in five)."""
# Detection at the frame's own size (capped at 960 px) — rapidocr's default upscales small
# frames to 736 px on the short side, 6x slower with no gain for large on-screen text.
ENGINE_PARAMS = {
    "Global.log_level": "error",
    "Global.use_cls": False,
    "Det.limit_type": "max",
    "Det.limit_side_len": 960,
}
CUE_RATIO = 0.9
"""A quoted subtitle must match a cue this closely (cues often share most of their words)."""
CACHE_VERSION = 1


# ---- reading frames -------------------------------------------------------------------------


@dataclass(frozen=True)
class OcrLine:
    text: str
    score: float
    box: tuple[int, int, int, int]
    """x0, y0, x1, y1 in frame pixels."""


_ENGINE: Any = None
_ENGINE_LOCK = threading.Lock()


def _get_engine(threads: int) -> Any:
    """The process's one rapidocr engine, created on first use."""
    global _ENGINE
    if _ENGINE is None:
        try:
            from rapidocr import RapidOCR
        except ImportError:
            raise LvuError("ocr-match needs rapidocr: pip install 'lvu[ocr]'") from None
        logging.getLogger("RapidOCR").setLevel(logging.ERROR)
        try:
            import onnxruntime

            onnxruntime.set_default_logger_severity(3)
        except ImportError:
            pass
        _ENGINE = RapidOCR(params={
            **ENGINE_PARAMS,
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        })
    return _ENGINE


def _engine_tag() -> str:
    """What produced cached OCR results; part of every cache key."""
    try:
        v = version("rapidocr")
    except PackageNotFoundError:
        v = "unknown"
    return f"v{CACHE_VERSION}|rapidocr {v}|{sorted(ENGINE_PARAMS.items())}"


class OcrReader:
    """Frame -> OCR lines, cached on disk (one JSON file per pixel hash) and in memory.

    Thread-safe; the engine runs one frame at a time (it already uses `threads` cores).
    """

    def __init__(self, cache: Path | None, threads: int) -> None:
        self.cache, self.threads = cache, threads
        self.tag = _engine_tag().encode()
        self.memory: OrderedDict[str, list[OcrLine]] = OrderedDict()
        self.lock = threading.Lock()
        self.engine_calls = 0
        self.engine_seconds = 0.0

    def key(self, image: np.ndarray) -> str:
        h = hashlib.blake2b(self.tag, digest_size=16)
        h.update(repr((image.shape, str(image.dtype))).encode())
        h.update(np.ascontiguousarray(image).data)
        return h.hexdigest()

    def read(self, image: Any) -> list[OcrLine]:
        image = as_rgb(image)
        key = self.key(image)
        lines = self._cached(key)
        if lines is None:
            with _ENGINE_LOCK:
                lines = self._cached(key)  # another thread may have read it meanwhile
                if lines is None:
                    lines = self._run(image)
                    self._store(key, lines)
        return lines

    def _cached(self, key: str) -> list[OcrLine] | None:
        with self.lock:
            if key in self.memory:
                self.memory.move_to_end(key)
                return self.memory[key]
        if self.cache is None:
            return None
        try:
            data = json.loads(self._path(key).read_text())
            lines = [OcrLine(t, s, tuple(b)) for t, s, b in data["lines"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self._remember(key, lines)
        return lines

    def _remember(self, key: str, lines: list[OcrLine]) -> None:
        with self.lock:
            self.memory[key] = lines
            while len(self.memory) > 4096:
                self.memory.popitem(last=False)

    def _store(self, key: str, lines: list[OcrLine]) -> None:
        self._remember(key, lines)
        if self.cache is None:
            return
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"lines": [[ln.text, ln.score, list(ln.box)] for ln in lines]}))
            os.replace(tmp, path)
        except OSError:  # a read-only cache only costs speed
            tmp.unlink(missing_ok=True)

    def _path(self, key: str) -> Path:
        assert self.cache is not None
        return self.cache / key[:2] / f"{key}.json"

    def _run(self, image: np.ndarray) -> list[OcrLine]:
        engine = _get_engine(self.threads)
        t0 = time.perf_counter()
        result = engine(image)
        self.engine_seconds += time.perf_counter() - t0
        self.engine_calls += 1
        if result.txts is None:
            return []
        lines = []
        for text, score, box in zip(result.txts, result.scores, result.boxes):
            pts = np.asarray(box)
            x0, y0 = pts.min(axis=0)
            x1, y1 = pts.max(axis=0)
            lines.append(OcrLine(str(text), round(float(score), 4), (int(x0), int(y0), int(x1), int(y1))))
        return lines


# ---- reasoning over timed text ------------------------------------------------------------------


def normalize(text: str) -> str:
    """Upper case letters and digits separated by single spaces."""
    return " ".join(re.sub(r"[^0-9A-Z]+", " ", text.upper()).split())


def _similarity(text: str, phrase: str) -> float:
    return 1.0 if f" {phrase} " in f" {text} " else difflib.SequenceMatcher(None, text, phrase).ratio()


def mentions(text: str, phrase: str, *, fuzzy: bool = True) -> bool:
    """Whether normalised `text` contains normalised `phrase`; `fuzzy` allows small OCR misreads
    (for phrases of 4+ characters: a word window with similarity >= MATCH_RATIO)."""
    if not phrase or not text:
        return False
    if f" {phrase} " in f" {text} ":
        return True
    if not fuzzy or len(phrase) < 4:
        return False
    words, n = text.split(), len(phrase.split())
    return any(
        difflib.SequenceMatcher(None, " ".join(words[i:i + n]), phrase).ratio() >= MATCH_RATIO
        for i in range(max(1, len(words) - n + 1))
    )


_TIME = re.compile(r"(?<![\d:.])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])")
_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|‘([^’]+)’|(?<![\w])\'([^\']+)\'(?![\w])')
_NUMBER_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_RELATION = re.compile(r"\b(before|after|then|followed by|earlier than|later than)\b", re.IGNORECASE)


def question_times(question: str) -> list[float]:
    """Seconds of every 'MM:SS' or 'H:MM:SS' in the question."""
    out: list[float] = []
    for a, b, c in _TIME.findall(question):
        out.append(int(a) * 3600 + int(b) * 60 + int(c) if c else int(a) * 60 + int(b))
    return out


def quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text)]


def option_number(option: str) -> int | None:
    m = re.search(r"\d+", option)
    if m:
        return int(m.group())
    words = [w for w in re.findall(r"[a-z]+", option.lower()) if w in _NUMBER_WORDS]
    return _NUMBER_WORDS[words[0]] if words else None


def ordered_pair(option: str) -> tuple[str, str] | None:
    """(earlier, later) phrases of an order statement such as '"X" appears before "Y"'."""
    m = _RELATION.search(option)
    if not m:
        return None
    parts = quoted(option)
    if len(parts) != 2:
        left, right = option[:m.start()], option[m.end():]
        parts = [re.sub(r"\b(appears?|appeared|shown|is|was|the word)\b", " ", s) for s in (left, right)]
    a, b = normalize(parts[0]), normalize(parts[1])
    if not a or not b:
        return None
    return (b, a) if m.group(1).lower() in ("after", "later than") else (a, b)


@dataclass
class Evidence:
    """What the model read: OCR text per sampled frame, and subtitle cues with their spans."""

    frames: list[tuple[float, list[str]]]
    """(timestamp, normalised OCR lines), in time order."""
    cues: list[tuple[float, float, str]]
    """(start, end, normalised text)."""

    def sightings(self, phrase: str) -> list[tuple[float, float]]:
        """Spans where the phrase was seen: frame times (zero-length) and cue spans (cue text is
        exact, so it must match exactly)."""
        spans = [(t, t) for t, lines in self.frames if any(mentions(ln, phrase) for ln in lines)]
        return spans + [(a, b) for a, b, text in self.cues if mentions(text, phrase, fuzzy=False)]

    def runs(self, phrase: str) -> int:
        """Separate appearances: maximal runs of consecutive sampled frames showing the phrase."""
        count, inside = 0, False
        for _, lines in self.frames:
            here = any(mentions(ln, phrase) for ln in lines)
            count += here and not inside
            inside = here
        return count

    def tolerance(self) -> float:
        times = [t for t, _ in self.frames]
        gaps = np.diff(times) if len(times) > 1 else np.array([0.0])
        return max(3.0, 0.5 * float(np.median(gaps)))


def _distance(span: tuple[float, float], anchor: tuple[float, float]) -> float:
    return max(0.0, anchor[0] - span[1], span[0] - anchor[1])


_COUNTING = re.compile(r"\bhow (many|often)\b|\bnumber of times\b", re.IGNORECASE)

Choice = tuple[int | None, list[int]]
"""(chosen option index or None, options not ruled out)."""


def choose(question: str, options: list[str], ev: Evidence) -> Choice:
    """Pick the option the timed text evidence supports, by what the question asks."""
    q_quoted = [normalize(s) for s in quoted(question)]
    if _COUNTING.search(question) and q_quoted:
        return _by_count(q_quoted[0], options, ev)
    pairs = [ordered_pair(o) for o in options]
    if sum(p is not None for p in pairs) * 2 >= len(options):
        return _by_order(pairs, ev)
    return _by_sighting(question, q_quoted, options, ev)


def _by_count(phrase: str, options: list[str], ev: Evidence) -> Choice:
    """The option whose number is closest to the separate appearances of the phrase."""
    everyone = list(range(len(options)))
    seen = ev.runs(phrase)
    numbers = {i: n for i, n in enumerate(option_number(o) for o in options) if n is not None}
    if not seen or not numbers:
        return None, everyone
    return min(numbers, key=lambda i: (abs(numbers[i] - seen), i)), everyone


def _by_order(pairs: list[tuple[str, str] | None], ev: Evidence) -> Choice:
    """The one statement whose two phrases were first seen in its order; contradicted ones are
    ruled out."""

    def first(phrase: str) -> float | None:
        spans = ev.sightings(phrase)
        return min(a for a, _ in spans) if spans else None

    scores = []
    for p in pairs:
        ta, tb = (first(p[0]), first(p[1])) if p else (None, None)
        scores.append(0 if ta is None or tb is None or ta == tb else (1 if ta < tb else -1))
    best = max(scores)
    tied = [i for i, score in enumerate(scores) if score == best]
    return (tied[0] if best > 0 and len(tied) == 1 else None), tied


def _by_sighting(question: str, q_quoted: list[str], options: list[str], ev: Evidence) -> Choice:
    """With a moment (a time, or the span of a quoted subtitle): the option seen closest to it.
    Without one: the option seen on most frames."""
    everyone = list(range(len(options)))
    anchor: tuple[float, float] | None = None
    if times := question_times(question):
        anchor = (times[0], times[0])
    for phrase in q_quoted if anchor is None else []:  # a quoted subtitle: its best-matching cue
        similarity, span = max(((_similarity(text, phrase), (a, b)) for a, b, text in ev.cues), default=(0.0, None))
        if similarity >= CUE_RATIO:
            anchor = span
            break
    sightings = [ev.sightings(o) if o else [] for o in map(normalize, options)]
    if anchor is not None:
        dist = [min((_distance(s, anchor) for s in sightings[i]), default=float("inf")) for i in everyone]
        best = min(dist)
        if best <= ev.tolerance() and dist.count(best) == 1:
            return dist.index(best), everyone
        return None, [i for i in everyone if not sightings[i]] or everyone  # seen only elsewhere: ruled out
    counts = [len(s) for s in sightings]
    top = max(counts, default=0)
    if top and counts.count(top) == 1:
        return counts.index(top), everyone
    return None, [i for i in everyone if counts[i] == top] if top else everyone


def _guess(candidates: list[int], question: str, options: list[str]) -> int:
    h = hashlib.blake2b(json.dumps([question, options]).encode(), digest_size=8).digest()
    return candidates[int.from_bytes(h, "big") % len(candidates)]


# ---- the model ----------------------------------------------------------------------------------


@register_model("ocr-match")
class OcrMatch(Model):
    """Real offline model: RapidOCR reads the frames, the option best supported by timed text wins.

    Args: `threads` (onnxruntime threads, default min(4, CPUs)); `cache` (True, False or a
    directory; default True = <cache>/ocr)."""

    run_neutral_args = ("threads", "cache")
    accepts_audio = True  # it hears by transcribing: Whisper (lvu[asr]) turns each clip into timed cues

    def __init__(self, **args: Any) -> None:
        super().__init__(**args)
        check_known("ocr-match", args, {"threads", "cache"})
        threads = as_int("ocr-match", "threads", args.get("threads") or 0, 0, hint="0 (the default) means min(4, CPUs)")
        cache = as_cache("ocr-match", "cache", args.get("cache", True))
        if importlib.util.find_spec("rapidocr") is None:
            raise LvuError("ocr-match needs rapidocr and onnxruntime: pip install 'lvu[ocr]'")
        threads = threads or min(4, os.cpu_count() or 1)
        cache_path = None if cache is False else default_cache_dir("ocr") if cache is True else cache
        self.reader = OcrReader(cache_path, threads)

    @property
    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "ocr": _engine_tag(), **self.args}

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        try:
            text = await asyncio.to_thread(self.answer, prompt)
        except Exception as e:  # an OCR failure is this sample's error, not the run's
            return Response(error=f"{type(e).__name__}: {e}", latency=time.perf_counter() - t0)
        return Response(text=text, latency=time.perf_counter() - t0)

    def evidence(self, prompt: Prompt) -> Evidence:
        """OCR every frame of the prompt (cached) and collect its cues, all normalised."""
        frames = []
        for f in prompt.parts:
            if isinstance(f, Frame) and f.image is not None:
                lines = [normalize(ln.text) for ln in self.reader.read(f.image) if ln.score >= MIN_SCORE]
                frames.append((f.timestamp, [ln for ln in lines if ln]))
        cues = [(c.start, c.end, normalize(c.text)) for c in prompt.parts if isinstance(c, Subtitle)]
        cues += [(c.start, c.end, normalize(c.text)) for c in self.heard(prompt)]
        return Evidence(sorted(frames, key=lambda x: x[0]), cues)

    def takes_audio(self) -> bool:
        return importlib.util.find_spec("faster_whisper") is not None

    def heard(self, prompt: Prompt) -> list[Subtitle]:
        """The prompt's audio as timed cues: Whisper's transcript (lvu.media.asr, cached per content)
        of each run of contiguous clips — interleaved clips are heard as the one stream they cut, so
        a word split at a frame boundary is not lost — in video time."""
        from lvu.media.asr import transcribe_samples

        clips = sorted((p for p in prompt.parts if isinstance(p, Audio) and p.samples is not None and len(p.samples)),
                       key=lambda c: c.start)
        runs: list[list[Audio]] = []
        for clip in clips:
            if runs and abs(runs[-1][-1].end - clip.start) < 1e-3 and clip.sample_rate == runs[-1][-1].sample_rate:
                runs[-1].append(clip)
            else:
                runs.append([clip])
        out: list[Subtitle] = []
        for run in runs:
            out += transcribe_samples(np.concatenate([c.float_samples() for c in run]), run[0].start)
        return out

    def answer(self, prompt: Prompt) -> str:
        """The option letter (or, without options, the text read closest to the asked time)."""
        question = prompt.question or "\n".join(p.text for p in prompt.parts if isinstance(p, Text))
        ev = self.evidence(prompt)
        options = prompt.choices
        if not options:
            return _open_answer(question, ev)
        chosen, candidates = choose(question, options, ev)
        if chosen is None:
            chosen = _guess(candidates, question, options)
        return LETTERS[chosen]


def _open_answer(question: str, ev: Evidence) -> str:
    times = question_times(question)
    shown = [(t, ln) for t, lines in ev.frames for ln in lines]
    if not shown:
        return ""
    if times:
        return min(shown, key=lambda x: abs(x[0] - times[0]))[1]
    texts = [ln for _, ln in shown]
    return max(texts, key=texts.count)
