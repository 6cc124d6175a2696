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

from select_videos import SCORE_CHANGES, noisy_static_video, scoreboard_video, scrolling_text_video

from lvu.construct import selection
from lvu.construct.selection import FilterResult, duration_filter, face_heights, static_filter, talking_head_filter
from lvu.errors import DataError, LvuError
from lvu.media.testing import make_video_with_audio


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    with video_dir(tmp_path_factory, "selection") as d:
        yield {
            "multi": multi_shot_video(d / "multi"),
            "static": static_video(d / "static", speech=None),
            "face": talking_head_video(d / "face"),
            # a still picture after one black second: a fade-in must not make it "dynamic"
            "fade": _still_after_black(d / "fade"),
            "scroll": scrolling_text_video(d / "scroll"),
            "scoreboard": scoreboard_video(d / "scoreboard"),
            "noisy": noisy_static_video(d / "noisy"),
        }


def _still_after_black(path):
    picture = static_video(path.with_name("still-src"), speech=None)  # only to reuse the slide's picture
    from lvu.media.video import VideoReader

    with VideoReader(picture) as reader:
        slide = reader.get_frames_played_at([0.0]).data[0]
    black = np.zeros_like(slide)
    return make_video_with_audio(path, [], 16_000, seconds=16.0, fps=10, size=(slide.shape[1], slide.shape[0]),
                                 draw=lambda i: black if i < 10 else slide)


def _json_roundtrip(result: FilterResult) -> dict:
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["keep"] == result.keep and doc["reason"] == result.reason and "\n" not in result.reason
    return doc


# ---- duration -------------------------------------------------------------------------------------


def test_duration_filter_bounds_and_evidence():
    assert duration_filter(20.0).keep
    # no bounds by default: Neptune states no minimum (16 s is its shortest video) and truncates long ones
    assert duration_filter(3.0).keep and duration_filter(5000.0).keep
    short, long = duration_filter(15.9, 16.0, 900.0), duration_filter(900.5, 16.0, 900.0)
    assert not short.keep and "below the minimum 16 s" in short.reason
    assert not long.keep and "above the maximum 900 s" in long.reason
    assert _json_roundtrip(short)["evidence"] == {"duration_s": 15.9, "min_s": 16.0, "max_s": 900.0}
    assert duration_filter(3.0, None, None).keep and duration_filter(3.0, 2.0, 3.0).keep
    with pytest.raises(LvuError, match="duration range is empty"):
        duration_filter(5.0, 10.0, 1.0)


# ---- static videos --------------------------------------------------------------------------------


@pytest.mark.slow
def test_static_video_is_rejected_as_one_cluster(videos):
    result = static_filter(videos["static"])
    assert not result.keep and result.name == "static"
    ev = _json_roundtrip(result)["evidence"]
    assert ev["frames"] == 16 and ev["clusters"] == 1 and ev["cluster_sizes"] == [16]
    assert ev["max_frame_difference"] < 0.02  # codec noise only


def test_multi_shot_video_is_kept(videos):
    result = static_filter(videos["multi"])
    assert result.keep
    ev = _json_roundtrip(result)["evidence"]
    # three shots, and the ball moving within each shot changes a few cells every second
    assert ev["clusters"] >= 3 and ev["frames_outside_largest"] >= 12
    assert ev["max_frame_difference"] > selection.STATIC_THRESHOLD


def test_scrolling_text_is_kept(videos):
    """Only a 30 px band of sign text moves: whole-frame differences stay near noise (the old rule
    measured 0.011 and dropped it as one cluster); the largest cell difference sees it."""
    result = static_filter(videos["scroll"])
    assert result.keep, result.reason
    assert result.evidence["frames_outside_largest"] >= 10 and result.evidence["max_frame_difference"] > 0.2


def test_scoreboard_with_five_score_changes_is_kept(videos):
    result = static_filter(videos["scoreboard"])
    assert result.keep, result.reason
    ev = result.evidence
    assert ev["clusters"] >= 4 and ev["clusters"] <= len(SCORE_CHANGES) + 1  # one cluster per score at most
    assert ev["frames_outside_largest"] >= 15


def test_static_picture_with_sensor_noise_is_dropped(videos):
    result = static_filter(videos["noisy"])
    assert not result.keep and result.evidence["cluster_sizes"] == [20]
    assert result.evidence["max_frame_difference"] < selection.STATIC_THRESHOLD / 2  # noise, well below the cut


def test_one_odd_frame_does_not_count_as_a_cluster(videos):
    """The black first second is sampled once (t=0): a cluster of 1 frame, below MIN_CLUSTER_FRAMES."""
    result = static_filter(videos["fade"])
    assert not result.keep and result.evidence["cluster_sizes"] == [15, 1], result.evidence
    assert static_filter(videos["fade"], min_cluster_frames=1).keep


def test_static_threshold_is_an_option(videos):
    loose = static_filter(videos["multi"], threshold=0.9)  # above every difference between frames
    assert not loose.keep and loose.evidence["clusters"] == 1


def test_long_videos_are_clustered_on_at_most_max_frames(videos):
    result = static_filter(videos["multi"], fps=5.0, max_frames=12)
    assert result.keep and result.evidence["frames"] == 12


# ---- talking heads --------------------------------------------------------------------------------


@pytest.mark.slow
def test_detector_finds_the_face_photo():
    photo = np.asarray(face_photo())
    heights = face_heights(photo)
    assert len(heights) == 1 and heights[0] == pytest.approx(216 / 600, abs=0.05)
    assert face_heights(np.full((240, 320, 3), 90, np.uint8)) == []


@pytest.mark.slow
def test_talking_head_video_is_rejected(videos):
    result = talking_head_filter(videos["face"])
    assert not result.keep and result.name == "talking_head" and result.reason.startswith("talking head: 12 of 16")
    ev = _json_roundtrip(result)["evidence"]
    assert ev["talking_head_frames"] == 12 and ev["fraction"] == 0.75
    ratios = ev["face_height_ratios"]
    assert len(ratios) == 16 and all(r > 0.4 for r in ratios[:12]) and ratios[12:] == [0.0] * 4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["multi", "static"])
def test_videos_without_faces_are_kept(videos, name):
    result = talking_head_filter(videos[name])
    assert result.keep and result.evidence["talking_head_frames"] == 0
    assert set(result.evidence["face_height_ratios"]) == {0.0}


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("run", [static_filter, talking_head_filter])
def test_unreadable_video_is_a_data_error_naming_the_file(tmp_path, run):
    for path in unreadable_videos(tmp_path):
        with pytest.raises(DataError) as e:
            run(path)
        assert_one_line_naming(e.value, path)


# ---- Neptune's selection stage: truncation, metadata rules, no invented minimum ---------------------


def _neptune_select(path, **options):
    from lvu.construct.neptune_signal_stages import NeptuneOptions, Select

    return Select(NeptuneOptions(**options).model_dump())._select(str(path))


@pytest.mark.slow
def test_neptune_truncates_long_videos_instead_of_dropping_them(videos):
    """An 18 s video with a 10 s limit stands for a 20-minute one with the paper's 15: kept, and
    every frame-reading filter and later stage sees only the first 10 s."""
    from lvu.construct.neptune_signal_stages import FrameCaptions, Shots
    from lvu.construct.pipeline import Item

    sel = _neptune_select(videos["multi"], truncate_seconds=10.0)
    assert sel["keep"] and sel["duration"] == 18.0 and sel["analysed_s"] == 10.0
    static, talking = (f for f in sel["filters"] if f["name"] in ("static", "talking_head"))
    assert static["evidence"]["frames"] == 10 and talking["evidence"]["frames"] == 10
    item = Item("multi", str(videos["multi"]))
    assert Shots({}).plan(item, {"selection": sel})[0].payload["until"] == 10.0
    assert [u.payload["t"] for u in FrameCaptions({}).plan(item, {"selection": sel})] == [float(t) for t in range(10)]
    whole = _neptune_select(videos["multi"])  # 18 s < 900 s: used whole, no `until` in the stages' keys
    assert whole["analysed_s"] == 18.0 and "until" not in Shots({}).plan(item, {"selection": whole})[0].payload
    assert _neptune_select(videos["multi"], max_seconds=10.0)["decision"].startswith("dropped by the duration")


@pytest.mark.slow
def test_neptune_has_no_minimum_length_unless_asked(tmp_path):
    short = multi_shot_video(tmp_path / "short", [ShotSpec(4.0, (200, 40, 40), "A"), ShotSpec(4.0, (40, 70, 200), "B")])
    assert _neptune_select(short)["keep"]
    assert not _neptune_select(short, min_seconds=16.0)["keep"]


@pytest.mark.slow
def test_neptune_metadata_rules_apply_when_info_json_exists(tmp_path, videos):
    import shutil

    video = shutil.copy(videos["multi"], tmp_path / "clip.mp4")
    assert next(f for f in _neptune_select(video)["filters"] if f["name"] == "metadata")["keep"]  # no info.json
    info = tmp_path / "clip.info.json"
    info.write_text(json.dumps({"view_count": 40, "upload_date": "20240101"}))
    sel = _neptune_select(video, as_of="2024-06-01")
    assert not sel["keep"] and sel["decision"].startswith("dropped by the metadata filter: view_count=40 fails")
    assert [f["name"] for f in sel["filters"]] == ["duration", "metadata"]  # the costly filters never ran
    info.write_text(json.dumps({"view_count": 400, "upload_date": "20240101"}))
    assert not _neptune_select(video, as_of="2024-02-01")["keep"]  # uploaded 31 days before: too recent
    kept = _neptune_select(video, as_of="2024-06-01")
    assert kept["keep"] and kept["filters"][1]["evidence"]["as_of"] == "2024-06-01"
    assert _neptune_select(video, as_of="2024-02-01", metadata_rules=False)["keep"]
    assert _neptune_select(video)["keep"]  # as_of defaults to today: uploaded long ago
