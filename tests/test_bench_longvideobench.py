"""LongVideoBench: release loaders, data check, official frames / subtitles / prompt, extraction,
aggregation, submissions, harness compat modes, and `lvu run` on a generated release."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.longvideobench import (
    INSTRUCTION,
    LongVideoBench,
    interleave_official,
    official_cues,
    parse_official,
    parse_vlmevalkit,
    record_to_sample,
)
from lvu.benchmarks.longvideobench_ref import CATEGORIES, CATEGORY_COUNTS, DURATIONS, REFERENCE
from lvu.errors import LvuError, SubtitleError
from lvu.media.subtitles import interleave, select_cues
from lvu.media.testing import make_video, read_index
from lvu.runs.engine import video_meta
from lvu.types import Frame, Response, SampleResult, Subtitle, VideoMeta

# ---- a small release in the official layout -------------------------------------------------------

OPTS5 = ["Raised one ear", "Raised both ears", "Closed its eyes", "Turned around", "Walked on the ground"]
OPTS4 = ["First a map, then a cat", "First a cat, then a map", "Only a map", "Only a cat"]

WHISPER = [  # vidA: Whisper items keep their leading space; ends that are not floats become `duration`
    {"timestamp": [0.0, 1.5], "text": " Hello there."},  # covers no frame strictly inside: dropped
    {"timestamp": [2.2, 2.6], "text": " Quick."},  # under 1 s: widened to [1.9, 2.9], covers 2.5
    {"timestamp": [3.2, 3.8], "text": " Missed."},  # widened [3.0, 4.0]: no frame, dropped
    {"timestamp": [6.0, 12.0], "text": " Long one."},
    {"timestamp": [13, 14], "text": " Int end."},  # int end -> 20.0 (official quirk): covers 15
    {"timestamp": [17.0, None], "text": " The end."},  # null end -> 20.0
]
LINES = [  # vidB: platform subtitles of the *source* video; the clip starts at 300 s
    {"start": "00:05:01.000", "end": "00:05:03.500", "line": "first line"},
    {"start": "00:05:06.000", "end": "00:05:06.400", "line": "short"},
    {"start": "00:04:50.000", "end": "00:04:55.000", "line": "before the clip"},
]


def record(rid: str, video: str, **kw) -> dict:
    base = {"video_id": video, "question": f"What happened in {rid}?", "question_wo_referring_query": "What happened?",
            "candidates": OPTS5, "correct_choice": 1, "position": [45, 120], "topic_category": "KS-Knowledge-STEM",
            "question_category": "T2E", "level": "L1-Perception", "id": rid, "video_path": f"{video}.mp4",
            "subtitle_path": f"{video}_en.json", "duration_group": 60, "starting_timestamp_for_subtitles": 0,
            "duration": 20.0, "view_count": 1234, "type": "local"}
    return {**base, **kw}


VAL = [
    record("vidA_0", "vidA"),
    record("vidB_0", "vidB", candidates=OPTS4, correct_choice=0, question_category="SSS", level="L2-Relation",
           duration_group=15, duration=12.0, starting_timestamp_for_subtitles=300.0, position=[10]),
    record("vidA_1", "vidA", candidates=OPTS4, correct_choice=3, question_category="TOS", level="L2-Relation"),
]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lvb")
    (root / "videos").mkdir()
    (root / "subtitles").mkdir()
    make_video(root / "videos" / "vidA.mp4", seconds=20, fps=10, gop=20, size=(64, 48))
    make_video(root / "videos" / "vidB.mp4", seconds=12, fps=10, gop=20, size=(64, 48))
    (root / "subtitles" / "vidA_en.json").write_text(json.dumps(WHISPER))
    (root / "subtitles" / "vidB_en.json").write_text(json.dumps(LINES))
    (root / "lvb_val.json").write_text(json.dumps(VAL))
    test = [{k: v for k, v in r.items() if k != "correct_choice"} | {"id": r["id"] + "_t"} for r in VAL[:2]]
    (root / "lvb_test_wo_gt.json").write_text(json.dumps(test))
    return root


def bench(release: Path, **settings) -> LongVideoBench:
    return BENCHMARKS.get(settings.pop("task", "longvideobench"))(data=str(release), **settings)


def frames_at(*times: float) -> list[Frame]:
    return [Frame(timestamp=t) for t in times]


def shape(parts) -> list:
    """Frames as their times, cues as their text, text parts as themselves."""
    return [p.timestamp if isinstance(p, Frame) else p.text for p in parts]


# ---- loading and validation --------------------------------------------------------------------------


def test_release_json_and_hub_parquet_rows_map_to_the_same_sample(release):
    samples, bad = bench(release).load()
    assert bad == [] and [s.id for s in samples] == ["vidA_0", "vidB_0", "vidA_1"]
    b = samples[1]
    assert b.options == OPTS4 and b.answer == 0 and b.video.duration == 12.0
    assert b.video.path == str(release / "videos" / "vidB.mp4")
    assert b.subtitles.path == str(release / "subtitles" / "vidB_en.json") and b.subtitles.offset == 300.0
    assert b.labels == {"duration_group": "(8,15]", "question_category": "SSS", "level": "L2-Relation",
                        "topic_category": "KS-Knowledge-STEM"}
    assert b.extra["position"] == [10] and b.extra["duration_group"] == 15 and b.extra["view_count"] == 1234

    # the hub's parquet rows: option0..option4 with "N/A" padding, otherwise the same fields
    row = {k: v for k, v in VAL[1].items() if k != "candidates"}
    row.update({f"option{i}": o for i, o in enumerate(OPTS4)}, option4="N/A")
    hub = record_to_sample(row, benchmark="longvideobench", split="val", video_dir=release / "videos",
                           subtitle_dir=release / "subtitles")
    assert hub == b


def test_test_split_hides_answers_and_the_file_name_sets_the_split(release):
    samples, bad = bench(release, split="test").load()
    assert bad == [] and [s.answer for s in samples] == [None, None]
    by_file = BENCHMARKS.get("longvideobench")(data=str(release / "lvb_test_wo_gt.json"))
    assert by_file.settings["split"] == "test" and len(by_file.load()[0]) == 2
    with pytest.raises(LvuError, match="holds the test split"):
        BENCHMARKS.get("longvideobench")(data=str(release / "lvb_test_wo_gt.json"), split="val")


@pytest.mark.slow
def test_bad_records_are_one_line_errors_and_data_check_names_every_problem(release, tmp_path):
    root = tmp_path / "broken"
    (root / "subtitles").mkdir(parents=True)
    (root / "subtitles" / "vidA_en.json").write_text("[]")
    records = [
        record("ok", "vidA"),
        record("wrong_answer", "vidA", correct_choice=5),
        record("no_duration", "vidA", duration=None),
        {"id": "few", "question": "Q?", "candidates": ["only one"], "video_path": "v.mp4", "duration": 3},
        "not an object",
        record("ok", "vidA"),  # repeated id
        record("odd", "vidA", question_category="XYZ", level="L3", duration_group=120, subtitle_path="gone.json"),
    ]
    (root / "lvb_val.json").write_text(json.dumps(records))
    b = BENCHMARKS.get("longvideobench")(data=str(root))
    samples, bad = b.load()
    assert [s.id for s in samples] == ["ok", "odd"]
    assert [x.id for x in bad] == [f"lvb_val.json record {i}" for i in (2, 3, 4, 5, 6)]
    for x in bad:
        assert x.error.startswith(x.id + ": ") and " — " in x.error and "\n" not in x.error
    assert "correct_choice=5" in bad[0].error and "no duration" in bad[1].error and "1 candidates" in bad[2].error
    assert "repeats lvb_val.json record 1" in bad[4].error

    with pytest.raises(LvuError, match="file not found"):  # a missing video fails its sample only
        b.plan(samples[0], video_meta(samples[0]))  # the lazy probe finds no file
    problems = b.check()
    joined = "\n".join(problems)
    assert "longvideobench val: 7 questions, the paper has 1337" in joined
    assert f"ok: video vidA.mp4 not found — tried {root / 'videos' / 'vidA.mp4'} — pass --video-dir DIR holding vidA.mp4" in problems
    assert f"odd: subtitle file {root / 'subtitles' / 'gone.json'} not found" in problems
    assert "odd: question_category 'XYZ' is not one of the 17 codes" in problems
    assert "odd: level 'L3' is not L1-Perception or L2-Relation" in problems
    assert "odd: duration_group '120' is not 15, 60, 600 or 3600" in problems

    cli = subprocess.run([sys.executable, "-m", "lvu.cli", "data", "check", "longvideobench", "--root", str(release)],
                         capture_output=True, text=True)
    assert cli.returncode == 1  # the fixture has 3 questions, not 1,337
    assert "longvideobench val: 3 questions, the paper has 1337" in cli.stdout
    assert "longvideobench val: 2 videos, the paper has 752" in cli.stdout


@pytest.mark.parametrize("settings, message", [
    ({"compat": "harness"}, "compat='harness' is unknown"),
    ({"split": "train"}, "split='train' is unknown"),
    ({"subtitles": "covering"}, "not a LongVideoBench input"),
    ({"frames": -1}, "not a frame count"),
    ({"frames": "1fps"}, "fps sampling is VLMEvalKit's preset"),
    ({"subtitles": "all", "frames": 8}, "use frames=0"),
    ({"compat": "lmms-eval", "subtitles": "all"}, "no LongVideoBench subtitles-only task"),
    ({"compat": "vlmevalkit", "split": "test"}, "val only"),
    ({"vlmevalkit_flag_bug": True}, "use it with --compat vlmevalkit"),
    ({"compat": "vlmevalkit", "vlmevalkit_flag_bug": "maybe"}, "vlmevalkit_flag_bug='maybe' is not true/false"),
    ({"sampling": "uniform"}, "has no setting"),
])
def test_bad_settings_are_one_line_errors(release, settings, message):
    with pytest.raises(LvuError, match=message):
        bench(release, **settings)


def test_hub_loading_needs_datasets_and_respects_lvu_offline(release, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if `datasets` were not installed
    with pytest.raises(LvuError, match=r"pip install 'lvu\[hub\]'"):
        BENCHMARKS.get("longvideobench")(data="hf:").load()
    monkeypatch.setenv("LVU_OFFLINE", "1")
    with pytest.raises(LvuError, match="LVU_OFFLINE is set"):
        BENCHMARKS.get("longvideobench")().load()


# ---- frames ---------------------------------------------------------------------------------------------


def test_frame_plans_follow_each_harness_formula_and_decode_those_frames(release):
    a, b = bench(release).load()[0][:2]
    plan = lambda s, **kw: bench(release, **kw).plan(s, video_meta(s)).timestamps
    # official lvb:N: total = int(duration * fps), n = min(N, int(duration)), indices int(total / n) * i
    assert plan(a) == [float(i) for i in range(20)]  # 256 capped at 1 fps: 20 frames of a 20 s clip
    assert plan(a, frames=8) == [0.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5]
    short = a.model_copy(update={"video": a.video.model_copy(update={"duration": 12.5})})
    assert plan(short, frames=8) == [i * 1.5 for i in range(8)]  # the annotation's duration rules
    assert plan(a, frames=0) == []
    # lmms-eval `_v`: its PyAV reader, linspace(0, T-1, N); VLMEvalKit: int(i * T / (N + 1)), i = 1..N
    assert plan(b, compat="lmms-eval", task="longvideobench-frames", frames=8) == \
        [i / 10 for i in (0, 17, 34, 51, 68, 85, 102, 119)]
    assert plan(b, compat="vlmevalkit") == [i / 10 for i in (13, 26, 40, 53, 66, 80, 93, 106)]
    assert plan(b, compat="vlmevalkit", frames="0.5fps") == [i / 10 for i in (0, 20, 40, 60, 80, 100)]
    assert bench(release, compat="lmms-eval").settings["frames"] == 16  # its YAML's max_num_frames

    from lvu.media.video import VideoReader

    with VideoReader(a.video.path) as reader:  # i / fps reads back frame i
        batch = reader.get_frames_played_at(plan(a, frames=8))
    assert [read_index(f) for f in batch.data] == [0, 25, 50, 75, 100, 125, 150, 175]


# ---- subtitles and prompts ---------------------------------------------------------------------------------

QA = "\n".join(f"{'ABCDE'[i]}. {o}" for i, o in enumerate(OPTS5))
QB = "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(OPTS4))


def test_cues_are_read_as_the_official_loader_reads_them(release, tmp_path):
    cues = official_cues(release / "subtitles" / "vidA_en.json", 0.0, 20.0)
    assert [c.text for c in cues] == [w["text"] for w in WHISPER]  # verbatim: leading spaces kept
    assert [(c.start, c.end) for c in cues][-2:] == [(13.0, 20.0), (17.0, 20.0)]  # int / null end -> duration
    lines = official_cues(release / "subtitles" / "vidB_en.json", 300.0, 12.0)
    assert [c.text for c in lines] == ["first line", "short", "before the clip"]  # file order
    assert [t for c in lines for t in (c.start, c.end)] == pytest.approx([1.0, 3.5, 6.0, 6.4, -10.0, -5.0])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"start": "1:02.5", "end": "00:01:03", "line": "x"}]))
    with pytest.raises(SubtitleError, match=r"bad.json: item 0 is not a subtitle .* — expected"):
        official_cues(bad, 0.0, 10.0)


def test_official_interleaved_prompt_is_byte_exact(release):
    b = bench(release, frames=8)
    a, v = b.load()[0][:2]
    prompt = b.build_prompt(a, frames_at(0, 2.5, 5, 7.5, 10, 12.5, 15, 17.5), cues=[])
    assert shape(prompt.parts) == [0, " Quick.", 2.5, 5, 7.5, " Long one.", 10, 12.5, 15, " Int end.", 17.5,
                                   " The end.", f"Question: What happened in vidA_0?\n{QA}\n{INSTRUCTION}"]
    assert prompt.parts[-1].text.endswith("E. Walked on the ground\n"
                                          "Answer with the option's letter from the given choices directly.")
    assert prompt.choices == OPTS5 and prompt.question == "What happened in vidA_0?"
    prompt = b.build_prompt(v, frames_at(0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5), cues=[])
    assert shape(prompt.parts)[:-1] == [0, 1.5, "first line", 3, 4.5, 6, "short", 7.5, 9, 10.5]


def test_single_pass_equals_the_shared_select_then_interleave_on_start_sorted_cues():
    cues = [Subtitle(text=str(i), start=s, end=e) for i, (s, e) in
            enumerate([(0, 1.5), (0.9, 1.2), (2.2, 2.6), (4, 9), (5, 5.2), (9.5, 14), (13.6, 14.4)])]
    frames = frames_at(0, 2.5, 5, 7.5, 10, 12.5, 14)
    ours = interleave_official([(f.timestamp, f) for f in frames], cues)
    shared = interleave(frames, select_cues(cues, [f.timestamp for f in frames], "interleave"))
    assert ours == shared and sum(isinstance(p, Subtitle) for p in ours) == 5


def test_frames_only_subtitles_only_and_question_only_inputs(release):
    a, v = bench(release).load()[0][:2]
    frames = frames_at(0, 5, 10, 15)
    assert shape(bench(release, task="longvideobench-frames").build_prompt(a, frames, []).parts) == \
        [0, 5, 10, 15, f"Question: What happened in vidA_0?\n{QA}\n{INSTRUCTION}"]
    only = bench(release, task="longvideobench-subtitles")
    assert only.settings["frames"] == 0 and only.plan(v, VideoMeta(12.0)).timestamps == []
    # every cue of the file, in file order, even those outside the clip (official max_num_frames=-1)
    assert shape(only.build_prompt(v, [], []).parts) == \
        ["first line", "short", "before the clip", f"Question: What happened in vidB_0?\n{QB}\n{INSTRUCTION}"]
    blind = bench(release, frames=0, subtitles="none")
    assert shape(blind.build_prompt(a, [], []).parts) == [f"Question: What happened in vidA_0?\n{QA}\n{INSTRUCTION}"]


def test_lmms_eval_prompts(release):
    v = bench(release).load()[0][1]
    frames = frames_at(0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5)
    prompt = bench(release, compat="lmms-eval", frames=8).build_prompt(v, frames, [])  # longvideobench_val_i
    assert shape(prompt.parts)[:8] == [f.timestamp for f in frames]  # chat models get the frames first
    assert prompt.parts[8].text == ("<image>\n<image>\nfirst line\n<image>\n<image>\n<image>\nshort\n<image>\n"
                                    f"<image>\n<image>\nWhat happened in vidB_0?\n{QB}\n{INSTRUCTION}\n")
    assert prompt.max_tokens == 32
    prompt = bench(release, compat="lmms-eval", task="longvideobench-frames", frames=8).build_prompt(v, frames, [])
    assert prompt.parts[-1].text == f"What happened in vidB_0?\n{QB}\n{INSTRUCTION}\n"  # longvideobench_val_v


def test_vlmevalkit_prompt_and_its_inverted_subtitle_flag(release):
    v = bench(release).load()[0][1]
    frames = frames_at(1.3, 2.6, 4.0, 5.3, 6.6, 8.0, 9.3, 10.6)
    text = f"What happened in vidB_0?\n{QB}\n{INSTRUCTION}"
    subs = bench(release, compat="vlmevalkit")  # LongVideoBench_8frame_subs (use_subtitle=True)
    with_cues = [1.3, "first line\n", 2.6, 4.0, 5.3, "short\n", 6.6, 8.0, 9.3, 10.6, text]
    assert shape(subs.build_prompt(v, frames, []).parts) == with_cues
    plain = bench(release, compat="vlmevalkit", task="longvideobench-frames")  # LongVideoBench_8frame
    assert shape(plain.build_prompt(v, frames, []).parts) == [*(f.timestamp for f in frames), text]
    # VLMEvalKit #573..#1588: `if not self.use_subtitle` inserted subtitles — the presets swapped
    buggy = bench(release, compat="vlmevalkit", task="longvideobench-frames", vlmevalkit_flag_bug=True)
    assert shape(buggy.build_prompt(v, frames, []).parts) == with_cues
    buggy_subs = bench(release, compat="vlmevalkit", vlmevalkit_flag_bug=True)
    assert shape(buggy_subs.build_prompt(v, frames, []).parts) == [*(f.timestamp for f in frames), text]


# ---- extraction, scoring, aggregation -------------------------------------------------------------------

# reply, official (= lmms-eval) letter, VLMEvalKit letter; None = no letter found
REPLIES = [
    ("B", "B", "B"),
    ("(C) a dog", "C", "C"),
    ("The answer is D.", "D", "D"),
    ("Answer: C", "A", "C"),  # official keeps "Answer:" and reads its A; VLMEvalKit deletes it
    ("Best answer: C", "C", "B"),  # VLMEvalKit's glued prefix list never deletes "Best answer:"
    ("Best option: E", "E", "B"),
    ("D. A book", "D", "D"),  # the first letter, not the A inside the option text
    ("I think it is B", "B", "B"),
    ("Both A and C fit", "B", "B"),  # the B of "Both"
    ("Explanation first. Correct is B", "E", "E"),
    ("Option: A", "A", "A"),
    ("The answer is: E", "E", "E"),
    ("**C**", "C", "C"),
    ("<answer>c</answer>", None, None),  # lower case is never read
    ("none of these fit the video at all, sorry", None, None),
    ("", None, None),
]


@pytest.mark.parametrize("reply, official, vlmevalkit", REPLIES)
def test_answer_extraction_table(reply, official, vlmevalkit):
    assert parse_official(reply) == official
    assert parse_vlmevalkit(reply) == vlmevalkit


def test_scoring_random_fallback_and_out_of_range_letters(release):
    b = bench(release)
    a4 = b.load()[0][2]  # 4 options, answer D
    score = lambda bm, text: bm.score(a4, bm.extract(a4, Response(text=text)))
    assert score(b, "The answer is D").correct is True
    wrong = score(b, "The best option is E")  # E is read although there are only 4 options
    assert wrong.correct is False and "not one of the 4 options" in wrong.explanation
    pred = b.extract(a4, Response(text="no idea"))
    assert pred.method == "random" and 0 <= pred.value < 4
    assert b.extract(a4, Response(text="hmm")).value == pred.value  # seeded by (seed, id): stable
    picks = {bench(release, seed=s).extract(a4, Response(text="?")).value for s in range(40)}
    assert picks == {0, 1, 2, 3}  # a fair draw over the options, never E
    assert "random pick" in score(b, "no idea").explanation
    vlm = bench(release, compat="vlmevalkit")
    miss = score(vlm, "no idea")
    assert miss.correct is False and miss.counted and "'Z'" in miss.explanation


def result(labels: dict, score: float | None, **kw) -> SampleResult:
    return SampleResult(sample_id=str(len(labels)) + str(score), labels=labels, score=score, **kw)


def test_aggregate_in_table_7_layout_with_hand_computed_numbers(release):
    lab = lambda g, c, lv: {"duration_group": g, "question_category": c, "level": lv}
    results = [
        result(lab("(15,60]", "T2E", "L1-Perception"), 1.0),
        result(lab("(15,60]", "TOS", "L2-Relation"), 0.0),
        result(lab("(8,15]", "SSS", "L2-Relation"), 1.0),
        result(lab("(900,3600]", "T2E", "L1-Perception"), None, error="video not found"),  # counts wrong
        result(lab("(900,3600]", "S2E", "L1-Perception"), 0.0, counted=False),  # left out
    ]
    tables = {t.title: t.rows for t in bench(release).aggregate(results)}
    assert tables["overall"] == [("all", 4, 50.0)]
    assert tables["duration_group"] == [("(8,15]", 1, 100.0), ("(15,60]", 2, 50.0), ("(900,3600]", 1, 0.0)]
    assert tables["question_category"] == [("T2E", 2, 50.0), ("SSS", 1, 100.0), ("TOS", 1, 0.0)]
    assert tables["level"] == [("L1-Perception", 2, 50.0), ("L2-Relation", 2, 50.0)]


def test_submission_file_round_trips_through_read_predictions(release, tmp_path):
    b = bench(release, split="test")
    samples = b.load()[0]
    assert all(not b.score(s, b.extract(s, Response(text="A"))).counted for s in samples)
    results = [SampleResult(sample_id=s.id, response=r) for s, r in zip(samples, ["C", None])]
    path = b.write_submission(results, tmp_path)
    assert path.name == "longvideobench_test_for_submission.json"
    assert json.loads(path.read_text()) == {"vidA_0_t": "C", "vidB_0_t": ""}
    assert [(s.id, r) for s, r in b.read_predictions(path)] == [("vidA_0_t", "C"), ("vidB_0_t", "")]
    log = tmp_path / "samples_longvideobench_val_v.jsonl"  # lmms-eval --log_samples
    log.write_text(json.dumps({"doc_id": 0, "doc": {"id": "vidA_1"}, "resps": [["D"]], "filtered_resps": ["D"]}) + "\n")
    val = bench(release)
    assert [(s.id, r) for s, r in val.read_predictions(log)] == [("vidA_1", "D")]
    unknown = tmp_path / "other.json"
    unknown.write_text(json.dumps({"nope": "A"}))
    with pytest.raises(LvuError, match="'nope' is not a val question"):
        val.read_predictions(unknown)


def test_reference_numbers_are_consistent_with_the_papers_own_weights():
    val = dict(SSS=97, E3E=94, S2E=93, S2A=88, O2E=87, TAA=82, SOS=81, T2A=79, T2O=76, T3O=74, TOS=73, T3E=73,
               SAA=72, S2O=72, O3O=66, E2O=65, T2E=65)  # val counts per category (1,337)
    test_n = {c: CATEGORY_COUNTS[c] - val[c] for c in CATEGORIES}
    rows = [r for r in REFERENCE if r["table"] == "Table 7" and r["split"] == "test"]
    assert len(rows) == 23
    for r in rows:  # Table 7: the 17 category cells weighted by test counts give the total
        assert abs(sum(r[c] * test_n[c] for c in CATEGORIES) / sum(test_n.values()) - r["all"]) < 0.3, r["model"]
    val_groups = (189, 172, 412, 564)
    for r in (r for r in REFERENCE if r["table"] == "Table 5" and "note" not in r):
        weighted = sum(r[d] * n for d, n in zip(DURATIONS, val_groups)) / sum(val_groups)
        assert abs(weighted - r["all"]) < 0.5, (r["model"], r["frames"])
    gpt4o = {r["frames"]: r for r in REFERENCE if r["table"] == "Table 5" and r["model"] == "GPT-4o (0513)"}
    assert gpt4o[256]["(8,15]"] == 71.4 and gpt4o[256]["all"] == 66.7  # "s.a." filled from the row above
    assert math.isclose(sum(val_groups), 1337)


# ---- end to end -------------------------------------------------------------------------------------------


def test_lvu_run_on_the_release_with_random_and_ocr_match(release, tmp_path):
    from lvu.api import run

    env = {"LVU_CACHE_DIR": str(tmp_path / "cache")}
    cli = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "longvideobench", "-m", "random",
                          "--data", str(release), "--frames", "4", "--results-dir", str(tmp_path / "r1"), "--no-report"],
                         capture_output=True, text=True, env={**os.environ, **env})
    assert cli.returncode == 0, cli.stderr
    assert "3 samples" in cli.stdout and "0 failed" in cli.stdout

    summary = run("longvideobench", "ocr-match", settings={"data": str(release), "frames": 8},
                  model_args={"cache": False}, results_dir=tmp_path / "r2", show_progress=False, report=False,
                  frame_cache=False, concurrency=2)
    assert summary.n_failed == 0 and summary.n_total == 3
    tables = {t.title: t.rows for t in summary.tables}
    assert tables["overall"][0][1] == 3 and [g for g, _, _ in tables["duration_group"]] == ["(8,15]", "(15,60]"]
    from lvu.runs.store import Store

    store = Store(tmp_path / "r2")
    try:
        stored = {r.sample_id: r for r in store.results(summary.run_id)}
    finally:
        store.close()
    a = stored["vidA_0"]
    assert a.frame_timestamps == [0.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5]
    assert a.prompt["order"] == "FSFFFSFFFSFST" and a.prompt["n_subtitles"] == 4
