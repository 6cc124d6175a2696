"""Judges: any lvu model backend asked a judge prompt, with the answer read the protocol's way.

    judge = make_judge("openai", {"model": "google/gemma-2-9b-it", "base_url": "http://127.0.0.1:8000/v1"})
    j = await judge.judge(JudgeTask(kind="equivalence", question=q, reference=ref, candidate=reply))
    j.value, j.verdict, j.method, j.judge   # P(equivalent), after the threshold, "logprobs", who judged

Kinds:
- "equivalence" — GEM-style (Neptune App. D): the paper's prompt, candidate truncated to 100 words,
  value = P(TRUE) / (P(TRUE) + P(FALSE)) from the top log-probabilities of the first generated
  token offering TRUE or FALSE (token text stripped of spaces and tokenizer markers, any case;
  every variant summed); verdict = value >= threshold. No log-probabilities (or neither token
  among them): the reply's first TRUE/FALSE word decides, method "text"; neither: "parse-failed".
- "mlvu-ssc" / "mlvu-vs" — MLVU's GPT-4-turbo judge prompts at temperature 0; value = the sum of
  the two 1-5 sub-scores, read like the official calculate.py (below).
- "choice" — LLM choice extraction: the question, the lettered options and the response; value =
  the option index, None when the judge answers Z (none) or no letter.
- "vlmevalkit-choice" — VLMEvalKit's own matching judge (lvu.scoring.vlmevalkit_judge): its
  build_prompt text, the answer read with its can_infer at the task's commit, up to three tries,
  then a seeded random pick among the letters and Z; value = the option index, None for Z.

Thresholds: `calibrate` picks the F1-maximising one on a labelled dev set; `save_calibration`
stores it under `cache_dir("judges")`, keyed by a hash of the judge's model identity, and
`make_judge` loads it for the same judge. Uncalibrated judges use 0.5 and say so in `identity`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from pydantic import BaseModel, ValidationError

from lvu.errors import DataError, LvuError
from lvu.scoring import judge_prompts as jp
from lvu.scoring.judge_tasks import Judgement, JudgeTask, Kind  # noqa: F401  (importable from here too)
from lvu.types import Prompt, Text
from lvu.textlines import text_lines

if TYPE_CHECKING:
    from lvu.models.base import Model

DEFAULT_THRESHOLD = 0.5
PROMPT_VERSION = "gem-v1"
"""Part of a judge's calibration key: a changed equivalence prompt needs a new calibration."""
LOGPROB_ARGS: dict[str, dict[str, Any]] = {
    "openai": {"logprobs": True, "top_logprobs": 5},
    "hf": {"logprobs": True, "top_logprobs": 5},
    "vllm": {"logprobs": 5},
    "gemini": {"logprobs": 5},
}
"""Arguments make_judge adds (unless given) so backends return top log-probabilities."""
MAX_TOKENS: dict[str, int] = {"equivalence": 8, "mlvu-ssc": 2048, "mlvu-vs": 2048, "choice": 32,
                              "vlmevalkit-choice": 2048}
"""Equivalence needs one token (a few in case a chat model echoes the prefix); MLVU judges write a
rationale before their JSON (the official script sets no limit); VLMEvalKit's judge wrapper sends 2048."""


# ---- reading judge replies ---------------------------------------------------------------------


def _norm_token(token: str) -> str:
    return token.strip().strip("\u2581\u0120").strip().upper()


def equivalence_probability(logprobs: list[dict[str, float]] | None) -> float | None:
    """P(TRUE) / (P(TRUE) + P(FALSE)) at the first generated position whose top alternatives
    include TRUE or FALSE (any case, spaces stripped, variants summed); None when none does."""
    for step in logprobs or []:
        p = {"TRUE": 0.0, "FALSE": 0.0}
        for token, lp in step.items():
            if (key := _norm_token(token)) in p and lp is not None and not math.isnan(lp):
                p[key] += math.exp(lp)
        if p["TRUE"] + p["FALSE"] > 0:
            return p["TRUE"] / (p["TRUE"] + p["FALSE"])
    return None


def equivalence_from_text(text: str) -> bool | None:
    """The reply's first TRUE or FALSE word (any case); None when it has neither."""
    m = re.search(r"\b(true|false)\b", text, flags=re.I)
    return None if m is None else m.group(1).upper() == "TRUE"


def mlvu_scores(text: str, keys: tuple[str, str]) -> tuple[float, float, bool]:
    """(first sub-score, second sub-score, complete) read like the official calculate.py: each key
    is looked for in order and the scores found are appended; the first found adds to the first
    sub-score, the second to the second, a missing one adds 0 (its `except: += 0`) — so when only
    the second key is found its value lands in the first slot, as in the official script. Where
    calculate.py reads `text[find(":") + 2 : find(",")]`, lvu reads the number after the colon
    (quotes and JSON spacing allowed), which is the same on every reply calculate.py can parse."""
    found = []
    for key in keys:
        m = re.search(rf"{key}\W{{0,3}}:\s*[\"']?\s*(-?\d+(?:\.\d+)?)", text)
        if m:
            found.append(float(m.group(1)))
    first = found[0] if found else 0.0
    second = found[1] if len(found) > 1 else 0.0
    return first, second, len(found) == 2


def choice_from_text(text: str, n_options: int) -> int | None:
    """Option index from the judge's reply (a letter), None for Z or no letter."""
    from lvu.scoring.choice import extract_letter

    return extract_letter(text, n_options)


# ---- prompts -------------------------------------------------------------------------------------


def build_prompt(task: JudgeTask) -> Prompt:
    """The judge prompt for a task (temperature 0, small max_tokens per kind)."""
    system = prefix = None
    if task.kind == "equivalence":
        text, prefix = jp.gem_user_text(task.question, task.candidate, task.reference), jp.GEM_ANSWER_PREFIX
    elif task.kind == "mlvu-ssc":
        text, system = jp.mlvu_ssc_user(task.question, task.scoring_points, task.candidate), jp.MLVU_SSC_SYSTEM
    elif task.kind == "mlvu-vs":
        text, system = jp.mlvu_vs_user(task.reference, task.candidate), jp.MLVU_VS_SYSTEM
    elif task.kind == "vlmevalkit-choice":
        from lvu.scoring.vlmevalkit_judge import prompt_text

        text = prompt_text(task.question, task.options, task.candidate)
    else:
        text = jp.choice_user_text(task.question, task.options, task.candidate)
    return Prompt(parts=[Text(text=text)], system=system, assistant_prefix=prefix, choices=list(task.options),
                  question=task.question, temperature=0.0, max_tokens=MAX_TOKENS[task.kind])


# ---- the judge ---------------------------------------------------------------------------------------


class Judge:
    """A model backend used as a judge. `threshold` None: 0.5, marked uncalibrated."""

    def __init__(self, model: Model, *, threshold: float | None = None, threshold_source: str | None = None) -> None:
        self.model = model
        self.threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
        self.threshold_source = threshold_source or ("uncalibrated default" if threshold is None else "given")

    @property
    def short_name(self) -> str:
        """Backend and model only, for table rows ('openai:gemma-2-9b-it')."""
        return f"{self.model.name}:{self.model.args.get('model', '')}"

    @property
    def model_identity(self) -> str:
        """Backend and the arguments that change answers, e.g. 'openai:gemma-2-9b-it (base_url=...)'."""
        neutral = set(getattr(type(self.model), "run_neutral_args", ()))
        args = {k: v for k, v in sorted(self.model.args.items()) if k not in neutral and k != "model"}
        extra = ", ".join(f"{k}={v}" for k, v in args.items())
        return self.short_name + (f" ({extra})" if extra else "")

    @property
    def key(self) -> str:
        """Calibration key: a hash of the model identity and the equivalence prompt version."""
        return hashlib.sha256(f"{PROMPT_VERSION}\n{self.model_identity}".encode()).hexdigest()[:16]

    @property
    def identity(self) -> str:
        """Names the judge and its equivalence threshold (and where the threshold comes from)."""
        return f"{self.model_identity} threshold={self.threshold:.4g} ({self.threshold_source})"

    def label(self, kind: str) -> str:
        """What a Judgement of this kind records as its judge (thresholds only matter for equivalence)."""
        return self.identity if kind == "equivalence" else self.model_identity

    async def judge(self, task: JudgeTask, *, sample_id: str = "") -> Judgement:
        """Ask the judge; a failed call comes back as Judgement.error, never raised."""
        out = Judgement(kind=task.kind, judge=self.label(task.kind))
        if task.kind == "vlmevalkit-choice":
            return await self._vlmevalkit_choice(task, out, sample_id)
        response = await self.model.generate(build_prompt(task), sample_id=sample_id)
        out.raw = response.text or ""
        if response.error:
            out.error = response.error
            return out
        if task.kind == "equivalence":
            p = equivalence_probability(response.logprobs)
            if p is not None:
                out.value, out.verdict, out.method = p, p >= self.threshold, "logprobs"
            elif (said := equivalence_from_text(out.raw)) is not None:
                out.value, out.verdict, out.method = float(said), said, "text"
            else:
                out.value, out.verdict, out.method = 0.0, False, "parse-failed"
        elif task.kind in jp.MLVU_KEYS:
            keys = jp.MLVU_KEYS[task.kind]
            first, second, complete = mlvu_scores(out.raw, keys)
            out.parts = {keys[0].removeprefix("score_"): first, keys[1].removeprefix("score_"): second}
            out.value, out.method = first + second, "mlvu-calculate" if complete else "parse-failed"
        else:
            idx = choice_from_text(out.raw, len(task.options))
            out.value, out.method = (None if idx is None else float(idx)), "llm-judge"
        return out

    async def _vlmevalkit_choice(self, task: JudgeTask, out: Judgement, sample_id: str) -> Judgement:
        """extract_answer_from_item's loop: up to three answers read with can_infer (an option
        letter or Z ends it), then the seeded random pick among the letters and Z."""
        from lvu.scoring import vlmevalkit_judge as vj

        prompt = build_prompt(task)
        answers = []
        for _ in range(vj.TRIES):
            response = await self.model.generate(prompt, sample_id=sample_id)
            answers.append(response.text or "")
            if response.error:
                out.raw, out.error = "\n".join(answers), response.error
                return out
            letter = vj.read_answer(answers[-1], task.options, commit=task.commit or vj.E8E78F05)
            if letter is not None:
                out.method = "vlmevalkit-judge"
                break
        else:
            letter, out.method = vj.random_pick(task.draw_key or sample_id, task.options), "vlmevalkit-random"
        index = vj.letter_index(letter, task.options)
        out.value, out.raw, out.parts = (None if index is None else float(index)), "\n".join(answers), \
            {"tries": float(len(answers))}
        return out

    async def close(self) -> None:
        await self.model.close()


def make_judge(name: str, args: dict[str, Any] | None = None, threshold_file: str | Path | None = None, *,
               threshold: float | None = None) -> Judge:
    """A judge from a registered model name and its arguments (as `--model-arg`s). Backends that
    can return log-probabilities are asked for them unless `args` says otherwise. Threshold: the
    given one, else `threshold_file`'s, else the calibration stored for this judge, else 0.5."""
    from lvu.models import load_all
    from lvu.models.base import MODELS

    load_all()
    cls = MODELS.get(name)
    args = {**LOGPROB_ARGS.get(name, {}), **(args or {})}
    judge = Judge(cls(**args))
    if threshold is not None:
        judge.threshold, judge.threshold_source = float(threshold), "given"
        return judge
    path = Path(threshold_file) if threshold_file else calibration_path(judge)
    if threshold_file or path.exists():
        cal = load_calibration(path)
        if cal.get("judge") != judge.model_identity:
            raise LvuError(f"{path}: calibrated for {cal.get('judge')!r}, not {judge.model_identity!r} — "
                           "calibrate this judge (lvu judge calibrate) or pass --threshold")
        judge.threshold = float(cal["threshold"])
        judge.threshold_source = f"calibrated: F1 {100 * cal['f1']:.1f} on {Path(str(cal.get('dev', '?'))).name}"
    return judge


# ---- calibration -------------------------------------------------------------------------------------


class Calibration(NamedTuple):
    threshold: float
    f1: float
    precision: float
    recall: float
    accuracy: float


def binary_metrics(scores: list[float], labels: list[int], threshold: float) -> Calibration:
    """F1, precision, recall and accuracy of `score >= threshold` against 0/1 labels."""
    tp = sum(1 for s, y in zip(scores, labels) if s >= threshold and y)
    fp = sum(1 for s, y in zip(scores, labels) if s >= threshold and not y)
    fn = sum(1 for s, y in zip(scores, labels) if s < threshold and y)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = sum(1 for s, y in zip(scores, labels) if (s >= threshold) == bool(y)) / len(labels)
    return Calibration(threshold, f1, precision, recall, accuracy)


def calibrate(scores: list[float], labels: list[int]) -> Calibration:
    """The threshold that maximises F1 of `score >= threshold`. Candidates are the cuts between
    consecutive distinct scores (the midpoint is reported) and the lowest score (everything
    positive). Ties: the higher accuracy, then the higher threshold (fewer positives)."""
    if len(scores) != len(labels) or len(scores) < 2:
        raise LvuError(f"calibration needs at least 2 scored rows ({len(scores)} scores, {len(labels)} labels)")
    if not any(labels):
        raise LvuError("the dev set has no equivalent (label 1) rows — F1 is undefined")
    values = sorted(set(scores), reverse=True)
    cuts = [(a + b) / 2 for a, b in zip(values, values[1:])] + [values[-1]]
    best = max((binary_metrics(scores, labels, t) for t in cuts),
               key=lambda m: (round(m.f1, 12), round(m.accuracy, 12), m.threshold))
    return best


def calibration_path(judge: Judge) -> Path:
    from lvu.paths import cache_dir

    return cache_dir("judges") / f"{judge.key}.json"


def save_calibration(judge: Judge, cal: Calibration, *, dev: Path, n: int, positives: int,
                     path: Path | None = None) -> Path:
    """Store a calibration for this judge (atomically); `make_judge` finds it by the judge's key."""
    path = path or calibration_path(judge)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"judge": judge.model_identity, "key": judge.key, "prompt": PROMPT_VERSION, **cal._asdict(),
              "dev": str(dev), "dev_sha256": hashlib.sha256(Path(dev).read_bytes()).hexdigest(), "n": n,
              "positives": positives, "created": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def load_calibration(path: Path) -> dict[str, Any]:
    try:
        cal = json.loads(Path(path).read_text(encoding="utf-8"))
        float(cal["threshold"]), float(cal["f1"])
        return cal
    except FileNotFoundError:
        raise LvuError(f"{path}: no such calibration file — run lvu judge calibrate first") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise LvuError(f"{path}: not a calibration file ({e}) — re-run lvu judge calibrate") from None


# ---- labelled equivalence dev sets ---------------------------------------------------------------------


class DevRow(BaseModel):
    """One labelled (question, reference, candidate) triplet."""

    question: str
    reference: str
    candidate: str
    label: int
    """1 = equivalent. From `label` (0/1, true/false) or `score` (0-1, > 0.5 = equivalent)."""
    id: str = ""


def read_dev_set(path: str | Path) -> list[DevRow]:
    """JSONL rows {question, reference, candidate, label (0/1) | score (0-1)}; DataError 'file:line: ...'."""
    path = Path(path)
    try:
        lines = text_lines(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DataError(f"{path}: dev set not found — pass a JSONL file of question/reference/candidate/label rows") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read the dev set ({e})") from None
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            if "label" in raw:
                label = raw["label"]
                if label not in (0, 1, True, False):
                    raise ValueError(f"label {label!r} is not 0 or 1")
                label = int(label)
            elif "score" in raw:
                score = float(raw["score"])
                if not 0.0 <= score <= 1.0:
                    raise ValueError(f"score {score!r} is outside 0-1")
                label = int(score > 0.5)
            else:
                raise ValueError("no label (0/1) or score (0-1)")
            rows.append(DevRow(question=raw.get("question", ""), reference=raw["reference"],
                               candidate=raw["candidate"], label=label, id=str(raw.get("id", n))))
        except (json.JSONDecodeError, ValueError, KeyError, TypeError, ValidationError) as e:
            what = f"missing {e}" if isinstance(e, KeyError) else str(e).splitlines()[0]
            raise DataError(f"{path}:{n}: {what} — each line needs question, reference, candidate and label "
                            "(0/1) or score (0-1)") from None
    if not rows:
        raise DataError(f"{path}: the dev set is empty")
    return rows


def dev_task(row: DevRow) -> JudgeTask:
    """What the judge is asked about a dev row (the label is not shown)."""
    return JudgeTask(kind="equivalence", question=row.question, reference=row.reference, candidate=row.candidate)


async def judge_rows(judge: Judge, rows: list[DevRow], *, concurrency: int = 8, show_progress: bool = True,
                     on_done: Callable[[int, Judgement], None] | None = None) -> list[Judgement]:
    """Equivalence judgements of dev rows, in order (concurrent calls, a progress bar), in memory;
    `on_done(index, judgement)` hears of each as it arrives. `lvu judge calibrate` / `eval` judge
    through lvu.runs.dev_judging instead, which commits each to the ledger and resumes."""
    import asyncio

    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    from lvu.progress import LoggedProgress

    gate = asyncio.Semaphore(max(1, concurrency))
    progress = LoggedProgress(TextColumn("[bold]judging dev set"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                              disable=not show_progress, label="judging dev set")
    bar = progress.add_task("", total=len(rows))

    async def one(index: int, row: DevRow) -> Judgement:
        async with gate:
            out = await judge.judge(dev_task(row), sample_id=row.id)
            progress.update(bar, advance=1)
            if on_done is not None:
                on_done(index, out)
            return out

    try:
        with progress:
            return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(rows))))
    finally:
        await judge.close()
