"""Needles for `lvu build needle`: what they are (a video clip, a still image shown N seconds, or
rendered text), where they come from (a folder of files or a JSONL file), and their frames and
audio at a background's size and frame rate (scaled to fit, letterboxed, resampled in time).

A needle JSONL line (paths relative to the file's folder; exactly one of video / image / text):

    {"video": "clips/making_jewelry.mp4", "question": "...", "candidates": ["..", ..], "answer": ".."}
    {"image": "cards/red_kite.png", "seconds": 3, "label": "red kite"}
    {"text": "MANGO", "seconds": 2}

`label` defaults to the file name stem with _ and - as spaces ("making jewelry"), or the text
itself; the question is MLVU's shape (`candidates` + `answer` as the option text) or lvu's
(`options` + `answer` as a 0-based index); without one, the build asks which label appears.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from lvu.construct.splice_audio import AudioFormat, decode_audio
from lvu.errors import DataError, LvuError
from lvu.media.av_io import _open
from lvu.textlines import text_lines

VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".gif")
TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
KINDS = ("video", "image", "text")
TEXT_INK, TEXT_PAPER = (245, 245, 240), (24, 26, 32)


@dataclass(frozen=True)
class Needle:
    kind: str
    """video | image | text"""
    source: str
    """The file (video, image) or the text shown."""
    label: str
    seconds: float | None = None
    """How long it is shown (image, text; a video is cut to it). None: the whole clip."""
    question: str | None = None
    options: tuple[str, ...] = ()
    answer: int | None = None
    where: str = ""
    """file:line or the file, for messages."""
    duration: float = field(default=0.0, compare=False)
    """Seconds it lasts at its own frame rate (videos: probed; others: `seconds`)."""
    has_audio: bool = field(default=False, compare=False)
    offset: float = 0.0
    """Seconds into the source video where it starts (a segment of a longer video; 0: its start)."""
    group: str = ""
    """The source video whose consecutive segments it is one of (ActivityNet-Captions; else "")."""
    index: int = -1
    """Its place among its group's segments (0, 1, ...; -1: not a segment)."""

    @property
    def name(self) -> str:
        """A short id-safe name (file stem or text; a segment: its video and number)."""
        base = Path(self.source).stem if self.kind != "text" else self.source
        if self.group:
            base = f"{self.group}-{self.index}"
        return re.sub(r"[^A-Za-z0-9]+", "-", base).strip("-").lower()[:40] or self.kind

    def identity(self) -> dict[str, Any]:
        """What decides its pixels and sound (for a build's content keys)."""
        from lvu.media.identity import video_fingerprint

        what = video_fingerprint(self.source) if self.kind != "text" else self.source
        offset = {"offset": self.offset} if self.offset else {}  # keys of whole-clip needles stay as they were
        return {"kind": self.kind, "what": what, "seconds": self.seconds, **offset}


def label_of(path: str | Path) -> str:
    """making_jewelry.mp4 -> "making jewelry"."""
    return " ".join(re.split(r"[_\-\s]+", Path(path).stem)).strip()


NEEDLE_SUFFIXES = VIDEO_SUFFIXES + IMAGE_SUFFIXES + TEXT_SUFFIXES


def load_needles(source: str | Path, *, seconds: float = 3.0) -> list[Needle]:
    """The needles of a folder (video, image and .txt files; sorted by name), one such file, or a
    JSONL file (.jsonl). `seconds`: how long images and text are shown when a line does not say.
    A sub-folder of a needles folder is one label: its files are several needles of it (MLVU's
    Action Count inserts several different clips of one action), labelled with the folder's name."""
    source = Path(source)
    if not source.exists():
        raise DataError(f"{source}: not found — pass a folder of needle clips/images or a needle JSONL file")
    if source.is_dir():
        needles = []
        for p in sorted(source.iterdir()):
            if p.is_dir():
                needles += [_from_file(f, seconds, label=label_of(p.name)) for f in sorted(p.iterdir())
                            if f.suffix.lower() in NEEDLE_SUFFIXES]
            elif p.suffix.lower() in NEEDLE_SUFFIXES:
                needles.append(_from_file(p, seconds))
        if not needles:
            raise DataError(f"{source}: no needle files (videos {', '.join(VIDEO_SUFFIXES[:4])}, images, .txt) — "
                            "put the needles there or pass a needle JSONL file")
        return needles
    if source.suffix.lower() in NEEDLE_SUFFIXES:
        return [_from_file(source, seconds)]  # one needle, as -b takes one video
    if source.suffix.lower() not in JSONL_SUFFIXES:
        raise DataError(f"{source}: not a needle (videos {', '.join(VIDEO_SUFFIXES[:4])}, images, .txt) nor a needle "
                        f"JSONL file ({', '.join(JSONL_SUFFIXES)}) — rename it or pass its folder")
    needles = []
    for n, line in enumerate(text_lines(source.read_text(encoding="utf-8")), start=1):
        if line.strip():
            needles.append(_from_record(line, f"{source}:{n}", source.parent, seconds))
    if not needles:
        raise DataError(f"{source}: no needle lines — one JSON object per line with a video, image or text")
    return needles


def _from_file(path: Path, seconds: float, *, label: str | None = None) -> Needle:
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        text = " ".join(path.read_text(encoding="utf-8").split())
        if not text:
            raise DataError(f"{path}: empty text needle — write the text to show in it")
        return Needle("text", text, label or text, seconds, where=str(path), duration=seconds)
    if suffix in VIDEO_SUFFIXES:
        return _checked(Needle("video", str(path), label or label_of(path), None, where=str(path)))
    # an image is shown `seconds`, as from a JSONL line (it once lasted one frame: duration unset)
    return _checked(Needle("image", str(path), label or label_of(path), seconds, where=str(path), duration=seconds))


def _from_record(line: str, where: str, base: Path, default_seconds: float) -> Needle:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not JSON ({e.msg}) — one JSON object per line") from None
    if not isinstance(rec, dict):
        raise DataError(f"{where}: not a JSON object — write {{\"video\": ...}}, {{\"image\": ...}} or {{\"text\": ...}}")
    kinds = [k for k in KINDS if rec.get(k)]
    if len(kinds) != 1:
        raise DataError(f"{where}: give exactly one of video, image, text (got {', '.join(kinds) or 'none'})")
    kind = kinds[0]
    seconds = rec.get("seconds")
    if seconds is not None and (not isinstance(seconds, (int, float)) or seconds <= 0):
        raise DataError(f"{where}: seconds {seconds!r} is not a positive number")
    if kind == "text":
        text = " ".join(str(rec["text"]).split())
        source, label = text, str(rec.get("label") or text)
    else:
        path = Path(str(rec[kind]))
        source = str(path if path.is_absolute() else base / path)
        label = str(rec.get("label") or label_of(path))
    if kind != "video" and seconds is None:
        seconds = default_seconds
    question, options, answer = _question(rec, where)
    needle = Needle(kind, source, label, float(seconds) if seconds is not None else None, question, options,
                    answer, where, duration=float(seconds or 0))
    return _checked(needle) if kind != "text" else needle


def _question(rec: dict, where: str) -> tuple[str | None, tuple[str, ...], int | None]:
    question = rec.get("question")
    if question is None:
        return None, (), None
    options = rec.get("options", rec.get("candidates"))
    if not isinstance(question, str) or not isinstance(options, list) or len(options) < 2:
        raise DataError(f"{where}: a question needs `options` (or MLVU's `candidates`): a list of 2 or more texts")
    options = [str(o) for o in options]
    answer = rec.get("answer")
    if isinstance(answer, str):  # MLVU: the answer is the option's text (the last equal one, as check_ans)
        index = max((i for i, o in enumerate(options) if o == answer), default=None)
    elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(options):
        index = answer
    else:
        index = None
    if index is None:
        raise DataError(f"{where}: answer {answer!r} is neither an option's text nor a 0-based index into "
                        f"{len(options)} options")
    return question, tuple(options), index


def _checked(needle: Needle) -> Needle:
    """The needle with its duration and audio read from its file; one-line errors for unreadable ones."""
    path = Path(needle.source)
    if needle.kind == "image":
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path) as img:
                img.verify()
        except (OSError, UnidentifiedImageError, SyntaxError) as e:
            raise DataError(f"{needle.where}: needle image {path} cannot be read ({type(e).__name__}) — "
                            "use a PNG or JPEG file") from None
        return needle
    from lvu.media.video import probe

    try:
        info = probe(path)
        container, _ = _open(path)
        has_audio = bool(container.streams.audio)
        container.close()
    except LvuError as e:  # unreadable: say which needle line when it came from a JSONL file
        raise DataError(str(e) if needle.where == needle.source else f"{needle.where}: {e}") from None
    room = info.duration - needle.offset
    duration = room if needle.seconds is None else min(room, needle.seconds)
    if needle.offset and (needle.offset >= info.duration or needle.offset + (needle.seconds or 0) > info.duration + 0.5):
        raise DataError(f"{needle.where}: segment {needle.offset:g}-{needle.offset + (needle.seconds or 0):g} s is "
                        f"outside the video ({info.duration:.2f} s) — fix the timestamps")
    if not needle.offset and needle.seconds is not None and needle.seconds > info.duration + 1e-6:
        raise DataError(f"{needle.where}: seconds {needle.seconds:g} is longer than the clip ({info.duration:.2f} s) "
                        "— drop `seconds` or use a longer clip")
    return dataclasses.replace(needle, duration=duration, has_audio=has_audio)


# ---- pixels and samples at a background's size and rate ---------------------------------------------


def frame_count(needle: Needle, rate: Fraction) -> int:
    """Frames the needle lasts at `rate` (at least one)."""
    return max(1, round(needle.duration * rate))


def letterbox(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    """The picture scaled to fit width x height (aspect kept) and centred on black."""
    from PIL import Image

    h, w = rgb.shape[:2]
    scale = min(width / w, height / h)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    if (nw, nh) == (width, height) and (w, h) == (width, height):
        return np.ascontiguousarray(rgb)
    small = np.asarray(Image.fromarray(rgb).resize((nw, nh), Image.Resampling.BILINEAR)) if (nw, nh) != (w, h) else rgb
    out = np.zeros((height, width, 3), np.uint8)
    y, x = (height - nh) // 2, (width - nw) // 2
    out[y:y + nh, x:x + nw] = small
    return out


def _letterboxed(frame: Any, width: int, height: int) -> np.ndarray:
    """A decoded frame scaled by swscale (fast, no PIL round trip) and centred on black."""
    scale = min(width / frame.width, height / frame.height)
    nw, nh = max(2, round(frame.width * scale)), max(2, round(frame.height * scale))
    small = frame.reformat(width=nw, height=nh, format="rgb24", interpolation="BILINEAR", threads=1).to_ndarray()
    if (nw, nh) == (width, height):
        return small
    out = np.zeros((height, width, 3), np.uint8)
    y, x = (height - nh) // 2, (width - nw) // 2
    out[y:y + nh, x:x + nw] = small[:height, :width]
    return out


def render_text(text: str, width: int, height: int) -> np.ndarray:
    """A title card: the text as large as fits (wrapped into up to 3 lines), light on dark."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width, height), TEXT_PAPER)
    draw = ImageDraw.Draw(img)
    words = text.split()
    best: tuple[int, list[str]] | None = None
    for lines_wanted in (1, 2, 3):
        per = -(-len(words) // lines_wanted)
        lines = [" ".join(words[i:i + per]) for i in range(0, len(words), per)]
        size = _fit_size(lines, width * 0.86, height * 0.7, draw, ImageFont)
        if best is None or size > best[0]:
            best = (size, lines)
    assert best is not None  # (the loop ran)
    size, lines = best
    font = ImageFont.load_default(size=size)
    block = "\n".join(lines)
    x0, y0, x1, y1 = draw.multiline_textbbox((0, 0), block, font=font, align="center")
    draw.multiline_text(((width - (x1 - x0)) / 2 - x0, (height - (y1 - y0)) / 2 - y0), block, font=font,
                        fill=TEXT_INK, align="center")
    return np.asarray(img)


def _fit_size(lines: list[str], max_w: float, max_h: float, draw: Any, font_module: Any) -> int:
    lo, hi = 6, 400
    while lo < hi:  # the largest size whose block fits
        mid = (lo + hi + 1) // 2
        x0, y0, x1, y1 = draw.multiline_textbbox((0, 0), "\n".join(lines), font=font_module.load_default(size=mid))
        if x1 - x0 <= max_w and y1 - y0 <= max_h:
            lo = mid
        else:
            hi = mid - 1
    return lo


def needle_frames(needle: Needle, width: int, height: int, rate: Fraction) -> Iterator[np.ndarray]:
    """The needle's frames (RGB, width x height) at `rate`: frame j shows what is on screen at j / rate."""
    n = frame_count(needle, rate)
    if needle.kind != "video":
        if needle.kind == "text":
            picture = render_text(needle.source, width, height)
        else:
            from PIL import Image

            with Image.open(needle.source) as img:
                picture = letterbox(np.asarray(img.convert("RGB")), width, height)
        for _ in range(n):
            yield picture
        return
    container, stream = _open(needle.source)
    stream.thread_type = "AUTO"
    try:
        j, first, shown = 0, None, None
        if needle.offset:  # a segment: from the keyframe before it; frames before its start only stand in
            first = float(stream.start_time * stream.time_base) if stream.start_time is not None else 0.0
            first += needle.offset
            container.seek(int(first / stream.time_base), stream=stream, backward=True)
        for frame in container.decode(stream):
            t = float(frame.time) if frame.time is not None else 0.0
            first = t if first is None else first
            while shown is not None and j < n and j / rate < t - first - 1e-6:
                yield shown
                j += 1
            if j >= n:
                return
            shown = _letterboxed(frame, width, height)
        while shown is not None and j < n:
            yield shown
            j += 1
    finally:
        container.close()


def needle_audio(needle: Needle, n: int, fmt: AudioFormat) -> np.ndarray | None:
    """The needle's first n samples in `fmt` (None: it has no sound; the splice fills silence)."""
    if needle.kind != "video" or not needle.has_audio:
        return None
    samples = decode_audio(needle.source, fmt)
    skip = round(needle.offset * fmt.rate)
    return None if samples is None else samples[:, skip:skip + n]


# ---- ActivityNet-Captions segments (MLVU's second Action Order form) ----------------------------------


def load_segments(captions: str | Path, videos: str | Path, *, problems: list[str]) -> list[Needle]:
    """Each captioned segment of an ActivityNet-Captions-style file as a needle cut from its video:

        {"v_QOlSCBRmfWY": {"duration": 82.73, "timestamps": [[0.83, 19.86], ...], "sentences": ["...", ...]}}

    The video is VIDEOS/<id>.<ext> (or without ActivityNet's `v_` prefix). Segments are taken in
    time order; one that overlaps the one kept before it starts where that one ends (dropped when
    less than a second is left), and one outside the video is dropped: each such record, a missing
    video and a malformed record is one line in `problems` (file and record), and the others are kept."""
    captions, videos = Path(captions), Path(videos)
    if not captions.is_file():
        raise DataError(f"{captions}: not found — pass the ActivityNet-Captions file (e.g. train.json)")
    try:
        data = json.loads(captions.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise DataError(f"{captions}: not a readable JSON file ({type(e).__name__}) — pass an ActivityNet-Captions "
                        'file: {"<id>": {"duration": s, "timestamps": [[s, e], ...], "sentences": [...]}}') from None
    if not isinstance(data, dict) or not data:
        raise DataError(f"{captions}: not an ActivityNet-Captions file — expected an object of "
                        '{"<id>": {"duration": s, "timestamps": [[s, e], ...], "sentences": [...]}}')
    if not videos.is_dir():
        raise DataError(f"{videos}: not a folder — with --segments, --needles is the folder of the source videos")
    files = {p.stem: p for p in sorted(videos.iterdir()) if p.suffix.lower() in VIDEO_SUFFIXES}
    out: list[Needle] = []
    for vid, rec in data.items():
        where = f"{captions}: {vid}"
        spans = _segment_spans(rec, where, problems)
        if not spans:
            continue
        path = files.get(vid) or files.get(vid.removeprefix("v_"))
        if path is None:
            problems.append(f"{where}: no video {vid}.mp4 (or {vid.removeprefix('v_')}.mp4) in {videos} — its "
                            "segments are left out")
            continue
        for k, (start, end, sentence, n) in enumerate(spans):
            try:
                out.append(_checked(Needle("video", str(path), sentence, end - start, where=f"{where} segment {n}",
                                           offset=start, group=vid, index=k)))
            except DataError as e:
                problems.append(str(e))
    return out


def _segment_spans(rec: Any, where: str, problems: list[str]) -> list[tuple[float, float, str, int]]:
    """(start, end, sentence, record number) of one video's segments, in time order, without overlaps."""
    if not isinstance(rec, dict) or not isinstance(rec.get("timestamps"), list) or \
            not isinstance(rec.get("sentences"), list) or len(rec["timestamps"]) != len(rec["sentences"]):
        problems.append(f"{where}: needs `timestamps` and `sentences`, lists of one length — left out")
        return []
    duration = rec.get("duration")
    found = []
    for n, (span, sentence) in enumerate(zip(rec["timestamps"], rec["sentences"])):
        ok = isinstance(span, list) and len(span) == 2 and all(isinstance(x, (int, float)) for x in span)
        text = " ".join(str(sentence).split()) if isinstance(sentence, str) else ""
        if not ok or not text or not 0 <= span[0] < span[1] or \
                (isinstance(duration, (int, float)) and span[1] > duration + 0.5):
            problems.append(f"{where} segment {n}: span {span!r} is not inside 0-{duration} s (or its sentence is "
                            "empty) — left out")
            continue
        found.append((float(span[0]), float(span[1]), text, n))
    kept: list[tuple[float, float, str, int]] = []
    for start, end, text, n in sorted(found):
        if kept and start < kept[-1][1]:
            if end - kept[-1][1] < 1.0:
                problems.append(f"{where} segment {n}: {start:g}-{end:g} s lies inside segment {kept[-1][3]} — left out")
                continue
            problems.append(f"{where} segment {n}: {start:g}-{end:g} s overlaps segment {kept[-1][3]}; it starts at "
                            f"{kept[-1][1]:g} s")
            start = kept[-1][1]
        kept.append((start, end, text, n))
    return kept
