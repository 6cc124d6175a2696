"""Generated videos with real structure for the `lvu build` tests (small: 320x240, 10 fps, ~16 s).

    multi_shot_video(p)                      # 3 shots of different colour and burnt-in text, cuts at 6 s, 12 s
    multi_shot_video(p, speech="...")        # ... with the sentence spoken by eSpeak NG from 0.5 s
    static_video(p)                          # one picture for 16 s with a voice-over
    talking_head_video(p)                    # a face filling ~2/3 of the frame for 12 s, then a 4 s cutaway

The face is matplotlib's sample photograph of Grace Hopper (mpl-data/sample_data/grace_hopper.jpg,
shipped inside matplotlib, a core dependency): dlib's frontal face detector finds it reliably,
which a drawn face does not guarantee. Speech comes from lvu.media.testing.speak (the eSpeak NG
library of the `espeakng-loader` wheel); videos are written by make_video_with_audio (PyAV, H.264 + AAC).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from lvu.media.testing import make_video_with_audio, speak

SIZE = (320, 240)
FPS = 10
SPEECH_START = 0.5
"""Seconds into the video where the spoken track starts."""
VOICE_OVER = "Welcome to the garden tour. Today we plant seven tomato seedlings."


@dataclass(frozen=True)
class ShotSpec:
    """One shot: how long, its dominant colour, the text burnt into it."""

    seconds: float
    colour: tuple[int, int, int]
    text: str = ""


SHOTS = (
    ShotSpec(6.0, (200, 40, 40), "RED HARBOR"),
    ShotSpec(6.0, (40, 160, 60), "GREEN VALLEY"),
    ShotSpec(6.0, (40, 70, 200), "BLUE MOUNTAIN"),
)


def cut_times(shots: tuple[ShotSpec, ...] | list[ShotSpec] = SHOTS) -> list[float]:
    """Where each shot after the first starts, in seconds."""
    return [float(t) for t in np.cumsum([s.seconds for s in shots])[:-1]]


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _caption(img: Image.Image, text: str) -> None:
    """White text with a black outline, centred in the lower third."""
    if not text:
        return
    draw = ImageDraw.Draw(img)
    font = _font(30)
    w, h = img.size
    x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=font, stroke_width=2)
    draw.text(((w - (x1 - x0)) // 2, int(h * 0.68)), text, font=font, fill="white",
              stroke_width=2, stroke_fill="black")


def _shot_picture(spec: ShotSpec, k: int, size: tuple[int, int]) -> np.ndarray:
    """A vertical gradient of the shot's colour, a ball moving across it (frame k) and its text."""
    w, h = size
    shade = np.linspace(1.0, 0.55, h, dtype=np.float32)[:, None, None]
    base = (np.asarray(spec.colour, np.float32)[None, None, :] * shade).repeat(w, axis=1)
    img = Image.fromarray(base.astype(np.uint8))
    draw = ImageDraw.Draw(img)
    cx, r = 30 + (k * 6) % (w - 60), 18
    draw.ellipse((cx - r, 40 - r, cx + r, 40 + r), fill=(240, 230, 120))
    _caption(img, spec.text)
    return np.asarray(img)


def _audio(path: str | Path, speech: str | None) -> tuple[list[tuple[float, np.ndarray]], int]:
    """The clips to mux (and their rate); also makes the video's folder."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if not speech:
        return [], 16_000
    samples, rate = speak(speech)
    return [(SPEECH_START, samples)], rate


def multi_shot_video(path: str | Path, shots: tuple[ShotSpec, ...] | list[ShotSpec] = SHOTS, *,
                     speech: str | None = None, fps: int = FPS, size: tuple[int, int] = SIZE) -> Path:
    """Shots of clearly different colour and text, cut at `cut_times(shots)`; `speech` is spoken
    from SPEECH_START (it must fit in the video). Returns the .mp4 path."""
    starts = [round(t * fps) for t in [0.0, *cut_times(shots)]]

    def draw(i: int) -> np.ndarray:
        n = max(k for k, s in enumerate(starts) if s <= i)
        return _shot_picture(shots[n], i - starts[n], size)

    clips, rate = _audio(path, speech)
    return make_video_with_audio(path, clips, rate, seconds=sum(s.seconds for s in shots), fps=fps,
                                 size=size, draw=draw)


def static_video(path: str | Path, *, seconds: float = 16.0, speech: str | None = VOICE_OVER,
                 fps: int = FPS, size: tuple[int, int] = SIZE) -> Path:
    """One still picture (a slide with a title) for `seconds`, with a voice-over by default."""
    picture = _shot_picture(ShotSpec(seconds, (150, 110, 60), "GARDEN TOUR"), 0, size)
    clips, rate = _audio(path, speech)
    return make_video_with_audio(path, clips, rate, seconds=seconds, fps=fps, size=size,
                                 draw=lambda i: picture)


def face_photo() -> Image.Image:
    """matplotlib's sample portrait of Grace Hopper (512x600, a frontal face ~216 px tall)."""
    from matplotlib.cbook import get_sample_data

    return Image.open(get_sample_data("grace_hopper.jpg", asfileobj=False)).convert("RGB")


def talking_head_video(path: str | Path, *, face_seconds: float = 12.0, cutaway_seconds: float = 4.0,
                       speech: str | None = None, fps: int = FPS, size: tuple[int, int] = SIZE) -> Path:
    """A face filling about 2/3 of the frame height, drifting a few pixels (a presenter), for
    `face_seconds`, then a cutaway without a face: 75 % talking-head frames by default, and more
    than one visual cluster, so only the talking-head filter rejects it."""
    photo = face_photo()
    w, h = size
    cw, ch = 432, round(432 * h / w)  # a crop around the face (161, 137, 216 x 216) at the frame's aspect
    cutaway = _shot_picture(ShotSpec(cutaway_seconds, (60, 60, 70), "THE END"), 0, size)

    def draw(i: int) -> np.ndarray:
        if i >= round(face_seconds * fps):
            return cutaway
        dx, dy = round(6 * np.sin(i / 7)), round(4 * np.cos(i / 5))
        x0, y0 = 53 + dx, 83 + dy
        return np.asarray(photo.crop((x0, y0, x0 + cw, y0 + ch)).resize(size, Image.BICUBIC))

    clips, rate = _audio(path, speech)
    return make_video_with_audio(path, clips, rate, seconds=face_seconds + cutaway_seconds, fps=fps,
                                 size=size, draw=draw)


# ---- test plumbing ------------------------------------------------------------------------------


@contextmanager
def video_dir(tmp_path_factory, name: str) -> Iterator[Path]:
    """A fresh folder for a test module's videos, with lvu's caches ($LVU_CACHE_DIR) inside it
    while the module's tests run (for module-scoped fixtures, which cannot use `monkeypatch`)."""
    d = tmp_path_factory.mktemp(name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(d / "cache"))
        yield d


def unreadable_videos(folder: Path) -> list[Path]:
    """A file of garbage bytes named .mp4 and a path that does not exist."""
    broken = folder / "broken.mp4"
    broken.write_bytes(b"\x00not a video" * 500)
    return [broken, folder / "missing.mp4"]


def assert_one_line_naming(error: BaseException, path: Path) -> None:
    """The error message is one line and names the file."""
    assert str(path) in str(error) and "\n" not in str(error), str(error)
