"""Can the options alone answer? Options-only rules over a benchmark's multiple-choice samples
(`lvu analyse leak`, and OUT/leak.json of every build; docs/analysis.md).

Each rule picks an option from the question and its options only, never the video:

- plain rules (read no answer): `longest` / `shortest` option (characters); `question-overlap`,
  the option most similar to the question (TF-IDF cosine of lower-cased words, the IDF over every
  question and option of the audited set); `consensus`, the option sharing the most words with the
  other options (sum of word-set Jaccard similarities: distractors made by editing the answer);
- priors fitted on one half of the questions and scored on the other, then the halves swapped
  (2-fold): `numeric-prior` (questions whose options all parse as numbers, "3", "2 times", "three":
  the offered value most often the answer), `position-prior` (the most frequent answer position),
  `answer-prior` (the option text most often the answer).

Ties are never broken by position: when k options share a rule's best score the question scores
1/k if the answer is among them (a uniform tie-break's expected accuracy), so `longest` on "1", "2",
"3", "4" scores exactly chance. The halves: the distinct (question, sorted options) texts in load
order, permuted by numpy's default_rng(seed) (seed 0), the first ceil(half) in half 0 — copies of a
question (a ladder's rungs) share a half, so a prior never learns a question from its copy. A
group's priors are fitted on the group's own questions (same halves).

A row: n scored questions, accuracy, chance (mean 1/options over them), a 95 % Wilson score
interval (x = the summed, possibly fractional, scores: a [0, 1] score varies no more than a 0/1
one of its mean, so the interval is conservative, and it stays sane at n = 3 where a percentile
bootstrap of an all-correct group collapses to [100, 100]) and a verdict: `leaks` (lower bound
above chance), `below` (upper bound under chance: ruling the rule's pick out beats chance — a leak
by elimination), `ok`, or `n/a` (the rule applies to no question of the group).

Pure (no files read, no model called): the runner (lvu.construct.runner) audits what a build
wrote; lvu.analysis.leak adds the text-only model row, the table and the plot.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lvu.types import Sample

Z95 = 1.959963984540054
ALL = "all"
LEAK_FILE = "leak.json"
VERSION = 1
PREFERRED_BY = ("task", "question_type", "task_type", "question_category", "kind", "category")
"""Labels grouped by when `by` is not given, first found; else the first label that partitions."""


@dataclass(frozen=True)
class Question:
    question: str
    options: tuple[str, ...]
    answer: int
    key: str
    """What decides its half: the question and its options (sorted), lower-cased."""


Pick = Callable[[Question], "list[int] | None"]
"""A rule on one question: its best options (ties kept), or None where it does not apply."""


@dataclass(frozen=True)
class Rule:
    name: str
    what: str
    build: Callable[[list[Question]], Pick]
    """Plain rules: built once over the audited set (no answer read). Fitted: on one half."""
    fitted: bool = False


@dataclass(frozen=True)
class Row:
    rule: str
    group: str
    n: int
    accuracy: float | None
    """In %; None when n is 0 (as are chance, low and high)."""
    chance: float | None
    low: float | None
    high: float | None
    verdict: str
    """leaks | below | ok | n/a."""


@dataclass
class LeakResult:
    rows: list[Row]
    samples: int
    audited: int
    skipped: dict[str, int]
    """Why the other samples were not audited -> how many."""
    by: str | None
    seed: int = 0
    source: str = ""
    notes: list[str] = field(default_factory=list)
    failed: int = 0
    """Questions an `extra` row could not score (a text model's failed calls)."""

    def leaking(self) -> list[Row]:
        return [r for r in self.rows if r.verdict in ("leaks", "below")]

    def to_json(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None else round(x, 2)

        rows = [{**asdict(r), **{k: num(getattr(r, k)) for k in ("accuracy", "chance", "low", "high")}}
                for r in self.rows]
        return {"version": VERSION, "source": self.source, "samples": self.samples, "audited": self.audited,
                "skipped": dict(sorted(self.skipped.items())), "by": self.by, "seed": self.seed,
                "split": f"2-fold: distinct question texts permuted by numpy default_rng({self.seed})",
                "interval": "Wilson score, 95 %", "rows": rows, "notes": self.notes, "failed": self.failed,
                "warnings": leak_warnings(self)}


# ---- parsing ------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())} | {"once": 1, "twice": 2, "thrice": 3, "none": 0}
_NUMERIC = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*%?\s*([^\W\d_]+(?:\s+[^\W\d_]+)?)?\s*\.?\s*$")
_WORDED = re.compile(r"^\s*([^\W\d_]+)(?:\s+[^\W\d_]+){0,2}\s*\.?\s*$")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def number(text: str) -> float | None:
    """An option's value when it reads as a number with at most two words of unit after it:
    "3", "3.", "2 times", "4 people", "10%", "three", "Twice" (thousands commas dropped)."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    if m := _NUMERIC.match(text):
        return float(m.group(1))
    if _WORDED.match(text) and (first := text.split()[0].lower().rstrip(".")) in NUMBER_WORDS:
        return float(NUMBER_WORDS[first])
    return None


def _norm(text: str) -> str:
    return " ".join(words(text))


def why_not_audited(sample: Sample) -> str | None:
    """Why a sample is not audited, or None: only multiple choice with an answer index is."""
    if len(sample.options) < 2:
        return "open-ended (fewer than 2 options)"
    if sample.answer is None:
        return "answer hidden"
    if not isinstance(sample.answer, int) or isinstance(sample.answer, bool) \
            or not 0 <= sample.answer < len(sample.options):
        return "answer is not an option index"
    return None


def audited_samples(samples: Sequence[Sample]) -> tuple[list[Sample], dict[str, int]]:
    """The samples the audit scores (load order) and why the others are not."""
    kept, skipped = [], Counter[str]()
    for s in samples:
        if (why := why_not_audited(s)) is None:
            kept.append(s)
        else:
            skipped[why] += 1
    return kept, dict(skipped)


def _question(s: Sample) -> Question:
    key = "\x00".join([_norm(s.question), *sorted(_norm(o) for o in s.options)])
    return Question(s.question, tuple(s.options), int(s.answer), key)  # type: ignore[arg-type]


# ---- the rules ----------------------------------------------------------------------------------

def best(scores: Sequence[float]) -> list[int]:
    """Every option with the top score (rounded: float noise never breaks a tie)."""
    rounded = [round(s, 9) for s in scores]
    top = max(rounded)
    return [i for i, s in enumerate(rounded) if s == top]


def _length(sign: int) -> Callable[[list[Question]], Pick]:
    return lambda _: lambda q: best([sign * len(o.strip()) for o in q.options])


def _overlap(questions: list[Question]) -> Pick:
    docs = [set(words(t)) for q in questions for t in (q.question, *q.options)]
    df = Counter(w for d in docs for w in d)
    idf = {w: math.log((1 + len(docs)) / (1 + c)) + 1 for w, c in df.items()}

    def vector(text: str) -> dict[str, float]:
        return {w: c * idf.get(w, 1.0) for w, c in Counter(words(text)).items()}

    def cosine(a: dict[str, float], b: dict[str, float]) -> float:
        dot = sum(v * b.get(w, 0.0) for w, v in a.items())
        norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
        return dot / norm if norm else 0.0

    return lambda q: best([cosine(vector(q.question), vector(o)) for o in q.options])


def _consensus(_: list[Question]) -> Pick:
    def jaccard(a: set[str], b: set[str]) -> float:
        return len(a & b) / len(a | b) if a | b else 0.0

    def pick(q: Question) -> list[int]:
        sets = [set(words(o)) for o in q.options]
        return best([sum(jaccard(a, b) for j, b in enumerate(sets) if j != i) for i, a in enumerate(sets)])
    return pick


def _values(q: Question) -> list[float] | None:
    values = [number(o) for o in q.options]
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def _numeric_prior(train: list[Question]) -> Pick:
    counts = Counter(v[q.answer] for q in train if (v := _values(q)) is not None)

    def pick(q: Question) -> list[int] | None:
        values = _values(q)
        return None if values is None else best([counts[v] for v in values])
    return pick


def _position_prior(train: list[Question]) -> Pick:
    counts = Counter(q.answer for q in train)
    return lambda q: best([counts[i] for i in range(len(q.options))])


def _answer_prior(train: list[Question]) -> Pick:
    counts = Counter(_norm(q.options[q.answer]) for q in train)
    return lambda q: best([counts[_norm(o)] for o in q.options])


RULES = (
    Rule("longest", "the longest option (characters)", _length(1)),
    Rule("shortest", "the shortest option (characters)", _length(-1)),
    Rule("question-overlap", "the option most similar to the question (TF-IDF cosine of words)", _overlap),
    Rule("consensus", "the option sharing the most words with the other options", _consensus),
    Rule("numeric-prior", "the offered number most often the answer in the other half (numeric options)",
         _numeric_prior, fitted=True),
    Rule("position-prior", "the position most often the answer in the other half", _position_prior, fitted=True),
    Rule("answer-prior", "the option text most often the answer in the other half", _answer_prior, fitted=True),
)


def _score(pick: Pick, q: Question) -> float | None:
    chosen = pick(q)
    if chosen is None:
        return None
    return 1.0 / len(chosen) if q.answer in chosen else 0.0


def halves(questions: Sequence[Question], seed: int = 0) -> list[int]:
    """0 or 1 per question: distinct keys permuted by default_rng(seed), the first ceil(half) in 0."""
    keys = list(dict.fromkeys(q.key for q in questions))
    order = np.random.default_rng(seed).permutation(len(keys))
    first = {keys[int(i)] for i in order[: (len(keys) + 1) // 2]}
    return [0 if q.key in first else 1 for q in questions]


def two_fold(build: Callable[[list[Question]], Pick], questions: Sequence[Question], positions: Sequence[int],
             half: Sequence[int]) -> dict[int, float | None]:
    """Each position's score under `build` fitted on the positions of the other half."""
    out: dict[int, float | None] = {}
    for fold in (0, 1):
        pick = build([questions[i] for i in positions if half[i] != fold])
        out.update({i: _score(pick, questions[i]) for i in positions if half[i] == fold})
    return out


# ---- rows ---------------------------------------------------------------------------------------

def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of successes / n, as fractions."""
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def row(rule: str, group: str, scored: Sequence[tuple[float, int]]) -> Row:
    """A row from (score, number of options) per scored question."""
    if not scored:
        return Row(rule, group, 0, None, None, None, None, "n/a")
    n = len(scored)
    total = sum(s for s, _ in scored)
    chance = 100 * sum(1 / k for _, k in scored) / n
    low, high = (100 * b for b in wilson(total, n))
    verdict = "leaks" if low > chance + 1e-9 else "below" if high < chance - 1e-9 else "ok"
    return Row(rule, group, n, 100 * total / n, chance, low, high, verdict)


def _label_values(sample: Sample, key: str) -> list[str]:
    v = sample.labels.get(key)
    return [] if v is None else [str(x) for x in v] if isinstance(v, list) else [str(v)]


def default_by(samples: Sequence[Sample]) -> str | None:
    """The label to group by: the first of PREFERRED_BY any sample has, else the first label (in
    order of appearance) that partitions — one value per sample, 2 to n/2 distinct values."""
    keys = list(dict.fromkeys(k for s in samples for k in s.labels))
    for key in PREFERRED_BY:
        if key in keys:
            return key
    for key in keys:
        values = [s.labels.get(key) for s in samples]
        if all(isinstance(v, str) for v in values) and 2 <= len(set(values)) <= max(2, len(samples) // 2):
            return key
    return None


def groups_of(samples: Sequence[Sample], by: str | None) -> dict[str, list[int]]:
    """Positions per group: "all", then "<by>: <value>" per value (sorted; multi-label: in each)."""
    groups: dict[str, list[int]] = {ALL: list(range(len(samples)))}
    if by:
        found: dict[str, list[int]] = {}
        for i, s in enumerate(samples):
            for v in _label_values(s, by):
                found.setdefault(v, []).append(i)
        groups.update({f"{by}: {v}": found[v] for v in sorted(found)})
    return groups


def audit_rules(samples: Sequence[Sample], *, by: str | None = None, seed: int = 0, source: str = "",
                extra: dict[str, Sequence[float | None]] | None = None) -> LeakResult:
    """Every rule over every group. `by`: the label to group by (None: `default_by`; "" none).
    `extra`: more rows, rule name -> a score per audited sample (None: not scored), e.g. a
    text-only model's (lvu.analysis.leak). Raises nothing for an empty set: every row is n/a."""
    audited, skipped = audited_samples(samples)
    by = default_by(audited) if by is None else (by or None)
    questions = [_question(s) for s in audited]
    groups = groups_of(audited, by)
    half = halves(questions, seed)
    rows: list[Row] = []
    plain = {r.name: [_score(r.build(questions), q) for q in questions] for r in RULES if not r.fitted}
    for rule in RULES:
        for group, positions in groups.items():
            if rule.fitted:
                scores = two_fold(rule.build, questions, positions, half)
            else:
                scores = {i: plain[rule.name][i] for i in positions}
            rows.append(row(rule.name, group, [(s, len(questions[i].options)) for i, s in scores.items()
                                               if s is not None]))
    for name, values in (extra or {}).items():
        rows += [row(name, group, [(values[i], len(questions[i].options)) for i in positions  # type: ignore[misc]
                                   if values[i] is not None]) for group, positions in groups.items()]
    return LeakResult(rows, len(samples), len(audited), skipped, by, seed, source)


# ---- what a build prints and writes -------------------------------------------------------------

def _fmt(r: Row) -> str:
    return f"{r.accuracy:.1f} % [{r.low:.1f}, {r.high:.1f}] of {r.n} questions vs chance {r.chance:.1f} %"


def leak_warnings(result: LeakResult) -> list[str]:
    """One line per rule that leaks somewhere: the overall row when it leaks (else the first group
    that does), and the other groups where it leaks."""
    lines = []
    for rule in dict.fromkeys(r.rule for r in result.rows):
        bad = [r for r in result.rows if r.rule == rule and r.verdict in ("leaks", "below")]
        if not bad:
            continue
        first, more = bad[0], [r.group for r in bad[1:]]
        how = "its pick is rarely the answer: ruling it out beats chance" if first.verdict == "below" \
            else "the options alone answer above chance"
        also = f"; also in {', '.join(more[:4])}{' ...' if len(more) > 4 else ''}" if more else ""
        lines.append(f"warning: options-only leak — {rule} ({first.group}): {_fmt(first)} — {how}{also}")
    return lines


def write_leak(result: LeakResult, folder: str | Path) -> Path:
    """FOLDER/leak.json: the result as stable JSON (keys sorted, numbers to 2 decimals), atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LEAK_FILE
    tmp = folder / f".{LEAK_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(result.to_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
