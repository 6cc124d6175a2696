"""Reading a JobLedger's committed items with plain sqlite, as a test watching another process does."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def committed(db: Path) -> dict[str, tuple]:
    """key -> (result, finished) of every committed item ({} before the ledger's tables exist)."""
    if not db.exists():
        return {}
    con = sqlite3.connect(db)
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("SELECT key, result, finished FROM ledger_items")}
    except sqlite3.OperationalError:  # no tables yet
        return {}
    finally:
        con.close()
