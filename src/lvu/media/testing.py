"""Synthetic test videos whose frame numbers can be read back from their pixels.

Each frame carries its index as a 16-bit barcode (4x4 grid of black/white blocks, robust to
H.264 compression and to downscaling) plus a red marker in the top-left corner of the *coded*
picture, so tests can check exactness, resizing and rotation without a reference decode.
Encoded with PyAV's bundled libx264 (no system FFmpeg needed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

BITS = 16
_ROWS, _COLS = 4, 4
# Frame-duration pattern (in units of 1/fps) for VFR videos: irregular but deterministic.
_VFR_PATTERN = (1, 1, 2, 1, 3, 1, 1, 2)


@dataclass
class SyntheticVideo:
    """What `make_video` wrote: enough ground truth to check a decoder without decoding."""

    path: Path
    times: list[float] = field(repr=False)
    """Presentation time in seconds of each frame, in display order."""
    fps: float
    gop: int
    size: tuple[int, int]
    """Coded (width, height), before any display rotation."""
    rotation: int = 0

    @property
    def num_frames(self) -> int:
        return len(self.times)

    @property
    def duration(self) -> float:
        """End of the last frame, taking it to last 1/fps (what muxers record for it)."""
        return self.times[-1] + 1 / self.fps


def draw_frame(index: int, size: tuple[int, int]) -> np.ndarray:
    """RGB uint8 frame of `size` (w, h) showing `index` as a barcode below a marker strip."""
    w, h = size
    img = np.full((h, w, 3), 128, np.uint8)
    top = h // 4
    img[:top, : w // 4] = (220, 30, 30)  # orientation marker: top-left of the coded picture
    bits = [(index >> b) & 1 for b in range(BITS)]
    bh, bw = (h - top) // _ROWS, w // _COLS
    for k, bit in enumerate(bits):
        r, c = divmod(k, _COLS)
        img[top + r * bh : top + (r + 1) * bh, c * bw : (c + 1) * bw] = 235 if bit else 16
    return img


def read_index(frame: np.ndarray, rotation: int = 0) -> int:
    """Frame number encoded by `draw_frame`; `rotation` = clockwise degrees applied for display."""
    img = np.rot90(frame, k=(rotation // 90) % 4)  # undo the clockwise display rotation
    h, w = img.shape[:2]
    top = h // 4
    bh, bw = (h - top) / _ROWS, w / _COLS
    value = 0
    for k in range(BITS):
        r, c = divmod(k, _COLS)
        y0, x0 = top + r * bh, c * bw
        block = img[int(y0 + bh / 4) : int(y0 + 3 * bh / 4) + 1, int(x0 + bw / 4) : int(x0 + 3 * bw / 4) + 1]
        if block.mean() > 128:
            value |= 1 << k
    return value


def marker_corner(frame: np.ndarray) -> str:
    """Which corner ('tl', 'tr', 'bl', 'br') of a displayed frame holds the red marker."""
    h, w = frame.shape[:2]
    corners = {
        "tl": frame[: h // 8, : w // 8],
        "tr": frame[: h // 8, -(w // 8) :],
        "bl": frame[-(h // 8) :, : w // 8],
        "br": frame[-(h // 8) :, -(w // 8) :],
    }
    redness = {k: float(v[..., 0].mean()) - float(v[..., 1].mean()) for k, v in corners.items()}
    return max(redness, key=redness.get)


def make_video(
    path: str | Path,
    *,
    seconds: float,
    fps: float,
    gop: int,
    size: tuple[int, int] = (160, 96),
    container: str = "mp4",
    vfr: bool = False,
    rotation: int = 0,
    bframes: int = 2,
) -> SyntheticVideo:
    """Encode a barcode video with H.264 (fixed GOP, B-frames) and return its ground truth.

    `container` is the file format ('mp4', 'mkv', 'mov', ...); the path's suffix is replaced.
    `vfr` gives frames irregular durations (pattern of 1-3 frame periods, ~`seconds` long).
    `rotation` = clockwise degrees a player must rotate the picture (display-matrix metadata).
    """
    path = Path(path).with_suffix("." + container)
    fmt = {"mkv": "matroska", "ts": "mpegts"}.get(container, container)
    rate = Fraction(fps).limit_denominator(1001)
    ticks = 1000 if vfr else None  # VFR: millisecond time base, pts set explicitly
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream("libx264", rate=rate)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {
            "preset": "veryfast",
            "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes={bframes}:b-adapt=0:open-gop=0",
        }
        if ticks:
            stream.codec_context.time_base = Fraction(1, ticks)
        if rotation:
            stream.set_display_rotation(-rotation)  # PyAV takes counter-clockwise degrees
        times: list[float] = []
        t = 0.0
        i = 0
        while t < seconds - 1e-9:
            frame = av.VideoFrame.from_ndarray(draw_frame(i, size), format="rgb24")
            if ticks:
                frame.pts = round(t * ticks)
                frame.time_base = Fraction(1, ticks)
                times.append(frame.pts / ticks)
                t += _VFR_PATTERN[i % len(_VFR_PATTERN)] / fps
            else:
                frame.pts = i
                times.append(i / float(rate))
                t = (i + 1) / float(rate)
            out.mux(stream.encode(frame))
            i += 1
        out.mux(stream.encode(None))
    return SyntheticVideo(path, times, float(rate), gop, size, rotation)
