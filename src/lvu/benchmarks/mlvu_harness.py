"""MLVU's harnesses as objects (lvu.benchmarks.harness): the official protocol (`MlvuHarness`),
the official check_ans on the unstripped reply (`MlvuLiteral`, `mlvu-literal`), lmms-eval at three
release ranges (`MlvuLmmsEval`, `MlvuLmmsEval071`, `MlvuLmmsEval06`) and VLMEvalKit at two commits
(mlvu_vlmevalkit.py), each overriding only where its code differs from the one it extends: the
tasks it runs, the frame plan, the prompt, the letter extraction, the answer it compares with, a
fixed score, M-Avg and G-Avg. `HARNESSES` maps each `compat` value to its class; mlvu.py picks one
per benchmark object and delegates to it. The pure protocol functions the harnesses share live here
too (mlvu.py re-exports them), so this module never imports mlvu.py.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from lvu.benchmarks.harness import Harness
from lvu.benchmarks.mlvu_release import BY_TYPE, TASKS
from lvu.errors import LvuError
from lvu.media.sampling import Fps, Lmms
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, RELEASES, task_reply
from lvu.types import LETTERS, Frame, Part, Prediction, Prompt, Response, Sample, SampleResult, Score, Text, VideoMeta

SYSTEM_MC = ("Carefully watch this video and pay attention to every detail. Based on your observations, "
             "select the best option that accurately addresses the question.")
SYSTEM_GEN = ("Carefully watch this video and pay attention to every detail. Based on your observations, "
              "answer the given questions.")
MC_INSTRUCTION = "\nOnly give the best option."
ASSISTANT_PREFIX = "Best Option: ("
LMMS_POST_PROMPT = "\nOnly give the best option.\nBest option: ("
LMMS_TYPES = {"dev": ("anomaly_reco", "count", "ego", "needle", "order", "plotQA", "topic_reasoning"),
              "test": ("anomaly_reco", "count", "ego", "needleQA", "order", "plotQA", "sportsQA",
                       "topic_reasoning", "tutorialQA")}
MLVU_LITERAL = "mlvu-literal"

Accuracies = dict[str, tuple[float, int]]
"""{MCQ task code: (accuracy %, questions counted)} for the tasks the run holds."""
ByTask = dict[str, list[SampleResult]]


# ---- protocol functions (pure) ----------------------------------------------------------------


def qa_template(question: str, candidates: list[str]) -> str:
    """The repo's qa_template: 'Question: …\\nOptions:\\n(A) …\\n(B) …' (right-stripped)."""
    text = f"Question: {question}\n" + "Options:\n"
    for i, c in enumerate(candidates):
        text += f"({chr(ord('A') + i)}) {c}\n"
    return text.rstrip()


def check_ans_pred(reply: str) -> str:
    """What the official check_ans compares: the char before the first ')', else the reply."""
    if ")" in reply:
        i = reply.index(")")
        return reply[i - 1:i]
    return reply


def mlvu_indices(num_frames: int, n: int) -> list[int]:
    """The repo's `get_index` without a bound: seg = (T-1)/N, int(seg/2 + round(seg*i))."""
    import numpy as np

    seg = float(num_frames - 1) / n
    return [int(seg / 2 + np.round(seg * i)) for i in range(n)]


def letter_prediction(got: str, valid: str, **fields: Any) -> Prediction:
    """A single valid letter as its option index, anything else as the text read (None when empty)."""
    return Prediction(value=valid.index(got) if len(got) == 1 and got in valid else got or None, **fields)


def frame_count(video: VideoMeta) -> tuple[float, int]:
    """(frame rate, frame count >= 1): what the index-based plans count on."""
    rate, total = video.rate_and_count()
    return rate, max(1, total)


def index_times(indices: list[int], rate: float, total: int) -> list[float]:
    return [min(i, total - 1) / rate for i in indices]


# ---- the harnesses ------------------------------------------------------------------------------


class MlvuHarness(Harness[Any]):
    """The official protocol (JUNJIE99/MLVU evaluation scripts): every task, the repo's get_index
    frames (or the paper's "N fps"), system prompt + qa_template + prefill, check_ans, macro M-Avg."""

    peer = "the official MLVU repo (JUNJIE99/MLVU: choice_bench.py, open_bench.py, test_bench.py)"
    own_choice_judge: ClassVar[bool] = False
    """True: `choice_task` alone decides which replies a judge reads (lvu's --llm-extract is not used)."""

    # ---- tasks ------------------------------------------------------------------------------------

    def choose_tasks(self, spec: str) -> list[str]:
        """Task codes from `tasks=` (all, mc, gen or a comma list of codes); LvuError naming the valid ones."""
        split = self.settings["split"]
        valid = [c for c, t in TASKS.items() if split == "test" or t.file]
        if spec.strip().lower() in ("all", "mc", "gen"):
            word = spec.strip().lower()
            return [c for c in valid if word == "all" or TASKS[c].generation == (word == "gen")]
        chosen = [c.strip().upper() for c in spec.split(",") if c.strip()]
        bad = [c for c in chosen if c not in valid]
        if bad or not chosen:
            raise LvuError(f"tasks={spec!r}: unknown task(s) {', '.join(bad) or '(none)'} for MLVU {split} — "
                           f"use all, mc, gen or codes from {', '.join(valid)}")
        return chosen

    # ---- frames -----------------------------------------------------------------------------------

    def times(self, video: VideoMeta) -> list[float]:
        """Frame times: the fps mode when `fps` is set, else the frame-count plan on frame indices."""
        fps = self.settings["fps"]
        if fps is not None:
            return self.fps_times(video, fps)
        rate, total = frame_count(video)
        return index_times(self.frame_indices(total, rate), rate, total)

    def fps_times(self, video: VideoMeta, fps: float) -> list[float]:
        """The paper's "N fps": t = k / N."""
        return Fps(fps=fps).timestamps(video.duration, 0.0)

    def frame_indices(self, total: int, rate: float) -> list[int]:
        return mlvu_indices(total, self.settings["frames"])

    # ---- prompts ----------------------------------------------------------------------------------

    def generation_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        return self._prompt(sample, [*frames, Text(text=sample.question)], system=SYSTEM_GEN, max_tokens=1000)

    def choice_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        text = qa_template(sample.question, sample.options)
        return self._prompt(sample, [*frames, Text(text=text + MC_INSTRUCTION)], system=SYSTEM_MC,
                            assistant_prefix=ASSISTANT_PREFIX, max_tokens=100)

    @staticmethod
    def _prompt(sample: Sample, parts: list[Part], **fields: Any) -> Prompt:
        return Prompt(parts=parts, choices=list(sample.options), question=sample.question, **fields)

    # ---- extraction and scoring -------------------------------------------------------------------

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        """check_ans as written, on the stripped reply."""
        return letter_prediction(check_ans_pred(response.text.strip()), LETTERS[:len(sample.options)])

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        """(the letter a prediction is compared with, the rule named in the score's explanation)."""
        return str(sample.extra["answer_letter"]), "check_ans: char before the first ')'"

    def fixed_score(self, sample: Sample, prediction: Prediction) -> Score | None:
        """A score the harness gives whatever the answer (VLMEvalKit's -1), or None: compare letters."""
        return None

    # ---- aggregation ------------------------------------------------------------------------------

    def generation_value(self, score: float) -> float:
        """One judged total as it enters its task's mean."""
        return score

    def m_avg(self, acc: Accuracies, by_task: ByTask) -> tuple[float, int]:
        """(M-Avg, questions behind it): the unweighted mean of the MCQ task accuracies."""
        vals = [a for a, n in acc.values() if n]
        return (sum(vals) / len(vals) if vals else math.nan), sum(n for _, n in acc.values())

    def g_avg(self, gen: dict[str, float], by_task: ByTask) -> float:
        """G-Avg: the mean of the generation tasks' means, once every one of them is judged."""
        done = [v for v in gen.values() if not math.isnan(v)]
        return sum(done) / len(done) if done and len(done) == len(gen) else math.nan


class MlvuLmmsEval(MlvuHarness):
    """lmms-eval's mlvu_dev / mlvu_test tasks: MCQ only, frame counts only, no system prompt or
    prefill, extract_mcq_answer over A-D after its evaluator strips reasoning blocks, M-Avg over its
    fixed type list."""

    compat = LMMS_EVAL
    peer = f"lmms-eval {RELEASES[LMMS_EVAL]} (lmms_eval/tasks/mlvu)"

    def __init__(self, bench: Any) -> None:
        super().__init__(bench)
        if self.settings["fps"] is not None:
            raise LvuError("lmms-eval samples a frame count only — fps needs --compat official or vlmevalkit")

    def choose_tasks(self, spec: str) -> list[str]:
        chosen = super().choose_tasks(spec)
        if spec.strip().lower() == "all":
            chosen = [c for c in chosen if not TASKS[c].generation]
        if any(TASKS[c].generation for c in chosen):
            raise LvuError("lmms-eval has no MLVU generation tasks (SSC, VS) — use --compat official or vlmevalkit")
        return chosen

    def frame_indices(self, total: int, rate: float) -> list[int]:
        return Lmms(n=self.settings["frames"]).frame_indices(total, rate)

    def choice_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        lines = "\n".join(f"({LETTERS[i]}) {c}" for i, c in enumerate(sample.options))
        post = LMMS_POST_PROMPT if self.settings["split"] == "dev" else ""
        return self._prompt(sample, [*frames, Text(text=f"{sample.question}\n{lines}{post}")], max_tokens=16)

    def visible_reply(self, response: Response) -> str:
        """The reply as its tasks see it: reasoning blocks cut by the evaluator (0.7.0 on; 0.6 passes
        it on uncut), or a logged filtered_resps as it is."""
        return task_reply(response, self.compat)

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        valid = LETTERS[:len(sample.options)]
        got = lmms_extract_mcq(self.visible_reply(response))
        return Prediction(value=valid.index(got) if got and got in valid else None,
                          method=f"{self.compat} extract_mcq_answer")

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        return LETTERS[sample.answer] if isinstance(sample.answer, int) else "", prediction.method or self.compat

    def m_avg(self, acc: Accuracies, by_task: ByTask) -> tuple[float, int]:
        """Per-type accuracies summed over its fixed type list (a type the run lacks adds 0) / list size."""
        types = LMMS_TYPES[self.settings["split"]]
        vals = {BY_TYPE[t].code: acc.get(BY_TYPE[t].code, (0.0, 0))[0] for t in types}
        m_avg = sum(0.0 if math.isnan(v) else v for v in vals.values()) / len(types)
        return m_avg, sum(n for _, n in acc.values())


class MlvuLmmsEval071(MlvuLmmsEval):
    """lmms-eval 0.7.0-0.7.1: the letter is the char before the first ')' of the stripped reply, else
    the whole reply (its `extract_characters_regex` then)."""

    compat = LMMS_EVAL_0_7_1
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_7_1]} (lmms_eval/tasks/mlvu)"

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        got = check_ans_pred(self.visible_reply(response).strip())
        return letter_prediction(got, LETTERS[:len(sample.options)], method=f"{self.compat} char before the first ')'")


class MlvuLmmsEval06(MlvuLmmsEval071):
    """lmms-eval 0.6.0-0.6.1: as 0.7.1, with no reasoning-tag stripping."""

    compat = LMMS_EVAL_0_6
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_6]} (lmms_eval/tasks/mlvu)"




class MlvuLiteral(MlvuHarness):
    """The official protocol with check_ans on the reply exactly as decoded: choice_bench.py does
    not strip it (the official mode strips it first, as its other scripts do)."""

    compat = MLVU_LITERAL
    peer = "the official MLVU repo's choice_bench.py, reply compared as given (no strip)"

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        return letter_prediction(check_ans_pred(response.text), LETTERS[:len(sample.options)])

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        return str(sample.extra["answer_letter"]), "check_ans on the unstripped reply: char before the first ')'"


OWN_HARNESSES: dict[str, type[MlvuHarness]] = {
    "official": MlvuHarness, MLVU_LITERAL: MlvuLiteral, LMMS_EVAL: MlvuLmmsEval,
    LMMS_EVAL_0_7_1: MlvuLmmsEval071, LMMS_EVAL_0_6: MlvuLmmsEval06,
}
"""{compat: harness class} of the modes defined here; lvu.benchmarks.mlvu.HARNESSES adds VLMEvalKit's
(mlvu_vlmevalkit.py, whose classes extend these)."""
