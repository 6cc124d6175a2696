"""Copying the background's AAC packets between splice points, re-encoding only around them.

AAC packets hold 1024 samples each, so the output track is a run of packets on a 1024-sample grid.
A background span keeps its packets when they fall on that grid: its samples are moved by the
nearest grid-aligned offset, at most 512 samples (about 11 ms at 48 kHz) from the exact one — the
picture stays frame-exact, the sound of a background span follows it within half an AAC frame. The
packets around every splice point (and the first two and last two) are re-encoded by a fresh
encoder fed the same signal — the background, moved by the same offset, right up to each copied
neighbour, and the insert's samples exactly — so the overlapping transforms of neighbouring
packets still cancel and no click is heard.

Used when the background's audio is AAC-LC with 1024-sample packets back to back, in the output's
format, with the audio specific config lvu's encoder writes; otherwise the whole track is
re-encoded sample-exactly (lvu.construct.splice_audio.AudioTrack), as `exact_audio=True` asks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lvu.construct.splice_audio import _END, AudioFormat, AudioTrack, BackgroundAudio
from lvu.media.av_io import _open

FRAME = 1024


@dataclass(frozen=True)
class AacPackets:
    """Where the background's AAC packets lie: packet j starts at sample first + j * 1024 of the
    video's clock (0 = the first video frame)."""

    first: int
    count: int


_GRIDS: dict[tuple, AacPackets | str] = {}


def aac_packets(path: Path, fmt: AudioFormat) -> AacPackets | str:
    """The background's packet grid, or why its packets cannot be copied (memoised per file version)."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, fmt)
    if key not in _GRIDS:
        _GRIDS[key] = _read_grid(Path(path), fmt)
    return _GRIDS[key]


def _read_grid(path: Path, fmt: AudioFormat) -> AacPackets | str:
    container, _ = _open(path)
    try:
        if not container.streams.audio:
            return "it has no audio"
        stream = container.streams.audio[0]
        cc = stream.codec_context
        if cc.name != "aac" or cc.profile != "LC" or (cc.frame_size or FRAME) != FRAME:
            return f"its audio is {cc.name} {cc.profile or ''}, not AAC-LC"
        if cc.sample_rate != fmt.rate or cc.layout.name != fmt.layout:
            return "its audio format differs from the output's"
        ours = av.CodecContext.create("aac", "w")
        ours.sample_rate, ours.layout, ours.format = fmt.rate, fmt.layout, "fltp"
        ours.open()
        if bytes(cc.extradata or b"")[:2] != bytes(ours.extradata or b"")[:2]:
            return "its AAC configuration differs from lvu's encoder's"
        tb = Fraction(stream.time_base)
        starts = [round(p.pts * tb * fmt.rate) for p in container.demux(stream) if p.size and p.pts is not None]
    finally:
        container.close()
    if not starts or any(b - a != FRAME for a, b in zip(starts, starts[1:])):
        return "its AAC packets are not back to back"
    return AacPackets(starts[0] + round(fmt.offset * fmt.rate), len(starts))


class _PacketReader:
    """The background's AAC packets by number, read in order (a smaller number seeks back)."""

    def __init__(self, path: Path) -> None:
        self.path, self.next = path, 0
        self.container: Any = None  # av's InputContainer, while open
        self.iterator: Iterator[av.Packet] | None = None

    def get(self, j: int) -> bytes:
        if self.container is None or j < self.next:
            self.close()
            self.container, _ = _open(self.path)
            stream = self.container.streams.audio[0]
            self.iterator, self.next = (p for p in self.container.demux(stream) if p.size), 0
        assert self.iterator is not None  # opened with the container
        for packet in self.iterator:
            self.next += 1
            if self.next - 1 == j:
                return bytes(packet)
        raise EOFError(f"{self.path}: AAC packet {j} is missing")

    def close(self) -> None:
        if self.container is not None:
            self.container.close()
            self.container = None


class CopyAudioTrack(AudioTrack):
    """AudioTrack whose producer copies background packets where it can (see the module doc)."""

    def __init__(self, container: Any, fmt: AudioFormat, pieces: list[Any], rate: Fraction,
                 source: BackgroundAudio, grid: AacPackets, path: Path) -> None:
        self.grid, self.reader = grid, _PacketReader(path)
        self.copied = self.encoded = 0
        super().__init__(container, fmt, pieces, rate, source)

    def _offset(self, piece: Any) -> int:
        """Background sample + offset = output sample: the exact offset moved onto the packet grid."""
        exact = self.sample_at(piece.out_start) - self.sample_at(piece.bg_start)
        shift = (-self.grid.first - exact) % FRAME
        return exact + (shift - FRAME if shift > FRAME // 2 else shift)

    def _plan(self, total: int) -> list[int | None]:
        """For each output packet: the background packet copied there, or None (re-encoded)."""
        n = math.ceil(total / FRAME)
        plan: list[int | None] = [None] * n
        for piece in self.pieces:
            if piece.insert is not None:
                continue
            offset = self._offset(piece)
            lo, hi = self.sample_at(piece.out_start), self.sample_at(piece.out_end)
            for k in range(max(2, -(-(lo + FRAME) // FRAME)), min(n - 2, (hi - 2 * FRAME) // FRAME + 1)):
                j = (k * FRAME - offset - self.grid.first) // FRAME  # its neighbours lie in the span too
                if 0 <= j < self.grid.count and lo <= k * FRAME - FRAME and (k + 2) * FRAME <= hi:
                    plan[k] = j
        return plan

    def _signal(self, x0: int, n: int, total: int, cache: dict[int, np.ndarray]) -> np.ndarray:
        """Output samples x0..x0+n-1 as the copied packets imply them: background spans moved by
        their grid offsets, inserts exact, silence outside the video."""
        out = np.zeros((self.fmt.channels, n), np.float32)
        for piece in self.pieces:
            lo, hi = max(x0, self.sample_at(piece.out_start)), min(x0 + n, self.sample_at(piece.out_end), total)
            if hi <= lo:
                continue
            if piece.insert is None:
                out[:, lo - x0:hi - x0] = self.source.read(lo - self._offset(piece), hi - lo)
            else:
                if piece.out_start not in cache:
                    cache.clear()
                    cache[piece.out_start] = self._insert_audio(piece)
                base = self.sample_at(piece.out_start)
                out[:, lo - x0:hi - x0] = cache[piece.out_start][:, lo - base:hi - base]
        return out

    def _produce(self) -> None:
        try:
            total = self.sample_at(self.pieces[-1].out_end) if self.pieces else 0
            plan, k = self._plan(total), 0
            cache: dict[int, np.ndarray] = {}
            while k < len(plan) and not self.stop:
                copied = plan[k]
                if copied is not None:
                    packet = av.Packet(self.reader.get(copied))
                    packet.pts = packet.dts = k * FRAME
                    packet.duration, packet.time_base = FRAME, Fraction(1, self.fmt.rate)
                    self.ready.put(packet)
                    self.copied += 1
                    k += 1
                    continue
                end = k
                while end < len(plan) and plan[end] is None:
                    end += 1
                self._encode_run(k, end, len(plan), total, cache)
                k = end
            self.ready.put(_END)
        except BaseException as e:  # handed to the writing thread, which raises it
            self.ready.put(e)
        finally:
            self.source.close()
            self.reader.close()

    def _encode_run(self, k0: int, k1: int, n: int, total: int, cache: dict[int, np.ndarray]) -> None:
        """Output packets k0..k1-1 from a fresh encoder, fed one packet's worth of signal before
        (its first packet is the encoder's priming) and after them, so both edges overlap cleanly."""
        encoder = av.CodecContext.create("aac", "w")
        encoder.sample_rate, encoder.layout, encoder.format = self.fmt.rate, self.fmt.layout, "fltp"
        encoder.time_base = Fraction(1, self.fmt.rate)
        start = max(0, (k0 - 1) * FRAME)
        stop = total if k1 == n else (k1 + 1) * FRAME
        keep_from = -FRAME if k0 == 0 else k0 * FRAME
        keep_to = math.inf if stop == total else k1 * FRAME
        x = start
        while x < stop:
            size = min(FRAME, stop - x)
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(self._signal(x, size, total, cache)), format="fltp",
                                               layout=self.fmt.layout)
            frame.sample_rate, frame.pts, frame.time_base = self.fmt.rate, x, Fraction(1, self.fmt.rate)
            self._put(encoder.encode(frame), keep_from, keep_to)
            x += size
        self._put(encoder.encode(None), keep_from, keep_to)

    def _put(self, packets: list, keep_from: float, keep_to: float) -> None:
        for packet in packets:
            if keep_from <= packet.pts < keep_to:
                self.ready.put(packet)
                self.encoded += 1

