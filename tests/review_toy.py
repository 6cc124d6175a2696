"""A small built benchmark to review: Neptune-export-shaped questions (six decoys kept for raters,
dense captions, evidence spans) over a generated barcode video with an SRT transcript, plus one
plain 4-option question with nothing but its options."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lvu.construct.neptune_export import mcq_options
from lvu.media.testing import SyntheticVideo, make_video
from web_store import srt

CUES = [(1.0, 3.0, "hello and welcome"), (5.0, 7.5, "the fox walks in"), (12.0, 14.0, "the fox leaves now")]
CAPTIONS = [{"start": 0.0, "end": 5.0, "text": "An empty grey stage."},
            {"start": 5.0, "end": 12.0, "text": "A fox walks across the stage."},
            {"start": 12.0, "end": 20.0, "text": "The stage is empty again."}]
QUESTIONS = [
    ("clip/1", "What does the fox do after it enters at 00:05?", "It walks across the stage and leaves.",
     ["It sits down.", "It jumps.", "It sleeps.", "It eats.", "It runs back.", "It barks."], [{"start": 5.0, "end": 12.0}]),
    ("clip/2", "What is on the stage at the start?", "Nothing: the stage is empty.",
     ["A fox.", "Two foxes.", "A chair.", "A tree.", "A car.", "A lamp."], [[0.0, 5.0]]),
    ("clip/3", "What does the speaker say first?", "Hello and welcome.",
     ["Goodbye.", "Good night.", "Thank you.", "See you.", "Welcome back.", "Hi there."], [1.0]),
]


@dataclass
class ReviewToy:
    data: Path
    """The build-output-like folder (benchmark.jsonl inside)."""
    video: SyntheticVideo
    ids: list[str]


def build(root: Path, extra_rows: list[dict] | None = None) -> ReviewToy:
    data = root / "build"
    (data / "videos").mkdir(parents=True)
    video = make_video(data / "videos" / "clip", seconds=20.0, fps=10, gop=10, size=(160, 96))
    (data / "asr").mkdir()
    (data / "asr" / "clip.srt").write_text(srt(CUES))
    rows = []
    for key, question, answer, decoys, evidence in QUESTIONS:
        options, answer_id = mcq_options(key, answer, decoys)
        rows.append({"id": key, "benchmark": "benchmark", "video": "videos/clip.mp4", "subtitles": "asr/clip.srt",
                     "question": question, "options": options, "answer": answer_id,
                     "labels": {"question_type": "Temporal Ordering"},
                     "extra": {"video_id": "clip", "reference": answer, "capability": "temporal ordering",
                               "decoys_6": decoys, "dense_captions": CAPTIONS, "evidence": evidence}})
    rows.append({"id": "plain", "video": "videos/clip.mp4", "question": "How many foxes?",
                 "options": ["none", "one", "two", "three"], "answer": 1})
    rows += extra_rows or []
    (data / "benchmark.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ReviewToy(data, video, [r["id"] for r in rows])


# ---- a review over the toy, and decisions to send -------------------------------------------------


@dataclass
class Review:
    source: object
    store: object
    client: object
    tokens: dict[str, str]

    def post(self, who: str, n: int, decision: dict, round: int = 1, **headers):
        return self.client.post(f"/api/items/{n}/decision?round={round}", json=decision,
                                headers={"X-Review-Token": self.tokens[who], **headers})

    def get(self, who: str, url: str):
        sep = "&" if "?" in url else "?"
        return self.client.get(f"{url}{sep}t={self.tokens[who]}")


def open_review(source_path: Path, db: Path, raters: list[str], examiners: list[str] = (),
                per_question: int = 3) -> Review:
    from fastapi.testclient import TestClient

    from lvu.web.review_app import create_review_app
    from lvu.web.review_data import load_source
    from lvu.web.review_store import ReviewStore

    source = load_source(source_path)
    store = ReviewStore(db)
    people = store.setup(source, list(raters), list(examiners), per_question)
    client = TestClient(create_review_app(source, store), base_url="http://127.0.0.1:8766")
    return Review(source, store, client, {p.name: p.token for p in people})


ALL_CRITERIA = {"relevant": True, "answerable": True, "unambiguous": True, "long_context": True}


def accept(decoys=(0, 1, 2, 3), modality="video-only", answer=None, new_decoys=(), **more) -> dict:
    return {"status": "accepted", "quality": dict(ALL_CRITERIA), "modality": modality, "answer": answer,
            "decoys": list(decoys), "new_decoys": list(new_decoys), **more}


def reject(reason="the answer is not in the video", **more) -> dict:
    return {"status": "rejected", "reason": reason, **more}


@contextmanager
def served(review: Review, allowed_hosts: list[str] | None = None) -> Iterator[int]:
    """The review app on a free loopback port (raw requests reach it byte for byte): its port."""
    import uvicorn

    from lvu.web.review_app import create_review_app
    from lvu.web.serve import bind

    sock = bind("127.0.0.1", 0)
    app = create_review_app(review.source, review.store, allowed_hosts=allowed_hosts)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        threading.Event().wait(0.02)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
