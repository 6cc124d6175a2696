"""`judge`: post-hoc judging of a stored run (`lvu judge score`): its open-ended and generation
samples (and, with `llm_extract`, multiple-choice replies without an option) judged by a model and
their records updated in the run's store (lvu.runs.judging)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.models.base import Model
from lvu.runs.store import Store
from lvu.scoring.judges import Judge
from lvu.types import Breakdown


@dataclass(frozen=True)
class JudgeResult:
    """A judged run: its tables after judging and what the judging did."""

    run_id: str
    benchmark: str
    model: str
    """The run's model (not the judge)."""
    tables: list[Breakdown]
    """The benchmark's tables over the run's records, judged ones included."""
    judge: str
    """The judge's identity: model, arguments, threshold and where the threshold came from."""
    n_judged: int
    n_skipped: int
    """Already judged by this same judge (or nothing to judge)."""
    n_failed: int
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(sample id, error) of every sample the judge failed on."""


def as_judge(model: str | Model | Judge, model_args: dict[str, Any] | None = None, *,
             threshold: float | None = None, threshold_file: str | Path | None = None) -> Judge:
    """A registry name (with `model_args`; its stored calibration, `threshold_file`'s or `threshold`),
    a Model object (threshold: `threshold`, else the uncalibrated 0.5), or a Judge as it is."""
    from lvu.errors import LvuError
    from lvu.scoring.judges import make_judge

    if isinstance(model, Judge):
        return model
    if isinstance(model, Model):
        if model_args or threshold_file:
            raise LvuError("a Model object carries its own arguments — pass model_args and threshold_file with a "
                           "registry name, or a Judge object")
        return Judge(model, threshold=threshold)
    return make_judge(model, model_args, threshold_file, threshold=threshold)


def judge(run_id: str | None, model: str | Model | Judge, *, model_args: dict[str, Any] | None = None,
          threshold: float | None = None, threshold_file: str | Path | None = None, llm_extract: bool = False,
          fresh: bool = False, concurrency: int = 8, results_dir: str | Path | None = None,
          show_progress: bool = True) -> JudgeResult:
    """Judge the stored run `run_id` (an id or unique prefix; None: the latest run) with the judge
    `model`: a registry name with `model_args`, a Model object, or a Judge. Resumable: samples this
    same judge (model and threshold) has judged are skipped unless `fresh`. The run's store must
    exist (nothing is created); call it outside a running event loop.

        judged = judge("3f2a9c", "openai", model_args={"model": "gpt-4o-mini"})
        print(judged.n_judged, judged.tables[0].rows)
    """
    from lvu.runs.grading import benchmark_of
    from lvu.runs.identity import require_same_data
    from lvu.runs.judging import judge_stored
    from lvu.runs.location import existing_results

    judge_obj = as_judge(model, model_args, threshold=threshold, threshold_file=threshold_file)
    store = Store(existing_results(results_dir)[0])  # judges a stored run: creates no store
    try:
        info = store.run(run_id)
        bench = benchmark_of(info.spec)
        require_same_data(info.run_id, info.spec.settings, bench)
        done = asyncio.run(judge_stored(store, info.run_id, bench, judge_obj, llm_extract=llm_extract, fresh=fresh,
                                        concurrency=concurrency, show_progress=show_progress))
        tables = bench.aggregate(store.results(info.run_id))
    finally:
        store.close()
    return JudgeResult(run_id=info.run_id, benchmark=info.benchmark, model=info.model, tables=tables,
                       judge=judge_obj.identity, n_judged=done.n_judged, n_skipped=done.n_skipped,
                       n_failed=done.n_failed, errors=list(done.errors))
