"""Content identity of a video file: the key of every per-video cache (frames, frame index, ASR).

(Split out of lvu.media.cache, which re-exports `video_fingerprint`.)
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import threading
from pathlib import Path

from lvu.errors import VideoError

_HEAD = _TAIL = 1 << 20
_BLOCK = 64 << 10
_N_BLOCKS = 8
_fingerprints: dict[tuple[str, int, int], str] = {}
_fp_lock = threading.Lock()


def not_regular(path: str | Path) -> str:
    """The error for a path that is not a regular file (a FIFO would hang the reader, a device such
    as /dev/urandom never ends)."""
    return (f"{path}: not a regular file (a pipe, device or socket, or a link to one) — point to the video "
            "file itself")


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
    if not stat.S_ISREG(st.st_mode):
        raise VideoError(not_regular(path))
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
