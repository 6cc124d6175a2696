"""Neptune's harnesses: how the official protocol (the paper, App. C.5) and lmms-eval's
`neptune_{full,mma,mmh}_i` tasks run Neptune — frame plan, prompt, token budget, transcript clip
and answer extraction — with the prompt tables and reply parsers they use.

`NeptuneHarness` is the paper's protocol; `NeptuneLmmsEval` (0.7.2-0.7.3) and `NeptuneLmmsEval071`
(0.7.0-0.7.1, the same task code) override what lmms-eval does differently. lvu.benchmarks.neptune
picks one from `compat` (`HARNESSES`) and re-exports everything here. This module does not import
the benchmark module (lvu.benchmarks.neptune imports it): the benchmark is seen through
`NeptuneLike`.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Protocol

from lvu.benchmarks.harness import Harness
from lvu.errors import LvuError
from lvu.media.sampling import Center, Fps, Lmms
from lvu.scoring import judge_prompts
from lvu.scoring.lmms_eval import LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, RELEASES, task_reply
from lvu.types import LETTERS, Prediction, Response, Sample, Subtitle, VideoMeta

MAX_SECONDS = 900.0
"""Neptune truncates videos at 15 minutes; questions are about the first 900 s."""
OPEN_WORDS = 100
"""GEM truncates open-ended responses to 100 words (paper App. D.3)."""

GEMINI_INSTRUCTION = ("Carefully analyze the question and all available options then pick the most probable "
                      "answer for this question")
PROMPTS = {
    "gemini": GEMINI_INSTRUCTION + "\n{question}\n{options}",
    "video-llava": "Pick a correct option to answer the question. Question: {question} Options: {options} ASSISTANT:",
    "videollama2": "Pick a correct option number to answer the question. Question: {question} Options: {options}:",
    "minigpt4-video": ("Question: select the correct option for this task: {question} Options: {options}. "
                       "Output format: [OPTION]: [Reason]"),
    "ma-lmm": "Question: select the best choice for this task: {question} Options: {options} Answer:",
    "blip2": "Answer in one letter\n{question}\n{options}",
}
"""The paper's MCQ templates (App. C.5, Sec. 5.3). The slots' layout around gemini's and blip2's
instruction sentences is lvu's (the paper: "followed by the question and ... decoys")."""
OPEN_PROMPTS = {
    "videollama2": "Question: {question}",
    "minigpt4-video": "Question: {question} Answer:",
    "ma-lmm": "Question: {question} Answer:",
}
"""The paper's open-ended templates; the other templates have none and use videollama2's."""
MCQ_MAX_TOKENS = {"minigpt4-video": 10}
DEFAULT_MAX_TOKENS = 300
LMMS_PROMPTS = {
    "default": ("", "\nAnswer with only the option letter (A, B, C, D, or E)."),
    "qwen3_vl": ("Question: ", "\nRespond with only one letter: A, B, C, D, or E."),
}
"""lmms-eval's (pre_prompt, post_prompt) blocks in tasks/neptune/_default_template_yaml."""
LMMS_FRAMES = 32
LMMS_MAX_TOKENS = 64
NO_TASK = {
    "vlmevalkit": "VLMEvalKit has no Neptune task — use --compat official or lmms-eval",
    LMMS_EVAL_0_6: f"compat='{LMMS_EVAL_0_6}': lmms-eval's Neptune task came with 0.7 — use compat=lmms-eval",
}
"""Peers without a Neptune task, refused in their own words before the table's "unknown compat"."""


# ---- answer extraction --------------------------------------------------------------------------


def option_ids(prompt: str) -> str:
    """Option ids a template uses: digits for videollama2's "option number", else letters."""
    return "12345" if prompt == "videollama2" else LETTERS[:5]


def parse_option(text: str, ids: str = "ABCDE") -> int | None:
    """Option index from a reply under lvu's reading of the paper (module docstring), or None."""
    text = text.strip()
    bare = re.sub(r"[\W_]", "", text)
    if len(bare) == 1 and bare.upper() in ids:
        return ids.index(bare.upper())
    cls = f"([{re.escape(ids)}])"
    patterns = [
        rf"^[\s\[(*\"']*{cls}(?!\.[a-z]\.)(?:[ \t]*[\])}}.:,\-\n]|[ \t]*$)",  # "B) ..", "[B]: why", "B\n.."
        rf"(?i:\banswer)(?:\s+is)?\s*:?\s*[(\[]?\s*{cls}(?!\w)",  # "the answer is (B)", "Answer: B"
        rf"(?i:\b(?:option|choice))(?:\s+is)?\s*:?\s*[(\[]?\s*{cls}(?!\w)",  # "option B"
        rf"\({cls}\)",  # "... (B) ..."
    ]
    for pattern in patterns:
        if m := re.search(pattern, text):
            return ids.index(m.group(1))
    return None


def _lmms_normalize(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9\s]", " ", text.lower())).strip()


def parse_lmms(text: str, options: list[str]) -> int | None:
    """lmms-eval's `_parse_choice_from_response` (tasks/neptune/utils.py), quirks included."""
    text = (text or "").strip()
    if not text:
        return None
    upper = text.upper()
    if m := re.fullmatch(r"[\(\[]?\s*([A-E])\s*[\)\]\.:\-]?\s*", upper):
        return "ABCDE".index(m.group(1))
    for pattern in (r"ANSWER\s*(?:IS|:)?\s*[\(\[]?\s*([A-E])\s*[\)\]]?", r"OPTION\s*([A-E])",
                    r"\(([A-E])\)", r"\b([A-E])[\)\.]"):
        if matches := list(re.finditer(pattern, upper)):
            return "ABCDE".index(matches[-1].group(1))
    if len(upper.split()) <= 3 and (m := re.search(r"\b([A-E])\b", upper)):
        return "ABCDE".index(m.group(1))
    reply = _lmms_normalize(text)
    for i, option in enumerate(options[:5]):
        if (norm := _lmms_normalize(str(option).strip())) and norm in reply:
            return i
    return None


def truncate_words(text: str, n: int = OPEN_WORDS) -> str:
    """The first n whitespace-separated words, joined by single spaces (the judge's own rule)."""
    return judge_prompts.truncate_words(text, n)


# ---- the harnesses --------------------------------------------------------------------------------


class NeptuneLike(Protocol):
    """What a harness reads of the benchmark it serves (lvu.benchmarks.neptune.Neptune)."""

    settings: dict[str, Any]

    @property
    def name(self) -> str: ...
    @property
    def open_ended(self) -> bool: ...
    @property
    def audio_mode(self) -> str: ...


class NeptuneHarness(Harness[NeptuneLike]):
    """The paper's protocol: linspace frames over the first 15 minutes, its templates, lvu's
    reading of "we eliminated extra characters and spaces using regex" (`parse_option`)."""

    compat: ClassVar[str] = "official"
    peer: ClassVar[str] = "the paper (Nagrani et al. 2024, App. C.5; the repo has no evaluation code)"
    presets: ClassVar[dict[str, Any]] = {}
    """Settings this harness uses in place of the paper's defaults when the user sets none."""

    def preset(self, settings: dict[str, Any]) -> dict[str, Any]:
        """`settings` with this harness's presets for the ones not given (None = not given)."""
        return {**settings, **{k: v for k, v in self.presets.items() if settings.get(k) is None}}

    def check(self) -> None:
        """Refuse settings this harness cannot run (after the typed settings passed)."""
        if (prompt := self.settings["prompt"]) not in PROMPTS:
            raise LvuError(f"prompt={prompt!r} is unknown — use one of {', '.join(PROMPTS)}")

    @property
    def ids(self) -> str:
        return option_ids(self.settings["prompt"])

    def timestamps(self, video: VideoMeta) -> list[float]:
        """Frame times: `frames` over the first MAX_SECONDS (the release's clip)."""
        frames, duration = self.settings["frames"], video.duration
        span = min(duration, MAX_SECONDS)
        if frames == 0:
            return []
        if frames == "center":
            return Center().timestamps(span, 0.0)
        if frames == "first":
            return [0.0]
        if frames == "1fps":
            return Fps(fps=1).timestamps(span, 0.0)
        fps, total = video.rate_and_count()
        if duration > MAX_SECONDS:
            total = min(total, math.floor(MAX_SECONDS * fps))
        return self._linspace(frames, fps, total)

    @staticmethod
    def _linspace(frames: int, fps: float, total: int) -> list[float]:
        """Linear subsampling: lmms-eval's np.linspace(0, T-1, min(N, T), dtype=int) on frame numbers."""
        return [i / fps for i in Lmms(n=max(1, frames)).frame_indices(total, fps)]

    def cues(self, cues: list[Subtitle]) -> list[Subtitle]:
        """The transcript cues the prompt keeps: those starting inside the clip."""
        return [c for c in cues if c.start < MAX_SECONDS]

    def prompt_text(self, sample: Sample) -> str:
        prompt = self.settings["prompt"]
        if self.bench.open_ended:
            return OPEN_PROMPTS.get(prompt, OPEN_PROMPTS["videollama2"]).format(question=sample.question)
        ids = self.ids
        options = "\n".join(f"({ids[i]}) {o}" for i, o in enumerate(sample.options))
        return PROMPTS[prompt].format(question=sample.question, options=options)

    @property
    def max_tokens(self) -> int:
        if self.bench.open_ended:
            return DEFAULT_MAX_TOKENS
        return MCQ_MAX_TOKENS.get(self.settings["prompt"], DEFAULT_MAX_TOKENS)

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if self.bench.open_ended:
            return Prediction(value=truncate_words(response.text), method=f"first {OPEN_WORDS} words")
        return Prediction(value=parse_option(response.text, self.ids))


class NeptuneLmmsEval(NeptuneHarness):
    """lmms-eval's neptune_*_i tasks: 32 frames over the whole file, its letter prompt blocks,
    64 new tokens, `parse_lmms` on the reply after the evaluator strips reasoning blocks; MCQ
    without transcript or audio only."""

    compat = LMMS_EVAL
    peer = f"lmms-eval {RELEASES[LMMS_EVAL]} (lmms_eval/tasks/neptune)"
    presets = {"frames": LMMS_FRAMES, "prompt": "default"}

    def check(self) -> None:
        bench, s = self.bench, self.settings
        if bench.open_ended or s["subtitles"] != "none" or bench.audio_mode != "none":
            what = "open-ended task" if bench.open_ended else "ASR input" if s["subtitles"] != "none" else "audio input"
            raise LvuError(f"lmms-eval has no Neptune {what} — run {bench.name} with --compat official")
        if not isinstance(s["frames"], int):
            raise LvuError(f"lmms-eval samples a frame count only — frames={s['frames']!r} needs --compat official")
        if s["prompt"] not in LMMS_PROMPTS:
            raise LvuError(f"prompt={s['prompt']!r}: lmms-eval's Neptune blocks are {', '.join(LMMS_PROMPTS)}")

    @property
    def ids(self) -> str:
        return LETTERS[:5]

    def timestamps(self, video: VideoMeta) -> list[float]:
        """`frames` by the same linspace over the whole file (no 15-min clip; 0 still reads one frame)."""
        fps, total = video.rate_and_count()
        return self._linspace(self.settings["frames"], fps, total)

    def cues(self, cues: list[Subtitle]) -> list[Subtitle]:
        return cues

    def prompt_text(self, sample: Sample) -> str:
        pre, post = LMMS_PROMPTS[self.settings["prompt"]]
        block = "\n".join(f"{LETTERS[i]}. {o.strip()}" for i, o in enumerate(sample.options[:5]))
        return f"{pre}{sample.question.strip()}\n{block}{post}"

    @property
    def max_tokens(self) -> int:
        return LMMS_MAX_TOKENS

    def extract(self, sample: Sample, response: Response) -> Prediction:
        text = task_reply(response, self.compat)  # as its evaluator hands it over
        return Prediction(value=parse_lmms(text, sample.options), method="lmms-eval")


class NeptuneLmmsEval071(NeptuneLmmsEval):
    """lmms-eval 0.7.0-0.7.1: the same Neptune task code as 0.7.3."""

    compat = LMMS_EVAL_0_7_1
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_7_1]} (lmms_eval/tasks/neptune)"


HARNESSES: dict[str, type[NeptuneHarness]] = {
    "official": NeptuneHarness, LMMS_EVAL: NeptuneLmmsEval, LMMS_EVAL_0_7_1: NeptuneLmmsEval071,
}
"""compat value -> harness (lvu.benchmarks.harness.pick)."""
