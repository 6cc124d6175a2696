"""`lvu build select`: each paper's video selection (lvu.construct.select_rules) as a resumable build.

    select.probe → select.sidecars → [select.language] → [select.quality] → select.rules → export

Per video: the probe (duration, size, subtitle tracks and their language tags), the files beside it
(`<stem>.srt/.vtt`, `<stem>.<lang>.srt/.vtt`, `<stem>.info.json`), optionally the spoken language
by a local multilingual Whisper (`language_model`) and a quality score (`quality`: any registered
quality model), then the rules' verdict: one evidence record, stored, so `lvu build show OUT VIDEO`
prints it. The export samples each duration group to its target (round-robin over categories, seeded)
and splits val/test (lvu.construct.select_sampling), writing OUT/selected.jsonl, OUT/evidence.jsonl,
OUT/val.jsonl + OUT/test.jsonl (when the rules split) and OUT/summary.json.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
from pydantic import Field, field_validator

from lvu.construct.pipeline import (VIDEO_EXTS, Item, Pipeline, PipelineOptions, Stage, Unit, register_pipeline,
                                    register_stage)
from lvu.construct.select_rules import AsOfDate, SelectionRules, evaluate, language_code, load_rules
from lvu.errors import DataError, LvuError
from lvu.registry import Registry

INFO_SUFFIX = ".info.json"


class QualityModel:
    """A learned image-quality scorer for `--quality`: `score(frames)` -> a float in [0, 1] for the
    video (frames: RGB uint8 arrays spread over it). Register one with `@register_quality_model(name)`,
    in an installed package's `lvu.quality_models` entry-point group, or pass `module:Class`; its
    constructor takes the `--quality-arg K=V` values as keyword arguments."""

    name = ""

    def __init__(self, **args: Any) -> None:
        self.args = args

    @property
    def identity(self) -> dict[str, Any]:
        """What enters the stored scores' keys (another model or argument: scored again)."""
        return {"model": self.name or type(self).__qualname__, "args": self.args}

    def score(self, frames: list[np.ndarray]) -> float:
        raise NotImplementedError


QUALITY_MODELS: Registry[QualityModel] = Registry("quality model", base=QualityModel, group="lvu.quality_models")
register_quality_model = QUALITY_MODELS.register


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def sidecar_files(video: Path) -> tuple[Path, list[tuple[Path, str | None]]]:
    """(`<stem>.info.json`, [(subtitle file, its language tag or None)]) beside a video."""
    prefix = video.stem + "."
    subs = []
    for p in sorted(video.parent.glob(f"{video.stem}.*")):
        if p.suffix.lower() not in (".srt", ".vtt") or not p.is_file():
            continue
        tag = p.name[len(prefix):-len(p.suffix)]
        if p.name.startswith(prefix) and "." not in tag:
            subs.append((p, tag or None))
    return video.with_name(video.stem + INFO_SUFFIX), subs


class SelectStage(Stage):
    unit = "video"

    @property
    def rules(self) -> SelectionRules:
        return load_rules(self.options["rules"])

    def collect(self, video: Item, results: dict[str, Any]) -> Any:
        return results["video"]


@register_stage("select.probe")
class Probe(SelectStage):
    """Duration, displayed size, audio, subtitle tracks with their language tags; an unreadable file is
    an output too ({"error": ...}): one evidence line, never a failed build."""

    output = "probe"
    max_concurrency = 4

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        return await asyncio.to_thread(probe_facts, ctx.video.path)

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        try:
            fp = video.fingerprint
        except Exception as e:  # a vanished file: its own error line
            fp = f"unreadable: {type(e).__name__}"
        return [Unit(video.id, "video", {"video": fp})]


def probe_facts(path: str) -> dict[str, Any]:
    import av

    from lvu.construct.signals import probe_video

    try:
        info = probe_video(path)
        with av.open(path) as container:
            tracks = [{"index": s.index, "codec": s.codec_context.name if s.codec_context else None,
                       "language": (s.metadata or {}).get("language")} for s in container.streams.subtitles]
            audio = bool(container.streams.audio)
    except (DataError, LvuError) as e:
        return {"error": f"unreadable video: {e}"}
    except Exception as e:  # PyAV's own errors on a broken file: one line
        return {"error": f"unreadable video: {path}: {type(e).__name__}: {e}".splitlines()[0]}
    return {"duration": round(info.duration, 3), "width": info.width, "height": info.height, "fps": info.fps,
            "codec": info.codec, "audio": audio, "subtitle_tracks": tracks}


@register_stage("select.sidecars")
class Sidecars(SelectStage):
    """The subtitle files beside the video (language from `<stem>.<lang>.srt`) and the info.json
    fields the rules read (yt-dlp's view_count, upload_date, categories, language, ...)."""

    output = "sidecars"

    def settings(self) -> Any:
        return {"fields": self.rules.fields()}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        info, subs = sidecar_files(Path(video.path))
        return [Unit(video.id, "video", {"info": _digest(info), "subtitles": [[p.name, tag] for p, tag in subs]})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        info_path, subs = sidecar_files(Path(ctx.video.path))
        out: dict[str, Any] = {"subtitles": [{"file": p.name, "language": tag} for p, tag in subs], "info": None}
        if info_path.is_file():
            try:
                doc = json.loads(info_path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                out["info_error"] = f"{info_path.name} is not valid JSON ({type(e).__name__}): metadata rules not checked"
                return out
            if not isinstance(doc, dict):
                out["info_error"] = f"{info_path.name} is not a JSON object: metadata rules not checked"
                return out
            out["info"] = {k: doc[k] for k in self.rules.fields() if k in doc}
        return out


@register_stage("select.language")
class SpokenLanguage(SelectStage):
    """The spoken language by a local multilingual Whisper (`language_model`), only for videos whose
    subtitles and info.json name none."""

    output = "language"
    inputs = ("probe", "sidecars")
    max_concurrency = 1

    def settings(self) -> Any:
        return {"model": self.options.get("language_model")}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        probe, side = inputs["probe"], inputs["sidecars"]
        known = any(language_code(t.get("language")) for t in [*(probe.get("subtitle_tracks") or []),
                                                                 *side.get("subtitles", [])])
        known = known or bool(language_code((side.get("info") or {}).get("language")))
        needed = not known and not probe.get("error") and bool(probe.get("audio"))
        return [Unit(video.id, "video", {"video": video.fingerprint if needed else None})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any] | None:
        if unit.payload["video"] is None:
            return None
        return await asyncio.to_thread(detect_language, ctx.video.path, self.options["language_model"])


def multilingual_whisper(model_dir: str) -> Any:
    """A faster-whisper model from a local folder, refused in one line when it cannot identify languages."""
    try:
        from faster_whisper import WhisperModel
    except ImportError:
        raise LvuError("--language-model needs faster-whisper: pip install 'lvu[asr]'") from None
    if not Path(model_dir).expanduser().is_dir():
        raise LvuError(f"--language-model {model_dir}: not a folder — pass a local multilingual Whisper model "
                       "(CTranslate2 format, e.g. faster-whisper-small); nothing is downloaded")
    model = WhisperModel(str(Path(model_dir).expanduser()), device="cpu", compute_type="int8")
    if not model.model.is_multilingual:
        raise LvuError(f"--language-model {model_dir}: an English-only Whisper (like tiny.en) cannot identify "
                       "languages — pass a multilingual one (e.g. faster-whisper-small)")
    return model


def detect_language(path: str, model_dir: str) -> dict[str, Any]:
    from lvu.media.audio import audio_track

    track = audio_track(path)
    clip = track.clip(track.offset, min(track.seconds, track.offset + 30.0))
    audio = clip.samples.astype(np.float32) / 32768.0
    if clip.sample_rate != 16000:
        from scipy.signal import resample_poly

        audio = resample_poly(audio, 16000, clip.sample_rate).astype(np.float32)
    language, probability, _ = multilingual_whisper(model_dir).detect_language(audio)
    return {"language": language_code(language), "probability": round(float(probability), 4),
            "model": f"Whisper ({Path(model_dir).name})"}


@register_stage("select.quality")
class Quality(SelectStage):
    """The quality model's score of `quality.frames` frames spread over the video (LongVideoBench:
    Q-Align, keep > 0.25 on [0, 1])."""

    output = "quality"
    inputs = ("probe",)
    max_concurrency = 1

    def settings(self) -> Any:
        # by name and arguments, so `lvu build status/show` replan without importing the model
        return {"model": self.options["quality"], "args": self.options.get("quality_args") or {},
                "frames": self._frames()}

    def _frames(self) -> int:
        return self.rules.quality.frames if self.rules.quality else 8

    def scorer(self) -> QualityModel:
        if not hasattr(self, "_scorer"):
            self._scorer = QUALITY_MODELS.get(self.options["quality"])(**(self.options.get("quality_args") or {}))
        return self._scorer

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        error = inputs["probe"].get("error")
        return [Unit(video.id, "video", {"video": None if error else video.fingerprint})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any] | None:
        if unit.payload["video"] is None:
            return None
        return await asyncio.to_thread(self._score, ctx.video.path)

    def _score(self, path: str) -> dict[str, Any]:
        from lvu.construct.signals import iter_frames
        from lvu.media.av_io import Resize

        info_frames = [img for _, img in iter_frames(path, 1.0, resize=Resize(long=768), max_frames=self._frames())]
        value = float(self.scorer().score(info_frames))
        if not 0.0 <= value <= 1.0:
            raise LvuError(f"quality model {self.options['quality']} scored {value} — a quality model must return "
                           "a score in [0, 1]")
        return {"score": round(value, 4), "model": self.scorer().identity["model"], "frames": len(info_frames)}


@register_stage("select.rules")
class Rules(SelectStage):
    """The rules' verdict on one video: every rule's line with its numbers (the evidence record)."""

    output = "evaluation"

    def __init__(self, options: dict[str, Any] | None = None, extra: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self.inputs = ("probe", "sidecars", *extra)

    def settings(self) -> Any:
        return {"rules": self.options["rules"], "as_of": self.options["as_of"]}

    def plan(self, video: Item, inputs: dict[str, Any]) -> list[Unit]:
        return [Unit(video.id, "video", {"facts": {**inputs, "folder": video.data.get("folder", "")}})]

    async def run(self, unit: Unit, ctx: Any) -> dict[str, Any]:
        return evaluate(self.rules, unit.payload["facts"], date.fromisoformat(self.options["as_of"]))


class SelectOptions(PipelineOptions):
    rules: Union[str, dict[str, Any]] = Field(default="longvideobench", description="a built-in (longvideobench, "
                                              "videomme, lvbench, neptune), a YAML/JSON file, or the rules "
                                              "themselves (what build.json records)")
    seed: int = Field(default=0, description="seeds the sampling within groups and the val/test split")
    as_of: AsOfDate = Field(default=None, validate_default=True, json_schema_extra={"recorded": True}, description="the date upload ages are counted to (YYYY-MM-DD; default "
                                 "today, recorded so a resumed build judges the same)")
    quality: Optional[str] = Field(default=None, description="a quality model (registered name or module:Class) scoring "
                                   "frames in [0, 1]; the rules' quality threshold applies only with one")
    quality_args: dict[str, Any] = Field(default={}, description="the quality model's arguments")
    language_model: Optional[str] = Field(default=None, description="a local multilingual faster-whisper model folder "
                                          "identifying the spoken language of videos without a language tag")

    @field_validator("rules", mode="after")
    @classmethod
    def _resolve(cls, value: Any) -> dict[str, Any]:
        try:
            return load_rules(value).model_dump(mode="json")
        except LvuError as e:
            raise ValueError(str(e)) from None



def find_videos_under(folder: str | Path) -> list[Item]:
    """Every video under a folder (sub-folders too: a sub-folder can be a category), sorted; ids are
    file stems and must be unique; `data.folder` is the sub-folder relative to the root ("" at the top)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise LvuError(f"{folder}: not a folder — pass the folder holding the videos")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in VIDEO_EXTS
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    if not files:
        raise LvuError(f"{folder}: no videos ({', '.join(VIDEO_EXTS)}) under it — pass the folder holding them")
    seen: dict[str, Path] = {}
    items = []
    for path in files:
        if path.stem in seen:
            raise LvuError(f"{seen[path.stem]} and {path}: two videos named {path.stem!r} — rename one (the file "
                           "name is the video id)")
        seen[path.stem] = path
        rel = path.parent.relative_to(root).as_posix()
        items.append(Item(path.stem, str(path.resolve()), {"folder": "" if rel == "." else rel}))
    return items


@register_pipeline("select")
class Select(Pipeline):
    """Each paper's video selection: rules as data, evidence per video, seeded sampling and split."""

    Options = SelectOptions

    def check(self) -> None:
        if self.options.get("quality"):  # an unknown name or argument: one line, before any work
            cls, args = QUALITY_MODELS.get(self.options["quality"]), self.options.get("quality_args") or {}
            try:
                cls(**args)
            except TypeError as e:
                raise LvuError(f"--quality {self.options['quality']}: its arguments {sorted(args)} do not fit ({e}) — "
                               "pass the ones its constructor takes with --quality-arg K=V") from None
        if self.options.get("language_model"):
            multilingual_whisper(self.options["language_model"])

    def stages(self) -> list[Stage]:
        extra = []
        stages: list[Stage] = [Probe(self.options), Sidecars(self.options)]
        if self.options.get("language_model"):
            stages.append(SpokenLanguage(self.options))
            extra.append("language")
        if self.options.get("quality"):
            stages.append(Quality(self.options))
            extra.append("quality")
        return [*stages, Rules(self.options, tuple(extra))]

    def items(self, inputs: Sequence[str]) -> list[Item]:
        if len(inputs) != 1:
            raise LvuError(f"select build: pass one folder of videos (got {len(inputs)} inputs)")
        return find_videos_under(inputs[0])

    def benchmark_file(self, written: dict[str, Any], out: Path) -> Path | None:
        return None  # a list of videos, not questions: nothing to audit for options-only leaks

    def export(self, state: Any, videos: Sequence[Item], out: Path) -> dict[str, Any]:
        from lvu.construct.select_sampling import sample, split

        if any(s.pending for s in state.stages):
            return {}  # a partial list would be sampled differently: written when every video is judged
        rules = load_rules(self.options["rules"])
        judged = state.outputs.get("evaluation", {})
        records: dict[str, dict[str, Any]] = {}
        for v in videos:
            if v.id in judged:
                records[v.id] = {"id": v.id, "path": v.path, **judged[v.id]}
                continue
            why = next((notes[v.id] for notes in state.notes.values() if v.id in notes), "not judged")
            records[v.id] = {"id": v.id, "path": v.path, "keep": False, "group": None, "category": None,
                             "checks": [{"rule": "build", "ok": False, "reason": f"failed: {why}"}]}
        chosen = sample(records, rules, self.options["seed"])
        selected = {vid: r for vid, r in records.items() if vid in chosen and chosen[vid] is None}
        splits = split(selected, rules.split.val, self.options["seed"]) if rules.split else {}
        for vid, r in records.items():
            first = next((c for c in r["checks"] if c["ok"] is False), None)
            r["selected"] = vid in selected
            r["split"] = splits.get(vid)  # None: not selected, or rules without a split
            r["decision"] = ("selected" if r["selected"] else chosen.get(vid) if r["keep"] else
                             f"dropped: {first['reason'] if first else 'failed'}")
        written = {"evidence": _write_jsonl(out / "evidence.jsonl", records.values()),
                   "selected": _write_jsonl(out / "selected.jsonl", [_row(r) for r in records.values() if r["selected"]])}
        if rules.split:
            for name in ("val", "test"):
                written[name] = _write_jsonl(out / f"{name}.jsonl",
                                             [_row(r) for r in records.values() if r["split"] == name])
        summary = _summary(rules, self.options, records)
        _write_text(out / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
        return {**written, "summary": str(out / "summary.json"), "videos": len(records), "selected_count": len(selected)}


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {k: r.get(k) for k in ("id", "path", "group", "category", "duration_s", "analysed_s", "split")}


def _summary(rules: SelectionRules, options: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, Counter] = {}
    for r in records.values():
        if r["keep"]:
            c = groups.setdefault(r["group"], Counter())
            c["passed"] += 1
            c["selected"] += r["selected"]
            if r["split"]:
                c[r["split"]] += 1
    dropped = Counter(next(c["rule"] for c in r["checks"] if c["ok"] is False)
                      for r in records.values() if not r["keep"])
    targets = {g.name: g.target for g in rules.groups}
    return {"rules": rules.name, "source": rules.source, "seed": options["seed"], "as_of": options["as_of"],
            "quality_model": options.get("quality"), "videos": len(records),
            "selected": sum(r["selected"] for r in records.values()),
            # every group the rules name, an empty one too (a target nothing reached is worth seeing)
            "groups": {g: {"target": targets.get(g), "passed": 0, "selected": 0, **dict(groups.get(g, {}))}
                       for g in [*targets, "all"] if g in groups or g in targets},
            "categories": dict(Counter(r["category"] for r in records.values() if r["selected"])),
            "dropped_by": dict(dropped)}


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write_jsonl(path: Path, rows: Any) -> str:
    _write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return str(path)
