"""A video's frame table (every frame's pts, the keyframes), built by one demux pass and cached on disk.

The demux pass reads every packet without decoding: ~0.5 s for a 60-minute 30 fps file, paid on
every open before this cache. The table is stored under `$LVU_CACHE_DIR/index/` (next to the frame
cache), one small file per video keyed by the video's content fingerprint (lvu.media.identity) and
the PyAV version, so a replaced or re-encoded file gets a new entry and a stale table is never
read. Files are written to a temp name and renamed (readers see whole files only); one that fails
its checks is rebuilt. pts are stored delta-coded and zlib-compressed: a constant-rate 60-minute
video's table takes a few KB.

The stored table also keeps what the reader learns from the first decoded frame (display
rotation; whether frame pts can be trusted), so an open that finds its table decodes nothing.

(Split out of lvu.media.video, which re-exports `_Index` and `_build_index`.)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from lvu.errors import VideoError
from lvu.media.av_io import _REFETCH, _short

log = logging.getLogger("lvu.media.video")

INDEX_VERSION = 1
"""Bump when `_build_index` changes what it records: older files are then ignored."""
_MAGIC = b"LVUIDX\x00\x01"


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
    rotation: int | None = None
    """Clockwise display rotation (from the first decoded frame), once known."""


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


# ---- the on-disk cache ---------------------------------------------------------------------------


def index_cache_root() -> Path:
    """`$LVU_CACHE_DIR/index` (or the user cache dir's)."""
    from lvu.paths import cache_dir

    return cache_dir("index")


def index_path(video: str | Path, root: Path | None = None) -> Path:
    """Where the frame table of `video`'s current content is (or would be) stored."""
    from lvu.media.identity import video_fingerprint

    spec = f"{video_fingerprint(video)}/pyav-{av.__version__}/idx{INDEX_VERSION}"
    key = hashlib.sha256(spec.encode()).hexdigest()[:40]
    return (root or index_cache_root()) / key[:2] / f"{key}.idx"


def cached_index(video: str | Path) -> _Index | None:
    """The stored frame table of `video`'s current content, or None (absent, damaged, or the
    cache unreadable: never an error)."""
    try:
        return _read(index_path(video))
    except (VideoError, OSError):
        return None


def store_index(video: str | Path, index: _Index) -> None:
    """Store `index` (with its `rotation` known) for `video`'s current content; a cache that
    cannot be written is skipped silently (the next open builds the table again)."""
    try:
        _write(index_path(video), index)
    except (VideoError, OSError) as e:
        log.debug("frame index: cannot store the table of %s (%s)", video, e)


def _write(where: Path, index: _Index) -> None:
    pts = np.asarray(index.pts, dtype="<i8")
    keys = np.asarray(index.keys, dtype="<i8")
    payload = zlib.compress(np.diff(pts, prepend=0).tobytes() + np.diff(keys, prepend=0).tobytes(), 1)
    head = json.dumps({"frames": len(pts), "keys": len(keys), "last_duration": int(index.last_duration),
                       "counted": bool(index.counted), "timed": bool(index.timed),
                       "rotation": int(index.rotation or 0)}).encode()
    where.parent.mkdir(parents=True, exist_ok=True)
    tmp = where.parent / f".tmp-{where.name}-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(tmp, "wb") as f:
            f.write(_MAGIC + struct.pack("<I", len(head)) + head + payload)
        os.replace(tmp, where)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read(where: Path) -> _Index | None:
    """The stored table, or None when absent or damaged (a damaged file is removed)."""
    try:
        blob = where.read_bytes()
    except OSError:
        return None
    try:
        if blob[:8] != _MAGIC:
            raise ValueError("bad magic")
        (hlen,) = struct.unpack("<I", blob[8:12])
        head = json.loads(blob[12 : 12 + hlen])
        raw = np.frombuffer(zlib.decompress(blob[12 + hlen :]), dtype="<i8")  # zlib checks its adler32
        n, k = int(head["frames"]), int(head["keys"])
        if n < 1 or k < 1 or len(raw) != n + k:
            raise ValueError("lengths disagree")
        pts, keys = np.cumsum(raw[:n]).astype(np.int64), np.cumsum(raw[n:]).astype(np.int64)
        return _Index(pts, keys.tolist(), int(head["last_duration"]), bool(head["counted"]), bool(head["timed"]),
                      int(head["rotation"]))
    except (ValueError, KeyError, TypeError, struct.error, zlib.error) as e:
        log.warning("frame index: dropping damaged %s (%s); rebuilding", where, e)
        where.unlink(missing_ok=True)
        return None
