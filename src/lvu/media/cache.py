"""The on-disk frame cache: decode a video's frames once, reuse them across models, runs and processes.

Entry points: `FrameCache.get_or_decode(video, seconds)` and `.get_or_sample(video, plan)` (a hit
opens no decoder), `info`/`prune` (`lvu cache info|prune`), `warm` (`lvu cache warm`: many videos
in worker processes) and `extract_frames` (`lvu frames`: a plan's frames as image files).

An entry holds the frames one sampling of one video produced. Its key is content-addressed: the
video's fingerprint (bytes, not its path — a renamed copy hits, a re-encoded file at the same path
misses), the timestamps or plan, resize, seek mode, storage encoding and decoder version.

Entries are written to a temp file in the same folder and `os.replace`d, so readers only ever see
complete entries and concurrent writers of one entry both succeed; a per-entry `flock`
additionally keeps two processes from decoding the same entry twice. A damaged entry file (see
lvu.media.cache_entry for the format and its checks) is a miss and is removed, never an exception.
Video identity (`video_fingerprint`) lives in lvu.media.identity.

LRU: a hit sets the entry's mtime; eviction removes the oldest mtimes first, automatically after a
put once the running total passes `max_bytes` (amortised: the total is re-read from disk only every
`_RESCAN_EVERY` puts), or on demand with `prune`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from lvu.errors import LvuError
from lvu.media import video as _video
from lvu.media.cache_entry import _MAGIC, _Corrupt, _decode_payload, _encode, _read_entry  # noqa: F401  (re-exported)
from lvu.media.identity import video_fingerprint  # noqa: F401  (re-exported: lvu.media.cache.video_fingerprint)
from lvu.media.video import MAX_FRAME_SIDE, FrameBatch, Resize
from lvu.paths import cache_dir

log = logging.getLogger("lvu.cache")

ENCODINGS = ("raw", "png", "jpg")
"""Storage encodings: raw and png are lossless (hits equal decoded frames exactly); jpg is q95."""
FORMAT_VERSION = 2
"""Bump when the entry layout or anything that changes decoded pixels changes: old keys then miss."""
_SUFFIX = ".frames"
_RESCAN_EVERY = 64
_LOW_WATER = 0.9
"""Automatic eviction prunes down to this fraction of max_bytes, so it does not run on every put."""
_STALE_SECONDS = 3600.0
"""Temp and lock files older than this are left-overs of a killed writer; prune removes them."""


def _resize_spec(resize: int | Resize | None) -> dict[str, Any] | None:
    """Canonical form of a resize rule for keys: an int N is Resize(short=N)."""
    if resize is None:
        return None
    if isinstance(resize, Resize):
        return {"short": resize.short, "long": resize.long, "size": list(resize.size) if resize.size else None}
    return {"short": int(resize), "long": None, "size": None}


def _decoder_id(backend: str = "pyav") -> str:
    import av

    from lvu.version import __version__

    if backend != "pyav":  # other decoders (lvu.media.backends) key their own entries
        from lvu.media.backends import backend_version

        return f"{backend_version(backend)}/lvu-{__version__}/fmt{FORMAT_VERSION}"
    return f"pyav-{av.__version__}/lvu-{__version__}/fmt{FORMAT_VERSION}"


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
            "max_side": MAX_FRAME_SIDE,  # frames past it are scaled down (lvu.media.video.bounded)
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
