"""`lvu.api.build_filter`: the blind filter as a library call (filter -> revise loop -> files -> leak
audit -> summary), returning what `lvu build filter` prints: the same files, counts and job."""

from __future__ import annotations

import json

import pytest

from lvu.api import FilterResult, build_filter
from lvu.errors import LvuError
from test_headline_and_limit import invoke


@pytest.fixture(autouse=True)
def _offline(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("LVU_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")


def test_build_filter_returns_the_files_and_counts_the_command_prints(tmp_path):
    out = tmp_path / "clean"
    notes: list[str] = []
    done = build_filter("haystack", "text-only", out, ["random"], limit=6, show_progress=False, on_note=notes.append)
    assert isinstance(done, FilterResult) and done.written and not done.interrupted
    assert done.paths == {"kept": out / "kept.jsonl", "removed": out / "removed.jsonl",
                          "decisions": out / "decisions.jsonl"}
    kept = [json.loads(line)["id"] for line in done.paths["kept"].read_text().splitlines()]
    assert kept == [s.id for s in done.outcome.kept] and len(done.outcome.checked) == 6
    assert (out / "summary.json").is_file() and (out / "leak.json").is_file() and (out / "build.json").is_file()
    assert done.analysis is not None and all(isinstance(line, str) for line in notes)
    assert done.outcome.calls == 6 and done.revision is None and done.queue is None and not done.single_model

    cli = invoke("build", "filter", "haystack", "--rule", "text-only", "-m", "random", "--limit", "6", "-o", out)
    assert cli.exit_code == 0, cli.output
    removed = len(done.outcome.removed_samples())
    assert (f"wrote {out / 'kept.jsonl'} ({len(done.outcome.kept)} kept), {out / 'removed.jsonl'} ({removed} removed)"
            in cli.stdout)
    assert f"job {done.outcome.job_id} in {done.outcome.results_dir}: 0 model calls, 6 decisions from the ledger" \
        in cli.stdout  # the command resumed the job the library call made


def test_build_filter_checks_its_arguments_before_any_call(tmp_path):
    with pytest.raises(LvuError, match="--max-rounds counts revision rounds: pass it with --revise"):
        build_filter("haystack", "text-only", tmp_path / "o", ["random"], max_rounds=2)
    with pytest.raises(LvuError, match="--concurrency 0 is not a positive number"):
        build_filter("haystack", "text-only", tmp_path / "o", ["random"], concurrency=0)
    with pytest.raises(LvuError, match="--limit 0: must be at least 1"):
        build_filter("haystack", "text-only", tmp_path / "o", ["random"], limit=0)
    assert not (tmp_path / "o").exists()
