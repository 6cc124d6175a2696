"""LVBench under its official protocol: the release JSONL, polish_answer, multi-label Table 2.

Fixtures are written here in the release format (video_info.meta.jsonl, <key>.mp4 made with PyAV,
a video2dataset folder with its .json sidecar); nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from lvu.benchmarks import lvbench
from lvu.benchmarks.lvbench import (
    LvbenchBenchmark,
    lmms_extract_mcq,
    parse_time_reference,
    polish_answer,
)
from lvu.errors import DataError, LvuError
from lvu.media.testing import make_video
from lvu.runs.engine import score_saved, video_meta
from lvu.types import Frame, Response, SampleResult

INSTRUCTION = ("Please select the best answer from the options above and directly provide the letter "
               "representing your choice without giving any explanation.")
Q55 = "What year appears in the opening caption of the video?\n(A) 1636\n(B) 1366\n(C) 1363\n(D) 1633"


def qa(uid, question, answer, types_, ref="00:15-00:19") -> dict:
    return {"uid": uid, "question": question, "answer": answer, "question_type": types_, "time_reference": ref}


def video_line(key: str, vtype: str, qas: list[dict], minutes: float = 61.5) -> str:
    info = {"duration_minutes": minutes, "fps": 5.0, "resolution": {"width": 96, "height": 64}}
    return json.dumps({"key": key, "type": vtype, "qa": qas, "video_info": info})


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    """An LVBench folder: data/video_info.meta.jsonl, two videos under videos/, one video missing."""
    lines = [
        video_line("Cm73ma6Ibcs", "cartoon", [
            qa("55", Q55, "D", ["key information retrieval"]),
            qa(56, "Who speaks first?\nSecond line (A) inside\n(A) The man (in red)\n(B)  Two spaces\n(C) C\n(D) D",
               "A", ["entity recognition", "reasoning"], "1:02:03-1:02:13, 10:00-10:30"),
        ]),
        video_line("sportKEY01", "sport", [qa("57", "What is the score?\n(A) 1\n(B) 2\n(C) 3\n(D) 4", "B",
                                              ["temporal grounding", "key information retrieval"], "")]),
        video_line("goneVIDEO1", "tv", [qa("58", "Where?\n(A) a\n(B) b\n(C) c\n(D) d", "C", ["summarization"])]),
    ]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "video_info.meta.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "videos").mkdir()
    make_video(tmp_path / "videos" / "Cm73ma6Ibcs", seconds=4, fps=5, gop=5, size=(96, 64))
    make_video(tmp_path / "videos" / "sportKEY01", seconds=3, fps=5, gop=5, size=(96, 64), container="mkv")
    return tmp_path


def test_loader_parses_options_labels_and_clues_exactly(release):
    bench = LvbenchBenchmark(data=str(release))  # the folder: finds data/video_info.meta.jsonl
    samples, bad = bench.load()
    assert bad == []
    by = {s.id: s for s in samples}
    assert list(by) == ["55", "56", "57", "58"]  # ids are str(uid), int uids included
    s = by["55"]
    assert (s.question, s.options, s.answer) == ("What year appears in the opening caption of the video?",
                                                 ["1636", "1366", "1363", "1633"], 3)
    assert s.labels == {"question_type": ["KIR"], "video_type": "Cartoon", "clue_length": "0-10 s",
                        "video_length": "60-90 min"}
    assert s.extra["question_raw"] == Q55 and s.extra["answer_letter"] == "D"
    assert s.extra["clue_spans"] == [[15.0, 19.0]] and s.extra["clue_seconds"] == 4.0
    assert s.extra["duration_s"] == 61.5 * 60 and s.video.duration is None  # plans use the user's copy
    assert s.video.path == str((release / "videos" / "Cm73ma6Ibcs.mp4").resolve())
    m = by["56"]  # a stem with its own newline and "(A)", an option with parentheses, two spaces kept as one
    assert m.question == "Who speaks first?\nSecond line (A) inside"
    assert m.options == ["The man (in red)", " Two spaces", "C", "D"]
    assert m.labels["question_type"] == ["ER", "Rea"]
    assert m.extra["clue_spans"] == [[3723.0, 3733.0], [600.0, 630.0]] and m.extra["clue_seconds"] == 40.0
    assert by["57"].video.path.endswith("sportKEY01.mkv") and by["57"].labels["video_type"] == "Sports"
    assert by["57"].extra["clue_seconds"] is None and by["58"].labels["video_type"] == "TV Show"
    assert parse_time_reference("00:00-01:16") == [(0.0, 76.0)]


def test_video2dataset_layout_is_found_through_its_sidecars(release):
    shard = release / "scripts" / "videos" / "00000"
    shard.mkdir(parents=True)
    make_video(shard / "000000002", seconds=1, fps=5, gop=5, size=(64, 48))
    (shard / "000000002.json").write_text(json.dumps({"url": "https://www.youtube.com/watch?v=goneVIDEO1",
                                                      "key": "000000002", "status": "success"}))
    (release / "videos" / "Cm73ma6Ibcs.mp4").rename(shard / "000000000.mp4")
    (shard / "000000000.json").write_text(json.dumps({"url": "https://www.youtube.com/watch?v=Cm73ma6Ibcs"}))
    samples, _ = LvbenchBenchmark(data=str(release / "data" / "video_info.meta.jsonl"),
                                  video_dir=str(release / "scripts" / "videos")).load()
    paths = {s.id: Path(s.video.path) for s in samples}
    assert paths["55"] == shard / "000000000.mp4" and paths["58"] == shard / "000000002.mp4"
    assert paths["57"] == release / "scripts" / "videos" / "sportKEY01.mp4"  # not there: the expected name


def test_bad_records_are_one_line_each_and_spare_the_rest(tmp_path):
    path = tmp_path / "video_info.meta.jsonl"
    path.write_text("\n".join([
        video_line("good000001", "cartoon", [qa("1", Q55, "D", ["reasoning"]),
                                             qa("2", Q55, "E", ["reasoning"]),
                                             qa("3", "No options here?", "A", ["reasoning"]),
                                             {"uid": "4", "question": Q55}]),
        '{"key": "half", "qa": [',
        json.dumps({"type": "cartoon", "qa": []}),
        json.dumps({"key": "k2", "qa": "nope"}),
    ]) + "\n")
    samples, bad = LvbenchBenchmark(data=str(path)).load()
    assert [s.id for s in samples] == ["1"]
    errors = [b.error for b in bad]
    assert len(errors) == 6 and all("\n" not in e and " — " in e for e in errors)
    assert f"{path}:1: uid 2 (video good000001): answer 'E' is not one of A, B, C, D" in errors[0]
    assert "uid 3" in errors[1] and "option lines" in errors[1]
    assert "uid 4" in errors[2] and "no answer" in errors[2]
    assert errors[3].startswith(f"{path}:2: not valid JSON")
    assert errors[4].startswith(f"{path}:3: no 'key'") and errors[5].startswith(f"{path}:4: video k2: 'qa' is a str")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no video_info.meta.jsonl"):
        LvbenchBenchmark(data=str(tmp_path / "empty")).load()


@pytest.mark.slow
def test_data_check_reports_each_problem_once(release):
    meta = release / "data" / "video_info.meta.jsonl"
    meta.write_text(meta.read_text() + video_line("dupVIDEO01", "cartoon", [qa("55", Q55, "A", ["Speed reading"])]))
    problems = LvbenchBenchmark(data=str(release)).check()
    assert problems[0].startswith("uid 55: repeated (videos Cm73ma6Ibcs and dupVIDEO01)")
    assert problems[1].startswith("question_type 'Speed reading' (1 questions) is not one of")
    missing = [p for p in problems if "not found" in p]
    assert len(missing) == 2 and missing[0].startswith("video goneVIDEO1: ") and "(1 questions)" in missing[0]
    assert problems[-1] == ("lvbench: 5 questions in 4 videos; the paper has 1,549 in 103 — "
                            "is this the complete video_info.meta.jsonl?")
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "data", "check", "lvbench", "--root", str(release)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 1 and "lvbench: 5 problem(s)" in out.stdout


def test_data_check_passes_a_complete_release(tmp_path):
    (tmp_path / "videos").mkdir()
    lines, uid = [], 0
    for v in range(103):  # 1,549 = 103 * 15 + 4
        key = f"vid{v:08d}"
        (tmp_path / "videos" / f"{key}.mp4").touch()
        qas = [qa(str(uid := uid + 1), Q55, "A", ["reasoning"]) for _ in range(15 + (v < 4))]
        lines.append(video_line(key, "documentary", qas))
    (tmp_path / "video_info.meta.jsonl").write_text("\n".join(lines))
    assert LvbenchBenchmark(data=str(tmp_path)).check() == []


def test_prompts_are_pinned(release):
    frames = [Frame(timestamp=0.5), Frame(timestamp=1.5)]
    sample = LvbenchBenchmark(data=str(release)).load()[0][0]
    prompt = LvbenchBenchmark().build_prompt(sample, frames, [])
    assert prompt.summary()["order"] == "FFT" and prompt.system is None and prompt.assistant_prefix is None
    assert prompt.parts[-1].text == (
        "What year appears in the opening caption of the video?\n(A) 1636\n(B) 1366\n(C) 1363\n(D) 1633\n"
        "Please select the best answer from the options above and directly provide the letter representing "
        "your choice without giving any explanation.")
    assert lvbench.PROMPT_INSTRUCTION == INSTRUCTION
    assert prompt.choices == ["1636", "1366", "1363", "1633"] and prompt.question == sample.question
    lmms = LvbenchBenchmark(compat="lmms-eval").build_prompt(sample, frames, [])
    assert lmms.parts[-1].text == Q55 + "\nAnswer the question with the option letter" and lmms.max_tokens == 16


# (model reply, official polish_answer, official correct for answer "B", lmms-eval letter)
TRICKY = [
    ("B", "B", True, "B"),
    ("(B)", "B", True, "B"),
    ("B. Two cats", "B", True, "B"),
    ("  \n(B) Two cats\n", "B", True, "B"),
    ("The answer is (B).", "B", True, "B"),
    ("( B )", "B", True, "B"),
    ("B\nbecause the sign says so", "B", True, "B"),
    ("Answer: B", "A", False, "B"),  # quirk: first word "Answer:" -> "A"
    ("The answer is B", "T", False, "B"),  # quirk: no parenthesis -> first word's first letter
    ("Option B", "O", False, "B"),
    ("**B**", "*", False, "B"),
    ("b", "b", False, ""),  # case-sensitive comparison in the official scorer
    ("A man in red (B)", "B", True, "A"),  # lmms-eval: a leading letter outranks "(B)"
    ("(A) or (B)", "A", False, "B"),  # lmms-eval: later position wins among "(X)"
    ("None of the above options are correct", "N", False, ""),  # Gemini's 20.9%: outside the options
    ("I cannot answer this question", "I", False, ""),
    ("", "", False, ""),
    ("()", "", False, ""),
]


@pytest.mark.parametrize(("reply", "polished", "correct", "lmms"), TRICKY)
def test_extraction_on_tricky_replies(release, reply, polished, correct, lmms):
    assert polish_answer(reply) == polished and lmms_extract_mcq(reply) == lmms
    sample = LvbenchBenchmark(data=str(release)).load()[0][2]  # uid 57, answer B
    official = LvbenchBenchmark()
    pred = official.extract(sample, Response(text=reply))
    assert pred.value == ("ABCD".index(polished) if polished in ("A", "B", "C", "D") else polished or None)
    score = official.score(sample, pred)
    assert (score.correct, score.value, score.counted) == (correct, float(correct), True)
    compat = LvbenchBenchmark(compat="lmms-eval")
    assert compat.score(sample, compat.extract(sample, Response(text=reply))).correct is (lmms == "B")


def result(uid, score, qtypes, vtype, error=None) -> SampleResult:
    return SampleResult(sample_id=uid, labels={"question_type": qtypes, "video_type": vtype},
                        score=None if error else score, prediction=None if error else (1 if score else "N"),
                        error=error)


RESULTS = [
    result("1", 1.0, ["ER", "Rea"], "Cartoon"),
    result("2", 0.0, ["ER"], "Cartoon"),
    result("3", 1.0, ["KIR", "TG"], "Sports"),
    result("4", 1.0, ["Sum"], "Sports"),
    result("5", 0.0, ["Rea", "Rea"], "Documentary"),  # a repeated type counts twice, as in compute_accuracy
    result("6", 0.0, ["TG"], "Cartoon", error="6: video x.mp4 not found"),
]


def test_aggregation_in_the_papers_layout():
    tables = {t.title: t.rows for t in LvbenchBenchmark().aggregate(RESULTS)}
    assert tables["overall"] == [("all", 5, 60.0)]  # the failed uid is skipped, as the scorer skips it
    assert tables["Table 2: core capabilities"] == [
        ("ER", 2, 50.0), ("KIR", 1, 100.0), ("TG", 1, 100.0), ("Rea", 3, 100 / 3), ("Sum", 1, 100.0),
        ("Overall", 5, 60.0)]
    assert tables["Table 3: video categories"] == [
        ("Sports", 2, 100.0), ("Documentary", 1, 0.0), ("Cartoon", 2, 50.0), ("Overall", 5, 60.0)]
    left = tables["left out (no answer: the official scorer skips missing uids)"]
    assert left[0][:2] == ("failed samples", 1)
    lmms = {t.title: t.rows for t in LvbenchBenchmark(compat="lmms-eval").aggregate(RESULTS)}
    assert lmms["overall"] == [("all", 6, 50.0)]  # lmms-eval: a failed sample is a wrong answer
    assert ("TG", 2, 50.0) in lmms["Table 2: core capabilities"]


def test_submission_files_and_scoring_an_answer_file(release, tmp_path):
    bench = LvbenchBenchmark(data=str(release))
    path = bench.write_submission(RESULTS, tmp_path / "out" / "result.json")
    assert json.loads(path.read_text()) == {"ER": 0.5, "KIR": 1.0, "TG": 1.0, "Rea": 1 / 3, "Sum": 1.0,
                                            "Overall": 0.6}
    assert json.loads((tmp_path / "out" / "result_answers.json").read_text()) == {
        "1": "B", "2": "N", "3": "B", "4": "B", "5": "N"}
    answers = tmp_path / "answers.json"  # the official scorer's input, compared as written
    answers.write_text(json.dumps({"55": "D", "56": "A.", "57": "b", "999": "A"}))
    scored = {r.sample_id: r for r in score_saved(bench, bench.read_predictions(answers))}
    assert set(scored) == {"55", "56", "57"}  # uid 58 has no answer: skipped; 999 is unknown: ignored
    assert (scored["55"].correct, scored["56"].correct, scored["57"].correct) == (True, False, False)
    assert bench.aggregate(list(scored.values()))[0].rows == [("all", 3, 100 / 3)]
    log = tmp_path / "samples_lvbench.jsonl"  # an lmms-eval sample log
    log.write_text(json.dumps({"doc_id": 0, "doc": {"uid": "57"}, "resps": [["(B) 2"]], "filtered_resps": ["(B) 2"]}))
    assert [(s.id, text) for s, text in bench.read_predictions(log)] == [("57", "(B) 2")]
    with pytest.raises(DataError, match="none of its 1 uids"):
        bad = tmp_path / "other.json"
        bad.write_text('{"x1": "A"}')
        bench.read_predictions(bad)


def test_settings_and_frame_plans(release):
    samples = {s.id: s for s in LvbenchBenchmark(data=str(release)).load()[0]}
    s = samples["55"]  # 4 s at 5 fps: 20 frames
    assert LvbenchBenchmark(frames=4).plan(s, video_meta(s)).timestamps == [0.5, 1.5, 2.5, 3.5]
    assert LvbenchBenchmark(frames=4, compat="lmms-eval").plan(s, video_meta(s)).timestamps == [0.0, 1.2, 2.4, 3.8]
    assert LvbenchBenchmark(fps=1, frames=3600).plan(s, video_meta(s)).timestamps == [0.0, 1.0, 2.0, 3.0]
    assert LvbenchBenchmark(fps=1, frames=2).plan(s, video_meta(s)).timestamps == [1.0, 3.0]  # capped: downsampled
    plan = LvbenchBenchmark(frames=0).plan(s, video_meta(s))
    assert plan.timestamps == [] and plan.subtitle_mode == "none"
    for bad, match in [({"compat": "lmms"}, "compat='lmms' is unknown"), ({"compat": "vlmevalkit"}, "no LVBench task"),
                       ({"frames": -1}, "not a frame count"), ({"fps": 0}, "not a positive rate"),
                       ({"subtitles": "all"}, "no setting")]:
        with pytest.raises(LvuError, match=match):
            LvbenchBenchmark(**bad)


def test_hub_rows_map_through_the_same_mapper(monkeypatch, tmp_path):
    calls = []
    video_row = {"key": "Cm73ma6Ibcs", "type": "cartoon", "video_info": {"duration_minutes": 70.0, "fps": 30.0},
                 "qa": {"uid": ["55", "56"], "question": [Q55, Q55], "answer": ["D", "A"],  # column-wise, as
                        "question_type": [["key information retrieval"], ["reasoning"]],  # datasets may give
                        "time_reference": ["00:15-00:19", "01:00-01:30"]}}
    flat_row = {"key": "k2", "type": "tv", "uid": 60, "question": Q55, "answer": "B",
                "question_type": ["summarization"], "time_reference": "", "video_path": "videos/k2.mp4"}

    def load_dataset(repo, **kw):
        calls.append((repo, kw))
        return [video_row] if repo == "THUDM/LVBench" else [flat_row]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    samples, bad = LvbenchBenchmark(video_dir=str(tmp_path)).load()
    assert bad == [] and calls[0] == ("THUDM/LVBench", {"split": "train", "revision": lvbench.HUB_REVISION,
                                                        "data_files": "video_info.meta.jsonl"})
    assert [(s.id, s.answer, s.labels["question_type"]) for s in samples] == [("55", 3, ["KIR"]), ("56", 0, ["Rea"])]
    assert samples[0].video.path == str((tmp_path / "Cm73ma6Ibcs.mp4").resolve())
    flat, _ = LvbenchBenchmark(data="hf:lmms-eval/LVBench@abc123", video_dir=str(tmp_path)).load()
    assert calls[1] == ("lmms-eval/LVBench", {"split": "train", "revision": "abc123"})
    assert flat[0].id == "60" and flat[0].video.path == str((tmp_path / "videos" / "k2.mp4").resolve())
    monkeypatch.setenv("LVU_OFFLINE", "1")
    with pytest.raises(LvuError, match="LVU_OFFLINE is set"):
        LvbenchBenchmark().load()
    monkeypatch.delenv("LVU_OFFLINE")
    monkeypatch.setitem(sys.modules, "datasets", None)  # not installed
    with pytest.raises(LvuError, match=r"pip install 'lvu\[hub\]'"):
        LvbenchBenchmark().load()


def word_video(path: Path, shown: dict[int, str], seconds: int = 8, fps: int = 2) -> None:
    """A video whose frames show `shown[second]` as large text (for the OCR baseline)."""
    font = ImageFont.load_default(size=44)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = 384, 216, "yuv420p"
        for i in range(seconds * fps):
            img = Image.new("RGB", (384, 216), (90, 110, 130))
            if word := shown.get(i // fps):
                draw = ImageDraw.Draw(img)
                draw.rounded_rectangle((50, 60, 330, 140), radius=8, fill=(245, 245, 235))
                draw.text((70, 75), word, font=font, fill=(20, 20, 20))
            out.mux(stream.encode(av.VideoFrame.from_ndarray(np.asarray(img), format="rgb24")))
        out.mux(stream.encode())


@pytest.mark.slow
def test_lvu_run_with_random_and_ocr_match(release, tmp_path):
    word_video(release / "videos" / "wordVIDEO1.mp4", {4: "LANTERN", 5: "LANTERN"})
    meta = release / "data" / "video_info.meta.jsonl"
    meta.write_text(meta.read_text() + video_line("wordVIDEO1", "selfmedia", [
        qa("90", "What word is shown on screen at 00:05?\n(A) MAGNET\n(B) OLIVE\n(C) LANTERN\n(D) PRISM", "C",
           ["key information retrieval"], "00:04-00:06")]) + "\n")
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache")}

    def lvu(*args):
        return subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "lvbench", "--data", str(release),
                               "--results-dir", str(tmp_path / "res"), "--no-report", *args],
                              capture_output=True, text=True, env=env, check=False)

    out = lvu("-m", "random", "--frames", "4")
    assert out.returncode == 1, out.stderr  # goneVIDEO1 is missing: its question fails alone
    assert "5 samples" in out.stdout and "1 failed" in out.stdout and "goneVIDEO1" in out.stderr
    assert "Table 2: core capabilities" in out.stdout and "Lifestyle" in out.stdout
    pytest.importorskip("rapidocr")
    out = lvu("-m", "ocr-match", "--frames", "4")
    assert "Overall" in out.stdout, out.stderr
    export = subprocess.run([sys.executable, "-m", "lvu.cli", "results", "export", "--format", "jsonl",
                             "--results-dir", str(tmp_path / "res")],
                            capture_output=True, text=True, env=env, check=False)
    rows = {r["sample_id"]: r for r in map(json.loads, export.stdout.splitlines())}
    assert rows["90"]["response"] == "C" and rows["90"]["correct"] is True  # read off the frame at 5 s
