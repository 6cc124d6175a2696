"""`lvu bench decode`: lvu's frame reading against the peers' approaches, side by side, one run.

For each benchmark video (lvu.media.benchvideo: synthetic H.264, 640x360 @ 30 fps, GOP 30 and
250, 10 and 60 minutes, cached) and each frame count N, the same N frame numbers
(`np.linspace(0, T-1, N, dtype=int)`, lmms-eval's uniform formula) are read by every method:

    lvu exact         VideoReader(path).get_frames_at(indices)
    lvu approximate   VideoReader(path, approximate=True): keyframe at or before each target
    lvu cache miss    FrameCache(tmp).get_or_decode(path, times): decode + store (cold)
    lvu cache hit     the same call again, in a new process: reads the stored entry
    lmms-eval pyav    lmms-eval's default reader (models/model_utils/load_video.py::read_video_pyav):
                      thread_type="AUTO", decode from frame 0 and keep the wanted frames
    decord            decord.VideoReader(num_threads=2, lmms-eval's default).get_batch(indices)
    torchcodec        VideoDecoder(seek_mode="exact", num_ffmpeg_threads=0).get_frames_at(indices)
    keyframes only    the floor: decode every keyframe of the file (skip_frame="NONKEY"), keep
                      the one at or before each target

Each measurement runs in a fresh process (so peak RSS — the child's VmHWM, i.e. ru_maxrss
without the parent's mark that Linux carries across fork+exec — is per method; it includes the
interpreter and the method's imports), with the file in the page cache. Time counts from
opening the file to holding N RGB uint8 numpy frames at full size; imports are excluded. Every
frame carries its number as a barcode, so each row also says how many frames were wrong (exact
methods) or how far off they were (approximate ones). `cpu` = CPU seconds / wall seconds.
Tests never assert these times; this module only prints them.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lvu.media.benchvideo import BenchVideo, ensure, read_code

METHODS: dict[str, str] = {
    "lvu exact": "lvu VideoReader, exact (default)",
    "lvu approximate": "lvu VideoReader(approximate=True): keyframe at or before",
    "lvu cache miss": "lvu FrameCache.get_or_decode, cold: decode + store",
    "lvu cache hit": "lvu FrameCache.get_or_decode, entry present",
    "lmms-eval pyav": "lmms-eval read_video_pyav: sequential decode from frame 0",
    "decord": "decord 0.6 get_batch, num_threads=2",
    "torchcodec": "torchcodec 0.13 get_frames_at, exact, threads=auto",
    "keyframes only": "floor: decode every keyframe (NONKEY), nearest before",
}
APPROXIMATE = {"lvu approximate", "keyframes only"}
OPTIONAL = {"decord": "decord", "torchcodec": "torchcodec.decoders"}

FULL_MINUTES = (10, 60)
FULL_GOPS = (30, 250)
FULL_NS = (8, 32, 64, 256)
QUICK_SECONDS = 20
QUICK_SIZE = (320, 180)
QUICK_NS = (8, 32)
REPEAT_UNDER = 20.0

TARGETS = """targets (issue), on the longest GOP-250 video:
  lvu exact >= 20x faster than lmms-eval sequential @N=32; >= 2.5x faster than decord @N=256;
  <= 2x the keyframes-only floor @N=256; cache hit >= 20x faster than a cold decode (lvu exact);
  lvu exact peak RSS < 1024 MB @N=256; both cores used"""

QUICK_TARGETS = """targets (--quick: one 20-s 320x180 video, a smoke test): every exact method returns the asked frames;
  cache hit >= 5x faster than a cold decode (lvu exact); lvu exact peak RSS < 1024 MB. The issue's speed targets
  (20x lmms-eval, 2.5x decord, 2x the floor, both cores) need the 60-minute videos: run without --quick."""


# ---- the methods (run inside the child process) --------------------------------------------------


def _lvu(path: str, indices: list[int], approximate: bool) -> list[np.ndarray]:
    from lvu.media.video import VideoReader

    with VideoReader(path, approximate=approximate) as r:
        return r.get_frames_at(indices).data


def _lvu_cache(path: str, indices: list[int], fps: float, cache_dir: str) -> list[np.ndarray]:
    from lvu.media.cache import FrameCache

    times = [i / fps for i in indices]  # index / fps is exactly frame `index` on constant-rate video
    return FrameCache(cache_dir).get_or_decode(path, times).data


def _lmms_eval_pyav(path: str, indices: list[int]) -> list[np.ndarray]:
    """lmms-eval's read_video_pyav -> load_video_stream -> record_video_length_stream, as written
    there (frames kept as av.VideoFrame, converted at the end), given the same indices."""
    import av

    container = av.open(path)
    try:
        container.streams.video[0].thread_type = "AUTO"
        frames = []
        start_index, end_index = indices[0], indices[-1]
        index_set = set(indices)
        for i, frame in enumerate(container.decode(video=0)):
            if i > end_index:
                break
            if i >= start_index and i in index_set:
                frames.append(frame)
        return list(np.ascontiguousarray(np.stack([f.to_ndarray(format="rgb24") for f in frames])))
    finally:
        container.close()


def _decord(path: str, indices: list[int]) -> list[np.ndarray]:
    import decord

    vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=2)
    try:
        return list(np.ascontiguousarray(vr.get_batch(indices).asnumpy()))
    finally:
        del vr


def _torchcodec(path: str, indices: list[int]) -> list[np.ndarray]:
    from torchcodec.decoders import VideoDecoder

    decoder = VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=0, dimension_order="NHWC", device="cpu")
    return list(np.ascontiguousarray(decoder.get_frames_at(indices).data.numpy()))


def _keyframes_only(path: str, indices: list[int], fps: float) -> list[np.ndarray]:
    """Decode only the keyframes of the whole file, in one pass; each target gets the last
    keyframe at or before it. Converted to RGB only where used."""
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]  # PyAV's default slice threading: frame threads
        stream.codec_context.skip_frame = "NONKEY"  # are slower here (2.3 s vs 1.8 s, 60-min GOP 250)
        tb, origin = float(stream.time_base), None
        targets = sorted(set(indices))
        picked: dict[int, np.ndarray] = {}
        k, last = 0, None
        for frame in container.decode(stream):
            origin = frame.pts if origin is None else origin
            number = round((frame.pts - origin) * tb * fps)
            if last is not None and k < len(targets) and targets[k] < number:
                rgb = last.to_ndarray(format="rgb24")
                while k < len(targets) and targets[k] < number:
                    picked[targets[k]] = rgb
                    k += 1
            last = frame
        if last is not None and k < len(targets):
            rgb = last.to_ndarray(format="rgb24")
            for t in targets[k:]:
                picked[t] = rgb
        return [picked[i] for i in indices]


def _child() -> None:
    """Child process entry: run one method once, print one JSON line with its measurements."""
    spec = json.loads(sys.argv[1])
    method, path, indices = spec["method"], spec["path"], spec["indices"]
    fps, cache_dir = spec["fps"], spec.get("cache_dir")
    runs: dict[str, tuple[str, Callable[[], list[np.ndarray]]]] = {  # (module to preload, call)
        "lvu exact": ("lvu.media.video", lambda: _lvu(path, indices, False)),
        "lvu approximate": ("lvu.media.video", lambda: _lvu(path, indices, True)),
        "lvu cache miss": ("lvu.media.cache", lambda: _lvu_cache(path, indices, fps, cache_dir)),
        "lvu cache hit": ("lvu.media.cache", lambda: _lvu_cache(path, indices, fps, cache_dir)),
        "lmms-eval pyav": ("av", lambda: _lmms_eval_pyav(path, indices)),
        "decord": ("decord", lambda: _decord(path, indices)),
        "torchcodec": ("torchcodec.decoders", lambda: _torchcodec(path, indices)),
        "keyframes only": ("av", lambda: _keyframes_only(path, indices, fps)),
    }
    if method not in runs:
        raise SystemExit(f"unknown method {method!r}")
    module, run = runs[method]
    importlib.import_module(module)  # imports are not timed
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    frames = run()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    codes = [read_code(f) for f in frames]
    shapes = sorted({tuple(f.shape) for f in frames})
    print(json.dumps({"seconds": wall, "cpu": cpu / wall if wall > 0 else 0.0,
                      "rss_mb": _peak_rss_mb(r1), "codes": codes, "shapes": shapes}))


def _peak_rss_mb(usage: resource.struct_rusage) -> float:
    """This process's peak RSS. Linux keeps the parent's high-water mark in ru_maxrss across
    fork + exec, so the address space's own VmHWM is read where /proc has it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


# ---- the parent: runs, table, ratios ---------------------------------------------------------------


@dataclass
class Cell:
    """One method on one video at one N."""

    seconds: float | None = None
    rss_mb: float | None = None
    cpu: float | None = None
    wrong: int | None = None
    """Exact methods: frames whose barcode is not the requested number."""
    max_off: int | None = None
    """Approximate methods: the largest distance in frames from the requested one."""
    error: str | None = None


@dataclass
class Results:
    videos: list[BenchVideo]
    ns: list[int]
    methods: list[str]
    cells: dict[tuple[str, int, str], Cell] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    quick: bool = False
    """Measured in --quick mode: verdicts use QUICK_TARGETS, not the 60-minute ones."""

    def get(self, video: BenchVideo, n: int, method: str) -> Cell | None:
        return self.cells.get((video.name, n, method))


def available_methods() -> tuple[list[str], list[str]]:
    """(methods that can run here, notes on those that cannot)."""
    methods, notes = [], []
    for m in METHODS:
        module = OPTIONAL.get(m)
        if module:  # imported in a child: torch in this process would bloat every child's start
            proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                why = (proc.stderr.strip().splitlines() or ["import failed"])[-1][:100]
                notes.append(f"{m}: skipped, not importable here ({why})")
                continue
        methods.append(m)
    return methods, notes


def uniform_indices(num_frames: int, n: int) -> list[int]:
    """lmms-eval's `np.linspace(0, total_frames - 1, n, dtype=int)`."""
    return np.linspace(0, num_frames - 1, min(n, num_frames), dtype=int).tolist()


def _measure(method: str, path: Path, indices: list[int], fps: float, cache_dir: str | None,
             timeout: float) -> Cell:
    spec = {"method": method, "path": str(path), "indices": indices, "fps": fps, "cache_dir": cache_dir}
    code = "from lvu.media.bench import _child; _child()"
    try:
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return Cell(error=f"timeout > {timeout:.0f} s")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Cell(error=f"rc={proc.returncode}: {tail[:100]}")
    out = json.loads(lines[-1])
    codes = out["codes"]
    cell = Cell(seconds=out["seconds"], rss_mb=out["rss_mb"], cpu=out["cpu"])
    if len(codes) != len(indices):
        cell.error = f"returned {len(codes)} frames for {len(indices)}"
    elif method in APPROXIMATE:
        cell.max_off = max((abs(c - i) for c, i in zip(codes, indices)), default=0)
    else:
        cell.wrong = sum(c != i for c, i in zip(codes, indices))
    return cell


def _warm_page_cache(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def run(*, minutes: Sequence[float] = FULL_MINUTES, gops: Sequence[int] = FULL_GOPS, ns: Sequence[int] = FULL_NS,
        size: tuple[int, int] = (640, 360), methods: Sequence[str] | None = None, video_dir: str | Path | None = None,
        quick: bool = False, repeat: int = 1, timeout: float = 900.0, log: Callable[[str], None] = print) -> Results:
    """Make (or reuse) the videos and measure every method on each (video, N). `quick`: one 20-s
    320x180 GOP-250 video and N in (8, 32) unless `ns` is given — seconds, for tests. `repeat`:
    keep the fastest of that many runs (runs over REPEAT_UNDER seconds are not repeated)."""
    if video_dir is None:
        from lvu.paths import cache_dir

        video_dir = cache_dir("bench-videos")
    if quick:
        videos = [BenchVideo(QUICK_SECONDS, 250, QUICK_SIZE)]
        ns = list(QUICK_NS) if tuple(ns) == FULL_NS else list(ns)
    else:
        videos = [BenchVideo(round(m * 60), g, tuple(size)) for m in minutes for g in gops]
    usable, notes = available_methods()
    chosen = [m for m in (methods or usable) if m in usable]
    unknown = [m for m in (methods or []) if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; known: {list(METHODS)}")
    res = Results(videos, sorted(set(ns)), chosen, notes=notes, quick=quick)
    res.notes.append(f"load average before: {_loadavg()}")
    for video in videos:
        path = ensure(video, video_dir, log=log)
        _warm_page_cache(path)
        for n in res.ns:
            indices = uniform_indices(video.num_frames, n)
            tmp = tempfile.mkdtemp(prefix="lvu-bench-cache-")
            try:
                for method in chosen:
                    cache = tmp if method.startswith("lvu cache") else None
                    if method == "lvu cache hit" and "lvu cache miss" not in chosen:
                        _measure("lvu cache miss", path, indices, video.fps, cache, timeout)  # fill it
                    cell = _measure(method, path, indices, video.fps, cache, timeout)
                    for _ in range(repeat - 1):
                        if cell.error or cell.seconds > REPEAT_UNDER or method == "lvu cache miss":
                            break  # (a second cache miss would be a hit)
                        again = _measure(method, path, indices, video.fps, cache, timeout)
                        if again.error is None and again.seconds < cell.seconds:
                            cell = again
                    res.cells[(video.name, n, method)] = cell
                    shown = f"{cell.seconds:.2f} s" if cell.seconds is not None else cell.error
                    log(f"  {video.label}  N={n:<4d} {method:<16s} {shown}")
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    res.notes.append(f"load average after: {_loadavg()} (other processes on the machine skew wall times)")
    return res


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


# ---- report -----------------------------------------------------------------------------------------


def _fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def table(res: Results, video: BenchVideo) -> str:
    """Markdown table for one video: seconds per N, then RSS, cpu and exactness at the largest N."""
    top = max(res.ns)
    head = ["method", *[f"N={n} s" for n in res.ns], f"RSS MB @{top}", f"cpu @{top}", "wrong / max off"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in res.methods:
        cells = [res.get(video, n, m) for n in res.ns]
        secs = [(_fmt(c.seconds) if c and c.error is None else f"error: {c.error}" if c else "n/a") for c in cells]
        last = cells[-1]
        ok = [c for c in cells if c is not None and c.error is None]
        if m in APPROXIMATE:
            exact = f"≈ off by <= {max(c.max_off for c in ok)} frames" if ok else "n/a"
        else:
            exact = f"{sum(c.wrong for c in ok)} wrong of {sum(res.ns)}" if ok else "n/a"
        lines.append("| " + " | ".join([m, *secs, _fmt(last.rss_mb if last else None, 0),
                                        _fmt(last.cpu if last else None, 1), exact]) + " |")
    return "\n".join(lines)


def _secs(res: Results, video: BenchVideo, n: int, method: str) -> float | None:
    c = res.get(video, n, method)
    return c.seconds if c is not None and c.error is None else None


def _near(res: Results, n: int) -> int:
    return min(res.ns, key=lambda x: (abs(x - n), -x))


def ratios(res: Results) -> list[tuple[str, str, str]]:
    """(what, value, verdict) for the issue's targets, on the longest GOP-250 video (else the
    longest video); an N not measured is replaced by the nearest one measured."""
    pool = [v for v in res.videos if v.gop == 250] or res.videos
    video = max(pool, key=lambda v: (v.seconds, v.gop))
    n32, n256 = _near(res, 32), _near(res, 256)
    out: list[tuple[str, str, str]] = []

    def ratio(label: str, a: float | None, b: float | None, good: Callable[[float], bool] | None, want: str) -> None:
        """`good` None: no target applies here, the value is shown for reference."""
        if a is None or b is None or b == 0:
            out.append((label, "n/a", "not measured"))
            return
        r = a / b
        verdict = "for reference" if good is None else ("met" if good(r) else "MISSED")
        out.append((label, f"{r:.1f}x", f"{verdict} (target {want})"))

    def reference(full_target: str) -> tuple[None, str]:
        """--quick: a 60-minute target is not judged on the 20-s video; the row is shown for reference."""
        return None, f"none with --quick; {full_target} on the 60-min videos"

    quick = res.quick
    lvu32, lvu256 = _secs(res, video, n32, "lvu exact"), _secs(res, video, n256, "lvu exact")
    ratio(f"lmms-eval sequential / lvu exact @N={n32}", _secs(res, video, n32, "lmms-eval pyav"), lvu32,
          *(reference(">= 20x") if quick else ((lambda r: r >= 20), ">= 20x")))
    ratio(f"decord / lvu exact @N={n256}", _secs(res, video, n256, "decord"), lvu256,
          *(reference(">= 2.5x") if quick else ((lambda r: r >= 2.5), ">= 2.5x")))
    ratio(f"torchcodec / lvu exact @N={n256}", _secs(res, video, n256, "torchcodec"), lvu256, None, "none")
    ratio(f"lvu exact / keyframes-only floor @N={n256}", lvu256, _secs(res, video, n256, "keyframes only"),
          *(reference("<= 2x") if quick else ((lambda r: r <= 2), "<= 2x")))
    hit_ratio = 5 if quick else 20
    for n in res.ns:
        ratio(f"lvu exact (cold) / cache hit @N={n}", _secs(res, video, n, "lvu exact"),
              _secs(res, video, n, "lvu cache hit"), lambda r: r >= hit_ratio, f">= {hit_ratio}x")
    c = res.get(video, n256, "lvu exact")
    if c is not None and c.rss_mb is not None:
        out.append((f"lvu exact peak RSS @N={n256}", f"{c.rss_mb:.0f} MB",
                    ("met" if c.rss_mb < 1024 else "MISSED") + " (target < 1024 MB)"))
        cpu_verdict = ("for reference (target none with --quick; both cores on the 60-min videos)" if quick else
                       ("met" if c.cpu >= 1.5 else "MISSED") + " (target: both cores, >= 1.5)")
        out.append((f"lvu exact cpu use @N={n256}", f"{c.cpu:.2f} cores", cpu_verdict))
    return [(f"{video.label}: {a}", b, v) for a, b, v in out]


def report(res: Results) -> str:
    parts = []
    for video in res.videos:
        parts.append(f"### {video.label} ({video.num_frames} frames)\n\n{table(res, video)}\n")
    parts.append("### ratios\n\n| ratio | value | verdict |\n|---|---|---|")
    parts.extend(f"| {a} | {b} | {v} |" for a, b, v in ratios(res))
    parts.append("\n" + (QUICK_TARGETS if res.quick else TARGETS))
    if res.notes:
        parts.append("\n" + "\n".join(res.notes))
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """`python benchmarks/decode.py` / `lvu bench decode`."""
    import argparse

    p = argparse.ArgumentParser(prog="lvu bench decode", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one 20-s 320x180 video, N=8 and 32: seconds, for CI")
    p.add_argument("--minutes", type=float, nargs="+", default=list(FULL_MINUTES))
    p.add_argument("--gop", type=int, nargs="+", default=list(FULL_GOPS))
    p.add_argument("--n", type=int, nargs="+", default=list(FULL_NS))
    p.add_argument("--size", default="640x360", help="WxH of the generated videos (default 640x360)")
    p.add_argument("--methods", nargs="+", choices=list(METHODS), help="default: all that are installed")
    p.add_argument("--video-dir", help="where generated videos are cached (default: lvu's cache dir)")
    p.add_argument("--repeat", type=int, default=1, help=f"best of R runs (runs over {REPEAT_UNDER:.0f} s run once)")
    p.add_argument("--json", help="also write the raw measurements here")
    a = p.parse_args(argv)
    w, _, h = a.size.partition("x")
    t0 = time.perf_counter()
    res = run(minutes=a.minutes, gops=a.gop, ns=a.n, size=(int(w), int(h)), methods=a.methods,
              video_dir=a.video_dir, quick=a.quick, repeat=a.repeat)
    print()
    print(report(res))
    print(f"\n(total {time.perf_counter() - t0:.0f} s; python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    if a.json:
        rows = [{"video": k[0], "n": k[1], "method": k[2], **vars(c)} for k, c in res.cells.items()]
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0
