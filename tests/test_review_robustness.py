"""`lvu review` under stress (#27): a write waiting on a locked store never stalls other raters and
ends in a one-line JSON 503; a full disk keeps reads served and says so once; a token opens only
its own questions' videos; oversized bodies are refused before they are read; decisions are
strictly typed and a runaway client cannot save versions without end."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from lvu.web import review_http, review_store  # noqa: E402
from lvu.web.review_app import create_review_app  # noqa: E402
from lvu.web.review_data import load_source  # noqa: E402
from lvu.web.review_store import ReviewStore  # noqa: E402
from lvu.media.testing import make_video  # noqa: E402
from review_toy import accept, build, open_review, served  # noqa: E402

OTHER = {"id": "other/1", "video": "videos/other.mp4", "question": "What is shown?",
         "options": ["a", "b", "c", "d"], "answer": 0}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    toy = build(tmp_path_factory.mktemp("review"), extra_rows=[OTHER])
    make_video(toy.data / "videos" / "other", seconds=2.0, fps=10, gop=10, size=(64, 48))
    return toy


@pytest.fixture()
def pair(toy, tmp_path):
    """alice and bob, one rater per question (by place: alice 0, 2, 4; bob 1, 3); carol examines."""
    return open_review(toy.data, tmp_path / "r.sqlite", ["alice", "bob"], ["carol"], per_question=1)


@pytest.fixture()
def live(pair):
    with served(pair) as port:
        yield port, pair


def test_a_token_opens_only_its_own_questions_videos(pair):
    other = next(i for i in pair.source.items if i.id == "other/1")
    owner = pair.store.assignments()[other.id][0]
    stranger = "alice" if owner == "bob" else "bob"
    assert pair.get(owner, f"/video/{other.video_key}").status_code == 200
    assert pair.get(stranger, f"/video/{other.video_key}").status_code == 404
    assert pair.get("carol", f"/video/{other.video_key}").status_code == 200  # the examiner sees every question


def test_strict_decision_types(pair):
    loose = [accept(quality={"relevant": "yes", "answerable": True, "unambiguous": True, "long_context": True}),
             accept(decoys=[True, 1, 2, 3]), accept(decoys=["0", 1, 2, 3]), accept(new_decoys=["x"] * 17)]
    for body in loose:
        assert pair.post("alice", 0, body).status_code == 422, body
    assert pair.store.versions() == []


def test_a_runaway_client_cannot_save_versions_without_end(pair, monkeypatch):
    monkeypatch.setattr(review_http, "MAX_VERSIONS", 3)
    for k in range(3):
        assert pair.post("alice", 0, {"status": "draft", "note": f"n{k}"}).status_code == 200
    refused = pair.post("alice", 0, {"status": "draft", "note": "n3"})
    assert refused.status_code == 429 and "submit it" in refused.json()["detail"]
    assert len(pair.store.versions()) == 3


def test_an_oversized_body_is_refused_before_it_is_read(live):
    port, review = live
    head = (f"POST /api/items/0/decision HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"X-Review-Token: {review.tokens['alice']}\r\n")
    for framing in ("Content-Length: 400000000\r\n\r\n", "Transfer-Encoding: chunked\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall((head + framing).encode())
            try:  # a body that never ends: only a server that stops reading at the cap answers
                for _ in range(32):
                    s.sendall(b"4000\r\n" + b" " * 0x4000 + b"\r\n" if "chunked" in framing else b" " * 0x4000)
            except OSError:
                pass  # the server answered and closed
            reply = s.recv(4096)
        assert reply.startswith(b"HTTP/1.1 413"), (framing, reply[:80])


class WriteSignals:
    """A store connection that says when a write transaction begins, then holds it until `release`:
    the test knows the write is under way inside the store (no sleeping and hoping it got there),
    and the write meets the real lock only when the test lets it go on."""

    def __init__(self, conn: sqlite3.Connection, waiting: threading.Event, release: threading.Event) -> None:
        self.conn, self.waiting, self.release = conn, waiting, release

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith("BEGIN IMMEDIATE"):
            self.waiting.set()
            self.release.wait(60)  # a bound for a broken app, not a timing
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_a_locked_store_stalls_no_one_and_answers_a_json_503(live, monkeypatch):
    port, review = live
    review.store.busy_timeout = 0.2  # the lock below is held throughout: the write fails once it meets it
    holder = sqlite3.connect(review.store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    waiting, release = threading.Event(), threading.Event()
    opened = review.store.db

    @contextmanager
    def db() -> Iterator[WriteSignals]:
        with opened() as conn:
            yield WriteSignals(conn, waiting, release)

    monkeypatch.setattr(review.store, "db", db)
    finished: list[str] = []

    def post() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/api/items/0/decision", body=json.dumps(accept()),
                     headers={"Content-Type": "application/json", "X-Review-Token": review.tokens["alice"]})
        response = conn.getresponse()
        finished.append(f"post {response.status} {response.read().decode()}")

    writer = threading.Thread(target=post)
    writer.start()
    try:
        assert waiting.wait(30), "the decision never began its write"
        # the write is held inside the store: bob's queue still loads meanwhile (a stalled app times out here)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        conn.request("GET", "/api/queue", headers={"X-Review-Token": review.tokens["bob"]})
        finished.append(f"queue {conn.getresponse().status}")
    finally:
        release.set()  # now the write meets the held lock, waits busy_timeout and fails
        writer.join(30)
        holder.execute("ROLLBACK")
        holder.close()
    assert finished[0] == "queue 200", finished
    status, _, body = finished[1].partition(" ")[2].partition(" ")
    assert status == "503" and "busy" in json.loads(body)["detail"] and "\n" not in body


class FullDisk:
    """A connection on a full disk: setting the journal mode fails, so does every write."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, *args):  # type: ignore[no-untyped-def]
        if sql.startswith("PRAGMA journal_mode"):
            raise sqlite3.OperationalError("disk I/O error")
        if sql.startswith(("INSERT", "BEGIN")):
            raise sqlite3.OperationalError("database or disk is full")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.conn, name)


def test_a_full_disk_keeps_reads_served_and_says_so_once(toy, tmp_path, monkeypatch, caplog):
    store = ReviewStore(tmp_path / "r.sqlite")
    people = {p.name: p.token for p in store.setup(load_source(toy.data), ["alice"], [], 1)}
    client = TestClient(create_review_app(load_source(toy.data), store), base_url="http://127.0.0.1:8766")
    headers = {"X-Review-Token": people["alice"]}
    assert client.post("/api/items/0/decision", json={"status": "draft"}, headers=headers).status_code == 200
    connect = sqlite3.connect
    monkeypatch.setattr(review_store.sqlite3, "connect", lambda *a, **k: FullDisk(connect(*a, **k)))
    with caplog.at_level(logging.ERROR, logger="lvu.review"):
        assert client.get(f"/queue?t={people['alice']}").status_code == 200
        assert client.get("/api/items/0", headers=headers).status_code == 200
        for _ in range(2):
            failed = client.post("/api/items/0/decision", json={"status": "draft", "note": "x"}, headers=headers)
            assert failed.status_code == 503 and failed.json()["detail"].startswith("disk full: free space")
            assert "nothing saved before" in failed.json()["detail"]
    assert len([r for r in caplog.records if "disk full" in r.getMessage()]) == 1
    assert "Traceback" not in caplog.text
