"""`lvu review`'s access rules: a rater's token writes only that rater's decisions on that rater's
questions, writes cannot be forged from another site, no URL reaches a file that is not a
registered video, and every text — the benchmark's and the raters' — is escaped on every page."""

from __future__ import annotations

import http.client
import json
import re
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from lvu.web.media import VideoFiles  # noqa: E402
from lvu.web.review_app import create_review_app  # noqa: E402
from review_toy import accept, build, open_review, reject, served  # noqa: E402

SCRIPT = "<script>alert('x')</script>"
IMG = "<img src=x onerror=alert(1)>"
HOSTILE_ROW = {
    "id": f"evil{IMG}", "video": "videos/clip.mp4", "subtitles": "asr/evil.srt", "question": f"Q {SCRIPT}",
    "options": [f"A {IMG}", "b", "c", "d", "e"], "answer": 0, "labels": {"question_type": IMG},
    "extra": {"reference": f"A {IMG}", "decoys_6": [f"d{k} {SCRIPT}" for k in range(6)],
              "dense_captions": [{"start": 0, "end": 2, "text": f"cap {SCRIPT}"}], "evidence": [[1, 2]]},
}
SECRET = "TOP-SECRET contents"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    secret = root / "secret.txt"
    secret.write_text(SECRET)
    # a sample that names a non-video as its video (a symlink inside the build folder)
    sneaky = {**HOSTILE_ROW, "id": "sneaky", "video": "videos/sneaky.mp4", "extra": {}}
    sneaky_link = {**HOSTILE_ROW, "id": "sneaky-txt", "video": str(secret), "extra": {}}
    toy = build(root, extra_rows=[HOSTILE_ROW, sneaky, sneaky_link])
    (toy.data / "videos" / "sneaky.mp4").symlink_to(secret)
    # cue text is cleaned of markup and its entities decoded: this one decodes into a script tag
    (toy.data / "asr" / "evil.srt").write_text(
        "1\n00:00:01,000 --> 00:00:02,000\n&lt;script&gt;alert('asr')&lt;/script&gt;\n\n")
    toy.secret = secret
    return toy


@pytest.fixture()
def pair(toy, tmp_path):
    """alice and bob, one rater per question (alice: 0, 2, 4, 6; bob: 1, 3, 5); carol examines."""
    return open_review(toy.data, tmp_path / "r.sqlite", ["alice", "bob"], ["carol"], per_question=1)


def headers(review, who, **more):
    return {"X-Review-Token": review.tokens[who], **more}


def test_another_raters_token_cannot_read_or_write_my_questions(pair):
    assert pair.post("bob", 0, accept()).status_code == 403
    assert pair.get("bob", "/item/0").status_code == 403
    assert pair.client.get("/api/items/0", headers=headers(pair, "bob")).status_code == 403
    assert pair.post("alice", 0, accept()).status_code == 200
    assert [(v.rater, v.sample_id) for v in pair.store.versions()] == [("alice", "clip/1")]
    # the rater is the token's: a body naming someone else is not a decision
    assert pair.post("bob", 1, accept(rater="alice")).status_code == 422
    for url in ("/examine", "/examine/0", "/stats"):  # the second round is the examiner's
        assert pair.get("alice", url).status_code == 403
    assert pair.post("alice", 0, accept(), round=2).status_code == 403
    assert pair.client.get("/api/agreement", headers=headers(pair, "alice")).status_code == 403


def test_no_or_a_wrong_token_gets_nothing(pair):
    for url in ("/queue", "/item/0", "/examine", "/stats", f"/video/{pair.source.items[0].video_key}"):
        assert pair.client.get(url).status_code == 403, url
        assert pair.client.get(url + "?t=" + "x" * 24).status_code == 403, url
    assert pair.client.get("/api/queue").status_code == 403
    assert pair.client.post("/api/items/0/decision", json=accept()).status_code == 403
    assert "Open the link" in pair.client.get("/").text  # the landing page names nobody
    assert pair.store.versions() == []


def test_writes_cannot_be_forged_from_another_site(pair):
    token = pair.tokens["alice"]
    body = json.dumps(accept())
    # a form on another site can send neither the header nor JSON: token in the query, form or text bodies
    assert pair.client.post(f"/api/items/0/decision?t={token}", content=body,
                            headers={"Content-Type": "application/json"}).status_code == 403
    for kind in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"):
        assert pair.client.post("/api/items/0/decision", content=body,
                                headers=headers(pair, "alice", **{"Content-Type": kind})).status_code == 415, kind
    evil = headers(pair, "alice", **{"Content-Type": "application/json", "Origin": "http://evil.example"})
    assert pair.client.post("/api/items/0/decision", content=body, headers=evil).status_code == 403
    ours = headers(pair, "alice", **{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8766"})
    assert pair.client.post("/api/items/0/decision", content=body, headers=ours).status_code == 200
    assert len(pair.store.versions()) == 1
    app = create_review_app(pair.source, pair.store, allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://attacker.example").get(f"/queue?t={token}").status_code == 400
    page = pair.get("alice", "/item/0")
    assert page.headers["referrer-policy"] == "no-referrer"  # the URL carries the token
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


@pytest.fixture()
def live(pair):
    """The review app on a free loopback port (raw paths reach it byte for byte)."""
    with served(pair, allowed_hosts=["127.0.0.1"]) as port:
        yield port, pair


def raw_get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_no_url_reaches_a_file_that_is_not_a_registered_video(live, toy):
    port, review = live
    t = "t=" + review.tokens["alice"]
    key = review.source.items[0].video_key
    by_id = review.source.by_id()
    attempts = [
        "/video/../../../../etc/passwd", "/video/..%2f..%2f..%2fetc%2fpasswd", "/video/%2e%2e/%2e%2e/secret.txt",
        f"/video/{VideoFiles.key(str(toy.secret))}",  # the key a registered file would have
        f"/video/{by_id['sneaky'].video_key}",  # registered, but a symlink to a text file
        f"/video/{by_id['sneaky-txt'].video_key}",  # registered, named .txt
        f"/video/{key.upper()}", f"/video/{key}%00", f"/video/{key}/../../secret.txt", f"/video/{key}0",
        f"/video/{quote(str(toy.secret), safe='')}", "/video/", "/item/..%2f..%2fetc%2fpasswd", "/item/-1",
        "/item/01", "/item/4.0", "/item/99999999999", "/item/%2e%2e", "/examine/..%2f..", "/assets/..%2fsecret.txt",
        "/assets/review.js/../../secret.txt", f"/{toy.secret.name}", "/videos/clip.mp4", "/build/videos/clip.mp4",
    ]
    for path in attempts:
        status, body = raw_get(port, f"{path}{'&' if '?' in path else '?'}{t}")
        assert status in (403, 404), f"{path} -> {status}"
        assert SECRET.encode() not in body and not body.startswith(b"\x00\x00\x00"), path
    status, body = raw_get(port, f"/video/{key}?{t}&path={quote(str(toy.secret))}")  # a query is not a path
    assert status == 200 and SECRET.encode() not in body and body[4:8] == b"ftyp"


def test_every_text_is_escaped_on_every_page(pair):
    ordinal = next(i.ordinal for i in pair.source.items if i.id.startswith("evil"))
    owner = "alice" if ordinal % 2 == 0 else "bob"
    hostile = accept(decoys=[0, 1], new_decoys=[f"n1 {SCRIPT}", f"n2 {IMG}"], answer=f"fixed {IMG}",
                     note=f"note {SCRIPT}")
    assert pair.post(owner, ordinal, hostile).status_code == 200
    assert pair.post(owner, ordinal - 2, reject(reason=f"why {SCRIPT}")).status_code == 200
    pages = [pair.get(owner, "/queue"), pair.get(owner, f"/item/{ordinal}"), pair.get("carol", "/examine"),
             pair.get("carol", f"/examine/{ordinal}"), pair.get("carol", f"/examine/{ordinal - 2}"),
             pair.get("carol", "/stats")]
    for page in pages:
        assert page.status_code == 200
        text = page.text
        scripts = re.findall(r"<script[^>]*>", text)
        assert set(scripts) <= {"<script src='/assets/review.js' defer>", "<script type='application/json' id='state'>"}
        assert "<img" not in text and "alert('x')</script>" not in text and "alert('asr')</script>" not in text
    item = pages[1].text
    assert "Q &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in item and "&lt;script&gt;alert(&#x27;asr&#x27;)" in item
    state = item.split("id='state'>", 1)[1].split("</script>", 1)[0]
    assert "\\u003cimg" in state and "<" not in state and json.loads(state)["saved"]["answer"] == f"fixed {IMG}"
    assert "fixed &lt;img src=x" in pages[3].text and "why &lt;script&gt;" in pages[4].text
    assert "evil&lt;img" in pages[2].text


@pytest.mark.slow
def test_a_network_bind_needs_host_and_warns(toy, tmp_path):
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "lvu.cli", "review", str(toy.data), "--host", "0.0.0.0", "--port", "0",
                             "--db", str(tmp_path / "r.sqlite"), "--raters", "alice", "--per-question", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        first = proc.stdout.readline()
        warning = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    assert "at http://0.0.0.0:" in first
    assert warning.startswith("warning: bound to 0.0.0.0: anyone who can reach this machine and has a rater link")
