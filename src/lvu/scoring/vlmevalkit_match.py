"""VLMEvalKit's rule-based option matching, reimplemented: `can_infer` (vlmeval/utils/matching_util.py:
can_infer_option, then can_infer_text) and the option dict and text its LLM-judge prompt holds
(`build_choices`, vlmeval/dataset/utils/multiple_choice.py; `build_option_str`, vlmeval/smp/vlm.py),
as they are at the two commits lvu's `compat=vlmevalkit` modes pin (lvu.scoring.vlmevalkit.COMMITS).

What changed from 296425e2 (2024-12-09) to e8e78f05 (2026-08-18), all in matching_util.py:
- can_infer_option: a lone option letter counts only when its FIRST occurrence is among the last
  four words (`splits.index(ch) > len(splits) - 5`); when it does not, the reply falls through;
- then a new "answer is X" rule: `(?i)(?:correct\\s+)?answer\\s+is\\s+\\**([ABCD])\\**`, first match,
  its letter (upper-cased) when it is an option (no word boundary: "the answer is definitely…" → D);
- can_infer_text refuses a reply (lower-cased) longer than twice the summed length of the option texts.
`build_choices`, `build_option_str` and the rest of both functions are the same at the two commits.

Return values follow VLMEvalKit's, with its `False` as None: an option letter, "Z" (a refusal, or a
lone "Z" word), or None (no letter; VLMEvalKit then asks its judge, or scores no option).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

E8E78F05 = "e8e78f05"
C296425E2 = "296425e2"
MATCH_COMMITS = (E8E78F05, C296425E2)

API_FAILURE = "Failed to obtain answer via API"
"""can_infer_option's own test (FAIL_MSG without the final period): such a reply reads no letter."""

REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
            "I'm sorry, but without the image provided", "Cannot determine the answer")
"""can_infer_option's `reject_to_answer`: a reply containing one reads "Z"."""

PUNCTUATION = ".()[],:;!*#{}"
"""The characters can_infer_option turns into spaces before splitting the reply into words."""

VERBOSE_ANSWER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")
"""e8e78f05's `_VERBOSE_ANSWER_RE` ("The correct answer is **B**", "The answer is C.")."""

Choices = Mapping[str, object]
"""{option letter: option content}, as VLMEvalKit's `build_choices` returns it."""


def _check_commit(commit: str) -> None:
    if commit not in MATCH_COMMITS:
        raise ValueError(f"VLMEvalKit commit {commit!r}: lvu reproduces {', '.join(MATCH_COMMITS)}")


def _is_na(value: object) -> bool:
    """pandas.isna for the scalars an option can hold (None, NaN)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def as_text(answer: object) -> str:
    """`str(answer)` as can_infer does: a NaN prediction (lvu: None) reads as "nan"."""
    return "nan" if answer is None else str(answer)


def can_infer_option(answer: str, choices: Choices, *, commit: str = E8E78F05, verbose: bool = False) -> str | None:
    """VLMEvalKit's can_infer_option at `commit`. `verbose` stands for a set VERBOSE environment variable
    (any non-empty value, "0" included): then a reply with one option letter, the word "A" and more
    than three words reads no letter ("A might be a quantifier")."""
    _check_commit(commit)
    if API_FAILURE in answer:
        return None
    if any(err in answer for err in REFUSALS):
        return "Z"
    mod = answer
    for c in PUNCTUATION:
        mod = mod.replace(c, " ")
    splits = [x.strip() for x in mod.split()]
    count = sum(1 for ch in choices if ch in splits)
    if count == 1:
        for ch in choices:
            if "A" in splits and len(splits) > 3 and verbose:
                return None
            if ch in splits and (commit == C296425E2 or splits.index(ch) > len(splits) - 5):
                return ch
    elif count == 0 and "Z" in splits:  # count_choice(splits, {'Z', ''}) == 1: no word is empty
        return "Z"
    if commit == E8E78F05:
        match = VERBOSE_ANSWER.search(answer)
        if match and match.group(1).upper() in choices:
            return match.group(1).upper()
    return None


def can_infer_text(answer: str, choices: Choices, *, commit: str = E8E78F05) -> str | None:
    """VLMEvalKit's can_infer_text at `commit`: the one option whose text (lower case) the reply
    (lower case) contains; None when none or several do, and at e8e78f05 when the reply is longer
    than twice the options' total length."""
    _check_commit(commit)
    low = answer.lower()
    if commit == E8E78F05 and len(low) > 2 * sum(len(str(v)) for v in choices.values()):
        return None
    hits = [k for k, v in choices.items() if str(v).lower() in low]
    return hits[0] if len(hits) == 1 else None


def can_infer(answer: object, choices: Choices, *, commit: str = E8E78F05, verbose: bool = False) -> str | None:
    """VLMEvalKit's can_infer at `commit`: can_infer_option, else can_infer_text. `answer` None is a
    NaN cell (pandas na_values, lvu.scoring.vlmevalkit.reread) and reads as the text "nan"."""
    text = as_text(answer)
    return can_infer_option(text, choices, commit=commit, verbose=verbose) or can_infer_text(text, choices,
                                                                                             commit=commit)


def build_choices(options: Sequence[object]) -> dict[str, object]:
    """The {letter: option} dict VLMEvalKit's build_choices makes from a row whose columns A, B, …
    hold the options in order (MLVU_MCQ.evaluate sets one per candidate); None/NaN options are left out."""
    return {chr(ord("A") + i): o for i, o in enumerate(options) if not _is_na(o)}


def build_option_str(choices: Choices) -> str:
    """VLMEvalKit's build_option_str: 'There are several options: \\n' then 'X. content\\n' per option."""
    text = "There are several options: \n"
    for letter, content in choices.items():
        if not _is_na(content):
            text += f"{letter}. {content}\n"
    return text
