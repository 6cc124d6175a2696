"""Questions for needle benchmarks, after MLVU's three synthetic tasks (paper §3.1, App. E.4/E.8/E.9;
notes in shared/research/seed_mlvu.md §3, §5):

- nqa (Needle QA): the needle's own question (MLVU: GPT-4 questions from the clip's caption, 4
  options, `candidates` + `answer` text); without one, "Which of these appears in the video?"
  over its label and up to three other needles' labels;
- order (Action Order): which sequence is the order the needles were inserted in, among shuffled
  permutations, written in MLVU's Kinetics option format "a --> b --> c --> d";
- count (Action Count): how many times the one needle was inserted, among the neighbouring counts.

MLVU does not publish its AO/AC question sentences; these are lvu's. Answer positions are balanced
per option count (haystack's AnswerBalancer): a letter bias scores chance.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from lvu.benchmarks.haystack import AnswerBalancer

ARROW = " --> "
"""MLVU's Action Order option separator ("abseiling --> making jewelry --> milking cow")."""
APPEARS = "Which of these appears in the video?"
ORDER = "In which order do these appear in the video?"
COUNT = 'How many times does "{label}" appear in the video?'
N_OPTIONS = 4


@dataclass(frozen=True)
class Question:
    text: str
    options: tuple[str, ...]
    answer: int


def nqa(label: str, own: Question | None, others: list[str], rng: random.Random,
        balance: AnswerBalancer) -> Question:
    """The needle's own question as given, else which label appears (distractors: other labels)."""
    if own is not None:
        return own
    pool = sorted({o for o in others if o != label})
    if not pool:
        raise ValueError(label)
    distractors = rng.sample(pool, min(N_OPTIONS - 1, len(pool)))
    return _placed(APPEARS, label, distractors, balance)


def order(labels: list[str], rng: random.Random, balance: AnswerBalancer) -> Question:
    """Inserted order among up to three other permutations of the same labels."""
    right = ARROW.join(labels)
    wrong: list[str] = []
    if len(labels) <= 4:  # few enough to list every permutation
        everyone = [ARROW.join(p) for p in itertools.permutations(labels)]
        wrong = rng.sample([p for p in everyone if p != right], min(N_OPTIONS - 1, len(everyone) - 1))
    else:
        while len(wrong) < N_OPTIONS - 1:
            candidate = ARROW.join(rng.sample(labels, len(labels)))
            if candidate != right and candidate not in wrong:
                wrong.append(candidate)
    return _placed(ORDER, right, wrong, balance)


def count_window(position: int, max_count: int, rng: random.Random) -> int:
    """A count in 1..max_count that lets the answer sit at `position` of a window starting at >= 0."""
    return rng.randint(max(1, position), max(max_count, position))


def count(label: str, times: int, position: int) -> Question:
    """How many times: four consecutive counts ascending, the inserted one at `position`."""
    low = times - position
    return Question(COUNT.format(label=label), tuple(str(low + k) for k in range(N_OPTIONS)), position)


def _placed(text: str, right: str, wrong: list[str], balance: AnswerBalancer) -> Question:
    position = balance.take(len(wrong) + 1)
    options = list(wrong)
    options.insert(position, right)
    return Question(text, tuple(options), position)
