"""The `needle` build pipeline: `lvu build needle` (and `lvu build run needle`) on the one build
mechanism (lvu.construct.pipeline, lvu.construct.runner; docs/build.md, "Needles and the time ladder").

    lvu build run needle BACKGROUNDS -o OUT --opt needles=NEEDLES --opt task=nqa --opt lengths=180,600

Its items are the planned output videos: lvu.construct.needles.plan_build makes every random choice
(from the seed) while planning, and each item's `data` holds its job — background, subtitles, length,
frame count, each placed needle (lvu.construct.needle_media.Needle as a dict, with its position), the
question, depth and the video's content key — so a unit runs again in another process, and `lvu
build status` / `show` open the folder without the original inputs. One stage, `needle.splice`: one
unit per video, no model, payload = the content key, result = the splice stats and the file name.
A unit whose video is already on disk returns at once; a committed unit whose video was deleted
runs again (`Stage.still_valid`). The export writes needle.jsonl and subtitles/ and removes the
videos of earlier plans.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from lvu.construct import needle_questions as questions
from lvu.construct.needles import (JSONL_NAME, TASKS, BackgroundFile, BuildResult, Job, NeedleSettings, _keyed,
                                   _remove_stale, _sample, audio_format, find_backgrounds, pieces_of, plan_build,
                                   probe_cached, remove_partial)
from lvu.construct.pipeline import (Item, Pipeline, PipelineOptions, Stage, StageFailure, Unit, register_pipeline,
                                    register_stage)
from lvu.construct.splice import CRF, splice
from lvu.errors import LvuError

STAGE = "needle.splice"
log = logging.getLogger("lvu.construct.needles")


def numbers(value: Any, *, example: str, low: float | None = None, high: float | None = None,
            what: str = "") -> list[float]:
    """A list of numbers from a list or a comma-separated text, each within [low, high] (`low` alone:
    above it); one-line ValueErrors that start with the offending value."""
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        out = [float(v) for v in items if str(v).strip()]
    except (TypeError, ValueError):
        out = []
    if not out:
        raise ValueError(f"{','.join(str(v) for v in items)!r} is not a comma-separated list of numbers — "
                         f"e.g. {example}")
    for v in out:
        if high is not None and (v < (low or 0) or v > high):
            raise ValueError(f"{v:g} is outside {low:g}-{high:g} — {what}, e.g. {example}")
        if high is None and low is not None and v <= low:
            raise ValueError(f"{v:g} is not above {low:g} — {what}, e.g. {example}")
    return out


class NeedleOptions(PipelineOptions):
    """`lvu build needle`'s flags as typed options (the same names, defaults and checks)."""

    needles: str | None = Field(default=None, description="a folder of needle clips / images / .txt files, or a needle "
                                                  "JSONL file (needed to plan; not to resume or show)")
    segments: str | None = Field(default=None, description="an ActivityNet-Captions file: order questions from consecutive "
                                                   "captioned segments of the videos in `needles` (a folder)")
    task: str = Field(default="nqa", description="nqa (one needle, its question) | order (several, their order) | "
                                         "count (one needle, how often)")
    depths: list[float] | Literal["random"] = Field(
        default=[0.0, 25.0, 50.0, 75.0, 100.0], description="nqa: where each needle starts, percent of the video "
                                                    "(0 = first frame, 100 = ends on the last); 'random' as MLVU")
    lengths: list[float] | None = Field(default=None, description="output lengths in seconds (background trimmed or "
                                                          "looped); none: the background's")
    per_cell: int = Field(default=1, ge=1, description="videos per background x length x depth (nqa) or per "
                                               "background x length (order, count)")
    order_size: int = Field(default=4, ge=2, description="order: needles per video")
    max_count: int = Field(default=4, ge=1, description="count: the most times a needle is inserted")
    needle_seconds: float = Field(default=3.0, gt=0, description="how long images and text needles are shown (a "
                                                         "JSONL line's `seconds` wins)")
    seed: int = Field(default=0, description="same seed and inputs, same benchmark (bytes)")
    crf: int = Field(default=CRF, ge=0, le=51, description="x264 quality of re-encoded spans (lower is better)")
    reencode: bool = Field(default=False, description="decode and re-encode every frame (never copy background packets)")
    exact_audio: bool = Field(default=False, description="re-encode all sound sample-exactly (default: copy the "
                                                 "background's AAC packets between splice points)")
    # --questions llm (lvu.construct.needle_llm): left out of build.json at their defaults (NeedlePipeline)
    questions: Literal["template", "llm"] = Field(default="template", description="nqa: template (the needle's own "
                                                  "question, else which label appears) | llm (MLVU Figure 7: 1-3 "
                                                  "questions per needle by the llm model, from its caption)")
    captioner: Literal["none", "ocr", "vlm"] = Field(default="none", description="questions=llm, a needle without a "
                                                     "caption (<stem>.caption, a JSONL `caption`): none (stop, "
                                                     "naming it) | ocr (its on-screen text) | vlm (the vlm model)")

    @model_validator(mode="after")
    def _llm_questions(self) -> NeedleOptions:
        if self.questions == "llm" and self.task != "nqa":
            raise ValueError(f"questions=llm writes Needle QA questions (task nqa), not task {self.task}")
        return self

    @field_validator("task")
    @classmethod
    def _task(cls, value: str) -> str:
        if value not in TASKS:
            raise ValueError(f"{value!r} is not one of {', '.join(TASKS)}")
        return value

    @field_validator("depths", mode="before")
    @classmethod
    def _depths(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str):
            value = value[0]
        if isinstance(value, str) and value.strip().lower() == "random":
            return "random"
        return numbers(value, example="0,25,50,75,100", low=0, high=100, what="depths are percent of the video")

    @field_validator("lengths", mode="before")
    @classmethod
    def _lengths(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return None
        return numbers(value, example="180,600,1800", low=0, what="lengths are seconds")

    def settings(self) -> NeedleSettings:
        return NeedleSettings(task=self.task, depths=None if self.depths == "random" else tuple(self.depths),
                              lengths=tuple(self.lengths) if self.lengths else None, seed=self.seed,
                              per_cell=self.per_cell, order_size=self.order_size, max_count=self.max_count,
                              crf=self.crf, reencode=self.reencode, exact_audio=self.exact_audio)

    @classmethod
    def from_settings(cls, s: NeedleSettings, **more: Any) -> NeedleOptions:
        return cls(task=s.task, depths=list(s.depths) if s.depths else "random",
                   lengths=list(s.lengths) if s.lengths else None, seed=s.seed, per_cell=s.per_cell,
                   order_size=s.order_size, max_count=s.max_count, crf=s.crf, reencode=s.reencode,
                   exact_audio=s.exact_audio, **more)


def flag_options(schema: type[PipelineOptions], values: dict[str, Any]) -> Any:
    """`values` as `schema`, or a one-line LvuError naming the command-line flag (`--per-cell`)."""
    try:
        return schema.model_validate(values)
    except ValidationError as e:
        error = e.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        flag = "--" + name.replace("_", "-")
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "value_error":
            raise LvuError(f"{flag} {message}") from None
        raise LvuError(f"{flag} {values.get(name)!r}: {message}") from None


# ---- a job as an item and back ------------------------------------------------------------------


def job_items(jobs: list[Job], s: NeedleSettings) -> list[Item]:
    """The planned jobs as build items (each keyed: its content key and timeline)."""
    jobs = [_keyed(j, s) for j in jobs]
    ids = [j.id for j in jobs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise LvuError(f"two videos would both be named {dup!r} — needles need different file names/texts")
    return [Item(j.id, str(j.background.path), job_data(j)) for j in jobs]


def job_data(job: Job) -> dict[str, Any]:
    def needle(n: Any, at: int) -> dict[str, Any]:
        d = dataclasses.asdict(n)
        if n.kind != "text":  # a file: found again from any working directory
            d["source"] = str(Path(n.source).resolve())
        return {**d, "at": at}

    bg = job.background
    return {"background": str(Path(bg.path).resolve()), "subtitles": str(Path(bg.subtitles).resolve())
            if bg.subtitles is not None else None, "length": job.length, "frames": job.n_frames,
            "needles": [needle(n, at) for n, at in job.placed],
            "question": {"text": job.question.text, "options": list(job.question.options),
                         "answer": job.question.answer},
            "depth": job.depth, "key": job.key}


def job_of(item: Item) -> Job:
    """The job an item holds (its background probed once per process), with its timeline."""
    from lvu.construct.needle_media import Needle

    d = item.data
    info = probe_cached(d["background"])
    background = BackgroundFile(Path(d["background"]), Path(d["subtitles"]) if d["subtitles"] else None, info)
    placed = [(Needle(**{**{k: v for k, v in n.items() if k != "at"}, "options": tuple(n["options"])}), n["at"])
              for n in d["needles"]]
    q = d["question"]
    job = Job(item.id, background, d["length"], d["frames"], placed,
              questions.Question(q["text"], tuple(q["options"]), q["answer"]), d["depth"], d["key"])
    job.pieces = pieces_of(job)
    return job


# ---- the stage and the pipeline -----------------------------------------------------------------


_writing: dict[str, threading.Lock] = {}
_writing_lock = threading.Lock()


def write_once(path: Path, make: Callable[[Path], dict[str, Any]]) -> dict[str, Any] | None:
    """`make(path)` unless `path` is a file already (None then); one writer per path in this process."""
    with _writing_lock:
        lock = _writing.setdefault(str(path), threading.Lock())
    with lock:
        if path.is_file():
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        return make(path)


def stats_of(stats: Any) -> dict[str, Any]:
    """A SpliceStats as a unit result."""
    return {"mode": stats.mode, "copied_frames": stats.copied_frames, "encoded_frames": stats.encoded_frames,
            "decoded_gops": stats.decoded_gops, "extra": dict(stats.extra)}


class FileStage(Stage):
    """A stage whose unit writes one file into the build folder (`Stage.out`): the result names it
    (`file`, relative to OUT) and says whether this unit made it (`made`); a unit whose file is there
    already returns at once, and a committed unit whose file was deleted runs again."""

    stop_after_failures = 1
    """An unreadable background or needle fails every video alike: stop at the first failure."""

    def path(self, name: str) -> Path:
        if self.out is None:
            raise StageFailure(f"{self.name} writes into the build folder and the runner gave none")
        return Path(self.out) / name

    async def write(self, name: str, make: Callable[[Path], Any]) -> dict[str, Any]:
        stats = await asyncio.to_thread(write_once, self.path(name), make)
        return {"file": name, "made": stats is not None, **(stats_of(stats) if stats is not None else {})}

    def still_valid(self, unit: Unit, output: Any) -> bool:
        return self.out is None or not isinstance(output, dict) or (Path(self.out) / output["file"]).is_file()

    def stop_message(self, failures: int, error: str | None) -> str:
        return error or f"{self.name} failed"

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        return results["video"]


@register_stage(STAGE)
class NeedleSplice(FileStage):
    """One output video: the background trimmed or looped to its length, the needles spliced in."""

    output = "videos"

    def __init__(self, options: dict[str, Any] | None = None,
                 progress: Callable[[str, bool], None] | None = None) -> None:
        super().__init__(options)
        self.progress = progress

    def __getstate__(self) -> dict[str, Any]:  # shipped to another process: without the progress hook
        return {**self.__dict__, "progress": None}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        return [Unit(video.id, "video", video.data["key"])]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        job = job_of(ctx.video)
        o = self.options
        result = await self.write(job.video_name, lambda path: splice(
            job.background.info, job.pieces, path, audio=audio_format(job), crf=o["crf"], reencode=o["reencode"],
            exact_audio=o["exact_audio"]))
        if self.progress is not None:  # in-process only (the shortcut's progress bar)
            self.progress(unit.video, result["made"])
        return result


@register_pipeline("needle")
class NeedlePipeline(Pipeline):
    """Needles (clips, images, text) spliced into background videos at chosen depths and lengths
    (`lvu build needle`): INPUTS = a background video or a folder of them; --opt needles=PATH."""

    Options = NeedleOptions
    config: NeedleOptions
    models = {"llm": "writes the Needle QA questions from the needle captions (questions=llm)",
              "vlm": "captions needles that have no caption (questions=llm, captioner=vlm)"}

    def __init__(self, options: Any = None, *, progress: Callable[[str, bool], None] | None = None) -> None:
        super().__init__(options)
        self.progress = progress
        self.samples: list[Any] = []
        """The samples the export wrote (this process)."""
        self.workers: int | None = None
        """Splices at once when the build's concurrency is higher (model calls: build_needles)."""
        for name in ("questions", "captioner"):  # a template build's build.json stays as it was before them
            if self.options.get(name) == NeedleOptions.model_fields[name].default:
                del self.options[name]

    def stages(self) -> list[Stage]:
        splice = NeedleSplice(self.options, self.progress)
        splice.max_concurrency = self.workers
        if self.config.questions != "llm":
            return [splice]
        from lvu.construct.needle_llm_stages import question_stages

        return [*question_stages(self.options), splice]

    def items(self, inputs: Sequence[str]) -> list[Item]:
        from lvu.construct.needle_media import load_needles, load_segments

        if len(inputs) != 1:
            raise LvuError(f"needle build: pass one background video or folder of them (got {len(inputs)} inputs)")
        if not self.config.needles:
            raise LvuError("needle build: no needles — pass --opt needles=PATH (a folder of needle clips, images "
                           "and .txt files, or a needle JSONL file)")
        if self.config.segments:
            problems: list[str] = []
            pool = load_segments(self.config.segments, self.config.needles, problems=problems)
            for line in problems:  # one line per record left out or trimmed; the others are built
                log.warning("%s", line)
        else:
            pool = load_needles(self.config.needles, seconds=self.config.needle_seconds)
        settings = self.config.settings()
        jobs = plan_build(find_backgrounds(inputs[0]), pool, settings)
        items = job_items(jobs, settings)
        if self.config.questions == "llm":  # each video's needle: its caption, its question units' owner
            from lvu.construct.needle_llm import plan_questions

            plan_questions(items, [j.placed[0][0] for j in jobs], source=self.config.needles, seed=self.config.seed,
                           captioner=self.config.captioner)
        return items

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        made = state.outputs.get("videos", {})
        if any(v.id not in made for v in videos):
            return {}  # not every video is there: no benchmark file yet (`lvu build status` says what is missing)
        from lvu.benchmarks.jsonl import write_samples

        asked: dict[str, Any] = {}
        if self.config.questions == "llm":  # every needle's questions, or no benchmark file yet
            from lvu.construct.needle_llm_stages import llm_samples, missing_questions, questions_by_needle

            asked = questions_by_needle(state)
            if missing_questions(list(videos), asked):
                return {}
        jobs = [job_of(v) for v in videos]
        self.samples = [_sample(job, out) for job in jobs]
        if self.config.questions == "llm":
            self.samples = llm_samples(list(videos), self.samples, asked)
        path = write_samples(out / JSONL_NAME, self.samples)
        _remove_stale(out, {j.video_name for j in jobs})
        return {"needle.jsonl": Path(path or out / JSONL_NAME), "samples": len(self.samples)}


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM stopped a needle or ladder build; what it made is committed."""


def build_needles(pipeline: NeedlePipeline, items: list[Item], out_dir: str | Path, *, workers: int = 1,
                  progress: Callable[[str, bool], None] = lambda item, made: None, replace: bool = False,
                  models: dict[str, tuple[str, dict[str, Any]]] | None = None, concurrency: int = 1) -> BuildResult:
    """Run the needle pipeline over `items` into `out_dir` (lvu.construct.runner.run_build: resumable,
    one build per folder), then summarise: videos made here and reused, splice modes, frames copied
    and encoded, how the sound was written, and why a background could not be copied. `models`: role
    -> (name, args) for questions=llm; `concurrency` model calls in flight, `workers` splices.
    QuestionsIncomplete when every video is there but a needle's questions failed (one line each)."""
    from lvu.construct.runner import run_build

    reported: set[str] = set()

    def report(item: str, made: bool) -> None:
        reported.add(item)
        progress(item, made)

    pipeline.progress = report
    remove_partial(Path(out_dir), dead_only=True)  # a killed build's half-written videos, even if this one stops too
    started = time.time()
    pipeline.workers = workers
    state, written = asyncio.run(run_build(pipeline, items, out_dir, models or {}, concurrency=max(workers, concurrency),
                                           show_progress=False, note=lambda message: None, replace=replace,
                                           arg_flags={role: f"--{role}-arg " for role in models or {}}))
    done = sum(1 for v in items if v.id in state.outputs.get("videos", {}))
    if not written and not state.interrupted and state.failures():
        from lvu.construct.needle_llm_stages import QuestionsIncomplete, failure_lines

        raise QuestionsIncomplete(failure_lines(state))
    if not written:
        raise BuildInterrupted(f"interrupted: {done} of {len(items)} needle videos made (committed) — run the same "
                               "command again to resume")
    result = BuildResult(written["needle.jsonl"], pipeline.samples, 0, 0, {}, {})
    for item in items:
        view = state.units[STAGE][item.id][0]
        output = view.stored().result["output"]
        if item.id not in reported:
            progress(item.id, False)
        if not output["made"] or view.stored().started < started:
            result.reused += 1
            continue
        result.made += 1
        result.modes[output["mode"]] = result.modes.get(output["mode"], 0) + 1
        result.frames["copied"] = result.frames.get("copied", 0) + output["copied_frames"]
        result.frames["encoded"] = result.frames.get("encoded", 0) + output["encoded_frames"]
        if "audio" in output["extra"]:
            result.audio[output["extra"]["audio"]] = result.audio.get(output["extra"]["audio"], 0) + 1
    for item in items:
        reason = probe_cached(item.data["background"]).reason
        if reason:
            result.reasons[item.path] = reason
    return result


def run_build(jobs: list[Job], out_dir: str | Path, s: NeedleSettings, *, workers: int = 1,
              progress: Callable[[Job, bool], None] = lambda job, made: None, replace: bool = False) -> BuildResult:
    """Make every job's video (`workers` at once) and subtitles, then write the JSONL file: the
    `needle` build pipeline over these jobs, so every video is
    committed to OUT's build store and a re-run (also after kill -9) makes only what is missing.
    `progress(job, made)`: once per job, as its video is made here (True) or found made (False).
    One build per folder at a time (lvu.construct.runner.build_lock); a folder holding a needle build
    of other inputs or settings is refused unless `replace` (lvu.construct.store.check_rebuild)."""
    pipeline = NeedlePipeline(NeedleOptions.from_settings(s))
    by_id = {j.id: j for j in jobs}
    return build_needles(pipeline, job_items(jobs, s), out_dir, workers=workers,
                         progress=lambda item, made: progress(by_id[item], made), replace=replace)
