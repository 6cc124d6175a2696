"""The audio side of a splice (lvu.construct.splice): the background's samples for its spans, each
insert's samples (or silence) for its span, encoded to AAC at sample positions that follow the
video frames exactly (output frame f starts at sample floor(f * rate / fps))."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from lvu.media.av_io import _open

_END = object()
"""The producer's end mark."""
CHUNK_FRAMES = 256
"""Video frames of audio produced per step (keeps memory flat over hour-long spans)."""


@dataclass(frozen=True)
class AudioFormat:
    rate: int
    layout: str
    offset: float = 0.0
    """Seconds the audio starts after the first video frame (a background's; 0 for outputs)."""

    @property
    def channels(self) -> int:
        return av.AudioLayout(self.layout).nb_channels

    def plain(self) -> AudioFormat:
        return AudioFormat(self.rate, self.layout)


def decode_audio(path: str | Path, fmt: AudioFormat) -> np.ndarray | None:
    """A whole file's audio as float32 (channels x samples) in `fmt`; None when it has none."""
    container, _ = _open(path)
    try:
        if not container.streams.audio:
            return None
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="fltp", layout=fmt.layout, rate=fmt.rate)
        parts = [f.to_ndarray() for frame in container.decode(stream) for f in resampler.resample(frame)]
        parts += [f.to_ndarray() for f in resampler.resample(None)]
    finally:
        container.close()
    return np.concatenate(parts, axis=1).astype(np.float32) if parts else np.zeros((fmt.channels, 0), np.float32)


def fit(samples: np.ndarray | None, n: int, channels: int) -> np.ndarray:
    """Exactly n samples per channel: cut, or padded with silence (None: all silence)."""
    out = np.zeros((channels, n), np.float32)
    if samples is not None and samples.size:
        k = min(n, samples.shape[1])
        out[:, :k] = samples[:channels, :k] if samples.shape[0] >= channels else samples[:1, :k]
    return out


class BackgroundAudio:
    """The background's audio in the output format, read by sample position (sample 0 = the first
    video frame); reading backwards (a loop) restarts the decode. Silence where it has none."""

    def __init__(self, path: Path, fmt: AudioFormat, offset: float = 0.0) -> None:
        self.path, self.fmt, self.offset = path, fmt, offset
        self.frames: Any = None
        self.buffer = np.zeros((fmt.channels, 0), np.float32)
        self.start = 0
        """Sample position of buffer[:, 0]."""
        self.container: Any = None

    def _restart(self) -> None:
        self.close()
        self.container, _ = _open(self.path)
        streams = self.container.streams.audio
        self.frames = self._decoded(streams[0]) if streams else iter(())
        self.buffer = np.zeros((self.fmt.channels, 0), np.float32)
        self.start = round(self.offset * self.fmt.rate)

    def _decoded(self, stream: Any):
        resampler = av.AudioResampler(format="fltp", layout=self.fmt.layout, rate=self.fmt.rate)
        for frame in self.container.decode(stream):
            for f in resampler.resample(frame):
                yield f.to_ndarray()
        for f in resampler.resample(None):
            yield f.to_ndarray()

    def read(self, start: int, n: int) -> np.ndarray:
        if self.frames is None or start < self.start:
            self._restart()
        if self.start + self.buffer.shape[1] <= start:  # a jump ahead: nothing buffered is wanted
            self.start, self.buffer = self.start + self.buffer.shape[1], self.buffer[:, :0]
        blocks, have = [self.buffer], self.start + self.buffer.shape[1]
        while have < start + n:  # gather, then join once (joining per block is quadratic)
            block = next(self.frames, None)
            if block is None:
                break
            if len(blocks) == 1 and not blocks[0].shape[1] and have + block.shape[1] <= start:
                self.start = have = have + block.shape[1]  # decoded past without keeping it
                continue
            blocks.append(block.astype(np.float32, copy=False))
            have += block.shape[1]
        if len(blocks) > 1:
            self.buffer = np.concatenate(blocks, axis=1)
        out = np.zeros((self.fmt.channels, n), np.float32)
        lo, hi = max(start, self.start), min(start + n, self.start + self.buffer.shape[1])
        if hi > lo:
            out[:, lo - start:hi - start] = self.buffer[:, lo - self.start:hi - self.start]
        drop = max(0, min(start + n, self.start + self.buffer.shape[1]) - self.start)
        self.buffer, self.start = self.buffer[:, drop:], self.start + drop
        return out

    def close(self) -> None:
        if self.container is not None:
            self.container.close()
            self.container = None


class AudioTrack:
    """The output's AAC track. A producer thread computes the samples of the whole timeline and
    encodes them (PyAV encodes without the GIL, so this overlaps the video work); the writing
    thread muxes whatever is ready after each video step (`write_until`) and the rest at `close`.
    Only the writing thread touches the container."""

    def __init__(self, container: Any, fmt: AudioFormat, pieces: list[Any], rate: Fraction,
                 source: BackgroundAudio) -> None:
        """`pieces`: the splice's lvu.construct.splice.Piece list; `rate`: the video's frames per second."""
        self.fmt, self.pieces, self.rate, self.source = fmt, pieces, rate, source
        self.container = container
        self.stream = container.add_stream("aac", rate=fmt.rate, layout=fmt.layout)
        self.encoder = av.CodecContext.create("aac", "w")  # the producer's own: the stream's is the muxer's
        self.encoder.sample_rate, self.encoder.layout, self.encoder.format = fmt.rate, fmt.layout, "fltp"
        self.encoder.time_base = Fraction(1, fmt.rate)
        self.ready: queue.Queue = queue.Queue(maxsize=512)
        self.thread = threading.Thread(target=self._produce, name="lvu-splice-audio", daemon=True)
        self.stop = False
        self.head: Any = None
        self.thread.start()  # subclasses set their own fields before calling this __init__

    def sample_at(self, frame: int) -> int:
        return frame * self.fmt.rate * self.rate.denominator // self.rate.numerator

    def _produce(self) -> None:
        """Every sample of the timeline, encoded (the exact path); CopyAudioTrack overrides this."""
        try:
            pending, sent = np.zeros((self.fmt.channels, 0), np.float32), 0
            for piece in self.pieces:
                base = self.sample_at(piece.out_start)
                whole = self._insert_audio(piece) if piece.insert is not None else None
                for done in range(piece.out_start, piece.out_end, CHUNK_FRAMES):
                    s0, s1 = self.sample_at(done), self.sample_at(min(piece.out_end, done + CHUNK_FRAMES))
                    if whole is None:
                        data = self.source.read(self.sample_at(piece.bg_start) + s0 - base, s1 - s0)
                    else:
                        data = whole[:, s0 - base:s1 - base]
                    pending, sent = self._encode(np.concatenate([pending, data], axis=1), sent, final=False)
                    if self.stop:
                        return
            self._encode(pending, sent, final=True)
            for packet in self.encoder.encode(None):
                self.ready.put(packet)
            self.ready.put(_END)
        except BaseException as e:  # handed to the writing thread, which raises it
            self.ready.put(e)
        finally:
            self.source.close()

    def _insert_audio(self, piece: Any) -> np.ndarray:
        n = self.sample_at(piece.out_end) - self.sample_at(piece.out_start)
        return fit(piece.insert.audio(n, self.fmt), n, self.fmt.channels)

    def _encode(self, pending: np.ndarray, sent: int, *, final: bool) -> tuple[np.ndarray, int]:
        size = self.encoder.frame_size or 1024
        while pending.shape[1] >= size or (final and pending.shape[1]):
            block, pending = pending[:, :size], pending[:, size:]
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(block), format="fltp", layout=self.fmt.layout)
            frame.sample_rate, frame.pts, frame.time_base = self.fmt.rate, sent, Fraction(1, self.fmt.rate)
            sent += block.shape[1]
            for packet in self.encoder.encode(frame):
                self.ready.put(packet)
        return pending, sent

    def _head(self) -> Any:
        """The next packet in order (waiting for the producer), _END at the end; raises its error."""
        if self.head is None:
            self.head = self.ready.get()
        if isinstance(self.head, BaseException):
            raise self.head
        return self.head

    def write_until(self, out_frame: int) -> None:
        """Mux the packets that start before video frame `out_frame`: the interleaving follows the
        timestamps, never the threads' timing, so the file's bytes are reproducible."""
        target = self.sample_at(out_frame)
        while (item := self._head()) is not _END and item.pts < target:
            self.head = None
            item.stream = self.stream
            self.container.mux(item)

    def close(self) -> None:
        self.write_until(1 << 62)
        self.thread.join()

    def abort(self) -> None:
        """Stop the producer (the splice failed): let it finish its step and drain its queue."""
        self.stop = True
        while self.thread.is_alive():
            try:
                self.ready.get(timeout=0.1)
            except queue.Empty:
                pass
