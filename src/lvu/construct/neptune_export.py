"""What a Neptune build writes: a benchmark `lvu run` reads at once, in two forms.

- `neptune_full.json`: Neptune's released schema (the repo README: key, video_id, question,
  answer, answer_choice_0..4, answer_id, "question type"; the datasheet's url and decoys), so
  `lvu run -b neptune --data OUT` runs it. `video_id` is the source's id when the video's sidecar
  names it (yt-dlp's info.json `id`), else its page URL, else the file stem; `url` is the page
  (`webpage_url` / `original_url`) or null; `decoys` are the four decoys in the MCQ (the datasheet's
  "four decoy answers": answer + decoys shuffled by the key's seed give answer_choice_0..4). Each
  record also keeps what raters need: every decoy the LLM wrote (`decoys_6`; `mcq_decoys`: the
  places of the MCQ's four among them, [0, 1, 2, 3] until raters choose), the open-set capability
  label, the QAD filter's votes, the video's file name (`video_path`).
- `benchmark.jsonl`: the same questions as lvu JSONL (docs/jsonl-format.md), for `-b jsonl` and
  rater review (`lvu review`: `extra` holds decoys_6, reference and the video's dense_captions,
  the fields lvu.construct.review_labels names; `video_id` there is the bare id naming the
  transcript, `url` the page).
- `removed.json`: the QADs the blind filter removed, with its votes (never in the benchmark).
- `videos/`: links to the source videos (the release layout); `asr/<id>.srt`: the transcript
  (empty without speech), named by the bare id the Neptune loader takes from `video_id`, what
  `-b neptune-asr --data OUT` and the JSONL's subtitles read.

Only questions whose decoys and filter verdict exist are written; the others are counted.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.construct.pipeline import Video
from lvu.errors import DataError
from lvu.types import Sample, Subtitle, SubtitleRef, VideoRef

QUESTION_TYPES: tuple[tuple[str, str], ...] = (
    (r"order|timeline|sequen|temporal|chronolog", "Temporal Ordering"),
    (r"summar|compress|important segment|overall", "Summarization"),
    (r"narrative|mood", "Visual Narrative"),
    (r"cause|effect|why", "Cause And Effect"),
    (r"state", "State Changes"),
    (r"compar", "Comparison"),
    (r"count|how many", "Counting"),
    (r"identif|recogni|visual", "Identification"),
    (r"predict", "Predictive"),
    (r"intent|message|creator", "Creator Intent"),
    (r"goal|purpose", "Goal Reasoning"),
)
"""The open-set capability label the QA prompt asks for -> the released type names (paper Fig. 3),
first match wins, else "Other". The paper grouped them by hand; these rules are ours."""


def question_type(capability: str) -> str:
    text = capability.lower()
    return next((name for pattern, name in QUESTION_TYPES if re.search(pattern, text)), "Other")


def mcq_options(key: str, answer: str, decoys: list[str]) -> tuple[list[str], int]:
    """The five MCQ options (the answer and the first four decoys until raters choose), shuffled by
    a seed from the question's key, and the answer's index: the same on every run and machine."""
    order = list(range(5))
    random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")).shuffle(order)
    options = [([answer] + decoys[:4])[i] for i in order]
    return options, order.index(0)


def question_key(video: str, n: int) -> str:
    return f"{video}/{n}"


def _link(source: str, target: Path) -> None:
    """A link to the source video in the release layout (a copy where links are not possible);
    never over the source itself (videos read from OUT/videos)."""
    if target.is_symlink() or target.exists():
        if target.is_symlink() and os.readlink(target) == source or target.exists() and os.path.samefile(target, source):
            return
        target.unlink()
    try:
        target.symlink_to(source)
    except OSError:
        shutil.copy2(source, target)


def _remove_stale(out: Path, videos: set[str], ids: set[str]) -> None:
    """Links and transcripts of videos no longer in the benchmark (a --replace build of other
    videos): OUT/videos keeps only links (a video file there may be an input), OUT/asr the kept ids."""
    for link in (out / "videos").iterdir():
        if link.is_symlink() and link.name not in videos:
            link.unlink()
    for srt in (out / "asr").glob("*.srt") if (out / "asr").is_dir() else ():
        if srt.stem not in ids:
            srt.unlink()


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class Source:
    """Where a video came from, as the release names it."""

    video_id: str
    """The release's `video_id`: the source's id, else its page URL, else the file stem."""
    name: str
    """The bare id the Neptune loader takes from `video_id` (neptune_release.youtube_id): the
    transcript's file name (asr/<name>.srt) and the JSONL's extra.video_id."""
    url: str | None
    """The page the video came from, when its sidecar says (None: unknown)."""


def _safe_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and len(name) <= 200 and not any(c in name for c in "/\\\0")


def source_of(video: Video) -> Source:
    """The video's release identity from its sidecar (lvu.construct.signals.read_sidecar: yt-dlp's
    info.json `id` and `webpage_url`); the file stem when the sidecar names none, or names one that
    cannot be a file name (a transcript is written under it)."""
    from lvu.benchmarks.neptune_release import youtube_id
    from lvu.construct.signals import read_sidecar

    try:
        found = read_sidecar(video.path)
    except DataError:  # a broken sidecar failed the build's sidecar stage already; here: unknown
        found = None
    url = found.url if found and found.url else None
    for candidate in (found.source_id if found else "", url or ""):
        if candidate and _safe_name(youtube_id(candidate)):
            return Source(candidate, youtube_id(candidate), url)
    return Source(video.id, video.id, url)


def release_sources(videos: list[Video]) -> dict[str, Source]:
    """source_of each video (by build id), unique by `name`: videos that would share one (two copies
    of a source, or a stem that is another video's id) keep their build ids, which are unique."""
    sources = {v.id: source_of(v) for v in videos}
    while True:
        claimed: dict[str, list[str]] = {}
        for vid, source in sources.items():
            claimed.setdefault(source.name, []).append(vid)
        shared = [vid for ids in claimed.values() if len(ids) > 1 for vid in ids if sources[vid].name != vid]
        if not shared:
            return sources
        for vid in shared:
            sources[vid] = Source(vid, vid, sources[vid].url)


VERDICT_FIELDS = ("removed", "correct_votes", "threshold", "seeds", "unparsable", "votes")
VOTE_FIELDS = ("seed", "order", "ranking", "correct")
"""A removed question's `qad_filter` evidence and each of its votes, in this order (neptune.QadFilter's
result): the same bytes whether the verdict was made in this process or read back from the store."""


def export(state: Any, videos: Sequence[Video], out: Path) -> dict[str, Any]:
    """Write the files (module docstring) from a BuildState; counts for the closing lines."""
    from lvu.benchmarks.jsonl import write_samples
    from lvu.media.asr import write_srt

    out = out.resolve()  # absolute media paths: write_samples stores those inside `out` relative to it
    outputs = state.outputs
    kept, removed, samples, incomplete = [], [], [], 0
    linked: set[str] = set()
    transcripts: set[str] = set()
    (out / "videos").mkdir(parents=True, exist_ok=True)
    sources = release_sources([v for v in videos if outputs.get("questions", {}).get(v.id)])
    for video in videos:
        questions = outputs.get("questions", {}).get(video.id)
        if not questions:
            continue
        source = sources[video.id]
        decoys = outputs.get("decoys", {}).get(video.id, {})
        verdicts = outputs.get("qad_filter", {}).get(video.id, {})
        file_name = Path(video.path).name
        cues = (outputs.get("speech", {}).get(video.id) or {}).get("cues") or []
        dense = [{"start": seg["start"], "end": seg["end"], "text": seg["caption"]}
                 for seg in outputs.get("segments", {}).get(video.id) or []]
        wrote_video = False
        for q in questions:
            unit = f"q{q['n']}"
            if unit not in decoys or unit not in verdicts:
                incomplete += 1
                continue
            key = question_key(video.id, q["n"])
            options, answer_id = mcq_options(key, q["answer"], decoys[unit])
            verdict = verdicts[unit]
            record = {"key": key, "video_id": source.video_id, "url": source.url, "question": q["question"],
                      "answer": q["answer"], "decoys": decoys[unit][:4],
                      **{f"answer_choice_{i}": o for i, o in enumerate(options)}, "answer_id": answer_id,
                      "question type": question_type(q["capability"]), "capability": q["capability"],
                      "decoys_6": decoys[unit], "mcq_decoys": [0, 1, 2, 3], "video_path": file_name,
                      "qad_filter": {k: verdict[k] for k in ("correct_votes", "seeds", "threshold", "unparsable")}}
            if verdict["removed"]:
                # in the stage's field order, whether the verdict was made now or read from the store
                removed.append({**record, "qad_filter": {
                    **{k: verdict[k] for k in VERDICT_FIELDS},
                    "votes": [{k: vote[k] for k in VOTE_FIELDS} for vote in verdict["votes"]]}})
                continue
            kept.append(record)
            wrote_video = True
            samples.append(Sample(
                id=key, benchmark="benchmark", video=VideoRef(path=str(out / "videos" / file_name)),
                question=q["question"], options=options, answer=answer_id,
                subtitles=SubtitleRef(path=str(out / "asr" / f"{source.name}.srt")),
                labels={"question_type": record["question type"]},
                extra={"video_id": source.name, "url": source.url, "reference": q["answer"],
                       "capability": q["capability"], "decoys_6": decoys[unit], "qad_filter": record["qad_filter"],
                       "dense_captions": dense}))
        if wrote_video:
            linked.add(file_name)
            _link(video.path, out / "videos" / file_name)
            (out / "asr").mkdir(exist_ok=True)  # empty when the video has no speech: that is its transcript
            write_srt([Subtitle(start=s, end=e, text=t) for s, e, t in cues], out / "asr" / f"{source.name}.srt")
            transcripts.add(source.name)
    _remove_stale(out, linked, transcripts)
    _write_json(out / "neptune_full.json", kept)
    _write_json(out / "removed.json", removed)
    write_samples(out / "benchmark.jsonl", samples)
    return {"questions": len(kept), "removed by the QAD filter": len(removed), "incomplete": incomplete,
            "videos": len(transcripts), "neptune_full.json": str(out / "neptune_full.json"),
            "benchmark.jsonl": str(out / "benchmark.jsonl")}
