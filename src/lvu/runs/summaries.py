"""Each run's aggregate tables, headline and count of unreadable replies, cached in the store, so
listing runs reads O(runs) rows.

The numbers are those of lvu.runs.headline (the benchmark's official aggregate over every stored
result of the run); this module only remembers them. An entry holds for
- the run's samples version it was computed at (store table run_stats, bumped by SQLite triggers on
  every insert, update or delete of the run's samples, whoever writes them), and
- the code that computed it: lvu's version, the files of lvu's benchmarks and scoring code, and the
  benchmark's own module (path, mtime, size), so an upgrade, an edited checkout or a plugin update
  recomputes.
Anything else is recomputed from the stored results on the next look, so a listed score is never
stale. Runs whose benchmark cannot be rebuilt here (their per-label fallback) are never cached.

Imports stay light (no engine): `lvu results list` and the viewer import this module.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lvu.runs.headline import Headline, headline_of_tables, stored_tables
from lvu.runs.unreadable import stored_unreadable

if TYPE_CHECKING:
    from lvu.benchmarks.base import Benchmark, Breakdown
    from lvu.runs.store import RunInfo, Store
    from lvu.types import RunSpec


@dataclass(frozen=True)
class Listed:
    """What a run listing shows beside the run's counts: its headline and how many of its replies
    held no readable answer (lvu.runs.run_names.is_unreadable)."""

    headline: Headline | None
    unreadable: int


def run_headlines(store: Store, runs: list[RunInfo]) -> dict[str, Headline | None]:
    """Each run's headline: the cached one while it holds, else computed now (and cached)."""
    return {run_id: listed.headline for run_id, listed in run_listing(store, runs).items()}


def run_listing(store: Store, runs: list[RunInfo]) -> dict[str, Listed]:
    """Each run's headline and unreadable count: the cached ones while they hold, else computed
    now from every stored result (and cached)."""
    cached = store.current_summaries()
    files: dict[str, str] = {}
    out: dict[str, Listed] = {}
    for info in runs:
        entry = cached.get(info.run_id)
        if entry is not None and entry[2] is not None and _holds(entry[0], files):
            out[info.run_id] = Listed(_headline_from_json(entry[1]), int(entry[2]))
        else:
            out[info.run_id] = refresh(store, info.run_id, info.spec)
    return out


def refresh(store: Store, run_id: str, spec: RunSpec) -> Listed:
    """The run's headline (lvu.runs.headline.stored_headline) and unreadable count from all its
    stored results, cached with its tables when its benchmark's official aggregate made them."""
    version = store.samples_version(run_id)  # before the results: a sample stored meanwhile makes it stale
    results = store.scoring_results(run_id)
    tables, bench = stored_tables(spec, results)
    subset = bench.settings.get("subset") if bench is not None else None
    n_unreadable = len(stored_unreadable(store, run_id)[0])  # reads explanations: scoring_results drops them
    if bench is not None:
        remember(store, run_id, version, bench, tables, n_unreadable)
    return Listed(headline_of_tables(tables, subset), n_unreadable)


def remember(store: Store, run_id: str, version: int, bench: Benchmark, tables: list[Breakdown],
             n_unreadable: int) -> None:
    """Cache `tables` and the unreadable count, from *every* result the run had stored at samples
    version `version` (read before those results were), aggregated by `bench`."""
    from lvu.types import Breakdown

    top = headline_of_tables(tables, bench.settings.get("subset"))
    headline = None if top is None else json.dumps({"row": top.row, "n": top.n, "score": top.value})
    plain = all(type(t) is Breakdown for t in tables)  # a plugin's subclass would not come back as itself
    store.save_summary(run_id, version, code_stamp(type(bench)), headline,
                       json.dumps([t.model_dump(mode="json") for t in tables]) if plain else None, n_unreadable)


def run_tables(store: Store, run_id: str, bench: Benchmark, keep: set[str]) -> tuple[list[Breakdown], int]:
    """(tables, failed samples) of the run's stored results whose ids are in `keep`, as
    `bench.aggregate` makes them: from the cache when every stored sample is in `keep` and nothing
    changed since (resuming a finished run reads no result), else aggregated now — and cached
    when they cover the whole run (the end of `lvu run`: `lvu results list` then needs no recount)."""
    from lvu.types import Breakdown

    _, n_failed, version = store.stats(run_id)  # before anything else is read
    stored = store.stored_ids(run_id)
    whole_run = set(stored) <= keep
    cached = store.summary(run_id)
    if whole_run and cached is not None and cached[0] == version and cached[2] is not None \
            and cached[1] == code_stamp(type(bench)):
        return [Breakdown.model_validate(t) for t in json.loads(cached[2])], n_failed
    results = [r for r in store.scoring_results(run_id) if r.sample_id in keep]
    tables = bench.aggregate(results)
    if whole_run and len(results) == len(stored):
        remember(store, run_id, version, bench, tables, len(stored_unreadable(store, run_id)[0]))
    return tables, sum(1 for r in results if r.error)


# ---- what code computed an entry -------------------------------------------------------------------


def code_stamp(bench_class: type) -> str:
    """lvu's stamp, the benchmark's module file and that file's stamp, as JSON."""
    try:
        module = inspect.getsourcefile(bench_class) or ""
    except TypeError:
        module = ""
    return json.dumps([_lvu_stamp(), module, _file_stamp(module)])


def _holds(code: str, files: dict[str, str]) -> bool:
    """Whether an entry's code stamp is the running code's (`files` memoises module stamps)."""
    try:
        lvu_stamp, module, module_stamp = json.loads(code)
    except (ValueError, TypeError):
        return False
    if module not in files:
        files[module] = _file_stamp(module)
    return lvu_stamp == _lvu_stamp() and files[module] == module_stamp


@functools.lru_cache(maxsize=1)
def _lvu_stamp() -> str:
    """lvu's version and its aggregation sources (benchmarks/, scoring/, runs/headline.py, and
    runs/run_names.py and runs/unreadable.py, which say what an unreadable reply is): ~40 stats."""
    from lvu.version import __version__

    root = Path(__file__).parent.parent  # the lvu package
    files = [*sorted((root / "benchmarks").glob("*.py")), *sorted((root / "scoring").glob("*.py")),
             root / "runs" / "headline.py", root / "runs" / "run_names.py", root / "runs" / "unreadable.py"]
    listing = "\n".join(f"{f.name}:{_file_stamp(str(f))}" for f in files)
    return f"{__version__}:{hashlib.sha256(listing.encode()).hexdigest()[:16]}"


def _file_stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"


def _headline_from_json(text: str | None) -> Headline | None:
    if text is None:
        return None
    d = json.loads(text)
    return Headline(d["row"], int(d["n"]), math.nan if d["score"] is None else float(d["score"]))
