"""`lvu.read_run`: a stored run as one typed record — what `lvu results show RUN --json` prints, as
objects (spec, info, per-sample records) — read without creating anything."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

import fakes  # noqa: F401  (registers the fake benchmark and the fake-follow model)
import lvu
from lvu.api import RunRecord, read_run, run
from lvu.errors import LvuError
from lvu.types import SampleResult
from test_headline_and_limit import invoke


@pytest.fixture(autouse=True)
def _results_env(tmp_path, monkeypatch):
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))


def test_read_run_returns_what_results_show_json_prints(tmp_path):
    done = run("fake", "fake-follow", settings={"n": 4}, model_args={"fail": ["q001"]}, results_dir=tmp_path,
               show_progress=False, report=False)
    record = read_run(done.run_id, tmp_path)
    shown = invoke("results", "show", done.run_id, "--json", "--results-dir", tmp_path)
    assert shown.exit_code == 0, shown.output
    printed = json.loads(shown.stdout)

    assert isinstance(record, RunRecord) and record.run_id == printed["run_id"] == done.run_id
    assert record.spec.model_dump(mode="json") == printed["spec"] and record.info.env == printed["env"]
    assert (record.benchmark, record.model, record.status) == ("fake", "fake-follow", printed["status"])
    assert {"n_ok": record.info.n_ok, "n_total": record.info.n_total} == printed["coverage"]
    assert record.model_identity == printed["env"]["model"]
    assert [{"title": t.title, "rows": [{"name": n, "n": k, "score": s} for n, k, s in t.rows]}
            for t in record.tables()] == printed["tables"]
    assert [(r.sample_id, r.error) for r in record.failures] == [(f["sample_id"], f["error"])
                                                                 for f in printed["failures"]]
    assert all(isinstance(s, SampleResult) for s in record.samples)
    assert [s.sample_id for s in record.samples] == ["q000", "q001", "q002", "q003"]
    assert isinstance(record.created, datetime) and record.updated >= record.created
    assert record.results_dir == tmp_path and record.tags == []


def test_read_run_takes_a_prefix_or_the_latest_run_and_is_reachable_from_lvu(tmp_path):
    first = run("fake", "fake-follow", settings={"n": 2}, results_dir=tmp_path, show_progress=False, report=False)
    second = run("fake", "fake-follow", settings={"n": 3}, results_dir=tmp_path, show_progress=False, report=False)
    assert lvu.read_run(first.run_id[:6], results_dir=tmp_path).run_id == first.run_id
    assert lvu.read_run(results_dir=tmp_path).run_id == second.run_id  # None: the most recently updated


def test_read_run_creates_nothing_where_no_runs_are(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(LvuError, match="no runs: --results-dir"):
        read_run(None, missing)
    assert not missing.exists()
