"""Generated videos for the selection tests (lvu build select, Neptune's static filter).

    scrolling_text_video(p)     # a road sign whose line of text scrolls across it: content changes in one band
    scoreboard_video(p)         # a still pitch with a scoreboard whose score changes five times
    noisy_static_video(p)       # one picture for the whole video, fresh sensor noise in every frame
    corpus(folder)              # the 20-video corpus of `lvu build select` (durations, sizes, subtitles, info.json)

Small and fast to write: PyAV (H.264) through lvu.media.testing.make_video_with_audio, drawing with
Pillow. The two "changing" videos change only a small part of the frame, which is what a static
filter comparing whole frames misses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from lvu.media.testing import make_video_with_audio

SIZE = (320, 240)
FPS = 10
SCORE_CHANGES = (4.0, 9.0, 14.0, 19.0, 24.0)
"""Seconds at which the scoreboard's score changes (five changes)."""


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _landscape(size: tuple[int, int], seed: int = 0) -> np.ndarray:
    """A still picture: sky and field gradients with a few fixed shapes."""
    w, h = size
    rng = np.random.default_rng(seed)
    img = np.zeros((h, w, 3), np.float32)
    sky = np.linspace(1.0, 0.7, h // 2, dtype=np.float32)[:, None, None]
    img[: h // 2] = np.asarray((110, 160, 220), np.float32) * sky
    img[h // 2:] = np.asarray((60, 140, 60), np.float32)
    picture = Image.fromarray(img.astype(np.uint8))
    draw = ImageDraw.Draw(picture)
    for _ in range(5):
        x, y = int(rng.integers(0, w - 40)), int(rng.integers(h // 2, h - 30))
        draw.rectangle((x, y, x + 30, y + 20), fill=tuple(int(c) for c in rng.integers(40, 200, 3)))
    return np.asarray(picture)


def scrolling_text_video(path: str | Path, *, seconds: float = 20.0, text: str = "A7 MUNICH 42 KM  EXIT 12 "
                         "AIRPORT  ROADWORKS AHEAD  REDUCE SPEED", speed_px_s: float = 40.0,
                         size: tuple[int, int] = SIZE, fps: int = FPS) -> Path:
    """A still roadside picture with a sign (a green band, 30 px tall) whose white text scrolls left
    at `speed_px_s`: only the band changes."""
    base = _landscape(size)
    w, _ = size
    font = _font(16)
    band = (20, 30, w - 20, 60)

    def draw(i: int) -> np.ndarray:
        img = Image.fromarray(base)
        d = ImageDraw.Draw(img)
        d.rectangle(band, fill=(20, 110, 60))
        x = band[2] - (i / fps) * speed_px_s
        d.text((x, band[1] + 6), text, font=font, fill="white")
        d.rectangle((0, band[1], band[0] - 1, band[3]), fill=tuple(int(c) for c in base[band[1], 0]))
        out = np.asarray(img).copy()
        out[band[1]:band[3] + 1, :band[0]] = base[band[1]:band[3] + 1, :band[0]]
        out[band[1]:band[3] + 1, band[2] + 1:] = base[band[1]:band[3] + 1, band[2] + 1:]
        return out

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return make_video_with_audio(path, [], 16_000, seconds=seconds, fps=fps, size=size, draw=draw)


def scoreboard_video(path: str | Path, *, seconds: float = 30.0, changes: tuple[float, ...] = SCORE_CHANGES,
                     size: tuple[int, int] = SIZE, fps: int = FPS) -> Path:
    """A still pitch with a small scoreboard in the top-left corner ("HOME 0 - 0 AWAY"); the score
    changes at each of `changes` seconds, nothing else moves."""
    base = _landscape(size, seed=1)
    font = _font(14)
    scores = [(0, 0), (1, 0), (1, 1), (2, 1), (2, 2), (3, 2)]

    def draw(i: int) -> np.ndarray:
        n = sum(i / fps >= t for t in changes)
        home, away = scores[min(n, len(scores) - 1)]
        img = Image.fromarray(base)
        d = ImageDraw.Draw(img)
        d.rectangle((8, 8, 120, 30), fill=(10, 10, 30))
        d.text((14, 11), f"HOME {home} - {away} AWAY", font=font, fill="white")
        return np.asarray(img)

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return make_video_with_audio(path, [], 16_000, seconds=seconds, fps=fps, size=size, draw=draw)


def noisy_static_video(path: str | Path, *, seconds: float = 20.0, noise: float = 4.0, size: tuple[int, int] = SIZE,
                       fps: int = FPS) -> Path:
    """One still picture for the whole video, with fresh Gaussian noise (`noise` grey levels) in
    every frame, as a camera sensor or a re-encode leaves: truly static content."""
    base = _landscape(size, seed=2).astype(np.float32)
    rng = np.random.default_rng(7)

    def draw(i: int) -> np.ndarray:
        return np.clip(base + rng.normal(0.0, noise, base.shape), 0, 255).astype(np.uint8)

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return make_video_with_audio(path, [], 16_000, seconds=seconds, fps=fps, size=size, draw=draw)


# ---- a corpus for `lvu build select` ------------------------------------------------------------

SRT = "1\n00:00:01,000 --> 00:00:03,000\n{text}\n\n"


def _plain_video(path: Path, seconds: float, size: tuple[int, int], fps: float) -> Path:
    """Coloured scenes changing every 3 s (cheap to encode at any size)."""
    w, h = size
    scenes = [np.full((h, w, 3), c, np.uint8) for c in ((200, 60, 60), (60, 160, 80), (60, 80, 200), (180, 180, 60))]

    def draw(i: int) -> np.ndarray:
        return scenes[int(i / fps // 3) % len(scenes)]

    path.parent.mkdir(parents=True, exist_ok=True)
    return make_video_with_audio(path, [], 16_000, seconds=seconds, fps=fps, size=size, draw=draw)


# (sub-folder, stem, seconds, size, subtitle files {tag: text}, info.json or None or "broken")
HD, SD, PORTRAIT = (1280, 720), (640, 360), (720, 1280)
OLD = {"view_count": 5000, "upload_date": "20200105", "language": "en"}
CORPUS: list[tuple[str, str, float, tuple[int, int], dict[str, str], Any]] = [
    ("news", "n01", 10, HD, {"en": "Good evening."}, {**OLD, "categories": ["News & Politics"]}),
    ("news", "n02", 12, HD, {}, {**OLD, "categories": ["News & Politics"]}),
    ("news", "n03", 30, HD, {"fr": "Bonsoir."}, {**OLD, "language": "fr", "categories": ["News & Politics"]}),
    ("news", "n04", 45, SD, {"en": "Hello."}, None),
    ("news", "n05", 20, HD, {"": "Untagged subtitles."}, {"view_count": 40, "upload_date": "20200105"}),
    ("travel", "t01", 14, HD, {"en": "Welcome to Rome."}, {**OLD, "categories": ["Travel & Events"]}),
    ("travel", "t02", 9, PORTRAIT, {}, None),
    ("travel", "t03", 50, HD, {"en": "The harbour."}, {**OLD, "upload_date": "20991231"}),
    ("travel", "t04", 5, HD, {}, None),
    ("travel", "t05", 90, HD, {}, {**OLD, "categories": ["Travel & Events"]}),
    ("cooking", "c01", 11, HD, {"en": "Chop the onions."}, "broken"),
    ("cooking", "c02", 13, HD, {"en": "Stir."}, {**OLD, "age_limit": 18}),
    ("cooking", "c03", 25, HD, {}, {"view_count": 300}),
    ("cooking", "c04", 40, HD, {"en": "Serve."}, {**OLD, "safety_labels": ["racy"]}),
    ("cooking", "c05", 200, HD, {"en": "Bake for an hour."}, OLD),
    ("", "x01", 15, HD, {}, None),
    ("", "x02", 16, (1920, 1080), {"en": "Full HD."}, None),
    ("", "x03", 240, SD, {}, None),
    ("", "x04", 960, HD, {"en": "A long lecture."}, OLD),
    ("", "x05", 0, HD, {}, None),  # not a video: garbage bytes named .mp4
]


def corpus(folder: str | Path, *, fps: float = 1.0, long: bool = True) -> Path:
    """The 20-video corpus (CORPUS): durations across LongVideoBench's groups and between them,
    720p / 360p / portrait / 1080p, English, French, untagged and no subtitles, info.json with and
    without views / upload dates / age limits / safety labels, a broken info.json and an unreadable
    file. `long=False` leaves out the videos over 60 s (fast tests)."""
    root = Path(folder)
    for sub, stem, seconds, size, subs, info in CORPUS:
        if not long and seconds > 60:
            continue
        d = root / sub if sub else root
        d.mkdir(parents=True, exist_ok=True)
        if seconds == 0:
            (d / f"{stem}.mp4").write_bytes(b"\x00not a video" * 300)
            continue
        _plain_video(d / f"{stem}.mp4", seconds, size, fps)
        for tag, text in subs.items():
            (d / f"{stem}{'.' + tag if tag else ''}.srt").write_text(SRT.format(text=text), encoding="utf-8")
        if info == "broken":
            (d / f"{stem}.info.json").write_text("{not json", encoding="utf-8")
        elif info is not None:
            (d / f"{stem}.info.json").write_text(json.dumps(info), encoding="utf-8")
    return root
