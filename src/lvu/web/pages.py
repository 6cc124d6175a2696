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

from lvu.runs.headline import Headline, headline_of_tables
from lvu.runs.store import RunInfo
from lvu.types import LETTERS, SampleResult
from lvu.web.catalog import SHOWS, Tables, outcome

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


def runs_page(runs: list[RunInfo], headlines: dict[str, Headline | None], results_dir: str) -> str:
    """Every run, as `lvu results list`: samples stored without error / the benchmark's, failed,
    and the headline score (the benchmark's official overall row; lvu.runs.headline)."""
    head = ("<tr><th>run</th><th>benchmark</th><th>model</th><th>settings</th><th>status</th>"
            "<th>samples</th><th>failed</th><th>score %</th><th>updated</th></tr>")
    rows = "".join(
        f"<tr class=run><td><a href='{e(run_url(r.run_id))}'><code>{e(r.run_id)}</code></a></td>"
        f"<td>{e(r.benchmark)}</td><td>{e(r.model)}</td><td>{e(settings_text(r))}</td><td>{e(r.status)}</td>"
        f"<td class=num>{e(r.coverage)}</td><td class=num>{r.n_errors}</td>"
        f"<td class=num>{e(top.text()) if (top := headlines.get(r.run_id)) else ''}</td>"
        f"<td>{when(r.updated)}</td></tr>"
        for r in runs
    )
    body = (f"<h1>Runs</h1><p>{len(runs)} run(s) in <code>{e(results_dir)}</code></p>"
            + (f"<table>{head}{rows}</table>" if runs else "<p>No runs yet — start one with <code>lvu run</code>.</p>"))
    return layout("runs", body)


def settings_text(r: RunInfo) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.spec.settings.items() if v is not None)


# ---- one run ------------------------------------------------------------------------------------------


def breakdown_html(title: str, rows: list[tuple[str, int, float]]) -> str:
    body = "".join(f"<tr><td>{e(g)}</td><td class=num>{n}</td><td class=num>{s:.1f}</td></tr>" for g, n, s in rows)
    head = "<tr><th>group</th><th>n</th><th>score %</th></tr>"
    return f"<div class=breakdown><h3>{e(title)}</h3><table>{head}{body}</table></div>"


def sample_row(run_id: str, r: SampleResult) -> str:
    kind = outcome(r)
    labels = ", ".join(f"{k}={v}" for k, v in r.labels.items())
    detail = r.error or r.response or ""
    short = detail if len(detail) <= 140 else detail[:139] + "…"
    score = "" if r.score is None else f"{r.score:g}"
    link = f"<a href='{e(sample_url(run_id, r.sample_id))}'><code>{e(r.sample_id)}</code></a>"
    return (f"<tr class='sample {kind}'><td>{link}</td>"
            f"<td>{e(labels)}</td><td>{e(choice(r.answer))}</td><td>{e(choice(r.prediction))}</td>"
            f"<td class=num>{score}</td><td class={kind}>{kind}</td><td class=num>{r.latency:.2f}</td>"
            f"<td>{e(short)}</td></tr>")


def run_page(info: RunInfo, tables: Tables, shown: list[SampleResult], *, n_matching: int, counts: dict[str, int],
             labels: list[str], show: str, label: str | None, page: int, per_page: int) -> str:
    rid = info.run_id
    spec = json.dumps(info.spec.model_dump(mode="json"), indent=2)
    env = json.dumps(info.env, indent=2)
    note = f"<p class=note>{e(tables.note)}</p>" if tables.note else ""
    top = headline_of_tables(tables.tables, info.spec.settings.get("subset"))  # as the run list shows it
    score = f"<span id=headline>{e(top.describe())}</span> · " if top else ""
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
    head = ("<tr><th>sample</th><th>labels</th><th>answer</th><th>prediction</th><th>score</th><th>outcome</th>"
            "<th>s</th><th>response / error</th></tr>")
    body = (
        f"<h1>{e(info.benchmark)} × {e(info.model)}</h1>"
        f"<p>run <code id=run-id>{e(rid)}</code> · status {e(info.status)} · {score}"
        f"{e(info.coverage)} samples stored without error · {info.n_errors} failed · updated {when(info.updated)}</p>"
        f"<h2>Results</h2>{note}<div class=tables>{breakdowns}</div>"
        f"<h2>Spec and environment</h2><div class=tables><pre>{e(spec)}</pre><pre>{e(env)}</pre></div>"
        f"<h2>Samples</h2><p>show: {show_links}</p>{form}<p>{pager}</p>"
        f"<table>{head}{''.join(sample_row(rid, r) for r in shown)}</table>"
    )
    return layout(f"run {rid}", body, [(f"{info.benchmark} × {info.model} ({rid})", run_url(rid))])


# ---- one sample ---------------------------------------------------------------------------------------

KNOWN_FIELDS = {"sample_id", "labels", "answer", "prompt", "frame_timestamps", "response", "prediction", "score",
                "correct", "counted", "explanation", "error", "latency", "question", "options"}


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
        ("explanation", result.explanation), ("error", result.error), ("latency", f"{result.latency:.3f} s"),
        ("labels", ", ".join(f"{k}={v}" for k, v in result.labels.items())),
        ("frames", f"{len(result.frame_timestamps)} · subtitle cues {prompt.get('n_subtitles', 0)}"),
    ]
    fact_rows = "".join(f"<tr><th>{e(k)}</th><td class='{kind if k == 'outcome' else ''}' id='fact-{k}'>{e(v)}</td></tr>"
                        for k, v in facts if v not in (None, ""))
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
        f"{question_html(result)}<table class=facts>{fact_rows}</table>"
        f"<h2>What the model saw, in order</h2><div class=timeline>{timeline}</div>"
        f"<h2>Exact prompt</h2>{exact}"
        f"<h2>Raw response</h2><pre id=response>{e(result.response)}</pre>{extra}"
    )
    crumbs = [(f"{info.benchmark} × {info.model} ({rid})", run_url(rid)), (sid, sample_url(rid, sid))]
    return layout(f"sample {sid}", body, crumbs)
