"""Review protocols: what `lvu review --protocol NAME|FILE` asks of whom. A protocol is data — the
criteria, the roles in their rounds, the fields each role may edit, and the decision rule — so a
new benchmark's review is a YAML/JSON file, not code (docs/review.md "Protocols").

Rules:
- `majority` (Neptune): round 1 has `people` raters per question, and their majority decides
  (lvu.web.review_rules.final_decision); a round-2 examiner's decision, when submitted, is final.
- `chain` (LongVideoBench, Video-MME, LVBench): one decision per round. A question goes to the
  next role only when this round's verdict is that role's `after` (e.g. LongVideoBench's reviser
  sees only what the examiner rejected); otherwise this round's decision is final. Each role's
  edits apply on top of the earlier ones (lvu.web.review_chain).

The built-ins are traced to the papers in their `source`; where a paper is silent, lvu's choice is
said there and in docs/review.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lvu.benchmarks.videomme import TASK_TYPES as VIDEOMME_TASK_TYPES
from lvu.errors import LvuError
from lvu.web.review_rules import CRITERIA

EditableField = Literal["quality", "modality", "answer", "decoys", "question", "options", "category",
                        "referring_query", "referred_moments"]
NEPTUNE_EDITS: tuple[EditableField, ...] = ("quality", "modality", "answer", "decoys")
"""What a Neptune rater decides (lvu.web.review_rules.Decision): the majority rule counts these."""
EXPORTS = ("neptune", "longvideobench", "videomme", "lvbench", "jsonl")


class Role(BaseModel):
    """One round's people: what they check and what they may change."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,23}$")
    title: str = ""
    """What the role does, shown on its pages."""
    people: int = Field(default=1, ge=1, le=9)
    """Decisions per question in this round (the majority rule's raters; 1 in a chain)."""
    edits: list[EditableField] = Field(default_factory=list)
    after: Literal["accepted", "rejected"] | None = None
    """The previous round's verdict that sends a question to this role (None: every question)."""
    requires: list[Literal["referring_query", "referred_moments", "category"]] = Field(default_factory=list)
    """What must be set before this role may accept."""


class ReviewProtocol(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
    title: str = ""
    source: str = ""
    """Where the protocol comes from (paper and section), and lvu's choices where it is silent."""
    criteria: dict[str, str] = Field(default_factory=dict)
    """key -> the check as shown; accepting needs every one ticked."""
    categories: dict[str, str] = Field(default_factory=dict)
    """code -> its description; empty: the category is free text."""
    levels: dict[str, str] = Field(default_factory=dict)
    """category code -> its level (LongVideoBench's L1-Perception / L2-Relation)."""
    category_label: str = "category"
    """The sample label the category is read from and written to."""
    implicit_query: list[str] = Field(default_factory=list)
    """Categories whose referring query is implicit (needs no highlight)."""
    roles: list[Role] = Field(min_length=1, max_length=4)
    rule: Literal["majority", "chain"] = "chain"
    export: Literal["neptune", "longvideobench", "videomme", "lvbench", "jsonl"] = "jsonl"

    @model_validator(mode="after")
    def _consistent(self) -> ReviewProtocol:
        names = [r.name for r in self.roles]
        if len(set(names)) != len(names):
            raise ValueError(f"role names repeat: {names}")
        if any(len(k) > 40 or not k.replace("_", "").isalnum() for k in self.criteria):
            raise ValueError("criterion keys are 1-40 letters, digits or '_'")
        if self.roles[0].after is not None:
            raise ValueError(f"the first role ({names[0]}) gets every question: drop its `after`")
        if self.rule == "majority":
            extra = sorted({f for r in self.roles for f in r.edits} - set(NEPTUNE_EDITS))
            if len(self.roles) > 2 or extra or any(r.requires or r.after for r in self.roles):
                raise ValueError("the majority rule is Neptune's: raters then an optional examiner, editing only "
                                 f"{', '.join(NEPTUNE_EDITS)} — use rule: chain for other edits")
        else:
            if any(r.people != 1 for r in self.roles):
                raise ValueError("a chain has one decision per round: set people: 1 (or use rule: majority)")
            if any(f in r.edits for r in self.roles for f in ("modality", "decoys")):
                raise ValueError("modality and decoys are Neptune's (rule: majority); a chain edits options instead")
        return self

    def round_of(self, role: str) -> int:
        return next(i + 1 for i, r in enumerate(self.roles) if r.name == role)

    def role(self, round: int) -> Role:
        return self.roles[round - 1]

    def canonical(self) -> str:
        return json.dumps(self.model_dump(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def digest(self) -> str:
        """What the review file records: decisions made under one protocol never count under another."""
        return hashlib.sha256(self.canonical().encode()).hexdigest()[:16]

    @property
    def edits_beyond_neptune(self) -> bool:
        return self.rule == "chain"


# ---- the built-ins -----------------------------------------------------------------------------------

NEPTUNE = ReviewProtocol(
    name="neptune", title="Neptune: three raters per question, then an examiner",
    source="Neptune §4.5 / App. C.3: raters judge quality (4 criteria, not listed in the paper: lvu's), the "
           "modality, the answer, and pick 4 of 6 decoys; majority over raters; lvu adds the examiner round",
    criteria=CRITERIA, rule="majority", export="neptune",
    roles=[Role(name="rater", title="rate the question", people=3, edits=list(NEPTUNE_EDITS)),
           Role(name="examiner", title="resolve the raters' disagreements (final)", edits=list(NEPTUNE_EDITS))])

LVB_CATEGORIES: dict[str, tuple[str, str]] = {
    "S2E": ("L1-Perception", "SCENE-REFERRED EVENT: an event that happens in the referred scene"),
    "S2O": ("L1-Perception", "SCENE-REFERRED OBJECT EXISTENCE: an object that exists in the referred scene"),
    "S2A": ("L1-Perception", "SCENE-REFERRED OBJECT ATTRIBUTE: an attribute of an object in the referred scene"),
    "E2O": ("L1-Perception", "EVENT-REFERRED OBJECT: an object that participates in the referred event"),
    "O2E": ("L1-Perception", "OBJECT-REFERRED EVENT: an event while the referred object appears"),
    "T2E": ("L1-Perception", "TEXT-REFERRED EVENT: an event concurrent with the referred subtitle"),
    "T2O": ("L1-Perception", "TEXT-REFERRED OBJECT EXISTENCE: an object that exists while the subtitle is shown"),
    "T2A": ("L1-Perception", "TEXT-REFERRED OBJECT ATTRIBUTE: an attribute of an object while the subtitle is shown"),
    "E3E": ("L2-Relation", "EVENT BEFORE/AFTER EVENT: an event that happens before/after the referred event"),
    "O3O": ("L2-Relation", "OBJECT BEFORE/AFTER OBJECT: an object that appears before/after the referred object"),
    "SSS": ("L2-Relation", "SEQUENCE OF SCENES: the order of several scenes (the query is in the options)"),
    "SOS": ("L2-Relation", "SCENE-REFERRED OBJECT TRACKING: another scene where the referred object appears"),
    "SAA": ("L2-Relation", "SCENE-REFERRED OBJECT ATTRIBUTE CHANGE: how an object's attribute changes between "
                           "two scenes"),
    "T3E": ("L2-Relation", "EVENT BEFORE/AFTER TEXT: an event that happens before/after the referred subtitle"),
    "T3O": ("L2-Relation", "OBJECT BEFORE/AFTER TEXT: an object that appears before/after the referred subtitle"),
    "TOS": ("L2-Relation", "TEXT-REFERRED OBJECT TRACKING: the subtitle shown when the referred object appears"),
    "TAA": ("L2-Relation", "TEXT-REFERRED OBJECT ATTRIBUTE CHANGE: how an object's attribute changes between "
                           "two subtitles"),
}
"""LongVideoBench Table 2: 17 categories in 2 levels (8 perception, 9 relation)."""

LONGVIDEOBENCH = ReviewProtocol(
    name="longvideobench", title="LongVideoBench: writer, examiner, reviser",
    source="LongVideoBench §3.3: the primary annotator writes the question with its referring query highlighted "
           "and the referred moments marked (and drops unusable videos); the examiner checks the category and "
           "the annotation requirements; the reviser revises what the examiner marked incorrect. Categories: "
           "Table 2. lvu: moments are marked in seconds (the paper: frame indices; export converts), and the "
           "examiner may re-highlight the query after editing the question",
    criteria={"category": "The question is in the right category (its referring query and answer are of the "
                          "category's kind)",
              "referring_query": "The question contains its referring query, highlighted, and the referred "
                                 "moments are marked",
              "options": "4-5 options, one correct; the distractors are relevant to the question and the video",
              "video": "The video is usable (not still frames, subtitles complete)"},
    categories={code: f"{level}: {text}" for code, (level, text) in LVB_CATEGORIES.items()},
    levels={code: level for code, (level, _) in LVB_CATEGORIES.items()},
    category_label="question_category", implicit_query=["SSS"], export="longvideobench",
    roles=[Role(name="writer", title="annotate: highlight the referring query, mark the referred moments",
                edits=["question", "options", "answer", "category", "referring_query", "referred_moments"],
                requires=["referring_query", "referred_moments", "category"]),
           Role(name="examiner", title="examine: accept, or reject to send it to the reviser", after="accepted",
                edits=["question", "category", "referring_query"]),
           Role(name="reviser", title="revise what the examiner rejected (final)", after="rejected",
                edits=["question", "options", "answer", "category", "referring_query", "referred_moments"],
                requires=["referring_query", "category"])])

VIDEOMME_CRITERIA = {
    "language": "The language is correct and unambiguous",
    "answerable": "The question is answerable from the video",
    "options": "The options and the golden option are reasonable",
}
VIDEOMME = ReviewProtocol(
    name="videomme", title="Video-MME: cross-review, then the annotator revises",
    source="Video-MME §2.3 Quality Review: a different annotator checks (i) the language is correct and "
           "unambiguous, (ii) the question is answerable and the options and golden option are reasonable; "
           "questions that fail go back to the annotators for revision",
    criteria=VIDEOMME_CRITERIA, category_label="task_type", export="videomme",
    categories={t: t for t in VIDEOMME_TASK_TYPES},  # Video-MME Fig. 3: the 12 task types, official spelling
    roles=[Role(name="reviewer", title="cross-review the question", edits=["quality", "category"]),
           Role(name="reviser", title="revise what the reviewer rejected (final)", after="rejected",
                edits=["question", "options", "answer", "category"])])
VIDEOMME_REVISE = ReviewProtocol(
    name="videomme-revise", title="Video-MME: revise questions the text-only filter flagged",
    source="Video-MME §2.3: questions a text-only model answers are returned to the annotators for revision, "
           "then checked again (`lvu build filter --rule text-only --revise`)",
    criteria={}, category_label="task_type", export="videomme",
    roles=[Role(name="reviser", title="rewrite the question so it needs the video, or drop it",
                edits=["question", "options", "answer"])])

LVBENCH = ReviewProtocol(
    name="lvbench", title="LVBench: check the annotation guidelines, then revise",
    source="LVBench §3.3 guidelines (Specificity, Temporal Coverage, Consistency) and §3.4 quality control "
           "(convert needless temporal-grounding questions); the paper gives no further stages: lvu's are a "
           "reviewer and a reviser, like Video-MME's",
    criteria={"specific": "Specific: it refers to a unique scene, event or character, not a vague one",
              "consistent": "Consistent: the correct answer addresses the question, and correct and wrong answers "
                            "do not differ in length, form or format",
              "grounding": "A time range is given only where the referent is not unique without it",
              "clue": "The clue span (time reference) is marked and right"},
    categories={code: name for name, code in (("entity recognition", "ER"), ("event understanding", "EU"),
                                              ("key information retrieval", "KIR"), ("temporal grounding", "TG"),
                                              ("reasoning", "Rea"), ("summarization", "Sum"))},
    category_label="question_type", export="lvbench",
    roles=[Role(name="reviewer", title="check the question against the guidelines",
                edits=["quality", "category", "referred_moments"]),
           Role(name="reviser", title="revise what the reviewer rejected (final)", after="rejected",
                edits=["question", "options", "answer", "category", "referred_moments"])])

BUILT_IN: dict[str, ReviewProtocol] = {p.name: p for p in (NEPTUNE, LONGVIDEOBENCH, VIDEOMME, VIDEOMME_REVISE, LVBENCH)}
DEFAULT = "neptune"


def load_protocol(spec: str | Path | None) -> ReviewProtocol:
    """A built-in by name, or a YAML / JSON file of the same schema; LvuError in one line."""
    if spec is None:
        return BUILT_IN[DEFAULT]
    if str(spec) in BUILT_IN:
        return BUILT_IN[str(spec)]
    path = Path(spec)
    if not path.is_file():
        raise LvuError(f"--protocol {spec}: neither a built-in ({', '.join(BUILT_IN)}) nor a file")
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as e:  # yaml.YAMLError and JSONDecodeError are ValueErrors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LvuError(f"{path}: not a readable protocol ({first}) — write it as YAML or JSON") from None
    except Exception as e:  # yaml's errors are not ValueErrors
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LvuError(f"{path}: not valid YAML ({first})") from None
    if not isinstance(data, dict):
        raise LvuError(f"{path}: a protocol is a mapping (name, criteria, roles, rule), not a {type(data).__name__}")
    try:
        return ReviewProtocol.model_validate(data)
    except ValidationError as e:
        error = e.errors()[0]
        where = ".".join(str(x) for x in error["loc"]) or "protocol"
        raise LvuError(f"{path}: {where}: {error['msg']} — see docs/review.md \"Protocols\" for the schema") from None
