"""`judge`: post-hoc judging of a stored run (`lvu judge score`): its open-ended and generation
samples (and, with `llm_extract`, multiple-choice replies without an option) judged by a model and
their records updated in the run's store (lvu.runs.judging). And the judge's dev sets:
`calibrate_judge` (`lvu judge calibrate`) and `evaluate_dev` (`lvu judge eval`)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.models.base import Model
from lvu.runs.store import Store
from lvu.scoring.judges import Calibration, DevRow, Judge
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


# ---- dev sets: calibrating a judge and evaluating metrics (`lvu judge calibrate / eval`) -------------


@dataclass(frozen=True)
class DevJudged:
    """A judge's verdicts on a labelled dev set, committed to the results dir's ledger as they came."""

    rows: list[DevRow]
    scores: list[float | None]
    """P(equivalent) per row (None where the judge failed); empty when `interrupted`."""
    job_id: str
    n_reused: int
    """Rows judged before by this judge (taken from the ledger, not asked again)."""
    interrupted: bool
    n_judged: int
    """Rows with a judgement (all of them unless `interrupted`)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(row id, error) of each row the judge failed on."""
    n_text: int = 0
    """Verdicts read from the reply text (no TRUE/FALSE log-probabilities: their scores are 0 or 1)."""

    def kept(self) -> tuple[list[float], list[int]]:
        """The scores the judge gave and their rows' labels (failed rows left out)."""
        return scored(self.rows, self.scores)


def scored(rows: list[DevRow], scores: Sequence[float | None]) -> tuple[list[float], list[int]]:
    """(scores, labels) of the rows with a score that is a number (None and nan left out)."""
    kept = [(s, r.label) for r, s in zip(rows, scores) if s is not None and not math.isnan(s)]
    return [s for s, _ in kept], [y for _, y in kept]


def judge_dev(judge: Judge, rows: list[DevRow], dev: str | Path, *, concurrency: int = 8,
              results_dir: str | Path | None = None, fresh: bool = False, show_progress: bool = True) -> DevJudged:
    """P(equivalent) of `judge` on each dev row (`read_dev_set(dev)`), each judgement committed to
    the ledger as it arrives (lvu.runs.dev_judging): a rerun resumes, an edited row is asked again."""
    from lvu.runs.dev_judging import judge_dev_set

    done = asyncio.run(judge_dev_set(judge, rows, dev, results_dir=results_dir, concurrency=concurrency, fresh=fresh,
                                     show_progress=show_progress))
    n_judged = sum(j is not None for j in done.judgements)
    if done.interrupted:
        return DevJudged(rows=rows, scores=[], job_id=done.job_id, n_reused=done.n_reused, interrupted=True,
                         n_judged=n_judged)
    judgements = [j for j in done.judgements if j is not None]  # all of them: the job ran to its end
    methods = {j.method for j in judgements if not j.error}
    n_text = sum(1 for j in judgements if j.method in ("text", "parse-failed")) \
        if "text" in methods or "parse-failed" in methods else 0
    return DevJudged(rows=rows, scores=[None if j.error else j.value for j in judgements], job_id=done.job_id,
                     n_reused=done.n_reused, interrupted=False, n_judged=n_judged,
                     failed=[(r.id, j.error) for r, j in zip(rows, judgements) if j.error], n_text=n_text)


@dataclass(frozen=True)
class JudgeCalibration:
    """`lvu judge calibrate`: the judge's F1-maximising threshold on a dev set, stored for the judge."""

    judge: Judge
    judged: DevJudged
    calibration: Calibration | None = None
    """At the F1-maximising threshold (None when judging was interrupted: nothing is stored)."""
    default: Calibration | None = None
    """The same scores at the uncalibrated threshold 0.5."""
    n: int = 0
    positives: int = 0
    path: Path | None = None
    """Where the calibration is stored (later uses of the same judge load it)."""
    out: Path | None = None


NO_JUDGE = "no judge model — pass --judge NAME (e.g. --judge openai -J model=... -J base_url=...)"


def calibrate_judge(dev: str | Path, model: str | Model | Judge | None, *, model_args: dict[str, Any] | None = None,
                    concurrency: int = 8, out: str | Path | None = None, results_dir: str | Path | None = None,
                    fresh: bool = False, show_progress: bool = True,
                    on_judged: Callable[[DevJudged], None] | None = None) -> JudgeCalibration:
    """Calibrate an equivalence judge's threshold on a labelled dev set (JSONL rows of question,
    reference, candidate, label): the F1-maximising threshold is stored for this judge (model and
    arguments), and also written to `out` when given. `on_judged` sees the verdicts before they are
    calibrated (e.g. to report failed rows even when too few are left to calibrate).

        cal = calibrate_judge("dev.jsonl", "openai", model_args={"model": "gpt-4o-mini"})
        print(cal.calibration.threshold, cal.path)
    """
    from lvu.errors import LvuError
    from lvu.scoring.judges import binary_metrics, calibrate, read_dev_set, save_calibration

    rows = read_dev_set(dev)
    if not model:
        raise LvuError(NO_JUDGE)
    judge_obj = as_judge(model, model_args, threshold=0.5)  # the threshold does not change P(equivalent)
    judged = judge_dev(judge_obj, rows, dev, concurrency=concurrency, results_dir=results_dir, fresh=fresh,
                       show_progress=show_progress)
    if on_judged is not None:
        on_judged(judged)
    if judged.interrupted:
        return JudgeCalibration(judge=judge_obj, judged=judged)
    scores, labels = judged.kept()
    cal = calibrate(scores, labels)
    path = save_calibration(judge_obj, cal, dev=Path(dev), n=len(scores), positives=sum(labels))
    if out:
        save_calibration(judge_obj, cal, dev=Path(dev), n=len(scores), positives=sum(labels), path=Path(out))
    return JudgeCalibration(judge=judge_obj, judged=judged, calibration=cal, default=binary_metrics(scores, labels, 0.5),
                            n=len(scores), positives=sum(labels), path=Path(path), out=Path(out) if out else None)


@dataclass(frozen=True)
class DevEvaluation:
    """`lvu judge eval`: each metric (and judge) on a dev set at its F1-maximising threshold."""

    title: str
    rows: list[tuple[str, Calibration]] = field(default_factory=list)
    """(the metric's row name, its F1, precision, recall, accuracy and threshold), in table order."""
    skipped: list[str] = field(default_factory=list)
    """'NAME: skipped — why' for each metric that could not run here (e.g. METEOR without Java)."""
    judge: Judge | None = None
    judged: DevJudged | None = None
    """The judge's verdicts (interrupted: `rows` holds only the metrics)."""


def evaluate_dev(dev: str | Path, *, metrics: Sequence[str] = (), model: str | Model | Judge | None = None,
                 model_args: dict[str, Any] | None = None, threshold: float | None = None,
                 threshold_file: str | Path | None = None, concurrency: int = 8,
                 results_dir: str | Path | None = None, fresh: bool = False, show_progress: bool = True,
                 on_note: Callable[[str], None] | None = None,
                 on_judged: Callable[[DevJudged], None] | None = None) -> DevEvaluation:
    """F1, precision, recall and accuracy of rule `metrics` (cider, bleu4, meteor, rouge-l,
    embedding) and of the judge `model` on a labelled dev set: each at its F1-maximising threshold
    (the shape of Neptune's Table 2), the judge also at its own stored (or given) threshold.
    `on_note` hears each metric skipped as it is; `on_judged` sees the judge's verdicts first.

        table = evaluate_dev("dev.jsonl", metrics=["rouge-l"])
        print(table.rows)
    """
    from lvu.errors import LvuError
    from lvu.scoring.judges import binary_metrics, calibrate, read_dev_set

    if not metrics and not model:
        raise LvuError("nothing to evaluate — pass --metric NAME (repeatable) and/or --judge NAME")
    rows = read_dev_set(dev)
    result = DevEvaluation(title=f"{Path(dev).name}: {len(rows)} rows, {sum(r.label for r in rows)} equivalent "
                                 "(thresholds chosen on this same set, as in the paper)")
    for name in metrics:
        try:
            from lvu.scoring.text_metrics import evaluate_metric
        except ImportError as e:
            raise LvuError(f"text metrics are not available ({e}) — pip install 'lvu[metrics]'") from None
        try:
            values = evaluate_metric(name, [r.model_dump() for r in rows])
        except LvuError as e:  # e.g. METEOR without Java: the other rows still print
            result.skipped.append(f"{name}: skipped — {e}")
            if on_note is not None:
                on_note(result.skipped[-1])
            continue
        result.rows.append((name, calibrate(*scored(rows, list(values)))))
    if not model:
        return result
    judge_obj = as_judge(model, model_args, threshold=threshold, threshold_file=threshold_file)
    judged = judge_dev(judge_obj, rows, dev, concurrency=concurrency, results_dir=results_dir, fresh=fresh,
                       show_progress=show_progress)
    if on_judged is not None:
        on_judged(judged)
    if not judged.interrupted:
        scores, labels = judged.kept()
        result.rows.append((judge_obj.short_name, calibrate(scores, labels)))
        result.rows.append((f"  at its threshold ({judge_obj.threshold_source})",
                            binary_metrics(scores, labels, judge_obj.threshold)))
    return DevEvaluation(title=result.title, rows=result.rows, skipped=result.skipped, judge=judge_obj, judged=judged)


def paper_judge_reference() -> list[dict[str, Any]]:
    """Neptune's Table 2 (paper; GEM dev set, 292 triplets): metric, finetuning, f1 per row."""
    from lvu.benchmarks.neptune_ref import JUDGE_REFERENCE

    return [dict(r) for r in JUDGE_REFERENCE]
