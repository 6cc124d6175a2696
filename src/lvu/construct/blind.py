"""The papers' blind filters, as rules over one question (docs/build.md, "Blind filters").

- `neptune-qad` (Neptune Sec. 4.4, App. C.2.5/C.4): the model ranks the options without the video,
  once per seed with the options re-shuffled; the question is removed when the top-ranked option
  is the answer in >= `threshold` of the seeds. With a transcript it is Neptune's ASR filter.
- `lvbench` (LVBench Sec. 3.3): every model (the paper: GLM-4 and GPT-4) answers LVBench's own
  evaluation prompt (Sec. 4.1) without the video; removed iff all the answers are identical and
  correct.
- `text-only` (Video-MME Sec. 3.2): the models answer text-only; removed when any model is correct.

Every reply is parsed by `parse_ranking` (an "ANSWER: C > A > ..." ranking, a bare letter, or free
text naming exactly one option); a reply it cannot read is recorded as unparsable (None), never
guessed, and never counts as correct. The rules as registered objects are lvu.construct.blind_rules;
running them over a benchmark, resumably, is lvu.construct.filtering.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from lvu.benchmarks.jsonl import PROMPT_INSTRUCTION
from lvu.scoring.choice import extract_letter, format_options
from lvu.types import LETTERS, Prompt, Sample, Text

if TYPE_CHECKING:
    from lvu.models.base import Model

QAD_PROMPT = """Instructions:

Carefully analyze the following question and options. Rank the options provided below, from the most likely correct answer to the least likely correct answer. Please respond with "ANSWER" and "EXPLANATION".

Your response should be in the following format: ANSWER: [Letter of the ranking, split by greater than symbol. (e.g., "ANSWER: A > B > C > D > E")]. EXPLANATION: [Provide a brief explanation of your choice. Do not repeat the option.]

QUESTION: {question_str}

Options: {options_str}

Please provide your response below."""
"""Neptune's QAD filter prompt, verbatim from the paper (App. C.2.5)."""

QAD_TRANSCRIPT = "TRANSCRIPT: {transcript_str}\n\n"
"""lvu's wording for the ASR filter: the paper adds "the ASR transcript of the video as additional
context" without giving words, so lvu puts this block right before the prompt's QUESTION line."""

QAD_MAX_TOKENS = 512
"""Room for the ranking and its explanation (the prompt asks for a rationale)."""


TEXT_ONLY_MAX_TOKENS = 64
TEXT_ONLY_HEADER = "This video's subtitles are listed below:"
"""Video-MME's words for subtitles in a prompt: lvu's wording for the transcript (--asr) of the
text-only and lvbench rules, whose papers give no prompt."""


def text_only_prompt(question: str, options: list[str], transcript: str | None = None) -> Prompt:
    """The text-only question for the lvbench and text-only rules (their papers give no prompt):
    lvu's plain multiple-choice text — the question, '(A) option' lines, "Answer with the option's
    letter from the given choices directly." — the same for every benchmark, so every reply is
    read by one parser; with `transcript`, the transcript first, under TEXT_ONLY_HEADER."""
    lines = [question, *format_options(options), PROMPT_INSTRUCTION]
    if transcript is not None:  # one text part: every backend sends it the same way
        lines[:0] = [TEXT_ONLY_HEADER, transcript]
    return Prompt(parts=[Text(text="\n".join(lines))], choices=list(options), question=question,
                  max_tokens=TEXT_ONLY_MAX_TOKENS, temperature=0.0)


def lvbench_prompt(sample: Sample, transcript: str | None = None) -> Prompt:
    """The `lvbench` rule's question: LVBench's evaluation prompt (the one prompt the paper prints,
    Sec. 4.1) without the video, built by lvu's LVBench benchmark itself (lvu.benchmarks.lvbench:
    the released question string with its '(A) …' lines, a newline, PROMPT_INSTRUCTION; 64 tokens,
    temperature 0) with no frames. A `question_raw` the question or options were edited away from
    (a revision) is not shown: the question is rebuilt from its fields. With `transcript`, the
    transcript first, under TEXT_ONLY_HEADER, as for the text-only rule."""
    from lvu.benchmarks.lvbench import LvbenchBenchmark

    prompt = LvbenchBenchmark().build_prompt(_current_raw(sample), [], [])
    if transcript is not None:
        text = "\n".join([TEXT_ONLY_HEADER, transcript, prompt.text])
        prompt = prompt.model_copy(update={"parts": [Text(text=text)]})
    return prompt


def _current_raw(sample: Sample) -> Sample:
    """`sample`, less an `extra.question_raw` that no longer reads as its question and options."""
    from lvu.benchmarks.loading import RecordError
    from lvu.benchmarks.lvbench_release import parse_question

    raw = sample.extra.get("question_raw")
    if raw is None:
        return sample
    try:
        if parse_question(raw) == (sample.question, list(sample.options)):
            return sample
    except RecordError:  # not a question string with option lines: rebuilt from the fields
        pass
    return sample.model_copy(update={"extra": {k: v for k, v in sample.extra.items() if k != "question_raw"}})


def qad_options_str(options: list[str]) -> str:
    """The options as the prompt shows them: 'A. text' lines (the paper does not show its format)."""
    return "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))


def qad_prompt_text(question: str, options: list[str], transcript: str | None = None) -> str:
    """The QAD prompt for options in the order shown; with `transcript`, the ASR filter's prompt."""
    text = QAD_PROMPT.format(question_str=question, options_str=qad_options_str(options))
    if transcript is not None:
        text = text.replace("QUESTION: ", QAD_TRANSCRIPT.format(transcript_str=transcript) + "QUESTION: ", 1)
    return text


def seed_order(question: str, options: list[str], seed: int) -> list[int]:
    """The option order for one seed: a permutation of range(len(options)), the same on every
    machine and run for the same (seed, question, options) (not Python's salted hash)."""
    key = "\x00".join([str(seed), question, *options]).encode()
    rng = random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))
    order = list(range(len(options)))
    rng.shuffle(order)
    return order


# ---- parsing replies -------------------------------------------------------------------------------

_BOX = r"[\[(\"'*]*\s*"
_END = r"\s*[\])\"'*.]*"
_CHAIN = re.compile(rf"(?<![A-Za-z]){_BOX}[A-Za-z]{_END}(?:\s*(?:>|,|>>)\s*{_BOX}[A-Za-z]{_END})+(?![A-Za-z])")
_ANSWER = re.compile(r"\bANSWER\b\s*[:\-]?\s*", re.IGNORECASE)
_SINGLE = re.compile(rf"^{_BOX}([A-Z]){_END}(?:$|[\s,;:])")
_WORDS = re.compile(r"[^\w]+")


def _chain_letters(chain: str, n: int) -> list[int] | None:
    letters = re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", chain)
    ranking: list[int] = []
    for letter in letters:
        i = LETTERS.find(letter.upper())
        if not 0 <= i < n:
            return None  # a letter that names no option: not this question's ranking
        if i not in ranking:
            ranking.append(i)
    return ranking or None


def _named_option(reply: str, options: list[str]) -> int | None:
    """The one option whose text the reply contains (words compared case-insensitively), or None."""
    said = f" {_WORDS.sub(' ', reply.lower()).strip()} "
    texts = [_WORDS.sub(" ", o.lower()).strip() for o in options]
    found = [i for i, t in enumerate(texts) if t and f" {t} " in said]
    # "red" inside "red and blue": the longer option named is the one meant
    found = [i for i in found if not any(j != i and texts[i] in texts[j] for j in found)]
    return found[0] if len(found) == 1 else None


def parse_ranking(reply: str, options: list[str]) -> list[int] | None:
    """The option indices a reply ranks, best first (a bare answer gives one), or None.

    Tried in order: the ranking after "ANSWER:" ("C > A > B", "[C, A, B]", "(C)"); any "X > Y"
    chain; a bare or stated letter ("B", "(B) ...", "The answer is B"); free text that contains
    exactly one option's text. A letter past the last option invalidates the ranking it is in."""
    n = len(options)
    text = reply.strip()
    if not text or not n:
        return None
    for m in _ANSWER.finditer(text):
        segment = text[m.end():].split("\n", 1)[0]
        segment = re.split(r"(?i)\bEXPLANATION\b", segment, maxsplit=1)[0].strip()
        chain = _CHAIN.match(segment)
        if chain and (ranking := _chain_letters(chain.group(0), n)):
            return ranking
        single = _SINGLE.match(segment)
        if single and LETTERS.find(single.group(1)) < n:
            return [LETTERS.index(single.group(1))]
    for chain in _CHAIN.finditer(text):
        if ">" in chain.group(0) and (ranking := _chain_letters(chain.group(0), n)):
            return ranking
    letter = extract_letter(text, n)
    if letter is not None:
        return [letter]
    named = _named_option(text, options)
    return None if named is None else [named]


# ---- verdicts ----------------------------------------------------------------------------------------


@dataclass
class Vote:
    """One model reply about one question: what was asked, what came back, how it was read."""

    model: dict[str, Any]
    """The model's identity (backend, model id...)."""
    prompt: str
    reply: str
    ranking: list[int] | None
    """Original option indices, best first; None: unparsable (or the call failed)."""
    correct: bool | None
    """Whether the top-ranked option is the answer; None when the reply gave no option."""
    seed: int | None = None
    """The seed (neptune-qad), else None."""
    order: list[int] = field(default_factory=list)
    """The original option indices in the order shown (neptune-qad's shuffle)."""
    error: str | None = None
    """The backend's error when the call failed (not a decision: the question is asked again)."""

    @property
    def answer(self) -> int | None:
        return self.ranking[0] if self.ranking else None


@dataclass
class QadVerdict:
    """neptune-qad's decision on one question for one model."""

    removed: bool
    votes: list[Vote]
    threshold: int
    correct_votes: int
    unparsable: int
    """Replies that named no option (recorded, never counted as correct)."""

    @property
    def failed(self) -> bool:
        """A call failed: the verdict is not final and must not be stored."""
        return any(v.error for v in self.votes)


@dataclass
class Decision:
    """A rule's decision on one question, over all its models, with the evidence."""

    removed: bool
    rule: str
    votes: list[Vote]
    reason: str

    @property
    def failed(self) -> bool:
        return any(v.error for v in self.votes)

    @property
    def unread(self) -> list[Vote]:
        """Replies that named no option (the call itself worked)."""
        return [v for v in self.votes if v.ranking is None and not v.error]

    @property
    def unchecked(self) -> bool:
        """Kept only because replies could not be read: not removed, and a reply that named no
        option might have removed it. LVBench's rule needs every model right and agreeing, so a read
        reply that is wrong or differs keeps the question whatever the unread one said; for the other
        rules any unread reply leaves the question unchecked (neptune-qad: conservatively, whether or
        not the missing seeds could have reached the threshold)."""
        if self.removed or self.failed or not self.unread:
            return False
        if self.rule == "lvbench":
            read = [v for v in self.votes if v.ranking is not None]
            if any(not v.correct for v in read) or len({v.answer for v in read}) > 1:
                return False
        return True

    def to_json(self) -> dict[str, Any]:
        return {"removed": self.removed, "rule": self.rule, "reason": self.reason,
                "votes": [asdict(v) for v in self.votes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decision:
        return cls(removed=data["removed"], rule=data["rule"], reason=data["reason"],
                   votes=[Vote(**v) for v in data["votes"]])


async def ask(model: Model, prompt: Prompt, options: list[str], answer_index: int, *, sample_id: str = "",
              order: list[int] | None = None, seed: int | None = None) -> Vote:
    """One call: the reply parsed into original option indices (`order`: shown -> original)."""
    order = list(range(len(options))) if order is None else order
    response = await model.generate(prompt, sample_id=sample_id)
    shown = [options[i] for i in order]
    ranking = None if response.error else parse_ranking(response.text, shown)
    original = None if ranking is None else [order[i] for i in ranking]
    return Vote(model=model.identity, prompt=prompt.text, reply=response.text, ranking=original,
                correct=None if not original else original[0] == answer_index, seed=seed, order=order,
                error=response.error)


async def qad_filter_question(model: Model, question: str, options: list[str], answer_index: int, *,
                              seeds: int = 3, threshold: int = 2, transcript: str | None = None,
                              seed_base: int = 0, max_tokens: int = QAD_MAX_TOKENS, temperature: float = 0.0,
                              sample_id: str = "") -> QadVerdict:
    """Neptune's QAD filter on one question: `seeds` rankings with the options shuffled per seed
    (seeds seed_base .. seed_base+seeds-1); removed when the top-ranked option is the answer in
    >= `threshold` of them. `transcript`: the ASR filter (the transcript as extra context)."""
    async def one(seed: int) -> Vote:
        order = seed_order(question, options, seed)
        shown = [options[i] for i in order]
        prompt = Prompt(parts=[Text(text=qad_prompt_text(question, shown, transcript))], choices=shown,
                        question=question, max_tokens=max_tokens, temperature=temperature)
        return await ask(model, prompt, options, answer_index, sample_id=f"{sample_id}#seed{seed}",
                         order=order, seed=seed)

    votes = list(await asyncio.gather(*(one(seed_base + k) for k in range(seeds))))
    correct = sum(v.correct is True for v in votes)
    return QadVerdict(removed=correct >= threshold, votes=votes, threshold=threshold, correct_votes=correct,
                      unparsable=sum(v.ranking is None and not v.error for v in votes))


def lvbench_decision(votes: list[Vote]) -> Decision:
    """LVBench: removed iff every model answered, all the same option, and that option is correct."""
    answers = {v.answer for v in votes}
    removed = bool(votes) and None not in answers and len(answers) == 1 and all(v.correct for v in votes)
    if removed:
        reason = f"all {len(votes)} model(s) answered {LETTERS[votes[0].answer]} (correct)"  # type: ignore[index]
    elif None in answers:
        reason = "a reply named no option"
    elif len(answers) > 1:
        reason = "the models' answers differ"
    else:
        reason = "the shared answer is wrong"
    return Decision(removed=removed, rule="lvbench", votes=votes, reason=reason)


def text_only_decision(votes: list[Vote]) -> Decision:
    """Video-MME's check: removed when any model answers correctly text-only."""
    right = [v for v in votes if v.correct]
    reason = (f"{len(right)} of {len(votes)} model(s) correct without the video" if right
              else "no model correct without the video")
    return Decision(removed=bool(right), rule="text-only", votes=votes, reason=reason)


def qad_decision(verdicts: list[QadVerdict]) -> Decision:
    """neptune-qad over several models: removed when any model's verdict removes it."""
    votes = [v for verdict in verdicts for v in verdict.votes]
    parts = [f"{x.correct_votes}/{len(x.votes)} seeds top-ranked the answer (threshold {x.threshold})"
             + (f", {x.unparsable} unparsable" if x.unparsable else "") for x in verdicts]
    return Decision(removed=any(x.removed for x in verdicts), rule="neptune-qad", votes=votes,
                    reason="; ".join(parts))
