"""The built-in haystack: deterministic, atomic, balanced, needles where the questions say."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from lvu.benchmarks import haystack
from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.haystack import DEPTH_BINS, HaystackBenchmark, generate, is_complete
from lvu.benchmarks.jsonl import read_samples
from lvu.media.subtitles import load_cues
from lvu.media.video import VideoReader, probe

SMALL = {"seed": 0, "n_videos": 2, "scale": 0.25}
KINDS = {"read", "subtitle", "order", "count", "shape"}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return generate(tmp_path_factory.mktemp("hay") / "a", **SMALL)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_same_seed_same_benchmark(small, tmp_path):
    again = generate(tmp_path / "b", **SMALL)
    a, b = _files(small.parent), _files(again.parent)
    assert a.keys() == b.keys()
    texts = [k for k in a if k.endswith((".jsonl", ".srt"))]
    assert len(texts) == 3
    for name in texts:
        assert a[name] == b[name], name
    for name in (k for k in a if k.endswith(".mp4")):
        times = [0.1, 7.3, 14.9, 29.5]
        with VideoReader(small.parent / name) as r1, VideoReader(again.parent / name) as r2:
            f1, f2 = r1.get_frames_played_at(times), r2.get_frames_played_at(times)
        assert all(np.array_equal(x, y) for x, y in zip(f1.data, f2.data)), name
    other = generate(tmp_path / "c", **{**SMALL, "seed": 1})
    assert other.read_bytes() != small.read_bytes()


def test_videos_subtitles_and_samples_fit_together(small):
    samples, bad = read_samples(small)
    assert bad == [] and len(samples) == 2 * 10
    by_video = defaultdict(list)
    for s in samples:
        by_video[s.video.path].append(s)
    assert len(by_video) == 2
    for path, group in by_video.items():
        info = probe(path)
        assert abs(info.duration - group[0].video.duration) < 0.2
        assert 30 <= info.duration <= 60  # 120-240 s at scale 0.25
        cues = load_cues(group[0].subtitles.path)
        assert len(cues) >= 5 and all(a.end <= b.start for a, b in itertools.pairwise(cues))
        for s in group:
            for needle in s.extra["needles"]:
                assert 0 <= needle["start"] < needle["end"] <= info.duration
            if s.labels["kind"] == "subtitle":  # the quoted cue is on screen while the needle is
                text = s.extra["subtitle"]
                assert f'"{text}"' in s.question
                cue = next(c for c in cues if c.text == text)
                needle = s.extra["needles"][0]
                assert cue.start <= needle["start"] and needle["end"] <= cue.end
            if "time" in s.extra:  # the asked moment lies inside the needle
                needle = s.extra["needles"][0]
                assert needle["start"] < s.extra["time"] < needle["end"]


def test_question_kinds_options_and_balanced_answers(small):
    samples, _ = read_samples(small)
    assert {s.labels["kind"] for s in samples} == KINDS
    positions: dict[int, Counter] = defaultdict(Counter)
    for s in samples:
        assert len(s.options) in (4, 5) and len(set(s.options)) == len(s.options)
        positions[len(s.options)][s.answer] += 1
        kind = s.labels["kind"]
        if kind in ("read", "subtitle"):  # distractors are words shown elsewhere in the same video
            shown = {n["value"] for t in samples if t.video.path == s.video.path for n in t.extra["needles"]}
            assert sum(o in shown for o in s.options) >= 3
        if kind == "count":
            assert s.options[s.answer] == str(len(s.extra["needles"]))
        if kind == "order":
            first, second = s.extra["needles"]
            assert first["start"] < second["start"]
            assert s.options[s.answer] == f'"{first["value"]}" appears before "{second["value"]}"'
    for n, counts in positions.items():
        assert set(counts) == set(range(n)), (n, counts)  # every letter is an answer...
        assert max(counts.values()) - min(counts.values()) <= 1  # ...equally often


def test_needle_depths_cover_the_whole_video(small):
    samples, _ = read_samples(small)
    for path in {s.video.path for s in samples}:
        depths = {s.labels["depth"] for s in samples if s.video.path == path and "depth" in s.labels}
        assert depths == set(DEPTH_BINS), path
    for s in samples:
        for needle in s.extra["needles"]:
            assert 0 <= needle["depth"] <= 1


def test_generation_is_atomic_and_reused(small, tmp_path, monkeypatch):
    assert is_complete(small.parent, **SMALL)
    assert not is_complete(small.parent, **{**SMALL, "seed": 3})
    before = small.stat().st_mtime_ns
    assert generate(small.parent, **SMALL) == small and small.stat().st_mtime_ns == before  # no work

    target = tmp_path / "crash"

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(haystack, "_encode", explode)
    with pytest.raises(RuntimeError, match="disk full"):
        generate(target, **SMALL)
    assert not target.exists() and list(tmp_path.iterdir()) == []  # nothing half-made is left
    monkeypatch.undo()

    target.mkdir()  # a half-generated folder (no marker) is never used: it is replaced
    (target / "haystack.jsonl").write_text("garbage\n")
    path = generate(target, **SMALL)
    assert path.read_bytes() == small.read_bytes()
    assert json.loads((target / ".complete").read_text())["version"] == haystack.VERSION


def test_registered_benchmark_uses_the_cache_dir(small, tmp_path, monkeypatch):
    assert BENCHMARKS.get("haystack") is HaystackBenchmark
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path))
    assert haystack.default_dir(0) == tmp_path / "haystack" / "v1-seed0"
    calls = []
    monkeypatch.setattr(haystack, "generate", lambda out, **kw: calls.append((out, kw)) or small)
    bench = HaystackBenchmark()
    samples, bad = bench.load()
    assert calls == [(tmp_path / "haystack" / "v1-seed0", {"seed": 0, "progress": True})]
    assert len(samples) == 20 and bad == []
    assert bench.settings["frames"] == 32 and bench.settings["subtitles"] == "interleave"
    assert HaystackBenchmark(data=str(small)).load()[0][0].id == samples[0].id  # explicit data wins
