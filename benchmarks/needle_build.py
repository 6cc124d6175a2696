#!/usr/bin/env python
"""Needle insertion speed: `lvu build needle` putting 10 needles into a 60-minute 640x360 background,
against one sequential decode of that background (every video and audio frame, PyAV, threaded) — the
floor any tool that decodes the whole video cannot beat.

The background is generated first (outside the timing; kept in --work and reused): a slowly panning
smooth texture with a moving square, H.264 (x264 `--preset` veryfast, a keyframe every --gop
frames, x264's default B-frames), 30 fps, stereo 48 kHz AAC noise; 10 needles: four 4-second
1280x720 25 fps clips with a tone, three images and three text cards (3 s each). The build is one
`--task order --order-size 10` video of the background's length (the needles at random positions,
one per tenth of the video), so the output is 60 minutes too.

  - decode: demux + decode every packet of the background once (video threads AUTO).
  - lvu:    plan_build + run_build (whole GOPs and the AAC packets between splices copied; cut
            GOPs, the needles and the sound around each splice encoded).
  - lvu --exact-audio: the same, the sound decoded and re-encoded whole (sample-exact).
  - video only: the same splice with audio=None (the breakdown: what the picture costs).
  - lvu --reencode (--with-reencode): every frame decoded and encoded (single-threaded x264, for
    reproducible bytes), for scale.

Runs alternate (decode, lvu, decode, lvu, ...) and medians of --repeat are printed with the ratio.

    python benchmarks/needle_build.py [--minutes 60] [--repeat 3] [--work /tmp/lvu-needle-bench] [--with-reencode]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from lvu.construct.needle_media import load_needles
from lvu.construct.needle_pipeline import run_build
from lvu.construct.needles import NeedleSettings, find_backgrounds, plan_build
from lvu.media.encode import add_h264_stream

W, H, FPS, RATE = 640, 360, 30, 48000


def make_background(path: Path, minutes: float, gop: int) -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(40, 170, size=(9, 16, 3)).astype(np.uint8)
    texture = np.asarray(Image.fromarray(base).resize((2 * W, 2 * H), Image.BICUBIC))
    n = round(minutes * 60 * FPS)
    tmp = path.with_suffix(".tmp.mp4")
    with av.open(str(tmp), "w", format="mp4") as out:
        video = add_h264_stream(out, W, H, FPS, gop=gop, crf=23, preset="veryfast")
        audio = out.add_stream("aac", rate=RATE, layout="stereo")
        sent = 0
        for i in range(n):
            t = i / FPS
            x = int(W / 2 * (1 + np.sin(2 * np.pi * t / 47)))
            y = int(H / 2 * (1 + np.sin(2 * np.pi * t / 31)))
            frame = texture[y:y + H, x:x + W].copy()
            sx, sy = int((W - 40) * (0.5 + 0.5 * np.sin(t))), int((H - 40) * (0.5 + 0.5 * np.cos(0.7 * t)))
            frame[sy:sy + 40, sx:sx + 40] = (230, 230, 230)
            vf = av.VideoFrame.from_ndarray(frame, format="rgb24")
            vf.pts = i
            out.mux(video.encode(vf))
            while sent < (i + 1) * RATE // FPS:  # interleave the audio, 1024 samples at a time
                block = (rng.standard_normal((2, 1024)) * 0.03).astype(np.float32)
                af = av.AudioFrame.from_ndarray(block, format="fltp", layout="stereo")
                af.sample_rate, af.pts, af.time_base = RATE, sent, Fraction(1, RATE)
                out.mux(audio.encode(af))
                sent += 1024
        out.mux(video.encode(None))
        out.mux(audio.encode(None))
    tmp.rename(path)


def make_needles(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for k, colour in enumerate([(200, 40, 40), (40, 160, 60), (40, 70, 200), (200, 160, 40)]):
        path = folder / f"clip_{k}.mp4"
        with av.open(str(path), "w", format="mp4") as out:
            video = add_h264_stream(out, 1280, 720, 25, gop=25)
            audio = out.add_stream("aac", rate=RATE, layout="stereo")
            picture = np.zeros((720, 1280, 3), np.uint8)
            picture[...] = colour
            for i in range(100):
                picture[300:420, 10 * i:10 * i + 120] = 255
                vf = av.VideoFrame.from_ndarray(picture, format="rgb24")
                vf.pts = i
                out.mux(video.encode(vf))
            out.mux(video.encode(None))
            t = np.arange(4 * RATE) / RATE
            tone = np.stack([0.3 * np.sin(2 * np.pi * (440 + 110 * k) * t)] * 2).astype(np.float32)
            for s in range(0, tone.shape[1], 1024):
                af = av.AudioFrame.from_ndarray(np.ascontiguousarray(tone[:, s:s + 1024]), format="fltp", layout="stereo")
                af.sample_rate, af.pts, af.time_base = RATE, s, Fraction(1, RATE)
                out.mux(audio.encode(af))
            out.mux(audio.encode(None))
        lines.append({"video": path.name, "label": f"clip {k}"})
    for k in range(3):
        img = np.zeros((400, 300, 3), np.uint8)
        img[...] = (60 * k, 200, 255 - 60 * k)
        Image.fromarray(img).save(folder / f"card_{k}.png")
        lines.append({"image": f"card_{k}.png", "seconds": 3})
    lines += [{"text": word, "seconds": 3} for word in ("MANGO", "CEDAR", "LOTUS")]
    jsonl = folder / "needles.jsonl"
    jsonl.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return jsonl


def decode_all(path: Path) -> float:
    t0 = time.perf_counter()
    with av.open(str(path)) as c:
        c.streams.video[0].thread_type = "AUTO"
        for _ in c.decode(*c.streams):
            pass
    return time.perf_counter() - t0


def build(background: Path, needles: Path, out: Path, *, reencode: bool = False,
          exact_audio: bool = False) -> tuple[float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    s = NeedleSettings(task="order", order_size=10, depths=None, lengths=None, seed=0, reencode=reencode,
                       exact_audio=exact_audio)
    result = run_build(plan_build(find_backgrounds(background), load_needles(needles), s), out, s)
    return time.perf_counter() - t0, {**result.frames, "mode": result.modes}


def video_only(background: Path, needles: Path, out: Path) -> float:
    """The same splice with the audio left out: what the picture costs (the breakdown row)."""
    from lvu.construct.needles import _keyed
    from lvu.construct.splice import splice

    s = NeedleSettings(task="order", order_size=10, depths=None, lengths=None, seed=0)
    job = _keyed(plan_build(find_backgrounds(background), load_needles(needles), s)[0], s)
    t0 = time.perf_counter()
    splice(job.background.info, job.pieces, out, audio=None)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--gop", type=int, default=250, help="background keyframe interval in frames (x264's default)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/lvu-needle-bench"))
    ap.add_argument("--with-reencode", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    background = args.work / f"background-{args.minutes:g}min-gop{args.gop}.mp4"
    if not background.exists():
        t0 = time.perf_counter()
        make_background(background, args.minutes, args.gop)
        print(f"generated {background} ({background.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s "
              "(not timed below)")
    needles = make_needles(args.work / "needles")
    floor, ours, pictures, exact, stats = [], [], [], [], {}
    for k in range(args.repeat):
        floor.append(decode_all(background))
        seconds, stats = build(background, needles, args.work / "out")
        ours.append(seconds)
        pictures.append(video_only(background, needles, args.work / "video-only.mp4"))
        exact.append(build(background, needles, args.work / "out-exact", exact_audio=True)[0])
        print(f"round {k + 1}: decode {floor[-1]:.1f} s, lvu build needle {seconds:.1f} s "
              f"(video only {pictures[-1]:.1f} s, --exact-audio {exact[-1]:.1f} s)", flush=True)
    d, b, v, x = (statistics.median(t) for t in (floor, ours, pictures, exact))
    total = stats.get("copied", 0) + stats.get("encoded", 0)
    print(f"\n{args.minutes:g}-min {W}x{H} {FPS} fps background (GOP {args.gop}), 10 needles, output {total} frames")
    print(f"  one sequential decode (video + audio): {d:7.1f} s   (median of {args.repeat})")
    print(f"  lvu build needle (copy mode):          {b:7.1f} s   = {b / d:.2f} x the decode;"
          f" {100 * stats.get('copied', 0) / max(1, total):.1f} % of frames copied, {stats.get('encoded', 0)} encoded")
    print(f"    the picture alone (audio off):       {v:7.1f} s   = {v / d:.2f} x")
    print(f"  lvu build needle --exact-audio:        {x:7.1f} s   = {x / d:.2f} x (the sound decoded and re-encoded whole)")
    if args.with_reencode:
        seconds, _ = build(background, needles, args.work / "out-reencode", reencode=True)
        print(f"  lvu build needle --reencode:           {seconds:7.1f} s   = {seconds / d:.2f} x the decode (one run)")


if __name__ == "__main__":
    main()
