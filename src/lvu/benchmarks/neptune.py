"""Neptune (Nagrani et al. 2024, google-deepmind/neptune): long-video QA, 5-way MCQ or open-ended.

Tasks: `neptune` (MCQ), `neptune-asr` (MCQ with the ASR transcript, the paper's "+ASR" rows) and
`neptune-open` (open-ended). Setting `subset`: full (3,268 questions / 2,405 videos), mma (1,157 /
1,043) or mmh (1,171 / 1,000); all are test sets with public answers.

Release files (neptune_{full,mma,mmh}.json, videos/, asr/; or the hub copy), both record schemas
and the record mapper `record_to_sample`: neptune_release.py.

Protocol. The official repo has no evaluation code, prompt or GEM release (research/anchors
§3.5); the paper (App. C.5) gives per-baseline prompts. Default ("official"), per the paper:
- frames (`frames`): N (default 150, the Gemini-1.5-pro "RGB (150 frames)" row) = linear
  subsampling `np.linspace(0, T-1, N, dtype=int)` over the first 15 min (the dataset truncates
  longer videos at 900 s); linspace because Fig. 4 "linearly subsamples to 1" = the first frame
  [inference]. "1fps" (alias "all") = the paper's "all frames" (t = 0, 1, 2, ...), "center" the
  middle frame (single-frame rows), "first", 0 = blind (QAD-only). `neptune-asr` uses "1fps".
- ASR (`subtitles`, "all" in neptune-asr): the whole transcript, cues interleaved with the frames
  by time (the paper gives no layout; Neptune ships no ASR, bring a YouTube/Whisper transcript;
  with `lvu run --asr` a video without one in asr/ gets Whisper's, else the sample fails).
- prompt (`prompt`): the paper's templates verbatim (PROMPTS). Default "gemini", the only one the
  paper gives for its reference model (C.5.1); "video-llava", "videollama2", "minigpt4-video",
  "ma-lmm", "blip2". The paper does not say how options are written: lvu writes one per line,
  "(A) text" ("(1) text" for videollama2's "option number"). max_tokens 300 (10 for
  minigpt4-video's MCQ), as the paper sets for MiniGPT4-Video / MA-LMM.
- extraction (`parse_option`): the paper only says "we eliminated extra characters and spaces using
  regex to get the final ID": a reply that is one id once punctuation and spaces go; else a
  leading id with a delimiter ("B) ...", "[B]: reason", MiniGPT4-Video's "[OPTION]: [Reason]");
  else the first "answer (is) B", then the first "option/choice B", then the first "(B)"; ids are
  upper case (a lone "b" reply excepted, "answer is a ..." is not A). Nothing found = wrong.
- accuracy over all questions (chance 20%), per subset and per question type (Fig. 4 left).
- open-ended: question only (template OPEN_PROMPTS), the reply truncated to 100 words (the GEM
  protocol). GEM itself is unreleased: any judge model scores it the paper's way (`--judge`,
  lvu.scoring.judges: the GEM prompt, P(TRUE) vs P(FALSE), a dev-set-calibrated threshold);
  judge_task/judged_score make it an equivalence question; a sample is 1 when judged equivalent.
  Without a judge, samples are stored unscored (counted=False). The tables give the percentage
  judged equivalent per subset and question type (Table 3's GEM columns, beside the MCQ ones)
  and the mean P(equivalent), and name the judge and its threshold.

`compat="lmms-eval"` (tasks neptune_{full,mma,mmh}_i, research/anchors §1.3): its prompt
"{question}\\nA. ..\\nE. ..\\nAnswer with only the option letter (A, B, C, D, or E)." (`prompt=
"qwen3_vl"` for its qwen3_vl block), 32 frames by the same linspace over the whole file (no
15-min clip), max_new_tokens 64, and its `_parse_choice_from_response` ported with its quirks
(`parse_lmms`: last match wins, no word boundary after the letter, so "the answer is based on"
reads B and "I answered" reads E; bare letters only in replies of <= 3 words; then option text
contained anywhere in the reply, first option first), on the reply after its evaluator strips
<think>/<analysis> blocks. It has no ASR and no open-ended task. The task code is the same in
releases 0.7.0-0.7.3 (`compat="lmms-eval@0.7.1"` is accepted and behaves the same); 0.6 had no
Neptune task. VLMEvalKit has no Neptune task.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, read_prediction_lines, register_benchmark
from lvu.benchmarks.neptune_ref import REFERENCE
from lvu.benchmarks.neptune_release import (  # noqa: F401 — HF_*, record_to_sample, youtube_id: importable here
    HF_DATASET, HF_REVISION, SUBSETS, load_release, record_to_sample, subset_of, youtube_id,
)
from lvu.errors import LvuError
from lvu.media.sampling import Center, Fps, Lmms
from lvu.media.subtitles import MODES, interleave
from lvu.scoring import judge_prompts
from lvu.scoring.choice import mean_pct as _pct
from lvu.scoring.lmms_eval import (
    LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, check_compat, is_lmms, strip_reasoning_tags,
)
from lvu.scoring.judges import Judgement, JudgeTask
from lvu.types import (
    LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, Text,
    VideoMeta,
)

EXPECTED_QUESTIONS = {"full": 3268, "mma": 1157, "mmh": 1171}
EXPECTED_VIDEOS = {"full": 2405, "mma": 1043, "mmh": 1000}
MAX_SECONDS = 900.0
"""Neptune truncates videos at 15 minutes; questions are about the first 900 s."""
COMPATS = ("official", LMMS_EVAL, LMMS_EVAL_0_7_1)
FRAME_WORDS = ("1fps", "center", "first")
OPEN_WORDS = 100
"""GEM truncates open-ended responses to 100 words (paper App. D.3)."""
JUDGE_PENDING = "needs an equivalence judge — run with --judge NAME, or lvu judge score RUN --judge NAME"

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


# ---- the benchmark -------------------------------------------------------------------------------


@register_benchmark("neptune")
class Neptune(Benchmark):
    """Neptune (Google DeepMind): 5-way multiple choice on long YouTube videos, subsets full | mma | mmh."""

    defaults = {"subset": "full", "frames": 150, "subtitles": "none", "resize": None, "prompt": "gemini",
                "compat": "official", "asr_dir": None}
    expected_counts = EXPECTED_QUESTIONS
    reference = REFERENCE
    open_ended = False
    audio_modes = ("whole", "interleave")
    """Neptune's raters mark questions audio+video / video-only / audio-only: `--audio` gives the sound."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        given = {k for k, v in settings.items() if v is not None}
        s = self.settings
        if s["compat"] == "vlmevalkit":
            raise LvuError("VLMEvalKit has no Neptune task — use --compat official or lmms-eval")
        if s["compat"] == LMMS_EVAL_0_6:
            raise LvuError("compat='lmms-eval@0.6': lmms-eval's Neptune task came with 0.7 — use compat=lmms-eval")
        check_compat(s["compat"], COMPATS, self.name)
        data = s.get("data")
        if data and not str(data).startswith("hf:") and (named := subset_of(Path(data).name)):
            if "subset" in given and s["subset"] != named:
                raise LvuError(f"{data} is the {named} subset but subset={s['subset']!r} — drop one of them")
            s["subset"] = named
        if s["subset"] not in SUBSETS:
            raise LvuError(f"subset={s['subset']!r} is unknown — use one of {', '.join(SUBSETS)}")
        frames = s["frames"]
        if frames == "all":
            frames = s["frames"] = "1fps"
        if isinstance(frames, bool) or not (isinstance(frames, int) and frames >= 0 or frames in FRAME_WORDS):
            raise LvuError(f"frames={frames!r} is not a frame setting — use a count (150), 1fps, center, first or 0")
        if s["subtitles"] not in MODES:
            raise LvuError(f"subtitles={s['subtitles']!r} is unknown — use one of {', '.join(MODES)}")
        if is_lmms(s["compat"]):
            if self.open_ended or s["subtitles"] != "none" or self.audio_mode != "none":
                what = "open-ended task" if self.open_ended else "ASR input" if s["subtitles"] != "none" else "audio input"
                raise LvuError(f"lmms-eval has no Neptune {what} — run {self.name} with --compat official")
            if "frames" not in given:
                s["frames"] = LMMS_FRAMES
            if not isinstance(s["frames"], int):
                raise LvuError(f"lmms-eval samples a frame count only — frames={s['frames']!r} needs --compat official")
            if "prompt" not in given:
                s["prompt"] = "default"
            if s["prompt"] not in LMMS_PROMPTS:
                raise LvuError(f"prompt={s['prompt']!r}: lmms-eval's Neptune blocks are {', '.join(LMMS_PROMPTS)}")
        elif s["prompt"] not in PROMPTS:
            raise LvuError(f"prompt={s['prompt']!r} is unknown — use one of {', '.join(PROMPTS)}")
        self._loaded: tuple[list[Sample], list[BadRecord]] | None = None

    @property
    def lmms(self) -> bool:
        return is_lmms(self.settings["compat"])

    @property
    def ids(self) -> str:
        return LETTERS[:5] if self.lmms else option_ids(self.settings["prompt"])

    # ---- loading (neptune_release.py) ---------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        if self._loaded is None:
            self._loaded = load_release(
                self.settings.get("data"), benchmark=self.name, subset=self.settings["subset"],
                video_dir=self.settings.get("video_dir"), asr_dir=self.settings.get("asr_dir"),
                with_asr=self.settings["subtitles"] != "none")
        return self._loaded

    def check(self) -> list[str]:
        problems = super().check()
        samples, bad = self.load()
        subset = self.settings["subset"]
        n = len(samples) + len(bad)
        if n != EXPECTED_QUESTIONS[subset]:
            problems.append(f"{self.name} {subset}: {n} questions, the paper has {EXPECTED_QUESTIONS[subset]}")
        videos = len({s.extra["video_id"] for s in samples})
        if not bad and videos != EXPECTED_VIDEOS[subset]:
            problems.append(f"{self.name} {subset}: {videos} videos, the paper has {EXPECTED_VIDEOS[subset]}")
        for s in samples:
            if len(set(s.options)) < len(s.options):
                problems.append(f"{s.id}: two options have the same text — the question cannot be answered")
        return problems

    # ---- input plan and prompt -----------------------------------------------------------------

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        frames, clip, duration = self.settings["frames"], not self.lmms, video.duration
        span = min(duration, MAX_SECONDS) if clip else duration
        if frames == 0 and not self.lmms:
            times: list[float] = []
        elif frames == "center":
            times = Center().timestamps(span, 0.0)
        elif frames == "first":
            times = [0.0]
        elif frames == "1fps":
            times = Fps(fps=1).timestamps(span, 0.0)
        else:  # linear subsampling: lmms-eval's np.linspace(0, T-1, min(N, T), dtype=int) on frame numbers
            fps, total = video.rate_and_count()
            if clip and duration > MAX_SECONDS:
                total = min(total, math.floor(MAX_SECONDS * fps))
            times = [i / fps for i in Lmms(n=max(1, frames)).frame_indices(total, fps)]
        # the transcript: asr/<id> when it is there, else (with --asr) Whisper's (runs/asr_use.py)
        return InputPlan(timestamps=times, subtitle_mode=self.settings["subtitles"], resize=self.settings["resize"])

    def prompt_text(self, sample: Sample) -> str:
        """The text after the frames (and transcript), exactly as the model receives it."""
        prompt = self.settings["prompt"]
        if self.lmms:
            pre, post = LMMS_PROMPTS[prompt]
            block = "\n".join(f"{LETTERS[i]}. {o.strip()}" for i, o in enumerate(sample.options[:5]))
            return f"{pre}{sample.question.strip()}\n{block}{post}"
        if self.open_ended:
            return OPEN_PROMPTS.get(prompt, OPEN_PROMPTS["videollama2"]).format(question=sample.question)
        ids = self.ids
        options = "\n".join(f"({ids[i]}) {o}" for i, o in enumerate(sample.options))
        return PROMPTS[prompt].format(question=sample.question, options=options)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        if not self.lmms:
            cues = [c for c in cues if c.start < MAX_SECONDS]
        if self.lmms:
            max_tokens = LMMS_MAX_TOKENS
        elif self.open_ended:
            max_tokens = DEFAULT_MAX_TOKENS
        else:
            max_tokens = MCQ_MAX_TOKENS.get(self.settings["prompt"], DEFAULT_MAX_TOKENS)
        return Prompt(parts=[*interleave(frames, cues), Text(text=self.prompt_text(sample))],
                      choices=[] if self.open_ended else list(sample.options), question=sample.question,
                      max_tokens=max_tokens, temperature=0.0)

    # ---- extraction, scoring, aggregation ------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if self.open_ended:
            return Prediction(value=truncate_words(response.text), method=f"first {OPEN_WORDS} words")
        if self.lmms:
            text = strip_reasoning_tags(response.text, self.settings["compat"])  # as its evaluator does
            return Prediction(value=parse_lmms(text, sample.options), method="lmms-eval")
        return Prediction(value=parse_option(response.text, self.ids))

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="no answer in the data: left out")
        if self.open_ended:
            return Score(value=0.0, counted=False, explanation=JUDGE_PENDING)
        ids = self.ids
        answer = ids[sample.answer]  # type: ignore[index]
        if prediction.value is None:
            why = f"no option id in the reply (counted wrong); answer {answer}"
            return Score(value=0.0, correct=False, explanation=why)
        ok = prediction.value == sample.answer
        return Score(value=float(ok), correct=ok, explanation=f"predicted {ids[prediction.value]}, answer {answer}")

    def judge_task(self, sample: Sample, prediction: Prediction) -> JudgeTask | None:
        """Open-ended: is the (100-word) reply equivalent to the reference answer? MCQ: None."""
        if not self.open_ended or sample.answer is None:
            return None
        return JudgeTask(kind="equivalence", question=sample.question, candidate=str(prediction.value or ""),
                         reference=str(sample.extra.get("reference") or ""))

    def judged_score(self, sample: Sample, prediction: Prediction, judgement: Judgement) -> Score:
        """1 when judged equivalent (P(equivalent) >= the judge's threshold), else 0; a judge reply
        with neither TRUE nor FALSE counts not equivalent, as an MCQ reply without an option."""
        ok = bool(judgement.verdict)
        return Score(value=float(ok), correct=ok, explanation=f"GEM-style: {judgement.summary()}")

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """Accuracy per subset (Table 3's columns: the run's subset, plus MMA / MMH when a full run
        knows membership) and per question type (Fig. 4 left). Failed samples count as wrong.
        Open-ended: the same two tables of the percentage judged equivalent, then the mean
        P(equivalent) per subset and a table naming the judge(s) with how each verdict was read."""
        subset = self.settings["subset"]
        counted = [r for r in results if r.counted]
        if self.open_ended and not any(r.judge for r in counted):
            failed = sum(1 for r in results if r.error and r.counted)
            data = f", {n} data error(s) left out" if (n := sum(1 for r in results if r.data_error)) else ""
            name = (f"{subset}: {sum(1 for r in results if not r.error)} responses stored, {failed} failed{data}; "
                    f"not judged yet ({JUDGE_PENDING})")
            return [Breakdown(title="overall", rows=[(name, 0, _pct([]))])]
        value = {id(r): r.score if r.score is not None and not r.error else 0.0 for r in counted}
        rows, types = self._grouped(counted, lambda r: value[id(r)])
        tables = [Breakdown(title="overall", rows=rows), Breakdown(title="question_type", rows=types)]
        if self.open_ended:
            judged = [r for r in counted if r.judge and not r.error]
            prob, _ = self._grouped(judged, lambda r: float((r.judge or {}).get("value") or 0.0))
            tables.append(Breakdown(title="mean P(equivalent) x 100", rows=prob))
            tables.append(self._judges_table(results))
        return tables

    def _grouped(self, results: list[SampleResult], value_of) -> tuple[list, list]:
        """(per-subset rows in SUBSETS order, per-question-type rows) of mean value_of(r) in percent."""
        subset = self.settings["subset"]
        groups: dict[str, dict[str, list[float]]] = {"subset": {}, "question_type": {}}
        for r in results:
            value = value_of(r)
            subsets = r.labels.get("subset") or [subset]
            for s in subsets if isinstance(subsets, list) else [subsets]:
                groups["subset"].setdefault(str(s), []).append(value)
            qtype = str(r.labels.get("question_type") or "Unknown")
            groups["question_type"].setdefault(qtype, []).append(value)
        rows = [(s, len(v), _pct(v)) for s in SUBSETS if (v := groups["subset"].get(s)) is not None]
        if not rows:
            rows = [(subset, 0, _pct([]))]
        types = [(t, len(v), _pct(v)) for t, v in sorted(groups["question_type"].items())]
        return rows, types

    @staticmethod
    def _judges_table(results: list[SampleResult]) -> Breakdown:
        """Table "judge": one row per (judge identity, how its verdicts were read) with n and the %
        judged equivalent; samples not judged yet and failed ones last."""
        by: dict[str, list[float]] = {}
        for r in results:
            if r.judge and r.counted and not r.error:
                key = f"{r.judge.get('judge')} — verdicts from {r.judge.get('method')}"
                by.setdefault(key, []).append(1.0 if r.judge.get("verdict") else 0.0)
        rows = [(key, len(v), _pct(v)) for key, v in sorted(by.items())]
        if pending := sum(1 for r in results if not r.counted and not r.error):
            rows.append(("not judged yet", pending, _pct([])))
        if failed := sum(1 for r in results if r.error and r.counted):  # data errors: left out
            rows.append(("failed (counted not equivalent)", failed, 0.0))
        return Breakdown(title="judge", rows=rows)

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """lvu's export lines ({"sample_id", "response"}) or lmms-eval `--log_samples` lines
        ({"doc": {"key"...}, "resps"/"filtered_resps"}), joined with this subset's questions."""
        samples = {s.id: s for s in self.load()[0]}
        return read_prediction_lines(
            path, samples,
            key_of=lambda row: (row.get("sample_id") or (row.get("doc") or {}).get("key")
                                or row["neptune_acc"]["key"]),
            what="Neptune key", expected="expected lvu's sample_id/response or lmms-eval's doc.key/resps")


@register_benchmark("neptune-asr")
class NeptuneAsr(Neptune):
    """Neptune MCQ with the ASR transcript: all frames at 1 fps + full transcript (Table 3's "+ASR")."""

    defaults = {**Neptune.defaults, "frames": "1fps", "subtitles": "all"}


@register_benchmark("neptune-open")
class NeptuneOpen(Neptune):
    """Neptune open-ended: question only, a reference answer; scored by a GEM-style judge (`--judge`)."""

    open_ended = True
