"""Video-MME (Fu et al. 2024, arXiv:2405.21075): 900 YouTube videos, 2,700 four-way MCQs.

Tasks: `videomme` (frames only, the paper's "w/o subs") and `videomme-sub` (frames + the subtitles
of the sampled frames, "w/ subs"). `videomme-audio` (frames + the whole audio track, Table 5's
"+Audios"; `--audio whole|interleave` on any of them, official compat only: the audio block goes
after the frames and before the text, the paper's "frames + subtitles/audios + question" order).
Labels: duration (short < 2 min, medium 4-15 min, long 30-60 min; 300 videos each), domain (6),
sub_category (30), task_type (12).

Release formats (parquet, the official grouped JSON in both key schemas, flat JSON/JSONL rows, the
hub copy) and the one record mapper `row_to_sample`: videomme_release.py.

Official protocol (default; README of MME-Benchmarks/Video-MME and the scripts it links):
- frames (`frames`): N frames by the README-linked extractor look4u-ok/video-slicer `get_seq_frames`
  (midpoints of N segments of [0, T-1], np.round; `slicer_indices`), default 32; "gemini" = the
  paper's Gemini 1.5 Pro setting (1 fps short/medium, 0.5 fps long); or any lvu plan string
  ("fps:1", "uniform:16", "lmms:32"); 0 = blind (text only).
- subtitles (`subtitles`): "per-frame" (videomme-sub's default) is video-slicer's rule, which the
  README prescribes ("take the 10 subtitles that corresponding to the time of those 10 frames"):
  for each sampled frame, the first cue with start < t < end (ms, strict), repeats kept, empty
  skipped. "all" = Gemini's full subtitles; "covering" = lvu's shared half-open, de-duplicated rule
  (lmms-eval's shape on the real frames). A video without an .srt gets an empty block.
- prompt: the README's worked examples byte for byte (INSTRUCTION, SUBTITLE_HEADER, ANSWER_PROMPT;
  its format block's trailing spaces after "[Subtitles]" and "option." are not in the examples);
  options are the release's own "A. ..." strings. Frames first, then one text part (subtitles are a
  text block, not interleaved: "whole video frames + whole subtitles + question with prompt").
- extraction: parse_answer's `extract_characters_regex` (thanku-all/parse_answer@afd52cfe, the
  scorer the README links) verbatim: strip(), delete prefixes by str.replace in list order -- two
  pairs glued by missing commas ("The best option isThe correct option is", "Best answer:Best
  option:"), so "Best option: D" reads B --, "" when > 10 words and no [ABCD], else the FIRST
  capital A-D anywhere (case-sensitive: "Answer C" reads A). `scorer="2024-06"` uses the scorer of
  the 2024-06 template (6 prefixes: no "Answer:", "Option:"); `lvu score` picks it for files in the
  old key schema.
- scoring: an empty extraction is not "answered" and leaves the denominator (Score.counted=False):
  accuracy = correct / answered, per duration and overall, per domain / sub-category / task type
  within each duration and over all (the scorer's printout = `aggregate`). Like `--skip_missing`:
  no 300-videos assertion (`lvu data check` counts); videos marked "missing": true are left out.
  A sample that failed (no video, model error) counts as wrong, so failures never raise a score.

`compat="lmms-eval"` (tasks videomme / videomme_w_subtitle): its prompts ("based on the video and
the subtitles" even without subtitles; post-prompt "\\nAnswer with the option's letter from the
given choices directly."; "listed below: \\n"; "No subtitles available"), frames np.linspace
(lmms:N), subtitles chosen on its own `subtitle_grid`-frame grid (32; -1 = every frame) over the
.srt re-read with its parser and font regex (cues without <font color="white" size=".72c"> are
dropped; order = list(set(indices)) as CPython iterates it), subtitles=all = its Gemini "full
subtitle" mode, max_new_tokens 16, the reply after its evaluator strips <think>/<analysis> blocks,
read by `_task_utils/mcq_extract.extract_mcq_answer` over A-D (lmms-eval 0.7.2-0.7.3), empty
extraction counted wrong (all questions in the denominator). `compat="lmms-eval@0.7.1"` (releases
0.7.0-0.7.1) and `"lmms-eval@0.6"` (0.6.0-0.6.1, no reasoning-tag stripping) use the 2024-06
`extract_characters_regex` those releases had (before lmms-eval PR #1274). `compat="vlmevalkit"`:
frames int(i*T/(N+1)), "These are the frames of a video. ..." + "Question: ..\\nAnswer: ", the
per-frame subtitle rule (copied from video-slicer), its 8-prefix extractor on the reply as its
`evaluate()` re-reads it from the prediction sheet (a whole-cell N/A, NA, None, ... is NaN: no
letter), empty = wrong ('Z'), VLMEvalKit's API failure message read as text (at commit e8e78f05;
`"vlmevalkit@e8e78f05"` names the same pin).

Settings: `VideoMMESettings` (videomme-sub: `VideoMMESubSettings`, videomme-audio:
`VideoMMEAudioSettings`), one field per setting with its default, type and docs. Harnesses
(videomme_harness.py, with the prompt texts and extractors they copy): `VideoMMEHarness` (official),
`VideoMMEPeerHarness` (what the peers share: no audio, no `scorer`, empty = wrong),
`VideoMMELmmsEval` (lmms-eval), `VideoMMELmmsEval071` (lmms-eval@0.7.1), `VideoMMELmmsEval06`
(lmms-eval@0.6), `VideoMMEVlmevalkit` (vlmevalkit) and `VideoMMEVlmevalkitE8e78f05`
(vlmevalkit@e8e78f05); `__init__` picks one from `compat` and the
frame plan, subtitle lines, prompt, extraction and unanswered scoring delegate to it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, ValidationInfo, model_validator

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.harness import pick
from lvu.benchmarks.settings import BenchmarkSettings
from lvu.benchmarks.videomme_harness import (  # noqa: F401 — the texts and extractors: still importable from here
    ANSWER_PROMPT, HARNESSES, INSTRUCTION, LMMS_FONT, LMMS_INSTRUCTION, LMMS_NO_SUBTITLES, LMMS_POST_PROMPT,
    LMMS_SUBTITLE_HEADER, PREFIXES, SUBTITLE_HEADER, VLMEVALKIT_NOSUB, VLMEVALKIT_SUB, VideoMMEHarness,
    extract_characters_regex, lmms_subtitles, per_frame_lines, slicer_indices,
)
from lvu.benchmarks.videomme_ref import REFERENCE
from lvu.benchmarks.videomme_release import (  # noqa: F401 — HF_*: still importable from here
    DURATIONS, HF_CONFIG, HF_DATASET, HF_REVISION, pairs_from_json, read_json, release_rows, release_samples,
)
from lvu.errors import DataError, LvuError
from lvu.media.sampling import Fps, parse_plan
from lvu.scoring.lmms_eval import check_compat
from lvu.types import (
    LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle, Text,
    VideoMeta,
)

EXPECTED = {"questions": 2700, "videos": 900, "videos_per_duration": 300, "questions_per_video": 3}
DOMAINS: dict[str, tuple[str, ...]] = {
    "Knowledge": ("Humanity & History", "Literature & Art", "Biology & Medicine", "Finance & Commerce",
                  "Astronomy", "Geography", "Law", "Life Tip", "Technology"),
    "Film & Television": ("Animation", "Movie & TV Show", "Documentary", "News Report"),
    "Sports Competition": ("Esports", "Basketball", "Football", "Athletics", "Other Sports"),
    "Artistic Performance": ("Stage Play", "Magic Show", "Variety Show", "Acrobatics"),
    "Life Record": ("Handicraft", "Food", "Fashion", "Daily Life", "Travel", "Pet & Animal", "Exercise"),
    "Multilingual": ("Multilingual",),
}
SUB_CATEGORIES = tuple(s for subs in DOMAINS.values() for s in subs)
TASK_TYPES = ("Temporal Perception", "Spatial Perception", "Attribute Perception", "Action Recognition",
              "Object Recognition", "OCR Problems", "Counting Problem", "Temporal Reasoning", "Spatial Reasoning",
              "Action Reasoning", "Object Reasoning", "Information Synopsis")
"""Official order and spelling (eval_your_results.py CATEGORIES / SUB_CATEGORIES / TASK_CATEGORIES)."""

COMPATS = tuple(HARNESSES)
SubtitleMode = Literal["none", "per-frame", "covering", "all"]
SUBTITLE_MODES: tuple[str, ...] = get_args(SubtitleMode)


# ---- settings ------------------------------------------------------------------------------------


class VideoMMESettings(BenchmarkSettings):
    """Video-MME's settings; the defaults are the paper's "w/o subs" setting at 32 frames."""

    frames: int | str = Field(32, description="a frame count N (video-slicer's N segment midpoints; paper: each "
                              "model's own, 4-64), gemini (1 fps, 0.5 fps for long videos), an lvu plan such as "
                              "fps:1, or 0 (blind: question and options only)")
    subtitles: SubtitleMode = Field(
        "none", description="none; per-frame (the official rule: the cue at each sampled frame, repeats kept); "
        "covering (cues over the frames, each once); all (the whole file, Gemini's setting)")
    resize: int | None = Field(None, description="the shorter side of frames in pixels; None: full size")
    compat: str = Field("official", description="the harness: official, lmms-eval (0.7.2-0.7.3), lmms-eval@0.7.1, "
                        "lmms-eval@0.6, vlmevalkit (VLMEvalKit at e8e78f05), vlmevalkit@e8e78f05 or vlmevalkit@296425e2 "
                        "(videomme_harness.py)")
    scorer: Literal["afd52cfe", "2024-06"] | None = Field(
        None, description="the official extractor's version, afd52cfe (None: that, or 2024-06 for results files "
        "in the old key schema) or 2024-06; official compat only")
    subtitle_grid: int = Field(32, description="lmms-eval's frame_num: the frames its subtitle lines are chosen "
                               "at, 32, or -1 for every frame (lmms-eval compat only)")
    subtitle_dir: Any = Field(None, description="the folder of <videoID>.srt files; None: subtitle/ next to the data")
    response_key: Any = Field("response", description="the key holding the model's reply in an official results "
                              "file read by lvu score (e.g. response_w/o_sub)")


    @model_validator(mode="before")
    @classmethod
    def _rules_in_protocol_order(cls, values: Any, info: ValidationInfo) -> Any:
        """Each setting's rule, in the order Video-MME has always checked them (compat, subtitles,
        scorer, subtitle_grid, frames), so two bad settings still give the same first message. What a
        peer harness refuses (audio, a scorer, a subtitle mode) its __init__ checks (videomme_harness.py)."""
        if not isinstance(values, dict):
            return values
        given = {**cls.defaults(), **values}
        benchmark = str((info.context or {}).get("owner", "videomme"))
        check_compat(given["compat"], COMPATS, benchmark)
        if given["subtitles"] not in SUBTITLE_MODES:
            raise LvuError(f"subtitles={given['subtitles']!r} is unknown for {benchmark} — use one of "
                           f"{', '.join(SUBTITLE_MODES)} (Video-MME lists subtitles as a text block)")
        if given["scorer"] not in (None, "afd52cfe", "2024-06"):
            raise LvuError(f"scorer={given['scorer']!r}: use afd52cfe or 2024-06, with --compat official only")
        grid = given["subtitle_grid"]
        if isinstance(grid, bool) or not isinstance(grid, int) or not (grid > 0 or grid == -1):
            raise LvuError(f"subtitle_grid={grid!r}: lmms-eval's frame_num is a frame count (32) or -1 (every frame)")
        frames = given["frames"]
        if isinstance(frames, bool) or not (isinstance(frames, int) and frames >= 0 or isinstance(frames, str)):
            raise LvuError(f"frames={frames!r} is not a frame setting — use a count (32), gemini or a plan like fps:1")
        if isinstance(frames, str) and frames != "gemini":
            parse_plan(frames)  # one-line LvuError for a bad plan string
        return values


# ---- the benchmark -------------------------------------------------------------------------------


@register_benchmark("videomme")
class VideoMME(Benchmark):
    """Video-MME: 900 videos x 3 four-way MCQs (short/medium/long), frames only ("w/o subs")."""

    Settings: ClassVar[type[BenchmarkSettings]] = VideoMMESettings
    config: VideoMMESettings
    harness: VideoMMEHarness
    """The harness `compat` picks (videomme_harness.py): frames, subtitle lines, prompt, extraction, scoring."""
    expected_counts = {"test": EXPECTED["questions"]}
    reference = REFERENCE
    audio_modes = ("whole", "interleave")
    """The paper's "+Audios" (Table 5): the whole audio after the frames, before the text (`whole`)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._release: tuple[list[Sample], list[BadRecord]] | None = None
        self._planned: dict[str, VideoMeta] = {}
        """Video path -> the VideoMeta `plan` was given: the subtitle lines need its fps and frame count."""
        self.harness = pick(HARNESSES, self.config.compat, self.name)(self)

    @property
    def with_subtitles(self) -> bool:
        return self.config.subtitles != "none"

    # ---- loading (videomme_release.py) -----------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        if self._release is None:
            self._release = self._samples(*release_rows(self.settings.get("data"), benchmark=self.name))
        return self._release

    def _samples(self, pairs: list[tuple[str, Any]], root: Path | None) -> tuple[list[Sample], list[BadRecord]]:
        return release_samples(pairs, root, benchmark=self.name, video_dir=self.settings.get("video_dir"),
                               subtitle_dir=self.settings.get("subtitle_dir"))

    def check(self) -> list[str]:
        problems = super().check()
        samples, bad = self.load()
        n = len(samples) + len(bad)
        if n != EXPECTED["questions"]:
            problems.append(f"{self.name}: {n} questions, the paper has {EXPECTED['questions']}")
        videos: dict[str, Sample] = {}
        per_video = Counter(s.extra["video_id"] for s in samples)
        for s in samples:
            videos.setdefault(s.extra["video_id"], s)
        if len(videos) != EXPECTED["videos"]:
            problems.append(f"{self.name}: {len(videos)} videos, the paper has {EXPECTED['videos']}")
        per_duration = Counter(s.labels["duration"] for s in videos.values())
        for d in DURATIONS:
            if per_duration[d] != EXPECTED["videos_per_duration"]:
                problems.append(f"{self.name}: {per_duration[d]} {d} videos, the paper has 300")
        for vid, k in sorted(per_video.items()):
            if k != EXPECTED["questions_per_video"]:
                problems.append(f"video {vid}: {k} questions, Video-MME has 3 per video")
        for s in samples:
            domain, sub, task = s.labels["domain"], s.labels["sub_category"], s.labels["task_type"]
            if len(s.options) != 4:
                problems.append(f"{s.id}: {len(s.options)} options, Video-MME has 4")
            if domain not in DOMAINS or sub not in DOMAINS[domain]:
                problems.append(f"{s.id}: domain/sub_category {domain!r}/{sub!r} is not in the official taxonomy")
            if task not in TASK_TYPES:
                problems.append(f"{s.id}: task_type {task!r} is not one of the 12 official task types")
        if self.with_subtitles:
            problems += [f"video {vid}: long video without subtitle/{s.extra['videoID']}.srt (all long videos have one)"
                         for vid, s in sorted(videos.items()) if s.labels["duration"] == "long" and s.subtitles is None]
        return problems

    # ---- input plan and prompt: the harness's frames, subtitle lines and texts ------------------

    def planned_video(self, sample: Sample) -> VideoMeta:
        """The VideoMeta `plan` was given for this sample's video (build_prompt runs after plan)."""
        video = self._planned.get(sample.video.path)
        if video is None:
            raise LvuError(f"{sample.id}: {self.name} builds its subtitle lines from the video's frame rate — "
                           "call plan(sample, video) before build_prompt")
        return video

    def _times(self, sample: Sample, video: VideoMeta) -> list[float]:
        frames, duration = self.config.frames, video.duration
        if frames == 0:
            return []
        if frames == "gemini":
            return Fps(fps=0.5 if sample.labels.get("duration") == "long" else 1.0).timestamps(duration, 0.0)
        if isinstance(frames, str):
            plan = parse_plan(frames)
            if plan.native == "time":
                return plan.timestamps(duration, 0.0)
            fps, total = video.rate_and_count()
            return [i / fps for i in plan.frame_indices(total, fps, duration=duration)]
        fps, total = video.rate_and_count()
        return [i / fps for i in self.harness.frame_indices(total, fps, frames)]

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        self._planned[sample.video.path] = video
        return InputPlan(timestamps=self._times(sample, video),
                         subtitle_mode=self.harness.engine_subtitle_mode(self.config.subtitles),
                         resize=self.settings["resize"])

    def subtitle_block(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> str:
        """The subtitle lines of the prompt (joined by newlines), per the mode and the harness."""
        return self.harness.subtitle_block(sample, frames, cues)

    def prompt_texts(self, sample: Sample, block: str | None) -> list[str]:
        """The text parts after the frames, exactly; `block` = subtitle lines, None without subtitles."""
        return self.harness.prompt_texts(sample, block)

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        block = self.subtitle_block(sample, frames, cues) if self.with_subtitles else None
        return Prompt(parts=[*frames, *(Text(text=t) for t in self.prompt_texts(sample, block))],
                      choices=list(sample.options), question=sample.question,
                      max_tokens=self.harness.max_tokens, temperature=0.0)

    # ---- extraction, scoring, aggregation ------------------------------------------------------

    def scorer(self, sample: Sample) -> str:
        """The extractor version that reads this sample's reply (official: afd52cfe or 2024-06)."""
        return self.harness.scorer(sample)

    def extract(self, sample: Sample, response: Response) -> Prediction:
        return self.harness.extract(sample, response)

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.extra.get("missing"):
            return Score(value=0.0, counted=False, explanation='video marked "missing": left out (--skip_missing)')
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="no answer in the data: left out")
        answer = LETTERS[sample.answer]  # type: ignore[index]
        if prediction.value is None:
            return self.harness.unanswered(answer)
        ok = prediction.value == sample.answer
        return Score(value=float(ok), correct=ok, explanation=f"extracted {LETTERS[int(prediction.value)]}, answer {answer}")

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """Table 4's layout first (short, medium, long, overall), then the official scorer's printout:
        accuracy per domain, sub-category and task type within each duration and over all durations.
        n is the denominator: answered questions (official) or all questions (compat modes)."""
        counted = [r for r in results if r.counted]
        value = {id(r): r.score if r.score is not None and not r.error else 0.0 for r in counted}
        by_duration: dict[str, list[SampleResult]] = defaultdict(list)
        for r in counted:
            by_duration[str(r.labels.get("duration"))].append(r)
        groups = [(d, by_duration[d]) for d in DURATIONS if by_duration.get(d)]
        groups += [(d, v) for d, v in sorted(by_duration.items()) if d not in DURATIONS]

        def row(name: str, rs: list[SampleResult]) -> tuple[str, int, float]:
            return name, len(rs), 100.0 * sum(value[id(r)] for r in rs) / len(rs) if rs else float("nan")

        tables = [Breakdown(title="overall", rows=[*(row(d, rs) for d, rs in groups), row("overall", counted)])]
        orders = {"domain": tuple(DOMAINS), "sub_category": SUB_CATEGORIES, "task_type": TASK_TYPES}
        for key, order in orders.items():
            for duration, rs in [*groups, ("overall", counted)] if counted else []:
                by_label: dict[str, list[SampleResult]] = defaultdict(list)
                for r in rs:
                    by_label[str(r.labels.get(key))].append(r)
                names = [g for g in order if g in by_label] + sorted(set(by_label) - set(order))
                tables.append(Breakdown(title=f"{key} ({duration})", rows=[row(g, by_label[g]) for g in names]))
        return tables

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """The official results JSON (eval_your_results.py's input: videos with questions[] holding a
        `response`, either key schema), scored from the file alone; other files: lvu's JSONL export."""
        path = Path(path)
        if path.suffix != ".json" and not path.read_text(encoding="utf-8-sig").lstrip().startswith("["):
            return super().read_predictions(path)
        data = read_json(path)
        key = self.settings["response_key"]
        if not isinstance(data, list) or not all(isinstance(v, dict) and "questions" in v for v in data):
            raise DataError(f"{path}: not an official Video-MME results file — expected a list of videos, each with "
                            "questions[] holding answer and response (evaluation/output_test_template.json)")
        old = any("duration_category" in v for v in data)
        samples, bad = self._samples(pairs_from_json(data, path.name), None)
        if bad:
            raise DataError(bad[0].error)
        responses = {str(q.get("question_id")): q.get(key) for v in data for q in v["questions"] if isinstance(q, dict)}
        self.harness.mark_scorers(samples, old_keys=old)
        return [(s, str(responses.get(s.id) or "")) for s in samples]


class VideoMMESubSettings(VideoMMESettings):
    """videomme-sub's settings: the paper's "w/ subs", the cues at the sampled frames."""

    subtitles: SubtitleMode = Field(
        "per-frame", description="per-frame (the official rule, this task's default: the cue at each sampled "
        "frame, repeats kept); covering (cues over the frames, each once); all (the whole file, Gemini's "
        "setting); none")


class VideoMMEAudioSettings(VideoMMESettings):
    """videomme-audio's settings: the paper's "+Audios" (Table 5), the whole audio track."""

    audio: Literal["none", "whole", "interleave"] = Field(
        "whole", description="whole (the track after the frames, before the text: the paper's order), "
        "interleave (each frame with the sound around it) or none; official compat only")


@register_benchmark("videomme-sub")
class VideoMMESub(VideoMME):
    """Video-MME with subtitles ("w/ subs"): the cues at the sampled frames listed before the question."""

    Settings = VideoMMESubSettings


@register_benchmark("videomme-audio")
class VideoMMEAudio(VideoMME):
    """Video-MME with audio ("+Audios", Table 5): frames, then the whole audio track, then the question."""

    Settings = VideoMMEAudioSettings
