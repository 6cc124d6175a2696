"""`lvu cache warm` on the stage runner (lvu.runs.warming): the frame cache is its ledger — a video
whose content changed is decoded again under a new key, and a warm stopped by Ctrl-C resumes by
decoding only the videos it had not finished."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

import lvu.runs.warming as warming
from lvu.media.cache import FrameCache
from lvu.media.extract import warm_video
from lvu.media.testing import make_video, read_index
from lvu.runs.warming import warm

TIMES = [0.25, 1.25]


def test_a_changed_video_is_decoded_again(tmp_path):
    cache = FrameCache(tmp_path / "cache")
    make_video(tmp_path / "first.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
    make_video(tmp_path / "second.mp4", seconds=2, fps=4, gop=4, size=(64, 48))
    video = tmp_path / "v.mp4"
    shutil.copy(tmp_path / "first.mp4", video)
    first = warm([(video, TIMES)], workers=1, progress=False, cache=cache)
    assert (first.entries, first.hits, first.errors) == (1, 0, [])
    assert warm([(video, TIMES)], workers=1, progress=False, cache=cache).hits == 1  # unchanged: committed

    shutil.copy(tmp_path / "second.mp4", video)  # same path, other content (another frame rate)
    again = warm([(video, TIMES)], workers=1, progress=False, cache=cache)
    assert (again.entries, again.hits, again.errors) == (1, 0, [])  # a new key: decoded, not reused
    frames = cache.get_or_decode(video, TIMES)
    assert [read_index(f) for f in frames.data] == [1, 5]  # the new video's frames (4 fps), not the old 2 and 12


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to this process")
def test_an_interrupted_warm_resumes_with_the_videos_it_had_not_finished(tmp_path, monkeypatch):
    cache = FrameCache(tmp_path / "cache")
    paths = [make_video(tmp_path / f"v{i}.mp4", seconds=2, fps=10 + i, gop=10, size=(64, 48)).path
             for i in range(5)]  # different frame rates: different content, different cache keys
    items = [(p, TIMES) for p in paths]
    calls: list[str] = []

    def pressing_ctrl_c_on_the_second(cache, path, *args):
        calls.append(path)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # the runner's handler: finish this video, take no more
        return warm_video(cache, path, *args)

    monkeypatch.setattr(warming, "warm_video", pressing_ctrl_c_on_the_second)
    stopped = warm(items, workers=1, progress=False, cache=cache)
    # Every video started was finished (and so is in the cache); the signal may land a video late.
    assert stopped.interrupted and stopped.videos == len(calls) and 2 <= len(calls) < 5 and stopped.hits == 0

    monkeypatch.setattr(warming, "warm_video", warm_video)
    resumed = warm(items, workers=1, progress=False, cache=cache)
    assert not resumed.interrupted and resumed.videos == 5 and resumed.errors == []
    assert resumed.hits == len(calls) and resumed.entries == 5  # those finished before were not decoded again
