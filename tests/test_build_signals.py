"""Neptune's signals (lvu.construct.signals) on generated videos: real PySceneDetect shots at the
generated cuts, real Whisper tiny.en on eSpeak NG speech, real RapidOCR on burnt-in text, subtitle
and sidecar files beside the video, frames through lvu's media layer. Offline, CPU only."""

from __future__ import annotations

import json

import pytest
from build_videos import (
    SHOTS,
    SPEECH_START,
    assert_one_line_naming,
    cut_times,
    multi_shot_video,
    static_video,
    unreadable_videos,
    video_dir,
)

from lvu.construct import signals
from lvu.construct.signals import (
    Shot,
    detect_shots,
    find_subtitles,
    frames_at,
    ocr_frame_captions,
    read_sidecar,
    transcribe,
)
from lvu.errors import DataError
from lvu.media.cache import FrameCache

SENTENCE = "The meeting starts at three fifteen. Please bring the red folder to room twelve."
FRAME = 1 / 10  # the generated videos run at 10 fps


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    with video_dir(tmp_path_factory, "signals") as d:
        yield {
            "spoken": multi_shot_video(d / "spoken" / "talk", speech=SENTENCE),
            "silent": multi_shot_video(d / "silent" / "quiet"),
            "static": static_video(d / "static" / "slide"),
        }


# ---- shots --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_shots_are_found_at_the_generated_cuts(videos):
    shots = detect_shots(videos["silent"])
    assert len(shots) == len(SHOTS)
    assert [s.start for s in shots[1:]] == pytest.approx(cut_times(), abs=FRAME + 1e-6)
    assert shots[0].start == 0.0 and shots[-1].end == pytest.approx(18.0, abs=FRAME)
    assert all(a.end == b.start for a, b in zip(shots, shots[1:]))  # consecutive, nothing lost


def test_a_video_without_cuts_is_one_shot(videos):
    assert detect_shots(videos["static"]) == [Shot(0.0, 16.0)]


def test_shot_threshold_is_an_option(videos):
    assert len(detect_shots(videos["silent"], threshold=255.0)) == 1  # no frame difference is that large


# ---- speech -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_asr_finds_the_spoken_words(videos):
    transcript = transcribe(videos["spoken"])
    assert transcript.source == "asr" and transcript.origin
    text = transcript.text.lower()
    assert "meeting" in text and "red folder" in text, text
    assert transcript.cues[0].start == pytest.approx(SPEECH_START, abs=0.5)


def test_a_subtitle_file_beside_the_video_wins_over_asr(videos, tmp_path):
    video = videos["spoken"]
    srt = video.with_suffix(".srt")
    srt.write_text("1\n00:00:01,000 --> 00:00:03,500\nHello <i>harbor</i>\n", "utf-8")
    try:
        transcript = transcribe(video)
        assert (transcript.source, transcript.origin, transcript.text) == ("subtitles", str(srt), "Hello harbor")
        assert (transcript.cues[0].start, transcript.cues[0].end) == (1.0, 3.5)
        assert transcribe(video, subtitles=False).source == "asr"
    finally:
        srt.unlink()


def test_language_tagged_subtitles_prefer_english(tmp_path):
    video = tmp_path / "clip.mp4"
    for name in ("clip.de.vtt", "clip.en.vtt", "clip.en.backup.srt", "clipper.srt"):
        (tmp_path / name).write_text("WEBVTT\n")
    assert find_subtitles(video) == tmp_path / "clip.en.vtt"
    (tmp_path / "clip.srt").write_text("")
    assert find_subtitles(video) == tmp_path / "clip.srt"
    assert find_subtitles(tmp_path / "other.mp4") is None


def test_a_video_without_audio_has_an_empty_transcript(videos):
    transcript = transcribe(videos["silent"])
    assert (transcript.source, transcript.cues, transcript.text) == ("none", [], "")


# ---- on-screen text -----------------------------------------------------------------------------


@pytest.mark.slow
def test_ocr_reads_the_burnt_in_text_of_each_shot(videos):
    captions = ocr_frame_captions(videos["silent"])
    assert [c.t for c in captions] == [float(t) for t in range(18)]
    squash = [c.text.replace(" ", "").upper() for c in captions]
    for k, shot in enumerate(SHOTS):  # 6 frames per shot at 1 fps
        assert squash[6 * k:6 * k + 6] == [shot.text.replace(" ", "")] * 6, captions


# ---- metadata -----------------------------------------------------------------------------------


def test_sidecar_title_and_description(tmp_path):
    video = tmp_path / "walk.mp4"
    assert read_sidecar(video) is None
    (tmp_path / "walk.info.json").write_text(json.dumps({"title": "yt-dlp title", "description": None}))
    assert read_sidecar(video) == signals.Sidecar(str(tmp_path / "walk.info.json"), "yt-dlp title", "")
    (tmp_path / "walk.json").write_text(json.dumps({"title": " A walk ", "description": "Through\nthe park", "x": 1}))
    assert read_sidecar(video) == signals.Sidecar(str(tmp_path / "walk.json"), "A walk", "Through\nthe park")


def test_subtitle_json_is_not_a_sidecar_and_broken_json_is_a_data_error(tmp_path):
    video = tmp_path / "v.mp4"
    (tmp_path / "v.json").write_text(json.dumps([{"start": 0, "end": 1, "line": "hi"}]))  # LongVideoBench cues
    assert read_sidecar(video) is None
    (tmp_path / "v.json").write_text('{"title": "unterminated')
    with pytest.raises(DataError, match="not valid JSON") as e:
        read_sidecar(video)
    assert_one_line_naming(e.value, tmp_path / "v.json")


# ---- frames -------------------------------------------------------------------------------------


def test_frames_at_one_fps_through_the_media_layer_and_the_cache(videos, tmp_path):
    direct = frames_at(videos["silent"])
    assert direct.times == [float(t) for t in range(18)] and len(direct) == 18
    assert direct.images[0].shape == (240, 320, 3)  # the default long side 768 never upscales
    cache = FrameCache(tmp_path / "frames", encoding="raw")
    cached = frames_at(videos["silent"], cache=cache)
    assert cached.times == direct.times and cache.info().entries == 1
    assert all((a == b).all() for a, b in zip(cached.images, direct.images))
    again = frames_at(videos["silent"], 0.5, resize=160, cache=cache)
    assert again.times == [float(t) for t in range(0, 18, 2)] and again.images[0].shape[0] == 160


# ---- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("run", [detect_shots, transcribe, ocr_frame_captions, frames_at])
def test_unreadable_video_is_a_data_error_naming_the_file(tmp_path, run):
    for path in unreadable_videos(tmp_path):
        with pytest.raises(DataError) as e:
            run(path)
        assert_one_line_naming(e.value, path)
