"""`lvu build ... --executor ray`: a build's units on a Ray cluster (`pip install 'lvu[ray]'`).

The driver (where the build command runs) does what it does locally: it plans every stage's
units from the store, commits each outcome the moment it is back (lvu.construct.runner's own
`commit`: ledger, progress, failure counting, early stop), handles Ctrl-C and exports. Only
`run_unit` (lvu.construct.pipeline) moves to the cluster:

    driver ── (stage, unit, item) ──▶ stage without a model: a Ray task (CPU, `decode_cpus`):
                                        run_unit(stage, unit, item, {})  — decode, selection, signals
                                    ▶ stage that calls models: a unit actor (async actor, `num_gpus`
                                        each) that built the build's models once from their
                                        (name, args) and runs run_unit with them, recording
           ◀── Outcome (result, error, the calls: exact prompts, raw replies, tokens, seconds)

What travels: the stage object (put in the object store once per stage; stages are plain classes
holding their options, pickled by reference to their module), the unit and the item (dataclasses),
each model's (name, class, args) once per actor (the class only so that its module is imported:
the actor builds by name, as `load_models` does), and the Outcome back. A live client or loaded
weights never travel; the driver never builds a model (the actors report each role's identity).

The keys, records and exported files are the local executor's, so a build started locally can be
finished on Ray and the other way round. A unit whose task or actor dies is recorded as failed
(asked again on the next run); when every actor is gone the build stops (committed work is kept).
Settings are the run executor's (`--ray-arg`, lvu.runs.ray_executor.RayOptions; group_size does
not apply). The worker-side classes import nothing from Ray: the driver wraps them with
`ray.remote`. See docs/build.md, "Scale-out".
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lvu.construct.pipeline import Item, Outcome, RecordingModel, Stage, Unit, run_unit
from lvu.errors import LvuError
from lvu.models.base import Model

if TYPE_CHECKING:
    from lvu.runs.ray_executor import RayOptions

Planned = tuple[Unit, str, int]
"""What the runner schedules: (unit, its key, its ordinal)."""
NOT_HERE = ("group_size",)
"""Run-executor settings that mean nothing to a build."""


# ---- on the workers ------------------------------------------------------------------------------


def run_task(stage: Stage, unit: Unit, item: Item) -> Outcome:
    """A unit of a stage that calls no model, as a Ray task."""
    return asyncio.run(run_unit(stage, unit, item, {}))


def build_models(specs: dict[str, tuple[str, type[Model], dict[str, Any]]]) -> dict[str, Model]:
    """role -> model, built by name as lvu.construct.runner.load_models builds them on the driver
    (roles naming the same model share one instance). The shipped class stands in only for a
    name this process cannot resolve (a class defined in a script)."""
    from lvu.models import load_all
    from lvu.models.base import MODELS

    load_all()
    made: dict[str, Model] = {}
    out = {}
    for role, (name, cls, args) in specs.items():
        key = json.dumps([name, args], sort_keys=True, default=str)
        if key not in made:
            try:
                resolved = MODELS.get(name)
            except LvuError:
                resolved = cls
            made[key] = resolved(**dict(args))
        out[role] = made[key]
    return out


class UnitActor:
    """A unit actor (run as a Ray async actor): builds the build's models once, on its own node,
    then runs the units of model stages the driver sends, as many at once as it sends."""

    def __init__(self, specs: dict[str, tuple[str, type[Model], dict[str, Any]]]) -> None:
        self.models: dict[str, Model] = {}
        self.error: str | None = None
        try:
            self.models = build_models(specs)
        except LvuError as e:  # reported by `info`, so the driver can say it in one line
            self.error = str(e)
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}".splitlines()[0]
        self.recording = {role: RecordingModel(m) for role, m in self.models.items()}

    def info(self) -> tuple[dict[str, dict[str, Any]], str | None]:
        """(role -> {"key": the model's key, "identity": its identity}, the error that kept it from building)."""
        from lvu.construct.store import model_key

        return {r: {"key": model_key(m), "identity": m.identity} for r, m in self.models.items()}, self.error

    async def preflight(self) -> str | None:
        """Each model's reachability check from this actor's node: None, or the one-line error."""
        try:
            for model in {id(m): m for m in self.models.values()}.values():
                await model.preflight()
        except LvuError as e:
            return str(e)
        return None

    async def run(self, stage: Stage, unit: Unit, item: Item) -> Outcome:
        return await run_unit(stage, unit, item, self.recording)

    async def close(self) -> None:
        for model in {id(m): m for m in self.models.values()}.values():
            await model.close()


# ---- on the driver -------------------------------------------------------------------------------


@dataclass
class _Actor:
    index: int
    handle: Any
    alive: bool = True

    def is_open(self) -> bool:
        """Whether this actor's slots still take units (StageRunner's slot_open)."""
        return self.alive


@dataclass
class RayUnits:
    """The driver's side: the connection's Ray module, its settings and the unit actors.
    `lvu.construct.runner._run_stage` hands it each stage's units (`run_stage`)."""

    ray: Any
    options: RayOptions
    actors: list[_Actor] = field(default_factory=list)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """role -> {"key", "identity"} as the first actor built them."""

    async def start(self, specs: dict[str, tuple[str, type[Model], dict[str, Any]]]) -> None:
        """Place every unit actor and wait until each has built its models (none without models)."""
        from lvu.runs.ray_executor import _describe, num_replicas

        if not specs:
            return
        opts = self.options
        actor_cls = self.ray.remote(UnitActor).options(num_cpus=opts.num_cpus, num_gpus=opts.num_gpus,
                                                      max_restarts=opts.max_restarts, max_task_retries=0)
        n = num_replicas(self.ray, opts)
        self.actors = [_Actor(i, actor_cls.remote(specs)) for i in range(n)]
        try:
            infos = await asyncio.wait_for(asyncio.gather(*(a.handle.info.remote() for a in self.actors)),
                                           opts.start_timeout)
        except asyncio.TimeoutError:
            have = self.ray.cluster_resources()
            raise LvuError(
                f"the Ray cluster did not start {n} unit actor(s) (num_cpus={opts.num_cpus:g}, num_gpus="
                f"{opts.num_gpus:g} each) within {opts.start_timeout:g} s; it has {have.get('CPU', 0):g} CPUs and "
                f"{have.get('GPU', 0):g} GPUs — lower num_replicas/num_cpus/num_gpus, or raise start_timeout") from None
        except self.ray.exceptions.RayError as e:
            raise LvuError(f"a unit actor could not start: {_describe(e)}") from None
        for _, error in infos:
            if error is not None:
                raise LvuError(error)
        self.models = infos[0][0]

    async def preflight(self) -> None:
        """Every actor checks its models are reachable from its node (a one-line LvuError)."""
        from lvu.runs.ray_executor import _describe

        try:
            errors = await asyncio.gather(*(a.handle.preflight.remote() for a in self.actors))
        except self.ray.exceptions.RayError as e:
            raise LvuError(f"a unit actor failed its reachability check: {_describe(e)}") from None
        if error := next((e for e in errors if e is not None), None):
            raise LvuError(error)

    def describe(self) -> dict[str, Any]:
        """Stored in build.json: how the last invocation ran."""
        opts = self.options
        return {"name": "ray", "ray": self.ray.__version__, "actors": len(self.actors), "num_gpus": opts.num_gpus,
                "num_cpus": opts.num_cpus, "decode_cpus": opts.decode_cpus}

    async def run_stage(self, stage: Stage, todo: list[Planned], items: dict[str, Item],
                        commit: Callable[[Planned, Outcome], BaseException | None], *, concurrency: int,
                        stop: asyncio.Event, note: Callable[[str], None]) -> None:
        """Run `todo`'s units on the cluster with the local stage runner: its consumer slots await
        Ray object refs (per unit actor `concurrency` slots, capped by the stage's max_concurrency,
        for model stages; CPU tasks in flight otherwise) and `commit` each outcome here."""
        from lvu.construct.store import BuildStopped
        from lvu.runs.ray_executor import decode_tasks
        from lvu.runs.stage_runner import StageRunner

        stage_ref = self.ray.put(stage)  # one copy in the object store; each call resolves the reference
        committed = 0

        def counted(item: Planned, outcome: Outcome) -> BaseException | None:
            nonlocal committed
            committed += 1
            return commit(item, outcome)

        consumers: list[Callable[[Planned], Awaitable[Outcome]]]
        if stage.uses_models():
            live = [a for a in self.actors if a.alive]
            if not live:
                raise BuildStopped(f"{stage.name}: every unit actor is gone — run the same command again to resume")
            per = max(1, min(concurrency, stage.max_concurrency or concurrency))
            slots = [a for a in live for _ in range(per)]
            consumers = [self._on_actor(a, stage_ref, items) for a in slots]
            slot_open: list[Callable[[], bool]] = [a.is_open for a in slots]
        else:
            alive = sum(a.alive for a in self.actors)
            n = decode_tasks(self.ray, self.options, alive, what=f"the {stage.name} tasks")
            task = self.ray.remote(run_task).options(num_cpus=self.options.decode_cpus, max_retries=1)
            consumers = [self._on_task(task, stage_ref, items)] * n
            slot_open = [lambda: True] * n
        runner: StageRunner[Planned, Planned, Outcome] = StageRunner(
            consumers=consumers, slot_open=slot_open, commit=counted, stop=stop, note=note, what=stage.unit,
            where=f"in {stage.name} on Ray")
        await runner.run([p] for p in todo)
        if committed < len(todo) and not stop.is_set():
            raise BuildStopped(f"{stage.name}: all {len(self.actors)} unit actor(s) died; {len(todo) - committed} "
                               f"{stage.unit}(s) not run — the units done so far are stored; run the same command "
                               "again to resume")

    def _on_task(self, task: Any, stage_ref: Any, items: dict[str, Item]) -> Callable[[Planned], Awaitable[Outcome]]:
        from lvu.runs.ray_executor import _describe

        async def consume(planned: Planned) -> Outcome:
            unit, started = planned[0], time.time()
            try:
                return await task.remote(stage_ref, unit, items[unit.video])
            except self.ray.exceptions.RayError as e:  # the task's process died (Ray retried it once)
                return Outcome(error=f"task failed — {_describe(e)}", started=started)
        return consume

    def _on_actor(self, actor: _Actor, stage_ref: Any,
                  items: dict[str, Item]) -> Callable[[Planned], Awaitable[Outcome]]:
        from lvu.runs.ray_executor import _describe

        async def consume(planned: Planned) -> Outcome:
            unit, started = planned[0], time.time()
            try:
                return await actor.handle.run.remote(stage_ref, unit, items[unit.video])
            except self.ray.exceptions.RayActorError as e:
                actor.alive = actor.alive and await self._still_alive(actor)
                return Outcome(error=f"unit actor {actor.index} died while running it ({_describe(e)}) — "
                                     "asked again on the next run", started=started)
            except self.ray.exceptions.RayError as e:
                return Outcome(error=_describe(e), started=started)
        return consume

    async def _still_alive(self, actor: _Actor) -> bool:
        from lvu.runs.ray_executor import back_after_restart

        return await back_after_restart(self.ray, actor.handle)

    async def close(self) -> None:
        from lvu.runs.ray_executor import stop_actors

        await stop_actors(self.ray, [a.handle for a in self.actors if a.alive], [a.handle for a in self.actors])
        self.actors = []


def ray_options(ray_args: dict[str, Any] | None) -> RayOptions:
    """The run executor's settings from `--ray-arg` pairs, less those a build does not use."""
    from lvu.runs.ray_executor import RayOptions

    for key in NOT_HERE:
        if key in (ray_args or {}):
            raise LvuError(f"--ray-arg {key}: not used by lvu build (a unit is the build's own grouping) — drop it")
    return RayOptions.parse(ray_args)
