"""Neptune's selection filters (lvu.construct.selection) on generated videos with real structure:
a static picture with a voice-over is rejected, three shots are kept; a face filling the frame
is rejected by dlib's frontal face detector, videos without faces are kept. Offline, CPU only."""

from __future__ import annotations

import json

import numpy as np
import pytest
from build_videos import (
    ShotSpec,
    assert_one_line_naming,
    face_photo,
    multi_shot_video,
    static_video,
    talking_head_video,
    unreadable_videos,
    video_dir,
)

from lvu.construct import selection
from lvu.construct.selection import FilterResult, duration_filter, face_heights, static_filter, talking_head_filter
from lvu.errors import DataError, LvuError


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    with video_dir(tmp_path_factory, "selection") as d:
        yield {
            "multi": multi_shot_video(d / "multi"),
            "static": static_video(d / "static", speech=None),
            "face": talking_head_video(d / "face"),
            # a still picture after one black second: a fade-in must not make it "dynamic"
            "fade": multi_shot_video(d / "fade", [ShotSpec(1.0, (0, 0, 0)), ShotSpec(15.0, (150, 110, 60), "SLIDE")]),
        }


def _json_roundtrip(result: FilterResult) -> dict:
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["keep"] == result.keep and doc["reason"] == result.reason and "\n" not in result.reason
    return doc


# ---- duration -------------------------------------------------------------------------------------


def test_duration_filter_bounds_and_evidence():
    assert duration_filter(20.0).keep
    short, long = duration_filter(15.9), duration_filter(900.5)
    assert not short.keep and "below the minimum 16 s" in short.reason
    assert not long.keep and "above the maximum 900 s" in long.reason
    assert _json_roundtrip(short)["evidence"] == {"duration_s": 15.9, "min_s": 16.0, "max_s": 900.0}
    assert duration_filter(3.0, None, None).keep and duration_filter(3.0, 2.0, 3.0).keep
    with pytest.raises(LvuError, match="duration range is empty"):
        duration_filter(5.0, 10.0, 1.0)


# ---- static videos --------------------------------------------------------------------------------


def test_static_video_is_rejected_as_one_cluster(videos):
    result = static_filter(videos["static"])
    assert not result.keep and result.name == "static"
    ev = _json_roundtrip(result)["evidence"]
    assert ev["frames"] == 16 and ev["clusters"] == 1 and ev["cluster_sizes"] == [16]
    assert ev["max_frame_difference"] < 0.02  # codec noise only


def test_multi_shot_video_is_kept_with_a_cluster_per_shot(videos):
    result = static_filter(videos["multi"])
    assert result.keep and result.reason.startswith("3 visual clusters")
    ev = _json_roundtrip(result)["evidence"]
    assert ev["clusters"] == 3 and ev["cluster_sizes"] == [6, 6, 6]  # the moving ball stays in its shot's cluster
    assert ev["max_frame_difference"] > selection.STATIC_THRESHOLD


def test_one_odd_frame_does_not_count_as_a_cluster(videos):
    """The black first second is sampled once (t=0): a cluster of 1 frame, below MIN_CLUSTER_FRAMES."""
    result = static_filter(videos["fade"])
    assert not result.keep and result.evidence["cluster_sizes"] == [15, 1]
    assert static_filter(videos["fade"], min_cluster_frames=1).keep


def test_static_threshold_is_an_option(videos):
    loose = static_filter(videos["multi"], threshold=0.9)  # above every difference between frames
    assert not loose.keep and loose.evidence["clusters"] == 1


def test_long_videos_are_clustered_on_at_most_max_frames(videos):
    result = static_filter(videos["multi"], fps=5.0, max_frames=12)
    assert result.keep and result.evidence["frames"] == 12


# ---- talking heads --------------------------------------------------------------------------------


def test_detector_finds_the_face_photo():
    photo = np.asarray(face_photo())
    heights = face_heights(photo)
    assert len(heights) == 1 and heights[0] == pytest.approx(216 / 600, abs=0.05)
    assert face_heights(np.full((240, 320, 3), 90, np.uint8)) == []


def test_talking_head_video_is_rejected(videos):
    result = talking_head_filter(videos["face"])
    assert not result.keep and result.name == "talking_head" and result.reason.startswith("talking head: 12 of 16")
    ev = _json_roundtrip(result)["evidence"]
    assert ev["talking_head_frames"] == 12 and ev["fraction"] == 0.75
    ratios = ev["face_height_ratios"]
    assert len(ratios) == 16 and all(r > 0.4 for r in ratios[:12]) and ratios[12:] == [0.0] * 4


@pytest.mark.parametrize("name", ["multi", "static"])
def test_videos_without_faces_are_kept(videos, name):
    result = talking_head_filter(videos[name])
    assert result.keep and result.evidence["talking_head_frames"] == 0
    assert set(result.evidence["face_height_ratios"]) == {0.0}


def test_talking_head_thresholds_are_options(videos):
    # faces are ~65 % of the frame height: not talking heads when the bar is 70 %
    assert talking_head_filter(videos["face"], min_face_height=0.7).keep
    # 75 % of the frames show the face: kept when up to 80 % is allowed
    assert talking_head_filter(videos["face"], max_fraction=0.8).keep
    with pytest.raises(LvuError, match="min_face_height=1.5"):
        talking_head_filter(videos["face"], min_face_height=1.5)


def test_only_the_talking_head_filter_rejects_the_face_video(videos):
    """The face video has a cutaway: the static filter keeps it, so the two filters are distinct."""
    assert static_filter(videos["face"]).keep


# ---- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("run", [static_filter, talking_head_filter])
def test_unreadable_video_is_a_data_error_naming_the_file(tmp_path, run):
    for path in unreadable_videos(tmp_path):
        with pytest.raises(DataError) as e:
            run(path)
        assert_one_line_naming(e.value, path)
