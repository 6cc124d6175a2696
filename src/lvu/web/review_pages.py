"""The review's HTML (escaping rule: lvu.web.pages): a rater's queue, the question page (video,
evidence times, captions and transcript beside the decision controls), the examiner's list and
page (earlier decisions side by side, disagreements marked) and the agreement table. The controls
work through /assets/review.js (autosave, shortcuts); the data it needs is in a JSON block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from lvu.construct.review_labels import MODALITIES
from lvu.web.pages import e, json_script, layout
from lvu.web.review_data import Cue, ReviewItem
from lvu.web.review_rules import CRITERIA, Decision, Final, Version, field_values
from lvu.web.review_store import EXAMINER, Person

CSS = """
.review{display:grid;grid-template-columns:minmax(320px,1fr) minmax(360px,1fr);gap:1.2rem;align-items:start}
video{width:100%;background:#000;max-height:360px}
.cues{max-height:180px;overflow-y:auto;list-style:none;padding:0;margin:.3rem 0;border:1px solid #ddd;position:relative}
.cues li{padding:.15rem .4rem;font-size:.88em;border-bottom:1px solid #f0f0f0}.cues li.now{background:#fff2a8}
.cues li.evidence{border-left:4px solid #e08a00}
button.seek{font-size:.8em;margin:0 .3rem .3rem 0;cursor:pointer}
fieldset{border:1px solid #ccc;margin:.5rem 0;padding:.3rem .7rem}legend{font-weight:600}
fieldset label{display:block;margin:.15rem 0}textarea{width:95%;font:inherit}input[type=text]{width:95%}
#question-text{font-size:1.1em;background:#eef4ff;border:1px solid #b9cdf0;padding:.4rem .8rem}
.count.ok{color:#187a2f}.count.off{color:#b3261e}#save-status{min-height:1.3em;font-weight:600}
#save-status.error{color:#b3261e}#save-status.accepted{color:#187a2f}#save-status.rejected{color:#8a5a00}
.actions button{font-size:1.05em;padding:.3rem 1rem;margin-right:.5rem}
tr.disagree td{background:#fff0e0}td.draft,td.none{color:#777}td.accepted{color:#187a2f}td.rejected{color:#b3261e}
kbd{border:1px solid #aaa;border-radius:3px;padding:0 .3rem;font-size:.85em;background:#f7f7f7}
"""
SHORTCUTS = (("Space / k", "play or pause"), ("j / l", "back / forward 5 s"), ("1-6", "choose decoy 1-6"),
             ("c", "tick all quality criteria"), ("m", "next modality"), ("e", "edit the answer"),
             ("a", "accept (submit)"), ("x", "reject (asks for a reason)"), ("n / p", "next / previous question"),
             ("Esc", "leave a text field"), ("?", "show these keys"))
SCRIPT = "<script src='/assets/review.js' defer></script>"


def clock(t: float) -> str:
    t = max(0.0, t)
    h, rest = divmod(int(t), 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def with_token(path: str, person: Person) -> str:
    return f"{path}?t={quote(person.token, safe='')}"


def page(title: str, body: str, person: Person, crumbs: Sequence[tuple[str, str]] = (), script: bool = False,
         head: str = "") -> str:
    home = ("queue", with_token("/queue", person))
    extra = [("examine", with_token("/examine", person)), ("agreement", with_token("/stats", person))] \
        if person.examiner else []
    who = f"<p class=note>signed in as <b id=who>{e(person.name)}</b> ({e(person.roles)})</p>"
    return layout(title, who + body, [*extra, *crumbs], home=home, css=CSS, head=(SCRIPT if script else "") + head)


def status_cell(v: Version | None) -> str:
    if v is None:
        return "<td class=none>not started</td>"
    return f"<td class={e(v.decision.status)}>{e(v.decision.status)} v{v.version}</td>"


# ---- queue --------------------------------------------------------------------------------------------


def queue_page(person: Person, items: list[ReviewItem], latest: dict[str, Version]) -> str:
    done = sum(1 for i in items if (v := latest.get(i.id)) and v.decision.submitted)
    def link(i: ReviewItem) -> str:
        return e(with_token(f"/item/{i.ordinal}", person))

    rows = "".join(
        f"<tr class=queued><td class=num>{i.ordinal + 1}</td><td><a href='{link(i)}'><code>{e(i.id)}</code></a></td>"
        f"<td>{e(i.sample.question[:140])}</td>{status_cell(latest.get(i.id))}</tr>" for i in items)
    nxt = next((i for i in items if not ((v := latest.get(i.id)) and v.decision.submitted)), None)
    start = (f"<p><a id=next-open href='{link(nxt)}'>open the next question to rate</a></p>" if nxt
             else "<p id=all-done>All your questions are rated.</p>")
    body = (f"<h1>{e(person.name)}'s questions</h1><p id=progress>{done} of {len(items)} submitted</p>{start}"
            f"<table><tr><th>#</th><th>question</th><th>text</th><th>your decision</th></tr>{rows}</table>")
    return page("queue", body, person)


# ---- the question page -------------------------------------------------------------------------------


def cue_list(element_id: str, cues: list[Cue], evidence: list[tuple[float, float]]) -> str:
    def near(c: Cue) -> bool:  # the cue overlaps an evidence span, or covers an evidence moment
        return any((c.start <= a < c.end) if a == b else (c.start < b and c.end > a) for a, b in evidence)

    items = "".join(
        f"<li data-start='{c.start:.3f}' data-end='{c.end:.3f}'{' class=evidence' if near(c) else ''}>"
        f"<button type=button class=seek data-seek='{c.start:.3f}'>{clock(c.start)}–{clock(c.end)}</button>"
        f"{e(c.text)}</li>" for c in cues)
    return f"<ol class=cues id={element_id}>{items}</ol>"


def media_html(item: ReviewItem, person: Person) -> str:
    spans = item.evidence
    seeks = "".join(
        f"<button type=button class=seek data-seek='{a:.3f}'>▶ {clock(a)}{'–' + clock(b) if b > a else ''}</button>"
        for a, b in spans) or "<span class=note>no evidence times in this question</span>"
    asr, problem = item.asr()
    asr_html = (cue_list("asr", asr, spans) if asr else f"<p class=note>{e(problem or 'no transcript')}</p>")
    captions = (cue_list("captions", item.captions, spans) if item.captions
                else "<p class=note>no dense captions (extra.dense_captions)</p>")
    src = with_token(f"/video/{item.video_key}", person)
    return (f"<section class=media><video id=video controls preload=auto src='{e(src)}'></video>"
            f"<p id=clock class=note></p><div id=seeks><b>Evidence:</b> {seeks}</div>"
            f"<h3>Dense captions</h3>{captions}<h3>Transcript (ASR)</h3>{asr_html}</section>")


def decision_form(item: ReviewItem) -> str:
    quality = "".join(f"<label><input type=checkbox name=quality value='{e(k)}'> {e(text)}</label>"
                      for k, text in CRITERIA.items())
    modality = "".join(f"<label><input type=radio name=modality value='{e(m)}'> {e(m)}</label>" for m in MODALITIES)
    decoys = "".join(f"<label><input type=checkbox name=decoy value='{i}'> <b>{i + 1}.</b> {e(d)}</label>"
                     for i, d in enumerate(item.decoys))
    new = "".join(f"<input type=text name=new-decoy placeholder='your decoy {k + 1}'>"
                  for k in range(max(item.needed_decoys, 1)))
    return (
        "<form id=decision autocomplete=off>"
        f"<fieldset id=quality><legend>1. Is the question valuable? (all four, or reject)</legend>{quality}</fieldset>"
        f"<fieldset id=modality><legend>2. What does answering need?</legend>{modality}</fieldset>"
        "<fieldset id=answer><legend>3. Answer</legend>"
        f"<p id=given-answer>{e(item.answer) or '<i>(none given)</i>'}</p>"
        "<label><input type=radio name=answer-mode value=as-is checked> correct as given</label>"
        "<label><input type=radio name=answer-mode value=edit id=answer-edit-on> corrected:</label>"
        "<textarea id=answer-edit rows=3></textarea></fieldset>"
        f"<fieldset id=decoys><legend>4. Decoys: choose the {item.needed_decoys} hardest wrong answers "
        f"<span id=decoy-count class=count></span></legend>{decoys}"
        f"<p class=note>fewer than {item.needed_decoys} good ones? write your own:</p>{new}</fieldset>"
        "<fieldset><legend>Reject</legend><textarea id=reason rows=2 placeholder='why the question is rejected'>"
        "</textarea></fieldset>"
        "<fieldset><legend>Note (optional)</legend><textarea id=note rows=2></textarea></fieldset>"
        "<p class=actions><button type=button id=accept>Accept <kbd>a</kbd></button>"
        "<button type=button id=reject>Reject <kbd>x</kbd></button></p><p id=save-status></p></form>")


def shortcuts_html() -> str:
    keys = "".join(f"<li><kbd>{e(k)}</kbd> {e(what)}</li>" for k, what in SHORTCUTS)
    return f"<details id=shortcuts><summary>keyboard shortcuts</summary><ul>{keys}</ul></details>"


def item_page(person: Person, item: ReviewItem, *, round: int, total: int, saved: Version | None,
              prefill: Decision | None, neighbours: tuple[str | None, str | None], before: str = "") -> str:
    """The page a rater (round 1) or the examiner (round 2, `before` = the earlier decisions)
    decides on; `prefill` fills the controls (the saved version, else the examiner's proposal)."""
    base = "/examine" if round == EXAMINER else "/item"
    links = " · ".join(f"<a id={name} href='{e(url)}'>{name}</a>" for name, url in zip(("previous", "next"), neighbours)
                       if url)
    shown = prefill or (saved.decision if saved else None)
    state = {"token": person.token, "round": round, "needed": item.needed_decoys, "answer": item.answer,
             "api": f"/api/items/{item.ordinal}/decision?round={round}",
             "start": item.evidence[0][0] if item.evidence else 0.0,
             "saved": shown.model_dump() if shown else None, "version": saved.version if saved else 0,
             "previous": neighbours[0], "next": neighbours[1]}
    status = f"{saved.decision.status} (version {saved.version})" if saved else "not started"
    body = (f"<h1>{'Examine' if round == EXAMINER else 'Question'} {item.ordinal + 1} of {total} "
            f"<code id=item-id>{e(item.id)}</code></h1><p>{links} · your decision: <span id=current-status>"
            f"{e(status)}</span> · <a href='{e(with_token(base, person))}'>back to the list</a></p>"
            f"<div id=question-text>{e(item.sample.question)}</div>{before}"
            f"<div class=review>{media_html(item, person)}<section class=decide>{decision_form(item)}"
            f"{shortcuts_html()}</section></div>{json_script('state', state)}")
    return page(f"{'examine' if round == EXAMINER else 'rate'} {item.id}", body, person, script=True)


# ---- the examiner's view ---------------------------------------------------------------------------------


def _shown(d: Decision, item: ReviewItem, name: str) -> str:
    if name == "answer" and d.answer:
        return f"edited: {d.answer}"
    if name == "reason":
        return d.reason
    if name == "new decoys":
        return " | ".join(d.new_decoys)
    return str(field_values(d, item).get(name) or "")


def earlier_decisions(item: ReviewItem, ratings: dict[str, Version], majority: Final, to_resolve: list[str]) -> str:
    """Each rater's latest submitted decision side by side, rows that differ marked."""
    raters = sorted(ratings)
    names = ["verdict", *[f"quality: {c}" for c in CRITERIA], "modality", "answer",
             *[f"decoy {i + 1}" for i in range(len(item.decoys))], "new decoys", "reason"]
    head = "".join(f"<th>{e(r)} (v{ratings[r].version})</th>" for r in raters)
    rows = ""
    for name in names:
        cells = [_shown(ratings[r].decision, item, name) for r in raters]
        differ = name in to_resolve or (name in ("new decoys", "reason") and len(set(cells)) > 1)
        label = name if not name.startswith("decoy ") else f"{name}: {item.decoys[int(name[6:]) - 1][:60]}"
        rows += (f"<tr class='{'disagree' if differ else 'agree'}'><th>{e(label)}</th>"
                 + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    outcome = f"{majority.status}" + (f" ({majority.why})" if majority.why else "")
    return (f"<h2>Earlier decisions</h2><p>majority: <b id=majority>{e(outcome)}</b> · to resolve: "
            f"<span id=to-resolve>{e(', '.join(to_resolve) or 'nothing')}</span></p>"
            f"<table id=earlier><tr><th>field</th>{head}</tr>{rows}</table>" if raters else
            "<p>No submitted decisions yet.</p>")


def examine_page(person: Person, rows: list[dict[str, Any]]) -> str:
    """`rows`: per question: item, ratings (rater -> Version), majority (Final), to_resolve, examiner (Version|None)."""
    body_rows = ""
    for r in rows:
        item, majority = r["item"], r["majority"]
        link = with_token(f"/examine/{item.ordinal}", person)
        raters = ", ".join(f"{n}: {v.decision.status}" for n, v in sorted(r["ratings"].items())) or "—"
        body_rows += (f"<tr class={'disagree' if r['to_resolve'] else 'agree'}><td class=num>{item.ordinal + 1}</td>"
                      f"<td><a href='{e(link)}'><code>{e(item.id)}</code></a></td><td>{e(raters)}</td>"
                      f"<td>{e(majority.status)}{e(' — ' + majority.why if majority.why else '')}</td>"
                      f"<td>{e(', '.join(r['to_resolve']))}</td>{status_cell(r['examiner'])}</tr>")
    body = ("<h1>Examine</h1><p>Second round: each question's earlier decisions, what they disagree on, "
            "and your decision (it is final).</p><table><tr><th>#</th><th>question</th><th>raters</th>"
            f"<th>majority</th><th>disagree on</th><th>examiner</th></tr>{body_rows}</table>")
    return page("examine", body, person)


def stats_page(person: Person, fields: list[dict[str, Any]], counts: dict[str, int],
               progress: list[tuple[str, int, int]]) -> str:
    def pct(x: float | None) -> str:
        return "" if x is None else f"{x:.1f}"

    def kappa(x: float | None) -> str:
        return "" if x is None else f"{x:.3f}"

    rows = "".join(f"<tr class=field><td>{e(f['field'])}</td><td class=num>{f['items']}</td>"
                   f"<td class=num>{pct(f['agreement_pct'])}</td><td class=num>{pct(f['unanimous_pct'])}</td>"
                   f"<td class=num>{pct(f['chance_pct'])}</td><td class=num>{kappa(f['kappa'])}</td></tr>"
                   for f in fields)
    people = "".join(f"<tr><td>{e(n)}</td><td class=num>{done}</td><td class=num>{total}</td></tr>"
                     for n, done, total in progress)
    outcome = "".join(f"<tr><td>{e(k)}</td><td class=num>{v}</td></tr>" for k, v in counts.items())
    body = ("<h1>Agreement</h1><p>Per field, over questions with 2 or more submitted decisions: agreement = mean "
            "pairwise agreement %, unanimous = questions where all agree %, chance = expected agreement %, "
            "Fleiss' kappa (docs/review.md).</p>"
            "<table id=agreement><tr><th>field</th><th>items</th><th>agreement %</th><th>unanimous %</th>"
            f"<th>chance %</th><th>kappa</th></tr>{rows}</table><h2>Outcomes</h2><table id=outcomes>{outcome}</table>"
            f"<h2>Raters</h2><table><tr><th>rater</th><th>submitted</th><th>assigned</th></tr>{people}</table>")
    return page("agreement", body, person)


TOKEN_HINT = "open the link `lvu review` printed for you (it carries the access token)"
"""What a page opened without its token says (the server never shows whose links exist)."""


def _hint_html() -> str:
    text, _, rest = TOKEN_HINT.partition("`lvu review`")
    return f"{e(text[:1].upper() + text[1:])}<code>lvu review</code>{e(rest)}."


def landing_page() -> str:
    """`/` without a known token: what to open instead."""
    return layout("review", f"<h1>lvu review</h1><p>{_hint_html()}</p>", home=None)


def error_page(status: int, detail: str) -> str:
    """A page route's error as a page (a browser would show the API's JSON raw): what went wrong,
    and for a missing or unknown token, what to open."""
    said, hint = detail.replace(f" — {TOKEN_HINT}", ""), ""
    if said != detail:  # the token's error names what to open: shown as a page's sentence
        hint = f"<p>{_hint_html()}</p>"
    return layout("review", f"<h1>lvu review: {status}</h1><p>{e(said)}</p>{hint}", home=None)
