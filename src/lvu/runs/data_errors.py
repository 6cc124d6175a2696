"""Data errors: samples the data is at fault for, reported and left out of the score.

A record that could not become a sample (a BadRecord: bad answer, repeated id, unreadable line)
and a sample whose video file is not there are the data's fault, not the model's. Every benchmark
stores them the same way: with their one-line error, `data_error=True` and `counted=False`, so
the official aggregates leave them out (a model's failure is still counted wrong, as each paper
counts it). Like any failed sample they are not `ok` (coverage), count as errors in `lvu results
list` and are tried again when the run resumes (fixed data is a new run anyway: its fingerprint
changes). docs/runs.md, "Data errors".
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from lvu.benchmarks.base import BadRecord
from lvu.runs.store import Store
from lvu.types import RunSpec, SampleResult


def mark_data_error(result: SampleResult, error: str) -> SampleResult:
    """`result` as a data error: its one-line `error`, left out of the score."""
    result.error, result.data_error, result.counted = error, True, False
    result.score = result.correct = None
    return result


def bad_record_result(record: BadRecord) -> SampleResult:
    """The stored record of a release record that could not become a sample."""
    return mark_data_error(SampleResult(sample_id=record.id), record.error)


def check_command(spec: RunSpec) -> str:
    """The `lvu data check` command for a run's data: `lvu data check q.jsonl` for the JSONL
    benchmark, else `lvu data check <benchmark> [--data DIR] [--video-dir DIR]`."""
    settings = spec.settings
    data, video_dir = settings.get("data"), settings.get("video_dir")
    words = ["lvu", "data", "check"]
    if spec.benchmark == "jsonl" and data:
        words.append(_shown(data))
    else:
        words.append(spec.benchmark)
        if data:
            words += ["--data", _shown(data)]
    if video_dir:
        words += ["--video-dir", _shown(video_dir)]
    return shlex.join(words)


def count_data_errors(results: Iterable[SampleResult]) -> int:
    return sum(1 for r in results if r.data_error)


def stored_data_errors(store: Store, run_id: str, keep: set[str] | None = None) -> int:
    """How many of the run's stored records (those in `keep`, when given) are data errors: only
    failed records are read (a data error always has its error), and of them only the flag."""
    rows = store.db.execute("SELECT sample_id FROM samples WHERE run_id = ? AND error IS NOT NULL"
                            " AND json_extract(record, '$.data_error') = 1", (run_id,))
    return sum(1 for (sample_id,) in rows if keep is None or sample_id in keep)


def data_error_note(n_data_errors: int, spec: RunSpec) -> str | None:
    """'3 data errors left out of the score (fix the data: lvu data check q.jsonl)', or None for 0.
    Printed at the end of a run, after its failed samples: `data_error_note(stored_data_errors(
    store, run_id, keep), spec)` (or `count_data_errors(results)` where the results are at hand)."""
    n = n_data_errors
    if not n:
        return None
    return f"{n} data error{'s' if n != 1 else ''} left out of the score (fix the data: {check_command(spec)})"


def _shown(path: str) -> str:
    """A path as short as it can be said from the current folder (relative when inside it)."""
    p = Path(path)
    try:
        return str(p.relative_to(Path.cwd())) if p.is_absolute() else path
    except ValueError:
        return path
