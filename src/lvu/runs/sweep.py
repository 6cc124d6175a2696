"""Sweeps: a grid of settings, each point its own run (`lvu sweep`, or `sweep:` in a run spec).

    lvu sweep -b haystack -m ocr-match --frames 8,16,32,64
    lvu sweep -b haystack -m ocr-match --frames 8,32 --subtitles none,interleave --probe full,blind
    lvu sweep -b videomme -m gemini -a model=... --subtitles none,all --audio none,whole   # Table 5

Axes are benchmark settings (frames, fps, subtitles, audio, resize, compat, seed) and `probe`: `full` runs
the model as given, `blind` / `blind-asr` / `single-frame` wrap it in that probe (models/probes.py).
Each point is an ordinary run (its own run id, resumable); a point whose spec equals an earlier run
resumes that run, and frames and model responses come from the shared caches. Every run records
its sweep memberships for reports: `env["sweeps"] = [{"name": ..., "axes": {axis: [values]},
"point": {axis: value}}, ...]` — a run shared by two sweeps is in both (the store keeps earlier
memberships when a run is reopened); `env["sweep"]` holds the latest one, as older lvu wrote.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from lvu.errors import LvuError

PROBES = ("full", "blind", "blind-asr", "single-frame")
"""Values of the `probe` axis: the model as given, or one of the probes of models/probes.py around it."""
PROBE_MODELS = {"blind": "blind", "blind-asr": "blind-asr", "single-frame": "single-frame"}
SWEEP_AXES = ("frames", "fps", "subtitles", "audio", "resize", "compat", "seed", "probe")


def check_axes(sweep: dict[str, Any], source: str) -> None:
    """One-line errors for a sweep section: known axes, non-empty lists, known probes."""
    name = sweep.get("name")
    if name is not None and not isinstance(name, str):
        raise LvuError(f"{source}: sweep.name: must be text (got {name!r})")
    axes = {k: v for k, v in sweep.items() if k != "name"}
    if not axes:
        raise LvuError(f"{source}: sweep: no axes — e.g. `frames: [8, 16, 32]`; axes: {', '.join(SWEEP_AXES)}")
    for axis, values in axes.items():
        if axis not in SWEEP_AXES:
            raise LvuError(f"{source}: sweep.{axis}: not a sweep axis — use {', '.join(SWEEP_AXES)}")
        if not isinstance(values, list) or not values:
            raise LvuError(f"{source}: sweep.{axis}: must be a non-empty list, e.g. [8, 16] (got {values!r})")
        if len(set(map(repr, values))) != len(values):
            raise LvuError(f"{source}: sweep.{axis}: repeated values {values!r}")
        if axis == "probe" and (bad := [v for v in values if v not in PROBES]):
            raise LvuError(f"{source}: sweep.probe: unknown probe(s) {', '.join(map(str, bad))} — use {', '.join(PROBES)}")


def axes_of(sweep: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: list(v) for k, v in sweep.items() if k != "name"}


def name_of(sweep: dict[str, Any]) -> str:
    """The sweep's `name`, else its axes joined: 'frames', 'frames-probe'."""
    return str(sweep.get("name") or "-".join(axes_of(sweep)))


def points(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid, first axis slowest: [{frames: 8, probe: full}, {frames: 8, probe: blind}, ...]."""
    axes = axes_of(sweep)
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def apply_probe(model: str, model_args: dict[str, Any], probe: str) -> tuple[str, dict[str, Any]]:
    """(model, args) for a probe point: `full` leaves the model alone; a probe wraps it
    (`base=<model>`, the model's own args under `base_args`)."""
    if probe == "full":
        return model, dict(model_args)
    args: dict[str, Any] = {"base": model}
    if model_args:
        args["base_args"] = dict(model_args)
    return PROBE_MODELS[probe], args


# ---- tags and scores of the runs made (lvu.api.run_planned runs them) -------------------------------


def add_tags(results_dir: str | Path | None, run_id: str, tags: list[str]) -> None:
    """Store `tags` with the run (`lvu run --tag`, `lvu sweep --tag`)."""
    from lvu.runs.store import Store

    store = Store(results_dir)
    try:
        for tag in tags:
            store.add_tag(run_id, tag)
    finally:
        store.close()


def headline(summary: Any) -> list[tuple[str, float]]:
    """The run's scores for a summary table, as (column, score %): first ("score", the headline —
    lvu.runs.headline, the number `lvu results list` shows), then the overall table's other rows
    (Video-MME's short / medium / long, MLVU's G-Avg, Neptune's other subsets)."""
    from lvu.runs.headline import headline_of_tables

    top = headline_of_tables(summary.tables, summary.spec.settings.get("subset"))
    if top is None:
        return []
    others = [(str(name), score) for name, _, score in summary.tables[0].rows if name != top.row]
    return [("score", top.score), *others]
