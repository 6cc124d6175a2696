"""Video-MME's harnesses: how the official protocol, lmms-eval (at each release) and VLMEvalKit (at
e8e78f05) choose frames and subtitle lines, word the prompt, read the letter and count an
unanswered question — and the texts and functions each copies verbatim.

`VideoMMEHarness` is the official protocol; `VideoMMEPeerHarness` what every peer shares (no
audio, no `scorer`, an empty extraction counted wrong); `VideoMMELmmsEval` (lmms-eval, 0.7.2-0.7.3),
`VideoMMELmmsEval071` (lmms-eval@0.7.1), `VideoMMELmmsEval06` (lmms-eval@0.6),
`VideoMMEVlmevalkit` (vlmevalkit) and `VideoMMEVlmevalkitE8e78f05` (vlmevalkit@e8e78f05, the same
code pinned by name) override only where they differ. `HARNESSES` maps each `compat`
value to its class; videomme.py picks one per benchmark object. This module does not import
videomme.py (which imports it): a harness sees its benchmark through `VideoMMEBench`.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from lvu.benchmarks.harness import Harness
from lvu.errors import LvuError
from lvu.media.sampling import Lmms, Vlmevalkit
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import LEGACY_PREFIXES, extract_legacy, first_letter_after_prefixes, task_reply
from lvu.scoring.vlmevalkit import VLMEVALKIT, VLMEVALKIT_296425E2, VLMEVALKIT_E8E78F05, commit_of, reread
from lvu.types import LETTERS, Frame, Prediction, Response, Sample, Score, Subtitle, VideoMeta

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


EngineSubtitleMode = Literal["none", "covering", "all"]
"""The cues a harness asks the engine for (InputPlan.subtitle_mode)."""


def question_text(sample: Sample) -> str:
    """The question, then the release's own option lines ("A. ..."), as every harness words them."""
    lines = sample.extra.get("option_lines") or [f"{LETTERS[i]}. {o}" for i, o in enumerate(sample.options)]
    return sample.question + "\n" + "\n".join(lines)


class VideoMMEBench(Protocol):
    """What a harness reads of its benchmark (videomme.VideoMME), named without importing it."""

    settings: dict[str, Any]

    @property
    def audio_mode(self) -> str: ...

    def planned_video(self, sample: Sample) -> VideoMeta: ...


# ---- the harnesses -------------------------------------------------------------------------------


class VideoMMEHarness(Harness[VideoMMEBench]):
    """The official protocol: video-slicer's frames and per-frame subtitles, the README's prompt,
    parse_answer's extractor, accuracy over answered questions."""

    compat = "official"
    peer = "the official protocol (MME-Benchmarks/Video-MME README, video-slicer, parse_answer@afd52cfe)"
    max_tokens: ClassVar[int] = 64
    """The reply's token budget (the paper gives none; 64 fits a letter with some words)."""

    def frame_indices(self, total: int, fps: float, n: int) -> list[int]:
        """The frames a count `n` means: video-slicer's segment midpoints."""
        return slicer_indices(total, n)

    def engine_subtitle_mode(self, mode: str) -> EngineSubtitleMode:
        """The cues the engine hands `build_prompt` for the `subtitles` setting (per-frame: all of
        them, the lines are chosen at the frames in `subtitle_block`)."""
        if mode == "none":
            return "none"
        return "covering" if mode == "covering" else "all"

    def subtitle_block(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> str:
        """The subtitle lines of the prompt, joined by newlines."""
        if self.settings["subtitles"] in ("all", "covering"):
            return "\n".join(c.text for c in cues)
        if not cues or not frames:
            return ""
        fps, _ = self.bench.planned_video(sample).rate_and_count()
        ms = [round(round(f.timestamp * fps) * (1000 / fps)) for f in frames]  # pysubs2.make_time(fps, frames)
        return "\n".join(per_frame_lines(cues, ms))

    def prompt_texts(self, sample: Sample, block: str | None) -> list[str]:
        """The text parts after the frames; `block` = subtitle lines, None without subtitles."""
        body = f"{INSTRUCTION}\n{question_text(sample)}\n{ANSWER_PROMPT}"
        return [body if block is None else f"{SUBTITLE_HEADER}\n{block}\n{body}"]

    def scorer(self, sample: Sample) -> str:
        """The extractor version: the `scorer` setting, else the one the results file implies."""
        return self.settings["scorer"] or sample.extra.get("scorer") or "afd52cfe"

    def extract(self, sample: Sample, response: Response) -> Prediction:
        version = self.scorer(sample)
        letter = extract_characters_regex(response.text or "", PREFIXES[version])
        return Prediction(value=LETTERS.index(letter) if letter else None, method=f"extract_characters_regex@{version}")

    def unanswered(self, answer: str) -> Score:
        """The score of a reply with no A-D letter: left out of the official denominator."""
        return Score(value=0.0, counted=False, explanation=f"no A-D letter extracted: not answered, left out of "
                     f"the denominator (official answered-only accuracy); answer {answer}")

    def mark_scorers(self, samples: list[Sample], old_keys: bool) -> None:
        """Samples read from an official results file: the 2024-06 scorer for the old key schema,
        unless the `scorer` setting names one."""
        if not self.settings["scorer"]:
            for s in samples:
                s.extra["scorer"] = "2024-06" if old_keys else "afd52cfe"


class VideoMMEPeerHarness(VideoMMEHarness):
    """What every peer harness shares: no audio setting, no `scorer` choice, an empty extraction
    counted wrong (the denominator is all questions)."""

    def __init__(self, bench: VideoMMEBench) -> None:
        super().__init__(bench)
        if bench.audio_mode != "none":
            raise LvuError(f"{self.compat} has no Video-MME audio setting — use --compat official with --audio")
        if self.settings["scorer"]:
            raise LvuError(f"scorer={self.settings['scorer']!r}: use afd52cfe or 2024-06, with --compat official only")

    def scorer(self, sample: Sample) -> str:
        return self.compat

    def unanswered(self, answer: str) -> Score:
        return Score(value=0.0, correct=False, explanation=f"no A-D letter extracted: counted wrong ({self.compat} "
                     f"divides by all questions); answer {answer}")

    def mark_scorers(self, samples: list[Sample], old_keys: bool) -> None:
        return None


class VideoMMELmmsEval(VideoMMEPeerHarness):
    """lmms-eval's videomme / videomme_w_subtitle tasks: np.linspace frames, its own .srt reading on
    its `subtitle_grid`, its prompts, 16 new tokens, reasoning blocks cut, extract_mcq_answer."""

    compat = "lmms-eval"
    peer = "lmms-eval 0.7.2-0.7.3 (lmms_eval/tasks/videomme)"
    max_tokens = 16

    def frame_indices(self, total: int, fps: float, n: int) -> list[int]:
        return Lmms(n=n).frame_indices(total, fps)

    def engine_subtitle_mode(self, mode: str) -> EngineSubtitleMode:
        return "none"  # lmms-eval re-reads the .srt itself (subtitle_block)

    def subtitle_block(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> str:
        fps, total = self.bench.planned_video(sample).rate_and_count()
        path = Path(sample.subtitles.path) if sample.subtitles else None
        return lmms_subtitles(path, fps, total, self.settings["subtitle_grid"], full=self.settings["subtitles"] == "all")

    def prompt_texts(self, sample: Sample, block: str | None) -> list[str]:
        if block is None:
            return [f"{LMMS_INSTRUCTION}\n{question_text(sample)}\n{LMMS_POST_PROMPT}"]
        return [f"{LMMS_SUBTITLE_HEADER}{block}\n{LMMS_INSTRUCTION}\n{question_text(sample)}\n{ANSWER_PROMPT}"]

    def read_letter(self, text: str) -> tuple[str, str]:
        """(the letter or "", the extractor's name) from the reply as the task receives it."""
        return lmms_extract_mcq(text, "ABCD"), "extract_mcq_answer"

    def extract(self, sample: Sample, response: Response) -> Prediction:
        letter, method = self.read_letter(task_reply(response, self.compat))
        return Prediction(value=LETTERS.index(letter) if letter else None, method=f"{self.compat} {method}")


class VideoMMELmmsEval071(VideoMMELmmsEval):
    """lmms-eval 0.7.0-0.7.1: the 2024-06 extract_characters_regex (before lmms-eval PR #1274)."""

    compat = "lmms-eval@0.7.1"
    peer = "lmms-eval 0.7.0-0.7.1 (lmms_eval/tasks/videomme)"

    def read_letter(self, text: str) -> tuple[str, str]:
        return extract_legacy(text), "extract_characters_regex@2024-06"


class VideoMMELmmsEval06(VideoMMELmmsEval071):
    """lmms-eval 0.6.0-0.6.1: as 0.7.1, and the reply reaches the task unstripped of reasoning tags
    (strip_reasoning_tags passes it through for this compat)."""

    compat = "lmms-eval@0.6"
    peer = "lmms-eval 0.6.0-0.6.1 (lmms_eval/tasks/videomme)"


class VideoMMEVlmevalkit(VideoMMEPeerHarness):
    """VLMEvalKit: int(i*T/(N+1)) frames, its "These are the frames of a video." prompt, the
    per-frame subtitle rule only, its 8-prefix extractor on the reply as its `evaluate()` reads it
    back from the prediction sheet (a whole-cell `N/A`, `NA`, ... is NaN there: no letter, wrong)."""

    compat = VLMEVALKIT
    peer = "VLMEvalKit e8e78f05 (vlmeval/dataset/videomme.py, vlmeval/dataset/utils/videomme.py)"

    def __init__(self, bench: VideoMMEBench) -> None:
        super().__init__(bench)
        if self.settings["subtitles"] in ("all", "covering"):
            raise LvuError("VLMEvalKit takes one cue per sampled frame only — use --subtitles per-frame or none")

    def frame_indices(self, total: int, fps: float, n: int) -> list[int]:
        return Vlmevalkit(n=n).frame_indices(total, fps)

    def prompt_texts(self, sample: Sample, block: str | None) -> list[str]:
        head = VLMEVALKIT_NOSUB if block is None else VLMEVALKIT_SUB.format(block)
        return [head, f"Question: {question_text(sample)}\nAnswer: "]

    def scorer(self, sample: Sample) -> str:
        return VLMEVALKIT  # its one extractor (PREFIXES["vlmevalkit"]), the same at every pin

    def extract(self, sample: Sample, response: Response) -> Prediction:
        """`evaluate()` at e8e78f05: the prediction re-read from its .xlsx/.tsv by pandas (`reread`: a
        NaN cell becomes the text "nan", no letter), then `extract_characters_regex`; a reply
        without a letter goes to `extract_option`, whose options come from the question's own lines
        (none in Video-MME's TSV) and which answers 'Z' without a judge: wrong. The API failure
        message is text like any other ("Failed to obtain answer via API." reads the A of "API")."""
        text = reread(response.text)
        method = f"{self.compat} extract_characters_regex@{commit_of(self.compat)}"
        if text is None:
            return Prediction(value=None, method=f"{method}: NaN after the sheet round trip")
        letter = extract_characters_regex(text, PREFIXES[VLMEVALKIT])
        return Prediction(value=LETTERS.index(letter) if letter else None, method=method)


class VideoMMEVlmevalkitE8e78f05(VideoMMEVlmevalkit):
    """vlmevalkit@e8e78f05: the default `vlmevalkit` pinned by its commit (VLMEvalKit at 296425e2
    reads Video-MME the same way: frames, prompt, extraction and scoring are unchanged between them)."""

    compat = VLMEVALKIT_E8E78F05
    peer = "VLMEvalKit e8e78f05 (vlmeval/dataset/videomme.py, vlmeval/dataset/utils/videomme.py)"


class VideoMMEVlmevalkit296425e2(VideoMMEVlmevalkit):
    """vlmevalkit@296425e2: VLMEvalKit at its 2024-12 commit, offered for every benchmark VLMEvalKit
    runs so one compat value names one commit. Video-MME's frames, prompt, extraction and scoring are
    the same as at e8e78f05 (its evaluate() takes .xlsx sheets only; lvu reads .tsv alike)."""

    compat = VLMEVALKIT_296425E2
    peer = "VLMEvalKit 296425e2 (vlmeval/dataset/videomme.py, vlmeval/dataset/utils/videomme.py)"


HARNESSES: dict[str, type[VideoMMEHarness]] = {
    cls.compat: cls for cls in (VideoMMEHarness, VideoMMELmmsEval, VideoMMELmmsEval071, VideoMMELmmsEval06,
                                VideoMMEVlmevalkit, VideoMMEVlmevalkitE8e78f05, VideoMMEVlmevalkit296425e2)
}
"""{compat: harness class}, in the order the error message lists them."""
