"""The run store: one SQLite database (WAL) per results directory.

Every run is a row in `runs` (its spec and environment); every sample is a row in `samples`,
committed the moment the sample completes, so a crash loses at most the samples in flight.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from lvu.errors import LvuError

# Where results are (the rule, its line, the no-runs error) lives in lvu.runs.location, which stays
# light for `lvu --help`; re-exported here, where callers have always found it.
from lvu.runs.location import DB_NAME as DB_NAME
from lvu.runs.location import RESULTS_FOLDER as RESULTS_FOLDER
from lvu.runs.location import default_results_dir as default_results_dir
from lvu.runs.location import existing_results as existing_results
from lvu.runs.location import location_line as location_line
from lvu.runs.location import results_location as results_location
from lvu.runs.run_lock import RunLocks
from lvu.runs.store_files import current_schema, open_read_only, writing
from lvu.types import RunSpec, SampleResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id   TEXT PRIMARY KEY,
    benchmark TEXT NOT NULL,
    model    TEXT NOT NULL,
    spec     TEXT NOT NULL,
    env      TEXT NOT NULL,
    created  REAL NOT NULL,
    updated  REAL NOT NULL,
    status   TEXT NOT NULL DEFAULT 'running',
    n_total  INTEGER
);
CREATE TABLE IF NOT EXISTS samples (
    run_id    TEXT NOT NULL REFERENCES runs(run_id),
    sample_id TEXT NOT NULL,
    ordinal   INTEGER NOT NULL,
    record    TEXT NOT NULL,
    score     REAL,
    correct   INTEGER,
    error     TEXT,
    completed REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id)
);
CREATE TABLE IF NOT EXISTS tags (
    run_id TEXT NOT NULL,
    tag    TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
CREATE TABLE IF NOT EXISTS run_summary (
    run_id   TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    code     TEXT NOT NULL,
    headline TEXT,
    tables   TEXT
);
"""


def _tally(row: str, sign: str) -> str:
    """Trigger statements adding (+) or removing (-) sample `row` (NEW / OLD) to its run's counts."""
    ensure = ("INSERT INTO run_stats (run_id) SELECT NEW.run_id"
              " WHERE NOT EXISTS (SELECT 1 FROM run_stats WHERE run_id = NEW.run_id);\n" if sign == "+" else "")
    return ensure + (f"UPDATE run_stats SET n_samples = n_samples {sign} 1, n_errors = n_errors {sign}"
                     f" ({row}.error IS NOT NULL), version = version + 1 WHERE run_id = {row}.run_id;\n")


# Per run: samples stored, failed, and a version that every change to its samples bumps. Kept by
# triggers inside the writing transaction, whoever writes (an older lvu, the sqlite3 shell), so a
# listing reads O(runs) rows and a cached summary is valid exactly while its version is current.
# (No INSERT OR IGNORE in the triggers: the firing statement's conflict policy would override it.)
_STATS = f"""
CREATE TABLE run_stats (
    run_id    TEXT PRIMARY KEY,
    n_samples INTEGER NOT NULL DEFAULT 0,
    n_errors  INTEGER NOT NULL DEFAULT 0,
    version   INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER run_stats_insert AFTER INSERT ON samples BEGIN
{_tally("NEW", "+")}END;
CREATE TRIGGER run_stats_update AFTER UPDATE ON samples BEGIN
{_tally("OLD", "-")}{_tally("NEW", "+")}END;
CREATE TRIGGER run_stats_delete AFTER DELETE ON samples BEGIN
{_tally("OLD", "-")}END;
"""


def _statements(script: str) -> Iterator[str]:
    """The statements of an SQL script, one by one (executescript would end the open transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending
            pending = ""


def sweep_memberships(env: dict[str, Any]) -> list[dict[str, Any]]:
    """Every sweep a run belongs to ({"name", "axes", "point"} each): env["sweeps"], or the single
    env["sweep"] older lvu versions stored. Malformed entries are skipped."""
    found = env.get("sweeps")
    if not isinstance(found, list):
        found = [env["sweep"]] if isinstance(env.get("sweep"), dict) else []
    return [m for m in found if isinstance(m, dict) and isinstance(m.get("point"), dict)]


def merge_memberships(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`old` then `new`; a sweep of the same name is one sweep, so a newer membership replaces it."""
    names = {m.get("name") for m in new}
    return [m for m in old if m.get("name") not in names] + list(new)


def _has_column(db: sqlite3.Connection, table: str, column: str) -> bool:
    return column in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def escape_surrogates(value: Any) -> Any:
    """`value` with every unpaired surrogate in its strings written as the text `\\udXXX`."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [escape_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {escape_surrogates(k): escape_surrogates(v) for k, v in value.items()}
    return value

class RunInfo(BaseModel):
    run_id: str
    benchmark: str
    model: str
    spec: RunSpec
    env: dict[str, Any]
    created: float
    updated: float
    status: str
    n_samples: int = 0
    """Samples stored, failed ones included."""
    n_errors: int = 0
    n_ok: int = 0
    """Samples stored without error."""
    n_total: int | None = None
    """The benchmark's sample count when the run last ran (None: stored before lvu recorded it).
    The run's score is `lvu.runs.headline.stored_headline`, never a mean over stored rows."""
    samples_version: int = 0
    """Bumped by every change to the run's stored samples (what a cached summary is valid for)."""

    @property
    def coverage(self) -> str:
        """'30/60': stored without error / the benchmark's samples ('30' for runs stored before lvu
        recorded the total)."""
        return f"{self.n_ok}/{self.n_total}" if self.n_total is not None else str(self.n_ok)


class Store:
    """Open (creating if needed) the store of a results directory. `read_only`: for commands that
    only read (results list/show/export, compare, the viewer): an existing store is opened
    read-only, which works on a full disk too (`open_read_only`); an older store is migrated as
    usual; a missing one is a LvuError saying where lvu looked (`no_runs_message`), and nothing
    is created — no folder, no .gitignore, no WAL files."""

    def __init__(self, results_dir: str | Path | None = None, *, read_only: bool = False) -> None:
        if read_only:
            self.dir, _ = existing_results(results_dir)
        else:
            self.dir = Path(results_dir) if results_dir is not None else default_results_dir()
        self.path = self.dir / DB_NAME
        self.read_only = read_only
        self.locks = RunLocks(self.dir)
        if self.read_only:
            self.db = open_read_only(self.path)
            if current_schema(self.db) and _has_column(self.db, "run_summary", "unreadable"):
                return
            self.db.close()  # an older lvu's store: migrate it below (this needs a writable disk)
            self.read_only = False
        try:
            created = not self.dir.exists()
            self.dir.mkdir(parents=True, exist_ok=True)
            if created:  # as pytest's cache does: a results dir made inside a checkout stays out of `git status`
                (self.dir / ".gitignore").write_text("# created by lvu: run results are not source\n*\n")
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable against process crashes (SIGKILL, Ctrl-C); only power loss can drop
            # the last commits.
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            self._migrate()
        except (OSError, sqlite3.DatabaseError) as e:
            raise LvuError(f"{self.dir}: cannot open the run store ({e}) — pass a writable --results-dir") from e

    def close(self) -> None:
        self.locks.release_all()
        self.db.close()

    def _migrate(self) -> None:
        """Bring a store made by an older lvu up to this schema (old rows keep NULL in new columns;
        `digest` NULL means: read the record's `sample_digest`)."""
        self._add_column("runs", "n_total INTEGER")
        self._add_column("samples", "digest TEXT")
        self._add_column("run_summary", "unreadable INTEGER")  # replies with no readable answer (run_names)
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_stats'").fetchone() is None:
            with self.db:  # once per store: count what older lvu versions stored, then triggers keep it
                self.db.execute("BEGIN IMMEDIATE")
                if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_stats'").fetchone() is None:
                    for statement in _statements(_STATS):
                        self.db.execute(statement)
                    self.db.execute("INSERT INTO run_stats (run_id, n_samples, n_errors, version)"
                                    " SELECT run_id, COUNT(*), SUM(error IS NOT NULL), 1 FROM samples GROUP BY run_id")

    def _add_column(self, table: str, column: str) -> None:
        if _has_column(self.db, table, column.split()[0]):
            return
        try:
            self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        except sqlite3.OperationalError as e:  # another process added it first
            if "duplicate column" not in str(e):
                raise

    # ---- runs ----------------------------------------------------------------------------------

    def begin_run(self, spec: RunSpec, env: dict[str, Any], *, fresh: bool = False) -> str:
        """Create the run, or reopen it for resuming. `fresh` drops its stored samples first."""
        run_id = spec.run_id
        now = time.time()
        self.locks.acquire(run_id)  # RunInProgress when another process runs it now (lvu.runs.run_lock)
        try:
            with writing(self.path):
                self._begin(spec, env, fresh, now)
        except BaseException:
            self.locks.release(run_id)
            raise
        return run_id

    def _begin(self, spec: RunSpec, env: dict[str, Any], fresh: bool, now: float) -> None:
        run_id = spec.run_id
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            env = self._keep_sweeps(run_id, env)
            if fresh:
                self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
                self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
            self.db.execute(
                "INSERT INTO runs (run_id, benchmark, model, spec, env, created, updated, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'running')"
                " ON CONFLICT(run_id) DO UPDATE SET env = excluded.env, updated = excluded.updated,"
                " status = 'running'",
                (run_id, spec.benchmark, spec.model, spec.model_dump_json(), json.dumps(env), now, now),
            )

    def _keep_sweeps(self, run_id: str, env: dict[str, Any]) -> dict[str, Any]:
        """`env` with the run's earlier sweep memberships kept: reopening a run (another sweep
        sharing the point, a plain resume, --fresh) must not take it out of the sweeps it is in."""
        row = self.db.execute("SELECT env FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        old = sweep_memberships(json.loads(row[0])) if row else []
        if not old:
            return env
        merged = merge_memberships(old, sweep_memberships(env))
        return {**env, "sweeps": merged, "sweep": merged[-1]}  # "sweep": the latest, for older lvu

    def set_total(self, run_id: str, n_total: int) -> None:
        """Record how many samples the run's benchmark has (for coverage and the `partial` status)."""
        with writing(self.path):
            self.db.execute("UPDATE runs SET n_total = ? WHERE run_id = ?", (n_total, run_id))

    def finish_run(self, run_id: str, status: str = "done") -> None:
        """Set the run's final status. `done` becomes `partial` while some of the benchmark's samples
        have no stored record at all (a `--limit` run): such a run is never listed as done. Unlocks
        the run (lvu.runs.run_lock), also when the status cannot be written (StoreWriteError): a
        `running` run that no process holds is listed as `interrupted`."""
        try:
            with writing(self.path):
                if status == "done":
                    total, stored = self.db.execute(
                        "SELECT n_total, (SELECT COUNT(*) FROM samples WHERE run_id = ?) FROM runs WHERE run_id = ?",
                        (run_id, run_id)).fetchone() or (None, 0)
                    if total is not None and stored < total:
                        status = "partial"
                self.db.execute("UPDATE runs SET status = ?, updated = ? WHERE run_id = ?",
                                (status, time.time(), run_id))
        finally:
            self.locks.release(run_id)

    def runs(self) -> list[RunInfo]:
        """Every run, most recently updated first; O(runs): the counts come from run_stats."""
        rows = self.db.execute(
            "SELECT r.run_id, r.benchmark, r.model, r.spec, r.env, r.created, r.updated, r.status,"
            " COALESCE(s.n_samples, 0), COALESCE(s.n_errors, 0), r.n_total, COALESCE(s.version, 0)"
            " FROM runs r LEFT JOIN run_stats s ON s.run_id = r.run_id ORDER BY r.updated DESC"
        ).fetchall()
        return [
            RunInfo(
                run_id=r[0], benchmark=r[1], model=r[2], spec=RunSpec.model_validate_json(r[3]),
                env=json.loads(r[4]), created=r[5], updated=r[6], status=self._live_status(r[0], r[7]),
                n_samples=r[8], n_errors=r[9], n_ok=r[8] - r[9], n_total=r[10], samples_version=r[11],
            )
            for r in rows
        ]

    def _live_status(self, run_id: str, status: str) -> str:
        """The stored status, except that a `running` run no process holds (killed, or its final
        status could not be written) is `interrupted`: resumable by running the same command."""
        return "interrupted" if status == "running" and not self.locks.is_held(run_id) else status

    def run(self, ref: str | None = None) -> RunInfo:
        """A run by id or unique id prefix; None gives the most recently updated run."""
        runs = self.runs()
        if not runs:
            raise LvuError(f"{self.path}: no runs stored yet — start one with `lvu run`")
        if ref is None:
            return runs[0]
        matches = [r for r in runs if r.run_id.startswith(ref)]
        if len(matches) != 1:
            what = "no run" if not matches else f"{len(matches)} runs"
            raise LvuError(f"{what} in {self.path} match {ref!r} — see `lvu results list`")
        return matches[0]

    def delete_run(self, run_id: str) -> None:
        """Remove the run, its samples and its tags (report files are the caller's)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            # run_stats stays (zeroed by the triggers): its version never goes back, so a summary
            # computed meanwhile by another process can never match a later run of the same id.
            for table in ("samples", "tags", "run_summary", "runs"):
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    # ---- tags ----------------------------------------------------------------------------------

    def add_tag(self, run_id: str, tag: str) -> None:
        from lvu.args import check_tags

        check_tags([tag])
        self.db.execute("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?, ?)", (run_id, tag))

    def remove_tag(self, run_id: str, tag: str) -> bool:
        """False when the run did not have the tag."""
        return self.db.execute("DELETE FROM tags WHERE run_id = ? AND tag = ?", (run_id, tag)).rowcount > 0

    def tags(self) -> dict[str, list[str]]:
        """run id -> its tags, sorted (runs without tags are absent)."""
        out: dict[str, list[str]] = {}
        for run_id, tag in self.db.execute("SELECT run_id, tag FROM tags ORDER BY run_id, tag"):
            out.setdefault(run_id, []).append(tag)
        return out

    # ---- samples -------------------------------------------------------------------------------

    def completed_ids(self, run_id: str) -> set[str]:
        """Samples that finished without error (failed ones are retried on resume)."""
        rows = self.db.execute("SELECT sample_id FROM samples WHERE run_id = ? AND error IS NULL", (run_id,))
        return {r[0] for r in rows}

    def completed_digests(self, run_id: str) -> dict[str, str | None]:
        """Samples that finished without error -> the `sample_digest` they were answered for (its
        own column; rows stored before the column existed keep it in the record only)."""
        rows = self.db.execute("SELECT sample_id, COALESCE(digest, json_extract(record, '$.sample_digest'))"
                               " FROM samples WHERE run_id = ? AND error IS NULL", (run_id,))
        return {r[0]: r[1] for r in rows}

    def stale_graded(self, run_id: str, stamp: str) -> list[tuple[int, SampleResult]]:
        """(ordinal, record) of the run's completed, unjudged records with a response that the code
        whose stamp is `stamp` did not grade (lvu.runs.regrade); SQLite picks them, so an up-to-date
        run reads none."""
        rows = self.db.execute(
            "SELECT ordinal, record FROM samples WHERE run_id = ? AND error IS NULL"
            " AND json_extract(record, '$.judge') IS NULL AND json_extract(record, '$.response') IS NOT NULL"
            " AND json_extract(record, '$.graded_by') IS NOT ?", (run_id, stamp))
        return [(ordinal, SampleResult.model_validate_json(record)) for ordinal, record in rows]

    def put(self, run_id: str, result: SampleResult, ordinal: int) -> None:
        """Store one sample's record; committed before this returns (StoreWriteError if it cannot be)."""
        with writing(self.path):
            self._put(run_id, result, ordinal)

    def put_many(self, run_id: str, items: list[tuple[SampleResult, int]]) -> None:
        """Store (record, ordinal) pairs in one transaction: all or none (regrading rewrites many)."""
        with writing(self.path):
            self.db.execute("BEGIN")
            try:
                for result, ordinal in items:
                    self._put(run_id, result, ordinal)
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def _put(self, run_id: str, result: SampleResult, ordinal: int) -> None:
        try:
            record = result.model_dump_json()
        except ValueError:  # an unpaired surrogate ("\ud800" in a reply's JSON) is not UTF-8: store it escaped
            result = SampleResult.model_validate(escape_surrogates(result.model_dump()))
            record = result.model_dump_json()
        self.db.execute(
            "INSERT INTO samples (run_id, sample_id, ordinal, record, score, correct, error, completed, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(run_id, sample_id) DO UPDATE SET ordinal = excluded.ordinal,"
            " record = excluded.record, score = excluded.score, correct = excluded.correct,"
            " error = excluded.error, completed = excluded.completed, digest = excluded.digest",
            (
                run_id, result.sample_id, ordinal, record, result.score,
                None if result.correct is None else int(result.correct), result.error, time.time(),
                result.sample_digest,
            ),
        )

    def results(self, run_id: str) -> list[SampleResult]:
        return list(self.iter_results(run_id))

    def iter_results(self, run_id: str) -> Iterator[SampleResult]:
        rows = self.db.execute("SELECT record FROM samples WHERE run_id = ? ORDER BY ordinal, sample_id", (run_id,))
        for (record,) in rows:
            yield SampleResult.model_validate_json(record)

    # What only the viewer, the report's sample pages and exports show; aggregation never reads them.
    DISPLAY_FIELDS = ("prompt", "question", "options", "explanation", "frame_timestamps")

    def scoring_results(self, run_id: str) -> list[SampleResult]:
        """The run's results as `Benchmark.aggregate` reads them: every field but DISPLAY_FIELDS
        (SQLite drops them before Python parses a record). A record is mostly its prompt text, so
        aggregating a 100,000-sample run holds a third of the memory `results` would."""
        drop = ", ".join(f"'$.{name}'" for name in self.DISPLAY_FIELDS)
        rows = self.db.execute(f"SELECT json_remove(record, {drop}) FROM samples WHERE run_id = ?"
                               " ORDER BY ordinal, sample_id", (run_id,))
        return [SampleResult.model_validate_json(record) for (record,) in rows]

    # ---- cached run summaries (lvu.runs.summaries) ---------------------------------------------------

    def samples_version(self, run_id: str) -> int:
        """The run's samples version (0 before any sample). Read it *before* reading the results a
        summary is computed from: a sample stored in between then makes the summary stale, never wrong."""
        return self.stats(run_id)[2]

    def stats(self, run_id: str) -> tuple[int, int, int]:
        """(samples stored, failed ones, samples version) of the run, from run_stats."""
        row = self.db.execute("SELECT n_samples, n_errors, version FROM run_stats WHERE run_id = ?",
                              (run_id,)).fetchone()
        return (row[0], row[1], row[2]) if row else (0, 0, 0)

    def current_summaries(self) -> dict[str, tuple[str, str | None, int | None]]:
        """run id -> (code stamp, headline JSON, unreadable replies) of every cached summary made at
        the run's current samples version (whether the code stamp still holds is the caller's
        check; unreadable is None in entries cached before lvu counted them)."""
        rows = self.db.execute(
            "SELECT h.run_id, h.code, h.headline, h.unreadable FROM run_summary h"
            " LEFT JOIN run_stats s ON s.run_id = h.run_id WHERE h.version = COALESCE(s.version, 0)")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def summary(self, run_id: str) -> tuple[int, str, str | None] | None:
        """(samples version, code stamp, tables JSON) of the run's cached summary, if any."""
        row = self.db.execute("SELECT version, code, tables FROM run_summary WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def save_summary(self, run_id: str, version: int, code: str, headline: str | None, tables: str | None,
                     unreadable: int | None = None) -> None:
        """Cache a run's summary; best effort (a read-only store, e.g. a colleague's, lists uncached)."""
        try:
            self.db.execute("INSERT OR REPLACE INTO run_summary (run_id, version, code, headline, tables, unreadable)"
                            " VALUES (?, ?, ?, ?, ?, ?)", (run_id, version, code, headline, tables, unreadable))
        except sqlite3.OperationalError:
            pass

    def stored_ids(self, run_id: str) -> list[str]:
        """The run's sample ids (read from the primary-key index alone)."""
        return [r[0] for r in self.db.execute("SELECT sample_id FROM samples WHERE run_id = ?", (run_id,))]
