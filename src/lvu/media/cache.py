"""The on-disk frame cache: decode a video's frames once, reuse them across models, runs and processes.

Entry points: `FrameCache.get_or_decode(video, seconds)` and `.get_or_sample(video, plan)` (a hit
opens no decoder), `info`/`prune` (`lvu cache info|prune`), `warm` (`lvu cache warm`: many videos
in worker processes) and `extract_frames` (`lvu frames`: a plan's frames as image files).

An entry holds the frames one sampling of one video produced. Its key is content-addressed: the
video's fingerprint (bytes, not its path — a renamed copy hits, a re-encoded file at the same path
misses), the timestamps or plan, resize, seek mode, storage encoding and decoder version.

Entry file (`<root>/<key[:2]>/<key>.frames`): 8-byte magic, uint32 header length, a JSON header
(encoding, pts, frame indices, shapes, blob sizes, CRC-32 of the payload), then the payload — raw
RGB bytes (default, lossless, ~3 ms for 32 frames of 320x180 = 5.5 MB), PNG (lossless, ~2x
smaller on camera-like content, ~30x slower to load) or JPEG q95 (lossy, ~10x smaller, ~4x
slower). Writers write a temp file in the same folder and `os.replace` it, so readers only ever
see complete entries and concurrent writers of one entry both succeed; a per-entry `flock`
additionally keeps two processes from decoding the same entry twice. A file that fails any check
(truncated, garbage, bad CRC) is a miss and is removed, never an exception.

LRU: a hit sets the entry's mtime; eviction removes the oldest mtimes first, automatically after a
put once the running total passes `max_bytes` (amortised: the total is re-read from disk only every
`_RESCAN_EVERY` puts), or on demand with `prune`.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from lvu.errors import LvuError, VideoError
from lvu.media import video as _video
from lvu.media.video import FrameBatch, Resize
from lvu.paths import cache_dir

log = logging.getLogger("lvu.cache")

ENCODINGS = ("raw", "png", "jpg")
"""Storage encodings: raw and png are lossless (hits equal decoded frames exactly); jpg is q95."""
FORMAT_VERSION = 2
"""Bump when the entry layout or anything that changes decoded pixels changes: old keys then miss."""
_MAGIC = b"LVUFRM\x00\x01"
_SUFFIX = ".frames"
_RESCAN_EVERY = 64
_LOW_WATER = 0.9
"""Automatic eviction prunes down to this fraction of max_bytes, so it does not run on every put."""
_STALE_SECONDS = 3600.0
"""Temp and lock files older than this are left-overs of a killed writer; prune removes them."""

# ---- video identity ---------------------------------------------------------------------------------

_HEAD = _TAIL = 1 << 20
_BLOCK = 64 << 10
_N_BLOCKS = 8
_fingerprints: dict[tuple[str, int, int], str] = {}
_fp_lock = threading.Lock()


def video_fingerprint(path: str | Path) -> str:
    """Content identity of a video file, cheap for multi-GB files: blake2b over the size, the first
    and last MiB and 8 evenly spaced 64 KiB blocks (small files are hashed whole). A copy or rename
    keeps it; a re-encode changes it (container headers and indexes sit at the ends). Memoised per
    (real path, size, mtime) in this process."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise VideoError(f"{path}: file not found — check the path and the benchmark's video directory") from None
    except OSError as e:
        raise VideoError(f"{path}: cannot read video ({e.strerror}) — check permissions") from None
    memo = (real, st.st_size, st.st_mtime_ns)
    with _fp_lock:
        if memo in _fingerprints:
            return _fingerprints[memo]
    size = st.st_size
    h = hashlib.blake2b(digest_size=16, person=b"lvu-video-fp1")
    h.update(struct.pack("<Q", size))
    with open(real, "rb") as f:
        if size <= _HEAD + _TAIL + _N_BLOCKS * _BLOCK:
            h.update(f.read())
        else:
            h.update(f.read(_HEAD))
            middle = size - _HEAD - _TAIL - _BLOCK
            for k in range(_N_BLOCKS):
                f.seek(_HEAD + middle * (k + 1) // (_N_BLOCKS + 1))
                h.update(f.read(_BLOCK))
            f.seek(size - _TAIL)
            h.update(f.read(_TAIL))
    digest = h.hexdigest()
    with _fp_lock:
        if len(_fingerprints) > 100_000:
            _fingerprints.clear()
        _fingerprints[memo] = digest
    return digest


def _resize_spec(resize: int | Resize | None) -> dict[str, Any] | None:
    """Canonical form of a resize rule for keys: an int N is Resize(short=N)."""
    if resize is None:
        return None
    if isinstance(resize, Resize):
        return {"short": resize.short, "long": resize.long, "size": list(resize.size) if resize.size else None}
    return {"short": int(resize), "long": None, "size": None}


def _decoder_id(backend: str = "pyav") -> str:
    import av

    import lvu

    if backend != "pyav":  # other decoders (lvu.media.backends) key their own entries
        from lvu.media.backends import backend_version

        return f"{backend_version(backend)}/lvu-{lvu.__version__}/fmt{FORMAT_VERSION}"
    return f"pyav-{av.__version__}/lvu-{lvu.__version__}/fmt{FORMAT_VERSION}"


# ---- entry encoding -------------------------------------------------------------------------------


class _Corrupt(Exception):
    st: os.stat_result | None = None


def _encode(batch: FrameBatch, encoding: str) -> tuple[bytes, list[bytes | memoryview]]:
    """Header bytes (magic + length + JSON) and payload blobs for one entry."""
    blobs: list[bytes | memoryview] = []
    shapes = []
    for img in batch.data:
        arr = np.ascontiguousarray(img, dtype=np.uint8)
        if arr.ndim != 3 or arr.shape[2] != 3:
            raise ValueError(f"frame of shape {arr.shape} is not RGB HxWx3")
        shapes.append(list(arr.shape))
        if encoding == "raw":
            blobs.append(memoryview(arr).cast("B"))
        else:
            from PIL import Image

            buf = io.BytesIO()
            if encoding == "png":
                Image.fromarray(arr).save(buf, "PNG", compress_level=1)
            else:
                Image.fromarray(arr).save(buf, "JPEG", quality=95)
            blobs.append(buf.getvalue())
    crc = 0
    for b in blobs:
        crc = zlib.crc32(b, crc)
    header = {
        "encoding": encoding,
        "pts": [float(t) for t in batch.pts_seconds],
        "indices": [int(i) for i in batch.indices],
        "shapes": shapes,
        "sizes": [len(b) if isinstance(b, bytes) else b.nbytes for b in blobs],
        "crc32": crc,
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    return _MAGIC + struct.pack("<I", len(head)) + head, blobs


def _decode_payload(header: dict[str, Any], payload: np.ndarray) -> FrameBatch:
    """Frames from a verified payload. Raw frames are writable views of `payload` (no copy)."""
    shapes, sizes, encoding = header["shapes"], header["sizes"], header["encoding"]
    if not (len(shapes) == len(sizes) == len(header["pts"]) == len(header["indices"])):
        raise _Corrupt("header lists disagree")
    data, offset = [], 0
    for shape, size in zip(shapes, sizes):
        blob = payload[offset : offset + size]
        offset += size
        if encoding == "raw":
            if int(np.prod(shape)) != size:
                raise _Corrupt("raw frame size does not match its shape")
            data.append(blob.reshape(shape))
        elif encoding in ("png", "jpg"):
            from PIL import Image

            img = np.array(Image.open(io.BytesIO(blob.tobytes())).convert("RGB"))
            if list(img.shape) != list(shape):
                raise _Corrupt("image size does not match its shape")
            data.append(img)
        else:
            raise _Corrupt(f"unknown encoding {encoding!r}")
    return FrameBatch(data=data, pts_seconds=[float(t) for t in header["pts"]],
                      indices=[int(i) for i in header["indices"]])


def _read_entry(path: Path) -> FrameBatch:
    """Load and verify one entry file; raises FileNotFoundError or _Corrupt (carrying the stat of
    the file it read, so only that file is removed)."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        try:
            return _read_open_entry(f, st)
        except _Corrupt as e:
            e.st = st
            raise


def _read_open_entry(f: Any, st: os.stat_result) -> FrameBatch:
    start = f.read(12)
    if len(start) < 12 or start[:8] != _MAGIC:
        raise _Corrupt("bad magic")
    (hlen,) = struct.unpack("<I", start[8:])
    if hlen > st.st_size - 12:
        raise _Corrupt("header longer than file")
    try:
        header = json.loads(f.read(hlen))
        total = sum(int(s) for s in header["sizes"])
    except (ValueError, KeyError, TypeError) as e:
        raise _Corrupt(f"bad header: {e}") from None
    if 12 + hlen + total != st.st_size:
        raise _Corrupt("truncated or padded")
    payload = np.empty(total, np.uint8)
    if f.readinto(memoryview(payload)) != total:
        raise _Corrupt("short read")
    if zlib.crc32(payload) != header.get("crc32"):
        raise _Corrupt("checksum mismatch")
    try:
        return _decode_payload(header, payload)
    except _Corrupt:
        raise
    except Exception as e:  # a broken PNG/JPEG blob, a shape that does not fit...
        raise _Corrupt(f"{type(e).__name__}: {e}") from None


# ---- the cache --------------------------------------------------------------------------------------


@dataclass
class CacheInfo:
    """What `lvu cache info` shows."""

    root: Path
    entries: int
    bytes: int
    max_bytes: int


class FrameCache:
    """Decoded frames on disk, content-addressed, LRU-evicted above `max_bytes`; safe to share
    between threads and processes. `encoding` is 'raw' (default), 'png' or 'jpg' (see module doc)."""

    def __init__(self, root: str | Path | None = None, max_bytes: int = 20 * 2**30, *,
                 encoding: str = "raw") -> None:
        if encoding not in ENCODINGS:
            raise LvuError(f"unknown frame-cache encoding {encoding!r} — use one of {', '.join(ENCODINGS)}")
        self.root = Path(root).expanduser() if root is not None else cache_dir("frames")
        self.max_bytes = int(max_bytes)
        self.encoding = encoding
        self._lock = threading.Lock()
        self._total: int | None = None  # running estimate of the bytes on disk
        self._puts_since_scan = 0

    def __repr__(self) -> str:
        return f"FrameCache({str(self.root)!r}, max_bytes={self.max_bytes}, encoding={self.encoding!r})"

    def __reduce__(self):  # picklable for worker processes
        return (_make_cache, (str(self.root), self.max_bytes, self.encoding))

    # ---- keys and paths ----

    def key(self, video_path: str | Path, timestamps: Sequence[float] | str, resize: int | Resize | None = None,
            approximate: bool = False, encoding: str | None = None, *, duration: float | None = None,
            backend: str = "pyav") -> str:
        """Entry key for these frames of this video content. `timestamps` is a list of seconds or a
        plan string such as 'uniform:32' (its frames follow from the content, and from `duration`
        when an annotation's duration overrides the file's)."""
        if isinstance(timestamps, str):
            from lvu.media.sampling import parse_plan

            what: Any = {"plan": str(parse_plan(timestamps)), "duration": duration}
        else:
            what = [float(t) for t in timestamps]
        spec = {
            "video": video_fingerprint(video_path), "frames": what, "resize": _resize_spec(resize),
            "approximate": bool(approximate), "encoding": encoding or self.encoding, "decoder": _decoder_id(backend),
        }
        blob = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:40]

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{_SUFFIX}"

    def __contains__(self, key: str) -> bool:
        """Whether an entry file exists (not verified: `get` checks it)."""
        return self.path(key).is_file()

    def _entries(self) -> Iterator[tuple[Path, os.stat_result]]:
        try:
            shards = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for shard in shards:
            if not shard.is_dir(follow_symlinks=False):
                continue
            try:
                files = list(os.scandir(shard.path))
            except FileNotFoundError:
                continue
            for entry in files:
                try:
                    yield Path(entry.path), entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue

    # ---- get / put ----

    def get(self, key: str) -> FrameBatch | None:
        """The cached frames, or None. A hit marks the entry recently used; a damaged entry is
        removed and reported as a miss."""
        path = self.path(key)
        try:
            batch = _read_entry(path)
        except FileNotFoundError:
            return None
        except _Corrupt as e:
            log.warning("frame cache: dropping damaged entry %s (%s)", path, e)
            self._remove_if_same(path, e.st)
            return None
        except OSError as e:  # unreadable (permissions, I/O error): a miss, left for the user
            log.warning("frame cache: cannot read %s (%s)", path, e)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        return batch

    def _remove_if_same(self, path: Path, st: os.stat_result | None) -> None:
        """Unlink `path` unless another writer has replaced it meanwhile (different inode)."""
        try:
            if st is None or os.stat(path).st_ino == st.st_ino:
                os.unlink(path)
        except OSError:
            pass

    def put(self, key: str, batch: FrameBatch) -> None:
        """Store frames atomically (temp file + rename); concurrent puts of one key both succeed and
        leave one valid entry. May evict least-recently-used entries afterwards."""
        head, blobs = _encode(batch, self.encoding)
        self._write(key, head, blobs)

    def _write(self, key: str, head: bytes, blobs: Sequence[bytes | memoryview]) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".tmp-{key}-{os.getpid()}-{threading.get_ident()}-{os.urandom(4).hex()}"
        size = len(head)
        try:
            with open(tmp, "wb") as f:
                f.write(head)
                for b in blobs:
                    f.write(b)
                    size += len(b) if isinstance(b, bytes) else b.nbytes
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._account(size)

    def _account(self, added: int) -> None:
        with self._lock:
            self._puts_since_scan += 1
            if self._total is None or self._puts_since_scan >= _RESCAN_EVERY:
                self._total, self._puts_since_scan = self._scan_bytes(), 0
            else:
                self._total += added
            over = self._total > self.max_bytes
        if over:
            self.prune(max_bytes=int(self.max_bytes * _LOW_WATER))

    def _scan_bytes(self) -> int:
        return sum(st.st_size for p, st in self._entries() if p.suffix == _SUFFIX)

    @contextmanager
    def _decode_lock(self, key: str) -> Iterator[None]:
        """Exclusive per-entry lock across processes and threads (flock); a no-op where flock is
        unavailable. Only saves duplicate decoding — correctness rests on the atomic rename."""
        try:
            import fcntl
        except ImportError:
            yield
            return
        path = self.path(key).with_suffix(".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            yield
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass
            yield
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
            os.close(fd)

    def get_or_decode(self, video_path: str | Path, timestamps: Sequence[float], *,
                      resize: int | Resize | None = None, approximate: bool = False,
                      threads: int = 0, backend: str = "pyav") -> FrameBatch:
        """Frames played at `timestamps` (seconds). A hit reads the cache only — no decoder is opened;
        a miss decodes (once across processes), stores and returns them. With the lossy 'jpg'
        encoding a miss returns the stored (JPEG round-tripped) frames, so hits and misses agree.
        `backend` picks the decoder for a miss (lvu.media.backends; part of the key)."""
        times = [float(t) for t in timestamps]

        def decode(reader: _video.VideoReader) -> FrameBatch:
            return reader.get_frames_played_at(times, resize=resize)

        return self._fill(self.key(video_path, times, resize, approximate, backend=backend), video_path, decode,
                          approximate=approximate, threads=threads, backend=backend)

    def get_or_sample(self, video_path: str | Path, plan: str, *, resize: int | Resize | None = None,
                      approximate: bool = False, duration: float | None = None, threads: int = 0,
                      backend: str = "pyav") -> FrameBatch:
        """A sampling plan's frames, read in the plan's native terms (`sampling.sample`: frame
        numbers for peer formulas, times for lvu's). Keyed by the plan, so a hit needs neither a
        decoder nor a probe of the video's duration. `duration` overrides the file's."""
        from lvu.media.sampling import parse_plan, sample

        parsed = parse_plan(plan)

        def decode(reader: _video.VideoReader) -> FrameBatch:
            return sample(reader, parsed, duration=duration, resize=resize)

        key = self.key(video_path, str(parsed), resize, approximate, duration=duration, backend=backend)
        return self._fill(key, video_path, decode, approximate=approximate, threads=threads, backend=backend)

    def _fill(self, key: str, video_path: str | Path, decode: Any, *, approximate: bool, threads: int,
              backend: str = "pyav") -> FrameBatch:
        batch = self.get(key)
        if batch is not None:
            return batch
        with self._decode_lock(key):
            batch = self.get(key)
            if batch is not None:
                return batch
            if backend == "pyav":
                reader = _video.VideoReader(video_path, approximate=approximate, threads=threads)
            else:
                from lvu.media.backends import open_reader

                reader = open_reader(video_path, backend, approximate=approximate, threads=threads)
            with reader:
                batch = decode(reader)
            head, blobs = _encode(batch, self.encoding)
            try:
                self._write(key, head, blobs)
            except OSError as e:
                log.warning("frame cache: cannot write %s (%s); continuing without caching", self.root, e)
        if self.encoding == "jpg":
            header = json.loads(head[12:])
            payload = np.frombuffer(b"".join(bytes(b) for b in blobs), np.uint8)
            batch = _decode_payload(header, payload)
        return batch

    # ---- size management ----

    def info(self) -> CacheInfo:
        entries = total = 0
        for p, st in self._entries():
            if p.suffix == _SUFFIX:
                entries += 1
                total += st.st_size
        return CacheInfo(root=self.root, entries=entries, bytes=total, max_bytes=self.max_bytes)

    def prune(self, max_bytes: int | None = None,
              older_than: float | timedelta | None = None) -> tuple[int, int]:
        """Remove entries not used for `older_than` (seconds or timedelta), then least-recently-used
        entries until at most `max_bytes` remain (default: this cache's limit; 0 empties it).
        Also clears temp/lock files left by killed writers. Returns (removed entries, freed bytes)."""
        limit = self.max_bytes if max_bytes is None else int(max_bytes)
        if isinstance(older_than, timedelta):
            older_than = older_than.total_seconds()
        now = time.time()
        entries = []
        for p, st in self._entries():
            if p.suffix == _SUFFIX:
                entries.append((st.st_mtime, p.name, p, st))
            elif p.name.startswith(".tmp-") or p.suffix == ".lock":
                if now - st.st_mtime > _STALE_SECONDS:
                    self._remove_if_same(p, st)
        entries.sort()  # least recently used first
        total = sum(e[3].st_size for e in entries)
        removed = freed = 0
        for mtime, _, p, st in entries:
            too_old = older_than is not None and now - mtime > older_than
            if not too_old and total <= limit:
                continue
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
            except OSError as e:
                log.warning("frame cache: cannot remove %s (%s)", p, e)
                continue
            total -= st.st_size
            removed += 1
            freed += st.st_size
        with self._lock:
            self._total, self._puts_since_scan = total, 0
        return removed, freed


_worker_caches: dict[tuple[str, int, str], FrameCache] = {}


def _make_cache(root: str, max_bytes: int, encoding: str) -> FrameCache:
    """One FrameCache per process and configuration (keeps its running size total)."""
    k = (root, max_bytes, encoding)
    if k not in _worker_caches:
        _worker_caches[k] = FrameCache(root, max_bytes, encoding=encoding)
    return _worker_caches[k]
