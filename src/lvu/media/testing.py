"""Synthetic test videos whose frame numbers can be read back from their pixels.

Each frame carries its index as a 16-bit barcode (4x4 grid of black/white blocks, robust to
H.264 compression and to downscaling) plus a red marker in the top-left corner of the *coded*
picture, so tests can check exactness, resizing and rotation without a reference decode.
Encoded with PyAV's bundled libx264 (no system FFmpeg needed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lvu.media.encode import no_avx512

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
    return max(redness, key=lambda corner: redness[corner])


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
            "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes={bframes}:b-adapt=0:open-gop=0"
                           + no_avx512(),  # the same bytes every time (lvu.media.encode.no_avx512)
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


# ---- audio ---------------------------------------------------------------------------------------

_espeak: Any = None
_espeak_lock = threading.Lock()


def speak(text: str, *, wpm: int = 150, voice: str = "en-us") -> tuple[np.ndarray, int]:
    """Speech for `text` as (int16 mono samples, sample rate), from eSpeak NG offline.

    Uses the libespeak-ng and voice data that the `espeakng-loader` PyPI wheel ships (through
    ctypes; no system espeak-ng needed). ImportError when that package is not installed.
    """
    import ctypes

    import espeakng_loader

    global _espeak
    chunks: list[np.ndarray] = []

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
    def collect(wav, n, _events):
        if n > 0:
            chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        return 0

    with _espeak_lock:  # the library keeps global state: one synthesis at a time
        if _espeak is None:
            lib = ctypes.CDLL(espeakng_loader.get_library_path())
            lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
            lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
            lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
            lib.espeak_Synth.argtypes = [
                ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
                ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
            ]
            synchronous = 2  # AUDIO_OUTPUT_SYNCHRONOUS: espeak_Synth returns when all audio is out
            rate = lib.espeak_Initialize(synchronous, 0, espeakng_loader.get_data_path().encode(), 0)
            if rate <= 0:
                raise RuntimeError(f"espeak-ng failed to initialise ({rate})")
            _espeak = (lib, rate)
        lib, rate = _espeak
        lib.espeak_SetSynthCallback(collect)
        if lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"espeak-ng has no voice {voice!r}")
        lib.espeak_SetParameter(1, wpm, 0)  # espeakRATE, absolute
        data = text.encode("utf-8")
        # position 0, POS_CHARACTER, no end position, espeakCHARS_UTF8
        if lib.espeak_Synth(data, len(data) + 1, 0, 1, 0, 1, None, None) != 0:
            raise RuntimeError("espeak-ng failed to synthesise")
        lib.espeak_Synchronize()
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.int16)), rate


def make_video_with_audio(
    path: str | Path,
    audio: np.ndarray | list[tuple[float, np.ndarray]],
    sample_rate: int,
    *,
    audio_start: float = 0.0,
    seconds: float | None = None,
    fps: float = 10,
    size: tuple[int, int] = (64, 48),
    container: str = "mp4",
    draw: Callable[[int], np.ndarray] | None = None,
) -> Path:
    """A barcode video (see `draw_frame`) with a mono AAC audio track; returns the path.

    `audio` holds int16 or float (-1..1) samples; it starts `audio_start` seconds after the first
    video frame (a timestamp offset, not leading silence). Or `audio` is a list of (start seconds,
    samples) clips: each clip's timestamps start there, leaving gaps with no audio packets at all.
    `seconds`: video length, by default long enough to cover the audio. The path's suffix is
    replaced by `container`. `draw(i)` gives frame i's RGB picture instead of the barcode; an
    empty clip list writes no audio track (then `seconds` is needed).
    """
    path = Path(path).with_suffix("." + container)
    fmt = {"mkv": "matroska", "ts": "mpegts"}.get(container, container)
    clips = audio if isinstance(audio, list) else [(audio_start, audio)]
    clips = [(start, _as_float_samples(samples)) for start, samples in clips]
    if seconds is None:
        seconds = max(start + len(samples) / sample_rate for start, samples in clips) + 0.5
    rate = Fraction(fps).limit_denominator(1001)
    with av.open(str(path), "w", format=fmt) as out:
        vs = out.add_stream("libx264", rate=rate)
        vs.width, vs.height = size
        vs.pix_fmt = "yuv420p"
        vs.options = {"preset": "ultrafast", **({"x264-params": no_avx512()[1:]} if no_avx512() else {})}
        aus = out.add_stream("aac", rate=sample_rate, layout="mono") if clips else None
        if aus is not None:
            aus.codec_context.time_base = Fraction(1, sample_rate)
        for i in range(max(1, round(seconds * float(rate)))):
            picture = draw(i) if draw is not None else draw_frame(i, size)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = i
            out.mux(vs.encode(frame))
        out.mux(vs.encode(None))
        for start, samples in clips:
            first = round(start * sample_rate)
            # whole 1024-sample AAC frames, so the encoder never merges the end of one clip
            # with the start of the next (which would shift the next clip's timestamps)
            samples = np.pad(samples, (0, -len(samples) % 1024))
            assert aus is not None  # there are clips, so there is an audio track
            for k in range(0, len(samples), 1024):
                chunk = av.AudioFrame.from_ndarray(samples[None, k : k + 1024], format="fltp", layout="mono")
                chunk.sample_rate = sample_rate
                chunk.pts = first + k
                chunk.time_base = Fraction(1, sample_rate)
                out.mux(aus.encode(chunk))
        if aus is not None:
            out.mux(aus.encode(None))
    return path


def _as_float_samples(samples: np.ndarray) -> np.ndarray:
    arr = np.asarray(samples)
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float32) / 32768.0
    return np.ascontiguousarray(arr, np.float32).reshape(-1)
