"""Saved predictions, scored under lvu's protocol: `score` (nothing stored; `lvu score`) and
`import_results` (stored as a run; `lvu import`). Both read the file with the same reader
(lvu.runs.saved_files) and grade every row as a run does (lvu.runs.importer.grade_rows), so the same
file gives the same scores either way."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import Benchmark
from lvu.errors import LvuError
from lvu.runs.headline import Headline, headline_of_tables
from lvu.runs.importer import ImportSummary
from lvu.runs.saved_files import SavedFile
from lvu.types import Breakdown, SampleResult


def benchmark_name(bench: Benchmark) -> str:
    """The registry name of a benchmark object; a one-line LvuError when its class is not the one
    registered under that name (a run or import records the name, so it must find the class again)."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    name = BENCHMARKS.registered_name(type(bench))
    if name is None:
        raise LvuError(f"benchmark object of class {type(bench).__qualname__} is not a registered benchmark — "
                       "register its class (@register_benchmark, docs/plugins.md) or pass a registry name")
    return name


def given_settings(bench: Benchmark) -> dict[str, Any]:
    """The settings a benchmark object was made with, as far as they differ from its class's defaults
    (plus its data paths): what `--set` would have said for it."""
    return {k: v for k, v in bench.settings.items()
            if v is not None and k != "limit" and (k not in bench.defaults or v != bench.defaults[k])}


def as_benchmark(benchmark: str | Benchmark, settings: dict[str, Any] | None) -> Benchmark:
    """A registry name (with `settings`) made into its object (paths resolved, no data read), or the
    object itself (settings are then its own)."""
    from lvu.runs.grading import make_benchmark

    if isinstance(benchmark, Benchmark):
        if settings:
            raise LvuError("settings are given twice — pass them to the Benchmark object or with its name, not both")
        return benchmark
    return make_benchmark(benchmark, {k: v for k, v in (settings or {}).items() if v is not None})


@dataclass(frozen=True)
class ScoreResult:
    """Saved predictions scored: the benchmark's tables and every row's record (nothing stored)."""

    benchmark: str
    """The benchmark's registry name."""
    tables: list[Breakdown]
    """The benchmark's official tables, as `lvu score` prints them."""
    samples: list[SampleResult]
    """One record per matched row, as `lvu score --out` writes them."""
    saved: SavedFile
    """What was read: the file's format, its rows, the rows that matched no sample."""
    problems: list[str] = field(default_factory=list)
    """One line each for unmatched and duplicate rows (empty when every row was used)."""

    def write_jsonl(self, path: str | Path) -> int:
        """Write one JSON line per sample record to `path`; returns how many."""
        Path(path).write_text("".join(r.model_dump_json() + "\n" for r in self.samples), encoding="utf-8")
        return len(self.samples)


def score(benchmark: str | Benchmark, predictions: str | Path, *, settings: dict[str, Any] | None = None,
          format: str = "auto") -> ScoreResult:
    """Score a saved predictions file (the benchmark's official output format, an lmms-eval
    --log_samples JSONL or a VLMEvalKit sheet; `format` = auto | lmms-eval | vlmevalkit | official)
    with the benchmark's official extraction and aggregation. No model runs and nothing is stored
    (`import_results` stores the same scores as a run). `benchmark`: a registry name with its
    `settings` (e.g. data= the release, compat=lmms-eval), or a Benchmark object.

        result = score("lvbench", "answers.jsonl", settings={"data": "LVBench/"})
        print(result.tables[0].rows)
    """
    from lvu.runs.importer import grade_rows
    from lvu.runs.saved_files import read_saved

    path = Path(predictions)
    if not path.exists():
        raise LvuError(f"{path}: file not found — pass the path of a predictions file")
    bench = as_benchmark(benchmark, settings)
    name = benchmark if isinstance(benchmark, str) else type(bench).name
    saved = read_saved(bench, path, format)  # the reader `import_results` uses: the same rows, the same scores
    results = grade_rows(bench, saved.rows)
    return ScoreResult(benchmark=name, tables=bench.aggregate(results), samples=results, saved=saved,
                       problems=saved.problems(name))


@dataclass
class ImportResult(ImportSummary):
    """The stored run an import made (lvu.runs.importer.ImportSummary) and what `lvu import` says of it."""

    benchmark: str = ""
    """The benchmark's registry name."""
    problems: list[str] = field(default_factory=list)
    """Unmatched or duplicate rows, and a warning when rows are missing for some of the benchmark's samples."""
    headline: Headline | None = None
    """The run's headline score (`lvu results list`'s score column)."""


def import_results(predictions: str | Path, benchmark: str | Benchmark, *, settings: dict[str, Any] | None = None,
                   format: str = "auto", model: str | None = None,
                   results_dir: str | Path | None = None) -> ImportResult:
    """Store another harness's saved responses (lmms-eval, VLMEvalKit or the official format) as a
    run: every response re-extracted and re-scored under lvu's protocol (official unless
    `settings={"compat": ...}`), as `score` scores the same file. The run's model is
    `imported:<model>` (default: the name the file gives, else the file's name); importing the
    same file again replaces its run. `benchmark`: a registry name with its `settings` (data= the
    release the predictions were made on, frames= what the harness used), or a Benchmark object.

        run = import_results("samples.jsonl", "videomme", settings={"data": "Video-MME/"})
        print(run.run_id, run.headline)
    """
    from lvu.runs.importer import import_file

    if isinstance(benchmark, Benchmark):
        if settings:
            raise LvuError("settings are given twice — pass them to the Benchmark object or with its name, not both")
        name, settings = benchmark_name(benchmark), given_settings(benchmark)
    else:
        name = benchmark
    path = Path(predictions)
    summary = import_file(path, name, settings=settings, fmt=format, model_name=model, results_dir=results_dir)
    saved = summary.saved
    problems = saved.problems(name)
    if len(saved.rows) < summary.n_total:  # never a score that silently covers part of the benchmark
        problems.append(f"warning: {summary.n_total - len(saved.rows)} of the {summary.n_total} {name} questions "
                        f"have no row in {path.name}; the score covers the {len(saved.rows)} answered — a cut or "
                        "damaged file, or predictions on another split/subset (--set split=...)?")
    return ImportResult(**{f.name: getattr(summary, f.name) for f in fields(summary)}, benchmark=name,
                        problems=problems, headline=headline_of_tables(summary.tables,
                                                                       summary.spec.settings.get("subset")))
