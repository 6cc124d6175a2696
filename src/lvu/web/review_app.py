"""`create_review_app(source, store)`: the rater review app (`lvu review`, docs/review.md).

Every request names its person by token — pages and the video by `?t=TOKEN` (the link `lvu
review` prints), the JSON API by the `X-Review-Token` header. A write (POST) takes the token from
the header only, must be JSON, and must come from this server's own pages (an `Origin` header,
when sent, must match the Host): a page elsewhere can neither forge it nor read an answer. A
rater sees and writes only their own questions, in round 1; round 2, the examiner's list and the
agreement table are for examiners. Decisions are saved as new versions (lvu.web.review_store).
Questions are named by their place in the file (`/item/3`); videos by a key of a registered path
(lvu.web.media.VideoFiles) — nothing in a URL is ever used as a file path.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from lvu.web import review_pages as pages
from lvu.web.app import new_app
from lvu.web.review_data import ReviewItem, ReviewSource
from lvu.web.review_export import agreement_of, outcomes
from lvu.web.review_http import (StoreTrouble, answer_pages_in_html, decision_of, landing_of, person_of,
                                 save_decision, video_of, writer_of)
from lvu.web.review_js import SCRIPT
from lvu.web.review_rules import (
    CRITERIA, Decision, Final, Version, check, disagreements, final_decision,
)
from lvu.web.review_store import EXAMINER, RATERS, Person, ReviewStore

_ORDINAL = re.compile(r"0|[1-9][0-9]{0,8}")
def proposal(final: Final, item: ReviewItem) -> Decision | None:
    """The examiner's starting point: the majority's decision where there is one."""
    if final.status == "rejected":
        return Decision(status="draft", reason="; ".join(final.reasons))
    if final.status != "accepted":
        return None
    answer = None if final.answer == item.answer else final.answer
    chosen = [item.decoys.index(d) for d in final.decoys if d in item.decoys]
    new = [d for d in final.decoys if d not in item.decoys]
    return Decision(status="draft", quality={c: True for c in CRITERIA}, modality=final.modality,  # type: ignore[arg-type]
                    answer=answer, decoys=chosen, new_decoys=new)


def create_review_app(source: ReviewSource, store: ReviewStore, *, allowed_hosts: Sequence[str] | None = None):
    """The app (module docstring); `allowed_hosts` as for the viewer (lvu.web.app.new_app). Under a
    chain protocol (the one the review file stores) the app is lvu.web.review_chain_app's."""
    protocol = store.protocol()
    if protocol.rule == "chain":
        from lvu.web.review_chain_app import create_chain_app

        return create_chain_app(source, store, protocol, allowed_hosts=allowed_hosts)
    app = new_app("lvu review", allowed_hosts)
    answer_pages_in_html(app)
    digests = {i.id: i.digest for i in source.items}
    trouble = StoreTrouble()

    @app.exception_handler(sqlite3.Error)
    async def store_failed(request: Request, error: sqlite3.Error) -> JSONResponse:
        return trouble.response(error)

    def who(token: str | None) -> Person:
        return person_of(store, token)

    def examiner(token: str | None) -> Person:
        person = who(token)
        if not person.examiner:
            raise HTTPException(403, f"{person.name} is not an examiner — start lvu review with --examiners {person.name}")
        return person

    def item_at(person: Person, n: str, round: int) -> ReviewItem:
        item = source.item(int(n)) if _ORDINAL.fullmatch(n) else None
        if item is None:
            raise HTTPException(404, f"no question {n!r} ({len(source.items)} in {source.path.name})")
        if round == EXAMINER and not person.examiner:
            raise HTTPException(403, f"{person.name} is not an examiner")
        if round == RATERS and person.name not in store.assignments().get(item.id, []):
            raise HTTPException(403, f"question {n} is not in {person.name}'s queue")
        return item

    def queue_of(person: Person) -> list[ReviewItem]:
        assigned = store.assignments()
        return [i for i in source.items if person.name in assigned.get(i.id, [])]

    def mine(person: Person, round: int) -> tuple[dict[str, Version], dict[str, Version]]:
        """This person's latest and latest submitted version per question, in `round`."""
        latest, submitted = {}, {}
        for v in store.versions(rater=person.name, round=round, digests=digests):
            latest[v.sample_id] = v
            if v.decision.submitted:
                submitted[v.sample_id] = v
        return latest, submitted

    def examined(item: ReviewItem, rated: list[Version] | None = None, exam: list[Version] | None = None,
                 ) -> tuple[dict[str, Version], Final, list[str], Version | None]:
        """The raters' latest submitted versions, the majority, what they disagree on and the
        examiner's latest version (`rated` / `exam`: this question's versions, when read already)."""
        if rated is None:
            rated = store.versions(sample_id=item.id, round=RATERS, digests=digests)
        if exam is None:
            exam = store.versions(sample_id=item.id, round=EXAMINER, digests=digests)
        ratings = {v.rater: v for v in rated if v.decision.submitted}  # later versions replace earlier ones
        final = final_decision(item, ratings.values(), None, store.per_question())
        return ratings, final, disagreements(item, [v.decision for v in ratings.values()]), (exam[-1] if exam else None)

    def neighbours(person: Person, item: ReviewItem, base: str, items: list[ReviewItem]) -> tuple[str | None, str | None]:
        at = next(k for k, i in enumerate(items) if i.ordinal == item.ordinal)
        url = lambda i: pages.with_token(f"{base}/{i.ordinal}", person)  # noqa: E731
        return (url(items[at - 1]) if at > 0 else None, url(items[at + 1]) if at + 1 < len(items) else None)

    # ---- pages ---------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse)
    def landing(t: str | None = None) -> Any:
        return landing_of(store, t)

    @app.get("/queue", response_class=HTMLResponse)
    def queue_page(t: str | None = None) -> str:
        person = who(t)
        latest, submitted = mine(person, RATERS)
        return pages.queue_page(person, queue_of(person), {**latest, **submitted})

    @app.get("/item/{n}", response_class=HTMLResponse)
    def item_page(n: str, t: str | None = None) -> str:
        person = who(t)
        item = item_at(person, n, RATERS)
        latest, _ = mine(person, RATERS)
        return pages.item_page(person, item, round=RATERS, total=len(source.items), saved=latest.get(item.id),
                               prefill=None, neighbours=neighbours(person, item, "/item", queue_of(person)))

    @app.get("/examine", response_class=HTMLResponse)
    def examine_list(t: str | None = None) -> str:
        person = examiner(t)
        rounds: dict[int, dict[str, list[Version]]] = {RATERS: {}, EXAMINER: {}}
        for v in store.versions(digests=digests):  # one read for the whole list
            rounds[v.round].setdefault(v.sample_id, []).append(v)
        rows = []
        for item in source.items:
            ratings, final, to_resolve, exam = examined(item, rounds[RATERS].get(item.id, []),
                                                        rounds[EXAMINER].get(item.id, []))
            rows.append({"item": item, "ratings": ratings, "majority": final, "to_resolve": to_resolve, "examiner": exam})
        return pages.examine_page(person, rows)

    @app.get("/examine/{n}", response_class=HTMLResponse)
    def examine_item(n: str, t: str | None = None) -> str:
        person = examiner(t)
        item = item_at(person, n, EXAMINER)
        ratings, final, to_resolve, exam = examined(item)
        before = pages.earlier_decisions(item, ratings, final, to_resolve)
        return pages.item_page(person, item, round=EXAMINER, total=len(source.items), saved=exam,
                               prefill=None if exam else proposal(final, item), before=before,
                               neighbours=neighbours(person, item, "/examine", source.items))

    @app.get("/stats", response_class=HTMLResponse)
    def stats_page(t: str | None = None) -> str:
        person = examiner(t)
        return pages.stats_page(person, agreement_rows(), outcome_counts(), progress())

    @app.get("/assets/review.js")
    def script() -> Response:
        return Response(SCRIPT, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    @app.get("/video/{key}")
    def video(key: str, t: str | None = None) -> Response:
        person = who(t)
        return video_of(source, key, source.items if person.examiner else queue_of(person))

    # ---- JSON ----------------------------------------------------------------------------------------

    def agreement_rows() -> list[dict[str, Any]]:
        return agreement_of(source, store)

    def outcome_counts() -> dict[str, int]:
        counts = Counter(final.status for _, final in outcomes(source, store))
        return {k: counts.get(k, 0) for k in ("accepted", "rejected", "unresolved", "incomplete")}

    def progress() -> list[tuple[str, int, int]]:
        assigned = store.assignments()
        done = Counter(sid_r[1] for sid_r in {(v.sample_id, v.rater) for v in
                                               store.versions(round=RATERS, digests=digests) if v.decision.submitted})
        people = [p for p in store.people() if p.rater]
        return [(p.name, done.get(p.name, 0), sum(p.name in r for r in assigned.values())) for p in people]

    @app.get("/api/queue")
    def api_queue(request: Request) -> list[dict[str, Any]]:
        person = who(request.headers.get("x-review-token"))
        latest, submitted = mine(person, RATERS)
        return [{"n": i.ordinal, "id": i.id, "question": i.sample.question,
                 "status": (submitted.get(i.id) or latest[i.id]).decision.status
                 if i.id in latest else None} for i in queue_of(person)]

    @app.get("/api/items/{n}")
    def api_item(n: str, request: Request) -> dict[str, Any]:
        person = who(request.headers.get("x-review-token"))
        item = item_at(person, n, EXAMINER if person.examiner else RATERS)
        out = {"n": item.ordinal, "id": item.id, "question": item.sample.question, "answer": item.answer,
               "decoys": item.decoys, "needed_decoys": item.needed_decoys, "evidence": item.evidence,
               "captions": [c.to_json() for c in item.captions], "video": f"/video/{item.video_key}",
               "versions": [v.to_json() for v in store.versions(sample_id=item.id, rater=person.name, digests=digests)]}
        if person.examiner:
            ratings, final, to_resolve, exam = examined(item)
            out |= {"ratings": {r: v.to_json() for r, v in ratings.items()}, "majority": final.__dict__,
                    "to_resolve": to_resolve, "examiner": exam.to_json() if exam else None}
        return out

    @app.post("/api/items/{n}/decision")
    async def api_decide(n: str, request: Request, round: int = RATERS) -> dict[str, Any]:
        person = await writer_of(request, store)
        if round not in (RATERS, EXAMINER):
            raise HTTPException(404, f"no round {round} (1: raters, 2: examiner)")
        item = await run_in_threadpool(item_at, person, n, round)
        decision = await decision_of(request, lambda body: check(Decision.model_validate_json(body), item))
        return await save_decision(store, trouble, item, person, round, decision)

    @app.get("/api/agreement")
    def api_agreement(request: Request) -> dict[str, Any]:
        examiner(request.headers.get("x-review-token"))
        return {"fields": agreement_rows(), "outcomes": outcome_counts(),
                "raters": [{"rater": n, "submitted": d, "assigned": a} for n, d, a in progress()]}

    return app
