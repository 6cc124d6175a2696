"""Frame images for the viewer: a stored sample's frames, re-read through the shared frame cache
and served as JPEG. Only (video, stored timestamps) pairs taken from a stored record reach here."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from lvu.media.cache import FrameCache


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
