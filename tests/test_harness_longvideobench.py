"""LongVideoBench's typed settings and harness objects (#31): the harness is picked once from
`compat`, the settings model documents and checks every setting (in the order the checks always
ran), and what depends on which settings were given (a --data file's split, a harness's frame
count) still holds."""

from __future__ import annotations

import json

import pytest

from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.longvideobench import LongVideoBench, LongVideoBenchSettings
from lvu.benchmarks.longvideobench_harness import (
    HARNESSES,
    LongVideoBenchHarness,
    LongVideoBenchLmmsEval,
    LongVideoBenchLmmsEval06,
    LongVideoBenchLmmsEval071,
    LongVideoBenchVlmevalkit,
    LongVideoBenchVlmevalkit296425e2,
    LongVideoBenchVlmevalkitE8e78f05,
)
from lvu.errors import LvuError
from lvu.types import Response, Sample, VideoRef

TASKS = ("longvideobench", "longvideobench-frames", "longvideobench-subtitles")


def sample() -> Sample:
    return Sample(id="q1", benchmark="longvideobench", video=VideoRef(path="v.mp4", duration=30.0), question="What?",
                  options=["a", "b", "c", "d"], answer=2)


@pytest.mark.parametrize("compat, harness", [
    ("official", LongVideoBenchHarness), ("lmms-eval", LongVideoBenchLmmsEval),
    ("lmms-eval@0.7.1", LongVideoBenchLmmsEval071), ("lmms-eval@0.6", LongVideoBenchLmmsEval06),
    ("vlmevalkit", LongVideoBenchVlmevalkit), ("vlmevalkit@e8e78f05", LongVideoBenchVlmevalkitE8e78f05),
    ("vlmevalkit@296425e2", LongVideoBenchVlmevalkit296425e2),
])
def test_the_harness_is_picked_once_from_compat(compat, harness):
    for task in ("longvideobench", "longvideobench-frames"):
        bench = BENCHMARKS.get(task)(compat=compat)
        assert type(bench.harness) is harness and bench.harness.bench is bench
        assert bench.compat == compat == harness.compat and bench.lmms == compat.startswith("lmms-eval")
    assert list(HARNESSES) == ["official", "lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6", "vlmevalkit",
                               "vlmevalkit@e8e78f05", "vlmevalkit@296425e2"]


@pytest.mark.parametrize("task", TASKS)
def test_a_bad_compat_is_refused_naming_the_task_and_the_values(task):
    with pytest.raises(LvuError) as e:
        BENCHMARKS.get(task)(compat="x")
    assert str(e.value) == (f"compat='x' is unknown for {task} — use one of official, lmms-eval, lmms-eval@0.7.1, "
                            "lmms-eval@0.6, vlmevalkit, vlmevalkit@e8e78f05, vlmevalkit@296425e2")


@pytest.mark.parametrize("task", TASKS)
def test_every_setting_is_documented_and_typed(task):
    cls = BENCHMARKS.get(task)
    docs = cls.Settings.docs()
    assert list(docs) == list(cls.defaults) and all(docs.values()), docs
    assert issubclass(cls.Settings, LongVideoBenchSettings)
    assert isinstance(BENCHMARKS.get(task)().config, LongVideoBenchSettings)


def test_the_harness_decides_the_text_the_tokens_and_the_extraction():
    s = sample()
    texts = {c: LongVideoBench(compat=c).question_text(s) for c in HARNESSES}
    assert texts["official"] == "Question: What?\nA. a\nB. b\nC. c\nD. d\n" \
                                "Answer with the option's letter from the given choices directly."
    assert texts["lmms-eval"] == texts["lmms-eval@0.6"] == texts["official"][len("Question: "):] + "\n"
    assert texts["vlmevalkit"] == texts["vlmevalkit@e8e78f05"] == texts["vlmevalkit@296425e2"] \
        == texts["official"][len("Question: "):]
    assert {c: LongVideoBench(compat=c).build_prompt(s, [], []).max_tokens for c in HARNESSES} == {
        "official": 64, "lmms-eval": 32, "lmms-eval@0.7.1": 32, "lmms-eval@0.6": 32, "vlmevalkit": 64,
        "vlmevalkit@e8e78f05": 64, "vlmevalkit@296425e2": 64}
    think = Response(text="<think>A</think>C")
    assert LongVideoBench(compat="lmms-eval").extract(s, think).value == 2  # the reasoning block is cut
    assert LongVideoBench(compat="lmms-eval@0.6").extract(s, think).value == 0  # 0.6 passes it to the parser
    assert LongVideoBench(compat="vlmevalkit").extract(s, Response(text="none")).value is None  # 'Z', no draw
    assert LongVideoBench().extract(s, Response(text="none")).method == "random"


def test_checks_run_in_the_order_they_always_did():
    with pytest.raises(LvuError, match="compat='x' is unknown"):
        LongVideoBench(compat="x", split="y", subtitles="z")
    with pytest.raises(LvuError, match="split='y' is unknown"):
        LongVideoBench(split="y", subtitles="z", frames="abc")
    with pytest.raises(LvuError, match="subtitles='z' is not a LongVideoBench input"):
        LongVideoBench(subtitles="z", frames="abc")
    with pytest.raises(LvuError, match="fps sampling is VLMEvalKit's preset"):
        LongVideoBench(frames="1fps", subtitles="all", vlmevalkit_flag_bug=True)
    with pytest.raises(LvuError, match="subtitles=all is the official subtitles-only input"):
        LongVideoBench(subtitles="all", frames=16, compat="lmms-eval")
    with pytest.raises(LvuError, match="lmms-eval has no LongVideoBench subtitles-only task"):
        LongVideoBench(subtitles="all", compat="lmms-eval", split="test")


def test_the_model_checks_settings_without_a_benchmark_object():
    ok = LongVideoBenchSettings.parse("longvideobench", {"split": "validation", "frames": "2fps",
                                                          "compat": "vlmevalkit"})
    assert ok.split == "val" and ok.frames == "2fps"
    with pytest.raises(LvuError, match="fps sampling is VLMEvalKit's preset"):
        LongVideoBenchSettings.parse("longvideobench", {"frames": "2fps"})
    with pytest.raises(LvuError, match="compat='x' is unknown for longvideobench-frames"):
        LongVideoBenchSettings.parse("longvideobench-frames", {"compat": "x"})


def test_what_depends_on_the_settings_given(tmp_path):
    data = tmp_path / "lvb_test_wo_gt.json"
    data.write_text(json.dumps([]))
    assert LongVideoBench(data=str(data)).settings["split"] == "test"
    with pytest.raises(LvuError, match="holds the test split but split='val'"):
        LongVideoBench(data=str(data), split="validation")
    with pytest.raises(LvuError, match="holds the test split but split='x'"):  # before the split's own check
        LongVideoBench(data=str(data), split="x")
    with pytest.raises(LvuError, match="compat='x' is unknown"):  # ... and after compat's
        LongVideoBench(data=str(data), split="val", compat="x")
    with pytest.raises(LvuError, match=r"^data=16 is not a path"):  # was a raw TypeError
        LongVideoBench(data=16)
    frames = {c: LongVideoBench(compat=c).settings["frames"] for c in HARNESSES}
    assert frames == {"official": 256, "lmms-eval": 16, "lmms-eval@0.7.1": 16, "lmms-eval@0.6": 16, "vlmevalkit": 8,
                      "vlmevalkit@e8e78f05": 8, "vlmevalkit@296425e2": 8}
    assert BENCHMARKS.get("longvideobench-frames")(compat="lmms-eval").settings["frames"] == 32
    assert LongVideoBench(compat="lmms-eval", frames=256).settings["frames"] == 256  # given: kept
    assert LongVideoBench(subtitles="all").settings["frames"] == 0
