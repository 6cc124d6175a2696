"""Running a pipeline's stages over videos, resumably, and reading where a build stands.

The build store is lvu's keyed ledger (lvu.runs.ledger.JobLedger) in the build's folder
(`OUT/lvu.sqlite`): one job per stage, one item per unit, keyed by `unit_key` (stage, prompt,
version, settings, model identity, video, unit, payload). Each unit's outcome — its output, the
exact prompts, raw replies, tokens and seconds of its calls, or its error — is committed the moment
it is there, so kill -9 loses only the units in flight and a re-run skips every committed key.
Failed units are asked again on the next run; the others never are.

Stages run one after the other; within a stage, the units of every video run on the shared stage
runner (lvu.runs.stage_runner.run_each) with `concurrency` in flight (capped by the stage's
`max_concurrency`), one progress row per stage (done, failed, rate, ETA; plain lines in logs).
`execute(..., models=None)` runs nothing: it replans from the store (what `lvu build status` and
`lvu build show` print). OUT/build.json records what the build was run with (pipeline, options,
the models' identities, the videos), so status and show need no model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.construct.store import (JOB_KIND, BuildStopped, BuildStore, build_config, build_lock, check_rebuild,
                                 load_models, model_key, read_config, refuse_other_build)
from lvu.construct.pipeline import (BUILTIN_PIPELINES, Item, Outcome, Pipeline, RecordingModel, Skip, Stage, Unit, Video,
                                    check_pipeline, find_videos, load_pipeline_class, pipeline_class, run_unit)
from lvu.errors import LvuError
from lvu.progress import LoggedProgress, stage_columns
from lvu.runs.ledger import Entry, item_key
from lvu.runs.stage_runner import run_each

UNREACHABLE_STOP = 8
"""Units in a row whose model call never reached the endpoint (after its retries) that stop the
build with one line instead of failing every unit left (every unit, when a stage has fewer)."""
STATES = ("done", "failed", "pending", "blocked", "skipped")
"""Per video and stage: all units done / some failed / some not run yet / an input is missing
(failed or pending upstream) / out of the pipeline (a filter dropped it upstream)."""


def unit_key(stage: Stage, unit: Unit, model_key: dict[str, Any] | None) -> str:
    """Everything a unit's outcome depends on."""
    return item_key(JOB_KIND, stage.name, stage.version, stage.prompt, stage.settings(), model_key,
                    unit.video, unit.id, unit.payload)


@dataclass
class StageStatus:
    """Where one stage stands (units across all videos; videos by state)."""

    name: str
    role: str
    unit: str
    units: int = 0
    done: int = 0
    failed: int = 0
    pending: int = 0
    ran: int = 0
    """Units run by this invocation."""
    ran_calls: int = 0
    """Model calls made by this invocation."""
    reused: int = 0
    """Units planned now that were committed before (not run again)."""
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    """Wall time of its stored units (sum over units, not elapsed time)."""
    videos: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))


@dataclass
class UnitView:
    """One unit of one video as stored (for `lvu build show`)."""

    unit: Unit
    key: str
    entry: Entry | None

    def stored(self) -> Entry:
        """The entry of a unit that has run (the caller checked `entry`, or the build finished)."""
        assert self.entry is not None, f"unit {self.unit.id} has not run"
        return self.entry


@dataclass
class BuildState:
    stages: list[StageStatus]
    outputs: dict[str, dict[str, Any]]
    """Output name -> video id -> that stage's output for the video (done videos only)."""
    states: dict[str, dict[str, str]]
    """Stage name -> video id -> state (STATES)."""
    notes: dict[str, dict[str, str]]
    """Stage name -> video id -> why it is failed/blocked/skipped."""
    units: dict[str, dict[str, list[UnitView]]]
    """Stage name -> video id -> its units (with their stored entries)."""
    interrupted: bool = False
    stopped: str | None = None
    """Why the build stopped early (failed units in a row, an unreachable endpoint), or None."""

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.stopped is None and all(s.pending == 0 for s in self.stages)

    def skipped(self) -> list[tuple[str, str, str]]:
        """(stage, item, reason) for every item a stage dropped, at the first stage that dropped it."""
        seen: dict[str, tuple[str, str, str]] = {}
        for s in self.stages:
            for item, st in self.states.get(s.name, {}).items():
                if st == "skipped" and item in self.notes.get(s.name, {}) and item not in seen:
                    seen[item] = (s.name, item, self.notes[s.name][item])
        return list(seen.values())

    def failures(self) -> list[tuple[str, str, str, str]]:
        """(stage, item, unit, error) for every failed unit, and every item that failed to plan or collect."""
        out = []
        for s in self.stages:
            for item, views in self.units.get(s.name, {}).items():
                out += [(s.name, item, v.unit.id, v.entry.error) for v in views
                        if v.entry is not None and v.entry.error is not None]
            planned = self.units.get(s.name, {})
            out += [(s.name, item, "-", self.notes[s.name].get(item, "")) for item, st in self.states.get(s.name, {}).items()
                    if st == "failed" and not any(v.entry is not None and v.entry.error for v in planned.get(item, []))]
        return out


def tokens_of(calls: list[dict[str, Any]]) -> int:
    """Tokens of stored calls (total, else prompt + completion; 0 where the backend reports none)."""
    total = 0
    for call in calls:
        t = call.get("tokens") or {}
        total += int(t.get("total_tokens") or (t.get("prompt_tokens", 0) + t.get("completion_tokens", 0)))
    return total


def _upstream_state(stage: Stage, video: str, outputs: dict[str, dict[str, Any]],
                    by_output: dict[str, dict[str, str]]) -> str | None:
    """skipped / blocked when an input of `video` is missing, else None."""
    missing = [n for n in stage.inputs if video not in outputs.get(n, {})]
    if not missing:
        return None
    return "skipped" if any(by_output.get(n, {}).get(video) == "skipped" for n in missing) else "blocked"


async def execute(pipeline: str, stages: Sequence[Stage], videos: Sequence[Video], store: BuildStore, *,
                  identities: dict[str, dict[str, Any]], models: dict[str, Any] | None = None,
                  concurrency: int = 4, show_progress: bool = True, stop: asyncio.Event | None = None,
                  note: Callable[[str], None] | None = None, fresh: bool = False,
                  before_work: Callable[[], Awaitable[None]] | None = None, executor: Any = "local") -> BuildState:
    """Run the units not yet committed (`models`: role -> Model), or only replan (`models=None`).
    `identities`: role -> model_key of the model (stored with the build, so status needs no model).
    `fresh`: run every planned unit again (their new outcomes replace the stored ones).
    `before_work`: awaited once, before the first unit runs (the models' preflight: a build with
    nothing left to do never needs the endpoint).
    `executor`: "local", or a started lvu.construct.ray_units.RayUnits (`run_build(executor="ray")`
    starts one); `models` then maps each role to its model's name (the models are on its actors)."""
    check_pipeline(stages)
    stop = stop or asyncio.Event()
    if executor == "local":
        recording = {role: RecordingModel(m) for role, m in (models or {}).items()}
    else:
        recording = dict(models or {})
    state = BuildState([], {}, {}, {}, {})
    by_id = {v.id: v for v in videos}
    by_output: dict[str, dict[str, str]] = {}
    progress = LoggedProgress(*stage_columns(max(len(s.name) for s in stages)), title=f"lvu build {pipeline}",
                              disable=models is None or not show_progress)
    say = note or progress.say
    with progress:
        for index, stage in enumerate(stages):
            run = models is not None and not stop.is_set()
            status = StageStatus(stage.name, stage.role, stage.unit)
            state.stages.append(status)
            roles = stage.uses_models()
            mkey = (identities.get(roles[0]) if len(roles) == 1 else {r: identities.get(r) for r in roles}) \
                if roles else None
            for role in roles:
                if run and role not in recording:
                    raise LvuError(f"stage {stage.name} calls the {role} model — pass --{role} MODEL")
            stage.out = store.out
            job = store.job(pipeline, stage.name, create=run)
            vstates: dict[str, str] = {}
            notes: dict[str, str] = {}
            views: dict[str, list[UnitView]] = {}
            planned: list[tuple[Unit, str, int]] = []
            for vi, video in enumerate(videos):
                if (upstream := _upstream_state(stage, video.id, state.outputs, by_output)) is not None:
                    vstates[video.id] = upstream
                    continue
                inputs = {n: state.outputs[n][video.id] for n in stage.inputs}
                try:
                    units = stage.plan(video, inputs)
                except Exception as e:  # an unreadable video: this video fails here, the others go on
                    vstates[video.id], notes[video.id] = "failed", f"{type(e).__name__}: {e}".splitlines()[0]
                    continue
                if units is None or isinstance(units, Skip):
                    vstates[video.id] = "skipped"
                    notes[video.id] = units.reason if isinstance(units, Skip) else f"dropped by {stage.name}"
                    continue
                views[video.id] = []
                for ui, unit in enumerate(units):
                    key = unit_key(stage, unit, mkey)
                    planned.append((unit, key, vi * 100_000 + ui))
                    views[video.id].append(UnitView(unit, key, None))
            entries = store.entries(job, [k for _, k, _ in planned])
            for unit, key, _ in planned:  # a done unit whose product is gone runs again (Stage.still_valid)
                if key in entries and entries[key].error is None and \
                        not stage.still_valid(unit, (entries[key].result or {}).get("output")):
                    del entries[key]
            done_before = 0 if fresh else sum(1 for _, k, _ in planned if k in entries and entries[k].error is None)
            todo = [p for p in planned if fresh or p[1] not in entries or entries[p[1]].error is not None]
            status.reused = done_before
            if run and todo and before_work is not None:
                await before_work()
                before_work = None
            if run and todo:
                try:
                    await _run_stage(stage, todo, by_id, entries, store, job, recording, mkey, concurrency, stop,
                                     progress, done_before, len(planned), status, say, executor)
                except BuildStopped as e:  # committed work is kept; the later stages only replan
                    state.stopped = str(e)
                    stop.set()
            elif run:
                say(f"{stage.name}: {len(planned)} {stage.unit}(s), all done before")
            for unit_views in views.values():
                for view in unit_views:
                    view.entry = entries.get(view.key)
            _collect(stage, videos, views, vstates, notes, state)
            _count(status, planned, entries, vstates)
            state.states[stage.name], state.notes[stage.name], state.units[stage.name] = vstates, notes, views
            by_output[stage.output_name()] = vstates
            if run and stop.is_set() and index < len(stages) - 1:
                say("stopped: the later stages wait for the next run (committed work is kept)")
    state.interrupted = stop.is_set()
    return state


async def _run_stage(stage: Stage, todo: list[tuple[Unit, str, int]], videos: dict[str, Video],
                     entries: dict[str, Entry], store: BuildStore,
                     job: str, recording: dict[str, RecordingModel], mkey: dict[str, Any] | None, concurrency: int,
                     stop: asyncio.Event, progress: LoggedProgress, done_before: int, total: int,
                     status: StageStatus, say: Callable[[str], None], executor: Any = "local") -> None:
    task = progress.add_task(stage.name, total=total, completed=done_before, failed=0)
    failed = unreachable = in_a_row = 0
    dead_at = max(1, min(UNREACHABLE_STOP, len(todo)))  # a stage of fewer units: all of them, as `lvu run` does
    if done_before:
        say(f"{stage.name}: {done_before} of {total} {stage.unit}(s) done before, {len(todo)} to do")

    async def work(item: tuple[Unit, str, int]) -> Outcome:
        return await run_unit(stage, item[0], videos[item[0].video], recording)

    def commit(item: tuple[Unit, str, int], outcome: Outcome) -> BaseException | None:
        nonlocal failed, unreachable, in_a_row
        unit, key, ordinal = item
        record = outcome.record(stage, unit, mkey)
        # every reply is in the record's calls already: the ledger's raw column stays empty (stored once)
        store.ledger.commit(job, key, ordinal=ordinal, result=record, raw=None, error=outcome.error,
                            started=outcome.started)
        # as a re-read gives it back (JSON, keys sorted: tuples become lists), without reading it back
        stored = json.loads(json.dumps(record, sort_keys=True, default=str))
        entries[key] = Entry(key, ordinal, stored, None, outcome.error, outcome.started, time.time())
        status.ran += 1
        status.ran_calls += len(outcome.calls)
        failed += outcome.error is not None
        in_a_row = in_a_row + 1 if outcome.error is not None else 0
        if stage.stop_after_failures and in_a_row >= stage.stop_after_failures:
            return BuildStopped(stage.stop_message(in_a_row, outcome.error))
        progress.update(task, advance=1, failed=failed)
        lost = outcome.error is not None and bool(outcome.calls) and outcome.calls[-1].unreachable
        unreachable = unreachable + 1 if lost else 0
        if unreachable >= dead_at:  # the endpoint is gone: every unit would fail the same way
            return BuildStopped(f"{stage.name}: {unreachable} units in a row could not reach the model "
                            f"({outcome.error}) — check the endpoint, then run the same command to resume")
        return None

    if executor != "local":  # the units run on Ray; planning and `commit` stay here (lvu.construct.ray_units)
        await executor.run_stage(stage, todo, videos, commit, concurrency=concurrency, stop=stop, note=say)
        return
    limit = min(concurrency, stage.max_concurrency or concurrency)
    await run_each(todo, work, commit, concurrency=max(1, limit), stop=stop, note=say, what=stage.unit,
                   where=f"in {stage.name}")


def _collect(stage: Stage, videos: Sequence[Video], views: dict[str, list[UnitView]], vstates: dict[str, str],
             notes: dict[str, str], state: BuildState) -> None:
    out = state.outputs.setdefault(stage.output_name(), {})
    for video in videos:
        if video.id not in views:
            continue
        unit_views = views[video.id]
        failed = [v for v in unit_views if v.entry is not None and v.entry.error is not None]
        if any(v.entry is None for v in unit_views):
            vstates[video.id] = "pending"
            continue
        if failed:
            vstates[video.id] = "failed"
            notes[video.id] = f"{len(failed)} {stage.unit}(s) failed, e.g. {failed[0].unit.id}: {failed[0].stored().error}"
            if not stage.partial:
                continue
        try:
            out[video.id] = stage.collect(video, {v.unit.id: v.stored().result["output"] for v in unit_views
                                                  if v.stored().error is None})
            vstates[video.id] = "failed" if failed else "done"
        except Exception as e:  # a result that does not fit: this video fails here, named
            vstates[video.id], notes[video.id] = "failed", f"collect: {type(e).__name__}: {e}".splitlines()[0]


def _count(status: StageStatus, planned: list[tuple[Unit, str, int]], entries: dict[str, Entry],
           vstates: dict[str, str]) -> None:
    status.units = len(planned)
    for _, key, _ in planned:
        entry = entries.get(key)
        if entry is None:
            status.pending += 1
            continue
        if entry.error is None:
            status.done += 1
        else:
            status.failed += 1
        calls = (entry.result or {}).get("calls") or []
        status.calls += len(calls)
        status.tokens += tokens_of(calls)
        status.seconds += max(0.0, entry.finished - entry.started)
    for s in vstates.values():
        status.videos[s] += 1


# ---- a whole build: videos in, models loaded, stages run, product exported -------------------------

async def run_build(pipeline: Pipeline, videos: Sequence[Item], out: str | Path,
                    models: dict[str, tuple[str, dict[str, Any]]], *, concurrency: int = 4, show_progress: bool = True,
                    note: Callable[[str], None] | None = None, executor: str = "local", ray_address: str | None = None,
                    ray_args: dict[str, Any] | None = None, replace: bool = False,
                    arg_flags: dict[str, str] | None = None) -> tuple[BuildState, dict[str, Any]]:
    """Run `pipeline` over its items (`videos`) into `out`, resuming what is there; then export.
    A build of other inputs or settings than OUT records is refused unless `replace` (store.check_rebuild).
    `arg_flags`: role -> the command's flag for its model arguments (store.load_models).
    `models`: role -> (name, args) for the roles its stages call (a role the build does not name
    uses its `model_fallbacks` role's model). One build per folder at a time (`BuildInProgress`).
    `executor="ray"`: the units run on the Ray cluster at `ray_address` (else $RAY_ADDRESS, else a
    local Ray; `ray_args`: the run executor's settings, e.g. num_gpus), committed here to the same
    store with the same outputs (lvu.construct.ray_units; docs/build.md, "Scale-out")."""
    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency}: must be at least 1")
    if executor not in ("local", "ray"):
        raise LvuError(f"--executor {executor!r} is unknown — use local or ray")
    pipeline.check()
    needed = pipeline.roles()
    fallbacks = {r: f for r, f in pipeline.model_fallbacks.items() if r not in models and f in models}
    models = {**{r: models[f] for r, f in fallbacks.items()}, **models}
    if arg_flags is not None:  # a role using another role's model takes its arguments from that role's flag
        arg_flags = {**{r: arg_flags[f] for r, f in fallbacks.items() if f in arg_flags}, **arg_flags}
    missing = sorted(needed - set(models))
    if missing:
        raise LvuError(f"lvu build {pipeline.name}: the stages call a {missing[0]} model — pass --{missing[0]} MODEL")
    refuse_other_build(out, pipeline.name)
    with build_lock(out):
        check_rebuild(out, pipeline, videos, {r: models[r][0] for r in needed}, replace=replace)  # says it on stdout
        if executor == "ray":
            return await _run_build_on_ray(pipeline, videos, out, {r: models[r] for r in needed}, concurrency=concurrency,
                                          show_progress=show_progress, note=note, address=ray_address, ray_args=ray_args)
        loaded = load_models({r: models[r] for r in needed}, arg_flags)
        store = BuildStore(out)
        try:
            identities = {role: model_key(m) for role, m in loaded.items()}
            store.write_config(build_config(pipeline, loaded, videos))

            async def preflight() -> None:
                for model in {id(m): m for m in loaded.values()}.values():
                    await model.preflight()

            state = await execute(pipeline.name, pipeline.stages(), videos, store, identities=identities,
                                  models=loaded, concurrency=concurrency, show_progress=show_progress, note=note,
                                  before_work=preflight)
            if state.stopped:
                raise BuildStopped(state.stopped)
            return state, export_and_audit(pipeline, state, videos, Path(out))
        finally:
            store.close()
            for model in {id(m): m for m in loaded.values()}.values():
                await model.close()


async def _run_build_on_ray(pipeline: Pipeline, items: Sequence[Item], out: str | Path,
                           specs: dict[str, tuple[str, dict[str, Any]]], *, concurrency: int, show_progress: bool,
                           note: Callable[[str], None] | None, address: str | None,
                           ray_args: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """lvu.construct.runner.run_build's body for `executor="ray"` (called under the build lock):
    join or start Ray, start the unit actors, then the local build's steps with the units on Ray."""
    from lvu.construct.ray_units import RayUnits, ray_options
    from lvu.models import load_all
    from lvu.models.base import MODELS
    from lvu.runs.ray_executor import _connect, _import_ray

    options = ray_options(ray_args)
    ray = _import_ray()
    load_all()
    shipped = {role: (name, MODELS.get(name), dict(args)) for role, (name, args) in specs.items()}  # unknown: one line
    started_ray = _connect(ray, address, options)
    units = RayUnits(ray, options)
    store: BuildStore | None = None
    try:
        await units.start(shipped)
        store = BuildStore(out)
        config = build_config(pipeline, {}, items)
        config["models"] = units.models
        config["executor"] = units.describe()
        store.write_config(config)
        identities = {role: m["key"] for role, m in units.models.items()}
        state = await execute(pipeline.name, pipeline.stages(), items, store, identities=identities,
                              models={role: name for role, (name, _) in specs.items()}, concurrency=concurrency,
                              show_progress=show_progress, note=note, before_work=units.preflight, executor=units)
        if state.stopped:
            raise BuildStopped(state.stopped)
        return state, export_and_audit(pipeline, state, items, Path(out))
    finally:
        if store is not None:
            store.close()
        await units.close()
        if started_ray:
            ray.shutdown()


def export_and_audit(pipeline: Pipeline, state: BuildState, items: Sequence[Item], out: Path) -> dict[str, Any]:
    """`pipeline.export`, then the options-only audit of the benchmark it wrote (its `benchmark_file`):
    what export wrote, plus "leak.json" when there was a benchmark to audit."""
    written = pipeline.export(state, list(items), out)
    path = pipeline.benchmark_file(written, out) if written else None
    if written:  # a new export: an earlier leak.json describes another benchmark (or none) from here on
        (out / "leak.json").unlink(missing_ok=True)
    if path is None:
        return written
    try:
        return {**written, "leak.json": str(audit_benchmark(path, out))}
    except LvuError as e:  # the build's files are written: an unreadable benchmark file is said, not fatal
        import sys

        print(f"note: no leak audit of {path}: {e}", file=sys.stderr, flush=True)
        return written


def audit_benchmark(path: str | Path, out: str | Path, say: Callable[[str], None] | None = None) -> Path:
    """Audit the lvu JSONL benchmark at `path` for options-only leaks (lvu.scoring.leak): write
    OUT/leak.json and say one warning per leaking rule (default: on stderr — a build's own notes
    may be silenced, its leaks never are). Every build does it after its export; `lvu build
    filter` for its kept.jsonl."""
    import sys

    from lvu.benchmarks.jsonl import read_samples
    from lvu.scoring.leak import audit_rules, leak_warnings, write_leak

    samples, _ = read_samples(path)  # a build's own file: its bad lines were never written
    result = audit_rules(samples, source=Path(path).name)
    written = write_leak(result, out)
    for line in leak_warnings(result):
        (say or (lambda text: print(text, file=sys.stderr, flush=True)))(line)
    return written


def open_build(out: str | Path) -> tuple[Any, list[Item], BuildState]:
    """A build folder's pipeline, items and state, replanned from its store (no model called)."""
    config = read_config(out)
    ref = config.get("class") or {"name": config["pipeline"]}
    pipeline = load_pipeline_class(ref)(config.get("options") or {})
    videos = [Item(v["id"], v["path"], v.get("data") or {}) for v in config.get("videos", [])]
    identities = {r: m.get("key") for r, m in (config.get("models") or {}).items()}
    store = BuildStore(out, config.get("store"))
    try:
        state = asyncio.run(execute(pipeline.name, pipeline.stages(), videos, store, identities=identities))
    finally:
        store.close()
    return pipeline, videos, state


__all__ = ["BUILTIN_PIPELINES", "Video", "find_videos", "open_build", "pipeline_class", "run_build"]
