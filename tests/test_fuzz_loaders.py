"""Issue 22: loaders never traceback. Hypothesis feeds every record mapper, every benchmark's answer
extractor (with its scorer) and every subtitle parser malformed input; the only exceptions allowed
are lvu's own one-line errors (LvuError and its kinds, RecordError — which the loaders turn into a
bad record). Examples are bounded and derandomised: the same cases every run, a few seconds in all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz harness needs hypothesis (the test extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lvu.benchmarks import jsonl, longvideobench_release, lvbench_release, mlvu_release, neptune_release  # noqa: E402
from lvu.benchmarks import load_all, videomme_release  # noqa: E402
from lvu.benchmarks.base import BENCHMARKS, BadRecord  # noqa: E402
from lvu.benchmarks.loading import RecordError  # noqa: E402
from lvu.errors import LvuError  # noqa: E402
from lvu.media import subtitles  # noqa: E402
from lvu.runs.grading import make_benchmark  # noqa: E402
from lvu.types import Response, Sample  # noqa: E402

ALLOWED = (LvuError, RecordError)
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
NOWHERE = Path("/nonexistent-lvu-fuzz")
DROP = object()

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=8)


def mutated(valid: dict, nested: dict[str, st.SearchStrategy] | None = None) -> st.SearchStrategy:
    """`valid` with up to three fields replaced by any JSON value or dropped (`nested`: fields with
    their own strategy too, e.g. a list of mutated questions); sometimes any JSON value instead.
    Near-valid records reach the deep paths of a mapper, where the type confusions hide."""
    def edit(key: str) -> st.SearchStrategy:
        own = [nested[key]] if nested and key in nested else []
        return st.tuples(st.just(key), st.one_of(*own, json_values, st.just(DROP)))

    def apply(edits: list[tuple[str, object]]) -> dict:
        record = dict(valid)
        for key, value in edits:
            record[key] = value
        return {k: v for k, v in record.items() if v is not DROP}

    edits = st.lists(st.sampled_from(sorted(valid)).flatmap(edit), max_size=3)
    return edits.map(apply) | json_values


def survives(call, *args, **kw):
    try:
        return call(*args, **kw)
    except ALLOWED:
        return None


# ---- record mappers -----------------------------------------------------------------------------------

VIDEOMME = {"question_id": "001-1", "question": "What is shown?", "options": ["A. a", "B. b", "C. c", "D. d"],
            "answer": "B", "duration": "short", "videoID": "fFjv93ACGo8", "url": "https://www.youtube.com/watch?v=x",
            "domain": "Knowledge", "sub_category": "Humanity", "task_type": "Counting Problem", "video_id": "001"}
LONGVIDEOBENCH = {"id": "86CxyhFV9MI_0", "question": "What?", "candidates": ["a", "b", "c", "d"], "correct_choice": 1,
                  "video_path": "86CxyhFV9MI.mp4", "video_id": "86CxyhFV9MI", "duration": 100.5,
                  "starting_timestamp_for_subtitles": 0, "subtitle_path": "86CxyhFV9MI_en.json", "duration_group": 600,
                  "question_category": "S2E", "level": "L1", "position": [1, 2]}
NEPTUNE_REPO = {"video_id": "dQw4w9WgXcQ", "key": "k1", "question": "Why?", "answer_choice_0": "a",
                "answer_choice_1": "b", "answer_choice_2": "c", "answer_choice_3": "d", "answer_choice_4": "e",
                "answer_id": 2, "answer": "c", "question type": "Temporal Ordering"}
NEPTUNE_SHEET = {"url": "https://youtu.be/dQw4w9WgXcQ", "question": "Why?", "answer": "x", "decoys": ["a", "b", "c", "d"],
                 "video_path": "videos/dQw4w9WgXcQ.mp4"}
MLVU_MCQ = {"video": "1.mp4", "duration": 100, "question": "What?", "candidates": ["a", "b", "c", "d"], "answer": "a",
            "question_type": "plotQA", "question_id": "q1"}
MLVU_GEN = {"video": "2.mp4", "duration": 300.0, "question": "Summarise.", "answer": "text", "question_type": "subPlot",
            "scoring_points": ["one", "two"]}
LVBENCH_QA = {"uid": 7, "question": "Q?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "A",
              "question_type": ["entity recognition"], "time_reference": "00:15-00:19"}
LVBENCH = {"key": "abcdefghijk", "type": "cartoon", "video_info": {"duration_minutes": 61.5, "fps": 30},
           "qa": [LVBENCH_QA, LVBENCH_QA]}
JSONL = {"id": "q1", "video": {"path": "a.mp4", "duration": 120.0}, "question": "Q?", "options": ["a", "b"],
         "answer": 1, "labels": {"k": "v"}, "subtitles": "a.srt"}

lvbench_questions = st.lists(mutated(LVBENCH_QA), max_size=3)
lvbench_columns = st.fixed_dictionaries({k: st.lists(st.just(v) | json_values, max_size=3) for k, v in LVBENCH_QA.items()})


@pytest.mark.slow
@FUZZ
@given(mutated(VIDEOMME))
def test_videomme_rows(row):
    survives(videomme_release.row_to_sample, row, benchmark="videomme", video_dir=NOWHERE, subtitle_dir=NOWHERE)


@pytest.mark.slow
@FUZZ
@given(mutated(LONGVIDEOBENCH), st.sampled_from(["val", "test"]))
def test_longvideobench_records(record, split):
    survives(longvideobench_release.record_to_sample, record, benchmark="longvideobench", split=split,
             video_dir=NOWHERE, subtitle_dir=NOWHERE)


@FUZZ
@given(mutated(NEPTUNE_REPO) | mutated(NEPTUNE_SHEET), st.sampled_from([None, NOWHERE]))
def test_neptune_records(record, asr_dir):
    survives(neptune_release.record_to_sample, record, benchmark="neptune", ordinal=1, video_dir=NOWHERE,
             asr_dir=asr_dir)


@FUZZ
@given(mutated(MLVU_MCQ) | mutated(MLVU_GEN), st.sampled_from([None, *mlvu_release.TASKS.values()]),
       st.sampled_from(["dev", "test"]))
def test_mlvu_records(record, task, split):
    survives(mlvu_release.to_sample, record, task=task, ident="x_0", split=split, video_root=NOWHERE)


@FUZZ
@given(mutated(LVBENCH, {"qa": lvbench_questions | lvbench_columns}))
def test_lvbench_lines(record):
    samples, bad = lvbench_release.map_record(record, "video_info.meta.jsonl:1", lambda key, rel: f"/v/{key}.mp4")
    assert all(isinstance(s, Sample) for s in samples) and all(isinstance(b, BadRecord) for b in bad)
    assert all("\n" not in b.error for b in bad)


@pytest.mark.slow
@FUZZ
@given(mutated(JSONL))
def test_jsonl_records(record):
    survives(jsonl._record_sample, record, default_benchmark="jsonl")


def test_the_two_reported_records_are_one_line_bad_records(tmp_path):
    """MLVU question_type as a list (TypeError: unhashable type: 'list'), LVBench column-wise `qa`
    with lists of unequal length (IndexError): both were tracebacks that aborted the whole load."""
    with pytest.raises(RecordError, match=r"^question_type \['plotQA'\] is not an MLVU task — expected one of "):
        mlvu_release.to_sample({**MLVU_MCQ, "question_type": ["plotQA"]}, task=None, ident="x", split="dev",
                               video_root=tmp_path)
    data = tmp_path / "mine.json"  # one file of several tasks: each record names its task
    data.write_text(json.dumps([MLVU_MCQ, {**MLVU_MCQ, "question_id": "q2", "question_type": ["plotQA"]}]))
    samples, bad = mlvu_release.load_release("dev", data, list(mlvu_release.TASKS), video_dir=str(tmp_path))
    assert [s.id for s in samples] == ["q1"]
    assert [b.error.split(" — ")[0] for b in bad] == ["mine.json record 2: question_type ['plotQA'] is not an MLVU task"]

    columns = {"uid": [1, 2], "question": ["Q?\n(A) a\n(B) b", "R?\n(A) a\n(B) b"], "answer": ["A"]}
    samples, bad = lvbench_release.map_record({**LVBENCH, "qa": columns}, "video_info.meta.jsonl:3",
                                              lambda key, rel: f"/v/{key}.mp4")
    assert samples == [] and len(bad) == 1
    assert bad[0].error.startswith("video_info.meta.jsonl:3: video abcdefghijk: 'qa' is column-wise with lists of "
                                   "unequal length (uid: 2, question: 2, answer: 1)")


# ---- answer extractors (and the scorers they feed) ---------------------------------------------------------

replies = st.text(max_size=60) | st.text(alphabet=st.sampled_from(list("ABCDE()[]:.,'\" \n<>/thinkanswerOption0123")),
                                         max_size=40)


def _extractor_cases() -> list[tuple[str, str, Sample]]:
    """(benchmark, compat, a realistic sample of it, made by its own mapper) for every registered
    benchmark and every compat mode it accepts."""
    samples = {
        "videomme": videomme_release.row_to_sample(VIDEOMME, benchmark="videomme", video_dir=NOWHERE,
                                                   subtitle_dir=NOWHERE),
        "longvideobench": longvideobench_release.record_to_sample(LONGVIDEOBENCH, benchmark="longvideobench",
                                                                  split="val", video_dir=NOWHERE, subtitle_dir=NOWHERE),
        "neptune": neptune_release.record_to_sample(NEPTUNE_REPO, benchmark="neptune", ordinal=1,
                                                    video_dir=NOWHERE, asr_dir=None),
        "mlvu": mlvu_release.to_sample(MLVU_MCQ, task=None, ident="x", split="dev", video_root=NOWHERE),
        "mlvu-gen": mlvu_release.to_sample(MLVU_GEN, task=None, ident="y", split="dev", video_root=NOWHERE),
        "lvbench": lvbench_release.map_record(LVBENCH, "x", lambda key, rel: f"/v/{key}.mp4")[0][0],
        "jsonl": jsonl._record_sample(dict(JSONL), default_benchmark="jsonl"),
    }
    load_all()
    cases = []
    for name in sorted(n for n, cls in BENCHMARKS._items.items() if cls.__module__.startswith("lvu.benchmarks.")):
        family = next((f for f in ("videomme", "longvideobench", "neptune", "mlvu", "lvbench") if name.startswith(f)),
                      "jsonl")
        for compat in ("official", "lmms-eval", "lmms-eval-0.7.1", "vlmevalkit"):
            try:
                bench = make_benchmark(name, {"compat": compat} if family != "jsonl" else {})
            except LvuError:
                continue  # not a mode of this benchmark
            for key in (family, f"{family}-gen"):
                if key in samples:
                    cases.append((name, compat, bench, samples[key]))
            if family == "jsonl":
                break
    return cases


CASES = _extractor_cases()


@pytest.mark.parametrize("name,compat,bench,sample", CASES, ids=[f"{c[0]}-{c[1]}-{c[3].id}" for c in CASES])
def test_extractors_and_scorers(name, compat, bench, sample):
    @FUZZ
    @given(replies)
    def check(text):
        try:
            prediction = bench.extract(sample, Response(text=text))
            bench.score(sample, prediction)
        except ALLOWED:
            pass

    check()


# ---- subtitle parsers --------------------------------------------------------------------------------------

SRT = "1\n00:00:01,000 --> 00:00:02,500\nHello <i>there</i>\n\n2\n00:00:03,000 --> 00:00:04,000\nBye\n"
VTT = "WEBVTT\n\n00:01.000 --> 00:02.500\nHello\n\n00:00:03.000 --> 00:00:04.000 align:start\n<v Bob>Bye\n"
JSON_CUES = json.dumps([{"timestamp": [1.0, 2.5], "text": "Hello"}, {"start": "00:00:03.000", "end": None, "line": "Bye"}])


def _edits(text: str) -> st.SearchStrategy:
    """`text` with a slice replaced by random characters (timing digits, arrows, commas, junk)."""
    junk = st.text(alphabet=st.sampled_from(list("0123456789:,.-> \n\tWEBVTT{}[]\"nanNaNInfinity")), max_size=12) \
        | st.text(max_size=8)
    return st.tuples(st.integers(0, len(text)), st.integers(0, 12), junk).map(
        lambda e: text[: e[0]] + e[2] + text[e[0] + e[1]:])


@pytest.mark.parametrize("suffix,text", [(".srt", SRT), (".vtt", VTT), (".json", JSON_CUES)])
def test_subtitle_parsers(tmp_path, suffix, text):
    path = tmp_path / f"cues{suffix}"

    @FUZZ
    @given(_edits(text) | st.text(max_size=80), st.sampled_from([None, 30.0]))
    def check(content, duration):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        try:
            cues = subtitles.load_cues(path, duration=duration)
        except ALLOWED as e:
            assert "\n" not in str(e) and str(path) in str(e)
            return
        assert all(c.start == c.start and c.end == c.end and abs(c.start) != float("inf") for c in cues)

    check()
