"""What both review apps (lvu.web.review_app, lvu.web.review_chain_app) share over HTTP: the size
limits on a decision and how a failing decision store is answered."""

from __future__ import annotations

import logging
import sqlite3
import time

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

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
