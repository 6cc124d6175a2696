"""`build`: the construction entry (`lvu build run PIPELINE INPUTS -o OUT`): any pipeline (built-in,
an installed plugin, `module:Class`) over its items, each unit committed as it completes, then its
files (lvu.construct.runner; docs/build.md). Re-running the same build resumes it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.construct.pipeline import Item, Pipeline
from lvu.construct.runner import BuildState
from lvu.errors import LvuError
from lvu.models.base import Model

ModelSpec = str | tuple[str, dict[str, Any]] | Model
"""A role's model: a registry name, (name, arguments), or a Model object of a registered class."""


@dataclass(frozen=True)
class BuildResult:
    """Where a build went and how far: its folder, its per-stage state and the files it wrote."""

    out: Path
    """The build folder: its store (lvu.sqlite), build.json and the pipeline's files."""
    pipeline: str
    n_items: int
    state: BuildState
    """Per stage: units done / failed / pending, items by state, calls, tokens (`lvu build status`)."""
    written: dict[str, Any] = field(default_factory=dict)
    """The pipeline's exported files, by name (empty until the build is complete)."""

    @property
    def complete(self) -> bool:
        return self.state.complete

    @property
    def interrupted(self) -> bool:
        return self.state.interrupted

    @property
    def failed(self) -> bool:
        """Some units failed (they are asked again when the same build runs again)."""
        return any(s.failed for s in self.state.stages)

    @property
    def status(self) -> str:
        """interrupted, failed (some units), complete, or incomplete (stopped early, or pending units)."""
        if self.interrupted:
            return "interrupted"
        if self.failed:
            return "failed"
        return "complete" if self.complete else "incomplete"


def model_pair(role: str, model: ModelSpec) -> tuple[str, dict[str, Any]]:
    """A role's model as the build records it: (registry name, arguments)."""
    from lvu.models import load_all
    from lvu.models.base import MODELS

    if isinstance(model, str):
        return model, {}
    if isinstance(model, tuple):
        return model[0], dict(model[1])
    load_all()
    name = MODELS.registered_name(type(model))
    if name is None:
        raise LvuError(f"model of role {role}: class {type(model).__qualname__} is not a registered model — "
                       "register it (@register_model, docs/plugins.md) or pass a registry name")
    return name, dict(model.args)


def build(pipeline: str | Pipeline, inputs: Sequence[str], out: str | Path, *,
          models: Mapping[str, ModelSpec] | None = None, options: dict[str, Any] | None = None,
          limit: int | None = None, concurrency: int = 4, show_progress: bool = True, executor: str = "local",
          ray_address: str | None = None, ray_args: dict[str, Any] | None = None, replace: bool = False,
          on_note: Callable[[str], None] | None = None, arg_flags: dict[str, str] | None = None) -> BuildResult:
    """Run a build pipeline (a name from `lvu build list`, an installed plugin, `module:Class`, or a
    Pipeline object with its options) over its items read from `inputs` (e.g. a folder of videos)
    into the folder `out`, resuming what is there. `options`: the pipeline's options (with a name);
    `models`: role -> model; `limit`: only the first N items; `executor="ray"`: the units on a Ray
    cluster. A build of other inputs or options than `out` holds is refused unless `replace`.
    `on_note` gets the line saying what is built where, before it starts.

        done = build("neptune", ["videos/"], "nep", options={"captioner": "ocr"},
                     models={"llm": ("openai", {"model": "gpt-4o"})})
        print(done.status, done.written)
    """
    from lvu.construct.pipeline import pipeline_class
    from lvu.construct.store import recorded_options

    if limit is not None and limit < 1:
        raise LvuError(f"--limit {limit}: must be at least 1 (the first K samples) — leave --limit out to run them all")
    if isinstance(pipeline, Pipeline):
        if options:
            raise LvuError("options are given twice — pass them to the Pipeline object or with its name, not both")
        instance = pipeline
    else:
        cls = pipeline_class(pipeline)
        instance = cls(recorded_options(cls, out, options or {}))
    items = instance.items(list(inputs))[:limit]
    if on_note is not None:
        on_note(f"lvu build {instance.name}: {len(items)} item(s) into {out}")
    return run_pipeline(instance, items, out, models, concurrency=concurrency, show_progress=show_progress,
                        executor=executor, ray_address=ray_address, ray_args=ray_args, replace=replace,
                        arg_flags=arg_flags)


def run_pipeline(pipeline: Pipeline, items: Sequence[Item], out: str | Path,
                 models: Mapping[str, ModelSpec] | None = None, *, concurrency: int = 4, show_progress: bool = True,
                 executor: str = "local", ray_address: str | None = None, ray_args: dict[str, Any] | None = None,
                 replace: bool = False, arg_flags: dict[str, str] | None = None) -> BuildResult:
    """Run a configured pipeline over items it has already read (what `build` and the build
    shortcuts share): each unit committed as it completes, then its files."""
    from lvu.construct.runner import run_build

    pairs = {role: model_pair(role, m) for role, m in (models or {}).items()}
    state, written = asyncio.run(run_build(pipeline, items, out, pairs, concurrency=concurrency,
                                           show_progress=show_progress, executor=executor, ray_address=ray_address,
                                           ray_args=ray_args, replace=replace, arg_flags=arg_flags))
    return BuildResult(out=Path(out), pipeline=pipeline.name, n_items=len(items), state=state, written=written)
