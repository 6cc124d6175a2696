"""LVBench (Wang et al., 2024): 1,549 four-option questions on 103 YouTube videos of 30 min to 2 h.

The release file (`video_info.meta.jsonl`, one video per line with its `qa` list; or the hub copy),
where videos are found, and how a record becomes a Sample (stem and options parsed out of the
question string, capability / category / clue-length / video-length labels): lvbench_release.py.

Protocol (official = the paper + the THUDM/LVBench scorer; the paper gives no sampling detail):
- frames: `frames` (default 32, LLaVA-NeXT's row; the paper used 10 GPT-4o, 16 PLLaVA,
  96 TimeChat) uniform segment centres; `fps=F` instead reads one frame every 1/F s, capped at
  `frames` by uniform downsampling (the "native" rows: fps=1, e.g. frames=3600 for Gemini).
  frames=0 gives a blind text-only run. No subtitles and no audio exist in LVBench.
- prompt (Sec. 4.1): frames, then the released question string (stem and "(A) ..." lines:
  the template's "Question (A) Option1 ... (D) Option4") + "\\n" + PROMPT_INSTRUCTION. The paper
  prints the template on one line with no separator detail; we keep the release's own newlines
  and add none of the paper's sentence punctuation.
- extraction: `polish_answer` from lvbench/utils/answer_util.py, exactly: strip, keep the text
  before the first ")", then what follows a "(", then the first space-separated word, then its
  first character. Quirks kept: "Answer: B" -> "A", "The answer is B" -> "T", "**B**" -> "*",
  "b" stays lower case (wrong), "None of the above" -> "N". The paper's GLM-4 fallback for
  unmatched replies is not reproducible and is not applied.
- scoring (compute_accuracy.py): exact string equality of that character with `answer`. Every
  answered question counts; a reply outside A-D is wrong, not dropped. A uid with no answer
  (here: a failed sample, e.g. missing video) is skipped by the official scorer, so it is left out
  of every denominator and listed in a "left out" table.
- aggregation: micro overall; Table 2 per capability, a question counting in every type it
  carries (ER, EU, KIR, TG, Rea, Sum, Overall); Table 3 per video category.
- write_submission: the HF Space leaderboard's result.json (fractions, test_acc.py's keys) and
  the scorer's answer file {uid: letter}. read_predictions (`lvu score`) also reads that answer
  file (compared verbatim, as compute_accuracy does) and lmms-eval sample logs.

compat="lmms-eval" (lmms_eval/tasks/lvbench, 0.7.3): lmms:N frames (linspace over frame numbers),
prompt = question string + "\\nAnswer the question with the option letter" (the YAML's, no final
period), 16 new tokens, the reply after its evaluator strips <think>/<analysis> blocks, extraction
`extract_mcq_answer` (0.7.2-0.7.3's priority ranking, choices A-D), failed samples count as wrong;
lmms-eval itself reports only the overall mean. compat="lmms-eval@0.7.1" (releases 0.7.0-0.7.1) and
"lmms-eval@0.6" (0.6.0-0.6.1, no reasoning-tag stripping) extract with the 2024-06
`extract_characters_regex` those releases had. VLMEvalKit has no LVBench task, so
compat="vlmevalkit" is refused.

Harnesses (below, table `HARNESSES`): `LvbenchHarness` is the official protocol, `LvbenchLmmsEval`,
`LvbenchLmmsEval071` and `LvbenchLmmsEval06` lmms-eval's releases, and `LvbenchVlmevalkit` refuses;
`__init__` picks one from `compat` and the frame plan, prompt, extraction and what a failed sample
counts as come from it. Settings: `LvbenchSettings` (`lvu list --settings lvbench`).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from lvu.benchmarks.base import (
    BadRecord, Benchmark, Breakdown, json_id_map, lmms_log_response, read_prediction_lines, register_benchmark,
)
from lvu.benchmarks.harness import Harness, pick
from lvu.benchmarks.lvbench_ref import REFERENCE
from lvu.benchmarks.lvbench_release import (  # noqa: F401 — bins, HUB_REVISION, parsers: importable from here
    CAPABILITIES, CHOICES, CLUE_BINS, HUB_REVISION, LENGTH_BINS, META_FILE, clue_bin, length_bin, load_release,
    parse_time_reference,
)
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.errors import DataError, LvuError
from lvu.media.sampling import Fps, Lmms, Uniform
from lvu.scoring.choice import lmms_extract_mcq, mean_pct as _pct
from lvu.scoring.lmms_eval import (
    LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, RELEASES, extract_legacy, task_reply,
)
from lvu.types import (
    LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, Text,
    VideoMeta,
)

PROMPT_INSTRUCTION = ("Please select the best answer from the options above and directly provide the letter "
                      "representing your choice without giving any explanation.")
LMMS_POST_PROMPT = "\nAnswer the question with the option letter"
EXPECTED_VIDEOS, EXPECTED_QUESTIONS = 103, 1549
CATEGORY_ORDER = ("Sports", "Documentary", "Event Record", "Lifestyle", "TV Show", "Cartoon")

# ---- the official extraction (lmms-eval's: lvu.scoring.choice.lmms_extract_mcq) ----------


def polish_answer(answer: str) -> str:
    """lvbench/utils/answer_util.py::polish_answer, line for line (its try/except cannot fire)."""
    answer = answer.strip()
    answer = answer.split(")")[0]
    answer = answer.strip()
    if "(" in answer:
        answer = answer.split("(")[1]
        answer = answer.strip()
    answer = answer.split(" ")[0]
    if len(answer) > 0:
        return answer[0]
    return answer


# ---- settings and harnesses ------------------------------------------------------------------


class LvbenchSettings(BenchmarkSettings):
    """LVBench's settings (the paper gives no sampling detail: frames is the reported rows' knob)."""

    frames: int = Field(32, description="uniform segment centres (32: LLaVA-NeXT's row; 10 GPT-4o, 16 PLLaVA, "
                                        "96 TimeChat), the cap with fps; 0: a blind text-only run")
    fps: int | float | None = Field(None, description="read one frame every 1/fps s instead, capped at frames "
                                                      "(the paper's native rows: fps=1); unset: frames only")
    resize: int | None = Field(None, description="shorter side of frames in pixels; unset: full size")
    compat: str = Field("official", description="harness: official (the paper + THUDM/LVBench scorer), lmms-eval "
                                                "(0.7.2-0.7.3), lmms-eval@0.7.1 or lmms-eval@0.6")

    @field_validator("frames", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LvuError(f"frames={value!r} is not a frame count — use a whole number such as 32 (0: no video)")
        return value

    @field_validator("fps", mode="before")
    @classmethod
    def _fps(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise LvuError(f"fps={value!r} is not a positive rate — e.g. fps=1 (frames then caps the count)")
        return value


class LvbenchHarness(Harness["LvbenchBenchmark"]):
    """The official protocol: uniform frames, the paper's instruction, `polish_answer`, failed
    samples left out (the scorer skips uids without an answer)."""

    compat: ClassVar[str] = "official"
    peer: ClassVar[str] = "the paper (Sec. 4.1) and THUDM/LVBench's answer_util.py / compute_accuracy.py"
    counts_failed: ClassVar[bool] = False
    """Whether a failed sample counts as wrong (lmms-eval) rather than being left out (the official scorer)."""
    no_letter: ClassVar[str] = "outside the options"
    """How a score explains a reply without one of the option letters."""

    def frame_plan(self, n: int) -> Lmms | Uniform:
        """The plan for `frames` without `fps`."""
        return Uniform(n=n)

    def prompt(self, question: str) -> tuple[str, int]:
        """(text after the frames, max new tokens) for the released question string."""
        return question + "\n" + PROMPT_INSTRUCTION, 64

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if sample.extra.get("verbatim"):  # an official answer file: the scorer compares it as written
            letter, method = response.text, "answer file"
        else:
            letter, method = polish_answer(response.text), "polish_answer"
        value: int | str | None = CHOICES.index(letter) if len(letter) == 1 and letter in CHOICES else letter or None
        return Prediction(value=value, method=method)


class LvbenchLmmsEval(LvbenchHarness):
    """lmms_eval/tasks/lvbench (0.7.2-0.7.3): lmms:N frames, its post prompt, 16 new tokens, the reply
    after reasoning blocks are stripped read by `extract_mcq_answer` (A-D); failures count as wrong."""

    compat = LMMS_EVAL
    peer = f"lmms-eval {RELEASES[LMMS_EVAL]} (lmms_eval/tasks/lvbench)"
    counts_failed = True
    no_letter = "no option letter"

    def frame_plan(self, n: int) -> Lmms | Uniform:
        return Lmms(n=n)

    def prompt(self, question: str) -> tuple[str, int]:
        return question + LMMS_POST_PROMPT, 16

    def letter(self, text: str) -> tuple[str, str]:
        """(letter or "", the extractor's name) of the reply its evaluator hands the task."""
        return lmms_extract_mcq(text, "ABCD"), "extract_mcq_answer"

    def extract(self, sample: Sample, response: Response) -> Prediction:
        letter, method = self.letter(task_reply(response, self.compat))
        return Prediction(value=CHOICES.index(letter) if letter else None, method=f"{self.compat} {method}")


class LvbenchLmmsEval071(LvbenchLmmsEval):
    """lmms-eval 0.7.0-0.7.1: the 2024-06 `extract_characters_regex`."""

    compat = LMMS_EVAL_0_7_1
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_7_1]} (lmms_eval/tasks/lvbench)"

    def letter(self, text: str) -> tuple[str, str]:
        return extract_legacy(text), "extract_characters_regex@2024-06"


class LvbenchLmmsEval06(LvbenchLmmsEval071):
    """lmms-eval 0.6.0-0.6.1: as 0.7.1, with no reasoning-tag stripping (strip_reasoning_tags knows)."""

    compat = LMMS_EVAL_0_6
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_6]} (lmms_eval/tasks/lvbench)"


class LvbenchVlmevalkit(LvbenchHarness):
    """VLMEvalKit has no LVBench task: choosing it is refused (a known compat value, in its own words)."""

    compat = "vlmevalkit"
    peer = "VLMEvalKit (no LVBench task at e8e78f05)"

    def __init__(self, bench: LvbenchBenchmark) -> None:
        raise LvuError("compat=vlmevalkit: VLMEvalKit has no LVBench task (checked at e8e78f05) — "
                       "use compat=official or compat=lmms-eval")


HARNESSES: dict[str, type[LvbenchHarness]] = {
    "official": LvbenchHarness, LMMS_EVAL: LvbenchLmmsEval, LMMS_EVAL_0_7_1: LvbenchLmmsEval071,
    LMMS_EVAL_0_6: LvbenchLmmsEval06, "vlmevalkit": LvbenchVlmevalkit,
}
"""compat value -> harness (lvu.benchmarks.harness.pick); the order is the one errors list."""


# ---- the benchmark ----------------------------------------------------------------------------


@register_benchmark("lvbench")
class LvbenchBenchmark(Benchmark):
    """LVBench (THUDM): 103 hour-long videos, 1,549 MCQs; official prompt, polish_answer, Table 2/3."""

    Settings = LvbenchSettings
    config: LvbenchSettings
    expected_counts: ClassVar[dict[str, int]] = {"all": EXPECTED_QUESTIONS}
    reference: ClassVar[list[dict[str, Any]]] = REFERENCE
    harness: LvbenchHarness

    def __init__(self, **settings: Any) -> None:
        compat = self.defaults["compat"] if settings.get("compat") is None else settings["compat"]
        self.harness = pick(HARNESSES, compat, "lvbench")(self)  # first, as before: compat, then the rest
        super().__init__(**settings)
        self._stats: dict[str, Any] = {}

    # ---- loading (lvbench_release.py) ---------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        samples, bad, self._stats = load_release(self.settings.get("data"), self.settings.get("video_dir"))
        return samples, bad

    # ---- validation ---------------------------------------------------------------------------

    def check(self) -> list[str]:
        """Bad records, repeated uids, unknown capability names, missing videos (one line per
        video), and the counts against the paper's 103 videos / 1,549 questions."""
        samples, bad = self.load()
        problems = [b.error for b in bad]
        first: dict[str, str] = {}
        for s in samples:
            if s.id in first:
                problems.append(f"uid {s.id}: repeated (videos {first[s.id]} and {s.extra['key']}) — "
                                "the official scorer keys answers by uid, so uids must be unique")
            first.setdefault(s.id, s.extra["key"])
        unknown = Counter(t for s in samples for t in s.extra["question_type_raw"]
                          if t.strip().lower() not in CAPABILITIES)
        problems += [f"question_type {t!r} ({n} questions) is not one of LVBench's six capabilities "
                     f"({', '.join(CAPABILITIES)})" for t, n in sorted(unknown.items())]
        per_video: dict[str, list[Sample]] = defaultdict(list)
        for s in samples:
            per_video[s.video.path].append(s)
        for path, group in per_video.items():
            if not Path(path).exists():
                problems.append(f"video {group[0].extra['key']}: {path} not found ({len(group)} questions) — "
                                "pass --video-dir with the folder holding <key>.mp4")
        n_videos, n_questions = len(self._stats["videos"]), self._stats["questions"]
        if (n_videos, n_questions) != (EXPECTED_VIDEOS, EXPECTED_QUESTIONS):
            problems.append(f"lvbench: {n_questions:,} questions in {n_videos} videos; the paper has "
                            f"{EXPECTED_QUESTIONS:,} in {EXPECTED_VIDEOS} — is this the complete {META_FILE}?")
        return problems

    # ---- protocol -----------------------------------------------------------------------------

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        n, rate = self.settings["frames"], self.settings["fps"]
        if n == 0:
            return InputPlan(timestamps=[], resize=self.settings["resize"])
        if rate is not None:
            plan: Fps | Lmms | Uniform = Fps(fps=rate, max_frames=n)
        else:
            plan = self.harness.frame_plan(n)
        times = plan.timestamps(video.duration, video.fps or 0.0)  # 0 = unknown: lmms refuses, time plans need none
        return InputPlan(timestamps=times, subtitle_mode="none", resize=self.settings["resize"])

    def question_text(self, sample: Sample) -> str:
        """The released question string (stem + '(A) …' lines), rebuilt when it was not kept."""
        rebuilt = sample.question + "".join(f"\n({LETTERS[i]}) {o}" for i, o in enumerate(sample.options))
        return sample.extra.get("question_raw", rebuilt)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        text, max_tokens = self.harness.prompt(self.question_text(sample))
        return Prompt(parts=[*frames, Text(text=text)], choices=list(sample.options), question=sample.question,
                      max_tokens=max_tokens)

    def extract(self, sample: Sample, response: Response) -> Prediction:
        return self.harness.extract(sample, response)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        answer = sample.extra.get("answer_letter") or CHOICES[sample.answer]  # type: ignore[index]
        got = letter_of(prediction.value)
        ok = got == answer
        if ok:
            why = f"{got!r} = answer"
        elif got in CHOICES:
            why = f"{got!r}, answer {answer!r}"
        else:
            why = f"{got!r} ({self.harness.no_letter}: wrong, counted), answer {answer!r}"
        return Score(value=float(ok), correct=ok, explanation=why)

    # ---- aggregation and files ----------------------------------------------------------------

    def _scored(self, results: list[SampleResult]) -> tuple[list[SampleResult], list[SampleResult]]:
        """(counted, left out): officially a failed sample has no answer and is skipped."""
        kept = [r for r in results if r.counted and (r.error is None or self.harness.counts_failed)]
        ids = {id(r) for r in kept}
        return kept, [r for r in results if r.counted and id(r) not in ids]

    def _groups(self, kept: list[SampleResult]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        cap: dict[str, list[float]] = defaultdict(list)
        cat: dict[str, list[float]] = defaultdict(list)
        for r in kept:
            types = r.labels.get("question_type") or []
            for t in [types] if isinstance(types, str) else types:  # every type it carries, repeats too
                cap[t].append(r.score or 0.0)
            if (vt := r.labels.get("video_type")) is not None:
                cat[str(vt)].append(r.score or 0.0)
        return cap, cat

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        kept, left = self._scored(results)
        cap, cat = self._groups(kept)
        overall = ("Overall", len(kept), _pct([r.score or 0.0 for r in kept]))
        tables = [Breakdown(title="overall", rows=[("all", *overall[1:])]),
                  Breakdown(title="Table 2: core capabilities", rows=[*_ordered(cap, CAPABILITIES.values()), overall]),
                  Breakdown(title="Table 3: video categories", rows=[*_ordered(cat, CATEGORY_ORDER), overall])]
        if left:
            tables.append(Breakdown(title="left out (no answer: the official scorer skips missing uids)",
                                    rows=[("failed samples", len(left), float("nan"))]))
        return tables

    def write_submission(self, results: list[SampleResult], path: Path) -> Path:
        """`path`: the leaderboard's result.json ({"ER": 0.301, ..., "Overall": 0.322}: right / total
        as compute_accuracy divides, keys as test_acc.py names them); beside it
        `<stem>_answers.json`, the scorer's own input {uid: letter}. Failed samples are omitted."""
        path = Path(path)
        kept, _ = self._scored([r for r in results if r.error is None])
        cap, _ = self._groups(kept)
        names = [t for t in CAPABILITIES.values() if t in cap] + sorted(set(cap) - set(CAPABILITIES.values()))
        result: dict[str, float | None] = {t: sum(cap[t]) / len(cap[t]) for t in names}
        result["Overall"] = sum(r.score or 0.0 for r in kept) / len(kept) if kept else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=4), encoding="utf-8")
        answers = {r.sample_id: letter_of(r.prediction) for r in kept}
        path.with_name(f"{path.stem}_answers.json").write_text(json.dumps(answers, ensure_ascii=False), "utf-8")
        return path

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """The official answer file {uid: letter} (compared verbatim), lvu's export JSONL
        ({sample_id, response}) or an lmms-eval sample log ({doc: {uid}, filtered_resps})."""
        samples = {s.id: s for s in self.load()[0]}
        text = Path(path).read_text(encoding="utf-8")
        if (whole := json_id_map(text)) is not None:
            pairs = [(samples[str(u)].model_copy(update={"extra": {**samples[str(u)].extra, "verbatim": True}}),
                      "" if a is None else str(a)) for u, a in whole.items() if str(u) in samples]
            if whole and not pairs:
                raise DataError(f"{path}: none of its {len(whole)} uids is an LVBench uid in this data — "
                                "is it an answer file for this release?")
            return pairs
        return read_prediction_lines(
            path, samples, text,
            key_of=lambda row: row["doc"]["uid"] if "doc" in row else row["sample_id"],
            response_of=lambda row: lmms_log_response(row) if "doc" in row else row.get("response"),
            what="uid", expected="use the {uid: letter} answer file, lvu's export or an lmms-eval log")


def letter_of(value: int | str | None) -> str:
    """A prediction as the answer file writes it: option index -> letter, text as is, None -> ''."""
    if isinstance(value, int):
        return LETTERS[value]
    return value or ""


def _ordered(groups: dict[str, list[float]], order) -> list[tuple[str, int, float]]:
    names = [g for g in order if g in groups] + sorted(g for g in groups if g not in set(order))
    return [(g, len(groups[g]), _pct(groups[g])) for g in names]
