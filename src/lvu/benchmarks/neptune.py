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

Harnesses (neptune_harness.py, with the prompt tables and parsers): `NeptuneHarness` is the
official protocol above, `NeptuneLmmsEval` and `NeptuneLmmsEval071` lmms-eval's; `__init__` picks
one from `compat` (`HARNESSES`) and plan, prompt, token budget and extraction delegate to it.
Settings: `NeptuneSettings` (types, defaults, a line of docs each; `lvu list --settings neptune`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, read_prediction_lines, register_benchmark
from lvu.benchmarks.harness import pick
from lvu.benchmarks.neptune_harness import (  # noqa: F401 — the prompt tables and parsers: importable here
    DEFAULT_MAX_TOKENS, GEMINI_INSTRUCTION, HARNESSES, LMMS_FRAMES, LMMS_MAX_TOKENS, LMMS_PROMPTS, MAX_SECONDS,
    MCQ_MAX_TOKENS, NO_TASK, OPEN_PROMPTS, OPEN_WORDS, PROMPTS, NeptuneHarness, NeptuneLmmsEval, NeptuneLmmsEval071,
    option_ids, parse_lmms, parse_option, truncate_words,
)
from lvu.benchmarks.neptune_ref import REFERENCE
from lvu.benchmarks.neptune_release import (  # noqa: F401 — HF_*, record_to_sample, youtube_id: importable here
    HF_DATASET, HF_REVISION, SUBSETS, load_release, record_to_sample, subset_of, youtube_id,
)
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.errors import LvuError
from lvu.media.subtitles import MODES, interleave
from lvu.scoring.choice import mean_pct as _pct
from lvu.scoring.judges import Judgement, JudgeTask
from lvu.types import (
    Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, Text, VideoMeta,
)

EXPECTED_QUESTIONS = {"full": 3268, "mma": 1157, "mmh": 1171}
EXPECTED_VIDEOS = {"full": 2405, "mma": 1043, "mmh": 1000}
FRAME_WORDS = ("1fps", "center", "first")
JUDGE_PENDING = "needs an equivalence judge — run with --judge NAME, or lvu judge score RUN --judge NAME"


# ---- settings -----------------------------------------------------------------------------------


class NeptuneSettings(BenchmarkSettings):
    """Neptune's settings; which prompt templates and frame settings a harness takes is the
    harness's to check (NeptuneHarness.check), after these."""

    subset: str = Field("full", description="question set: full (3,268 questions), mma (1,157) or mmh (1,171); "
                                            "a release file named neptune_<subset>.json sets it")
    frames: int | str = Field(150, description="a count N linearly subsampled over the first 15 min (150: the "
                                               "paper's Gemini row), 1fps (alias all), center, first, or 0 (blind)")
    subtitles: str = Field("none", description="ASR transcript cues with the frames: none, all (the paper's +ASR "
                                               "rows), covering or interleave")
    resize: int | None = Field(None, description="shorter side of frames in pixels; unset: full size")
    prompt: str = Field("gemini", description="the paper's template: gemini (its reference model), video-llava, "
                                              "videollama2, minigpt4-video, ma-lmm, blip2; lmms-eval: default, "
                                              "qwen3_vl")
    compat: str = Field("official", description="harness: official (the paper), lmms-eval (0.7.2-0.7.3) or "
                                                "lmms-eval@0.7.1 (0.7.0-0.7.1)")
    asr_dir: Any = Field(None, description="folder of transcripts, <youtube id>.srt|.vtt|.json; unset: asr/ beside "
                                           "the release")

    @field_validator("subset", mode="before")
    @classmethod
    def _subset(cls, value: Any) -> Any:
        if value not in SUBSETS:
            raise LvuError(f"subset={value!r} is unknown — use one of {', '.join(SUBSETS)}")
        return value

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> Any:
        if value == "all":
            return "1fps"
        if isinstance(value, bool) or not (isinstance(value, int) and value >= 0 or value in FRAME_WORDS):
            raise LvuError(f"frames={value!r} is not a frame setting — use a count (150), 1fps, center, first or 0")
        return value

    @field_validator("subtitles", mode="before")
    @classmethod
    def _subtitles(cls, value: Any) -> Any:
        if value not in MODES:
            raise LvuError(f"subtitles={value!r} is unknown — use one of {', '.join(MODES)}")
        return value

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt(cls, value: Any) -> Any:
        if not isinstance(value, str):  # the harness checks a name against its own templates
            raise LvuError(f"prompt={value!r} is unknown — use one of {', '.join(PROMPTS)}")
        return value


# ---- the benchmark -------------------------------------------------------------------------------


@register_benchmark("neptune")
class Neptune(Benchmark):
    """Neptune (Google DeepMind): 5-way multiple choice on long YouTube videos, subsets full | mma | mmh."""

    Settings = NeptuneSettings
    config: NeptuneSettings
    expected_counts = EXPECTED_QUESTIONS
    reference = REFERENCE
    open_ended = False
    audio_modes = ("whole", "interleave")
    """Neptune's raters mark questions audio+video / video-only / audio-only: `--audio` gives the sound."""
    harness: NeptuneHarness

    def __init__(self, **settings: Any) -> None:
        compat = self.defaults["compat"] if settings.get("compat") is None else settings["compat"]
        if isinstance(compat, str) and compat in NO_TASK:
            raise LvuError(NO_TASK[compat])
        self.harness = pick(HARNESSES, compat, self.name)(self)
        super().__init__(**self.harness.preset(self._subset_of_data(settings)))
        self.harness.check()
        self._release: tuple[list[Sample], list[BadRecord]] | None = None

    @staticmethod
    def _subset_of_data(settings: dict[str, Any]) -> dict[str, Any]:
        """`settings` with the subset an official file name stands for (neptune_mma.json: mma)."""
        data = settings.get("data")
        if data and not str(data).startswith("hf:") and (named := subset_of(Path(data).name)):
            if settings.get("subset") is not None and settings["subset"] != named:
                raise LvuError(f"{data} is the {named} subset but subset={settings['subset']!r} — drop one of them")
            return {**settings, "subset": named}
        return settings

    @property
    def ids(self) -> str:
        """The option ids the prompt shows (letters; digits for videollama2's template)."""
        return self.harness.ids

    # ---- loading (neptune_release.py) ---------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        if self._release is None:
            self._release = load_release(
                self.settings.get("data"), benchmark=self.name, subset=self.settings["subset"],
                video_dir=self.settings.get("video_dir"), asr_dir=self.settings.get("asr_dir"),
                with_asr=self.settings["subtitles"] != "none")
        return self._release

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
        # the transcript: asr/<id> when it is there, else (with --asr) Whisper's (runs/asr_use.py)
        return InputPlan(timestamps=self.harness.timestamps(video), subtitle_mode=self.settings["subtitles"],
                         resize=self.settings["resize"])

    def prompt_text(self, sample: Sample) -> str:
        """The text after the frames (and transcript), exactly as the model receives it."""
        return self.harness.prompt_text(sample)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        return Prompt(parts=[*interleave(frames, self.harness.cues(cues)), Text(text=self.prompt_text(sample))],
                      choices=[] if self.open_ended else list(sample.options), question=sample.question,
                      max_tokens=self.harness.max_tokens, temperature=0.0)

    # ---- extraction, scoring, aggregation ------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        return self.harness.extract(sample, response)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="no answer in the data: left out")
        if self.open_ended:
            return Score(value=0.0, counted=False, explanation=JUDGE_PENDING)
        ids = self.ids
        answer = ids[sample.answer]  # type: ignore[index]
        if not isinstance(prediction.value, int):  # None: no option id found
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

    defaults: ClassVar[dict[str, Any]] = {**Neptune.defaults, "frames": "1fps", "subtitles": "all"}


@register_benchmark("neptune-open")
class NeptuneOpen(Neptune):
    """Neptune open-ended: question only, a reference answer; scored by a GEM-style judge (`--judge`)."""

    open_ended = True
