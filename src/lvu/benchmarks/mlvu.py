"""MLVU (Zhou et al., 2024): multi-task long-video understanding, dev and test sets.
Full protocol notes, sources and harness comparison: docs/benchmarks/mlvu.md.

Data (nine task JSON files of the dev set, the test set's question file, the hub copy), the task
table and the record mapper: mlvu_release.py.

Official protocol (the repo's templates win over the paper, whose Figure 11 prompt is an image):
- frames=16 by the repo's get_index (seg=(T-1)/N, int(seg/2 + round(seg*i)), numpy's half-even
  round); fps=F is the paper's "N fps" mode (GPT-4o: 0.5 fps, 512 px → resize); no subtitles.
- MCQ: system SYSTEM_MC; user text qa_template(question, candidates) + "\nOnly give the best
  option." after the video; the assistant turn pre-filled with "Best Option: (". (The template's
  comment glues the instruction on without "\n"; every script the authors ran has the "\n".)
  Generation: system SYSTEM_GEN, user text = the question.
- check_ans as written: on the stripped reply take the char before the first ")", else the whole
  reply, and compare it case-sensitively with the answer letter — the LAST candidate equal to the
  answer text, '@' (never an option) when none is (`answer_letter`, applied as the release is read).
- M-Avg = unweighted mean of the MCQ task accuracies (a failed sample counts wrong); G-Avg = mean
  of SSC and VS, each the mean judge total (2-10). Generation samples are stored with their reply
  and scored Score(nan, counted=False, explanation=JUDGE_PENDING) until a judge scores them
  (`--judge`, lvu.scoring.judges): judge_task gives it MLVU's official GPT-4-turbo prompts (SSC:
  question + scoring points; VS: the reference summary), judged_score takes the total of the two
  1-5 sub-scores read like calculate.py (a missing score adds 0 and the item still counts);
  aggregate() averages judged (counted) ones, a failed reply scoring 0, and shows the sub-scores.
- test answers hidden → counted=False; write_submission writes test_bench.py's
  [{question_id, question_type, option}] (option = stripped reply up to its first ")") and the
  generation outputs subplot_all.json / summary_all.json the official judge scripts read.

compat (anchors §1.3/§2.3/§6; lmms-eval 0.7.3 wheel, VLMEvalKit mlvu.py @e8e78f05 and @296425e2):
- "mlvu-literal": the official protocol, but check_ans reads the reply as decoded, unstripped, as
  the repo's choice_bench.py does (" C \n", gold C: wrong; the official mode strips: right).
- "lmms-eval": MCQ only; no system prompt or prefill; dev text = question + "(A) …" lines +
  "\nOnly give the best option.\nBest option: (", test text = question + lines; its
  extract_mcq_answer over A-D only (test E/F never score) on the reply after its evaluator strips
  <think>/<analysis> blocks (releases 0.7.2-0.7.3); lmms:N frames; M-Avg = per-type accuracies
  summed over its fixed type list (7 dev / 9 test, a missing type counts 0) / list size.
  "lmms-eval@0.7.1" (0.7.0-0.7.1) and "lmms-eval@0.6" (0.6.0-0.6.1, no reasoning-tag stripping):
  the same, but the letter is the character before the first ")" of the stripped reply, else the
  whole reply, compared with the answer letter (their `extract_characters_regex`).
- "vlmevalkit" (= "vlmevalkit@e8e78f05"): system, frames, qa_template text, "\nOnly give the best
  option."; no prefill; vlmevalkit:N frames (fps mode int(i*fps_video/F)); the reply as its sheet
  round trip gives it back (pandas' na_values → NaN: its evaluate() raises, lvu stores a failed
  sample); FAIL_MSG → -1 (added to the task's success count); check_ans on the unstripped reply,
  else can_infer at e8e78f05 (against the FIRST equal candidate), else its LLM judge (`--judge`;
  none: wrong); M-Avg = question-weighted over seven tasks (action order included); G-Avg = summed
  int(score) / count. "vlmevalkit@296425e2": text before the frames, can_infer at 296425e2, M-Avg
  over six tasks (no action order).

Harnesses (mlvu_harness.py, mlvu_vlmevalkit.py): `MlvuHarness` (official), `MlvuLiteral`
(mlvu-literal), `MlvuLmmsEval` (lmms-eval), `MlvuLmmsEval071` (lmms-eval@0.7.1), `MlvuLmmsEval06`
(lmms-eval@0.6), `MlvuVlmevalkit` (vlmevalkit), `MlvuVlmevalkitE8e78f05` (vlmevalkit@e8e78f05) and
`MlvuVlmevalkit296425e2` (vlmevalkit@296425e2), picked once from `compat` in `Mlvu.__init__`; the
steps above that differ delegate to `self.harness`. Settings: `MlvuSettings` (one typed field
each, its checks as validators).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.harness import pick
from lvu.benchmarks.mlvu_harness import (  # noqa: F401 — the protocol's texts and functions: still importable from here
    ASSISTANT_PREFIX, LMMS_POST_PROMPT, LMMS_TYPES, MC_INSTRUCTION, OWN_HARNESSES, SYSTEM_GEN, SYSTEM_MC,
    MlvuHarness, check_ans_pred, mlvu_indices, qa_template,
)
from lvu.benchmarks.mlvu_ref import REFERENCE
from lvu.benchmarks.mlvu_release import (  # noqa: F401 — FOLDERS, Task, answer_letter: still importable from here
    BY_TYPE, FOLDERS, HUB_REVISION, TASKS, Task, answer_letter, load_release,
)
from lvu.benchmarks.mlvu_vlmevalkit import VLMEVALKIT_HARNESSES
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.errors import DataError, LvuError
from lvu.scoring.judges import Judgement, JudgeTask
from lvu.scoring.lmms_eval import check_compat
from lvu.types import (
    Frame, InputPlan, LETTERS, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, VideoMeta,
)

JUDGE_PENDING = "needs the MLVU generation judge — run with --judge NAME, or lvu judge score RUN --judge NAME"
PAPER_COUNTS = {
    "dev": {"TR": 264, "AR": 200, "VS": 217, "NQA": 355, "ER": 352, "PQA": 539, "SSC": 201, "AO": 259, "AC": 206},
    "test": {"TR": 91, "AR": 39, "NQA": 60, "ER": 53, "PQA": 50, "SQA": 36, "AO": 70, "AC": 60, "TQA": 43},
}
"""Questions per task: dev from the paper (2,593 = 2,175 MCQ + 418 generation); test MCQ from the
repo's example submission (502; the test generation counts are not published)."""


def submission_option(reply: str) -> str:
    """Evaluation_Test/test_bench.py: the stripped reply up to its first ')', stripped."""
    pred = reply.strip()
    return pred[:pred.index(")")].strip() if ")" in pred else pred


# ---- settings -----------------------------------------------------------------------------------


HARNESSES: dict[str, type[MlvuHarness]] = {**OWN_HARNESSES, **VLMEVALKIT_HARNESSES}
"""{compat: harness class}, in the order errors name them (mlvu_harness.py, mlvu_vlmevalkit.py)."""


def _check_compat(value: Any) -> None:
    """A value the harness table knows (read when checked, so a new table entry is a new value)."""
    check_compat(value, tuple(HARNESSES), "mlvu")


def _check_split(value: Any) -> None:
    if value not in ("dev", "test"):
        raise LvuError(f"split={value!r} is unknown — MLVU has split=dev or split=test")


def _check_subtitles(value: Any) -> None:
    if value not in (None, "none"):
        raise LvuError("MLVU has no subtitles (its questions are visual only) — drop --subtitles")


def _check_frames(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LvuError(f"frames={value!r} is not a frame count — use a whole number such as 16")


def _check_fps(value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise LvuError(f"fps={value!r} is not a frame rate — use e.g. fps=0.5 (the paper's GPT-4o setting)")


_CHECKS_IN_ORDER = (("compat", _check_compat), ("split", _check_split), ("subtitles", _check_subtitles),
                    ("frames", _check_frames), ("fps", _check_fps))
"""The one-field checks, in the order a value breaking two of them is reported."""


class MlvuSettings(BenchmarkSettings):
    """MLVU's settings (defaults: the official repo's VideoChat2 template, 16 frames)."""

    split: Literal["dev", "test"] = Field("dev", description="dev (9 tasks) or test (11 tasks; answers hidden "
                                                             "unless test_mcq_gt.json is there)")
    tasks: str = Field("all", description="all, mc (M-Avg only), gen (SSC, VS) or task codes such as TR,AR; "
                                          "lmms-eval runs the MCQ tasks only")
    frames: int = Field(16, description="frames per video (paper: 16 for most models), picked by the "
                                        "harness's frame plan; ignored when fps is set")
    fps: float | int | None = Field(None, description="the paper's \"N fps\" mode (GPT-4o: 0.5) instead of a "
                                                      "frame count; not with lmms-eval")
    resize: int | None = Field(None, description="shorter frame side in pixels (GPT-4o: 512); none: full size")
    subtitles: Literal["none"] | None = Field("none", description="always none: MLVU's questions are visual only")
    compat: str = Field("official", description="whose protocol: official, mlvu-literal, lmms-eval, "
                                                "lmms-eval@0.7.1, lmms-eval@0.6, vlmevalkit (= vlmevalkit@e8e78f05) "
                                                "or vlmevalkit@296425e2 (mlvu_harness.py, mlvu_vlmevalkit.py)")
    hub_revision: Any = Field(HUB_REVISION, description="revision of the hub copy (MLVU/MVLU, MLVU/MLVU_Test) "
                                                        "read when --data is not given")

    @model_validator(mode="before")
    @classmethod
    def _one_field_checks(cls, values: Any) -> Any:
        """The checks of single settings, in the protocol's order (compat first)."""
        if isinstance(values, dict):
            for name, check in _CHECKS_IN_ORDER:
                if name in values:
                    check(values[name])
        return values

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_text(cls, value: Any) -> str:
        """Read as text; the harness checks the codes (lmms-eval has no generation tasks)."""
        return str(value)


# ---- the benchmark ----------------------------------------------------------------------------


def _sub_scores(by_task: dict[str, list[SampleResult]]) -> Breakdown | None:
    """Mean judge sub-scores (1-5) of SSC and VS, a failed reply adding 0 as to the totals (so the
    two means of a task sum to its total); the title names the judge(s). None before any judging."""
    rows: list[tuple[str, int, float]] = []
    judges: set[str] = set()
    for code in ("VS", "SSC"):
        judged = [r for r in by_task.get(code, []) if r.counted and r.judge and r.judge.get("parts")]
        if not judged:
            continue
        failed = sum(1 for r in by_task.get(code, []) if r.error)
        judges |= {str(r.judge["judge"]) for r in judged if r.judge}
        names = list(judged[0].judge["parts"]) if judged[0].judge else []
        for name in names:
            values = [float((r.judge or {})["parts"].get(name, 0.0)) for r in judged]
            rows.append((f"{code} {name}", len(judged) + failed, sum(values) / (len(judged) + failed)))
        if parse_failed := sum(1 for r in judged if (r.judge or {}).get("method") == "parse-failed"):
            rows.append((f"{code} judge replies not parsed (counted 0)", parse_failed, math.nan))
    if not rows:
        return None
    who = judges.pop() if len(judges) == 1 else f"{len(judges)} different judges (mixed run)"
    return Breakdown(title=f"generation sub-scores (1-5; judge: {who})", rows=rows)


@register_benchmark("mlvu")
class Mlvu(Benchmark):
    """MLVU dev/test: 7 (test 9) multiple-choice and 2 generation tasks, M-Avg / G-Avg (official repo protocol)."""

    Settings = MlvuSettings
    config: MlvuSettings
    harness: MlvuHarness
    """The harness `compat` picks (mlvu_harness.py): tasks, frames, prompts, extraction, M-Avg, G-Avg."""
    tasks: list[str]
    """The task codes this run holds, as `tasks=` and the harness choose them."""
    expected_counts = {"dev": 2593, "test": 502}
    reference = REFERENCE

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.harness = pick(HARNESSES, self.config.compat, "mlvu")(self)
        self.tasks = self.harness.choose_tasks(self.config.tasks)

    # ---- loading (mlvu_release.py) ------------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        return load_release(self.settings["split"], self.settings.get("data"), self.tasks,
                            video_dir=self.settings.get("video_dir"), hub_revision=self.settings["hub_revision"])

    def check(self) -> list[str]:
        """The generic checks, answers missing from their candidates, and question counts per task
        (usable questions, against the paper's; dev total 2,593, test MCQ total 502)."""
        split = self.settings["split"]
        problems = [p for p in super().check() if not p.startswith(f"{self.name} {split}: ")]
        samples, _ = self.load()
        for s in samples:
            if s.extra.get("answer_letter") == "@":
                problems.append(f"{s.id}: answer {s.extra['answer_text']!r} is not among the candidates — "
                                f"the official scorer counts it wrong")
        counts: dict[str, int] = defaultdict(int)
        for s in samples:
            counts[str(s.labels["task"])] += 1
        known = PAPER_COUNTS[split]
        if all(code in known for code in self.tasks) and len(samples) != sum(known[c] for c in self.tasks):
            problems.append(f"mlvu {split}: {len(samples)} usable questions in tasks {','.join(self.tasks)}, "
                            f"the paper has {sum(known[c] for c in self.tasks)}")
        for code in self.tasks:
            want = known.get(code)
            if want is not None and counts[code] != want:
                problems.append(f"mlvu {split} {code}: {counts[code]} questions, the paper has {want}")
        return problems

    # ---- inputs and prompts ----------------------------------------------------------------------

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        return InputPlan(timestamps=self.harness.times(video), subtitle_mode="none", resize=self.settings["resize"])

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        if TASKS[str(sample.labels["task"])].generation:
            return self.harness.generation_prompt(sample, frames)
        return self.harness.choice_prompt(sample, frames)

    # ---- extraction and scoring ------------------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if not sample.options:
            return Prediction(value=response.text.strip())
        return self.harness.extract_choice(sample, response)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if not sample.options:
            return Score(value=math.nan, counted=False, explanation=JUDGE_PENDING)
        if sample.extra.get("hidden"):
            return Score(value=0.0, counted=False, explanation="MLVU test answers are hidden — submit the file "
                                                               "write_submission writes")
        if (fixed := self.harness.fixed_score(sample, prediction)) is not None:
            return fixed
        got = prediction.value
        letter = LETTERS[got] if isinstance(got, int) else (got or "")
        gt, rule = self.harness.answer_key(sample, prediction)
        ok = bool(letter) and letter == gt
        return Score(value=float(ok), correct=ok, explanation=f"{rule}: compared {letter!r} with {gt!r}")

    def judge_task(self, sample: Sample, prediction: Prediction) -> JudgeTask | None:
        """SSC / VS with a reference (dev; test generation answers are hidden): MLVU's judge prompts."""
        task = TASKS.get(str(sample.labels.get("task")))
        if task is None or not task.generation or sample.answer is None:
            return None
        reply = str(prediction.value or "")
        if task.code == "SSC":
            return JudgeTask(kind="mlvu-ssc", question=sample.question, candidate=reply,
                             scoring_points=list(sample.extra.get("scoring_points") or []))
        return JudgeTask(kind="mlvu-vs", question=sample.question, candidate=reply, reference=str(sample.answer))

    def judged_score(self, sample: Sample, prediction: Prediction, judgement: Judgement) -> Score:
        """The judge's total (2-10; a parse failure counts what was read, missing scores as 0)."""
        return Score(value=float(judgement.value or 0.0), counted=True, explanation=judgement.summary())

    def choice_task(self, sample: Sample, prediction: Prediction, reply: str, *, llm_extract: bool) -> JudgeTask | None:
        """The harness's own judge (VLMEvalKit's MLVU asks one for the rows its rules miss, and only
        for those: `own_choice_judge`), else lvu's `--llm-extract`."""
        own = self.harness.choice_task(sample, prediction, reply)
        if own is not None or self.harness.own_choice_judge:
            return own
        return super().choice_task(sample, prediction, reply, llm_extract=llm_extract)

    # ---- aggregation ----------------------------------------------------------------------------

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        by_task: dict[str, list[SampleResult]] = defaultdict(list)
        for r in results:
            if r.labels.get("task") in TASKS:
                by_task[str(r.labels["task"])].append(r)
        mc_rows: list[tuple[str, int, float]] = []
        gen_rows: list[tuple[str, int, float]] = []
        acc: dict[str, tuple[float, int]] = {}
        gen: dict[str, float] = {}
        for code, task in TASKS.items():
            rs = by_task.get(code, [])
            if task.generation:
                judged = [r.score for r in rs if r.counted and r.score is not None and not math.isnan(r.score)]
                failed = [r for r in rs if r.error and r.counted]  # a data error (counted False) is left out
                vals = [self.harness.generation_value(v) for v in judged] + [0.0] * len(failed)
                if rs:
                    gen[code] = sum(vals) / len(vals) if judged else math.nan
                    gen_rows.append((code, len(judged) + (len(failed) if judged else 0), gen[code]))
                continue
            # a failed sample counts wrong — unless its answer is hidden (test): then nothing is known
            hidden = self.settings["split"] == "test"
            counted = [r for r in rs if r.counted and not (r.error and r.answer is None and hidden)]
            if rs:
                acc[code] = (100.0 * sum(r.score or 0.0 for r in counted) / len(counted), len(counted)) if counted \
                    else (math.nan, 0)
                mc_rows.append((code, acc[code][1], acc[code][0]))
        m_avg, n_mc = self.harness.m_avg(acc, by_task)
        g_avg = self.harness.g_avg(gen, by_task)
        n_gen = sum(n for _, n, _ in gen_rows)
        overall = [("M-Avg", n_mc, m_avg)] + ([("G-Avg", n_gen, g_avg)] if gen else [])
        tables = [Breakdown(title="overall", rows=overall)]
        if mc_rows:
            tables.append(Breakdown(title="multiple-choice task (accuracy %)", rows=mc_rows))
        if gen_rows:
            pending = "" if not any(math.isnan(v) for _, _, v in gen_rows) else f"; {JUDGE_PENDING}"
            tables.append(Breakdown(title=f"generation task (score 2-10{pending})", rows=gen_rows))
            if subs := _sub_scores(by_task):
                tables.append(subs)
        return tables

    # ---- saved predictions and submissions --------------------------------------------------------

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """Official outputs: choice_bench's {"acc_dict", "res_list": [{pred, question, video, …}]},
        open_bench's [{video_name, Q, A, pred}], a submission [{question_id, option}]; else lvu JSONL."""
        path = Path(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8-sig"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            doc = None
        except FileNotFoundError:
            raise DataError(f"{path}: file not found — pass the path of a predictions file") from None
        if doc is None or (isinstance(doc, dict) and "res_list" not in doc):
            return super().read_predictions(path)  # lvu's JSONL (one line or many)
        samples = self.load()[0]
        by_id = {s.id: s for s in samples}
        by_mc = {(Path(s.video.path).name, qa_template(s.question, s.options)): s for s in samples if s.options}
        by_gen = {(Path(s.video.path).name, s.question): s for s in samples if not s.options}
        rows = doc.get("res_list") if isinstance(doc, dict) else doc
        if not isinstance(rows, list):
            raise DataError(f"{path}: not an MLVU predictions file (choice_bench res_list, open_bench list, "
                            f"submission list or lvu JSONL)")
        pairs = []
        for i, row in enumerate(rows, 1):
            key: object = "?"
            sample: Sample | None = None
            text: Any = None
            if isinstance(row, dict) and "question_id" in row:
                key, sample, text = row["question_id"], by_id.get(str(row["question_id"])), row.get("option")
            elif isinstance(row, dict) and "Q" in row:
                gen_key: tuple[Any, Any] = (row.get("video_name"), row["Q"])
                key, sample, text = gen_key, by_gen.get(gen_key), row.get("pred")
            elif isinstance(row, dict) and "question" in row:
                mc_key: tuple[str, Any] = (Path(str(row.get("video", ""))).name, row["question"])
                key, sample, text = mc_key, by_mc.get(mc_key), row.get("pred")
            if sample is None:
                raise DataError(f"{path} row {i}: no MLVU {self.settings['split']} question matches {key!r} — "
                                f"pass the release the predictions were made on with --data")
            pairs.append((sample, str(text or "")))
        return pairs

    def write_submission(self, results: list[SampleResult], path: Path) -> Path:
        """Test: `path` gets the MCQ list [{question_id, question_type, option}] (test_bench.py);
        both splits: generation replies go to subplot_all.json / summary_all.json beside it (a
        directory `path` holds them), the files the official judge scripts read."""
        path = Path(path)
        mc = [r for r in results if r.labels.get("task") in TASKS and not TASKS[str(r.labels["task"])].generation]
        gens = [r for r in results if r.labels.get("task") in ("SSC", "VS")]
        if self.settings["split"] == "dev" and not gens:
            raise LvuError("MLVU dev answers are public — nothing to submit (generation replies would be written "
                           "for the official judge, but this run has none)")
        folder = path if path.is_dir() or (self.settings["split"] == "dev" and not path.suffix) else path.parent
        folder.mkdir(parents=True, exist_ok=True)
        if self.settings["split"] == "test":
            rows: list[dict[str, Any]] = [{"question_id": r.sample_id, "question_type": r.labels.get("question_type"),
                     "option": submission_option(r.response or "")} for r in mc]
            out = path if not path.is_dir() else path / "test_res.json"
            out.write_text(json.dumps(rows, indent=4), encoding="utf-8")
        else:
            out = folder
        if gens:
            samples = {s.id: s for s in self.load()[0]}
            for code, name in (("SSC", "subplot_all.json"), ("VS", "summary_all.json")):
                rows = [{"video_name": Path(samples[r.sample_id].video.path).name, "Q": samples[r.sample_id].question,
                         "A": samples[r.sample_id].answer, "pred": r.response or ""}
                        for r in gens if r.labels.get("task") == code and r.sample_id in samples]
                if rows:
                    (folder / name).write_text(json.dumps(rows, indent=4), encoding="utf-8")
        return out

