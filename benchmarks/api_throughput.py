#!/usr/bin/env python
"""API throughput: lvu's `openai` backend at concurrency 32 against a sequential client, both
through the real `openai` SDK, against a local OpenAI-compatible server (a separate process,
lvu.models.testing_server) that answers every request after a fixed latency.

Workload: 400 samples of 8 frames each (320x180, frames read from lvu's on-disk frame cache,
warmed before timing), 8 questions per video as in the papers' benchmarks.
  - lvu backend: the 400 prompts through OpenAICompat.generate, at most 32 in flight; every
                 prompt has its own copies of its frames, so each request encodes 8 JPEGs.
  - lvu engine:  `lvu.runs.engine.run("jsonl", "openai", concurrency=32)` over the same 400
                 samples — frame-cache reads, prompt building, extraction, scoring, the SQLite store;
                 the questions of a video share its decoded frames, so each is encoded once.
  - sequential:  one request at a time (what lmms-eval's default OpenAI path does), same encoding
                 (lvu's to_messages) through the sync `openai.OpenAI` client; measured on 20
                 samples (`--seq-samples`) and extrapolated to 400, to keep the run short.
Target: lvu >= 0.9 x concurrency / latency samples/s (96/s at 32 and 300 ms). With 400 samples
and 32 slots some slot serves 13 requests one after another, so no client can beat 400 / (13 x
0.3 s) = 102.6/s here; the script prints that bound too. Each lvu measurement is the median of
`--repeat` runs (the 2-core box is shared with the server, so single runs vary by a few %).

    python benchmarks/api_throughput.py [--samples 400] [--frames 8] [--latency 0.3] [--concurrency 32] [--repeat 3]
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

SAMPLES_PER_VIDEO = 8


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "lvu.models.testing_server", "--latency", str(latency),
                             "--answer", "The answer is (B)."], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if not line or line[0] != "PORT":
        proc.kill()
        raise SystemExit("the local OpenAI-compatible server did not start")
    return proc, f"http://127.0.0.1:{line[1]}/v1"


def make_data(root: Path, n_samples: int, n_frames: int) -> tuple[Path, list]:
    """Videos (8 samples each, like a benchmark's several questions per video), the JSONL sample
    file, and the frames of every sample read through the frame cache (warm afterwards)."""
    from lvu.benchmarks.jsonl import write_samples
    from lvu.media.cache import FrameCache
    from lvu.media.sampling import Uniform
    from lvu.media.testing import make_video
    from lvu.media.video import probe
    from lvu.types import Sample, VideoRef

    samples, frames = [], []
    cache = FrameCache()
    n_videos = -(-n_samples // SAMPLES_PER_VIDEO)
    for v in range(n_videos):
        video = make_video(root / f"v{v:03d}.mp4", seconds=4, fps=10, gop=20, size=(320, 180))
        duration = probe(video.path).duration  # in the samples, as benchmark annotations give it
        times = Uniform(n=n_frames).timestamps(duration, 0.0)
        batch = cache.get_or_decode(video.path, times)  # what the engine reads (warms the cache)
        for q in range(SAMPLES_PER_VIDEO):
            i = v * SAMPLES_PER_VIDEO + q
            if i < n_samples:
                samples.append(Sample(id=f"s{i:04d}", benchmark="jsonl", video=VideoRef(path=str(video.path), duration=duration),
                                      question=f"Question {i}: which colour is the marker?",
                                      options=["red", "green", "blue", "grey"], answer=0))
                frames.append(batch)
    path = write_samples(root / "data.jsonl", samples)
    return path, [(s, b) for s, b in zip(samples, frames)]


def prompt_for(i: int, sample, batch):
    """Sample i's prompt: its video's 8 cached frames, rolled by i and copied, so no two requests
    are identical and no frame array is shared (lvu's per-array JPEG memo never hits: every
    request encodes 8 JPEGs), then the question."""
    from lvu.types import Frame, Prompt, Text

    data = list(batch.data)
    k = i % len(data)
    data = data[k:] + data[:k]
    parts = [Frame(image=img.copy(), timestamp=t) for img, t in zip(data, batch.pts_seconds)]
    return Prompt(parts=[*parts, Text(text=sample.question + "\nA. red\nB. green\nC. blue\nD. grey")],
                  choices=sample.options, question=sample.question)


async def lvu_backend(items: list, base_url: str, concurrency: int) -> tuple[float, float]:
    """Seconds for all requests, and the client's CPU seconds meanwhile (both threads included)."""
    from lvu.models.openai_compat import OpenAICompat

    model = OpenAICompat(model="fake-vlm", base_url=base_url, cache=False)
    sem = asyncio.Semaphore(concurrency)
    # Built before the clock starts: in a run, frames arrive from decode/cache threads, not the loop.
    prompts = [prompt_for(i, s, b) for i, (s, b) in enumerate(items)]

    async def one(prompt):
        async with sem:
            return await model.generate(prompt)

    cpu0, t0 = time.process_time(), time.perf_counter()
    responses = await asyncio.gather(*(one(p) for p in prompts))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await model.close()
    errors = [r.error for r in responses if r.error]
    if errors:
        raise SystemExit(f"lvu backend: {len(errors)} errors, first: {errors[0]}")
    return elapsed, cpu


def lvu_engine(data: Path, base_url: str, concurrency: int, n_frames: int, results: Path) -> tuple[float, int]:
    from lvu.runs.engine import run

    t0 = time.perf_counter()
    summary = run("jsonl", "openai", settings={"data": str(data), "frames": n_frames, "subtitles": "none"},
                  model_args={"model": "fake-vlm", "base_url": base_url, "cache": False},
                  results_dir=results, concurrency=concurrency, show_progress=False, report=False, fresh=True)
    return time.perf_counter() - t0, summary.n_failed


def sequential(items: list, base_url: str) -> float:
    import openai

    from lvu.models.openai_compat import to_messages

    client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    t0 = time.perf_counter()
    for i, (sample, batch) in enumerate(items):
        p = prompt_for(i, sample, batch)
        client.chat.completions.create(model="fake-vlm", messages=to_messages(p), max_tokens=p.max_tokens,
                                       temperature=p.temperature)
    elapsed = time.perf_counter() - t0
    client.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--seq-samples", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each lvu measurement (median reported)")
    ap.add_argument("--no-engine", action="store_true", help="skip the run-engine measurement")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="lvu-api-bench-") as tmp:
        root = Path(tmp)
        os.environ["LVU_CACHE_DIR"] = str(root / "cache")
        data, items = make_data(root, args.samples, args.frames)
        server, base_url = start_server(args.latency)
        try:
            ideal = args.concurrency / args.latency
            target = 0.9 * ideal
            n = len(items)
            rounds = -(-n // args.concurrency)  # some request slot must serve this many one after another
            bound = n / (rounds * args.latency)
            print(f"api_throughput: {n} samples x {args.frames} frames (320x180 from the frame cache, JPEG q90), "
                  f"local server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}, "
                  f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the run; "
                  f"median of {args.repeat} runs [min-max]")
            asyncio.run(lvu_backend(items[:4], base_url, 4))  # import and connect once, untimed
            backend = [asyncio.run(lvu_backend(items, base_url, args.concurrency)) for _ in range(args.repeat)]
            rates = [n / t for t, _ in backend]
            rate_backend = statistics.median(rates)
            cpu_ms = statistics.median(c for _, c in backend) / n * 1000
            print(f"  lvu backend  (OpenAICompat.generate, {args.concurrency} in flight, {args.frames} JPEGs per request): "
                  f"{rate_backend:6.1f} samples/s [{min(rates):.1f}-{max(rates):.1f}]  (client CPU {cpu_ms:.1f} ms/sample)")
            rate_engine = None
            if not args.no_engine:
                runs = [lvu_engine(data, base_url, args.concurrency, args.frames, root / f"results{i}")
                        for i in range(args.repeat)]
                rates = [n / t for t, _ in runs]
                rate_engine = statistics.median(rates)
                print(f"  lvu engine   (run('jsonl', 'openai', concurrency={args.concurrency})):  "
                      f"{rate_engine:6.1f} samples/s [{min(rates):.1f}-{max(rates):.1f}]  "
                      f"({sum(f for _, f in runs)} failed)")
            k = min(args.seq_samples, n)
            t_seq = sequential(items[:k], base_url)
            rate_seq = k / t_seq
            print(f"  sequential   (one request at a time, lmms-eval's default path): {k} in {t_seq:6.2f} s = "
                  f"{rate_seq:6.1f} samples/s; extrapolated to {n}: {n / rate_seq:6.1f} s")
            print(f"  ratio lvu backend / sequential: {rate_backend / rate_seq:5.1f}x"
                  + (f";  lvu engine / sequential: {rate_engine / rate_seq:5.1f}x" if rate_engine else ""))
            verdict = "met" if rate_backend >= target else "NOT met"
            print(f"  target (the backend) >= 0.9 x {args.concurrency} / {args.latency:g} s = {target:.1f} samples/s "
                  f"(ideal {ideal:.1f}; {n} samples need {rounds} rounds of {args.latency:g} s: at most {bound:.1f}): "
                  f"{verdict} at {rate_backend:.1f} = {rate_backend / ideal:.2f} x ideal"
                  + (f"; the whole engine (load, decode, score, store): {rate_engine:.1f} = {rate_engine / ideal:.2f} x ideal"
                     if rate_engine else ""))
            return 0 if rate_backend >= target else 1
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
