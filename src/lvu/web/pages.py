"""The viewer's HTML: plain server-rendered pages (no JavaScript needed), every value escaped.

The escaping rule of every lvu page (`lvu view` and `lvu review`): text goes into HTML only through
`e` (element text and quoted attribute values), data for a page's script only through
`json_script` (a JSON block whose `<`, `>`, `&` are \\u escapes, so no value can close it), and
scripts never put data into the page as markup (they set `textContent`)."""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from lvu.runs.headline import describe_run, headline_of_tables, score_cell
from lvu.runs.run_names import data_name, model_identity
from lvu.runs.store import RunInfo
from lvu.runs.summaries import Listed
from lvu.types import LETTERS, SampleResult
from lvu.web.catalog import SHOWS, Tables, outcome
from lvu.web.compare import MAX_DIFFERING, RunsComparison, delta_text, name

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem 2rem;color:#222;background:#fff}
a{color:#1a56b0}nav{margin-bottom:1rem;color:#666}nav a{margin-right:.3rem}
table{border-collapse:collapse;margin:.5rem 0 1.2rem}th,td{border:1px solid #ccc;padding:.2rem .55rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.correct{color:#187a2f}td.wrong{color:#b3261e}td.failed{color:#b3261e;font-weight:600}td.uncounted,td.unscored{color:#777}
tr.failed{background:#fff4f2}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:.5rem;margin:.3rem 0;font-size:.85em}
.tables{display:flex;flex-wrap:wrap;gap:1.5rem}.tables h3{margin:.2rem 0}
.timeline{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-start}
figure.frame{margin:0;width:224px}figure.frame img{width:224px;display:block;background:#000}
figure.frame figcaption{font-size:.8em;color:#444}
.cue{width:224px;background:#fff7d6;border:1px solid #e6cf73;padding:.3rem;font-size:.85em}
.cue .span{color:#7a6400;font-size:.85em;display:block}
.text{flex-basis:100%}.note{color:#8a5a00}form{margin:.5rem 0}
#question{background:#eef4ff;border:1px solid #b9cdf0;padding:.4rem .8rem;margin:.5rem 0}#question ol{margin:.2rem 0}
#question li.answer{font-weight:600}
.notebox{background:#fff7e6;border:1px solid #e8c06a;padding:.3rem .8rem;margin:.5rem 0}.notebox pre{background:none}
td.question{max-width:32rem;color:#333}p.refused{color:#b3261e;font-weight:600}
details.trace{margin:.5rem 0}details.trace pre{max-height:30em;overflow:auto}
"""


def e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def json_script(element_id: str, data: Any) -> str:
    """`data` as a `<script type=application/json>` block a page's script reads with JSON.parse."""
    text = json.dumps(data, ensure_ascii=False).replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"<script type='application/json' id='{e(element_id)}'>{text}</script>"


def choice(value: int | str | None) -> str:
    """An option index as its letter; other values as they are."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(LETTERS):
        return LETTERS[value]
    return "" if value is None else str(value)


def when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).isoformat(sep=" ", timespec="seconds")


def run_url(run_id: str, **query: Any) -> str:
    params = {k: v for k, v in query.items() if v not in (None, "", "all", 1)}
    return f"/runs/{quote(run_id, safe='')}" + (f"?{urlencode(params)}" if params else "")


def sample_url(run_id: str, sample_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}/samples/{quote(sample_id, safe='')}"


def media_url(run_id: str, sample_id: str, index: int) -> str:
    return f"/media/{quote(run_id, safe='')}/{quote(sample_id, safe='')}/{index}.jpg"


def layout(title: str, body: str, crumbs: Sequence[tuple[str, str]] = (), *,
           home: tuple[str, str] | None = ("runs", "/"), css: str = "", head: str = "") -> str:
    """A whole page: `crumbs` (name, URL) after `home` in the nav; `css` added to the shared
    style; `head` (trusted markup, e.g. a script tag) at the end of <head>."""
    nav = " / ".join(f"<a href='{e(url)}'>{e(name)}</a>" for name, url in [*([home] if home else []), *crumbs])
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)} — lvu</title>"
            f"<style>{CSS}{css}</style>{head}</head><body><nav>{nav}</nav>{body}</body></html>")


# ---- runs -------------------------------------------------------------------------------------------


def run_name(info: RunInfo) -> str:
    """How pages title a run: its data and model identity (lvu.runs.run_names), e.g.
    'jsonl(q.jsonl) × openai(fake-smart)'."""
    return f"{data_name(info.spec)} × {model_identity(info.spec)}"


def runs_page(runs: list[RunInfo], listed: dict[str, Listed], results_dir: str, *,
              filters: dict[str, str] | None = None, message: str | None = None) -> str:
    """Every run, as `lvu results list`: model identity and data, samples stored without error /
    the benchmark's, failed, the headline score (the benchmark's official overall row, or 'no
    answers (8 of 8 failed)': lvu.runs.headline.score_cell), replies with no readable answer
    (when any). Ticking runs and the compare button open `/compare`."""
    filters = filters or {}
    head = ("<tr><th>run</th><th>data</th><th>model</th><th>settings</th><th>status</th>"
            "<th>samples</th><th>failed</th><th>score %</th><th>unreadable</th><th>updated</th></tr>")
    rows = "".join(
        f"<tr class=run><td><input type=checkbox name=run value='{e(r.run_id)}' aria-label='pick {e(r.run_id)}'> "
        f"<a href='{e(run_url(r.run_id))}'><code>{e(r.run_id)}</code></a></td>"
        f"<td>{e(data_name(r.spec))}</td><td>{e(model_identity(r.spec))}</td><td>{e(settings_text(r))}</td>"
        f"<td>{e(r.status)}</td><td class=num>{e(r.coverage)}</td><td class=num>{r.n_errors}</td>"
        f"<td class=num>{e(score_cell(listed[r.run_id].headline, r.n_ok, r.n_errors))}</td>"
        f"<td class='num unreadable'>{listed[r.run_id].unreadable or ''}</td><td>{when(r.updated)}</td></tr>"
        for r in runs
    )
    search = (f"<form method=get action='/' id=filter>model <input name=model value='{e(filters.get('model', ''))}' "
              f"placeholder='openai, fake-smart, openai(fake-smart)'> data <input name=benchmark "
              f"value='{e(filters.get('benchmark', ''))}' placeholder='jsonl, q.jsonl'> <button>filter</button></form>")
    picker = ("<p><button type=submit id=compare>compare the ticked runs</button> "
              "<label><input type=checkbox name=include_failed value=1> include runs with no answers</label></p>")
    listing = (f"<form method=get action='/compare' id=pick><table>{head}{rows}</table>{picker}</form>" if runs else
               "<p>No runs yet — start one with <code>lvu run</code>.</p>" if not message else "")
    note = f"<p class=note id=filter-note>{e(message)}</p>" if message else ""
    body = f"<h1>Runs</h1><p>{len(runs)} run(s) in <code>{e(results_dir)}</code></p>{search}{note}{listing}"
    return layout("runs", body)


def settings_text(r: RunInfo) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.spec.settings.items() if v is not None)


# ---- one run ------------------------------------------------------------------------------------------


def breakdown_html(title: str, rows: list[tuple[str, int, float]]) -> str:
    body = "".join(f"<tr><td>{e(g)}</td><td class=num>{n}</td><td class=num>{s:.1f}</td></tr>" for g, n, s in rows)
    head = "<tr><th>group</th><th>n</th><th>score %</th></tr>"
    return f"<div class=breakdown><h3>{e(title)}</h3><table>{head}{body}</table></div>"


def truncated(text: str | None, limit: int = 100) -> str:
    """One line of at most `limit` characters (the sample list's question column)."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sample_row(run_id: str, r: SampleResult) -> str:
    kind = outcome(r)
    labels = ", ".join(f"{k}={v}" for k, v in r.labels.items())
    detail = r.error or r.response or ""
    short = detail if len(detail) <= 140 else detail[:139] + "…"
    score = "" if r.score is None else f"{r.score:g}"
    link = f"<a href='{e(sample_url(run_id, r.sample_id))}'><code>{e(r.sample_id)}</code></a>"
    return (f"<tr class='sample {kind}'><td>{link}</td><td class=question>{e(truncated(r.question))}</td>"
            f"<td>{e(labels)}</td><td>{e(choice(r.answer))}</td><td>{e(choice(r.prediction))}</td>"
            f"<td class=num>{score}</td><td class={kind}>{kind}</td><td class=num>{r.latency:.2f}</td>"
            f"<td>{e(short)}</td></tr>")


def run_page(info: RunInfo, tables: Tables, shown: list[SampleResult], *, n_matching: int, counts: dict[str, int],
             labels: list[str], show: str, label: str | None, page: int, per_page: int,
             unreadable: str | None = None) -> str:
    """One run: headline, breakdown tables, spec, the note on unreadable replies
    (lvu.runs.run_names.unreadable_note) and a page of its samples."""
    rid = info.run_id
    spec = json.dumps(info.spec.model_dump(mode="json"), indent=2)
    env = json.dumps(info.env, indent=2)
    note = f"<p class=note>{e(tables.note)}</p>" if tables.note else ""
    top = headline_of_tables(tables.tables, info.spec.settings.get("subset"))  # as the run list shows it
    said = describe_run(top, info.n_ok, info.n_errors)  # the score, or 'no answers (8 of 8 failed)'
    score = f"<span id=headline>{e(said)}</span> · " if said else ""
    unreadable_html = f"<div class=notebox id=unreadable><pre>{e(unreadable)}</pre></div>" if unreadable else ""
    breakdowns = "".join(breakdown_html(t.title, t.rows) for t in tables.tables)
    show_links = " · ".join(
        f"<a href='{e(run_url(rid, show=s, label=label))}'>{'<b>' + s + '</b>' if s == show else s}</a> ({counts.get(s, 0)})"
        for s in SHOWS
    )
    options = "".join(f"<option value='{e(v)}'{' selected' if v == label else ''}>{e(v)}</option>" for v in labels)
    form = (f"<form method=get action='{e(run_url(rid))}'><input type=hidden name=show value='{e(show)}'>"
            f"label <select name=label><option value=''>any</option>{options}</select> <button>filter</button></form>")
    first = (page - 1) * per_page
    pager = f"showing {first + 1 if shown else 0}–{first + len(shown)} of {n_matching}"
    if page > 1:
        pager += f" · <a href='{e(run_url(rid, show=show, label=label, page=page - 1))}'>previous</a>"
    if first + len(shown) < n_matching:
        pager += f" · <a href='{e(run_url(rid, show=show, label=label, page=page + 1))}'>next</a>"
    head = ("<tr><th>sample</th><th>question</th><th>labels</th><th>answer</th><th>prediction</th><th>score</th>"
            "<th>outcome</th><th>s</th><th>response / error</th></tr>")
    body = (
        f"<h1>{e(run_name(info))}</h1>"
        f"<p>run <code id=run-id>{e(rid)}</code> · status {e(info.status)} · {score}"
        f"{e(info.coverage)} samples stored without error · {info.n_errors} failed · updated {when(info.updated)}</p>"
        f"{unreadable_html}<h2>Results</h2>{note}<div class=tables>{breakdowns}</div>"
        f"<h2>Spec and environment</h2><div class=tables><pre>{e(spec)}</pre><pre>{e(env)}</pre></div>"
        f"<h2>Samples</h2><p>show: {show_links}</p>{form}<p>{pager}</p>"
        f"<table>{head}{''.join(sample_row(rid, r) for r in shown)}</table>"
    )
    return layout(f"run {rid}", body, [(f"{run_name(info)} ({rid})", run_url(rid))])


# ---- one sample ---------------------------------------------------------------------------------------

KNOWN_FIELDS = {"sample_id", "labels", "answer", "prompt", "frame_timestamps", "response", "prediction", "score",
                "correct", "counted", "explanation", "error", "latency", "question", "options", "traceback",
                "data_error", "n_options"}


def question_html(result: SampleResult) -> str:
    """The question and its options, lettered, above everything else (nothing for records stored
    before lvu kept them)."""
    if not result.question and not result.options:
        return ""
    items = "".join(f"<li{' class=answer' if i == result.answer else ''}>{e(o)}</li>"
                    for i, o in enumerate(result.options))
    options = f"<ol type=A id=options>{items}</ol>" if items else ""
    return f"<div id=question><p><b>Q:</b> {e(result.question or '')}</p>{options}</div>"


def part_html(run_id: str, sample_id: str, part: dict[str, Any]) -> str:
    if part["kind"] == "frame":
        t = part["timestamp"]
        if part["index"] is None:
            return f"<figure class=frame><figcaption>frame at {t:.2f} s (not among the stored frames)</figcaption></figure>"
        i = part["index"]
        return (f"<figure class=frame><img src='{e(media_url(run_id, sample_id, i))}' alt='frame {i} at {t:.2f} s'>"
                f"<figcaption>#{i} · {t:.2f} s</figcaption></figure>")
    if part["kind"] == "subtitle":
        span = f"{part['start']:.2f}–{part['end']:.2f} s" if part.get("start") is not None else ""
        return f"<div class=cue><span class=span>subtitle {e(span)}</span>{e(part['text'])}</div>"
    return f"<div class=text><pre>{e(part['text'])}</pre></div>"


def sample_page(info: RunInfo, record: dict[str, Any], parts: list[dict[str, Any]],
                neighbours: tuple[str | None, str | None]) -> str:
    rid, sid = info.run_id, str(record.get("sample_id"))
    result = SampleResult.model_validate(record)
    prompt = record.get("prompt") or {}
    kind = outcome(result)
    facts = [
        ("answer", choice(result.answer)), ("prediction", choice(result.prediction)),
        ("outcome", kind), ("score", "" if result.score is None else f"{result.score:g}"),
        ("counted", "yes" if result.counted else "no (left out of the denominator)"),
        ("explanation", result.explanation), ("error", result.error),
        ("data error", "yes: the data is at fault, left out of the score" if result.data_error else None),
        ("latency", f"{result.latency:.3f} s"),
        ("labels", ", ".join(f"{k}={v}" for k, v in result.labels.items())),
        ("frames", f"{len(result.frame_timestamps)} · subtitle cues {prompt.get('n_subtitles', 0)}"),
    ]
    fact_rows = "".join(f"<tr><th>{e(k)}</th><td class='{kind if k == 'outcome' else ''}' "
                        f"id='fact-{k.replace(' ', '-')}'>{e(v)}</td></tr>" for k, v in facts if v not in (None, ""))
    trace = ""
    if result.traceback:  # collapsed: the error line above says what failed, this says where
        n_lines = result.traceback.count("\n") + 1
        trace = (f"<details class=trace id=traceback><summary>traceback ({n_lines} lines)</summary>"
                 f"<pre>{e(result.traceback)}</pre></details>")
    other = {k: v for k, v in record.items() if k not in KNOWN_FIELDS}
    extra = (f"<h2>Other fields (judge output)</h2><pre>{e(json.dumps(other, indent=2, ensure_ascii=False))}</pre>"
             if other else "")
    exact = ""
    if prompt.get("system"):
        exact += f"<h3>system</h3><pre>{e(prompt['system'])}</pre>"
    exact += f"<h3>user</h3><pre id=prompt-text>{e(prompt.get('text', ''))}</pre>"
    if prompt.get("assistant_prefix"):
        exact += f"<h3>assistant prefix</h3><pre>{e(prompt['assistant_prefix'])}</pre>"
    prev_id, next_id = neighbours
    links = " · ".join(
        f"<a href='{e(sample_url(rid, other_id))}'>{name}</a>"
        for name, other_id in (("previous", prev_id), ("next", next_id)) if other_id is not None
    )
    timeline = "".join(part_html(rid, sid, p) for p in parts) or "<p>No prompt was built (see the error).</p>"
    body = (
        f"<h1>Sample <code id=sample-id>{e(sid)}</code></h1><p>run <code>{e(rid)}</code> · {links}</p>"
        f"{question_html(result)}<table class=facts>{fact_rows}</table>{trace}"
        f"<h2>What the model saw, in order</h2><div class=timeline>{timeline}</div>"
        f"<h2>Exact prompt</h2>{exact}"
        f"<h2>Raw response</h2><pre id=response>{e(result.response)}</pre>{extra}"
    )
    crumbs = [(f"{run_name(info)} ({rid})", run_url(rid)), (sid, sample_url(rid, sid))]
    return layout(f"sample {sid}", body, crumbs)


# ---- several runs side by side ------------------------------------------------------------------------


def compare_url(run_ids: Sequence[str], **query: Any) -> str:
    params = [("run", r) for r in run_ids] + [(k, v) for k, v in query.items() if v not in (None, "", 0, False)]
    return "/compare?" + urlencode(params)


def compare_refused(message: str) -> str:
    """The comparison page when there is nothing to compare: the one-line reason."""
    body = (f"<h1>Compare runs</h1><p class=refused id=refused>{e(message)}</p>"
            "<p><a href='/'>back to the run list</a></p>")
    return layout("compare", body, [("compare", "/compare")])


def compare_page(c: RunsComparison) -> str:
    """The runs (#1, #2, ...), one table of every official
    cell with each run's value and each pair's paired Δ [95 % CI] (`lvu compare`'s numbers), and
    the samples whose outcomes differ, each linking to every run's sample page."""
    letters = [f"#{k + 1}" for k in range(len(c.runs))]  # not A/B: lvu compare's notes use those within a pair
    run_rows = "".join(
        f"<tr class=compared><td>{x}</td><td><a href='{e(run_url(r.run_id))}'><code>{e(r.run_id)}</code></a></td>"
        f"<td>{e(model_identity(r.spec))}</td><td>{e(data_name(r.spec))}</td><td class=num>{len(r.results)}</td>"
        f"<td class=num>{sum(1 for s in r.results if s.error)}</td></tr>"
        for x, r in zip(letters, c.runs))
    runs_html = ("<table id=runs><tr><th></th><th>run</th><th>model</th><th>data</th><th>samples</th><th>failed</th></tr>"
                 f"{run_rows}</table>")
    left = "".join(f"<li><code>{e(r.run_id)}</code> ({e(name(r))}): {e(why)}</li>" for r, why in c.left_out)
    left_html = (f"<p class=note id=left-out>left out (tick 'include runs with no answers' to compare them):</p>"
                 f"<ul>{left}</ul>" if left else "")
    pair_names = [f"Δ {letters[p.b]} − {letters[p.a]} [95% CI]" for p in c.pairs]
    head = ("<tr><th>table</th><th>row</th>" + "".join(f"<th>{x} %</th>" for x in letters)
            + "".join(f"<th>{e(n)}</th>" for n in pair_names) + "</tr>")
    pair_cells = [p.cells() for p in c.pairs]
    body_rows = []
    for cell in c.cells:
        values = "".join(f"<td class=num>{'' if (v := c.score(k, cell)) is None else f'{v:.1f}'}</td>"
                         for k in range(len(c.runs)))
        deltas = "".join(
            f"<td class='num delta'>{e(delta_text(row))}{f'<br><small>p {e(row[5])}{e(row[6])}</small>' if row else ''}</td>"
            for row in (cells.get(cell) for cells in pair_cells))
        body_rows.append(f"<tr class=cell><td>{e(cell[0])}</td><td>{e(cell[1])}</td>{values}{deltas}</tr>")
    notes = []
    for p in c.pairs:
        a, b = c.runs[p.a], c.runs[p.b]
        what = f"{letters[p.b]} − {letters[p.a]}"
        if p.comparison is None:
            notes.append(f"{what}: {p.problem}")
            continue
        shared = len({r.sample_id for r in a.results} & {r.sample_id for r in b.results})
        facts = "; ".join(f"{k}: {v}" for k, v in p.comparison.summary)
        notes.append(f"{what}: on the {shared} samples both runs have"
                     + (f"; {facts} (A = {letters[p.a]}, B = {letters[p.b]})" if facts else ""))
    notes.append(f"Δ: the paired bootstrap of `lvu compare A B` ({c.n_boot} resamples, seed {c.seed}) on the samples "
                 "both runs have; p: two-sided, * p < 0.05. Each run's own column counts all its stored samples.")
    notes_html = "".join(f"<p class=note>{e(n)}</p>" for n in notes)
    table_html = f"<table id=cells>{head}{''.join(body_rows)}</table>{notes_html}"

    def outcome_cell(run_id: str, r: SampleResult | None) -> str:
        if r is None:
            return "<td class=absent>—</td>"
        kind = outcome(r)
        pred = choice(r.prediction)
        return f"<td class={kind}><a href='{e(sample_url(run_id, r.sample_id))}'>{kind}</a>{f' ({e(pred)})' if pred else ''}</td>"

    shown = c.differing[:MAX_DIFFERING]
    diff_rows = "".join(
        f"<tr class=differs><td><code>{e(sid)}</code></td>"
        f"<td class=question>{e(truncated(next((r.question for r in results if r and r.question), None)))}</td>"
        + "".join(outcome_cell(run.run_id, r) for run, r in zip(c.runs, results)) + "</tr>"
        for sid, results in shown)
    more = (f"<p class=note>the first {MAX_DIFFERING} shown; /api/compare lists them all</p>"
            if len(c.differing) > MAX_DIFFERING else "")
    diff_head = "<tr><th>sample</th><th>question</th>" + "".join(f"<th>{x}</th>" for x in letters) + "</tr>"
    diff_html = (f"<table id=differing>{diff_head}{diff_rows}</table>{more}" if shown
                 else "<p>Every shared sample has the same outcome in every run.</p>")
    body = (f"<h1>Comparing {len(c.runs)} runs</h1>{runs_html}{left_html}"
            f"<h2>Per breakdown</h2>{table_html}"
            f"<h2>Samples where the outcomes differ ({len(c.differing)})</h2>{diff_html}")
    return layout("compare", body, [("compare", compare_url([r.run_id for r in c.runs]))])
