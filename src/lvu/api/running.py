"""The library's entry points: `run` (one benchmark × model, then its report) and `run_planned`
(a list of runs: a run spec's combinations, a sweep's points). `lvu run` and `lvu sweep` call them;
so can Python:

    from lvu.api import run
    summary = run("haystack", "ocr-match", limit=20)
    print(summary.tables[0].rows, summary.report_path)

They sit above the run engine (lvu.runs) and the reports (lvu.analysis), so a run ends with its
report while the engine knows nothing of reports (docs/architecture.md).
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lvu.errors import LvuError
from lvu.runs.engine import RunSummary, in_scope, run_local
from lvu.runs.pipeline import DecodeMode
from lvu.runs.store import Store
from lvu.runs.sweep import add_tags, axes_of, name_of


def run(benchmark: str, model: str, *, settings: dict[str, Any] | None = None,
        model_args: dict[str, Any] | None = None, results_dir: str | Path | None = None,
        fresh: bool = False, limit: int | None = None, concurrency: int = 4,
        show_progress: bool = True, report: bool = True, frame_cache: bool = True,
        asr: bool = False, decode: DecodeMode = "threads", decode_workers: int = 2,
        env: dict[str, Any] | None = None, judge: str | None = None, judge_args: dict[str, Any] | None = None,
        llm_extract: bool = False, executor: Literal["local", "ray"] = "local", ray_address: str | None = None,
        ray_args: dict[str, Any] | None = None) -> RunSummary:
    """Run (or resume) one benchmark × model and return its summary; `report=True` writes its HTML
    report (`summary.report_path`, see `write_run_report`).
    `frame_cache=False` decodes every time instead of using the shared on-disk frame cache;
    `asr=True` transcribes the audio (Whisper, `lvu[asr]`) of samples that have no subtitles;
    `decode`/`decode_workers`: see lvu.runs.engine.Engine; `env` is stored with the run (e.g. a sweep tag).
    Ctrl-C stops cleanly and raises `RunInterrupted` (a KeyboardInterrupt) saying how to resume.
    `judge`/`judge_args`: a model (registry name + args) that judges open-ended and generation
    samples, and with `llm_extract` maps replies without an option to one (runs/judging.py). The
    judge is not part of the run id; stored samples it has not judged yet are judged on resume.
    `executor="ray"` runs the same pipeline on a Ray cluster (lvu.runs.ray_executor, docs/ray.md)."""
    if asr:  # before anything starts: a missing lvu[asr] is one line, not an error per sample
        from lvu.runs.asr_use import require_asr

        require_asr()
    common = dict(settings=settings, model_args=model_args, results_dir=results_dir, fresh=fresh, limit=limit,
                  concurrency=concurrency, show_progress=show_progress, frame_cache=frame_cache, asr=asr, env=env,
                  judge=judge, judge_args=judge_args, llm_extract=llm_extract)
    if executor == "ray":
        from lvu.runs.ray_executor import run_on_ray

        summary = run_on_ray(benchmark, model, address=ray_address, ray_args=ray_args, **common)  # type: ignore[arg-type]
    elif executor == "local":
        summary = run_local(benchmark, model, decode=decode, decode_workers=decode_workers, **common)  # type: ignore[arg-type]
    else:
        raise LvuError(f"executor {executor!r} is unknown — use local or ray")
    if report:
        summary.report_path = write_run_report(summary, limit)
    return summary


def write_run_report(summary: RunSummary, limit: int | None = None) -> Path:
    """The report of exactly the samples a run's invocation covered: `reports/<run_id>.html` under
    the results dir. A `--limit` run writes `reports/<run_id>-limit<K>.html`, saying so, and never
    overwrites the run's full report."""
    from lvu.analysis.report import write_report

    store = Store(summary.results_dir)
    try:
        info, results = store.run(summary.run_id), in_scope(store, summary)
    finally:
        store.close()
    out, notes = None, []
    if summary.limited:
        out = summary.results_dir / "reports" / f"{summary.run_id}-limit{limit}.html"
        notes.append(f"--limit {limit}: this report covers the first {limit} of {summary.n_benchmark} samples; "
                     f"a run without --limit (or `lvu report {summary.run_id}`) reports the whole run")
    return write_report(info, results, summary.tables, summary.results_dir, out, notes=notes)


# ---- a list of planned runs ---------------------------------------------------------------------------


@dataclass
class Outcome:
    """One planned run and how it went: its summary, or the one-line error that stopped it."""

    planned: Any
    """The lvu.runs.spec_file.PlannedRun."""
    summary: RunSummary | None = None
    """Its summary, when the run ran."""
    error: str | None = None


def run_options(options: dict[str, Any]) -> dict[str, Any]:
    """The planned options `run` accepts; the judge keys only when set (and supported)."""
    accepted = inspect.signature(run).parameters
    missing = [k for k in options if k not in accepted]
    if missing:
        raise LvuError(f"{', '.join(missing)}: not supported by this lvu's run engine — remove the key(s)")
    return dict(options)


def run_planned(planned: list[Any], *, results_dir: str | Path | None = None, fresh: bool = False,
                report: bool = True, frame_cache: bool = True, show_progress: bool = True,
                sweep: dict[str, Any] | None = None, overrides: dict[str, Any] | None = None,
                on_done: Any = None, tags: list[str] | None = None) -> list[Outcome]:
    """Run each planned run (lvu.runs.spec_file.PlannedRun) in order, each resumable; a run that
    cannot start (e.g. a bad model argument) is recorded as an error and the next one goes on.
    Ctrl-C (RunInterrupted) stops all. `sweep`: the sweep section the runs are points of (recorded
    with each run, lvu.runs.sweep); `overrides` replace planned options (e.g. a command-line
    --limit); `on_done(outcome)` is called after each run; `tags` are added to every run that ran."""
    tag = None if sweep is None else {"name": name_of(sweep), "axes": axes_of(sweep)}
    outcomes = []
    for i, item in enumerate(planned, start=1):
        if show_progress:  # which grid point (or spec run) the progress bar below belongs to
            print(progress_line(item, i, len(planned)), file=sys.stderr, flush=True)
        outcome = Outcome(item)
        try:
            options = run_options({**item.options, **(overrides or {})})
            membership = None if tag is None else {**tag, "point": dict(item.point)}
            env = None if membership is None else {"sweep": membership, "sweeps": [membership]}
            outcome.summary = run(item.benchmark, item.model, settings=item.settings, model_args=item.model_args,
                                  results_dir=results_dir, fresh=fresh, report=report, frame_cache=frame_cache,
                                  show_progress=show_progress, env=env, **options)
            if tags:
                add_tags(results_dir, outcome.summary.run_id, tags)
        except LvuError as e:
            outcome.error = str(e)
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return outcomes


def progress_line(item: Any, i: int, n: int) -> str:
    """'point 2/4: frames=16' for a sweep point, 'run 2/3: lvbench × openai' for a spec's run."""
    if item.point:
        return f"point {i}/{n}: " + ", ".join(f"{k}={v}" for k, v in item.point.items())
    return f"run {i}/{n}: {item.benchmark} × {item.model}"
