"""`lvu build convert ucf-crime`: MLVU's Anomaly Recognition (AR) from UCF-Crime's labels (paper
§3.1, App. E.2: "videos exceeding three minutes ... modified the original labels to fit a
multiple-choice format"). One 4-option question per video: its class among three other classes.

Files read (UCF-Crime as published by its authors, github.com/WaqasSultani/AnomalyDetectionCVPR2018):

- the temporal annotation of the test videos, `Temporal_Anomaly_Annotation_for_Testing_Videos.txt`
  (also `Temporal_Anomaly_Annotation.txt`): per line `Arrest001_x264.mp4  Arrest  1185  1485  -1  -1`
  = video file, class, start and end frame of the first and of the second anomalous event (-1: no
  such event; Normal videos are `Normal  -1  -1  -1  -1`);
- the split lists `Anomaly_Train.txt` / `Anomaly_Test.txt`: per line `Abuse/Abuse001_x264.mp4`, the
  class being the folder (`Training_Normal_Videos_Anomaly/...`, `Testing_Normal_Videos_Anomaly/...`:
  Normal).

A file's kind is what most of its lines are; a file that is neither is refused in one line. Event
frames become seconds by the video's own frame rate (frame / fps; the file does not say whether
frames count from 0 or 1 — one frame's difference) and go to `extra.evidence` ([[start, end], ...],
what `lvu build ladder` reads); MLVU leaves AR out of its Time-ladder (a global task).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from lvu.benchmarks.haystack import AnswerBalancer
from lvu.construct.convert_common import (N_DECOYS, ConvertOptions, ConvertPipeline, DecoyStage, Problem,
                                          allocate_decoys, parse_choice, place, seeded, skip_item, video_index)
from lvu.construct.pipeline import Item, register_pipeline, register_stage
from lvu.errors import DataError, LvuError
from lvu.types import Sample, VideoRef

CLASSES = ("Abuse", "Arrest", "Arson", "Assault", "Burglary", "Explosion", "Fighting", "Normal", "RoadAccidents",
           "Robbery", "Shooting", "Shoplifting", "Stealing", "Vandalism")
"""UCF-Crime's 13 anomaly classes and Normal, as the dataset spells them."""
QUESTION = "Does this surveillance video show an anomalous event? If so, which kind?"
"""lvu's wording (MLVU's AR question is not in the paper; its released records are not our text)."""
NO_ANOMALY = "No anomaly"
"""How the Normal class reads as an option (the question asks for an anomaly)."""
DECOY_PROMPT = """\
You are helping to build a multiple-choice benchmark from the UCF-Crime surveillance video dataset. \
The correct answer for a video is its anomaly class "{answer}". Choose the {n} classes from the list \
below that a viewer would most easily confuse with "{answer}" when watching surveillance footage; \
they become the wrong options.

Classes: {classes}

Reply with exactly one line, using the class names exactly as listed:
DECOYS: <class>, <class>, <class>"""
"""lvu's prompt for `--llm` (the paper used no model for AR)."""
TOLERANCE_S = 1.0
"""An event may end up to this far past the decoded video (frame rounding, a cut last GOP)."""
_NAME = re.compile(r"^[\w.+-]+\.(mp4|avi|mkv|mov|webm|m4v)$", re.I)


def readable(cls: str) -> str:
    """'RoadAccidents' -> 'Road accidents', 'Normal' -> 'No anomaly': sentence case for every option."""
    if cls == "Normal":
        return NO_ANOMALY
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", cls.replace("_", " ")) or [cls]
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:]


def _key(name: str) -> str:
    return re.sub(r"[\s_-]", "", name).lower()


_CANON = {_key(c): c for c in CLASSES} | {_key(readable(c)): c for c in CLASSES}


def canonical_class(name: str) -> str | None:
    """A class name or a split-list folder as UCF-Crime spells the class; None when it is none."""
    if "normal" in name.lower():
        return "Normal"
    return _CANON.get(_key(name))


# ---- reading the files -------------------------------------------------------------------------

def _line_kind(fields: list[str]) -> str | None:
    if len(fields) == 6 and _NAME.match(fields[0]) and all(re.fullmatch(r"-?\d+", f) for f in fields[2:]):
        return "temporal"
    if len(fields) == 1 and _NAME.match(fields[0].rsplit("/", 1)[-1]):
        return "split"
    return None


EXPECTED = ("expected UCF-Crime's temporal annotation (lines like `Arrest001_x264.mp4  Arrest  1185  1485  -1  -1`: "
            "video, class, start/end frames of two events, -1 = none) or a split list like Anomaly_Train.txt "
            "(lines like `Abuse/Abuse001_x264.mp4`)")


def read_annotation(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The records of one file ({source, name, class, events, split, folder}) and its bad lines."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: unreadable ({e.__class__.__name__}) — {EXPECTED}") from None
    rows = [(n, line.split()) for n, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    kinds = Counter(_line_kind(f) for _, f in rows)
    kind = max(("temporal", "split"), key=lambda k: kinds[k])
    if not rows or kinds[kind] * 2 <= len(rows):
        raise DataError(f"{path}: not a UCF-Crime annotation file — {EXPECTED}")
    split = "train" if "train" in path.name.lower() else "test" if kind == "temporal" or "test" in path.name.lower() else None
    records, problems = [], []
    for n, fields in rows:
        source = f"{path.name}:{n}"
        if _line_kind(fields) != kind:
            problems.append(Problem(source, fields[0], "bad", f"not a {kind} line ({' '.join(fields)[:80]!r}) — expected "
                                    + ("`video class s1 e1 s2 e2`" if kind == "temporal" else "`Folder/Video.mp4`")))
            continue
        folder, _, name = fields[0].rpartition("/") if kind == "split" else ("", "", fields[0])
        letters = re.match(r"[A-Za-z]*", name)
        assert letters is not None  # (the pattern matches every name, if only with "")
        stem = letters.group(0)  # (a list line without folder)
        label = fields[1] if kind == "temporal" else folder.rsplit("/", 1)[-1] or stem
        cls = canonical_class(label)
        if cls is None:
            problems.append(Problem(source, name, "bad", f"class {label!r} is not a UCF-Crime class "
                                    f"({', '.join(CLASSES)})"))
            continue
        events, bad = [], None
        for a, b in zip(fields[2::2], fields[3::2]) if kind == "temporal" else ():
            a_, b_ = int(a), int(b)
            if (a_ == -1) != (b_ == -1) or (a_ != -1 and not 0 <= a_ <= b_):
                bad = f"event frames {a} {b} are not start <= end (or -1 -1 for none)"
            elif a_ != -1:
                events.append([a_, b_])
        if bad is None and cls == "Normal" and events:
            bad = "a Normal video with anomalous event frames"
        if bad:
            problems.append(Problem(source, name, "bad", bad))
            continue
        records.append({"source": source, "name": name, "class": cls, "events": events, "split": split,
                        "folder": folder, "temporal": kind == "temporal"})
    return records, problems


def merge_records(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """One record per video: a video listed twice (a split list and the temporal file) keeps its
    events; the same video under two classes is a problem."""
    by_name: dict[str, dict[str, Any]] = {}
    problems = []
    for r in records:
        old = by_name.get(r["name"])
        if old is None:
            by_name[r["name"]] = r
        elif old["class"] != r["class"]:
            problems.append(Problem(r["source"], r["name"], "repeated",
                                    f"class {r['class']} here but {old['class']} at {old['source']} — fix one"))
        elif r["temporal"] and not old["temporal"]:
            by_name[r["name"]] = {**r, "folder": old["folder"] or r["folder"], "split": r["split"] or old["split"]}
    return list(by_name.values()), problems


def find_video(record: dict[str, Any], root: Path, index: dict[str, list[Path]]) -> Path | None:
    """VIDEOS/<folder>/<name>, else any file of that name (or stem) under VIDEOS, preferring one in
    a folder named after the class."""
    direct = root / record["folder"] / record["name"]
    if record["folder"] and direct.is_file():
        return direct
    hits = index.get(record["name"]) or index.get(Path(record["name"]).stem) or []
    return next((p for p in hits if canonical_class(p.parent.name) == record["class"]), hits[0] if hits else None)


# ---- planning ----------------------------------------------------------------------------------

def plan_questions(records: list[dict[str, Any]], root: Path, *, min_seconds: float, seed: int) -> list[Item]:
    """Items: the videos found, probed and long enough, with their decoys and answer positions;
    every other record as a skipped item with the reason."""
    from lvu.construct.signals import probe_video

    index = video_index(root)
    items, keep = [], []
    for r in records:
        rid = Path(r["name"]).stem
        path = find_video(r, root, index)
        if path is None:
            items.append(skip_item(Problem(r["source"], rid, "missing", f"video {r['name']} not found under {root} "
                                           "(flat or in class folders) — add it or drop the line")))
            continue
        try:
            info = probe_video(path)
        except LvuError as e:
            items.append(skip_item(Problem(r["source"], rid, "unreadable", str(e)), str(path)))
            continue
        if info.duration < min_seconds:
            items.append(skip_item(Problem(r["source"], rid, "short", f"{info.duration:.1f} s is shorter than "
                                           f"--min-seconds {min_seconds:g}"), str(path)))
            continue
        last = info.duration * info.fps
        if any(b > last + TOLERANCE_S * info.fps for _, b in r["events"]):
            items.append(skip_item(Problem(r["source"], rid, "out-of-range",
                                           f"event frames {r['events']} pass the video's last frame ({last:.0f} at "
                                           f"{info.fps:g} fps) — the annotation does not fit this file"), str(path)))
            continue
        evidence = [[round(a / info.fps, 3), round(min(b / info.fps, info.duration), 3)] for a, b in r["events"]]
        keep.append(len(items))
        items.append(Item(rid, str(path.resolve()), {
            "source": r["source"], "name": r["name"], "class": r["class"], "split": r["split"],
            "duration": round(info.duration, 3), "fps": info.fps, "event_frames": r["events"], "evidence": evidence}))
    classes = list(dict.fromkeys([*CLASSES, *(items[i].data["class"] for i in keep)]))
    quota = {c: 3.0 * n for c, n in Counter(items[i].data["class"] for i in keep).items()}
    rng = seeded(seed, "ucf-crime")
    drawn = allocate_decoys([[c for c in classes if c != items[i].data["class"]] for i in keep], quota, rng)
    balance = AnswerBalancer(rng)
    for i, decoys in zip(keep, drawn):  # 14 classes: three decoys always fit
        items[i].data |= {"decoys": decoys, "answer": balance.take(N_DECOYS + 1),
                          "candidates": [c for c in classes if c != items[i].data["class"]]}
    return items


# ---- the pipeline ------------------------------------------------------------------------------

class UcfOptions(ConvertOptions):
    min_seconds: float = Field(default=180.0, ge=0, description="shorter videos are skipped (MLVU: longer than three minutes)")


@register_stage("ucf.decoys")
class UcfDecoys(DecoyStage):
    output = "decoys"
    prompt = DECOY_PROMPT

    def llm_payload(self, item: Item) -> dict[str, Any]:
        return {"class": item.data["class"], "candidates": item.data["candidates"]}

    def llm_prompt(self, payload: dict[str, Any]) -> str | None:
        return DECOY_PROMPT.format(answer=payload["class"], n=N_DECOYS, classes=", ".join(payload["candidates"]))

    def parse(self, reply: str, payload: dict[str, Any]) -> list[Any]:
        return parse_choice(reply, payload["candidates"], normalise=lambda t: canonical_class(t) or t.lower())


@register_pipeline("convert-ucf-crime")
class UcfCrimeConvert(ConvertPipeline):
    """MLVU's Anomaly Recognition from UCF-Crime: INPUTS = annotation file(s) (temporal annotation,
    Anomaly_Train.txt / Anomaly_Test.txt), then the videos folder."""

    Options = UcfOptions
    jsonl_name: ClassVar[str] = "anomaly_recognition.jsonl"
    stage_class = UcfDecoys

    def read(self, annotations: list[Path], videos: Path) -> list[Item]:
        records, problems = [], []
        for path in annotations:
            got, bad = read_annotation(path)
            records += got
            problems += bad
        merged, repeated = merge_records(records)
        items = plan_questions(merged, videos, min_seconds=self.options["min_seconds"], seed=self.options["seed"])
        taken = {i.id for i in items}
        for p in problems + repeated:  # ids are unique: a bad line of a video converted elsewhere is file:line
            rid = Path(p.record).stem or p.source
            rid = rid if rid not in taken else p.source
            taken.add(rid)
            items.append(skip_item(Problem(p.source, rid, p.kind, p.reason)))
        return items

    def sample(self, item: Item, decoys: list[Any]) -> Sample:
        d = item.data
        options = place(d["class"], decoys, d["answer"], seeded(self.options["seed"], item.id))
        labels: dict[str, str | list[str]] = {"task": "AR", "question_type": "anomaly_reco", "group": "Holistic",
                                              "class": readable(d["class"])}
        if d.get("split"):
            labels["split"] = d["split"]
        extra: dict[str, Any] = {"source": d["source"], "class": d["class"], "option_classes": options,
                                 "fps": d["fps"], "event_frames": d["event_frames"]}
        if d["evidence"]:
            extra["evidence"] = d["evidence"]
        return Sample(id=item.id, benchmark="ucf-crime", video=VideoRef(path=item.path, duration=d["duration"]),
                      question=QUESTION, options=[readable(o) for o in options], answer=d["answer"], labels=labels,
                      extra=extra)
