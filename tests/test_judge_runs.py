"""Judges wired into runs: `lvu run -b neptune-open --judge` against a local OpenAI-compatible server
(model and judge), `lvu judge score` post hoc giving the same numbers, resumability, MLVU generation
judging with the official aggregation, LLM choice extraction, and `lvu judge calibrate` / `eval`."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.benchmarks.neptune import NeptuneOpen
from lvu.media.testing import make_video
from lvu.models.testing_server import FakeOpenAIServer
from lvu.api import run
from lvu.runs.store import Store
from lvu.types import SampleResult

VID = "vidJUDGE001"
QUESTIONS = [("What does the chef add first?", "salt"), ("Where does the walk end?", "at the lake"),
             ("What colour is the kite?", "red"), ("Who opens the door?", "the child")]
P_TRUE = {True: 0.8, False: 0.3}
"""The fake judge's P(TRUE) for a candidate that contains the reference / does not."""


def user_text(body: dict) -> str:
    user = next(m for m in body["messages"] if m["role"] == "user")
    content = user["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def gem_fields(text: str) -> tuple[str, str]:
    cand = re.search(r'Candidate Answer: "(.*)"\n', text).group(1)
    ref = re.search(r'Reference Answer: "(.*)"\n', text).group(1)
    return cand, ref


def model_reply(question: str) -> str:
    """The 'VLM': right (contains the reference) on even questions, vague on odd ones."""
    i = next(i for i, (q, _) in enumerate(QUESTIONS) if q in question)
    return f"I think it is {QUESTIONS[i][1]}." if i % 2 == 0 else "Hard to say from the video."


def answer(body: dict) -> str:
    text = user_text(body)
    if "Answer Equivalence Instructions" in text:
        cand, ref = gem_fields(text)
        return " TRUE" if ref in cand else " FALSE"
    if "Decide which option the response chooses" in text:
        return "C" if "the third one" in text else "Z"
    if "##TASK DESCRIPTION" in str(body["messages"][0].get("content")):
        return MLVU_REPLIES[text.split("Respondent's Answer: ")[1].strip()]
    if "Question:" in text and any(q in text for q, _ in QUESTIONS):
        return model_reply(text)
    return "I'd say the third one."  # MCQ prompts: no option letter


def token_logprobs(body: dict) -> list[dict[str, float]] | None:
    if "Answer Equivalence Instructions" not in user_text(body):
        return None
    cand, ref = gem_fields(user_text(body))
    p = P_TRUE[ref in cand]
    return [{" TRUE": math.log(p), " FALSE": math.log(1 - p)}]


@pytest.fixture()
def server():
    with FakeOpenAIServer(answer=answer, token_logprobs=token_logprobs) as s:
        yield s


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    return {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_OFFLINE": "1", "COLUMNS": "300",
            "LVU_RESULTS_DIR": str(tmp_path / "results")}  # where `judge calibrate` keeps its dev-row ledger


@pytest.fixture()
def neptune_root(tmp_path) -> Path:
    root = tmp_path / "neptune"
    (root / "videos").mkdir(parents=True)
    make_video(root / "videos" / f"{VID}.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
    records = []
    for i, (question, ref) in enumerate(QUESTIONS):
        opts = [ref, "blue", "the dog", "pepper", "at home"]
        records.append({"key": f"{VID}/{i + 1}", "video_id": VID if i < 3 else "missingVid01", "question": question,
                        "answer": ref, "answer_id": 0, "question type": "Counting" if i % 2 else "Cause And Effect",
                        **{f"answer_choice_{j}": o for j, o in enumerate(opts)}})
    (root / "neptune_full.json").write_text(json.dumps(records))
    (root / "neptune_mma.json").write_text(json.dumps(records[:2]))
    return root


def args(server, name: str) -> list[str]:
    return ["base_url=" + server.base_url, "model=" + name, "cache=false"]


def lvu(*argv: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env,
                          check=False)


def judged_view(results: list[SampleResult]) -> dict[str, tuple]:
    return {r.sample_id: (r.score, r.correct, r.counted, r.error, r.judge and r.judge["value"],
                          r.judge and r.judge["verdict"], r.judge and r.judge["method"]) for r in results}


@pytest.mark.slow
def test_neptune_open_run_with_a_judge_and_post_hoc_judging_agree(tmp_path, server, env, neptune_root):
    model_args = [x for a in args(server, "vlm") for x in ("-a", a)]
    judge_args = [x for a in args(server, "gem-judge") for x in ("-J", a)]
    out = lvu("run", "-b", "neptune-open", "-m", "openai", *model_args, "--data", str(neptune_root), "--frames", "2",
              "--judge", "openai", *judge_args, "--results-dir", str(tmp_path / "inline"), "--no-report",
              "--no-cache", env=env)
    assert out.returncode == 1, out.stdout + out.stderr  # the question on the missing video fails
    identity = (f"openai:gem-judge (base_url={server.base_url}, logprobs=True, top_logprobs=5) "
                "threshold=0.5 (uncalibrated default)")  # cache=false is run-neutral: not part of it
    assert f"{identity} — verdicts from logprobs" in out.stdout
    inline_store = Store(tmp_path / "inline")
    inline_run = inline_store.runs()[0]
    inline = inline_store.results(inline_run.run_id)
    assert inline_run.env["judge"]["identity"] == identity and "judge" not in inline_run.spec.model_dump()

    by_id = {r.sample_id: r for r in inline}
    for i in range(3):
        r = by_id[f"{VID}/{i + 1}"]
        assert r.judge["value"] == pytest.approx(P_TRUE[i % 2 == 0]) and r.judge["method"] == "logprobs"
        assert (r.score, r.correct, r.counted) == ((1.0, True, True) if i % 2 == 0 else (0.0, False, True))
        assert "GEM-style: P(equivalent)=" in r.explanation
    missing = by_id[f"{VID}/4"]  # its video is not there: a data error, left out of the score
    assert missing.error and missing.judge is None and missing.data_error and not missing.counted

    bench = NeptuneOpen(data=str(neptune_root))
    overall, qtypes, prob, judges = bench.aggregate(inline)
    assert overall.rows == [("full", 3, pytest.approx(200 / 3)), ("mma", 2, 50.0)]  # 2 of the 3 with a video
    assert qtypes.rows == [("Cause And Effect", 2, 100.0), ("Counting", 1, 0.0)]
    assert prob.rows[0] == ("full", 3, pytest.approx(100 * (0.8 + 0.3 + 0.8) / 3))
    assert judges.title == "judge" and judges.rows == [(f"{identity} — verdicts from logprobs", 3, pytest.approx(200 / 3))]

    # the same run without a judge, then judged post hoc: the same numbers
    plain = run("neptune-open", "openai", settings={"data": str(neptune_root), "frames": 2},
                model_args=dict(a.split("=", 1) for a in args(server, "vlm")), results_dir=tmp_path / "posthoc",
                show_progress=False, report=False, frame_cache=False)
    assert plain.run_id == inline_run.run_id  # the judge is not part of the run id
    assert "not judged yet" in plain.tables[0].rows[0][0]
    n_before = len(server.chat_requests())
    out = lvu("judge", "score", plain.run_id, "--judge", "openai", *judge_args, "--results-dir",
              str(tmp_path / "posthoc"), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "judged 3, skipped 0" in out.stdout and len(server.chat_requests()) == n_before + 3
    posthoc_store = Store(tmp_path / "posthoc")
    posthoc = posthoc_store.results(plain.run_id)
    assert judged_view(posthoc) == judged_view(inline)
    assert [t.rows for t in bench.aggregate(posthoc)] == [t.rows for t in bench.aggregate(inline)]
    assert posthoc_store.run(plain.run_id).env["judge"]["via"] == "lvu judge score"

    # resumable: nothing left for this judge; --fresh judges again; another threshold is another judge
    out = lvu("judge", "score", plain.run_id, "--judge", "openai", *judge_args, "--results-dir",
              str(tmp_path / "posthoc"), env=env)
    assert "judged 0, skipped 3" in out.stdout and len(server.chat_requests()) == n_before + 3
    out = lvu("judge", "score", plain.run_id, "--judge", "openai", *judge_args, "--fresh", "--results-dir",
              str(tmp_path / "posthoc"), env=env)
    assert "judged 3, skipped 0" in out.stdout
    out = lvu("judge", "score", plain.run_id, "--judge", "openai", *judge_args, "--threshold", "0.9",
              "--results-dir", str(tmp_path / "posthoc"), env=env)
    assert "judged 3, skipped 0" in out.stdout
    strict = Store(tmp_path / "posthoc").results(plain.run_id)
    assert sum(r.score or 0 for r in strict) == 0 and all("threshold=0.9 (given)" in r.judge["judge"]
                                                          for r in strict if r.judge)


def test_a_judge_failure_fails_the_sample_and_is_retried_post_hoc(tmp_path, server, env, neptune_root):
    judge_args = dict(a.split("=", 1) for a in args(server, "gem-judge"))
    common = {"settings": {"data": str(neptune_root), "frames": 0, "subset": "mma"},
              "model_args": dict(a.split("=", 1) for a in args(server, "vlm")), "results_dir": tmp_path / "r",
              "show_progress": False, "report": False, "frame_cache": False}
    original = server.answer

    def empty_for_one(body):  # the judge returns nothing for the vague reply
        text = user_text(body)
        return "" if "Answer Equivalence" in text and "Hard to say" in text else original(body)

    server.answer = empty_for_one
    summary = run("neptune-open", "openai", judge="openai", judge_args={**judge_args, "max_retries": 0}, **common)
    failed = dict(summary.errors)
    assert list(failed) == [f"{VID}/2"] and failed[f"{VID}/2"].startswith("judge failed: openai: empty response")
    stored = {r.sample_id: r for r in Store(tmp_path / "r").results(summary.run_id)}
    assert stored[f"{VID}/2"].response == "Hard to say from the video."  # the reply is kept
    server.answer = original
    again = run("neptune-open", "openai", judge="openai", judge_args=judge_args, **common)  # resume
    assert again.n_failed == 0 and again.tables[0].rows[0] == ("mma", 2, 50.0)


def write_mlvu(root: Path, video: Path) -> Path:
    """A dev release with two SSC and two VS questions (json/8_sub_scene.json, json/9_summary.json)."""
    (root / "json").mkdir(parents=True)
    ssc = [{"video": f"ssc{i}.mp4", "duration": 2.0, "question": f"Describe scene {i}.", "answer": f"scene {i}",
            "question_type": "subPlot", "scoring_points": [f"point {i}a", f"point {i}b"]} for i in range(2)]
    vs = [{"video": f"vs{i}.mp4", "duration": 2.0, "question": f"Please summarize video {i}.",
           "answer": f"summary {i}", "question_type": "summary"} for i in range(2)]
    for stem, records in (("8_sub_scene", ssc), ("9_summary", vs)):
        (root / "json" / f"{stem}.json").write_text(json.dumps(records))
        folder = root / "video" / stem
        folder.mkdir(parents=True)
        for r in records:
            (folder / r["video"]).symlink_to(video)
    return root


MLVU_REPLIES = {
    "caption 0": "Rationale.\n{'score_accuracy': 3.5, 'score_relevance': 4, 'total_score': 7.5}",
    "caption 1": '{"score_accuracy": 1, "score_relevance": 5, "total_score": 6}',
    "summary 0": "{'score_completeness': 4, 'score_reliability': 5, 'total_score': 9}",
    "summary 1": "I cannot score this summary.",  # unparsed: counts 0 + 0, the item stays in the mean
}


def test_mlvu_generation_judged_with_the_official_aggregation(tmp_path, server, env, tmp_video):
    video = tmp_video(seconds=2, fps=10, gop=10, size=(64, 48)).path
    root = write_mlvu(tmp_path / "mlvu", video)
    replies = {"Describe scene 0.": "caption 0", "Describe scene 1.": "caption 1",
               "Please summarize video 0.": "summary 0", "Please summarize video 1.": "summary 1"}
    original = server.answer

    def vlm_or_judge(body):
        if "##TASK" in str(body["messages"][0].get("content")):
            return original(body)
        return next(v for k, v in replies.items() if k in user_text(body))

    server.answer = vlm_or_judge
    summary = run("mlvu", "openai", settings={"data": str(root), "tasks": "gen", "frames": 2},
                  model_args=dict(a.split("=", 1) for a in args(server, "vlm")),
                  judge="openai", judge_args=dict(a.split("=", 1) for a in args(server, "gpt-4-turbo")),
                  results_dir=tmp_path / "r", show_progress=False, report=False, frame_cache=False)
    assert summary.n_failed == 0
    tables = {t.title.split(" (")[0]: t for t in summary.tables}
    gen = {name: value for name, _, value in tables["generation task"].rows}
    vs_scores = sorted(r.score for r in Store(tmp_path / "r").results(summary.run_id) if r.labels["task"] == "VS")
    assert gen["SSC"] == pytest.approx((7.5 + 6) / 2)
    assert gen["VS"] == pytest.approx(sum(vs_scores) / 2) and 0.0 in vs_scores  # the parse failure counts 0
    overall = {name: value for name, _, value in tables["overall"].rows}
    assert overall["G-Avg"] == pytest.approx((gen["SSC"] + gen["VS"]) / 2)
    subs = {name: value for name, _, value in tables["generation sub-scores"].rows}
    assert subs["SSC accuracy"] + subs["SSC relevance"] == pytest.approx(gen["SSC"])
    assert subs["SSC accuracy"] == pytest.approx(2.25) and subs["VS judge replies not parsed (counted 0)"] != 0
    assert "judge: openai:gpt-4-turbo" in tables["generation sub-scores"].title
    stored = {r.sample_id: r for r in Store(tmp_path / "r").results(summary.run_id)}
    assert stored["SSC_0"].judge["parts"] == {"accuracy": 3.5, "relevance": 4.0}
    assert stored["VS_1"].judge["method"] == "parse-failed" and stored["VS_1"].counted is True


def test_llm_choice_extraction_is_off_by_default_and_recorded_when_on(tmp_path, server, env, neptune_root):
    common = {"settings": {"data": str(neptune_root), "frames": 0, "subset": "mma"},
              "model_args": dict(a.split("=", 1) for a in args(server, "vlm")),
              "show_progress": False, "report": False, "frame_cache": False}
    judge_args = dict(a.split("=", 1) for a in args(server, "extractor"))
    rule = run("neptune", "openai", results_dir=tmp_path / "rule", **common)
    assert [r.prediction for r in Store(tmp_path / "rule").results(rule.run_id)] == [None, None]
    n_before = len(server.chat_requests())
    with_judge_only = run("neptune", "openai", judge="openai", judge_args=judge_args, results_dir=tmp_path / "j",
                          **common)  # a judge but no --llm-extract: MCQ samples are not sent to it
    assert len(server.chat_requests()) == n_before + 2 and with_judge_only.tables[0].rows[0][2] == 0.0
    llm = run("neptune", "openai", judge="openai", judge_args=judge_args, llm_extract=True,
              results_dir=tmp_path / "llm", **common)
    stored = Store(tmp_path / "llm").results(llm.run_id)
    assert [r.prediction for r in stored] == [2, 2]  # "the third one" -> C
    assert all(r.judge["kind"] == "choice" and r.judge["method"] == "llm-judge" for r in stored)
    assert all(r.explanation.startswith("LLM choice extraction: chose C (judge: openai:extractor") for r in stored)
    choice_bodies = [b for b in (q.body for q in server.chat_requests()) if "Decide which option" in user_text(b)]
    shown = sorted(re.search(r"Options:\n(.*)\nResponse:", user_text(b), re.S).group(1) for b in choice_bodies)
    assert shown == ["(A) at the lake\n(B) blue\n(C) the dog\n(D) pepper\n(E) at home",
                     "(A) salt\n(B) blue\n(C) the dog\n(D) pepper\n(E) at home"]  # samples answer concurrently
    assert Store(tmp_path / "llm").run(llm.run_id).env["judge"]["llm_extract"] is True
    with pytest.raises(Exception, match="needs a judge"):
        run("neptune", "openai", llm_extract=True, results_dir=tmp_path / "x", **common)


DEV_ROWS = [("salt", "salt", 1, 0.9), ("salty", "salt", 1, 0.8), ("sea salt", "salt", 1, 0.6),
            ("pepper", "salt", 0, 0.7), ("sugar", "salt", 0, 0.3), ("nothing", "salt", 0, 0.2)]
"""(candidate, reference, label, the fake judge's P(TRUE)): the best cut is between 0.6 and 0.3
(tp 3, fp 1: F1 6/7); every other cut has a lower F1."""


@pytest.mark.slow
def test_calibrate_then_eval_on_a_labelled_dev_set(tmp_path, env):
    p_of = {c: p for c, _, _, p in DEV_ROWS}

    def logprobs(body):
        p = p_of[gem_fields(user_text(body))[0]]
        return [{" TRUE": math.log(p), " FALSE": math.log(1 - p)}]

    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps({"question": "What is added?", "reference": r, "candidate": c, "label": y}) + "\n"
                           for c, r, y, _ in DEV_ROWS))
    with FakeOpenAIServer(answer=" TRUE", token_logprobs=logprobs) as server:
        judge_args = [x for a in args(server, "gem-judge") for x in ("-J", a)]
        out = lvu("judge", "calibrate", "--dev", str(dev), "--judge", "openai", *judge_args,
                  "--out", str(tmp_path / "cal.json"), env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        cal = json.loads((tmp_path / "cal.json").read_text())
        assert cal["threshold"] == pytest.approx(0.45) and cal["f1"] == pytest.approx(6 / 7)
        assert cal["n"] == 6 and cal["positives"] == 3
        assert (Path(env["LVU_CACHE_DIR"]) / "judges" / f"{cal['key']}.json").exists()
        out = lvu("judge", "eval", "--dev", str(dev), "--judge", "openai", *judge_args, "--metric", "rouge-l", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "at its threshold (calibrated: F1 85.7 on dev.jsonl)" in out.stdout
    judge_row = next(line for line in out.stdout.splitlines() if "openai:gem-judge" in line)
    assert "85.7" in judge_row and "0.45" in judge_row
    assert "rouge-l" in out.stdout or "rouge-l: skipped" in out.stderr
    assert "Gemma-9B-IT (GEM)" in out.stdout  # the paper's Table 2 beside
