"""A run store made by real runs, for the viewer's tests: the `jsonl` benchmark over a generated
barcode video with an SRT track, answered by the fake `fake-follow` model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import fakes  # noqa: F401  (registers fake-follow)
from lvu.media.testing import SyntheticVideo, make_video
from lvu.api import run
from lvu.runs.store import Store

CUES = [(0.5, 2.5, "the red fox enters"), (4.0, 6.0, "a quiet pause"), (8.0, 10.5, "the fox leaves <b>now</b>")]


@dataclass
class WebStore:
    results_dir: Path
    video: SyntheticVideo
    small: str
    """Run id of the 6-frame run (frames resized to 48 px) over the first 3 samples."""
    full: str
    """Run id of the 4-frame run over every sample (one only it has: `set/s3`)."""


def srt(cues: list[tuple[float, float, str]]) -> str:
    def stamp(t: float) -> str:
        ms = round(t * 1000)
        return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    return "".join(f"{i + 1}\n{stamp(a)} --> {stamp(b)}\n{text}\n\n" for i, (a, b, text) in enumerate(cues))


def build(root: Path) -> WebStore:
    data = root / "data"
    data.mkdir(parents=True)
    video = make_video(data / "clip", seconds=12.0, fps=10, gop=10, size=(160, 96))
    (data / "clip.srt").write_text(srt(CUES))
    # "pick X" is what fake-follow answers; the answer index decides right or wrong.
    rows = [
        {"id": "s0", "video": "clip.mp4", "subtitles": "clip.srt", "question": "Where does the fox go? pick B",
         "options": ["left", "right", "up", "down"], "answer": 1, "labels": {"kind": "move"}},
        {"id": "s1", "video": "clip.mp4", "subtitles": "clip.srt", "question": "What colour is the fox? pick A",
         "options": ["red", "blue", "green", "grey"], "answer": 2, "labels": {"kind": "colour"}},
        {"id": "s2", "video": "missing.mp4", "question": "Is anything there? pick C",
         "options": ["no", "maybe", "yes", "never"], "answer": 2, "labels": {"kind": "move"}},
        {"id": "set/s3", "video": "clip.mp4", "subtitles": "clip.srt", "question": "How many pauses? pick D",
         "options": ["0", "2", "3", "1"], "answer": 3, "labels": {"kind": "count"}},
    ]
    lines = [json.dumps(r) for r in rows] + ["{not json"]
    (data / "web.jsonl").write_text("\n".join(lines) + "\n")
    results = root / "results"
    common = {"model_args": {}, "results_dir": results, "show_progress": False, "report": False}
    small = run("jsonl", "fake-follow", settings={"data": str(data / "web.jsonl"), "frames": 6, "resize": 48},
                limit=3, **common)
    full = run("jsonl", "fake-follow", settings={"data": str(data / "web.jsonl"), "frames": 4}, **common)
    return WebStore(results, video, small.run_id, full.run_id)


def stored(results_dir: Path, run_id: str):
    """(RunInfo, results) read back through the store, the way any reader sees them."""
    store = Store(results_dir)
    try:
        return store.run(run_id), store.results(run_id)
    finally:
        store.close()
