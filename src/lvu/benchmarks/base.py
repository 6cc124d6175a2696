"""The Benchmark interface: one subclass holds one benchmark's whole protocol.

load -> plan -> build_prompt -> extract -> score -> aggregate. The run engine calls these in
that order; a benchmark never sees a model backend.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from lvu.benchmarks.settings import BenchmarkSettings, from_defaults, with_defaults
from lvu.registry import Registry
from lvu.types import Breakdown  # noqa: F401  (lives with the other nouns; imported from here too)
from lvu.types import (Audio, Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score,
                       Subtitle, VideoMeta)
from lvu.textlines import text_lines

if TYPE_CHECKING:
    from lvu.scoring.judges import Judgement, JudgeTask


class BadRecord(BaseModel):
    """A release record that could not become a Sample; recorded as a failed sample."""

    id: str
    error: str


class Benchmark(ABC):
    """Base class. Subclasses declare `Settings` (a typed model of their settings, defaults = the
    paper's; lvu.benchmarks.settings) and implement the steps. A plugin may declare a plain
    `defaults` dict instead (an untyped model is made from it), and a registered variant may
    override `defaults` to change some of its parent's."""

    name: ClassVar[str] = ""
    Settings: ClassVar[type[BenchmarkSettings]] = BenchmarkSettings
    """The settings model: every setting's type, range, default and docs."""
    defaults: ClassVar[dict[str, Any]] = {}
    """{setting: default} (from `Settings`): input settings the paper used; users override any per run."""
    settings: dict[str, Any]
    """This benchmark's settings as validated (the dict hashed into the run id)."""
    config: BenchmarkSettings
    """The same settings as the typed model (subclasses narrow the annotation to their own model)."""

    expected_counts: ClassVar[dict[str, int]] = {}
    """Questions per split/subset as the paper reports them, checked by `lvu data check`."""
    reference: ClassVar[list[dict[str, Any]]] = []
    """The paper's result rows as data: {"table": ..., "model": ..., "frames": ..., <breakdown>: score}."""
    audio_modes: ClassVar[tuple[str, ...]] = ()
    """The `audio` settings the protocol allows besides "none" ("whole", "interleave"; see
    lvu.media.audio); empty: the benchmark takes no audio. `audio` enters the settings (so the run
    id) only when it is not "none", so runs stored before audio existed keep their ids."""

    def __init__(self, **settings: Any) -> None:
        if "audio" not in self.defaults and "audio" in settings:
            from lvu.media.audio import check_mode

            if check_mode(settings["audio"], self.name, self.audio_modes) == "none":
                settings = {k: v for k, v in settings.items() if k != "audio"}
        unknown = set(settings) - set(self.defaults) - {"data", "video_dir", "limit", "audio"}
        if unknown:
            from lvu.errors import LvuError

            raise LvuError(
                f"benchmark {self.name!r} has no setting(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(self.defaults))}"
            )
        self.settings: dict[str, Any] = {**self.defaults, **{k: v for k, v in settings.items() if v is not None}}
        from lvu.args import check_benchmark_settings

        check_benchmark_settings(self.name, self.settings, self.defaults)  # resize, limit, seed: one-line errors
        if "audio" in self.defaults:
            from lvu.media.audio import check_mode

            check_mode(self.settings["audio"], self.name, self.audio_modes)
        fields = type(self).Settings.model_fields
        self.config = type(self).Settings.parse(self.name, {k: v for k, v in self.settings.items() if k in fields})
        self.settings.update(self.config.as_dict())

    @abstractmethod
    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        """Read the release files. Per-record problems come back as BadRecords, not exceptions."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "Settings" in cls.__dict__:  # the typed model is the one source of the defaults
            cls.defaults = cls.Settings.defaults()
        elif "defaults" in cls.__dict__:  # a plugin's plain dict, or a variant changing its parent's defaults
            parent = cls.Settings
            cls.Settings = (from_defaults(cls.__name__, cls.defaults) if not parent.model_fields
                            else with_defaults(parent, cls.__name__, cls.defaults))
        plan = cls.__dict__.get("plan")
        if plan is not None and _old_plan_signature(plan):
            cls.plan = _duration_plan(cls, plan)  # type: ignore[method-assign]

    @abstractmethod
    def plan(self, sample: Sample, video: VideoMeta) -> InputPlan:
        """Frame times and subtitle mode for this sample, given what is known of its video.

        `video` (lvu.types.VideoMeta) is built once per sample by the engine: the release's
        duration when it gives one, and the file's probed frame rate, frame count and (where
        known) keyframe times, read from the file only when the plan asks for them. A benchmark
        never probes the video itself.

        `subtitle_mode` is the mode the protocol wants *if* cues exist, whether or not this sample
        has a subtitle file: the engine takes the cues from the sample's subtitle file, else (with
        --asr) from the Whisper transcript of its audio, else there are none. "none" means the
        prompt takes no engine-selected cues (the user's setting, or a benchmark that reads its
        subtitle files itself), so --asr adds nothing to it either."""

    @abstractmethod
    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        """The exact prompt: frames and selected cues arranged with the protocol's text."""

    @abstractmethod
    def extract(self, sample: Sample, response: Response) -> Prediction:
        """The official answer extraction."""

    @abstractmethod
    def score(self, sample: Sample, prediction: Prediction) -> Score:
        """Judge one prediction."""

    @property
    def audio_mode(self) -> str:
        """'none', 'whole' or 'interleave': whether and how the prompt gets the video's audio."""
        return str(self.settings.get("audio") or "none")

    def place_audio(self, sample: Sample, prompt: Prompt, clips: list[Audio]) -> Prompt:
        """The prompt with the audio clips (the engine cut them by `lvu.media.audio.spans`) placed.
        Default: lvu.media.audio.place — `whole` after the frames and before the text that follows
        them, `interleave` each clip after its frame. Override where a protocol puts audio elsewhere."""
        from lvu.media.audio import place

        return prompt.model_copy(update={"parts": place(list(prompt.parts), clips, self.audio_mode)})

    def data_version(self) -> str | None:
        """An identity of the data that goes into the run id (so regenerated data is a new run)."""
        return None

    def loaded(self) -> tuple[list[Sample], list[BadRecord]]:
        """`load()` once per benchmark object: the run id's data fingerprint and the run that
        follows read the same samples (and the release files only once)."""
        cached = getattr(self, "_loaded", None)
        if cached is None:
            cached = self._loaded = self.load()
        return cached

    # ---- optional steps: data validation, scoring saved predictions, submissions ------------------

    def check(self) -> list[str]:
        """Problems with the release files, one line each (empty: all good). Generic checks here:
        unreadable records, repeated ids, answers out of range, missing videos and subtitle files,
        and question counts against `expected_counts` when the split is named there.
        Subclasses add their own (e.g. LVBench's 103 videos) by extending the list."""
        samples, bad = self.loaded()
        problems = [b.error for b in bad]
        seen: set[str] = set()
        for s in samples:
            if s.id in seen:
                problems.append(f"{s.id}: repeated sample id")
            seen.add(s.id)
            if isinstance(s.answer, int) and not 0 <= s.answer < len(s.options):
                problems.append(f"{s.id}: answer index {s.answer} outside the {len(s.options)} options")
            if (missing := self.missing_video(s)) is not None:
                problems.append(missing)
            if s.subtitles is not None and not Path(s.subtitles.path).exists():
                problems.append(f"{s.id}: subtitle file {s.subtitles.path} not found")
        split = self.settings.get("split")
        expected = self.expected_counts.get(str(split)) if split is not None else None
        if expected is not None and len(samples) + len(bad) != expected:
            problems.append(f"{self.name} {split}: {len(samples) + len(bad)} questions, the paper has {expected}")
        return problems

    def missing_video(self, sample: Sample) -> str | None:
        """None when the sample's video file is there; else the one line a run stores as the
        sample's data error (docs/runs.md) and `lvu data check` prints: the paths tried and the fix.
        Loaders that look in several places (the JSONL format) override it to name them all."""
        if Path(sample.video.path).exists():
            return None
        where = "under --video-dir" if self.settings.get("video_dir") else ""
        return missing_video_line(sample.id, [(sample.video.path, where)])

    def read_predictions(self, path: Path) -> list[tuple[Sample, str]]:
        """(sample, raw response) pairs from a predictions file, for `lvu score`. Default: JSONL
        lines with `sample_id` and `response` (what `lvu results export` writes), joined with
        this benchmark's samples. Benchmarks override this to read their official output format."""
        samples = {s.id: s for s in self.load()[0]}
        return read_prediction_lines(path, samples, key_of=lambda row: row["sample_id"],
                                     response_of=lambda row: row.get("response"), what="sample_id")

    def write_submission(self, results: list[SampleResult], path: Path) -> Path:
        """Write predictions in the official submission format (benchmarks with hidden answers)."""
        from lvu.errors import LvuError

        raise LvuError(f"benchmark {self.name!r} has no submission format (its answers are public)")

    # ---- judged scoring (open-ended answers, generation tasks): lvu.scoring.judges ------------------

    def judge_task(self, sample: Sample, prediction: Prediction) -> JudgeTask | None:
        """What a judge must decide about this prediction, or None (the default) when `score` is final."""
        return None

    def judged_score(self, sample: Sample, prediction: Prediction, judgement: Judgement) -> Score:
        """The score of a prediction from the judge's decision on `judge_task(sample, prediction)`."""
        raise NotImplementedError(f"benchmark {self.name!r} defines no judge task")

    def choice_task(self, sample: Sample, prediction: Prediction, reply: str, *, llm_extract: bool) -> JudgeTask | None:
        """The judge task that reads which option a multiple-choice `reply` chooses, or None. By
        default lvu's LLM choice extraction (kind "choice", options shown), only with `llm_extract`
        and only where the rule extractor found no option (`needs_choice_fallback`). A harness whose
        own protocol asks a judge (VLMEvalKit's MLVU) overrides this (lvu.runs.judging asks it)."""
        from lvu.scoring.judges import JudgeTask

        if not (llm_extract and needs_choice_fallback(sample, prediction)):
            return None
        return JudgeTask(kind="choice", question=sample.question, candidate=reply, options=list(sample.options))

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """Tables in the paper's layout. Default: overall plus one table per label key. The results
        may come without their display fields (prompt, question, options, explanation, frame
        timestamps: `Store.scoring_results`): aggregate from scores, answers, labels, judgements."""
        from lvu.scoring.choice import breakdowns_by_label

        return breakdowns_by_label(results)


def missing_video_line(sample_id: str, tried: list[tuple[str, str]], name: str | None = None) -> str:
    """'<id>: video <name> not found — tried <path> (<where>), ... — pass --video-dir DIR holding <name>'.
    `tried`: (path, where it came from) pairs, the loader's first choice first; `name`: what the
    data calls the video (default: the first path's file name)."""
    paths = ", ".join(f"{p} ({why})" if why else p for p, why in tried)
    name = name or (Path(tried[0][0]).name if tried else "?")
    return f"{sample_id}: video {name} not found — tried {paths} — pass --video-dir DIR holding {name}"


# ---- plugins written for the old `plan(sample, duration)` ------------------------------------------


def _old_plan_signature(plan: Any) -> bool:
    """Whether `plan` is written as `plan(self, sample, duration)`, the signature before VideoMeta."""
    import inspect

    try:
        params = list(inspect.signature(plan).parameters)
    except (TypeError, ValueError):
        return False
    return len(params) >= 3 and params[2] == "duration"


def _duration_plan(cls: type, plan: Callable[..., InputPlan]) -> Callable[..., InputPlan]:
    """`plan` adapted to the VideoMeta signature: it is handed the duration, as before."""
    import functools
    import warnings

    warnings.warn(f"{cls.__module__}.{cls.__qualname__}.plan(self, sample, duration) is the old signature; "
                  "it now receives plan(self, sample, video: VideoMeta) — use video.duration "
                  "(docs/plugins.md)", DeprecationWarning, stacklevel=4)  # the class statement

    @functools.wraps(plan)
    def adapted(self: Any, sample: Sample, video: VideoMeta | float) -> InputPlan:
        return plan(self, sample, video.duration if isinstance(video, VideoMeta) else video)

    return adapted


def needs_choice_fallback(sample: Sample, prediction: Prediction) -> bool:
    """A multiple-choice reply in which the rule extractor found no option: no prediction, a
    non-option value, or a random fallback pick (LongVideoBench's `method="random"`)."""
    if not sample.options:
        return False
    value = prediction.value
    return prediction.method == "random" or not isinstance(value, int) or not 0 <= value < len(sample.options)


# ---- reading saved responses: the generic formats `read_predictions` overrides share -------------


def lmms_log_response(row: dict) -> Any:
    """The response of an lmms-eval `--log_samples` line: `filtered_resps`, else `resps`, taking
    the first item of nested lists ("" for an empty one). KeyError when the line has neither.
    An empty reply is `"filtered_resps": ""` with no `resps` (0.7.3 drops resps equal to it)."""
    response = row["filtered_resps"] if row.get("filtered_resps") is not None else row["resps"]
    while isinstance(response, list):
        response = response[0] if response else ""
    return response


def lvu_or_lmms_response(row: dict) -> Any:
    """`response` of an lvu export line, else the lmms-eval log line's response."""
    response = row.get("response")
    return lmms_log_response(row) if response is None else response


def json_id_map(text: str) -> dict | None:
    """The file's JSON object when the whole file is one {id: response} map (and not a single
    lvu export or lmms-eval log line); else None."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        return None
    return whole if isinstance(whole, dict) and "sample_id" not in whole and "doc" not in whole else None


def read_prediction_lines(
    path: Path,
    samples: dict[str, Sample],
    text: str | None = None,
    *,
    key_of: Callable[[dict], Any],
    response_of: Callable[[dict], Any] = lvu_or_lmms_response,
    what: str,
    expected: str = "",
) -> list[tuple[Sample, str]]:
    """(sample, response) pairs from JSON lines (`text`, else the file's), each joined with
    `samples` by `key_of(row)`; blank lines are skipped, a missing response is "". A line that
    does not parse or names no known sample is a DataError '<path>:<line>: not a prediction line
    with a known <what> (<error>)[ — <expected>]'."""
    from lvu.errors import DataError

    if text is None:
        text = Path(path).read_text(encoding="utf-8")
    pairs = []
    for lineno, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pairs.append((samples[str(key_of(row))], str(response_of(row) or "")))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, IndexError) as e:
            hint = f" — {expected}" if expected else ""
            raise DataError(f"{path}:{lineno}: not a prediction line with a known {what} ({e}){hint}") from None
    return pairs


BENCHMARKS: Registry[Benchmark] = Registry("benchmark", base=Benchmark, group="lvu.benchmarks")  # + plugins: docs/plugins.md
register_benchmark = BENCHMARKS.register
