"""Lists of runs to make, for `lvu.api.run_planned`: a run spec's combinations (`plan_spec`,
`lvu run -c spec.yaml`), a sweep's grid points (`plan_sweep`, `plan_sweep_file`: `lvu sweep`)
and one model on several benchmarks (`plan_benchmarks`, `lvu run -b videomme,mlvu`). Every
benchmark's settings are checked while planning, so a typo fails before the first run starts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.errors import LvuError
from lvu.runs.options import RunOptions
from lvu.runs.spec_file import PlannedRun

__all__ = ["Plan", "PlannedRun", "plan_benchmarks", "plan_spec", "plan_sweep", "plan_sweep_file"]


@dataclass
class Plan:
    """The runs a spec or a sweep asks for, in order, and what the spec says around them."""

    runs: list[PlannedRun]
    sweep: dict[str, Any] | None = None
    """The sweep section the runs are points of (None: a spec without one)."""
    results_dir: str | None = None
    """The spec's `results_dir:`, if it names one."""

    @property
    def name(self) -> str | None:
        """The sweep's name, else its axes joined ('frames-probe'); None without a sweep."""
        from lvu.runs.sweep import name_of

        return None if self.sweep is None else name_of(self.sweep)

    @property
    def axes(self) -> list[str]:
        """The sweep's axes, in order (none without a sweep)."""
        from lvu.runs.sweep import axes_of

        return [] if self.sweep is None else list(axes_of(self.sweep))

    def options(self, options: RunOptions) -> RunOptions:
        """`options` with the spec's results folder: a results_dir set in `options` (--results-dir)
        wins, then the spec's `results_dir:`, else the usual rule (docs/runs.md)."""
        if options.results_dir is not None or self.results_dir is None:
            return options
        return options.parse({"results_dir": self.results_dir}, base=options)


def _plan(spec: Any, source: str) -> Plan:
    from lvu.runs import spec_file

    return Plan(spec_file.expand(spec, source), spec.sweep, spec.results_dir)


def plan_spec(path: str | Path) -> Plan:
    """Every run a run spec YAML asks for (benchmarks × models × settings, sweep points), in order;
    a bad key or setting is a one-line LvuError naming the file and the key."""
    from lvu.runs import spec_file

    return _plan(spec_file.load(path), str(path))


def plan_sweep_file(path: str | Path) -> Plan:
    """The grid points of a run spec with a `sweep:` section (`lvu sweep -c`); a spec without one
    is a one-line LvuError."""
    from lvu.runs import spec_file

    spec = spec_file.load(path)
    if spec.sweep is None:
        raise LvuError(f"{path}: no `sweep:` section — add one (e.g. `sweep: {{frames: [8, 32]}}`) or use lvu run -c")
    return _plan(spec, str(path))


def plan_sweep(benchmarks: list[str], models: list[str], axes: dict[str, list[Any]], *, name: str | None = None,
               data: str | Path | None = None, settings: dict[str, Any] | None = None,
               model_args: dict[str, Any] | None = None) -> Plan:
    """A grid of runs (`lvu sweep`): each benchmark × model × point of `axes` (frames, subtitles,
    audio, probe, resize, fps, compat, seed: their values), every point its own run. `settings`
    and `model_args` apply to every point; `name` is recorded with every run (default: the axes)."""
    from lvu.runs import spec_file

    common = {"data": str(data) if data else None, "set": settings or {}, "args": model_args or {}}
    raw = {"benchmarks": benchmarks, "models": models, "settings": {k: v for k, v in common.items() if v is not None},
           "sweep": {**axes, **({"name": name} if name else {})}}
    source = "lvu sweep"
    return _plan(spec_file.parse(json.dumps(raw), source), source)  # JSON is YAML: one validation path


def plan_benchmarks(benchmarks: list[str], model: str, *, settings: dict[str, Any], model_args: dict[str, Any],
                    options: RunOptions) -> list[PlannedRun]:
    """One run of `model` per benchmark, in turn (`lvu run -b videomme,mlvu`), each with the same
    settings and options; every benchmark's settings are checked before anything runs."""
    from lvu.runs.spec_file import check_benchmark

    planned = [PlannedRun(benchmark=b, model=model, settings=dict(settings), model_args=dict(model_args),
                          options=options.planned()) for b in benchmarks]
    for item in planned:
        check_benchmark(item, f"--benchmark {item.benchmark}")
    return planned
