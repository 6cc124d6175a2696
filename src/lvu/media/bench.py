"""`lvu bench decode`: lvu's frame reading against the peers' approaches and the exact floor, side by side.

For each benchmark video (lvu.media.benchvideo: synthetic H.264, 640x360 @ 30 fps, GOP 30 and
250, 10 and 60 minutes, cached) and each frame count N, the same N frame numbers
(`np.linspace(0, T-1, N, dtype=int)`, lmms-eval's uniform formula) are read by every method
(lvu.media.bench_methods):

    lvu exact         VideoReader(path).get_frames_at(indices)
    lvu approximate   VideoReader(path, approximate=True): keyframe at or before each target
    lvu cache miss    FrameCache(tmp).get_or_decode(path, times): decode + store (cold)
    lvu cache hit     the same call again, in a new process: reads the stored entry
    lmms-eval pyav    lmms-eval's default reader (models/model_utils/load_video.py::read_video_pyav):
                      thread_type="AUTO", decode from frame 0 and keep the wanted frames
    decord            decord.VideoReader(num_threads=2, lmms-eval's default).get_batch(indices)
    torchcodec        VideoDecoder(seek_mode="exact", num_ffmpeg_threads=0).get_frames_at(indices)
    exact floor       PyAV decoding exactly the frames an exact decoder must decode for the request
                      (lvu.media.decode_floor: each target's reference chain from its keyframe,
                      non-reference frames no target needs skipped), as many decoders as lvu uses
    keyframes only    decode every keyframe of the file (skip_frame="NONKEY"), keep the one at or
                      before each target: the floor of *approximate* reading

Each measurement runs in a fresh process (so peak RSS — the child's VmHWM, i.e. ru_maxrss
without the parent's mark that Linux carries across fork+exec — is per method; it includes the
interpreter and the method's imports), with the file in the page cache and lvu's frame index
cached on disk (built once per video before the runs, as any first open does). Time counts from
opening the file to holding N RGB uint8 numpy frames at full size; imports (and the floor's
planning) are excluded. Every frame carries its number as a barcode, so each row also says how
many frames were wrong (exact methods) or how far off they were (approximate ones). `cpu` = CPU
seconds / wall seconds. lvu exact and the floor also report the frames they decoded against the
request's minimum. Tests never assert these times; this module only prints them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lvu.media.bench_methods import _child  # noqa: F401  (the child's entry point; re-exported)
from lvu.media.benchvideo import BenchVideo, ensure

METHODS: dict[str, str] = {
    "lvu exact": "lvu VideoReader, exact (default)",
    "lvu approximate": "lvu VideoReader(approximate=True): keyframe at or before",
    "lvu cache miss": "lvu FrameCache.get_or_decode, cold: decode + store",
    "lvu cache hit": "lvu FrameCache.get_or_decode, entry present",
    "lmms-eval pyav": "lmms-eval read_video_pyav: sequential decode from frame 0",
    "decord": "decord 0.6 get_batch, num_threads=2",
    "torchcodec": "torchcodec 0.13 get_frames_at, exact, threads=auto",
    "exact floor": "PyAV decoding only the frames an exact read must decode",
    "keyframes only": "decode every keyframe (NONKEY), nearest before",
}
APPROXIMATE = {"lvu approximate", "keyframes only"}
OPTIONAL = {"decord": "decord", "torchcodec": "torchcodec.decoders"}

FULL_MINUTES = (10, 60)
FULL_GOPS = (30, 250)
FULL_NS = (8, 32, 64, 256)
QUICK_SECONDS = 20
QUICK_SIZE = (320, 180)
QUICK_NS = (8, 32)
REPEAT_UNDER = 60.0
FLOOR_NS = (32, 256)
FLOOR_TARGET = 1.15

TARGETS = f"""targets (issue), on the longest GOP-250 video unless said:
  lvu exact >= 20x faster than lmms-eval sequential @N=32; >= 2.5x faster than decord @N=256;
  on every GOP @N=32 and 256: lvu exact decodes <= {FLOOR_TARGET}x the minimum frames and takes <= {FLOOR_TARGET}x the
  exact floor's time; cache hit >= 20x faster than a cold decode (lvu exact); lvu exact peak RSS < 1024 MB @N=256;
  both cores used"""

QUICK_TARGETS = f"""targets (--quick: one 20-s 320x180 video, a smoke test): every exact method returns the asked frames;
  cache hit >= 5x faster than a cold decode (lvu exact); lvu exact peak RSS < 1024 MB; lvu exact decodes <= {FLOOR_TARGET}x
  the minimum frames. The speed targets (20x lmms-eval, 2.5x decord, {FLOOR_TARGET}x the exact floor's time, both cores)
  need the long videos: run without --quick."""


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
    decoded: int | None = None
    """lvu exact and the exact floor: frames decoded (lvu.media.decode_floor.frames_decoded)."""
    minimum: int | None = None
    """The fewest frames an exact decoder must decode for this request."""
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
    code = "from lvu.media.bench_methods import _child; _child()"
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
    cell = Cell(seconds=out["seconds"], rss_mb=out["rss_mb"], cpu=out["cpu"], decoded=out.get("decoded"),
                minimum=out.get("minimum"))
    if len(codes) != len(indices):
        cell.error = f"returned {len(codes)} frames for {len(indices)}"
    elif method in APPROXIMATE:
        cell.max_off = max((abs(c - i) for c, i in zip(codes, indices)), default=0)
    else:
        cell.wrong = sum(c != i for c, i in zip(codes, indices))
    return cell


def _seconds(cell: Cell) -> float:
    """The time of a cell without an error: every such cell was measured (see `_measure`)."""
    assert cell.seconds is not None, "a cell without an error has its time"
    return cell.seconds


def _median(cells: list[Cell]) -> Cell:
    """The run of median time (the lower middle one for an even count); the first error if all failed."""
    good = sorted((c for c in cells if c.error is None), key=_seconds)
    return good[(len(good) - 1) // 2] if good else cells[0]


def _warm_index(path: Path) -> str:
    """Build (or find) lvu's on-disk frame index of `path`, as any first open does; says how long."""
    from lvu.media.frame_index import cached_index
    from lvu.media.video import VideoReader

    if cached_index(path) is not None:
        return "was cached"
    t0 = time.perf_counter()
    VideoReader(path).close()
    return f"built in {time.perf_counter() - t0:.2f} s (once; the runs read it from disk)"


def _warm_page_cache(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def run(*, minutes: Sequence[float] = FULL_MINUTES, gops: Sequence[int] = FULL_GOPS, ns: Sequence[int] = FULL_NS,
        size: tuple[int, int] = (640, 360), methods: Sequence[str] | None = None, video_dir: str | Path | None = None,
        quick: bool = False, repeat: int = 1, timeout: float = 900.0, log: Callable[[str], None] = print) -> Results:
    """Make (or reuse) the videos and measure every method on each (video, N). `quick`: one 20-s
    320x180 GOP-250 video and N in (8, 32) unless `ns` is given — seconds, for tests. `repeat`:
    keep the run of median time of that many (runs over REPEAT_UNDER seconds are not repeated)."""
    if video_dir is None:
        from lvu.paths import cache_dir

        video_dir = cache_dir("bench-videos")
    if quick:
        videos = [BenchVideo(QUICK_SECONDS, 250, QUICK_SIZE)]
        ns = list(QUICK_NS) if tuple(ns) == FULL_NS else list(ns)
    else:
        videos = [BenchVideo(round(m * 60), g, (size[0], size[1])) for m in minutes for g in gops]
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
        res.notes.append(f"{video.label}: lvu's frame index {_warm_index(path)}")
        for n in res.ns:
            indices = uniform_indices(video.num_frames, n)
            tmp = tempfile.mkdtemp(prefix="lvu-bench-cache-")
            try:
                runs: dict[str, list[Cell]] = {m: [] for m in chosen}
                for attempt in range(max(1, repeat)):  # methods interleaved: load changes hit them alike
                    for method in chosen:
                        done = runs[method]
                        if attempt and (done[0].error or _seconds(done[0]) > REPEAT_UNDER or method == "lvu cache miss"):
                            continue  # (a second cache miss would be a hit)
                        cache = tmp if method.startswith("lvu cache") else None
                        if method == "lvu cache hit" and "lvu cache miss" not in chosen and not done:
                            _measure("lvu cache miss", path, indices, video.fps, cache, timeout)  # fill it
                        done.append(_measure(method, path, indices, video.fps, cache, timeout))
                for method, cells in runs.items():
                    cell = _median(cells)
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
    """Markdown table for one video: seconds per N, then RSS, cpu and exactness at the largest N, and
    (lvu exact, exact floor) frames decoded against the minimum at each N."""
    top = max(res.ns)
    head = ["method", *[f"N={n} s" for n in res.ns], f"RSS MB @{top}", f"cpu @{top}", "wrong / max off",
            "decoded / minimum frames"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in res.methods:
        cells = [res.get(video, n, m) for n in res.ns]
        secs = [(_fmt(c.seconds) if c and c.error is None else f"error: {c.error}" if c else "n/a") for c in cells]
        last = cells[-1]
        ok = [c for c in cells if c is not None and c.error is None]
        if m in APPROXIMATE:  # (max_off / wrong: set on every cell without an error, _measure)
            exact = f"≈ off by <= {max(c.max_off or 0 for c in ok)} frames" if ok else "n/a"
        else:
            exact = f"{sum(c.wrong or 0 for c in ok)} wrong of {sum(res.ns)}" if ok else "n/a"
        counts = ", ".join(f"{c.decoded} / {c.minimum}" for c in ok if c.decoded is not None) or "—"
        lines.append("| " + " | ".join([m, *secs, _fmt(last.rss_mb if last else None, 0),
                                        _fmt(last.cpu if last else None, 1), exact, counts]) + " |")
    return "\n".join(lines)


def _secs(res: Results, video: BenchVideo, n: int, method: str) -> float | None:
    c = res.get(video, n, method)
    return c.seconds if c is not None and c.error is None else None


def _near(res: Results, n: int) -> int:
    return min(res.ns, key=lambda x: (abs(x - n), -x))


def ratios(res: Results) -> list[tuple[str, str, str]]:
    """(what, value, verdict) for the issue's targets, on the longest GOP-250 video (else the
    longest video), then lvu exact against the exact floor on every video; an N not measured is
    replaced by the nearest one measured."""
    pool = [v for v in res.videos if v.gop == 250] or res.videos
    video = max(pool, key=lambda v: (v.seconds, v.gop))
    n32, n256 = _near(res, 32), _near(res, 256)
    out: list[tuple[str, str, str]] = []

    def ratio(label: str, a: float | None, b: float | None, good: Callable[[float], bool] | None, want: str,
              digits: int = 1, of: BenchVideo | None = None) -> None:
        """`good` None: no target applies here, the value is shown for reference."""
        label = f"{(of or video).label}: {label}"
        if a is None or b is None or b == 0:
            out.append((label, "n/a", "not measured"))
            return
        r = a / b
        verdict = "for reference" if good is None else ("met" if good(r) else "MISSED")
        out.append((label, f"{r:.{digits}f}x", f"{verdict} (target {want})"))

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
    ratio(f"lvu exact / keyframes-only @N={n256}", lvu256, _secs(res, video, n256, "keyframes only"), None,
          "none: keyframes only is the floor of approximate reads, not of exact ones")
    hit_ratio = 5 if quick else 20
    for n in res.ns:
        ratio(f"lvu exact (cold) / cache hit @N={n}", _secs(res, video, n, "lvu exact"),
              _secs(res, video, n, "lvu cache hit"), lambda r: r >= hit_ratio, f">= {hit_ratio}x")
    c = res.get(video, n256, "lvu exact")
    if c is not None and c.rss_mb is not None and c.cpu is not None:  # (measured together)
        out.append((f"{video.label}: lvu exact peak RSS @N={n256}", f"{c.rss_mb:.0f} MB",
                    ("met" if c.rss_mb < 1024 else "MISSED") + " (target < 1024 MB)"))
        cpu_verdict = ("for reference (target none with --quick; both cores on the 60-min videos)" if quick else
                       ("met" if c.cpu >= 1.5 else "MISSED") + " (target: both cores, >= 1.5)")
        out.append((f"{video.label}: lvu exact cpu use @N={n256}", f"{c.cpu:.2f} cores", cpu_verdict))
    within = (lambda r: r <= FLOOR_TARGET)  # noqa: E731
    for v in res.videos:  # lvu exact against the exact floor, on every video
        for n in sorted({_near(res, f) for f in FLOOR_NS}):
            lvu = res.get(v, n, "lvu exact")
            ok = lvu if lvu is not None and lvu.error is None and lvu.decoded is not None else None
            ratio(f"lvu exact decoded frames / minimum @N={n}", ok.decoded if ok else None, ok.minimum if ok else None,
                  within, f"<= {FLOOR_TARGET}x", digits=2, of=v)
            target: tuple[Callable[[float], bool] | None, str] = (
                reference(f"<= {FLOOR_TARGET}x") if quick else (within, f"<= {FLOOR_TARGET}x"))
            ratio(f"lvu exact / exact floor time @N={n}", _secs(res, v, n, "lvu exact"), _secs(res, v, n, "exact floor"),
                  *target, digits=2, of=v)
    return out


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
    p.add_argument("--repeat", type=int, default=1, help=f"median of R runs, methods interleaved (runs over {REPEAT_UNDER:.0f} s run once)")
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
