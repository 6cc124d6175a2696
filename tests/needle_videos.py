"""Generated backgrounds and needles for the `lvu build needle` / `ladder` tests (small: 160x96, 10 fps).

    barcode_background(p, seconds=30)   # every frame shows its number (lvu.media.testing.draw_frame),
                                        # a red marker top-left, H.264 with B-frames, a keyframe every
                                        # `gop` frames, quiet noise as mono AAC, an SRT beside it
    clip_needle(p)                      # a square magenta clip with a loud 880 Hz tone (letterboxed)
    image_needle(p)                     # a wide green PNG (letterboxed)
    kind_of(frame)                      # "clip" / "image" / "text", or the background frame number
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from lvu.media.encode import add_h264_stream
from lvu.media.subtitles import srt_text
from lvu.media.testing import draw_frame, read_index

SIZE = (160, 96)
FPS = 10
RATE = 16000
NOISE = 0.02
CUES = [(1.0, 4.0, "first cue"), (9.0, 13.0, "second cue"), (20.0, 26.0, "third cue")]


def _write_audio(out, stream, samples: np.ndarray, rate: int = RATE) -> None:
    for k in range(0, len(samples), 1024):
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples[None, k:k + 1024]), format="fltp", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = rate, k, Fraction(1, rate)
        out.mux(stream.encode(frame))
    out.mux(stream.encode(None))


def barcode_background(path: Path, *, seconds: float = 30, gop: int = 10, audio: bool = True,
                       cues: list[tuple[float, float, str]] | None = CUES, size: tuple[int, int] = SIZE) -> Path:
    n = round(seconds * FPS)
    with av.open(str(path), "w", format="mp4") as out:
        stream = add_h264_stream(out, *size, FPS, gop=gop, crf=20)
        sound = out.add_stream("aac", rate=RATE, layout="mono") if audio else None  # streams before any packet
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(draw_frame(i, size), format="rgb24")
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
        if audio:
            noise = np.random.default_rng(0).standard_normal(round(seconds * RATE)).astype(np.float32) * NOISE
            _write_audio(out, sound, noise)
    if cues:
        path.with_suffix(".srt").write_text(srt_text(cues), encoding="utf-8")
    return path


def clip_needle(path: Path, *, seconds: float = 1.2, fps: int = 25, tone: bool = True) -> Path:
    """A magenta square clip at another frame rate and shape than the background, with a tone."""
    with av.open(str(path), "w", format="mp4") as out:
        stream = add_h264_stream(out, 80, 80, fps, gop=fps)
        sound = out.add_stream("aac", rate=RATE, layout="mono") if tone else None
        picture = np.zeros((80, 80, 3), np.uint8)
        picture[...] = (200, 40, 200)
        for i in range(round(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
        if tone:
            t = np.arange(round(seconds * RATE)) / RATE
            _write_audio(out, sound, (0.5 * np.sin(2 * np.pi * 880 * t)).astype(np.float32))
    return path


def image_needle(path: Path) -> Path:
    picture = np.zeros((60, 240, 3), np.uint8)
    picture[...] = (40, 200, 40)
    Image.fromarray(picture).save(path)
    return path


def kind_of(frame: np.ndarray) -> str | int:
    """What a decoded output frame shows: a needle kind, or the background frame number."""
    h, w = frame.shape[:2]
    corner = frame[: h // 8, : w // 8].reshape(-1, 3).mean(axis=0)
    if corner[0] > 150 and corner[1] < 90:  # the background's red marker
        return read_index(frame)
    centre = frame[h // 2 - 4:h // 2 + 4, w // 2 - 4:w // 2 + 4].reshape(-1, 3).mean(axis=0)
    if centre[0] > 150 and centre[2] > 150 and centre[1] < 100:
        return "clip"
    if centre[1] > 150 and centre[0] < 100:
        return "image"
    return "text"


def decoded(path: Path) -> tuple[list[str | int], np.ndarray | None, float]:
    """(what each frame shows, the mono audio samples or None, the video stream's duration in s)."""
    with av.open(str(path)) as c:
        kinds = [kind_of(f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
        v = c.streams.video[0]
        duration = float(v.duration * v.time_base)
    with av.open(str(path)) as c:
        if not c.streams.audio:
            return kinds, None, duration
        audio = np.concatenate([f.to_ndarray()[0] for f in c.decode(audio=0)])
    return kinds, audio, duration


def needle_media(root: Path) -> dict[str, Path]:
    """The needle tests' inputs under `root`: bg/street.mp4 (30 s barcode background with sound and
    subtitles), needles/ with a clip, an image and a text needle."""
    (root / "bg").mkdir()
    (root / "needles").mkdir()
    barcode_background(root / "bg" / "street.mp4")
    clip_needle(root / "needles" / "making_jewelry.mp4")
    image_needle(root / "needles" / "green_card.png")
    (root / "needles" / "cedar.txt").write_text("CEDAR")
    return {"bg": root / "bg", "needles": root / "needles", "root": root}
