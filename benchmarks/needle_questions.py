#!/usr/bin/env python
"""`lvu build needle --questions llm` (MLVU Figure 7's prompt, one call per needle) against a bare
asyncio loop of the same calls, side by side.

`--needles` text needles, each with a `<stem>.caption` file, spliced into a 10 s 160x96 background
(one video per needle: `--depths random --per-cell N`); the models are the `openai` backend against
the local fake server (tests' FakeOpenAIServer as a separate process, `--latency` s per reply, the
same valid JSON reply to every prompt). The videos are made first, outside the timing, by a template
build; then, timed (median of `--repeat`, a new model name each round so every question is asked):

- lvu: the needle pipeline into that folder with `--questions llm` (lvu.construct.needle_pipeline.
  build_needles: plan check, the caption stage, the question stage with `--concurrency` calls in flight,
  the splice stage finding every video made, the export writing needle.jsonl);
- its fixed cost: the same build once everything is committed (nothing asked, nothing spliced);
- bare: `--needles` chat completions with the openai client (AsyncOpenAI, a semaphore of
  `--concurrency`), the same prompts, each reply parsed by needle_llm.parse_nqa.

    python benchmarks/needle_questions.py [--needles 50] [--latency 0.3] [--concurrency 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lvu.construct.needle_llm import format_nqa_prompt, parse_nqa  # noqa: E402
from lvu.construct.needle_pipeline import NeedlePipeline, build_needles  # noqa: E402

REPLY = json.dumps([{"question": "What does the title card in the video show?", "options":
                     ["a word", "a face", "a map", "a clock"], "answer": "a word"},
                    {"question": "What colour is the title card's text?", "options":
                     ["light", "red", "blue", "green"], "answer": "light"}])


def serve(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "lvu.models.testing_server", "--latency", str(latency),
                             "--answer", REPLY], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"fake server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.split()[1]}/v1"


def inputs(root: Path, n: int) -> tuple[Path, Path, list[str]]:
    from needle_videos import barcode_background

    (root / "bg").mkdir()
    barcode_background(root / "bg" / "street.mp4", seconds=10, cues=None)
    needles = root / "needles"
    needles.mkdir()
    captions = []
    for i in range(n):
        word = f"WORD{i:03d}"
        (needles / f"w{i:03d}.txt").write_text(word)
        caption = (f"A dark title card showing the light text {word} in large letters, centred, for two seconds; "
                   f"it is card number {i} of a series of word cards.")
        (needles / f"w{i:03d}.caption").write_text(caption)
        captions.append(caption)
    return root / "bg", needles, captions


def options(needles: Path, n: int, questions: str) -> dict[str, object]:
    return {"needles": str(needles), "depths": "random", "per_cell": n, "lengths": "10", "needle_seconds": 1.0,
            "questions": questions}


def build(bg: Path, needles: Path, out: Path, n: int, questions: str, *, models: dict | None = None,
          concurrency: int = 8, replace: bool = False) -> tuple[float, int]:
    pipeline = NeedlePipeline(options(needles, n, questions))
    items = pipeline.items([str(bg)])
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # --replace lists what changes
        result = build_needles(pipeline, items, out, workers=2, models=models, concurrency=concurrency,
                               replace=replace)
    return time.perf_counter() - t0, len(result.samples)


async def bare(url: str, prompts: list[str], concurrency: int, model: str) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> int:
        async with gate:
            reply = await client.chat.completions.create(model=model, temperature=0.0, max_tokens=1024,
                                                         messages=[{"role": "user", "content": prompt}])
            return len(parse_nqa(reply.choices[0].message.content or ""))

    t0 = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    seconds = time.perf_counter() - t0
    await client.close()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--needles", type=int, default=50)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["LVU_CACHE_DIR"] = str(root / "cache")
        bg, needles, captions = inputs(root, args.needles)
        out = root / "out"
        t, samples = build(bg, needles, out, args.needles, "template")
        print(f"setup: {args.needles} needle videos spliced (template questions) in {t:.2f} s, outside the timing")
        server, url = serve(args.latency)
        try:
            prompts = [format_nqa_prompt(c) for c in captions]
            asyncio.run(bare(url, prompts[:2], 2, "warm-up"))
            lvu, fixed, plain = [], [], []
            for r in range(args.repeat):
                model = {"llm": ("openai", {"model": f"setter-{r}", "base_url": url, "cache": False})}
                t, samples = build(bg, needles, out, args.needles, "llm", models=model, concurrency=args.concurrency,
                                   replace=True)
                lvu.append(t)
                fixed.append(build(bg, needles, out, args.needles, "llm", models=model,
                                   concurrency=args.concurrency)[0])
                plain.append(asyncio.run(bare(url, prompts, args.concurrency, f"bare-{r}")))
        finally:
            server.kill()
    ideal = -(-args.needles // args.concurrency) * args.latency
    m_lvu, m_fixed, m_bare = (statistics.median(x) for x in (lvu, fixed, plain))
    print(f"{args.needles} needles, {args.latency:g} s per reply, {args.concurrency} calls in flight "
          f"(ideal {ideal:.2f} s); medians of {args.repeat}; {samples} samples written")
    print(f"  bare asyncio loop (openai client)                  {m_bare:6.2f} s   1.00x")
    print(f"  lvu build --questions llm (whole build)            {m_lvu:6.2f} s   {m_lvu / m_bare:.2f}x")
    print(f"  the same build once all is committed (fixed cost)  {m_fixed:6.2f} s")
    print(f"  the question stage alone (build - fixed cost)      {m_lvu - m_fixed:6.2f} s   "
          f"{(m_lvu - m_fixed) / m_bare:.2f}x")
    print("  rounds: lvu " + ", ".join(f"{t:.2f}" for t in lvu) + "; fixed " + ", ".join(f"{t:.2f}" for t in fixed)
          + "; bare " + ", ".join(f"{t:.2f}" for t in plain))


if __name__ == "__main__":
    main()
