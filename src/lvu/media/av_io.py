"""PyAV access shared by the reader, its frame index and its parallel GOP runs: opening a file with
one-line errors, decoding on through damaged packets, skipping frames nothing depends on.

(Split out of lvu.media.video, which re-exports these names.)
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import av

from lvu.errors import VideoError
from lvu.media.identity import not_regular

log = logging.getLogger("lvu.media.video")

_MAX_BAD_PACKETS = 64
_REFETCH = "fetch it again"


def _open(path: str | Path):
    p = Path(path)
    if not p.exists():
        raise VideoError(f"{path}: file not found — check the path and the benchmark's video directory")
    if p.is_dir():
        raise VideoError(f"{path}: is a directory, not a video file — point to the video file itself")
    if not p.is_file():
        raise VideoError(not_regular(path))
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
    frames of x264's default B-pyramid; once every target before the next keyframe has been sent,
    the rest of the GOP is skipped too ("NONKEY": the keyframe resets the references). Frames past
    the last target are decoded in full, so a later call that goes on forward from there finds
    every frame. Shared by the reader and its live frame iterator: each call sets its targets."""

    keys: list[int] = field(default_factory=list)
    """pts of every keyframe, ascending."""
    wanted: set[int] = field(default_factory=set)
    """pts of the frames the current call needs."""
    last: int = -1
    """The largest of them."""
    unsent: list[int] = field(default_factory=list)
    """Ascending pts of the wanted frames not yet given to the decoder since the last seek."""

    def arm(self, targets: list[int]) -> None:
        self.wanted, self.last, self.unsent = set(targets), targets[-1], sorted(targets)

    def seeked(self, key: int) -> None:
        """After a seek to keyframe pts `key`: the targets from there on are to be sent again."""
        self.unsent = sorted(t for t in self.wanted if t >= key)

    def mode(self, p: int | None) -> str:
        if p is None or p > self.last:
            return "DEFAULT"
        if p in self.wanted:
            i = bisect_left(self.unsent, p)
            if i < len(self.unsent) and self.unsent[i] == p:
                del self.unsent[i]
            return "DEFAULT"
        k = bisect_right(self.keys, p)  # the next keyframe after p
        if k < len(self.keys) and self.keys[k] <= self.last and (not self.unsent or self.unsent[0] >= self.keys[k]):
            return "NONKEY"  # nothing before that keyframe is wanted any more; nothing after depends on p
        return "NONREF"


@dataclass
class _Drain:
    """Stop after these packets: once every pts in `after` has been sent to the decoder, it is
    drained (its buffered frames returned without decoding the packets that would otherwise push
    them out, ~2 per GOP with B-frames) and the frame iterator ends, `done` set: a seek follows."""

    after: set[int] = field(default_factory=set)
    done: bool = False


def _decoded(container, stream, path, landed: list, counter: list[int] | None = None,
             skip: _Skip | None = None, drain: _Drain | None = None, sent: list | None = None) -> Iterator:
    """Decode on from the demuxer's position. As with the ffmpeg CLI, a packet the decoder rejects
    costs its frame, not the read. `landed` receives the first packet's pts (where a seek went);
    `sent`, when given, receives (pts, skip_frame mode) of each packet given to the decoder."""
    run = bad = 0
    cc, mode = stream.codec_context, None
    try:
        for packet in container.demux(stream):
            if not landed and packet.size:
                landed.append(packet.pts)
            p = packet.pts
            if skip is not None:
                want = skip.mode(p)
                if want != mode:
                    cc.skip_frame = mode = want
            if sent is not None and packet.size:
                sent.append((p, mode or "DEFAULT"))
            last = False
            if drain is not None and p in drain.after:
                drain.after.discard(p)
                last = not drain.after
            try:
                frames = packet.decode()
            except av.InvalidDataError:
                frames = []
                run, bad = run + 1, bad + 1
                if run > _MAX_BAD_PACKETS:
                    raise VideoError(
                        f"{path}: {run} packets in a row cannot be decoded — the file is corrupt; {_REFETCH}"
                    ) from None
                if not last:
                    continue
            else:
                run = 0
            if last:
                assert drain is not None  # `last` is only ever set from a drain
                frames = [*frames, *cc.decode(None)]
                drain.done = True
            for frame in frames:
                if counter is not None:
                    counter[0] += 1
                yield frame
            if last:
                return
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
