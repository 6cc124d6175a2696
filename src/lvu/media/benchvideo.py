"""Long synthetic H.264 videos for the decode benchmark (`lvu bench decode`), and their barcodes.

Content is cheap to make and hard to cheat on: a scrolling gradient, a moving box and temporal
noise (so every frame differs and costs real bits, about 800 kb/s at 640x360 like the videos in
research/env_feasibility.md §1), plus a 24-bit barcode of the frame number in the top-left corner,
so any decoder's output can be checked for exactness by reading its pixels. Encoded with PyAV's
bundled libx264 (`preset=veryfast`, default B-frames, fixed GOP, no scene cuts, one slice per
frame like the ffmpeg CLI writes). Files are cached
by their parameters: reruns reuse them, and a half-written file is never picked up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

CODE_BITS = 24
_ROWS, _COLS = 4, 6
_BLOCK_W, _BLOCK_H = 32, 24
CODE_SIZE = (_COLS * _BLOCK_W, _ROWS * _BLOCK_H)
"""(w, h) of the barcode in the top-left corner."""
_VERSION = 2
"""Part of the file names: bump when the content or encoding changes, so old files are not reused."""


@dataclass(frozen=True)
class BenchVideo:
    """One benchmark video: its file name is derived from every parameter."""

    seconds: int
    gop: int
    size: tuple[int, int] = (640, 360)
    fps: int = 30

    @property
    def num_frames(self) -> int:
        return self.seconds * self.fps

    @property
    def name(self) -> str:
        w, h = self.size
        return f"lvu_bench{_VERSION}_{self.seconds}s_gop{self.gop}_{w}x{h}_{self.fps}fps.mp4"

    @property
    def label(self) -> str:
        t = f"{self.seconds // 60}-min" if self.seconds % 60 == 0 else f"{self.seconds}-s"
        return f"{t} GOP-{self.gop} {self.size[0]}x{self.size[1]}"


def draw_code(luma: np.ndarray, index: int) -> None:
    """Write `index` as a 24-bit barcode into the top-left of a luma plane (in place)."""
    for k in range(CODE_BITS):
        r, c = divmod(k, _COLS)
        luma[r * _BLOCK_H : (r + 1) * _BLOCK_H, c * _BLOCK_W : (c + 1) * _BLOCK_W] = 235 if (index >> k) & 1 else 16


def read_code(rgb: np.ndarray) -> int:
    """Frame number drawn by `draw_code`, read from a decoded RGB frame at the coded size."""
    value = 0
    for k in range(CODE_BITS):
        r, c = divmod(k, _COLS)
        y0, x0 = r * _BLOCK_H + _BLOCK_H // 4, c * _BLOCK_W + _BLOCK_W // 4
        if rgb[y0 : y0 + _BLOCK_H // 2, x0 : x0 + _BLOCK_W // 2].mean() > 128:
            value |= 1 << k
    return value


def encode(video: BenchVideo, path: str | Path, *, progress: Callable[[int], None] | None = None) -> Path:
    """Encode `video` to `path` (written under a temporary name, renamed when complete)."""
    w, h = video.size
    if w < CODE_SIZE[0] or h < CODE_SIZE[1] or w % 2 or h % 2:
        raise ValueError(f"bench video size {w}x{h}: needs even sides of at least {CODE_SIZE}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    rng = np.random.default_rng(video.gop)
    yy, xx = np.mgrid[0:h, 0:w]
    ramp = np.tile(((xx * 255 // w + yy * 255 // h) // 2).astype(np.int16), (1, 2))
    noise = rng.integers(-6, 7, (17, h, w)).astype(np.int16)  # 17: no short repeat with the scroll
    buf = np.empty((h * 3 // 2, w), np.uint8)
    buf[h:] = np.tile(128 + np.arange(w // 2) * 64 // (w // 2) - 32, 2).astype(np.uint8)  # chroma: a colour ramp
    bw, bh = max(8, w // 8), max(8, h // 5)
    try:
        with av.open(str(tmp), "w", format="mp4") as out:
            stream = out.add_stream("libx264", rate=video.fps)
            stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
            stream.thread_type = "FRAME"  # PyAV's default (SLICE) makes x264 cut every frame into
            # slices, which slice-threaded decoders then split over cores; real files have one
            stream.bit_rate = 800_000 * w * h // (640 * 360)
            stream.options = {
                "preset": "veryfast",
                "x264-params": f"keyint={video.gop}:min-keyint={video.gop}:scenecut=0:sliced-threads=0",
            }
            for i in range(video.num_frames):
                off = (i * 3) % w
                np.clip(ramp[:, off : off + w] + noise[i % 17], 0, 255, out=buf[:h], casting="unsafe")
                x0, y0 = (i * 5) % (w - bw), h // 2 + int(h / 4 * np.sin(i / 40)) - bh // 2
                buf[y0 : y0 + bh, x0 : x0 + bw] = 230
                draw_code(buf[:h], i)
                frame = av.VideoFrame.from_ndarray(buf, format="yuv420p")
                frame.pts = i
                out.mux(stream.encode(frame))
                if progress is not None and i % 1000 == 999:
                    progress(i + 1)
            out.mux(stream.encode(None))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def ensure(video: BenchVideo, folder: str | Path, *, log: Callable[[str], None] = print) -> Path:
    """The cached file for `video` under `folder`, encoding it first if missing."""
    path = Path(folder) / video.name
    if path.is_file():
        return path
    log(f"encoding {video.label} ({video.num_frames} frames) -> {path}")
    t0 = time.perf_counter()
    encode(video, path)
    log(f"  encoded in {time.perf_counter() - t0:.0f} s ({path.stat().st_size / 2**20:.0f} MB)")
    return path
