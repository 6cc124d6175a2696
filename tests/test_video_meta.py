"""`Benchmark.plan(sample, video: VideoMeta)`: the engine builds the video's probed info once per
sample (lazily: the file is opened only when a plan reads what the release did not give), and no
benchmark probes the video itself."""

from __future__ import annotations

import asyncio
import pickle
import re
import warnings
from pathlib import Path

import pytest

import lvu.media.video as video_mod
from lvu.benchmarks.base import Benchmark
from lvu.benchmarks.jsonl import JsonlBenchmark
from lvu.benchmarks.videomme import VideoMME
from lvu.errors import LvuError, VideoError
from lvu.runs.engine import Engine, video_meta
from lvu.types import InputPlan, Sample, VideoMeta, VideoRef

BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "src" / "lvu" / "benchmarks"


def sample(path: str, duration: float | None = None, id: str = "s") -> Sample:
    return Sample(id=id, benchmark="x", video=VideoRef(path=path, duration=duration), question="q?",
                  options=["a", "b"], answer=0)


@pytest.fixture
def probes(monkeypatch):
    """Counts the real probes (`probe_cached` memoises on top of `probe`)."""
    calls: list[str] = []
    real = video_mod.probe

    def counting(path):
        calls.append(str(path))
        return real(path)

    monkeypatch.setattr(video_mod, "probe", counting)
    monkeypatch.setattr(video_mod, "_PROBED", {})
    return calls


def test_a_plain_video_meta_is_a_small_frozen_value():
    meta = VideoMeta(60.0)
    assert (meta.duration, meta.fps, meta.num_frames, meta.keyframes) == (60.0, None, None, None)
    assert float(meta) == 60.0  # plans written for plan(sample, duration) that convert keep working
    full = VideoMeta(10, fps=25, num_frames=250, keyframes=[0, 2.0])
    assert full.rate_and_count() == (25.0, 250) and full.keyframes == (0.0, 2.0)
    assert full == VideoMeta(10.0, fps=25.0, num_frames=250, keyframes=(0.0, 2.0)) != meta
    assert pickle.loads(pickle.dumps(full)) == full and hash(full) == hash(pickle.loads(pickle.dumps(full)))
    assert repr(meta) == "VideoMeta(duration=60.0, fps=None, num_frames=None, keyframes=None)"
    with pytest.raises(AttributeError, match="frozen"):
        meta.duration = 1.0  # type: ignore[misc]
    with pytest.raises(LvuError, match="needs the video's frame rate and frame count") as e:
        meta.rate_and_count()
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="needs a duration"):
        VideoMeta()


def test_the_engine_reads_the_file_only_for_what_the_release_does_not_give(tmp_video, probes):
    video = tmp_video(seconds=2, fps=10, gop=10, size=(32, 24))
    released = video_meta(sample(str(video.path), duration=1.5))
    assert repr(released) == "VideoMeta(duration=1.5, fps=?, num_frames=?, keyframes=?)"
    assert released.duration == 1.5 and probes == []  # a duration-only plan never opens the file
    assert released.rate_and_count() == (10.0, 20) and released.duration == 1.5  # the release's duration stays
    assert len(probes) == 1
    unreleased = video_meta(sample(str(video.path)))
    assert unreleased.duration == pytest.approx(2.0) and unreleased.fps == 10.0 and unreleased.num_frames == 20
    assert len(probes) == 1  # memoised per process: each video is probed once


def test_a_missing_video_fails_only_where_the_plan_needs_the_file(tmp_path):
    missing = str(tmp_path / "gone.mp4")
    meta = video_meta(sample(missing, duration=30.0))
    assert meta.duration == 30.0
    with pytest.raises(VideoError) as e:
        meta.fps
    with pytest.raises(VideoError) as direct:
        video_mod.probe(missing)
    assert str(e.value) == str(direct.value) and "\n" not in str(e.value)  # the probe's own one-line error
    with pytest.raises(VideoError):
        video_meta(sample(missing)).duration  # no release duration: the plan needs the file


class Recording(Benchmark):
    """Records what plan receives; reads the frame rate so the file must be probed."""

    name = "recording"
    seen: list = []

    def load(self):
        return [], []

    def plan(self, sample, video):
        Recording.seen.append(video)
        fps, total = video.rate_and_count()
        return InputPlan(timestamps=[total / fps / 2])

    def build_prompt(self, sample, frames, cues):
        from lvu.types import Prompt, Text

        return Prompt(parts=[*frames, Text(text=sample.question)])

    def extract(self, sample, response):
        raise NotImplementedError

    def score(self, sample, prediction):
        raise NotImplementedError


def test_the_engine_hands_plan_one_video_meta_per_sample(tmp_video, probes):
    video = tmp_video(seconds=2, fps=10, gop=10, size=(32, 24))
    Recording.seen = []
    engine = Engine(Recording(), None, None)  # type: ignore[arg-type]
    samples = [sample(str(video.path), duration=2.0, id=f"s{i}") for i in range(3)]

    async def prepare_all():
        return [await engine.prepare_sample(s) for s in samples]

    prepared = asyncio.run(prepare_all())
    assert [p.result.error for p in prepared] == [None] * 3
    assert [p.result.frame_timestamps for p in prepared] == [[1.0]] * 3
    assert len(Recording.seen) == 3 and all(isinstance(v, VideoMeta) for v in Recording.seen)
    assert [v.rate_and_count() for v in Recording.seen] == [(10.0, 20)] * 3
    assert probes == [str(video.path)]  # three samples of one video: one probe


def test_no_benchmark_probes_the_video_itself():
    probing = re.compile(r"\bprobe(_cached|_frames)?\b\s*\(|import\s+.*\bprobe(_cached|_frames)?\b")
    offenders = [f"{path.name}:{n}: {line.strip()}" for path in sorted(BENCHMARKS_DIR.glob("*.py"))
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if probing.search(line)]
    assert offenders == []


def test_a_plugin_with_the_old_plan_signature_still_gets_the_duration():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class OldStyle(JsonlBenchmark):
            def plan(self, sample, duration):
                assert type(duration) is float
                return InputPlan(timestamps=[duration / 2])

    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert "OldStyle.plan(self, sample, duration) is the old signature" in str(warning.message)
    assert warning.filename == __file__  # points at the plugin's class, not at lvu
    bench = OldStyle(data="x.jsonl")
    assert bench.plan(sample("none.mp4"), VideoMeta(12.0)).timestamps == [6.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class NewStyle(JsonlBenchmark):
            def plan(self, sample, video):
                return super().plan(sample, video)

    assert NewStyle(data="x.jsonl", frames=2).plan(sample("none.mp4"), VideoMeta(12.0)).timestamps == [3.0, 9.0]


def test_videomme_builds_its_subtitle_lines_from_the_planned_video():
    bench = VideoMME(subtitles="per-frame", compat="lmms-eval")
    s = sample("none.mp4", duration=10.0)
    with pytest.raises(LvuError, match="call plan\\(sample, video\\) before build_prompt") as e:
        bench.build_prompt(s, [], [])
    assert "\n" not in str(e.value)
    bench.plan(s, VideoMeta(10.0, fps=10.0, num_frames=100))
    assert "No subtitles available" in bench.build_prompt(s, [], []).text
