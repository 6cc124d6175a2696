"""Parsers for the replies to Neptune's construction prompts (lvu.construct.neptune_prompts).

Each parser takes the raw reply text and returns the parsed result, or raises ReplyParseError with
a one-line reason and the format that was expected; retry_prompt(prompt, reply, error) turns that
into the text of the one retry the pipeline makes. The parsers are tolerant of what models do to a
format — markdown fences and bold, bullets, numbering, "Question 1 (counting):" for "QUESTION 1:
(counting)", labels on the same line, the clustering prompt's own malformed `<topic_scenes>` closing
tag — and strict only where a retry can help: nothing usable in the reply.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from lvu.errors import LvuError

__all__ = [
    "QA", "ClusterTopic", "ReplyParseError", "Segment", "parse_clustering", "parse_decoys",
    "parse_frame_caption", "parse_questions", "parse_shot_summary", "parse_topics",
    "parse_updated_description", "parse_visual_support", "retry_prompt", "segments_from_topics",
]

FRAME_CAPTION_FORMAT = 'the result template, ending with one line "Caption: <a single sentence>"'
SHOT_SUMMARY_FORMAT = "plain text: dense short sentences"
TOPICS_FORMAT = ('one pair per topic, "Topic 1: <topic>" on one line and "Description 1: <description>" '
                 "on the next, up to 5 pairs")
CLUSTERING_FORMAT = ("XML: one <topic> element per topic with the children <description>, <topic_scenes> "
                     "(comma separated scene numbers) and <story>")
UPDATED_DESCRIPTION_FORMAT = "<updated_description>updated video description text</updated_description>"
VISUAL_SUPPORT_FORMAT = "plain text with at most 200 words"
QA_FORMAT = '"QUESTION 1: (capability) full question" and on the next line "CORRECT ANSWER: correct answer"'
DECOYS_FORMAT = ('for each question: "QUESTION 1 (Capability): ...", "CORRECT ANSWER: ...", then one line per '
                 'wrong answer, "WRONG ANSWER 1: ...", "WRONG ANSWER 2: ..."')
RETRY_MARKER = "Your reply could not be parsed:"
"""Starts the sentence retry_prompt appends; a reply generator can tell a retry by it."""
PREVIOUS_REPLY_HEADER = "\n\nYour previous reply was:\n"
"""Where retry_prompt's addition starts: the text before it is the original prompt."""
MAX_TOPICS = 5
_REPLY_ECHO_CHARS = 4000


class ReplyParseError(LvuError):
    """A model's reply is not in the format its prompt asked for. `str(error)` is one line;
    `expected` says the format, for the retry prompt."""

    def __init__(self, reason: str, expected: str) -> None:
        reason = " ".join(reason.split()).rstrip(".")
        super().__init__(reason)
        self.reason, self.expected = reason, expected

    def __reduce__(self):  # keeps `expected` across processes (Ray, multiprocessing)
        return type(self), (self.reason, self.expected)


def retry_prompt(original_prompt: str, reply: str, error: ReplyParseError | str) -> str:
    """The prompt of the one retry: the original prompt, the reply that failed (cut to 4000
    characters) and "Your reply could not be parsed: <why>. Answer again in the format <format>."""
    reason = error.reason if isinstance(error, ReplyParseError) else " ".join(str(error).split()).rstrip(".")
    expected = error.expected if isinstance(error, ReplyParseError) else "the task asks for"
    shown = reply.strip()
    if len(shown) > _REPLY_ECHO_CHARS:
        shown = shown[:_REPLY_ECHO_CHARS] + " [...]"
    return (f"{original_prompt.rstrip()}{PREVIOUS_REPLY_HEADER}{shown or '(empty)'}\n\n"
            f"{RETRY_MARKER} {reason}. Answer again in the format {expected}.")


# ---- shared cleaning ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*```[\w+-]*\s*$", re.M)
_BULLET = re.compile(r"^\s*(?:[-*\u2022>]+\s+|#+\s*|\d+\s*[.)]\s+)")


def _unfence(reply: str) -> str:
    return _FENCE.sub("", reply.replace("\r\n", "\n").replace("\r", "\n"))


def _plain(reply: str) -> str:
    """Fences, markdown bold/italic markers and heading marks gone; lines kept."""
    text = _unfence(reply)
    text = re.sub(r"\*\*|__", "", text)
    return re.sub(r"^\s*#+\s*", "", text, flags=re.M)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _excerpt(reply: str, n: int = 80) -> str:
    text = _one_line(reply)
    return repr(text[:n] + ("..." if len(text) > n else ""))


def _prose(reply: str, what: str, expected: str) -> str:
    """A plain-text reply as one line: fences, bold and bullets gone; a leading label line such as
    "Summary:" dropped."""
    lines = [_BULLET.sub("", ln).strip() for ln in _plain(reply).split("\n")]
    lines = [ln for ln in lines if ln]
    if lines and re.fullmatch(r"[\w\s]{1,40}:", lines[0]):
        lines = lines[1:]
    text = _one_line(" ".join(lines))
    if not text:
        raise ReplyParseError(f"the {what} reply is empty", expected)
    return text


# ---- frame captions, shot summaries, visual support -------------------------------------------------

_CAPTION = re.compile(r"^\W*caption\W*?:\s*(.*)$", re.I)
_TEMPLATE_LABEL = re.compile(r"^\W*(?:answer|question)\s*\(\s*(\w+)\s*\)\s*:\s*(.*)$", re.I)


def parse_frame_caption(reply: str) -> str:
    """The text after the last "Caption:" line (continued on the lines up to a blank line), as one
    line. Fallback when there is no "Caption:" line: the "Answer(General):" text. Neither: malformed."""
    lines = _plain(reply).split("\n")
    caption: str | None = None
    general: str | None = None
    i = 0
    while i < len(lines):
        m = _CAPTION.match(lines[i])
        if m:
            parts = [m.group(1)]
            while i + 1 < len(lines) and lines[i + 1].strip() and not _TEMPLATE_LABEL.match(lines[i + 1]) \
                    and not _CAPTION.match(lines[i + 1]):
                i += 1
                parts.append(lines[i])
            caption = _one_line(" ".join(parts))
        else:
            label = _TEMPLATE_LABEL.match(lines[i])
            if label and label.group(1).lower() == "general":
                general = _one_line(label.group(2))
        i += 1
    if caption:
        return caption
    if general:
        return general
    why = "its Caption: line is empty" if caption is not None else \
        f"it has no Caption: line (and no Answer(General): line): {_excerpt(reply)}"
    raise ReplyParseError(f"the frame caption reply is malformed: {why}", FRAME_CAPTION_FORMAT)


def parse_shot_summary(reply: str) -> str:
    """The shot caption as one line (plain text; bullets and a leading "Summary:" line dropped)."""
    return _prose(reply, "shot summary", SHOT_SUMMARY_FORMAT)


def parse_visual_support(reply: str) -> str:
    """The visual support as one line (plain text, as the prompt asks)."""
    return _prose(reply, "visual support", VISUAL_SUPPORT_FORMAT)


# ---- topics from the transcript --------------------------------------------------------------------------

_TOPIC = re.compile(r"^topic\s*\d*\s*[:.)\-\u2013]\s*(.*)$", re.I)
_DESCRIPTION = re.compile(r"^description\s*\d*\s*[:.)\-\u2013]\s*(.*)$", re.I)
_INLINE_DESCRIPTION = re.compile(r"\s*[-|\u2013;,]?\s*(?=\bdescription\s*\d*\s*:)", re.I)


def _is_placeholder(text: str) -> bool:
    return not text or bool(re.fullmatch(r"<[^<>]*>", text))


def parse_topics(reply: str) -> list[tuple[str, str]]:
    """Up to 5 (topic, description) pairs, in order. Understood: "Topic 1: X" / "Description 1: Y"
    lines (our output format; bold, bullets or both on one line too), `<topic>` XML with a title and a
    description, and a plain list ("1. X: Y", "- X - Y", or a title line with its description on the
    next line). A description may be empty; no topic at all is malformed."""
    text = _plain(reply)
    pairs = _xml_topics(text) if re.search(r"<topic\b", text, re.I) else []
    if not pairs:
        pairs = _labelled_topics(text)
    if not pairs:
        pairs = _listed_topics(text)
    pairs = [(_one_line(t), _one_line(d)) for t, d in pairs if not _is_placeholder(_one_line(t))]
    if not pairs:
        raise ReplyParseError(f"found no Topic and Description pairs in the topics reply: {_excerpt(reply)}",
                              TOPICS_FORMAT)
    return pairs[:MAX_TOPICS]


def _xml_topics(text: str) -> list[tuple[str, str]]:
    pairs = []
    for block in re.findall(r"<topic\b[^>]*>(.*?)(?:</topic>|(?=<topic\b)|$)", text, re.I | re.S):
        title = _tag(block, "title|name|topic_title|topic_name|heading")
        description = _tag(block, "description") or ""
        if title is None:
            title, description = (description, "") if description else (_strip_tags(block), "")
        pairs.append((title, description))
    return pairs


def _labelled_topics(text: str) -> list[tuple[str, str]]:
    pairs: list[list[str]] = []
    for raw in _INLINE_DESCRIPTION.sub("\n", text).split("\n"):
        line = _BULLET.sub("", raw).strip()
        if m := _TOPIC.match(line):
            pairs.append([m.group(1), ""])
        elif (m := _DESCRIPTION.match(line)) and pairs and not pairs[-1][1]:
            pairs[-1][1] = m.group(1)
        elif line and pairs and pairs[-1][1] and raw.startswith((" ", "\t")):
            pairs[-1][1] += " " + line  # an indented continuation of the description
    return [(t, d) for t, d in pairs]


def _listed_topics(text: str) -> list[tuple[str, str]]:
    pairs: list[list[str]] = []
    for raw in text.split("\n"):
        if not raw.strip():
            continue
        if _BULLET.match(raw):
            item = _BULLET.sub("", raw).strip()
            m = re.match(r"(.*?)(?::|\s[-\u2013\u2014]\s)(.*)$", item)
            pairs.append([m.group(1).strip(), m.group(2).strip()] if m else [item, ""])
        elif pairs and not pairs[-1][1]:
            pairs[-1][1] = raw.strip()  # the title's description on the next line
    return [(t, d) for t, d in pairs]


# ---- shot clustering (XML) ----------------------------------------------------------------------------


class ClusterTopic(NamedTuple):
    """One `<topic>` of the clustering reply: its description, its scene numbers (sorted, unique)
    and its story (the caption shared by the topic's segments)."""

    description: str
    scenes: tuple[int, ...]
    story: str


def _strip_tags(text: str) -> str:
    return _one_line(html.unescape(re.sub(r"<[^>]*>", " ", text)))


def _tag(block: str, names: str) -> str | None:
    """The text of the first <name>...</name> (or up to the next tag when it is not closed)."""
    m = re.search(rf"<(?:{names})\b[^>]*>(.*?)(?:</(?:{names})>|(?=<)|$)", block, re.I | re.S)
    return _strip_tags(m.group(1)) if m else None


def _scene_numbers(text: str) -> list[int]:
    numbers: list[int] = []
    for a, b in re.findall(r"(\d+)(?:\s*(?:-|\u2013|to)\s*(\d+))?", text):
        lo, hi = int(a), int(b or a)
        numbers.extend(range(lo, hi + 1) if 0 <= hi - lo <= 1000 else [lo, hi])
    return numbers


def parse_clustering(reply: str, scenes: Iterable[int] | None = None) -> list[ClusterTopic]:
    """The `<topic>` elements of the clustering reply, in order. Tolerated: markdown fences, a root
    element, the paper's `<topic_scenes>` used as its own closing tag, a missing `</topic>` or
    `</story>` (a reply cut at the length limit), "Scene 3", ranges "3-5", XML entities. `scenes`
    (the scene numbers of this part of the script), when given, drops numbers outside it. Topics
    with no scene left are dropped; none left is malformed."""
    known = set(scenes) if scenes is not None else None
    text = _unfence(reply)
    topics = []
    for block in re.findall(r"<topic\b[^>]*>(.*?)(?:</topic>|(?=<topic\b)|$)", text, re.I | re.S):
        m = re.search(r"<topic_scenes\b[^>]*>(.*?)(?:</?topic_scenes>|(?=<)|$)", block, re.I | re.S)
        numbers = _scene_numbers(html.unescape(m.group(1))) if m else []
        numbers = sorted({n for n in numbers if known is None or n in known})
        if numbers:
            topics.append(ClusterTopic(_tag(block, "description") or "", tuple(numbers), _tag(block, "story") or ""))
    if not topics:
        where = f" among scenes {min(known)}-{max(known)}" if known else ""
        raise ReplyParseError(f"found no <topic> with <topic_scenes> numbers{where} in the clustering reply: "
                              f"{_excerpt(reply)}", CLUSTERING_FORMAT)
    return topics


class Segment(NamedTuple):
    """Consecutive scenes of one topic: `topic` indexes the topics list."""

    topic: int
    scenes: tuple[int, ...]


def segments_from_topics(topics: Sequence[ClusterTopic], scenes: Sequence[int]) -> list[Segment]:
    """The paper's segments: consecutive scenes of the same topic merged; non-contiguous scenes of a
    topic are separate segments. A scene in several topics belongs to the first; a scene in none joins
    the topic of the scene before it (the first scenes: the first assigned scene's topic)."""
    owner: dict[int, int] = {}
    for index, topic in enumerate(topics):
        for n in topic.scenes:
            owner.setdefault(n, index)
    order = list(scenes)
    assigned = [owner.get(n) for n in order]
    first = next((t for t in assigned if t is not None), None)
    if first is None:
        raise ValueError("no scene of this script is in any topic")
    segments: list[Segment] = []
    current = first
    for n, t in zip(order, assigned):
        current = t if t is not None else current
        if segments and segments[-1].topic == current:
            segments[-1] = Segment(current, segments[-1].scenes + (n,))
        else:
            segments.append(Segment(current, (n,)))
    return segments


# ---- segment captions -------------------------------------------------------------------------------


def parse_updated_description(reply: str) -> str:
    """The text of `<updated_description>` as one line (an unclosed tag runs to the end)."""
    m = re.search(r"<updated_description\b[^>]*>(.*?)(?:</updated_description>|$)", _unfence(reply), re.I | re.S)
    text = _strip_tags(m.group(1)) if m else ""
    if not text:
        why = "its <updated_description> is empty" if m else f"it has no <updated_description>: {_excerpt(reply)}"
        raise ReplyParseError(f"the segment caption reply is malformed: {why}", UPDATED_DESCRIPTION_FORMAT)
    return text


# ---- questions, answers, decoys ---------------------------------------------------------------------


class QA(NamedTuple):
    """One stage-1 question: its open-set capability label (may be ""), the question, the answer."""

    capability: str
    question: str
    answer: str


_QUESTION = re.compile(
    r"^question(?![a-z])\s*(?P<num>\d+)?\s*(?:\((?P<cap1>[^)]*)\))?\s*(?P<sep>[:.)\-\u2013])?\s*"
    r"(?:\((?P<cap2>[^)]*)\)\s*[:\-\u2013]?)?\s*(?P<text>.*)$", re.I)
_ANSWER = re.compile(r"^(?:(?P<kind>correct|wrong|incorrect|false)\s+)?answers?\s*(?P<num>\d+)?\s*"
                     r"[:.)\-\u2013]\s*(?P<text>.*)$", re.I)
_DECOY = re.compile(r"^(?:distractor|decoy)s?\s*(?P<num>\d+)?\s*[:.)\-\u2013]\s*(?P<text>.*)$", re.I)
_INLINE_LABEL = re.compile(r"(?<=\S)\s+(?=(?:correct|wrong|incorrect)\s+answer\s*\d*\s*:|(?-i:QUESTION)\s*\d+\s*[:(])",
                           re.I)


@dataclass
class _Block:
    num: int | None = None
    capability: str = ""
    question: str = ""
    answer: str = ""
    wrong: list[str] = field(default_factory=list)


def _scan(reply: str) -> list[_Block]:
    """QUESTION / CORRECT ANSWER / WRONG ANSWER blocks, in order. A block starts at a QUESTION line,
    at a CORRECT ANSWER line when the current block already has one, or at a "WRONG ANSWER 1" after
    wrong answers; a line without a label
    continues the field before it (up to a blank line), and under a bare "WRONG ANSWERS:" header each
    line is one more wrong answer."""
    blocks: list[_Block] = []
    extend: str | None = None  # the field of blocks[-1] an unlabelled line continues
    listing = False
    for raw in _INLINE_LABEL.sub("\n", _plain(reply)).split("\n"):
        line = _BULLET.sub("", raw).strip()
        if not line:
            if extend and (blocks[-1].wrong[-1] if extend == "wrong" else getattr(blocks[-1], extend)):
                extend = None
            continue
        q = _QUESTION.match(line)
        if q and (q.group("num") or q.group("cap1") or q.group("cap2") or q.group("sep")):
            cap = q.group("cap1") or q.group("cap2") or ""
            blocks.append(_Block(int(q.group("num")) if q.group("num") else None, _one_line(cap).strip(" :"),
                                 q.group("text").strip()))
            extend, listing = "question", False
            continue
        a = _ANSWER.match(line) or _DECOY.match(line)
        if a:
            wrong = (a.groupdict().get("kind") or ("wrong" if a.re is _DECOY else "correct")).lower() != "correct"
            text = a.group("text").strip()
            restart = wrong and a.group("num") == "1" and blocks and blocks[-1].wrong  # numbering starts over
            if not blocks or restart or (not wrong and (blocks[-1].answer or blocks[-1].wrong)):
                blocks.append(_Block())
            listing = False
            if not wrong:
                blocks[-1].answer, extend = text, "answer"
            elif text or a.group("num"):
                blocks[-1].wrong.append(text)  # empty: its text is on the next line
                extend = "wrong"
            else:
                listing, extend = True, None  # a "WRONG ANSWERS:" header; a list follows
            continue
        if listing:
            blocks[-1].wrong.append(line)
        elif extend == "wrong":
            blocks[-1].wrong[-1] = (blocks[-1].wrong[-1] + " " + line).strip()
        elif extend == "question" and not blocks[-1].question and (c := re.match(r"\(([^)]*)\)\s*(.*)", line)):
            blocks[-1].capability = blocks[-1].capability or c.group(1).strip()  # "QUESTION 1:" then "(cap) ..."
            blocks[-1].question = c.group(2)
        elif extend:
            setattr(blocks[-1], extend, (getattr(blocks[-1], extend) + " " + line).strip())
    for b in blocks:
        b.question, b.answer = _one_line(b.question), _one_line(b.answer)
        b.wrong = [_one_line(w) for w in b.wrong if w.strip()]
    return blocks


def parse_questions(reply: str) -> list[QA]:
    """The stage-1 questions with their answers, in order. Understood: "QUESTION 1: (counting) ...",
    "Question 1 (counting): ...", "**Question (counting):** ...", numbered or bulleted lines, the
    answer on the question's line or the next ones. A question without an answer is dropped (a reply
    cut at the token limit loses its last one); none with an answer is malformed."""
    blocks = _scan(reply)
    qas = [QA(b.capability, b.question, b.answer) for b in blocks if b.question and b.answer]
    if not qas:
        asked = sum(1 for b in blocks if b.question)
        why = f"none of its {asked} questions has a CORRECT ANSWER line" if asked else \
            f"it has no QUESTION line: {_excerpt(reply)}"
        raise ReplyParseError(f"found no question with an answer in the reply: {why}", QA_FORMAT)
    return qas


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _norm(a), _norm(b)).ratio()


def parse_decoys(reply: str, questions: Sequence[QA], decoy_number: int = 6, *,
                 partial: bool = False) -> list[list[str]]:
    """The wrong answers for each of `questions` (same order): exactly `decoy_number` each, after
    repeats and copies of the correct answer are dropped. Blocks are matched to questions by the
    repeated question text, else the repeated answer, else the question number, else position (when
    the counts agree). A question with another count (more or fewer, or missing) is malformed — the
    error names every such question — unless `partial` (then each gets what there is, at most
    `decoy_number`, maybe [])."""
    blocks = [b for b in _scan(reply) if b.wrong]
    matched: dict[int, _Block] = {}
    rest = []
    for b in blocks:  # by text first: models renumber and reorder
        free = [i for i in range(len(questions)) if i not in matched]
        scores = [(max(_ratio(b.question, questions[i].question) if b.question else 0.0,
                       _ratio(b.answer, questions[i].answer) if b.answer and not b.question else 0.0), i)
                  for i in free]
        best = max(scores, default=(0.0, -1))
        if best[0] >= 0.75:
            matched[best[1]] = b
        else:
            rest.append(b)
    for b in rest:
        if b.num is not None and 1 <= b.num <= len(questions) and b.num - 1 not in matched:
            matched[b.num - 1] = b
        elif len(blocks) == len(questions) and blocks.index(b) not in matched:
            matched[blocks.index(b)] = b
    out: list[list[str]] = []
    wrong_counts: list[str] = []
    for i, qa in enumerate(questions):
        wrong: list[str] = []
        for w in matched[i].wrong if i in matched else []:
            if _norm(w) and _norm(w) != _norm(qa.answer) and _norm(w) not in map(_norm, wrong):
                wrong.append(w)
        if len(wrong) != decoy_number:
            got = f"has {len(wrong)} wrong answers" if i in matched else "is missing"
            wrong_counts.append(f"question {i + 1} ({qa.question[:60]!r}) {got}")
        out.append(wrong[:decoy_number])
    if wrong_counts and not partial:
        raise ReplyParseError(f"in the decoys reply {'; '.join(wrong_counts)} — exactly {decoy_number} different "
                              f"wrong answers per question are needed (repeats and copies of the correct answer "
                              f"do not count)", DECOYS_FORMAT)
    return out
