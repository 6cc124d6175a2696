"""lvu.api.review: the library entries of `lvu review serve / stats / export` and `lvu view`, each
returning (or printing) what the command shows; uvicorn's serving is replaced so nothing blocks."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from analysis_runs import result, store_run
from lvu.api import (ReviewExport, ReviewSession, ReviewStats, export_review, open_review, review_stats, serve_review,
                     view)
from lvu.cli import app
from lvu.errors import LvuError
from review_toy import accept, build, reject
from review_toy import open_review as toy_review


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return build(tmp_path_factory.mktemp("review"))


@pytest.fixture()
def served_apps(monkeypatch):
    """The apps uvicorn would serve (its run replaced: returns at once)."""
    import uvicorn

    apps: list = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: apps.append(self.config.app))
    return apps


def test_open_review_sets_up_people_and_their_links(toy, tmp_path, served_apps):
    session = open_review(toy.data, db=tmp_path / "r.sqlite", raters="ann,bob", examiners=["eve"], per_question=2)
    assert isinstance(session, ReviewSession) and session.each == "2 raters each"
    assert [p.name for p in session.people] == ["ann", "bob", "eve"]
    links = {link.person.name: link for link in session.links("http://127.0.0.1:1/")}
    assert links["eve"].page == "examine" and links["ann"].url.startswith("http://127.0.0.1:1/queue?t=")
    assert links["ann"].n_questions == len(toy.ids)  # two raters, two per question: each rates every one
    with pytest.raises(LvuError, match="--role is for chain protocols"):
        open_review(toy.data, db=tmp_path / "r.sqlite", roles=["writer=ann"])

    heard: list[str] = []
    serve_review(session, port=0, on_listening=heard.append)
    assert len(heard) == 1 and heard[0].startswith("http://127.0.0.1:") and len(served_apps) == 1

    from starlette.testclient import TestClient

    page = TestClient(served_apps[0], base_url="http://127.0.0.1:8766").get(links["ann"].url.split("/", 3)[3])
    assert page.status_code == 200


def test_review_stats_and_export_are_what_the_commands_print(toy, tmp_path):
    db = tmp_path / "r.sqlite"
    review = toy_review(toy.data, db, ["alice", "bob", "carol"], per_question=3)
    for who in ("alice", "bob", "carol"):
        assert review.post(who, 0, accept()).status_code == 200
    for who in ("alice", "bob", "carol"):
        assert review.post(who, 1, reject()).status_code == 200

    stats = review_stats(toy.data, db=db)
    assert isinstance(stats, ReviewStats) and stats.protocol.name == "neptune"
    assert stats.outcomes["accepted"] == 1 and stats.outcomes["rejected"] == 1
    assert "hash chain verified" in stats.log_line and any(f["field"] == "verdict" for f in stats.agreement)
    cli = CliRunner().invoke(app, ["review", "stats", str(toy.data), "--db", str(db)])
    assert cli.exit_code == 0, cli.output
    assert ", ".join(f"{n} {k}" for k, n in stats.outcomes.items()) in cli.stdout and stats.log_line in cli.stdout

    done = export_review(toy.data, tmp_path / "final", db=db)
    assert isinstance(done, ReviewExport) and done.protocol == "neptune" and not done.log.broken
    assert done.summary["accepted"] == 1 and (done.out / "benchmark.jsonl").is_file()
    again = CliRunner().invoke(app, ["review", "export", str(toy.data), "-o", str(tmp_path / "final"), "--db", str(db)])
    assert again.exit_code == 0, again.output
    s = done.summary
    assert f"{s['accepted']} accepted, {s['rejected']} rejected, {s['unresolved']} unresolved (examiner needed), " \
           f"{s['incomplete']} incomplete" in again.stdout and f"options-only leak audit: {done.out / 'leak.json'}" in again.stdout


def test_view_serves_the_viewer_lvu_view_serves(tmp_path, served_apps, capsys):
    results = tmp_path / "results"
    store_run(results, "jsonl", "some-model", [result("a", True)])
    view(results, port=0)
    out = capsys.readouterr()
    assert out.out.startswith(f"lvu viewer for {results} at http://127.0.0.1:") and "results: " in out.err
    cli = CliRunner().invoke(app, ["view", "--results-dir", str(results), "--port", "0"])
    assert cli.exit_code == 0, cli.output
    assert f"lvu viewer for {results} at http://127.0.0.1:" in cli.stdout and len(served_apps) == 2

    from starlette.testclient import TestClient

    assert TestClient(served_apps[0], base_url="http://127.0.0.1:8765").get("/").status_code == 200
    with pytest.raises(LvuError, match="no runs: --results-dir"):
        view(tmp_path / "nothing", port=0)
