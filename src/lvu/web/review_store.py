"""The review's SQLite file: people and their tokens, who rates what, and every decision version.

`decisions` is append-only (triggers refuse UPDATE, DELETE, and an INSERT that would replace an
existing row — `INSERT OR REPLACE` deletes without firing DELETE triggers): a save is a new
version of that rater's decision on that question in that round (1: raters, 2: examiner), with its
time and the digest of the question as shown, so nothing is overwritten and the whole history can
be read back. Each row also carries `chain`, a SHA-256 over the previous row's chain and its own
content, so a row edited, removed or slipped in by other means (triggers dropped, the file
rewritten) breaks the chain at that row: `verify_log` finds it, `lvu review export` reports it and
records the head it verified, so a later export also notices rows removed from the end. A decision counts for the question's current content only: when the benchmark file changes a
question (new digest), earlier decisions on it are kept but no longer counted.

One short connection per call, so the server's worker threads never share one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lvu.errors import LvuError
from lvu.web.review_data import ReviewItem, ReviewSource
from lvu.web.review_rules import Decision, Version

if TYPE_CHECKING:
    from lvu.web.review_protocols import ReviewProtocol

RATERS, EXAMINER = 1, 2
"""Rounds: independent raters, then the examiner who resolves."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS people(name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE,
    rater INTEGER NOT NULL, examiner INTEGER NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS items(sample_id TEXT NOT NULL, digest TEXT NOT NULL, shown TEXT NOT NULL,
    added REAL NOT NULL, PRIMARY KEY(sample_id, digest));
CREATE TABLE IF NOT EXISTS duties(name TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY(name, role));
CREATE TABLE IF NOT EXISTS assignments(sample_id TEXT NOT NULL, rater TEXT NOT NULL, assigned REAL NOT NULL,
    PRIMARY KEY(sample_id, rater));
CREATE TABLE IF NOT EXISTS decisions(id INTEGER PRIMARY KEY AUTOINCREMENT, sample_id TEXT NOT NULL,
    rater TEXT NOT NULL, round INTEGER NOT NULL, version INTEGER NOT NULL, digest TEXT NOT NULL,
    status TEXT NOT NULL, decision TEXT NOT NULL, created REAL NOT NULL,
    UNIQUE(sample_id, rater, round, version));
CREATE TRIGGER IF NOT EXISTS decisions_no_update BEFORE UPDATE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only: save a new version'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_delete BEFORE DELETE ON decisions
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only: save a new version'); END;
CREATE TRIGGER IF NOT EXISTS decisions_no_replace BEFORE INSERT ON decisions
    WHEN EXISTS (SELECT 1 FROM decisions WHERE id = NEW.id OR (sample_id = NEW.sample_id AND rater = NEW.rater
                 AND round = NEW.round AND version = NEW.version))
    BEGIN SELECT RAISE(ABORT, 'decisions are append-only: a saved version is never replaced'); END;
"""
CHAIN_START = "0" * 64
"""The chain value before the first row."""


def chain_link(previous: str, sample_id: str, rater: str, round: int, version: int, digest: str, status: str,
               decision: str, created: float) -> str:
    """A row's chain value: SHA-256 of the previous row's and the row's own content."""
    content = json.dumps([previous, sample_id, rater, round, version, digest, status, decision, repr(created)],
                         ensure_ascii=False)
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class LogCheck:
    """What `verify_log` found: rows checked, rows older than the chain, the head, the first break."""

    rows: int
    unchained: int
    head: tuple[int, str]
    """(row id, chain value) of the last row: an export records it, a later export checks it is still there."""
    broken: str | None = None

    def line(self) -> str:
        if self.broken:
            return f"decision log BROKEN: {self.broken} — it was changed outside lvu; do not trust this export"
        old = f" ({self.unchained} saved before lvu chained them, not checkable)" if self.unchained else ""
        return f"decision log intact: {self.rows} versions, hash chain verified{old}"



@dataclass(frozen=True)
class Person:
    name: str
    token: str
    rater: bool
    examiner: bool
    duties: tuple[str, ...] = ()
    """A chain protocol's roles (lvu.web.review_protocols); empty under Neptune's rater / examiner."""

    @property
    def roles(self) -> str:
        if self.duties:
            return " + ".join(self.duties)
        return " + ".join(r for r, yes in (("rater", self.rater), ("examiner", self.examiner)) if yes)


class ReviewStore:
    """Decisions on one reviewed benchmark (module docstring)."""

    def __init__(self, path: str | Path, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.decision_type: type[Decision] = Decision
        """How stored decisions are read: a chain protocol's carry its edits (lvu.web.review_chain)."""
        self.busy_timeout = busy_timeout
        """Seconds a call waits for another writer's lock before failing ("database is locked")."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.db() as db:
            db.execute("PRAGMA journal_mode=WAL")  # stored in the file: set once, not per connection
            db.executescript(SCHEMA)
            if "chain" not in {row[1] for row in db.execute("PRAGMA table_info(decisions)")}:  # a store from before
                db.execute("ALTER TABLE decisions ADD COLUMN chain TEXT")
        self.path.chmod(0o600)  # it holds the rater tokens

    @contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    # ---- people and assignments --------------------------------------------------------------------

    def setup(self, source: ReviewSource, raters: list[str] | None, examiners: list[str] | None,
              per_question: int | None) -> list[Person]:
        """Add the people named (a token each, kept across restarts; people not named in a given
        list lose that role, their decisions stay), record every question as shown, and give each
        question not yet assigned `per_question` raters, in turn. None keeps what the store has
        (first start: raters rater1..rater3, 3 per question)."""
        now = time.time()
        with self.db() as db:
            db.execute("BEGIN IMMEDIATE")
            known = {p.name: p for p in self._people(db)}
            stored = db.execute("SELECT value FROM meta WHERE key = 'per_question'").fetchone()
            per_question = per_question or (int(stored[0]) if stored else 3)
            if raters is None:
                raters = [p.name for p in known.values() if p.rater] or [f"rater{i + 1}" for i in range(per_question)]
            examiners = examiners if examiners is not None else [p.name for p in known.values() if p.examiner]
            for name in dict.fromkeys([*known, *raters, *examiners]):  # people not named lose their roles
                if name not in known and not NAME.fullmatch(name):
                    db.execute("ROLLBACK")
                    raise LvuError(f"rater name {name!r}: use 1-40 letters, digits, '.', '_' or '-'")
                roles = (int(name in raters), int(name in examiners))
                if name in known:
                    db.execute("UPDATE people SET rater = ?, examiner = ? WHERE name = ?", (*roles, name))
                else:
                    db.execute("INSERT INTO people VALUES (?, ?, ?, ?, ?)",
                               (name, secrets.token_urlsafe(18), *roles, now))
            if per_question > len(raters):
                db.execute("ROLLBACK")
                raise LvuError(f"--per-question {per_question} needs at least {per_question} raters "
                               f"({len(raters)} given) — pass more --raters or a smaller --per-question")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('per_question', ?)", (str(per_question),))
            db.executemany("INSERT OR IGNORE INTO items VALUES (?, ?, ?, ?)",
                           [(i.id, i.digest, json.dumps(i.shown(), ensure_ascii=False), now) for i in source.items])
            assigned = {r[0] for r in db.execute("SELECT DISTINCT sample_id FROM assignments")}
            rows = [(item.id, raters[(item.ordinal * per_question + j) % len(raters)], now)
                    for item in source.items if item.id not in assigned for j in range(per_question)]
            db.executemany("INSERT OR IGNORE INTO assignments VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")
            return [p for p in self._people(db) if p.rater or p.examiner]

    @staticmethod
    def _people(db: sqlite3.Connection) -> list[Person]:
        duties: dict[str, list[str]] = {}
        for name, role in db.execute("SELECT name, role FROM duties ORDER BY rowid"):
            duties.setdefault(name, []).append(role)
        rows = db.execute("SELECT name, token, rater, examiner FROM people ORDER BY created, name")
        return [Person(n, t, bool(r), bool(x), tuple(duties.get(n, ()))) for n, t, r, x in rows]

    # ---- the protocol --------------------------------------------------------------------------------

    def protocol(self, requested: ReviewProtocol | None = None, *, record: bool = False) -> ReviewProtocol:
        """The protocol this review runs under: the one stored on first start (a review from before
        protocols: Neptune's). `requested` must be that one (decisions were made under it);
        `record` stores it when none is. Sets how decisions are read."""
        from lvu.web.review_protocols import BUILT_IN, DEFAULT, ReviewProtocol

        with self.db() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'protocol'").fetchone()
            stored = ReviewProtocol.model_validate_json(row[0]) if row else None
            if stored is None and db.execute("SELECT 1 FROM decisions LIMIT 1").fetchone():
                stored = BUILT_IN[DEFAULT]  # decided before protocols were stored: Neptune's was the only one
            if stored is not None and requested is not None and requested.digest() != stored.digest():
                raise LvuError(f"{self.path}: this review runs the {stored.name!r} protocol (digest {stored.digest()}), "
                               f"not {requested.name!r} ({requested.digest()}) — decisions were made under the first; "
                               f"pass --protocol {stored.name}, or start a new review with another --db")
            protocol = stored or requested or BUILT_IN[DEFAULT]
            if record and row is None:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('protocol', ?)", (protocol.canonical(),))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('protocol_digest', ?)", (protocol.digest(),))
        from lvu.web.review_chain import EditDecision

        self.decision_type = EditDecision if protocol.rule == "chain" else Decision
        return protocol

    def setup_chain(self, source: ReviewSource, protocol: ReviewProtocol,
                    people: dict[str, list[str] | None]) -> list[Person]:
        """`setup` for a chain protocol: each role's people (None keeps the stored ones; first start:
        one person named after the role, e.g. `reviser1`). The first role's people share its
        questions in turn (one each); a later role's people see every question sent to that role."""
        with self.db() as db:
            stored: dict[str, list[str]] = {}
            for name, role in db.execute("SELECT name, role FROM duties ORDER BY rowid"):
                stored.setdefault(role, []).append(name)
        chosen = {r.name: people.get(r.name) or stored.get(r.name) or [f"{r.name}1"] for r in protocol.roles}
        if unknown := sorted(set(people) - set(chosen)):
            raise LvuError(f"--role {unknown[0]}: the {protocol.name} protocol has roles {', '.join(chosen)}")
        first = protocol.roles[0].name
        later = [n for r in protocol.roles[1:] for n in chosen[r.name]]
        self.setup(source, chosen[first], list(dict.fromkeys(later)), 1)
        self.set_duties(chosen)
        return self.people()

    def set_duties(self, duties: dict[str, list[str]]) -> None:
        """A chain protocol's roles: role -> people (a role not given keeps its people)."""
        with self.db() as db:
            db.execute("BEGIN IMMEDIATE")
            for role, names in duties.items():
                db.execute("DELETE FROM duties WHERE role = ?", (role,))
                db.executemany("INSERT INTO duties VALUES (?, ?)", [(n, role) for n in names])
            db.execute("COMMIT")

    def people(self) -> list[Person]:
        with self.db() as db:
            return [p for p in self._people(db) if p.rater or p.examiner]

    def person(self, token: str | None) -> Person | None:
        """Whose token this is (compared in constant time), or None."""
        if not token:
            return None
        found = None
        for p in self.people():
            if hmac.compare_digest(p.token.encode(), token.encode("utf-8", "surrogatepass")):
                found = p
        return found

    def per_question(self) -> int:
        with self.db() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'per_question'").fetchone()
        return int(row[0]) if row else 3

    def assignments(self) -> dict[str, list[str]]:
        """sample id -> its raters, in the order assigned."""
        out: dict[str, list[str]] = {}
        with self.db() as db:
            for sid, rater in db.execute("SELECT sample_id, rater FROM assignments ORDER BY rowid"):
                out.setdefault(sid, []).append(rater)
        return out

    # ---- decisions -----------------------------------------------------------------------------------

    def save(self, item: ReviewItem, rater: str, round: int, decision: Decision,
             max_versions: int | None = None) -> Version | None:
        """Append `decision` as the rater's next version on this question in this round; None
        (nothing saved) when `max_versions` are stored already."""
        now = time.time()
        with self.db() as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT MAX(version) FROM decisions WHERE sample_id = ? AND rater = ? AND round = ?",
                             (item.id, rater, round)).fetchone()
            version = (row[0] or 0) + 1
            if max_versions is not None and version > max_versions:
                db.execute("ROLLBACK")
                return None
            last = db.execute("SELECT chain FROM decisions ORDER BY id DESC LIMIT 1").fetchone()
            values = (item.id, rater, round, version, item.digest, decision.status, decision.model_dump_json(), now)
            db.execute("INSERT INTO decisions (sample_id, rater, round, version, digest, status, decision, created, "
                       "chain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (*values, chain_link(last[0] if last and last[0] else CHAIN_START, *values)))
            db.execute("COMMIT")
        return Version(item.id, rater, round, version, now, decision)

    def versions(self, *, sample_id: str | None = None, rater: str | None = None, round: int | None = None,
                 digests: dict[str, str] | None = None) -> list[Version]:
        """Stored versions, oldest first, filtered; `digests` (sample id -> current digest) keeps
        only decisions on the questions' current content."""
        where, args = [], []
        for column, value in (("sample_id", sample_id), ("rater", rater), ("round", round)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = ("SELECT sample_id, rater, round, version, created, decision, digest FROM decisions"
               + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id")
        with self.db() as db:
            rows = db.execute(sql, args).fetchall()
        return [Version(s, r, n, v, c, self.decision_type.model_validate_json(d)) for s, r, n, v, c, d, digest in rows
                if digests is None or digests.get(s) == digest]

    def latest(self, round: int, digests: dict[str, str], *, submitted: bool = False) -> dict[str, dict[str, Version]]:
        """sample id -> rater -> their latest version in `round` (the latest submitted one when
        `submitted`: a draft saved after submitting does not undo the submission)."""
        out: dict[str, dict[str, Version]] = {}
        for v in self.versions(round=round, digests=digests):
            if not submitted or v.decision.submitted:
                out.setdefault(v.sample_id, {})[v.rater] = v
        return out

    def verify_log(self, head: tuple[int, str] | None = None) -> LogCheck:
        """Recompute the chain over every row (module docstring); `head`, a (row id, chain) an
        earlier export verified, must still be there unchanged."""
        with self.db() as db:
            rows = db.execute("SELECT id, sample_id, rater, round, version, digest, status, decision, created, chain "
                              "FROM decisions ORDER BY id").fetchall()
        previous, unchained = CHAIN_START, 0
        broken: str | None = None
        chains: dict[int, str | None] = {}
        for row_id, *values, chain in rows:
            if chain is None and not chains:  # saved by an lvu from before the chain
                unchained += 1
                continue
            expected = chain_link(previous, *values)
            if chain != expected and broken is None:
                broken = (f"version {values[3]} of {values[1]} on {values[0]} (row {row_id}) does not follow "
                          "the row before it (edited, inserted, or a row before it removed)")
            chains[row_id] = chain
            previous = chain or ""
        if broken is None and head is not None and head[0] and chains.get(head[0]) != head[1]:
            broken = f"row {head[0]}, verified by an earlier export, is gone or changed (rows removed from the end?)"
        last = (rows[-1][0], rows[-1][-1] or "") if rows else (0, CHAIN_START)
        return LogCheck(len(rows), unchained, last, broken)
