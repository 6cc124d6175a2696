"""`--executor ray`: the run pipeline on a Ray cluster (`pip install 'lvu[ray]'`).

The stages are the local engine's, spread over the cluster:

    driver ── samples of one video, in groups ──▶ decode tasks (Ray CPU tasks: `Engine.prepare`
                                                  per sample: plan, frames, cues, prompt)
       ▲                                               │ prompts stay in the object store; the
       │ one small Response per sample                 ▼ driver only passes their reference on
    driver: extract, score, commit  ◀──────── model replicas (async actors, `num_gpus` each): build
                                              the model from its class + args, answer prompts

Frames travel from the decode task's node to the replica's node through Ray's object store and
never through the driver (it receives the prompt summaries and frame times it stores). A decode
task returns its group's prompts as one object, so frames the group's samples share are stored
and shipped once, and a replica resolves that object once for all its samples (backends that
encode each distinct frame array once, like `openai`, keep doing so). Decode tasks also read and
write the node's on-disk frame cache, so a repeated run decodes nothing.

Spec, run id, store, resume, status and `RunSummary` are the run lifecycle's (lvu.runs.lifecycle,
shared with the local engine: this module supplies only the inner pipeline), so both executors
store identical records and resume each other's runs. A sample
whose decoding or model call fails is recorded and the run goes on. A replica whose process dies
is rebuilt by Ray (`max_restarts` times); the samples it was answering are recorded as failed —
not retried, since a sample that kills a replica would kill the next one too — and a resume
retries them. When every replica is gone the run stops with an error; what is stored stays.
The driver's loop is the stage runner (lvu.runs.stage_runner): Ctrl-C, early stop on a dead
endpoint and one commit per sample are the runner's and CommitSample's.
This module is the driver; what runs on the workers is in lvu.runs.ray_workers. See docs/ray.md.
"""

from __future__ import annotations

import asyncio
import os
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, fields
from typing import Any, cast

from lvu.benchmarks.base import Benchmark
from lvu.errors import LvuError
from lvu.models.base import Model
from lvu.runs.engine import environment, grade, model_parts, resolve_spec
from lvu.runs.identity import sample_digest
from lvu.runs.judging import judge_sample
from lvu.runs.lifecycle import RunSummary, execute
from lvu.runs.options import RunOptions
from lvu.runs.pipeline import CommitSample, Prepared
from lvu.progress import PipelineProgress
from lvu.runs.ray_workers import ModelReplica, prepare_group
from lvu.runs.stage_runner import StageRunner
from lvu.runs.store import Store
from lvu.runs.tracebacks import traceback_text
from lvu.scoring.judges import Judge
from lvu.types import Sample, SampleResult

INSTALL = "pip install 'lvu[ray]'"


@dataclass
class RayOptions:
    """The Ray executor's settings (`--ray-arg KEY=VALUE`, or `ray_args={...}` in `run`)."""

    num_replicas: int | None = None
    """Model replicas (actors). Default: one per `num_gpus` GPUs of the cluster when num_gpus > 0, else 1."""
    num_gpus: float = 0.0
    """GPUs each replica reserves (Ray sets its CUDA_VISIBLE_DEVICES); 0 for API and CPU models."""
    num_cpus: float = 1.0
    """CPUs each replica reserves."""
    decode_cpus: float = 1.0
    """CPUs each decode task reserves."""
    decode_tasks: int | None = None
    """Decode tasks in flight at once. Default: the CPUs the replicas leave free, over decode_cpus."""
    group_size: int = 8
    """Samples of one video that one decode task prepares (their shared frames are decoded and shipped once)."""
    max_restarts: int = 1
    """How often Ray rebuilds a replica whose process died."""
    start_timeout: float = 600.0
    """Seconds to wait for the cluster to place and build every replica."""
    runtime_env: dict[str, Any] | None = None
    """Ray runtime_env for the job (env_vars, pip, working_dir...), passed to ray.init."""

    @classmethod
    def parse(cls, args: dict[str, Any] | None) -> RayOptions:
        """Options from `--ray-arg` pairs; a wrong key or value is a one-line LvuError."""
        known = [f.name for f in fields(cls)]
        options = cls()
        for key, value in (args or {}).items():
            if key not in known:
                raise LvuError(f"--ray-arg {key}: unknown — known: {', '.join(known)}")
            setattr(options, key, _option_value(key, value))
        return options


_INTEGERS = {"num_replicas": 1, "decode_tasks": 1, "group_size": 1, "max_restarts": 0}
"""Integer options and their least value; the other numbers are floats >= 0."""


def _option_value(key: str, value: Any) -> Any:
    if key == "runtime_env":
        if value is not None and not isinstance(value, dict):
            raise LvuError('--ray-arg runtime_env must be a JSON object, e.g. runtime_env=\'{"env_vars": {"A": "1"}}\'')
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise LvuError(f"--ray-arg {key}={value!r}: not a number") from None
    if key in _INTEGERS:
        if number != int(number) or number < _INTEGERS[key]:
            raise LvuError(f"--ray-arg {key}={value!r}: needs a whole number >= {_INTEGERS[key]}")
        return int(number)
    if number < 0 or (key == "start_timeout" and number == 0):
        raise LvuError(f"--ray-arg {key}={value!r}: needs a positive number")
    return number


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise LvuError(f"--executor ray needs Ray: {INSTALL}") from None
    return ray


def _describe(error: BaseException) -> str:
    """One line for a Ray error: the remote exception when there is one, else the first line."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException) and cause is not error:
        error = cause
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def num_replicas(ray: Any, options: RayOptions) -> int:
    """Model replicas to start: `num_replicas`, else one per `num_gpus` GPUs of the cluster (1 when
    num_gpus is 0). Also used by `lvu build --executor ray` (lvu.construct.ray_units)."""
    if options.num_replicas is not None:
        return options.num_replicas
    if options.num_gpus <= 0:
        return 1
    gpus = ray.cluster_resources().get("GPU", 0)
    if gpus < options.num_gpus:
        raise LvuError(f"--ray-arg num_gpus={options.num_gpus:g}: the Ray cluster has {gpus:g} GPU(s) — "
                       "set num_gpus=0 for API/CPU models, or num_replicas=N to wait for an autoscaler")
    return int(gpus // options.num_gpus)


def decode_tasks(ray: Any, options: RayOptions, replicas: int, what: str = "decoding") -> int:
    """CPU tasks in flight at once: `decode_tasks`, else the CPUs the replicas leave free over
    `decode_cpus` (at most 64); a one-line LvuError when they leave none."""
    if options.decode_tasks is not None:
        return options.decode_tasks
    cpus = ray.cluster_resources().get("CPU", 0)
    free = cpus - replicas * options.num_cpus
    if options.decode_cpus > 0 and free < options.decode_cpus:
        raise LvuError(f"the Ray cluster's {cpus:g} CPUs leave none for {what} after {replicas} "
                       f"replica(s) × num_cpus={options.num_cpus:g} — lower num_cpus (e.g. --ray-arg num_cpus=0.5) "
                       "or set decode_tasks=N")
    return max(1, min(64, int(free // options.decode_cpus) if options.decode_cpus > 0 else 4))


# ---- on the driver -------------------------------------------------------------------------------


@dataclass
class _Replica:
    """The driver's handle on one replica."""

    index: int
    actor: Any
    alive: bool = True


@dataclass
class _Item(Prepared):
    """A prepared sample on its way to a replica: `prompt` is the reference to its group's prompts
    in the object store (None when its decode task failed), `index` its place among them."""

    index: int = 0


def _decode_failed(sample: Sample, why: str) -> SampleResult:
    """The record of a sample whose decode task died, as Engine.prepare_sample records a failure."""
    return SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer,
                        n_options=len(sample.options) or None, question=sample.question, options=sample.options,
                        sample_digest=sample_digest(sample), error=f"{sample.id}: decode task failed — {why}")


@dataclass
class RayExecutor:
    """The run's inner pipeline on a Ray cluster (lvu.runs.lifecycle drives it); `concurrency` is
    per replica."""

    ray: Any
    bench: Benchmark
    model_cls: type[Model]
    model_args: dict[str, Any]
    store: Store
    options: RayOptions
    concurrency: int = 4
    frame_cache: bool = True
    asr: bool = False
    judge: Judge | None = None
    """Judges on the driver, right after grading (runs/judging.py)."""
    llm_extract: bool = False
    address: str | None = None
    """The cluster to join (`connect`); None: $RAY_ADDRESS, else a local Ray."""
    replicas: list[_Replica] = field(default_factory=list)
    progress: PipelineProgress = field(default_factory=lambda: PipelineProgress(0, enabled=False))
    identity: dict[str, Any] = field(default_factory=dict)
    """The replicas' model identity (set by `start`)."""
    batch: int = 1
    started_ray: bool = False

    def connect(self) -> None:
        self.started_ray = _connect(self.ray, self.address, self.options)

    def disconnect(self) -> None:
        if self.started_ray:
            self.ray.shutdown()

    async def start(self, fresh: bool) -> None:
        self.identity, self.batch = await self._start_replicas(fresh)

    async def ready(self, fresh: bool, has_work: bool) -> None:
        if has_work:  # `fresh` went to the replicas as they started
            await self._preflight_replicas()

    def environment(self) -> dict[str, Any]:
        """What produced the answers is the replicas' model: its identity stands in for the model."""
        return environment(cast(Model, types.SimpleNamespace(identity=self.identity)))

    def described(self) -> dict[str, Any]:
        return {"executor": self._describe_cluster()}

    def _per_replica(self) -> int:
        """Samples in flight per replica; a batching model gets one batch ahead."""
        return max(1, self.concurrency, 2 * self.batch if self.batch > 1 else 1)

    def slots(self) -> tuple[dict[str, int], str]:
        return ({"decode": self._decode_tasks() * self.options.group_size,
                 "model": self._per_replica() * len(self.replicas)}, f", ray: {len(self.replicas)} replica(s)")

    async def close(self, status: str) -> None:
        await self._stop_replicas()

    # ---- replicas ---------------------------------------------------------------------------------

    def _num_replicas(self) -> int:
        return num_replicas(self.ray, self.options)

    async def _start_replicas(self, fresh: bool = False) -> tuple[dict[str, Any], int]:
        """Place and build every replica (`fresh`: their models read no response cache); the first
        one's model identity and batch size."""
        opts = self.options
        actor_cls = self.ray.remote(ModelReplica).options(
            num_cpus=opts.num_cpus, num_gpus=opts.num_gpus, max_restarts=opts.max_restarts, max_task_retries=0)
        n = self._num_replicas()
        keep = 2 * max(1, self.concurrency) + 2  # groups a replica keeps resolved: about those in flight
        self.replicas = [_Replica(i, actor_cls.remote(self.model_cls, self.model_args, keep, fresh)) for i in range(n)]
        calls = [r.actor.info.remote() for r in self.replicas]
        try:
            infos = await asyncio.wait_for(asyncio.gather(*calls), opts.start_timeout)
        except asyncio.TimeoutError:
            have = self.ray.cluster_resources()
            raise LvuError(
                f"the Ray cluster did not start {n} replica(s) (num_cpus={opts.num_cpus:g}, num_gpus={opts.num_gpus:g} "
                f"each) within {opts.start_timeout:g} s; it has {have.get('CPU', 0):g} CPUs and {have.get('GPU', 0):g} "
                "GPUs — lower num_replicas/num_cpus/num_gpus, or raise start_timeout") from None
        except self.ray.exceptions.RayError as e:
            raise LvuError(f"a model replica could not start: {_describe(e)}") from None
        for _, _, error in infos:
            if error is not None:
                raise LvuError(error)
        return infos[0][0], infos[0][1]

    async def _preflight_replicas(self) -> None:
        """Each replica checks that its model is reachable from its node (a one-line LvuError)."""
        try:
            errors = await asyncio.gather(*(r.actor.preflight.remote() for r in self.replicas))
        except self.ray.exceptions.RayError as e:
            raise LvuError(f"a model replica failed its reachability check: {_describe(e)}") from None
        if error := next((e for e in errors if e is not None), None):
            raise LvuError(error)

    async def _still_alive(self, replica: _Replica) -> bool:
        return await back_after_restart(self.ray, replica.actor)

    async def _stop_replicas(self) -> None:
        await stop_actors(self.ray, [r.actor for r in self.replicas if r.alive], [r.actor for r in self.replicas])
        self.replicas = []

    def _decode_tasks(self) -> int:
        return decode_tasks(self.ray, self.options, len(self.replicas))

    def _describe_cluster(self) -> dict[str, Any]:
        """Stored with the run's environment: how it was executed."""
        opts = self.options
        return {"name": "ray", "ray": self.ray.__version__, "replicas": len(self.replicas),
                "num_gpus": opts.num_gpus, "num_cpus": opts.num_cpus}

    # ---- the pipeline -----------------------------------------------------------------------------

    async def pipeline(self, run_id: str, todo: list[Sample], ordinals: dict[str, int],
                       errors: list[tuple[str, str]], stop: asyncio.Event) -> None:
        """The local pipeline's stages on the stage runner (lvu.runs.stage_runner): `decode_tasks`
        producers submit one decode task per group (the runner's bounded queue holds references, so
        at most a few groups' prompts wait in the object store); each replica has `per_replica`
        slots that send it samples; each answer is committed the moment it is back. The slots of a
        replica that died for good close, handing their samples to the others."""
        size, progress, per_replica, decode_tasks = (self.options.group_size, self.progress, self._per_replica(),
                                                     self._decode_tasks())
        groups: list[list[Sample]] = []
        for sample in todo:
            if groups and groups[-1][0].video.path == sample.video.path and len(groups[-1]) < size:
                groups[-1].append(sample)
            else:
                groups.append([sample])
        prepare = self.ray.remote(prepare_group).options(num_cpus=self.options.decode_cpus, num_returns=2,
                                                         max_retries=1)
        bench_cls, settings = type(self.bench), dict(self.bench.settings)

        async def decode(group: list[Sample]) -> AsyncIterator[_Item]:
            started = time.perf_counter()
            with ExitStack() as stack:
                stages = [stack.enter_context(progress.stage("decode")) for _ in group]
                results_ref, prompts_ref = prepare.remote(bench_cls, settings, group, self.frame_cache, self.asr)
                try:
                    results: list[SampleResult] = await results_ref
                except self.ray.exceptions.RayError as e:  # the task itself died (e.g. a decoder crash)
                    results = [_decode_failed(s, _describe(e)) for s in group]
                for stage, result in zip(stages, results, strict=True):
                    stage.failed = result.error is not None
            for i, (sample, result) in enumerate(zip(group, results, strict=True)):
                yield _Item(sample, result, prompts_ref if result.error is None else None, started, index=i)

        def slot(replica: _Replica) -> Callable[[_Item], Awaitable[SampleResult]]:
            async def answer(item: _Item) -> SampleResult:
                if item.prompt is None:
                    progress.skip("model")  # failed before the model: not a model call
                return await self._answer(replica, item, progress)
            return answer

        def is_open(replica: _Replica) -> Callable[[], bool]:
            return lambda: replica.alive

        slots = [r for r in self.replicas for _ in range(per_replica)]
        commit = CommitSample(self.store, run_id, ordinals, errors, progress, len(todo))
        await StageRunner(consumers=[slot(r) for r in slots], slot_open=[is_open(r) for r in slots],
                          commit=commit, produce=decode, producers=decode_tasks, stop=stop, note=progress.note,
                          what="sample", where="on the replicas").run(groups)
        if commit.n_stored < len(todo) and not stop.is_set():
            alive = sum(r.alive for r in self.replicas)
            raise LvuError((f"all {len(self.replicas)} model replicas died" if not alive else
                            f"{len(todo) - commit.n_stored} sample(s) were left unanswered after model replicas "
                            "died") + " — the samples done so far are stored; run the same command again to resume")

    async def _answer(self, replica: _Replica, item: _Item, progress: PipelineProgress) -> SampleResult:
        """The answer stage (lvu.runs.engine.Engine.answer_sample's), with the model call sent to `replica`."""
        result, sample = item.result, item.sample
        if item.prompt is not None:
            try:
                with progress.stage("model") as called:
                    response, error, trace = await replica.actor.answer.remote([item.prompt], item.index, sample.id)
                    called.failed = error is not None or bool(response and response.error)
                if error is not None:
                    result.error, result.traceback = error, trace
                else:
                    assert response is not None
                    item.unreachable = response.unreachable
                    result.response, result.latency = response.text, response.latency
                    if response.error:
                        raise LvuError(f"model error: {response.error}")
                    grade(self.bench, sample, response, result)
                    if self.judge is not None:
                        await judge_sample(self.bench, sample, result, self.judge, llm_extract=self.llm_extract)
            except LvuError as e:
                result.error = str(e)
            except self.ray.exceptions.RayActorError as e:
                result.error = (f"{sample.id}: model replica {replica.index} died while answering "
                                f"({_describe(e)}) — retried on resume")
                replica.alive = replica.alive and await self._still_alive(replica)
            except self.ray.exceptions.RayError as e:  # a remote exception: its text holds the remote traceback
                result.error, result.traceback = f"{sample.id}: {_describe(e)}", traceback_text(e)
            except Exception as e:  # one bad sample never kills a run
                result.error, result.traceback = f"{sample.id}: {type(e).__name__}: {e}", traceback_text(e)
        if not result.latency:
            result.latency = time.perf_counter() - item.started
        return result


# ---- entry point -------------------------------------------------------------------------------------


def _connect(ray: Any, address: str | None, options: RayOptions) -> bool:
    """Join the cluster at `address` (or $RAY_ADDRESS), else start a local Ray; True when this
    call started (and so must stop) it. An already initialised Ray is used as it is."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"logging_level": "WARNING"}
    if options.runtime_env:
        kwargs["runtime_env"] = options.runtime_env
    if address is None and not os.environ.get("RAY_ADDRESS"):  # a fresh local instance
        kwargs["include_dashboard"] = False
    try:
        ray.init(address=address, **kwargs)
    except Exception as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise LvuError(f"cannot start or join {where}: {_describe(e)} — check --ray-address "
                       "(ray://HOST:10001, HOST:6379 or auto)") from None
    return True


def run_on_ray(benchmark: str | Benchmark, model: str | Model, *, settings: dict[str, Any] | None = None,
               model_args: dict[str, Any] | None = None, options: RunOptions | None = None) -> RunSummary:
    """`lvu.api.run(..., executor="ray")`: the same run on a Ray cluster (lvu.api then writes the
    report). The model is built on the replicas only (never on the driver: a Model object given
    travels as its class and arguments); `concurrency` is samples in flight per replica; a judge
    runs on the driver."""
    options = options or RunOptions(executor="ray")
    ray_options = RayOptions.parse(options.ray_args)
    ray = _import_ray()
    spec, bench, model_cls = resolve_spec(benchmark, model, settings=settings, model_args=model_args, asr=options.asr)
    _, _, args = model_parts(model, model_args)

    def executor(store: Store, judge: Judge | None) -> RayExecutor:
        return RayExecutor(ray, bench, model_cls, args, store, ray_options, concurrency=options.concurrency,
                           frame_cache=options.frame_cache, asr=options.asr, judge=judge,
                           llm_extract=options.llm_extract, address=options.ray_address)

    return execute(spec, bench, options, executor)


async def back_after_restart(ray: Any, actor: Any) -> bool:
    """After a call failed because an actor's process died: is it back (restarted by Ray)? Its
    `info()` answers with its error last (None: ready). A restart that stays "unavailable" for a
    minute counts as dead."""
    for _ in range(120):
        try:
            return (await actor.info.remote())[-1] is None
        except ray.exceptions.ActorUnavailableError:
            await asyncio.sleep(0.5)
        except ray.exceptions.RayError:
            return False
    return False


async def stop_actors(ray: Any, live: list[Any], every: list[Any]) -> None:
    """Let the `live` actors close their backends' clients (30 s at most), then kill `every` one,
    freeing the cluster's resources either way."""
    if live:
        try:
            await asyncio.wait_for(asyncio.gather(*(a.close.remote() for a in live), return_exceptions=True), 30)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            pass
    for actor in every:
        ray.kill(actor)
