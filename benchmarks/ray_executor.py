#!/usr/bin/env python
"""The Ray executor against the local engine, side by side, on one machine (needs lvu[ray]).

1. Transport — how a group's frames should reach a model replica. One decode task prepares
   `--group` samples of one haystack video (`--frames` frames each, frame cache warm); then, inside
   a replica (a Ray actor):
     - object store (what lvu does): resolve the task's returned prompts (one object per group;
       frames the samples share are stored once; numpy arrays come back zero-copy);
     - frame cache (the alternative for workers on a shared filesystem): rebuild the same prompts
       from the on-disk frame cache with the local engine's `prepare` (a cache hit, no decoding).
   Printed: milliseconds per group for each (median of `--repeat`) and the object's size.
2. End to end — `run("haystack", "openai")` against a local OpenAI-compatible server that answers
   after `--latency` s (response cache off), locally and on Ray with 1 and 2 replicas, same
   `--concurrency` per replica; samples/s (median of `--repeat`, after one warm-up run that fills
   the frame cache) and the records compared for equality. Ray's own start-up (ray.init) is
   printed apart: it is paid once per process.

    python benchmarks/ray_executor.py [--frames 32] [--group 8] [--latency 0.3] [--concurrency 8] [--repeat 3] [--videos 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def transport(ray, hay: Path, frames: int, group: int, repeat: int) -> None:
    from lvu.benchmarks.haystack import HaystackBenchmark
    from lvu.runs.ray_workers import _decode_engine, prepare_group

    bench = HaystackBenchmark(data=str(hay), frames=frames)
    loaded = bench.load()[0]
    samples = [s for s in loaded if s.video.path == loaded[0].video.path][:group]
    settings = dict(bench.settings)

    @ray.remote(num_cpus=0.5)
    class Probe:
        def from_object_store(self, wrapped):
            start = time.perf_counter()
            prompts = ray.get(wrapped[0])
            assert all(p is not None and len(p.frames) == frames for p in prompts)
            return time.perf_counter() - start

        def from_frame_cache(self):
            engine = _decode_engine(HaystackBenchmark, settings, True, False)
            engine.frames.items.clear()  # no in-memory hits: read the disk cache like a fresh worker
            start = time.perf_counter()
            prompts = [engine.prepare(s)[0] for s in samples]
            assert all(len(p.frames) == frames for p in prompts)
            return time.perf_counter() - start

    probe = Probe.remote()
    task = ray.remote(prepare_group).options(num_cpus=1, num_returns=2)
    store_ms, cache_ms, size = [], [], 0
    for _ in range(repeat + 1):  # the first round warms the frame cache and the worker
        _, prompts_ref = task.remote(HaystackBenchmark, settings, samples, True, False)
        ray.wait([prompts_ref], fetch_local=False)
        store_ms.append(1000 * ray.get(probe.from_object_store.remote([prompts_ref])))
        cache_ms.append(1000 * ray.get(probe.from_frame_cache.remote()))
        size = sum(len(p.frames) for p in ray.get(prompts_ref))
    frame_bytes = ray.get(prompts_ref)[0].frames[0].image.nbytes
    print(f"transport, {group} samples x {frames} frames of one video ({frames} distinct frames, "
          f"{frame_bytes * frames / 1e6:.1f} MB once; {size} frame parts):")
    print(f"  object store (lvu): {statistics.median(store_ms[1:]):7.2f} ms per group")
    print(f"  frame cache:        {statistics.median(cache_ms[1:]):7.2f} ms per group")


def end_to_end(hay: Path, latency: float, concurrency: int, repeat: int) -> None:
    from lvu.models.testing_server import FakeOpenAIServer
    from lvu.api import run
    from lvu.runs.store import Store

    settings = {"data": str(hay), "frames": 8}
    with FakeOpenAIServer(answer="(A)", latency=latency, record=False) as server:
        args = {"model": "m", "base_url": server.base_url, "cache": False}
        setups = {"local engine": {}, "ray, 1 replica": {"executor": "ray", "ray_args": {"num_cpus": 0.25}},
                  "ray, 2 replicas": {"executor": "ray", "ray_args": {"num_cpus": 0.25, "num_replicas": 2}}}
        records, rates = {}, {}
        for name, kw in setups.items():
            times = []
            for _ in range(repeat + 1):
                out = Path(tempfile.mkdtemp())
                start = time.perf_counter()
                summary = run("haystack", "openai", settings=settings, model_args=args, results_dir=out,
                              concurrency=concurrency, show_progress=False, report=False, **kw)
                times.append(time.perf_counter() - start)
                records[name] = [r.model_dump(exclude={"latency"}) for r in Store(out).results(summary.run_id)]
            rates[name] = summary.n_total / statistics.median(times[1:])
    base = rates["local engine"]
    print(f"end to end, haystack {summary.n_total} samples x 8 frames, openai against a server answering after "
          f"{latency} s, concurrency {concurrency} per replica:")
    for name, rate in rates.items():
        same = "same records" if records[name] == records["local engine"] else "RECORDS DIFFER"
        print(f"  {name:<16} {rate:6.2f} samples/s  {rate / base:4.2f} x local  ({same})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--videos", type=int, default=6, help="haystack videos (10 questions each)")
    a = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ["LVU_CACHE_DIR"] = tempfile.mkdtemp()  # before ray.init: the workers inherit it
    import ray

    from lvu.benchmarks.haystack import generate

    hay = generate(Path(tempfile.mkdtemp()) / "hay", seed=0, n_videos=a.videos, scale=0.5)
    start = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="WARNING")
    print(f"ray.init (local, {os.cpu_count()} CPUs): {time.perf_counter() - start:.2f} s, paid once per process")
    try:
        transport(ray, hay, a.frames, a.group, a.repeat)
        end_to_end(hay, a.latency, a.concurrency, a.repeat)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
