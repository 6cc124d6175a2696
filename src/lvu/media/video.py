"""Frame-exact video decoding with PyAV (bundled FFmpeg), fast on long videos.

How a batch is read (measurements: research/env_feasibility.md §1):
- On open, one demux pass reads every packet's pts and keyframe flag without decoding (~80 ms
  for a 10-min 30 fps file). It gives exact frame numbers and times (VFR too), the frame count
  and the keyframes, whatever the container's metadata claims.
- Targets are sorted and de-duplicated, then decoded in one forward sweep. The reader seeks to a
  target's keyframe only when that keyframe lies more than SEEK_COST_FRAMES past the decode
  position; otherwise it decodes on. Cost is about min(N * GOP/2, T) decoded frames, so dense
  requests turn into a single sequential pass by themselves.
- Non-reference frames that are not targets are not decoded at all (skip_frame="NONREF" per
  packet: no other frame depends on them): about half the frames of x264's default B-pyramid.
- A call with enough work is cut into contiguous runs of whole GOPs of about equal work, each
  decoded by its own single-threaded decoder on its own thread (up to MAX_DECODERS, one per core
  by default): FFmpeg's frame threads gain little on seek-heavy reads, separate decoders scale.
- `approximate=True` decodes keyframes only (`skip_frame="NONKEY"`), returning for each target
  the keyframe at or before it: 5-20x faster, up to one GOP early.
- Seeks that land past their keyframe (MPEG-TS) step back; AVI's fake pts are replaced by
  counting frames from the keyframe; damaged packets are skipped, never fatal on their own.

Times are seconds from the first frame. Frames are RGB uint8 arrays in display orientation
(rotation metadata applied); only the requested frames are held in memory.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Self

import av
import numpy as np

from lvu.errors import VideoError

log = logging.getLogger(__name__)

SEEK_COST_FRAMES = 8
"""A seek (demuxer jump + decoder flush and refill) costs about this many decoded frames."""
MAX_DECODERS = 4
"""Most decoders one call runs side by side (each single-threaded, each on its own GOPs)."""
PARALLEL_MIN_FRAMES = 60
"""Below about this many frames to decode, one call uses one decoder."""
_MAX_RESEEKS = 8
_MAX_BAD_PACKETS = 64
_REFETCH = "fetch it again"


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


@dataclass(frozen=True)
class Resize:
    """Output size: `short` side, `long` (max) side, or exact `size` (w, h) of the displayed frame.

    `short` and `long` keep the aspect ratio and never upscale; both may be given.
    """

    short: int | None = None
    long: int | None = None
    size: tuple[int, int] | None = None

    def output_size(self, width: int, height: int) -> tuple[int, int]:
        if self.size is not None:
            return self.size
        scale = 1.0
        if self.short:
            scale = min(scale, self.short / min(width, height))
        if self.long:
            scale = min(scale, self.long / max(width, height))
        return max(1, round(width * scale)), max(1, round(height * scale))


def _as_resize(resize: int | Resize | None) -> Resize | None:
    if resize is None or isinstance(resize, Resize):
        return resize
    if isinstance(resize, bool) or not isinstance(resize, int) or resize <= 0:
        raise ValueError(f"resize must be a positive int (shorter side) or a Resize, not {resize!r}")
    return Resize(short=resize)


# ---- opening and indexing -------------------------------------------------------------------


def _open(path: str | Path):
    p = Path(path)
    if not p.exists():
        raise VideoError(f"{path}: file not found — check the path and the benchmark's video directory")
    if p.is_dir():
        raise VideoError(f"{path}: is a directory, not a video file — point to the video file itself")
    if p.stat().st_size == 0:
        raise VideoError(f"{path}: file is empty (0 bytes) — the download or extraction failed; {_REFETCH}")
    try:
        container = av.open(str(p), metadata_errors="ignore")
    except (av.FFmpegError, OSError, UnicodeDecodeError) as e:
        raise VideoError(
            f"{path}: cannot be opened as a video ({_short(e)}) — corrupt, truncated or not a video; {_REFETCH}"
        ) from None
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: has no video stream — is this an audio or subtitle file? Use the video file")
    return container, container.streams.video[0]


def _short(e: BaseException) -> str:
    return " ".join(str(getattr(e, "strerror", None) or e or type(e).__name__).split())[:120]


@dataclass
class _Index:
    """Every frame's pts in display order and the keyframes' pts, in time-base ticks."""

    pts: np.ndarray
    keys: list[int]
    last_duration: int
    counted: bool
    """Decoded frames' pts can't be trusted: number frames by counting from a keyframe."""
    timed: bool = True
    """False for raw elementary streams: no timestamps, frames in decode order, start only."""


def _build_index(container, stream, path) -> _Index:
    """One demux pass, no decoding."""
    pts: list[int | None] = []
    keys: list[int] = []
    last_duration = 0
    try:
        for packet in container.demux(stream):
            if packet.size == 0 or packet.is_discard:
                continue  # flush packets; frames an edit list cuts away
            pts.append(packet.pts)
            if packet.is_keyframe and packet.pts is not None:
                keys.append(packet.pts)
            last_duration = packet.duration or 0
    except av.FFmpegError as e:  # damage stops the demuxer: frames past it are not in the video
        log.warning("%s: demux stopped early (%s); using the %d frames before it", path, _short(e), len(pts))
    if not pts:
        raise VideoError(f"{path}: contains no video frames — the file is empty, truncated or corrupt; {_REFETCH}")
    if any(p is None for p in pts):
        return _Index(np.arange(len(pts), dtype=np.int64), [0], 1, True, timed=False)
    raw = np.asarray(pts, dtype=np.int64)
    arr = np.unique(raw)
    if len(arr) > 1 and (last_duration <= 0 or raw[-1] != arr[-1]):
        last_duration = int(np.median(np.diff(arr)))
    # pts that only rise in decode order are either reorder-free (counting is then exact too) or
    # AVI's decode-order stand-ins, whose decoded frames carry wrong pts when B-frames exist.
    return _Index(arr, sorted(set(keys)) or [int(arr[0])], last_duration, bool(np.all(np.diff(raw) > 0)))


def _rate(stream) -> float:
    for r in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        if r and float(r) > 0 and math.isfinite(float(r)):
            return float(r)
    return 0.0


def _rotation(frame) -> int:
    """Clockwise display rotation from the frame's display matrix (PyAV reports counter-clockwise)."""
    return round(-(frame.rotation or 0) / 90.0) % 4 * 90


@dataclass
class _Skip:
    """Which packets to decode: non-reference frames before the call's last target that are no
    target themselves are skipped (skip_frame="NONREF": no frame depends on them), about half the
    frames of x264's default B-pyramid. Frames past the last target are decoded in full, so a later
    call that goes on forward from there finds every frame. Shared by the reader and its live frame
    iterator: each call sets its own targets."""

    wanted: set[int] = field(default_factory=set)
    """pts of the frames the current call needs."""
    last: int = -1
    """The largest of them."""


def _decoded(container, stream, path, landed: list, counter: list[int] | None = None,
             skip: _Skip | None = None) -> Iterator:
    """Decode on from the demuxer's position. As with the ffmpeg CLI, a packet the decoder rejects
    costs its frame, not the read. `landed` receives the first packet's pts (where a seek went)."""
    run = bad = 0
    cc, mode = stream.codec_context, None
    try:
        for packet in container.demux(stream):
            if not landed and packet.size:
                landed.append(packet.pts)
            if skip is not None:
                p = packet.pts
                want = "DEFAULT" if p is None or p > skip.last or p in skip.wanted else "NONREF"
                if want != mode:
                    cc.skip_frame = mode = want
            try:
                frames = packet.decode()
            except av.InvalidDataError:
                run, bad = run + 1, bad + 1
                if run > _MAX_BAD_PACKETS:
                    raise VideoError(
                        f"{path}: {run} packets in a row cannot be decoded — the file is corrupt; {_REFETCH}"
                    ) from None
                continue
            run = 0
            for frame in frames:
                if counter is not None:
                    counter[0] += 1
                yield frame
    except av.FFmpegError as e:
        log.warning("%s: stream ends early at damaged data (%s)", path, _short(e))
    finally:
        if bad:
            log.warning("%s: skipped %d undecodable packet(s); earlier frames stand in", path, bad)


def _first_frame(container, stream, path):
    for frame in _decoded(container, stream, path, []):
        return frame
    raise VideoError(f"{path}: no frame could be decoded — the file is corrupt or truncated; {_REFETCH}")


def _rewind(container, stream, path):
    """Back to the start: seek when the format can, else reopen (raw elementary streams)."""
    try:
        container.seek(0)
        return container, stream
    except av.FFmpegError:
        container.close()
        return _open(path)


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


@dataclass
class _Cursor:
    """The decoder's position: the live frame iterator since the last seek."""

    frames: Iterator
    key_i: int
    """Keyframe (index into the keyframe list) this sweep was asked to start from."""
    pos: int
    """pts of the last frame taken (keyframe pts - 1 right after a seek)."""
    landed: list = field(default_factory=list)
    taken: int = 0
    prev: tuple | None = None  # (frame, pts) of the last frame taken
    pending: tuple | None = None  # (frame, pts) decoded past the previous target, for the next one
    reseeks: int = 0


class VideoReader:
    """Reads frames by number or by time; exact by default.

    One call with many targets is much faster than many calls: each GOP is decoded at most once
    per call and backward seeks happen only between GOPs. `threads` caps the decoding threads:
    0 = one per core (up to MAX_DECODERS parallel decoders); 1 = a single single-threaded decoder.
    Not thread-safe: use one reader per thread.
    """

    def __init__(self, path: str | Path, *, approximate: bool = False, threads: int = 0) -> None:
        self.path = str(path)
        self.approximate = approximate
        self._threads, self._count, self._cursor = threads, [0], None
        self._skip: _Skip | None = None
        self._twins: list[VideoReader] = []  # extra decoders for parallel calls (opened lazily)
        self._pool: ThreadPoolExecutor | None = None
        self._container, self._stream = _open(path)
        try:
            self._index = idx = _build_index(self._container, self._stream, self.path)
            self._rewind()
            first = _first_frame(self._container, self._stream, self.path)
            fps = _rate(self._stream)
            self._tb = Fraction(self._stream.time_base or Fraction(1, 90000))
            if not idx.timed:  # frame i is shown at i / fps
                fps = fps or 25.0
                self._tb = 1 / Fraction(fps).limit_denominator(100_000)
            self._origin = int(idx.pts[0])
            duration = float((int(idx.pts[-1]) - self._origin + idx.last_duration) * self._tb)
            fps = fps or (len(idx.pts) / duration if duration > 0 else 25.0)
            self.info = _info(path, self._stream, _rotation(first), fps, duration, len(idx.pts))
            idx.counted = idx.counted and (bool(self._stream.codec_context.has_b_frames) or not idx.timed)
            if idx.timed and not idx.counted:  # skipping needs trustworthy pts on packets and frames
                self._skip = _Skip()
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
        return self._count[0] + sum(t._count[0] for t in self._twins)

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
        rs = _as_resize(resize)
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
        parts = self._split(targets, keyframes=False)
        if len(parts) < 2:
            return self._decode(targets, rs)
        return self._in_parallel(parts, rs, keyframes=False)

    def _fetch_keyframes(self, keys: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Like `_fetch`, for keyframe pts only (approximate mode)."""
        parts = self._split(keys, keyframes=True)
        if len(parts) < 2:
            return self._decode_keyframes(keys, rs)
        return self._in_parallel(parts, rs, keyframes=True)

    # -- parallel calls: contiguous runs of GOPs, one single-threaded decoder each --

    def _decoders(self) -> int:
        n = self._threads or (os.cpu_count() or 1)
        return max(1, min(n, MAX_DECODERS))

    def _split(self, targets: list[int], keyframes: bool) -> list[list[int]]:
        """Cut sorted targets into runs of whole GOPs of about equal decoding work (frames from
        each GOP's keyframe to its last target; one frame per keyframe in approximate mode)."""
        n = self._decoders()
        if n < 2 or len(targets) < 2 or self._index.counted or not self._index.timed:
            return [targets]
        keys, pts = np.asarray(self._index.keys), self._index.pts
        ts = np.asarray(targets)
        gop = np.maximum(np.searchsorted(keys, ts, side="right") - 1, 0)  # each target's keyframe
        cuts = np.flatnonzero(np.diff(gop)) + 1  # where a new GOP starts in `targets`
        if len(cuts) == 0:
            return [targets]
        firsts, lasts = np.r_[0, cuts], np.r_[cuts - 1, len(ts) - 1]
        if keyframes:
            work = np.full(len(firsts), 1 + SEEK_COST_FRAMES)
        else:  # frames from each GOP's keyframe to its last target
            work = np.searchsorted(pts, ts[lasts]) - np.searchsorted(pts, keys[gop[firsts]]) + 1 + SEEK_COST_FRAMES
        total = int(work.sum())
        if total < PARALLEL_MIN_FRAMES:
            return [targets]
        n = min(n, len(firsts))
        # GOP g goes to part floor(n * work done before g / total): contiguous, about equal work
        part_of = np.minimum((n * (np.cumsum(work) - work) / total).astype(int), n - 1)
        starts = np.r_[0, firsts[np.flatnonzero(np.diff(part_of)) + 1], len(ts)]
        return [targets[a:b] for a, b in pairwise(starts.tolist()) if b > a]

    def _twin(self) -> VideoReader:
        """Another decoder over the same file and frame table (single-threaded)."""
        twin = object.__new__(VideoReader)
        twin.path, twin.approximate, twin.info = self.path, self.approximate, self.info
        twin._threads, twin._count, twin._cursor = 1, [0], None
        twin._index, twin._tb, twin._origin = self._index, self._tb, self._origin
        twin._skip = _Skip() if self._skip is not None else None
        twin._twins, twin._pool = [], None
        twin._container, twin._stream = _open(self.path)
        twin._rewind()
        return twin

    def _in_parallel(self, parts: list[list[int]], rs: Resize | None, keyframes: bool) -> dict:
        while len(self._twins) < len(parts):
            self._twins.append(self._twin())
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._decoders(), thread_name_prefix="lvu-decode")

        def work(twin: VideoReader, part: list[int]) -> dict:
            try:
                return twin._decode_keyframes(part, rs) if keyframes else twin._decode(part, rs)
            except BaseException:
                twin._cursor = None
                raise

        jobs = [self._pool.submit(work, twin, part) for twin, part in zip(self._twins, parts)]
        wait(jobs)  # all decoders idle again before any error propagates
        out: dict[int, tuple[np.ndarray, int]] = {}
        for job in jobs:
            out.update(job.result())
        return out

    def _rewind(self) -> None:
        self._container, self._stream = _rewind(self._container, self._stream, self.path)
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

    def _decode(self, targets: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Sweep forward over sorted target pts: target -> (array, pts of the frame shown)."""
        out: dict[int, tuple[np.ndarray, int]] = {}
        keys, pts = self._index.keys, self._index.pts
        if self._skip is not None and targets:
            self._skip.wanted, self._skip.last = set(targets), targets[-1]
        for t in targets:
            ki = max(0, bisect_right(keys, t) - 1)
            cur = self._cursor
            if cur is not None and cur.pos < t and keys[ki] > cur.pos + 1:  # target is in a later GOP
                gap = int(np.searchsorted(pts, keys[ki])) - int(np.searchsorted(pts, cur.pos, side="right"))
                cur = cur if gap <= SEEK_COST_FRAMES else None
            if cur is None or cur.pos >= t:
                cur = self._seek(ki)
            frame, p = self._advance(cur, t)
            out[t] = (self._to_array(frame, rs), p)
        return out

    def _seek(self, ki: int, reseeks: int = 0) -> _Cursor:
        self._seek_to(ki, hard=reseeks > 0)
        landed: list = []
        frames = _decoded(self._container, self._stream, self.path, landed, self._count, self._skip)
        self._cursor = _Cursor(frames, ki, self._index.keys[ki] - 1, landed, reseeks=reseeks)
        return self._cursor

    def _advance(self, cur: _Cursor, t: int) -> tuple:
        """Decode up to target pts `t`; return (frame, pts) of the frame shown at `t`."""
        while True:
            if cur.pending is not None:
                item, cur.pending = cur.pending, None
            else:
                frame = next(cur.frames, None)
                item = None if frame is None else (frame, self._frame_pts(frame, cur))
            if item is None or item[1] > t:
                if cur.prev is None and cur.reseeks < _MAX_RESEEKS and (cur.key_i or not cur.reseeks):
                    # The seek landed past the target (demuxers seek on dts, MPEG-TS by bisection):
                    # step back a GOP; from the first GOP, reopen the file.
                    cur = self._seek(max(0, cur.key_i - 1), cur.reseeks + 1)
                    continue
                if cur.prev is None and item is None:
                    raise VideoError(f"{self.path}: no frame could be decoded — the file is corrupt or truncated")
                if cur.prev is None:  # the target precedes every decodable frame
                    cur.prev, cur.pos = item, item[1]
                elif item is not None:
                    cur.pending = item
                return cur.prev  # (at the end of the stream: the last decodable frame)
            cur.prev, cur.pos = item, item[1]
            if item[1] == t:
                return item

    def _frame_pts(self, frame, cur: _Cursor) -> int:
        cur.taken += 1
        pts = self._index.pts
        if not self._index.counted and frame.pts is not None:
            return int(frame.pts)
        # Counting: the n-th frame after the keyframe a seek landed on (decode order = display
        # order across closed GOPs); without a landing point, the frame after the previous one.
        if self._index.counted and cur.landed and cur.landed[0] is not None:
            slot = int(np.searchsorted(pts, cur.landed[0])) + cur.taken - 1
        else:
            slot = int(np.searchsorted(pts, cur.pos, side="right"))
        return int(pts[min(slot, len(pts) - 1)])

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
