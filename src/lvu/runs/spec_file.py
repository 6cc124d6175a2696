"""Run specs: benchmarks × models × settings in one YAML file (`lvu run -c spec.yaml`).

    benchmarks: [haystack]                  # names, or {name: NAME, <setting>: VALUE, ...}
    models:                                 # names, or {name: NAME, args: {KEY: VALUE}, ...}
      - ocr-match
      - {name: random, args: {seed: 1}}
    settings: {frames: 16, limit: 20}       # shared by every run; entries override them
    sweep: {frames: [8, 32], name: curve}   # optional grid, every point for every combination
    results_dir: lvu-results                # optional

Every combination (and sweep point) is its own run, identified by its spec like any `lvu run`, so
re-running the file resumes each one. Settings: benchmark inputs (frames, fps, subtitles, audio, resize,
compat, seed, data, video_dir, and `set:` for any other benchmark setting), `model_args` (alias
`args`), and how the run goes: the planned run options (lvu.runs.options.PlannedOptions: limit,
concurrency, decode, decode_workers, asr, judge, judge_args, llm_extract, executor, ray_address,
ray_args), validated as `lvu.api.run` validates them. Later layers win: settings <
benchmark entry < model entry < sweep point; `set`, `model_args`, `judge_args` and `ray_args` merge
key by key. Problems are one-line
`LvuError`s naming the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lvu.errors import LvuError
from lvu.runs.options import PlannedOptions
from lvu.runs.sweep import apply_probe, check_axes, points

BENCHMARK_KEYS = ("frames", "fps", "subtitles", "audio", "resize", "compat", "seed", "data", "video_dir")
"""Settings handed to the benchmark (it rejects those it does not have, e.g. fps on haystack)."""
MERGED_KEYS = ("set", "model_args", "judge_args", "ray_args")
"""Dict-valued keys: a later layer's entries merge into the earlier ones key by key."""


class Settings(PlannedOptions):
    """One layer of settings: benchmark inputs, model arguments and the planned run options
    (PlannedOptions: their types, ranges and defaults); a key not given is not set here."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    frames: int | str | None = None
    """Frames per sample (or a benchmark's own form, e.g. Neptune's "1fps")."""
    fps: float | None = None
    """Sampling rate, for benchmarks that have one (LVBench, MLVU)."""
    subtitles: str | None = None
    """none | interleave | covering | all."""
    audio: str | None = None
    """none | whole | interleave: the video's sound in the prompt (benchmarks that allow it)."""
    resize: int | None = None
    """Shorter side of frames in pixels."""
    compat: str | None = None
    """official | lmms-eval | vlmevalkit."""
    seed: int | None = None
    """The benchmark's seed (which haystack); a model's sampling seed is a model arg."""
    data: str | None = None
    video_dir: str | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    """Any other benchmark setting."""
    model_args: dict[str, Any] = Field(default_factory=dict, alias="args")

    @field_validator("frames")
    @classmethod
    def _frames(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and v < 0:
            raise ValueError("must be 0 or more")
        return v


class BenchmarkEntry(Settings):
    name: str


class ModelEntry(Settings):
    name: str


class SpecFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")

    benchmarks: list[BenchmarkEntry] = Field(min_length=1)
    """Names, or mappings with `name` and settings."""
    models: list[ModelEntry] = Field(min_length=1)
    settings: Settings = Field(default_factory=Settings)
    sweep: dict[str, Any] | None = None
    """Axes (`frames: [8, 16]`, `probe: [full, blind]`, ...) and an optional `name`."""
    results_dir: str | None = None

    @field_validator("benchmarks", "models", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        """A bare name is an entry with nothing but its name."""
        return [{"name": item} if isinstance(item, str) else item for item in v] if isinstance(v, list) else v


class PlannedRun(BaseModel):
    """One run a spec asks for, fully resolved."""

    benchmark: str
    model: str
    settings: dict[str, Any]
    """Benchmark settings (None-free)."""
    model_args: dict[str, Any]
    options: dict[str, Any]
    """The planned run options set (PlannedOptions fields; lvu.api.run_planned validates them as RunOptions)."""
    point: dict[str, Any] = Field(default_factory=dict)
    """The sweep point this run is (empty outside a sweep)."""


def _merge(layers: list[Settings]) -> dict[str, Any]:
    """Later layers win (only keys set in a layer count); dict-valued keys merge key by key."""
    out: dict[str, Any] = {"set": {}, "model_args": {}}
    for layer in layers:
        for key, value in layer.model_dump(exclude={"name"}, exclude_unset=True).items():
            if key in MERGED_KEYS and value:
                out[key] = {**(out.get(key) or {}), **value}
            elif value is not None and not isinstance(value, dict):
                out[key] = value
    return out


def plan_run(benchmark: str, model: str, merged: dict[str, Any], point: dict[str, Any] | None = None) -> PlannedRun:
    """Split merged settings into benchmark settings, model args and run options; a `probe`
    in the point wraps the model in that probe."""
    merged = {**merged, **{k: v for k, v in (point or {}).items() if k != "probe"}}
    settings = {**{k: merged[k] for k in BENCHMARK_KEYS if merged.get(k) is not None}, **merged["set"]}
    model, model_args = apply_probe(model, merged["model_args"], (point or {}).get("probe", "full"))
    options = {k: merged[k] for k in PlannedOptions.model_fields if merged.get(k) is not None}
    return PlannedRun(benchmark=benchmark, model=model, settings=settings, model_args=model_args,
                      options=options, point=dict(point or {}))


def _where(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))


def parse(text: str, source: str = "<spec>") -> SpecFile:
    """Validate a spec's YAML text; errors name `source` and the key."""
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise LvuError(f"{source}{where}: not valid YAML ({problem})") from None
    if not isinstance(raw, dict):
        raise LvuError(f"{source}: a run spec is a mapping with `benchmarks:` and `models:` — see `lvu run --help`")
    try:
        spec = SpecFile.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        message = err["msg"].replace("Extra inputs are not permitted", "unknown key")
        value = "" if err["type"] in ("missing", "extra_forbidden") else f" (got {err.get('input')!r})"
        raise LvuError(f"{source}: {_where(loc)}: {message}{value}") from None
    if spec.sweep is not None:
        check_axes(spec.sweep, source)
    return spec


def load(path: str | Path) -> SpecFile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LvuError(f"{path}: cannot read the run spec ({e.strerror or e})") from None
    return parse(text, str(path))


def expand(spec: SpecFile, source: str = "<spec>") -> list[PlannedRun]:
    """Every run the spec asks for, in order: benchmarks, then models, then sweep points. Each
    benchmark's settings are checked now, so a typo fails before the first run starts."""
    planned: list[PlannedRun] = []
    for i, bench in enumerate(spec.benchmarks):
        for model in spec.models:
            merged = _merge([spec.settings, bench, model])
            for point in points(spec.sweep) if spec.sweep else [{}]:
                run = plan_run(bench.name, model.name, merged, point)
                check_benchmark(run, f"{source}: benchmarks[{i}] ({bench.name})")
                planned.append(run)
    return planned


def check_benchmark(run: PlannedRun, where: str) -> None:
    """Construct the benchmark (cheap: no data is read) to reject unknown names and settings."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    try:
        BENCHMARKS.get(run.benchmark)(**run.settings)
    except LvuError as e:
        raise LvuError(f"{where}: {e}") from None
