"""Shared multiple-choice helpers: option formatting, letter parsing, accuracy tables."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from lvu.types import LETTERS, Breakdown, SampleResult

_LETTER_PATTERNS = [
    r"^\s*\(?([A-Z])\)?\s*$",  # "B", "(B)"
    r"^\s*\(?([A-Z])[\).:]",  # "B) ...", "(B) ...", "B. ...", "B: ..."
    r"(?i:answer|option)\s*(?i:is|:)?\s*\(?([A-Z])\b",  # "The answer is (B)"; the letter stays upper case
    r"\(([A-Z])\)",  # "... (B) ..."
]


def format_options(options: list[str], style: str = "({letter}) {text}") -> list[str]:
    """Lines like '(A) first option'."""
    return [style.format(letter=LETTERS[i], text=o) for i, o in enumerate(options)]


def extract_letter(text: str, n_options: int) -> int | None:
    """Option index from a free-form reply, or None. Tries the stricter patterns first."""
    valid = LETTERS[:n_options]
    for pattern in _LETTER_PATTERNS:
        for m in re.finditer(pattern, text.strip()):
            letter = m.group(1).upper()
            if letter in valid:
                return valid.index(letter)
    return None


def mean_pct(values: list[float]) -> float:
    """Mean of 0/1 (or fractional) scores in percent; NaN for no values."""
    return 100.0 * sum(values) / len(values) if values else float("nan")


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def natural_key(label: str) -> tuple[Any, ...]:
    """Sort key of a group label by the numbers in it, then its text: `0%, 25%, 100%` and
    `8-15s, 15-60s, 900-3600s` (a string sort gives `0%, 100%, 25%`); labels that start with
    a number come before those that start with text."""
    parts: list[tuple[int, float, str]] = []
    at = 0
    for m in _NUMBER.finditer(label):
        if m.start() > at:
            parts.append((1, 0.0, label[at:m.start()]))
        parts.append((0, float(m.group()), ""))
        at = m.end()
    if at < len(label):
        parts.append((1, 0.0, label[at:]))
    return (tuple(parts), label)  # the label itself last: `08` and `8` still sort the same way every time


def breakdowns_by_label(results: list[SampleResult]) -> list[Breakdown]:
    """Overall accuracy plus one table per label key. Uncounted samples are left out;
    failed samples (error, no score) count as wrong, as official scorers count a missing answer."""
    counted = [r for r in results if r.counted]
    # One score per *position*: a bootstrap resample repeats the same object, and every repeat
    # must count (keyed by object, repeats collapsed and the intervals came out too narrow).
    scores = [r.score if r.score is not None else 0.0 for r in counted]
    tables = [Breakdown(title="overall", rows=[("all", len(counted), mean_pct(scores))])]
    keys = sorted({k for r in counted for k in r.labels})
    for key in keys:
        groups: dict[str, list[float]] = defaultdict(list)
        for r, score in zip(counted, scores):
            value = r.labels.get(key)
            for v in value if isinstance(value, list) else [value]:
                if v is not None:
                    groups[str(v)].append(score)
        tables.append(Breakdown(title=key, rows=[(g, len(v), mean_pct(v)) for g, v in sorted(groups.items(), key=lambda kv: natural_key(kv[0]))]))
    return tables


# ---- lmms-eval's shared MCQ extractor ------------------------------------------------------------

_LMMS_PHRASES = ["the answer is", "answer is", "the correct answer is", "correct answer is", "the best answer is",
                 "best answer is", "the correct option is", "correct option is", "the best option is",
                 "best option is", "the choice is", "choice is", "the correct choice is", "correct choice is",
                 "i choose", "i select", "i pick", "my answer is", "my choice is", "옵션", "정답은", "답은", "답:",
                 "答案是", "答案为", "选", "答えは"]
_LMMS_PRIORITY = {"start": 10, "end": 9, "phrase": 7, "parentheses": 6, "period": 5, "colon": 4,
                  "right_paren": 3, "space": 2, "fallback": 0}


def lmms_extract_mcq(response: str, choices: str = "ABCD") -> str:
    """A port of lmms-eval 0.7.3 `lmms_eval/tasks/_task_utils/mcq_extract.py::extract_mcq_answer`
    (used by its LVBench and MLVU tasks): every format's last occurrence is a candidate; the
    highest-priority format wins, then the later position. '' when no choice letter is found."""
    if not response or not response.strip():
        return ""
    text = response.strip()
    for char in [",", ".", "!", "?", ";", ":", "'", '"']:
        text = text.strip(char)
    text = " " + text + " "
    found: list[tuple[str, int, str]] = []
    for fmt, pattern in (("parentheses", "({})"), ("period", "{}."), ("colon", "{}:"), ("right_paren", "{})"),
                         ("space", "{} ")):
        found += [(ch, text.rfind(pattern.format(ch)), fmt) for ch in choices if pattern.format(ch) in text]
    lower = text.lower()
    for phrase in _LMMS_PHRASES:
        idx = lower.find(phrase)
        if idx != -1:
            after = idx + len(phrase)
            found += [(ch, pos, "phrase") for ch in choices if (pos := text.find(ch, after)) != -1]
    stripped = text.strip()
    found += [(ch, 0, "start") for ch in choices
              if stripped.startswith(ch) and (len(stripped) == 1 or not stripped[1].isalpha())]
    found += [(ch, len(text) - 1, "end") for ch in choices
              if stripped.endswith(ch) and (len(stripped) == 1 or not stripped[-2].isalpha())]
    if not found:
        found = [(ch, text.rfind(ch), "fallback") for ch in choices if ch in text]
    if not found:
        return ""
    found.sort(key=lambda x: (_LMMS_PRIORITY.get(x[2], 0), x[1]), reverse=True)
    return found[0][0]
