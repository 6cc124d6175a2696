"""MLVU's harness objects and typed settings (#31): one harness class per `compat` value, picked
once per benchmark object; each peer overrides only what its code does differently; the settings
model documents every field and refuses with the protocol's one-line errors, in its order."""

from __future__ import annotations

import pytest

from lvu.benchmarks import mlvu
from lvu.benchmarks.mlvu import Mlvu, MlvuSettings
from lvu.benchmarks.mlvu import HARNESSES
from lvu.benchmarks.mlvu_harness import (MlvuHarness, MlvuLiteral, MlvuLmmsEval, MlvuLmmsEval06,
                                         MlvuLmmsEval071)
from lvu.benchmarks.mlvu_vlmevalkit import MlvuVlmevalkit, MlvuVlmevalkit296425e2, MlvuVlmevalkitE8e78f05
from lvu.errors import LvuError
from lvu.types import Response, Sample, SampleResult, VideoMeta, VideoRef

PICKED = {"official": MlvuHarness, "mlvu-literal": MlvuLiteral, "lmms-eval": MlvuLmmsEval,
          "lmms-eval@0.7.1": MlvuLmmsEval071, "lmms-eval@0.6": MlvuLmmsEval06, "vlmevalkit": MlvuVlmevalkit,
          "vlmevalkit@e8e78f05": MlvuVlmevalkitE8e78f05, "vlmevalkit@296425e2": MlvuVlmevalkit296425e2}


def sample() -> Sample:
    return Sample(id="PQA_0", benchmark="mlvu", video=VideoRef(path="movie.mp4", duration=10.0),
                  question="What color is the car?", options=["Red", "Blue", "Green", "White"], answer=1,
                  labels={"task": "PQA"}, extra={"answer_letter": "B", "answer_first": "B"})


@pytest.mark.parametrize("compat", PICKED)
def test_each_compat_value_picks_its_harness(compat):
    bench = Mlvu(compat=compat)
    assert type(bench.harness) is PICKED[compat]
    assert bench.harness.compat == compat and bench.harness.bench is bench and bench.harness.peer
    assert list(HARNESSES) == list(PICKED)  # the order the refusal below names them in


def test_the_harness_is_picked_once_and_every_step_uses_it(monkeypatch):
    picks: list[str] = []
    real_pick = mlvu.pick
    monkeypatch.setattr(mlvu, "pick", lambda table, compat, name: picks.append(compat) or real_pick(table, compat, name))
    bench, s = Mlvu(compat="vlmevalkit"), sample()
    bench.plan(s, VideoMeta(10.0, fps=10.0, num_frames=100))
    prompt = bench.build_prompt(s, [], [])
    prediction = bench.extract(s, Response(text="The car is blue"))  # check_ans misses; can_infer reads the text
    score = bench.score(s, prediction)
    bench.aggregate([SampleResult(sample_id=s.id, labels=s.labels, score=score.value, counted=True)])
    assert picks == ["vlmevalkit"]
    assert prompt.assistant_prefix is None and prompt.system == mlvu.SYSTEM_MC
    assert prediction.method == "vlmevalkit-can-infer" and score.correct


@pytest.mark.parametrize("compat, message", [
    ("x", "compat='x' is unknown for mlvu — use one of official, mlvu-literal, lmms-eval, lmms-eval@0.7.1, "
          "lmms-eval@0.6, vlmevalkit, vlmevalkit@e8e78f05, vlmevalkit@296425e2"),
    ("lmms-eval@0.5", "compat='lmms-eval@0.5' is unknown for mlvu — its lmms-eval modes: lmms-eval = lmms-eval "
                      "0.7.2-0.7.3; lmms-eval@0.7.1 = lmms-eval 0.7.0-0.7.1; lmms-eval@0.6 = lmms-eval 0.6.0-0.6.1"),
])
def test_an_unknown_compat_is_refused_in_one_line(compat, message):
    with pytest.raises(LvuError) as e:
        Mlvu(compat=compat)
    assert str(e.value) == message


def test_a_new_peer_release_is_one_subclass_and_one_table_entry(monkeypatch):
    class Next(MlvuLmmsEval):
        compat = "lmms-eval@0.8"

    monkeypatch.setitem(HARNESSES, "lmms-eval@0.8", Next)
    bench = Mlvu(compat="lmms-eval@0.8")
    assert type(bench.harness) is Next and bench.settings["compat"] == "lmms-eval@0.8"
    assert bench.tasks == ["TR", "AR", "NQA", "ER", "PQA", "AO", "AC"]  # what it inherits: MCQ only


def test_releases_differ_only_where_their_code_does():
    """A reply with a reasoning block: 0.7.3 and 0.7.1 read past it (0.7.1 with check_ans' rule), 0.6
    does not strip it, the official check_ans sees the block's ')' first."""
    reply = Response(text="<think>A) is wrong</think>B) Blue")
    read = {compat: Mlvu(compat=compat).extract(sample(), reply).value for compat in PICKED}
    assert read == {"official": 0, "mlvu-literal": 0, "lmms-eval": 1, "lmms-eval@0.7.1": 1, "lmms-eval@0.6": 0,
                    "vlmevalkit": 1, "vlmevalkit@e8e78f05": 1, "vlmevalkit@296425e2": 1}
    assert {name for name in vars(MlvuLmmsEval06) if not name.startswith("__")} == {"compat", "peer"}  # no stripping: task_reply knows 0.6


def test_settings_document_every_field_and_keep_the_old_defaults():
    docs = MlvuSettings.docs()
    assert docs and all(docs.values()), [k for k, v in docs.items() if not v]
    assert Mlvu.Settings is MlvuSettings
    assert list(Mlvu.defaults.items()) == [("split", "dev"), ("tasks", "all"), ("frames", 16), ("fps", None),
                                           ("resize", None), ("subtitles", "none"), ("compat", "official"),
                                           ("hub_revision", mlvu.HUB_REVISION)]
    assert isinstance(Mlvu(frames=32).config, MlvuSettings) and Mlvu(frames=32).config.frames == 32


def test_the_settings_model_refuses_on_its_own_with_the_protocol_words():
    with pytest.raises(LvuError, match=r"^frames=0 is not a frame count — use a whole number such as 16$"):
        MlvuSettings.parse("mlvu", {"frames": 0})
    with pytest.raises(LvuError, match=r"^split='val' is unknown — MLVU has split=dev or split=test$"):
        MlvuSettings.parse("mlvu", {"split": "val"})


@pytest.mark.parametrize("settings, first", [
    ({"compat": "x", "split": "val"}, "compat='x' is unknown"),
    ({"split": "val", "subtitles": "all"}, "split='val' is unknown"),
    ({"subtitles": "all", "frames": 0}, "MLVU has no subtitles"),
    ({"frames": 0, "fps": -1}, "frames=0 is not a frame count"),
    ({"compat": "lmms-eval", "fps": 1, "tasks": "x"}, "lmms-eval samples a frame count only"),
    ({"compat": "lmms-eval", "tasks": "x,SSC"}, "tasks='x,SSC': unknown task(s) X"),
    ({"compat": "lmms-eval", "tasks": "SSC"}, "lmms-eval has no MLVU generation tasks"),
])
def test_a_value_breaking_two_rules_gets_the_first_message(settings, first):
    with pytest.raises(LvuError) as e:
        Mlvu(**settings)
    assert str(e.value).startswith(first)
