"""Optional decoders behind the VideoReader API: `open_reader(path, backend=...)`.

    pyav        the default (lvu.media.video.VideoReader): no extra install, exact, fastest here
    torchcodec  torchcodec.decoders.VideoDecoder.get_frames_at   pip install torch==2.13.0 torchcodec==0.13.0
                                                                 (+ apt-get install ffmpeg: its shared libs)
    decord      decord.VideoReader.get_batch                     pip install decord==0.6.0 (or eva-decord)
    opencv      cv2.VideoCapture, seek by frame + grab           pip install opencv-python-headless

Every backend returns the same FrameBatch as the PyAV reader for the same request: a PyAV demux
pass (no decoding) gives the frame table, so frame numbers, times, `get_frames_played_at`,
clamping, duplicates, rotation and resize semantics are shared; only the pixels come from the
backend. `approximate=True` asks the backend for the keyframe at or before each target, as PyAV
does. Resizing is PyAV's swscale bicubic applied to the backend's RGB frame (same sizes; pixels
may differ by rounding from a PyAV resize, which scales before the colour conversion).

decord2 is refused: it silently returns wrong frames on long-GOP H.264 (research/env_feasibility.md
§1: up to 192 of 256 frames wrong). OpenCV numbers frames from timestamps x fps, so it is exact on
constant-frame-rate video only; variable-frame-rate files are refused rather than misread. Only
MP4/MOV and Matroska/WebM files are accepted by the non-PyAV backends: on MPEG-TS and AVI decord
and torchcodec return other frames than asked (see _VERIFIED_FORMATS).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

from lvu.errors import LvuError, VideoError
from lvu.media.video import Resize, VideoReader, _short

BACKENDS = ("pyav", "torchcodec", "decord", "opencv")
INSTALL = {
    "pyav": "pip install av",
    "torchcodec": "pip install torch==2.13.0 torchcodec==0.13.0 (and apt-get install -y ffmpeg for its shared libs)",
    "decord": "pip install decord==0.6.0",
    "opencv": "pip install opencv-python-headless",
}
_DECORD2 = (
    "decord2 returns wrong frames on long-GOP H.264 (up to 192 of 256 in lvu's tests) — "
    "pip uninstall -y decord2 && pip install decord==0.6.0, or use backend='pyav'"
)


def open_reader(path: str | Path, backend: str = "pyav", *, approximate: bool = False, threads: int = 0) -> VideoReader:
    """A reader of `path` that decodes with `backend` (see module doc); same methods and results
    as `VideoReader(path, approximate=..., threads=...)`, which is what backend='pyav' returns."""
    name = str(backend).strip().lower()
    if name == "pyav":
        return VideoReader(path, approximate=approximate, threads=threads)
    if name not in _READERS:
        if name == "decord2":
            raise LvuError(f"backend 'decord2' is refused: {_DECORD2}")
        raise LvuError(f"unknown video backend {backend!r} — use one of {', '.join(BACKENDS)}")
    return _READERS[name](path, approximate=approximate, threads=threads)


def load_backend(name: str):
    """Import and return a backend's module, or raise a one-line LvuError saying what to install."""
    module = {"torchcodec": "torchcodec.decoders", "decord": "decord", "opencv": "cv2", "pyav": "av"}.get(name)
    if module is None:
        if name == "decord2":
            raise LvuError(f"backend 'decord2' is refused: {_DECORD2}")
        raise LvuError(f"unknown video backend {name!r} — use one of {', '.join(BACKENDS)}")
    if name == "decord" and _is_decord2():
        raise LvuError(f"the installed 'decord' module is decord2: {_DECORD2}")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LvuError(f"video backend {name!r} is not installed: {INSTALL[name]}") from None
    except Exception as e:  # torchcodec without FFmpeg's shared libraries raises RuntimeError/OSError
        raise LvuError(f"video backend {name!r} cannot load ({_short(e)}) — {INSTALL[name]}") from None


def available_backends() -> list[str]:
    """Backends that import here (pyav always)."""
    out = []
    for name in BACKENDS:
        try:
            load_backend(name)
        except LvuError:
            continue
        out.append(name)
    return out


def backend_version(name: str) -> str:
    """`<backend>-<version>` (for cache keys and reports)."""
    dist = {"pyav": "av", "opencv": "opencv-python-headless"}.get(name, name)
    for d in (dist, "opencv-python", "eva-decord"):
        try:
            return f"{name}-{importlib.metadata.version(d)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return f"{name}-unknown"


def _is_decord2() -> bool:
    try:
        return any("decord2" in d.lower() for d in importlib.metadata.packages_distributions().get("decord", []))
    except Exception:  # broken metadata: judge by the import alone
        return False


# ---- the shared part: PyAV's frame table, the backend's pixels ---------------------------------------


_VERIFIED_FORMATS = {"mp4", "mov", "matroska", "webm"}
"""Containers where every backend returned the exact frames (MPEG-TS and AVI: decord and
torchcodec return other frames, e.g. a whole GOP late on MPEG-TS)."""


class _BackendReader(VideoReader):
    """VideoReader whose pixels come from another decoder (subclasses implement `_frames`, which
    returns frames already rotated for display, as all three backends do by themselves)."""

    backend = ""

    def __init__(self, path: str | Path, *, approximate: bool = False, threads: int = 0) -> None:
        self._module = load_backend(self.backend)
        super().__init__(path, approximate=approximate, threads=threads)  # frame table, info
        fmt = self._container.format.name
        self._container.close()  # PyAV's part is done: only the table is needed from here
        if not set(fmt.split(",")) & _VERIFIED_FORMATS:
            raise VideoError(
                f"{self.path}: lvu's {self.backend} backend reads MP4/MOV/MKV/WebM only, not {fmt.split(',')[0]} "
                f"(decord and torchcodec return other frames than asked there) — use backend='pyav'"
            )
        try:
            self._open_backend()
        except LvuError:
            raise
        except Exception as e:
            raise VideoError(f"{self.path}: {self.backend} cannot open it ({_short(e)}) — use backend='pyav'") from None

    def _open_backend(self) -> None:
        raise NotImplementedError

    def _frames(self, numbers: list[int]) -> list[np.ndarray]:
        """RGB uint8 arrays (display orientation, full size) of frames `numbers` (sorted, distinct)."""
        raise NotImplementedError

    def _check_count(self, theirs: int) -> None:
        if theirs != self.num_frames:
            raise VideoError(
                f"{self.path}: {self.backend} counts {theirs} frames, lvu's index {self.num_frames} — "
                f"frame numbers would not line up; use backend='pyav'"
            )

    def _fetch(self, targets: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        numbers = np.searchsorted(self._index.pts, targets).tolist()
        try:
            arrays = self._frames(numbers)
        except LvuError:
            raise
        except Exception as e:
            raise VideoError(f"{self.path}: {self.backend} failed to decode ({_short(e)}) — use backend='pyav'") from None
        self._count[0] += len(numbers)
        return {t: (self._finish(a, rs), t) for t, a in zip(targets, arrays)}

    def _fetch_keyframes(self, keys: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Keyframes are read like any frame: these backends decode by frame number."""
        return _BackendReader._fetch(self, keys, rs)

    def _finish(self, arr: np.ndarray, rs: Resize | None) -> np.ndarray:
        """Resize a displayed frame (PyAV swscale, bicubic) with VideoReader's size rules."""
        want = (self.info.height, self.info.width)
        if arr.shape[:2] != want:
            raise VideoError(
                f"{self.path}: {self.backend} returned {arr.shape[1]}x{arr.shape[0]} frames, not the displayed "
                f"{want[1]}x{want[0]} — use backend='pyav'"
            )
        if rs is not None:
            w, h = rs.output_size(self.info.width, self.info.height)
            if (w, h) != (arr.shape[1], arr.shape[0]):
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(arr), format="rgb24")
                arr = frame.reformat(width=w, height=h, interpolation="BICUBIC").to_ndarray()
        return np.ascontiguousarray(arr)

    def close(self) -> None:
        super().close()
        self._close_backend()

    def _close_backend(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"{self.backend}:{super().__repr__()}"


class TorchcodecReader(_BackendReader):
    """torchcodec `VideoDecoder(seek_mode="exact").get_frames_at(indices)` (one call per batch)."""

    backend = "torchcodec"

    def _open_backend(self) -> None:
        self._dec = self._module.VideoDecoder(
            self.path, seek_mode="exact", num_ffmpeg_threads=self._threads, dimension_order="NHWC", device="cpu"
        )
        self._check_count(int(self._dec.metadata.num_frames))

    def _frames(self, numbers: list[int]) -> list[np.ndarray]:
        batch = self._dec.get_frames_at(numbers)
        data = batch.data.numpy()
        # torchcodec reports the pts it delivered: check them against lvu's table
        got = np.rint(batch.pts_seconds.double().numpy() / float(self._tb)).astype(np.int64)
        want = self._index.pts[numbers]
        if len(got) != len(want) or np.any(np.abs(got - want) > 1):
            raise VideoError(f"{self.path}: torchcodec returned frames at other times than asked — use backend='pyav'")
        return [data[i] for i in range(len(numbers))]

    def _close_backend(self) -> None:
        self._dec = None


class DecordReader(_BackendReader):
    """decord `VideoReader(...).get_batch(indices)` (one call per batch)."""

    backend = "decord"

    def _open_backend(self) -> None:
        self._vr = self._module.VideoReader(self.path, ctx=self._module.cpu(0), num_threads=self._threads)
        self._check_count(len(self._vr))

    def _frames(self, numbers: list[int]) -> list[np.ndarray]:
        data = self._vr.get_batch(numbers).asnumpy()
        return [data[i] for i in range(len(numbers))]

    def _close_backend(self) -> None:
        self._vr = None


class OpenCVReader(_BackendReader):
    """cv2.VideoCapture: seek (CAP_PROP_POS_FRAMES) only when a target lies past the next keyframe,
    else grab forward — the PyAV reader's sweep. Refuses variable-frame-rate video."""

    backend = "opencv"

    def _open_backend(self) -> None:
        cv2 = self._module
        steps = np.diff(self._index.pts)
        if len(steps) and not self._index.counted and steps.max() - steps.min() > 1:
            raise VideoError(
                f"{self.path}: variable frame rate — OpenCV numbers frames by time x fps and would "
                f"return wrong frames; use backend='pyav'"
            )
        params = [cv2.CAP_PROP_N_THREADS, self._threads] if self._threads else []
        self._cap = cv2.VideoCapture(self.path, cv2.CAP_FFMPEG, params)
        self._cap.set(cv2.CAP_PROP_ORIENTATION_AUTO, 1)  # rotate for display (the default)
        if not self._cap.isOpened():
            raise VideoError(f"{self.path}: OpenCV cannot open it — use backend='pyav'")
        self._pos = 0  # number of the next frame grab() returns
        self._check_count(int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT)))

    def _frames(self, numbers: list[int]) -> list[np.ndarray]:
        cv2, cap = self._module, self._cap
        keys = self.keyframe_indices
        out = []
        for n in numbers:
            key = keys[int(np.searchsorted(keys, n, side="right")) - 1]
            if n < self._pos or key > self._pos:
                cap.set(cv2.CAP_PROP_POS_FRAMES, n)
                self._pos = n
            while self._pos <= n:
                if not cap.grab():
                    raise VideoError(f"{self.path}: OpenCV stopped at frame {self._pos} — use backend='pyav'")
                self._pos += 1
            ok, bgr = cap.retrieve()
            if not ok:
                raise VideoError(f"{self.path}: OpenCV cannot decode frame {n} — use backend='pyav'")
            out.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        return out

    def _close_backend(self) -> None:
        if getattr(self, "_cap", None) is not None:
            self._cap.release()
            self._cap = None


_READERS: dict[str, Callable[..., VideoReader]] = {
    "torchcodec": TorchcodecReader,
    "decord": DecordReader,
    "opencv": OpenCVReader,
}
