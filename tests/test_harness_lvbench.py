"""LVBench's harness objects (issue #31): picked once from `compat`, each carrying its frame plan,
prompt, extraction and what a failed sample counts as; VLMEvalKit refused in its own words."""

from __future__ import annotations

import pytest

from lvu.benchmarks.lvbench import (
    HARNESSES, LvbenchBenchmark, LvbenchHarness, LvbenchLmmsEval, LvbenchLmmsEval06, LvbenchLmmsEval071,
    LvbenchSettings,
)
from lvu.errors import LvuError
from lvu.types import Response, Sample, SampleResult, VideoMeta, VideoRef

SAMPLE = Sample(id="u1", benchmark="lvbench", video=VideoRef(path="v.mp4", duration=100.0),
                question="What year?", options=["1636", "1366", "1363", "1633"], answer=1)


def test_the_harness_is_picked_once_from_compat():
    expected = {"official": LvbenchHarness, "lmms-eval": LvbenchLmmsEval, "lmms-eval@0.7.1": LvbenchLmmsEval071,
                "lmms-eval@0.6": LvbenchLmmsEval06}
    for compat, cls in expected.items():
        assert type(LvbenchBenchmark(compat=compat).harness) is cls
    assert list(HARNESSES) == [*expected, "vlmevalkit"]
    assert all(cls.compat == key for key, cls in HARNESSES.items())


def test_each_harness_carries_its_protocol():
    official, lmms, legacy = (LvbenchBenchmark(compat=c) for c in ("official", "lmms-eval", "lmms-eval@0.6"))
    assert official.plan(SAMPLE, VideoMeta(100.0, fps=10.0, num_frames=1000)).timestamps[0] == 100.0 / 64
    assert lmms.plan(SAMPLE, VideoMeta(100.0, fps=10.0, num_frames=1000)).timestamps[0] == 0.0
    assert official.build_prompt(SAMPLE, [], []).max_tokens == 64 and lmms.build_prompt(SAMPLE, [], []).max_tokens == 16
    reply = Response(text="<think>(A)</think>B")
    assert official.extract(SAMPLE, reply).value == 0  # polish_answer: what follows the first "(" 
    assert lmms.extract(SAMPLE, reply).value == 1  # reasoning stripped, extract_mcq_answer
    assert legacy.extract(SAMPLE, reply).method == "lmms-eval@0.6 extract_characters_regex@2024-06"
    failed = SampleResult(sample_id="u2", question="q", error="video missing", score=0.0)
    ok = SampleResult(sample_id="u1", question="q", score=1.0, labels={"question_type": ["ER"]})
    assert official.aggregate([ok, failed])[0].rows[0][1] == 1  # left out, as the official scorer skips it
    assert lmms.aggregate([ok, failed])[0].rows[0][1] == 2  # counted wrong


@pytest.mark.parametrize(("settings", "message"), [
    ({"compat": "x"}, "compat='x' is unknown for lvbench — use one of official, lmms-eval, lmms-eval@0.7.1, "
                      "lmms-eval@0.6, vlmevalkit"),
    ({"compat": "vlmevalkit"}, "compat=vlmevalkit: VLMEvalKit has no LVBench task (checked at e8e78f05)"),
    ({"compat": "vlmevalkit", "frames": -1}, "VLMEvalKit has no LVBench task"),  # compat first, as before
    ({"frames": -1, "fps": 0}, "frames=-1 is not a frame count"),
])
def test_bad_compat_values_are_refused_in_the_same_words(settings, message):
    with pytest.raises(LvuError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LvbenchBenchmark(**settings)


def test_settings_are_typed_and_documented():
    docs = LvbenchSettings.docs()
    assert list(docs) == list(LvbenchBenchmark.defaults) == ["frames", "fps", "resize", "compat"]
    assert all(docs.values())
    bench = LvbenchBenchmark(frames="16", fps=1)
    assert (bench.config.frames, bench.config.fps) == (16, 1) and type(bench.config.fps) is int  # the run id's value
