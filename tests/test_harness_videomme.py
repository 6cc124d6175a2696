"""Video-MME's typed settings and harness objects (#31): `compat` picks one harness class in
`__init__` (videomme_harness.HARNESSES), the benchmark's steps go through it, the peer refusals keep
their words, and every setting of every task is documented."""

from __future__ import annotations

import pytest

from lvu.benchmarks import videomme_harness as harnesses
from lvu.benchmarks.videomme import (
    VideoMME, VideoMMEAudio, VideoMMEAudioSettings, VideoMMESettings, VideoMMESub, VideoMMESubSettings,
)
from lvu.benchmarks.videomme_harness import (
    HARNESSES, VideoMMEHarness, VideoMMELmmsEval, VideoMMELmmsEval06, VideoMMELmmsEval071, VideoMMEPeerHarness,
    VideoMMEVlmevalkit, VideoMMEVlmevalkit296425e2, VideoMMEVlmevalkitE8e78f05,
)
from lvu.errors import LvuError
from lvu.types import Prediction, Sample, VideoRef

PICKED = {"official": VideoMMEHarness, "lmms-eval": VideoMMELmmsEval, "lmms-eval@0.7.1": VideoMMELmmsEval071,
          "lmms-eval@0.6": VideoMMELmmsEval06, "vlmevalkit": VideoMMEVlmevalkit,
          "vlmevalkit@e8e78f05": VideoMMEVlmevalkitE8e78f05, "vlmevalkit@296425e2": VideoMMEVlmevalkit296425e2}
KNOWN = "official, lmms-eval, lmms-eval@0.7.1, lmms-eval@0.6, vlmevalkit, vlmevalkit@e8e78f05, vlmevalkit@296425e2"


def sample() -> Sample:
    return Sample(id="001-1", benchmark="videomme", video=VideoRef(path="none.mp4"), question="What?",
                  options=["a", "b", "c", "d"], answer=2, labels={"duration": "short"})


@pytest.mark.parametrize("cls", [VideoMME, VideoMMESub])
@pytest.mark.parametrize("compat", list(PICKED))
def test_compat_picks_one_harness_class(cls, compat):
    bench = cls(compat=compat)
    assert type(bench.harness) is PICKED[compat] and bench.harness.compat == compat
    assert bench.harness.bench is bench


def test_the_table_lists_every_compat_value_once_in_the_message_order():
    assert list(HARNESSES) == KNOWN.split(", ")
    assert all(cls.compat == compat for compat, cls in HARNESSES.items())
    assert all(issubclass(cls, VideoMMEPeerHarness) for compat, cls in HARNESSES.items() if compat != "official")


def test_the_benchmark_steps_go_through_the_picked_harness(monkeypatch):
    class Marked(VideoMMEVlmevalkit):
        def prompt_texts(self, sample, block):
            return ["marked"]

    monkeypatch.setitem(HARNESSES, "vlmevalkit", Marked)
    assert VideoMME(compat="vlmevalkit").prompt_texts(sample(), None) == ["marked"]
    assert VideoMME().prompt_texts(sample(), None) != ["marked"]


def test_peer_differences_live_in_their_harness():
    s = sample()
    official, lmms, vlm = VideoMME(), VideoMME(compat="lmms-eval"), VideoMME(compat="vlmevalkit")
    assert (official.harness.max_tokens, lmms.harness.max_tokens, vlm.harness.max_tokens) == (64, 16, 64)
    assert official.score(s, Prediction(value=None)).counted is False  # official: answered-only accuracy
    assert vlm.score(s, Prediction(value=None)).counted is True and vlm.score(s, Prediction(value=None)).correct is False
    assert official.harness.frame_indices(30, 10.0, 4) == [3, 10, 18, 25]  # video-slicer
    assert lmms.harness.frame_indices(30, 10.0, 4) == [0, 9, 19, 29]  # np.linspace
    assert official.harness.engine_subtitle_mode("per-frame") == "all"
    assert VideoMMESub(compat="lmms-eval").harness.engine_subtitle_mode("per-frame") == "none"
    assert official.scorer(s) == "afd52cfe" and vlm.scorer(s) == "vlmevalkit"


@pytest.mark.parametrize("cls", [VideoMME, VideoMMESub, VideoMMEAudio])
def test_a_bad_compat_is_refused_with_the_same_message(cls):
    with pytest.raises(LvuError) as e:
        cls(compat="lmms")
    assert str(e.value) == f"compat='lmms' is unknown for {cls.name} — use one of {KNOWN}"


def test_the_typed_model_refuses_alone_too():
    with pytest.raises(LvuError, match=f"compat='x' is unknown for videomme-sub — use one of {KNOWN}"):
        VideoMMESubSettings.parse("videomme-sub", {"compat": "x"})
    with pytest.raises(LvuError, match="subtitle_grid=0: lmms-eval's frame_num"):
        VideoMMESettings.parse("videomme", {"subtitle_grid": 0})
    config = VideoMMESettings.parse("videomme", {"frames": "gemini", "compat": "lmms-eval"})
    assert isinstance(config, VideoMMESettings) and (config.frames, config.compat, config.subtitles) == (
        "gemini", "lmms-eval", "none")


@pytest.mark.parametrize(("settings", "message"), [
    ({"compat": "lmms-eval", "audio": "whole"}, "lmms-eval has no Video-MME audio setting — use --compat official "
                                                "with --audio"),
    ({"compat": "vlmevalkit", "scorer": "2024-06"}, "scorer='2024-06': use afd52cfe or 2024-06, with --compat "
                                                    "official only"),
    ({"compat": "vlmevalkit", "subtitles": "covering"}, "VLMEvalKit takes one cue per sampled frame only — use "
                                                        "--subtitles per-frame or none"),
])
def test_peer_refusals_keep_their_words(settings, message):
    with pytest.raises(LvuError) as e:
        VideoMME(**settings)
    assert str(e.value) == message


def test_two_bad_settings_name_the_first_in_the_protocols_order():
    with pytest.raises(LvuError, match="^compat='x' is unknown"):
        VideoMME(compat="x", frames=-1, subtitles="bad")
    with pytest.raises(LvuError, match="^subtitles='bad' is unknown"):
        VideoMME(frames=-1, subtitles="bad", subtitle_grid=0)


@pytest.mark.parametrize("model", [VideoMMESettings, VideoMMESubSettings, VideoMMEAudioSettings])
def test_every_setting_is_documented(model):
    docs = model.docs()
    assert docs and all(text.strip() for text in docs.values()), [k for k, v in docs.items() if not v.strip()]


def test_each_task_declares_its_model_with_its_defaults():
    assert (VideoMME.Settings, VideoMMESub.Settings, VideoMMEAudio.Settings) == (
        VideoMMESettings, VideoMMESubSettings, VideoMMEAudioSettings)
    assert VideoMMESub.defaults["subtitles"] == "per-frame" and VideoMMEAudio.defaults["audio"] == "whole"
    assert isinstance(VideoMMEAudio().config, VideoMMEAudioSettings) and VideoMMEAudio().config.audio == "whole"
    assert harnesses.VideoMMEBench  # the protocol a harness reads its benchmark through
