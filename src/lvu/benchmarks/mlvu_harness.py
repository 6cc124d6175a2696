"""MLVU's harnesses as objects (lvu.benchmarks.harness): the official protocol (`MlvuHarness`),
lmms-eval at three release ranges (`MlvuLmmsEval`, `MlvuLmmsEval071`, `MlvuLmmsEval06`) and
VLMEvalKit (`MlvuVlmevalkit`), each overriding only where its code differs from the one it extends:
the tasks it runs, the frame plan, the prompt, the letter extraction, the answer it compares with,
M-Avg and G-Avg. `HARNESSES` maps each `compat` value to its class; mlvu.py picks one per benchmark
object and delegates to it. The pure protocol functions the harnesses share live here too (mlvu.py
re-exports them), so this module never imports mlvu.py.
"""

from __future__ import annotations

import math
from typing import Any

from lvu.benchmarks.harness import Harness
from lvu.benchmarks.mlvu_release import BY_TYPE, TASKS
from lvu.errors import LvuError
from lvu.media.sampling import Fps, Lmms, Vlmevalkit
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, RELEASES, task_reply
from lvu.types import LETTERS, Frame, Part, Prediction, Prompt, Response, Sample, SampleResult, Text, VideoMeta

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
VLMEVALKIT_M_AVG = ("PQA", "NQA", "ER", "AC", "AR", "TR")
"""VLMEvalKit's 'M-Avg' list: plotQA, needle, ego, count, anomaly_reco, topic_reasoning (no order)."""

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


_VLMEVAL_REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
                     "I'm sorry, but without the image provided", "Cannot determine the answer")


def vlmevalkit_can_infer(answer: str, options: list[str]) -> str | None:
    """VLMEvalKit `can_infer` (matching_util.py @18fc37a): one option letter among the words, else
    one option text contained in the reply (lower case); 'Z' for refusals; None when ambiguous."""
    choices = {LETTERS[i]: o for i, o in enumerate(options)}
    if "Failed to obtain answer via API" not in answer:
        if any(err in answer for err in _VLMEVAL_REFUSALS):
            return "Z"
        mod = answer
        for c in ".()[],:;!*#{}":
            mod = mod.replace(c, " ")
        splits = [x.strip() for x in mod.split()]
        hits = [ch for ch in choices if ch in splits]
        if len(hits) == 1:
            return hits[0]
        if not hits and sum(z in splits for z in ("Z", "")) == 1:
            return "Z"
    low = answer.lower()
    texts = [k for k, v in choices.items() if str(v).lower() in low]
    return texts[0] if len(texts) == 1 else None


def mlvu_indices(num_frames: int, n: int) -> list[int]:
    """The repo's `get_index` without a bound: seg = (T-1)/N, int(seg/2 + round(seg*i))."""
    import numpy as np

    seg = float(num_frames - 1) / n
    return [int(seg / 2 + np.round(seg * i)) for i in range(n)]


def _letter_prediction(got: str, valid: str, **fields: Any) -> Prediction:
    """A single valid letter as its option index, anything else as the text read (None when empty)."""
    return Prediction(value=valid.index(got) if len(got) == 1 and got in valid else got or None, **fields)


def _frame_count(video: VideoMeta) -> tuple[float, int]:
    """(frame rate, frame count >= 1): what the index-based plans count on."""
    rate, total = video.rate_and_count()
    return rate, max(1, total)


def _index_times(indices: list[int], rate: float, total: int) -> list[float]:
    return [min(i, total - 1) / rate for i in indices]


# ---- the harnesses ------------------------------------------------------------------------------


class MlvuHarness(Harness[Any]):
    """The official protocol (JUNJIE99/MLVU evaluation scripts): every task, the repo's get_index
    frames (or the paper's "N fps"), system prompt + qa_template + prefill, check_ans, macro M-Avg."""

    peer = "the official MLVU repo (JUNJIE99/MLVU: choice_bench.py, open_bench.py, test_bench.py)"

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
        rate, total = _frame_count(video)
        return _index_times(self.frame_indices(total, rate), rate, total)

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
        return _letter_prediction(check_ans_pred(response.text.strip()), LETTERS[:len(sample.options)])

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        """(the letter a prediction is compared with, the rule named in the score's explanation)."""
        return str(sample.extra["answer_letter"]), "check_ans: char before the first ')'"

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
        return _letter_prediction(got, LETTERS[:len(sample.options)], method=f"{self.compat} char before the first ')'")


class MlvuLmmsEval06(MlvuLmmsEval071):
    """lmms-eval 0.6.0-0.6.1: as 0.7.1, with no reasoning-tag stripping."""

    compat = LMMS_EVAL_0_6
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_6]} (lmms_eval/tasks/mlvu)"



class MlvuVlmevalkit(MlvuHarness):
    """VLMEvalKit's MLVU (vlmeval/dataset/mlvu.py @296425e): text before the frames, no prefill,
    its own frame plans, check_ans else can_infer, question-weighted M-Avg without action order,
    G-Avg over int(score)."""

    compat = "vlmevalkit"
    peer = "VLMEvalKit @296425e (vlmeval/dataset/mlvu.py, utils/mlvu.py)"

    def fps_times(self, video: VideoMeta, fps: float) -> list[float]:
        """Its fps mode: frame indices int(i * fps_video / F)."""
        rate, total = _frame_count(video)
        step = rate / fps
        return _index_times([int(i * step) for i in range(int(total / rate * fps))], rate, total)

    def frame_indices(self, total: int, rate: float) -> list[int]:
        return Vlmevalkit(n=self.settings["frames"]).frame_indices(total, rate)

    def generation_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        return self._prompt(sample, [Text(text=sample.question), *frames], system=SYSTEM_GEN, max_tokens=1000)

    def choice_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        text = qa_template(sample.question, sample.options)
        return self._prompt(sample, [Text(text=text), *frames, Text(text=MC_INSTRUCTION)], system=SYSTEM_MC,
                            max_tokens=100)

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        """check_ans; when it misses the answer letter, can_infer (exact_matching) where it decides."""
        reply = response.text.strip()
        if check_ans_pred(reply) != sample.extra.get("answer_letter"):
            inferred = vlmevalkit_can_infer(reply, sample.options)
            if inferred is not None:
                valid = LETTERS[:len(sample.options)]
                return Prediction(value=valid.index(inferred) if inferred in valid else inferred,
                                  method="vlmevalkit-can-infer")
        return super().extract_choice(sample, response)

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        """can_infer compares with the FIRST candidate equal to the answer."""
        if prediction.method == "vlmevalkit-can-infer":
            return str(sample.extra.get("answer_first") or ""), "VLMEvalKit can_infer (exact_matching)"
        return super().answer_key(sample, prediction)

    def generation_value(self, score: float) -> float:
        return int(score)

    def m_avg(self, acc: Accuracies, by_task: ByTask) -> tuple[float, int]:
        """Correct / total over its six-task list (no action order): question-weighted."""
        rs = [r for c in VLMEVALKIT_M_AVG for r in by_task.get(c, []) if r.counted]
        return (100.0 * sum(r.score or 0.0 for r in rs) / len(rs) if rs else math.nan), len(rs)

    def g_avg(self, gen: dict[str, float], by_task: ByTask) -> float:
        """Summed int(score) / count over both generation tasks."""
        judged = [r.score for c in ("SSC", "VS") for r in by_task.get(c, [])
                  if r.counted and r.score is not None and not math.isnan(r.score)]
        return sum(int(s) for s in judged) / len(judged) if judged else math.nan


HARNESSES: dict[str, type[MlvuHarness]] = {
    "official": MlvuHarness, LMMS_EVAL: MlvuLmmsEval, LMMS_EVAL_0_7_1: MlvuLmmsEval071,
    LMMS_EVAL_0_6: MlvuLmmsEval06, "vlmevalkit": MlvuVlmevalkit,
}
"""{compat: harness class}, in the order errors name them."""
