"""Shared fixtures. Test videos are generated with PyAV (lvu.media.testing), never downloaded."""

from __future__ import annotations

import pytest

from lvu.media.testing import SyntheticVideo, make_video


@pytest.fixture(scope="session")
def tmp_video(tmp_path_factory):
    """Factory: `tmp_video(seconds=2, fps=30, gop=30, **make_video_kwargs) -> SyntheticVideo`.

    Videos are cached for the session by their arguments; treat the files as read-only
    (copy one before damaging it).
    """
    cache: dict[tuple, SyntheticVideo] = {}

    def make(*, seconds: float = 2.0, fps: float = 30, gop: int = 30, **kw) -> SyntheticVideo:
        key = (seconds, fps, gop, *sorted(kw.items()))
        if key not in cache:
            path = tmp_path_factory.mktemp("videos") / "v"
            cache[key] = make_video(path, seconds=seconds, fps=fps, gop=gop, **kw)
        return cache[key]

    return make
