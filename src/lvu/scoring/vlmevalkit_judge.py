"""VLMEvalKit's LLM judge for multiple-choice replies, as its MLVU_MCQ.evaluate asks it (the judge
kind "vlmevalkit-choice" of lvu.scoring.judges).

VLMEvalKit's MLVU_MCQ.evaluate (vlmeval/dataset/mlvu.py, the same at 296425e2 and e8e78f05) scores a
row -1 when the reply holds FAIL_MSG; else `check_ans_with_model` (utils/mlvu.py): right when the
character before the reply's first ")" is the gold letter (of the LAST candidate equal to the
answer), else `extract_answer_from_item` (utils/multiple_choice.py): `can_infer(reply, choices)`;
when that reads nothing and a judge model works, the judge is asked `build_prompt(question,
build_option_str(choices), reply)` (build_prompt_cn for a question with CJK characters) and its
answer is read with `can_infer`, at most three times; after three answers without an option letter
or "Z", `random.choice(list(choices) + ["Z"])`. The row is right when the letter read equals the
letter of the FIRST candidate equal to the answer. The judge's "Z" (or a random "Z") is wrong.

What the prompt holds, from the evaluate sheet row (`input_item`): `question` is the MLVU JSON's
question as generate_tsv wrote it (lvu's Sample.question); the options are the `candidates` list
(Sample.options), as columns A, B, … (`build_choices`); the answer is the prediction cell as the
sheet reads it back (lvu.scoring.vlmevalkit.reread).

The judge: VLMEvalKit's default is `chatgpt-0125` (gpt-3.5-turbo-0125) through its OpenAIWrapper —
one user message, no system prompt, temperature 0, max_tokens 2048; lvu asks the `--judge` model
the same way. Where lvu differs (docs/judges.md): a judge call that fails (after the backend's own
retries) fails the sample as every lvu judge does, where VLMEvalKit counts its FAIL_MSG as one of
the three tries; the three tries send one prompt, which lvu's response cache answers the same way
each time (VLMEvalKit's retries only differ where its temperature-0 API is not deterministic); and
the random pick is drawn per question from a seeded generator (`random_pick`), not VLMEvalKit's
unseeded `random`.

At 296425e2 the judge is the same except that evaluate() accepts only chatgpt-0125, gpt-4-0125 or
exact_matching and asks it only when OPENAI_API_KEY is set; can_infer differs (the commit's rules,
lvu.scoring.vlmevalkit_match), which changes both the rows judged and how the answer is read.
"""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Literal

from lvu.scoring import judge_prompts as jp
from lvu.scoring.judge_tasks import JudgeTask
from lvu.scoring.vlmevalkit import is_api_failure
from lvu.scoring.vlmevalkit_match import E8E78F05, build_choices, build_option_str, can_infer

if TYPE_CHECKING:
    from lvu.types import Sample

KIND: Literal["vlmevalkit-choice"] = "vlmevalkit-choice"
TRIES = 3
"""extract_answer_from_item's `retry = 3`: answers read before the random pick."""
MAX_TOKENS = 2048
"""VLMEvalKit's OpenAIWrapper default max_tokens (its judge call sets no other)."""
API_FAILURE = "Failed to obtain answer via API"
"""A judge answer holding this is a failed try (extract_answer_from_item tests this text)."""
_CJK = re.compile("[\u4e00-\u9fff]")


def prompt_text(question: str, options: list[str], prediction: str) -> str:
    """The judge prompt VLMEvalKit builds for this row: build_prompt (build_prompt_cn for a question
    with a CJK character) of the question, build_option_str(build_choices(options)) and the reply."""
    template = jp.VLMEVALKIT_CHOICE_PROMPT_CN if _CJK.search(question) else jp.VLMEVALKIT_CHOICE_PROMPT
    return template.format(question, build_option_str(build_choices(options)), prediction)


def read_answer(answer: str, options: list[str], *, commit: str = E8E78F05) -> str | None:
    """A judge answer as extract_answer_from_item reads it: the option letter or "Z" can_infer
    finds (the try ends), None when the try failed (an API failure text, no letter: ask again)."""
    if API_FAILURE in answer:
        return None
    return can_infer(answer, build_choices(options), commit=commit)


def random_pick(key: str, options: list[str]) -> str:
    """The pick after TRIES failed tries: VLMEvalKit's `rd.choice(list(choices) + ['Z'])`, drawn
    from a generator seeded by `key` (lvu: the sample id) so a re-score picks the same letter."""
    return random.Random(f"vlmevalkit-judge:{key}").choice([*build_choices(options), "Z"])


def letter_index(letter: str, options: list[str]) -> int | None:
    """The option index of a letter read ("Z": None, no option)."""
    letters = list(build_choices(options))
    return letters.index(letter) if letter in letters else None


def choice_task(question: str, options: list[str], reply: str, *, commit: str = E8E78F05,
                key: str = "") -> JudgeTask:
    """The "vlmevalkit-choice" judge task for one row (`key` seeds the random pick)."""
    return JudgeTask(kind=KIND, question=question, candidate=reply, options=list(options), commit=commit,
                     draw_key=key)


def mlvu_choice_task(sample: Sample, reply: str, *, commit: str = E8E78F05) -> JudgeTask:
    """What VLMEvalKit's MLVU_MCQ.evaluate asks its judge about an MLVU question (lvu's Sample: the
    JSON's question and candidates) and a reply (as the sheet reads it back). Asking is the caller's
    decision (`asks_judge`); the random pick is seeded by the sample id."""
    return choice_task(sample.question, list(sample.options), reply, commit=commit, key=sample.id)


def check_ans_letter(reply: str) -> str:
    """What check_ans_with_model compares with the gold letter: the character before the reply's
    first ")" (empty when ")" comes first), else the whole reply."""
    if ")" in reply:
        i = reply.index(")")
        return reply[i - 1:i]
    return reply


def asks_judge(reply: str | None, options: list[str], gold_letter: str, *, commit: str = E8E78F05) -> bool:
    """Whether VLMEvalKit's MLVU_MCQ.evaluate asks its judge (when one works) about this reply:
    not an API failure, check_ans misses `gold_letter` (the LAST candidate equal to the answer,
    "@" when none is), and can_infer reads no letter and no "Z". A reply the sheet reads back as
    NaN (None) never reaches the judge (evaluate fails on `FAIL_MSG in pred` for it)."""
    if reply is None or is_api_failure(reply):
        return False
    if check_ans_letter(reply) == gold_letter:
        return False
    return can_infer(reply, build_choices(options), commit=commit) is None

