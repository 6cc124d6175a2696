"""The frame index cached on disk, `lvu frames`' fast PNG level, and the split media modules' API."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import lvu.media.video as video_mod
from lvu.media import frame_index
from lvu.media.testing import read_index
from lvu.media.video import VideoReader


@pytest.fixture()
def cache_root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture()
def builds(monkeypatch) -> list[str]:
    """Paths of every demux pass (index build) and every open-time first-frame decode."""
    calls: list[str] = []
    build, first = video_mod._build_index, video_mod._first_frame

    def counted_build(container, stream, path):
        calls.append(f"index {path}")
        return build(container, stream, path)

    def counted_first(container, stream, path):
        calls.append(f"first frame {path}")
        return first(container, stream, path)

    monkeypatch.setattr(video_mod, "_build_index", counted_build)
    monkeypatch.setattr(video_mod, "_first_frame", counted_first)
    return calls


def test_second_open_reads_the_index_from_disk_and_decodes_nothing(tmp_video, tmp_path, cache_root, builds):
    path = tmp_path / "v.mp4"
    shutil.copy(tmp_video(seconds=4, gop=30).path, path)
    with VideoReader(path) as r:
        first = r.get_frames_at([0, 45, 119])
        info = r.info
    assert len(builds) == 2  # one demux pass, one first-frame decode
    assert list(cache_root.glob("index/*/*.idx"))
    with VideoReader(path) as r:
        again = r.get_frames_at([0, 45, 119])
        assert r.info == info and r.keyframe_indices == [0, 30, 60, 90]
    assert len(builds) == 2  # a hit: no demux pass, no decode on open
    assert [read_index(a) for a in again.data] == [0, 45, 119] and again.pts_seconds == first.pts_seconds
    assert all(np.array_equal(a, b) for a, b in zip(first.data, again.data))
    with VideoReader(path, index_cache=False):
        pass
    assert len(builds) == 4  # opted out: built again


def test_index_is_rebuilt_when_the_file_content_changes(tmp_video, tmp_path, cache_root, builds):
    path = tmp_path / "v.mp4"
    shutil.copy(tmp_video(seconds=4, gop=30).path, path)
    with VideoReader(path) as r:
        assert r.num_frames == 120
    shutil.copy(tmp_video(seconds=2, gop=20).path, path)  # replaced in place: another fingerprint
    with VideoReader(path) as r:
        assert r.num_frames == 60 and r.keyframe_indices == [0, 20, 40]
        assert read_index(r.get_frames_at([59]).data[0]) == 59
    assert [c.split()[0] for c in builds] == ["index", "first", "index", "first"]
    assert len(list(cache_root.glob("index/*/*.idx"))) == 2


def test_a_damaged_or_unwritable_index_cache_never_fails_a_read(tmp_video, tmp_path, cache_root, builds):
    path = tmp_path / "v.mp4"
    shutil.copy(tmp_video(seconds=2, gop=20).path, path)
    VideoReader(path).close()
    (stored,) = cache_root.glob("index/*/*.idx")
    stored.write_bytes(stored.read_bytes()[:-7])  # truncated
    with VideoReader(path) as r:
        assert read_index(r.get_frames_at([33]).data[0]) == 33
    assert len(builds) == 4 and stored.is_file()  # rebuilt and stored again
    assert frame_index.cached_index(path) is not None
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    frame_index.store_index(path, frame_index.cached_index(path))  # fine
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(blocker))  # index/ cannot be created under a file
        with VideoReader(path) as r:
            assert r.num_frames == 60


def test_rotation_survives_the_cached_index(tmp_video, tmp_path, cache_root, builds):
    v = tmp_video(seconds=1, gop=10, rotation=90)
    with VideoReader(v.path) as r:
        fresh = r.get_frames_at([3]).data[0]
    with VideoReader(v.path) as r:
        assert r.info.rotation == 90 and r.info.width < r.info.height
        assert np.array_equal(r.get_frames_at([3]).data[0], fresh)
    assert len(builds) == 2


def test_lvu_frames_png_uses_the_fast_level_and_keeps_pixels(tmp_video, tmp_path, cache_root, monkeypatch):
    from typer.testing import CliRunner

    from lvu.cli import app
    from lvu.media.extract import PNG_LEVEL

    levels: list = []
    save = Image.Image.save

    def spy(self, fp, format=None, **params):
        levels.append(params.get("compress_level"))
        return save(self, fp, format, **params)

    monkeypatch.setattr(Image.Image, "save", spy)
    v = tmp_video(seconds=4, gop=30)
    out = tmp_path / "frames"
    result = CliRunner().invoke(app, ["frames", str(v.path), "--plan", "uniform:5", "--format", "png", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert PNG_LEVEL == 1 and levels == [1] * 5
    files = sorted(out.glob("frame_*.png"))
    from lvu.media.sampling import parse_plan, sample

    with VideoReader(v.path) as r:
        want = sample(r, parse_plan("uniform:5")).data
    assert len(files) == 5
    for f, w in zip(files, want):
        assert np.array_equal(np.asarray(Image.open(f).convert("RGB")), w)  # lossless


def test_split_modules_keep_the_public_api():
    from lvu.media import av_io, cache, cache_entry, gop_runs, identity, video

    for name in ("VideoReader", "VideoInfo", "FrameBatch", "probe", "probe_cached", "probe_frames"):
        assert getattr(video, name).__module__ == "lvu.media.video"
    assert video.Resize is av_io.Resize  # importable from lvu.media.video as before
    assert video.SEEK_COST_FRAMES is gop_runs.SEEK_COST_FRAMES and video.MAX_DECODERS == gop_runs.MAX_DECODERS
    assert video._short is av_io._short and video._open is av_io._open and video._Index is frame_index._Index
    assert cache.video_fingerprint is identity.video_fingerprint and cache._MAGIC == cache_entry._MAGIC
    root = Path(video.__file__).parent
    for module in ("video", "cache", "av_io", "frame_index", "gop_runs", "identity", "cache_entry", "decode_floor"):
        assert len((root / f"{module}.py").read_text().splitlines()) <= 500, module
