"""VideoReader / probe: exact frames (checked against a full sequential decode and against the
frame number drawn into each frame), approximate mode, VFR, rotation, resizing and bad files."""

from __future__ import annotations

import signal

import av
import numpy as np
import pytest

from lvu.errors import VideoError
from lvu.media.testing import draw_frame, marker_corner, read_index
from lvu.media.video import FrameBatch, Resize, VideoReader, probe, probe_cached, probe_frames


@pytest.fixture(autouse=True)
def _no_hang():
    """Fail a test that runs past 30 s instead of hanging the suite."""

    def boom(*_):
        raise TimeoutError("test took longer than 30 s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def sequential_decode(path) -> tuple[list[np.ndarray], list[float]]:
    """Reference: every frame from one plain PyAV pass, no seeking."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        frames = list(c.decode(s))
        t0 = frames[0].pts
        return [f.to_ndarray(format="rgb24") for f in frames], [float((f.pts - t0) * s.time_base) for f in frames]


def assert_exact(batch: FrameBatch, wanted: list[int], ref: list[np.ndarray]) -> None:
    assert batch.indices == wanted
    for i, arr in zip(wanted, batch.data):
        assert read_index(arr) == i
        np.testing.assert_array_equal(arr, ref[i])


# ---- exactness ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gop,container",
    [(30, "mp4"), (250, "mp4"), (30, "mkv"), (250, "mkv"), (30, "mov"), (30, "avi"), (30, "ts"), (250, "ts")],
)
def test_exact_frames_match_sequential_decode(tmp_video, gop, container):
    v = tmp_video(seconds=12, gop=gop, container=container)
    ref, _ = sequential_decode(v.path)
    n = len(ref)
    assert n == v.num_frames == 360
    rng = np.random.default_rng(gop)
    with VideoReader(v.path) as r:
        assert r.num_frames == n
        # several batches on one reader: sparse, backwards after forwards, GOP boundaries, dense
        for wanted in (
            sorted(rng.choice(n, 7, replace=False).tolist()),
            [n - 1, 0, gop - 1, gop, gop + 1, 249, 250, 251],
            rng.choice(n, 40).tolist(),
            list(range(0, n, 3)),
        ):
            assert_exact(r.get_frames_at(wanted), wanted, ref)


def test_every_frame_in_one_call_equals_sequential_decode(tmp_video):
    v = tmp_video(seconds=4, gop=50)
    ref, times = sequential_decode(v.path)
    with VideoReader(v.path) as r:
        b = r.get_frames_at(range(len(ref)))
    assert_exact(b, list(range(len(ref))), ref)
    np.testing.assert_allclose(b.pts_seconds, times)


def test_sparse_reads_seek_and_dense_reads_decode_each_frame_once(tmp_video):
    v = tmp_video(seconds=12, gop=30)  # 360 frames, keyframes every 30
    with VideoReader(v.path) as r:
        assert r.get_frames_at([335, 5, 185]).indices == [335, 5, 185]
        assert r.decoded_frames < 60  # ~6 frames per target from its keyframe, not 336
    with VideoReader(v.path) as r:
        r.get_frames_at(range(0, v.num_frames, 2))
        assert r.decoded_frames <= v.num_frames  # one forward pass, no GOP decoded twice
    with VideoReader(v.path, approximate=True) as r:
        r.get_frames_at([5, 10, 185, 200, 335])
        assert r.decoded_frames == 3  # keyframes 0, 180, 330 only


def test_request_order_duplicates_and_clamping(tmp_video):
    v = tmp_video()
    n = v.num_frames
    with VideoReader(v.path) as r:
        b = r.get_frames_at([50, 3, 50, n - 1, 3, n + 100, -1, -n])
    assert b.indices == [50, 3, 50, n - 1, 3, n - 1, n - 1, 0]
    assert [read_index(a) for a in b.data] == b.indices
    assert b.pts_seconds == pytest.approx([v.times[i] for i in b.indices])
    np.testing.assert_array_equal(b.data[0], b.data[2])
    b.data[0][:] = 0  # duplicates are separate arrays
    assert read_index(b.data[2]) == 50


def test_played_at_picks_the_frame_on_screen(tmp_video):
    v = tmp_video(seconds=3, fps=30, gop=30)
    n = v.num_frames
    with VideoReader(v.path) as r:
        on_pts = [i / 30 for i in (0, 1, 2, 29, 30, 31, 89)]
        assert r.get_frames_played_at(on_pts).indices == [0, 1, 2, 29, 30, 31, 89]
        mid = [(i + 0.5) / 30 for i in (0, 44, 88)]
        b = r.get_frames_played_at(mid)
        assert b.indices == [0, 44, 88] == [read_index(a) for a in b.data]
        assert b.pts_seconds == pytest.approx([0, 44 / 30, 88 / 30])
        # unsorted, duplicated, before the start and past the end
        b = r.get_frames_played_at([2.0, -1.0, 2.0, 1e6, r.duration])
        assert b.indices == [60, 0, 60, n - 1, n - 1]
        with pytest.raises(ValueError):
            r.get_frames_played_at([float("nan")])


def test_mkv_millisecond_pts_still_maps_index_over_fps_to_that_frame(tmp_video):
    v = tmp_video(seconds=3, gop=30, container="mkv")  # pts rounded to ms: frame 2 at 67 ms > 2/30 s
    with VideoReader(v.path) as r:
        idx = list(range(v.num_frames))
        assert r.get_frames_played_at([i / v.fps for i in idx]).indices == idx


@pytest.mark.parametrize("container", ["mp4", "mkv"])
def test_variable_frame_rate(tmp_video, container):
    v = tmp_video(seconds=4, gop=20, container=container, vfr=True)
    ref, _ = sequential_decode(v.path)
    with VideoReader(v.path) as r:
        assert r.num_frames == v.num_frames == len(ref)
        assert r.duration == pytest.approx(v.duration, abs=2e-3)
        wanted = [0, 7, 3, 21, v.num_frames - 1, 40]
        b = r.get_frames_at(wanted)
        assert_exact(b, wanted, ref)
        assert b.pts_seconds == pytest.approx([v.times[i] for i in wanted], abs=1e-3)
        # a time inside frame i's (irregular) display interval gives frame i
        mids = [(v.times[i] + v.times[i + 1]) / 2 for i in range(v.num_frames - 1)]
        assert r.get_frames_played_at(mids).indices == list(range(v.num_frames - 1))


# ---- approximate mode -----------------------------------------------------------------------


@pytest.mark.parametrize("container", ["mp4", "ts"])  # MPEG-TS seeks overshoot: the reader steps back
def test_approximate_returns_the_keyframe_at_or_before_each_target(tmp_video, container):
    v = tmp_video(seconds=6, gop=25, container=container)
    ref, _ = sequential_decode(v.path)
    wanted = [170, 0, 24, 25, 26, 99, 100, 179, 60, 60]
    with VideoReader(v.path, approximate=True) as r:
        keys = r.keyframe_indices
        assert keys == list(range(0, v.num_frames, 25))
        b = r.get_frames_at(wanted)
        assert b.indices == [max(k for k in keys if k <= t) for t in wanted]
        for i, arr in zip(b.indices, b.data):
            assert read_index(arr) == i
            np.testing.assert_array_equal(arr, ref[i])
        assert r.get_frames_played_at([3.0]).indices == [75]


# ---- rotation and resizing ------------------------------------------------------------------


@pytest.mark.parametrize("rotation,corner", [(90, "tr"), (180, "br"), (270, "bl")])
def test_rotation_metadata_is_applied(tmp_video, rotation, corner):
    v = tmp_video(seconds=1, gop=10, rotation=rotation)
    turned = rotation in (90, 270)
    with VideoReader(v.path) as r:
        assert r.info.rotation == rotation
        assert (r.info.width, r.info.height) == ((96, 160) if turned else (160, 96))
        b = r.get_frames_at([3, 17])
        assert b.data[0].shape == ((160, 96, 3) if turned else (96, 160, 3))
        assert [read_index(a, rotation) for a in b.data] == [3, 17]
        assert marker_corner(b.data[0]) == corner
        small = r.get_frames_at([5], resize=48).data[0]
        assert small.shape == ((80, 48, 3) if turned else (48, 80, 3))
        assert read_index(small, rotation) == 5 and marker_corner(small) == corner
    assert probe(v.path).rotation == rotation


def test_resize_keeps_aspect_and_never_upscales(tmp_video):
    v = tmp_video(seconds=1, gop=10)
    with VideoReader(v.path) as r:
        assert marker_corner(r.get_frames_at([0]).data[0]) == "tl"
        assert r.get_frames_at([4], resize=48).data[0].shape == (48, 80, 3)
        assert r.get_frames_at([4], resize=500).data[0].shape == (96, 160, 3)
        assert r.get_frames_at([4], resize=Resize(long=80)).data[0].shape == (48, 80, 3)
        assert r.get_frames_at([4], resize=Resize(short=60, long=80)).data[0].shape == (48, 80, 3)
        exact = r.get_frames_at([4, 9], resize=Resize(size=(64, 64)))
        assert [a.shape for a in exact.data] == [(64, 64, 3)] * 2
        assert [read_index(a) for a in r.get_frames_at([4, 9], resize=48).data] == [4, 9]
        with pytest.raises(ValueError):
            r.get_frames_at([0], resize=0)


def test_thread_count_does_not_change_frames(tmp_video):
    v = tmp_video(seconds=3, gop=40)
    wanted = [5, 44, 80, 81, 2]
    with VideoReader(v.path, threads=1) as a, VideoReader(v.path) as b:
        for x, y in zip(a.get_frames_at(wanted).data, b.get_frames_at(wanted).data):
            np.testing.assert_array_equal(x, y)


# ---- metadata -------------------------------------------------------------------------------


@pytest.mark.parametrize("container", ["mp4", "mkv"])
def test_probe_and_info(tmp_video, container):
    v = tmp_video(seconds=2, fps=25, gop=25, container=container)
    info = probe(v.path)  # Matroska stores no frame count: probe falls back to a demux pass
    assert (info.num_frames, info.fps, info.width, info.height) == (50, 25.0, 160, 96)
    assert info.duration == pytest.approx(2.0, abs=1e-3)
    assert info.codec == "h264" and info.rotation == 0 and info.path == str(v.path)
    with VideoReader(v.path) as r:
        assert r.info == info
        assert (r.duration, r.fps) == (info.duration, info.fps)


def test_probe_cached_reuses_until_the_file_changes(tmp_video, tmp_path):
    import shutil

    path = tmp_path / "v.mp4"
    shutil.copy(tmp_video(seconds=2, fps=25, gop=25).path, path)
    first = probe_cached(path)
    assert first == probe(path) and probe_cached(str(path)) is first
    assert probe_frames(path) == (25.0, 50)
    shutil.copy(tmp_video(seconds=1, fps=25, gop=25).path, path)  # replaced: new size and mtime
    again = probe_cached(path)
    assert again is not first and again.num_frames == 25
    assert probe_cached(path) is again
    with pytest.raises(VideoError):
        probe_cached(tmp_path / "missing.mp4")


def test_no_timestamps_falls_back_to_counting(tmp_video, tmp_path):
    """Raw H.264 (no container timestamps): frames are found by counting in decode order."""
    src = tmp_video(seconds=2, gop=20)
    raw = tmp_path / "raw.h264"
    with av.open(str(src.path)) as i, av.open(str(raw), "w", format="h264") as o:
        out = o.add_stream_from_template(i.streams.video[0])
        for packet in i.demux(i.streams.video[0]):
            if packet.dts is not None:
                packet.stream = out
                o.mux(packet)
    with VideoReader(raw) as r:
        assert r.num_frames == src.num_frames
        b = r.get_frames_at([33, 2, 33, 10_000])
        assert b.indices == [33, 2, 33, src.num_frames - 1] == [read_index(a) for a in b.data]


# ---- bad files ------------------------------------------------------------------------------


def _error(path) -> str:
    with pytest.raises(VideoError) as e:
        VideoReader(path)
    with pytest.raises(VideoError):
        probe(path)
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg and " — " in msg
    return msg


def test_missing_empty_and_directory(tmp_path):
    assert "not found" in _error(tmp_path / "nope.mp4")
    (tmp_path / "empty.mp4").write_bytes(b"")
    assert "empty" in _error(tmp_path / "empty.mp4")
    assert "directory" in _error(tmp_path)


def test_garbage_text_and_audio_only(tmp_path):
    (tmp_path / "noise.mp4").write_bytes(np.random.default_rng(0).bytes(5000))
    _error(tmp_path / "noise.mp4")
    (tmp_path / "notes.mkv").write_text("not a video\n" * 50)
    _error(tmp_path / "notes.mkv")
    with av.open(str(tmp_path / "tone.m4a"), "w") as c:
        s = c.add_stream("aac", rate=16000)
        for i in range(10):
            f = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            f.sample_rate, f.pts = 16000, i * 1024
            c.mux(s.encode(f))
        c.mux(s.encode(None))
    assert "no video stream" in _error(tmp_path / "tone.m4a")


def test_truncated_mp4_without_index_is_an_error(tmp_video, tmp_path):
    data = tmp_video(seconds=2).path.read_bytes()  # PyAV writes the moov index at the end
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) // 2])
    _error(tmp_path / "cut.mp4")
    (tmp_path / "stub.mkv").write_bytes(tmp_video(seconds=2, container="mkv").path.read_bytes()[:600])
    _error(tmp_path / "stub.mkv")


def test_truncated_stream_reads_as_a_shorter_video(tmp_video, tmp_path):
    src = tmp_video(seconds=4, gop=30, container="mkv")
    data = src.path.read_bytes()
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(data[: len(data) // 2])
    with VideoReader(cut) as r:
        assert 0 < r.num_frames < src.num_frames
        b = r.get_frames_at([0, 10, src.num_frames - 1])
        assert b.indices[:2] == [0, 10] and b.indices[2] <= r.num_frames - 1
        assert [read_index(a) for a in b.data] == b.indices  # reported numbers are the truth
        assert r.get_frames_played_at([1e3]).indices == [b.indices[2]]


def test_damaged_packets_are_skipped_not_fatal(tmp_video, tmp_path):
    src = tmp_video(seconds=4, gop=30)
    ref, _ = sequential_decode(src.path)
    data = bytearray(src.path.read_bytes())
    data[3000:6000] = np.random.default_rng(1).bytes(3000)  # inside the frame data (mdat)
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(bytes(data))
    with VideoReader(bad) as r:
        b = r.get_frames_at(range(r.num_frames))
    assert len(b) == src.num_frames
    assert all(i <= j for i, j in zip(b.indices, range(src.num_frames)))  # never a later frame
    np.testing.assert_array_equal(b.data[5], ref[5])  # frames before the damage are intact
    np.testing.assert_array_equal(b.data[-1], ref[-1])  # the last GOP is intact again


def test_barcode_roundtrip():
    for i in (0, 1, 255, 4097, 65535):
        assert read_index(draw_frame(i, (160, 96))) == i
        assert read_index(draw_frame(i, (64, 48))) == i


# ---- decoding less, on more cores -------------------------------------------------------------


@pytest.mark.slow
def test_non_reference_frames_are_skipped_yet_every_frame_is_exact(tmp_video):
    v = tmp_video(seconds=20, gop=250, bframes=3)  # x264's B-pyramid: about half are non-reference
    ref, _ = sequential_decode(v.path)
    with VideoReader(v.path, threads=1) as r:
        assert_exact(r.get_frames_at([240, 490]), [240, 490], ref)
        assert r.decoded_frames < 0.75 * (241 + 241)  # not every frame from each keyframe
    with VideoReader(v.path, threads=1) as r:  # one call per frame goes on forward: no re-seeks
        for i in range(300):
            assert read_index(r.get_frames_at([i]).data[0]) == i
        assert r.decoded_frames == 300
    with VideoReader(v.path, threads=1) as r:  # next calls ask for frames just skipped past
        for i in (100, 101, 103, 102, 260, 261, 262, 599, 598):
            assert_exact(r.get_frames_at([i, i]), [i, i], ref)


def test_parallel_decoders_give_the_same_frames(tmp_video, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    v = tmp_video(seconds=12, gop=30, bframes=3)
    ref, _ = sequential_decode(v.path)
    wanted = sorted(np.random.default_rng(5).choice(v.num_frames, 40, replace=False).tolist())
    with VideoReader(v.path) as par, VideoReader(v.path, threads=1) as one:
        a, b = par.get_frames_at(wanted), one.get_frames_at(wanted)
        assert len(par._twins) == 2 and not one._twins  # two decoders, each on its own GOPs
        assert_exact(a, wanted, ref)
        assert a.indices == b.indices and a.pts_seconds == b.pts_seconds
        assert par.decoded_frames <= one.decoded_frames + 10  # the work is split, not repeated
        assert_exact(par.get_frames_at(range(v.num_frames)), list(range(v.num_frames)), ref)
        assert_exact(par.get_frames_at([7, 3]), [7, 3], ref)  # small calls: the main decoder
    with VideoReader(v.path, approximate=True) as r:
        b = r.get_frames_at(wanted)
        assert b.indices == [i // 30 * 30 for i in wanted] == [read_index(x) for x in b.data]
