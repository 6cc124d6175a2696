"""`lvu import`: saved responses from lmms-eval, VLMEvalKit or a benchmark's official output file,
stored as a run (docs/migrating.md).

Each response is re-extracted and re-scored by the benchmark under lvu's protocol (the official one
unless `--set compat=...`), exactly as `lvu score` scores the same file, and stored like a run's
records, so `lvu results`, `lvu report`, `lvu compare [--paper]` and `lvu view` work on it. The run
spec is the benchmark, model `imported:<name>`, and the benchmark's effective settings plus the
data fingerprint and `import_sha256` (the file's content hash): importing the same file again
replaces that run; another file is another run. The environment records the source file's path,
hash and format, and how many of its rows matched a sample.
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord, Benchmark, Breakdown
from lvu.errors import DataError, LvuError
from lvu.runs.identity import FINGERPRINT_KEY, data_fingerprint, sample_digest
from lvu.runs.saved_files import SavedFile, SavedRow, read_saved
from lvu.runs.store import Store
from lvu.types import Response, RunSpec, Sample, SampleResult
from lvu.version import __version__

FRAME_SETTINGS = ("frames", "fps")
"""How many frames the model saw: an imported run records these only when the file states them
(lmms-eval's model_args, VLMEvalKit's dataset name) or `--set` gives them — the benchmark's default
for an lvu run says nothing about what another harness did. Unstated, they are stored as None."""
_LMMS_FRAME_ARGS = ("max_num_frames", "max_frames_num", "num_frames", "nframes", "max_frames", "frames_upbound")
"""lmms-eval model arguments that set the frames sampled per video (qwen2_5_vl, llava_vid, ...)."""
IMPORT_KEY = "import_sha256"
"""The spec setting holding the imported file's sha256 (engine.RUN_ONLY_SETTINGS: not a benchmark setting)."""
MODEL_PREFIX = "imported:"


@dataclass
class ImportSummary:
    run_id: str
    spec: RunSpec
    saved: SavedFile
    n_total: int
    """The benchmark's sample count (the run's coverage denominator)."""
    n_failed: int
    tables: list[Breakdown]
    results_dir: Path
    sha256: str


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lmms_frames(path: Path) -> dict[str, int | float]:
    """The frame count an lmms-eval run's model_args state (in the results JSON beside the log)."""
    from lvu.runs.saved_files import lmms_results

    for doc in lmms_results(path):
        config = raw if isinstance(raw := doc.get("config"), dict) else {}
        args = config.get("model_args") or ""
        if isinstance(args, dict):
            found = next((args[k] for k in _LMMS_FRAME_ARGS if k in args), None)
        else:
            m = re.search(rf"(?:^|,)\s*(?:{'|'.join(_LMMS_FRAME_ARGS)})\s*=\s*(\d+)", str(args))
            found = m.group(1) if m else None
        return {"frames": int(str(found))} if str(found).isdigit() else {}
    return {}


def stated_frames(path: Path, fmt: str) -> dict[str, int | float]:
    """FRAME_SETTINGS the imported file states (see there); {} when it states none."""
    if fmt == "lmms-eval":
        return lmms_frames(path)
    if fmt == "vlmevalkit":
        from lvu.runs.vlmevalkit_sheets import frames_in_name

        return frames_in_name(path)
    return {}  # the official formats hold answers only


def recorded_settings(bench: Benchmark, given: dict[str, Any], stated: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The run's settings (the benchmark's effective ones, less `limit`) with FRAME_SETTINGS kept
    only where `--set` (`given`) or the file (`stated`) says them, else None; and the names left
    unknown."""
    effective = {k: v for k, v in bench.settings.items() if k != "limit"}
    unknown = []
    for key in FRAME_SETTINGS:
        if key not in effective or given.get(key) is not None:
            continue
        effective[key] = stated.get(key)
        if effective[key] is None:
            unknown.append(key)
    return effective, unknown


def grade_rows(bench: Benchmark, rows: list[SavedRow]) -> list[SampleResult]:
    """Each row extracted and scored by the benchmark (engine.grade, as `lvu run` does); a row the
    harness marked failed is a failed sample. Shared by `lvu import` and `lvu score`."""
    from lvu.runs.grading import grade

    results = []
    for row in rows:
        s = row.sample
        result = SampleResult(sample_id=s.id, labels=s.labels, answer=s.answer, response=row.response,
                              n_options=len(s.options) or None, question=s.question, options=s.options,
                              logged=row.logged)
        if row.error:
            result.error = row.error
        else:
            try:
                grade(bench, s, Response(text=row.response, logged=row.logged), result)
            except LvuError as e:
                result.error = str(e)
        results.append(result)
    return results


def import_file(path: str | Path, benchmark: str, *, settings: dict[str, Any] | None = None, fmt: str = "auto",
                model_name: str | None = None, results_dir: str | Path | None = None) -> ImportSummary:
    """Import `path` (format `fmt`, auto-detected by default) as a run of `benchmark` with
    `settings` (data= the release the predictions were made on, compat=, split=, ...)."""
    from lvu.runs.grading import make_benchmark

    path = Path(path)
    bench = make_benchmark(benchmark, {k: v for k, v in (settings or {}).items() if v is not None})
    saved = read_saved(bench, path, fmt)
    if not saved.rows:
        why = saved.problems(benchmark)
        raise DataError(why[0] if why else f"{path}: no saved responses in it — nothing to import")
    if saved.self_contained:  # Video-MME's results JSON: the questions come from the file itself
        samples: list[Sample] = [r.sample for r in saved.rows]
        bad: list[BadRecord] = []
    else:
        samples, bad = bench.loaded()
    sha = file_sha256(path)
    effective, unknown = recorded_settings(bench, settings or {}, stated_frames(path, saved.format))
    if (version := bench.data_version()) is not None:
        effective["data_version"] = version
    effective[FINGERPRINT_KEY] = data_fingerprint(samples, bad)
    effective[IMPORT_KEY] = sha
    name = model_name or saved.model_name or path.stem
    spec = RunSpec(benchmark=benchmark, model=MODEL_PREFIX + name, settings=effective)
    env = {
        "lvu": __version__, "python": platform.python_version(), "platform": platform.platform(),
        "model": {"name": name, "imported": True},
        "imported": {"path": str(path.resolve()), "sha256": sha, "format": saved.format,
                     "rows": saved.n_rows, "matched": len(saved.rows), "unmatched": len(saved.unmatched),
                     "duplicates": saved.duplicates, "model_name_from_file": saved.model_name,
                     "unknown_settings": {k: "not stated by the imported file — pass --set "
                                             f"{k}=... to record what the harness used" for k in unknown}},
    }
    ordinals = {s.id: i for i, s in enumerate(samples)}
    loaded = {s.id: s for s in samples}
    results = grade_rows(bench, saved.rows)
    store = Store(results_dir)
    try:
        run_id = store.begin_run(spec, env, fresh=True)  # the same file again replaces the run
        store.set_total(run_id, len(samples) + len(bad))
        for row, result in zip(saved.rows, results):
            # the digest of the loaded sample (LVBench's answer-file reader marks its copy verbatim)
            result.sample_digest = sample_digest(loaded.get(row.sample.id, row.sample))
            if row.prompt_text:
                result.prompt = {"text": row.prompt_text}
            store.put(run_id, result, ordinals.get(result.sample_id, len(ordinals)))
        store.finish_run(run_id, "done")  # "partial" when some samples have no row
    finally:
        store.close()
    return ImportSummary(run_id=run_id, spec=spec, saved=saved, n_total=len(samples) + len(bad),
                         n_failed=sum(r.error is not None for r in results), tables=bench.aggregate(results),
                         results_dir=Path(store.dir), sha256=sha)
