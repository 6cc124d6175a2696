"""The `chain` rule's decisions (lvu.web.review_protocols): one person per round edits the question
and accepts or rejects it; the next role sees it only when this verdict is that role's `after`.

An `EditDecision` is a `Decision` plus the fields a chain may edit: the question text, the options
(the answer is then the correct option's text), the category, the referring query (character
offsets [start, end) into the question text) and the referred moments ([start, end] seconds on the
video). `annotation_of` applies the rounds' edits in order to the question as loaded; `chain_outcome`
says whether the question is accepted, rejected, or waits for a role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from lvu.web.review_data import ReviewItem
from lvu.web.review_protocols import ReviewProtocol, Role
from lvu.web.review_rules import MAX_TEXT, Decision, DecisionError, Version

MAX_OPTIONS = 8
REFERRING_QUERY_FIELD = "referring_query"
REFERRED_MOMENTS_FIELD = "referred_moments"
"""Where a sample keeps them (`extra`): read as the writer's starting point, written by export."""


class EditDecision(Decision):
    """A chain role's decision (module docstring). None / empty: not edited by this decision."""

    question: str | None = None
    options: list[str] | None = Field(default=None, max_length=MAX_OPTIONS)
    category: str | None = None
    referring_query: list[int] | None = Field(default=None, min_length=2, max_length=2)
    referred_moments: list[list[float]] = Field(default_factory=list, max_length=32)


@dataclass
class Annotation:
    """The question as the rounds so far leave it."""

    question: str
    options: list[str]
    answer: str
    """The correct option's text (or the open-ended answer)."""
    category: str | None
    referring_query: tuple[int, int] | None
    referred_moments: list[tuple[float, float]]
    quality: dict[str, bool] = field(default_factory=dict)

    def answer_index(self) -> int | str:
        return self.options.index(self.answer) if self.options and self.answer in self.options else self.answer

    def without_query(self) -> str:
        """The question with the referring query cut out (LongVideoBench's `question_wo_referring_query`)."""
        if self.referring_query is None:
            return self.question
        a, b = self.referring_query
        text = " ".join(f"{self.question[:a]} {self.question[b:]}".split())
        return re.sub(r"\s+([,.;:?!])", r"\1", text)  # "Right , what" -> "Right, what"

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "options": self.options, "answer": self.answer,
                "category": self.category, "referring_query": list(self.referring_query) if self.referring_query else None,
                "referred_moments": [list(m) for m in self.referred_moments]}


def _span(value: Any) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return (value[0], value[1])
    return None


def _moments(value: Any) -> list[tuple[float, float]]:
    out = []
    for m in value if isinstance(value, list) else []:
        if isinstance(m, list) and len(m) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in m):
            out.append((float(m[0]), float(m[1])))
    return out


def loaded_annotation(item: ReviewItem, protocol: ReviewProtocol) -> Annotation:
    """The question as the file gives it: the starting point of the first round."""
    s = item.sample
    category = s.labels.get(protocol.category_label)
    if isinstance(category, list):
        category = category[0] if category else None
    return Annotation(s.question, list(s.options), item.answer, category if isinstance(category, str) else None,
                      _span(s.extra.get(REFERRING_QUERY_FIELD)), _moments(s.extra.get(REFERRED_MOMENTS_FIELD)))


def _relocated(span: tuple[int, int] | None, old: str, new: str) -> tuple[int, int] | None:
    """The referring query's span in an edited question: same place if its text is still there,
    else where that text now is, else gone."""
    if span is None or old == new:
        return span
    text = old[span[0]:span[1]]
    if new[span[0]:span[1]] == text:
        return span
    at = new.find(text) if text else -1
    return (at, at + len(text)) if at >= 0 else None


def applied(base: Annotation, d: EditDecision) -> Annotation:
    """`base` with the decision's edits on top."""
    question = d.question if d.question is not None else base.question
    options = list(d.options) if d.options is not None else base.options
    span = _span(d.referring_query) if d.referring_query is not None else _relocated(base.referring_query, base.question,
                                                                                      question)
    moments = [(float(a), float(b)) for a, b in d.referred_moments] or base.referred_moments
    return Annotation(question, options, d.answer if d.answer is not None else base.answer,
                      d.category if d.category is not None else base.category, span, moments, dict(d.quality))


def check_edit(decision: EditDecision, item: ReviewItem, protocol: ReviewProtocol, role: Role,
               base: Annotation) -> EditDecision:
    """The decision tidied and checked against what `role` may edit and what accepting needs;
    DecisionError says what to fix. Drafts only need valid values."""
    allowed = set(role.edits)
    touched = {"quality": bool(decision.quality), "answer": decision.answer is not None,
               "question": decision.question is not None, "options": decision.options is not None,
               "category": decision.category is not None, "referring_query": decision.referring_query is not None,
               "referred_moments": bool(decision.referred_moments),
               "modality": decision.modality is not None, "decoys": bool(decision.decoys or decision.new_decoys)}
    if refused := [f for f, yes in touched.items() if yes and f not in allowed]:
        raise DecisionError(f"the {role.name} may not edit {refused[0]} in the {protocol.name} protocol")
    texts = [decision.question or "", decision.answer or "", decision.reason, decision.note, decision.category or "",
             *(decision.options or [])]
    if any(len(t) > MAX_TEXT for t in texts):
        raise DecisionError(f"a text is longer than {MAX_TEXT} characters — shorten it")
    if unknown := sorted(set(decision.quality) - set(protocol.criteria)):
        raise DecisionError(f"unknown criterion {unknown[0]!r} — use {', '.join(protocol.criteria) or 'none'}")
    question = (decision.question or "").strip()
    options = None if decision.options is None else [o.strip() for o in decision.options]
    category = (decision.category or "").strip() or None
    answer = (decision.answer or "").strip()
    tidy = decision.model_copy(update={
        "question": None if question in ("", base.question) else question,
        "options": None if options is None or options == base.options else options,
        "answer": None if answer in ("", base.answer) else answer,
        "category": None if category == base.category else category,
        "reason": decision.reason.strip(), "note": decision.note.strip()})
    after = applied(base, tidy)
    if tidy.category is not None and protocol.categories and tidy.category not in protocol.categories:
        raise DecisionError(f"category {tidy.category!r} is not one of {protocol.name}'s: "
                            f"{', '.join(protocol.categories)}")
    if tidy.referring_query is not None:
        first, last = tidy.referring_query
        if not 0 <= first < last <= len(after.question):
            raise DecisionError(f"the referring query must be a span of the question text (0..{len(after.question)})")
    duration = item.sample.video.duration
    for a, b in tidy.referred_moments:
        if not (0 <= a <= b) or (duration and b > duration + 0.5):
            raise DecisionError(f"a referred moment [{a}, {b}] is not a span within the video "
                                f"(0..{duration or '?'} s): start ≤ end")
    if tidy.status == "rejected" and not tidy.reason:
        raise DecisionError("say why the question is rejected (reason)")
    if tidy.status != "accepted":
        return tidy
    if "quality" in allowed and (missing := [c for c in protocol.criteria if tidy.quality.get(c) is not True]):
        raise DecisionError(f"a question is accepted only if it meets all {len(protocol.criteria)} criteria "
                            f"({', '.join(missing)} not ticked) — tick them or reject it with a reason")
    if after.options:
        if len({o.lower() for o in after.options}) != len(after.options) or not all(after.options):
            raise DecisionError("options must be distinct and not empty")
        if after.answer not in after.options:
            raise DecisionError("mark which option is correct (the answer must be one of the options)")
    elif not after.answer.strip():
        raise DecisionError("the question has no answer — write it")
    for need in role.requires:
        if need == "category" and not after.category:
            raise DecisionError("choose the question's category")
        if need == "referring_query" and after.referring_query is None and after.category not in protocol.implicit_query:
            raise DecisionError("highlight the referring query: select it in the question text and press "
                                "'mark referring query'")
        if need == "referred_moments" and not after.referred_moments:
            raise DecisionError("mark at least one referred moment with the player (mark start / mark end)")
    return tidy


# ---- the outcome ---------------------------------------------------------------------------------------


@dataclass
class ChainOutcome:
    """accepted / rejected (final), or pending (`waiting` for that role)."""

    status: str
    annotation: Annotation
    waiting: str = ""
    reason: str = ""
    by: dict[str, tuple[str, int]] = field(default_factory=dict)
    """role -> (person, version) of each decision counted."""

    def counted(self) -> dict[str, int]:
        """person -> version counted (the review record's `raters`)."""
        return {person: version for person, version in self.by.values()}


def chain_outcome(item: ReviewItem, protocol: ReviewProtocol, latest: dict[int, Version]) -> ChainOutcome:
    """Walk the rounds (`latest`: round -> the latest submitted version there) as the module says."""
    annotation = loaded_annotation(item, protocol)
    by: dict[str, tuple[str, int]] = {}
    for number, role in enumerate(protocol.roles, start=1):
        v = latest.get(number)
        if v is None:
            return ChainOutcome("pending", annotation, waiting=role.name, by=by)
        annotation = applied(annotation, v.decision)  # type: ignore[arg-type]
        by[role.name] = (v.rater, v.version)
        following = protocol.roles[number] if number < len(protocol.roles) else None
        # LongVideoBench: the examiner's accept is final, a reject goes on to the reviser
        if following is None or following.after not in (None, v.decision.status):
            return ChainOutcome(v.decision.status, annotation, reason=v.decision.reason, by=by)
    return ChainOutcome("pending", annotation, by=by)  # not reached: the last round always decides


def stage_of(item: ReviewItem, protocol: ReviewProtocol, latest: dict[int, Version]) -> tuple[Annotation, int | None]:
    """The annotation as the rounds before leave it, and the round the question waits in (None: decided)."""
    outcome = chain_outcome(item, protocol, latest)
    if outcome.status != "pending":
        return outcome.annotation, None
    return outcome.annotation, protocol.round_of(outcome.waiting)


def before_round(item: ReviewItem, protocol: ReviewProtocol, latest: dict[int, Version], round: int) -> Annotation:
    """What a role in `round` starts from: the edits of the rounds before it."""
    annotation = loaded_annotation(item, protocol)
    for number in range(1, round):
        if (v := latest.get(number)) is not None:
            annotation = applied(annotation, v.decision)  # type: ignore[arg-type]
    return annotation
