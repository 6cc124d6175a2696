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
per-frame subtitle rule (copied from video-slicer), its 8-prefix extractor, empty = wrong ('Z').
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.videomme_ref import REFERENCE
from lvu.benchmarks.videomme_release import (  # noqa: F401 — HF_*: still importable from here
    DURATIONS, HF_CONFIG, HF_DATASET, HF_REVISION, pairs_from_json, read_json, release_rows, release_samples,
)
from lvu.errors import DataError, LvuError
from lvu.media.sampling import Fps, Lmms, Vlmevalkit, parse_plan
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import (
    LEGACY_PREFIXES, LMMS_EVAL, MODES as LMMS_MODES, check_compat, extract_legacy, first_letter_after_prefixes,
    is_lmms, strip_reasoning_tags,
)
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

INSTRUCTION = ("Select the best answer to the following multiple-choice question based on the video. "
               "Respond with only the letter (A, B, C, or D) of the correct option.")
SUBTITLE_HEADER = "This video's subtitles are listed below:"
ANSWER_PROMPT = "The best answer is:"
LMMS_INSTRUCTION = ("Select the best answer to the following multiple-choice question based on the video and "
                    "the subtitles. Respond with only the letter (A, B, C, or D) of the correct option.")
LMMS_POST_PROMPT = "\nAnswer with the option's letter from the given choices directly."
LMMS_SUBTITLE_HEADER = "This video's subtitles are listed below: \n"
LMMS_NO_SUBTITLES = "No subtitles available"
LMMS_FONT = re.compile(r'<font color="white" size=".72c">(.*?)</font>')
VLMEVALKIT_NOSUB = ("\nThese are the frames of a video. Select the best answer to the following multiple-choice "
                    "question based on the video. Respond with only the letter (A, B, C, or D) of the correct option.\n")
VLMEVALKIT_SUB = ("\nThese are the frames of a video. This video's subtitles are listed below:\n{}\nSelect the best "
                  "answer to the following multiple-choice question based on the video. Respond with only the "
                  "letter (A, B, C, or D) of the correct option.\n")

_PREFIXES_2024_06 = LEGACY_PREFIXES  # two glued pairs (missing commas) that never match real replies
PREFIXES: dict[str, tuple[str, ...]] = {
    "afd52cfe": _PREFIXES_2024_06 + ("Answer:", "Option:", "The correct answer", "The correct option"),
    "2024-06": _PREFIXES_2024_06,
    "vlmevalkit": _PREFIXES_2024_06 + ("Answer:", "Option:"),
}
"""Prefix lists of the scorers, in order: parse_answer@afd52cfe (current), the 2024-06 scorer (also
lmms-eval's copy up to 0.7.1), VLMEvalKit's utils/videomme.py."""
COMPATS = ("official", *LMMS_MODES, "vlmevalkit")
SUBTITLE_MODES = ("none", "per-frame", "covering", "all")


def extract_characters_regex(s: str, prefixes: tuple[str, ...] = PREFIXES["afd52cfe"]) -> str:
    """The official extractor, verbatim: a letter A-D or "" (not answered)."""
    return first_letter_after_prefixes(s, prefixes)


def slicer_indices(total: int, n: int) -> list[int]:
    """video-slicer's get_seq_frames(total_num_frames, desired_num_frames), verbatim."""
    seg_size = float(total - 1) / n
    return [(int(np.round(seg_size * i)) + int(np.round(seg_size * (i + 1)))) // 2 for i in range(n)]


def per_frame_lines(cues: list[Subtitle], frame_ms: list[int]) -> list[str]:
    """video-slicer / VLMEvalKit: per frame time (ms), the first cue with start < t < end; repeats kept."""
    if not cues:
        return []
    starts = np.array([round(c.start * 1000) for c in cues])
    ends = np.array([round(c.end * 1000) for c in cues])
    out = []
    for t in frame_ms:
        hit = (starts < t) & (ends > t)
        if hit.any() and (text := cues[int(hit.argmax())].text.replace("\\N", " ")).strip():
            out.append(text)
    return out


def lmms_subtitles(path: Path | None, fps: float, total: int, frame_num: int, full: bool) -> str:
    """lmms-eval's subtitle block (videomme_doc_to_text_subtitle with load_subtitles/extract_subtitles)."""
    if path is None or not path.exists():
        return LMMS_NO_SUBTITLES
    text = path.read_text(encoding="utf-8")
    if full:  # gemini_api_flag "full subtitle": every line's font-wrapped text
        return "\n".join(m[0] for line in text.split("\n") if (m := LMMS_FONT.findall(line)))
    subs: dict[tuple[float, float], str] = {}
    for section in text.split("\n\n"):
        if section.strip():
            lines = section.split("\n")
            if len(lines) >= 3:
                try:
                    start, end = (_lmms_time(t) for t in lines[1].split(" --> ")[:2])
                except ValueError:
                    raise LvuError(f"{path}: lmms-eval cannot parse the time line {lines[1]!r}") from None
                subs[(start, end)] = " ".join(lines[2:])
    spans = [(int(s * fps), int(e * fps), t) for (s, e), t in subs.items()]
    grid = np.linspace(0, total - 1, total if frame_num == -1 else frame_num, dtype=int).tolist()
    hits = []  # (first grid frame inside the cue, cue index): the order lmms-eval inserts into its set
    for i, (a, b, _) in enumerate(spans):
        j = bisect.bisect_left(grid, a)
        if j < len(grid) and grid[j] < b:
            hits.append((grid[j], i))
    chosen = list({i for _, i in sorted(hits)})  # CPython's set order, as lmms-eval's list(set(...))
    return "\n".join(m[0] for i in chosen if (m := LMMS_FONT.findall(spans[i][2])))


def _lmms_time(value: str) -> float:
    h, m, s_ms = value.split(":")
    s, ms = s_ms.split(",")
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000


# ---- the benchmark -------------------------------------------------------------------------------


@register_benchmark("videomme")
class VideoMME(Benchmark):
    """Video-MME: 900 videos x 3 four-way MCQs (short/medium/long), frames only ("w/o subs")."""

    defaults = {"frames": 32, "subtitles": "none", "resize": None, "compat": "official", "scorer": None,
                "subtitle_grid": 32, "subtitle_dir": None, "response_key": "response"}
    expected_counts = {"test": EXPECTED["questions"]}
    reference = REFERENCE
    audio_modes = ("whole", "interleave")
    """The paper's "+Audios" (Table 5): the whole audio after the frames, before the text (`whole`)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        s = self.settings
        check_compat(s["compat"], COMPATS, self.name)
        if self.audio_mode != "none" and s["compat"] != "official":
            raise LvuError(f"{s['compat']} has no Video-MME audio setting — use --compat official with --audio")
        if s["subtitles"] not in SUBTITLE_MODES:
            raise LvuError(f"subtitles={s['subtitles']!r} is unknown for {self.name} — use one of "
                           f"{', '.join(SUBTITLE_MODES)} (Video-MME lists subtitles as a text block)")
        if s["scorer"] not in (None, "afd52cfe", "2024-06") or (s["scorer"] and s["compat"] != "official"):
            raise LvuError(f"scorer={s['scorer']!r}: use afd52cfe or 2024-06, with --compat official only")
        if s["compat"] == "vlmevalkit" and s["subtitles"] in ("all", "covering"):
            raise LvuError("VLMEvalKit takes one cue per sampled frame only — use --subtitles per-frame or none")
        grid = s["subtitle_grid"]
        if isinstance(grid, bool) or not isinstance(grid, int) or not (grid > 0 or grid == -1):
            raise LvuError(f"subtitle_grid={grid!r}: lmms-eval's frame_num is a frame count (32) or -1 (every frame)")
        frames = s["frames"]
        if isinstance(frames, bool) or not (isinstance(frames, int) and frames >= 0 or isinstance(frames, str)):
            raise LvuError(f"frames={frames!r} is not a frame setting — use a count (32), gemini or a plan like fps:1")
        if isinstance(frames, str) and frames != "gemini":
            parse_plan(frames)  # one-line LvuError for a bad plan string
        self._loaded: tuple[list[Sample], list[BadRecord]] | None = None
        self._planned: dict[str, VideoMeta] = {}
        """Video path -> the VideoMeta `plan` was given: the subtitle lines need its fps and frame count."""

    @property
    def compat(self) -> str:
        return self.settings["compat"]

    @property
    def lmms(self) -> bool:
        """compat=lmms-eval or one of its older releases (they differ in extraction only)."""
        return is_lmms(self.compat)

    @property
    def with_subtitles(self) -> bool:
        return self.settings["subtitles"] != "none"

    # ---- loading (videomme_release.py) -----------------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        if self._loaded is None:
            self._loaded = self._samples(*release_rows(self.settings.get("data"), benchmark=self.name))
        return self._loaded

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

    # ---- input plan and prompt -----------------------------------------------------------------

    def _video(self, sample: Sample) -> VideoMeta:
        """The VideoMeta `plan` was given for this sample's video (build_prompt runs after plan)."""
        video = self._planned.get(sample.video.path)
        if video is None:
            raise LvuError(f"{sample.id}: {self.name} builds its subtitle lines from the video's frame rate — "
                           "call plan(sample, video) before build_prompt")
        return video

    def _times(self, sample: Sample, video: VideoMeta) -> list[float]:
        frames, duration = self.settings["frames"], video.duration
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
        if self.lmms:
            indices = Lmms(n=frames).frame_indices(total, fps)
        elif self.compat == "vlmevalkit":
            indices = Vlmevalkit(n=frames).frame_indices(total, fps)
        else:
            indices = slicer_indices(total, frames)
        return [i / fps for i in indices]

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        self._planned[sample.video.path] = video
        mode = self.settings["subtitles"]
        if self.lmms or mode == "none":
            engine_mode = "none"  # lmms-eval re-reads the .srt itself (build_prompt)
        else:
            engine_mode = "covering" if mode == "covering" else "all"  # per-frame: selected in build_prompt
        return InputPlan(timestamps=self._times(sample, video), subtitle_mode=engine_mode,
                         resize=self.settings["resize"])

    def subtitle_block(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> str:
        """The subtitle lines of the prompt (joined by newlines), per the mode and compat."""
        mode = self.settings["subtitles"]
        if self.lmms:
            fps, total = self._video(sample).rate_and_count()
            path = Path(sample.subtitles.path) if sample.subtitles else None
            return lmms_subtitles(path, fps, total, self.settings["subtitle_grid"], full=mode == "all")
        if mode in ("all", "covering"):
            return "\n".join(c.text for c in cues)
        if not cues or not frames:
            return ""
        fps, _ = self._video(sample).rate_and_count()
        ms = [round(round(f.timestamp * fps) * (1000 / fps)) for f in frames]  # pysubs2.make_time(fps, frames)
        return "\n".join(per_frame_lines(cues, ms))

    def prompt_texts(self, sample: Sample, block: str | None) -> list[str]:
        """The text parts after the frames, exactly; `block` = subtitle lines, None without subtitles."""
        question = sample.question + "\n" + "\n".join(sample.extra.get("option_lines")
                                                      or [f"{LETTERS[i]}. {o}" for i, o in enumerate(sample.options)])
        if self.lmms:
            if block is None:
                return [f"{LMMS_INSTRUCTION}\n{question}\n{LMMS_POST_PROMPT}"]
            return [f"{LMMS_SUBTITLE_HEADER}{block}\n{LMMS_INSTRUCTION}\n{question}\n{ANSWER_PROMPT}"]
        if self.compat == "vlmevalkit":
            head = VLMEVALKIT_NOSUB if block is None else VLMEVALKIT_SUB.format(block)
            return [head, f"Question: {question}\nAnswer: "]
        body = f"{INSTRUCTION}\n{question}\n{ANSWER_PROMPT}"
        return [body if block is None else f"{SUBTITLE_HEADER}\n{block}\n{body}"]

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        block = self.subtitle_block(sample, frames, cues) if self.with_subtitles else None
        return Prompt(parts=[*frames, *(Text(text=t) for t in self.prompt_texts(sample, block))],
                      choices=list(sample.options), question=sample.question,
                      max_tokens=16 if self.lmms else 64, temperature=0.0)

    # ---- extraction, scoring, aggregation ------------------------------------------------------

    def scorer(self, sample: Sample) -> str:
        if self.compat != "official":
            return self.compat
        return self.settings["scorer"] or sample.extra.get("scorer") or "afd52cfe"

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if self.lmms:  # its evaluator strips reasoning blocks, then the task's extractor reads A-D
            text = strip_reasoning_tags(response.text or "", self.compat)
            modern = self.compat == LMMS_EVAL
            letter = lmms_extract_mcq(text, "ABCD") if modern else extract_legacy(text)
            method = "extract_mcq_answer" if modern else "extract_characters_regex@2024-06"
            return Prediction(value=LETTERS.index(letter) if letter else None, method=f"{self.compat} {method}")
        version = self.scorer(sample)
        letter = extract_characters_regex(response.text or "", PREFIXES[version])
        return Prediction(value=LETTERS.index(letter) if letter else None, method=f"extract_characters_regex@{version}")

    def score(self, sample: Sample, prediction: Prediction) -> Score:
        if sample.extra.get("missing"):
            return Score(value=0.0, counted=False, explanation='video marked "missing": left out (--skip_missing)')
        if sample.answer is None:
            return Score(value=0.0, counted=False, explanation="no answer in the data: left out")
        answer = LETTERS[sample.answer]  # type: ignore[index]
        if prediction.value is None:
            if self.compat == "official":
                return Score(value=0.0, counted=False, explanation=f"no A-D letter extracted: not answered, left out of "
                             f"the denominator (official answered-only accuracy); answer {answer}")
            return Score(value=0.0, correct=False, explanation=f"no A-D letter extracted: counted wrong ({self.compat} "
                         f"divides by all questions); answer {answer}")
        ok = prediction.value == sample.answer
        return Score(value=float(ok), correct=ok, explanation=f"extracted {LETTERS[prediction.value]}, answer {answer}")

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
        if self.compat == "official" and not self.settings["scorer"]:
            for s in samples:
                s.extra["scorer"] = "2024-06" if old else "afd52cfe"
        return [(s, str(responses.get(s.id) or "")) for s in samples]


@register_benchmark("videomme-sub")
class VideoMMESub(VideoMME):
    """Video-MME with subtitles ("w/ subs"): the cues at the sampled frames listed before the question."""

    defaults = {**VideoMME.defaults, "subtitles": "per-frame"}


@register_benchmark("videomme-audio")
class VideoMMEAudio(VideoMME):
    """Video-MME with audio ("+Audios", Table 5): frames, then the whole audio track, then the question."""

    defaults = {**VideoMME.defaults, "audio": "whole"}
