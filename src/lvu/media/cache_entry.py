"""The frame cache's entry file: one sampling of one video, verified on every read.

Entry file (`<root>/<key[:2]>/<key>.frames`): 8-byte magic, uint32 header length, a JSON header
(encoding, pts, frame indices, shapes, blob sizes, CRC-32 of the payload), then the payload — raw
RGB bytes (default, lossless, ~3 ms for 32 frames of 320x180 = 5.5 MB), PNG (lossless, ~2x
smaller on camera-like content, ~30x slower to load) or JPEG q95 (lossy, ~10x smaller, ~4x
slower). A file that fails any check (truncated, garbage, bad CRC) raises `_Corrupt`.

(Split out of lvu.media.cache, which re-exports these names.)
"""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from lvu.media.video import FrameBatch

_MAGIC = b"LVUFRM\x00\x01"


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
            blobs.append(arr.data.cast("B"))
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
    if f.readinto(payload.data) != total:
        raise _Corrupt("short read")
    if zlib.crc32(payload.data) != header.get("crc32"):
        raise _Corrupt("checksum mismatch")
    try:
        return _decode_payload(header, payload)
    except _Corrupt:
        raise
    except Exception as e:  # a broken PNG/JPEG blob, a shape that does not fit...
        raise _Corrupt(f"{type(e).__name__}: {e}") from None
