"""VLMEvalKit's MLVU judge (judge kind "vlmevalkit-choice", lvu.scoring.vlmevalkit_judge), issue #32 item 7.

How the expected values were obtained: VLMEvalKit's own MLVU evaluate was run at each commit
(e8e78f05 and 296425e2) in a scratch folder — vlmeval/dataset/mlvu.py, video_concat_dataset.py,
utils/mlvu.py, utils/multiple_choice.py and utils/matching_util.py copied unchanged from the
mirror (`git show <commit>:<path>`), vlmeval.smp reduced to load/dump/build_option_str/cn_string,
pandas 3.1.1 and xlsxwriter for the .xlsx sheet. The sheet held the ROWS below (one MLVU_MCQ row
each: task_type, question, str(candidates), answer, prediction) and `MLVU('MLVU').evaluate(sheet,
model='chatgpt-0125')` ran with `build_judge` returning a fake judge (working() True; generate(prompt)
recorded the prompt and returned the answers scripted in JUDGE_ANSWERS, "Z" when none) and, at
296425e2, `gpt_key_set()` True. Recorded: each row's score, the prompts the judge was sent (which
rows, how often, the text) and extract_answer_from_item's result. The PROMPT below is the first
prompt it sent, copied from that run.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from lvu.models.base import Model
from lvu.scoring.judges import Judge, JudgeTask, build_prompt
from lvu.scoring.vlmevalkit_judge import (asks_judge, choice_task, mlvu_choice_task, prompt_text, random_pick,
                                          read_answer)
from lvu.scoring.vlmevalkit_match import C296425E2, E8E78F05
from lvu.types import LETTERS, Prompt, Response, Sample, Text, VideoRef

ROWS = [  # (task_type, question, candidates, answer, prediction)
    ("plotQA", "What does the man do after he leaves the red car?",
     ["He walks away from the car", "He gets into a taxi", "He calls someone", "He sits on a bench"],
     "He gets into a taxi", "He hails a cab and leaves."),
    ("count", "How many times does the dog jump in the video?", ["3", "5", "7", "2"], "5", "Answer is 7"),
    ("count", "How many times does the cat jump in the video?", ["3", "5", "7", "2"], "5", "(B) 5"),
    ("ego", "Where did I put the keys?", ["On the table", "In the drawer", "In my pocket", "On the shelf"],
     "In the drawer", "B is correct because I put the keys into the drawer next to the sink in the end"),
    ("needle", "What colour is the umbrella?", ["Red", "Blue", "Green", "Yellow"], "Blue", "Answer is B, not C."),
    ("topic_reasoning", "What is the main topic of the video?", ["Cooking", "Sports", "Travel", "Music"], "Travel",
     "I cannot tell."),
    ("anomaly_reco", "Does this surveillance footage contain any anomalies? If yes, which kind of anomaly?",
     ["Arson", "Robbery", "Fighting", "Normal"], "Fighting", "Failed to obtain answer via API."),
    ("order", "Arrange the following events from the video in the correct chronological order: (1) open door "
     "(2) sit (3) eat", ["1->2->3", "2->1->3", "3->2->1", "1->3->2"], "1->2->3", "first the door opens, then"),
]
JUDGE_ANSWERS = {
    "He hails a cab and leaves.": ["B"],
    "Answer is 7": ["The answer is C."],
    "B is correct because I put the keys into the drawer next to the sink in the end": ["I think it is B"],
    "I cannot tell.": ["no idea", "still none", "nothing"],
    "Answer is B, not C.": ["The answer is B, not C.", "B"],  # 296425e2 reads no letter, then B; e8e78f05: B
    "first the door opens, then": ["Z"],
}
"""The fake judge's answers to each prediction's prompt, in order (the last repeats; none: "Z")."""

JUDGED = {  # commit -> [(prediction, times the judge was asked, what extract_answer_from_item returned)]
    E8E78F05: [("He hails a cab and leaves.", 1, "B"), ("Answer is 7", 1, "C"),
               ("B is correct because I put the keys into the drawer next to the sink in the end", 1, "B"),
               ("I cannot tell.", 3, "random"), ("first the door opens, then", 1, "Z")],
    C296425E2: [("He hails a cab and leaves.", 1, "B"), ("Answer is B, not C.", 2, "B"),
                ("I cannot tell.", 3, "random"), ("first the door opens, then", 1, "Z")],
}
"""The rows VLMEvalKit's evaluate sent to its judge, in sheet order (the others were decided by
check_ans or can_infer, or scored -1 for FAIL_MSG)."""
SCORES = {E8E78F05: [1, 0, 1, 1, 1, None, -1, 0], C296425E2: [1, 0, 1, 1, 1, None, -1, 0]}
"""The score column of VLMEvalKit's _score sheet; None: the row of its unseeded random pick (D in
that run, wrong; lvu draws its own, seeded)."""

PROMPT = (
    "You are an AI assistant who will help me to match an answer with several options of a single-choice question. "
    "You are provided with a question, several options, and an answer, and you need to find which option is most "
    "similar to the answer. If the meaning of all options are significantly different from the answer, output Z. "
    "Your should output a single uppercase character in A, B, C, D (if they are valid options), and Z. \nExample 1: "
    "\nQuestion: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\nAnswer: a cute "
    "teddy bear\nYour output: A\nExample 2: \nQuestion: What is the main object in image?\nOptions: A. teddy bear B. "
    "rabbit C. cat D. dog\nAnswer: Spider\nYour output: Z\nExample 3: \nQuestion: What does the man do after he "
    "leaves the red car??\nOptions: There are several options: \nA. He walks away from the car\nB. He gets into a "
    "taxi\nC. He calls someone\nD. He sits on a bench\n\nAnswer: He hails a cab and leaves.\nYour output: "
)
"""VLMEvalKit e8e78f05's prompt for ROWS[0] (build_prompt(question, build_option_str(choices), prediction))."""


def sample_of(i: int) -> Sample:
    task, question, cands, answer, _ = ROWS[i]
    first = next(LETTERS[k] for k, c in enumerate(cands) if c == answer)
    last = [LETTERS[k] for k, c in enumerate(cands) if c == answer][-1]
    return Sample(id=f"{task}_{i}", benchmark="mlvu", video=VideoRef(path="v.mp4"), question=question,
                  options=list(cands), answer=LETTERS.index(last), labels={"task": task},
                  extra={"answer_text": answer, "answer_letter": last, "answer_first": first})


def gold_last(i: int) -> str:
    cands, answer = ROWS[i][2], ROWS[i][3]
    return [LETTERS[k] for k, c in enumerate(cands) if c == answer][-1]


def test_prompt_is_vlmevalkits_byte_for_byte() -> None:
    task = mlvu_choice_task(sample_of(0), ROWS[0][4])
    prompt = build_prompt(task)
    assert prompt_text(ROWS[0][1], ROWS[0][2], ROWS[0][4]) == PROMPT
    assert [p.text for p in prompt.parts if isinstance(p, Text)] == [PROMPT]
    # VLMEvalKit's judge wrapper: one user message, no system prompt, temperature 0, max_tokens 2048
    assert prompt.system is None and prompt.assistant_prefix is None
    assert prompt.temperature == 0.0 and prompt.max_tokens == 2048


PROMPT_CN = (
    "你是一个帮助我匹配答案与单选题中多个选项的 AI 助手。你会被提供：一个问题，多个选项，一个答案。你的任务是找到与答案意义最相近的选项。"
    "如果所有选项的意义都与答案显著不同，则输出 Z。你应该输出一个单个的大写字母，例如 A, B, C, D（如果它们是有效选项），或 Z。"
    "例 1:问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 一只可爱的泰迪熊\n输出: A\n例 2: \n"
    "问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 蜘蛛\n输出: Z\n例 3: \n"
    "问题: 视频里的人在做什么?\n选项: There are several options: \nA. 跑步\nB. 游泳\n\n答案: 他在锻炼\n输出: "
)
"""What e8e78f05's extract_answer_from_item sent its judge for the row {question: 视频里的人在做什么,
A: 跑步, B: 游泳, prediction: 他在锻炼} (cn_string: build_prompt_cn), run in the same scratch copy."""


def test_prompt_uses_the_chinese_template_for_a_cjk_question() -> None:
    assert prompt_text("视频里的人在做什么", ["跑步", "游泳"], "他在锻炼") == PROMPT_CN


@pytest.mark.parametrize("commit", [E8E78F05, C296425E2])
def test_judged_rows_are_vlmevalkits(commit: str) -> None:
    """asks_judge picks exactly the rows VLMEvalKit's evaluate sent to its judge, and each prompt is
    the one it sent (its PROMPT checked above; the rest are the same template)."""
    asked = [row[4] for i, row in enumerate(ROWS) if asks_judge(row[4], row[2], gold_last(i), commit=commit)]
    assert asked == [p for p, _, _ in JUDGED[commit]]


@pytest.mark.parametrize("commit", [E8E78F05, C296425E2])
def test_judge_answers_read_as_vlmevalkit(commit: str) -> None:
    """Each judge answer read as extract_answer_from_item read it (a letter, Z, or a failed try)."""
    for prediction, asks, got in JUDGED[commit]:
        row = next(r for r in ROWS if r[4] == prediction)
        answers = JUDGE_ANSWERS.get(prediction, ["Z"])
        read = [read_answer(answers[min(k, len(answers) - 1)], row[2], commit=commit) for k in range(asks)]
        assert read[:-1] == [None] * (asks - 1)
        assert read[-1] == (None if got == "random" else got)
    assert read_answer("Failed to obtain answer via API.", ["x", "y"]) is None  # a failed try, asked again
    # the judge's answer goes through the commit's can_infer too
    assert read_answer("B is closest to the answer given here", ["x", "y"], commit=E8E78F05) is None
    assert read_answer("B is closest to the answer given here", ["x", "y"], commit=C296425E2) == "B"


class Scripted(Model):
    """A judge model answering from a script per candidate; records how often it was asked."""

    name = "scripted"

    def __init__(self, script: dict[str, list[str]], error: str | None = None) -> None:
        super().__init__(model="fake-chatgpt-0125")
        self.script, self.error = script, error
        self.asked: list[str] = []

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        text = prompt.parts[0].text  # type: ignore[union-attr]
        pred = text.rsplit("\nAnswer: ", 1)[1].rsplit("\nYour output: ", 1)[0]
        answers = self.script.get(pred, ["Z"])
        n = self.asked.count(pred)
        self.asked.append(pred)
        if self.error:
            return Response(text="", error=self.error)
        return Response(text=answers[min(n, len(answers) - 1)])


@pytest.mark.parametrize("commit", [E8E78F05, C296425E2])
def test_judge_loop_as_extract_answer_from_item(commit: str) -> None:
    """Up to three tries; a letter or Z ends it; three without: the seeded random pick (letters + Z)."""
    model = Scripted(JUDGE_ANSWERS)
    judge = Judge(model)
    for prediction, asks, got in JUDGED[commit]:
        i = next(k for k, r in enumerate(ROWS) if r[4] == prediction)
        sample = sample_of(i)
        before = len(model.asked)
        j = asyncio.run(judge.judge(mlvu_choice_task(sample, prediction, commit=commit), sample_id=sample.id))
        assert len(model.asked) - before == asks and j.parts == {"tries": asks} and j.error is None
        if got == "random":
            pick = random_pick(sample.id, sample.options)
            assert j.method == "vlmevalkit-random" and pick in "ABCDZ"
            assert j.value == (None if pick == "Z" else LETTERS.index(pick))
            assert "random pick" in j.summary()
        else:
            assert j.method == "vlmevalkit-judge"
            assert j.value == (None if got == "Z" else LETTERS.index(got))
        assert j.kind == "vlmevalkit-choice" and j.judge == "scripted:fake-chatgpt-0125"


def test_random_pick_is_seeded_per_question_and_draws_z_too() -> None:
    options = ["a", "b", "c", "d"]
    assert random_pick("q1", options) == random_pick("q1", options)
    assert {random_pick(f"q{i}", options) for i in range(200)} == set("ABCDZ")
    assert random_pick("q1", options) == random.Random("vlmevalkit-judge:q1").choice(list("ABCDZ"))


def test_a_failed_judge_call_fails_the_judgement() -> None:
    """lvu's rule for every judge: the sample fails (retried on resume), where VLMEvalKit would count
    its FAIL_MSG as one of the three tries."""
    model = Scripted({}, error="HTTP 500")
    j = asyncio.run(Judge(model).judge(choice_task("q", ["x", "y"], "reply", key="s1")))
    assert j.error == "HTTP 500" and j.value is None and len(model.asked) == 1


def test_task_fields() -> None:
    task = mlvu_choice_task(sample_of(1), "Answer is 7", commit=C296425E2)
    assert task == JudgeTask(kind="vlmevalkit-choice", question=ROWS[1][1], candidate="Answer is 7",
                             options=ROWS[1][2], commit=C296425E2, draw_key="count_1")


# ---- end to end: an MLVU run under compat=vlmevalkit with a fake VLM and a fake judge ---------------

FILES = {"plotQA": ("1_plotQA", "plotQA", "PQA"), "needle": ("2_needle", "findNeedle", "NQA"),
         "ego": ("3_ego", "ego", "ER"), "count": ("4_count", "count", "AC"), "order": ("5_order", "order", "AO"),
         "anomaly_reco": ("6_anomaly_reco", "anomaly_reco", "AR"),
         "topic_reasoning": ("7_topic_reasoning", "topic_reasoning", "TR")}
JUDGE_MARK = "You are an AI assistant who will help me to match an answer"


def write_rows(root, video) -> dict[int, str]:
    """ROWS as an MLVU dev release (hub layout); returns {row index: lvu sample id}."""
    import json
    import shutil

    files: dict[str, list[dict]] = {}
    ids = {}
    for i, (task, question, cands, answer, _) in enumerate(ROWS):
        stem, qtype, code = FILES[task]
        ids[i] = f"{code}_{len(files.setdefault(stem, []))}"
        files[stem].append({"video": f"v{i}.mp4", "duration": 3.0, "question": question, "candidates": cands,
                            "answer": answer, "question_type": qtype})
    (root / "MLVU" / "json").mkdir(parents=True)
    for stem, records in files.items():
        (root / "MLVU" / "json" / f"{stem}.json").write_text(json.dumps(records), encoding="utf-8")
        (root / "MLVU" / "video" / stem).mkdir(parents=True)
        for r in records:
            shutil.copy(video, root / "MLVU" / "video" / stem / r["video"])
    return ids


@pytest.mark.parametrize(("compat", "commit"), [("vlmevalkit", E8E78F05), ("vlmevalkit@296425e2", C296425E2)])
def test_an_mlvu_run_judges_exactly_vlmevalkits_rows(tmp_path, tmp_video, monkeypatch, compat, commit) -> None:
    """`run("mlvu", ..., compat=vlmevalkit, judge=...)`: the judge is sent VLMEvalKit's prompt for
    exactly the rows its evaluate sent (as often), and each row's score is its score, the random
    row's from lvu's seeded pick; without a judge those rows are wrong (exact_matching)."""
    from lvu.api import run
    from lvu.models.testing_server import FakeOpenAIServer
    from lvu.runs.store import Store

    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_OFFLINE", "1")
    ids = write_rows(tmp_path / "rel", tmp_video(seconds=3, fps=10, gop=10, size=(64, 48)).path)
    judged: list[tuple[str, str]] = []

    def answer(body: dict) -> str:
        user = next(m for m in body["messages"] if m["role"] == "user")["content"]
        text = user if isinstance(user, str) else "".join(p.get("text", "") for p in user)
        if JUDGE_MARK in text:
            pred = text.rsplit("\nAnswer: ", 1)[1].rsplit("\nYour output: ", 1)[0]
            answers = JUDGE_ANSWERS.get(pred, ["Z"])
            n = sum(1 for p, _ in judged if p == pred)
            judged.append((pred, text))
            return answers[min(n, len(answers) - 1)]
        return next(r[4] for r in ROWS if f"Question: {r[1]}\n" in text)

    with FakeOpenAIServer(answer=answer) as server:
        common = dict(settings={"data": str(tmp_path / "rel"), "tasks": "mc", "frames": 2, "compat": compat},
                      model_args={"base_url": server.base_url, "model": "vlm", "cache": "false"},
                      results_dir=tmp_path / "r", show_progress=False, report=False, frame_cache=False)
        plain = run("mlvu", "openai", **common)
        assert judged == []
        before = {r.sample_id: r.score for r in Store(tmp_path / "r").results(plain.run_id)}
        summary = run("mlvu", "openai", judge="openai", **common,
                      judge_args={"base_url": server.base_url, "model": "gpt-3.5-turbo-0125", "cache": "false"})
    assert summary.run_id == plain.run_id  # the judge is not part of the run id: the stored run is judged
    # the rows, how often, and the prompt text
    expected_calls = [p for p, asks, _ in JUDGED[commit] for _ in range(asks)]
    assert sorted(p for p, _ in judged) == sorted(expected_calls)  # lvu judges concurrently, in its own order
    for pred, text in judged:
        row = next(r for r in ROWS if r[4] == pred)
        assert text == prompt_text(row[1], row[2], pred)
    assert next(text for pred, text in judged if pred == ROWS[0][4]) == PROMPT
    results = {r.sample_id: r for r in Store(tmp_path / "r").results(summary.run_id)}
    random_row = next(i for i, r in enumerate(ROWS) if r[4] == "I cannot tell.")
    for i, want in enumerate(SCORES[commit]):
        result = results[ids[i]]
        if i == random_row:
            sample = sample_of(i)
            pick = random_pick(ids[i], sample.options)
            want = int(pick == sample.extra["answer_first"])
            assert (result.judge or {})["method"] == "vlmevalkit-random"
        assert result.score == want, (ids[i], ROWS[i][4], result.explanation)
        was_judged = ROWS[i][4] in {p for p, _, _ in JUDGED[commit]}
        assert (result.judge is not None) == was_judged
        if was_judged:
            assert before[ids[i]] == 0  # exact_matching: the judge's rows are wrong without one
            assert (result.judge or {})["kind"] == "vlmevalkit-choice"
