#!/usr/bin/env python
"""Cost of Neptune's selection filters and signals (lvu.construct.selection / lvu.construct.signals), in
seconds per minute of video, beside the floor each one cannot beat: decoding the frames it reads.

Videos (generated, tests/build_videos.py):
  - test:  the tests' 18 s multi-shot video, 320x240 at 10 fps, with eSpeak NG speech;
  - 360p:  60 s, 10 shots of 6 s, 640x360 at 30 fps, one spoken sentence (closer to a real video;
           ASR cost grows with speech: lvu.media.asr measures ~2.2 s per minute of dense speech).
Rows: static filter (32x32 thumbnails at 1 fps), talking-head filter (dlib at 1 fps, frames
scaled to 480 px high), shots (PySceneDetect, every frame), ASR (Whisper tiny.en int8, transcript
cache off), OCR (RapidOCR at 1 fps, OCR cache off), frames_at (1 fps, long side 768). Floors:
iter_frames at the same rate and size (filters, OCR, frames), a PyAV decode of every frame (shots),
lvu.media.asr.load_audio (ASR). Medians of `--repeat` runs; the machine may be shared, so read
the ratio to the floor rather than the absolute time.

    python benchmarks/build_signals.py [--repeat 3] [--videos test 360p]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import av  # noqa: E402
from build_videos import ShotSpec, multi_shot_video  # noqa: E402

from lvu.construct import selection, signals  # noqa: E402
from lvu.media.asr import load_audio  # noqa: E402
from lvu.media.av_io import Resize  # noqa: E402

SENTENCE = "The meeting starts at three fifteen. Please bring the red folder to room twelve."


def make_videos(d: Path, names: list[str]) -> dict[str, Path]:
    out = {}
    if "test" in names:
        out["test"] = multi_shot_video(d / "test", speech=SENTENCE)
    if "360p" in names:
        colours = [(200, 40, 40), (40, 160, 60), (40, 70, 200), (180, 160, 40), (120, 40, 160)]
        shots = [ShotSpec(6.0, colours[k % 5], f"SCENE {k + 1}") for k in range(10)]
        out["360p"] = multi_shot_video(d / "hd", shots, speech=SENTENCE, fps=30, size=(640, 360))
    return out


def decode_all(path: Path) -> None:
    with av.open(str(path)) as c:
        for _ in c.decode(video=0):
            pass


def drain(path: Path, resize) -> None:
    for _ in signals.iter_frames(path, resize=resize):
        pass


def fresh_asr(path: Path) -> None:
    os.environ["LVU_CACHE_DIR"] = tempfile.mkdtemp(prefix="lvu-bench-asr-")  # transcript cache miss
    signals.transcribe(path, subtitles=False)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--videos", nargs="+", default=["test", "360p"], choices=["test", "360p"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LVU_CACHE_DIR"] = str(Path(tmp) / "cache")
        videos = make_videos(Path(tmp), args.videos)
        # warm up once: model loads (Whisper, RapidOCR, dlib) are per process, not per video
        first = next(iter(videos.values()))
        fresh_asr(first), signals.ocr_frame_captions(first, cache=False), selection.talking_head_filter(first)
        print(f"{'video':6} {'what':22} {'s/min video':>12} {'floor s/min':>12} {'ratio':>7}")
        for name, path in videos.items():
            minutes = signals.probe_video(path).duration / 60
            info = signals.probe_video(path)
            face_size = (round(info.width * 480 / info.height), 480)
            rows = [
                ("static filter", lambda: selection.static_filter(path), lambda: drain(path, Resize(size=(32, 32)))),
                ("talking-head filter", lambda: selection.talking_head_filter(path),
                 lambda: drain(path, Resize(size=face_size))),
                ("shots", lambda: signals.detect_shots(path), lambda: decode_all(path)),
                ("ASR (tiny.en)", lambda: fresh_asr(path), lambda: load_audio(path)),
                ("OCR captions", lambda: signals.ocr_frame_captions(path, cache=False),
                 lambda: drain(path, Resize(long=signals.OCR_LONG_SIDE))),
                ("frames_at (768)", lambda: signals.frames_at(path),
                 lambda: drain(path, Resize(long=signals.CAPTION_LONG_SIDE))),
            ]
            for what, run, floor in rows:
                t, f = timed(run, args.repeat) / minutes, timed(floor, args.repeat) / minutes
                print(f"{name:6} {what:22} {t:12.2f} {f:12.2f} {t / f:7.1f}", flush=True)


if __name__ == "__main__":
    main()
