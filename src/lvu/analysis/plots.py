"""matplotlib figures for analyses and report tables (the Agg backend: no display needed).

matplotlib is a dependency of lvu, so every report has its plots; should it be missing from an
environment, `missing_matplotlib()` says why plots are off and the reports go on without them.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lvu.errors import LvuError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lvu.analysis.stats import Estimate
    from lvu.analysis.table import Analysis

INSTALL_HINT = "pip install matplotlib, a dependency of lvu"


def missing_matplotlib() -> str | None:
    """None when plots can be drawn, else a one-line reason (with the install command)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"plots are off: matplotlib is not installed ({INSTALL_HINT})"
    return None


def _figure(width: float = 6.4, height: float = 3.6) -> Figure:
    reason = missing_matplotlib()
    if reason:
        raise LvuError(reason)
    from matplotlib.figure import Figure  # the OO API: no pyplot state, renders with Agg

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    fig.add_subplot(1, 1, 1)
    return fig


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def to_data_uri(fig: Figure) -> str:
    """A `data:image/png;base64,...` URI, for self-contained HTML."""
    return "data:image/png;base64," + base64.b64encode(to_png(fig)).decode("ascii")


def save(fig: Figure, path) -> None:
    fig.savefig(path, metadata={"Software": None} if str(path).endswith(".png") else None)


def _err(points: Sequence[Estimate | None]) -> tuple[list[float], list[list[float]] | None]:
    """Values and asymmetric error bars (None when no point has an interval)."""
    ys, lo, hi = [], [], []
    for p in points:
        y = math.nan if p is None else p.value
        ys.append(y)
        with_ci = p is not None and p.has_ci
        lo.append(max(0.0, y - p.low) if p is not None and with_ci else 0.0)
        hi.append(max(0.0, p.high - y) if p is not None and with_ci else 0.0)
    return ys, ([lo, hi] if any(p is not None and p.has_ci for p in points) else None)


def plot_analysis(a: Analysis) -> Figure:
    """Lines (with CI bands) over numeric or ordered x, or grouped bars with CI whiskers."""
    fig = _figure()
    ax = fig.axes[0]
    names = list(a.series)
    if a.kind == "bar":
        width = 0.8 / max(1, len(names))
        for k, name in enumerate(names):
            ys, err = _err(a.series[name])
            xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(a.x))]
            ax.bar(xs, ys, width, yerr=err, capsize=3, label=name)
        ax.set_xticks(range(len(a.x)), a.x, rotation=30 if max(map(len, a.x), default=0) > 8 else 0, ha="right"
                      if max(map(len, a.x), default=0) > 8 else "center")
    else:
        xs = a.x_values if a.x_values is not None else list(range(len(a.x)))
        for name in names:
            ys, err = _err(a.series[name])
            line = ax.plot(xs, ys, marker="o", label=name)[0]
            if err is not None:
                lows = [y - e for y, e in zip(ys, err[0])]
                highs = [y + e for y, e in zip(ys, err[1])]
                ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.15, linewidth=0)
        if a.log_x and all(x > 0 for x in xs):
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs, a.x)
    if a.chance is not None:
        ax.axhline(a.chance, color="grey", linestyle="--", linewidth=1, label=f"chance ({a.chance:.1f})")
    ax.set_xlabel(a.x_label)
    ax.set_ylabel(a.y_label)
    ax.set_title(a.title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if len(names) > 1 or a.chance is not None:
        ax.legend(fontsize=8)
    return fig


def plot_groups(title: str, names: list[str], points: list[Estimate], y_label: str = "score") -> Figure:
    """A bar chart of one breakdown table's rows with their CIs (horizontal when rows are many)."""
    fig = _figure(6.4, max(2.4, 0.28 * len(names) + 1.2) if len(names) > 8 else 3.2)
    ax = fig.axes[0]
    ys, err = _err(points)
    if len(names) > 8:
        ax.barh(range(len(names)), ys, xerr=err, capsize=2, color="#4c72b0")
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(y_label)
    else:
        ax.bar(range(len(names)), ys, yerr=err, capsize=3, color="#4c72b0")
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    return fig


def plot_bars(title: str, names: list[str], series: dict[str, list[float | None]], y_label: str) -> Figure:
    """Grouped bars of plain values (no intervals): `lvu data stats --plot` (this release beside the paper)."""
    fig = _figure(6.4, 3.6 if len(names) <= 8 else 4.4)
    ax = fig.axes[0]
    width = 0.8 / max(1, len(series))
    for k, (label, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, [math.nan if v is None else v for v in values], width, label=label)
    long = max(map(len, names), default=0) > 8 or len(names) > 8
    ax.set_xticks(range(len(names)), names, rotation=35 if long else 0, ha="right" if long else "center", fontsize=8)
    ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8)
    return fig
