"""The store at scale, small: per-run counts kept by SQLite triggers (run_stats), each run's headline
and tables cached (lvu.runs.summaries) so `lvu results list`, the viewer's run list and /api/runs read
O(runs) rows, the sample digest in its own column. What must hold: a listed score always equals the
official aggregate recomputed from every stored result — after a run, an update (what judging does),
a resume, an import, a write by another program — a stale cache entry is never shown, and stores
made by older lvu versions open and list correctly. Timings: benchmarks/store_scale.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fakes  # noqa: F401  (registers the fake benchmark and model)
from lvu.api import run
from lvu.cli import app
from lvu.models.base import register_model
from lvu.runs import summaries
from lvu.runs.headline import stored_headline
from lvu.runs.store import Store
from lvu.types import Prompt, Response, SampleResult

FAILING = ["q001", "q002", "q003", "q005", "q006", "q007"]  # 2 of 8 answered: 25.0


@register_model("scale-flaky")
class FlakyFollow(fakes.FollowModel):
    """fake-follow failing the sample ids listed in `failing_file` (read per call, not in the run id:
    the same run resumed after the file changes)."""

    run_neutral_args = ("failing_file",)

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        if sample_id in Path(self.args["failing_file"]).read_text().split():
            return Response(error="HTTP 500 from server")
        return await super().generate(prompt, sample_id=sample_id)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


def listed(results_dir) -> dict[str, dict]:
    """`lvu results list --json`, by run id."""
    out = CliRunner().invoke(app, ["results", "list", "--json", "--results-dir", str(results_dir)])
    assert out.exit_code == 0, out.output
    return {r["run_id"]: r for r in json.loads(out.output)}


def recomputed(results_dir, run_id: str) -> dict:
    """What the list must show: the headline from every stored result, and the counts, from scratch."""
    store = Store(results_dir)
    try:
        info = next(i for i in store.runs() if i.run_id == run_id)
        results = store.results(run_id)
        top = stored_headline(info.spec, results)
    finally:
        store.close()
    return {"score": None if top is None else {"value": top.value, "row": top.row, "n": top.n},
            "coverage": {"n_ok": sum(r.error is None for r in results), "n_total": info.n_total},
            "errors": sum(r.error is not None for r in results)}


def assert_listed_as_recomputed(results_dir, run_id: str) -> dict:
    shown = listed(results_dir)[run_id]
    want = recomputed(results_dir, run_id)
    assert {k: shown[k] for k in want} == want
    return shown


def fake_run(results_dir, failing=(), **kw):
    """The 8-sample fake benchmark; the samples in `failing` fail this time (the run id stays)."""
    listing = results_dir.parent / "failing.txt"
    listing.write_text(" ".join(failing))
    return run("fake", "scale-flaky", settings={"n": 8}, model_args={"failing_file": str(listing)},
               results_dir=results_dir, show_progress=False, report=False, **kw)


def no_results_read(monkeypatch):
    """Make reading any run's stored results an error (what a cached listing must not need)."""
    def refuse(self, run_id):
        raise AssertionError(f"read every result of run {run_id}")

    monkeypatch.setattr(Store, "results", refuse)
    monkeypatch.setattr(Store, "iter_results", refuse)


# ---- listed == recomputed, whatever changed the run ---------------------------------------------------


def test_listed_score_follows_updates_resumes_and_deletes(tmp_path):
    r = tmp_path / "r"
    first = fake_run(r, FAILING)
    assert assert_listed_as_recomputed(r, first.run_id)["score"]["value"] == 25.0

    store = Store(r)  # what judging does: a stored record rewritten with a new score
    rec = next(x for x in store.results(first.run_id) if x.sample_id == "q001")
    store.put(first.run_id, rec.model_copy(update={"error": None, "score": 1.0, "correct": True,
                                                   "judge": {"kind": "choice", "verdict": "B"}}), 1)
    store.close()
    assert assert_listed_as_recomputed(r, first.run_id)["score"]["value"] == 37.5

    again = fake_run(r)  # the resume retries the failed samples: all right now
    assert again.run_id == first.run_id and again.n_done_before == 3  # q000, q004 and the updated q001
    assert assert_listed_as_recomputed(r, first.run_id)["score"]["value"] == 100.0

    fresh = fake_run(r, FAILING, fresh=True)
    assert assert_listed_as_recomputed(r, fresh.run_id)["score"]["value"] == 25.0


def test_an_imported_run_lists_its_recomputed_score(tmp_path):
    from lvu.runs.importer import import_file

    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "video": {"path": "v.mp4", "duration": 10.0},
                                        "question": f"q{i}", "options": ["a", "b"], "answer": i % 2}) + "\n"
                            for i in range(4)))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"sample_id": f"s{i}", "response": "A"}) + "\n" for i in range(4)))
    r = tmp_path / "r"
    done = import_file(preds, "jsonl", settings={"data": str(data), "frames": 0}, results_dir=r)
    assert assert_listed_as_recomputed(r, done.run_id)["score"]["value"] == 50.0
    again = import_file(preds, "jsonl", settings={"data": str(data), "frames": 0}, results_dir=r)  # replaces it
    assert again.run_id == done.run_id
    assert assert_listed_as_recomputed(r, done.run_id)["score"]["value"] == 50.0


def test_viewer_run_list_and_api_show_the_recomputed_score(tmp_path):
    pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    r = tmp_path / "r"
    ran = fake_run(r, FAILING)
    client = TestClient(create_app(r))
    assert client.get("/api/runs").json()[0]["score"] == 25.0
    db = sqlite3.connect(r / "lvu.sqlite")  # another program fixes two samples behind the viewer's back
    db.execute("UPDATE samples SET error = NULL, score = 1.0, correct = 1,"
               " record = json_set(record, '$.error', NULL, '$.score', 1.0, '$.correct', json('true'))"
               " WHERE run_id = ? AND sample_id IN ('q001', 'q002')", (ran.run_id,))
    db.commit()
    db.close()
    want = recomputed(r, ran.run_id)
    assert want["score"]["value"] == 50.0
    api = client.get("/api/runs").json()[0]
    assert (api["score"], api["n_ok"], api["n_failed"]) == (50.0, 4, 4)
    assert "<td class=num>50.0</td>" in client.get("/").text


# ---- the cache: used while valid, never when stale -----------------------------------------------------


def test_listing_a_cached_store_reads_no_results(tmp_path, monkeypatch):
    pytest.importorskip("fastapi", reason="the viewer needs lvu[web]")
    from fastapi.testclient import TestClient

    from lvu.web.app import create_app

    r = tmp_path / "r"
    runs = [fake_run(r, FAILING), run("fake", "fake-follow", settings={"n": 5}, results_dir=r,
                                      show_progress=False, report=False)]
    no_results_read(monkeypatch)  # the end of `lvu run` cached both: listing is O(runs)
    shown = listed(r)
    assert [shown[x.run_id]["score"]["value"] for x in runs] == [25.0, 100.0]
    client = TestClient(create_app(r))
    assert sorted(x["score"] for x in client.get("/api/runs").json()) == [25.0, 100.0]
    assert client.get("/").status_code == 200


def test_a_stale_entry_is_recomputed_never_shown(tmp_path, monkeypatch):
    r = tmp_path / "r"
    ran = fake_run(r, FAILING)
    assert listed(r)[ran.run_id]["score"]["value"] == 25.0
    db = sqlite3.connect(r / "lvu.sqlite")  # an older lvu or the sqlite3 shell deletes failed samples
    db.execute("DELETE FROM samples WHERE run_id = ? AND error IS NOT NULL", (ran.run_id,))
    db.commit()
    db.close()
    assert assert_listed_as_recomputed(r, ran.run_id)["score"]["value"] == 100.0

    store = Store(r)  # a (forged) entry for the current samples and code is what the list shows...
    store.save_summary(ran.run_id, store.samples_version(ran.run_id), summaries.code_stamp(fakes.FakeBenchmark),
                       json.dumps({"row": "all", "n": 2, "score": 0.0}), None, 0)
    store.close()
    assert listed(r)[ran.run_id]["score"]["value"] == 0.0
    monkeypatch.setattr(summaries, "_lvu_stamp", lambda: "another lvu")  # ...until the code changes
    assert assert_listed_as_recomputed(r, ran.run_id)["score"]["value"] == 100.0


def test_a_summary_saved_for_a_deleted_run_never_matches_its_rerun(tmp_path):
    r = tmp_path / "r"
    ran = fake_run(r)
    store = Store(r)
    spec = store.run(ran.run_id).spec
    version = store.samples_version(ran.run_id)  # a listing in another process reads this...
    store.delete_run(ran.run_id)
    store.begin_run(spec, {})  # ...the run is deleted and made again, as many samples as before...
    for i in range(8):
        store.put(ran.run_id, SampleResult(sample_id=f"q{i:03d}", score=float(i < 2), correct=i < 2, answer=0), i)
    # ...and the listing saves what it computed from the deleted run
    store.save_summary(ran.run_id, version, summaries.code_stamp(fakes.FakeBenchmark),
                       json.dumps({"row": "all", "n": 8, "score": 100.0}), None)
    store.close()
    assert assert_listed_as_recomputed(r, ran.run_id)["score"]["value"] == 25.0


def test_resuming_an_unchanged_run_reuses_its_tables(tmp_path, monkeypatch):
    r = tmp_path / "r"
    first = fake_run(r, FAILING)
    fixed = fake_run(r)  # the failed samples are retried and answered: the tables are recomputed
    assert fixed.n_done_before == 2 and fixed.tables != first.tables
    with monkeypatch.context() as m:
        no_results_read(m)
        unchanged = fake_run(r)  # nothing to do: the cached tables of the whole run
    assert unchanged.n_done_before == 8 and unchanged.n_failed == 0
    store = Store(r)
    assert unchanged.tables == fixed.tables == fakes.FakeBenchmark(n=8).aggregate(store.results(fixed.run_id))
    store.close()


def test_a_limit_run_does_not_cache_tables_of_part_of_the_run(tmp_path):
    r = tmp_path / "r"
    whole = fake_run(r)
    part = fake_run(r, limit=3)
    assert part.run_id == whole.run_id and part.tables[0].rows[0][:2] == ("all", 3)
    assert assert_listed_as_recomputed(r, part.run_id)["score"]["n"] == 8


# ---- counts and digests, and stores of older lvu versions ----------------------------------------------


def test_counts_follow_every_kind_of_write(tmp_path):
    store = Store(tmp_path / "r")
    spec = fakes_spec()
    run_id = store.begin_run(spec, {})

    def check():
        n, errors = store.db.execute("SELECT COUNT(*), COUNT(error) FROM samples WHERE run_id = ?", (run_id,)).fetchone()
        info = store.run(run_id)
        assert (info.n_samples, info.n_errors, info.n_ok) == (n, errors, n - errors)

    for i in range(5):
        store.put(run_id, SampleResult(sample_id=f"q{i}", error="boom" if i < 2 else None, sample_digest=f"d{i}"), i)
    check()
    store.put(run_id, SampleResult(sample_id="q0", score=1.0), 0)  # failed -> answered
    store.put(run_id, SampleResult(sample_id="q4", error="late"), 4)  # answered -> failed
    check()
    before = store.samples_version(run_id)
    store.begin_run(spec, {}, fresh=True)
    check()
    assert store.run(run_id).n_samples == 0 and store.samples_version(run_id) > before
    assert store.completed_digests(run_id) == {}
    store.put(run_id, SampleResult(sample_id="q9", sample_digest="abc"), 0)
    assert store.completed_digests(run_id) == {"q9": "abc"}
    assert store.db.execute("SELECT digest FROM samples WHERE sample_id = 'q9'").fetchone() == ("abc",)
    store.close()


def fakes_spec():
    from lvu.types import RunSpec

    return RunSpec(benchmark="fake", model="fake-follow", settings={"n": 8})


def test_an_old_store_opens_counts_and_lists(tmp_path):
    r = tmp_path / "r"
    r.mkdir()
    old = sqlite3.connect(r / "lvu.sqlite")  # the schema before run_stats, run_summary and `digest`
    old.executescript("""
        CREATE TABLE runs (run_id TEXT PRIMARY KEY, benchmark TEXT NOT NULL, model TEXT NOT NULL,
            spec TEXT NOT NULL, env TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'running', n_total INTEGER);
        CREATE TABLE samples (run_id TEXT NOT NULL REFERENCES runs(run_id), sample_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL, record TEXT NOT NULL, score REAL, correct INTEGER, error TEXT,
            completed REAL NOT NULL, PRIMARY KEY (run_id, sample_id));
        CREATE TABLE tags (run_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (run_id, tag));
    """)
    spec = json.dumps({"benchmark": "fake", "model": "fake-follow", "model_args": {}, "settings": {"n": 4}})
    old.execute("INSERT INTO runs VALUES ('abc', 'fake', 'fake-follow', ?, '{}', 0, 0, 'done', 4)", (spec,))
    for i, (score, error) in enumerate([(1.0, None), (0.0, None), (None, "HTTP 500"), (1.0, None)]):
        record = SampleResult(sample_id=f"q{i:03d}", score=score, correct=None if score is None else score == 1.0,
                              error=error, answer=0, sample_digest=f"dig{i}").model_dump_json()
        old.execute("INSERT INTO samples VALUES ('abc', ?, ?, ?, ?, NULL, ?, 0)", (f"q{i:03d}", i, record, score, error))
    old.commit()
    old.close()

    shown = assert_listed_as_recomputed(r, "abc")
    assert (shown["score"]["value"], shown["coverage"], shown["errors"]) == (50.0, {"n_ok": 3, "n_total": 4}, 1)
    store = Store(r)
    assert store.completed_digests("abc") == {"q000": "dig0", "q001": "dig1", "q003": "dig3"}  # from the records
    store.put("abc", SampleResult(sample_id="q002", score=1.0, correct=True, answer=0, sample_digest="dig2"), 2)
    store.close()
    assert assert_listed_as_recomputed(r, "abc")["score"]["value"] == 75.0
