"""The lmms-eval compat modes by release (issue 20): `lmms-eval` = 0.7.2-0.7.3, `lmms-eval@0.7.1` =
0.7.0-0.7.1 (the extractors before lmms-eval PR #1274), `lmms-eval@0.6` = 0.6.0-0.6.1 (those, and no
reasoning-tag stripping). The current mode is checked against lmms-eval's own code in
tests/test_peer_lmms_eval*.py; the older ones here, reply by reply, against what their task code
(read from the 0.6.1 / 0.7.1 wheels) does."""

from __future__ import annotations

import pytest

from lvu.benchmarks.base import lmms_log_response
from lvu.benchmarks.longvideobench import LongVideoBench
from lvu.benchmarks.lvbench import LvbenchBenchmark
from lvu.benchmarks.mlvu import Mlvu
from lvu.benchmarks.neptune import Neptune
from lvu.benchmarks.videomme import VideoMME
from lvu.errors import LvuError
from lvu.scoring.lmms_eval import RELEASES, extract_legacy
from lvu.types import Response, Sample

OPTIONS = ["A cat", "Two dogs", "Three birds", "Nothing"]


def sample(answer: int, benchmark: str, **extra) -> Sample:
    return Sample(id="q1", benchmark=benchmark, video={"path": "v.mp4", "duration": 10.0}, question="What?",
                  options=OPTIONS, answer=answer, labels={"task": "AC"}, extra=extra)


def letter(bench, reply: str, **extra) -> int | str | None:
    return bench.extract(sample(1, bench.name, **extra), Response(text=reply)).value


# reply, lmms-eval 0.7.3 (extract_mcq_answer), <= 0.7.1 (extract_characters_regex@2024-06), 0.6 (no tag stripping)
VIDEOMME_LVBENCH = [
    ("Answer: B", 1, 0, 0),  # the old extractor reads the A of "Answer"
    ("Based on the video, the answer is C.", 2, 1, 1),
    ("(B)", 1, 1, 1),
    ("the man in the red coat appears near the end of the clip after the fireworks", None, None, None),
    ("<think>A is wrong</think>\nB", 1, 1, 0),  # 0.6 sees the A inside the reasoning block
    ("Maybe A...</think>D", 3, 3, 0),  # a lone closing tag (prefilled <think>): 0.7 keeps what follows it
]


@pytest.mark.parametrize(("reply", "current", "v071", "v06"), VIDEOMME_LVBENCH)
def test_videomme_and_lvbench_by_release(reply, current, v071, v06):
    for cls in (VideoMME, LvbenchBenchmark):
        got = [letter(cls(compat=c), reply) for c in ("lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6")]
        assert got == [current, v071, v06], (cls.__name__, reply)


def test_legacy_extractor_is_the_2024_06_one():
    assert extract_legacy("The best answer is D") == "D" and extract_legacy("Best option: D") == "B"
    assert extract_legacy("d") == "" and extract_legacy(" (C) ") == "C"


@pytest.mark.parametrize(("reply", "current", "old"), [
    ("B) Two dogs", 1, 1), ("(B) Two dogs", 1, 1),
    ("The answer is B", 1, "The answer is B"),  # old: no ")" -> the whole reply, never an answer letter
    ("B", 1, 1), ("b) two dogs", None, "b"),  # 0.7.3 reads capitals only; old: "b" is not the answer "B"
    ("", None, None),
])
def test_mlvu_by_release(reply, current, old):
    answer = {"answer_letter": "B", "answer_text": "Two dogs"}
    for compat, want in (("lmms-eval", current), ("lmms-eval@0.7.1", old), ("lmms-eval@0.6", old)):
        bench = Mlvu(compat=compat)
        s = sample(1, "mlvu", **answer)
        prediction = bench.extract(s, Response(text=reply))
        assert prediction.value == want, (compat, reply)
        assert bench.score(s, prediction).correct is (want == 1)


def test_modes_and_their_errors():
    assert RELEASES == {"lmms-eval": "0.7.2-0.7.3", "lmms-eval@0.7.1": "0.7.0-0.7.1", "lmms-eval@0.6": "0.6.0-0.6.1"}
    with pytest.raises(LvuError, match=r"compat='lmms-eval@0.5' is unknown for videomme — its lmms-eval modes: "
                                       r"lmms-eval = lmms-eval 0.7.2-0.7.3; lmms-eval@0.7.1 = lmms-eval 0.7.0-0.7.1"):
        VideoMME(compat="lmms-eval@0.5")
    with pytest.raises(LvuError, match="lmms-eval's Neptune task came with 0.7"):
        Neptune(compat="lmms-eval@0.6")
    assert Neptune(compat="lmms-eval@0.7.1").settings["frames"] == 32  # its task, same code as 0.7.3
    lvb = LongVideoBench(compat="lmms-eval@0.6", subtitles="none")
    assert lvb.settings["frames"] == 32 and lvb.question_text(sample(1, "longvideobench")).endswith("directly.\n")
    # LongVideoBench: the same parser in every release; 0.6 does not cut reasoning blocks
    s = sample(1, "longvideobench")
    assert [LongVideoBench(compat=c).extract(s, Response(text="<think>A?</think> B")).value
            for c in ("lmms-eval", "lmms-eval@0.7.1", "lmms-eval@0.6")] == [1, 1, 0]


def test_an_empty_reply_in_a_0_7_3_sample_log_reads_as_empty():
    """0.7.3 logs an empty reply as "filtered_resps": "" and drops the equal resps (this raised)."""
    assert lmms_log_response({"doc_id": 3, "filtered_resps": ""}) == ""
    assert lmms_log_response({"filtered_resps": "", "resps": "<think>x</think>"}) == ""
    assert lmms_log_response({"resps": [["C"]]}) == "C"
