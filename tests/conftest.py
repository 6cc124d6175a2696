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


@pytest.fixture(scope="session")
def _subreaper() -> bool:
    import process_watch

    return process_watch.become_subreaper()


@pytest.fixture(autouse=True)
def no_leftover_processes(_subreaper):
    """Fail a test that leaves a child process alive (a decode worker, a server, an orphan of a
    killed subprocess): tests/process_watch.py. `.ci/run` must leave nothing behind."""
    import process_watch

    if not process_watch.AVAILABLE:
        yield
        return
    before = set(process_watch.children())
    yield
    left = process_watch.leftovers(before)
    if left:
        process_watch.kill(list(left))
        pytest.fail("the test left processes behind (killed now): "
                    + "; ".join(f"pid {pid}: {cmd[:160]}" for pid, cmd in left.items()), pytrace=False)
