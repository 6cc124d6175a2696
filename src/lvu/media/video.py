"""Frame-exact video decoding with PyAV (bundled FFmpeg), fast on long videos.

How a batch is read (measurements: research/env_feasibility.md §1):
- On first open, one demux pass reads every packet's pts and keyframe flag without decoding (~80 ms
  for a 10-min 30 fps file). It gives exact frame numbers and times (VFR too), the frame count
  and the keyframes, whatever the container's metadata claims. The table is cached on disk per
  video content (lvu.media.frame_index), so later opens of the same file skip the pass.
- Targets are sorted and de-duplicated, then decoded in one forward sweep. The reader seeks to a
  target's keyframe only when that keyframe lies more than SEEK_COST_FRAMES past the decode
  position; otherwise it decodes on. Cost is about min(N * GOP/2, T) decoded frames, so dense
  requests turn into a single sequential pass by themselves.
- Non-reference frames that are not targets are not decoded at all (skip_frame="NONREF" per
  packet: no other frame depends on them): about half the frames of x264's default B-pyramid.
- A call with enough work is cut into contiguous runs of whole GOPs of about equal work, each
  decoded by its own single-threaded decoder on its own thread (up to MAX_DECODERS, one per core
  by default; lvu.media.gop_runs): FFmpeg's frame threads gain little on seek-heavy reads,
  separate decoders scale.
- `approximate=True` decodes keyframes only (`skip_frame="NONKEY"`), returning for each target
  the keyframe at or before it: 5-20x faster, up to one GOP early.
- Seeks that land past their keyframe (MPEG-TS) step back; AVI's fake pts are replaced by
  counting frames from the keyframe; damaged packets are skipped, never fatal on their own.

Times are seconds from the first frame. Frames are RGB uint8 arrays in display orientation
(rotation metadata applied); only the requested frames are held in memory.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Self

import av
import numpy as np

from lvu.errors import VideoError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VideoInfo:
    """What a video is, as lvu reads it."""

    path: str
    duration: float
    """Seconds from the first frame to the end of the last one."""
    fps: float
    """Average frame rate (the container's avg_frame_rate, like decord's get_avg_fps)."""
    num_frames: int | None
    """Exact in a VideoReader (counted); from metadata in `probe` (counted when missing)."""
    width: int
    """Displayed width (after rotation)."""
    height: int
    """Displayed height (after rotation)."""
    codec: str
    rotation: int
    """Clockwise degrees (0, 90, 180, 270) applied to decoded pictures for display."""


@dataclass
class FrameBatch:
    """Frames with their presentation times and frame numbers, in request order."""

    data: list[np.ndarray]
    """RGB uint8 arrays of shape (H, W, 3)."""
    pts_seconds: list[float]
    """Presentation time of each returned frame, seconds from the first frame."""
    indices: list[int]
    """0-based frame number (display order) of each returned frame."""

    def __len__(self) -> int:
        return len(self.data)


MAX_FRAME_SIDE = 3840
"""The longest side of a frame lvu hands out (4K UHD): an 8K video's frames are halved, so 32 of
them hold ~0.8 GB, not 3.2 GB, in memory and in the frame cache. A resize asking for more is cut too."""


def bounded(rs: Resize | None, width: int, height: int) -> Resize | None:
    """`rs`, or a resize that keeps the output's longest side within MAX_FRAME_SIDE."""
    w, h = rs.output_size(width, height) if rs is not None else (width, height)
    if max(w, h) <= MAX_FRAME_SIDE:
        return rs
    scale = MAX_FRAME_SIDE / max(w, h)
    return Resize(size=(max(1, round(w * scale)), max(1, round(h * scale))))


def _as_resize(resize: int | Resize | None) -> Resize | None:
    if resize is None or isinstance(resize, Resize):
        return resize
    if isinstance(resize, bool) or not isinstance(resize, int) or resize <= 0:
        raise ValueError(f"resize must be a positive int (shorter side) or a Resize, not {resize!r}")
    return Resize(short=resize)


# The pieces split out of this module, re-exported here (lvu.media.video is the public API).
from lvu.media.av_io import (  # noqa: E402,F401
    Resize, _MAX_BAD_PACKETS, _REFETCH, _decoded, _Drain, _first_frame, _open, _rate, _rewind, _rotation, _short,
    _Skip,
)
from lvu.media.frame_index import _build_index, _Index, cached_index, store_index  # noqa: E402,F401
from lvu.media.gop_runs import (  # noqa: E402,F401
    MAX_DECODERS, PARALLEL_MIN_FRAMES, SEEK_COST_FRAMES, decode_in_parallel, decoder_count, split_runs,
)
from lvu.media.sweep import _MAX_RESEEKS, ExactSweep, _Cursor  # noqa: E402,F401


def _info(path, stream, rotation: int, fps: float, duration: float, num_frames: int | None) -> VideoInfo:
    cc = stream.codec_context
    w, h = (cc.height, cc.width) if rotation in (90, 270) else (cc.width, cc.height)
    return VideoInfo(str(path), float(duration), fps, num_frames, w, h, cc.name, rotation)


def probe(path: str | Path) -> VideoInfo:
    """Container metadata plus one decoded frame (rotation; proof that the file decodes).

    When the container lacks a duration or frame count (Matroska has no count), the file is
    indexed as a VideoReader does (one demux pass, no decoding). VideoError for unreadable files.
    """
    container, stream = _open(path)
    with container:
        tb, fps = stream.time_base, _rate(stream)
        duration = float(stream.duration * tb) if stream.duration and tb else None
        if duration is None and container.duration:
            duration = container.duration / av.time_base
        if duration and stream.frames and fps:
            return _info(path, stream, _rotation(_first_frame(container, stream, path)), fps, duration, stream.frames)
    with VideoReader(path) as reader:
        return reader.info


_PROBED: dict[tuple[str, int, int], VideoInfo] = {}
_PROBED_LOCK = threading.Lock()


def probe_cached(path: str | Path) -> VideoInfo:
    """`probe`, memoised for the process per (real path, size, mtime_ns): a file that is replaced
    or edited is probed again. Thread-safe; errors are not cached (the next call probes again).
    Two threads missing at once may both probe; the first result stored is kept (its `path` is
    the name it was first probed under)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return probe(path)  # let probe say what is wrong (VideoError)
    key = (real, st.st_size, st.st_mtime_ns)
    with _PROBED_LOCK:
        hit = _PROBED.get(key)
    if hit is not None:
        return hit
    info = probe(path)
    with _PROBED_LOCK:
        return _PROBED.setdefault(key, info)


def probe_frames(path: str | Path) -> tuple[float, int]:
    """(fps, frame count) from `probe_cached`; the count is round(duration * fps) when the
    metadata has none."""
    info = probe_cached(path)
    return info.fps, info.num_frames or round(info.duration * info.fps)


# ---- the reader -----------------------------------------------------------------------------


class VideoReader(ExactSweep):
    """Reads frames by number or by time; exact by default.

    One call with many targets is much faster than many calls: each GOP is decoded at most once
    per call and backward seeks happen only between GOPs. `threads` caps the decoding threads:
    0 = one per core (up to MAX_DECODERS parallel decoders); 1 = a single single-threaded decoder.
    `index_cache=False` rebuilds the frame table by a demux pass instead of reading (and writing)
    its on-disk copy. Not thread-safe: use one reader per thread.
    """

    def __init__(self, path: str | Path, *, approximate: bool = False, threads: int = 0,
                 index_cache: bool = True, record_packets: bool = False) -> None:
        self.path = str(path)
        self.approximate = approximate
        self._threads, self._count, self._cursor = threads, [0], None
        self._sent: list[tuple[int, str]] | None = [] if record_packets else None
        self._drain_last = False
        self._skip: _Skip | None = None
        self._twins: list[VideoReader | None] = []  # extra decoders for parallel calls (opened lazily)
        self._pool: ThreadPoolExecutor | None = None
        self._container, self._stream = _open(path)
        try:
            idx = cached_index(self.path) if index_cache else None
            if idx is None:  # one demux pass, then the first frame: rotation, and proof that it decodes
                idx = _build_index(self._container, self._stream, self.path)
                self._rewind()
                idx.rotation = _rotation(_first_frame(self._container, self._stream, self.path))
                idx.counted = idx.counted and (bool(self._stream.codec_context.has_b_frames) or not idx.timed)
                if index_cache:
                    store_index(self.path, idx)
            else:
                self._configure()  # a fresh container, still at the start
            self._index = idx
            fps = _rate(self._stream)
            self._tb = Fraction(self._stream.time_base or Fraction(1, 90000))
            if not idx.timed:  # frame i is shown at i / fps
                fps = fps or 25.0
                self._tb = 1 / Fraction(fps).limit_denominator(100_000)
            self._origin = int(idx.pts[0])
            duration = float((int(idx.pts[-1]) - self._origin + idx.last_duration) * self._tb)
            fps = fps or (len(idx.pts) / duration if duration > 0 else 25.0)
            self.info = _info(path, self._stream, idx.rotation or 0, fps, duration, len(idx.pts))
            if idx.timed and not idx.counted:  # skipping needs trustworthy pts on packets and frames
                self._skip = _Skip(keys=idx.keys)
        except BaseException:
            self._container.close()
            raise

    @property
    def duration(self) -> float:
        return self.info.duration

    @property
    def fps(self) -> float:
        return self.info.fps

    @property
    def num_frames(self) -> int:
        return self.info.num_frames or 0

    @property
    def decoded_frames(self) -> int:
        """Frames decoded so far: the cost of the reads (~N * GOP/2 for sparse exact ones, half
        that where non-reference frames are skipped)."""
        return self._count[0] + sum(t._count[0] for t in self._twins if t is not None)

    @property
    def packets_sent(self) -> list[tuple[int, str]] | None:
        """With `record_packets=True`: (pts, skip_frame mode: DEFAULT, NONREF or NONKEY) of every
        packet given to this reader's decoders, for accounting (decode_floor.frames_decoded); else None."""
        if self._sent is None:
            return None
        return [*self._sent, *(p for t in self._twins if t is not None for p in (t._sent or ()))]

    @property
    def keyframe_indices(self) -> list[int]:
        """Frame numbers of the keyframes (seek points)."""
        return np.searchsorted(self._index.pts, self._index.keys).tolist()

    def get_frames_played_at(self, seconds: Sequence[float], *, resize: int | Resize | None = None) -> FrameBatch:
        """The frame on screen at each time (pts <= t < next pts), in request order.

        Times before the first frame give the first frame; times past the end, the last one.
        A time within half a time-base tick of a frame's pts counts as that frame (containers
        round pts, Matroska to milliseconds), so `i / fps` gives frame i on constant-rate video.
        """
        ts = np.asarray([float(s) for s in seconds], dtype=np.float64)
        if np.isnan(ts).any():
            raise ValueError("frame times must be numbers, got NaN")
        ticks = ts / float(self._tb) + self._origin + 0.5 + 1e-6
        idx = np.searchsorted(self._index.pts, ticks, side="right") - 1
        return self.get_frames_at(np.clip(idx, 0, self.num_frames - 1).tolist(), resize=resize)

    def get_frames_at(self, indices: Sequence[int], *, resize: int | Resize | None = None) -> FrameBatch:
        """Frames by 0-based number, in request order; duplicates allowed.

        Negative numbers count from the end; numbers past the end give the last frame. The
        returned `indices`/`pts_seconds` are those of the frames delivered: they differ from the
        request only where damage in the file lost frames (the previous good frame stands in).
        """
        n, pts = self.num_frames, self._index.pts
        want = [min(max(i + n if i < 0 else i, 0), n - 1) for i in map(int, indices)]
        rs = bounded(_as_resize(resize), self.info.width, self.info.height)
        targets = sorted({int(pts[i]) for i in want})
        try:
            if self.approximate:  # each target maps to its keyframe; decode each keyframe once
                keys = self._index.keys
                keymap = {t: keys[max(0, bisect_right(keys, t) - 1)] for t in targets}
                got = self._fetch_keyframes(sorted(set(keymap.values())), rs)
                found = {t: got[k] for t, k in keymap.items()}
            else:
                found = self._fetch(targets, rs)
        except BaseException as e:
            self._cursor = None  # the decoder's state is unknown: the next call seeks afresh
            if isinstance(e, av.FFmpegError):
                raise VideoError(
                    f"{self.path}: decoding failed ({_short(e)}) — the file is corrupt; {_REFETCH}"
                ) from None
            raise
        data, times, numbers, seen = [], [], [], set()
        for i in want:
            arr, p = found[int(pts[i])]
            data.append(arr.copy() if id(arr) in seen else arr)  # duplicates get their own array
            seen.add(id(arr))
            times.append(float((p - self._origin) * self._tb))
            numbers.append(int(np.searchsorted(pts, p)))
        return FrameBatch(data, times, numbers)

    def close(self) -> None:
        self._cursor = None
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for twin in self._twins:
            if twin is not None:
                twin.close()
        self._twins = []
        self._container.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        i = self.info
        return f"VideoReader({i.path!r}, {i.width}x{i.height}, {i.num_frames} frames, {i.duration:.2f}s)"

    # -- decoding: the two steps other backends (lvu.media.backends) replace --

    def _fetch(self, targets: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Sorted, distinct target pts -> (RGB array in display orientation, pts of that frame)."""
        parts = split_runs(self._index, targets, keyframes=False, decoders=decoder_count(self._threads))
        if len(parts) < 2:
            return self._decode(targets, rs)
        return decode_in_parallel(self, parts, rs, keyframes=False)

    def _fetch_keyframes(self, keys: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Like `_fetch`, for keyframe pts only (approximate mode)."""
        parts = split_runs(self._index, keys, keyframes=True, decoders=decoder_count(self._threads))
        if len(parts) < 2:
            return self._decode_keyframes(keys, rs)
        return decode_in_parallel(self, parts, rs, keyframes=True)

    # -- parallel calls (lvu.media.gop_runs): contiguous runs of GOPs, one single-threaded decoder each --

    def _twin(self) -> VideoReader:
        """Another decoder over the same file and frame table (single-threaded)."""
        twin = object.__new__(VideoReader)
        twin.path, twin.approximate, twin.info = self.path, self.approximate, self.info
        twin._threads, twin._count, twin._cursor = 1, [0], None
        twin._sent = [] if self._sent is not None else None
        twin._drain_last = True  # a run's cursor is not continued by the next call: drain its end too
        twin._index, twin._tb, twin._origin = self._index, self._tb, self._origin
        twin._skip = _Skip(keys=self._index.keys) if self._skip is not None else None
        twin._twins, twin._pool = [], None
        twin._container, twin._stream = _open(self.path)
        twin._configure()
        return twin

    def _rewind(self) -> None:
        self._container, self._stream = _rewind(self._container, self._stream, self.path)
        self._configure()

    def _configure(self) -> None:
        cc = self._stream.codec_context
        if not cc.is_open:  # threading is fixed once the decoder opens (first decode)
            # Frame threads speed up runs of frames (~1.6x on 2 cores) but delay the first frame
            # after each seek; keyframe-only reads are all "first frames": slice threads there.
            cc.thread_type = "SLICE" if self.approximate else "AUTO"
            cc.thread_count = self._threads
        if self.approximate:
            cc.skip_frame = "NONKEY"

    def _seek_to(self, ki: int, hard: bool = False) -> None:
        """Seek to keyframe `ki`. The first keyframe means "the start": seek to 0 or, for streams
        that can't seek there (raw streams, or `hard` after a seek overshot), reopen the file."""
        if ki == 0:
            if hard:
                self._container.close()
                self._container, self._stream = _open(self.path)
            self._rewind()
        else:
            self._container.seek(self._index.keys[ki], stream=self._stream, backward=True)

    def _decode_keyframes(self, keys: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """One seek per keyframe, then drain the decoder right after the keyframe's packet: its
        reorder delay would otherwise hold the picture back until the next keyframe arrives."""
        out: dict[int, tuple[np.ndarray, int]] = {}
        all_keys = self._index.keys
        self._cursor = None
        for k in keys:
            ki, got = bisect_right(all_keys, k) - 1, None
            for attempt in range(_MAX_RESEEKS):
                self._seek_to(ki, hard=attempt > 0)
                try:
                    for packet in self._container.demux(self._stream):
                        if packet.size and packet.is_keyframe and (packet.pts is None or packet.pts >= k):
                            frames = packet.decode() + self._stream.codec_context.decode(None)
                            got = (frames[0], k if packet.pts is None else int(packet.pts)) if frames else got
                            break
                except av.InvalidDataError:
                    pass
                if (got is not None and got[1] == k) or (ki == 0 and attempt):
                    break
                ki = max(0, ki - 1)  # landed past the keyframe (MPEG-TS seeks by bisection): step back
            if got is None:
                raise VideoError(
                    f"{self.path}: keyframe at {float((k - self._origin) * self._tb):.2f}s cannot be "
                    f"decoded — the file is corrupt; {_REFETCH} or read it with approximate=False"
                )
            self._count[0] += 1
            out[k] = (self._to_array(got[0], rs), got[1])
        return out

    def _to_array(self, frame, rs: Resize | None) -> np.ndarray:
        rot = self.info.rotation
        arr = None
        if rs is not None:
            w, h = rs.output_size(self.info.width, self.info.height)
            if rot in (90, 270):
                w, h = h, w  # the size is for the displayed picture; the coded one is transposed
            if (w, h) != (frame.width, frame.height):
                arr = frame.to_ndarray(format="rgb24", width=w, height=h, interpolation="BICUBIC")
        if arr is None:
            arr = frame.to_ndarray(format="rgb24")
        return np.ascontiguousarray(np.rot90(arr, k=-(rot // 90)) if rot else arr)
