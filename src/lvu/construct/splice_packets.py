"""A background's video packets GOP by GOP, for lvu.construct.splice's copy path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import av

from lvu.media.av_io import _open


def packet_copy(packet: av.Packet) -> av.Packet:
    """A new packet with the same bytes and times (muxing takes a packet's data; kept ones are reused)."""
    fresh = av.Packet(bytes(packet))
    fresh.pts, fresh.dts, fresh.time_base, fresh.is_keyframe = packet.pts, packet.dts, packet.time_base, packet.is_keyframe
    return fresh


class GopPackets:
    """The background's video packets GOP by GOP, read sequentially; an earlier GOP (a loop) is
    reached by seeking. The last GOP read with keep=True is kept, since a splice point inside a GOP
    decodes it twice (the frames before the point, then those after)."""

    def __init__(self, path: Path, first_pts: int, ticks: int, keyframes: tuple[int, ...]) -> None:
        self.first_pts, self.ticks, self.keyframes = first_pts, ticks, keyframes
        self.container, self.stream = _open(path)
        self.key_pts = {first_pts + k * ticks: g for g, k in enumerate(keyframes)}
        self.iterator: Iterator[av.Packet] | None = None
        self.pending: av.Packet | None = None
        """A GOP's first packet read while finishing the previous GOP."""
        self.next_gop = 0
        self.kept: tuple[int, list[av.Packet]] | None = None

    def _packets(self) -> Iterator[av.Packet]:
        for p in self.container.demux(self.stream):
            if p.size:
                yield p

    def _seek(self, g: int) -> None:
        self.container.seek(self.first_pts + self.keyframes[g] * self.ticks, stream=self.stream, backward=True)
        self.iterator, self.pending = self._packets(), None
        for p in self.iterator:  # land on g's keyframe (a seek may land earlier)
            if p.is_keyframe and p.pts is not None and self.key_pts.get(p.pts) == g:
                self.pending = p
                break
        self.next_gop = g

    def gop(self, g: int, *, keep: bool) -> list[av.Packet]:
        if self.kept is not None and self.kept[0] == g:
            packets = self.kept[1]
            if not keep:  # about to be copied: muxing takes the packets' data, so read them afresh next time
                self.kept = None
            return packets
        if self.iterator is None or g < self.next_gop:
            self._seek(g)
        while True:
            packets = self._read_one()
            if self.next_gop - 1 == g:
                break
        self.kept = (g, packets) if keep else None
        return packets

    def _read_one(self) -> list[av.Packet]:
        assert self.iterator is not None
        first = self.pending if self.pending is not None else next(self.iterator, None)
        packets = [first] if first is not None else []
        self.pending = None
        for p in self.iterator:
            if p.is_keyframe and p.pts in self.key_pts:
                self.pending = p
                break
            packets.append(p)
        self.next_gop += 1
        return packets

    def close(self) -> None:
        self.container.close()
