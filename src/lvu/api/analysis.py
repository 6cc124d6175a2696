"""Reports and comparisons of stored runs: `report` (`lvu report`) and `compare` (`lvu compare RUN
--paper`, `lvu compare RUN_A RUN_B`). They read the run store only (nothing is created there but
the report file), and return what the commands print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from lvu.errors import LvuError
from lvu.runs.store import RunInfo, Store

if TYPE_CHECKING:
    from lvu.analysis.compare import Comparison
    from lvu.analysis.document import Report
    from lvu.analysis.runs import RunData

Notes: TypeAlias = Callable[[str], None] | None
"""Called with each one-line note (a run left out, a plot skipped) as it arises, before the result
or an error; the result holds them too."""


def _refs(runs: str | Sequence[str] | None) -> list[str] | None:
    if isinstance(runs, str):
        return [runs]
    return list(runs) if runs else None


def _note(notes: list[str], on_note: Notes, line: str) -> None:
    notes.append(line)
    if on_note is not None:
        on_note(line)


def _note_empty_runs(data: list[RunData], notes: list[str], on_note: Notes) -> None:
    """One note per run whose every sample failed: its tables hold 0s that are no answers, not wrong ones."""
    for run in data:
        if run.no_answers:
            _note(notes, on_note, f"note: run {run.run_id} ({run.label}) has {run.no_answers}: its cells are not scores")


@dataclass(frozen=True)
class ReportResult:
    """A written report: where it is, what it holds, and the notes `lvu report` prints beside it."""

    path: Path
    """The file written (html, or md with its PNGs in `<stem>_files/`)."""
    report: Report
    """The document itself: its sections, tables and figures (lvu.analysis.document)."""
    run_ids: list[str]
    notes: list[str] = field(default_factory=list)


def check_report_args(runs: str | Sequence[str] | None, *, format: str, all_runs: bool) -> None:
    """`report`'s refusals of its arguments, before any store is opened (`lvu report` checks first too)."""
    if format not in ("html", "md"):
        raise LvuError(f"--format {format!r} is not supported — use html or md")
    if all_runs and _refs(runs):
        raise LvuError("pass run ids or --all, not both")


def report(runs: str | Sequence[str] | None = None, *, results_dir: str | Path | None = None,
           out: str | Path | None = None, format: str = "html", bootstrap: int = 1000, seed: int = 0,
           plots: bool = True, viewer: str | None = None, all_runs: bool = False, include_failed: bool = False,
           on_note: Notes = None) -> ReportResult:
    """Write the report of one or more stored runs (ids or unique prefixes; None: the latest run;
    `all_runs`: every stored run): the official tables with bootstrap CIs (`bootstrap` resamples,
    `seed`), the paper's rows, the analyses, the samples; several runs add the cross-run analyses.
    `out` defaults to reports/<run>.<format> under the results dir; `format` is html or md;
    `viewer`: the base URL of `lvu view` for sample links.

        written = report("3f2a9c", bootstrap=200)
        print(written.path)
    """
    from lvu.analysis.report import build_report, write
    from lvu.analysis.runs import RunData, load_runs

    refs = _refs(runs)
    check_report_args(refs, format=format, all_runs=all_runs)
    notes: list[str] = []
    store = Store(results_dir, read_only=True)
    try:
        data = load_runs(store, refs)
        if all_runs:
            data = [RunData(i, store.results(i.run_id)) for i in reversed(store.runs())]
    finally:
        store.close()
    _note_empty_runs(data, notes, on_note)
    built = build_report(data, n_boot=bootstrap, seed=seed, plots=plots, viewer_url=viewer,
                         include_failed=include_failed)
    if out is None:
        name = "all-runs" if all_runs else data[0].run_id if len(data) == 1 else \
            "runs-" + "-".join(r.run_id[:6] for r in data[:4])
        out = Path(store.dir) / "reports" / f"{name}.{format}"
    for line in built.notes:
        _note(notes, on_note, line)
    return ReportResult(path=write(built, Path(out), format), report=built, run_ids=[r.run_id for r in data],
                        notes=notes)


@dataclass(frozen=True)
class CompareResult:
    """A comparison as `lvu compare` prints it: its table, the summary lines and the paper's errata."""

    comparison: Comparison
    """`.table` (lvu.analysis.table.Table: columns, rows, notes), `.summary` [(key, value)], `.errata`."""
    run_ids: list[str]
    """The runs compared: [RUN] beside the paper, or [A, B] for the deltas B − A."""
    notes: list[str] = field(default_factory=list)


def compare(runs: str | Sequence[str] | None = None, *, paper: bool = False, model: str | None = None,
            table: str | None = None, all_rows: bool = False, results_dir: str | Path | None = None,
            bootstrap: int = 1000, seed: int = 0, include_failed: bool = False,
            on_note: Notes = None) -> CompareResult:
    """`paper=True`: one run's numbers beside the paper's rows (only rows whose model contains
    `model`, of paper table `table`; `all_rows`: also rows of other input settings), with errata.
    Else two runs [A, B] (None: the two latest runs with answers): per-breakdown deltas B − A with a
    paired test on the samples both have. A run where every sample failed is left out with a note
    unless `include_failed`.

        deltas = compare(["3f2a9c", "81be07"], bootstrap=200)
        print(deltas.comparison.summary)
    """
    from lvu.analysis.compare import answered_runs, compare_paper, compare_runs
    from lvu.analysis.runs import RunData, load_runs
    from lvu.runs.run_names import no_answers

    refs = _refs(runs)
    notes: list[str] = []
    store = Store(results_dir, read_only=True)
    try:
        if not refs and not paper:  # the two latest runs with answers: A = the older, B = the newer
            latest: list[RunInfo] = []
            empty: list[RunInfo] = []
            for info in store.runs():
                if len(latest) == 2:
                    break
                (empty if not include_failed and no_answers(info.n_ok, info.n_errors) else latest).append(info)
            if empty:
                _note(notes, on_note, f"left out, no answers to compare: {', '.join(r.run_id for r in empty)} "
                                      "(every sample failed; --include-failed keeps them)")
            if len(latest) < 2:
                raise LvuError("compare needs two runs (RUN_A RUN_B), or one run with --paper")
            data = [RunData(info, store.results(info.run_id)) for info in (latest[1], latest[0])]
        else:
            data, note = answered_runs(load_runs(store, refs), include_failed=include_failed)
            if note and len(data) < (1 if paper else 2):
                raise LvuError(f"nothing to compare: {note}")
            if note:
                _note(notes, on_note, note)
    finally:
        store.close()
    if paper:
        if len(data) != 1:
            raise LvuError("--paper compares one run with the paper — pass one RUN")
        result = compare_paper(data[0], model=model, table=table, all_rows=all_rows, n_boot=bootstrap, seed=seed)
    else:
        if len(data) != 2:
            raise LvuError("pass two runs to compare (RUN_A RUN_B), or one run with --paper")
        result = compare_runs(data[0], data[1], n_boot=bootstrap, seed=seed)
    return CompareResult(comparison=result, run_ids=[r.run_id for r in data], notes=notes)
