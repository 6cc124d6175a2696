"""Self-contained HTML report of one run: spec, environment, breakdown tables, every sample."""

from __future__ import annotations

import datetime as dt
import html
import json
from pathlib import Path

from lvu.benchmarks.base import Breakdown
from lvu.runs.store import RunInfo
from lvu.types import LETTERS, SampleResult

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.ok td.mark{color:#187a2f}tr.bad td.mark{color:#b3261e}tr.err{background:#fff4f2}
code,pre{font-size:.85em}pre{white-space:pre-wrap;margin:0;max-height:12em;overflow:auto}
.tables{display:flex;flex-wrap:wrap;gap:2rem}
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _choice(value: int | str | None) -> str:
    if isinstance(value, int) and 0 <= value < len(LETTERS):
        return LETTERS[value]
    return "" if value is None else str(value)


def breakdown_html(table: Breakdown) -> str:
    rows = "".join(
        f"<tr><td>{_e(name)}</td><td class=num>{n}</td><td class=num>{score:.1f}</td></tr>"
        for name, n, score in table.rows
    )
    return f"<div><h3>{_e(table.title)}</h3><table><tr><th>group</th><th>n</th><th>score %</th></tr>{rows}</table></div>"


def sample_row(r: SampleResult) -> str:
    cls = "err" if r.error else ("ok" if r.correct else "bad")
    mark = "error" if r.error else ("✓" if r.correct else "✗")
    labels = ", ".join(f"{k}={v}" for k, v in r.labels.items())
    times = ", ".join(f"{t:.1f}" for t in r.frame_timestamps)
    detail = r.error or r.response or ""
    return (
        f"<tr class={cls} id='s-{_e(r.sample_id)}'><td><code>{_e(r.sample_id)}</code></td><td>{_e(labels)}</td>"
        f"<td>{_e(_choice(r.answer))}</td><td>{_e(_choice(r.prediction))}</td><td class=mark>{mark}</td>"
        f"<td class=num>{r.latency:.2f}</td><td><details><summary>{len(r.frame_timestamps)} frames</summary>{_e(times)}"
        f"</details></td><td><pre>{_e(detail)}</pre></td></tr>"
    )


def render_report(run: RunInfo, results: list[SampleResult], tables: list[Breakdown]) -> str:
    when = dt.datetime.fromtimestamp(run.updated).isoformat(timespec="seconds")
    spec = json.dumps(run.spec.model_dump(mode="json"), indent=2)
    env = json.dumps(run.env, indent=2)
    n_err = sum(1 for r in results if r.error)
    head = "<tr><th>sample</th><th>labels</th><th>answer</th><th>prediction</th><th></th><th>s</th><th>frames (s)</th><th>response / error</th></tr>"
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>lvu run {_e(run.run_id)}</title>
<style>{_CSS}</style></head><body>
<h1>{_e(run.benchmark)} × {_e(run.model)}</h1>
<p>run <code>{_e(run.run_id)}</code> · {when} · {len(results)} samples · {n_err} errors · status {_e(run.status)}</p>
<h2>Results</h2><div class=tables>{''.join(breakdown_html(t) for t in tables)}</div>
<details><summary>Run spec and environment</summary><pre>{_e(spec)}</pre><pre>{_e(env)}</pre></details>
<h2>Samples</h2><table>{head}{''.join(sample_row(r) for r in results)}</table>
</body></html>
"""


def write_report(run: RunInfo, results: list[SampleResult], tables: list[Breakdown], results_dir: Path,
                 out: Path | None = None) -> Path:
    """Write `reports/<run_id>.html` under the results dir (or `out`) and return its path."""
    path = Path(out) if out else Path(results_dir) / "reports" / f"{run.run_id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render_report(run, results, tables), encoding="utf-8")
    tmp.replace(path)
    return path
