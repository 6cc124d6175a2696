"""Stored runs as analysis inputs: loading, describing and grouping them (sweeps, modalities)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lvu.benchmarks.base import Benchmark, Breakdown
from lvu.errors import LvuError
from lvu.runs.store import RunInfo, Store
from lvu.types import SampleResult

PROBE_MODELS = {"blind": (False, False, False), "blind-asr": (False, None, None), "single-frame": (None, None, None)}
"""Probe wrappers and what they remove: (frames kept?, subtitles kept?, audio kept?); None = as the
prompt had."""
MODALITY_ORDER = ("blind", "subtitles", "audio", "subtitles + audio", "frames", "frames + subtitles",
                  "frames + audio", "frames + subtitles + audio")
"""Every `RunData.modality`, in the order tables list them (Video-MME Table 5: frames, +subs, +audio)."""
SINGLE_FRAME_WORDS = ("center", "first")
"""Frame settings that mean one frame (Neptune's `frames=center|first`)."""


@dataclass
class RunData:
    """One stored run with its results, and the benchmark object that made it (when rebuildable)."""

    info: RunInfo
    results: list[SampleResult]
    notes: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def spec(self):
        return self.info.spec

    @cached_property
    def bench(self) -> Benchmark | None:
        """The run's benchmark (for its official aggregate); None when it cannot be rebuilt here."""
        from lvu.runs.grading import benchmark_of

        try:
            return benchmark_of(self.spec)
        except LvuError as e:
            self.notes.append(f"benchmark {self.spec.benchmark!r} cannot be rebuilt ({e}); tables use labels")
            return None

    @property
    def aggregates_by_label(self) -> bool:
        """Whether `aggregate` is the label breakdown (no benchmark-specific aggregate): its
        bootstrap then takes the fast path (analysis.stats.bootstrap_tables, by_label)."""
        return self.bench is None or type(self.bench).aggregate is Benchmark.aggregate

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """The benchmark's official tables (label breakdowns when the benchmark is unavailable)."""
        if self.bench is not None:
            return self.bench.aggregate(results)
        from lvu.scoring.choice import breakdowns_by_label

        return breakdowns_by_label(results)

    @cached_property
    def tables(self) -> list[Breakdown]:
        return self.aggregate(self.results)

    @property
    def frames(self) -> int | None:
        """Frames per sample as a number (1 for `center`/`first`, the single-frame probe); None if
        the setting is not a count (fps words, native sampling)."""
        if self.spec.model == "single-frame":
            return 1
        if self.spec.model in ("blind", "blind-asr"):
            return 0
        value = self.spec.settings.get("frames")
        if isinstance(value, str) and value in SINGLE_FRAME_WORDS:
            return 1
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def modality(self) -> str:
        """'blind', 'frames', 'subtitles', 'frames + subtitles', or one of those with audio
        ('frames + audio', 'audio', 'frames + subtitles + audio'...): what the model was given."""
        settings = self.spec.settings
        has_frames = any(int(r.prompt.get("n_frames") or 0) > 0 for r in self.results)
        has_subs = (settings.get("subtitles") not in (None, "none", False) or bool(settings.get("asr"))
                    or any(int(r.prompt.get("n_subtitles") or 0) > 0 for r in self.results))
        has_audio = (settings.get("audio") not in (None, "none")
                     or any(int(r.prompt.get("n_audio") or 0) > 0 for r in self.results))
        kept = PROBE_MODELS.get(self.spec.model, (None, None, None))
        has = [have if keep is None else bool(keep and have)
               for have, keep in zip((has_frames, has_subs, has_audio), kept)]
        names = [name for name, on in zip(("frames", "subtitles", "audio"), has) if on]
        return " + ".join(names) if names else "blind"

    @property
    def sweeps(self) -> list[dict[str, Any]]:
        """Every sweep the run belongs to ({"name", "axes", "point"} each): env["sweeps"], or the
        single env["sweep"] of runs stored by older lvu."""
        from lvu.runs.store import sweep_memberships

        return sweep_memberships(self.info.env)

    @property
    def sweep(self) -> dict[str, Any] | None:
        """The latest sweep the run was part of, if any (`sweeps` has them all)."""
        return self.sweeps[-1] if self.sweeps else None

    @property
    def label(self) -> str:
        """A short human name: the data and model as every listing names them
        (lvu.runs.run_names: 'jsonl(q.jsonl) × openai(fake-smart)'), and the settings that vary
        most often."""
        from lvu.runs.run_names import data_name, model_identity

        bits = [f"{k}={v}" for k, v in self.spec.settings.items()
                if k in ("frames", "subtitles", "audio", "compat", "split", "subset") and v is not None]
        name = f"{data_name(self.spec)} × {model_identity(self.spec)}"
        return f"{name} [{', '.join(bits)}]" if bits else name

    @cached_property
    def no_answers(self) -> str | None:
        """'no answers (8 of 8 failed)' when every stored sample of the run failed, else None:
        such a run has nothing to compare (lvu.runs.run_names.no_answers)."""
        from lvu.runs.run_names import no_answers

        failed = sum(1 for r in self.results if r.error)
        return no_answers(len(self.results) - failed, failed)


def family(benchmark: str) -> str:
    """The benchmark a task belongs to (videomme-sub -> videomme, longvideobench-frames -> longvideobench)."""
    return benchmark.split("-")[0]


def model_key(run: RunData) -> str:
    """The underlying model as a canonical string; probe wrappers (blind, single-frame...) see
    through to their base, so a blind probe of X and a run of X share a key."""
    spec = run.spec
    name, args = spec.model, dict(spec.model_args)
    if name in PROBE_MODELS:
        nested = args.get("base_args")
        nested = json.loads(nested) if isinstance(nested, str) else (nested or {})
        name = args.get("base")
        args = {**nested, **{k[len("base."):]: v for k, v in args.items() if k.startswith("base.")}}
        args = {k: v for k, v in args.items() if k not in _run_neutral(name)}  # as a direct run's spec drops them
    return json.dumps({"backend": name, "args": args}, sort_keys=True, default=str)


def _run_neutral(model: Any) -> tuple[str, ...]:
    """The model's arguments that stay out of run ids (retries, caches...); () if unknown."""
    from lvu.models import load_all
    from lvu.models.base import MODELS

    load_all()
    try:
        return tuple(MODELS.get(str(model)).run_neutral_args)
    except LvuError:
        return ()


def load_runs(store: Store, refs: list[str] | None) -> list[RunData]:
    """Runs by id or unique prefix (none: the latest run), each with its stored results."""
    infos = [store.run(r) for r in refs] if refs else [store.run(None)]
    seen: dict[str, RunInfo] = {}
    for info in infos:
        seen.setdefault(info.run_id, info)
    return [RunData(info, store.results(info.run_id)) for info in seen.values()]


def _without(d: dict[str, Any], *keys: str) -> str:
    return json.dumps({k: v for k, v in d.items() if k not in keys}, sort_keys=True, default=str)


def frame_sweeps(runs: list[RunData]) -> list[list[RunData]]:
    """Groups of runs that differ only in frames, ordered by frames (groups of 2+ runs).

    Runs tagged by sweeps with a "frames" axis group by sweep name and the other axes' values —
    a run shared by two sweeps is in both groups; untagged runs group by benchmark, model, model
    args and every setting but `frames`. Runs whose frames are not a count (fps words) are left out."""
    groups: dict[str, list[RunData]] = {}
    for run in runs:
        if not run.frames:  # not a count, or a blind run (the modality ablation covers those)
            continue
        keys = []
        for tag in run.sweeps:
            if "frames" in tag["point"]:
                point = dict(tag["point"])
                if point.get("probe") == "single-frame":  # the 1-frame point of the model's own sweep
                    point["probe"] = "full"
                keys.append("sweep:" + json.dumps([tag.get("name"), _without(point, "frames")]))
        if not keys:
            keys = [json.dumps([run.spec.benchmark, model_key(run), _without(run.spec.settings, "frames")])]
        for key in dict.fromkeys(keys):
            groups.setdefault(key, []).append(run)
    out = []
    for members in groups.values():
        by_frames: dict[int, RunData] = {}
        for run in sorted(members, key=lambda r: r.info.updated):
            by_frames[run.frames] = run  # type: ignore[index]  # the newest run of a frame count wins
        if len(by_frames) >= 2:
            out.append([by_frames[f] for f in sorted(by_frames)])
    return out


def sweep_name(group: list[RunData]) -> str | None:
    """The sweep every run of a frame-sweep group belongs to (titles tell two sweeps apart)."""
    common = set.intersection(*({m.get("name") for m in r.sweeps} for r in group)) if group else set()
    return next((str(m["name"]) for m in group[0].sweeps if m.get("name") in common and m.get("name")), None)


def modality_groups(runs: list[RunData]) -> list[list[RunData]]:
    """Groups of runs of one model on one benchmark family, with the same other settings and
    frames, that cover two or more input modalities (frames, subtitles, audio). Runs without
    frames (blind, subtitles or audio only) join every frame count's group of their model."""
    framed: dict[str, dict[str, RunData]] = {}
    frameless: dict[str, dict[str, RunData]] = {}
    for run in sorted(runs, key=lambda r: r.info.updated):  # the newest run of a modality wins
        base = json.dumps([family(run.spec.benchmark), model_key(run),
                           _without(run.spec.settings, "frames", "subtitles", "asr", "audio", "data_version")])
        if "frames" not in run.modality:
            frameless.setdefault(base, {})[run.modality] = run
        else:
            framed.setdefault(json.dumps([base, run.frames]), {})[run.modality] = run
    groups = [{**frameless.get(json.loads(key)[0], {}), **members} for key, members in framed.items()]
    bases = {json.loads(key)[0] for key in framed}
    groups += [members for base, members in frameless.items() if base not in bases]
    return [[g[m] for m in MODALITY_ORDER if m in g] for g in groups if len(g) >= 2]
