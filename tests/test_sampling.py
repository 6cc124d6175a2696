"""Sampling plans: formulas pinned with hand-computed indices, string/dict round-trips, and
reading plans from a real (synthetic) video."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from lvu.errors import LvuError
from lvu.media.sampling import (
    All1fps,
    Center,
    First,
    Fps,
    Lmms,
    Lvb,
    Uniform,
    Vlmevalkit,
    parse_plan,
    sample,
)
from lvu.media.testing import read_index
from lvu.media.video import VideoReader

SPECS = ["uniform:32", "fps:1", "fps:0.5:max=64", "center", "first", "all1fps", "lvb:64", "lmms:32", "vlmevalkit:8"]


# ---- parsing and identity -------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS)
def test_string_and_dict_round_trip(spec):
    plan = parse_plan(spec)
    assert str(plan) == spec
    assert parse_plan(str(plan)) == plan
    dumped = plan.model_dump()
    assert dumped["kind"] == spec.split(":")[0]
    assert parse_plan(dumped) == plan
    assert hash(parse_plan(spec)) == hash(plan)
    with pytest.raises(ValidationError):
        plan.kind = "first"  # frozen


def test_parse_gives_the_right_fields():
    assert parse_plan("uniform:32") == Uniform(n=32)
    assert parse_plan("fps:0.5:max=64") == Fps(fps=0.5, max_frames=64)
    assert parse_plan(" FPS:2 ") == Fps(fps=2)
    assert parse_plan("lvb:64") == Lvb(n=64) != Lmms(n=64)
    assert str(Fps(fps=1 / 3)) == "fps:0.3333333333333333" and parse_plan(str(Fps(fps=1 / 3))) == Fps(fps=1 / 3)
    assert len({parse_plan(s) for s in SPECS + SPECS}) == len(SPECS)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "uniform",
        "uniform:0",
        "uniform:-3",
        "uniform:2.5",
        "fps:",
        "fps:0",
        "fps:x",
        "fps:1:cap=3",
        "fps:1:max=0",
        "center:2",
        "frames:8",
        {"kind": "uniform"},
        {"kind": "nope", "n": 3},
    ],
)
def test_bad_specs_are_one_line_errors(bad):
    with pytest.raises(LvuError) as e:
        parse_plan(bad)
    assert "\n" not in str(e.value) and "uniform:N" in str(e.value)


# ---- formulas (expected values computed by hand) ----------------------------------------------


def test_uniform_segment_centres():
    assert Uniform(n=4).timestamps(10.0, 30) == [1.25, 3.75, 6.25, 8.75]
    assert Uniform(n=4).frame_indices(100, 30) == [12, 37, 62, 87]  # floor((i + .5) * 100 / 4)
    assert Uniform(n=3).frame_indices(10, 25) == [1, 5, 8]  # 10/6=1.67, 5, 8.33
    # fewer frames than N: every frame once, at its centre
    assert Uniform(n=8).frame_indices(5, 30) == [0, 1, 2, 3, 4]
    assert Uniform(n=8).timestamps(5 / 30, 30) == pytest.approx([(i + 0.5) / 30 for i in range(5)])
    assert Uniform(n=2).timestamps(10.0, 0) == [2.5, 7.5]  # unknown fps: no cap


def test_longvideobench_official_formula():
    # duration 12.5 s at 29.97: total_valid = int(374.625) = 374, n = min(64, 12) = 12, step = int(374/12) = 31
    assert Lvb(n=64).frame_indices(999, 29.97, duration=12.5) == [31 * i for i in range(12)]
    # 100 s at 30 fps, 4 frames: step int(3000/4) = 750; timestamps idx/fps
    assert Lvb(n=4).frame_indices(3000, 30) == [0, 750, 1500, 2250]
    assert Lvb(n=4).timestamps(100.0, 30) == [0.0, 25.0, 50.0, 75.0]
    # 8.9 s: total int(267.0) = 267, n = min(16, 8) = 8, step int(267/8) = 33 -> at most 1 fps
    assert Lvb(n=16).timestamps(8.9, 30) == pytest.approx([33 * i / 30 for i in range(8)])
    # without an annotation duration the file's num_frames / fps is used
    assert Lvb(n=16).frame_indices(267, 30) == [33 * i for i in range(8)]
    assert Lvb(n=8).frame_indices(12, 30, duration=0.4) == [0]  # official code divides by zero here


def test_lmms_eval_linspace():
    # np.linspace(0, 99, 8): 0, 14.14, 28.29, 42.43, 56.57, 70.71, 84.86, 99 -> truncated
    assert Lmms(n=8).frame_indices(100, 30) == [0, 14, 28, 42, 56, 70, 84, 99]
    assert Lmms(n=3).frame_indices(10, 30) == [0, 4, 9]  # 0, 4.5, 9
    assert Lmms(n=8).frame_indices(5, 30) == [0, 1, 2, 3, 4]  # min(N, T) frames: no repeats
    assert Lmms(n=3).timestamps(10 / 30, 30) == pytest.approx([0, 4 / 30, 9 / 30])


def test_vlmevalkit_excludes_both_ends_and_repeats_on_short_videos():
    # step = 100 / 9 = 11.11: int(11.1), int(22.2), ...
    assert Vlmevalkit(n=8).frame_indices(100, 30) == [11, 22, 33, 44, 55, 66, 77, 88]
    assert Vlmevalkit(n=3).frame_indices(10, 30) == [2, 5, 7]  # 2.5, 5, 7.5
    assert Vlmevalkit(n=8).frame_indices(5, 30) == [0, 1, 1, 2, 2, 3, 3, 4]  # step 5/9
    assert Vlmevalkit(n=3).timestamps(10 / 30, 30) == pytest.approx([2 / 30, 5 / 30, 7 / 30])


def test_fps_plans():
    assert Fps(fps=1).timestamps(10.5, 30) == [float(k) for k in range(11)]
    assert Fps(fps=1).timestamps(10.0, 30) == [float(k) for k in range(10)]  # t < duration
    assert Fps(fps=2).timestamps(3.0, 25) == [0, 0.5, 1, 1.5, 2, 2.5]
    assert Fps(fps=0.5, max_frames=4).timestamps(100.0, 30) == [12.5, 37.5, 62.5, 87.5]  # cap -> uniform:4
    assert Fps(fps=0.5, max_frames=64).timestamps(100.0, 30) == [2.0 * k for k in range(50)]  # under the cap
    assert Fps(fps=60).timestamps(0.2, 30) == pytest.approx([k / 30 for k in range(6)])  # capped at video fps
    assert Fps(fps=1).frame_indices(315, 30) == [30 * k for k in range(11)]
    assert All1fps().timestamps(3.2, 30) == [0.0, 1.0, 2.0, 3.0]
    assert All1fps().frame_indices(96, 30) == [0, 30, 60, 90]


def test_single_frame_plans():
    assert Center().timestamps(10.0, 30) == [5.0]
    assert Center().frame_indices(101, 30) == [50]
    assert First().timestamps(10.0, 30) == [0.0]
    assert First().frame_indices(101, 30) == [0]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("num_frames,fps", [(1, 30), (7, 30), (300, 30), (3001, 29.97), (54000, 30)])
def test_indices_and_timestamps_agree(spec, num_frames, fps):
    """Every plan: indices in range and ascending, and times that land on the same frames."""
    plan = parse_plan(spec)
    idx = plan.frame_indices(num_frames, fps)
    times = plan.timestamps(num_frames / fps, fps)
    assert idx and all(0 <= i < num_frames for i in idx) and idx == sorted(idx)
    assert times == sorted(times) and all(0 <= t < num_frames / fps for t in times)
    assert [min(num_frames - 1, math.floor(t * fps + 1e-6)) for t in times] == idx
    if spec != "vlmevalkit:8":
        assert len(set(idx)) == len(idx)  # only VLMEvalKit's own formula repeats frames


# ---- reading plans from a video ---------------------------------------------------------------


def test_sample_reads_each_plan_in_its_native_terms(tmp_video):
    v = tmp_video(seconds=4, fps=30, gop=30)  # 120 frames
    with VideoReader(v.path) as r:
        b = sample(r, "uniform:4")
        assert b.indices == [15, 45, 75, 105] == [read_index(a) for a in b.data]
        assert b.pts_seconds == pytest.approx([0.5, 1.5, 2.5, 3.5])
        assert sample(r, "lmms:4").indices == [0, 39, 79, 119]  # linspace(0, 119, 4) = 0, 39.67, 79.33, 119
        assert sample(r, "vlmevalkit:4").indices == [24, 48, 72, 96]
        assert sample(r, "lvb:64").indices == [0, 30, 60, 90]  # 4 s -> 4 frames, step 30
        assert sample(r, Lvb(n=64), duration=2.5).indices == [0, 37]  # annotation duration: int(75/2) = 37
        assert sample(r, "fps:2", resize=48).data[0].shape == (48, 80, 3)


def test_sample_on_a_video_shorter_than_n(tmp_video):
    v = tmp_video(seconds=10 / 30, fps=30, gop=30)  # 10 frames
    with VideoReader(v.path) as r:
        assert r.num_frames == 10
        for spec in ("uniform:32", "lmms:32"):
            b = sample(r, spec)
            assert b.indices == list(range(10)) == [read_index(a) for a in b.data]
        assert sample(r, "vlmevalkit:16").indices == [int(i * 10 / 17) for i in range(1, 17)]
        assert sample(r, "lvb:64").indices == [0]  # under 1 s


def test_index_plans_stay_exact_on_vfr_video(tmp_video):
    v = tmp_video(seconds=4, fps=30, gop=20, vfr=True)
    with VideoReader(v.path) as r:
        want = Lmms(n=6).frame_indices(r.num_frames, r.fps)
        b = sample(r, "lmms:6")
        assert b.indices == want == [read_index(a) for a in b.data]
