"""The built-in benchmark "haystack": long synthetic videos with needles, generated on first use.

Nothing is downloaded. `generate()` draws each video (2-4 minutes of a slowly panning texture,
384x216 at 6 fps, H.264 via PyAV), inserts 10-12 short "needle" scenes — a big word on a plate, or
a coloured shape, 4 s each — at controlled depths (0-100% of the video; the five single-needle
question targets of a video sit in five different 20% depth bins), writes an SRT track of short
neutral sentences (two of them on screen exactly around a needle) and asks ten 4-5-option
questions per video, of five kinds:

- read:     "What word is shown on screen at 01:23?"      (the other options appear at other times)
- subtitle: 'Which word is shown on screen while the subtitle "..." is displayed?'
- order:    which statement '"X" appears before "Y"' is true (false ones reverse true orders)
- count:    'How many times does the word "X" appear on screen?'
- shape:    "What shape is shown on screen at 02:10?"     (text reading cannot answer this)

Answer positions are balanced per option count, so a letter bias scores chance. Samples are in
lvu's JSONL format (benchmarks/jsonl.py), so the generated `haystack.jsonl` shows what a benchmark
file looks like, and the benchmark runs under the `jsonl` protocol. Same seed => byte-identical
JSONL and SRT files and identical decoded frames.

Default location: `cache_dir("haystack", "v1-seed0")` ($LVU_CACHE_DIR or the user cache dir).
Settings (`HaystackSettings`, `lvu list --settings haystack`): the jsonl protocol's plus `seed`.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from lvu.benchmarks.base import register_benchmark
from lvu.benchmarks.jsonl import JsonlBenchmark, JsonlSettings, write_samples
from lvu.errors import LvuError
from lvu.media.encode import add_h264_stream
from lvu.media.subtitles import srt_text
from lvu.paths import cache_dir
from lvu.types import Sample, SubtitleRef, VideoRef

VERSION = 1
"""Bump whenever generated content changes: it names the cache folder and the marker."""
JSONL_NAME = "haystack.jsonl"
MARKER_NAME = ".complete"
WIDTH, HEIGHT, FPS = 384, 216, 6
GOP = 2 * FPS
BASE_SECONDS = (120, 240)
"""Video length range at scale 1.0 (2-4 minutes)."""
MAX_NEEDLE_SECONDS = 4.0
DEPTH_BINS = ("0-20%", "20-40%", "40-60%", "60-80%", "80-100%")
SHAPES = ("circle", "square", "triangle", "star", "hexagon")
WORDS = (
    "MANGO", "CEDAR", "LOTUS", "VELVET", "QUARTZ", "BISCUIT", "PEPPER", "TUNDRA", "GALAXY", "WALRUS", "COBALT",
    "FALCON", "NECTAR", "PIXEL", "RADISH", "SAFARI", "TOFFEE", "VIOLIN", "WIZARD", "YOGURT", "ZEPHYR", "ANCHOR",
    "BAMBOO", "CACTUS", "DYNAMO", "EMBER", "FJORD", "GINGER", "HELIUM", "IGLOO", "JIGSAW", "KETTLE", "LAGOON",
    "MAGNET", "NOODLE", "OYSTER", "PUFFIN", "QUIVER", "SPROUT", "TEAPOT", "URCHIN", "VORTEX", "WAFFLE", "ALMOND",
    "BEACON", "CANYON", "DRAGON", "ENIGMA", "FOSSIL", "GLACIER", "HAMMER", "JASPER", "KOALA", "LANTERN", "NUTMEG",
    "OLIVE", "PRISM", "ROCKET", "SADDLE", "TURNIP", "UNICORN", "PARROT", "BUTTON",
)
_SUBJECTS = ("The old ferry", "A quiet fox", "My neighbour", "The night train", "A tired painter",
             "The market crowd", "Our guide", "A small boat", "The evening wind", "Grandma",
             "The baker", "A lost kite", "The postman", "Two children")
_VERBS = ("drifts past", "waits near", "hums beside", "circles around", "rests by", "walks toward",
          "sings about", "looks at", "passes under", "returns to")
_PLACES = ("the river bend", "the red bridge", "the far hill", "the harbour wall", "the empty square",
           "the tall pines", "the old mill", "the station", "the garden gate", "the lighthouse")


# ---- where it lives -----------------------------------------------------------------------------


def default_dir(seed: int = 0) -> Path:
    """Where the default haystack of this seed is generated: <cache>/haystack/v1-seed<seed>."""
    return cache_dir("haystack", f"v{VERSION}-seed{seed}")


def ensure(seed: int = 0, *, progress: bool = False) -> Path:
    """The default haystack's JSONL path, generating it first if it is not complete yet."""
    out = default_dir(seed)
    try:
        return generate(out, seed=seed, progress=progress)
    except OSError as e:
        raise LvuError(f"{out}: cannot write the haystack ({e.strerror or e}) — "
                       "set LVU_CACHE_DIR to a writable folder") from None


def _params(seed: int, n_videos: int, scale: float) -> dict[str, Any]:
    return {"version": VERSION, "seed": seed, "n_videos": n_videos, "scale": scale}


def is_complete(out_dir: str | Path, *, seed: int = 0, n_videos: int = 6, scale: float = 1.0) -> bool:
    """True when out_dir holds a finished haystack made with exactly these parameters."""
    try:
        marker = json.loads((Path(out_dir) / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return False
    return marker == _params(seed, n_videos, scale) and (Path(out_dir) / JSONL_NAME).is_file()


# ---- generation ---------------------------------------------------------------------------------


def generate(out_dir: str | Path, *, seed: int = 0, n_videos: int = 6, scale: float = 1.0,
             progress: bool = False) -> Path:
    """Generate a haystack into out_dir and return its JSONL path (no work if already complete).

    `scale` multiplies video lengths (1.0: 2-4 min; tests use less). Written atomically: built in a
    temporary sibling folder, marked complete, then renamed into place, so a crash never leaves a
    folder that looks usable; an incomplete or different folder at out_dir is replaced.
    """
    out_dir = Path(out_dir)
    if n_videos < 1 or not 0 < scale <= 2.5:
        raise ValueError("n_videos must be >= 1 and scale in (0, 2.5] (videos stay within 10 minutes)")
    if out_dir.parent.is_dir():
        _remove_stale_temps(out_dir)  # also when the haystack is there already: nothing else would
    if is_complete(out_dir, seed=seed, n_videos=n_videos, scale=scale):
        return out_dir / JSONL_NAME
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    tmp.mkdir()
    try:
        _build(tmp, seed=seed, n_videos=n_videos, scale=scale, progress=progress)
        (tmp / MARKER_NAME).write_text(json.dumps(_params(seed, n_videos, scale)))
        if out_dir.exists():
            if is_complete(out_dir, seed=seed, n_videos=n_videos, scale=scale):  # another process won
                shutil.rmtree(tmp, ignore_errors=True)
                return out_dir / JSONL_NAME
            trash = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}-{time.monotonic_ns()}")
            os.rename(out_dir, trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            if not is_complete(out_dir, seed=seed, n_videos=n_videos, scale=scale):
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir / JSONL_NAME


def _remove_stale_temps(out_dir: Path, max_age: float = 3600.0) -> None:
    """Remove the temporary folders (.NAME.tmp-PID-N, .NAME.old-PID-N) of generators that died (a
    kill -9): their process is gone; another folder of that name is removed after an hour."""
    for p in out_dir.parent.glob(f".{out_dir.name}.*"):
        match = re.fullmatch(r"\.(?:tmp|old)-(\d+)-\d+", p.name[len(out_dir.name) + 1:])
        try:
            if not p.is_dir():
                continue
            stale = (not _process_alive(int(match.group(1))) if match
                     else time.time() - p.stat().st_mtime > max_age)
            if stale:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or cannot tell: leave it to the age rule
    return True


def _build(root: Path, *, seed: int, n_videos: int, scale: float, progress: bool) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    rng = random.Random(f"haystack-{VERSION}-{seed}")
    balance = AnswerBalancer(rng)
    plans = [_plan_video(rng, balance, v, scale) for v in range(n_videos)]
    (root / "videos").mkdir()
    (root / "subtitles").mkdir()
    samples: list[Sample] = []
    bar = Progress(TextColumn("generating the haystack (first use only)"), BarColumn(), TimeRemainingColumn(),
                   transient=True, disable=not progress)
    task = bar.add_task("", total=sum(p.n_frames for p in plans))
    with bar:
        for p in plans:
            (root / "subtitles" / f"{p.name}.srt").write_text(srt_text(p.cues), encoding="utf-8")
            video = root / "videos" / f"{p.name}.mp4"
            _encode(p, video, np.random.default_rng([seed, p.index]), lambda n: bar.advance(task, n))
            samples += _samples(p)
    write_samples(root / JSONL_NAME, samples)


# ---- the plan of one video (all randomness happens here, in a fixed order) ----------------------


@dataclass
class _Needle:
    kind: str  # "word" | "shape"
    value: str
    start: float = 0.0
    end: float = 0.0

    def depth(self, duration: float) -> float:
        return (self.start + self.end) / 2 / duration

    def info(self, duration: float) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "start": round(self.start, 3),
                "end": round(self.end, 3), "depth": round(self.depth(duration), 4)}


@dataclass
class _Question:
    kind: str
    question: str
    correct: str
    distractors: list[str]
    position: int
    needles: list[_Needle]
    extra: dict[str, Any] = field(default_factory=dict)
    depth: bool = True


@dataclass
class _VideoPlan:
    index: int
    duration: int
    needles: list[_Needle]
    cues: list[tuple[float, float, str]]
    questions: list[_Question]
    style: dict[int, tuple] = field(default_factory=dict)
    """Per needle index: (size, colour, text colour, position fractions)."""

    @property
    def name(self) -> str:
        return f"hay-{self.index:03d}"

    @property
    def n_frames(self) -> int:
        return self.duration * FPS


class AnswerBalancer:
    """Answer positions: each option count cycles through shuffled rounds of all positions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.queues = rng, dict[int, list[int]]()

    def take(self, n: int) -> int:
        queue = self.queues.setdefault(n, [])
        if not queue:
            queue.extend(self.rng.sample(range(n), n))
        return queue.pop()


def _frame_time(t: float) -> float:
    return round(t * FPS) / FPS


def _whole_bin(slot: int, n_slots: int) -> int | None:
    """The depth bin (0-4) that slot lies in entirely, or None when it straddles two."""
    b = 5 * slot // n_slots
    return b if 5 * (slot + 1) <= (b + 1) * n_slots else None


def _plan_video(rng: random.Random, balance: AnswerBalancer, index: int, scale: float) -> _VideoPlan:
    duration = max(30, round(rng.randint(*BASE_SECONDS) * scale))
    words = rng.sample(WORDS, 7)
    singles, counted = words[:6], words[6]
    shapes = rng.sample(SHAPES, 2)
    count_pos = balance.take(4)
    count = rng.randint(max(2, count_pos + 1), 4)

    # Slots: equal parts of the video (10-12, so each 20% depth bin holds at least one whole slot),
    # one needle each. Repeats of the counted word never sit in adjacent slots; the five
    # single-needle question targets go to whole slots of five different depth bins.
    targets = [_Needle("word", w) for w in singles[:4]] + [_Needle("shape", shapes[0])]
    repeats = [_Needle("word", counted) for _ in range(count)]
    others = [_Needle("word", w) for w in singles[4:]] + [_Needle("shape", shapes[1])]
    n_slots = len(targets) + len(repeats) + len(others)
    slot_bin = [_whole_bin(i, n_slots) for i in range(n_slots)]
    for _ in range(1000):
        repeat_slots = sorted(rng.sample(range(n_slots), count))
        free = [i for i in range(n_slots) if i not in repeat_slots]
        if all(b - a > 1 for a, b in itertools.pairwise(repeat_slots)) and \
                all(any(slot_bin[i] == b for i in free) for b in range(5)):
            break
    else:  # pragma: no cover - cannot happen for 10-12 slots
        raise RuntimeError("haystack layout failed")
    slot_of: dict[int, int] = {}
    for needle, depth_bin in zip(targets, rng.sample(range(5), 5)):
        slot = rng.choice([i for i in free if slot_bin[i] == depth_bin])
        free.remove(slot)
        slot_of[id(needle)] = slot
    for needle, slot in zip(repeats, repeat_slots):
        slot_of[id(needle)] = slot
    for needle, slot in zip(others, rng.sample(free, len(free))):
        slot_of[id(needle)] = slot
    slot_len = duration / n_slots
    length = min(MAX_NEEDLE_SECONDS, 0.45 * slot_len)
    margin = 0.15 * slot_len
    needles = targets + repeats + others
    for needle in needles:
        start = slot_of[id(needle)] * slot_len + margin + rng.random() * (slot_len - 2 * margin - length)
        needle.start, needle.end = _frame_time(start), _frame_time(start + length)
    style = {i: _draw_style(rng, n) for i, n in enumerate(needles)}
    subtitled = [targets[3], others[0]]
    cues = _plan_cues(rng, duration, subtitled)

    def stamp(n: _Needle) -> tuple[int, str]:
        t = round((n.start + n.end) / 2)
        return t, f"{t // 60:02d}:{t % 60:02d}"

    def others_of(word: str) -> list[str]:  # distractors: words shown elsewhere in this video
        return [x for x in words if x != word]

    questions: list[_Question] = []
    for n in targets[:3]:
        t, mmss = stamp(n)
        questions.append(_Question("read", f"What word is shown on screen at {mmss}?", n.value,
                                   rng.sample(others_of(n.value), 4), balance.take(5), [n], {"time": t}))
    for n in subtitled:
        text = next(text for start, end, text in cues if start <= n.start and n.end <= end)
        question = f'Which word is shown on screen while the subtitle "{text}" is displayed?'
        questions.append(_Question("subtitle", question, n.value, rng.sample(others_of(n.value), 3),
                                   balance.take(4), [n], {"subtitle": text}))
    # order: the true statement names two single words in their order; false ones reverse true orders
    by_time = sorted((x for x in needles if x.kind == "word" and x.value != counted), key=lambda x: x.start)
    pairs = [(a, b) for i, a in enumerate(by_time) for b in by_time[i + 1:]]
    for a, b in rng.sample(pairs, 2):
        wrong = [f'"{b.value}" appears before "{a.value}"']
        for c, d in rng.sample(pairs, len(pairs)):
            statement = f'"{d.value}" appears before "{c.value}"'
            if len(wrong) < 3 and statement not in wrong:
                wrong.append(statement)
        questions.append(_Question("order", "Which statement about the words shown on screen is true?",
                                   f'"{a.value}" appears before "{b.value}"', wrong, balance.take(4), [a, b],
                                   depth=False))
    window = [str(count - count_pos + k) for k in range(4)]
    questions.append(_Question("count", f'How many times does the word "{counted}" appear on screen?',
                               str(count), [w for w in window if w != str(count)], count_pos, repeats, depth=False))
    for n in (targets[4], others[-1]):
        t, mmss = stamp(n)
        questions.append(_Question("shape", f"What shape is shown on screen at {mmss}?", n.value,
                                   [s for s in SHAPES if s != n.value], balance.take(5), [n], {"time": t}))
    for q in questions:  # distractor order is shuffled, except count's ascending window
        if q.kind != "count":
            rng.shuffle(q.distractors)
    return _VideoPlan(index, duration, needles, cues, questions, style)


def _plan_cues(rng: random.Random, duration: int, subtitled: list[_Needle]) -> list[tuple[float, float, str]]:
    """Non-overlapping cues of 2-4 s with short gaps; one spans each subtitled needle +-0.5 s."""
    sentences = [f"{s} {v} {p}." for s in _SUBJECTS for v in _VERBS for p in _PLACES]
    rng.shuffle(sentences)
    keys = [(round(max(0.0, n.start - 0.5), 3), round(n.end + 0.5, 3)) for n in subtitled]
    cues = [(a, b, sentences.pop()) for a, b in keys]
    t = rng.uniform(0.5, 2.0)
    while t < duration - 2.5:
        end = t + rng.uniform(2.0, 4.0)
        if all(end <= a - 0.2 or t >= b + 0.2 for a, b in keys):
            cues.append((round(t, 3), round(end, 3), sentences.pop()))
        t = end + rng.uniform(0.5, 2.5)
    return sorted(cues)


def _draw_style(rng: random.Random, needle: _Needle) -> tuple:
    size = rng.randint(34, 46) if needle.kind == "word" else rng.randint(70, 100)
    colour = tuple(rng.randint(200, 255) for _ in range(3)) if needle.kind == "word" else \
        rng.choice([(230, 40, 40), (40, 170, 60), (40, 90, 230), (240, 200, 30), (170, 60, 200)])
    ink = tuple(rng.randint(0, 60) for _ in range(3))
    return size, colour, ink, rng.random(), rng.random()


# ---- drawing and encoding ----------------------------------------------------------------------


def _sprite(needle: _Needle, style: tuple) -> tuple[np.ndarray, np.ndarray, int, int]:
    """RGB patch, its boolean mask, and its top-left corner in the frame."""
    from PIL import Image, ImageDraw, ImageFont

    size, colour, ink, fx, fy = style
    if needle.kind == "word":
        font = ImageFont.load_default(size=size)
        x0, y0, x1, y1 = (int(v) for v in font.getbbox(needle.value))  # whole pixels (typed float)
        pad = 12
        w, h = x1 - x0 + 2 * pad, y1 - y0 + 2 * pad
        img = Image.new("RGBA", (w, h), (0, 0, 0, 0))
        draw = ImageDraw.Draw(img)
        draw.rounded_rectangle((0, 0, w - 1, h - 1), radius=8, fill=(*colour, 255))
        draw.text((pad - x0, pad - y0), needle.value, font=font, fill=(*ink, 255))
    else:
        w = h = size
        img = Image.new("RGBA", (w, h), (0, 0, 0, 0))
        draw = ImageDraw.Draw(img)
        fill, outline = (*colour, 255), (*ink, 255)
        box = (2, 2, w - 3, h - 3)
        if needle.value == "circle":
            draw.ellipse(box, fill=fill, outline=outline, width=3)
        elif needle.value == "square":
            draw.rectangle(box, fill=fill, outline=outline, width=3)
        elif needle.value == "star":
            radii = [w / 2 - 3, (w / 2 - 3) * 0.45] * 5
            pts = [(w / 2 + r * np.sin(k * np.pi / 5), h / 2 - r * np.cos(k * np.pi / 5)) for k, r in enumerate(radii)]
            draw.polygon(pts, fill=fill, outline=outline, width=3)
        else:
            sides = {"triangle": 3, "hexagon": 6}[needle.value]
            draw.regular_polygon((w / 2, h / 2, w / 2 - 3), sides, fill=fill, outline=outline, width=3)
    arr = np.asarray(img)
    x = int(fx * (WIDTH - w - 8)) + 4
    y = int(fy * (HEIGHT - h - 8)) + 4
    return np.ascontiguousarray(arr[..., :3]), arr[..., 3] > 127, x, y


def _texture(rng: np.random.Generator) -> np.ndarray:
    """A smooth colour field twice the frame size, panned across to make moving background."""
    from PIL import Image

    base = rng.uniform(40, 170, size=(7, 12, 3)).astype(np.uint8)
    big = Image.fromarray(base).resize((2 * WIDTH, 2 * HEIGHT), Image.Resampling.BICUBIC)
    return np.asarray(big)


def _encode(plan: _VideoPlan, path: Path, rng: np.random.Generator, advance: Callable[[int], None]) -> None:
    import av

    texture = _texture(rng)
    px, py = rng.uniform(25, 60, size=2)  # pan periods in seconds
    phase = rng.uniform(0, 2 * np.pi, size=2)
    sprites = [(n, _sprite(n, plan.style[i])) for i, n in enumerate(plan.needles)]
    with av.open(str(path), "w", format="mp4") as out:
        stream = add_h264_stream(out, WIDTH, HEIGHT, FPS, gop=GOP, crf=23, preset="veryfast")
        for i in range(plan.n_frames):
            t = i / FPS
            x = int(WIDTH / 2 * (1 + np.sin(2 * np.pi * t / px + phase[0])))
            y = int(HEIGHT / 2 * (1 + np.sin(2 * np.pi * t / py + phase[1])))
            frame = texture[y:y + HEIGHT, x:x + WIDTH].copy()
            for needle, (rgb, mask, sx, sy) in sprites:
                if needle.start <= t + 1e-6 < needle.end:
                    region = frame[sy:sy + rgb.shape[0], sx:sx + rgb.shape[1]]
                    np.copyto(region, rgb, where=mask[..., None])
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts = i
            out.mux(stream.encode(video_frame))
            if i % 60 == 59:
                advance(60)
        out.mux(stream.encode(None))
    advance(plan.n_frames % 60)


# ---- samples ------------------------------------------------------------------------------------


def _samples(plan: _VideoPlan) -> list[Sample]:
    out = []
    for j, q in enumerate(plan.questions):
        options = list(q.distractors)
        options.insert(q.position, q.correct)
        labels: dict[str, str | list[str]] = {"kind": q.kind}
        if q.depth:
            labels["depth"] = DEPTH_BINS[min(4, int(5 * q.needles[0].depth(plan.duration)))]
        out.append(Sample(
            id=f"{plan.name}-{j}-{q.kind}",
            benchmark="haystack",
            video=VideoRef(path=f"videos/{plan.name}.mp4", duration=float(plan.duration)),
            question=q.question,
            options=options,
            answer=q.position,
            labels=labels,
            subtitles=SubtitleRef(path=f"subtitles/{plan.name}.srt"),
            extra={**q.extra, "needles": [n.info(plan.duration) for n in q.needles]},
        ))
    return out


class HaystackSettings(JsonlSettings):
    seed: int = Field(0, description="the generator's seed: another seed, another haystack (ignored with --data)")


@register_benchmark("haystack")
class HaystackBenchmark(JsonlBenchmark):
    """The built-in synthetic benchmark; `data` defaults to the generated default haystack."""

    Settings = HaystackSettings
    config: HaystackSettings
    audio_modes: ClassVar[tuple[str, ...]] = ()  # its generated videos are silent

    def data_path(self) -> Path:
        if self.settings.get("data"):
            return super().data_path()
        return ensure(self.config.seed, progress=True)

    def data_version(self) -> str | None:
        return None if self.settings.get("data") else f"haystack-{VERSION}"
