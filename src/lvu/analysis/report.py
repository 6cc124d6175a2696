"""Reports of stored runs: the benchmark's official tables with bootstrap CIs, the paper's rows
beside them, every analysis that applies (with plots), and each sample's details.

`build_report(runs)` makes a Report (sections of tables, figures and findings: document.py);
render.py writes it as self-contained HTML (plots embedded as PNG) or Markdown (plots as PNG files
beside it).
Several runs in one report start with one summary table across them (`runs_summary`: each run's
model identity, data, samples, failures, headline and unreadable replies, ranked within each data),
then the cross-run analyses they make possible: frame sweeps (curve and single-frame bias), modality
ablations, Video-MME's Table 4 with and without subtitles (and deltas), Neptune's MCQ + open-ended
Table 3 row. `write_report` is what `lvu run` calls (lvu.api).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from functools import partial
from pathlib import Path
from typing import Any, Callable

from lvu.analysis import analyses, sweeps
from lvu.analysis.compare import compare_paper, compare_runs
from lvu.analysis.document import Figure, Report, Section
from lvu.analysis.plots import missing_matplotlib, plot_analysis, plot_groups, to_png
from lvu.analysis.modality_table import videomme_table5
from lvu.analysis.runs import RunData, family, frame_sweeps, model_key, modality_groups, sweep_name
from lvu.analysis.stats import DEFAULT_BOOTSTRAP, Estimate, bootstrap_tables
from lvu.analysis.table import Analysis, Table
from lvu.benchmarks.base import Breakdown
from lvu.errors import LvuError
from lvu.runs.headline import Headline, describe_run, headline_of_tables
from lvu.runs.run_names import data_name, model_identity, unreadable, unreadable_note
from lvu.runs.store import RunInfo
from lvu.types import SampleResult

MAX_PAPER_ROWS = 25
"""Paper rows shown in a report's comparison (`lvu compare --paper` shows them all)."""


class _Figures:
    """Draws figures when matplotlib is there; otherwise records once why there are none."""

    def __init__(self, enabled: bool, notes: list[str]) -> None:
        self.reason = None if enabled else "plots are off (--no-plots)"
        self.reason = self.reason or missing_matplotlib()
        if self.reason:
            notes.append(self.reason)

    def add(self, section: Section, caption: str, make: Callable[[], Any]) -> None:
        if self.reason is None:
            section.figures.append(Figure(caption, to_png(make())))


def breakdown_table(table: Breakdown, cis: dict[tuple[str, str], Estimate], run_id: str) -> Table:
    """One official table with a CI on every cell."""
    rows = [[name, n, cis.get((table.title, str(name)), Estimate(score, n=n))] for name, n, score in table.rows]
    return Table(table.title, ["group", "n", "score [95% CI]"], rows, filter_run=run_id)


def _analysis_section(a: Analysis, anchor: str, figs: _Figures, level: int = 3) -> Section:
    table = a.table()
    table.title = ""  # the section's title says it
    section = Section(a.title, anchor, level, summary=list(a.summary), tables=[table])
    figs.add(section, a.title, partial(plot_analysis, a))
    return section


def niah_sections(runs: list[RunData], anchor: str, figs: _Figures, *, n_boot: int, seed: int,
                  level: int = 3) -> list[Section]:
    """Depth x length heatmaps (one per run) and the per-length curve, for needle benchmarks."""
    from lvu.analysis.niah import applies, niah, plot_niah

    if not any(applies(r) for r in runs):
        return []
    result = niah(runs, n_boot=n_boot, seed=seed)
    title = "Needle in a haystack: accuracy by depth × length" + (" × frames" if len(result.grids) > 1 else "")
    section = Section(title, anchor, level, tables=[*result.tables(), result.curve.table()], text=result.notes)
    figs.add(section, title, partial(plot_niah, result))
    return [section]


def run_sections(run: RunData, figs: _Figures, *, n_boot: int, seed: int) -> list[Section]:
    """Everything about one run: official tables with CIs, paper rows, analyses, samples."""
    info, anchor = run.info, f"run-{run.run_id}"
    when = dt.datetime.fromtimestamp(info.updated).isoformat(timespec="seconds")
    n_err = sum(1 for r in run.results if r.error)
    headline = headline_text(run)  # as lvu results list shows it
    head = Section(run.label, anchor, 2, text=[
        f"run {run.run_id} · {when} · {len(run.results)} samples · {n_err} errors · status {info.status}"
        + (f" · {headline}" if headline else ""),
        f"settings: {_settings(run)}"])
    if note := unreadable_note(run.results):
        head.text.append(note)
    cis = bootstrap_tables(run.results, run.aggregate, n_boot=n_boot, seed=seed, by_label=run.aggregates_by_label)
    head.tables = [breakdown_table(t, cis, run.run_id) for t in run.tables]
    head.text.append(f"Scores in the benchmark's official layout; brackets: {n_boot}-resample percentile bootstrap "
                     f"95% CIs (seed {seed})." if n_boot else "Scores in the benchmark's official layout.")
    for t in [t for t in run.tables if t.title != "overall" and 2 <= len(t.rows) <= 40][:2]:
        points = [cis.get((t.title, str(name)), Estimate(v)) for name, _, v in t.rows]
        if not all(math.isnan(p.value) for p in points):
            figs.add(head, t.title, partial(plot_groups, t.title, [str(r[0]) for r in t.rows], points))
    out = [head]
    try:
        paper = compare_paper(run, n_boot=0)
        table = paper.table
        if len(table.rows) > MAX_PAPER_ROWS + 1:
            table.notes.append(f"{len(table.rows) - 1 - MAX_PAPER_ROWS} more rows: lvu compare {run.run_id} --paper")
            table.rows = table.rows[: MAX_PAPER_ROWS + 1]
        out.append(Section("Beside the paper", f"{anchor}-paper", 3, summary=paper.summary, tables=[table],
                           text=[f"Erratum: {e}" for e in paper.errata]))
    except LvuError:
        pass
    for name, fn in analyses.SINGLE_RUN.items():
        try:
            out.append(_analysis_section(fn(run, n_boot=n_boot, seed=seed), f"{anchor}-{name}", figs))
        except LvuError:
            continue  # the analysis does not apply to this run (docs/analysis.md says what each needs)
        except Exception as e:  # a report never fails the run it reports on; say what went wrong
            head.text.append(f"{name} analysis failed: {type(e).__name__}: {e}")
    out += niah_sections([run], f"{anchor}-niah", figs, n_boot=n_boot, seed=seed)
    out.append(Section("Samples", f"{anchor}-samples", 3, samples=run))
    spec = json.dumps(run.spec.model_dump(mode="json"), indent=2)
    env = json.dumps(info.env, indent=2, default=str)
    out.append(Section("Run spec and environment", f"{anchor}-spec", 3, text=[spec, env]))
    if run.notes:
        head.text.extend(dict.fromkeys(run.notes))
    return out


def _headline(run: RunData) -> Headline | None:
    return headline_of_tables(run.tables, run.spec.settings.get("subset"))


def headline_text(run: RunData) -> str:
    """'score 62.5 % (all, n=8)', or 'no answers (8 of 8 failed)' when every stored sample failed
    (its 0.0 would read as a model that answered everything wrong); '' before anything is scored."""
    n_err = sum(1 for r in run.results if r.error)
    return describe_run(_headline(run), len(run.results) - n_err, n_err) or ""


def runs_summary(runs: list[RunData], *, include_failed: bool = False) -> Section:
    """The table a report of several runs starts with: one row per run (model identity, data,
    samples stored without error / the benchmark's, failed, headline, unreadable replies), ranked
    by headline within each data (runs on different data are not ranked against each other). Runs
    with no answers are left out and listed under the table, unless `include_failed`."""
    groups: dict[str, list[RunData]] = {}
    left_out = []
    for run in runs:
        if (none := run.no_answers) and not include_failed:
            left_out.append(f"left out: {run.run_id} ({model_identity(run.spec)} on {data_name(run.spec)}): {none}")
            continue
        groups.setdefault(data_name(run.spec), []).append(run)

    def rank_key(run: RunData) -> float:
        top = _headline(run)
        return -top.value if top and top.value is not None and not run.no_answers else math.inf

    rows = []
    for members in groups.values():
        ranked = sorted(members, key=rank_key)  # stable: ties keep the order the runs were given
        keys = [rank_key(run) for run in ranked]
        for run, key in zip(ranked, keys):
            n_err = sum(1 for r in run.results if r.error)
            n_ok = len(run.results) - n_err
            samples = f"{n_ok}/{run.info.n_total}" if run.info.n_total is not None else str(n_ok)
            rank = str(1 + keys.index(key)) if key < math.inf else "–"  # equal headlines share a rank: 1, 1, 3
            rows.append([rank, run.run_id, model_identity(run.spec),
                         data_name(run.spec), samples, n_err, headline_text(run), len(unreadable(run.results))])
    notes = ["rank: by headline within each data; samples: stored without error / the benchmark's; "
             "unreadable: replies that held no readable answer"] + left_out
    table = Table("", ["rank", "run", "model", "data", "samples", "failed", "headline", "unreadable"], rows, notes)
    return Section(f"{len(runs)} runs at a glance", "runs-summary", 2, tables=[table])


def _settings(run: RunData) -> str:
    parts = [f"{k}={v}" for k, v in run.spec.settings.items() if v is not None and k not in ("data", "video_dir")]
    args = [f"{k}={v}" for k, v in run.spec.model_args.items()]
    return ", ".join(parts + ([f"model args: {', '.join(args)}"] if args else []))


def cross_run_sections(runs: list[RunData], figs: _Figures, *, n_boot: int, seed: int) -> list[Section]:
    """Analyses that need several runs: frame sweeps, modality ablations, paired paper tables."""
    out: list[Section] = []
    for k, group in enumerate(frame_sweeps(runs)):
        named = f" (sweep {name})" if (name := sweep_name(group)) else ""
        section = Section(f"Frame sweep: {group[0].label.split(' [')[0]}{named}", f"sweep-{k}", 2,
                          text=[f"runs {', '.join(r.run_id for r in group)}"])
        for fn in (sweeps.frames_curve, sweeps.single_frame_bias):
            try:
                a = fn(group, n_boot=n_boot, seed=seed)
            except LvuError as e:
                section.text.append(str(e))
                continue
            section.summary += a.summary
            section.tables.append(a.table())
            figs.add(section, a.title, partial(plot_analysis, a))
        out.append(section)
        out += niah_sections(group, f"sweep-{k}-niah", figs, n_boot=n_boot, seed=seed, level=2)
    for k, group in enumerate(modality_groups(runs)):
        a = sweeps.modality(group, n_boot=n_boot, seed=seed)
        section = _analysis_section(a, f"modality-{k}", figs, level=2)
        framed = next((r for r in reversed(group) if r.frames), group[-1])
        section.title = f"Modality ablation: {framed.label}"
        out.append(section)
        by_mod = {r.modality: r for r in group}
        if family(group[0].spec.benchmark) == "videomme" and {"frames", "frames + subtitles"} <= set(by_mod):
            out.append(videomme_table4(by_mod["frames"], by_mod["frames + subtitles"], n_boot=n_boot, seed=seed))
        if tables := videomme_table5(group):
            out.append(Section("Video-MME Table 5: frames, +subtitles, +audio by domain", f"videomme-table5-{k}", 2,
                               tables=tables))
    out += neptune_table3(runs)
    return out


def videomme_table4(without: RunData, with_subs: RunData, *, n_boot: int, seed: int) -> Section:
    """Video-MME Table 4's shape: short / medium / long / overall, w/o and w/ subtitles, and the
    paired gain from subtitles (on the questions both runs answered)."""
    cmp = compare_runs(without, with_subs, n_boot=n_boot, seed=seed)
    rows = [[row, a, b, d, p] for title, row, a, b, d, p, *_ in cmp.table.rows if title == "overall"]
    table = Table("Video-MME Table 4: accuracy % w/o and w/ subtitles", ["duration", "w/o subs", "w/ subs",
                                                                         "Δ subtitles [CI]", "p"], rows,
                  cmp.table.notes)
    return Section("Video-MME: with and without subtitles", "videomme-table4", 2, summary=cmp.summary, tables=[table])


def neptune_table3(runs: list[RunData]) -> list[Section]:
    """Neptune Table 3's row for each model with an MCQ run and an open-ended (GEM) run."""
    mcq: dict[str, RunData] = {}
    open_: dict[str, RunData] = {}
    for r in runs:  # the newest run of each kind per model
        if family(r.spec.benchmark) == "neptune":
            (open_ if r.spec.benchmark == "neptune-open" else mcq)[model_key(r)] = r
    rows = []
    for key, m in mcq.items():
        if key not in open_:
            continue
        acc = {name: v for name, _, v in m.tables[0].rows}
        gem = {name: v for name, _, v in open_[key].tables[0].rows}
        rows.append([m.label, *[x for s in ("full", "mma", "mmh") for x in (acc.get(s), gem.get(s))]])
    if not rows:
        return []
    cols = ["run", *[f"{s.upper()} {m}" for s in ("full", "mma", "mmh") for m in ("Acc", "GEM")]]
    return [Section("Neptune Table 3: MCQ accuracy and open-ended GEM per subset", "neptune-table3", 2,
                    tables=[Table("Neptune Table 3", cols, rows,
                                  ["GEM cells stay empty until the open-ended run is judged (lvu's GEM judge)"])])]


def build_report(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0, plots: bool = True,
                 viewer_url: str | None = None, include_failed: bool = False) -> Report:
    """The report of one or more stored runs; several start with `runs_summary` (runs with no
    answers left out of its ranking unless `include_failed`)."""
    if not runs:
        raise LvuError("no runs to report on — pass run ids (lvu results list) or run one first")
    notes: list[str] = []
    figs = _Figures(plots, notes)
    sections: list[Section] = []
    if len(runs) > 1:
        sections = [runs_summary(runs, include_failed=include_failed),
                    *cross_run_sections(runs, figs, n_boot=n_boot, seed=seed)]
    for run in runs:
        sections += run_sections(run, figs, n_boot=n_boot, seed=seed)
    first = runs[0].spec
    title = f"lvu report: {data_name(first)} × {model_identity(first)}" if len(runs) == 1 else \
        f"lvu report: {len(runs)} runs"
    return Report(title, sections, notes, viewer_url=viewer_url)


def write(report: Report, out: Path, fmt: str = "html") -> Path:
    """Write the report (atomically) as HTML, or Markdown with its PNGs in `<stem>_files/`."""
    from lvu.analysis import render

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        text = render.html(report)
    elif fmt == "md":
        text = render.markdown(report, out)
    else:
        raise LvuError(f"--format {fmt!r} is not supported — use html or md")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out


def write_report(run: RunInfo, results: list[SampleResult], tables: list[Breakdown], results_dir: Path,
                 out: Path | None = None, *, n_boot: int = DEFAULT_BOOTSTRAP,
                 notes: list[str] | None = None) -> Path:
    """The report `lvu run` writes after a run: `reports/<run_id>.html` under the results dir (or `out`).
    `results` and `tables` must cover the same samples (a `--limit` run passes only its own, and
    its own `out`, with a note saying so: lvu.api.write_run_report)."""
    data = RunData(run, results, notes=list(notes or []))
    data.__dict__["tables"] = tables  # already aggregated by the run: reuse them
    path = Path(out) if out else Path(results_dir) / "reports" / f"{run.run_id}.html"
    return write(build_report([data], n_boot=n_boot), path, "html")
