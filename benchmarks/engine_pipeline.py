#!/usr/bin/env python
"""Engine pipeline: decode threads vs decode processes vs a sequential loop, on many videos.

Workload: `--videos` generated H.264 videos (`--seconds` + i long, 640x360, GOP `--gop`), `--per-video`
questions each (same frame plan, as a benchmark's several questions per video), `--frames` exact
frames per sample, and a model that answers after a fixed `--latency` (an asyncio sleep, like an API
or a GPU server) with `--concurrency` calls in flight. Every configuration starts from a cold,
private frame cache, so each decodes every video once.
  - sequential: decode a sample's frames, then call the model, one sample at a time (lmms-eval's
                loop); repeated samples of a video reuse the frames decoded just before.
  - lvu threads:   `Engine(decode="threads", decode_workers=W)`.
  - lvu processes: `Engine(decode="processes", decode_workers=W)`: worker processes decode into
                   the frame cache, the run reads it (no frame arrays pickled).
Reported per configuration (median and best of `--repeat` interleaved runs: on a shared machine the
best run is the least disturbed one): samples/s, decoder idle % and model idle %
(from the engine's per-stage counters: 1 - slot-seconds busy / (slots x wall)), and the ratios.
Bounds: the model alone cannot exceed concurrency / latency samples/s; decoding alone is timed
too (`decode only`: the threads engine with a zero-latency model), so the best possible pipelined
rate is the smaller of the two.

    python benchmarks/engine_pipeline.py [--videos 16] [--seconds 90] [--gop 250] [--frames 32] \\
        [--latency 1.0] [--concurrency 4] [--workers 2] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lvu.models.base import Model, register_model
from lvu.types import Prompt, Response


@register_model("fixed-latency")
class FixedLatency(Model):
    """Answers "A" after `latency` seconds (not blocking the event loop)."""

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        await asyncio.sleep(float(self.args.get("latency", 0.5)))
        return Response(text="A")


def make_data(root: Path, args: argparse.Namespace) -> Path:
    """The videos (the decode benchmark's content, ~800 kb/s at 640x360; each a second longer than
    the one before, so no two files share content and frame-cache entries) and the JSONL file.
    Videos are cached between invocations under the lvu cache dir."""
    from lvu.benchmarks.jsonl import write_samples
    from lvu.media.benchvideo import BenchVideo, ensure
    from lvu.media.video import probe
    from lvu.paths import cache_dir
    from lvu.types import Sample, VideoRef

    samples = []
    for v in range(args.videos):
        path = ensure(BenchVideo(seconds=args.seconds + v, gop=args.gop), cache_dir("bench-videos"))
        duration = probe(path).duration
        for q in range(args.per_video):
            samples.append(Sample(id=f"v{v:03d}q{q}", benchmark="jsonl", video=VideoRef(path=str(path), duration=duration),
                                  question=f"Question {q} about video {v}?", options=["a", "b", "c", "d"], answer=0))
    return write_samples(root / "data.jsonl", samples)


def engine_run(data: Path, root: Path, args: argparse.Namespace, decode: str, latency: float) -> tuple[float, dict, int]:
    """(seconds, stage utilisation, failed) for one engine run on a cold private frame cache."""
    from lvu.media.cache import FrameCache
    from lvu.runs.engine import Engine, make_spec
    from lvu.runs.store import Store

    spec, bench, model = make_spec("jsonl", "fixed-latency", settings={"data": str(data), "frames": args.frames,
                                                                       "subtitles": "none"},
                                   model_args={"latency": latency})
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        store = Store(Path(tmp) / "results")
        engine = Engine(bench, model, store, concurrency=args.concurrency, decode=decode,  # type: ignore[arg-type]
                        decode_workers=args.workers, frame_cache=FrameCache(Path(tmp) / "frames"))
        t0 = time.perf_counter()
        summary = asyncio.run(engine.run(spec, show_progress=False))
        elapsed = time.perf_counter() - t0
        store.close()
    return elapsed, summary.stage_utilisation, summary.n_failed


def sequential(data: Path, args: argparse.Namespace) -> float:
    """Seconds for the one-sample-at-a-time loop: decode (exact, no cache), then the model call."""
    from lvu.benchmarks.jsonl import read_samples
    from lvu.media.sampling import Uniform
    from lvu.media.video import VideoReader

    samples, _ = read_samples(data)
    last: tuple[str, object] | None = None
    t0 = time.perf_counter()
    for s in samples:
        if last is None or last[0] != s.video.path:
            times = Uniform(n=args.frames).timestamps(s.video.duration or 0.0, 0.0)
            with VideoReader(s.video.path) as reader:
                last = (s.video.path, reader.get_frames_played_at(times))
        time.sleep(args.latency)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", type=int, default=16)
    ap.add_argument("--seconds", type=int, default=90)
    ap.add_argument("--gop", type=int, default=250)
    ap.add_argument("--per-video", type=int, default=2)
    ap.add_argument("--frames", type=int, default=32)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2, help="decode threads / processes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 4 short videos, one repeat")
    args = ap.parse_args()
    if args.quick:
        args.videos, args.seconds, args.repeat, args.latency = 4, 20, 1, 0.2
    n = args.videos * args.per_video

    with tempfile.TemporaryDirectory(prefix="lvu-pipeline-bench-") as tmp:
        root = Path(tmp)
        data = make_data(root, args)
        print(f"engine_pipeline: {n} samples ({args.videos} videos of {args.seconds}-{args.seconds + args.videos - 1} s, "
              f"640x360 GOP {args.gop}, "
              f"{args.per_video} questions each), {args.frames} exact frames per sample, model latency "
              f"{args.latency * 1000:.0f} ms x concurrency {args.concurrency}, {args.workers} decode workers, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; median of {args.repeat} runs [min-max]")
        engine_run(data, root, args, "processes", 0.0)  # imports and process start-up once, untimed
        rates: dict[str, list[float]] = {}
        idle: dict[str, list[tuple[float, float]]] = {}
        configs = [("decode only", "threads", 0.0), ("lvu threads", "threads", args.latency),
                   ("lvu processes", "processes", args.latency)]
        for _ in range(args.repeat):  # interleaved, so a load change on the shared box hits every config
            for label, decode, latency in configs:
                seconds, util, failed = engine_run(data, root, args, decode, latency)
                if failed:
                    print(f"  {label}: {failed} samples failed", file=sys.stderr)
                rates.setdefault(label, []).append(n / seconds)
                idle.setdefault(label, []).append((1 - util.get("decode", 0.0), 1 - util.get("model", 0.0)))
        seq_rate = n / sequential(data, args)
        model_bound = args.concurrency / args.latency
        bound = min(statistics.median(rates["decode only"]), model_bound)
        best_bound = min(max(rates["decode only"]), model_bound)
        for label, _, _ in configs:
            r, top = statistics.median(rates[label]), max(rates[label])
            d_idle = statistics.median(i for i, _ in idle[label]) * 100
            m_idle = statistics.median(i for _, i in idle[label]) * 100
            extra = "" if label == "decode only" else (f"  = {r / bound:.2f} x the pipelined bound "
                                                       f"(best: {top / best_bound:.2f} x)")
            print(f"  {label:<14} {r:6.2f} samples/s [{min(rates[label]):.2f}-{top:.2f}]  "
                  f"decoder idle {d_idle:4.1f} %  model idle {m_idle:4.1f} %{extra}")
        print(f"  sequential     {seq_rate:6.2f} samples/s (decode, then call, one sample at a time)")
        print(f"  model alone: at most {model_bound:.2f} samples/s; pipelined bound min(decode only, model) = "
              f"{bound:.2f} (best runs: {best_bound:.2f})")
        for how, pick in (("medians", statistics.median), ("best runs", max)):
            threads, procs = pick(rates["lvu threads"]), pick(rates["lvu processes"])
            print(f"  ratios ({how}): threads / sequential {threads / seq_rate:.2f}x, processes / sequential "
                  f"{procs / seq_rate:.2f}x, processes / threads {procs / threads:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
