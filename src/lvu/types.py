"""The nouns of lvu: what flows through the pipeline, typed and serialisable.

Benchmark --load--> Sample --plan--> InputPlan --media--> frames + cues --prompt--> Prompt
  --generate--> Response --extract--> Prediction --score--> Score --aggregate--> report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from lvu.errors import LvuError

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class VideoRef(BaseModel):
    """Where a sample's video lives."""

    path: str
    """Path to the video file (absolute, or relative to the benchmark file's directory)."""
    duration: float | None = None
    """Duration in seconds when the release files give it; otherwise read from the file."""


class SubtitleRef(BaseModel):
    """A subtitle track attached to a sample."""

    path: str
    """Path to an SRT, WebVTT or LongVideoBench JSON subtitle file."""
    offset: float = 0.0
    """Seconds to subtract from cue times (LongVideoBench's starting_timestamp_for_subtitles)."""


class Sample(BaseModel):
    """One question of a benchmark."""

    id: str
    """Unique within its benchmark."""
    benchmark: str
    """Name of the benchmark the sample belongs to."""
    video: VideoRef
    """The video the question is about."""
    question: str
    """Question text, without the options."""
    options: list[str] = Field(default_factory=list)
    """Option texts without letters; empty for open-ended questions."""
    answer: int | str | None = None
    """Index into `options` for multiple choice, reference text for open-ended, None if hidden."""
    labels: dict[str, str | list[str]] = Field(default_factory=dict)
    """Breakdown keys: category, task type, duration group, level... (lists for multi-label)."""
    subtitles: SubtitleRef | None = None
    """Subtitle track, when the benchmark provides one."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Benchmark-specific fields (referred positions, time_reference, scoring points...)."""


# ---- prompt parts ---------------------------------------------------------------------------


class Text(BaseModel):
    """A run of text in the prompt."""

    kind: Literal["text"] = "text"
    text: str


class Frame(BaseModel):
    """One video frame, with the time it is shown in the video."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    kind: Literal["frame"] = "frame"
    image: Any = Field(default=None, exclude=True, repr=False)
    """RGB uint8 array of shape (H, W, 3); not serialised."""
    timestamp: float
    """Presentation time of the frame in seconds."""


class Subtitle(BaseModel):
    """One subtitle cue placed in the prompt."""

    kind: Literal["subtitle"] = "subtitle"
    text: str
    start: float
    """Cue start in seconds (video time)."""
    end: float
    """Cue end in seconds (video time)."""


class Audio(BaseModel):
    """A clip of the video's audio track, placed in the prompt like a frame (lvu.media.audio).

    `samples` are 16-bit mono PCM at `sample_rate` (16 kHz: what Whisper-style audio encoders and
    the audio APIs take); `wav()` gives them as a WAV file. `start`/`end` are video seconds."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    kind: Literal["audio"] = "audio"
    samples: Any = Field(default=None, exclude=True, repr=False)
    """int16 array of shape (n,); not serialised."""
    sample_rate: int = 16_000
    start: float
    """Clip start in seconds (video time)."""
    end: float
    """Clip end in seconds (video time)."""

    @property
    def duration(self) -> float:
        """Seconds of sound the clip holds (its samples), which is end - start up to a sample."""
        return 0.0 if self.samples is None else len(self.samples) / self.sample_rate

    @property
    def text(self) -> str:
        """How text-only views show the clip (Prompt.text, the viewer)."""
        return f"<audio {self.start:.2f}-{self.end:.2f}s>"

    def wav(self) -> bytes:
        """The clip as a 16-bit PCM mono WAV file (bytes)."""
        import io
        import wave

        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(int(self.sample_rate))
            w.writeframes(np.ascontiguousarray(self.samples if self.samples is not None else [], dtype="<i2").tobytes())
        return buf.getvalue()

    def float_samples(self) -> np.ndarray:
        """The samples as float32 in [-1, 1) (what feature extractors take)."""
        return (np.asarray(self.samples if self.samples is not None else [], dtype=np.float32) / 32768.0)


Part = Annotated[Union[Text, Frame, Subtitle, Audio], Field(discriminator="kind")]


class Prompt(BaseModel):
    """What a model is asked: ordered parts (the order *is* the interleaving) plus settings."""

    parts: list[Part]
    """Text, frames, subtitle cues and audio clips in the order the model must see them."""
    system: str | None = None
    """System prompt, when the protocol defines one."""
    assistant_prefix: str | None = None
    """Text the assistant turn starts with (e.g. MLVU's 'Best option: (')."""
    choices: list[str] = Field(default_factory=list)
    """Option texts, for backends that score options directly (log-probs, heuristic baselines)."""
    question: str | None = None
    """The bare question, for backends that need it apart from the formatted text."""
    video: str | None = None
    """Path of the source video, for backends that upload the whole file (Gemini video_upload)."""
    max_tokens: int = 64
    temperature: float = 0.0

    @property
    def frames(self) -> list[Frame]:
        return [p for p in self.parts if isinstance(p, Frame)]

    @property
    def subtitles(self) -> list[Subtitle]:
        return [p for p in self.parts if isinstance(p, Subtitle)]

    @property
    def audio(self) -> list[Audio]:
        return [p for p in self.parts if isinstance(p, Audio)]

    @property
    def text(self) -> str:
        """All text and subtitle parts joined, frames shown as <frame t=..>."""
        out = []
        for p in self.parts:
            if isinstance(p, Frame):
                out.append(f"<frame t={p.timestamp:.2f}>")
            else:
                out.append(p.text)
        return "\n".join(out)

    def summary(self) -> dict[str, Any]:
        """A compact, serialisable description stored with every sample (no pixels, no sound). `parts`
        keeps the interleaved order with each part's content — {"frame": t}, {"subtitle": text,
        "start", "end"}, {"audio": start, "end", "text": "<audio a-bs>"}, {"text": text} — and `video`
        the source path, so the viewer can show what the model saw; `n_audio` / `audio_seconds` are
        there only when the prompt had audio.
        Records stored before these two keys existed lack them; readers must not require them."""
        return {
            "system": self.system,
            "assistant_prefix": self.assistant_prefix,
            "n_frames": len(self.frames),
            "n_subtitles": len(self.subtitles),
            **({"n_audio": len(audio), "audio_seconds": round(sum(a.duration for a in audio), 3)}
               if (audio := self.audio) else {}),
            "order": "".join(p.kind[0].upper() for p in self.parts),
            "text": self.text,
            "video": self.video,
            "parts": [
                {"frame": p.timestamp} if isinstance(p, Frame)
                else {"subtitle": p.text, "start": p.start, "end": p.end} if isinstance(p, Subtitle)
                else {"audio": p.start, "end": p.end, "text": p.text} if isinstance(p, Audio)
                else {"text": p.text}
                for p in self.parts
            ],
        }


class LoggedReply(BaseModel):
    """What a peer harness's saved log says it did with a reply (`lvu import` / `lvu score` read it),
    so re-scoring the log reproduces what the peer scored rather than redoing its steps."""

    filtered: bool = False
    """The text is the reply after the peer's evaluator filters ran (lmms-eval's `filtered_resps`:
    reasoning tags already stripped) — score it as it is; stripping again is not idempotent."""
    pick: str | None = None
    """The letter the peer's scorer used, as logged (lmms-eval LongVideoBench's `lvb_acc.parsed_pred`):
    where the reply holds no letter, that is the peer's own random draw, and it is used instead of lvu's."""


class Response(BaseModel):
    """What a model returned for one prompt."""

    text: str = ""
    logprobs: list[dict[str, float]] | None = None
    """Per generated token, top alternatives -> log-probability (when asked for and available)."""
    usage: dict[str, int] = Field(default_factory=dict)
    latency: float = 0.0
    """Seconds spent in the backend call."""
    error: str | None = None
    unreachable: bool = False
    """The call never got an answer from the endpoint: connection refused, dropped or not opened
    (after the backend's retries). A run stops early when many such failures come in a row."""
    permanent: bool = False
    """The endpoint answered with an error that asking again cannot change (the backend does not
    retry it: an HTTP 4xx such as 404 no such route or model, 400 bad request, 401 bad key). A run
    whose first calls all fail with the same such error stops early (lvu.runs.pipeline)."""
    logged: LoggedReply | None = None
    """Set when the text comes from a peer harness's saved log rather than a model (lvu.runs.saved_files)."""


class Prediction(BaseModel):
    """The answer extracted from a response."""

    value: int | str | None
    """Option index for multiple choice, text for open-ended; None when nothing could be extracted."""
    method: str = "rule"
    """How it was extracted ('rule', 'llm-judge', ...)."""


class Score(BaseModel):
    """How a prediction was judged."""

    value: float
    """1.0/0.0 for multiple choice; a graded value for judged answers."""
    correct: bool | None = None
    explanation: str | None = None
    """Why: the judge's raw output or the rule that applied."""
    counted: bool = True
    """False when the official scorer leaves this sample out of the denominator."""


class VideoMeta:
    """What `Benchmark.plan` knows about a sample's video: duration in seconds, average frame rate,
    frame count and keyframe times (None: not known). Frozen.

    The engine builds one per sample (`lvu.runs.engine.video_meta`) from the release's duration
    and the file's probe, lazily: the file is probed the first time a field the release did not
    give is read, so a plan that needs only a released duration never opens the video, and a
    missing file fails there with the probe's one-line error. Tests and tools build plain ones:
    `VideoMeta(60.0)`, `VideoMeta(10.0, fps=10.0, num_frames=100)`.

    `float(meta)` is the duration (plans written for the old `plan(sample, duration)`)."""

    __slots__ = ("_values", "_probe")
    _values: tuple[float | None, float | None, int | None, tuple[float, ...] | None]
    _probe: Callable[[], VideoMeta] | None
    _FIELDS = ("duration", "fps", "num_frames", "keyframes")

    def __init__(self, duration: float | None = None, fps: float | None = None, num_frames: int | None = None,
                 keyframes: Iterable[float] | None = None, *, probe: Callable[[], VideoMeta] | None = None) -> None:
        """`probe`: a function returning the file's VideoMeta, called once, for the fields not given."""
        if duration is None and probe is None:
            raise ValueError("VideoMeta needs a duration, or a probe to read it from the file")
        values = (None if duration is None else float(duration), None if fps is None else float(fps),
                  None if num_frames is None else int(num_frames),
                  None if keyframes is None else tuple(float(t) for t in keyframes))
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_probe", probe)

    def _field(self, i: int) -> Any:
        if self._values[i] is None and self._probe is not None:
            probed = self._probe()._values  # an error propagates; the next read probes again
            object.__setattr__(self, "_values", tuple(v if v is not None else p
                                                      for v, p in zip(self._values, probed)))
            object.__setattr__(self, "_probe", None)
        return self._values[i]

    @property
    def duration(self) -> float:
        """Seconds: the release's when it gives one, else the file's."""
        return self._field(0)

    @property
    def fps(self) -> float | None:
        """Average frame rate (the container's, like decord's get_avg_fps)."""
        return self._field(1)

    @property
    def num_frames(self) -> int | None:
        """Frames in the file: counted or from its metadata, else round(duration x fps)."""
        return self._field(2)

    @property
    def keyframes(self) -> tuple[float, ...] | None:
        """Keyframe times in seconds, where known (a probe does not read them)."""
        return self._field(3)

    def rate_and_count(self) -> tuple[float, int]:
        """(fps, frame count), for plans defined on frame numbers; LvuError when either is unknown."""
        fps, total = self.fps, self.num_frames
        if fps is None or total is None:
            raise LvuError(f"this plan needs the video's frame rate and frame count, and {self!r} lacks them")
        return fps, total

    def resolved(self) -> tuple[float, float | None, int | None, tuple[float, ...] | None]:
        """(duration, fps, num_frames, keyframes), probing for the ones not given."""
        return self.duration, self.fps, self.num_frames, self.keyframes

    def __float__(self) -> float:
        return self.duration

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"VideoMeta is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VideoMeta) and self.resolved() == other.resolved()

    def __hash__(self) -> int:
        return hash(self.resolved())

    def __reduce__(self) -> tuple[Any, ...]:
        return (VideoMeta, self.resolved())

    def __repr__(self) -> str:  # no probing: fields still to be read from the file show as "?"
        shown = ["?" if v is None and self._probe is not None else repr(v) for v in self._values]
        return "VideoMeta(" + ", ".join(f"{k}={v}" for k, v in zip(self._FIELDS, shown)) + ")"


class InputPlan(BaseModel):
    """What media a sample's prompt needs: which frame times and which subtitle mode."""

    timestamps: list[float]
    """Frame times in seconds, ascending."""
    subtitle_mode: Literal["none", "interleave", "covering", "all"] = "none"
    resize: int | None = None
    """Shorter side in pixels, None to keep the original size."""


class RunSpec(BaseModel):
    """Everything that determines a run's results. Its hash is the run id."""

    benchmark: str
    model: str
    model_args: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Benchmark input settings: frames, subtitles, resize, compat, data path..."""

    @property
    def run_id(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


class SampleResult(BaseModel):
    """One sample's complete record, as stored."""

    sample_id: str
    labels: dict[str, str | list[str]] = Field(default_factory=dict)
    answer: int | str | None = None
    n_options: int | None = None
    """How many options the question had (chance level, out-of-option answers); None: open-ended,
    or a record stored before lvu kept it."""
    question: str | None = None
    """The question text, shown by the viewer, the report and `results export`; None in records
    stored before lvu kept it."""
    options: list[str] = Field(default_factory=list)
    """The option texts (without letters); empty for open-ended questions and older records."""
    prompt: dict[str, Any] = Field(default_factory=dict)
    frame_timestamps: list[float] = Field(default_factory=list)
    response: str | None = None
    logged: LoggedReply | None = None
    """What a peer harness's log said it did with `response` (an imported run): judging and
    regrading read the reply as the import did (no second reasoning-tag strip, the logged pick)."""
    prediction: int | str | None = None
    score: float | None = None
    correct: bool | None = None
    counted: bool = True
    explanation: str | None = None
    judge: dict[str, Any] | None = None
    """The judge's decision when one judged this sample (lvu.scoring.judges.Judgement: kind, value,
    verdict, method, sub-scores, raw reply, and `judge`, the judge's identity)."""
    error: str | None = None
    traceback: str | None = None
    """The Python traceback of the exception behind `error` when code raised it (a model plugin,
    a backend, a decoder): shown by `lvu results show --trace ID` and the viewer's sample page."""
    data_error: bool = False
    """The data is at fault, not the model: a record that could not become a sample (bad answer,
    repeated id, unreadable line) or a video that is not there. Such samples are reported and left
    out of the score (`counted` False), like bad records of the release loaders."""
    latency: float = 0.0
    sample_digest: str | None = None
    """Hash of the loaded sample this record answers (runs/identity.py); a resumed run reuses the
    record only while the sample is unchanged. None in records stored before lvu kept it."""
    graded_by: str | None = None
    """Content hash of the extraction and scoring code that graded this record (runs/grading.py);
    a resumed run grades records of other code again (runs/regrade.py). None: stored before lvu kept it."""


class Breakdown(BaseModel):
    """One table of a report: rows of (group, n, score). Benchmarks' `aggregate` makes them in the
    paper's layout; scoring/choice.py has the generic per-label ones."""

    title: str
    rows: list[tuple[str, int, float]]
    """(group name, samples counted, mean score in percent)."""


def as_rgb(image: Any) -> np.ndarray:
    """Normalise an image-like (PIL or array) to a contiguous RGB uint8 array."""
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    return np.ascontiguousarray(arr[..., :3], dtype=np.uint8)
