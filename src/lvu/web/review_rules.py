"""A rater's decision on one question, what makes it complete, how several raters' decisions
become one (examiner, else majority), and how much the raters agree (Fleiss' kappa per field).

The decision follows Neptune's rater stage (paper §4.5, App. C.3): judge the question's quality
on 4 criteria (any unmet: the question is discarded), say which modality answering needs, accept
or fix the answer, and pick the 4 hardest of the 6 decoys (writing new ones when fewer than 4 are
good). The paper does not list its 4 criteria (its UI screenshot, Fig. 8, was not extracted):
CRITERIA below are lvu's, chosen for what the benchmark wants (docs/review.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lvu.construct.review_labels import MODALITIES

if TYPE_CHECKING:
    from lvu.web.review_data import ReviewItem

CRITERIA: dict[str, str] = {
    "relevant": "It is about this video (not general knowledge)",
    "answerable": "It can be answered from the video's pictures and/or sound",
    "unambiguous": "It is clear and has exactly one correct answer",
    "long_context": "Answering needs more than one moment of the video",
}
MAX_TEXT = 4000
Modality = Literal["audio+video", "video-only", "audio-only"]


class DecisionError(ValueError):
    """Why a decision cannot be saved as it is (shown to the rater as is)."""


class Decision(BaseModel):
    """What one rater decided on one question; `status` draft (autosaved, not counted), accepted
    or rejected. `answer` None = the answer as given; text = the rater's corrected answer.
    `decoys`: chosen indices into the question's decoys; `new_decoys`: decoys the rater wrote."""

    model_config = ConfigDict(extra="forbid", strict=True)  # "yes" is not True, true is not decoy 1
    status: Literal["draft", "accepted", "rejected"]
    quality: dict[str, bool] = Field(default_factory=dict)
    modality: Modality | None = None
    answer: str | None = None
    decoys: list[int] = Field(default_factory=list, max_length=16)
    new_decoys: list[str] = Field(default_factory=list, max_length=16)
    reason: str = ""
    note: str = ""

    @property
    def submitted(self) -> bool:
        return self.status != "draft"

    def valuable(self) -> bool:
        return all(self.quality.get(c) is True for c in CRITERIA)


def check(decision: Decision, item: ReviewItem) -> Decision:
    """The decision tidied (texts stripped, an answer equal to the given one = as is) and checked
    against the question; raises DecisionError saying what to fix. Drafts only need valid values."""
    texts = [decision.answer or "", decision.reason, decision.note, *decision.new_decoys]
    if any(len(t) > MAX_TEXT for t in texts):
        raise DecisionError(f"a text is longer than {MAX_TEXT} characters — shorten it")
    if unknown := sorted(set(decision.quality) - set(CRITERIA)):
        raise DecisionError(f"unknown quality criterion {unknown[0]!r} — use {', '.join(CRITERIA)}")
    if len(set(decision.decoys)) != len(decision.decoys) or any(not 0 <= d < len(item.decoys) for d in decision.decoys):
        raise DecisionError(f"decoys must be distinct numbers 0..{len(item.decoys) - 1}")
    answer = (decision.answer or "").strip()
    new = [d.strip() for d in decision.new_decoys if d.strip()]
    tidy = decision.model_copy(update={"answer": None if answer in ("", item.answer.strip()) else answer,
                                       "new_decoys": new, "reason": decision.reason.strip(),
                                       "note": decision.note.strip()})
    if tidy.status == "rejected" and not tidy.reason:
        raise DecisionError("say why the question is rejected (reason)")
    if tidy.status != "accepted":
        return tidy
    if not tidy.valuable():
        missing = [c for c in CRITERIA if not tidy.quality.get(c)]
        raise DecisionError(f"a question is accepted only if it meets all 4 quality criteria ({', '.join(missing)} "
                            "not ticked) — tick them or reject it with a reason")
    if tidy.modality is None:
        raise DecisionError(f"choose the modality the question needs ({' / '.join(MODALITIES)})")
    final_answer = tidy.answer or item.answer
    if not final_answer.strip():
        raise DecisionError("the question has no answer — write it")
    chosen = [item.decoys[d].strip().lower() for d in tidy.decoys] + [d.lower() for d in new]
    if len(chosen) != item.needed_decoys:
        raise DecisionError(f"choose {item.needed_decoys} decoys (or write new ones): {len(chosen)} given")
    if len(set(chosen)) != len(chosen) or final_answer.strip().lower() in chosen:
        raise DecisionError("a decoy repeats another decoy or the answer — change it")
    return tidy


@dataclass
class Version:
    """One stored version of a decision (the store's row)."""

    sample_id: str
    rater: str
    round: int
    version: int
    created: float
    decision: Decision

    def to_json(self) -> dict[str, Any]:
        return {"sample_id": self.sample_id, "rater": self.rater, "round": self.round, "version": self.version,
                "created": self.created, **self.decision.model_dump()}


# ---- one decision from several -------------------------------------------------------------------


@dataclass
class Final:
    """A question's outcome: accepted / rejected (by `source`: examiner or majority), unresolved
    (raters disagree: `why`), incomplete (too few submitted decisions)."""

    status: str
    source: str = ""
    why: str = ""
    answer: str = ""
    modality: str | None = None
    decoys: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    raters: dict[str, int] = field(default_factory=dict)
    """rater -> the version counted."""


def _majority(values: list[Any]) -> tuple[Any, bool]:
    """The value more than half of `values` give, and whether there is one."""
    if not values:
        return None, False
    value, n = Counter(values).most_common(1)[0]
    return value, n * 2 > len(values)


def _accepted(d: Decision, item: ReviewItem, source: str, raters: dict[str, int]) -> Final:
    return Final("accepted", source, answer=d.answer or item.answer, modality=d.modality,
                 decoys=[item.decoys[i] for i in d.decoys] + d.new_decoys, raters=raters)


def final_decision(item: ReviewItem, ratings: Iterable[Version], examiner: Version | None = None,
                   min_ratings: int = 1) -> Final:
    """The examiner's decision when there is one; else the raters' majority: accept or reject by
    more than half; then modality and answer (as is or one identical edit) by more than half of
    those who accepted, and the `needed` decoys with the most votes (a written decoy is a vote for
    its exact text; ties go to the question's own decoys, in their order, then to the first written)."""
    if examiner is not None and examiner.decision.submitted:
        d = examiner.decision
        raters = {examiner.rater: examiner.version}
        if d.status == "rejected":
            return Final("rejected", "examiner", reasons=[d.reason], raters=raters)
        return _accepted(d, item, "examiner", raters)
    submitted = [v for v in ratings if v.decision.submitted]
    raters = {v.rater: v.version for v in submitted}
    if len(submitted) < max(1, min_ratings):
        return Final("incomplete", why=f"{len(submitted)} of {min_ratings} decisions submitted", raters=raters)
    verdict, clear = _majority([v.decision.status for v in submitted])
    if not clear:
        return Final("unresolved", why="raters split on accept / reject", raters=raters)
    if verdict == "rejected":
        return Final("rejected", "majority", reasons=[v.decision.reason for v in submitted if v.decision.reason],
                     raters=raters)
    yes = [v.decision for v in submitted if v.decision.status == "accepted"]
    modality, clear = _majority([d.modality for d in yes])
    if not clear:
        return Final("unresolved", why="raters split on the modality", raters=raters)
    answer, clear = _majority([d.answer for d in yes])
    if not clear:
        return Final("unresolved", why="raters split on the answer (as is / edits differ)", raters=raters)
    votes: Counter[tuple[int, int | str]] = Counter()
    order: dict[tuple[int, int | str], int] = {}
    for d in yes:
        for i in d.decoys:
            votes[0, i] += 1
        for text in d.new_decoys:
            order.setdefault((1, text), len(order))
            votes[1, text] += 1
    ranked = sorted(votes, key=lambda k: (-votes[k], k[0], k[1] if k[0] == 0 else order[k]))
    chosen = ranked[:item.needed_decoys]
    if len(chosen) < item.needed_decoys:
        return Final("unresolved", why="too few decoys chosen", raters=raters)
    decoys = [item.decoys[k[1]] if k[0] == 0 else str(k[1]) for k in chosen]  # type: ignore[index]
    return Final("accepted", "majority", answer=answer or item.answer, modality=modality, decoys=decoys,
                 raters=raters)


def field_values(d: Decision, item: ReviewItem) -> dict[str, str | None]:
    """A submitted decision's value per agreement field (None: the field does not apply to it)."""
    yes = d.status == "accepted"
    values: dict[str, str | None] = {"verdict": d.status}
    values |= {f"quality: {c}": "yes" if d.quality.get(c) else "no" for c in CRITERIA}
    values["modality"] = d.modality if yes else None
    values["answer"] = ("edited" if d.answer else "as is") if yes else None
    chosen = set(d.decoys)
    values |= {f"decoy {i + 1}": (("chosen" if i in chosen else "not chosen") if yes else None)
               for i in range(len(item.decoys))}
    return values


def disagreements(item: ReviewItem, decisions: list[Decision]) -> list[str]:
    """The agreement fields on which these submitted decisions differ (the examiner's to-do)."""
    rows = [field_values(d, item) for d in decisions]
    fields = {f for r in rows for f in r}
    out = [f for f in fields if len({r.get(f) for r in rows if r.get(f) is not None}) > 1]
    answers = {d.answer for d in decisions if d.status == "accepted" and d.answer}
    if len(answers) > 1 and "answer" not in out:
        out.append("answer")
    return sorted(out, key=lambda f: list(rows[0]).index(f) if f in rows[0] else 99)


# ---- agreement ---------------------------------------------------------------------------------------


def fleiss_kappa(rows: list[Counter]) -> dict[str, float | None]:
    """Fleiss' kappa over items (`rows`: per item, how many raters chose each category; items with
    fewer than 2 ratings are left out). With n_i ratings of item i: P_i = (sum_j n_ij^2 - n_i) /
    (n_i (n_i - 1)), P = mean P_i (the mean pairwise agreement), p_j = sum_i n_ij / sum_i n_i,
    Pe = sum_j p_j^2, kappa = (P - Pe) / (1 - Pe) — Fleiss (1971) when every item has the same
    number of ratings; None when Pe = 1 (everyone always chose the same category)."""
    rows = [r for r in rows if sum(r.values()) >= 2]
    if not rows:
        return {"items": 0, "agreement": None, "chance": None, "kappa": None, "unanimous": None}
    totals: Counter = Counter()
    agree = []
    for r in rows:
        n = sum(r.values())
        agree.append((sum(c * c for c in r.values()) - n) / (n * (n - 1)))
        totals.update(r)
    observed = sum(agree) / len(agree)
    n_all = sum(totals.values())
    chance = sum((c / n_all) ** 2 for c in totals.values())
    kappa = None if chance >= 1 - 1e-12 else (observed - chance) / (1 - chance)
    unanimous = sum(1 for r in rows if len([c for c in r.values() if c]) == 1) / len(rows)
    return {"items": len(rows), "agreement": observed, "chance": chance, "kappa": kappa, "unanimous": unanimous}


def agreement(rated: Iterable[tuple[ReviewItem, list[Decision]]]) -> list[dict[str, Any]]:
    """Per field: items rated by 2 or more raters, percent agreement (mean pairwise, %), unanimous
    items (%), chance agreement and Fleiss' kappa. The decoy fields pool every decoy position into
    one row `decoys` (chosen / not chosen, per question and decoy)."""
    per_field: dict[str, list[Counter]] = {}
    for item, decisions in rated:
        rows = [field_values(d, item) for d in decisions if d.submitted]
        for name in dict.fromkeys(f for r in rows for f in r):
            key = "decoys" if name.startswith("decoy ") else name
            per_field.setdefault(key, []).append(Counter(r[name] for r in rows if r.get(name) is not None))
    out = []
    for name, counts in per_field.items():
        stats = fleiss_kappa(counts)
        out.append({"field": name, "items": stats["items"],
                    "agreement_pct": None if stats["agreement"] is None else 100 * stats["agreement"],
                    "unanimous_pct": None if stats["unanimous"] is None else 100 * stats["unanimous"],
                    "chance_pct": None if stats["chance"] is None else 100 * stats["chance"],
                    "kappa": stats["kappa"]})
    return out
