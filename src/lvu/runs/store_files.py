"""The run store's file under faults: a write that fails (a full disk, a locked or damaged
database) as one line, and a read-only connection that works on a full disk (lvu.runs.store)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lvu.errors import LvuError


class StoreWriteError(LvuError):
    """Writing to the store failed (a full disk, a locked or damaged database): one line."""

    def __init__(self, path: Path, error: Exception) -> None:
        self.full = "full" in str(error).lower() or getattr(error, "errno", None) == 28  # ENOSPC
        what = "the results disk is full" if self.full else f"cannot write the run store ({error})"
        super().__init__(f"{path}: {what}")


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """A store write: its sqlite3 / OS errors become one StoreWriteError line."""
    try:
        yield
    except (sqlite3.Error, OSError) as e:
        raise StoreWriteError(path, e) from None


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection. It first tries SQLite's `mode=ro`, which sees every commit (the WAL
    too) but needs the WAL index file (-shm); when that cannot be created (a full disk) and the WAL
    holds nothing, the database file alone is the whole store: open it `immutable`."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, isolation_level=None)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.Error as e:
        wal = path.with_name(path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            raise LvuError(f"{path}: cannot read the run store ({e}) — free some disk space (its newest "
                           "samples are still in the -wal file beside it)") from None
    try:
        db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.Error as e:
        raise LvuError(f"{path}: cannot read the run store ({e}) — check the file") from None


def current_schema(db: sqlite3.Connection) -> bool:
    """Whether a store needs no migration (`Store._migrate`): its newest table and columns exist."""
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(samples)")}
        has_total = "n_total" in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        stats = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'run_stats'").fetchone()
    except sqlite3.Error:
        return False
    return "digest" in columns and has_total and stats is not None
