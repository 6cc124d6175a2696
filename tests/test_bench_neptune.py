"""Neptune: both release schemas and hub rows, data check, exact prompts, extraction (official
reading and lmms-eval's parser), input plans, aggregation, open-ended plumbing, lvu run / score."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pytest

from lvu.benchmarks.base import BENCHMARKS
from lvu.benchmarks.neptune import (
    HF_DATASET,
    HF_REVISION,
    JUDGE_PENDING,
    Neptune,
    NeptuneAsr,
    NeptuneOpen,
    parse_lmms,
    parse_option,
    record_to_sample,
    youtube_id,
)
from lvu.benchmarks.neptune_ref import REFERENCE
from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.base import MODELS, Model, register_model
from lvu.api import run as run_engine
from lvu.runs.engine import score_saved
from lvu.runs.store import Store
from lvu.types import Prediction, Response, SampleResult, Subtitle, Text, VideoMeta

OPTS = ["One", "Two", "Three", "Four", "Five"]
VID_A, VID_B = "vidAAAAAAA1", "vidBBBBBBB2"


def rec(key: str, vid: str, qtype: str = "Counting", answer_id: int = 2, **kw) -> dict:
    """A record in the repo README schema (`kw` overrides or adds fields)."""
    r = {"key": key, "video_id": vid, "question": f"How many cats are visible in {key}?",
         "answer": OPTS[answer_id % 5], "answer_id": answer_id, "question type": qtype}
    r.update({f"answer_choice_{i}": o for i, o in enumerate(OPTS)})
    return {**r, **kw}


FULL = [
    rec(f"{VID_A}/1", VID_A, "Temporal Ordering", 0),
    rec(f"{VID_A}/2", f"https://www.youtube.com/watch?v={VID_A}&t=3s", "Counting", 1),
    rec(f"{VID_A}/3", VID_A, "Counting", 2),
    rec(f"{VID_B}/1", VID_B, "Cause And Effect", 3),
    rec(f"{VID_B}/2", VID_B, "Temporal Ordering", 4),
    rec("goneVideo01/1", "goneVideo01", "Counting", 0),
]
MMA = [FULL[0], FULL[3]]
MMH = [FULL[1], FULL[3]]


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("neptune_videos")
    make_video(folder / f"{VID_A}.mp4", seconds=4, fps=10, gop=10, size=(64, 48))
    make_video(folder / f"{VID_B}.mp4", seconds=3, fps=10, gop=10, size=(64, 48))
    return folder


def release(root: Path, videos: Path, full=FULL, mma=MMA, mmh=MMH) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, records in (("full", full), ("mma", mma), ("mmh", mmh)):
        if records is not None:
            (root / f"neptune_{name}.json").write_text(json.dumps(records))
    if not (root / "videos").exists():
        (root / "videos").symlink_to(videos)
    return root


def bench(cls=Neptune, **settings) -> Neptune:
    return cls(**settings)


# ---- loading -------------------------------------------------------------------------------------


def test_repo_schema_loads_with_subset_membership(tmp_path, videos):
    root = release(tmp_path / "nep", videos)
    samples, bad = bench(data=str(root)).load()
    assert bad == []
    by_id = {s.id: s for s in samples}
    a1 = by_id[f"{VID_A}/1"]
    assert a1.options == OPTS and a1.answer == 0 and a1.benchmark == "neptune"
    assert a1.video.path == str(root / "videos" / f"{VID_A}.mp4")
    assert a1.labels == {"question_type": "Temporal Ordering", "subset": ["full", "mma"]}
    assert by_id[f"{VID_B}/1"].labels["subset"] == ["full", "mma", "mmh"]
    assert by_id[f"{VID_A}/3"].labels["subset"] == ["full"]
    assert by_id[f"{VID_A}/2"].extra["video_id"] == VID_A  # URL form of video_id
    assert by_id[f"{VID_A}/2"].extra["url"] == f"https://www.youtube.com/watch?v={VID_A}"
    mma, _ = bench(data=str(root / "neptune_mma.json")).load()  # the file name sets the subset
    assert [s.id for s in mma] == [f"{VID_A}/1", f"{VID_B}/1"] and mma[0].labels["subset"] == ["mma"]
    with pytest.raises(LvuError, match="is the mma subset but subset='mmh'"):
        bench(data=str(root / "neptune_mma.json"), subset="mmh")
    with pytest.raises(LvuError, match="no neptune_mmh.json"):
        release(tmp_path / "partial", videos, mmh=None)
        bench(data=str(tmp_path / "partial"), subset="mmh").load()


def test_datasheet_schema_shuffles_answer_and_decoys_deterministically(tmp_path, videos):
    records = [{"video_id": VID_A, "url": f"https://youtu.be/{VID_A}", "question": f"Q{i}?", "answer": f"right {i}",
                "decoys": [f"wrong {i}.{j}" for j in range(4)]} for i in range(6)]
    root = release(tmp_path / "ds", videos, full=records, mma=None, mmh=None)
    first, bad = bench(data=str(root)).load()
    again, _ = bench(data=str(root)).load()
    assert bad == [] and [s.options for s in first] == [s.options for s in again]
    assert [s.id for s in first] == [f"{VID_A}/{n}" for n in range(1, 7)]  # the repo's key shape
    for i, s in enumerate(first):
        assert s.options[s.answer] == f"right {i}" == s.extra["reference"]
        assert sorted(s.options) == sorted([f"right {i}"] + [f"wrong {i}.{j}" for j in range(4)])
    assert len({s.answer for s in first}) > 1  # shuffled, not always first


def test_hub_rows_use_the_same_mapper_at_the_pinned_revision(tmp_path, videos, monkeypatch):
    calls = []
    rows = [{"key": f"{VID_B}/1", "video_path": f"{VID_B}.mp4", "question": "Q?", "answer": "Four",
             "answer_id": 3, "question_type": "Counting", **{f"answer_choice_{i}": o for i, o in enumerate(OPTS)}}]

    def load_dataset(name, config, split, revision):
        calls.append((name, config, split, revision))
        return rows

    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    samples, bad = bench(data="hf:", subset="mma", video_dir=str(videos)).load()
    assert calls == [(HF_DATASET, "mma", "test", HF_REVISION)] and bad == []
    s = samples[0]
    assert (s.id, s.answer, s.labels["question_type"], s.extra["video_id"]) == (f"{VID_B}/1", 3, "Counting", VID_B)
    assert s.video.path == str(videos / f"{VID_B}.mp4")
    monkeypatch.setenv("LVU_OFFLINE", "1")
    with pytest.raises(LvuError, match="LVU_OFFLINE is set"):
        bench().load()
    monkeypatch.setitem(sys.modules, "datasets", None)  # not installed
    with pytest.raises(LvuError, match=r"pip install 'lvu\[hub\]'"):
        bench(data="hf:").load()


def test_bad_records_name_file_record_and_fix(tmp_path, videos):
    records = [rec("ok/1", VID_A), rec("x/1", VID_A, answer_id=7), {"video_id": VID_A, "answer": "a"},
               {"video_id": VID_A, "question": "Q?", "answer": "a", "decoys": ["b", "c", "d"]},
               rec("ok/1", VID_B), ["not", "an", "object"], rec("z/1", ""), rec("y/1", VID_A, answer_choice_3=None)]
    root = release(tmp_path / "bad", videos, full=records, mma=None, mmh=None)
    samples, bad = bench(data=str(root)).load()
    assert [s.id for s in samples] == ["ok/1"]
    errors = [b.error for b in bad]
    assert len(errors) == 7 and all(e.startswith("neptune_full.json record ") and " — " in e for e in errors)
    assert "record 2: answer_id 7 is not 0-4" in errors[0]
    assert "record 3: 'question' is missing" in errors[1]
    assert "record 4: 3 decoys — Neptune questions have exactly 4" in errors[2]
    assert "record 5: key 'ok/1' repeats neptune_full.json record 1" in errors[3]
    assert "record 6: a JSON list, not an object" in errors[4]
    assert "record 7: no video_id" in errors[5]
    assert "record 8: answer_choice_3 is empty — all five options need text" in errors[6]
    (root / "neptune_full.json").write_text("[{broken")
    with pytest.raises(LvuError, match="not valid JSON"):
        bench(data=str(root)).load()


@pytest.mark.slow
def test_data_check_reports_counts_missing_videos_and_transcripts(tmp_path, videos):
    root = release(tmp_path / "chk", videos)
    dup = rec("dup/1", VID_A, answer_choice_3="Two")
    (root / "neptune_full.json").write_text(json.dumps(FULL + [dup]))
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "data", "check", "neptune", "--root", str(root)],
                         check=False, capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 1
    assert any("goneVideo01/1: video" in line and "not found" in line for line in lines)
    assert "neptune full: 7 questions, the paper has 3268" in lines
    assert "neptune full: 3 videos, the paper has 2405" in lines
    assert "dup/1: two options have the same text — the question cannot be answered" in lines
    assert lines[-1] == "neptune: 4 problem(s)"
    asr = NeptuneAsr(data=str(root), subset="mma").check()  # no asr/ folder yet
    assert len([p for p in asr if "subtitle file" in p]) == 2
    (root / "asr").mkdir()
    (root / "asr" / f"{VID_A}.srt").write_text("1\n00:00:00,500 --> 00:00:01,500\nhello\n")
    asr = NeptuneAsr(data=str(root), subset="mma").check()
    assert [p for p in asr if "subtitle" in p] == [f"{VID_B}/1: subtitle file {root}/asr/{VID_B}.srt not found"]


# ---- prompts and extraction ----------------------------------------------------------------------


def one(cls=Neptune, **settings):
    s = record_to_sample(rec("demo/1", VID_A), benchmark="neptune", ordinal=1, video_dir=Path("/v"), asr_dir=None)
    return cls(data="/nowhere", **settings), s


def test_prompts_are_pinned_byte_for_byte():
    q = "How many cats are visible in demo/1?"
    letters = "\n(A) One\n(B) Two\n(C) Three\n(D) Four\n(E) Five"
    b, s = one()
    assert b.prompt_text(s) == ("Carefully analyze the question and all available options then pick the most "
                                f"probable answer for this question\n{q}{letters}")
    p = b.build_prompt(s, [], [])
    assert (p.max_tokens, p.choices, p.question, p.temperature) == (300, OPTS, q, 0.0)
    b, _ = one(prompt="videollama2")
    assert b.prompt_text(s) == (f"Pick a correct option number to answer the question. Question: {q} Options: "
                                "(1) One\n(2) Two\n(3) Three\n(4) Four\n(5) Five:")
    b, _ = one(prompt="minigpt4-video")
    assert b.prompt_text(s) == (f"Question: select the correct option for this task: {q} Options: {letters[1:]}. "
                                "Output format: [OPTION]: [Reason]")
    assert b.build_prompt(s, [], []).max_tokens == 10
    b, _ = one(prompt="video-llava")
    assert b.prompt_text(s) == ("Pick a correct option to answer the question. "
                                f"Question: {q} Options: {letters[1:]} ASSISTANT:")
    b, _ = one(prompt="ma-lmm")
    assert b.prompt_text(s) == f"Question: select the best choice for this task: {q} Options: {letters[1:]} Answer:"
    b, _ = one(compat="lmms-eval")
    block = "A. One\nB. Two\nC. Three\nD. Four\nE. Five"
    assert b.prompt_text(s) == f"{q}\n{block}\nAnswer with only the option letter (A, B, C, D, or E)."
    assert b.build_prompt(s, [], []).max_tokens == 64
    b, _ = one(compat="lmms-eval", prompt="qwen3_vl")
    assert b.prompt_text(s) == f"Question: {q}\n{block}\nRespond with only one letter: A, B, C, D, or E."
    b, _ = one(NeptuneOpen)
    p = b.build_prompt(s, [], [])
    assert p.parts[-1].text == f"Question: {q}" and p.choices == [] and p.max_tokens == 300
    b, _ = one(NeptuneOpen, prompt="ma-lmm")
    assert b.prompt_text(s) == f"Question: {q} Answer:"


# (reply, official reading, lmms-eval's parser) with options One..Five; None = counted wrong.
REPLIES = [
    ("B", 1, 1),
    ("(b)", 1, 1),
    (" C. ", 2, 2),
    ("**D**", 3, 3),
    ("B) Two, because two cats appear", 1, 1),
    ("[E]: it happens at the end", 4, None),  # MiniGPT4-Video's own format; lmms-eval finds nothing
    ("The answer is (C)", 2, 2),
    ("Answer: D", 3, 3),
    ("Option A is wrong; the answer is C", 2, 2),
    ("The answer is C, not option A", 2, 2),
    ("(A) or (B)", 0, 1),  # official: first; lmms-eval: last match wins
    ("The answer is based on the video", None, 1),  # lmms-eval: no boundary after the letter -> B
    ("I answered the question", None, 4),  # lmms-eval: "ANSWERE..." -> E
    ("A man", None, 0),  # lmms-eval: bare letters in replies of <= 3 words
    ("E.g. the second one", None, 4),  # official: not an option id; lmms-eval: "E." anywhere
    ("Two", None, 1),  # lmms-eval: option text contained in the reply
    ("None of them", None, 0),  # lmms-eval: "one" is inside "none"
    ("the answer is a bit unclear", None, 0),
    ("I cannot tell from these frames.", None, None),
    ("", None, None),
]


@pytest.mark.parametrize(("reply", "official", "lmms"), REPLIES)
def test_extraction_table(reply, official, lmms):
    assert parse_option(reply) == official
    assert parse_lmms(reply, OPTS) == lmms
    for compat, expected in (("official", official), ("lmms-eval", lmms)):
        b, s = one(compat=compat)
        pred = b.extract(s, Response(text=reply))
        assert pred.value == expected
        score = b.score(s, pred)
        assert score.counted and score.value == float(expected == s.answer)


def test_option_numbers_for_videollama2():
    replies = ("3", "(3) Three", "Option 3 is right", "answer: 5", "C", "150 frames")
    assert [parse_option(t, "12345") for t in replies] == [2, 2, 2, 4, None, None]
    b, s = one(prompt="videollama2")
    assert b.extract(s, Response(text="The answer is 3")).value == 2
    assert b.score(s, Prediction(value=2)).explanation == "predicted 3, answer 3"


def test_youtube_ids():
    for v in ("abcDEF12345", "https://www.youtube.com/watch?v=abcDEF12345", "youtu.be/abcDEF12345",
              "https://www.youtube.com/shorts/abcDEF12345/", "https://youtube.com/embed/abcDEF12345?t=3"):
        assert youtube_id(v) == "abcDEF12345"


# ---- input plans -----------------------------------------------------------------------------


def test_frame_plans_follow_the_paper_and_lmms_eval(tmp_path):
    b, s = one()
    download = VideoMeta(1200.0, fps=30.0, num_frames=36000)  # a 20-minute 30 fps download: Neptune keeps 900 s
    times = b.plan(s, download).timestamps
    assert len(times) == 150 and times[0] == 0.0 and times[-1] == 26999 / 30
    assert times[1] == int(26999 / 149) / 30  # np.linspace(0, T-1, N, dtype=int)
    lm, _ = one(compat="lmms-eval")
    times = lm.plan(s, download).timestamps
    assert len(times) == 32 and times[-1] == 35999 / 30  # 32 frames over the whole file
    b1, _ = one(frames=1)
    assert b1.plan(s, download).timestamps == [0.0]  # "linearly subsample to 1" = the first frame
    assert one(frames="center")[0].plan(s, VideoMeta(100.0)).timestamps == [50.0]
    assert one(frames="first")[0].plan(s, VideoMeta(100.0)).timestamps == [0.0]
    assert one(frames="all")[0].plan(s, VideoMeta(1000.0)).timestamps == [float(t) for t in range(900)]
    assert one(frames=0)[0].plan(s, VideoMeta(100.0)).timestamps == []
    assert one(NeptuneAsr)[0].settings["frames"] == "1fps"
    assert one(compat="lmms-eval", frames=8)[0].settings["frames"] == 8


def test_settings_are_validated():
    cases = [({"compat": "vlmevalkit"}, "VLMEvalKit has no Neptune task"),
             ({"compat": "lmms"}, "compat='lmms' is unknown"),
             ({"subset": "mmx"}, "subset='mmx' is unknown"),
             ({"frames": "2fps"}, "frames='2fps' is not a frame setting"),
             ({"prompt": "gpt"}, "prompt='gpt' is unknown"),
             ({"compat": "lmms-eval", "frames": "1fps"}, "lmms-eval samples a frame count only"),
             ({"compat": "lmms-eval", "prompt": "gemini"}, "lmms-eval's Neptune blocks are default, qwen3_vl"),
             ({"compat": "lmms-eval", "subtitles": "all"}, "lmms-eval has no Neptune ASR input")]
    for settings, message in cases:
        with pytest.raises(LvuError, match=message):
            Neptune(**settings)
    with pytest.raises(LvuError, match="lmms-eval has no Neptune open-ended task"):
        NeptuneOpen(compat="lmms-eval")


def test_asr_transcript_is_interleaved_and_clipped_to_900s():
    b, s = one(NeptuneAsr)
    from lvu.types import Frame

    frames = [Frame(timestamp=t) for t in (0.0, 10.0)]
    cues = [Subtitle(text="hi", start=4.0, end=6.0), Subtitle(text="late", start=905.0, end=906.0)]
    p = b.build_prompt(s, frames, cues)
    assert [x.kind for x in p.parts] == ["frame", "subtitle", "frame", "text"]
    assert p.subtitles[0].text == "hi"


# ---- aggregation, open-ended, runs ---------------------------------------------------------------


def result(i, score, subsets, qtype, counted=True, error=None):
    return SampleResult(sample_id=f"q{i}", labels={"subset": subsets, "question_type": qtype},
                        score=score, counted=counted, error=error)


def test_aggregation_per_subset_and_question_type():
    results = [
        result(1, 1.0, ["full", "mma"], "Counting"),
        result(2, 0.0, ["full", "mma", "mmh"], "Counting"),
        result(3, 1.0, ["full", "mmh"], "Temporal Ordering"),
        result(4, None, ["full"], "Temporal Ordering", error="video not found"),  # failed: wrong
        result(5, 1.0, ["full"], "Cause And Effect", counted=False),  # not counted at all
        SampleResult(sample_id="neptune_full.json record 9", error="bad record"),  # the run's subset, wrong
    ]
    overall, qtypes = Neptune(data="/x").aggregate(results)
    assert overall.rows == [("full", 5, 40.0), ("mma", 2, 50.0), ("mmh", 2, 50.0)]
    assert qtypes.rows == [("Counting", 2, 50.0), ("Temporal Ordering", 2, 50.0), ("Unknown", 1, 0.0)]


def test_open_ended_stores_truncated_reply_unscored():
    b, s = one(NeptuneOpen)
    reply = " ".join(f"w{i}" for i in range(150))
    pred = b.extract(s, Response(text=reply))
    assert pred.value == " ".join(f"w{i}" for i in range(100))
    score = b.score(s, pred)
    assert (score.counted, score.correct, score.explanation) == (False, None, JUDGE_PENDING)
    assert s.extra["reference"] == "Three"
    tables = b.aggregate([SampleResult(sample_id="a", response=reply, counted=False)])
    assert tables[0].rows[0][:2] == (f"full: 1 responses stored, 0 failed; not judged yet ({JUDGE_PENDING})", 0)


if "neptune-test-echo" not in MODELS.names():

    @register_model("neptune-test-echo")
    class Echo(Model):
        """Answers every prompt with its own last text part."""

        async def generate(self, prompt, *, sample_id=""):
            return Response(text=[p for p in prompt.parts if isinstance(p, Text)][-1].text)


def test_runs_with_random_ocr_match_and_open_ended(tmp_path, videos):
    root = release(tmp_path / "run", videos)
    common = {"results_dir": tmp_path / "res", "show_progress": False, "report": False, "frame_cache": False}
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "neptune", "-m", "random", "--data", str(root),
                          "--frames", "4", "--results-dir", str(tmp_path / "cli"), "--no-report", "--no-cache"],
                         check=False, capture_output=True, text=True)
    assert out.returncode == 1 and "6 samples" in out.stdout and "1 failed" in out.stdout, out.stdout + out.stderr
    assert "goneVideo01" in out.stderr and "mma" in out.stdout and "Temporal Ordering" in out.stdout
    summary = run_engine("neptune", "random", settings={"data": str(root), "frames": 4}, **common)
    assert summary.n_total == 6 and summary.n_failed == 1
    assert [r[:2] for r in summary.tables[0].rows] == [("full", 5), ("mma", 2), ("mmh", 2)]  # missing video: left out
    pytest.importorskip("rapidocr")
    summary = run_engine("neptune", "ocr-match", settings={"data": str(root), "frames": 2, "subset": "mma"},
                         model_args={"cache": str(tmp_path / "ocr")}, **common)
    assert summary.n_total == 2 and summary.n_failed == 0
    (root / "asr").mkdir()
    for vid in (VID_A, VID_B):
        (root / "asr" / f"{vid}.vtt").write_text("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nsaid aloud\n")
    summary = run_engine("neptune-asr", "random", settings={"data": str(root), "subset": "mma"}, **common)
    stored = Store(tmp_path / "res").results(summary.run_id)
    assert summary.n_failed == 0 and [r.frame_timestamps for r in stored] == [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]
    assert stored[0].prompt["order"] == "FFSFFT" and "said aloud" in stored[0].prompt["text"]
    summary = run_engine("neptune-open", "neptune-test-echo", settings={"data": str(root), "frames": 3}, **common)
    assert summary.n_failed == 1  # the missing video only
    assert summary.tables[0].rows[0][:2] == (f"full: 5 responses stored, 0 failed, 1 data error(s) left out; "
                                             f"not judged yet ({JUDGE_PENDING})", 0)


def test_lvu_score_reads_lvu_and_lmms_eval_lines(tmp_path, videos):
    root = release(tmp_path / "sc", videos)
    preds = tmp_path / "preds.jsonl"
    lines = [{"sample_id": f"{VID_A}/1", "response": "A"},  # right (answer 0)
             {"doc": {"key": f"{VID_B}/1"}, "resps": [["The answer is based on (D)"]]},  # lmms log, right
             {"doc": {"key": f"{VID_A}/2"}, "filtered_resps": ["Two"]}]  # right only for lmms-eval
    preds.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    b = Neptune(data=str(root))
    assert [r.score for r in score_saved(b, b.read_predictions(preds))] == [1.0, 1.0, 0.0]
    b = Neptune(data=str(root), compat="lmms-eval")
    results = score_saved(b, b.read_predictions(preds))
    assert [r.score for r in results] == [1.0, 0.0, 1.0]  # same 2/3, different questions
    overall = b.aggregate(results)[0]
    assert overall.rows[0][:2] == ("full", 3) and math.isclose(overall.rows[0][2], 200 / 3)
    preds.write_text('{"doc": {"key": "nope/1"}, "resps": [["A"]]}\n')
    with pytest.raises(LvuError, match="preds.jsonl:1: not a prediction line with a known Neptune key"):
        Neptune(data=str(root)).read_predictions(preds)


def test_reference_rows_are_runnable_settings():
    assert BENCHMARKS.get("neptune").reference is REFERENCE
    acc = {(r["model"], r["setting"]): r for r in REFERENCE if r["metric"] == "accuracy"}
    assert acc[("Gemini-1.5-pro", "RGB (all frames + ASR)")]["full"] == 80.66
    assert acc[("Gemini-1.5-pro", "RGB (150 frames)")]["mmh"] == 66.70
    assert len([r for r in REFERENCE if r["table"] == "Table 3"]) == 15 + 14  # 15 accuracy rows, 14 GEM rows
    for r in REFERENCE:
        cls = BENCHMARKS.get(r["task"])
        b = cls(data="/x", frames=r["frames"], subtitles=r["subtitles"])
        assert b.settings["frames"] == r["frames"]
