"""The media lvu's web pages serve, under one rule: a media URL names a thing the server already
knows — a stored sample's i-th frame (`lvu view`), a video registered by the loaded benchmark
(`lvu review`) — by id, and nothing in a URL is ever used as a file path. Anything else is a 404.

- `FrameImages`: a stored sample's frames, re-read through the shared frame cache and served as
  JPEG. Only (video, stored timestamps) pairs taken from a stored record reach here.
- `VideoFiles`: whole video files for an HTML5 <video>, with HTTP range requests (seeking), each
  under a key derived from its path; only paths registered up front can be served.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from lvu.media.cache import FrameCache

_VIDEO_TYPES = {".mp4": "video/mp4", ".m4v": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm",
                ".mkv": "video/x-matroska", ".ogv": "video/ogg", ".avi": "video/x-msvideo", ".ts": "video/mp2t",
                ".mpg": "video/mpeg", ".mpeg": "video/mpeg", ".flv": "video/x-flv"}
_VIDEO_KEY = re.compile(r"[0-9a-f]{16}")


class VideoFiles:
    """The videos one server may send, each under `key(path)` (16 hex digits of the path's hash).

    `response(key)` is a range-capable file response for a registered key whose file is a regular
    file now with a video file's extension; any other key — a registered file that has gone, or
    that is not named like a video (a sample naming /etc/passwd as its video) — raises LookupError
    (the route's 404)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths: dict[str, str] = {}
        for path in paths:
            self._paths.setdefault(self.key(path), os.path.abspath(path))

    @staticmethod
    def key(path: str) -> str:
        return hashlib.sha256(os.path.abspath(path).encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._paths

    def response(self, key: str) -> Any:
        from starlette.responses import FileResponse

        path = self._paths.get(key) if _VIDEO_KEY.fullmatch(key or "") else None
        kind = _VIDEO_TYPES.get(os.path.splitext(path)[1].lower()) if path else None
        if path is None or kind is None or not os.path.isfile(path):
            raise LookupError(f"no registered video {key!r}")
        # FileResponse answers Range requests (206, one or several ranges) and sets Accept-Ranges.
        return FileResponse(path, media_type=kind, headers={"Cache-Control": "private, max-age=3600"})


def encode_jpeg(image: Any, quality: int = 90) -> bytes:
    from PIL import Image

    from lvu.types import as_rgb

    buf = io.BytesIO()
    Image.fromarray(as_rgb(image)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


class FrameImages:
    """JPEGs of whole samples, newest `keep` samples in memory. A page asks for all of a sample's
    frames at once (one request each, in parallel): the first request decodes the batch — a frame
    cache hit when the run or an earlier view filled it — and encodes every frame; the others wait on
    the same per-sample lock and read the result."""

    def __init__(self, cache: FrameCache | None = None, keep: int = 4, quality: int = 90) -> None:
        self.cache = cache if cache is not None else FrameCache()
        self.keep = keep
        self.quality = quality
        self._items: OrderedDict[tuple, list[bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple, threading.Lock] = {}

    def jpeg(self, video: str, timestamps: Sequence[float], index: int, *, resize: int | None = None) -> bytes:
        """The `index`-th frame of the frames played at `timestamps` (the sample's stored times), at
        the run's `resize`, as JPEG bytes. Raises LvuError when the video cannot be read."""
        key = (video, tuple(float(t) for t in timestamps), resize)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][index]
            batch = self.cache.get_or_decode(video, list(key[1]), resize=resize)
            images = [encode_jpeg(frame, self.quality) for frame in batch.data]
            with self._lock:
                self._items[key] = images
                while len(self._items) > self.keep:
                    old, _ = self._items.popitem(last=False)
                    self._key_locks.pop(old, None)
            return images[index]
