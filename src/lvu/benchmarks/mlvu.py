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

compat (anchors §1.3/§2.3/§6; lmms-eval 0.7.3 wheel, VLMEvalKit mlvu.py @296425e):
- "lmms-eval": MCQ only; no system prompt or prefill; dev text = question + "(A) …" lines +
  "\nOnly give the best option.\nBest option: (", test text = question + lines; its
  extract_mcq_answer over A-D only (test E/F never score) on the reply after its evaluator strips
  <think>/<analysis> blocks (releases 0.7.2-0.7.3); lmms:N frames; M-Avg = per-type accuracies
  summed over its fixed type list (7 dev / 9 test, a missing type counts 0) / list size.
  "lmms-eval@0.7.1" (0.7.0-0.7.1) and "lmms-eval@0.6" (0.6.0-0.6.1, no reasoning-tag stripping):
  the same, but the letter is the character before the first ")" of the stripped reply, else the
  whole reply, compared with the answer letter (their `extract_characters_regex`).
- "vlmevalkit": system, qa_template text, frames, "\nOnly give the best option."; no prefill;
  vlmevalkit:N frames (fps mode int(i*fps_video/F)); check_ans, else can_infer (exact_matching,
  against the FIRST equal candidate); M-Avg = question-weighted over six tasks — its list omits
  action order; G-Avg = summed int(score) / count.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.mlvu_ref import REFERENCE
from lvu.benchmarks.mlvu_release import (  # noqa: F401 — FOLDERS, Task, answer_letter: still importable from here
    BY_TYPE, FOLDERS, HUB_REVISION, TASKS, Task, answer_letter, load_release,
)
from lvu.errors import DataError, LvuError
from lvu.media.sampling import Fps, Lmms, Vlmevalkit
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import LMMS_EVAL, MODES as LMMS_MODES, check_compat, is_lmms, strip_reasoning_tags
from lvu.scoring.judges import Judgement, JudgeTask
from lvu.types import (
    LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, Text,
    VideoMeta,
)

SYSTEM_MC = ("Carefully watch this video and pay attention to every detail. Based on your observations, "
             "select the best option that accurately addresses the question.")
SYSTEM_GEN = ("Carefully watch this video and pay attention to every detail. Based on your observations, "
              "answer the given questions.")
MC_INSTRUCTION = "\nOnly give the best option."
ASSISTANT_PREFIX = "Best Option: ("
LMMS_POST_PROMPT = "\nOnly give the best option.\nBest option: ("
JUDGE_PENDING = "needs the MLVU generation judge — run with --judge NAME, or lvu judge score RUN --judge NAME"
COMPATS = ("official", *LMMS_MODES, "vlmevalkit")
PAPER_COUNTS = {
    "dev": {"TR": 264, "AR": 200, "VS": 217, "NQA": 355, "ER": 352, "PQA": 539, "SSC": 201, "AO": 259, "AC": 206},
    "test": {"TR": 91, "AR": 39, "NQA": 60, "ER": 53, "PQA": 50, "SQA": 36, "AO": 70, "AC": 60, "TQA": 43},
}
"""Questions per task: dev from the paper (2,593 = 2,175 MCQ + 418 generation); test MCQ from the
repo's example submission (502; the test generation counts are not published)."""
LMMS_TYPES = {"dev": ("anomaly_reco", "count", "ego", "needle", "order", "plotQA", "topic_reasoning"),
              "test": ("anomaly_reco", "count", "ego", "needleQA", "order", "plotQA", "sportsQA",
                       "topic_reasoning", "tutorialQA")}
VLMEVALKIT_M_AVG = ("PQA", "NQA", "ER", "AC", "AR", "TR")
"""VLMEvalKit's 'M-Avg' list: plotQA, needle, ego, count, anomaly_reco, topic_reasoning (no order)."""


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


def submission_option(reply: str) -> str:
    """Evaluation_Test/test_bench.py: the stripped reply up to its first ')', stripped."""
    pred = reply.strip()
    return pred[:pred.index(")")].strip() if ")" in pred else pred


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


# ---- the benchmark ----------------------------------------------------------------------------



def _sub_scores(by_task: dict[str, list[SampleResult]]) -> Breakdown | None:
    """Mean judge sub-scores (1-5) of SSC and VS, a failed reply adding 0 as to the totals (so the
    two means of a task sum to its total); the title names the judge(s). None before any judging."""
    rows, judges = [], set()
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

    defaults = {"split": "dev", "tasks": "all", "frames": 16, "fps": None, "resize": None, "subtitles": "none",
                "compat": "official", "hub_revision": HUB_REVISION}
    expected_counts = {"dev": 2593, "test": 502}
    reference = REFERENCE

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        s = self.settings
        check_compat(s["compat"], COMPATS, "mlvu")
        if s["split"] not in ("dev", "test"):
            raise LvuError(f"split={s['split']!r} is unknown — MLVU has split=dev or split=test")
        if s["subtitles"] not in (None, "none"):
            raise LvuError("MLVU has no subtitles (its questions are visual only) — drop --subtitles")
        frames, fps = s["frames"], s["fps"]
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
            raise LvuError(f"frames={frames!r} is not a frame count — use a whole number such as 16")
        if fps is not None and (isinstance(fps, bool) or not isinstance(fps, (int, float)) or fps <= 0):
            raise LvuError(f"fps={fps!r} is not a frame rate — use e.g. fps=0.5 (the paper's GPT-4o setting)")
        if fps is not None and is_lmms(s["compat"]):
            raise LvuError("lmms-eval samples a frame count only — fps needs --compat official or vlmevalkit")
        self.tasks = self._parse_tasks(str(s["tasks"]))

    def _parse_tasks(self, spec: str) -> list[str]:
        split, lmms = self.settings["split"], is_lmms(self.settings["compat"])
        valid = [c for c, t in TASKS.items() if split == "test" or t.file]
        if spec.strip().lower() in ("all", "mc", "gen"):
            spec = spec.strip().lower()
            chosen = [c for c in valid if spec == "all" or TASKS[c].generation == (spec == "gen")]
            if lmms and spec == "all":
                chosen = [c for c in chosen if not TASKS[c].generation]
        else:
            chosen = [c.strip().upper() for c in spec.split(",") if c.strip()]
            bad = [c for c in chosen if c not in valid]
            if bad or not chosen:
                raise LvuError(f"tasks={spec!r}: unknown task(s) {', '.join(bad) or '(none)'} for MLVU {split} — "
                               f"use all, mc, gen or codes from {', '.join(valid)}")
        if lmms and any(TASKS[c].generation for c in chosen):
            raise LvuError("lmms-eval has no MLVU generation tasks (SSC, VS) — use --compat official or vlmevalkit")
        return chosen

    @property
    def compat(self) -> str:
        return self.settings["compat"]

    @property
    def lmms(self) -> bool:
        """compat=lmms-eval or one of its older releases (they differ in extraction only)."""
        return is_lmms(self.compat)

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
            counts[s.labels["task"]] += 1
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
        n, fps = self.settings["frames"], self.settings["fps"]
        if fps is not None and self.compat != "vlmevalkit":
            times = Fps(fps=fps).timestamps(video.duration, 0.0)  # the paper's "N fps": t = k / N
        else:
            rate, total = video.rate_and_count()
            total = max(1, total)
            if fps is not None:  # VLMEvalKit fps mode
                step = rate / fps
                idx = [int(i * step) for i in range(int(total / rate * fps))]
            elif self.lmms:
                idx = Lmms(n=n).frame_indices(total, rate)
            elif self.compat == "vlmevalkit":
                idx = Vlmevalkit(n=n).frame_indices(total, rate)
            else:
                idx = mlvu_indices(total, n)
            times = [min(i, total - 1) / rate for i in idx]
        return InputPlan(timestamps=times, subtitle_mode="none", resize=self.settings["resize"])

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        gen = TASKS[str(sample.labels["task"])].generation
        common = {"choices": list(sample.options), "question": sample.question}
        if gen:
            parts = ([Text(text=sample.question), *frames] if self.compat == "vlmevalkit"
                     else [*frames, Text(text=sample.question)])
            return Prompt(parts=parts, system=SYSTEM_GEN, max_tokens=1000, **common)
        if self.lmms:
            lines = "\n".join(f"({LETTERS[i]}) {c}" for i, c in enumerate(sample.options))
            post = LMMS_POST_PROMPT if self.settings["split"] == "dev" else ""
            return Prompt(parts=[*frames, Text(text=f"{sample.question}\n{lines}{post}")], max_tokens=16, **common)
        text = qa_template(sample.question, sample.options)
        if self.compat == "vlmevalkit":
            return Prompt(parts=[Text(text=text), *frames, Text(text=MC_INSTRUCTION)], system=SYSTEM_MC,
                          max_tokens=100, **common)
        return Prompt(parts=[*frames, Text(text=text + MC_INSTRUCTION)], system=SYSTEM_MC,
                      assistant_prefix=ASSISTANT_PREFIX, max_tokens=100, **common)

    # ---- extraction and scoring ------------------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        reply = response.text.strip()
        if not sample.options:
            return Prediction(value=reply)
        valid = LETTERS[:len(sample.options)]
        if self.lmms:  # its evaluator strips reasoning blocks first
            text = strip_reasoning_tags(response.text, self.compat)
            if self.compat == LMMS_EVAL:
                got = lmms_extract_mcq(text)
                return Prediction(value=valid.index(got) if got and got in valid else None,
                                  method=f"{self.compat} extract_mcq_answer")
            got = check_ans_pred(text.strip())
            return Prediction(value=valid.index(got) if len(got) == 1 and got in valid else got or None,
                              method=f"{self.compat} char before the first ')'")
        got = check_ans_pred(reply)
        if self.compat == "vlmevalkit" and got != sample.extra.get("answer_letter"):
            inferred = vlmevalkit_can_infer(reply, sample.options)
            if inferred is not None:
                return Prediction(value=valid.index(inferred) if inferred in valid else inferred,
                                  method="vlmevalkit-can-infer")
        if len(got) == 1 and got in valid:
            return Prediction(value=valid.index(got))
        return Prediction(value=got or None)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if not sample.options:
            return Score(value=math.nan, counted=False, explanation=JUDGE_PENDING)
        if sample.extra.get("hidden"):
            return Score(value=0.0, counted=False, explanation="MLVU test answers are hidden — submit the file "
                                                               "write_submission writes")
        got = prediction.value
        letter = LETTERS[got] if isinstance(got, int) else (got or "")
        if self.lmms:
            gt = LETTERS[sample.answer] if isinstance(sample.answer, int) else ""
            rule = prediction.method or self.compat
        elif prediction.method == "vlmevalkit-can-infer":
            gt, rule = sample.extra.get("answer_first") or "", "VLMEvalKit can_infer (exact_matching)"
        else:
            gt, rule = sample.extra["answer_letter"], "check_ans: char before the first ')'"
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

    # ---- aggregation ----------------------------------------------------------------------------

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        by_task: dict[str, list[SampleResult]] = defaultdict(list)
        for r in results:
            if r.labels.get("task") in TASKS:
                by_task[str(r.labels["task"])].append(r)
        mc_rows, gen_rows, acc, gen = [], [], {}, {}
        for code, task in TASKS.items():
            rs = by_task.get(code, [])
            if task.generation:
                judged = [r for r in rs if r.counted and r.score is not None and not math.isnan(r.score)]
                failed = [r for r in rs if r.error and r.counted]  # a data error (counted False) is left out
                vals = [int(r.score) if self.compat == "vlmevalkit" else r.score for r in judged]
                vals += [0.0] * len(failed)
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
        n_mc = sum(n for _, n in acc.values())
        if self.lmms:
            types = LMMS_TYPES[self.settings["split"]]
            vals = {BY_TYPE[t].code: acc.get(BY_TYPE[t].code, (0.0, 0))[0] for t in types}
            m_avg = sum(0.0 if math.isnan(v) else v for v in vals.values()) / len(types)
        elif self.compat == "vlmevalkit":
            rs = [r for c in VLMEVALKIT_M_AVG for r in by_task.get(c, []) if r.counted]
            m_avg = 100.0 * sum(r.score or 0.0 for r in rs) / len(rs) if rs else math.nan
            n_mc = len(rs)
        else:
            vals = [a for a, n in acc.values() if n]
            m_avg = sum(vals) / len(vals) if vals else math.nan
        if self.compat == "vlmevalkit":
            judged = [r for c in ("SSC", "VS") for r in by_task.get(c, []) if r.counted and r.score is not None
                      and not math.isnan(r.score)]
            g_avg = sum(int(r.score) for r in judged) / len(judged) if judged else math.nan
        else:
            done = [v for v in gen.values() if not math.isnan(v)]
            g_avg = sum(done) / len(done) if done and len(done) == len(gen) else math.nan
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
            key, sample, text = "?", None, None
            if isinstance(row, dict) and "question_id" in row:
                key, sample, text = row["question_id"], by_id.get(str(row["question_id"])), row.get("option")
            elif isinstance(row, dict) and "Q" in row:
                key = (row.get("video_name"), row["Q"])
                sample, text = by_gen.get(key), row.get("pred")
            elif isinstance(row, dict) and "question" in row:
                key = (Path(str(row.get("video", ""))).name, row["question"])
                sample, text = by_mc.get(key), row.get("pred")
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
            rows = [{"question_id": r.sample_id, "question_type": r.labels.get("question_type"),
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

