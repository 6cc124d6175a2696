"""The review app under a chain protocol (lvu.web.review_chain): the same token, origin, body and
storage rules as Neptune's app (lvu.web.review_app, docs/review.md "Security"); a person sees the
questions waiting for each of their roles, and writes a round's decision only where the question
has reached that round and only with that round's role (round 1: the questions assigned to them)."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lvu.web import review_chain_pages as chain_pages
from lvu.web import review_pages as pages
from lvu.web.app import new_app
from lvu.web.review_chain import EditDecision, applied, before_round, chain_outcome, check_edit
from lvu.web.review_data import ReviewItem, ReviewSource
from lvu.web.review_edit_js import SCRIPT
from lvu.web.review_http import (StoreTrouble, answer_pages_in_html, decision_of, landing_of, person_of,
                                 save_decision, video_of, writer_of)
from lvu.web.review_protocols import ReviewProtocol
from lvu.web.review_rules import Version
from lvu.web.review_store import Person, ReviewStore

_ORDINAL = re.compile(r"0|[1-9][0-9]{0,8}")


def create_chain_app(source: ReviewSource, store: ReviewStore, protocol: ReviewProtocol, *,
                     allowed_hosts: Sequence[str] | None = None):
    app = new_app("lvu review", allowed_hosts)
    answer_pages_in_html(app)
    digests = {i.id: i.digest for i in source.items}
    trouble = StoreTrouble()
    rounds = range(1, len(protocol.roles) + 1)

    @app.exception_handler(sqlite3.Error)
    async def store_failed(request: Request, error: sqlite3.Error) -> JSONResponse:
        return trouble.response(error)

    def who(token: str | None) -> Person:
        return person_of(store, token)

    def latest_of(item: ReviewItem) -> dict[int, Version]:
        """round -> the latest submitted version on this question."""
        out: dict[int, Version] = {}
        for v in store.versions(sample_id=item.id, digests=digests):
            if v.decision.submitted:
                out[v.round] = v
        return out

    def reached(item: ReviewItem, latest: dict[int, Version]) -> set[int]:
        """The rounds the question has been sent to so far."""
        out = {1}
        for n in rounds:
            v = latest.get(n)
            if v is None or n == len(protocol.roles):
                break
            after = protocol.roles[n].after
            if after not in (None, v.decision.status):
                break
            out.add(n + 1)
        return out

    def allowed(person: Person, item: ReviewItem, round: int) -> bool:
        role = protocol.role(round)
        if role.name not in person.duties:
            return False
        return round != 1 or person.name in store.assignments().get(item.id, [])

    def item_at(person: Person, n: str, round: int) -> ReviewItem:
        item = source.item(int(n)) if _ORDINAL.fullmatch(n) else None
        if item is None:
            raise HTTPException(404, f"no question {n!r} ({len(source.items)} in {source.path.name})")
        if round not in rounds:
            raise HTTPException(404, f"no round {round} in the {protocol.name} protocol (1..{len(protocol.roles)})")
        if not allowed(person, item, round):
            raise HTTPException(403, f"question {n} is not in {person.name}'s queue as {protocol.role(round).name}")
        return item

    def items_of(person: Person, round: int) -> list[tuple[ReviewItem, bool, Version | None]]:
        """(question, waiting in this round?, this person's latest version there) for the role's list."""
        mine: dict[str, Version] = {v.sample_id: v for v in store.versions(rater=person.name, round=round, digests=digests)}
        out = []
        for item in source.items:
            if not allowed(person, item, round):
                continue
            latest = latest_of(item)
            if round in reached(item, latest) or item.id in mine:
                waiting = chain_outcome(item, protocol, latest).waiting == protocol.role(round).name
                out.append((item, waiting, mine.get(item.id)))
        return out

    # ---- pages ---------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def landing(t: str | None = None) -> Any:
        return landing_of(store, t)

    @app.get("/queue", response_class=HTMLResponse)
    def queue_page(t: str | None = None) -> str:
        person = who(t)
        rows = [{"role": r, "round": n, "items": items_of(person, n)} for n, r in enumerate(protocol.roles, start=1)
                if r.name in person.duties]
        return chain_pages.queue_page(person, protocol, rows)

    @app.get("/examine")
    def examine_list(t: str | None = None) -> Any:
        return RedirectResponse(pages.with_token("/queue", who(t)), status_code=303)

    @app.get("/item/{n}", response_class=HTMLResponse)
    def item_page(n: str, t: str | None = None, round: int = 1) -> str:
        person = who(t)
        item = item_at(person, n, round)
        latest = latest_of(item)
        if round not in reached(item, latest):
            raise HTTPException(409, f"question {n} has not reached the {protocol.role(round).name} "
                                     "(an earlier round's decision keeps it there)")
        base = before_round(item, protocol, latest, round)
        mine = store.versions(sample_id=item.id, rater=person.name, round=round, digests=digests)
        saved = mine[-1] if mine else None
        shown = applied(base, saved.decision) if saved else base  # type: ignore[arg-type]
        earlier = [(protocol.role(k), latest[k]) for k in range(1, round) if k in latest]
        listed = [i for i, _, _ in items_of(person, round)]
        at = next((k for k, i in enumerate(listed) if i.ordinal == item.ordinal), None)
        def url(i: ReviewItem) -> str:
            return pages.with_token(f"/item/{i.ordinal}", person) + f"&round={round}"
        neighbours = (None, None) if at is None else (url(listed[at - 1]) if at > 0 else None,
                                                      url(listed[at + 1]) if at + 1 < len(listed) else None)
        return chain_pages.item_page(person, protocol, item, round=round, total=len(source.items), base=base,
                                     shown=shown, saved=saved, earlier=earlier, neighbours=neighbours)

    @app.get("/stats", response_class=HTMLResponse)
    def stats_page(t: str | None = None) -> str:
        person = who(t)
        counts = Counter(chain_outcome(i, protocol, latest_of(i)).status for i in source.items)
        return pages.stats_page(person, [], {k: counts.get(k, 0) for k in ("accepted", "rejected", "pending")}, [])

    @app.get("/assets/review-edit.js")
    def script() -> Response:
        return Response(SCRIPT, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    @app.get("/video/{key}")
    def video(key: str, t: str | None = None) -> Response:
        person = who(t)
        return video_of(source, key, [i for i in source.items if any(allowed(person, i, n) for n in rounds)])

    # ---- JSON ----------------------------------------------------------------------------------------

    @app.get("/api/items/{n}")
    def api_item(n: str, request: Request, round: int = 1) -> dict[str, Any]:
        person = who(request.headers.get("x-review-token"))
        item = item_at(person, n, round)
        latest = latest_of(item)
        outcome = chain_outcome(item, protocol, latest)
        return {"n": item.ordinal, "id": item.id, "round": round, "role": protocol.role(round).name,
                "before": before_round(item, protocol, latest, round).to_json(), "status": outcome.status,
                "waiting": outcome.waiting, "annotation": outcome.annotation.to_json(),
                "versions": [v.to_json() for v in store.versions(sample_id=item.id, rater=person.name, digests=digests)]}

    @app.post("/api/items/{n}/decision")
    async def api_decide(n: str, request: Request, round: int = 1) -> dict[str, Any]:
        person = await writer_of(request, store)
        item = await run_in_threadpool(item_at, person, n, round)
        latest = await run_in_threadpool(latest_of, item)
        if round not in reached(item, latest):
            raise HTTPException(409, f"question {n} has not reached the {protocol.role(round).name}")
        before = before_round(item, protocol, latest, round)
        decision = await decision_of(request, lambda body: check_edit(
            EditDecision.model_validate_json(body), item, protocol, protocol.role(round), before))
        return await save_decision(store, trouble, item, person, round, decision)

    return app
