"""Run identity by content: what makes a run new, and what a resumed run may reuse.

A run id is the hash of its spec (types.RunSpec). For the id to change whenever the data changes,
the spec holds (a) path settings resolved to absolute paths, so `--data q.jsonl` typed in two
directories names two files, and (b) `data_fingerprint`, a hash of the *loaded* samples — question,
options, answer, labels, video and subtitle references, extra fields — plus the content of every
subtitle/transcript file and a cheap stamp of every video (media.cache.video_fingerprint: size and
sampled blocks, not the whole file). Editing an answer key, replacing a video or pointing `--data`
at another file is therefore a new run; re-running unchanged data resumes.

Each stored sample also carries `sample_digest` (the hash of that sample's loaded content); a
resumed run reuses a stored sample only when its digest equals the loaded sample's, so nothing is
reused against a question that changed, whatever produced the run id. docs/runs.md, "Run identity".
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from lvu.types import Sample

FINGERPRINT_KEY = "data_fingerprint"
"""The spec setting holding the data fingerprint (runs stored before it existed lack it)."""

_REMOTE_PREFIXES = ("hf:", "http://", "https://", "s3://", "gs://")


def is_path_setting(key: str) -> bool:
    """Settings that name local files or directories (resolved before they enter a spec)."""
    return key in ("data", "root") or key.endswith("_dir")


def resolve_paths(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with local path values made absolute (`~` expanded); hub/URL references kept."""
    out = dict(settings)
    for key, value in settings.items():
        if is_path_setting(key) and isinstance(value, (str, Path)) and str(value):
            text = str(value)
            if not text.startswith(_REMOTE_PREFIXES):
                out[key] = os.path.abspath(os.path.expanduser(text))
    return out


def sample_digest(sample: Sample) -> str:
    """Hash of everything a sample's score depends on in the data (its whole loaded record)."""
    blob = json.dumps(sample.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _file_digest(path: str, memo: dict[str, str]) -> str:
    """Content hash of a (small) subtitle/transcript file; 'missing' when it cannot be read."""
    if path not in memo:
        try:
            memo[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
        except OSError:
            memo[path] = "missing"
    return memo[path]


def _video_stamp(path: str, memo: dict[str, str]) -> str:
    """Cheap content identity of a video (size + sampled blocks); 'missing' when it is not there."""
    if path not in memo:
        from lvu.errors import LvuError
        from lvu.media.cache import video_fingerprint

        try:
            memo[path] = video_fingerprint(path)
        except (LvuError, OSError):
            memo[path] = "missing"
    return memo[path]


def data_fingerprint(samples: list[Sample], bad: list[Any], digests: dict[str, str] | None = None) -> str:
    """The fingerprint of a benchmark's loaded data (samples in load order, unreadable records,
    subtitle file contents, video stamps). Videos are stamped by content, so a copy of the same
    files elsewhere has the same stamps (their paths still enter through the samples).
    `digests`: the samples' digests when already computed (`loaded_digests`)."""
    h = hashlib.sha256(b"lvu-data-fp1")
    videos: dict[str, str] = {}
    subtitles: dict[str, str] = {}
    if digests is not None and len(digests) != len(samples):  # repeated ids: hash each sample itself
        digests = None
    for sample in samples:
        h.update((digests[sample.id] if digests is not None else sample_digest(sample)).encode())
        h.update(_video_stamp(sample.video.path, videos).encode())
        if sample.subtitles is not None:
            h.update(_file_digest(sample.subtitles.path, subtitles).encode())
        h.update(b"\n")
    for record in bad:
        h.update(f"bad\t{record.id}\t{record.error}\n".encode())
    return h.hexdigest()[:16]


def predates_fingerprints(settings: dict[str, Any]) -> bool:
    """True for a run stored before run ids followed data content (its id ignores data edits)."""
    return FINGERPRINT_KEY not in settings


def reusable_ids(stored: dict[str, str | None], samples: list[Sample],
                 digests: dict[str, str] | None = None) -> set[str]:
    """Ids of `samples` whose stored record (id -> its `sample_digest`, from Store.completed_digests)
    answered this very sample; a record for a changed sample, or one without a digest, is redone.
    `digests` (sample id -> sample_digest, from `digests_of`) saves hashing the samples again."""
    if digests is None:
        return {s.id for s in samples if s.id in stored and stored[s.id] == sample_digest(s)}
    return {s.id for s in samples if s.id in stored and stored[s.id] == digests[s.id]}


def digests_of(samples: list[Sample]) -> dict[str, str]:
    """sample id -> sample_digest (hashing 100k samples takes about a second: do it once per run)."""
    return {s.id: sample_digest(s) for s in samples}


def loaded_digests(bench: Any) -> dict[str, str]:
    """`digests_of` the benchmark's loaded samples, kept with the benchmark object as its loaded
    samples are (`Benchmark.loaded()`): the fingerprint and the resume check hash them once."""
    digests = getattr(bench, "_lvu_digests", None)
    if digests is None:
        digests = bench._lvu_digests = digests_of(bench.loaded()[0])
    return digests


def digest_for(bench: Any, sample: Sample) -> str:
    """`sample`'s digest: from the benchmark's hashed samples when a run already hashed them (the
    local engine), else hashed alone (a Ray decode task, whose benchmark never loads everything)."""
    digests = getattr(bench, "_lvu_digests", None)
    return digests.get(sample.id) or sample_digest(sample) if digests is not None else sample_digest(sample)


def require_same_data(run_id: str, settings: dict[str, Any], bench: Any) -> None:
    """Refuse to pair a stored run with data that changed since it ran (e.g. judging its answers
    against edited references): DataError naming the run and the fix. Runs that predate
    fingerprints are checked per sample instead (their records' `sample_digest`, when present)."""
    from lvu.errors import DataError

    stored = settings.get(FINGERPRINT_KEY)
    if stored is None:
        return
    now = data_fingerprint(*bench.loaded())
    if now != stored:
        raise DataError(f"run {run_id}: its data changed since it ran (fingerprint {stored} → {now}) — "
                        "re-run it on the current data (`lvu run` with the same arguments makes a new run)")
