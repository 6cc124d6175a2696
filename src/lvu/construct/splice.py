"""Insert spans of frames (needles) into a background video with PyAV, re-encoding as little as possible.

    bg = probe_background("bg.mp4")                       # stream facts, keyframes, whether copy works
    pieces = timeline(bg.n_frames, used=900, inserts=[Insert(at=300, n_frames=60, frames=..., audio=...)])
    splice(bg, pieces, "out.mp4")                          # frame-exact: pieces say which frame goes where

The output is `used` frames of the background (from its start, looped when longer) with each insert's
frames placed after `at` background frames, at the background's size and frame rate. Where the
background allows it (H.264 in MP4/MOV/MKV-style avcC, constant frame rate, closed GOPs with
x264-style decode timestamps, yuv420p) every background GOP that lies wholly inside a kept span is
copied packet for packet, and so is the start of a GOP a splice point cuts through as far as its
packets decode on their own; its other kept frames are decoded and re-encoded with the needle's (a
fresh libx264 run with its own SPS/PPS in band; every copied keyframe carries the background's).
Otherwise every frame is decoded and re-encoded once (`reason` says why). Sound: the background's
AAC packets are copied between splice points, within half an AAC frame of the picture
(lvu.construct.splice_audio_copy), or with `exact_audio` (or an uncopyable track) all of it is
re-encoded sample-exactly (lvu.construct.splice_audio); inserted spans carry the insert's own samples
or silence.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lvu.construct.splice_audio import AudioFormat, AudioTrack, BackgroundAudio
from lvu.construct.splice_audio_copy import AacPackets, CopyAudioTrack, aac_packets
from lvu.construct.splice_packets import GopPackets, packet_copy
from lvu.errors import DataError
from lvu.media.av_io import _open, _short
from lvu.media.encode import add_h264_stream, annexb_nals, avcc_parameter_sets, h264_encoder, length_prefixed

CRF = 18
"""Quality of re-encoded spans (x264 CRF): near-transparent, so splices do not stand out."""
PRESET = "veryfast"


@dataclass(frozen=True)
class Background:
    """What a splice needs to know about a background video (probe_background)."""

    path: Path
    width: int
    height: int
    rate: Fraction
    """Frames per second."""
    time_base: Fraction
    ticks: int
    """Time-base ticks per frame (0 when the frame duration is not a whole number of ticks)."""
    first_pts: int
    n_frames: int
    keyframes: tuple[int, ...]
    """Frame indices of the keyframes, ascending."""
    delay: int
    """pts - dts of the keyframes, in ticks (the reorder delay B-frames add)."""
    reason: str | None
    """None when its packets can be copied; otherwise why every frame is re-encoded."""
    audio: AudioFormat | None

    @property
    def duration(self) -> float:
        return self.n_frames / float(self.rate)

    @property
    def gop(self) -> int:
        """The keyframe interval re-encoded spans use: the background's longest GOP (at most 10 s)."""
        bounds = [*self.keyframes, self.n_frames]
        longest = max((b - a for a, b in zip(bounds, bounds[1:])), default=0)
        return max(1, min(longest or round(2 * self.rate), round(10 * self.rate)))


def probe_background(path: str | Path) -> Background:
    """Read a background's stream facts from its packets (no decoding). One-line DataError when
    it cannot be read."""
    path = Path(path)
    container, stream = _open(path)  # one-line VideoError for missing, empty, unreadable files
    try:
        cc = stream.codec_context
        rate = Fraction(stream.average_rate or stream.guessed_rate or 0)
        tb = Fraction(stream.time_base)
        packets = [(p.pts, p.dts, bool(p.is_keyframe)) for p in container.demux(stream) if p.size]
        audio = container.streams.audio[0] if container.streams.audio else None
        audio_format = AudioFormat(audio.codec_context.sample_rate, audio.codec_context.layout.name,
                                   _start(audio) - _start(stream)) if audio is not None else None
        width, height, codec, pix_fmt = cc.width, cc.height, cc.name, cc.format.name if cc.format else ""
        extradata = bytes(cc.extradata or b"")
    except av.FFmpegError as e:
        raise DataError(f"{path}: cannot be read as a video ({_short(e)}) — corrupt or truncated") from None
    finally:
        container.close()
    if not packets or rate <= 0 or any(p[0] is None for p in packets):
        raise DataError(f"{path}: no frames with timestamps and a frame rate — re-export the video")
    pts_sorted = sorted(p[0] for p in packets)
    index = {pts: i for i, pts in enumerate(pts_sorted)}
    first = pts_sorted[0]
    keyframes = tuple(sorted(index[p[0]] for p in packets if p[2]))
    exact = (1 / rate) / tb
    ticks = int(exact) if exact.denominator == 1 else 0
    delay = (packets[0][0] - packets[0][1]) if packets[0][1] is not None else 0
    rotation = _display_rotation(path)
    if rotation:
        raise DataError(f"{path}: is shown rotated by {rotation}° (a display matrix), which spliced needles would not "
                        "follow — re-encode it upright first (e.g. `ffmpeg -i IN OUT` applies the rotation)")
    reason = _copy_blocker(codec, extradata, pix_fmt, packets, index, ticks, first, delay)
    if reason is None and len(set(pts_sorted)) != len(pts_sorted):
        reason = "it has repeated timestamps"
    if width % 2 or height % 2:  # x264 (yuv420p) needs even sides: every frame is scaled to the next even size
        reason = f"its size {width}x{height} is odd (x264 needs even sides: scaled to {even(width)}x{even(height)})"
    return Background(path, width, height, rate, tb, ticks, first, len(pts_sorted), keyframes or (0,), delay,
                      reason, audio_format)


def even(n: int) -> int:
    return n + n % 2


def _display_rotation(path: Path) -> int:
    """The rotation a player applies (its first frame's display matrix), 0 when none."""
    container, stream = _open(path)
    try:
        frame = next(container.decode(stream), None)
        return int(round(getattr(frame, "rotation", 0) or 0)) % 360
    except av.FFmpegError:
        return 0  # the decode stage names a damaged file
    finally:
        container.close()


def _start(stream: Any) -> float:
    return float(stream.start_time * stream.time_base) if stream.start_time is not None else 0.0


def _copy_blocker(codec: str, extradata: bytes, pix_fmt: str, packets: list, index: dict, ticks: int, first: int,
                  delay: int) -> str | None:
    """Why the background's packets cannot be copied around splice points (None: they can)."""
    if codec != "h264" or not extradata or extradata[0] != 1:
        return f"it is {codec or 'unknown'}{' in Annex B' if codec == 'h264' else ''}, not H.264 with an avcC record"
    if pix_fmt != "yuv420p":
        return f"its pixels are {pix_fmt}, not yuv420p"
    if not ticks or any(pts != first + i * ticks for i, pts in enumerate(sorted(index))):
        return "its frame times are not on a constant frame-rate grid"
    if not packets[0][2]:
        return "it does not start with a keyframe"
    position, key = 0, 0
    for pts, dts, is_key in packets:  # closed GOPs with x264-style dts: dts = the GOP's next pts - delay
        if is_key:
            key, position = index[pts], 0
        if dts is None or dts != first + (key + position) * ticks - delay or index[pts] < key:
            return "its GOPs are open or its decode timestamps irregular"
        position += 1
    return None


# ---- the timeline ----------------------------------------------------------------------------------


@dataclass
class Insert:
    """`n_frames` frames put after `at` frames of the (looped) background. `frames()` yields them
    (av.VideoFrame or RGB arrays of the background's size); `audio(n)` gives n samples per channel
    (float32, channels x n, the output's audio format) or None for silence."""

    at: int
    n_frames: int
    frames: Callable[[], Iterator[Any]]
    audio: Callable[[int, AudioFormat], np.ndarray | None] = lambda n, fmt: None
    label: str = ""


@dataclass
class Piece:
    """A span of the output: `length` frames from `out_start`, either background frames from
    `bg_start` (no loop boundary inside) or an insert."""

    out_start: int
    length: int
    bg_start: int | None = None
    insert: Insert | None = None

    @property
    def out_end(self) -> int:
        return self.out_start + self.length


def timeline(n_bg: int, used: int, inserts: list[Insert]) -> list[Piece]:
    """The output as pieces: background positions [0, used) (frame q is background frame q mod n_bg)
    with the inserts placed after `at` positions, in order of `at` (ties keep the list order)."""
    if n_bg < 1 or used < 0:
        raise ValueError("the background needs frames and `used` must be >= 0")
    pieces: list[Piece] = []
    out = q = 0

    def background(until: int) -> None:
        nonlocal out, q
        while q < until:
            start = q % n_bg
            length = min(until - q, n_bg - start)
            pieces.append(Piece(out, length, bg_start=start))
            out, q = out + length, q + length

    for ins in sorted(inserts, key=lambda i: i.at):
        if not 0 <= ins.at <= used:
            raise ValueError(f"insert at {ins.at} lies outside the background's {used} frames")
        background(ins.at)
        if ins.n_frames > 0:
            pieces.append(Piece(out, ins.n_frames, insert=ins))
            out += ins.n_frames
    background(used)
    return pieces


# ---- writing ---------------------------------------------------------------------------------------


@dataclass
class SpliceStats:
    copied_frames: int = 0
    encoded_frames: int = 0
    decoded_gops: int = 0
    mode: str = "copy"
    extra: dict[str, Any] = field(default_factory=dict)


def splice(bg: Background, pieces: list[Piece], out_path: str | Path, *, audio: AudioFormat | None = None,
           crf: int = CRF, reencode: bool = False, exact_audio: bool = False) -> SpliceStats:
    """Write the pieces to `out_path` (MP4, H.264 + AAC when `audio`), atomically. `exact_audio`:
    re-encode all sound sample-exactly instead of copying the background's AAC packets."""
    out_path = Path(out_path)
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")
    copy = bg.reason is None and not reencode
    stats = SpliceStats(mode="copy" if copy else "re-encode")
    try:
        with av.open(str(tmp), "w", format="mp4") as container:
            track = _audio_track(container, bg, pieces, audio, exact_audio, stats) if audio else None
            writer = (_CopyWriter if copy else _EncodeWriter)(bg, container, crf, stats)
            if track is not None:  # interleave: audio follows the video GOP by GOP
                writer.after = track.write_until
            try:
                for piece in pieces:
                    writer.write(piece)
                    if track is not None:
                        track.write_until(piece.out_end)
                writer.close()
                if track is not None:
                    track.close()
            except BaseException:
                if track is not None:
                    track.abort()
                raise
        os.replace(tmp, out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return stats


def _audio_track(container: Any, bg: Background, pieces: list[Piece], fmt: AudioFormat, exact: bool,
                 stats: SpliceStats) -> AudioTrack:
    """The background's AAC packets copied where they can be (lvu.construct.splice_audio_copy), else
    the whole track re-encoded; stats.extra["audio"] says which and why."""
    source = BackgroundAudio(bg.path, fmt, bg.audio.offset if bg.audio else 0.0)
    grid: AacPackets | str = "sample-exact audio was asked for" if exact else \
        "the background has no audio" if bg.audio is None else aac_packets(bg.path, fmt)
    if isinstance(grid, str):
        stats.extra["audio"] = f"re-encoded: {grid}"
        return AudioTrack(container, fmt, pieces, bg.rate, source)
    stats.extra["audio"] = "copied between splice points"
    return CopyAudioTrack(container, fmt, pieces, bg.rate, source, grid, bg.path)


def _insert_frames(piece: Piece) -> Iterator[Any]:
    """Exactly the piece's frames from its insert (DataError when the insert runs short)."""
    insert = piece.insert
    assert insert is not None  # (called for insert pieces only)
    k = 0
    for k, frame in enumerate(insert.frames(), start=1):
        yield frame
        if k == piece.length:
            return
    raise DataError(f"{insert.label or 'an insert'}: gave {k} of its {piece.length} frames — "
                    "the needle clip is damaged; re-export it")


def _prepared(frame: Any) -> av.VideoFrame:
    if isinstance(frame, np.ndarray):
        return av.VideoFrame.from_ndarray(frame, format="rgb24")
    frame.pict_type = av.video.frame.PictureType.NONE  # decoded I/P/B types would steer x264's choices
    return frame


class _EncodeWriter:
    """Every frame decoded and encoded by one libx264 stream (backgrounds that cannot be copied)."""

    def __init__(self, bg: Background, container: Any, crf: int, stats: SpliceStats) -> None:
        self.bg, self.container, self.stats = bg, container, stats
        self.size = (even(bg.width), even(bg.height))  # an odd-sized background is scaled (probe_background)
        self.stream = add_h264_stream(container, *self.size, bg.rate, gop=bg.gop, crf=crf, preset=PRESET,
                                      threads=1)  # reproducible bytes; --workers parallelise across videos
        self.n = 0
        self.after: Callable[[int], None] = lambda out_frames: None
        self.source: Iterator[tuple[int, Any]] | None = None
        self.next_bg = 0

    def write(self, piece: Piece) -> None:
        if piece.insert:
            frames = _insert_frames(piece)
        else:
            assert piece.bg_start is not None  # a piece without an insert is background
            frames = self._background(piece.bg_start, piece.length)
        for frame in frames:
            self._encode(frame)

    def _background(self, start: int, length: int) -> Iterator[Any]:
        """Background frames start..start+length on the constant-rate grid (the frame on screen at
        each grid time), from one sequential decode that restarts only when the loop wraps."""
        if self.source is None or start < self.next_bg:
            self.source = _grid_frames(self.bg)
        for index, frame in self.source:
            if index >= start:
                yield frame
                self.next_bg = index + 1
                if index + 1 >= start + length:
                    return

    def _encode(self, frame: Any) -> None:
        frame = _prepared(frame)
        if (frame.width, frame.height) != self.size:
            frame = frame.reformat(width=self.size[0], height=self.size[1], format="yuv420p")
        frame.pts, frame.time_base = self.n, Fraction(1) / self.bg.rate
        self.container.mux(self.stream.encode(frame))
        self.n += 1
        self.stats.encoded_frames += 1
        if self.n % 64 == 0:
            self.after(self.n)

    def close(self) -> None:
        self.container.mux(self.stream.encode(None))


def _grid_frames(bg: Background) -> Iterator[tuple[int, Any]]:
    """(grid index, frame): each grid time i / rate gets the last frame shown at or before it."""
    container, stream = _open(bg.path)
    stream.thread_type = "AUTO"
    try:
        previous = None
        i = 0
        for frame in container.decode(stream):
            t = (frame.pts - bg.first_pts) * bg.time_base if frame.pts is not None else i / bg.rate
            while previous is not None and i / bg.rate < t and i < bg.n_frames:
                yield i, previous
                i += 1
            previous = frame
        while previous is not None and i < bg.n_frames:
            yield i, previous
            i += 1
    finally:
        container.close()


def _stamp(value: int | None) -> int:
    """A background packet's or decoded frame's pts / dts: the background's H.264 packets all carry
    them (GopPackets finds its GOPs by pts)."""
    assert value is not None, "a background packet without a timestamp"
    return value


class _CopyWriter:
    """Copies whole background GOPs; re-encodes cut GOPs' kept frames and inserts in runs."""

    def __init__(self, bg: Background, container: Any, crf: int, stats: SpliceStats) -> None:
        self.bg, self.container, self.crf, self.stats = bg, container, crf, stats
        self.packets = GopPackets(bg.path, bg.first_pts, bg.ticks, bg.keyframes)
        self.stream = container.add_stream_from_template(self.packets.stream)
        self.stream.time_base = bg.time_base
        self.nal_size, self.params = avcc_parameter_sets(bytes(self.packets.stream.codec_context.extradata))
        self.encoder: Any = None
        self.out = 0
        """Output frames written so far."""
        self.bounds = [*bg.keyframes, bg.n_frames]
        self.after: Callable[[int], None] = lambda out_frames: None

    def _tick(self, out_frame: int) -> int:
        return self.bg.first_pts + out_frame * self.bg.ticks

    def write(self, piece: Piece) -> None:
        if piece.insert is not None:
            for frame in _insert_frames(piece):
                self._encode(frame)
            return
        assert piece.bg_start is not None  # a piece without an insert is background
        a, b = piece.bg_start, piece.bg_start + piece.length
        g = max(0, bisect_right(self.bounds, a) - 1)
        while g < len(self.bounds) - 1 and self.bounds[g] < b:
            start, end = self.bounds[g], self.bounds[g + 1]
            if a <= start and end <= b:
                self._copy(g, start)
            else:
                lo, hi = max(a, start), min(b, end)
                if a <= start:  # the piece starts with this GOP: copy the part that decodes on its own
                    lo = self._copy_prefix(g, start, hi)
                if lo < hi:
                    self._decode_into_run(g, lo, hi)
            g += 1

    def _copy(self, g: int, start: int) -> None:
        self._end_run()
        shift = self._tick(self.out) - (self.bg.first_pts + start * self.bg.ticks)
        packets = self.packets.gop(g, keep=False)
        for k, packet in enumerate(packets):
            if k == 0:  # every copied keyframe carries its SPS/PPS: a decoder that seeks there may
                packet = self._with_params(packet)  # still hold a re-encoded run's (same ids)
            packet.pts = _stamp(packet.pts) + shift
            packet.dts = _stamp(packet.dts) + shift
            packet.stream = self.stream
            self.container.mux(packet)
        n = self.bounds[g + 1] - start
        self.out += n
        self.stats.copied_frames += n
        self.after(self.out)

    def _copy_prefix(self, g: int, start: int, stop: int) -> int:
        """Copy GOP g's longest run of packets, in decode order, that holds exactly frames start..p-1
        for some p <= stop (B-frames can make a later frame's packet come first); returns p. The
        GOP's packets stay kept: its frames from p on are decoded next."""
        packets = self.packets.gop(g, keep=True)
        clean, highest = 0, -1
        for i, packet in enumerate(packets):
            highest = max(highest, (_stamp(packet.pts) - self.bg.first_pts) // self.bg.ticks)
            if highest >= stop:
                break
            if highest == start + i:
                clean = i + 1
        if not clean:
            return start
        self._end_run()
        shift = self._tick(self.out) - (self.bg.first_pts + start * self.bg.ticks)
        for k, packet in enumerate(packets[:clean]):
            fresh = self._with_params(packet, always_new=True) if k == 0 else packet_copy(packet)
            fresh.pts, fresh.dts = _stamp(packet.pts) + shift, _stamp(packet.dts) + shift
            fresh.stream = self.stream
            self.container.mux(fresh)
        self.out += clean
        self.stats.copied_frames += clean
        self.after(self.out)
        return start + clean

    def _with_params(self, packet: av.Packet, *, always_new: bool = False) -> av.Packet:
        """The keyframe with the background's SPS/PPS in band, unless it has them already."""
        data = bytes(packet)
        if self.nal_size == 4 and len(data) > 4 and data[4] & 0x1F == 7:  # starts with an SPS
            return packet_copy(packet) if always_new else packet
        fresh = av.Packet(length_prefixed(self.params, self.nal_size) + data)
        fresh.pts, fresh.dts, fresh.time_base = packet.pts, packet.dts, packet.time_base
        fresh.is_keyframe = True
        return fresh

    def _decode_into_run(self, g: int, a: int, b: int) -> None:
        """Decode GOP g and encode its frames a..b-1 into the current run."""
        self.stats.decoded_gops += 1
        decoder = av.CodecContext.create("h264", "r")
        decoder.extradata = self.packets.stream.codec_context.extradata
        frames: dict[int, av.VideoFrame] = {}
        packets = self.packets.gop(g, keep=True)
        for packet in [*packets, None]:
            for frame in decoder.decode(packet):
                i = (_stamp(frame.pts) - self.bg.first_pts) // self.bg.ticks
                if a <= i < b:
                    frames[i] = frame
            while a in frames:  # encode in display order as soon as the next frame is there
                self._encode(frames.pop(a))
                a += 1
        if a < b:
            raise DataError(f"{self.bg.path}: frames {a}..{b - 1} cannot be decoded — the file is damaged; re-export it")

    def _encode(self, frame: Any) -> None:
        if self.encoder is None:
            self.encoder = h264_encoder(self.bg.width, self.bg.height, self.bg.rate, self.bg.time_base, gop=self.bg.gop,
                                        crf=self.crf, preset=PRESET, bframes=0, repeat_headers=True, threads=1)
        frame = _prepared(frame)
        frame.pts, frame.time_base = self._tick(self.out), self.bg.time_base
        self._mux_encoded(self.encoder.encode(frame))
        self.out += 1
        self.stats.encoded_frames += 1
        if self.out % 64 == 0:
            self.after(self.out)

    def _mux_encoded(self, packets: list) -> None:
        for p in packets:
            data = length_prefixed(annexb_nals(bytes(p)), self.nal_size)
            packet = av.Packet(data)
            packet.pts, packet.time_base = p.pts, self.bg.time_base
            packet.dts = p.pts - self.bg.delay  # no B-frames: decode order is display order
            packet.is_keyframe = p.is_keyframe
            packet.stream = self.stream
            self.container.mux(packet)

    def _end_run(self) -> None:
        if self.encoder is not None:
            self._mux_encoded(self.encoder.encode(None))
            self.encoder = None

    def close(self) -> None:
        self._end_run()
        self.packets.close()
