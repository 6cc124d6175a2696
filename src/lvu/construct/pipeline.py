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
import importlib
import importlib.util
import inspect
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

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
class Item:
    """One input of a build: a video (Neptune), a question (the blind filters), a planned output
    video (needles). `id` is unique within the build; `path` is its media file; `data` is what
    else its stages read (JSON-able: a question's record, a needle plan), stored in build.json so
    `lvu build status` replans without the original inputs."""

    id: str
    path: str
    data: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def fingerprint(self) -> str:
        """Content identity (lvu.media.identity): a re-encoded file is new work, a moved one is not."""
        from lvu.media.identity import video_fingerprint

        return video_fingerprint(self.path)


Video = Item
"""The item of a video pipeline (Neptune's): the name its stages and the docs' example use."""


@dataclass(frozen=True)
class Skip:
    """What `Stage.plan` returns for an item that leaves the pipeline here, with the reason
    `lvu build status` shows ("dropped by the talking-head filter: ...")."""

    reason: str


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
    inputs: tuple[str, ...] = ()
    """The stages whose outputs this one reads (a class's, or set per instance: select.rules)."""
    role: ClassVar[str] = "none"
    prompt: str = ""
    version: ClassVar[int] = 1
    """Bump when the stage's code changes what it produces: its items are then recomputed."""
    unit: ClassVar[str] = "video"
    """What one unit is (video, frame, shot, segment, question): for status lines and docs."""
    max_concurrency: int | None = None
    """Cap on units in flight (CPU-bound stages on a small machine), below the build's --concurrency;
    a class's, or set per instance (the needle build's splice workers)."""
    max_tokens: ClassVar[int] = 1024
    parse_errors: ClassVar[tuple[type[BaseException], ...]] = (ValueError,)
    """What the stage's parsers raise on a malformed reply (retried once with the error)."""
    partial: ClassVar[bool] = False
    """True: a video whose units all ran but some failed still gets an output, from the units that
    succeeded (per-question stages: one bad question does not hold back the video's others)."""
    out: Path | None = None
    """The build folder (OUT), set by the runner before it plans: where a stage whose units write
    files (needle videos, ladder cuts) writes them."""

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

    def uses_models(self) -> list[str]:
        """Every role this stage calls (a blind filter with several models: llm, llm2, ...); each
        one's identity enters the unit keys. Default: `uses_model()`."""
        role = self.uses_model()
        return [role] if role else []

    stop_after_failures: ClassVar[int | None] = None
    """Stop the build after this many failed units in a row (None: only when the endpoint is
    unreachable, lvu.construct.runner.UNREACHABLE_STOP)."""

    def stop_message(self, failures: int, error: str | None) -> str:
        """The one line the build stops with after `stop_after_failures` failed units in a row."""
        return (f"{self.name}: {failures} {self.unit}s in a row failed (last: {error}) — check the model, then run "
                "the same command again to resume")

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit] | Skip | None:
        """The units of `video` given its inputs (output name -> that stage's output for the
        video); `Skip(reason)` (or None: no reason given) = the item is out of this stage and
        every later one (a filter dropped it)."""
        return [Unit(video.id, "video", {"video": video.fingerprint})]

    async def run(self, unit: Unit, ctx: StageContext) -> Any:
        """The unit's result (JSON-able); raise StageFailure (or anything) to fail this unit only."""
        raise NotImplementedError

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        """The stage's output for `video` from its units' results (unit id -> result), all done."""
        return results

    def still_valid(self, unit: Unit, output: Any) -> bool:
        """Whether a committed (done) unit's output still stands; False runs the unit again (a unit
        whose file in `out` was deleted). Default: always."""
        return True

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


class PipelineOptions(BaseModel):
    """A pipeline's options: subclass it with typed fields (a default and a `description` each,
    which `lvu build list` prints). Unknown names are refused; a comma-separated string fills a
    list or tuple field (`--opt depths=0,50,100`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _comma_lists(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, info in cls.model_fields.items():
            value = out.get(name)
            if isinstance(value, str) and _is_sequence(info.annotation) and value.strip().lower() not in ("", "none"):
                out[name] = [v.strip() for v in value.split(",") if v.strip()]
        return out


def _is_sequence(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, tuple):
        return True
    return any(_is_sequence(a) for a in get_args(annotation)) if origin is not None else False


def validate_options(pipeline: str, schema: type[PipelineOptions], options: Any) -> PipelineOptions:
    """`options` (a dict, e.g. parsed from --opt K=V, or an instance) as `schema`, or a one-line
    LvuError naming the option and what to pass instead."""
    if isinstance(options, schema):
        return options
    if isinstance(options, PipelineOptions):
        options = options.model_dump()
    try:
        return schema.model_validate(dict(options or {}))
    except ValidationError as e:
        error = e.errors()[0]
        name = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            known = ", ".join(schema.model_fields) or "none"
            raise LvuError(f"{pipeline} build: unknown option {name!r} — its options: {known} "
                           f"(`lvu build list` describes them)") from None
        message = str(error["msg"]).removeprefix("Value error, ")
        if not name:  # a rule across options (a model validator): its message names them
            raise LvuError(f"{pipeline} build: {message}") from None
        info = schema.model_fields.get(name)
        hint = f" (default {info.default!r}: {info.description})" if info is not None and info.description else ""
        raise LvuError(f"{pipeline} build: option {name}={error.get('input')!r}: {message}{hint}") from None


class Pipeline:
    """A named list of stages over a build's items, plus what it writes at the end (`export`).

    Subclasses set `Options` (typed, validated here: a bad value raises before anything runs),
    `models` (role -> what it does) and implement `stages`; `items` reads the command line's
    inputs (default: one folder of videos) and `export` writes the product."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[PipelineOptions]] = PipelineOptions
    models: ClassVar[dict[str, str]] = {}
    """The model roles its stages may call, each with a line for `lvu build list`."""
    model_fallbacks: ClassVar[dict[str, str]] = {}
    """role -> the role whose model it uses when the build names none (Neptune: filter -> llm)."""

    def __init__(self, options: dict[str, Any] | PipelineOptions | None = None) -> None:
        self.config = validate_options(self.name or type(self).__name__, self.Options, options)
        self.options: dict[str, Any] = self.config.model_dump(mode="json")
        """The options as plain JSON values (stored in build.json; what stages read)."""

    def stages(self) -> list[Stage]:
        raise NotImplementedError

    def check(self) -> None:
        """Raise a one-line LvuError before anything runs when a stage cannot work here (a missing
        optional dependency), instead of failing every item. Default: nothing to check."""

    def roles(self) -> set[str]:
        """The model roles its stages call with these options."""
        return {r for s in self.stages() for r in s.uses_models()}

    def items(self, inputs: Sequence[str]) -> list[Item]:
        """The build's items from the command line's INPUTS. Default: the videos of one folder."""
        if len(inputs) != 1:
            raise LvuError(f"{self.name} build: pass one folder of videos (got {len(inputs)} inputs)")
        return find_videos(inputs[0])

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        """Write the build's product from its stage outputs (lvu.construct.runner.BuildState); returns
        what it wrote (name -> path or count) for the closing lines. Default: nothing."""
        return {}

    def benchmark_file(self, written: dict[str, Any], out: Path) -> Path | None:
        """The lvu JSONL benchmark `export` wrote, which the runner audits for options-only leaks
        (OUT/leak.json, lvu.construct.runner.audit_benchmark); None: no benchmark was written.
        Default: the first .jsonl file `written` names."""
        return next((Path(v) for v in written.values() if isinstance(v, (str, Path)) and str(v).endswith(".jsonl")),
                    None)


VIDEO_EXTS = (".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v")


def selected_videos(path: Path) -> list[Item]:
    """The videos a `lvu build select` chose (its selected.jsonl: one {"id", "path", ...} per line),
    in its order; relative paths are relative to the file's folder."""
    items, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            vid, video = str(row["id"]), Path(row["path"]).expanduser()
        except (ValueError, KeyError, TypeError):
            raise LvuError(f"{path} line {n}: not a video of `lvu build select` ({{\"id\", \"path\"}}) — pass its "
                           "selected.jsonl or a folder of videos") from None
        video = video if video.is_absolute() else path.parent / video
        if not video.is_file():
            raise LvuError(f"{path} line {n}: {video} does not exist — select again, or fix the path")
        if vid in seen:
            raise LvuError(f"{path} line {n}: video id {vid!r} twice — the file name is the video id")
        seen.add(vid)
        items.append(Item(vid, str(video.resolve())))
    if not items:
        raise LvuError(f"{path}: no videos selected — check the selection's evidence.jsonl")
    return items


def find_videos(folder: str | Path, limit: int | None = None) -> list[Item]:
    """The videos of a folder (not recursive), sorted by name; ids are file stems, unique. A
    `selected.jsonl` of `lvu build select` gives the videos it chose."""
    root = Path(folder).expanduser()
    if root.is_file() and root.suffix == ".jsonl":
        return selected_videos(root)[:limit]
    if not root.is_dir():
        raise LvuError(f"{folder}: not a folder — pass the folder holding the videos")
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in VIDEO_EXTS)
    if not files:
        raise LvuError(f"{folder}: no videos ({', '.join(VIDEO_EXTS)}) — pass the folder holding them")
    seen: dict[str, Path] = {}
    for path in files:
        if path.stem in seen:
            raise LvuError(f"{seen[path.stem].name} and {path.name}: two videos named {path.stem!r} — "
                           "rename one (the file name is the video id)")
        seen[path.stem] = path
    return [Item(p.stem, str(p.resolve())) for p in files[:limit]]



PIPELINES: Registry[Pipeline] = Registry("build pipeline", base=Pipeline, group="lvu.pipelines")
register_pipeline = PIPELINES.register
BUILTIN_PIPELINES = {
    "neptune": "lvu.construct.neptune",
    "blind-filter": "lvu.construct.filtering",
    "needle": "lvu.construct.needle_pipeline",
    "ladder": "lvu.construct.ladder",
    "convert-ucf-crime": "lvu.construct.convert_ucf",
    "convert-ego4d-nlq": "lvu.construct.convert_nlq",
    "select": "lvu.construct.select_pipeline",
}
"""Built-in pipeline name -> the module that registers it (imported when first asked for)."""


def pipeline_class(name: str) -> type[Pipeline]:
    """A pipeline class by name: built-in, an installed plugin (entry-point group
    `lvu.pipelines`), or `module:Class`."""
    if name in BUILTIN_PIPELINES:
        importlib.import_module(BUILTIN_PIPELINES[name])
    elif ":" not in name and name not in PIPELINES.names():
        pipeline_names()  # an unknown name: its error then lists every built-in
    return PIPELINES.get(name)


def pipeline_names() -> list[str]:
    """Every built-in and installed pipeline (each built-in module imported)."""
    for module in BUILTIN_PIPELINES.values():
        importlib.import_module(module)
    return PIPELINES.names()


def pipeline_reference(cls: type[Pipeline]) -> dict[str, str | None]:
    """How build.json finds the class again: its registered name, `module:Class`, and its source
    file (a class defined in a script run as __main__ is loaded from that file)."""
    try:
        source: str | None = inspect.getfile(cls)
    except (TypeError, OSError):
        source = None
    return {"name": cls.name, "class": f"{cls.__module__}:{cls.__qualname__}",
            "file": str(Path(source).resolve()) if source else None}


def load_pipeline_class(ref: dict[str, Any]) -> type[Pipeline]:
    """The class build.json names: by name, else by module:Class, else from its source file."""
    name, target, source = ref.get("name") or "", ref.get("class") or "", ref.get("file")
    if name in BUILTIN_PIPELINES or name in PIPELINES.names():
        return pipeline_class(name)
    module, _, qualname = target.partition(":")
    if module and module != "__main__":
        try:
            return pipeline_class(target)
        except LvuError:
            if not source:
                raise
    if source and Path(source).is_file():
        spec = importlib.util.spec_from_file_location(f"lvu_build_{Path(source).stem}", source)
        if spec is not None and spec.loader is not None:
            found = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(found)
            obj: Any = found
            for part in qualname.split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, type) and issubclass(obj, Pipeline):
                return obj
            if name in PIPELINES.names():  # registered by name while its file ran
                return PIPELINES.get(name)
    raise LvuError(f"build pipeline {name or target!r}: cannot find its class ({target}"
                   f"{f', file {source}' if source else ''}) — install or restore the module that defines it")


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
