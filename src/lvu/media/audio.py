"""Audio as a prompt modality: a video's audio track as 16-bit PCM clips placed among the frames.

    track = audio_track("talk.mp4")                       # decoded once, cached on disk
    clips = [track.clip(a, b) for a, b in spans("whole", [], 60.0)]
    parts = place(prompt.parts, clips, "whole")            # after the frames, before the question

How the track is read: PyAV decodes the best audio stream, resampled to 16 kHz mono (lvu.media.asr's
`load_audio`: gaps filled with silence, times in video seconds from the first video frame), and the
track is kept as int16 — 32 kB per second, 115 MB for an hour. It is cached under
`cache_dir("audio")` as `<key>.wav` (a plain 16 kHz mono WAV, written atomically, with its start
time in `<key>.offset`), the key being
the video's content fingerprint and the decoding version, so a second run — another model, another
benchmark setting, another process — opens no decoder; a damaged entry is a miss and is removed.

Modes (`--audio`, a benchmark setting where the protocol allows it):
- `whole`: the whole track as one clip, placed after the last frame and before the text that
  follows it (Video-MME's "whole video frames + whole subtitles/audios + question" order);
- `interleave`: the track cut at the midpoints between frame times, each piece placed right after
  the frame it surrounds (the first from 0, the last to the end of the video), so every frame is
  heard with the sound around it. Without frames it is `whole`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lvu.errors import LvuError
from lvu.paths import cache_dir
from lvu.types import Audio, Frame, Part, Text

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
"""Every clip's rate: 16 kHz mono, what Whisper-style audio encoders and the audio APIs take."""
AUDIO_MODES = ("none", "whole", "interleave")
CACHE_VERSION = 1
"""Bump when anything that changes the decoded samples changes: old entries then miss."""

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class AudioTrack:
    """A video's whole audio track: int16 mono samples at `rate`, the first at video time `offset`."""

    samples: np.ndarray
    rate: int
    offset: float
    """Video time (s) of the first sample: where the audio starts relative to the first video frame."""

    @property
    def seconds(self) -> float:
        """Video time at which the audio ends."""
        return self.offset + len(self.samples) / self.rate

    def clip(self, start: float, end: float) -> Audio:
        """The sound between video times `start` and `end` (silence where the track has none)."""
        start, end = float(start), max(float(start), float(end))
        n = round((end - start) * self.rate)
        first = round((start - self.offset) * self.rate)
        out = np.zeros(n, np.int16)
        lo, hi = max(first, 0), min(first + n, len(self.samples))
        if hi > lo:
            out[lo - first: hi - first] = self.samples[lo:hi]
        return Audio(samples=out, sample_rate=self.rate, start=start, end=end)


def check_mode(mode: object, benchmark: str, allowed: tuple[str, ...]) -> str:
    """`mode` when it is one of `allowed` (or none); else a one-line LvuError."""
    if mode in (None, "none"):
        return "none"
    if mode not in allowed:
        if not allowed:
            raise LvuError(f"benchmark {benchmark!r} takes no audio (its protocol has frames and subtitles only) — "
                           "drop --audio, or run your data as -b jsonl --audio whole")
        raise LvuError(f"audio={mode!r} is unknown for {benchmark} — use none or {' | '.join(allowed)}")
    return str(mode)


# ---- decoding and the cache --------------------------------------------------------------------


def audio_track(video_path: str | Path, *, cache: bool = True) -> AudioTrack:
    """The video's audio track, 16 kHz mono int16; from the disk cache when it is there. LvuError
    (one line) for a video without an audio track."""
    from lvu.media.identity import video_fingerprint

    entry = _entry(video_fingerprint(video_path)) if cache else None
    if entry is not None and (hit := _read(entry)) is not None:
        return hit
    with _lock(str(entry or video_path)):
        if entry is not None and (hit := _read(entry)) is not None:
            return hit  # another thread decoded it while we waited
        track = decode_track(video_path)
        if entry is not None:
            _write(entry, track)
    return track


def decode_track(video_path: str | Path) -> AudioTrack:
    """Decode the best audio stream with PyAV (no cache)."""
    from lvu.media.asr import load_audio

    try:
        floats, offset = load_audio(video_path)
    except LvuError as e:
        if "no audio track" in str(e):
            raise LvuError(f"{video_path}: has no audio track — run it with --audio none") from None
        raise
    pcm = np.clip(np.round(floats * 32768.0), -32768, 32767).astype(np.int16)
    return AudioTrack(pcm, SAMPLE_RATE, round(float(offset), 6))


def _entry(fingerprint: str) -> Path:
    key = hashlib.sha256(f"v{CACHE_VERSION}:{SAMPLE_RATE}:{fingerprint}".encode()).hexdigest()[:32]
    return cache_dir("audio") / f"{key}.wav"


def _read(path: Path) -> AudioTrack | None:
    """A cached track — the WAV and its `.offset` sidecar (the video time of the first sample) — or
    None (a miss). A damaged entry is a miss and is removed."""
    try:
        with wave.open(str(path), "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, SAMPLE_RATE):
                raise ValueError("not 16 kHz mono 16-bit")
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
        offset = float(path.with_suffix(".offset").read_text(encoding="ascii"))
        return AudioTrack(samples, SAMPLE_RATE, offset)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, wave.Error) as e:
        log.warning("%s: damaged audio cache entry (%s); decoding again", path, e)
        path.unlink(missing_ok=True)
        path.with_suffix(".offset").unlink(missing_ok=True)
        return None


def _write(path: Path, track: AudioTrack) -> None:
    """The offset first, then the WAV (temp file + os.replace): a reader that finds the WAV finds
    its offset. A full or read-only cache costs a decode later, never this clip."""
    clip = Audio(samples=track.samples, sample_rate=track.rate, start=track.offset, end=track.seconds)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, data in ((path.with_suffix(".offset"), repr(track.offset).encode()), (path, clip.wav())):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    except OSError as e:
        log.warning("%s: cannot write audio cache entry (%s)", path, e)


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


# ---- encoding ----------------------------------------------------------------------------------

FORMATS = {"wav": "audio/wav", "mp3": "audio/mp3", "flac": "audio/flac"}
"""Encodings a backend may ask for (`audio_format`), with their MIME types. WAV is 16-bit PCM
(115 MB per hour); FLAC is lossless (about half); MP3 at 32 kbit/s is 14 MB per hour, what keeps
an hour of audio under the APIs' inline request limits."""


def encode(clip: Audio, fmt: str = "wav") -> bytes:
    """The clip as a `fmt` file (FORMATS), encoded with PyAV."""
    if fmt == "wav":
        return clip.wav()
    if fmt not in FORMATS:
        raise LvuError(f"audio format {fmt!r} is unknown — use one of {', '.join(FORMATS)}")
    import io

    import av

    buf = io.BytesIO()
    samples = np.ascontiguousarray(clip.samples if clip.samples is not None else [], dtype=np.int16)
    with av.open(buf, "w", format=fmt) as out:
        stream = out.add_stream("libmp3lame" if fmt == "mp3" else "flac", rate=clip.sample_rate, layout="mono")
        if fmt == "mp3":
            stream.bit_rate = 32_000
        if len(samples):
            frame = av.AudioFrame.from_ndarray(samples[None, :], format="s16", layout="mono")
            frame.sample_rate = clip.sample_rate
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


# ---- spans and placement -----------------------------------------------------------------------


def spans(mode: str, frame_times: list[float], duration: float) -> list[tuple[float, float]]:
    """The (start, end) video times of the clips a mode takes: `whole` one span over the video,
    `interleave` one per frame, cut at the midpoints between frame times (in frame order)."""
    if mode == "none":
        return []
    if mode == "whole" or not frame_times:
        return [(0.0, float(duration))]
    if mode != "interleave":
        raise LvuError(f"audio mode {mode!r} is unknown — use one of {', '.join(AUDIO_MODES)}")
    times = sorted(frame_times)
    cuts = [0.0, *((a + b) / 2 for a, b in zip(times, times[1:])), max(float(duration), times[-1])]
    return list(zip(cuts, cuts[1:]))


def place(parts: list[Part], clips: list[Audio], mode: str) -> list[Part]:
    """The prompt's parts with the clips placed: `whole` (one clip) after the last frame, or before
    the first text when there are no frames; `interleave` each clip after its frame (clips in frame
    time order, as `spans` makes them)."""
    if not clips:
        return list(parts)
    times = {i: p.timestamp for i, p in enumerate(parts) if isinstance(p, Frame)}
    frames = list(times)
    if mode == "interleave" and len(frames) == len(clips):
        by_time = sorted(frames, key=lambda i: times[i])
        after = {i: clip for i, clip in zip(by_time, clips)}
        out: list[Part] = []
        for i, p in enumerate(parts):
            out.append(p)
            if i in after:
                out.append(after[i])
        return out
    if frames:
        at = frames[-1] + 1
    else:
        at = next((i for i, p in enumerate(parts) if isinstance(p, Text)), 0)
    return [*parts[:at], *clips, *parts[at:]]
