"""The build mechanism: a pipeline is an ordered list of small registered `Stage` classes.

A stage declares what it reads (`inputs`: the `output` names of earlier stages), what it writes
(`output`), the model role it calls (`role`: "llm", "vlm" or "none") and its prompt constant
(`prompt`). Per video it `plan`s its units of work (one per video, frame, shot, segment or
question) from its inputs; each unit is one item of the build store (lvu.construct.runner), keyed by
the stage, its prompt and version, the model identity and the unit's payload (the content of what
it reads), so a changed prompt or model recomputes that stage — and, through the payloads, the
stages whose inputs then change — and nothing else. `collect` turns a video's unit results into
the stage's output for that video.

A unit's `run` calls models only through its `StageContext`: `ask` sends one prompt, parses the
reply with the stage's parser and, when the parser raises one of `parse_errors`, asks once more
with the parse error (`retry_prompt`) before the unit fails; `model(role)` hands library code
(e.g. lvu.construct.blind) a model that records every call. What a unit sent and got back — the exact
prompts, raw replies, tokens, seconds — is stored with its result.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lvu.errors import LvuError
from lvu.models.base import Model
from lvu.registry import Registry
from lvu.types import Frame, Prompt, Response, Text

ROLES = ("llm", "vlm", "filter", "none")
"""filter: the blind filter's ranking model (the llm unless the build names another)."""
T = TypeVar("T")


class StageFailure(Exception):
    """A unit failed (its model errored, or its reply stayed malformed): recorded, the build goes on."""


@dataclass
class Video:
    """One input video of a build: `id` is its file name's stem (unique within the build)."""

    id: str
    path: str

    @cached_property
    def fingerprint(self) -> str:
        """Content identity (lvu.media.identity): a re-encoded file is new work, a moved one is not."""
        from lvu.media.identity import video_fingerprint

        return video_fingerprint(self.path)


@dataclass(frozen=True)
class Unit:
    """One item of work of a stage: `payload` is everything its outcome depends on besides the
    stage's prompt, version, settings and model (it is hashed into the item's key)."""

    video: str
    id: str
    payload: Any = None


@dataclass
class Call:
    """One model call of a unit, as stored."""

    prompt: str
    """The exact text sent (frames shown as <frame t=..>, Prompt.text)."""
    reply: str | None
    error: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    unreachable: bool = False
    """The call never reached the endpoint (after the backend's retries): lvu.types.Response."""


class Stage:
    """One step of a pipeline. Subclasses set the class attributes and implement `plan` and `run`."""

    name: ClassVar[str] = ""
    output: ClassVar[str] = ""
    """The name successors read this stage's output by (defaults to the stage's name)."""
    inputs: ClassVar[tuple[str, ...]] = ()
    role: ClassVar[str] = "none"
    prompt: ClassVar[str] = ""
    version: ClassVar[int] = 1
    """Bump when the stage's code changes what it produces: its items are then recomputed."""
    unit: ClassVar[str] = "video"
    """What one unit is (video, frame, shot, segment, question): for status lines and docs."""
    max_concurrency: ClassVar[int | None] = None
    """Cap on units in flight (CPU-bound stages on a small machine), below the build's --concurrency."""
    max_tokens: ClassVar[int] = 1024
    parse_errors: ClassVar[tuple[type[BaseException], ...]] = (ValueError,)
    """What the stage's parsers raise on a malformed reply (retried once with the error)."""
    partial: ClassVar[bool] = False
    """True: a video whose units all ran but some failed still gets an output, from the units that
    succeeded (per-question stages: one bad question does not hold back the video's others)."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    @classmethod
    def output_name(cls) -> str:
        return cls.output or cls.name

    def settings(self) -> Any:
        """The options that change this stage's results (hashed into every item key)."""
        return None

    def uses_model(self) -> str | None:
        """The role whose model this stage calls with the build's options (None: no model)."""
        return None if self.role == "none" else self.role

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit] | None:
        """The units of `video` given its inputs (output name -> that stage's output for the
        video); None = the video is out of this stage and every later one (a filter dropped it)."""
        return [Unit(video.id, "video", {"video": video.fingerprint})]

    async def run(self, unit: Unit, ctx: StageContext) -> Any:
        """The unit's result (JSON-able); raise StageFailure (or anything) to fail this unit only."""
        raise NotImplementedError

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        """The stage's output for `video` from its units' results (unit id -> result), all done."""
        return results

    def retry_prompt(self, prompt: str, reply: str, error: BaseException) -> str:
        """The second ask after a malformed reply: the original prompt, the reply and what was wrong."""
        return (f"{prompt}\n\nYour previous reply could not be read:\n{reply}\n\nProblem: {error}\n"
                "Answer again, following the output format exactly.")


STAGES: Registry[Stage] = Registry("build stage", base=Stage)
register_stage = STAGES.register

_calls: contextvars.ContextVar[list[Call]] = contextvars.ContextVar("lvu_build_calls")


class RecordingModel(Model):
    """A model that appends every call it makes to the running unit's call log (a context var,
    so units in flight on other tasks keep their own logs)."""

    def __init__(self, inner: Model) -> None:
        super().__init__(**inner.args)
        self.inner = inner

    @property
    def identity(self) -> dict[str, Any]:
        return self.inner.identity

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        t0 = time.perf_counter()
        response = await self.inner.generate(prompt, sample_id=sample_id)
        log = _calls.get(None)
        if log is not None:
            log.append(Call(prompt=prompt.text, reply=response.text if response.error is None else None,
                            error=response.error, tokens=dict(response.usage or {}),
                            seconds=round(time.perf_counter() - t0, 4), unreachable=response.unreachable))
        return response


class StageContext:
    """What a unit's `run` gets: its video, the models of the build's roles (recording), `ask`."""

    def __init__(self, stage: Stage, unit: Unit, video: Video, models: dict[str, RecordingModel]) -> None:
        self.stage, self.unit, self.video, self.models = stage, unit, video, models
        self.calls: list[Call] = []

    def model(self, role: str | None = None) -> Model:
        role = role or self.stage.uses_model()
        if role is None or role not in self.models:
            raise StageFailure(f"stage {self.stage.name} needs a {role or 'model'} model and the build has none")
        return self.models[role]

    async def generate(self, text: str, *, frames: Sequence[Frame] = (), role: str | None = None,
                       max_tokens: int | None = None) -> str:
        """One call; its reply text (a model error fails the unit)."""
        prompt = Prompt(parts=[*frames, Text(text=text)], max_tokens=max_tokens or self.stage.max_tokens,
                        temperature=0.0)
        response = await self.model(role).generate(prompt, sample_id=f"{self.stage.name}/{self.unit.video}/{self.unit.id}")
        if response.error is not None:
            raise StageFailure(response.error)
        return response.text

    async def ask(self, text: str, parse: Callable[[str], T], *, frames: Sequence[Frame] = (),
                  role: str | None = None, max_tokens: int | None = None) -> T:
        """Ask, parse; on a malformed reply ask once more with the parse error, then fail the unit."""
        reply = await self.generate(text, frames=frames, role=role, max_tokens=max_tokens)
        try:
            return parse(reply)
        except self.stage.parse_errors as e:
            retry = self.stage.retry_prompt(text, reply, e)
        reply = await self.generate(retry, frames=frames, role=role, max_tokens=max_tokens)
        try:
            return parse(reply)
        except self.stage.parse_errors as e:
            raise StageFailure(f"malformed reply, also after one retry with the parse error: {e}") from None


@dataclass
class Outcome:
    """What running one unit gave: its result or its error, and the calls it made."""

    result: Any = None
    error: str | None = None
    calls: list[Call] = field(default_factory=list)
    started: float = 0.0

    def record(self, stage: Stage, unit: Unit, model_key: dict[str, Any] | None) -> dict[str, Any]:
        """The stored form (the item's `result` column)."""
        return {"stage": stage.name, "video": unit.video, "unit": unit.id, "model": model_key,
                "output": self.result, "calls": [asdict(c) for c in self.calls]}


async def run_unit(stage: Stage, unit: Unit, video: Video, models: dict[str, RecordingModel]) -> Outcome:
    """Run one unit, catching its failure (one failed unit never stops the build)."""
    ctx = StageContext(stage, unit, video, models)
    token = _calls.set(ctx.calls)
    outcome = Outcome(started=time.time(), calls=ctx.calls)
    try:
        outcome.result = await stage.run(unit, ctx)
    except StageFailure as e:
        outcome.error = str(e) or "failed"
    except LvuError as e:
        outcome.error = str(e)
    except Exception as e:  # a bug or an unreadable file fails this unit, named, and the build goes on
        outcome.error = f"{type(e).__name__}: {e}".splitlines()[0][:500]
    finally:
        _calls.reset(token)
    return outcome


class Pipeline:
    """A named list of stages plus what it writes at the end (`export`), built from the options."""

    name: ClassVar[str] = ""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    def stages(self) -> list[Stage]:
        raise NotImplementedError

    def check(self) -> None:
        """Raise a one-line LvuError before anything runs when a stage cannot work here (a missing
        optional dependency), instead of failing every video. Default: nothing to check."""

    def roles(self) -> set[str]:
        """The model roles its stages call with these options."""
        return {r for s in self.stages() if (r := s.uses_model())}

    def export(self, state: Any, videos: Sequence[Video], out: Path) -> dict[str, Any]:
        """Write the build's product from its stage outputs (lvu.construct.runner.BuildState); returns
        what it wrote (name -> path or count) for the closing lines. Default: nothing."""
        return {}


PIPELINES: Registry[Pipeline] = Registry("build pipeline", base=Pipeline)
register_pipeline = PIPELINES.register


def check_pipeline(stages: Sequence[Stage]) -> None:
    """Every input is an earlier stage's output, every role known (a wiring bug is one line)."""
    seen: set[str] = set()
    for stage in stages:
        if stage.role not in ROLES:
            raise LvuError(f"build stage {stage.name}: role {stage.role!r} — use one of {', '.join(ROLES)}")
        missing = [i for i in stage.inputs if i not in seen]
        if missing:
            raise LvuError(f"build stage {stage.name} reads {', '.join(missing)}, which no earlier stage writes")
        seen.add(stage.output_name())
