"""What both review apps (lvu.web.review_app, lvu.web.review_chain_app) share over HTTP: who a token
is, the checks on a write (origin, token, JSON, size), reading and saving a decision, the video rule,
and how a failing decision store is answered — one place, so the two apps cannot drift apart on
security."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from lvu.web import review_pages as pages
from lvu.web.review_data import ReviewItem, ReviewSource
from lvu.web.review_rules import DecisionError
from lvu.web.review_store import Person, ReviewStore

T = TypeVar("T")

MAX_BODY = 64_000
MAX_VERSIONS = 200
"""Versions one person may save of one decision (drafts autosave; far more is a runaway client)."""
log = logging.getLogger("lvu.review")


class StoreTrouble:
    """The decision store failing (locked, disk full, I/O): one JSON line per request, one log
    line per kind of trouble, and the time of the last save that did land."""

    def __init__(self) -> None:
        self.last_saved: float | None = None
        self.logged: set[str] = set()

    def response(self, error: sqlite3.Error) -> JSONResponse:
        text = str(error)
        if "locked" in text or "busy" in text:
            detail = "the decision store is busy (another process is writing it) — try again in a moment"
        else:
            since = time.strftime("%H:%M", time.localtime(self.last_saved)) if self.last_saved else "this server started"
            full = "full" in text or "I/O" in text
            detail = (f"{'disk full: free space' if full else f'the decision store failed ({text})'}; nothing saved "
                      f"before {since} is lost, this change was not saved — try again once fixed")
        kind = detail.split(";")[0].split(" —")[0]
        if kind not in self.logged:
            self.logged.add(kind)
            log.error("lvu review: %s", detail)
        return JSONResponse({"detail": detail}, status_code=503)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) past `limit` bytes: by Content-Length before reading, else as it streams."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise HTTPException(413, f"decision larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"decision larger than {limit} bytes")
    return bytes(body)


def person_of(store: ReviewStore, token: str | None) -> Person:
    """The token's person; 403 for an unknown or missing token."""
    person = store.person(token)
    if person is None:
        raise HTTPException(403, f"unknown or missing access token — {pages.TOKEN_HINT}")
    return person


async def writer_of(request: Request, store: ReviewStore) -> Person:
    """The person a write comes from: same origin (when the browser says), the token in the
    X-Review-Token header (never the query string), a JSON body."""
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, "cross-origin write refused")
    person = await run_in_threadpool(person_of, store, request.headers.get("x-review-token"))
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "send the decision as application/json")
    return person


async def decision_of(request: Request, check: Callable[[bytes], T]) -> T:
    """The body (at most MAX_BODY bytes) through `check`; 422 saying what to fix."""
    body = await read_body(request, MAX_BODY)
    try:
        return check(body)
    except DecisionError as e:
        raise HTTPException(422, str(e)) from None
    except ValueError as e:  # pydantic: not a decision
        first = e.errors()[0] if hasattr(e, "errors") else {"loc": (), "msg": str(e)}
        where = ".".join(str(x) for x in first["loc"]) or "body"
        raise HTTPException(422, f"{where}: {first['msg']}") from None


async def save_decision(store: ReviewStore, trouble: StoreTrouble, item: ReviewItem, person: Person, round: int,
                        decision: Any) -> dict[str, Any]:
    """Save a new version (off the event loop: a write waiting on a lock never stalls other pages)."""
    saved = await run_in_threadpool(store.save, item, person.name, round, decision, MAX_VERSIONS)
    if saved is None:
        raise HTTPException(429, f"{MAX_VERSIONS} versions of this decision are saved already — submit it")
    trouble.last_saved = saved.created
    return {"version": saved.version, "created": saved.created, "status": decision.status, "rater": person.name}


def video_of(source: ReviewSource, key: str, visible: Iterable[ReviewItem]) -> Response:
    """The video `key`, served only when it belongs to one of the `visible` questions (a token
    opens its own questions' videos only)."""
    if not any(i.video_key == key for i in visible):
        raise HTTPException(404, "no such video in your questions")
    try:
        return source.videos.response(key)
    except LookupError:
        raise HTTPException(404, "no such video in this review") from None


def landing_of(store: ReviewStore, token: str | None) -> Response | str:
    """`/`: a known token goes to its queue, anyone else gets the page saying to use their link."""
    person = store.person(token)
    if person is not None:
        return RedirectResponse(pages.with_token("/queue", person), status_code=303)
    if token:  # a link from another review (or a mistyped one)
        return HTMLResponse(pages.error_page(403, f"this link's access token is unknown here — {pages.TOKEN_HINT}"),
                            status_code=403)
    return pages.landing_page()


def answer_pages_in_html(app: FastAPI) -> None:
    """Errors of the pages a browser opens (`/queue`, `/item/3`, ... without a token, a question
    that is not there) come as a small HTML page saying what to open; the JSON API (`/api/...`),
    which the pages' script reads, keeps its JSON `{"detail": ...}`."""

    @app.exception_handler(StarletteHTTPException)
    async def page_error(request: Request, error: StarletteHTTPException) -> Response:
        if request.url.path.startswith("/api/"):
            return await http_exception_handler(request, error)
        return HTMLResponse(pages.error_page(error.status_code, str(error.detail)), status_code=error.status_code,
                            headers=getattr(error, "headers", None))
