"""Neptune's harness objects (issue #31): picked once from `compat`, each carrying its frame plan,
prompt, token budget and extraction; refusals keep their words; every setting is documented."""

from __future__ import annotations

import pytest

from lvu.benchmarks.neptune import Neptune, NeptuneAsr, NeptuneOpen, NeptuneSettings
from lvu.benchmarks.neptune_harness import HARNESSES, NeptuneHarness, NeptuneLmmsEval, NeptuneLmmsEval071
from lvu.errors import LvuError
from lvu.types import Response, Sample, VideoMeta, VideoRef

SAMPLE = Sample(id="k1", benchmark="neptune", video=VideoRef(path="v.mp4", duration=1200.0),
                question="How many cats?", options=["One", "Two", "Three", "Four", "Five"], answer=1)


def test_the_harness_is_picked_once_from_compat():
    assert type(Neptune().harness) is NeptuneHarness
    assert type(Neptune(compat="lmms-eval").harness) is NeptuneLmmsEval
    assert type(Neptune(compat="lmms-eval@0.7.1").harness) is NeptuneLmmsEval071
    assert type(NeptuneOpen().harness) is NeptuneHarness
    assert list(HARNESSES) == ["official", "lmms-eval", "lmms-eval@0.7.1"]
    assert all(cls.compat == key for key, cls in HARNESSES.items())


def test_each_harness_carries_its_protocol():
    official, lmms = Neptune(), Neptune(compat="lmms-eval")
    video = VideoMeta(1200.0, fps=30.0, num_frames=36000)
    assert official.harness.timestamps(video)[-1] < 900.0 < lmms.harness.timestamps(video)[-1]  # the 15-min clip
    assert (official.harness.max_tokens, lmms.harness.max_tokens) == (300, 64)
    assert lmms.prompt_text(SAMPLE).endswith("Answer with only the option letter (A, B, C, D, or E).")
    assert official.prompt_text(SAMPLE).startswith("Carefully analyze the question")
    reply = Response(text="<think>(A)</think>B")
    assert official.extract(SAMPLE, reply).value == 0  # lvu's reading of the paper: the "(A)"
    assert lmms.extract(SAMPLE, reply).value == 1  # lmms-eval strips the reasoning block first
    assert (lmms.settings["frames"], lmms.settings["prompt"]) == (32, "default")  # its presets
    assert Neptune(compat="lmms-eval", frames=8, prompt="qwen3_vl").settings["frames"] == 8  # given values win


@pytest.mark.parametrize(("cls", "settings", "message"), [
    (Neptune, {"compat": "x"}, "compat='x' is unknown for neptune — use one of official, lmms-eval, lmms-eval@0.7.1"),
    (NeptuneAsr, {"compat": "x"}, "compat='x' is unknown for neptune-asr"),
    (Neptune, {"compat": "vlmevalkit"}, "VLMEvalKit has no Neptune task — use --compat official or lmms-eval"),
    (Neptune, {"compat": "lmms-eval@0.6"}, "lmms-eval's Neptune task came with 0.7 — use compat=lmms-eval"),
    (NeptuneAsr, {"compat": "lmms-eval"},
     "lmms-eval has no Neptune ASR input — run neptune-asr with --compat official"),
    (NeptuneOpen, {"compat": "lmms-eval@0.7.1"}, "lmms-eval has no Neptune open-ended task"),
    (Neptune, {"compat": "x", "frames": "2fps"}, "compat='x' is unknown"),  # compat first, as before
    (Neptune, {"subset": "x", "prompt": "gpt"}, "subset='x' is unknown"),  # then the typed settings
])
def test_bad_compat_values_are_refused_in_the_same_words(cls, settings, message):
    with pytest.raises(LvuError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cls(**settings)


def test_settings_are_typed_and_documented():
    docs = NeptuneSettings.docs()
    assert list(docs) == list(Neptune.defaults) and all(docs.values())
    assert Neptune.Settings is NeptuneSettings and issubclass(NeptuneAsr.Settings, NeptuneSettings)
    assert NeptuneAsr.Settings.docs() == docs  # the variant changes defaults, not docs
    bench = Neptune(frames="all", subset="mma")
    assert (bench.config.frames, bench.config.subset) == ("1fps", "mma")
    assert Neptune(data="/x/neptune_mmh.json").config.subset == "mmh"  # the file names its subset
