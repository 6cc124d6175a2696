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
"""

from __future__ import annotations

import bisect
import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown, register_benchmark
from lvu.benchmarks.longvideobench_ref import CATEGORIES, DURATIONS, ERRATA, REFERENCE
from lvu.benchmarks.longvideobench_release import (  # noqa: F401 — HF_*: still importable from here
    HF_DATASET, HF_REVISION, SPLIT_FILES, load_release, read_prediction_file, record_to_sample, split_of,
    write_submission_file,
)
from lvu.errors import LvuError, SubtitleError
from lvu.media.sampling import Lmms, Lvb, Vlmevalkit
from lvu.scoring.choice import mean_pct as _pct
from lvu.scoring.lmms_eval import MODES as LMMS_MODES, check_compat, is_lmms, strip_reasoning_tags
from lvu.types import (LETTERS, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score,
                       Subtitle, Text, VideoMeta)

__all__ = ["ERRATA", "REFERENCE", "LongVideoBench", "interleave_official", "official_cues", "parse_official",
           "parse_vlmevalkit", "record_to_sample"]

EXPECTED_QUESTIONS = {"val": 1337, "test": 5341}
EXPECTED_VIDEOS = {"val": 752, "test": 3011}
LEVELS = ("L1-Perception", "L2-Relation")
COMPATS = ("official", *LMMS_MODES, "vlmevalkit")
SUBTITLE_MODES = ("interleave", "none", "all")
INSTRUCTION = "Answer with the option's letter from the given choices directly."
ANSWER_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                   "The best option is", "The correct option is", "Best answer:", "Best option:")
"""Deleted before the letter search (lmms-eval's parse_multi_choice_response, by the LVB author)."""
VLMEVALKIT_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                       "The best option isThe correct option is", "Best answer:Best option:", "Answer:", "Option:")
"""VLMEvalKit's extract_characters_regex list, with its two missing commas (glued entries)."""
IMAGE_TOKEN = "<image>"
LMMS_FRAMES = {"interleave": 16, "none": 32}
LMMS_MAX_TOKENS = 32
VLMEVALKIT_FRAMES = 8
_FPS_WORD = re.compile(r"(\d+(?:\.\d+)?)fps")


# ---- extraction ----------------------------------------------------------------------------------


def parse_official(text: str) -> str | None:
    """The official letter parser (lmms-eval `parse_multi_choice_response`): the first A-E after the
    answer prefixes are deleted, or None (the caller then draws a random option)."""
    s = text.strip()
    for prefix in ANSWER_PREFIXES:
        s = s.replace(prefix, "")
    m = re.search(r"[ABCDE]", s)  # its "> 10 words and no letter" test returns the same thing
    return m[0] if m else None


def parse_vlmevalkit(text: str) -> str | None:
    """VLMEvalKit's `extract_characters_regex` (glued prefixes included); None = its '' (wrong)."""
    s = str(text).strip()
    for prefix in VLMEVALKIT_PREFIXES:
        s = s.replace(prefix, "")
    m = re.search(r"[ABCDE]", s)
    return m[0] if m else None


def random_letter(seed: int, sample_id: str, n_options: int) -> str:
    """The parse-failure draw: `random.choice` over the option letters, seeded by (seed, id) so a
    sample always draws the same letter (lmms-eval draws from its global, run-order-dependent stream)."""
    return random.Random(f"{seed}:{sample_id}").choice(LETTERS[:n_options])


# ---- subtitles, as the official loader reads them ------------------------------------------------


@lru_cache(maxsize=64)
def _subtitle_items(path: str) -> tuple[Any, ...]:
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SubtitleError(f"{path}: subtitle file not found — unpack subtitles.tar next to the "
                            "annotation file or pass --set subtitle_dir=DIR") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SubtitleError(f"{path}: not a LongVideoBench subtitle JSON ({e}) — re-extract subtitles.tar") from None
    if not isinstance(items, list):
        raise SubtitleError(f"{path}: expected a JSON list of subtitle items — re-extract subtitles.tar")
    return tuple(items)


def _hms(value: Any) -> float:
    h, m, s = str(value).split(":")  # the official timestamp_to_seconds: exactly H:M:S
    return int(h) * 3600 + int(m) * 60 + float(s)


def official_cues(path: str | Path, offset: float, duration: float) -> list[Subtitle]:
    """Every cue of an LVB subtitle JSON, in file order, as `insert_subtitles_into_frames` sees it:
    verbatim text; Whisper items {"timestamp": [s, e], "text"} with a non-float e replaced by
    `duration`; {"start": "H:M:S.f", "end", "line"} items; then both times minus `offset`."""
    cues = []
    for k, item in enumerate(_subtitle_items(str(path))):
        try:
            if "timestamp" in item:
                start, end = item["timestamp"]
                if not isinstance(end, float):
                    end = duration
                text = item["text"]
            else:
                start, end, text = _hms(item["start"]), _hms(item["end"]), item["line"]
            cues.append(Subtitle(text="" if text is None else str(text), start=float(start) - offset,
                                 end=float(end) - offset))
        except (KeyError, TypeError, ValueError) as e:
            raise SubtitleError(f"{path}: item {k} is not a subtitle ({type(e).__name__}: {e}) — "
                                "expected timestamp/text or start/end/line") from None
    return cues


def _covers(cue: Subtitle, times: list[float]) -> bool:
    start, end = cue.start, cue.end
    if end - start < 1:
        mid = (start + end) / 2
        start, end = mid - 0.5, mid + 0.5
    i = bisect.bisect_right(times, start)
    return i < len(times) and times[i] < end


def interleave_official(slots: list[tuple[float, Any]], cues: list[Subtitle]) -> list[Any]:
    """The official single pass: for each cue in order, the not-yet-placed slots (frames, or
    lmms-eval's "<image>") with time <= its mid-point, then the cue if it covers a frame; leftovers last."""
    times = sorted(t for t, _ in slots)
    out: list[Any] = []
    i = 0
    for cue in cues:
        mid = (cue.start + cue.end) / 2
        while i < len(slots) and slots[i][0] <= mid:
            out.append(slots[i][1])
            i += 1
        if _covers(cue, times):
            out.append(cue)
    out.extend(item for _, item in slots[i:])
    return out


# ---- the benchmark --------------------------------------------------------------------------------


@register_benchmark("longvideobench")
class LongVideoBench(Benchmark):
    """LongVideoBench: 4-5-way MCQ on interleaved frames + subtitles (val 1,337 / test 5,341)."""

    defaults = {"split": "val", "frames": 256, "subtitles": "interleave", "resize": None, "compat": "official",
                "seed": 0, "subtitle_dir": None, "vlmevalkit_flag_bug": False}
    expected_counts = EXPECTED_QUESTIONS
    reference = REFERENCE

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        given = {k for k, v in settings.items() if v is not None}
        s = self.settings
        check_compat(s["compat"], COMPATS, self.name)
        if s["split"] == "validation":
            s["split"] = "val"
        data = s.get("data")
        if data and not str(data).startswith("hf:") and Path(data).is_file() and (inferred := split_of(Path(data))):
            if "split" in given and s["split"] != inferred:
                raise LvuError(f"{data} holds the {inferred} split but split={s['split']!r} — drop one of them")
            s["split"] = inferred
        if s["split"] not in SPLIT_FILES:
            raise LvuError(f"split={s['split']!r} is unknown — use val or test")
        if s["subtitles"] not in SUBTITLE_MODES:
            raise LvuError(f"subtitles={s['subtitles']!r} is not a LongVideoBench input — use interleave, none or all")
        if is_lmms(s["compat"]) and "frames" not in given:
            s["frames"] = LMMS_FRAMES.get(s["subtitles"], 0)
        if s["compat"] == "vlmevalkit" and "frames" not in given:
            s["frames"] = VLMEVALKIT_FRAMES
        if s["subtitles"] == "all" and "frames" not in given:
            s["frames"] = 0
        frames = s["frames"]
        fps_word = isinstance(frames, str) and _FPS_WORD.fullmatch(frames)
        if not (fps_word or (isinstance(frames, int) and not isinstance(frames, bool) and frames >= 0)):
            raise LvuError(f"frames={frames!r} is not a frame count — use max_frames such as 256 (0 = no frames)")
        if fps_word and s["compat"] != "vlmevalkit":
            raise LvuError(f"frames={frames!r}: fps sampling is VLMEvalKit's preset — LongVideoBench samples "
                           "min(N, duration) frames; use a count, or --compat vlmevalkit")
        if s["subtitles"] == "all" and frames != 0:
            raise LvuError("subtitles=all is the official subtitles-only input (max_num_frames=-1) — use frames=0")
        if s["compat"] != "official" and s["subtitles"] == "all":
            raise LvuError(f"{s['compat']} has no LongVideoBench subtitles-only task — use --compat official")
        if s["compat"] == "vlmevalkit" and s["split"] != "val":
            raise LvuError("VLMEvalKit runs LongVideoBench val only (lvb_val.json) — use split=val or --compat official")
        if not isinstance(s["vlmevalkit_flag_bug"], bool):
            raise LvuError(f"vlmevalkit_flag_bug={s['vlmevalkit_flag_bug']!r} — use true or false")
        if s["vlmevalkit_flag_bug"] and s["compat"] != "vlmevalkit":
            raise LvuError("vlmevalkit_flag_bug reproduces a VLMEvalKit bug — use it with --compat vlmevalkit")
        self._loaded: tuple[list[Sample], list[BadRecord]] | None = None

    @property
    def compat(self) -> str:
        return self.settings["compat"]

    @property
    def lmms(self) -> bool:
        """compat=lmms-eval or one of its older releases."""
        return is_lmms(self.compat)

    @property
    def with_subtitles(self) -> bool:
        """Whether cues are interleaved; VLMEvalKit's flag bug inverts the request."""
        wanted = self.settings["subtitles"] == "interleave"
        return wanted != bool(self.settings["vlmevalkit_flag_bug"])

    # ---- loading (longvideobench_release.py) --------------------------------------------------

    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        if self._loaded is None:
            self._loaded = load_release(self.settings.get("data"), benchmark=self.name, split=self.settings["split"],
                                        video_dir=self.settings.get("video_dir"),
                                        subtitle_dir=self.settings.get("subtitle_dir"))
        return self._loaded

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
        """(frame numbers, fps) of this sample's frames under the active protocol."""
        frames = self.settings["frames"]
        if frames == 0:
            return [], 0.0
        fps, total = video.rate_and_count()
        if self.compat == "vlmevalkit":
            if isinstance(frames, str):  # fps preset: int(i * fps / F) for i < int(total / fps * F)
                rate = float(_FPS_WORD.fullmatch(frames).group(1))  # type: ignore[union-attr]
                return [int(i * fps / rate) for i in range(int(total / fps * rate))], fps
            return Vlmevalkit(n=frames).frame_indices(total, fps), fps
        if self.lmms and not self.with_subtitles:  # `_v`: the model's reader
            return Lmms(n=frames).frame_indices(total, fps), fps
        return Lvb(n=frames).frame_indices(total, fps, duration=sample.video.duration), fps

    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        indices, fps = self.frame_indices(sample, video)
        # Subtitles are read by this module (official_cues), so the engine's generic cue path is off.
        return InputPlan(timestamps=[i / fps for i in indices], subtitle_mode="none", resize=self.settings["resize"])

    def question_text(self, sample: Sample) -> str:
        """The text after the frames / cues, byte for byte as the active protocol writes it."""
        options = "\n".join(". ".join([LETTERS[i], c]) for i, c in enumerate(sample.options))
        if self.compat == "official":
            return f"Question: {sample.question}\n{options}\n{INSTRUCTION}"
        if self.lmms:
            return f"{sample.question}\n{options}\n{INSTRUCTION}\n"
        return f"{sample.question}\n{options}\n{INSTRUCTION}"

    def cues(self, sample: Sample) -> list[Subtitle]:
        sub = sample.subtitles
        if sub is None:
            return []
        return official_cues(sub.path, sub.offset, float(sample.video.duration or 0.0))

    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        """`cues` from the engine are not used: LongVideoBench's cue reading and placement are part
        of its protocol (see the module docstring) and are done here from the subtitle file."""
        text = self.question_text(sample)
        parts: list[Any]
        if self.settings["subtitles"] == "all":  # subtitles only: every cue, file order, no frames
            parts = [*self.cues(sample), Text(text=text)]
        elif self.lmms:
            if self.with_subtitles:  # `_i`: placeholders + cues on lmms-eval's own timestamp grid
                d, n = float(sample.video.duration or 0.0), self.settings["frames"]
                grid = [d / n * i for i in range(n)] if d > n else [float(i) for i in range(int(d) if n else 0)]
                items = interleave_official([(t, IMAGE_TOKEN) for t in grid], self.cues(sample))
                prefix = "\n".join(x if isinstance(x, str) else x.text for x in items)
                text = f"{prefix}\n{text}"
            parts = [*frames, Text(text=text)]
        else:
            items = [(f.timestamp, f) for f in frames]
            placed = interleave_official(items, self.cues(sample)) if self.with_subtitles else [f for _, f in items]
            if self.compat == "vlmevalkit":
                placed = [p.model_copy(update={"text": p.text + "\n"}) if isinstance(p, Subtitle) else p for p in placed]
            parts = [*placed, Text(text=text)]
        return Prompt(parts=parts, choices=list(sample.options), question=sample.question, temperature=0.0,
                      max_tokens=LMMS_MAX_TOKENS if self.lmms else 64)

    # ---- extraction, scoring, aggregation --------------------------------------------------------

    def extract(self, sample: Sample, response: Response) -> Prediction:
        if self.compat == "vlmevalkit":
            letter = parse_vlmevalkit(response.text)
            return Prediction(value=None if letter is None else LETTERS.index(letter), method="vlmevalkit")
        text = strip_reasoning_tags(response.text, self.compat) if self.lmms else response.text
        letter = parse_official(text)
        if letter is None:
            pick = random_letter(self.settings["seed"], sample.id, len(sample.options))
            return Prediction(value=LETTERS.index(pick), method="random")
        return Prediction(value=LETTERS.index(letter), method="rule")

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
