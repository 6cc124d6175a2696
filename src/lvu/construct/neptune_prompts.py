"""Neptune's construction prompts, filled: the paper's templates (lvu.construct.neptune_prompt_text) plus
the text they are filled with — the video script, the suggested structure, the context, the dense
captions and the question list — laid out as docs/build.md ("Neptune prompts and parsers") says.

Pure functions: text in, prompt text out. Times are seconds; a "timed" item is a (start, end, text)
tuple or any object with .start, .end and .text (lvu.types.Subtitle, an ASR segment).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lvu.construct.neptune_prompt_text import (
    CLUSTERING_PROMPT,
    DECOY_PROMPT,
    EXTRACTION_FIXES,
    FRAME_CAPTION_PROMPT,
    PAPER_PROMPTS,
    QA_PROMPT,
    SEGMENT_CONTEXT_LINE,
    SEGMENT_PROMPT,
    SHOT_SUMMARY_PROMPT,
    TOPICS_OUTPUT_FORMAT,
    TOPICS_PROMPT,
    VISUAL_SUPPORT_PROMPT,
)

__all__ = [
    "CLUSTERING_MAX_CHARS", "CLUSTERING_PROMPT", "DECOY_NUMBER", "DECOY_PROMPT", "DenseSegment",
    "EXTRACTION_FIXES", "FRAME_CAPTION_PROMPT", "NO_CONTEXT", "NO_STRUCTURE", "PAPER_PROMPTS",
    "QA_PROMPT", "SEGMENT_MAX_CHARS", "SEGMENT_PROMPT", "SHOT_SUMMARY_PROMPT", "TOPICS_PROMPT",
    "VISUAL_SUPPORT_PROMPT", "context_text", "dense_captions_text", "format_clustering_prompt",
    "format_decoy_prompt", "format_frame_caption_prompt", "format_qa_prompt", "format_segment_prompt",
    "format_shot_summary_prompt", "format_timestamp", "format_topics_prompt",
    "format_visual_support_prompt", "questions_and_answers_text", "speech_by_shot", "suggested_structure",
    "video_script", "visual_captions_text",
]

DECOY_NUMBER = 6
"""Decoys per question (paper Sec. 4.3: "we generate six decoys")."""
CLUSTERING_MAX_CHARS = 6000
"""{max output characters} of the clustering prompt; the paper gives no number (our choice)."""
SEGMENT_MAX_CHARS = 1000
"""max_output_characters of the segment prompt; the paper gives no number (our choice)."""
NO_STRUCTURE = "None (the video has no transcript)."
"""The suggested structure when the video has no speech (the paper's placeholder says "if exists")."""
NO_CONTEXT = "None (the video has no title or description)."
CONTEXT_DESCRIPTION_CHARS = 1000
"""A description longer than this is cut (at a word) in the context: it is a summary, not the text."""

_PLACEHOLDER = re.compile(r"\{[^{}\n]+\}|\[list of frame captions in the shot\]")


def _fill(template: str, values: Mapping[str, object]) -> str:
    """Replace each placeholder (written as in the template, braces included) in one pass, so text
    that itself contains braces is never read as a placeholder. Every placeholder must be given."""
    present = set(_PLACEHOLDER.findall(template))
    if present != set(values):
        raise ValueError(f"placeholders {sorted(present)} != values {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(0)]), template)


# ---- the prompts, filled -------------------------------------------------------------------------


def format_frame_caption_prompt() -> str:
    """C.2.1, as is: the VLM gets it with the frame (the image goes before the text)."""
    return FRAME_CAPTION_PROMPT


def format_shot_summary_prompt(frame_captions: Sequence[str]) -> str:
    """C.2.2 shot caption: the shot's frame captions in time order, one per line (the first right
    after the colon).
    Consecutive repeats are dropped (a still shot at 1 fps repeats its caption; repeats add tokens,
    not information)."""
    kept: list[str] = []
    for caption in frame_captions:
        caption = " ".join(caption.split())
        if caption and (not kept or kept[-1] != caption):
            kept.append(caption)
    if not kept:
        raise ValueError("a shot summary needs at least one non-empty frame caption")
    return _fill(SHOT_SUMMARY_PROMPT, {"[list of frame captions in the shot]": "\n".join(kept)})


def format_topics_prompt(transcript: str) -> str:
    """C.2.2 topics from ASR, with our output format (TOPICS_OUTPUT_FORMAT) between the paper's task
    sentence and the transcript, each part in its own paragraph."""
    task, _, rest = TOPICS_PROMPT.partition(" **Transcript:** ")
    template = f"{task}\n\n{TOPICS_OUTPUT_FORMAT}\n\n**Transcript:** {rest}"
    return _fill(template, {"{transcript}": transcript.strip()})


def format_clustering_prompt(head_topic: str, max_chars: int, initial_structure: str, context: str,
                             video_script: str) -> str:
    """C.2.2 shot clustering. `head_topic`: what the video is about (its title, else the first ASR
    topic); `initial_structure`: suggested_structure(topics); `context`: context_text(title,
    description); `video_script`: video_script(...) of this part of the video."""
    return _fill(CLUSTERING_PROMPT, {
        "{head_topic}": head_topic.strip(), "{max output characters}": int(max_chars),
        "{initial_structure_from_ASR_if_exists}": initial_structure.strip() or NO_STRUCTURE,
        "{summary_of_title_and_description}": context.strip() or NO_CONTEXT,
        "{video_script}": video_script.strip(),
    })


def format_segment_prompt(initial_description: str, partial_script: str, max_chars: int = SEGMENT_MAX_CHARS,
                          context: str | None = None) -> str:
    """C.2.2 segment caption. `initial_description`: the story of the segment's topic (shared by the
    topic's segments); `partial_script`: video_script(...) of the segment's scenes; `context`, when
    given, goes in as SEGMENT_CONTEXT_LINE before "Partial Script:" (None: the paper's template as is)."""
    template = SEGMENT_PROMPT
    if context is not None:
        head, sep, tail = template.rpartition("\n\nPartial Script: ")
        template = f"{head}\n\n{SEGMENT_CONTEXT_LINE}{sep}{tail}"
    values: dict[str, object] = {
        "{max_output_characters}": int(max_chars),
        "{shared_topic_cluster_caption}": initial_description.strip(),
        "{doc_segment}": partial_script.strip(),
    }
    if context is not None:
        values["{summary_of_title_and_description}"] = context.strip() or NO_CONTEXT
    return _fill(template, values)


def format_visual_support_prompt(dense_caption: str, visual_captions: str) -> str:
    """C.2.2 visual support: the segment's dense caption and visual_captions_text(its shots)."""
    return _fill(VISUAL_SUPPORT_PROMPT, {
        "{dense_caption_for_the_segment}": dense_caption.strip(),
        "{visual_captions_of_the_segment}": visual_captions.strip(),
    })


def format_qa_prompt(dense_captions: str, target_number: int) -> str:
    """C.2.3 stage 1: `target_number` questions with answers from dense_captions_text(...)."""
    return _fill(QA_PROMPT, {"{target_number}": int(target_number),
                             "{video_inputs_str}": dense_captions.strip()})


def format_decoy_prompt(dense_captions: str, questions_and_answers: str, target_number: int,
                        decoy_number: int = DECOY_NUMBER) -> str:
    """C.2.4 stage 2: `decoy_number` wrong answers for each of the `target_number` questions in
    `questions_and_answers` (questions_and_answers_text(...))."""
    return _fill(DECOY_PROMPT, {
        "{target_number}": int(target_number), "{decoy_number}": int(decoy_number),
        "{video_inputs_str}": dense_captions.strip(),
        "{question_and_answer_str}": questions_and_answers.strip(),
    })


# ---- the text the prompts are filled with ------------------------------------------------------------


def format_timestamp(seconds: float) -> str:
    """MM:SS, or H:MM:SS from an hour on (whole seconds, rounded down)."""
    s = max(0, int(seconds))
    h, m, s = s // 3600, s // 60 % 60, s % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _span(start: float, end: float) -> str:
    return f"{format_timestamp(start)} - {format_timestamp(end)}"


def _timed(item: Any) -> tuple[float, float, str]:
    if isinstance(item, (tuple, list)):
        start, end, text = item
    else:
        start, end, text = item.start, item.end, item.text
    return float(start), float(end), " ".join(str(text).split())


def speech_by_shot(shots: Sequence[Any], speech: Iterable[Any]) -> list[list[str]]:
    """The ASR lines of each shot: a line belongs to the shot holding its midpoint (so each line is
    in exactly one shot; the last shot also takes lines ending after it, the first those before it)."""
    spans = [_timed(s)[:2] for s in shots]
    out: list[list[str]] = [[] for _ in spans]
    if not spans:
        return out
    for item in speech:
        start, end, text = _timed(item)
        if not text:
            continue
        mid = (start + end) / 2
        index = next((i for i, (a, b) in enumerate(spans) if a <= mid < b), None)
        if index is None:  # before the first shot, after the last, or in a gap: the nearest shot
            index = min(range(len(spans)), key=lambda i: min(abs(mid - spans[i][0]), abs(mid - spans[i][1])))
        out[index].append(text)
    return out


def video_script(shots: Sequence[Any], speech: Iterable[Any] = (), *, first_scene: int = 1) -> str:
    """The clustering prompt's {video_script} and the segment prompt's {doc_segment}: one scene per
    shot, numbered from `first_scene` (scene numbers are the shot's 1-based index in the video, so a
    part of the script keeps the video's numbers), with the prompt's own words as labels:

        Scene 3 (00:24 - 00:41)
        Visual captions: <shot caption>
        Transcript sentences: <the shot's ASR lines, joined> | none

    `shots`: timed shot captions; `speech`: timed ASR lines of the whole video or of these shots."""
    lines_of = speech_by_shot(shots, speech)
    blocks = []
    for n, (shot, said) in enumerate(zip(shots, lines_of), start=first_scene):
        start, end, caption = _timed(shot)
        blocks.append(f"Scene {n} ({_span(start, end)})\nVisual captions: {caption or 'none'}\n"
                      f"Transcript sentences: {' '.join(said) or 'none'}")
    return "\n\n".join(blocks)


def suggested_structure(topics: Sequence[tuple[str, str]]) -> str:
    """{initial_structure_from_ASR_if_exists}: the topic/description pairs in the topics format;
    NO_STRUCTURE when there are none."""
    if not topics:
        return NO_STRUCTURE
    return "\n".join(f"Topic {i}: {t}\nDescription {i}: {d}" for i, (t, d) in enumerate(topics, 1))


def context_text(title: str | None, description: str | None, *,
                 max_description: int = CONTEXT_DESCRIPTION_CHARS) -> str:
    """{summary_of_title_and_description}: the title and description themselves (the paper names a
    summary but gives no prompt for it; we pass the text, the description cut at a word after
    `max_description` characters); NO_CONTEXT when both are empty."""
    title = " ".join((title or "").split())
    description = " ".join((description or "").split())
    if len(description) > max_description:
        description = description[:max_description].rsplit(" ", 1)[0] + " ..."
    parts = [f"Title: {title}" if title else "", f"Description: {description}" if description else ""]
    return "\n".join(p for p in parts if p) or NO_CONTEXT


def visual_captions_text(shots: Sequence[Any]) -> str:
    """{visual_captions_of_the_segment}: "each shot is described in a line of text" — one line per
    shot, `[00:12 - 00:20] caption`."""
    lines = []
    for shot in shots:
        start, end, caption = _timed(shot)
        lines.append(f"[{_span(start, end)}] {caption}")
    return "\n".join(lines)


@dataclass(frozen=True)
class DenseSegment:
    """One segment of the dense captions: its time span, its topic's description (the section
    title), its dense caption and its visual support."""

    start: float
    end: float
    title: str
    caption: str
    visual_support: str = ""


def dense_captions_text(segments: Sequence[DenseSegment]) -> str:
    """{video_inputs_str} ("Dense Caption with Timestamps") of both QAD prompts, one block per segment
    in time order (the QA prompt speaks of "timestamps and section titles within the captions"):

        [00:00 - 00:41] Section: <topic description>
        Caption: <dense caption>
        Visual support: <visual support>        (left out when empty)"""
    blocks = []
    for seg in sorted(segments, key=lambda s: (s.start, s.end)):
        block = f"[{_span(seg.start, seg.end)}] Section: {' '.join(seg.title.split())}\n" \
                f"Caption: {' '.join(seg.caption.split())}"
        if seg.visual_support.strip():
            block += f"\nVisual support: {' '.join(seg.visual_support.split())}"
        blocks.append(block)
    return "\n\n".join(blocks)


def questions_and_answers_text(qas: Sequence[Sequence[str]]) -> str:
    """{question_and_answer_str}: the stage-1 questions in stage 1's own format, numbered from 1:
    "QUESTION 1: (capability) question" then "CORRECT ANSWER: answer", a blank line between.
    `qas`: (capability, question, answer) triples (lvu.construct.neptune_parse.QA)."""
    blocks = []
    for n, (capability, question, answer) in enumerate(qas, 1):
        cap = f"({capability}) " if capability else ""
        blocks.append(f"QUESTION {n}: {cap}{question}\nCORRECT ANSWER: {answer}")
    return "\n\n".join(blocks)
