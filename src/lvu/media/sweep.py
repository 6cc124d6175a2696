"""The exact forward sweep of VideoReader: sorted target pts read with as few seeks and decoded
frames as the decoder allows (see lvu.media.video's module doc and lvu.media.decode_floor).

Targets are cut into segments, each read from one seek; within a segment the decoder goes on
forward (non-reference frames no target needs are skipped, av_io._Skip), and at a segment's end
it is drained (av_io._Drain) instead of fed the packets that would push its last frames out.
Seeks that land past their keyframe step back; damaged frames let the previous one stand in.

(Split out of lvu.media.video: `ExactSweep` is a base class of VideoReader, using its `_index`,
`_seek_to`, `_to_array`, `_skip`, `_count`, `_sent` and `_cursor`.)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from lvu.errors import VideoError
from lvu.media.av_io import _decoded, _Drain
from lvu.media.gop_runs import SEEK_COST_FRAMES

if TYPE_CHECKING:
    from lvu.media.av_io import Resize, _Skip
    from lvu.media.frame_index import _Index

_MAX_RESEEKS = 8


@dataclass
class _Cursor:
    """The decoder's position: the live frame iterator since the last seek."""

    frames: Iterator[Any]
    key_i: int
    """Keyframe (index into the keyframe list) this sweep was asked to start from."""
    pos: int
    """pts of the last frame taken (keyframe pts - 1 right after a seek)."""
    landed: list[int | None] = field(default_factory=list)
    taken: int = 0
    prev: tuple[Any, int] | None = None  # (frame, pts) of the last frame taken
    pending: tuple[Any, int] | None = None  # (frame, pts) decoded past the previous target, for the next one
    reseeks: int = 0
    segment: tuple[int, ...] = ()
    """The targets this cursor serves (re-armed after a re-seek)."""
    drain: _Drain = field(default_factory=_Drain)
    """Targets after whose packets the decoder is drained (the segment's end; see av_io._Drain)."""


class ExactSweep:
    """VideoReader's exact decoding of sorted, distinct target pts (mixed into VideoReader)."""

    # What VideoReader (lvu.media.video) supplies: its file, frame table, decoder and counters.
    path: str
    _index: _Index
    _skip: _Skip | None
    _drain_last: bool
    _cursor: _Cursor | None
    _container: Any  # av's InputContainer (PyAV's types are partial)
    _stream: Any
    _count: list[int]
    _sent: list[tuple[int, str]] | None

    if TYPE_CHECKING:
        def _seek_to(self, ki: int, hard: bool = False) -> None: ...
        def _to_array(self, frame: Any, rs: Resize | None) -> np.ndarray: ...

    def _decode(self, targets: list[int], rs: Resize | None) -> dict[int, tuple[np.ndarray, int]]:
        """Sweep forward over sorted target pts: target -> (array, pts of the frame shown).

        Targets are cut into segments, each read from one seek (the next target lies within
        SEEK_COST_FRAMES of the decode position, or in the same GOP). At a segment's end the
        decoder is drained rather than fed the packets that would push its last frames out; the
        call's last segment is drained only in a parallel run's decoder (`_drain_last`), so a
        later call can go on forward from there."""
        out: dict[int, tuple[np.ndarray, int]] = {}
        keys = self._index.keys
        if self._skip is not None and targets:
            self._skip.arm(targets)
        segments = self._segments(targets)
        for si, segment in enumerate(segments):
            drain = self._skip is not None and (si < len(segments) - 1 or self._drain_last)
            for j, t in enumerate(segment):
                cur = self._cursor
                ki = max(0, bisect_right(keys, t) - 1)
                if cur is None or cur.drain.done or self._needs_seek(cur.pos, t):
                    cur = self._seek(ki, segment=segment[j:] if drain else ())
                elif j == 0:  # an earlier call's cursor goes on: this segment's end applies
                    cur.drain.after = set(segment) if drain else set()
                    cur.segment = tuple(segment) if drain else ()
                frame, p = self._advance(cur, t)
                out[t] = (self._to_array(frame, rs), p)
        return out

    def _needs_seek(self, pos: int, t: int) -> bool:
        """Whether reaching target pts `t` from decode position `pos` takes a seek: backwards, or a
        later GOP whose keyframe lies more than SEEK_COST_FRAMES frames ahead."""
        if pos >= t:
            return True
        keys, pts = self._index.keys, self._index.pts
        key = keys[max(0, bisect_right(keys, t) - 1)]
        if key <= pos + 1:
            return False
        return int(np.searchsorted(pts, key)) - int(np.searchsorted(pts, pos, side="right")) > SEEK_COST_FRAMES

    def _segments(self, targets: list[int]) -> list[list[int]]:
        """Sorted targets cut where the sweep will seek (see `_decode`)."""
        segments: list[list[int]] = []
        for i, t in enumerate(targets):
            if i == 0 or self._needs_seek(targets[i - 1], t):
                segments.append([])
            segments[-1].append(t)
        return segments

    def _seek(self, ki: int, reseeks: int = 0, segment: Sequence[int] = ()) -> _Cursor:
        self._seek_to(ki, hard=reseeks > 0)
        if self._skip is not None:
            self._skip.seeked(self._index.keys[ki])
        landed: list[int | None] = []
        drain = _Drain(set(segment))
        frames = _decoded(self._container, self._stream, self.path, landed, self._count, self._skip, drain,
                          self._sent)
        self._cursor = _Cursor(frames, ki, self._index.keys[ki] - 1, landed, reseeks=reseeks, drain=drain,
                               segment=tuple(segment))
        return self._cursor

    def _advance(self, cur: _Cursor, t: int) -> tuple[Any, int]:
        """Decode up to target pts `t`; return (frame, pts) of the frame shown at `t`."""
        item: tuple[Any, int] | None
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
                    cur = self._seek(max(0, cur.key_i - 1), cur.reseeks + 1, cur.segment)
                    continue
                if cur.prev is None:  # the target precedes every decodable frame
                    if item is None:
                        raise VideoError(f"{self.path}: no frame could be decoded — the file is corrupt or truncated")
                    cur.prev, cur.pos = item, item[1]
                elif item is not None:
                    cur.pending = item
                return cur.prev  # (at the end of the stream: the last decodable frame)
            cur.prev, cur.pos = item, item[1]
            if item[1] == t:
                return item

    def _frame_pts(self, frame: Any, cur: _Cursor) -> int:
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
