"""The judge's nouns: what a judge is asked (`JudgeTask`) and what it decided (`Judgement`).

They live apart from lvu.scoring.judges (the judge itself: prompts, calls, calibration) so that
modules building tasks for one protocol (lvu.scoring.vlmevalkit_judge) need not import the judge.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from lvu.types import LETTERS

Kind = Literal["equivalence", "mlvu-ssc", "mlvu-vs", "choice", "vlmevalkit-choice"]


class JudgeTask(BaseModel):
    """What a judge is asked about one prediction."""

    kind: Kind
    question: str
    candidate: str
    """The answer being judged (the model's response)."""
    reference: str = ""
    """Reference answer (equivalence, mlvu-vs)."""
    scoring_points: list[str] = Field(default_factory=list)
    """MLVU sub-scene captioning scoring points."""
    options: list[str] = Field(default_factory=list)
    """Choice extraction: option texts, shown lettered."""
    commit: str = ""
    """vlmevalkit-choice: the VLMEvalKit commit whose can_infer reads the judge's answer."""
    draw_key: str = ""
    """vlmevalkit-choice: seeds the random pick after three answers without a letter (the sample id)."""


class Judgement(BaseModel):
    """A judge's decision, with what it said and who it was."""

    kind: Kind
    value: float | None = None
    """P(equivalent); MLVU total (2-10, less after a parse failure); chosen option index."""
    verdict: bool | None = None
    """Equivalence after the threshold."""
    method: str = ""
    """"logprobs", "text", "parse-failed", "mlvu-calculate", "llm-judge"; vlmevalkit-choice: "vlmevalkit-judge"
    (an answer read), "vlmevalkit-random" (the random pick after three answers without a letter)."""
    parts: dict[str, float] = Field(default_factory=dict)
    """MLVU sub-scores by name (accuracy/relevance, completeness/reliability)."""
    raw: str = ""
    """The judge's reply as generated."""
    judge: str = ""
    """Which judge: backend, model and (equivalence) threshold."""
    error: str | None = None
    """The judge call failed (value and verdict are then None)."""

    def summary(self) -> str:
        """One line for Score.explanation."""
        if self.error:
            return f"judge failed: {self.error} (judge: {self.judge})"
        if self.kind == "equivalence":
            if self.method == "parse-failed":
                what = "reply has neither TRUE nor FALSE: not equivalent"
            else:
                source = "from log-probabilities" if self.method == "logprobs" else "from the reply text (no log-probabilities)"
                what = f"P(equivalent)={self.value:.3f} {source} -> {'equivalent' if self.verdict else 'not equivalent'}"
        elif self.kind == "choice":
            what = "no option chosen (Z)" if self.value is None else f"chose {LETTERS[int(self.value)]}"
        elif self.kind == "vlmevalkit-choice":
            what = "Z (no option)" if self.value is None else f"chose {LETTERS[int(self.value)]}"
            if self.method == "vlmevalkit-random":
                what = f"no option letter in {int(self.parts.get('tries', 0))} answers: random pick, {what}"
        else:
            subs = " + ".join(f"{k} {v:g}" for k, v in self.parts.items())
            failed = " (parse failed: a missing score counts 0, as calculate.py)" if self.method == "parse-failed" else ""
            what = f"{subs or 'no scores'} = {self.value:g}{failed}"
        return f"{what} (judge: {self.judge})"
