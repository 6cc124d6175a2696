"""Looking at builds without running them: `build_status` (`lvu build status OUT`), `build_item`
(`lvu build show OUT ITEM`) and `pipelines` (`lvu build list`). Nothing here calls a model; a build
folder is replanned from its store (lvu.construct.runner.open_build)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.construct.runner import BuildState, tokens_of
from lvu.errors import LvuError

__all__ = ["BuildState", "BuildStatus", "PipelineInfo", "PipelineOption", "build_item", "build_status", "pipelines",
           "tokens_of"]


@dataclass(frozen=True)
class BuildStatus:
    """A build folder as its store has it: the pipeline's name, its items and its per-stage state."""

    out: Path
    pipeline: str
    items: list[str]
    """The items' ids, in build order."""
    state: BuildState

    @property
    def pending(self) -> int:
        """Units not run yet, over every stage."""
        return sum(s.pending for s in self.state.stages)


def build_status(out: str | Path) -> BuildStatus:
    """Where the build in `out` stands: per stage units done / failed / pending, items by state,
    calls, tokens and time; `state.skipped()` and `state.failures()` say why items dropped out."""
    from lvu.construct.runner import open_build

    pipeline, items, state = open_build(out)
    return BuildStatus(out=Path(out), pipeline=pipeline.name, items=[i.id for i in items], state=state)


def build_item(out: str | Path, item: str) -> list[dict[str, Any]]:
    """Everything stored for one item of the build in `out`, one dict per stage: stage, role, state,
    note (why it dropped out), and its units (unit, state, output, error, calls with their prompts
    and replies, seconds). An unknown item is a one-line error naming the build's items."""
    from lvu.construct.runner import open_build

    _, items, state = open_build(out)
    if item not in {v.id for v in items}:
        raise LvuError(f"{out}: no item {item!r} — its items: {', '.join(v.id for v in items[:20])}"
                       + (f" ... ({len(items)} in all)" if len(items) > 20 else ""))
    dump: list[dict[str, Any]] = []
    for stage in state.stages:
        units: list[dict[str, Any]] = []
        for view in state.units.get(stage.name, {}).get(item, []):
            e = view.entry
            record = (e.result or {}) if e else {}
            units.append({"unit": view.unit.id, "state": "pending" if e is None else "failed" if e.error else "done",
                          "output": record.get("output"), "error": e.error if e else None,
                          "calls": record.get("calls", []), "seconds": round(e.finished - e.started, 3) if e else None})
        dump.append({"stage": stage.name, "role": stage.role, "state": state.states[stage.name].get(item, "?"),
                     "note": state.notes[stage.name].get(item), "units": units})
    return dump


@dataclass(frozen=True)
class PipelineOption:
    """One option of a pipeline: what `--opt NAME=VALUE` takes."""

    name: str
    type: str
    """As `lvu build list` writes it: `float | None`, `auto|subtitles|none`, `list of float`."""
    default: Any
    meaning: str

    @property
    def default_text(self) -> str:
        return json.dumps(self.default)


@dataclass(frozen=True)
class PipelineInfo:
    """A build pipeline as `lvu build list` shows it: what it does, its options and model roles."""

    name: str
    summary: str
    """The first paragraph of its docstring, on one line."""
    options: list[PipelineOption] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)
    """Role -> what model it needs."""


def _type_name(annotation: Any) -> str:
    """`float | None`, `auto|subtitles|none` for a Literal, `list[float]`: what --opt takes."""
    from typing import Literal, Union, get_args, get_origin

    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "|".join(str(a) for a in args)
    if origin is Union or type(annotation).__name__ == "UnionType":
        return " | ".join(_type_name(a) for a in args)
    if origin in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def pipelines(name: str | None = None) -> list[PipelineInfo]:
    """Every build pipeline (built-in and installed plugins), or only `name` (also `module:Class`)."""
    from lvu.construct.pipeline import pipeline_class, pipeline_names

    out = []
    for pname in [name] if name else pipeline_names():
        cls = pipeline_class(pname)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        options = [PipelineOption(field_name, _type_name(info.annotation), info.default, info.description or "")
                   for field_name, info in cls.Options.model_fields.items()]
        out.append(PipelineInfo(name=pname, summary=" ".join(doc.split()), options=options, models=dict(cls.models)))
    return out
