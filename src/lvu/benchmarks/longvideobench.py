"""LongVideoBench (Wu et al., NeurIPS 2024 D&B): referring-reasoning MCQ over interleaved frames + subtitles.

Tasks: `longvideobench` (frames + subtitles interleaved, the paper's input), `longvideobench-frames`
(frames only) and `longvideobench-subtitles` (all subtitles, no frames): Table 6's three inputs.
`split`: val (1,337 questions / 752 videos, answers public) or test (5,341 / 3,011, answers hidden:
`write_submission`). `frames=0` with subtitles none is the question-only probe.

Release files (lvb_val.json, lvb_test_wo_gt.json, videos/, subtitles/; or the hub's parquet), the
record mapper `record_to_sample` and the leaderboard file: longvideobench_release.py.

Protocol (official = the authors' `longvideobench_dataset.py` at fc3c553; it has no scorer, so the
extraction is the author's own lmms-eval port, PR #117, whose docstring says it matches the paper):
- frames (`frames`, default 256 = the loader's default and the top leaderboard rows; Table 8 gives
  each model's best): `lvb:N` = `total = int(duration * avg_fps)`, `n = min(N, int(duration))`,
  indices `int(total / n) * i`, shown at `i / fps`; `duration` is the annotation's, not the file's.
- subtitles: the LVB JSON read as the official loader reads it (`official_cues`): text verbatim
  (Whisper's leading space kept), file order, times minus starting_timestamp_for_subtitles, and a
  Whisper end that is not a float (null, or an int such as 12) replaced by the clip `duration`
  *before* the offset is subtracted. Placement (`interleave_official`, one pass in file order):
  frames with t <= the cue mid-point go first; the cue is kept only when some frame lies strictly
  inside (start, end), widened to mid +- 0.5 s for cues under 1 s. Subtitles-only (official
  max_num_frames=-1) inserts every cue of the file, unfiltered and untimed (clips cut from longer
  videos therefore get the whole source video's subtitles: reproduced).
- prompt: the interleaved frames / cues, then one text part `Question: {q}\\nA. {c0}\\nB. ...\\n
  Answer with the option's letter from the given choices directly.` (the official inputs list
  joined by "\\n", as the paper's Appendix B.2 template shows; option letters `". ".join([L, c])`).
- extraction (`parse_official`): strip, delete the prefixes of ANSWER_PREFIXES, take the first
  [ABCDE] anywhere (so "Answer: C" reads A, "Both ..." reads B, "E" is read on 4-option questions
  and scored wrong); no letter -> a random option letter ("as in the paper", seeded per sample by
  `seed` and the id; Prediction.method "random" marks them).
- scoring/aggregation: accuracy over all questions (micro), Table 7's layout: overall, 4 duration
  groups, 17 categories, plus L1/L2 levels; failed samples count wrong. Test: uncounted.
- cues are read here, not by the engine (plan() says subtitle_mode "none"): the shared loader
  cleans text, sorts by start and is not given `duration`, each of which can change the prompt.

`compat="lmms-eval"` (tasks longvideobench_{val,test}_{i,v}, anchors §1.3): `_i` (subtitles
interleave, default 16 frames = its YAML max_num_frames): frames by the same lvb:N loader, then ONE
text `"\\n".join("<image>" / cue text) + "\\n" + q + "\\nA. c0..." + "\\nAnswer with ...\\n"` where
the `<image>` slots and cue selection use `compute_frame_timestamps` (duration / N * i, or
0..int(duration)-1), not the real frame times; frames go first (what chat models get). `_v`
(subtitles none): `q\\nA. ...\\nAnswer ...\\n`, frames by the model's own reader (lmms:N, 32).
Same parser (on the reply after its evaluator strips <think>/<analysis> blocks), random fallback.
max_new_tokens 32. No subtitles-only task. The task code is the same in releases 0.6.0-0.7.3:
"lmms-eval@0.7.1" behaves as "lmms-eval", "lmms-eval@0.6" differs only in not stripping reasoning tags.
`compat="vlmevalkit"` (anchors §2.3, vlmeval/dataset/longvideobench.py): val only; frames
`vlmevalkit:N` (default 8) or `frames="1fps"`/`"0.5fps"` (indices int(i * fps / F)); subtitles
(use_subtitle) interleaved by the same rule at `index / fps`, each cue text + "\\n"; text
`q\\nA. c0...\\nAnswer with ...` (no "Question: "); extraction `parse_vlmevalkit` (its prefix list
with two missing commas: "Best answer:" / "Best option:" are NOT removed, "Answer:"/"Option:" are);
no letter -> "Z" = wrong (exact_matching, its default). `vlmevalkit_flag_bug=true` reproduces the
inverted `use_subtitle` flag of VLMEvalKit #573 .. #1588 (2024-11 .. 2026-06): subtitles appear
exactly when they were NOT asked for (LongVideoBench_8frame had them, _8frame_subs did not).
A reply its prediction sheet's pandas round trip turns into NaN (`N/A`, `None`, "" ...: `reread`)
has no letter (wrong); its API failure message is read like any reply (the A of "API").
"vlmevalkit@e8e78f05" = "vlmevalkit"; "vlmevalkit@296425e2" differs only in that commit's
`if not self.use_subtitle` (the flag bug in its code; its run.py never sets use_subtitle for
LongVideoBench, so its runs had the cues: subtitles=none here).

Settings: `LongVideoBenchSettings` (one typed field each, with its docs and checks). Harnesses
(longvideobench_harness.py, which also holds the parser, the subtitle reading and the interleaving
re-exported here): `LongVideoBenchHarness` (official), `LongVideoBenchLmmsEval`,
`LongVideoBenchLmmsEval071`, `LongVideoBenchLmmsEval06`, `LongVideoBenchVlmevalkit` (and its pins), chosen once
from `compat` by `HARNESSES`; the benchmark's frame plan, prompt and extraction delegate to it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import Field, ValidationInfo, field_validator, model_validator

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.harness import pick
from lvu.benchmarks.longvideobench_harness import (  # noqa: F401 — the protocol functions: importable from here
    ANSWER_PREFIXES, FPS_WORD, HARNESSES, INSTRUCTION, VLMEVALKIT_PREFIXES, LongVideoBenchHarness,
    LongVideoBenchLmmsEval, interleave_official, official_cues, parse_official, parse_vlmevalkit, random_letter,
    sample_cues,
)
from lvu.benchmarks.longvideobench_ref import CATEGORIES, DURATIONS, ERRATA, REFERENCE
from lvu.benchmarks.longvideobench_release import (  # noqa: F401 — HF_*: still importable from here
    HF_DATASET, HF_REVISION, SPLIT_FILES, load_release, read_prediction_file, record_to_sample, split_of,
    write_submission_file,
)
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.errors import LvuError
from lvu.scoring.choice import mean_pct as _pct
from lvu.scoring.lmms_eval import check_compat
from lvu.types import (LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score,
                       Subtitle, Text, VideoMeta)

__all__ = ["ERRATA", "REFERENCE", "LongVideoBench", "LongVideoBenchSettings", "interleave_official",
           "official_cues", "parse_official", "parse_vlmevalkit", "record_to_sample"]

EXPECTED_QUESTIONS = {"val": 1337, "test": 5341}
EXPECTED_VIDEOS = {"val": 752, "test": 3011}
LEVELS = ("L1-Perception", "L2-Relation")
COMPATS = tuple(HARNESSES)
SUBTITLE_MODES = ("interleave", "none", "all")


# ---- settings ----------------------------------------------------------------------------------------


class SplitContradicted(NamedTuple):
    """A `split` the data file's name contradicts: the split check refuses it in its turn."""

    data: Any
    inferred: str
    given: Any
    """The split asked for ("validation" read as val)."""


class LongVideoBenchSettings(BenchmarkSettings):
    """LongVideoBench's settings. Checked in the order the protocol's checks ran: compat, split,
    subtitles, then the frame count and what each harness allows."""

    split: Literal["val", "test"] = Field(
        "val", description="val (1,337 questions, answers public) or test (5,341, answers hidden: write a "
                           "submission); 'validation' reads as val; a --data file's name sets it")
    frames: Any = Field(
        256, description="max_frames N of the lvb:N plan, min(N, duration) frames (paper: 256; 0 = none); "
                         "unset: 16/32 under lmms-eval, 8 under vlmevalkit, 0 with subtitles=all; "
                         "'1fps'/'0.5fps': VLMEvalKit's presets")
    subtitles: Literal["interleave", "none", "all"] = Field(
        "interleave", description="interleave (the paper's input: cues between frames by time), none "
                                  "(frames only) or all (every cue, no frames: the subtitles-only input)")
    resize: int | None = Field(
        None, description="the shorter side of frames in pixels (none: full size, as the paper)")
    compat: str = Field(
        "official", description="whose harness to reproduce: official, lmms-eval, lmms-eval@0.7.1, "
                                "lmms-eval@0.6, vlmevalkit (= vlmevalkit@e8e78f05) or vlmevalkit@296425e2 "
                                "(longvideobench_harness.py)")
    seed: int = Field(
        0, description="seeds the random option drawn when a reply has no letter (per sample id)")
    subtitle_dir: Any = Field(
        None, description="the folder of the subtitle JSONs (none: subtitles/ next to the annotation file)")
    vlmevalkit_flag_bug: bool = Field(
        False, description="reproduce VLMEvalKit's inverted use_subtitle (#573 .. #1588): subtitles exactly "
                           "when not asked for; only with compat=vlmevalkit (vlmevalkit@296425e2 has it in "
                           "its code)")


    @model_validator(mode="before")
    @classmethod
    def _compat_first(cls, values: Any, info: ValidationInfo) -> Any:
        if isinstance(values, dict) and "compat" in values:
            owner = (info.context or {}).get("owner", "longvideobench")
            check_compat(values["compat"], COMPATS, owner)
        return values

    @field_validator("split", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, SplitContradicted):
            raise LvuError(f"{value.data} holds the {value.inferred} split but split={value.given!r} — drop one of them")
        if value == "validation":
            return "val"
        if value not in tuple(SPLIT_FILES):
            raise LvuError(f"split={value!r} is unknown — use val or test")
        return value

    @field_validator("subtitles", mode="before")
    @classmethod
    def _subtitles(cls, value: Any) -> Any:
        if value not in SUBTITLE_MODES:
            raise LvuError(f"subtitles={value!r} is not a LongVideoBench input — use interleave, none or all")
        return value

    @field_validator("vlmevalkit_flag_bug", mode="before")
    @classmethod
    def _flag_bug(cls, value: Any) -> Any:
        if not isinstance(value, bool):
            raise LvuError(f"vlmevalkit_flag_bug={value!r} — use true or false")
        return value

    @model_validator(mode="after")
    def _harness_allows(self) -> LongVideoBenchSettings:
        harness, frames = HARNESSES[self.compat], self.frames
        fps_word = isinstance(frames, str) and FPS_WORD.fullmatch(frames)
        if not (fps_word or (isinstance(frames, int) and not isinstance(frames, bool) and frames >= 0)):
            raise LvuError(f"frames={frames!r} is not a frame count — use max_frames such as 256 (0 = no frames)")
        if fps_word and not harness.fps_presets:
            raise LvuError(f"frames={frames!r}: fps sampling is VLMEvalKit's preset — LongVideoBench samples "
                           "min(N, duration) frames; use a count, or --compat vlmevalkit")
        if self.subtitles == "all" and frames != 0:
            raise LvuError("subtitles=all is the official subtitles-only input (max_num_frames=-1) — use frames=0")
        if self.subtitles == "all" and not harness.subtitles_only:
            raise LvuError(f"{self.compat} has no LongVideoBench subtitles-only task — use --compat official")
        if self.split not in harness.splits:
            raise LvuError(harness.split_refusal)
        if self.vlmevalkit_flag_bug and not harness.flag_bug:
            raise LvuError(harness.flag_bug_refusal)
        return self


# ---- the benchmark --------------------------------------------------------------------------------


@register_benchmark("longvideobench")
class LongVideoBench(Benchmark):
    """LongVideoBench: 4-5-way MCQ on interleaved frames + subtitles (val 1,337 / test 5,341)."""

    Settings: ClassVar[type[BenchmarkSettings]] = LongVideoBenchSettings
    config: LongVideoBenchSettings
    harness: LongVideoBenchHarness
    expected_counts = EXPECTED_QUESTIONS
    reference = REFERENCE

    def __init__(self, **settings: Any) -> None:
        super().__init__(**self._requested(settings))
        self.harness = pick(HARNESSES, self.config.compat, self.name)(self)

    def _requested(self, settings: dict[str, Any]) -> dict[str, Any]:
        """`settings` with what depends on which settings were given, which the typed model cannot
        see: the split a --data file's name stands for, and the harness's frame count when none is given."""
        given = {k: v for k, v in settings.items() if v is not None}
        out = dict(settings)
        data = given.get("data")
        if data and not isinstance(data, (str, os.PathLike)):
            raise LvuError(f"data={data!r} is not a path — pass --data DIR (the release folder), "
                           "an annotation file such as lvb_val.json, or hf:")
        if data and not str(data).startswith("hf:") and Path(data).is_file() and (inferred := split_of(Path(data))):
            asked = "val" if given.get("split") == "validation" else given.get("split")
            contradicted = "split" in given and asked != inferred
            out["split"] = SplitContradicted(data, inferred, asked) if contradicted else inferred
        if "frames" not in given:
            compat = given.get("compat", self.defaults["compat"])
            subtitles = given.get("subtitles", self.defaults["subtitles"])
            harness = HARNESSES.get(compat) if isinstance(compat, str) else None
            if subtitles == "all":
                out["frames"] = 0
            elif harness is not None and isinstance(subtitles, str):
                out["frames"] = harness.default_frames(subtitles, self.defaults["frames"])
        return out

    @property
    def compat(self) -> str:
        """The harness's compat value."""
        return self.harness.compat

    @property
    def lmms(self) -> bool:
        """compat=lmms-eval or one of its older releases."""
        return isinstance(self.harness, LongVideoBenchLmmsEval)

    @property
    def with_subtitles(self) -> bool:
        """Whether cues are interleaved; VLMEvalKit's flag bug inverts the request."""
        return self.harness.with_subtitles

    # ---- loading (longvideobench_release.py) --------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        """The split's samples, read once (`check` and `read_predictions` load too)."""
        cached: tuple[list[Sample], list[BadRecord]] | None = getattr(self, "_loaded", None)
        if cached is None:
            cached = self._loaded = load_release(self.settings.get("data"), benchmark=self.name,
                                                 split=self.settings["split"], video_dir=self.settings.get("video_dir"),
                                                 subtitle_dir=self.settings.get("subtitle_dir"))
        return cached

    def check(self) -> list[str]:
        problems = super().check()
        samples, bad = self.load()
        split = self.settings["split"]
        videos = {s.extra.get("video_id") or Path(s.video.path).stem for s in samples}
        if not bad and len(videos) != EXPECTED_VIDEOS[split]:
            problems.append(f"{self.name} {split}: {len(videos)} videos, the paper has {EXPECTED_VIDEOS[split]}")
        for s in samples:
            category, level, group = (s.labels.get(k) for k in ("question_category", "level", "duration_group"))
            if category not in CATEGORIES:
                problems.append(f"{s.id}: question_category {category!r} is not one of the 17 codes")
            if level not in LEVELS:
                problems.append(f"{s.id}: level {level!r} is not L1-Perception or L2-Relation")
            if group not in DURATIONS:
                problems.append(f"{s.id}: duration_group {group!r} is not 15, 60, 600 or 3600")
            if s.subtitles is None and self.settings["subtitles"] != "none":
                problems.append(f"{s.id}: no subtitle_path — run {self.name}-frames or add the field")
        return problems

    # ---- input plan and prompt -----------------------------------------------------------------

    def frame_indices(self, sample: Sample, video: VideoMeta) -> tuple[list[int], float]:
        """(frame numbers, fps) of this sample's frames under the active harness."""
        frames = self.settings["frames"]
        if frames == 0:
            return [], 0.0
        fps, total = video.rate_and_count()
        return self.harness.frame_numbers(sample, frames, total, fps), fps

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        indices, fps = self.frame_indices(sample, video)
        # Subtitles are read by this module (official_cues), so the engine's generic cue path is off.
        return InputPlan(timestamps=[i / fps for i in indices], subtitle_mode="none", resize=self.settings["resize"])

    def question_text(self, sample: Sample) -> str:
        """The text after the frames / cues, byte for byte as the active harness writes it."""
        return self.harness.question_text(sample)

    def cues(self, sample: Sample) -> list[Subtitle]:
        """Every cue of the sample's subtitle file, as the official loader reads them."""
        return sample_cues(sample)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        """`cues` from the engine are not used: LongVideoBench's cue reading and placement are part
        of its protocol (see the module docstring) and are done here from the subtitle file."""
        text = self.question_text(sample)
        parts: list[Any]
        if self.settings["subtitles"] == "all":  # subtitles only (official only): every cue, file order, no frames
            parts = [*self.cues(sample), Text(text=text)]
        else:
            parts = self.harness.parts(sample, frames, text)
        return Prompt(parts=parts, choices=list(sample.options), question=sample.question, temperature=0.0,
                      max_tokens=self.harness.max_tokens)

    # ---- extraction, scoring, aggregation --------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        return self.harness.extract(sample, response)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="test split: answers hidden — write a submission")
        answer = LETTERS[sample.answer]  # type: ignore[index]
        if prediction.value is None:
            return Score(value=0.0, correct=False, explanation=f"no letter in the reply (VLMEvalKit 'Z'); answer {answer}")
        got = LETTERS[prediction.value]  # type: ignore[index]
        ok = prediction.value == sample.answer
        how = f"random pick {got} (no letter in the reply, seed {self.settings['seed']})" \
            if prediction.method == "random" else f"predicted {got}"
        if prediction.value >= len(sample.options):  # type: ignore[operator]
            how += f" (not one of the {len(sample.options)} options)"
        return Score(value=float(ok), correct=ok, explanation=f"{how}, answer {answer}")

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """Question-weighted accuracy in Table 7's layout: overall ("all"), the duration groups,
        the 17 categories (L1 then L2), then the two levels. Failed samples count as wrong."""
        counted = [r for r in results if r.counted]
        if not counted and any(not r.data_error for r in results):  # data errors alone: no table to hide
            name = f"{self.settings['split']}: answers hidden — write a submission"
            return [Breakdown(title="overall", rows=[(name, 0, float("nan"))])]
        tables = {"duration_group": DURATIONS, "question_category": CATEGORIES, "level": LEVELS}
        groups: dict[str, dict[str, list[float]]] = {k: {} for k in tables}
        for r in counted:
            for key in tables:
                value = r.labels.get(key)
                if value is not None:
                    groups[key].setdefault(str(value), []).append(_value(r))
        out = [Breakdown(title="overall", rows=[("all", len(counted), _pct([_value(r) for r in counted]))])]
        for key, order in tables.items():
            names = [g for g in order if g in groups[key]] + sorted(set(groups[key]) - set(order))
            out.append(Breakdown(title=key, rows=[(g, len(groups[key][g]), _pct(groups[key][g])) for g in names]))
        return out

    # ---- saved predictions and submissions -------------------------------------------------------

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """The leaderboard JSON {id: response}, lvu's export or an lmms-eval log (`read_prediction_file`)."""
        return read_prediction_file(path, {s.id: s for s in self.load()[0]}, self.settings["split"])

    def write_submission(self, results: list[SampleResult], path: Path) -> Path:
        """The leaderboard file {question id: raw response} lmms-eval writes (`write_submission_file`)."""
        return write_submission_file(results, path)


def _value(r: SampleResult) -> float:
    return r.score if r.score is not None and not r.error else 0.0


@register_benchmark("longvideobench-frames")
class LongVideoBenchFrames(LongVideoBench):
    """LongVideoBench with frames only (Table 6's "w/o subtitles"; lmms-eval's `_v` under its compat)."""

    defaults = {**LongVideoBench.defaults, "subtitles": "none"}


@register_benchmark("longvideobench-subtitles")
class LongVideoBenchSubtitles(LongVideoBench):
    """LongVideoBench with all subtitles and no frames (the official max_num_frames=-1 input)."""

    defaults = {**LongVideoBench.defaults, "subtitles": "all", "frames": 0}
