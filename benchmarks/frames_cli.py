#!/usr/bin/env python
"""`lvu frames` end to end against lmms-eval's read_video approach, side by side.

    python benchmarks/frames_cli.py [--minutes 60] [--gop 250] [--n 32] [--format png] [--repeat 5]

On a generated 640x360 H.264 video (lvu.media.benchvideo; 60 min, GOP 250 by default; encoded once
and cached under lvu's cache dir, ~7 min on 2 cores) each repetition times, in fresh processes:

  lvu frames     the real CLI: `lvu frames VIDEO --plan uniform:N --format F --out DIR`, wall time of
                 the subprocess (interpreter start, imports, open, decode, image files, frames.json).
                 Cold: no frame cache is involved (`lvu frames` does not use it); lvu's frame index
                 is warm (built by one untimed run first, as after any first open of a video).
  lmms-eval      lmms-eval's read_video_pyav (lmms-eval is not installed here; its code path is
                 reproduced in lvu.media.bench_methods._lmms_eval_pyav): `python -c` that opens the
                 file, takes np.linspace(0, T-1, N, dtype=int), decodes from frame 0 with
                 thread_type="AUTO" up to the last index and returns RGB arrays — no image files
                 written, so it is favoured.

Methods alternate within each repetition (machine load hits both alike); medians and the ratio
are printed. Both run with bytecode caching on, as after `pip install` (PYTHONDONTWRITEBYTECODE is
dropped from their environment). Every frame carries its number as a barcode: lvu's files are read back and checked.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LMMS_CHILD = """
import sys, av, numpy as np
from lvu.media.bench_methods import _lmms_eval_pyav
path, n = sys.argv[1], int(sys.argv[2])
with av.open(path) as c:
    total = c.streams.video[0].frames
frames = _lmms_eval_pyav(path, np.linspace(0, total - 1, n, dtype=int).tolist())
print(len(frames))
"""


def _lvu_command() -> list[str]:
    exe = Path(sys.executable).with_name("lvu")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "lvu.cli"]


# Both children may cache bytecode, as an installed package has: a sandbox's PYTHONDONTWRITEBYTECODE
# would otherwise make every run recompile lvu's modules (~0.3 s) and PyAV's Python parts.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=_ENV)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}... failed (rc={proc.returncode}): {proc.stderr.strip()[-300:]}")
    return wall


def _check(out: Path) -> str:
    """Barcodes of the written frames against frames.json's frame numbers."""
    import numpy as np
    from PIL import Image

    from lvu.media.benchvideo import read_code

    doc = json.loads((out / "frames.json").read_text())
    wrong = sum(read_code(np.asarray(Image.open(out / f["file"]).convert("RGB"))) != f["frame"] for f in doc["frames"])
    return f"{len(doc['frames'])} frames, {wrong} wrong"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--gop", type=int, default=250)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--format", default="png", choices=["png", "jpg"])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--video-dir", help="where the generated video is cached (default: lvu's cache dir)")
    a = p.parse_args(argv)

    from lvu.media.benchvideo import BenchVideo, ensure
    from lvu.paths import cache_dir

    video = BenchVideo(round(a.minutes * 60), a.gop, (640, 360))
    path = ensure(video, a.video_dir or cache_dir("bench-videos"))
    with open(path, "rb") as f:  # into the page cache, for both
        while f.read(16 << 20):
            pass
    out = Path(tempfile.mkdtemp(prefix="lvu-frames-bench-"))
    lvu = [*_lvu_command(), "frames", str(path), "--plan", f"uniform:{a.n}", "--format", a.format, "--out", str(out)]
    lmms = [sys.executable, "-c", LMMS_CHILD, str(path), str(a.n)]
    try:
        warm = _timed(lvu)  # builds lvu's frame index if this video has none yet
        print(f"{video.label}: first lvu frames run (index warm-up, untimed) {warm:.2f} s; {_check(out)}")
        times: dict[str, list[float]] = {"lvu frames": [], "lmms-eval read_video": []}
        for i in range(a.repeat):
            times["lvu frames"].append(_timed(lvu))
            times["lmms-eval read_video"].append(_timed(lmms))
            print(f"  run {i + 1}: lvu frames {times['lvu frames'][-1]:.2f} s, "
                  f"lmms-eval read_video {times['lmms-eval read_video'][-1]:.2f} s", flush=True)
        print(f"  lvu output check: {_check(out)}")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n| {video.label}, uniform:{a.n}, {a.format} | median s (of {a.repeat}) | min s | max s |")
    print("|---|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {med[k]:.2f} | {min(v):.2f} | {max(v):.2f} |")
    print(f"\nlmms-eval read_video / lvu frames (medians): {med['lmms-eval read_video'] / med['lvu frames']:.1f}x "
          f"(target >= 10x); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} cpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
