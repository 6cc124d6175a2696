"""Shared multiple-choice helpers: option formatting, letter parsing, accuracy tables."""

from __future__ import annotations

import re
from collections import defaultdict

from lvu.benchmarks.base import Breakdown
from lvu.types import LETTERS, SampleResult

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


def _mean_pct(values: list[float]) -> float:
    return 100.0 * sum(values) / len(values) if values else float("nan")


def breakdowns_by_label(results: list[SampleResult]) -> list[Breakdown]:
    """Overall accuracy plus one table per label key. Uncounted samples are left out;
    failed samples (error, no score) count as wrong, as official scorers count a missing answer."""
    counted = [r for r in results if r.counted]
    scores = {id(r): (r.score if r.score is not None else 0.0) for r in counted}
    tables = [Breakdown(title="overall", rows=[("all", len(counted), _mean_pct(list(scores.values())))])]
    keys = sorted({k for r in counted for k in r.labels})
    for key in keys:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in counted:
            value = r.labels.get(key)
            for v in value if isinstance(value, list) else [value]:
                if v is not None:
                    groups[str(v)].append(scores[id(r)])
        tables.append(Breakdown(title=key, rows=[(g, len(v), _mean_pct(v)) for g, v in sorted(groups.items())]))
    return tables
