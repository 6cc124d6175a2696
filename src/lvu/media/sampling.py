"""Frame-sampling plans as data: which frames of a video a prompt shows.

A plan is a small frozen pydantic model with a `kind` discriminator, so it can be stored with a
run, hashed, compared and written as a short string (`parse_plan(str(plan)) == plan`):

    uniform:32         lvu default: the centre of each of N equal segments
    fps:1              one frame every 1/F seconds from t=0; fps:0.5:max=64 caps the count
    center | first     one frame: the middle one / the first one
    all1fps            one frame per second (t = 0, 1, 2, ...), no cap
    lvb:64             LongVideoBench's official loader (floor stride from frame 0, <= 1 fps)
    lmms:32            lmms-eval's PyAV reader: np.linspace(0, T-1, min(N, T), dtype=int)
    vlmevalkit:8       VLMEvalKit's nframe mode: int(i * T/(N+1)) for i = 1..N

Every plan answers both `frame_indices(num_frames, fps)` and `timestamps(duration, fps)`.
Plans copied from a peer are defined on frame numbers (`native = "index"`): their timestamps are
`index / fps`, which `VideoReader.get_frames_played_at` maps back to exactly that frame on
constant-frame-rate video. lvu's own plans are defined on times (`native = "time"`); their
indices are the frames shown at those times. `sample()` reads a plan in its native terms.
Short videos: each formula is followed as written, so only `vlmevalkit` can repeat a frame.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, TypeAdapter, ValidationError

from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.media.video import FrameBatch, Resize, VideoReader

_EPS = 1e-6  # tolerance for float products such as duration * fps that should be integers


class _Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    native: ClassVar[Literal["time", "index"]] = "time"

    def frame_indices(self, num_frames: int, fps: float, *, duration: float | None = None) -> list[int]:
        """0-based frame numbers to read, ascending. `duration`: only LongVideoBench uses it."""
        if num_frames <= 0:
            return []
        times = self.timestamps(num_frames / fps if fps > 0 else float(num_frames), fps)
        return [min(num_frames - 1, max(0, math.floor(t * fps + _EPS))) for t in times]

    def timestamps(self, duration: float, fps: float) -> list[float]:
        """Seconds (from the first frame) at which to read frames, ascending."""
        raise NotImplementedError

    def _index_times(self, duration: float, fps: float) -> list[float]:
        """Times of an index-defined plan: index / fps, with T = round(duration * fps) frames."""
        if fps <= 0:
            raise ValueError(f"{self}: needs the video's frame rate, got fps={fps}")
        return [i / fps for i in self.frame_indices(round(duration * fps), fps)]


def _frames_in(duration: float, fps: float) -> int | None:
    """How many frames a video of `duration` at `fps` holds (None when fps is unknown)."""
    return max(1, math.ceil(duration * fps - _EPS)) if fps > 0 else None


class Uniform(_Plan):
    """N segment centres: t_i = (i + 0.5) * duration / N. Fewer frames than N: every frame."""

    kind: Literal["uniform"] = "uniform"
    n: PositiveInt

    def timestamps(self, duration: float, fps: float) -> list[float]:
        avail = _frames_in(duration, fps)
        n = min(self.n, avail) if avail else self.n
        return [(i + 0.5) * duration / n for i in range(n)]

    def frame_indices(self, num_frames: int, fps: float, *, duration: float | None = None) -> list[int]:
        n = min(self.n, num_frames)
        return [(2 * i + 1) * num_frames // (2 * n) for i in range(n)]  # exact integer form

    def __str__(self) -> str:
        return f"uniform:{self.n}"


class Fps(_Plan):
    """One frame every 1/F s from t = 0 (t_k = k / F, all t < duration).

    With `max_frames` and more than that many times, the plan becomes `uniform:max_frames`
    (segment centres over the whole video) rather than a truncated or strided grid, so a capped
    plan still covers the video evenly. F above the video's frame rate is lowered to it.
    """

    kind: Literal["fps"] = "fps"
    fps: PositiveFloat
    max_frames: PositiveInt | None = None

    def timestamps(self, duration: float, fps: float) -> list[float]:
        rate = min(self.fps, fps) if fps > 0 else self.fps
        count = max(1, math.ceil(duration * rate - _EPS))
        if self.max_frames is not None and count > self.max_frames:
            return Uniform(n=self.max_frames).timestamps(duration, fps)
        return [k / rate for k in range(count)]

    def __str__(self) -> str:
        cap = f":max={self.max_frames}" if self.max_frames is not None else ""
        return f"fps:{_num(self.fps)}{cap}"


class All1fps(_Plan):
    """Every second: t = 0, 1, 2, ... < duration (fps:1 without a cap)."""

    kind: Literal["all1fps"] = "all1fps"

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return Fps(fps=1).timestamps(duration, fps)

    def __str__(self) -> str:
        return "all1fps"


class Center(_Plan):
    """The single frame in the middle (t = duration / 2; frame num_frames // 2)."""

    kind: Literal["center"] = "center"

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return [duration / 2]

    def __str__(self) -> str:
        return "center"


class First(_Plan):
    """The first frame only."""

    kind: Literal["first"] = "first"

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return [0.0]

    def __str__(self) -> str:
        return "first"


class Lvb(_Plan):
    """LongVideoBench's `load_video` (longvideobench_dataset.py), as written:

        total_valid_frames = int(duration * fps); num_frames = min(max_num_frames, int(duration))
        frame_indices = [int(total_valid_frames / num_frames) * i for i in range(num_frames)]
        timestamps = [idx / fps for idx in frame_indices]

    `duration` is the annotation's `duration` field; without it, num_frames / fps is used.
    Deviation: videos under 1 s get one frame (the official code divides by zero).
    """

    kind: Literal["lvb"] = "lvb"
    native: ClassVar[Literal["time", "index"]] = "index"
    n: PositiveInt

    def frame_indices(self, num_frames: int, fps: float, *, duration: float | None = None) -> list[int]:
        if fps <= 0:
            raise ValueError(f"{self}: needs the video's frame rate, got fps={fps}")
        if duration is None:
            duration = num_frames / fps
        total_valid_frames = int(duration * fps)
        count = max(1, min(self.n, int(duration)))
        step = int(total_valid_frames / count)
        return [step * i for i in range(count)]

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return [i / fps for i in self.frame_indices(0, fps, duration=duration)]

    def __str__(self) -> str:
        return f"lvb:{self.n}"


class Lmms(_Plan):
    """lmms-eval's default PyAV reader (`load_video_stream`): with T = the stream's frame count,
    `np.linspace(0, T - 1, min(N, T), dtype=int)`; short videos give every frame once."""

    kind: Literal["lmms"] = "lmms"
    native: ClassVar[Literal["time", "index"]] = "index"
    n: PositiveInt

    def frame_indices(self, num_frames: int, fps: float, *, duration: float | None = None) -> list[int]:
        if num_frames <= 0:
            return []
        return np.linspace(0, num_frames - 1, min(num_frames, self.n), dtype=int).tolist()

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return self._index_times(duration, fps)

    def __str__(self) -> str:
        return f"lmms:{self.n}"


class Vlmevalkit(_Plan):
    """VLMEvalKit's `save_video_frames` nframe mode: with T = len(decord reader),
    `step = T / (N + 1)` and `[int(i * step) for i in range(1, N + 1)]` (both ends excluded).
    Videos with fewer than N frames repeat frames, exactly as VLMEvalKit does."""

    kind: Literal["vlmevalkit"] = "vlmevalkit"
    native: ClassVar[Literal["time", "index"]] = "index"
    n: PositiveInt

    def frame_indices(self, num_frames: int, fps: float, *, duration: float | None = None) -> list[int]:
        if num_frames <= 0:
            return []
        step = num_frames / (self.n + 1)
        return [int(i * step) for i in range(1, self.n + 1)]

    def timestamps(self, duration: float, fps: float) -> list[float]:
        return self._index_times(duration, fps)

    def __str__(self) -> str:
        return f"vlmevalkit:{self.n}"


SamplingPlan = Annotated[
    Uniform | Fps | All1fps | Center | First | Lvb | Lmms | Vlmevalkit, Field(discriminator="kind")
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(SamplingPlan)
_COUNTED = {"uniform": Uniform, "lvb": Lvb, "lmms": Lmms, "vlmevalkit": Vlmevalkit}
_SINGLE = {"center": Center, "first": First, "all1fps": All1fps}
FORMS = "uniform:N, fps:F[:max=M], center, first, all1fps, lvb:N, lmms:N, vlmevalkit:N"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def parse_plan(spec: str | dict | _Plan) -> SamplingPlan:
    """A plan from its string form ('uniform:32', 'fps:0.5:max=64', ...) or its dict form."""
    if isinstance(spec, _Plan):
        return cast("SamplingPlan", spec)  # every _Plan class is one of SamplingPlan's members
    if isinstance(spec, dict):
        try:
            return _ADAPTER.validate_python(spec)
        except ValidationError as e:
            raise LvuError(f"bad sampling plan {spec!r}: {e.errors()[0]['msg']}; known: {FORMS}") from None
    text = str(spec).strip().lower()
    kind, _, rest = text.partition(":")
    try:
        if kind in _SINGLE and not rest:
            return _SINGLE[kind]()
        if kind in _COUNTED and rest:
            return _COUNTED[kind](n=int(rest))
        if kind == "fps" and rest:
            rate, _, cap = rest.partition(":")
            if cap and not cap.startswith("max="):
                raise ValueError(cap)
            return Fps(fps=float(rate), max_frames=int(cap[4:]) if cap else None)
    except (ValueError, ValidationError):
        pass
    raise LvuError(f"bad sampling plan {spec!r}; use one of: {FORMS}")


def sample(
    reader: VideoReader, plan: SamplingPlan | str, *, duration: float | None = None, resize: int | Resize | None = None
) -> FrameBatch:
    """Read a plan's frames in its native terms: frame numbers for peer formulas (exact even on
    VFR video), times for lvu's plans. `duration` overrides the file's (annotation durations)."""
    plan = parse_plan(plan)
    if plan.native == "index":
        return reader.get_frames_at(plan.frame_indices(reader.num_frames, reader.fps, duration=duration), resize=resize)
    return reader.get_frames_played_at(plan.timestamps(duration or reader.duration, reader.fps), resize=resize)
