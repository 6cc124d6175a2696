"""Needle in a haystack: accuracy over needle depth × video length, the picture long-context papers
show, for runs of benchmarks whose samples carry `depth` and `length` labels (`lvu build needle`
and `lvu build ladder` outputs). One heatmap per run — several runs of one benchmark at different
frame counts give the frames × depth × length grid — with the count of samples in every cell, the
per-length accuracy curve (one line per run), and MLVU's Time-ladder table: task accuracies per
length and their M-Avg, the mean over the tasks (Tables 7–9, "average of five multiple-choice tasks").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lvu.analysis.analyses import leading_number as _number
from lvu.analysis.stats import DEFAULT_BOOTSTRAP, Estimate, bootstrap_cells
from lvu.analysis.table import Analysis, Table, chance_of, choice_results, label_values, value
from lvu.errors import LvuError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lvu.analysis.runs import RunData

MAX_DEPTH_ROWS = 12
"""More distinct depths than this (random positions) are binned into tenths of the video."""
ALL = "all"


def applies(run: RunData) -> bool:
    """Whether the run's multiple-choice samples carry both a depth and a length label."""
    return any(label_values(r, "depth") and label_values(r, "length") for r in choice_results(run.results))


def _depth_rows(runs: list[RunData]) -> tuple[list[str], dict[str, str]]:
    """Row names in order, and depth label -> row (labels as they are, or tenths when too many)."""
    labels = {v for run in runs for r in choice_results(run.results) for v in label_values(r, "depth")}
    numbers = {lb: _number(lb) for lb in labels}  # inf: not a number
    if len(labels) <= MAX_DEPTH_ROWS or any(math.isinf(v) for v in numbers.values()):
        return sorted(labels, key=lambda lb: (numbers[lb], lb)), {lb: lb for lb in labels}
    def tenth(v: float) -> str:
        lo = min(90, max(0, int(v // 10) * 10))
        return f"{lo}-{lo + 10}%"
    rows = {lb: tenth(numbers[lb]) for lb in labels}
    return sorted(set(rows.values()), key=_number), rows


@dataclass
class Grid:
    """One run's depth × length accuracies."""

    run: RunData
    name: str
    cells: dict[tuple[str, str], Estimate]
    """(depth row, length) -> accuracy %, with (ALL, length), (depth, ALL) and (ALL, ALL)."""


@dataclass
class Niah:
    depths: list[str]
    lengths: list[str]
    grids: list[Grid]
    curve: Analysis
    ladders: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tables(self) -> list[Table]:
        out = []
        for g in self.grids:
            rows = []
            for d in [*self.depths, ALL]:
                rows.append([d if d != ALL else "all depths", *(_cell(g.cells.get((d, x))) for x in [*self.lengths, ALL])])
            out.append(Table(f"Accuracy % (n) by needle depth × video length — {g.name}",
                             ["depth", *self.lengths, "all lengths"], rows))
        return out + self.ladders


def _cell(e: Estimate | None) -> str:
    return "–" if e is None or math.isnan(e.value) else f"{e.value:.1f} ({e.n})"


def _name(run: RunData) -> str:
    frames = f", {run.frames} frames" if run.frames else ""
    return f"{run.spec.model}{frames} ({run.run_id[:8]})"


def niah(runs: list[RunData], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> Niah:
    """The heatmaps, curve and Time-ladder tables of the runs that carry depth and length labels."""
    usable = [r for r in runs if applies(r)]
    if not usable:
        raise LvuError("niah needs runs whose samples carry `depth` and `length` labels — run a benchmark made by "
                       "`lvu build needle` (or `lvu build ladder`): lvu run -b jsonl --data OUT/needle.jsonl ...")
    usable.sort(key=lambda r: (r.frames is None, r.frames or 0, r.run_id))
    depths, row_of = _depth_rows(usable)
    lengths = sorted({x for run in usable for r in choice_results(run.results) for x in label_values(r, "length")},
                     key=lambda x: (_number(x), x))
    grids = []
    for run in usable:
        cells: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(run.results):
            if not (r.counted and isinstance(r.answer, int)) or not label_values(r, "depth") or not label_values(r, "length"):
                continue
            d, x = row_of[label_values(r, "depth")[0]], label_values(r, "length")[0]
            for key in ((d, x), (ALL, x), (d, ALL), (ALL, ALL)):
                cells.setdefault(key, []).append(i)
        grids.append(Grid(run, _name(run), bootstrap_cells([value(r) for r in run.results], cells, n_boot=n_boot,
                                                          seed=seed)))
    xs = [_number(x) for x in lengths]
    numeric = all(0 < v < math.inf for v in xs)
    chance, _ = chance_of(choice_results(usable[0].results))
    curve = Analysis("niah", "Accuracy vs video length (needle benchmarks)", "video length", lengths,
                     {g.name: [g.cells.get((ALL, x)) for x in lengths] for g in grids},
                     x_values=xs if numeric else None, log_x=numeric and len(xs) > 2, chance=chance)
    notes = [f"{g.name}: {g.run.label}" for g in grids]
    if len(set(row_of.values())) != len(row_of):
        notes.append("depths are binned into tenths of the video (random needle positions)")
    return Niah(depths, lengths, grids, curve, [t for run in usable if (t := ladder_table(run, lengths))], notes)


def ladder_table(run: RunData, lengths: list[str]) -> Table | None:
    """MLVU's Time-ladder layout: one row per length, a column per task, M-Avg = the tasks' mean."""
    from lvu.construct.ladder import TASK_NAMES

    results = choice_results(run.results)
    tasks = sorted({t for r in results for t in label_values(r, "task")}, key=lambda t: list(TASK_NAMES).index(t)
                   if t in TASK_NAMES else len(TASK_NAMES))
    if not tasks:
        return None
    rows = []
    for x in lengths:
        accs: list[float] = []
        row: list[object] = [x]
        for t in tasks:
            rs = [r for r in results if x in label_values(r, "length") and t in label_values(r, "task")]
            acc = 100 * sum(value(r) for r in rs) / len(rs) if rs else math.nan
            row.append(f"{acc:.1f} ({len(rs)})" if rs else "–")
            if rs:
                accs.append(acc)
        row.append(f"{sum(accs) / len(accs):.1f}" if accs else "–")
        rows.append(row)
    return Table(f"Time-ladder: accuracy % (n) per length — {_name(run)}", ["length", *(TASK_NAMES.get(t, t) for t in tasks),
                 "M-Avg"], rows, ["M-Avg: the mean of the task accuracies at that length (MLVU Tables 7–9)"])


def plot_niah(result: Niah) -> Figure:
    """One heatmap per run (accuracy %, the count in each cell) and the per-length curve beside them."""
    from lvu.analysis.plots import _err, missing_matplotlib

    reason = missing_matplotlib()
    if reason:
        raise LvuError(reason)
    from matplotlib.figure import Figure

    n = len(result.grids)
    cell_w = max(0.7, min(1.1, 7.0 / max(1, len(result.lengths))))
    width = n * (1.6 + cell_w * len(result.lengths)) + 4.2
    height = max(3.2, 0.38 * len(result.depths) + 1.6)
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(1, n + 1, width_ratios=[len(result.lengths)] * n + [max(3, len(result.lengths))])
    image = None
    for ax, g in zip(axes[:-1], result.grids):
        grid = [[g.cells.get((d, x)) for x in result.lengths] for d in result.depths]
        values = [[math.nan if e is None else e.value for e in row] for row in grid]
        image = ax.imshow(values, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
        for i, row in enumerate(grid):
            for j, e in enumerate(row):
                if e is not None and not math.isnan(e.value):
                    ax.text(j, i, f"{e.value:.0f}\nn={e.n}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(result.lengths)), result.lengths, fontsize=8)
        ax.set_yticks(range(len(result.depths)), result.depths, fontsize=8)
        ax.set_xlabel("video length")
        ax.set_ylabel("needle depth")
        ax.set_title(g.name, fontsize=9)
    if image is not None:
        fig.colorbar(image, ax=list(axes[:-1]), label="accuracy %", location="bottom", shrink=0.6, aspect=40)
    ax = axes[-1]
    a = result.curve
    xs = a.x_values if a.x_values is not None else list(range(len(a.x)))
    for name, points in a.series.items():
        ys, err = _err(points)
        line = ax.plot(xs, ys, marker="o", label=name)[0]
        if err is not None:
            ax.fill_between(xs, [y - e for y, e in zip(ys, err[0])], [y + e for y, e in zip(ys, err[1])],
                            color=line.get_color(), alpha=0.15, linewidth=0)
    if a.log_x:
        ax.set_xscale("log", base=2)
    ax.set_xticks(xs, a.x, fontsize=8)
    if a.chance is not None:
        ax.axhline(a.chance, color="grey", linestyle="--", linewidth=1, label=f"chance ({a.chance:.0f})")
    ax.set_ylim(-2, 102)
    ax.set_xlabel("video length")
    ax.set_ylabel("accuracy %")
    ax.set_title("accuracy vs length", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return fig
