"""The papers' blind-filter rules as registered objects (docs/build.md, "Blind filters").

A rule is one class: the prompt templates its decisions depend on (`prompt_identity`, hashed into
every decision's key), its parameters, the checks on them, how many calls one question costs, and
`decide` — the calls and the decision with its evidence (lvu.construct.blind.Decision). A new rule
is one subclass registered with `@register_rule("name")` (or an installed plugin in the
`lvu.blind_rules` entry-point group, or `module:Class`); lvu.construct.filtering runs any of them.

- `neptune-qad` (Neptune Sec. 4.4, App. C.2.5/C.4): rank the options without the video, once per
  seed with the options re-shuffled; removed when the answer is top-ranked in >= threshold seeds.
- `lvbench` (LVBench Sec. 3.3): every model answers LVBench's evaluation prompt (Sec. 4.1) without
  the video; removed iff all answers agree and are correct. The paper used two models (GLM-4 and
  GPT-4): one model is refused unless `allow_single` (then: removed when that model is correct).
- `text-only` (Video-MME Sec. 3.2): every model answers text-only; removed when any is correct.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from lvu.construct.blind import (QAD_PROMPT, QAD_TRANSCRIPT, Decision, Vote, ask, lvbench_decision, lvbench_prompt,
                                 qad_decision, qad_filter_question, qad_options_str, text_only_decision,
                                 text_only_prompt)
from lvu.errors import LvuError
from lvu.registry import Registry
from lvu.types import Prompt, Sample, VideoRef

if TYPE_CHECKING:
    from lvu.models.base import Model


RULE_VERSION = 1
"""Bumped when a rule's decision logic changes: every stored decision is then made again."""


@dataclass(frozen=True)
class FilterSettings:
    """A rule and its parameters (seeds, threshold and seed_base matter to neptune-qad only;
    allow_single to lvbench only)."""

    rule: str
    seeds: int = 3
    threshold: int = 2
    seed_base: int = 0
    asr: bool = False
    allow_single: bool = False
    """lvbench: allow one model (the paper's rule needs two). Not in the keys: it changes no decision."""

    def check(self, n_models: int) -> None:
        rule = rule_named(self.rule)
        if not n_models:
            raise LvuError("no model given — pass -m MODEL (repeat -m for several)")
        rule.check(self, n_models)

    def params(self) -> dict[str, Any]:
        """What enters the item keys."""
        return {"rule": self.rule, "version": RULE_VERSION, "asr": self.asr, **rule_named(self.rule).params(self)}


class BlindRule:
    """One blind-filter rule. Subclasses set `source` and implement `decide`."""

    name: ClassVar[str] = ""
    source: ClassVar[str] = ""
    """Where the rule comes from (paper and section), for `lvu build list` and the docs."""
    uses_seeds: ClassVar[bool] = False
    """Whether seeds / threshold / seed_base mean anything to it (they enter its keys only then)."""

    def check(self, settings: FilterSettings, n_models: int) -> None:
        """Raise a one-line LvuError when the settings cannot work with this rule."""

    def params(self, settings: FilterSettings) -> dict[str, Any]:
        """The parameters its decisions depend on, besides the rule's name, version and --asr."""
        return {}

    def prompt_identity(self) -> list[Any]:
        """The prompt templates a decision depends on (its question and transcript enter apart)."""
        p = text_only_prompt("x", ["y"], "z")
        return [p.text, p.max_tokens, p.temperature]

    def calls_per_question(self, settings: FilterSettings, n_models: int) -> int:
        return n_models

    async def decide(self, sample: Sample, models: list[Model], settings: FilterSettings,
                     transcript: str | None) -> Decision:
        raise NotImplementedError


RULES: Registry[BlindRule] = Registry("blind-filter rule", base=BlindRule, group="lvu.blind_rules")
register_rule = RULES.register


def rule_named(name: str) -> BlindRule:
    """The rule `name` (a one-line error listing the known ones when there is none)."""
    if name not in RULES.names() and ":" not in name:
        raise LvuError(f"--rule {name!r} is unknown — use one of {', '.join(RULES.names())}")
    return RULES.get(name)()


@register_rule("neptune-qad")
class NeptuneQad(BlindRule):
    """Rank the options without the video, `seeds` times with the options shuffled per seed;
    removed when the answer is top-ranked in >= `threshold` seeds (several models: any model's
    verdict removes)."""

    source = "Neptune Sec. 4.4, App. C.2.5 (prompt), App. C.4 (2 of 3)"
    uses_seeds = True

    def check(self, settings: FilterSettings, n_models: int) -> None:
        if settings.seeds < 1:
            raise LvuError(f"--seeds {settings.seeds} — give at least 1 seed (the paper: 3)")
        if not 1 <= settings.threshold <= settings.seeds:
            raise LvuError(f"--threshold {settings.threshold} must be between 1 and --seeds {settings.seeds} "
                           "(the paper: 2 of 3)")

    def params(self, settings: FilterSettings) -> dict[str, Any]:
        return {"seeds": settings.seeds, "threshold": settings.threshold, "seed_base": settings.seed_base}

    def prompt_identity(self) -> list[Any]:
        return [QAD_PROMPT, QAD_TRANSCRIPT, qad_options_str(["x"])]

    def calls_per_question(self, settings: FilterSettings, n_models: int) -> int:
        return n_models * settings.seeds

    async def decide(self, sample: Sample, models: list[Model], settings: FilterSettings,
                     transcript: str | None) -> Decision:
        verdicts = await asyncio.gather(*(
            qad_filter_question(m, sample.question, sample.options, int(sample.answer),  # type: ignore[arg-type]
                                seeds=settings.seeds, threshold=settings.threshold, transcript=transcript,
                                seed_base=settings.seed_base, sample_id=sample.id) for m in models))
        return qad_decision(list(verdicts))


class TextOnlyQuestion(BlindRule):
    """Every model answers one text-only question (`prompt`: lvu's plain one by default) once;
    `judge` decides from the votes."""

    def prompt(self, sample: Sample, transcript: str | None) -> Prompt:
        return text_only_prompt(sample.question, sample.options, transcript)

    def prompt_identity(self) -> list[Any]:
        p = self.prompt(Sample(id="x", benchmark="x", video=VideoRef(path="x"), question="x", options=["y"],
                               answer=0), "z")
        return [p.text, p.max_tokens, p.temperature]

    async def decide(self, sample: Sample, models: list[Model], settings: FilterSettings,
                     transcript: str | None) -> Decision:
        prompt = self.prompt(sample, transcript)
        votes: list[Vote] = list(await asyncio.gather(*(
            ask(m, prompt, sample.options, int(sample.answer), sample_id=sample.id)  # type: ignore[arg-type]
            for m in models)))
        return self.judge(votes)

    def judge(self, votes: list[Vote]) -> Decision:
        raise NotImplementedError


@register_rule("lvbench")
class LVBenchRule(TextOnlyQuestion):
    """Removed iff every model gave the same option and it is correct (the paper: GLM-4 and GPT-4),
    asked LVBench's own evaluation prompt without the video (blind.lvbench_prompt)."""

    source = "LVBench Sec. 3.3 (rule), Sec. 4.1 (prompt)"

    def check(self, settings: FilterSettings, n_models: int) -> None:
        if n_models == 1 and not settings.allow_single:
            raise LvuError("--rule lvbench removes a question only when two models (the paper: GLM-4 and GPT-4) both "
                           "answer it correctly without the video — pass -m twice, or --allow-single (lvu build run: --opt "
                           "allow_single=true) to reduce it to 'removed when the one model is correct'")

    def prompt(self, sample: Sample, transcript: str | None) -> Prompt:
        return lvbench_prompt(sample, transcript)

    def judge(self, votes: list[Vote]) -> Decision:
        return lvbench_decision(votes)


@register_rule("text-only")
class TextOnlyRule(TextOnlyQuestion):
    """Removed when any model answers correctly without the video (the paper: Gemini 1.5 Pro)."""

    source = "Video-MME Sec. 3.2"

    def judge(self, votes: list[Vote]) -> Decision:
        return text_only_decision(votes)
