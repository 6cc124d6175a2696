"""The keyed ledger: what every resumable loop of lvu commits to, one item at a time.

A *job* is identified by its kind, its spec and a fingerprint of its input content
(`job_id`); an *item* by a key hashed from everything its outcome depends on — its inputs, the
prompt, the model identity (`item_key`). Each item's outcome (result, raw output, error, timing)
is committed the moment it is there (SQLite, WAL), so kill -9 loses only the items in flight;
resuming skips committed keys; a changed input, prompt or model is a new key, never a stale reuse.

Two implementations share this shape (`Ledger`):
- runs keep their own tables (lvu.runs.store.Store: `runs`, `samples`; the key is the sample id
  checked against the sample's content digest, runs/identity.py), because reports, the viewer and
  every stored run read them;
- every other job — temporal certificates, judging a dev set, the build stages to come — lives in
  `JobLedger`'s two tables, in the same database file as the runs (`<results-dir>/lvu.sqlite`).
The loops themselves run on lvu.runs.stage_runner. docs/architecture.md, "Ledger and runner".
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol

from lvu.errors import LvuError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_jobs (
    job_id      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    spec        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created     REAL NOT NULL,
    updated     REAL NOT NULL,
    status      TEXT NOT NULL DEFAULT 'running'
);
CREATE TABLE IF NOT EXISTS ledger_items (
    job_id   TEXT NOT NULL REFERENCES ledger_jobs(job_id),
    key      TEXT NOT NULL,
    ordinal  INTEGER NOT NULL,
    result   TEXT,
    raw      TEXT,
    error    TEXT,
    started  REAL NOT NULL,
    finished REAL NOT NULL,
    PRIMARY KEY (job_id, key)
);
"""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def item_key(*parts: Any) -> str:
    """Key of an item: a hash of everything its outcome depends on (JSON-able parts)."""
    return hashlib.sha256(_canonical(parts).encode()).hexdigest()[:24]


def job_id(kind: str, spec: dict[str, Any], fingerprint: str) -> str:
    """A job's id: its kind and spec plus the fingerprint of its input content."""
    return hashlib.sha256(_canonical([kind, spec, fingerprint]).encode()).hexdigest()[:12]


class Ledger(Protocol):
    """What the loops need of a ledger: which keys of a job are done, and committing one item."""

    def done_keys(self, job: str) -> set[str]: ...


@dataclass
class Entry:
    """One committed item of a job."""

    key: str
    ordinal: int
    result: Any
    raw: str | None
    error: str | None
    started: float
    finished: float


@dataclass
class JobInfo:
    job_id: str
    kind: str
    spec: dict[str, Any]
    fingerprint: str
    created: float
    updated: float
    status: str


class JobLedger:
    """Jobs and items in `<results-dir>/lvu.sqlite` (next to the runs). Thread-compatible like the
    run store: one connection, used from the event loop's thread."""

    def __init__(self, results_dir: str | Path | None = None) -> None:
        from lvu.runs.store import DB_NAME, default_results_dir

        self.dir = Path(results_dir) if results_dir is not None else default_results_dir()
        self.path = self.dir / DB_NAME
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # durable against process crashes (SIGKILL)
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.DatabaseError) as e:
            raise LvuError(f"{self.dir}: cannot open the ledger ({e}) — pass a writable --results-dir") from e

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> JobLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- jobs ------------------------------------------------------------------------------------

    def open_job(self, kind: str, spec: dict[str, Any], fingerprint: str, *, fresh: bool = False) -> str:
        """Create the job, or reopen it to resume; `fresh` drops its committed items first."""
        job = job_id(kind, spec, fingerprint)
        now = time.time()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            if fresh:
                self.db.execute("DELETE FROM ledger_items WHERE job_id = ?", (job,))
            self.db.execute(
                "INSERT INTO ledger_jobs (job_id, kind, spec, fingerprint, created, updated, status)"
                " VALUES (?, ?, ?, ?, ?, ?, 'running')"
                " ON CONFLICT(job_id) DO UPDATE SET updated = excluded.updated, status = 'running'",
                (job, kind, _canonical(spec), fingerprint, now, now))
        return job

    def finish_job(self, job: str, status: str = "done") -> None:
        self.db.execute("UPDATE ledger_jobs SET status = ?, updated = ? WHERE job_id = ?", (status, time.time(), job))

    def jobs(self, kind: str | None = None) -> list[JobInfo]:
        rows = self.db.execute(
            "SELECT job_id, kind, spec, fingerprint, created, updated, status FROM ledger_jobs"
            + (" WHERE kind = ?" if kind else "") + " ORDER BY updated DESC", (kind,) if kind else ())
        return [JobInfo(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6]) for r in rows]

    # ---- items -----------------------------------------------------------------------------------

    def done_keys(self, job: str) -> set[str]:
        """Keys committed without error (failed items are retried on resume)."""
        return {r[0] for r in self.db.execute(
            "SELECT key FROM ledger_items WHERE job_id = ? AND error IS NULL", (job,))}

    def commit(self, job: str, key: str, *, ordinal: int, result: Any = None, raw: str | None = None,
               error: str | None = None, started: float | None = None) -> None:
        """Store one item's outcome; committed before this returns (a later commit of the same key,
        e.g. a retried failure, replaces it)."""
        now = time.time()
        self.db.execute(
            "INSERT INTO ledger_items (job_id, key, ordinal, result, raw, error, started, finished)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(job_id, key) DO UPDATE SET ordinal = excluded.ordinal,"
            " result = excluded.result, raw = excluded.raw, error = excluded.error, started = excluded.started,"
            " finished = excluded.finished",
            (job, key, ordinal, None if result is None else _canonical(result), raw, error,
             now if started is None else started, now))

    def entries(self, job: str) -> Iterator[Entry]:
        """The job's committed items in ordinal order."""
        rows = self.db.execute("SELECT key, ordinal, result, raw, error, started, finished FROM ledger_items"
                               " WHERE job_id = ? ORDER BY ordinal, key", (job,))
        for key, ordinal, result, raw, error, started, finished in rows:
            yield Entry(key, ordinal, None if result is None else json.loads(result), raw, error, started, finished)

    def entries_for(self, job: str, keys: Iterable[str]) -> Iterator[Entry]:
        """The job's committed items under `keys` (any order), read 500 keys at a time."""
        wanted = sorted(set(keys))
        for start in range(0, len(wanted), 500):  # SQLite caps the parameters of one statement
            chunk = wanted[start:start + 500]
            rows = self.db.execute("SELECT key, ordinal, result, raw, error, started, finished FROM ledger_items"
                                   f" WHERE job_id = ? AND key IN ({','.join('?' * len(chunk))})", (job, *chunk))
            for key, ordinal, result, raw, error, started, finished in rows.fetchall():
                yield Entry(key, ordinal, None if result is None else json.loads(result), raw, error, started, finished)

    def reuse(self, job: str, ordinals: dict[str, int]) -> int:
        """Copy into `job` what earlier jobs of the same kind and spec — the same work on other
        input content, e.g. the data file before one question was edited — committed without error
        under these keys (key -> the item's ordinal in `job`), the most recent job first. A key
        hashes everything its item's outcome depends on, so after an edit only the changed items
        are left to compute. Returns how many items were copied."""
        row = self.db.execute("SELECT kind, spec FROM ledger_jobs WHERE job_id = ?", (job,)).fetchone()
        if row is None:
            return 0
        wanted = set(ordinals) - self.done_keys(job)
        others = [r[0] for r in self.db.execute(
            "SELECT job_id FROM ledger_jobs WHERE kind = ? AND spec = ? AND job_id != ? ORDER BY updated DESC",
            (row[0], row[1], job))]
        copied = 0
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for other in others:
                keys = sorted(wanted)
                for start in range(0, len(keys), 500):  # SQLite caps the parameters of one statement
                    chunk = keys[start:start + 500]
                    found = self.db.execute(
                        "SELECT key, result, raw, started, finished FROM ledger_items WHERE job_id = ? AND"
                        f" error IS NULL AND key IN ({','.join('?' * len(chunk))})", (other, *chunk)).fetchall()
                    for key, result, raw, started, finished in found:
                        self.db.execute(
                            "INSERT INTO ledger_items (job_id, key, ordinal, result, raw, error, started, finished)"
                            " VALUES (?, ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT(job_id, key) DO UPDATE SET"
                            " ordinal = excluded.ordinal, result = excluded.result, raw = excluded.raw, error = NULL,"
                            " started = excluded.started, finished = excluded.finished",
                            (job, key, ordinals[key], result, raw, started, finished))
                        wanted.discard(key)
                        copied += 1
                if not wanted:
                    break
        return copied
