"""Optional decoders (lvu.media.backends): every installed backend must return exactly what the PyAV
reader returns — same frames (barcodes and pixels against a full sequential decode), numbers,
times, clamping, rotation and resize sizes. Backends that are not installed are skipped."""

from __future__ import annotations

import sys

import av
import numpy as np
import pytest

from lvu.errors import LvuError, VideoError
from lvu.media import backends
from lvu.media.backends import BACKENDS, INSTALL, open_reader
from lvu.media.testing import marker_corner, read_index
from lvu.media.video import Resize, VideoReader


def sequential_decode(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    name = request.param
    try:
        backends.load_backend(name)
    except LvuError:
        pytest.skip(f"{name} not installed: {INSTALL[name]}")
    return name


@pytest.mark.parametrize("gop,container", [(30, "mp4"), (250, "mp4"), (30, "mkv"), (50, "mov")])
def test_exact_frames_match_sequential_decode(tmp_video, backend, gop, container):
    v = tmp_video(seconds=12, gop=gop, container=container)
    ref = sequential_decode(v.path)
    n = len(ref)
    rng = np.random.default_rng(gop)
    with open_reader(v.path, backend) as r:
        assert r.num_frames == n == 360
        for wanted in (
            sorted(rng.choice(n, 9, replace=False).tolist()),
            [n - 1, 0, gop - 1, gop, gop + 1, 249, 250, 251],  # backwards, GOP boundaries
            list(range(0, n, 7)),
        ):
            b = r.get_frames_at(wanted)
            assert b.indices == wanted
            assert [read_index(a) for a in b.data] == wanted
            for i, arr in zip(wanted, b.data):
                np.testing.assert_array_equal(arr, ref[i])


def test_same_batch_as_pyav_for_times_duplicates_and_clamping(tmp_video, backend):
    v = tmp_video(seconds=3, gop=30)
    n = v.num_frames
    with VideoReader(v.path) as ref, open_reader(v.path, backend) as r:
        assert r.info == ref.info
        assert r.keyframe_indices == ref.keyframe_indices
        for ask in ([50, 3, 50, n - 1, 3, n + 100, -1, -n], [0]):
            a, b = ref.get_frames_at(ask), r.get_frames_at(ask)
            assert b.indices == a.indices and b.pts_seconds == a.pts_seconds
            assert [read_index(x) for x in b.data] == a.indices
        times = [2.0, -1.0, 2.0, 1e6, (44 + 0.5) / 30, 31 / 30]
        a, b = ref.get_frames_played_at(times), r.get_frames_played_at(times)
        assert b.indices == a.indices == [60, 0, 60, n - 1, 44, 31]
        assert b.pts_seconds == a.pts_seconds
        b.data[0][:] = 0  # duplicates are separate arrays
        assert read_index(b.data[2]) == 60


def test_variable_frame_rate(tmp_video, backend):
    v = tmp_video(seconds=4, gop=20, vfr=True)
    wanted = [0, 7, 3, 21, v.num_frames - 1, 40]
    if backend == "opencv":  # numbers frames by time x fps: refused, not misread
        with pytest.raises(VideoError, match="variable frame rate"):
            open_reader(v.path, backend)
        return
    with open_reader(v.path, backend) as r:
        b = r.get_frames_at(wanted)
        assert b.indices == wanted == [read_index(a) for a in b.data]
        assert b.pts_seconds == pytest.approx([v.times[i] for i in wanted], abs=1e-3)
        mids = [(v.times[i] + v.times[i + 1]) / 2 for i in range(0, v.num_frames - 1, 5)]
        assert r.get_frames_played_at(mids).indices == list(range(0, v.num_frames - 1, 5))


def test_approximate_gives_the_keyframe_at_or_before(tmp_video, backend):
    v = tmp_video(seconds=6, gop=25)
    wanted = [170, 0, 24, 25, 26, 99, 60]
    with open_reader(v.path, backend, approximate=True) as r:
        b = r.get_frames_at(wanted)
    assert b.indices == [150, 0, 0, 25, 25, 75, 50] == [read_index(a) for a in b.data]


@pytest.mark.slow
@pytest.mark.parametrize("rotation,corner", [(0, "tl"), (90, "tr"), (270, "bl")])
def test_rotation_and_resize(tmp_video, backend, rotation, corner):
    v = tmp_video(seconds=1, gop=10, rotation=rotation)
    turned = rotation in (90, 270)
    with open_reader(v.path, backend) as r:
        full = r.get_frames_at([3, 17])
        assert full.data[0].shape == ((160, 96, 3) if turned else (96, 160, 3))
        assert [read_index(a, rotation) for a in full.data] == [3, 17]
        assert marker_corner(full.data[0]) == corner
        small = r.get_frames_at([5], resize=48).data[0]
        assert small.shape == ((80, 48, 3) if turned else (48, 80, 3))
        assert read_index(small, rotation) == 5 and marker_corner(small) == corner
        assert r.get_frames_at([4], resize=500).data[0].shape == full.data[0].shape  # never upscales
        assert r.get_frames_at([4], resize=Resize(size=(64, 64))).data[0].shape == (64, 64, 3)


@pytest.mark.parametrize("container", ["ts", "avi"])
def test_unverified_containers_are_refused(tmp_video, backend, container):
    v = tmp_video(seconds=2, gop=30, container=container)
    if backend == "pyav":
        with open_reader(v.path, backend) as r:
            assert read_index(r.get_frames_at([40]).data[0]) == 40
        return
    with pytest.raises(VideoError, match="backend='pyav'") as e:
        open_reader(v.path, backend)
    assert str(v.path) in str(e.value) and "\n" not in str(e.value)


# ---- selection and install messages (no backend needed) -------------------------------------


def test_default_backend_is_the_pyav_reader(tmp_video):
    v = tmp_video()
    r = open_reader(v.path)
    assert type(r) is VideoReader
    r.close()


def test_unknown_and_decord2_backends_are_refused(tmp_video):
    v = tmp_video()
    with pytest.raises(LvuError, match="unknown video backend 'ffmpeg'.*pyav, torchcodec, decord, opencv"):
        open_reader(v.path, "ffmpeg")
    with pytest.raises(LvuError, match="decord2.*wrong frames.*pip install decord==0.6.0"):
        open_reader(v.path, "decord2")


def test_installed_decord2_is_refused_even_as_decord(monkeypatch):
    monkeypatch.setattr(backends.importlib.metadata, "packages_distributions", lambda: {"decord": ["decord2"]})
    with pytest.raises(LvuError, match="installed 'decord' module is decord2.*wrong frames"):
        backends.load_backend("decord")


@pytest.mark.parametrize("name,module,hint", [
    ("opencv", "cv2", "pip install opencv-python-headless"),
    ("decord", "decord", "pip install decord==0.6.0"),
    ("torchcodec", "torchcodec.decoders", "pip install torch==2.13.0 torchcodec==0.13.0"),
])
def test_missing_backend_says_what_to_install(tmp_video, monkeypatch, name, module, hint):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    monkeypatch.setattr(backends, "_is_decord2", lambda: False)
    with pytest.raises(LvuError) as e:
        open_reader(tmp_video().path, name)
    msg = str(e.value)
    assert f"{name!r} is not installed" in msg and hint in msg and "\n" not in msg
    assert name not in backends.available_backends()


def test_frame_cache_decodes_misses_with_the_backend_and_keys_it(tmp_video, tmp_path, backend):
    from lvu.media.cache import FrameCache

    v = tmp_video(seconds=2, gop=30)
    cache = FrameCache(tmp_path / "frames")
    times = [0.5, 1.0, 1.9]
    miss = cache.get_or_decode(v.path, times, backend=backend)
    assert [read_index(a) for a in miss.data] == [15, 30, 57] == miss.indices
    key = cache.key(v.path, times, backend=backend)
    assert (key == cache.key(v.path, times)) == (backend == "pyav")
    hit = cache.get(key)
    assert hit is not None and hit.indices == miss.indices
    for a, b in zip(hit.data, miss.data):
        np.testing.assert_array_equal(a, b)
