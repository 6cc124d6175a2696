import sqlite3

import pytest

from lvu.errors import LvuError
from lvu.runs.store import Store
from lvu.types import RunSpec, SampleResult


def spec(**settings):
    return RunSpec(benchmark="haystack", model="random", settings=settings)


def test_run_id_is_stable_and_changes_with_settings():
    assert spec(frames=8).run_id == spec(frames=8).run_id
    assert spec(frames=8).run_id != spec(frames=16).run_id
    assert RunSpec(benchmark="b", model="m", model_args={"x": 1}).run_id != RunSpec(benchmark="b", model="m").run_id


def test_put_commits_immediately_and_survives_reopen(tmp_path):
    store = Store(tmp_path)
    run_id = store.begin_run(spec(), {"lvu": "test"})
    store.put(run_id, SampleResult(sample_id="a", score=1.0, correct=True, prediction=2), 0)
    # A second connection (another process would see the same) reads it without any close/commit.
    other = sqlite3.connect(tmp_path / "lvu.sqlite")
    assert other.execute("SELECT sample_id, correct FROM samples").fetchall() == [("a", 1)]
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    again = Store(tmp_path)
    [result] = again.results(run_id)
    assert result.prediction == 2 and result.correct is True


def test_resume_keeps_completed_and_retries_failed(tmp_path):
    store = Store(tmp_path)
    run_id = store.begin_run(spec(), {})
    store.put(run_id, SampleResult(sample_id="ok", score=1.0), 0)
    store.put(run_id, SampleResult(sample_id="bad", error="video missing"), 1)
    assert store.begin_run(spec(), {}) == run_id
    assert store.completed_ids(run_id) == {"ok"}
    # Re-putting a sample replaces it: never a duplicate row.
    store.put(run_id, SampleResult(sample_id="bad", score=0.0), 1)
    assert [r.sample_id for r in store.results(run_id)] == ["ok", "bad"]
    assert store.completed_ids(run_id) == {"ok", "bad"}


def test_fresh_discards_the_runs_samples_only(tmp_path):
    store = Store(tmp_path)
    a = store.begin_run(spec(frames=1), {})
    b = store.begin_run(spec(frames=2), {})
    store.put(a, SampleResult(sample_id="x", score=1.0), 0)
    store.put(b, SampleResult(sample_id="x", score=1.0), 0)
    store.begin_run(spec(frames=1), {}, fresh=True)
    assert store.results(a) == [] and len(store.results(b)) == 1


def test_run_lookup_by_prefix_and_latest(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(LvuError, match="no runs stored yet"):
        store.run()
    a = store.begin_run(spec(frames=1), {})
    b = store.begin_run(spec(frames=2), {})
    assert store.run().run_id == b
    assert store.run(a[:6]).run_id == a
    with pytest.raises(LvuError, match="match 'zzz'"):
        store.run("zzz")
    info = {r.run_id: r for r in store.runs()}
    assert info[a].spec.settings == {"frames": 1}


def test_unwritable_results_dir_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(LvuError, match="cannot open the run store"):
        Store(blocker / "results")
