#!/usr/bin/env python
"""`lvu build filter` figures: the haystack and an official-layout Video-MME fixture, removed % per
label, model calls, wall time, and kill -9 then resume.

1. haystack, neptune-qad (3 seeds, threshold 2) through the `openai` backend against the local fake
   server (`latency` s per reply), scripted per question by a hash of its text: the correct letter,
   a correct ranking, a wrong ranking, or garbage (1/4 each). Side by side, the floor: the same
   prompts sent by a bare AsyncOpenAI client at the same number of requests in flight
   (concurrency x seeds), no ledger, no parsing. Medians of --repeat runs; lvu's time is the
   filter's own (`filter_samples`, from its output line), the command's wall time is printed too.
2. kill -9: the same filter killed after a third of the questions is committed, then resumed; the
   resumed files are compared byte for byte with an uninterrupted run's, and the calls counted.
3. Video-MME layout (60 questions, 10 videos, its labels) with the `random` baseline: removed % per
   label (expected overall: 3p^2(1-p) + p^3 = 15.6 % for p = 1/4).

    python benchmarks/build_filter.py [--latency 0.05] [--concurrency 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from lvu.construct.blind import qad_prompt_text, seed_order
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import LETTERS


def user_text(body: dict) -> str:
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def scripted(samples: dict[tuple[str, frozenset], tuple[list[str], int]]):
    """Replies by a hash of the question: right letter / right ranking / wrong ranking / garbage.
    A question is its text and its set of options (the haystack repeats question texts)."""
    def answer(body: dict) -> str:
        text = user_text(body)
        question = re.search(r"QUESTION: (.*)\n", text).group(1)
        shown = [t for _, t in re.findall(r"^(?:Options: )?([A-Z])\. (.+)$", text, re.M)]
        options, ans = samples[question, frozenset(shown)]
        c = shown.index(options[ans])
        w = (c + 1) % len(shown)
        rank = lambda top: " > ".join(LETTERS[j] for j in [top, *(k for k in range(len(shown)) if k != top)])
        kind = zlib.crc32((question + "|".join(options)).encode()) % 4
        return [LETTERS[c], f"ANSWER: {rank(c)}\nEXPLANATION: likely.", f"ANSWER: {rank(w)}\nEXPLANATION: hm.",
                "I cannot tell without the video."][kind]
    return answer


def lvu(args: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lvu.cli", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return time.perf_counter() - t0, done


def filter_seconds(stdout: str) -> float:
    return float(re.search(r"decisions from the ledger, ([\d.]+) s", stdout).group(1))


async def floor(base_url: str, prompts: list[str], in_flight: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    sem = asyncio.Semaphore(in_flight)

    async def one(p: str) -> None:
        async with sem:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": p}], max_tokens=512)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    await client.close()
    return time.perf_counter() - t0


def committed(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM ledger_items").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def videomme_fixture(root: Path) -> Path:
    durations, domains = ("short", "medium", "long"), ("Knowledge", "Sports Competition")
    tasks = ("Counting Problem", "OCR Problems", "Temporal Reasoning")
    records = []
    for v in range(10):
        qs = [{"question_id": f"{v:03d}-{q}", "task_type": tasks[(v + q) % 3],
               "question": f"In video {v}, what happens in scene {q}?",
               "options": [f"{LETTERS[i]}. option {i} of {v}-{q}" for i in range(4)], "answer": "ABCD"[(v * 7 + q) % 4]}
              for q in range(6)]
        records.append({"video_id": f"{v:03d}", "duration": durations[v % 3], "domain": domains[v % 2],
                        "sub_category": "x", "videoID": f"vid{v:08d}", "url": "", "questions": qs})
    root.mkdir(parents=True, exist_ok=True)
    (root / "videomme.json").write_text(json.dumps(records))
    return root


def groups(out: Path) -> str:
    summary = json.loads((out / "summary.json").read_text())
    return "\n".join(f"  {g:28s} {v['removed_pct']:5.1f} % [{v['low']:.1f}, {v['high']:.1f}]  n={v['n']}"
                     for g, v in summary["groups"].items())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lvu-filter-bench-"))
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp / "cache"), "LVU_OFFLINE": "1", "COLUMNS": "160"}
    from lvu.runs.grading import make_benchmark

    os.environ["LVU_CACHE_DIR"] = env["LVU_CACHE_DIR"]
    haystack = make_benchmark("haystack").load()[0]  # generated before any clock
    by_question = {(s.question, frozenset(s.options)): (s.options, s.answer) for s in haystack}
    assert all(by_question[s.question, frozenset(s.options)] == (s.options, s.answer) for s in haystack), \
        "a question text and option set must have one answer for the script"
    prompts = [qad_prompt_text(s.question, [s.options[i] for i in seed_order(s.question, s.options, k)])
               for s in haystack for k in range(3)]
    with FakeOpenAIServer(answer=scripted(by_question), latency=opts.latency, record=False) as server:
        margs = ["-m", "openai", "-a", f"base_url={server.base_url}", "-a", "model=m", "-a", "cache=false"]
        base = ["build", "filter", "haystack", "--rule", "neptune-qad", "--concurrency", str(opts.concurrency), *margs]
        lvu_s, cmd_s, floor_s = [], [], []
        for r in range(opts.repeat):
            n0 = server.n_requests
            wall, done = lvu([*base, "-o", str(tmp / f"h{r}"), "--results-dir", str(tmp / f"res{r}")], env)
            calls = server.n_requests - n0
            lvu_s.append(filter_seconds(done.stdout))
            cmd_s.append(wall)
            floor_s.append(asyncio.run(floor(server.base_url, prompts, opts.concurrency * 3)))
        print(f"haystack neptune-qad: {len(haystack)} questions, {calls} model calls per run, latency {opts.latency} s, "
              f"concurrency {opts.concurrency} questions ({opts.concurrency * 3} calls) in flight")
        print(f"  lvu filter {statistics.median(lvu_s):.2f} s (command {statistics.median(cmd_s):.2f} s incl. start-up "
              f"and loading) | floor {statistics.median(floor_s):.2f} s | ratio lvu/floor "
              f"{statistics.median(lvu_s) / statistics.median(floor_s):.2f}  (medians of {opts.repeat})")
        print(groups(tmp / "h0"))

        db = tmp / "killed" / "lvu.sqlite"
        killed = [*base, "-o", str(tmp / "k"), "--results-dir", str(tmp / "killed")]
        proc = subprocess.Popen([sys.executable, "-m", "lvu.cli", *killed], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while committed(db) < len(haystack) // 3 and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        at_kill = committed(db)
        n0 = server.n_requests
        wall, done = lvu(killed, env)
        same = all((tmp / "k" / f).read_bytes() == (tmp / "h0" / f).read_bytes()
                   for f in ("kept.jsonl", "removed.jsonl", "decisions.jsonl"))
        print(f"kill -9 after {at_kill} of {len(haystack)} decisions: resume made {server.n_requests - n0} calls "
              f"(= 3 x {len(haystack) - at_kill}), {filter_seconds(done.stdout):.2f} s; files identical to an "
              f"uninterrupted run: {same}")

    root = videomme_fixture(tmp / "videomme")
    wall, done = lvu(["build", "filter", "videomme", "--data", str(root), "--rule", "neptune-qad", "-m", "random",
                      "-o", str(tmp / "v"), "--results-dir", str(tmp / "vres")], env)
    print(f"Video-MME layout, 60 questions, neptune-qad with the random baseline ({filter_seconds(done.stdout):.2f} s, "
          f"180 calls):")
    print(groups(tmp / "v"))
    print(f"(files under {tmp})")


if __name__ == "__main__":
    main()
