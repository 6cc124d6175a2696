"""`read_run`: a stored run as one typed record (its spec, its info and its per-sample results), so
a script never opens lvu.runs.store.Store itself. Read-only: nothing is created or changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lvu.runs.store import RunInfo, Store
from lvu.types import Breakdown, RunSpec, SampleResult


@dataclass(frozen=True)
class RunRecord:
    """One stored run: what `lvu results show RUN --json` prints, as Python objects."""

    info: RunInfo
    """The run's stored row: status, dates, sample counts, the environment that produced it."""
    samples: list[SampleResult]
    """Every stored per-sample record, in the benchmark's order (failed samples included)."""
    results_dir: Path
    """The results directory the run was read from."""
    tags: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.info.run_id

    @property
    def spec(self) -> RunSpec:
        """What the run id hashes: benchmark, model, model arguments, effective settings."""
        return self.info.spec

    @property
    def benchmark(self) -> str:
        return self.info.benchmark

    @property
    def model(self) -> str:
        """The model's registry name (`imported:NAME` for `lvu import`ed runs)."""
        return self.info.model

    @property
    def model_identity(self) -> Any:
        """What the model reported about itself when the run ran (backend, served model, versions)."""
        return self.info.env.get("model")

    @property
    def status(self) -> str:
        """done, partial, running, interrupted or failed (lvu.runs.store)."""
        return self.info.status

    @property
    def created(self) -> datetime:
        return datetime.fromtimestamp(self.info.created).astimezone()

    @property
    def updated(self) -> datetime:
        return datetime.fromtimestamp(self.info.updated).astimezone()

    @property
    def failures(self) -> list[SampleResult]:
        """The samples that failed (their `error` says why)."""
        return [r for r in self.samples if r.error]

    def tables(self) -> list[Breakdown]:
        """The benchmark's official tables over the stored samples (as `lvu results show` prints
        them); needs the run's benchmark to be installed here."""
        from lvu.runs.grading import benchmark_of

        return benchmark_of(self.spec).aggregate(self.samples)


def read_run(run_id: str | None = None, results_dir: str | Path | None = None) -> RunRecord:
    """The stored run `run_id` (an id or a unique prefix; None: the most recently updated run) from
    the results directory `results_dir` (None: found as every command finds it, docs/runs.md).
    Read-only: a folder without a run store is a one-line LvuError and nothing is created.

        record = read_run("3f2a9c")
        print(record.status, record.spec.settings["frames"], sum(bool(s.correct) for s in record.samples))
    """
    store = Store(results_dir, read_only=True)
    try:
        info = store.run(run_id)
        return RunRecord(info=info, samples=store.results(info.run_id), results_dir=Path(store.dir),
                         tags=store.tags().get(info.run_id, []))
    finally:
        store.close()
