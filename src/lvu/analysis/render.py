"""Writing a Report: self-contained HTML (plots as embedded PNG, a tiny sample filter) and
Markdown (the same numbers; plots as PNG files in `<stem>_files/` beside the .md file)."""

from __future__ import annotations

import base64
import html as _html
import json
import re
from pathlib import Path
from urllib.parse import quote

from lvu.analysis.document import Report, Section
from lvu.analysis.table import Table, cell_text
from lvu.types import LETTERS, SampleResult

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1300px;color:#222}
table{border-collapse:collapse;margin:.4rem 0 1rem}th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.ok td.mark{color:#187a2f}tr.bad td.mark{color:#b3261e}tr.err{background:#fff4f2}
code,pre{font-size:.85em}pre{white-space:pre-wrap;margin:0;max-height:14em;overflow:auto}
.tables{display:flex;flex-wrap:wrap;gap:0 2rem;align-items:flex-start}.note{color:#555;font-size:.9em;margin:.2rem 0}
figure{display:inline-block;margin:.5rem 1rem .5rem 0}figcaption{font-size:.85em;color:#555}
dl.summary{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dl.summary dt{font-weight:600}
nav ul{columns:2}input.filter{margin:.3rem 0;padding:.2rem;width:20rem}
"""

_JS = """
function lvuFilter(run, text, exact){const t=text.trim().toLowerCase();let shown=0;
 document.querySelectorAll('tr[data-run="'+run+'"]').forEach(tr=>{const labels=JSON.parse(tr.dataset.labels);
  const ok=!t||(exact?labels.includes(t):tr.dataset.text.includes(t));tr.style.display=ok?'':'none';if(ok)shown++;});
 const c=document.getElementById('count-'+run);if(c)c.textContent=shown+' shown';}
document.querySelectorAll('input.filter').forEach(i=>i.addEventListener('input',()=>lvuFilter(i.dataset.run,i.value,false)));
document.querySelectorAll('a.flt').forEach(a=>a.addEventListener('click',()=>{const i=document.querySelector('input.filter[data-run="'+a.dataset.run+'"]');
 if(i){i.value=a.dataset.filter;lvuFilter(a.dataset.run,a.dataset.filter,true);}}));
"""

_OVERALL = {"all", "overall", "m-avg", "g-avg"}


def _e(value: object) -> str:
    return _html.escape("" if value is None else str(value), quote=True)


def _choice(value: int | str | None) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(LETTERS):
        return LETTERS[value]
    return "" if value is None else str(value)


def _is_num(cell: object) -> bool:
    return isinstance(cell, (int, float)) or type(cell).__name__ == "Estimate"


# ---- HTML -------------------------------------------------------------------------------------------


def table_html(t: Table) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in t.columns)
    body = []
    for row in t.rows:
        cells = []
        for j, cell in enumerate(row):
            text = _e(cell_text(cell))
            if j == 0 and t.filter_run and str(cell).lower() not in _OVERALL:
                text = (f"<a class=flt href='#run-{_e(t.filter_run)}-samples' data-run='{_e(t.filter_run)}' "
                        f"data-filter='{_e(str(cell).lower())}'>{text}</a>")
            cells.append(f"<td class=num>{text}</td>" if _is_num(cell) else f"<td>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    notes = "".join(f"<p class=note>{_e(n)}</p>" for n in t.notes)
    title = f"<h4>{_e(t.title)}</h4>" if t.title else ""
    return f"<div>{title}<table><tr>{head}</tr>{''.join(body)}</table>{notes}</div>"


def _options_text(r: SampleResult) -> str:
    return "  ".join(f"{_choice(i)}. {o}" for i, o in enumerate(r.options))


def _question_cell(r: SampleResult) -> str:
    """The question, then its options one per line; empty for records stored before lvu kept them."""
    if not r.question and not r.options:
        return "<td></td>"
    options = "".join(f"<br>{_e(_choice(i))}. {_e(o)}" for i, o in enumerate(r.options))
    return f"<td class=question>{_e(r.question or '')}{options}</td>"


def sample_row(run_id: str, r: SampleResult, viewer_url: str | None) -> str:
    cls = "err" if r.error else ("ok" if r.correct else "bad")
    mark = "error" if r.error else ("✓" if r.correct else ("✗" if r.correct is False else ""))
    labels = ", ".join(f"{k}={v}" for k, v in r.labels.items())
    values = [str(x).lower() for v in r.labels.values() for x in (v if isinstance(v, list) else [v])]
    times = ", ".join(f"{t:.1f}" for t in r.frame_timestamps)
    anchor = f"{run_id}-s-{r.sample_id}"
    href = f"{viewer_url.rstrip('/')}/runs/{quote(run_id)}/samples/{quote(r.sample_id)}" if viewer_url else f"#{anchor}"
    detail = r.error or r.response or ""
    why = f"<details><summary>why</summary>{_e(r.explanation)}</details>" if r.explanation else ""
    text = " ".join([r.sample_id, labels]).lower()
    return (f"<tr class={cls} id='{_e(anchor)}' data-run='{_e(run_id)}' data-labels='{_e(json.dumps(values))}' "
            f"data-text='{_e(text)}'><td><a href='{_e(href)}'><code>{_e(r.sample_id)}</code></a></td>"
            f"{_question_cell(r)}<td>{_e(labels)}</td><td>{_e(_choice(r.answer))}</td><td>{_e(_choice(r.prediction))}</td>"
            f"<td class=mark>{mark}</td><td class=num>{r.latency:.2f}</td><td><details><summary>"
            f"{len(r.frame_timestamps)} frames</summary>{_e(times)}</details></td><td><pre>{_e(detail)}</pre>{why}</td></tr>")


def _samples_html(section: Section, viewer_url: str | None) -> str:
    run = section.samples
    assert run is not None
    head = ("<tr><th>sample</th><th>question / options</th><th>labels</th><th>answer</th><th>prediction</th>"
            "<th></th><th>s</th>"
            "<th>frames (s)</th><th>response / error</th></tr>")
    rows = "".join(sample_row(run.run_id, r, viewer_url) for r in run.results)
    return (f"<input class=filter data-run='{_e(run.run_id)}' placeholder='filter: sample id or label value'> "
            f"<span class=note id='count-{_e(run.run_id)}'>{len(run.results)} shown</span>"
            f"<table>{head}{rows}</table>")


def _section_html(s: Section, viewer_url: str | None) -> str:
    h = f"h{min(4, s.level)}"
    parts = [f"<{h} id='{_e(s.anchor)}'>{_e(s.title)}</{h}>"]
    for line in s.text:
        parts.append(f"<pre>{_e(line)}</pre>" if "\n" in line else f"<p>{_e(line)}</p>")
    if s.summary:
        items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in s.summary)
        parts.append(f"<dl class=summary>{items}</dl>")
    if s.tables:
        parts.append(f"<div class=tables>{''.join(table_html(t) for t in s.tables)}</div>")
    for f in s.figures:
        uri = "data:image/png;base64," + base64.b64encode(f.png).decode("ascii")
        parts.append(f"<figure><img src='{uri}' alt='{_e(f.caption)}'><figcaption>{_e(f.caption)}</figcaption></figure>")
    if s.samples is not None:
        parts.append(_samples_html(s, viewer_url))
    body = "".join(parts)
    return f"<details><summary>{_e(s.title)}</summary>{body}</details>" if s.title.startswith("Run spec") else body


def html(report: Report) -> str:
    toc = "".join(f"<li><a href='#{_e(s.anchor)}'>{_e(s.title)}</a></li>" for s in report.sections if s.level <= 2)
    notes = "".join(f"<p class=note>{_e(n)}</p>" for n in report.notes)
    body = "".join(_section_html(s, report.viewer_url) for s in report.sections)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(report.title)}</title>"
            f"<style>{_CSS}</style></head><body><h1>{_e(report.title)}</h1>{notes}<nav><ul>{toc}</ul></nav>"
            f"{body}<script>{_JS}</script></body></html>\n")


# ---- Markdown -----------------------------------------------------------------------------------------


_MD_SPECIAL = re.compile(r"([\\`*_~<>|])")


def md_text(text: object) -> str:
    """Text (a label, a model name, a sample's question) as Markdown shows it literally: no raw HTML,
    emphasis, code span, link or table cell break can come out of it."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("](", "]\\(").replace("\n", " ")


def _md_cell(cell: object) -> str:
    return md_text(cell_text(cell))


def table_markdown(t: Table) -> str:
    lines = ([f"**{md_text(t.title)}**", ""] if t.title else []) + ["| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
             "|" + "|".join("---:" if any(_is_num(r[j]) for r in t.rows if j < len(r)) else "---"
                            for j in range(len(t.columns))) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
    lines += [""] + [f"_{md_text(n)}_" for n in t.notes]
    return "\n".join(lines) + "\n"


def _samples_markdown(section: Section) -> str:
    run = section.samples
    assert run is not None
    t = Table(f"{len(run.results)} samples", ["sample", "question", "options", "labels", "answer", "prediction",
                                               "correct", "error"], [
        [r.sample_id, r.question or "", _options_text(r), ", ".join(f"{k}={v}" for k, v in r.labels.items()),
         _choice(r.answer), _choice(r.prediction),
         "" if r.correct is None else ("✓" if r.correct else "✗"), r.error or ""] for r in run.results])
    return table_markdown(t)


def markdown(report: Report, out: Path) -> str:
    """The report as Markdown; figures are written to `<out stem>_files/` and linked relatively."""
    fig_dir = out.with_name(f"{out.stem}_files")
    lines = [f"# {md_text(report.title)}", ""] + [f"_{md_text(n)}_" for n in report.notes]
    k = 0
    for s in report.sections:
        lines += [f"{'#' * min(4, s.level)} {md_text(s.title)}", ""]
        for line in s.text:  # a block stays verbatim in its fence (a fence inside it cannot close it)
            lines += (["```", line.replace("```", "` ` `"), "```"] if "\n" in line else [md_text(line)]) + [""]
        lines += [f"- **{md_text(key)}**: {md_text(v)}" for key, v in s.summary] + ([""] if s.summary else [])
        lines += [table_markdown(t) for t in s.tables]
        for f in s.figures:
            fig_dir.mkdir(parents=True, exist_ok=True)
            k += 1
            (fig_dir / f"fig{k}.png").write_bytes(f.png)
            alt = md_text(f.caption.replace("[", "(").replace("]", ")"))  # brackets would end the alt text
            lines += [f"![{alt}]({fig_dir.name}/fig{k}.png)", ""]
        if s.samples is not None:
            lines.append(_samples_markdown(s))
    return "\n".join(lines) + "\n"
