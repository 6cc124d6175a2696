"""LongVideoBench's harnesses as objects (lvu.benchmarks.harness): the official protocol
(`LongVideoBenchHarness`), lmms-eval at three release ranges (`LongVideoBenchLmmsEval`,
`LongVideoBenchLmmsEval071`, `LongVideoBenchLmmsEval06`) and VLMEvalKit at two commits
(`LongVideoBenchVlmevalkit` = e8e78f05, also as `LongVideoBenchVlmevalkitE8e78f05`, and
`LongVideoBenchVlmevalkit296425e2`), each overriding only where its code differs from the one it extends:
the default frame count, the frame plan, which settings it accepts, the cue placement, the question
text, the token budget and the letter extraction. `HARNESSES` maps each `compat` value to its class;
longvideobench.py picks one per benchmark object and delegates to it. The pure protocol functions
the harnesses share (the official parser, subtitle reading and interleaving) live here too
(longvideobench.py re-exports them), so this module never imports longvideobench.py.
"""

from __future__ import annotations

import bisect
import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from lvu.benchmarks.base import Benchmark
from lvu.benchmarks.harness import Harness
from lvu.errors import SubtitleError
from lvu.media.sampling import Lmms, Lvb, Vlmevalkit
from lvu.scoring.lmms_eval import LMMS_EVAL, LMMS_EVAL_0_6, LMMS_EVAL_0_7_1, RELEASES, task_reply
from lvu.scoring.vlmevalkit import VLMEVALKIT, VLMEVALKIT_296425E2, VLMEVALKIT_E8E78F05, commit_of, reread
from lvu.types import LETTERS, Frame, Prediction, Response, Sample, Subtitle, Text

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
FPS_WORD = re.compile(r"(\d+(?:\.\d+)?)fps")
"""VLMEvalKit's fps presets as a `frames` value: "1fps", "0.5fps"."""


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


def sample_cues(sample: Sample) -> list[Subtitle]:
    """The sample's subtitle file as the official loader reads it (no file: no cues)."""
    sub = sample.subtitles
    if sub is None:
        return []
    return official_cues(sub.path, sub.offset, float(sample.video.duration or 0.0))


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


def options_block(sample: Sample) -> str:
    """'A. c0\\nB. c1...': the official `". ".join([letter, candidate])` lines."""
    return "\n".join(". ".join([LETTERS[i], c]) for i, c in enumerate(sample.options))


# ---- the harnesses ---------------------------------------------------------------------------------


class LongVideoBenchHarness(Harness[Benchmark]):
    """The official protocol: the authors' loader (lvb:N frames, cues interleaved by time, the
    "Question: " text) and the author's parser with its random draw on no letter."""

    compat = "official"
    peer = "the official protocol (longvideobench_dataset.py at fc3c553; the author's lmms-eval parser, PR #117)"
    splits: ClassVar[tuple[str, ...]] = ("val", "test")
    """The splits it runs."""
    split_refusal: ClassVar[str] = ""
    """The error for a split outside `splits`."""
    subtitles_only: ClassVar[bool] = True
    """Whether it has the subtitles-only input (subtitles=all, official max_num_frames=-1)."""
    fps_presets: ClassVar[bool] = False
    """Whether `frames` may be an fps preset ("1fps"): VLMEvalKit's, not the loader's min(N, duration)."""
    flag_bug: ClassVar[bool] = False
    """Whether it can reproduce VLMEvalKit's inverted `use_subtitle` (vlmevalkit_flag_bug)."""
    flag_bug_refusal: ClassVar[str] = "vlmevalkit_flag_bug reproduces a VLMEvalKit bug — use it with --compat vlmevalkit"
    """The error for vlmevalkit_flag_bug=true where `flag_bug` is False."""
    max_tokens: ClassVar[int] = 64

    @classmethod
    def default_frames(cls, subtitles: str, paper: int) -> int:
        """The frame count when none is given: the benchmark's (the paper's) default."""
        return paper

    @property
    def with_subtitles(self) -> bool:
        """Whether cues are interleaved with the frames."""
        return self.settings["subtitles"] == "interleave"

    def frame_numbers(self, sample: Sample, frames: Any, total: int, fps: float) -> list[int]:
        """The frame numbers of `frames` (> 0) from a video of `total` frames at `fps`."""
        return Lvb(n=frames).frame_indices(total, fps, duration=sample.video.duration)

    def question_text(self, sample: Sample) -> str:
        """The text after the frames / cues, byte for byte."""
        return f"Question: {sample.question}\n{options_block(sample)}\n{INSTRUCTION}"

    def cues(self, sample: Sample) -> list[Subtitle]:
        """The cues as this harness places them."""
        return sample_cues(sample)

    def parts(self, sample: Sample, frames: list[Frame], text: str) -> list[Any]:
        """The prompt's parts with frames: cues interleaved at the frames' real times, then the text."""
        items = [(f.timestamp, f) for f in frames]
        placed = interleave_official(items, self.cues(sample)) if self.with_subtitles else [f for _, f in items]
        return [*placed, Text(text=text)]

    def reply(self, response: Response) -> str:
        """The reply as the parser sees it."""
        return response.text

    def draw(self, sample: Sample, response: Response) -> str:
        """The letter drawn for a reply without one: lvu's documented per-question draw."""
        return random_letter(self.settings["seed"], sample.id, len(sample.options))

    def extract(self, sample: Sample, response: Response) -> Prediction:
        letter = parse_official(self.reply(response))
        if letter is None:
            return Prediction(value=LETTERS.index(self.draw(sample, response)), method="random")
        return Prediction(value=LETTERS.index(letter), method="rule")


class LongVideoBenchLmmsEval(LongVideoBenchHarness):
    """lmms-eval's `longvideobench_{val,test}_{i,v}` (by the benchmark's author): `_i` puts "<image>"
    slots and cues on its own timestamp grid into one text after the frames (16 frames); `_v` reads
    frames with the model's reader (lmms:N, 32); no "Question: ", a trailing newline, 32 tokens, the
    reply's reasoning blocks cut before the official parser; no subtitles-only task."""

    compat = LMMS_EVAL
    peer = f"lmms-eval {RELEASES[LMMS_EVAL]} (lmms_eval/tasks/longvideobench)"
    subtitles_only = False
    max_tokens = LMMS_MAX_TOKENS

    @classmethod
    def default_frames(cls, subtitles: str, paper: int) -> int:
        return LMMS_FRAMES.get(subtitles, 0)  # the YAMLs' max_num_frames (_i) / the model reader's default (_v)

    def frame_numbers(self, sample: Sample, frames: Any, total: int, fps: float) -> list[int]:
        if not self.with_subtitles:  # `_v`: the model's reader
            return Lmms(n=frames).frame_indices(total, fps)
        return super().frame_numbers(sample, frames, total, fps)

    def question_text(self, sample: Sample) -> str:
        return f"{sample.question}\n{options_block(sample)}\n{INSTRUCTION}\n"

    def parts(self, sample: Sample, frames: list[Frame], text: str) -> list[Any]:
        """Frames first, then one text; `_i` prefixes it with the "<image>" / cue lines placed on
        `compute_frame_timestamps` (duration / N * i, or 0..int(duration)-1), not the real frame times."""
        if self.with_subtitles:
            d, n = float(sample.video.duration or 0.0), self.settings["frames"]
            grid = [d / n * i for i in range(n)] if d > n else [float(i) for i in range(int(d) if n else 0)]
            items = interleave_official([(t, IMAGE_TOKEN) for t in grid], self.cues(sample))
            prefix = "\n".join(x if isinstance(x, str) else x.text for x in items)
            text = f"{prefix}\n{text}"
        return [*frames, Text(text=text)]

    def reply(self, response: Response) -> str:
        return task_reply(response, self.compat)  # the evaluator's default --reasoning_tags (0.7.0 on)

    def draw(self, sample: Sample, response: Response) -> str:
        """lmms-eval's own random pick when its log holds it (`lvb_acc.parsed_pred` of a reply
        without a letter), else lvu's per-question draw."""
        pick = response.logged.pick if response.logged is not None else None
        if pick is not None and pick in LETTERS[:len(sample.options)]:
            return pick
        return super().draw(sample, response)


class LongVideoBenchLmmsEval071(LongVideoBenchLmmsEval):
    """lmms-eval 0.7.0-0.7.1: the same task code as 0.7.3."""

    compat = LMMS_EVAL_0_7_1
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_7_1]} (lmms_eval/tasks/longvideobench)"


class LongVideoBenchLmmsEval06(LongVideoBenchLmmsEval071):
    """lmms-eval 0.6.0-0.6.1: the same task code, and the reply reaches the parser uncut."""

    compat = LMMS_EVAL_0_6
    peer = f"lmms-eval {RELEASES[LMMS_EVAL_0_6]} (lmms_eval/tasks/longvideobench)"



class LongVideoBenchVlmevalkit(LongVideoBenchHarness):
    """VLMEvalKit's LongVideoBench at e8e78f05: val only; nframe frames (8) or fps presets; each placed
    cue text + "\\n"; no "Question: "; `extract_characters_regex` and no letter = 'Z' (wrong), no
    random draw; `vlmevalkit_flag_bug` inverts `use_subtitle` as #573 .. #1588 did.

    The reply is read as its `evaluate()` reads it: from the prediction sheet its inference wrote,
    through pandas' default `na_values` (`reread`), so `N/A`, `None`, "" ... are NaN there;
    `str(nan)` is "nan", no letter, and `extract_option` finds no option columns in the sheet: 'Z'
    (wrong, with or without its judge). Its API failure message is scored like any reply ("API"
    holds an A): `evaluate()` drops it only from its judge cache, never from the scores."""

    compat = VLMEVALKIT
    peer = f"VLMEvalKit @{commit_of(VLMEVALKIT)} (vlmeval/dataset/longvideobench.py)"
    splits = ("val",)
    split_refusal = "VLMEvalKit runs LongVideoBench val only (lvb_val.json) — use split=val or --compat official"
    subtitles_only = False
    fps_presets = True
    flag_bug = True

    @classmethod
    def default_frames(cls, subtitles: str, paper: int) -> int:
        return VLMEVALKIT_FRAMES  # LongVideoBench_8frame

    @property
    def with_subtitles(self) -> bool:
        """The request, inverted under the flag bug (subtitles exactly when NOT asked for)."""
        return super().with_subtitles != bool(self.settings["vlmevalkit_flag_bug"])

    def frame_numbers(self, sample: Sample, frames: Any, total: int, fps: float) -> list[int]:
        preset = FPS_WORD.fullmatch(frames) if isinstance(frames, str) else None
        if preset:  # int(i * fps / F) for i < int(total / fps * F)
            rate = float(preset.group(1))
            return [int(i * fps / rate) for i in range(int(total / fps * rate))]
        return Vlmevalkit(n=frames).frame_indices(total, fps)

    def question_text(self, sample: Sample) -> str:
        return f"{sample.question}\n{options_block(sample)}\n{INSTRUCTION}"

    def cues(self, sample: Sample) -> list[Subtitle]:
        return [c.model_copy(update={"text": c.text + "\n"}) for c in sample_cues(sample)]

    def extract(self, sample: Sample, response: Response) -> Prediction:
        text = reread(response.text)  # None: NaN after the sheet round trip -> no letter -> 'Z'
        letter = None if text is None else parse_vlmevalkit(text)
        return Prediction(value=None if letter is None else LETTERS.index(letter), method="vlmevalkit")


class LongVideoBenchVlmevalkitE8e78f05(LongVideoBenchVlmevalkit):
    """`vlmevalkit@e8e78f05`: the default `vlmevalkit`, named by its commit."""

    compat = VLMEVALKIT_E8E78F05
    peer = f"VLMEvalKit @{commit_of(VLMEVALKIT_E8E78F05)} (vlmeval/dataset/longvideobench.py)"


class LongVideoBenchVlmevalkit296425e2(LongVideoBenchVlmevalkit):
    """`vlmevalkit@296425e2` (2024-12-09): the same frames (its run.py's --nframe 8 / --fps), prompt
    text, extraction and scoring as e8e78f05, but its `build_prompt` tests `if not self.use_subtitle`:
    the cues appear exactly when they were NOT asked for (--use-subtitle). The flag bug is that
    commit's code, always on, so `vlmevalkit_flag_bug` is refused rather than read."""

    compat = VLMEVALKIT_296425E2
    peer = f"VLMEvalKit @{commit_of(VLMEVALKIT_296425E2)} (vlmeval/dataset/longvideobench.py)"
    flag_bug = False
    flag_bug_refusal = ("vlmevalkit@296425e2 inverts use_subtitle in its own code (subtitles=none gets the cues) — "
                        "drop vlmevalkit_flag_bug")

    @property
    def with_subtitles(self) -> bool:
        """Subtitles exactly when NOT asked for (`if not self.use_subtitle`)."""
        return self.settings["subtitles"] != "interleave"


HARNESSES: dict[str, type[LongVideoBenchHarness]] = {
    h.compat: h for h in (LongVideoBenchHarness, LongVideoBenchLmmsEval, LongVideoBenchLmmsEval071,
                          LongVideoBenchLmmsEval06, LongVideoBenchVlmevalkit, LongVideoBenchVlmevalkitE8e78f05,
                          LongVideoBenchVlmevalkit296425e2)
}
"""compat value -> its harness, in the order the compat error lists them."""
