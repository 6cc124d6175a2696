"""VLMEvalKit's MLVU as harnesses (lvu.benchmarks.harness), one per pinned commit
(lvu.scoring.vlmevalkit.COMMITS): `MlvuVlmevalkit` follows vlmeval/dataset/mlvu.py,
dataset/utils/mlvu.py and the matching code they call at e8e78f05 (`compat=vlmevalkit`, the same as
`vlmevalkit@e8e78f05`: `MlvuVlmevalkitE8e78f05`); `MlvuVlmevalkit296425e2` overrides only where
296425e2's code differs (`compat=vlmevalkit@296425e2`, the behaviour lvu followed before compat round 3).

What both commits do (MLVU_MCQ / MLVU_OpenEnded / MLVU, exact_matching path; docs/benchmarks/mlvu.md):
- frames: nframe N at int(i * T / (N + 1)), i = 1..N; fps F at int(i * fps_video / F);
- MCQ messages: system SYS, then the qa_template text and the frames (e8e78f05: frames first,
  296425e2: text first), then "\\nOnly give the best option." as its own text; no prefill;
- evaluate(): the prediction as read back from the .xlsx/.tsv sheet (pandas' na_values:
  lvu.scoring.vlmevalkit.reread); `FAIL_MSG in pred` → score -1 (a NaN prediction makes that test
  raise TypeError: evaluate() stops — lvu stores such a sample as failed, naming why); else
  check_ans_with_model: the unstripped reply's char before its first ")" (else the whole reply)
  against the LAST candidate equal to the answer, else can_infer(reply, options) against the FIRST
  equal candidate (lvu.scoring.vlmevalkit_match, at the harness's commit), else its LLM judge when
  one works (`choice_task`) — with none, option 'Z', wrong;
- rating: per task success = the sum of int(score) (a -1 row lowers it), overall = rows; acc =
  round(100 * success / overall, 1); M-Avg = round(100 * Σsuccess / Σoverall, 1) over its task list
  (e8e78f05: 7 tasks with action order; 296425e2: 6, without it); G-Avg = round(Σint(score) / rows, 2).
  lvu reports the unrounded values.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lvu.benchmarks.mlvu_harness import (
    MC_INSTRUCTION, SYSTEM_GEN, SYSTEM_MC, Accuracies, ByTask, MlvuHarness, frame_count, index_times,
    letter_prediction, check_ans_pred, qa_template,
)
from lvu.errors import LvuError
from lvu.media.sampling import Vlmevalkit
from lvu.scoring.vlmevalkit import (
    COMMITS, FAIL_MSG, UNMATCHED, VLMEVALKIT, VLMEVALKIT_296425E2, VLMEVALKIT_E8E78F05, is_api_failure, reread,
)
from lvu.scoring.vlmevalkit_match import C296425E2, E8E78F05, build_choices, can_infer
from lvu.types import LETTERS, Frame, Prediction, Prompt, Response, Sample, Score, Text, VideoMeta

if TYPE_CHECKING:
    from lvu.scoring.judge_tasks import JudgeTask

CAN_INFER = "vlmevalkit-can-infer"
"""Prediction.method of a reply VLMEvalKit's can_infer read (compared with the FIRST equal candidate)."""
API_FAILED = "vlmevalkit-api-failure"
"""Prediction.method of a reply holding FAIL_MSG: VLMEvalKit's MLVU scores it -1."""
M_AVG_TASKS = {E8E78F05: ("PQA", "NQA", "ER", "AC", "AR", "TR", "AO"),
               C296425E2: ("PQA", "NQA", "ER", "AC", "AR", "TR")}
"""The task codes of MLVU.type_data_dict['M-Avg'] at each commit (plotQA, needle, ego, count,
anomaly_reco, topic_reasoning; e8e78f05 adds order)."""


def nan_reply_error(reply: str) -> str:
    """The one-line reason a reply VLMEvalKit reads back as NaN is stored as failed."""
    return (f"VLMEvalKit's MLVU evaluate() stops on this reply: pandas reads {reply!r} back from its sheet as NaN "
            f"and `FAIL_MSG in pred` raises TypeError (e8e78f05 and 296425e2) — stored as failed")


class MlvuVlmevalkit(MlvuHarness):
    """VLMEvalKit's MLVU at e8e78f05: frames, then the qa_template text, then the instruction; no
    prefill; vlmevalkit:N frames; -1 for an API failure; check_ans, else can_infer (e8e78f05), else
    its judge; M-Avg question-weighted over seven tasks; G-Avg over int(score)."""

    compat = VLMEVALKIT
    commit = E8E78F05
    own_choice_judge = True
    peer = f"VLMEvalKit @{COMMITS[VLMEVALKIT]} (vlmeval/dataset/mlvu.py, utils/mlvu.py, utils/matching_util.py)"

    # ---- frames -----------------------------------------------------------------------------------

    def fps_times(self, video: VideoMeta, fps: float) -> list[float]:
        """Its fps mode: frame indices int(i * fps_video / F), i < int(T / fps_video * F)."""
        rate, total = frame_count(video)
        step = rate / fps
        return index_times([int(i * step) for i in range(int(total / rate * fps))], rate, total)

    def frame_indices(self, total: int, rate: float) -> list[int]:
        return Vlmevalkit(n=self.settings["frames"]).frame_indices(total, rate)

    # ---- prompts ----------------------------------------------------------------------------------

    def generation_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        return self._prompt(sample, [*frames, Text(text=sample.question)], system=SYSTEM_GEN, max_tokens=1000)

    def choice_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        text = qa_template(sample.question, sample.options)
        return self._prompt(sample, [*frames, Text(text=text), Text(text=MC_INSTRUCTION)], system=SYSTEM_MC,
                            max_tokens=100)

    # ---- extraction and scoring -------------------------------------------------------------------

    def extract_choice(self, sample: Sample, response: Response) -> Prediction:
        """evaluate() on the reply as its sheet gives it back: NaN → failed (LvuError), FAIL_MSG →
        API_FAILED, check_ans on the unstripped reply when it finds the answer letter, else can_infer
        at this commit, else UNMATCHED (the judge's rows; wrong without one)."""
        reply = reread(response.text)
        if reply is None:
            raise LvuError(nan_reply_error(response.text))
        if is_api_failure(reply):
            return Prediction(value=None, method=API_FAILED)
        if check_ans_pred(reply) == sample.extra.get("answer_letter"):
            return letter_prediction(check_ans_pred(reply), LETTERS[:len(sample.options)])
        inferred = can_infer(reply, build_choices(sample.options), commit=self.commit)
        if inferred is None:
            return Prediction(value=None, method=UNMATCHED)
        valid = LETTERS[:len(sample.options)]
        return Prediction(value=valid.index(inferred) if inferred in valid else inferred, method=CAN_INFER)

    def answer_key(self, sample: Sample, prediction: Prediction) -> tuple[str, str]:
        """can_infer and its judge compare with the FIRST candidate equal to the answer."""
        if prediction.method == CAN_INFER:
            return str(sample.extra.get("answer_first") or ""), f"VLMEvalKit @{self.commit} can_infer (exact_matching)"
        if prediction.method == "llm-judge":
            return str(sample.extra.get("answer_first") or ""), f"VLMEvalKit @{self.commit}: its judge's letter"
        if prediction.method == UNMATCHED:
            return (str(sample.extra.get("answer_first") or ""),
                    f"VLMEvalKit @{self.commit}: no option read (its LLM judge's row; exact_matching: 'Z')")
        return super().answer_key(sample, prediction)

    def fixed_score(self, sample: Sample, prediction: Prediction) -> Score | None:
        """-1 for a reply holding FAIL_MSG, as evaluate() scores it (and its rating adds it up)."""
        if prediction.method != API_FAILED:
            return None
        return Score(value=-1.0, correct=False,
                     explanation=f"VLMEvalKit @{self.commit}: {FAIL_MSG!r} in the prediction scores -1, "
                                 f"added to its task's success count")

    def choice_task(self, sample: Sample, prediction: Prediction, reply: str) -> JudgeTask | None:
        """VLMEvalKit's own judge prompt (lvu.scoring.vlmevalkit_judge) for exactly the replies its
        rules read no option from; None for the others."""
        if prediction.method != UNMATCHED or not sample.options:
            return None
        from lvu.scoring.vlmevalkit_judge import mlvu_choice_task

        return mlvu_choice_task(sample, reply, commit=self.commit)

    # ---- aggregation ------------------------------------------------------------------------------

    def generation_value(self, score: float) -> float:
        return int(score)

    def m_avg(self, acc: Accuracies, by_task: ByTask) -> tuple[float, int]:
        """Σscore / rows over its task list at this commit: question-weighted, a -1 row subtracting."""
        rs = [r for c in M_AVG_TASKS[self.commit] for r in by_task.get(c, []) if r.counted]
        return (100.0 * sum(r.score or 0.0 for r in rs) / len(rs) if rs else math.nan), len(rs)

    def g_avg(self, gen: dict[str, float], by_task: ByTask) -> float:
        """Summed int(score) / count over both generation tasks."""
        judged = [r.score for c in ("SSC", "VS") for r in by_task.get(c, [])
                  if r.counted and r.score is not None and not math.isnan(r.score)]
        return sum(int(s) for s in judged) / len(judged) if judged else math.nan


class MlvuVlmevalkitE8e78f05(MlvuVlmevalkit):
    """`vlmevalkit@e8e78f05`: the default `vlmevalkit`, named by its commit."""

    compat = VLMEVALKIT_E8E78F05


class MlvuVlmevalkit296425e2(MlvuVlmevalkit):
    """VLMEvalKit's MLVU at 296425e2: the qa_template text BEFORE the frames; can_infer without
    e8e78f05's three rules (a lone letter anywhere, no "answer is X", option text at any length);
    M-Avg without action order."""

    compat = VLMEVALKIT_296425E2
    commit = C296425E2
    peer = f"VLMEvalKit @{COMMITS[VLMEVALKIT_296425E2]} (vlmeval/dataset/mlvu.py, utils/mlvu.py, utils/matching_util.py)"

    def generation_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        return self._prompt(sample, [Text(text=sample.question), *frames], system=SYSTEM_GEN, max_tokens=1000)

    def choice_prompt(self, sample: Sample, frames: list[Frame]) -> Prompt:
        text = qa_template(sample.question, sample.options)
        return self._prompt(sample, [Text(text=text), *frames, Text(text=MC_INSTRUCTION)], system=SYSTEM_MC,
                            max_tokens=100)


VLMEVALKIT_HARNESSES: dict[str, type[MlvuHarness]] = {
    VLMEVALKIT: MlvuVlmevalkit, VLMEVALKIT_E8E78F05: MlvuVlmevalkitE8e78f05, VLMEVALKIT_296425E2: MlvuVlmevalkit296425e2,
}
"""{compat: harness class} of the VLMEvalKit modes (lvu.benchmarks.mlvu.HARNESSES adds them to the table)."""
