"""Reports, comparisons and analyses of stored runs: `report` (`lvu report`), `compare` (`lvu compare
RUN --paper`, `lvu compare RUN_A RUN_B`), `analyse` (`lvu analyse NAME`: the papers' analyses),
`leak_audit` (`lvu analyse leak`) and `certificate` (`lvu certificate`). They read the run store
only (nothing is created there but the report file and the ledger's certificates), and return what
the commands print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from lvu.errors import LvuError
from lvu.runs.store import RunInfo, Store

if TYPE_CHECKING:
    from lvu.analysis.certificate import CertificateJob
    from lvu.analysis.compare import Comparison
    from lvu.analysis.document import Report
    from lvu.analysis.leak import LeakResult
    from lvu.analysis.runs import RunData
    from lvu.analysis.table import Analysis, Table

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


ANALYSES = ("frames-curve", "single-frame-bias", "modality", "depth", "clue-length", "video-length", "letters",
            "blind", "niah", "leak")
"""The papers' analyses by name (`lvu analyse NAME`; docs/analysis.md)."""


def cell_text(cell: object) -> str:
    """A table cell as the commands print it (numbers rounded, None as –)."""
    from lvu.analysis.table import cell_text as text

    return text(cell)


def _mkdir_save(fig: Any, path: str | Path) -> Path:
    from lvu.analysis.plots import save

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(fig, path)
    return path


@dataclass(frozen=True)
class AnalysisResult:
    """An analysis of stored runs as `lvu analyse NAME` prints it: its tables, then its notes, then
    its summary lines, then the tables printed after the summary (Video-MME's Table 5 layout)."""

    name: str
    tables: list[Table]
    summary: list[tuple[str, str]]
    run_ids: list[str]
    notes: list[str] = field(default_factory=list)
    after: list[Table] = field(default_factory=list)
    figure: Callable[[], Any] | None = None
    """Makes the analysis' matplotlib figure (`write_plot`)."""

    def write_plot(self, path: str | Path) -> Path:
        """The plot as PNG, SVG or PDF (by the suffix); its folder is created."""
        if self.figure is None:
            raise LvuError(f"{self.name} has no plot")
        return _mkdir_save(self.figure(), path)


def _sweep_group(name: str, loaded: list[RunData], store: Store, given: bool) -> list[RunData]:
    """The stored group (frame sweep or modality ablation) of the one run given (none given: the
    most recently run group)."""
    from lvu.analysis.runs import RunData, frame_sweeps, modality_groups

    everything = [RunData(i, store.results(i.run_id)) for i in store.runs()]
    finder = modality_groups if name == "modality" else frame_sweeps
    groups = sorted(finder(everything), key=lambda g: sorted((r.info.updated for r in g), reverse=True),
                    reverse=True)  # newest member first, ties broken by the next newest
    group = next((g for g in groups if not given or any(r.run_id == loaded[0].run_id for r in g)), None)
    if group is None:
        what = "other input modalities" if name == "modality" else "other frame counts"
        raise LvuError(f"run {loaded[0].run_id} has no stored runs with {what} of the same model — pass the runs")
    return group


def analyse(name: str, runs: str | Sequence[str] | None = None, *, results_dir: str | Path | None = None,
            bootstrap: int = 1000, seed: int = 0, on_note: Notes = None) -> AnalysisResult:
    """One of the papers' analyses (ANALYSES, except leak: `leak_audit`) on stored runs (ids or
    unique prefixes; None: the latest run). frames-curve, single-frame-bias and modality compare
    runs: pass them, or one and its stored sweep / ablation is found; blind takes any number of
    blind-probe runs; niah takes needle runs (one brings its frame sweep along).

        curve = analyse("frames-curve", ["3f2a9c", "81be07"], bootstrap=200)
        print(curve.summary)
    """
    from lvu.analysis import analyses, sweeps
    from lvu.analysis.plots import plot_analysis
    from lvu.analysis.runs import RunData, frame_sweeps, load_runs

    if name not in ANALYSES:
        raise LvuError(f"unknown analysis {name!r} — use one of {', '.join(ANALYSES)}")
    if name == "leak":
        raise LvuError("leak audits a benchmark or JSONL file, not runs — call leak_audit")
    refs = _refs(runs)
    notes: list[str] = []
    store = Store(results_dir, read_only=True)
    try:
        loaded = load_runs(store, refs)
        _note_empty_runs(loaded, notes, on_note)
        if name == "niah":  # any number of needle runs; several frame counts give the frames x depth x length grid
            from lvu.analysis.niah import niah, plot_niah

            if len(loaded) == 1:
                everything = [RunData(i, store.results(i.run_id)) for i in store.runs()]
                group = next((g for g in frame_sweeps(everything) if any(r.run_id == loaded[0].run_id for r in g)),
                             None)
                loaded = group or loaded
            grid = niah(loaded, n_boot=bootstrap, seed=seed)
            return AnalysisResult(name=name, tables=[*grid.tables(), grid.curve.table()], summary=[],
                                  run_ids=[r.run_id for r in loaded], notes=list(grid.notes),
                                  figure=lambda: plot_niah(grid))
        if name == "blind":  # any number of blind-probe runs, one column each
            from lvu.analysis.blind import blind_runs

            result = blind_runs(loaded, n_boot=bootstrap, seed=seed)
        elif name in sweeps.MULTI_RUN:
            if len(loaded) < 2:  # the stored group of the given run (no RUN: the most recently run group)
                loaded = _sweep_group(name, loaded, store, bool(refs))
            result = sweeps.MULTI_RUN[name](loaded, n_boot=bootstrap, seed=seed)
        else:
            if len(loaded) != 1:
                raise LvuError(f"{name} analyses one run — pass one RUN")
            result = analyses.SINGLE_RUN[name](loaded[0], n_boot=bootstrap, seed=seed)
    finally:
        store.close()
    after: list[Table] = []
    if name == "modality":  # Video-MME: Table 5's duration x domain layout, with the paper's beside
        from lvu.analysis.modality_table import videomme_table5

        after = list(videomme_table5(loaded))
    return AnalysisResult(name=name, tables=[result.table()], summary=list(result.summary),
                          run_ids=[r.run_id for r in loaded], after=after, figure=lambda: plot_analysis(result))


@dataclass(frozen=True)
class LeakAudit:
    """`lvu analyse leak`: how well options-only rules (and a text-only model) answer a benchmark."""

    result: LeakResult
    """Every rule's rows (lvu.analysis.leak); `.failed`: the text-only model's calls that failed."""
    table: Table
    warnings: list[str]
    """One line per rule that leaks (printed, never silenced)."""

    def to_json(self) -> dict[str, Any]:
        """leak.json's content."""
        return self.result.to_json()

    def write_plot(self, path: str | Path) -> Path:
        from lvu.analysis.leak import leak_analysis
        from lvu.analysis.plots import plot_analysis

        return _mkdir_save(plot_analysis(leak_analysis(self.result)), path)


def leak_audit(source: str, *, data: str | Path | None = None, settings: dict[str, Any] | None = None,
               by: str | None = None, seed: int = 0, model: str | None = None,
               model_args: dict[str, Any] | None = None, results_dir: str | Path | None = None,
               show_progress: bool = False, on_note: Notes = None) -> LeakAudit:
    """The options-only audit of a benchmark (a registered name, with `data` / `settings`) or an
    lvu JSONL file: every options-only rule, overall and per value of the label `by` (None: task,
    else question_type, ...; "none": overall only); `model`: also a text-only model's row.

        audit = leak_audit("haystack")
        print(audit.warnings)
    """
    from lvu.analysis.leak import audit, leak_table, leak_warnings
    from lvu.construct.filter_files import source_benchmark

    bench = source_benchmark(source, {**({"data": str(data)} if data else {}), **(settings or {})})
    samples, bad = bench.loaded()
    if bad:  # never silently: the audit is not of the whole file
        _note([], on_note, f"note: {len(bad)} unreadable record(s) left out (`lvu data check` lists them); first: "
                           f"{bad[0].error}")
    if by == "none":  # the overall rows only
        by = ""
    elif by is not None and not any(by in s.labels for s in samples):
        known = ", ".join(sorted({k for s in samples for k in s.labels})) or "none"
        raise LvuError(f"--by {by}: no sample of {source} has that label — its labels: {known}")
    if model_args and not model:
        raise LvuError("--model-arg without --model — pass -m MODEL for the text-only row")
    result = audit(samples, by=by, seed=seed, text_model=(model, model_args or {}) if model else None,
                   results_dir=results_dir, source=source, show_progress=show_progress)
    if not result.audited:
        reasons = "; ".join(f"{n} {why}" for why, n in result.skipped.items()) or "no samples"
        raise LvuError(f"{source}: no multiple-choice sample with an answer index — nothing to audit ({reasons})")
    return LeakAudit(result=result, table=leak_table(result), warnings=list(leak_warnings(result)))


@dataclass(frozen=True)
class CertificateResult:
    """`lvu certificate`: the certificates (in the ledger's job) with their table and summary."""

    job: CertificateJob
    """`.certificates`, `.job_id`, `.results_dir`, `.n_reused`, `.interrupted` (lvu.analysis.certificate)."""
    table: Table
    analysis: Analysis
    """The distribution of certificate frames; `.summary` holds the means."""

    def write_rows(self, path: str | Path) -> Path:
        """One JSON line per sample (its whole query trail), as read back from the ledger."""
        import json

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({**c.__dict__, "effort": c.effort}) + "\n"
                                for c in self.job.certificates), encoding="utf-8")
        return path

    def write_plot(self, path: str | Path) -> Path:
        """The certificate-frames distribution (PNG, SVG or PDF by the suffix)."""
        from lvu.analysis.plots import plot_analysis, save

        save(plot_analysis(self.analysis), path)
        return Path(path)


def certificate(benchmark: str = "haystack", model: str = "ocr-match", *, settings: dict[str, Any] | None = None,
                model_args: dict[str, Any] | None = None, limit: int | None = None,
                fps: tuple[float, ...] = (0.5, 1.0), min_clip: float = 2.0, max_frames: int = 256, verify: int = 0,
                results_dir: str | Path | None = None, concurrency: int = 4, fresh: bool = False,
                show_progress: bool = True) -> CertificateResult:
    """Neptune's temporal certificate and effort score of every multiple-choice sample of a
    benchmark for a model, each committed to the results dir's ledger (a rerun resumes; an edited
    sample is the only one certified again; `fresh` recomputes all).

        certs = certificate("haystack", "ocr-match", limit=2, results_dir=tmp)
        print(certs.analysis.summary)
    """
    from lvu.analysis.certificate import certificate_job, summarize

    if concurrency < 1:
        raise LvuError(f"--concurrency {concurrency} is not a positive number of samples — e.g. --concurrency 4")
    job = certificate_job(benchmark, model, settings=settings, model_args=model_args, limit=limit, fps=fps,
                          min_clip=min_clip, max_frames=max_frames, verify=verify, results_dir=results_dir,
                          concurrency=concurrency, fresh=fresh, show_progress=show_progress)
    table, analysis = summarize(job.certificates)
    return CertificateResult(job=job, table=table, analysis=analysis)
