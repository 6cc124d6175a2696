"""Neptune's automatic QAD pipeline (Nagrani et al. 2024, §4 and App. C) as lvu build stages.

    select → shots, speech, sidecar, frame captions (VLM, or OCR text) → shot captions → topics
    → clusters → segment captions → visual support → questions → decoys → QAD filter → export

Stages i-iv of the paper's Fig. 1 plus its pre-rater blind filter; each stage is one class below,
its prompt the paper's (lvu.construct.neptune_prompt_text, filled by neptune_prompts, replies read by
neptune_parse); the filters and signals are lvu.construct.selection / signals, the blind filter
lvu.construct.blind. What the paper leaves open is decided in NeptuneOptions and documented in docs/build.md
("The Neptune pipeline"). The export (lvu.construct.neptune_export) writes Neptune's release schema and
lvu JSONL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lvu.construct import neptune_parse as parse
from lvu.construct import neptune_prompts as prompts
from lvu.construct.blind import QAD_PROMPT, qad_filter_question
from lvu.construct.neptune_export import export, mcq_options, question_key
from lvu.construct.neptune_signal_stages import (
    ASR_MODES, CAPTIONERS, DEFAULTS, FrameCaptions, NeptuneOptions, NeptuneStage, OcrFrameCaptions, Select, Shots, Sidecar, Speech,
    timed_speech,
)
from lvu.construct.pipeline import Pipeline, Stage, StageFailure, Unit, Video, register_pipeline, register_stage
from lvu.errors import LvuError

__all__ = ["ASR_MODES", "CAPTIONERS", "DEFAULTS", "Neptune", "NeptuneOptions"]


# ---- iii. video captioning ---------------------------------------------------------------------------


@register_stage("neptune.shot-captions")
class ShotCaptions(NeptuneStage):
    """Each shot's frame captions summarised (C.2.2 "Shot level captions")."""

    output = "shot_captions"
    inputs = ("shots", "frame_captions")
    role = "llm"
    unit = "shot"
    prompt = prompts.SHOT_SUMMARY_PROMPT

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        frames = inputs["frame_captions"]
        units = []
        for n, (start, end) in enumerate(inputs["shots"], 1):
            inside = [f["caption"] for f in frames if start <= f["t"] < end]
            if not inside and frames:  # a shot shorter than the frame interval: the nearest frame
                mid = (start + end) / 2
                inside = [min(frames, key=lambda f: abs(f["t"] - mid))["caption"]]
            units.append(Unit(video.id, f"shot{n:04d}", {"start": start, "end": end, "captions": inside}))
        return units

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        p = unit.payload
        caption = await ctx.ask(prompts.format_shot_summary_prompt(p["captions"]), parse.parse_shot_summary)
        return {"start": p["start"], "end": p["end"], "caption": caption}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return [results[k] for k in sorted(results)]


@register_stage("neptune.topics")
class Topics(NeptuneStage):
    """Up to 5 topic/description pairs from the transcript; no call (and no topics) without speech."""

    output = "topics"
    inputs = ("speech",)
    role = "llm"
    prompt = prompts.format_topics_prompt("{transcript}")

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        return [Unit(video.id, "video", {"transcript": " ".join(c[2] for c in timed_speech(inputs["speech"]))})]

    async def run(self, unit: Unit, ctx) -> list[list[str]]:
        if not unit.payload["transcript"].strip():
            return []
        topics = await ctx.ask(prompts.format_topics_prompt(unit.payload["transcript"]), parse.parse_topics)
        return [list(t) for t in topics]

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results["video"]


def _context(metadata: dict[str, str]) -> str:
    return prompts.context_text(metadata.get("title"), metadata.get("description"))


@register_stage("neptune.clusters")
class Clusters(NeptuneStage):
    """Scenes (shots) assigned to topics, the paper's XML; one call per part of `scenes_per_part` scenes."""

    output = "clusters"
    inputs = ("shot_captions", "speech", "topics", "metadata")
    role = "llm"
    unit = "part"
    prompt = prompts.CLUSTERING_PROMPT
    max_tokens = 4096

    def settings(self) -> Any:
        return {"max_chars": self.opt("clustering_max_chars")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        shots, topics, meta = inputs["shot_captions"], inputs["topics"], inputs["metadata"]
        head = meta.get("title") or (topics[0][0] if topics else "") or "the video"
        size = max(1, int(self.opt("scenes_per_part")))
        units = []
        for first in range(0, len(shots), size):
            part = shots[first:first + size]
            timed = [(s["start"], s["end"], s["caption"]) for s in part]
            speech = timed_speech(inputs["speech"], part[0]["start"] if first else -math.inf,
                                  part[-1]["end"] if first + size < len(shots) else math.inf)
            units.append(Unit(video.id, f"part{first // size + 1:03d}", {
                "head_topic": head, "structure": prompts.suggested_structure([tuple(t) for t in topics]),
                "context": _context(meta), "script": prompts.video_script(timed, speech, first_scene=first + 1),
                "scenes": list(range(first + 1, first + len(part) + 1))}))
        return units

    async def run(self, unit: Unit, ctx) -> list[dict[str, Any]]:
        p = unit.payload
        text = prompts.format_clustering_prompt(p["head_topic"], self.opt("clustering_max_chars"), p["structure"],
                                                p["context"], p["script"])
        topics = await ctx.ask(text, lambda reply: parse.parse_clustering(reply, p["scenes"]))
        return [{"description": t.description, "scenes": list(t.scenes), "story": t.story} for t in topics]

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return [topic for k in sorted(results) for topic in results[k]]


def segments_of(clusters: list[dict[str, Any]], shots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's segments: consecutive shots of one topic merged, non-contiguous ones apart."""
    topics = [parse.ClusterTopic(t["description"], tuple(t["scenes"]), t["story"]) for t in clusters]
    out = []
    for seg in parse.segments_from_topics(topics, range(1, len(shots) + 1)):
        topic, members = topics[seg.topic], [shots[n - 1] for n in seg.scenes]
        story = topic.story or topic.description or " ".join(s["caption"] for s in members)
        out.append({"scenes": list(seg.scenes), "start": members[0]["start"], "end": members[-1]["end"],
                    "title": topic.description or f"Scenes {seg.scenes[0]}-{seg.scenes[-1]}", "story": story})
    return out


@register_stage("neptune.segment-captions")
class SegmentCaptions(NeptuneStage):
    """Each segment's dense caption: its topic's story improved from the segment's script."""

    output = "segments"
    inputs = ("clusters", "shot_captions", "speech", "metadata")
    role = "llm"
    unit = "segment"
    prompt = prompts.SEGMENT_PROMPT

    def settings(self) -> Any:
        return {"max_chars": self.opt("segment_max_chars")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        shots = inputs["shot_captions"]
        units = []
        for k, seg in enumerate(segments_of(inputs["clusters"], shots), 1):
            members = [shots[n - 1] for n in seg["scenes"]]
            timed = [(s["start"], s["end"], s["caption"]) for s in members]
            speech = timed_speech(inputs["speech"], seg["start"] if seg["scenes"][0] > 1 else -math.inf,
                                  seg["end"] if seg["scenes"][-1] < len(shots) else math.inf)
            script = prompts.video_script(timed, speech, first_scene=seg["scenes"][0])
            units.append(Unit(video.id, f"segment{k:04d}", {**seg, "script": script,
                                                            "context": _context(inputs["metadata"])}))
        return units

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        p = unit.payload
        text = prompts.format_segment_prompt(p["story"], p["script"], self.opt("segment_max_chars"), p["context"])
        caption = await ctx.ask(text, parse.parse_updated_description)
        return {"start": p["start"], "end": p["end"], "title": p["title"], "scenes": p["scenes"], "caption": caption}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return [results[k] for k in sorted(results)]


@register_stage("neptune.visual-support")
class VisualSupport(NeptuneStage):
    """Per segment, the shot captions that support its dense caption (≤ 200 words, as asked)."""

    output = "visual_support"
    inputs = ("segments", "shot_captions")
    role = "llm"
    unit = "segment"
    prompt = prompts.VISUAL_SUPPORT_PROMPT

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        shots = inputs["shot_captions"]
        return [Unit(video.id, f"segment{k:04d}", {"caption": seg["caption"], "visual": prompts.visual_captions_text(
            [(shots[n - 1]["start"], shots[n - 1]["end"], shots[n - 1]["caption"]) for n in seg["scenes"]])})
            for k, seg in enumerate(inputs["segments"], 1)]

    async def run(self, unit: Unit, ctx) -> str:
        text = prompts.format_visual_support_prompt(unit.payload["caption"], unit.payload["visual"])
        return await ctx.ask(text, parse.parse_visual_support)

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return [results[k] for k in sorted(results)]


def dense_captions(inputs: dict[str, Any]) -> str:
    """The time-stamped dense captions both QAD prompts read ({video_inputs_str})."""
    return prompts.dense_captions_text([
        prompts.DenseSegment(s["start"], s["end"], s["title"], s["caption"], support)
        for s, support in zip(inputs["segments"], inputs["visual_support"])])


# ---- iv. QAD generation and the blind filter -----------------------------------------------------------


@register_stage("neptune.questions")
class Questions(NeptuneStage):
    """Stage 1: `questions` questions with answers from the dense captions."""

    output = "questions"
    inputs = ("segments", "visual_support")
    role = "llm"
    prompt = prompts.QA_PROMPT
    max_tokens = 2048

    def settings(self) -> Any:
        return {"n": self.opt("questions")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        return [Unit(video.id, "video", {"dense": dense_captions(inputs)})]

    async def run(self, unit: Unit, ctx) -> list[dict[str, Any]]:
        n = int(self.opt("questions"))
        qas = await ctx.ask(prompts.format_qa_prompt(unit.payload["dense"], n), parse.parse_questions)
        return [{"n": i, "capability": qa.capability, "question": qa.question, "answer": qa.answer}
                for i, qa in enumerate(qas[:n], 1)]

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results["video"]


@register_stage("neptune.decoys")
class Decoys(NeptuneStage):
    """Stage 2: `decoys` (6) wrong answers for each question, one call per video with the whole
    question set (C.2.4's prompt takes `{target_number}` questions); exactly that many per question,
    else the one retry with the parse error, then the unit fails and no question of the video is
    exported."""

    output = "decoys"
    inputs = ("questions", "segments", "visual_support")
    role = "llm"
    prompt = prompts.DECOY_PROMPT
    version = 2
    """2: one unit per video (version 1 asked one question per call, with at least 4 decoys)."""
    max_tokens = 4096

    def settings(self) -> Any:
        return {"decoys": self.opt("decoys")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        questions = [[q["n"], q["capability"], q["question"], q["answer"]] for q in inputs["questions"]]
        return [Unit(video.id, "video", {"dense": dense_captions(inputs), "questions": questions})]

    async def run(self, unit: Unit, ctx) -> dict[str, list[str]]:
        numbers = [q[0] for q in unit.payload["questions"]]
        qas = [parse.QA(*q[1:]) for q in unit.payload["questions"]]
        n = int(self.opt("decoys"))
        text = prompts.format_decoy_prompt(unit.payload["dense"], prompts.questions_and_answers_text(qas), len(qas), n)
        # a reply holds every question's answer and decoys: room for ~700 tokens per question
        decoys = await ctx.ask(text, lambda reply: parse.parse_decoys(reply, qas, n),
                               max_tokens=max(self.max_tokens, 700 * len(qas)))
        return {f"q{number}": wrong for number, wrong in zip(numbers, decoys)}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results.get("video", {})


@register_stage("neptune.qad-filter")
class QadFilter(NeptuneStage):
    """The QAD blind filter (lvu.construct.blind): the ranking model sees the question and the five MCQ
    options, no video, `filter_seeds` times; removed when it top-ranks the answer >= threshold times."""

    output = "qad_filter"
    inputs = ("questions", "decoys")
    role = "filter"
    unit = "question"
    partial = True
    prompt = QAD_PROMPT

    def settings(self) -> Any:
        return {"seeds": self.opt("filter_seeds"), "threshold": self.opt("filter_threshold")}

    def plan(self, video: Video, inputs: dict[str, Any]) -> list[Unit]:
        units = []
        for q in inputs["questions"]:
            decoys = inputs["decoys"].get(f"q{q['n']}")
            if decoys is None:  # the video's decoys call failed: nothing to filter
                continue
            options, answer = mcq_options(question_key(video.id, q["n"]), q["answer"], decoys)
            units.append(Unit(video.id, f"q{q['n']}", {"question": q["question"], "options": options,
                                                       "answer_index": answer}))
        return units

    async def run(self, unit: Unit, ctx) -> dict[str, Any]:
        p = unit.payload
        verdict = await qad_filter_question(ctx.model(), p["question"], p["options"], p["answer_index"],
                                            seeds=int(self.opt("filter_seeds")),
                                            threshold=int(self.opt("filter_threshold")),
                                            sample_id=f"{unit.video}/{unit.id}")
        if verdict.failed:
            raise StageFailure(next(v.error for v in verdict.votes if v.error))
        return {"removed": verdict.removed, "correct_votes": verdict.correct_votes, "threshold": verdict.threshold,
                "seeds": len(verdict.votes), "unparsable": verdict.unparsable,
                "votes": [{"seed": v.seed, "order": v.order, "ranking": v.ranking, "correct": v.correct}
                          for v in verdict.votes]}

    def collect(self, video: Video, results: dict[str, Any]) -> Any:
        return results


# ---- the pipeline ------------------------------------------------------------------------------------


@register_pipeline("neptune")
class Neptune(Pipeline):
    """Neptune's automatic QAD pipeline (paper §4, App. C): a folder of videos in, the release
    schema and lvu JSONL out."""

    Options = NeptuneOptions
    models = {"llm": "captioning, questions and decoys", "vlm": "frame captions (with captioner=vlm)",
              "filter": "the QAD filter's ranking model (default: the llm)"}
    model_fallbacks = {"filter": "llm"}

    def check(self) -> None:
        from importlib.util import find_spec

        needs = [("scenedetect", "shot detection"), ("dlib", "the talking-head filter"),
                 ("scipy", "the static-video filter")]
        if self.options.get("captioner") == "ocr":
            needs.append(("rapidocr", "--captioner ocr"))
        for module, what in needs:
            if find_spec(module) is None:
                raise LvuError(f"{what} needs {module}, which is not installed — pip install 'lvu[build]'")
        if self.options.get("asr", "auto") == "auto" and find_spec("faster_whisper") is None:
            raise LvuError("--asr auto transcribes videos without a subtitle file with Whisper, and faster-whisper "
                           "is not installed — pip install 'lvu[asr]', or pass --asr subtitles / --asr none")

    def stages(self) -> list[Stage]:
        captioner = OcrFrameCaptions if self.options.get("captioner") == "ocr" else FrameCaptions
        classes = [Select, Shots, Speech, Sidecar, captioner, ShotCaptions, Topics, Clusters, SegmentCaptions,
                   VisualSupport, Questions, Decoys, QadFilter]
        return [cls(self.options) for cls in classes]

    def export(self, state: Any, videos: Sequence[Video], out: Path) -> dict[str, Any]:
        return export(state, videos, out)
