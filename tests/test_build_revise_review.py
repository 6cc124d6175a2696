"""End to end: `lvu build filter --rule text-only --revise` -> the revision queue -> a scripted
reviser deciding through the review app's JSON API under `--protocol videomme-revise` (as
tests/review_example.py's team does) -> the same filter command again -> kept / dropped / back for
another round, read through lvu.web.review_export.reviewed_samples (no stand-in)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from lvu.benchmarks.jsonl import read_samples, write_samples  # noqa: E402
from lvu.cli import app  # noqa: E402
from lvu.models.testing_server import FakeOpenAIServer  # noqa: E402
from lvu.types import Sample, VideoRef  # noqa: E402
from lvu.web.review_app import create_review_app  # noqa: E402
from lvu.web.review_data import default_db, load_source  # noqa: E402
from lvu.web.review_protocols import load_protocol  # noqa: E402
from lvu.web.review_store import ReviewStore  # noqa: E402
from test_build_revise import OPTIONS, answer_index, blind_model, question  # noqa: E402

pytestmark = pytest.mark.slow  # a real build, review and refilter: docs/testing.md


def revise_round(queue: Path, decisions: dict[str, dict]) -> None:
    """Open the queue as `lvu review OUT/revision --protocol videomme-revise` does and post the
    reviser's decisions (question id -> decision body) through the app's API."""
    source = load_source(queue.parent)
    store = ReviewStore(default_db(queue.parent))
    protocol = store.protocol(load_protocol("videomme-revise"), record=True)
    tokens = {p.name: p.token for p in store.setup_chain(source, protocol, {})}
    client = TestClient(create_review_app(source, store), base_url="http://127.0.0.1:8766")
    for item in source.items:
        if item.id in decisions:
            reply = client.post(f"/api/items/{item.ordinal}/decision?round=1", json=decisions[item.id],
                                headers={"X-Review-Token": tokens["reviser1"]})
            assert reply.status_code == 200, reply.text


def revised(i: int, text: str) -> dict:
    return {"status": "accepted", "question": question(i, text), "options": OPTIONS, "answer": OPTIONS[answer_index(i)]}


def ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_filter_review_refilter_through_the_review_app(tmp_path, monkeypatch):
    for name, value in {"LVU_CACHE_DIR": tmp_path / "cache", "LVU_RESULTS_DIR": tmp_path / "results",
                        "LVU_OFFLINE": "1", "LVU_PROGRESS_INTERVAL": "0", "OPENAI_API_KEY": "x"}.items():
        monkeypatch.setenv(name, str(value))
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    texts = ["Which famous city is the capital of France?", "Which famous city hosts the Colosseum?",
             "Which famous city has the Munch museum?", "Which city is on the sign at 12:30?"]
    data = write_samples(tmp_path / "data.jsonl", [
        Sample(id=f"q{i}", benchmark="t", video=VideoRef(path=str(video), duration=60.0), question=question(i, t),
               options=OPTIONS, answer=answer_index(i)) for i, t in enumerate(texts)])
    out = tmp_path / "o"
    queue = out / "revision" / "questions.jsonl"
    with FakeOpenAIServer(answer=blind_model) as server:
        def run() -> str:
            done = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "openai", "-a",
                                            "model=gemini", "-a", f"base_url={server.base_url}", "-a", "cache=false",
                                            "--revise", "--max-rounds", "2", "-o", str(out)])
            assert done.exit_code == 0, done.output
            return done.output

        first = run()
        assert ids(queue) == ["q0", "q1", "q2"] and ids(out / "kept.jsonl") == ["q3"]
        assert "flagged, sent for revision: 3 of 4" in first and "removed: 3 of 4" not in first  # not removed
        assert run().count("waiting for revision") == 1 and ids(queue) == ["q0", "q1", "q2"]  # nobody decided yet

        revise_round(queue, {"q0": revised(0, "Which city is shown at 03:10?"),
                             "q1": {"status": "rejected", "reason": "a text-only model knows it"},
                             "q2": revised(2, "Which famous city is in the final shot?")})
        run()
        assert ids(out / "kept.jsonl") == ["q0", "q3"] and ids(out / "removed.jsonl") == ["q1"]
        again = read_samples(queue)[0]
        assert [(s.id, s.extra["revision"]["round"]) for s in again] == [("q2", 2)]
        assert again[0].question == question(2, "Which famous city is in the final shot?")

        revise_round(queue, {"q2": revised(2, "Which city is in the final shot?")})  # a new item to the app
        run()
    kept = {s.id: s for s in read_samples(out / "kept.jsonl")[0]}
    assert list(kept) == ["q0", "q2", "q3"] and read_samples(queue)[0] == []
    assert kept["q2"].question == question(2, "Which city is in the final shot?")
    assert [h["filter"] for h in kept["q2"].extra["revision"]["history"]] == ["flagged", "flagged", "kept"]
    removed = read_samples(out / "removed.jsonl")[0]
    assert removed[0].extra["revision"]["reason"] == "rejected by the reviewer: a text-only model knows it"
    summary = json.loads((out / "summary.json").read_text())["revision"]
    assert (summary["kept_after_revision"], summary["dropped_by_reviewer"], summary["waiting"]) == (2, 1, 0)
    store = ReviewStore(default_db(out / "revision"))
    store.protocol()  # read as the review stored it
    assert {v.sample_id for v in store.versions()} >= {"q0", "q1", "q2"}  # the earlier rounds' decisions stay
