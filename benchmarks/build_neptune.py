#!/usr/bin/env python
"""`lvu build neptune` figures on the README example's four videos (tests/neptune_example.py):
per-stage units, calls, tokens and wall time, and kill -9 during the frame captions then resume.

The models are the `openai` backend against the local fake server answering every prompt in the
paper's format (tests/neptune_replies.py), `latency` s per reply, `--concurrency` units in flight;
the VLM captioner path (one call per frame at 1 fps). The build runs as a subprocess, killed with
SIGKILL once `--kill-after` frame captions are committed, then run again to the end; an
uninterrupted build into another folder gives the files the resumed one must equal byte for byte.

    python benchmarks/build_neptune.py [--latency 0.15] [--concurrency 2] [--kill-after 10]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lvu.models.testing_server import FakeOpenAIServer  # noqa: E402
from neptune_example import write_videos  # noqa: E402
from neptune_replies import ScriptedReplies  # noqa: E402

FILES = ("neptune_full.json", "removed.json", "benchmark.jsonl")


def committed(db: Path, stage: str) -> int:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM ledger_items WHERE error IS NULL AND result LIKE ?",
                               (f'%"stage":"{stage}"%',)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.15)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--kill-after", type=int, default=10)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lvu-build-neptune-"))
    videos = write_videos(work / "videos")
    env = {**os.environ, "LVU_CACHE_DIR": str(work / "cache"), "LVU_PROGRESS_INTERVAL": "0"}
    replies = ScriptedReplies()
    with FakeOpenAIServer(answer=replies, latency=a.latency) as server:
        def command(out: Path) -> list[str]:
            args = [sys.executable, "-m", "lvu.cli", "build", "neptune", str(videos), "-o", str(out), "--quiet",
                    "--concurrency", str(a.concurrency)]
            for role in ("llm", "vlm"):
                args += [f"--{role}", "openai", f"--{role}-arg", "model=scripted", f"--{role}-arg",
                         f"base_url={server.base_url}", f"--{role}-arg", "cache=false"]
            return args

        fresh = work / "fresh"
        t0 = time.perf_counter()
        done = subprocess.run(command(fresh), env=env, capture_output=True, text=True)
        uninterrupted = time.perf_counter() - t0
        assert done.returncode == 0, done.stderr[-2000:]
        print(f"uninterrupted build: {uninterrupted:.1f} s, {len(server.chat_requests())} model calls")
        print(done.stdout)

        out, db = work / "out", work / "out" / "lvu.sqlite"
        t0 = time.perf_counter()
        child = subprocess.Popen(command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while committed(db, "neptune.frame-captions") < a.kill_after and child.poll() is None:
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed_at = time.perf_counter() - t0
        while server.in_flight:
            time.sleep(0.02)
        at_kill = committed(db, "neptune.frame-captions")
        before = dict(replies.calls)
        t0 = time.perf_counter()
        resumed = subprocess.run(command(out), env=env, capture_output=True, text=True)
        resume_s = time.perf_counter() - t0
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        again = {k: replies.calls[k] - before.get(k, 0) for k in replies.calls if replies.calls[k] - before.get(k, 0)}
    same = all((out / f).read_bytes() == (fresh / f).read_bytes() for f in FILES)
    print(f"kill -9 after {killed_at:.1f} s with {at_kill} of 36 frame captions committed; the resume took "
          f"{resume_s:.1f} s and asked {again.get('frame_caption', 0)} frame captions (36 - {at_kill} = "
          f"{36 - at_kill}) and {sum(again.values())} calls in all: {json.dumps(again, sort_keys=True)}")
    print(f"resumed files identical to the uninterrupted build's: {same} ({', '.join(FILES)})")
    print(f"(work folder: {work})")


if __name__ == "__main__":
    main()
