#!/usr/bin/env python
"""API throughput: lvu's `openai` backend at concurrency 32 and 256 against a sequential client, all
through the real `openai` SDK, against a local OpenAI-compatible server in its own process
(`python -m lvu.models.testing_server`) that answers every request after a fixed latency.

Workload: samples of 8 frames each (320x180, read from lvu's on-disk frame cache, warmed before
timing), 8 questions per video as in the papers' benchmarks; 400 samples at concurrency 32, 2048
at 256 (`--samples`; 8 rounds of 256, so no partial last round caps the rate below the ideal).
  - backend:     the prompts through OpenAICompat.generate, at most `concurrency` in flight; every
                 prompt has its own copies of its frames, so each request encodes 8 JPEGs.
  - pre-encoded: the same, but the questions of a video share its frame arrays and the backend's
                 JPEG memo is warmed before the clock: the client's cost without JPEG encoding.
  - engine:      `lvu.api.run("jsonl", "openai", concurrency=N)` over the same samples: frame-cache
                 reads, prompt building, extraction, scoring, the SQLite store.
  - sequential:  one request at a time (lmms-eval's default OpenAI path), same encoding, through the
                 sync `openai.OpenAI` client, over `--seq-samples` samples.

Bounds printed with every row: ideal = concurrency / latency; rounds = samples / (ceil(samples /
concurrency) x latency), what no client can beat; CPU = what this box's CPUs allow:
min(1 / loop CPU per request — the event loop thread runs the SDK's Python, one core at most —,
cores / (client + server CPU per request) — client and server share the cores). CPU times are
measured per run: the client process (all threads), its event-loop thread, and the server process
(/proc). "cores used" is client + server CPU per second of the run (at most the box's cores);
"loop ran" / "loop waited" are the shares of the run the loop thread spent on a CPU / runnable
but off one — behind the client's own JPEG threads, the server, or other processes on a shared
box, which the CPU bound (an idle box's) does not count. Together near 100 %: the loop thread never
idles, the client is CPU-bound. Target: backend rate >= 0.9 x min(ideal, CPU bound). Medians of
`--repeat` runs. `-a cache=true` measures with the response cache on (empty at every run).

    python benchmarks/api_throughput.py [--concurrency 32 256] [--samples 400 2048] [--latency 0.3] [--repeat 3] [-a K=V]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
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


def make_data(root: Path, n_samples: int, n_frames: int) -> list:
    """Videos (8 samples each, like a benchmark's several questions per video), and (sample, frames)
    of every sample, the frames read through the frame cache (warm afterwards)."""
    from lvu.media.cache import FrameCache
    from lvu.media.sampling import Uniform
    from lvu.media.testing import make_video
    from lvu.media.video import probe
    from lvu.types import Sample, VideoRef

    items = []
    cache = FrameCache()
    for v in range(-(-n_samples // SAMPLES_PER_VIDEO)):
        video = make_video(root / f"v{v:03d}.mp4", seconds=4, fps=10, gop=20, size=(320, 180))
        duration = probe(video.path).duration  # in the samples, as benchmark annotations give it
        batch = cache.get_or_decode(video.path, Uniform(n=n_frames).timestamps(duration, 0.0))  # warms the cache
        for i in range(v * SAMPLES_PER_VIDEO, min(n_samples, (v + 1) * SAMPLES_PER_VIDEO)):
            items.append((Sample(id=f"s{i:04d}", benchmark="jsonl", video=VideoRef(path=str(video.path), duration=duration),
                                 question=f"Question {i}: which colour is the marker?",
                                 options=["red", "green", "blue", "grey"], answer=0), batch))
    return items


def prompt_for(i: int, sample, batch, copy: bool = True):
    """Sample i's prompt: its video's cached frames then the question. `copy`: the frames rolled by
    i and copied, so no two requests are identical and no frame array is shared (the backend's
    per-array JPEG memo never hits: every request encodes its JPEGs)."""
    from lvu.types import Frame, Prompt, Text

    data = list(batch.data)
    if copy:
        k = i % len(data)
        data = [img.copy() for img in data[k:] + data[:k]]
    parts = [Frame(image=img, timestamp=t) for img, t in zip(data, batch.pts_seconds)]
    return Prompt(parts=[*parts, Text(text=sample.question + "\nA. red\nB. green\nC. blue\nD. grey")],
                  choices=sample.options, question=sample.question)


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of another process, from /proc (Linux); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _run_queue_wait() -> float | None:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux schedstat); None elsewhere."""
    try:
        return int(Path(f"/proc/self/task/{threading.get_native_id()}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Timed:
    """One timed run, measured from the thread that runs the event loop."""

    elapsed: float
    client_cpu: float
    loop_cpu: float
    server_cpu: float | None
    loop_wait: float | None


class Meter:
    """Wall clock, client CPU (all threads), this thread's CPU, the server's CPU and this thread's
    run-queue wait between `Meter(pid)` and `.stop()`."""

    def __init__(self, server_pid: int) -> None:
        self.pid = server_pid
        self.s0, self.w0 = _proc_cpu(server_pid), _run_queue_wait()
        self.c0, self.l0, self.t0 = time.process_time(), time.thread_time(), time.perf_counter()

    def stop(self) -> Timed:
        elapsed, client, loop = time.perf_counter() - self.t0, time.process_time() - self.c0, time.thread_time() - self.l0
        s1, w1 = _proc_cpu(self.pid), _run_queue_wait()
        return Timed(elapsed, client, loop, None if self.s0 is None or s1 is None else s1 - self.s0,
                     None if self.w0 is None or w1 is None else w1 - self.w0)


async def lvu_backend(prompts: list, base_url: str, concurrency: int, server_pid: int,
                      pre_encoded: bool = False, model_args: dict | None = None) -> Timed:
    """All prompts through OpenAICompat.generate, at most `concurrency` in flight. `pre_encoded`:
    every distinct frame array's JPEG is memoised before the clock starts."""
    from lvu.models.openai_compat import OpenAICompat

    model = OpenAICompat(model="fake-vlm", base_url=base_url, **{"cache": False, **(model_args or {})})
    if pre_encoded:
        for p in prompts:
            if not all(model._encode.has(f.image) for f in p.frames):
                model.build_body(p)
    sem = asyncio.Semaphore(concurrency)

    async def one(prompt):
        async with sem:
            return await model.generate(prompt)

    meter = Meter(server_pid)
    responses = await asyncio.gather(*(one(p) for p in prompts))
    measured = meter.stop()
    await model.close()
    errors = [r.error for r in responses if r.error]
    if errors:
        raise SystemExit(f"lvu backend: {len(errors)} errors, first: {errors[0]}")
    return measured


def lvu_engine(data: Path, base_url: str, concurrency: int, n_frames: int, results: Path, server_pid: int,
               model_args: dict) -> Timed:
    from lvu.api import run

    meter = Meter(server_pid)
    summary = run("jsonl", "openai", settings={"data": str(data), "frames": n_frames, "subtitles": "none"},
                  model_args={"model": "fake-vlm", "base_url": base_url, "cache": False, **model_args},
                  results_dir=results, concurrency=concurrency, show_progress=False, report=False, fresh=True)
    measured = meter.stop()
    if summary.n_failed:
        raise SystemExit(f"lvu engine: {summary.n_failed} samples failed")
    return measured


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


@dataclass
class Row:
    client: str
    concurrency: int
    samples: int
    runs: list[Timed]

    def rates(self) -> list[float]:
        return [self.samples / t.elapsed for t in self.runs]

    def per_request_ms(self, field: str) -> float | None:
        values = [getattr(r, field) for r in self.runs]
        return None if None in values else statistics.median(values) / self.samples * 1000

    def cpu_bound(self, cores: int) -> float:
        """Requests/s this box's CPUs allow: one core for the loop thread, all cores for client + server."""
        loop, client, server = (self.per_request_ms(f) for f in ("loop_cpu", "client_cpu", "server_cpu"))
        return min(1000 / loop, cores * 1000 / (client + (server or 0.0)))

    def share(self, part: str) -> str:
        """Median over runs of seconds per second of the run: "cores" (client + server CPU), or the
        loop thread's time on a CPU ("ran") or runnable but off one ("waited")."""
        if part == "cores":
            values = [None if t.server_cpu is None else (t.client_cpu + t.server_cpu) / t.elapsed for t in self.runs]
        elif part == "ran":
            values = [t.loop_cpu / t.elapsed for t in self.runs]
        else:
            values = [None if t.loop_wait is None else t.loop_wait / t.elapsed for t in self.runs]
        if None in values:
            return "-"
        return f"{statistics.median(values):.2f}" if part == "cores" else f"{statistics.median(values):.0%}"


def print_table(rows: list[Row], latency: float, cores: int) -> None:
    head = ("client", "conc", "latency", "samples", "rate/s", "ideal", "rounds", "CPU bound", "rate/min(ideal,CPU)",
            "client CPU/req", "loop CPU/req", "server CPU/req", "cores used", "loop ran", "loop waited")
    lines = [head]
    for r in rows:
        rates = r.rates()
        rate, ideal, bound = statistics.median(rates), r.concurrency / latency, r.cpu_bound(cores)
        rounds = r.samples / (-(-r.samples // r.concurrency) * latency)
        server = r.per_request_ms("server_cpu")
        lines.append((r.client, str(r.concurrency), f"{latency * 1000:.0f} ms", str(r.samples),
                      f"{rate:.1f} [{min(rates):.0f}-{max(rates):.0f}]", f"{ideal:.1f}", f"{rounds:.1f}", f"{bound:.0f}",
                      f"{rate / min(ideal, bound):.2f}", f"{r.per_request_ms('client_cpu'):.2f} ms",
                      f"{r.per_request_ms('loop_cpu'):.2f} ms", "-" if server is None else f"{server:.2f} ms",
                      r.share("cores"), r.share("ran"), r.share("waited")))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print("  " + "  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--samples", type=int, nargs="+", default=None,
                    help="samples per concurrency, in the same order (default max(400, 8 x concurrency))")
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--seq-samples", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each lvu measurement (median reported)")
    ap.add_argument("--no-engine", action="store_true", help="skip the run-engine measurement")
    ap.add_argument("--no-pre-encoded", action="store_true", help="skip the pre-encoded backend measurement")
    ap.add_argument("-a", "--model-arg", action="append", default=[], metavar="K=V",
                    help="an openai backend argument for the lvu runs, e.g. cache=true (default cache=false) or http=httpx")
    args = ap.parse_args()
    model_args = dict(kv.split("=", 1) for kv in args.model_arg)
    samples = args.samples or [max(400, 8 * c) for c in args.concurrency]
    if len(samples) != len(args.concurrency):
        ap.error("--samples needs one count per --concurrency")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    from lvu.benchmarks.jsonl import write_samples

    with tempfile.TemporaryDirectory(prefix="lvu-api-bench-") as tmp:
        root = Path(tmp)
        os.environ["LVU_CACHE_DIR"] = str(root / "cache")
        items = make_data(root, max(samples), args.frames)
        server, base_url = start_server(args.latency)

        def run_args() -> dict:
            """The model arguments of one timed run. With `-a cache=true` the response cache starts
            empty (every request a miss and a write, as in a first run): repeats are no cache hits."""
            shutil.rmtree(root / "cache" / "responses", ignore_errors=True)
            return model_args

        try:
            print(f"api_throughput: {args.frames} frames per sample (320x180 from the frame cache, JPEG q90), local "
                  f"server (own process) latency {args.latency * 1000:.0f} ms, {cores} CPUs shared by client and "
                  f"server, load average {os.getloadavg()[0]:.1f} before the run; median of {args.repeat} runs [min-max]")
            asyncio.run(lvu_backend([prompt_for(i, *it) for i, it in enumerate(items[:4])], base_url, 4, server.pid))
            rows: list[Row] = []
            for conc, n in zip(args.concurrency, samples):
                def backend(pre_encoded: bool, conc: int = conc, n: int = n) -> list[Timed]:
                    prompts = [prompt_for(i, s, b, copy=not pre_encoded) for i, (s, b) in enumerate(items[:n])]
                    return [asyncio.run(lvu_backend(prompts, base_url, conc, server.pid, pre_encoded, run_args()))
                            for _ in range(args.repeat)]

                rows.append(Row("backend", conc, n, backend(False)))
                if not args.no_pre_encoded:
                    rows.append(Row("pre-encoded", conc, n, backend(True)))
                if not args.no_engine:
                    data = write_samples(root / f"data{n}.jsonl", [s for s, _ in items[:n]])
                    rows.append(Row("engine", conc, n, [lvu_engine(data, base_url, conc, args.frames, root / f"results{conc}-{i}",
                                                                   server.pid, run_args()) for i in range(args.repeat)]))
            print_table(rows, args.latency, cores)
            k = min(args.seq_samples, len(items))
            rate_seq = k / sequential(items[:k], base_url)
            backend = [r for r in rows if r.client == "backend"]
            print(f"  sequential client (one request at a time, lmms-eval's default path): {rate_seq:.1f} samples/s "
                  f"over {k}; the backend is " + ", ".join(
                      f"{statistics.median(r.rates()) / rate_seq:.0f}x faster at {r.concurrency}" for r in backend))
            met = True
            for r in backend:
                rate, ideal, bound = statistics.median(r.rates()), r.concurrency / args.latency, r.cpu_bound(cores)
                ok = rate >= 0.9 * min(ideal, bound)
                met &= ok
                print(f"  target at {r.concurrency}: backend >= 0.9 x min(ideal {ideal:.1f}, CPU bound {bound:.0f}) = "
                      f"{0.9 * min(ideal, bound):.1f}/s ({'ideal' if ideal <= bound else 'CPU bound'} binds): "
                      f"{'met' if ok else 'NOT met'} at {rate:.1f}/s")
            return 0 if met else 1
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
