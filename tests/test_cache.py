import json
import multiprocessing
import os
import shutil
import time

import numpy as np
import pytest
from PIL import Image

import lvu.media.video as video_mod
from lvu.errors import LvuError, VideoError
from lvu.media.cache import FrameCache, video_fingerprint
from lvu.media.extract import extract_frames
from lvu.media.testing import make_video, read_index
from lvu.media.video import VideoReader
from lvu.runs.warming import warm

TIMES = [0.0, 0.55, 1.3, 2.05, 3.95]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("videos")
    return {
        "a": make_video(d / "a", seconds=4, fps=10, gop=10),
        "b": make_video(d / "b", seconds=3, fps=8, gop=24, container="mkv"),
    }


@pytest.fixture
def cache(tmp_path):
    return FrameCache(tmp_path / "cache")


@pytest.fixture
def no_decoder(monkeypatch):
    """Any attempt to open a decoder fails the test."""

    class Forbidden:
        def __init__(self, *a, **k):
            raise AssertionError("a cache hit opened a VideoReader")

    def forbidden_open(*a, **k):
        raise AssertionError("a cache hit opened a container")

    def arm():
        monkeypatch.setattr(video_mod, "VideoReader", Forbidden)
        monkeypatch.setattr(video_mod.av, "open", forbidden_open)

    return arm


def decode(path, times, **kw):
    with VideoReader(path) as r:
        return r.get_frames_played_at(times, **kw)


def assert_same(a, b):
    assert a.pts_seconds == b.pts_seconds
    assert a.indices == b.indices
    assert len(a.data) == len(b.data)
    for x, y in zip(a.data, b.data):
        assert x.dtype == y.dtype == np.uint8 and x.shape == y.shape
        assert np.array_equal(x, y)


def entry_files(cache):
    return sorted(p for p in cache.root.rglob("*") if p.is_file())


@pytest.mark.parametrize("encoding", ["raw", "png"])
@pytest.mark.parametrize("resize", [None, 48])
def test_hit_equals_miss_exactly_and_opens_no_decoder(tmp_path, videos, no_decoder, encoding, resize):
    v = videos["a"]
    cache = FrameCache(tmp_path / "c", encoding=encoding)
    reference = decode(v.path, TIMES, resize=resize)
    miss = cache.get_or_decode(v.path, TIMES, resize=resize)
    assert_same(miss, reference)
    assert [read_index(f) for f in miss.data] == miss.indices == [0, 5, 13, 20, 39]
    no_decoder()
    hit = cache.get_or_decode(v.path, TIMES, resize=resize)
    assert_same(hit, reference)
    hit.data[0][0, 0] = 0  # frames handed out are writable arrays, like decoded ones


def test_jpg_encoding_hit_equals_miss(tmp_path, videos, no_decoder):
    v = videos["a"]
    cache = FrameCache(tmp_path / "c", encoding="jpg")
    reference = decode(v.path, TIMES)
    miss = cache.get_or_decode(v.path, TIMES)
    no_decoder()
    hit = cache.get_or_decode(v.path, TIMES)
    assert_same(hit, miss)  # a run gives the same frames whether the cache was warm or not
    assert miss.pts_seconds == reference.pts_seconds
    assert not all(np.array_equal(x, y) for x, y in zip(miss.data, reference.data))  # lossy
    assert [read_index(f) for f in hit.data] == reference.indices


def test_key_depends_on_content_and_settings_not_on_name(tmp_path, videos, cache, no_decoder):
    v = videos["a"]
    base = cache.key(v.path, TIMES)
    variants = [
        cache.key(v.path, TIMES[:-1]),
        cache.key(v.path, [t + 1e-9 for t in TIMES]),
        cache.key(v.path, "uniform:5"),
        cache.key(v.path, "uniform:6"),
        cache.key(v.path, TIMES, 48),
        cache.key(v.path, TIMES, 64),
        cache.key(v.path, TIMES, approximate=True),
        cache.key(v.path, TIMES, encoding="jpg"),
        cache.key(videos["b"].path, TIMES),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert cache.key(v.path, TIMES, 48) == cache.key(v.path, np.array(TIMES), video_mod.Resize(short=48))

    cache.get_or_decode(v.path, TIMES)
    copy = tmp_path / "elsewhere" / "renamed.mp4"
    copy.parent.mkdir()
    shutil.copy(v.path, copy)
    assert cache.key(copy, TIMES) == base
    no_decoder()
    assert_same(cache.get_or_decode(copy, TIMES), cache.get(base))


@pytest.mark.parametrize("plan", ["uniform:5", "lmms:5", "vlmevalkit:3"])
def test_plan_keyed_entries_read_plans_natively_and_hit_without_probe(cache, videos, no_decoder, monkeypatch, plan):
    from lvu.media.sampling import sample

    v = videos["b"]
    with VideoReader(v.path) as r:
        reference = sample(r, plan, resize=32)
    assert_same(cache.get_or_sample(v.path, plan, resize=32), reference)
    no_decoder()
    monkeypatch.setattr(video_mod, "probe", lambda *a, **k: pytest.fail("a hit probed the video"))
    assert_same(cache.get_or_sample(v.path, plan.upper(), resize=32), reference)
    assert cache.key(v.path, plan) != cache.key(v.path, plan, duration=2.5)
    with pytest.raises(LvuError, match="sampling plan"):
        cache.get_or_sample(v.path, "every:3")


def test_reencoded_video_at_same_path_misses(tmp_path, cache):
    v = make_video(tmp_path / "v", seconds=3, fps=10, gop=10)
    first = cache.get_or_decode(v.path, [1.0, 2.0])
    old_key = cache.key(v.path, [1.0, 2.0])
    make_video(tmp_path / "v", seconds=3, fps=5, gop=5)  # same path, new content
    assert cache.key(v.path, [1.0, 2.0]) != old_key
    second = cache.get_or_decode(v.path, [1.0, 2.0])
    assert first.indices == [10, 20] and second.indices == [5, 10]
    assert [read_index(f) for f in second.data] == [5, 10]


def test_fingerprint_samples_large_files_and_survives_copies(tmp_path):
    big = tmp_path / "big.bin"
    rng = np.random.default_rng(0)
    big.write_bytes(rng.integers(0, 256, 6 << 20, dtype=np.uint8).tobytes())
    fp = video_fingerprint(big)
    copy = tmp_path / "copy.bin"
    shutil.copy(big, copy)
    assert video_fingerprint(copy) == fp

    def changed(offset):
        data = bytearray(copy.read_bytes())
        data[offset] ^= 0xFF
        copy.write_bytes(bytes(data))
        st = copy.stat()
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # defeat the in-process memo
        return video_fingerprint(copy) != fp

    assert changed(10)  # header region
    shutil.copy(big, copy)
    assert changed((6 << 20) - 10)  # trailer region (mp4 moov atom, mkv cues)
    with pytest.raises(VideoError, match="missing.mp4"):
        video_fingerprint(tmp_path / "missing.mp4")


def _fill(root, path, times, barrier, queue, key, batch, log):
    class CountingReader(VideoReader):
        def __init__(self, *a, **k):
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
            super().__init__(*a, **k)

    video_mod.VideoReader = CountingReader
    cache = FrameCache(root)
    barrier.wait()
    torn = 0
    for _ in range(40):  # racing writers of one entry (no decode lock): readers never see a torn file
        cache.put(key, batch)
        got = cache.get(key)
        torn += got is None or got.indices != batch.indices
    barrier.wait()
    got = cache.get_or_decode(path, times)
    queue.put((torn, got.pts_seconds, got.indices, [f.tobytes() for f in got.data]))


@pytest.mark.slow
def test_two_processes_fill_the_same_entry(tmp_path, videos):
    v = videos["a"]
    root = tmp_path / "shared"
    cache = FrameCache(root)
    other = decode(videos["b"].path, [0.5, 1.5])
    other_key = cache.key(videos["b"].path, [0.5, 1.5])
    log = tmp_path / "decoders.log"
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_fill, args=(root, v.path, TIMES, barrier, queue, other_key, other, log))
             for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [r[0] for r in results] == [0, 0]
    assert results[0][1:] == results[1][1:]
    reference = decode(v.path, TIMES)
    assert results[0][1:] == (reference.pts_seconds, reference.indices, [f.tobytes() for f in reference.data])
    assert len(log.read_text().split()) == 1  # the entry was decoded once, the other process waited
    key = cache.key(v.path, TIMES)
    assert entry_files(cache) == sorted([cache.path(key), cache.path(other_key)])  # no temp/lock files
    assert_same(cache.get(key), reference)
    assert_same(cache.get(other_key), other)


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "flip-pixel", "flip-header", "pad"])
def test_damaged_entry_is_a_miss_and_removed(cache, videos, damage):
    v = videos["a"]
    good = cache.get_or_decode(v.path, TIMES)
    key = cache.key(v.path, TIMES)
    path = cache.path(key)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "empty":
        data = b""
    elif damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "flip-pixel":
        data[-100] ^= 0x01
    elif damage == "flip-header":
        data[20] ^= 0x55
    else:
        data += b"\0"
    path.write_bytes(bytes(data))
    assert cache.get(key) is None
    assert not path.exists()
    assert_same(cache.get_or_decode(v.path, TIMES), good)  # decoded again and stored again
    assert path.exists()


def _fake_batch(seed, n=3):
    rng = np.random.default_rng(seed)
    data = [rng.integers(0, 256, (8, 12, 3), dtype=np.uint8) for _ in range(n)]
    return video_mod.FrameBatch(data=data, pts_seconds=[float(i) for i in range(n)], indices=list(range(n)))


def _age(cache, key, seconds_ago):
    t = time.time() - seconds_ago
    os.utime(cache.path(key), (t, t))


def test_lru_prune_evicts_least_recently_used_first(cache):
    keys = [f"{i:02d}" * 20 for i in range(4)]
    for i, k in enumerate(keys):
        cache.put(k, _fake_batch(i))
        _age(cache, k, 1000 - 100 * i)  # keys[0] oldest ... keys[3] newest
    size = [cache.path(k).stat().st_size for k in keys]
    info = cache.info()
    assert (info.entries, info.bytes) == (4, sum(size))
    assert cache.get(keys[0]) is not None  # a hit makes keys[0] the most recently used
    removed, freed = cache.prune(max_bytes=size[0] + size[3])
    assert (removed, freed) == (2, size[1] + size[2])
    assert [k in cache for k in keys] == [True, False, False, True]
    _age(cache, keys[3], 7200)
    assert cache.prune(older_than=3600) == (1, size[3])
    assert [k in cache for k in keys] == [True, False, False, False]
    assert cache.prune(max_bytes=0) == (1, size[0])
    assert cache.info().entries == 0


def test_put_evicts_automatically_over_the_limit(tmp_path):
    probe_cache = FrameCache(tmp_path / "probe")
    probe_cache.put("x" * 40, _fake_batch(0))
    size = probe_cache.path("x" * 40).stat().st_size
    cache = FrameCache(tmp_path / "c", max_bytes=int(2.5 * size))
    keys = [f"{i:02d}" * 20 for i in range(5)]
    for i, k in enumerate(keys):
        cache.put(k, _fake_batch(i))
        _age(cache, k, 1000 - 100 * i)
        assert cache.info().bytes <= cache.max_bytes
    assert [k in cache for k in keys] == [False, False, False, True, True]


def test_prune_clears_stale_temp_files(cache):
    cache.put("ab" * 20, _fake_batch(0))
    stale = cache.path("ab" * 20).parent / ".tmp-abab-1-2-dead"
    stale.write_bytes(b"partial")
    os.utime(stale, (time.time() - 2 * 3600,) * 2)
    fresh = stale.with_name(".tmp-abab-1-2-live")
    fresh.write_bytes(b"being written")
    cache.prune()
    assert not stale.exists() and fresh.exists() and "ab" * 20 in cache


def test_bad_videos_raise_one_line_errors_and_cache_nothing(tmp_path, cache):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"not a video at all" * 100)
    with pytest.raises(VideoError, match="broken.mp4"):
        cache.get_or_decode(bad, [0.0])
    with pytest.raises(VideoError, match="nowhere.mp4"):
        cache.get_or_decode(tmp_path / "nowhere.mp4", [0.0])
    assert entry_files(cache) == []


def test_default_root_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "lvucache"))
    assert FrameCache().root == tmp_path / "lvucache" / "frames"
    with pytest.raises(LvuError, match="encoding"):
        FrameCache(encoding="webp")


@pytest.mark.parametrize("fmt", ["png", "jpg"])
def test_extract_frames_writes_images_and_index(tmp_path, videos, fmt):
    v = videos["a"]
    out = tmp_path / "frames"
    out.mkdir()
    (out / "frame_0099.png").write_bytes(b"stale")
    index_path = extract_frames(v.path, "uniform:6", out, fmt=fmt)
    doc = json.loads(index_path.read_text())
    with VideoReader(v.path) as r:
        reference = r.get_frames_played_at([(i + 0.5) * 4 / 6 for i in range(6)])
    assert reference.indices == [3, 10, 16, 23, 30, 36]
    assert doc["plan"] == "uniform:6" and doc["fps"] == pytest.approx(10) and doc["duration"] == pytest.approx(4)
    assert [f["pts"] for f in doc["frames"]] == reference.pts_seconds
    assert [f["frame"] for f in doc["frames"]] == reference.indices
    assert [f["index"] for f in doc["frames"]] == list(range(6))
    assert sorted(p.name for p in out.iterdir()) == sorted([f["file"] for f in doc["frames"]] + ["frames.json"])
    for f in doc["frames"]:
        img = np.asarray(Image.open(out / f["file"]))
        assert read_index(img) == f["frame"]
        if fmt == "png":
            assert np.array_equal(img, reference.data[f["index"]])
    with pytest.raises(LvuError, match="gif"):
        extract_frames(v.path, "uniform:6", out, fmt="gif")


@pytest.mark.slow
def test_warm_caches_good_videos_and_names_the_bad_one(tmp_path, videos, no_decoder):
    bad = tmp_path / "corrupt.mp4"
    data = videos["a"].path.read_bytes()
    bad.write_bytes(data[:200] + os.urandom(len(data) - 200))
    cache = FrameCache(tmp_path / "c")
    items = [
        (videos["a"].path, TIMES),
        (videos["a"].path, TIMES),  # a second question on the same video: not decoded twice
        (bad, [0.0, 1.0]),
        (videos["b"].path, [0.5, 1.5, 2.5]),
    ]
    summary = warm(items, workers=2, progress=False, cache=cache)
    assert (summary.videos, summary.frames, summary.entries, summary.hits) == (2, 8, 2, 0)
    assert len(summary.errors) == 1 and "corrupt.mp4" in summary.errors[0]
    assert summary.seconds > 0
    again = warm([*items[:2], (videos["a"].path, "uniform:4")], workers=1, progress=False, cache=cache)
    assert (again.videos, again.frames, again.entries, again.hits, again.errors) == (1, 9, 2, 1, [])
    no_decoder()
    assert cache.get_or_decode(videos["b"].path, [0.5, 1.5, 2.5]).indices == [4, 12, 20]
    assert cache.get_or_sample(videos["a"].path, "uniform:4").indices == [5, 15, 25, 35]
