"""The blind filters' rules on one question (lvu.construct.blind): the verbatim Neptune QAD prompt,
reply parsing (rankings, letters, free text, unparsable), seeded option shuffles, the 2-of-3 rule,
LVBench's and Video-MME's decisions."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.construct.blind import (QAD_PROMPT, Vote, lvbench_decision, parse_ranking, qad_filter_question,
                             qad_prompt_text, seed_order, text_only_decision)
from lvu.models.base import Model
from lvu.types import LETTERS, Response

PAPER_QAD = (
    'Instructions:\n\nCarefully analyze the following question and options. Rank the options provided below, '
    'from the most likely correct answer to the least likely correct answer. Please respond with "ANSWER" and '
    '"EXPLANATION".\n\nYour response should be in the following format: ANSWER: [Letter of the ranking, split '
    'by greater than symbol. (e.g., "ANSWER: A > B > C > D > E")]. EXPLANATION: [Provide a brief explanation of '
    'your choice. Do not repeat the option.]\n\nQUESTION: {question_str}\n\nOptions: {options_str}\n\nPlease '
    'provide your response below.')
"""Neptune App. C.2.5, copied from the paper's text (/work/shared/seeds/001_*.txt)."""


def test_qad_prompt_is_the_papers_byte_for_byte():
    assert QAD_PROMPT == PAPER_QAD
    assert hashlib.sha256(QAD_PROMPT.encode()).hexdigest() == \
        "bd7f1863712804b1db8dc5fcc3385dd41383c884aa942251bb8942b000054ea3"  # the bytes, whitespace included
    paper = sorted(Path("/work/shared/seeds").glob("001_*.txt")) if Path("/work/shared/seeds").exists() else []
    if paper:  # the paper text itself, where this machine has it
        assert QAD_PROMPT in paper[0].read_text()
    text = qad_prompt_text("Why?", ["x", "y"], transcript="hi\nthere")
    assert text.endswith("TRANSCRIPT: hi\nthere\n\nQUESTION: Why?\n\nOptions: A. x\nB. y\n\nPlease provide your response below.")
    assert qad_prompt_text("Why?", ["x", "y"]) == PAPER_QAD.format(question_str="Why?", options_str="A. x\nB. y")


OPTS = ["red", "blue", "green", "red and blue", "yellow"]


@pytest.mark.parametrize("reply, ranking", [
    ("ANSWER: C > A > B > D > E. EXPLANATION: the sky.", [2, 0, 1, 3, 4]),
    ("ANSWER: [C > A > B]\nEXPLANATION: partial", [2, 0, 1]),
    ("answer: c>a>b", [2, 0, 1]),
    ("ANSWER: **D** > **A**", [3, 0]),
    ("ANSWER: B, A, C", [1, 0, 2]),
    ("Ranking: D > B > A", [3, 1, 0]),
    ("B", [1]),
    ("(D)", [3]),
    ("The answer is E.", [4]),
    ("ANSWER: (B)\nEXPLANATION: because", [1]),
    ("It is green, clearly.", [2]),
    ("It is red and blue.", [3]),  # the longer option named wins over the one inside it
    ("red or blue?", None),  # two options named: not guessed
    ("ANSWER: F > A", None),  # a letter past the options
    ("I cannot tell without the video.", None),
    ("", None),
])
def test_replies_are_parsed_or_left_unparsable(reply, ranking):
    assert parse_ranking(reply, OPTS) == ranking


def test_seed_order_is_a_seeded_permutation_that_differs_per_seed():
    orders = [seed_order("Why?", OPTS, s) for s in range(6)]
    assert all(sorted(o) == list(range(5)) for o in orders)
    assert orders == [seed_order("Why?", OPTS, s) for s in range(6)]  # the same every time
    assert len({tuple(o) for o in orders}) > 3
    script = ("from lvu.construct.blind import seed_order; "
              f"print(seed_order('Why?', {OPTS!r}, 2))")  # not Python's salted hash: another process agrees
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == str(orders[2])


class NotFirst(Model):
    """Ranks the answer first unless it is shown as option A (then ranks B first); counts calls."""

    name = "not-first"

    def __init__(self, answer: str, garbage_seed: str = "") -> None:
        super().__init__(answer=answer)
        self.answer, self.garbage, self.prompts = answer, garbage_seed, []

    async def generate(self, prompt, *, sample_id=""):
        self.prompts.append(prompt)
        if self.garbage and sample_id.endswith(self.garbage):
            return Response(text="no idea")
        shown = prompt.choices
        i = shown.index(self.answer)
        top = 1 if i == 0 else i
        rest = [LETTERS[j] for j in range(len(shown)) if j != top]
        return Response(text=f"ANSWER: {' > '.join([LETTERS[top], *rest])}\nEXPLANATION: a guess.")


@pytest.mark.parametrize("seeds", [1, 3, 5])
def test_qad_removes_when_right_in_threshold_of_the_shuffled_seeds(seeds):
    question, answer = "Which colour is the kite?", 3
    right = sum(seed_order(question, OPTS, s)[0] != answer for s in range(seeds))
    for threshold in range(1, seeds + 1):
        model = NotFirst(OPTS[answer])
        verdict = asyncio.run(qad_filter_question(model, question, OPTS, answer, seeds=seeds, threshold=threshold))
        assert verdict.correct_votes == right and verdict.removed == (right >= threshold)
        assert [v.seed for v in verdict.votes] == list(range(seeds))
        for v, p in zip(verdict.votes, model.prompts):
            assert v.order == seed_order(question, OPTS, v.seed) and p.choices == [OPTS[i] for i in v.order]
            assert v.prompt == p.text == qad_prompt_text(question, p.choices)
            assert v.ranking[0] == (answer if v.order[0] != answer else v.order[1])  # original indices
            assert sorted(v.ranking) == list(range(5))


def test_two_of_three_with_shuffled_options_and_an_unparsable_seed():
    question, answer = "Which colour is the kite?", 3
    first = [seed_order(question, OPTS, s)[0] for s in range(3)]
    # seed 2 says "no idea": recorded unparsable, never counted
    model = NotFirst(OPTS[answer], garbage_seed="#seed2")
    verdict = asyncio.run(qad_filter_question(model, question, OPTS, answer, seeds=3, threshold=2))
    expected = sum(f != answer for f in first[:2])
    assert verdict.correct_votes == expected and verdict.unparsable == 1
    assert verdict.votes[2].ranking is None and verdict.votes[2].correct is None and verdict.votes[2].reply == "no idea"
    assert verdict.removed == (expected >= 2)


def vote(answer: int | None, correct: bool | None) -> Vote:
    return Vote(model={"backend": "x"}, prompt="p", reply="r", ranking=None if answer is None else [answer],
                correct=correct)


def test_lvbench_removes_only_identical_correct_answers_and_text_only_any_correct():
    assert lvbench_decision([vote(1, True), vote(1, True)]).removed
    assert not lvbench_decision([vote(1, True), vote(2, False)]).removed
    assert not lvbench_decision([vote(2, False), vote(2, False)]).removed  # identical but wrong
    assert not lvbench_decision([vote(1, True), vote(None, None)]).removed  # an unparsable reply
    assert text_only_decision([vote(2, False), vote(1, True)]).removed
    assert not text_only_decision([vote(None, None), vote(2, False)]).removed
    assert "differ" in lvbench_decision([vote(1, True), vote(2, False)]).reason
