"""A chain protocol's pages (lvu.web.review_chain): a person's queue per role, and the question page
with only the controls the role may edit — the question text (where the writer selects the
referring query), the options and which is correct, the category, the referred moments (marked at
the player's current time), the protocol's criteria — above what the earlier rounds decided.
Escaping as every lvu page (lvu.web.pages); the controls work through /assets/review-edit.js."""

from __future__ import annotations

from typing import Any

from lvu.web.pages import e, json_script
from lvu.web.review_chain import Annotation
from lvu.web.review_data import ReviewItem
from lvu.web.review_pages import clock, media_html, page, status_cell, with_token
from lvu.web.review_protocols import ReviewProtocol, Role
from lvu.web.review_rules import Version
from lvu.web.review_store import Person

CSS_EXTRA = ("<style>mark#referring-query{background:#ffd54a}#moments li{margin:.15rem 0}"
             "textarea#edit-question{font-size:1.05em}#options label{display:flex;gap:.4rem;align-items:center}"
             "#options input[type=text]{flex:1}select#category{max-width:95%}</style>")
SCRIPT = "<script src='/assets/review-edit.js' defer></script>"


def highlighted(a: Annotation) -> str:
    """The question text, the referring query in a <mark> (each part escaped on its own)."""
    if a.referring_query is None:
        return e(a.question)
    s, t = a.referring_query
    return f"{e(a.question[:s])}<mark id=referring-query>{e(a.question[s:t])}</mark>{e(a.question[t:])}"


def queue_page(person: Person, protocol: ReviewProtocol, rows: list[dict[str, Any]]) -> str:
    """`rows`: per role of this person: role, round, items [(item, waiting here?, my latest Version)]."""
    parts = [f"<h1>{e(person.name)}'s questions</h1><p class=note>{e(protocol.title)}</p>"]
    for row in rows:
        role, items = row["role"], row["items"]
        todo = [i for i, waiting, mine in items if waiting and not (mine and mine.decision.submitted)]
        lines = "".join(
            f"<tr class={'waiting' if waiting else 'done'}><td class=num>{i.ordinal + 1}</td><td>"
            f"<a href='{e(with_token(f'/item/{i.ordinal}', person))}&amp;round={row['round']}'><code>{e(i.id)}</code>"
            f"</a></td><td>{e(i.sample.question[:140])}</td>{status_cell(mine)}</tr>" for i, waiting, mine in items)
        nxt = (f"<p><a id=next-{e(role.name)} href='{e(with_token(f'/item/{todo[0].ordinal}', person))}&amp;"
               f"round={row['round']}'>open the next question</a></p>" if todo else
               f"<p id=done-{e(role.name)}>Nothing waits for you as {e(role.name)}.</p>")
        parts.append(f"<h2>As {e(role.name)}: {e(role.title)}</h2><p>{len(todo)} waiting</p>{nxt}"
                     f"<table id=queue-{e(role.name)}><tr><th>#</th><th>question</th><th>text</th>"
                     f"<th>your decision</th></tr>{lines}</table>")
    return page("queue", "".join(parts), person)


def earlier_html(protocol: ReviewProtocol, earlier: list[tuple[Role, Version]]) -> str:
    if not earlier:
        return ""
    rows = "".join(f"<tr><td>{e(role.name)}</td><td>{e(v.rater)} (v{v.version})</td><td class={e(v.decision.status)}>"
                   f"{e(v.decision.status)}</td><td>{e(v.decision.reason)}</td><td>{e(v.decision.note)}</td></tr>"
                   for role, v in earlier)
    return ("<h2>Earlier rounds</h2><table id=earlier><tr><th>role</th><th>who</th><th>decision</th><th>reason</th>"
            f"<th>note</th></tr>{rows}</table>")


def form_html(protocol: ReviewProtocol, role: Role, item: ReviewItem, shown: Annotation) -> str:
    edits = set(role.edits)
    parts = []
    if "quality" in edits and protocol.criteria:
        boxes = "".join(f"<label><input type=checkbox name=quality value='{e(k)}'> {e(text)}</label>"
                        for k, text in protocol.criteria.items())
        parts.append(f"<fieldset id=quality><legend>Checks (all, or reject)</legend>{boxes}</fieldset>")
    if edits & {"question", "referring_query"}:
        readonly = "" if "question" in edits else " readonly"
        query = ("<p><button type=button id=mark-query>mark referring query</button> "
                 "<button type=button id=clear-query>clear</button> <span class=note>select it in the text, "
                 "then press the button</span></p><p>referring query: <b id=query-shown></b></p>"
                 if "referring_query" in edits else "")
        parts.append(f"<fieldset id=question-edit><legend>Question</legend><textarea id=edit-question rows=4"
                     f"{readonly}>{e(shown.question)}</textarea>{query}</fieldset>")
    if shown.options and edits & {"options", "answer"}:
        readonly = "" if "options" in edits else " readonly"
        n = max(len(shown.options) + (1 if "options" in edits else 0), 2)
        rows = "".join(
            f"<label><input type=radio name=correct value='{k}'{' checked' if k < len(shown.options) and shown.options[k] == shown.answer else ''}> "
            f"<input type=text name=option{readonly} value='{e(shown.options[k] if k < len(shown.options) else '')}'"
            f" placeholder='option {k + 1}'></label>" for k in range(min(n, 8)))
        parts.append(f"<fieldset id=options><legend>Options (tick the correct one)</legend>{rows}</fieldset>")
    elif "answer" in edits:
        parts.append(f"<fieldset id=answer><legend>Answer</legend><textarea id=edit-answer rows=2>{e(shown.answer)}"
                     "</textarea></fieldset>")
    if "category" in edits:
        if protocol.categories:
            opts = "<option value=''>(choose)</option>" + "".join(
                f"<option value='{e(k)}'{' selected' if k == shown.category else ''}>{e(k)} — {e(v)}</option>"
                for k, v in protocol.categories.items())
            control = f"<select id=category>{opts}</select>"
        else:
            control = f"<input type=text id=category value='{e(shown.category or '')}'>"
        parts.append(f"<fieldset id=category-edit><legend>Category</legend>{control}</fieldset>")
    moments = "".join(f"<li><button type=button class=seek data-seek='{a:.3f}'>▶ {clock(a)}–{clock(b)}</button></li>"
                      for a, b in shown.referred_moments)
    if "referred_moments" in edits:
        parts.append("<fieldset id=moments-edit><legend>Referred moments</legend><p>"
                     "<button type=button id=mark-start>mark start at the player's time</button> "
                     "<button type=button id=mark-end>mark end</button> <button type=button id=clear-moments>"
                     "clear</button></p><ol id=moments></ol></fieldset>")
    elif moments:
        parts.append(f"<fieldset><legend>Referred moments</legend><ol>{moments}</ol></fieldset>")
    return ("<form id=decision autocomplete=off>" + "".join(parts) +
            "<fieldset><legend>Reject</legend><textarea id=reason rows=2 placeholder='why the question is rejected'>"
            "</textarea></fieldset><fieldset><legend>Note (optional)</legend><textarea id=note rows=2></textarea>"
            "</fieldset><p class=actions><button type=button id=accept>Accept</button>"
            "<button type=button id=reject>Reject</button></p><p id=save-status></p></form>")


def item_page(person: Person, protocol: ReviewProtocol, item: ReviewItem, *, round: int, total: int,
              base: Annotation, shown: Annotation, saved: Version | None, earlier: list[tuple[Role, Version]],
              neighbours: tuple[str | None, str | None]) -> str:
    """The question page of `round`'s role: `base` = what the earlier rounds left, `shown` = the
    controls' contents (the saved version on top of `base`)."""
    role = protocol.role(round)
    links = " · ".join(f"<a id={name} href='{e(url)}'>{name}</a>" for name, url in zip(("previous", "next"), neighbours)
                       if url)
    state = {"token": person.token, "round": round, "api": f"/api/items/{item.ordinal}/decision?round={round}",
             "edits": role.edits, "start": (shown.referred_moments or item.evidence or [(0.0, 0.0)])[0][0],
             "annotation": shown.to_json(), "base": base.to_json(),
             "saved": saved.decision.model_dump() if saved else None, "version": saved.version if saved else 0,
             "previous": neighbours[0], "next": neighbours[1]}
    status = f"{saved.decision.status} (version {saved.version})" if saved else "not started"
    category = f" · category <b id=shown-category>{e(base.category)}</b>" if base.category else ""
    body = (f"{CSS_EXTRA}<h1>{e(role.name.capitalize())}: question {item.ordinal + 1} of {total} "
            f"<code id=item-id>{e(item.id)}</code></h1><p class=note>{e(role.title)}</p><p>{links} · your decision: "
            f"<span id=current-status>{e(status)}</span> · <a href='{e(with_token('/queue', person))}'>back to the "
            f"list</a></p><div id=question-text>{highlighted(base)}</div><p>{category}</p>"
            f"{earlier_html(protocol, earlier)}<div class=review>{media_html(item, person)}<section class=decide>"
            f"{form_html(protocol, role, item, shown)}</section></div>{json_script('state', state)}")
    return page(f"{role.name} {item.id}", body, person, head=SCRIPT)
