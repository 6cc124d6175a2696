"""Rater review of built questions (`lvu review ...`, docs/review.md) and the results viewer (`lvu
view`): open a review (its protocol, its people and their links), serve it, read its agreement and
outcomes, export the verified benchmark. The app is lvu.web.review_app, the decisions
lvu.web.review_store, the export lvu.web.review_export; these compose them as the commands do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lvu.errors import LvuError
from lvu.web.review_data import ReviewSource
from lvu.web.review_protocols import ReviewProtocol
from lvu.web.review_store import LogCheck, Person, ReviewStore


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def _open(source_path: str | Path, db: str | Path | None) -> tuple[ReviewSource, ReviewStore]:
    from lvu.web.review_data import default_db, load_source

    source = load_source(source_path)
    return source, ReviewStore(db if db is not None else default_db(source_path))


@dataclass(frozen=True)
class ReviewLink:
    """One person's way in: their page (with their token) and how many questions they rate."""

    person: Person
    page: str
    """queue (raters) or examine (an examiner only, under a majority protocol)."""
    n_questions: int
    url: str


@dataclass(frozen=True)
class ReviewSession:
    """An opened review: the questions, the decisions' store, the protocol and the people set up."""

    source: ReviewSource
    store: ReviewStore
    protocol: ReviewProtocol
    people: list[Person]

    @property
    def each(self) -> str:
        """Who reviews a question: '3 raters each', or a chain protocol's rounds 'writer -> examiner'."""
        chosen = self.protocol
        each = f"{self.store.per_question()} raters each" if chosen.rule == "majority" else \
            " -> ".join(r.name for r in chosen.roles)
        return f"{chosen.name} protocol: {each}" if chosen.name != "neptune" else each

    def links(self, url: str) -> list[ReviewLink]:
        """Each person's page under the server's base `url`."""
        assigned = self.store.assignments()
        out = []
        for p in self.people:
            page = "examine" if p.examiner and not p.rater and self.protocol.rule == "majority" else "queue"
            out.append(ReviewLink(person=p, page=page, n_questions=sum(p.name in r for r in assigned.values()),
                                  url=f"{url}{page}?t={p.token}"))
        return out


def open_review(out: str | Path, *, db: str | Path | None = None, protocol: str | None = None,
                raters: str | Sequence[str] | None = None, examiners: str | Sequence[str] | None = None,
                per_question: int | None = None, roles: Sequence[str] | None = None) -> ReviewSession:
    """Open the review of a build folder (benchmark.jsonl) or an lvu JSONL benchmark: its decisions'
    file (`db`; default <file>.review.sqlite beside it), its protocol (stored on first start; a later
    start with another is refused) and its people — `raters` / `examiners` (names, or comma-separated
    text) under a majority protocol, `roles` ("ROLE=name,name") under a chain protocol.

        session = open_review("out/", raters="ann,bob,cy")
        print([link.url for link in session.links("http://127.0.0.1:8766/")])
    """
    from lvu.web.review_protocols import load_protocol

    def names(given: str | Sequence[str] | None) -> list[str] | None:
        return _names(given) if given is None or isinstance(given, str) else [n.strip() for n in given if n.strip()]

    source, store = _open(out, db)
    chosen = store.protocol(load_protocol(protocol) if protocol is not None else None, record=True)
    if chosen.rule == "chain":
        wanted: dict[str, list[str] | None] = {}
        for spec in roles or []:
            name, sep, who = spec.partition("=")
            if not sep or not _names(who):
                raise LvuError(f"--role {spec}: write ROLE=name[,name...], e.g. --role {chosen.roles[0].name}=alice")
            wanted[name.strip()] = _names(who)
        for given, r in ((raters, chosen.roles[0]), (examiners, chosen.roles[1] if len(chosen.roles) > 1 else None)):
            if given is not None and r is not None:
                wanted.setdefault(r.name, names(given))
        people = store.setup_chain(source, chosen, wanted)
    else:
        if roles:
            raise LvuError(f"--role is for chain protocols; the {chosen.name} protocol takes --raters / --examiners")
        people = store.setup(source, names(raters), names(examiners), per_question)
    return ReviewSession(source=source, store=store, protocol=chosen, people=people)


def serve_review(session: ReviewSession, *, host: str = "127.0.0.1", port: int = 8766, open_browser: bool = False,
                 on_listening: Callable[[str], None] | None = None) -> None:
    """Serve the review app until Ctrl-C; `on_listening` gets the base URL once the port is bound
    (e.g. to print each person's link), `open_browser` opens the first rater's queue."""
    from lvu.web.review_app import create_review_app
    from lvu.web.serve import allowed_hosts, listen, serve_forever, warn_if_exposed

    app = create_review_app(session.source, session.store, allowed_hosts=allowed_hosts(host))
    sock, url = listen(host, port)
    if on_listening is not None:
        on_listening(url)
    warn_if_exposed(host, "and has a rater link can read and change these decisions (plain HTTP)")
    first = next((p for p in session.people if p.rater), None)
    serve_forever(app, sock, open_url=f"{url}queue?t={first.token}" if open_browser and first else None)


@dataclass(frozen=True)
class ReviewExport:
    """What `export_review` wrote: the counts per outcome and the closing lines' facts."""

    summary: dict[str, Any]
    """accepted, rejected, unresolved, incomplete, pending, 'neptune schema', versions, out,
    protocol, release, leak_warnings, log (lvu.web.review_export.export)."""

    @property
    def out(self) -> Path:
        return Path(self.summary["out"])

    @property
    def protocol(self) -> str:
        return str(self.summary["protocol"])

    @property
    def log(self) -> LogCheck:
        """The decision log's hash-chain check: `.line()`, `.broken` (changed outside lvu)."""
        log: LogCheck = self.summary["log"]
        return log

    @property
    def leak_warnings(self) -> list[str]:
        return list(self.summary["leak_warnings"])

    @property
    def release(self) -> dict[str, Any]:
        """A release file written in the protocol's format (longvideobench), else empty."""
        return dict(self.summary["release"] or {})


def export_review(out: str | Path, final: str | Path, *, db: str | Path | None = None,
                  min_ratings: int | None = None) -> ReviewExport:
    """Write the verified benchmark of a review under its protocol into the folder `final`:
    benchmark.jsonl, decisions.jsonl, versions.jsonl, a leak audit, and the protocol's release files.
    `min_ratings`: submitted decisions a majority needs (default: raters per question)."""
    from lvu.web.review_export import export

    source, store = _open(out, db)
    return ReviewExport(summary=export(source, store, final, min_ratings=min_ratings))


@dataclass(frozen=True)
class ReviewStats:
    """`lvu review stats`: agreement per field and the questions' outcomes."""

    protocol: ReviewProtocol
    log_line: str
    """The decision log's check in one line."""
    agreement: list[dict[str, Any]] = field(default_factory=list)
    """Per field: field, items, agreement_pct, unanimous_pct, chance_pct, kappa (majority protocols)."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """Questions per final status, in order of first appearance (chain: accepted, rejected, pending)."""


def review_stats(out: str | Path, *, db: str | Path | None = None) -> ReviewStats:
    """Agreement per field (percent agreement, Fleiss' kappa) and the questions' outcomes; a chain
    protocol (one decision per round) has outcomes only."""
    from lvu.web.review_export import agreement_of, outcomes, reviewed

    source, store = _open(out, db)
    protocol = store.protocol()
    if protocol.rule == "chain":  # one decision per round: no agreement to measure
        statuses = Counter(r.status for r in reviewed(source, store, protocol))
        return ReviewStats(protocol=protocol, log_line=store.verify_log().line(),
                           outcomes={k: statuses.get(k, 0) for k in ("accepted", "rejected", "pending")})
    agreement = agreement_of(source, store)
    counts: dict[str, int] = {}
    for _, final in outcomes(source, store):
        counts[final.status] = counts.get(final.status, 0) + 1
    return ReviewStats(protocol=protocol, log_line=store.verify_log().line(), agreement=agreement, outcomes=counts)


def view(results_dir: str | Path | None = None, *, port: int = 8765, host: str = "127.0.0.1",
         open_browser: bool = False) -> None:
    """Serve the results viewer (`lvu view`) on host:port until Ctrl-C: runs, breakdown tables and
    every sample's frames, cues, prompt, response and score. Prints where the runs are (stderr) and
    the URL; a folder without a run store is a one-line LvuError."""
    from lvu.web.serve import view as serve_viewer

    serve_viewer(results_dir=results_dir, port=port, host=host, open_browser=open_browser)
