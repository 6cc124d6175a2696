"""Hostile media (#27): a FIFO or a link to /dev/urandom named as a video is refused at once (it
hung `lvu run`, or read without end into the OOM killer); odd-sized and display-rotated
backgrounds and 8K videos are bounded (tests/test_build_needle.py holds the needle ones)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.errors import LvuError, VideoError
from lvu.media.asr import load_audio
from lvu.media.av_io import _open
from lvu.media.identity import video_fingerprint
from lvu.media.testing import make_video


@pytest.fixture()
def hostile(tmp_path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.mp4"
    os.mkfifo(fifo)
    endless = tmp_path / "endless.mp4"
    endless.symlink_to("/dev/urandom")
    return {"fifo": fifo, "endless": endless}


@pytest.mark.parametrize("kind", ["fifo", "endless"])
def test_a_path_that_is_not_a_regular_file_is_refused_without_reading_it(hostile, kind):
    for read in (video_fingerprint, _open, load_audio):
        with pytest.raises(VideoError, match="not a regular file"):
            read(hostile[kind])


@pytest.mark.slow
def test_lvu_run_fails_that_sample_and_finishes(hostile, tmp_path):
    make_video(tmp_path / "ok", seconds=2.0, fps=10, gop=10, size=(64, 48))
    rows = [{"id": "fifo", "video": str(hostile["fifo"]), "question": "Q?", "options": ["a", "b"], "answer": 0},
            {"id": "endless", "video": str(hostile["endless"]), "question": "Q?", "options": ["a", "b"], "answer": 0},
            {"id": "ok", "video": str(tmp_path / "ok.mp4"), "question": "Q?", "options": ["a", "b"], "answer": 0}]
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_RESULTS_DIR": str(tmp_path / "results")}
    done = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "jsonl", "--data", str(data), "-m", "random",
                           "--frames", "4"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert "3 samples" in done.stdout or "3/3" in done.stdout or "of 3" in done.stdout, done.stdout


def _background(path: Path, size: tuple[int, int], codec: str = "mpeg4", rotation: int = 0) -> Path:
    import av
    import numpy as np

    w, h = size
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=10)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        if rotation:
            s.set_display_rotation(rotation)
        for i in range(60):
            frame = av.VideoFrame.from_ndarray(np.full((h, w, 3), (i * 4) % 256, np.uint8), format="rgb24")
            frame.pts = i
            c.mux(s.encode(frame))
        c.mux(s.encode(None))
    return path


def test_an_odd_sized_background_is_scaled_to_even_sides(tmp_path):
    """#27: a 641x361 background ended in a libx264 traceback."""
    from lvu.benchmarks.jsonl import read_samples
    from lvu.construct.needle_media import load_needles
    from lvu.construct.needle_pipeline import run_build
    from lvu.construct.needles import NeedleSettings, find_backgrounds, plan_build
    from lvu.media.video import VideoReader

    (tmp_path / "bg").mkdir()
    _background(tmp_path / "bg" / "odd.mkv", (161, 97))
    (tmp_path / "n").mkdir()
    for word in ("CEDAR", "MAPLE", "BIRCH", "ALDER"):
        (tmp_path / "n" / f"{word.lower()}.txt").write_text(word)
    s = NeedleSettings(depths=(50.0,), lengths=(6.0,), per_cell=1)  # one video
    backgrounds = find_backgrounds(tmp_path / "bg")
    assert "odd (x264 needs even sides: scaled to 162x98)" in backgrounds[0].info.reason
    result = run_build(plan_build(backgrounds, load_needles(tmp_path / "n", seconds=1.0), s), tmp_path / "o", s)
    [sample] = read_samples(result.jsonl)[0]
    reader = VideoReader(sample.video.path)
    assert (reader.info.width, reader.info.height) == (162, 98) and result.reasons


def test_a_display_rotated_background_is_refused_in_one_line(tmp_path):
    """#27: a rotated background got its needle text spliced at 90 degrees."""
    from lvu.construct.needles import find_backgrounds

    (tmp_path / "bg").mkdir()
    _background(tmp_path / "bg" / "turned.mp4", (64, 48), codec="libx264", rotation=90)
    with pytest.raises(LvuError, match=r"turned.mp4: is shown rotated by \d+° .* re-encode it upright"):
        find_backgrounds(tmp_path / "bg")


def test_frames_of_a_video_past_4k_are_bounded(tmp_path):
    """#27: an 8K video cost 3.6 GB of memory and a 3 GB frame-cache entry at 32 frames."""
    from lvu.media.video import MAX_FRAME_SIDE, Resize, VideoReader, bounded

    assert bounded(None, 7680, 4320) == Resize(size=(3840, 2160)) and bounded(None, 1920, 1080) is None
    assert bounded(Resize(short=720), 7680, 4320) == Resize(short=720)  # already small enough: as asked
    path = _background(tmp_path / "wide.mkv", (4000, 64))  # wider than 4K, cheap to encode
    with VideoReader(path) as reader:
        frames = reader.get_frames_at([0, 5]).data
    assert all(f.shape[1] == MAX_FRAME_SIDE and f.shape[0] == round(64 * MAX_FRAME_SIDE / 4000) for f in frames)
