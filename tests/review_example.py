"""The README's review example: a scripted team decides on a build's questions through the review
app's JSON API (the calls the question page makes), so the flow runs offline without a browser.

    python tests/review_example.py neptune-build

alice, bob and carol rate every question (3 per question, as Neptune did); dana examines. The
raters tick the four criteria and keep or vary the decoys; bob and carol reject the questions
that ask which part comes first; questions about on-screen text are video-only to alice and bob
(carol hears the narration: audio+video); on the others the three split three ways on the
modality, and dana resolves them (audio+video). Decisions go to the same review file `lvu review
OUT` uses, under the same names.
"""

from __future__ import annotations

import sys
from collections import Counter

from fastapi.testclient import TestClient

from lvu.web.review_app import create_review_app
from lvu.web.review_data import ReviewItem, default_db, load_source
from lvu.web.review_export import outcomes
from lvu.web.review_rules import CRITERIA
from lvu.web.review_store import ReviewStore

RATERS, EXAMINERS = ["alice", "bob", "carol"], ["dana"]


def decision(rater: str, item: ReviewItem) -> dict:
    question, needed, n = item.sample.question, item.needed_decoys, len(item.decoys)
    if rater in ("bob", "carol") and "comes first" in question:
        return {"status": "rejected", "reason": "Both parts are shown: 'first' is ambiguous."}
    if "text" in question.lower():
        modality = "audio+video" if rater == "carol" else "video-only"
    else:
        modality = {"alice": "audio+video", "bob": "video-only", "carol": "audio-only"}.get(rater, "audio+video")
    decoys = list(range(needed)) if rater != "carol" else list(range(n - needed, n))
    return {"status": "accepted", "quality": {c: True for c in CRITERIA}, "modality": modality, "decoys": decoys}


def main(out: str) -> None:
    source = load_source(out)
    store = ReviewStore(default_db(out))
    people = {p.name: p.token for p in store.setup(source, RATERS, EXAMINERS, 3)}
    client = TestClient(create_review_app(source, store))

    def post(who: str, n: int, body: dict, round: int = 1) -> None:
        reply = client.post(f"/api/items/{n}/decision?round={round}", json=body, headers={"X-Review-Token": people[who]})
        reply.raise_for_status()

    for item in source.items:
        for rater in RATERS:
            post(rater, item.ordinal, decision(rater, item))
    for item, final in outcomes(source, store):
        if final.status == "unresolved":  # the examiner's decision is final
            post("dana", item.ordinal, decision("dana", item), round=2)
    counts = Counter(f"{f.status} ({f.source})" if f.source else f.status for _, f in outcomes(source, store))
    print(f"{len(source.items)} questions: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    main(sys.argv[1])
