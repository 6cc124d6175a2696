#!/usr/bin/env python
"""`lvu build --executor ray` against the local executor, side by side, on one machine (needs lvu[ray]).

1. Toy pipeline (tests/build_toy.py): `--videos` videos, `toy-llm` answering after `--latency` s,
   `--concurrency` units in flight (per unit actor on Ray); the local executor, then Ray with 1 and
   2 unit actors (num_cpus=0.5 each), in one process on one local Ray (ray.init timed apart: it is
   paid once per process). Wall time per build (median of `--repeat`), exported files compared.
2. Neptune's README example (4 generated videos, --captioner ocr, the scripted stand-in LLM):
   `lvu build neptune` as a fresh process, locally and with `--executor ray` (which starts its
   own local Ray), each with an empty LVU_CACHE_DIR (cold: probes, OCR, Whisper transcripts);
   wall time of the command, benchmark.jsonl compared.

    python benchmarks/build_ray.py [--videos 8] [--latency 0.2] [--concurrency 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def toy(root: Path, n_videos: int, latency: float, concurrency: int, repeat: int) -> None:
    import ray

    sys.path.insert(0, str(TESTS))
    import build_toy
    from lvu.construct.runner import find_videos, run_build

    videos = root / "toy-videos"
    videos.mkdir()
    for i in range(n_videos):
        (videos / f"v{i:02d}.mp4").write_bytes(os.urandom(100 + i))
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}})
    print(f"ray.init: {time.perf_counter() - t0:.2f} s")
    runs = {"local": {}, "ray, 1 actor": {"num_replicas": 1, "num_cpus": 0.5},
            "ray, 2 actors": {"num_replicas": 2, "num_cpus": 0.5}}
    exported = {}
    calls = n_videos * 4
    for name, ray_args in runs.items():
        times = []
        for r in range(repeat):
            out = root / f"toy-{len(exported)}-{r}"
            extra = {"executor": "ray", "ray_args": ray_args} if ray_args else {}
            t0 = time.perf_counter()
            asyncio.run(run_build(build_toy.Toy(), find_videos(videos), out,
                                  {"llm": ("toy-llm", {"delay": latency})}, concurrency=concurrency,
                                  show_progress=False, **extra))
            times.append(time.perf_counter() - t0)
            exported[name] = (out / "joined.txt").read_bytes()
        print(f"toy, {name}: {statistics.median(times):.2f} s ({calls} calls of {latency:g} s, concurrency "
              f"{concurrency}; runs {', '.join(f'{t:.2f}' for t in times)})")
    print(f"toy: joined.txt identical across executors: {len(set(exported.values())) == 1}")
    ray.shutdown()


def neptune(root: Path) -> None:
    videos = root / "neptune-videos"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "RAY_AUTH_MODE": "disabled", "LVU_PROGRESS_INTERVAL": "0"}
    subprocess.run([sys.executable, str(TESTS / "neptune_example.py"), str(videos)], env=env, check=True)
    lvu = [sys.executable, "-m", "lvu.cli", "build", "neptune", str(videos), "--captioner", "ocr",
           "--llm", "neptune_example:ScriptedLLM", "-q"]
    written = {}
    for name, extra in (("local", []), ("ray", ["--executor", "ray", "--ray-arg", "num_cpus=0.5"])):
        out = root / f"neptune-{name}"
        t0 = time.perf_counter()
        done = subprocess.run([*lvu, "-o", str(out), *extra], capture_output=True, text=True,
                              env={**env, "LVU_CACHE_DIR": str(root / f"cache-{name}")})
        seconds = time.perf_counter() - t0
        assert done.returncode == 0, done.stderr[-2000:]
        written[name] = (out / "benchmark.jsonl").read_bytes()
        print(f"neptune example, {name}: {seconds:.1f} s (the whole command, cold caches)")
    print(f"neptune: benchmark.jsonl identical: {written['local'] == written['ray']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    with tempfile.TemporaryDirectory() as tmp:
        toy(Path(tmp), args.videos, args.latency, args.concurrency, args.repeat)
        neptune(Path(tmp))


if __name__ == "__main__":
    main()
