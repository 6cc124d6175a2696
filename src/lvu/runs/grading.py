"""Benchmark objects for runs and the grading of one response, without the engine.

`make_benchmark` (a benchmark by name, paths resolved), `benchmark_of` (the one a stored run was
made with) and `grade` / `score_saved` (extract + score a response) serve the engine and the Ray
executor, and also what reads stored runs: `lvu score`, `lvu import`, judging, headline scores,
the viewer and the reports. They live here so those need not import the engine (and its pipeline).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path
from typing import Any

from lvu.benchmarks import load_all as _load_benchmarks
from lvu.benchmarks.base import BENCHMARKS, Benchmark
from lvu.errors import LvuError
from lvu.runs.identity import FINGERPRINT_KEY, resolve_paths
from lvu.types import Response, RunSpec, Sample, SampleResult

RUN_ONLY_SETTINGS = ("data_version", FINGERPRINT_KEY, "asr", "import_sha256")
"""Keys make_spec (and `lvu import`, runs/importer.py) add to a spec's settings that are not benchmark settings."""


def make_benchmark(benchmark: str, settings: dict[str, Any] | None = None) -> Benchmark:
    """The benchmark object alone, paths resolved, no data read (for commands that make no run:
    `lvu data check`, `lvu score`, `lvu frames`)."""
    _load_benchmarks()
    return BENCHMARKS.get(benchmark)(**resolve_paths(settings or {}))


def benchmark_of(spec: RunSpec) -> Benchmark:
    """The benchmark object a stored run was made with (for show / submit / report)."""
    _load_benchmarks()
    settings = {k: v for k, v in spec.settings.items() if k not in RUN_ONLY_SETTINGS}
    return BENCHMARKS.get(spec.benchmark)(**settings)


@functools.lru_cache(maxsize=None)
def _stamp_of_class(bench_class: type) -> str:
    root = Path(__file__).parent.parent  # the lvu package
    files = [*sorted((root / "benchmarks").glob("*.py")), *sorted((root / "scoring").glob("*.py")),
             root / "runs" / "grading.py"]
    try:
        own = inspect.getsourcefile(bench_class)
    except TypeError:
        own = None
    if own and Path(own) not in files:  # a plugin's benchmark: its own module counts too
        files.append(Path(own))
    digest = hashlib.sha256()
    for path in files:
        try:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:
            digest.update(path.name.encode() + b"\0missing\0")
    return digest.hexdigest()[:16]


def grading_stamp(bench: Benchmark) -> str:
    """Content hash of the code that extracts and scores `bench`'s answers: lvu's benchmarks/ and
    scoring/ sources, runs/grading.py and, for a plugin, its own module (once per process)."""
    return _stamp_of_class(type(bench))


def grade(bench: Benchmark, sample: Sample, response: Response, result: SampleResult) -> SampleResult:
    """Extract and score one response into `result` (shared by runs and `lvu score`), stamped with
    the code that did it (`graded_by`: a resumed run grades records of other code again, regrade.py)."""
    result.graded_by = grading_stamp(bench)
    prediction = bench.extract(sample, response)
    score = bench.score(sample, prediction)
    result.prediction = prediction.value
    result.score, result.correct, result.counted = score.value, score.correct, score.counted
    result.explanation = score.explanation
    return result


def score_saved(bench: Benchmark, pairs: list[tuple[Sample, str]]) -> list[SampleResult]:
    """Score saved (sample, raw response) pairs without running a model."""
    results = []
    for sample, text in pairs:
        result = SampleResult(sample_id=sample.id, labels=sample.labels, answer=sample.answer, response=text,
                              n_options=len(sample.options) or None, question=sample.question, options=sample.options)
        try:
            grade(bench, sample, Response(text=text), result)
        except LvuError as e:
            result.error = str(e)
        results.append(result)
    return results
