"""What `--executor ray` runs on the cluster's workers (lvu.runs.ray_executor is the driver).

- `prepare_group`, a decode task (Ray CPU task): the local engine's decode stage for a few samples
  of one video; returns their records so far and their prompts (one object, so frames the samples
  share are stored and shipped once).
- `ModelReplica`, a model replica (Ray async actor): builds the model from its class + arguments
  on its own node (a live client is never pickled) and answers prompts by reference.

Both import nothing from Ray: the driver wraps them with `ray.remote`, so this module loads anywhere.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any, cast

from lvu.benchmarks.base import Benchmark
from lvu.errors import LvuError
from lvu.media.cache import FrameCache
from lvu.models.base import Model
from lvu.runs.engine import Engine
from lvu.runs.pipeline import model_batch_size
from lvu.runs.store import Store
from lvu.runs.tracebacks import traceback_text
from lvu.types import Prompt, Response, Sample, SampleResult

_decode_engines: dict[tuple[Any, ...], Engine] = {}
"""Per worker process: one Engine per benchmark setup, so its in-memory frame/cue caches are reused
by the next group of the same video that lands on this worker."""


def _decode_engine(bench_cls: type[Benchmark], settings: dict[str, Any], frame_cache: bool, asr: bool) -> Engine:
    key = (bench_cls, json.dumps(settings, sort_keys=True, default=str), frame_cache, asr)
    if key not in _decode_engines:
        if len(_decode_engines) >= 4:  # workers outlive runs: keep only a few setups' caches
            for old in _decode_engines.values():
                old.pool.shutdown(wait=False)
            _decode_engines.clear()
        bench = bench_cls(**settings)  # rebuilt from its settings, like the model: nothing live is pickled
        # Only its decode stage (`prepare_sample`) runs here: no model, no store.
        _decode_engines[key] = Engine(bench, cast(Model, None), cast(Store, None), decode_workers=1,
                                      frame_cache=FrameCache() if frame_cache else None, asr=asr)
    return _decode_engines[key]


def prepare_group(bench_cls: type[Benchmark], settings: dict[str, Any], samples: list[Sample], frame_cache: bool,
                  asr: bool) -> tuple[list[SampleResult], list[Prompt | None]]:
    """A decode task: each sample's record so far (prompt summary and frame times, or its error)
    and its prompt (None when it failed), made by the local engine's own decode stage."""
    engine = _decode_engine(bench_cls, settings, frame_cache, asr)

    async def prepare_all() -> list[Any]:
        return [await engine.prepare_sample(sample) for sample in samples]  # one at a time: one CPU

    prepared = asyncio.run(prepare_all())
    return [p.result for p in prepared], [p.prompt for p in prepared]


class ModelReplica:
    """A model replica (run as a Ray async actor): builds the model from its class and arguments on
    its own node, then answers the prompts the driver sends, as many at once as it sends (the
    driver keeps `concurrency` in flight per replica). `fresh`: the model reads no response cache."""

    def __init__(self, model_cls: type[Model], model_args: dict[str, Any], keep_groups: int,
                 fresh: bool = False) -> None:
        self.model: Model | None = None
        self.error: str | None = None
        try:
            self.model = model_cls(**model_args)
            if fresh:
                self.model.bypass_cache()
        except LvuError as e:  # reported by `info`, so the driver can say it in one line
            self.error = str(e)
        except Exception as e:
            self.error = f"{model_cls.name}: {type(e).__name__}: {e}"
        self.keep_groups = keep_groups
        self.groups: OrderedDict[str, asyncio.Future] = OrderedDict()

    def info(self) -> tuple[dict[str, Any] | None, int, str | None]:
        """(the model's identity, its batch size, the error that kept it from being built)."""
        if self.model is None:
            return None, 1, self.error
        return self.model.identity, model_batch_size(self.model), None

    async def preflight(self) -> str | None:
        """`Model.preflight` from this replica's node (what it reaches is what counts): None, or
        the one-line error."""
        assert self.model is not None, self.error
        try:
            await self.model.preflight()
        except LvuError as e:
            return str(e)
        return None

    async def answer(self, group: list[Any], index: int,
                     sample_id: str) -> tuple[Response | None, str | None, str | None]:
        """Answer prompt `index` of the decode task output `group[0]` (an ObjectRef, wrapped in a
        list so Ray hands it over unresolved): (response, None, None), or (None, the error line and
        the traceback the local engine would record for an exception)."""
        assert self.model is not None, self.error
        prompt = (await self._resolve(group[0]))[index]
        assert prompt is not None, "the driver sends only samples whose prompt was built"
        try:
            return await self.model.generate(prompt, sample_id=sample_id), None, None
        except LvuError as e:
            return None, str(e), None
        except Exception as e:  # formatted here: the frames are this replica's
            return None, f"{sample_id}: {type(e).__name__}: {e}", traceback_text(e)

    async def _resolve(self, ref: Any) -> list[Prompt | None]:
        """A group's prompts, fetched once while its samples are being answered here (one shared
        future, so concurrent callers get the very same frame arrays)."""
        key = ref.hex()
        future = self.groups.get(key)
        if future is None:
            future = self.groups[key] = asyncio.ensure_future(_await(ref))
            while len(self.groups) > self.keep_groups:
                self.groups.popitem(last=False)
        else:
            self.groups.move_to_end(key)
        try:
            return await future
        except BaseException:
            self.groups.pop(key, None)
            raise

    async def close(self) -> None:
        if self.model is not None:
            await self.model.close()


async def _await(ref: Any) -> Any:
    return await ref
