"""Neptune's decoys (paper C.2.4) and export fields (datasheet Q8): one decoy call per video with its
whole question set, exactly six decoys per question (one retry with the parse error, then a failed
unit and no made-up decoys), and the release's `video_id` / `url` / `decoys` in what a build writes.

The stage runs on its own with the scripted replies (tests/neptune_replies.py); the build runs
through the CLI on generated videos with `--captioner ocr --asr none` and the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from build_videos import ShotSpec, multi_shot_video
from lvu.benchmarks.neptune_release import record_to_sample
from lvu.cli import app
from lvu.construct.neptune import Decoys, Neptune
from lvu.construct.neptune_export import Source, release_sources, source_of
from lvu.construct.neptune_parse import RETRY_MARKER
from lvu.construct.pipeline import RecordingModel, Video, run_unit
from lvu.errors import LvuError
from lvu.models.base import Model
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import Prompt, Response
from neptune_replies import ScriptedReplies, prompt_kind, request_parts

QUESTIONS = [{"n": n, "capability": cap, "question": q, "answer": a} for n, (cap, q, a) in enumerate([
    ("counting", "How many boats leave the harbor?", "Three boats."),
    ("timeline event", "Which comes first: the harbor or the mountain?", "The harbor."),
    ("summarization", "What is shown in the part about the valley?", "A green valley."),
    ("visual-temporal", "What text is shown on screen at the start?", "RED HARBOR"),
    ("cause and effect", "Why do the boats leave at dawn?", "To catch the tide."),
], 1)]
SEGMENTS = [{"start": 0.0, "end": 6.0, "title": "The harbor", "caption": 'The text "RED HARBOR" on red.'},
            {"start": 6.0, "end": 12.0, "title": "The valley", "caption": 'The text "GREEN VALLEY" on green.'},
            {"start": 12.0, "end": 18.0, "title": "The mountain", "caption": 'The text "BLUE MOUNTAIN" on blue.'}]
INPUTS = {"questions": QUESTIONS, "segments": SEGMENTS, "visual_support": ["Red.", "Green.", "Blue."]}


class Scripted(Model):
    """An lvu model answering with a ScriptedReplies (the replies the fake server gives)."""

    def __init__(self, replies: ScriptedReplies) -> None:
        super().__init__()
        self.replies = replies

    async def generate(self, prompt: Prompt, *, sample_id: str = "") -> Response:
        return Response(text=self.replies({"messages": [{"role": "user", "content": prompt.text}]}))


def run_decoys(replies: ScriptedReplies, tmp_path: Path):
    stage = Decoys(Neptune().options)
    video = Video("harbor", str(tmp_path / "harbor.mp4"))
    units = stage.plan(video, INPUTS)
    outcome = asyncio.run(run_unit(stage, units[0], video, {"llm": RecordingModel(Scripted(replies))}))
    return units, outcome


def test_one_call_asks_for_the_whole_question_set(tmp_path):
    replies = ScriptedReplies()
    units, outcome = run_decoys(replies, tmp_path)
    assert [u.id for u in units] == ["video"]  # one unit per video, not one per question
    assert outcome.error is None and len(outcome.calls) == 1 == replies.calls["decoys"]
    prompt = outcome.calls[0].prompt
    assert "A set of 5 questions about the video" in prompt and "generate 6 incorrect answers" in prompt
    assert all(f"QUESTION {q['n']}: ({q['capability']}) {q['question']}\nCORRECT ANSWER: {q['answer']}" in prompt
               for q in QUESTIONS)
    assert list(outcome.result) == ["q1", "q2", "q3", "q4", "q5"]  # mapped back to each question
    for q in QUESTIONS:
        decoys = outcome.result[f"q{q['n']}"]
        assert len(decoys) == len(set(decoys)) == 6 and q["answer"] not in decoys


def test_five_decoys_are_retried_once_with_the_parse_error(tmp_path):
    replies = ScriptedReplies(short_decoys="first")
    _, outcome = run_decoys(replies, tmp_path)
    assert outcome.error is None and [len(d) for d in outcome.result.values()] == [6] * 5
    first, retry = (c.prompt for c in outcome.calls)
    assert RETRY_MARKER not in first and retry.startswith(first)
    assert re.search(r"question 5 \('Why do the boats leave at dawn\?'\) has 5 wrong answers — exactly 6", retry)


def test_five_decoys_twice_fail_the_unit_with_no_decoys(tmp_path):
    _, outcome = run_decoys(ScriptedReplies(short_decoys="always"), tmp_path)
    assert outcome.result is None and len(outcome.calls) == 2
    assert outcome.error.startswith("malformed reply, also after one retry with the parse error: ")
    assert "question 5" in outcome.error and "has 5 wrong answers" in outcome.error


def test_fewer_than_four_decoys_cannot_be_asked_for():
    with pytest.raises(LvuError, match="option decoys=3"):
        Neptune({"decoys": 3})
    with pytest.raises(LvuError, match="unknown option 'min_decoys'"):  # the leniency is gone
        Neptune({"min_decoys": 4})


# ---- the release's video_id and url --------------------------------------------------------------


def _sidecar(folder: Path, stem: str, doc: dict, suffix: str = ".info.json") -> Video:
    (folder / f"{stem}{suffix}").write_text(json.dumps(doc))
    return Video(stem, str(folder / f"{stem}.mp4"))


def test_source_identity_from_the_sidecar(tmp_path):
    watch = "https://www.youtube.com/watch?v=dQw4w9WgXcQ"
    ytdlp = _sidecar(tmp_path, "Song [dQw4w9WgXcQ]", {"id": "dQw4w9WgXcQ", "webpage_url": watch,
                                                      "url": "https://rr1.googlevideo.com/stream", "title": "Song"})
    assert source_of(ytdlp) == Source("dQw4w9WgXcQ", "dQw4w9WgXcQ", watch)  # not the media stream's `url`
    page_only = _sidecar(tmp_path, "clip", {"original_url": "https://youtu.be/abc123XYZ_-"}, ".json")
    assert source_of(page_only) == Source("https://youtu.be/abc123XYZ_-", "abc123XYZ_-", "https://youtu.be/abc123XYZ_-")
    assert source_of(Video("plain", str(tmp_path / "plain.mp4"))) == Source("plain", "plain", None)
    odd = _sidecar(tmp_path, "odd", {"id": ".."})  # an id that cannot name a transcript file
    assert source_of(odd) == Source("odd", "odd", None)
    (tmp_path / "broken.info.json").write_text("{")
    assert source_of(Video("broken", str(tmp_path / "broken.mp4"))).video_id == "broken"
    # two copies of one source, and a stem that is another video's id: every name stays unique
    copy = _sidecar(tmp_path, "copy", {"id": "dQw4w9WgXcQ"})
    stem_clash = Video("dQw4w9WgXcQ", str(tmp_path / "dQw4w9WgXcQ.mp4"))
    sources = release_sources([ytdlp, copy, stem_clash, page_only])
    names = [s.name for s in sources.values()]
    assert len(set(names)) == 4 and sources["clip"].name == "abc123XYZ_-"
    assert {sources[v].name for v in ("Song [dQw4w9WgXcQ]", "copy")} == {"Song [dQw4w9WgXcQ]", "copy"}


# ---- a build: a failed decoy call, the release fields, lvu run ----------------------------------

WATCH = "https://www.youtube.com/watch?v=dQw4w9WgXcQ"


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("decoy-videos")
    multi_shot_video(folder / "harbor.mp4")
    multi_shot_video(folder / "market.mp4", shots=[ShotSpec(6.0, (230, 210, 40), "SUNNY FIELD"),
                                                   ShotSpec(6.0, (110, 40, 150), "NIGHT MARKET"),
                                                   ShotSpec(6.0, (40, 200, 210), "CYAN LAKE")])
    (folder / "harbor.info.json").write_text(json.dumps({"id": "dQw4w9WgXcQ", "webpage_url": WATCH,
                                                         "title": "Harbor days", "extractor": "youtube"}))
    return folder


class Replies:
    """The scripted replies; market's decoys always one short (until `fixed`), harbor's the first time."""

    def __init__(self) -> None:
        self.fine, self.first, self.always = (ScriptedReplies(), ScriptedReplies(short_decoys="first"),
                                              ScriptedReplies(short_decoys="always"))
        self.fixed = False
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        text, _ = request_parts(body)
        if prompt_kind(text) != "decoys":
            return self.fine(body)
        if "NIGHT MARKET" in text and not self.fixed:
            return self.always(body)
        return self.first(body)


def _build(videos: Path, out: Path, server: FakeOpenAIServer):
    args = ["build", "neptune", str(videos), "-o", str(out), "--captioner", "ocr", "--asr", "none", "--quiet",
            "--llm", "openai", "--llm-arg", "model=fake", "--llm-arg", f"base_url={server.base_url}",
            "--llm-arg", "cache=false"]
    return CliRunner().invoke(app, args)


@pytest.mark.slow
def test_a_build_records_the_failed_decoy_call_and_exports_the_release_fields(videos, tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out, replies = tmp_path / "out", Replies()
    with FakeOpenAIServer(answer=replies) as server:
        failed = _build(videos, out, server)
        assert failed.exit_code == 1, failed.output  # a unit failed; the build went on and wrote the rest
        status = CliRunner().invoke(app, ["build", "status", str(out)]).output
        assert re.search(r"neptune\.decoys.*market.*question 5 .* has 5 wrong answers", status, re.S), status
        kept = json.loads((out / "neptune_full.json").read_text())
        removed = json.loads((out / "removed.json").read_text())
        assert kept and {r["video_id"] for r in kept + removed} == {"dQw4w9WgXcQ"}  # none of market's
        assert len(kept + removed) == 5
        harbor = json.loads(CliRunner().invoke(app, ["build", "show", str(out), "harbor", "--json"]).output)
        decoys = next(s for s in harbor if s["stage"] == "neptune.decoys")["units"]
        assert [u["unit"] for u in decoys] == ["video"] and len(decoys[0]["calls"]) == 2  # asked, then retried
        assert RETRY_MARKER in decoys[0]["calls"][1]["prompt"]

        replies.fixed = True  # the same command asks the failed unit again, and only that one
        before = replies.always.calls["decoys"] + replies.first.calls["decoys"]
        again = _build(videos, out, server)
        assert again.exit_code == 0, again.output
        assert replies.always.calls["decoys"] + replies.first.calls["decoys"] - before == 2  # market: ask, retry
    kept = json.loads((out / "neptune_full.json").read_text())
    removed = json.loads((out / "removed.json").read_text())
    assert len(kept + removed) == 10 and {r["video_id"] for r in kept + removed} == {"dQw4w9WgXcQ", "market"}
    for record in kept + removed:
        options = [record[f"answer_choice_{i}"] for i in range(5)]
        assert len(record["decoys_6"]) == 6 and record["decoys"] == record["decoys_6"][:4]
        assert sorted(options) == sorted([record["answer"], *record["decoys"]])
        assert record["url"] == (WATCH if record["video_id"] == "dQw4w9WgXcQ" else None)
        # the datasheet's fields alone give the same question (the options' seed is the key)
        datasheet = {k: record[k] for k in ("key", "video_id", "url", "question", "answer", "decoys")}
        sample = record_to_sample(datasheet, benchmark="neptune", ordinal=1, video_dir=out / "videos", asr_dir=None)
        assert (sample.options, sample.answer) == (options, record["answer_id"])
    assert sorted(p.name for p in (out / "asr").iterdir()) == sorted(
        f"{v}.srt" for v in {r["video_id"] for r in kept})  # named by the id the loader takes from video_id
    lines = [json.loads(line) for line in (out / "benchmark.jsonl").read_text().splitlines()]
    assert {(line["extra"]["video_id"], line["extra"]["url"]) for line in lines} <= {("dQw4w9WgXcQ", WATCH),
                                                                                     ("market", None)}
    run = CliRunner().invoke(app, ["run", "-b", "neptune-asr", "--data", str(out), "-m", "random",
                                   "--results-dir", str(tmp_path / "results"), "--no-report"])
    assert run.exit_code == 0 and f"{len(kept)} samples, 0 failed" in run.output, run.output
