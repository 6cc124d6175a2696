"""Questions for needle benchmarks, after MLVU's three synthetic tasks (paper §3.1, App. E.4/E.8/E.9;
notes in shared/research/seed_mlvu.md §3, §5):

- nqa (Needle QA): the needle's own question (MLVU: GPT-4 questions from the clip's caption, 4
  options, `candidates` + `answer` text); without one, "Which of these appears in the video?"
  over its label and up to three other needles' labels;
- order (Action Order): which sequence is the order the needles were inserted in, among shuffled
  permutations, written in MLVU's Kinetics option format "a --> b --> c --> d";
- order from ActivityNet-Captions segments: "Arrange the following events ... (1) ...; (2) ..." with
  options of listing numbers in chronological order ("2->4->1->3");
- count (Action Count): how many clips of the one label were inserted, among four consecutive counts
  (the window drawn first, the right one at a balanced position inside it: no value prior).

MLVU's paper prints none of these sentences; ARRANGE and the "2->4->1->3" options follow MLVU's
release (research notes §3), the others are lvu's. Answer positions are balanced
per option count (haystack's AnswerBalancer): a letter bias scores chance.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lvu.benchmarks.haystack import AnswerBalancer

ARROW = " --> "
"""MLVU's Action Order option separator ("abseiling --> making jewelry --> milking cow")."""
APPEARS = "Which of these appears in the video?"
ARRANGE = "Arrange the following events from the video in the correct chronological order:"
"""MLVU's ActivityNet-Captions Action Order question (its release; the events follow as "(1) ...; (2) ...")."""
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
    q = _placed(APPEARS, label, distractors, balance)
    return Question(q.text, same_case(q.options), q.answer)


def order(labels: list[str], rng: random.Random, balance: AnswerBalancer) -> Question:
    """Inserted order among up to three other permutations of the same labels."""
    right = ARROW.join(labels)
    return _placed(ORDER, right, _other_orders(right, labels, ARROW, rng), balance)


def count_window(position: int, max_count: int, rng: random.Random) -> tuple[int, int]:
    """(lowest option, count): the options are N_OPTIONS consecutive counts from `low` >= 1, the count
    sits at `position` among them. The window is drawn first (uniform over 1..max_count-N_OPTIONS+1)
    and the position is balanced, so within every window each option is right equally often: no rule
    that sees only the options (a value prior, the middle one) beats chance. Counts drawn freely and a
    window placed around them made 3 right in 45 % of questions offering it (lvu analyse leak)."""
    low = rng.randint(1, max(1, max_count - N_OPTIONS + 1))
    return low, low + position


def count(label: str, low: int, position: int) -> Question:
    """How many times: N_OPTIONS consecutive counts ascending from `low`, the inserted one at `position`."""
    return Question(COUNT.format(label=label), tuple(str(low + k) for k in range(N_OPTIONS)), position)


def clips_of(label: str, needles: Sequence[Any], times: int, rng: random.Random) -> list[Any]:
    """`times` needles of `label`: different clips while there are (MLVU inserts several probe clips
    of the counted action), then the same ones again in a new order."""
    own = [n for n in needles if n.label == label]
    out: list[Any] = []
    while len(out) < times:
        out += rng.sample(own, min(len(own), times - len(out)))
    return out


def order_events(events: list[str], rng: random.Random, balance: AnswerBalancer) -> Question:
    """MLVU's ActivityNet-Captions form: the events listed in a shuffled order as (1)..(k), the
    options are listing numbers in chronological order ("2->4->1->3"), distractors other permutations."""
    listing = rng.sample(range(len(events)), len(events))  # listing[i]: which event is shown as (i+1)
    shown = "; ".join(f"({i + 1}) {events[e].rstrip('.')}" for i, e in enumerate(listing))
    number = {e: i + 1 for i, e in enumerate(listing)}
    right = "->".join(str(number[e]) for e in range(len(events)))
    wrong = _other_orders(right, [str(i + 1) for i in range(len(events))], "->", rng)
    return _placed(f"{ARRANGE} {shown}.", right, wrong, balance)


def same_case(options: Sequence[str]) -> tuple[str, ...]:
    """The options without a case cue: an ALL-CAPS option beside others that are not is lower-cased
    (a text needle "LIGHTHOUSE" beside "red kite" stood out), and when some start with a capital and
    some do not, every one starts with a capital (never lower-cased there: a proper noun keeps it)."""
    caps = [o.isupper() and sum(c.isalpha() for c in o) > 1 for o in options]
    out = [o.lower() if c and not all(caps) else o for o, c in zip(options, caps)]
    if len({o[0].isupper() for o in out if o[:1].isalpha()}) > 1:
        out = [o[:1].upper() + o[1:] for o in out]
    return tuple(out)


def _other_orders(right: str, items: list[str], sep: str, rng: random.Random) -> list[str]:
    """Up to N_OPTIONS - 1 other permutations of `items` (every one listed when few enough)."""
    if len(items) <= 4:
        everyone = [sep.join(p) for p in itertools.permutations(items)]
        return rng.sample([p for p in everyone if p != right], min(N_OPTIONS - 1, len(everyone) - 1))
    wrong: list[str] = []
    while len(wrong) < N_OPTIONS - 1:
        candidate = sep.join(rng.sample(items, len(items)))
        if candidate != right and candidate not in wrong:
            wrong.append(candidate)
    return wrong


def _placed(text: str, right: str, wrong: list[str], balance: AnswerBalancer) -> Question:
    position = balance.take(len(wrong) + 1)
    options = list(wrong)
    options.insert(position, right)
    return Question(text, tuple(options), position)
